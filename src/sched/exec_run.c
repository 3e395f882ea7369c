/*
 * Running one node of a launch: kernels, copies, reads and host nodes
 * (on the issuing thread or handed to a host worker), under the locks of
 * the node's roots. exec.h has the protocol.
 */
#include "exec.h"

#include "../base/trace.h"
#include "hostwork.h"
#include "placing.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- accesses ---------------------------------------------------------- */

/* The bounding range of access a, for holds, locks and lanes. */
static weft__span weft__acc_span(const weft__access *a)
{
    weft__span s = {a->buf->root, weft__acc_origin(a), weft__access_span(a)};

    return s;
}

/*
 * Copy `where` readied for access a: made valid where it reads, else
 * prepared (the caller skips the host copy of write-only accesses); a
 * block slice by slice.
 */
static int weft__acc_ready(const weft__access *a, unsigned where, int need,
                           weft__lanes *l)
{
    int rc = 0;

    if (!weft__access_is_block(a))
        return (need ? weft__buffer_make_valid : weft__buffer_prepare)(
            a->buf->root, where, weft__acc_origin(a), a->size, l);
    for (size_t s = 0; s < a->slices && rc == 0; s++) {
        weft__region r = weft__access_slice(a, s);

        rc = (need ? weft__buffer_make_valid_region
                   : weft__buffer_prepare_region)(a->buf->root, where, &r, l);
    }
    return rc;
}

void weft__acc_written(const weft__access *a, unsigned where, int ok)
{
    if (!weft__access_is_block(a)) {
        (ok ? weft__buffer_written : weft__buffer_discard)(
            a->buf->root, where, weft__acc_origin(a), a->size);
        return;
    }
    for (size_t s = 0; s < a->slices; s++) {
        weft__region r = weft__access_slice(a, s);

        (ok ? weft__buffer_written_region
            : weft__buffer_discard_region)(a->buf->root, where, &r);
    }
}

/* Access a as a block of its root for store.c's block transfers. */
static weft__buffer_block weft__acc_block(const weft__access *a)
{
    weft__buffer_block b = {weft__access_slice(a, 0), a->slices,
                            a->slice_pitch};

    return b;
}

/* ---- running nodes ----------------------------------------------------- */

static int weft__run_kernel(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft_arg *args = &e->args[nd->u.kernel.arg_first];
    /* The node's accesses are its buffer arguments, in order. */
    const weft__access *acc = &e->acc[nd->acc_first];
    uint32_t nargs = nd->u.kernel.nargs, j;
    unsigned dev = e->node_dev[i];
    weft__kernel *impl = weft__kernel_impl(nd->u.kernel.k, dev);
    const weft_device_info *p = &e->rt->devices[dev]->props;
    weft__grid grid;
    weft__queue *q = NULL;
    int rc;

    /*
     * Room for the union of the ranges (a block's bounding range) first,
     * in one go: made one range at a time, an extent that grows over an
     * earlier argument's would be held twice for a while. Then every
     * range or block readied, then the addresses: readying one may merge
     * extents that an earlier argument's address pointed into.
     */
    for (j = 0; j < nd->nacc; j++)
        e->spans[j] = weft__acc_span(&acc[j]);
    if ((rc = weft__buffer_hold(e->spans, nd->nacc, dev, &e->lanes)) != 0)
        return rc;
    for (j = 0; j < nd->nacc; j++)
        if ((rc = weft__acc_ready(&acc[j], dev, (acc[j].mode & WEFT_READ) != 0,
                                  &e->lanes)) < 0)
            return rc;
    /* The compute lane, after the step's copies and any other copies
     * still on their way into the ranges (made for other nodes). */
    if ((rc = weft__lanes_get(&e->lanes, dev, WEFT__QUEUE_COMPUTE, &q)) < 0)
        return rc;
    for (j = 0; j < nd->nacc && rc == 0; j++)
        rc = weft__lanes_after(&e->lanes, q, acc[j].buf->root, dev,
                               weft__acc_origin(&acc[j]),
                               weft__access_span(&acc[j]));
    if (rc < 0)
        return rc;
    for (uint32_t a = 0, b = 0; a < nargs; a++) {
        const weft_arg *ar = &args[a];
        weft__karg *k = &e->kargs[a];

        k->type = ar->type;
        k->size = ar->size;
        k->access = 0;
        k->width = k->rows = k->slices = k->row_pitch = k->slice_pitch = 0;
        switch (ar->type) {
        case WEFT_PARAM_BUFFER:
            /* A block: its first byte, the bytes to its last, its rows. */
            k->size = weft__access_span(&acc[b]);
            k->access = ar->access;
            if (acc[b].rows * acc[b].slices > 1) {
                k->width = acc[b].size;
                k->rows = acc[b].rows;
                k->slices = acc[b].slices;
                k->row_pitch = acc[b].row_pitch;
                k->slice_pitch = acc[b].slice_pitch;
            }
            weft__buffer_device_ptr(ar->buffer->root, dev,
                                    weft__acc_origin(&acc[b]), &k->u.buf.mem,
                                    &k->u.buf.offset);
            e->arg_at[nd->u.kernel.arg_first + a].mem = k->u.buf.mem;
            e->arg_at[nd->u.kernel.arg_first + a].off = k->u.buf.offset;
            b++;
            break;
        case WEFT_PARAM_BYTES:
            k->u.value = e->bytes + ar->value.u64;
            break;
        case WEFT_PARAM_LOCAL:
            k->u.value = NULL;
            break;
        default:
            k->u.value = &ar->value;
            break;
        }
    }
    for (int d = 0; d < 3; d++) {
        uint32_t items = nd->u.kernel.dims.items[d];
        uint32_t gs = nd->u.kernel.dims.group[d];

        if (!gs)
            gs = d == 0 ? WEFT__MIN(64u,
                                    p->max_group_size ? p->max_group_size : 64u)
                        : 1;
        grid.group_size[d] = gs;
        grid.groups[d] = items / gs + (items % gs != 0);
    }
    grid.shared_bytes = 0;
    /* A launch that fails to enqueue has no effect: the bytes stay. */
    if ((rc = weft__submit_launch(e->lanes.submit, q, impl, &grid, e->kargs,
                                  nargs)) < 0)
        return rc;
    rc = weft__lanes_issued(&e->lanes, q, NULL, 0, 0, 0);
    for (j = 0; j < nd->nacc; j++)
        if (acc[j].mode & WEFT_WRITE)
            weft__acc_written(&acc[j], dev, rc == 0);
    return rc;
}

/* On a host worker: the launch that a native node's report found parked. */
static void weft__native_resume(weft__host_task *task)
{
    weft_exec *e = ((weft__host_job *)task)->e;

    weft__exec_take(e);
    weft__exec_advance(e);
}

/*
 * On the driver's thread that ran native node j's call, ret its result
 * (the detail set where < 0): j joins `finished`, as a host worker's job
 * does; a launch parked meanwhile goes on on a host worker. Once unlocked,
 * e is not touched unless parked (the launch may end otherwise).
 */
static void weft__native_report(weft__host_job *j, int ret)
{
    weft_exec *e = j->e;
    unsigned resume;

    j->rc = ret;
    if (ret < 0) {
        weft__strlcpy(j->msg, weft_last_error(), sizeof j->msg);
        weft_clear_error();
    }
    weft__exec_seen_save(e, j->seen);
    pthread_mutex_lock(&e->host_lock);
    j->next = e->finished;
    __atomic_store_n(&e->finished, j, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&e->host_done);
    resume = e->parked;
    e->parked = 0;
    pthread_mutex_unlock(&e->host_lock);
    if (resume)
        weft__hostwork_submit(weft__hostwork_get(e->rt), -1, &j->task);
}

/*
 * Native node i's job, where its call can run on a thread of its device's
 * driver (native_enqueue: the host driver's queue runners) while the issue
 * goes on: the program's function (weft's own event functions enqueue on
 * the lane and must run on the issuing thread), and host workers to carry
 * the launch on. Made on first use; NULL where not so, or out of memory.
 */
static weft__host_job *weft__native_job_of(weft_exec *e, uint32_t i,
                                           const weft__device *d)
{
    const weft__node *nd = &e->nodes[i];
    weft__host_job *j = e->jobs[i];

    if (j || !d->drv->native_enqueue || nd->u.native.what != WEFT__NATIVE_FN ||
        !weft__hostwork_get(e->rt))
        return j;
    j = weft__calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->seen = weft__calloc((size_t)e->rt->ndevices + 1, sizeof *j->seen);
    j->call = weft__malloc(sizeof *j->call + nd->nacc * sizeof *j->call->mem);
    if (!j->seen || !j->call) {
        weft__free(j->seen);
        weft__free(j->call);
        weft__free(j);
        weft_clear_error();
        return NULL;
    }
    j->task.run = weft__native_resume;
    j->e = e;
    j->node = i;
    j->native = 1;
    e->jobs[i] = j;
    return j;
}

/*
 * The driver's call of a native node's function (driver.h), with a
 * weft__native_call (exec.h), which it only reads: a native graph of the
 * host driver calls it again with the tape's copy. Returns 0 or a weft
 * code with the detail set.
 */
static int weft__native_trampoline(const weft__native_queue *nq, void *arg)
{
    const weft__native_call *k = arg;
    weft_native_ctx c;
    int ret;

    memset(&c, 0, sizeof c);
    c.driver = k->driver;
    c.device = k->device;
    c.node = k->node;
    c.n = k->n;
    c.nq = *nq;
    c.mem = k->mem;
    c.acc = k->acc;
    c.fn = k->fn;
    c.user = k->user;
    c.q = k->q;
    ret = k->fn(&c, k->user);
    if (k->what != WEFT__NATIVE_FN)
        return ret; /* weft's own function: a weft code, the detail set */
    if (ret != 0)
        ret = weft__error(WEFT_EIO,
                          "the native function for device %u (%s, driver %s) "
                          "returned %d",
                          k->dev, k->dev_name, k->driver, ret);
    /* Enqueued by the issue, which waits for this: it hears from here. */
    if (k->report &&
        __atomic_exchange_n(&k->report->armed, 0, __ATOMIC_ACQ_REL)) {
        weft__native_report(k->report, ret);
        return 0;
    }
    return ret;
}

/*
 * A native node: as a kernel, its ranges held and made valid on its
 * device and its compute lane after their copies, then the program's
 * function called with the lane's queue, and the lane's work after it
 * taken for the node's (what the function enqueued included). A
 * capturable one's call goes through the submission, which may tape it
 * (tape.h); the others' straight to the driver.
 */
static int weft__run_native(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *acc = &e->acc[nd->acc_first];
    unsigned dev = e->node_dev[i];
    weft__device *d = e->rt->devices[dev];
    weft__host_job *j = weft__native_job_of(e, i, d);
    weft__native_call *k = j ? j->call : e->ncall;
    weft__queue *q = NULL;
    int rc;

    memset(k, 0, sizeof *k + nd->nacc * sizeof *k->mem);
    k->fn = weft__native_fn_for(nd, e->args, e->bytes, d);
    if (!k->fn)
        return weft__error(WEFT_ENODEV, "no implementation for device %u (%s)",
                           dev, d->name);
    for (uint32_t a = 0; a < nd->nacc; a++)
        e->spans[a] = weft__acc_span(&acc[a]);
    if ((rc = weft__buffer_hold(e->spans, nd->nacc, dev, &e->lanes)) != 0)
        return rc;
    for (uint32_t a = 0; a < nd->nacc; a++)
        if ((rc = weft__acc_ready(&acc[a], dev, (acc[a].mode & WEFT_READ) != 0,
                                  &e->lanes)) < 0)
            return rc;
    if ((rc = weft__lanes_get(&e->lanes, dev, WEFT__QUEUE_COMPUTE, &q)) < 0)
        return rc;
    for (uint32_t a = 0; a < nd->nacc && rc == 0; a++)
        rc = weft__lanes_after(&e->lanes, q, acc[a].buf->root, dev,
                               weft__acc_origin(&acc[a]),
                               weft__access_span(&acc[a]));
    if (rc < 0)
        return rc;
    for (uint32_t a = 0; a < nd->nacc; a++) {
        weft__mem *m = NULL;
        size_t off = 0;

        weft__buffer_device_ptr(acc[a].buf->root, dev,
                                acc[a].buf->offset + acc[a].offset, &m, &off);
        weft__drv_native_mem(m, off, &k->mem[a]);
    }
    k->driver = d->drv->name;
    k->device = weft_runtime_device(e->rt, dev);
    k->dev_name = d->name;
    k->acc = acc;
    k->user = nd->u.native.user;
    k->q = q;
    k->node = i;
    k->n = nd->nacc;
    k->what = nd->u.native.what;
    k->dev = dev;
    k->report = j;
    if (j) {
        j->rc = 0;
        __atomic_store_n(&j->armed, 1, __ATOMIC_RELEASE);
    }
    if (nd->u.native.capture)
        rc = weft__submit_native_call(
            e->lanes.submit, q, weft__native_trampoline, k,
            sizeof *k + nd->nacc * sizeof *k->mem, j != NULL);
    else if (j)
        rc = weft__drv_native_enqueue(q, weft__native_trampoline, k);
    else
        rc = weft__drv_native_call(q, weft__native_trampoline, k);
    if (j && rc == 0) {
        /* In flight: its successors wait for its report. */
        e->host_out++;
        e->native_out++;
        e->native_sent = 1;
    } else if (j) {
        /* Not run now (taped and deferred: 1), or not enqueued. */
        __atomic_store_n(&j->armed, 0, __ATOMIC_RELAXED);
    }
    if (rc > 0)
        rc = 0;
    /* What the function enqueued before it failed is the lane's too. */
    {
        int irc = weft__lanes_issued(&e->lanes, q, NULL, 0, 0, 0);

        if (rc == 0)
            rc = irc;
    }
    for (uint32_t a = 0; a < nd->nacc; a++)
        if (acc[a].mode & WEFT_WRITE)
            weft__acc_written(&acc[a], dev, rc == 0);
    return rc;
}

/* weft__call_host's "a poll task's work is not done yet". */
enum { WEFT__HOST_AGAIN = 1 };

/*
 * Call a host task's function once: 0, WEFT__HOST_AGAIN for a poll task
 * that is not done, or for a status (or poll) task's other non-zero
 * return WEFT_EIO with the detail set (the caller names the node).
 */
static int weft__call_host(const weft__node *nd, void *const *ptrs)
{
    int ret;

    if (!nd->u.host.status) {
        nd->u.host.fn(ptrs, nd->u.host.user);
        return 0;
    }
    ret = nd->u.host.status(ptrs, nd->u.host.user);
    if (ret == WEFT_HOST_AGAIN && nd->u.host.poll)
        return WEFT__HOST_AGAIN;
    return ret == 0 ? 0
                    : weft__error(WEFT_EIO, "the host task returned %d", ret);
}

/* On the issuing thread (no host workers): a poll task is called until done. */
static int weft__call_host_sync(const weft__node *nd, void *const *ptrs)
{
    int rc;

    while ((rc = weft__call_host(nd, ptrs)) == WEFT__HOST_AGAIN)
        sched_yield();
    return rc;
}

/* Host access to every range of a map or host node. */
static int weft__run_host(weft_exec *e, const weft__node *nd)
{
    const weft__access *acc = &e->acc[nd->acc_first];
    int rc;

    if ((rc = weft__plan_host_wait(e->plan)) < 0)
        return rc;
    for (uint32_t a = 0; a < nd->nacc; a++) {
        weft_buffer *root = acc[a].buf->root;
        size_t off = weft__acc_origin(&acc[a]);

        /* Bytes that will be overwritten whole need not come over. */
        if (acc[a].mode & WEFT_READ) {
            rc = weft__acc_ready(&acc[a], WEFT__HOST, 1, &e->lanes);
            if (rc < 0)
                return rc;
        }
        /* Copies still on their way into (or out of) these host bytes. */
        rc = weft__lanes_after(&e->lanes, NULL, root, WEFT__HOST, off,
                               weft__access_span(&acc[a]));
        if (rc < 0)
            return rc;
        e->ptrs[a] = weft__buffer_host(root, off);
    }
    weft__lanes_host_effect(&e->lanes);
    if (nd->kind == WEFT__NODE_MAP)
        nd->u.map.fn(e->ptrs[0], acc[0].size, nd->u.map.user);
    else
        rc = weft__call_host_sync(nd, e->ptrs);
    /* Written also after a failure: the function may have written them. */
    for (uint32_t a = 0; a < nd->nacc; a++)
        if (acc[a].mode & WEFT_WRITE)
            weft__acc_written(&acc[a], WEFT__HOST, 1);
    return rc;
}

static int weft__node_trace_kind(const weft__node *nd)
{
    return nd->kind == WEFT__NODE_MAP ? WEFT__TRACE_MAP : WEFT__TRACE_HOST;
}

/* On a host worker: wait for the ticket's events, run, report. */
static void weft__host_job_run(weft__host_task *task)
{
    weft__host_job *j = (weft__host_job *)task;
    weft_exec *e = j->e;
    const weft__node *nd = &e->nodes[j->node];
    const weft__access *acc = &e->acc[nd->acc_first];
    int rc = 0;
    unsigned resume;

    /* A poll task called again: its ticket was waited for before. */
    for (unsigned k = 0; !j->polling && k < j->ticket.nev && rc == 0; k++)
        rc = weft__drv_event_sync(j->ticket.ev[k]);
    j->worker = weft__hostwork_self;
    if (!j->polling)
        j->t0 = weft__now_ns();
    if (rc < 0) {
        weft__strlcpy(j->msg, weft_last_error(), sizeof j->msg);
        weft_clear_error();
    } else if (nd->kind == WEFT__NODE_MAP) {
        nd->u.map.fn(j->ptrs[0], acc[0].size, nd->u.map.user);
    } else if ((rc = weft__call_host(nd, j->ptrs)) == WEFT__HOST_AGAIN) {
        /* Not done: called again in turn, this worker free meanwhile. */
        j->polling = 1;
        weft__hostwork_repoll(weft__hostwork_get(e->rt), &j->task);
        return;
    } else if (rc < 0) {
        weft__strlcpy(j->msg, weft_last_error(), sizeof j->msg);
        weft_clear_error();
    }
    j->polling = 0;
    j->t1 = weft__now_ns();
    j->rc = rc;
    /* Release: the bytes written above, for whoever reads the count. */
    for (uint32_t a = 0; a < nd->nacc; a++)
        if (acc[a].mode & WEFT_WRITE)
            __atomic_sub_fetch(&acc[a].buf->root->host_writers, 1,
                               __ATOMIC_RELEASE);
    weft__exec_seen_save(e, j->seen);
    pthread_mutex_lock(&e->host_lock);
    j->next = e->finished;
    __atomic_store_n(&e->finished, j, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&e->host_done);
    resume = e->parked;
    e->parked = 0;
    pthread_mutex_unlock(&e->host_lock);
    /* The issuer left the launch here: this worker carries it on (once
     * unlocked, e is not touched otherwise: the launch may end). */
    if (resume) {
        weft__exec_take(e);
        weft__exec_advance(e);
    }
}

/*
 * Whether map or host node i goes to a host worker: not on a root that
 * other graphs name (their nodes wait for this one's fence, and a host
 * node has none), and only where there are workers. In a timed launch a
 * handed-over node's function is timed on its worker's own track.
 */
static int weft__host_handover(weft_exec *e, uint32_t i)
{
    for (uint32_t l = e->lock_first[i]; l < e->lock_first[i + 1]; l++)
        if (__atomic_load_n(&e->roots[e->locks[l]]->root_execs,
                            __ATOMIC_ACQUIRE) > 1)
            return 0;
    return weft__hostwork_get(e->rt) != NULL;
}

/* The job of node i, made on first use; NULL if it cannot be. */
static weft__host_job *weft__host_job_of(weft_exec *e, uint32_t i)
{
    weft__host_job *j = e->jobs[i];

    if (j)
        return j;
    j = weft__calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->ptrs = weft__calloc(e->nodes[i].nacc + 1, sizeof *j->ptrs);
    j->seen = weft__calloc((size_t)e->rt->ndevices + 1, sizeof *j->seen);
    if (!j->ptrs || !j->seen ||
        weft__plan_ticket_init(e->plan, &j->ticket) < 0) {
        weft__free(j->ptrs);
        weft__free(j->seen);
        weft__free(j);
        weft_clear_error();
        return NULL;
    }
    j->task.run = weft__host_job_run;
    j->e = e;
    j->node = i;
    e->jobs[i] = j;
    return j;
}

/*
 * weft__run_host up to the wait, with the roots locked: the host copy
 * readied, what the node writes marked written there, and the node handed
 * to a host worker near the device its bytes come from, with the ticket
 * of what it must wait for. WEFT__HANDED_OVER, 0 if it must run here
 * after all (no memory for its job), or an error (nothing handed over).
 */
static int weft__host_hand_over(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *acc = &e->acc[nd->acc_first];
    weft__host_job *j = weft__host_job_of(e, i);
    unsigned near = WEFT__HOST;
    int rc;

    if (!j)
        return 0;
    if (nd->nacc)
        near = weft__buffer_device_holding(acc[0].buf->root,
                                           weft__acc_origin(&acc[0]),
                                           weft__access_span(&acc[0]));
    if (near == WEFT__HOST)
        near = e->node_dev[i];
    weft__plan_host_begin(e->plan, &j->ticket);
    rc = weft__plan_host_wait(e->plan);
    for (uint32_t a = 0; a < nd->nacc && rc == 0; a++) {
        weft_buffer *root = acc[a].buf->root;
        size_t off = weft__acc_origin(&acc[a]);

        if (acc[a].mode & WEFT_READ)
            rc = weft__acc_ready(&acc[a], WEFT__HOST, 1, &e->lanes);
        if (rc == 0)
            rc = weft__lanes_after(&e->lanes, NULL, root, WEFT__HOST, off,
                                   weft__access_span(&acc[a]));
        j->ptrs[a] = weft__buffer_host(root, off);
    }
    if ((rc = weft__plan_host_end(e->plan, rc)) < 0)
        return rc;
    /*
     * Written now, not when the function returns: from here the host copy
     * alone holds these bytes, so that no write-back from a device lands
     * in them while the function writes them. Nothing reads them meanwhile
     * but the nodes after this one, which wait for it, and reads that
     * widen, which host_writers stops.
     */
    for (uint32_t a = 0; a < nd->nacc; a++)
        if (acc[a].mode & WEFT_WRITE) {
            weft__acc_written(&acc[a], WEFT__HOST, 1);
            __atomic_add_fetch(&acc[a].buf->root->host_writers, 1,
                               __ATOMIC_RELAXED);
        }
    j->rc = 0;
    e->host_out++;
    weft__lanes_host_effect(&e->lanes);
    /*
     * A host worker that carries the launch, with no other host node in
     * flight, runs the node itself once its roots are unlocked
     * (weft__exec_advance): a chain of host tasks then runs on one thread
     * with no hand-off at all.
     */
    if (weft__hostwork_self >= 0 && e->host_out == 1)
        e->inline_job = j;
    else
        weft__hostwork_submit(weft__hostwork_get(e->rt), (int)near, &j->task);
    return WEFT__HANDED_OVER;
}

/*
 * Host nodes that finished: done, or failed (the first failure's detail
 * into msg, as a failed step's), so that their successors may go.
 */
void weft__exec_host_finished(weft_exec *e, int *first, char *msg, size_t size)
{
    weft__host_job *j;

    if (!e->host_out || !__atomic_load_n(&e->finished, __ATOMIC_RELAXED))
        return;
    pthread_mutex_lock(&e->host_lock);
    j = e->finished;
    __atomic_store_n(&e->finished, NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&e->host_lock);
    for (; j; j = j->next) {
        char label[128];

        /* What the worker waited for, the issuer has now seen. */
        weft__exec_seen_join(e, j->seen);
        e->host_out--;
        e->native_out -= j->native;
        if (j->native) {
            /* Its step ended on its lane; one that failed after the call
             * went out was reported then. */
            if (e->state[j->node] != WEFT__NODE_INFLIGHT)
                continue;
        } else {
            weft__plan_host_done(e->plan, j->node, &j->ticket, j->rc == 0);
        }
        if (!j->native && j->rc == 0 && weft__plan_timed(e->plan)) {
            const weft__node *nd = &e->nodes[j->node];

            weft__plan_time_worker(
                e->plan, j->node, j->worker, weft__node_trace_kind(nd), j->t0,
                j->t1,
                nd->nacc ? weft__access_bytes(&e->acc[nd->acc_first]) : 0);
        }
        e->state[j->node] = j->rc == 0 ? WEFT__NODE_DONE : WEFT__NODE_FAILED;
        if (j->rc < 0 && !*first) {
            *first = j->rc;
            weft__error(j->rc, "%s", j->msg);
            weft__error_prefix(
                j->rc, "node %u (%s)", j->node,
                weft__node_label(&e->nodes[j->node], label, sizeof label));
            weft__strlcpy(msg, weft_last_error(), size);
        }
    }
}

/*
 * A copy runs where the source range is already whole, else on the node's
 * device, which the source is brought to.
 */
static int weft__run_copy(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *src = &e->acc[nd->acc_first];
    const weft__access *dst = src + 1;
    weft_buffer *sr = src->buf->root, *dr = dst->buf->root;
    size_t so = src->buf->offset + src->offset;
    size_t dof = dst->buf->offset + dst->offset;
    unsigned dev;
    int rc;

    if (weft__access_is_block(src)) {
        weft__buffer_block sb = weft__acc_block(src), db = weft__acc_block(dst);

        dev = weft__buffer_block_holder(sr, &sb);
        if (dev == WEFT__HOST)
            dev = e->node_dev[i];
        if (dev == WEFT__HOST && (rc = weft__plan_host_wait(e->plan)) < 0)
            return rc;
        return weft__buffer_copy_block(dr, &db, sr, &sb, dev, &e->lanes);
    }
    dev = weft__buffer_device_holding(sr, so, src->size);

    /* Through the host copies (a host device node): the host waits. */
    if (dev == WEFT__HOST && e->node_dev[i] == WEFT__HOST &&
        (rc = weft__plan_host_wait(e->plan)) < 0)
        return rc;
    return weft__buffer_copy(dr, dof, sr, so, src->size,
                             dev != WEFT__HOST ? dev : e->node_dev[i],
                             &e->lanes);
}

/*
 * Lock roots [l0, l1) of the locks, in order, once no other graph has work
 * in flight on them that this one cannot wait for by an event: such work
 * (left before the root was shared) ends with its launch, which is waited
 * for with no lock held, since that launch may need these.
 */
static int weft__lock_roots(weft_exec *e, uint32_t l0, uint32_t l1)
{
    for (;;) {
        weft_buffer *busy = NULL;
        const void *owner = NULL;
        uint32_t l;
        int rc = 0;

        for (l = l0; l < l1; l++)
            weft__buffer_lock(e->roots[e->locks[l]]);
        for (l = l0; l < l1 && !busy && rc == 0; l++) {
            weft_buffer *root = e->roots[e->locks[l]];

            rc = weft__lanes_fence_wait(&e->lanes, root);
            if (rc > 0) {
                busy = root;
                owner = root->fence_owner;
                rc = 0;
            }
        }
        if (!busy && rc == 0)
            return 0;
        for (l = l1; l-- > l0;)
            weft__buffer_unlock(e->roots[e->locks[l]]);
        if (rc < 0)
            return rc;
        weft__buffer_wait_owner(busy, owner);
    }
}

/*
 * A read node: straight from the device that holds the range into the
 * caller's memory, on its D2H lane, where the host copy lacks the bytes
 * (the host copy is not made valid: no copy of it is needed); else the
 * host copy is made valid and copied out of, on a lane after the copies
 * into it if any are in flight. Either way the node is complete when its
 * lane's work is, and the launch's drain waits for that.
 */
static int weft__run_read(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *a = &e->acc[nd->acc_first];
    weft_buffer *root = a->buf->root;
    size_t off = a->buf->offset + a->offset;
    int rc;

    if (weft__access_is_block(a)) {
        weft__buffer_block b = weft__acc_block(a);
        unsigned dev = weft__buffer_block_holder(root, &b);

        /* The host copy is copied out of row by row on this thread. */
        if (dev == WEFT__HOST && (rc = weft__plan_host_wait(e->plan)) < 0)
            return rc;
        return weft__buffer_load_block(root, &b, nd->u.read.dst,
                                       nd->u.read.row_pitch,
                                       nd->u.read.slice_pitch, dev, &e->lanes);
    }
    rc =
        weft__buffer_load_direct(root, off, nd->u.read.dst, a->size, &e->lanes);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    rc = weft__buffer_make_valid(root, WEFT__HOST, off, a->size, &e->lanes);
    if (rc == 0)
        rc = weft__plan_host_copy(e->plan, root, off, nd->u.read.dst, a->size,
                                  &e->copies[i]);
    if (rc > 0) { /* copied by this thread, now */
        weft__lanes_host_effect(&e->lanes);
        rc = 0;
    }
    return rc;
}

/*
 * A block write node: into the device the bytes are for through the
 * driver's block copy, else row by row into the host copy (the host has
 * waited for the node's predecessors).
 */
static int weft__run_write_block(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *a = &e->acc[nd->acc_first];
    weft__buffer_block b = weft__acc_block(a);

    return weft__buffer_store_block(
        a->buf->root, &b, nd->u.write.src, nd->u.write.row_pitch,
        nd->u.write.slice_pitch, e->write_dev[i], &e->lanes);
}

/* A block fill node: a fill per row (no driver has a block fill). */
static int weft__run_fill_block(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *a = &e->acc[nd->acc_first];
    size_t origin = weft__acc_origin(a);
    int rc = 0;

    for (size_t s = 0; s < a->slices && rc == 0; s++)
        for (size_t y = 0; y < a->rows && rc == 0; y++)
            rc = weft__buffer_fill_range(
                a->buf->root, origin + s * a->slice_pitch + y * a->row_pitch,
                a->size, nd->u.fill.pattern, nd->u.fill.size, e->write_dev[i],
                &e->lanes);
    return rc;
}

/* Nodes whose work the issuing thread does itself (timed on the host). */
static int weft__node_on_host(const weft__node *nd)
{
    return nd->kind == WEFT__NODE_MAP || nd->kind == WEFT__NODE_HOST ||
           nd->kind == WEFT__NODE_WRITE || nd->kind == WEFT__NODE_READ ||
           nd->kind == WEFT__NODE_FILL;
}

/*
 * After a step: each root's next use for eviction, a fence where other
 * graphs share it (or, where none can say when the step's work ends, a
 * drain), then its lock released, in reverse order. rc is the step's
 * result; the result is rc, or the fence's failure.
 */
static int weft__unlock_roots(weft_exec *e, uint32_t l0, uint32_t l1,
                              uint64_t tick, int rc)
{
    for (uint32_t l = l1; l-- > l0;) {
        weft_buffer *root = e->roots[e->locks[l]];
        int shared = __atomic_load_n(&root->root_execs, __ATOMIC_ACQUIRE) > 1;
        int frc = 0;

        root->next_use = tick + e->lock_next[l];
        if (rc == WEFT__HANDED_OVER) {
            /* No fence says when a host worker is done: the launch's end
             * does (for a graph that came to share the root meanwhile). */
            root->fence = NULL;
            root->fence_owner = &e->lanes;
            weft__buffer_unlock(root);
            continue;
        }
        /* Other graphs sharing the root wait for this step's work. */
        if (shared && rc == 0)
            frc = weft__plan_fence(
                e->plan, root,
                &e->fences[(size_t)e->locks[l] * e->rt->ndevices], &e->lanes);
        if (shared && (rc < 0 || frc < 0)) {
            /* No fence says when the work ends (a failed step may still
             * have copies in flight): it ends here. */
            char keep[WEFT__EXEC_MSG];

            weft__strlcpy(keep, weft_last_error(), sizeof keep);
            frc = weft__plan_drain(e->plan);
            root->fence = NULL;
            root->fence_owner = NULL;
            if (rc == 0)
                rc = frc;
            else
                weft__error(rc, "%s", keep);
        } else {
            /* Unshared: an older fence of ours would say too little. */
            if (!shared && root->fence_owner == (const void *)&e->lanes)
                root->fence = NULL;
            /*
             * Shared, plan_fence set both if the step left work in flight;
             * an owner with no fence there would make others wait for the
             * launch's end, and two launches could wait for each other.
             */
            if (!shared && !root->fence_owner)
                root->fence_owner = &e->lanes;
        }
        weft__buffer_unlock(root);
    }
    return rc;
}

/*
 * Lock-free unless a launch waits for room: the counts are sequentially
 * consistent, so a waiter (waiting raised, then mem_gen read, under
 * mem_lock) either sees this end's mem_gen or is seen here and woken under
 * the lock, which it holds until it sleeps.
 */
void weft__exec_running(weft_runtime *rt, int delta)
{
    weft__sched *s = rt->sched;

    __atomic_add_fetch(&s->running, (unsigned)delta, __ATOMIC_SEQ_CST);
    if (delta > 0)
        return;
    __atomic_add_fetch(&s->mem_gen, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&s->waiting, __ATOMIC_SEQ_CST)) {
        pthread_mutex_lock(&s->mem_lock);
        pthread_cond_broadcast(&s->mem_cond);
        pthread_mutex_unlock(&s->mem_lock);
    }
}

static uint64_t weft__mem_gen(weft_runtime *rt)
{
    return __atomic_load_n(&rt->sched->mem_gen, __ATOMIC_ACQUIRE);
}

/*
 * A node of e found its device's room held by other launches' work in
 * flight (WEFT__NO_ROOM; its own need fits the limit), and e holds no
 * root lock now. e lets go of its own memory: its work drained, its host
 * nodes on workers finished, its roots no longer marked as in use by it,
 * so that the others may evict its extents; then it waits until another
 * launch ends or lets go of its own.
 * gen: mem_gen before the node's try. 0: try again; WEFT_EDEVMEM (the
 * detail kept) when nothing can change: every other running launch waits
 * too, and none let go since the try.
 */
static int weft__exec_wait_room(weft_exec *e, uint64_t gen)
{
    weft__sched *s = e->rt->sched;
    char why[WEFT__EXEC_MSG];
    unsigned cleared = 0;
    uint64_t mine;
    int rc, moved;

    weft__strlcpy(why, weft_last_error(), sizeof why);
    weft__debug("sched", "waiting for room (%u host nodes out): %s",
                e->host_out, why);
    if ((rc = weft__plan_drain(e->plan)) < 0)
        return rc;
    /* Host nodes of e still out may use its roots: they end first (they
     * wait for nothing but work already drained); the issue notes them
     * later, as usual. */
    pthread_mutex_lock(&e->host_lock);
    for (;;) {
        uint32_t done = 0;

        for (weft__host_job *j = e->finished; j; j = j->next)
            done++;
        if (done == e->host_out)
            break;
        pthread_cond_wait(&e->host_done, &e->host_lock);
    }
    pthread_mutex_unlock(&e->host_lock);
    for (uint32_t r = 0; r < e->nroots; r++) {
        weft_buffer *root = e->roots[r];

        weft__buffer_lock(root);
        if (root->fence_owner == (const void *)&e->lanes) {
            root->fence = NULL;
            root->fence_owner = NULL;
            pthread_cond_broadcast(&root->idle);
            cleared++;
        }
        weft__buffer_unlock(root);
    }
    pthread_mutex_lock(&s->mem_lock);
    /* Only a launch that let go of something moves mem_gen; every waiter
     * is told that one more waits. */
    __atomic_add_fetch(&s->waiting, 1, __ATOMIC_SEQ_CST);
    mine = cleared ? __atomic_add_fetch(&s->mem_gen, 1, __ATOMIC_SEQ_CST)
                   : __atomic_load_n(&s->mem_gen, __ATOMIC_SEQ_CST);
    moved = mine != gen + (cleared != 0);
    pthread_cond_broadcast(&s->mem_cond);
    while (!moved && __atomic_load_n(&s->mem_gen, __ATOMIC_SEQ_CST) == mine &&
           __atomic_load_n(&s->running, __ATOMIC_SEQ_CST) > s->waiting)
        pthread_cond_wait(&s->mem_cond, &s->mem_lock);
    __atomic_sub_fetch(&s->waiting, 1, __ATOMIC_SEQ_CST);
    rc = !moved && __atomic_load_n(&s->mem_gen, __ATOMIC_SEQ_CST) == mine
             ? WEFT_EDEVMEM
             : 0;
    pthread_mutex_unlock(&s->mem_lock);
    if (rc < 0)
        return weft__error(rc, "%s", why);
    weft_clear_error();
    return 0;
}

/*
 * The end of node i's step, its roots locked, rc the work's result: the
 * plan's step closed, the host time noted, the roots unlocked.
 */
static int weft__step_done(weft_exec *e, uint32_t i, uint64_t tick, uint64_t t0,
                           int rc)
{
    const weft__node *nd = &e->nodes[i];

    if (rc == 0)
        rc = weft__plan_step_end(e->plan);
    else if (rc < 0)
        weft__plan_step_end_failed(e->plan);
    if (weft__plan_timed(e->plan) && rc == 0 && weft__node_on_host(nd))
        weft__plan_time_host(
            e->plan, weft__node_trace_kind(nd), t0, weft__now_ns(),
            nd->nacc ? weft__access_bytes(&e->acc[nd->acc_first]) : 0);
    return weft__unlock_roots(e, e->lock_first[i], e->lock_first[i + 1], tick,
                              rc);
}

/* The work of node i, its roots locked: 0, a weft error,
 * WEFT__HANDED_OVER, or WEFT__NO_ROOM with nothing of it issued. */
static int weft__run_step(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *a = &e->acc[nd->acc_first];
    int rc = 0;

    uint64_t updates = 0;

    /* Room for the tracker updates after the work, which cannot fail. */
    for (uint32_t k = 0; k < nd->nacc; k++)
        updates += weft__acc_updates(&a[k]);
    for (uint32_t l = e->lock_first[i]; l < e->lock_first[i + 1] && rc == 0;
         l++)
        rc = updates > UINT_MAX
                 ? weft__error(WEFT_ENOMEM, "%llu tracker updates",
                               (unsigned long long)updates)
                 : weft__buffer_reserve(e->roots[e->locks[l]],
                                        (unsigned)updates);
    switch (rc < 0 ? WEFT__NODE_EMPTY : nd->kind) {
    case WEFT__NODE_KERNEL:
        rc = weft__run_kernel(e, i);
        break;
    case WEFT__NODE_NATIVE:
        rc = weft__run_native(e, i);
        break;
    case WEFT__NODE_WRITE:
        rc = weft__plan_host_wait(e->plan);
        if (rc == 0 && weft__access_is_block(a))
            rc = weft__run_write_block(e, i);
        else if (rc == 0)
            rc = weft__buffer_store(a->buf->root, a->buf->offset + a->offset,
                                    nd->u.write.src, a->size, e->write_dev[i],
                                    &e->lanes);
        break;
    case WEFT__NODE_READ:
        rc = weft__run_read(e, i);
        break;
    case WEFT__NODE_FILL:
        rc = weft__plan_host_wait(e->plan);
        if (rc == 0 && weft__access_is_block(a))
            rc = weft__run_fill_block(e, i);
        else if (rc == 0)
            rc = weft__buffer_fill_range(a->buf->root,
                                         a->buf->offset + a->offset, a->size,
                                         nd->u.fill.pattern, nd->u.fill.size,
                                         e->write_dev[i], &e->lanes);
        break;
    case WEFT__NODE_COPY:
        rc = weft__run_copy(e, i);
        break;
    case WEFT__NODE_MAP:
    case WEFT__NODE_HOST:
        rc = weft__host_handover(e, i) ? weft__host_hand_over(e, i) : 0;
        if (rc == 0)
            rc = weft__run_host(e, nd);
        break;
    case WEFT__NODE_EMPTY:
        /* A join: on a lane, so that it needs no host wait. */
        if (rc == 0 && e->pred_first[i + 1] > e->pred_first[i]) {
            weft__queue *q;

            rc = weft__lanes_get(&e->lanes, e->node_dev[i], WEFT__QUEUE_COMPUTE,
                                 &q);
        }
        break;
    }
    return rc;
}

int weft__exec_run_node(weft_exec *e, uint32_t i)
{
    uint32_t l0 = e->lock_first[i], l1 = e->lock_first[i + 1];
    uint64_t tick = __atomic_add_fetch(&e->rt->tick, 1, __ATOMIC_RELAXED);
    uint64_t t0 = weft__plan_timed(e->plan) ? weft__now_ns() : 0;
    int rc;

    weft__plan_step_begin(e->plan, i);
    for (;;) {
        uint64_t gen = weft__mem_gen(e->rt);

        if ((rc = weft__lock_roots(e, l0, l1)) < 0)
            break;
        if ((rc = weft__run_step(e, i)) != WEFT__NO_ROOM) {
            rc = weft__step_done(e, i, tick, t0, rc);
            /* A native call out on its driver's thread: in flight. */
            if (e->native_sent) {
                e->native_sent = 0;
                if (rc == 0)
                    rc = WEFT__HANDED_OVER;
            }
            return rc;
        }
        /* Nothing of the node was issued: its roots go while it waits for
         * the room, and it tries again. */
        for (uint32_t l = l1; l-- > l0;)
            weft__buffer_unlock(e->roots[e->locks[l]]);
        if ((rc = weft__exec_wait_room(e, gen)) < 0)
            break;
    }
    weft__plan_step_end_failed(e->plan);
    return rc;
}

/* Nodes whose issue makes the worker wait for their predecessors. */
static int weft__waits_on_host(const weft_exec *e, uint32_t i)
{
    switch (e->nodes[i].kind) {
    case WEFT__NODE_MAP:
    case WEFT__NODE_HOST:
    case WEFT__NODE_WRITE:
    case WEFT__NODE_FILL:
        return 1;
    case WEFT__NODE_COPY:
        return e->node_dev[i] == WEFT__HOST;
    default:
        return 0;
    }
}

enum { WEFT__LOOKAHEAD = 256 };

/*
 * The position in the order of the node to issue next, from next (the
 * first not issued). A node that would make the worker wait for device
 * work not finished yet (a map, a host task, a write into host memory)
 * lets the nodes after it go first, within WEFT__LOOKAHEAD of the order,
 * as long as they do not depend on it: so that device work for later
 * chunks is queued while a host node waits. Any topological order gives
 * the same result (the oracle's WEFT_EXEC_ORDER=latest checks that); when
 * every candidate would wait, the first one in the order goes. A node
 * after a host node in flight (on a host worker) is no candidate:
 * WEFT__NONE when there is none (then one is in flight: next, the first
 * not issued, has every predecessor issued).
 */
uint32_t weft__exec_pick(weft_exec *e, uint32_t next)
{
    uint32_t seen = 0, ready = WEFT__NONE;

    for (uint32_t k = next; k < e->nnodes && seen < WEFT__LOOKAHEAD; k++) {
        uint32_t i = e->order[k], p;

        if (e->state[i] != WEFT__NODE_PENDING)
            continue;
        seen++;
        for (p = e->pred_first[i]; p < e->pred_first[i + 1]; p++)
            if (e->state[e->preds[p]] == WEFT__NODE_PENDING ||
                e->state[e->preds[p]] == WEFT__NODE_INFLIGHT)
                break;
        if (p < e->pred_first[i + 1])
            continue; /* after a node not issued, or not finished, yet */
        if (!weft__waits_on_host(e, i) || weft__plan_preds_done(e->plan, i))
            return k;
        if (ready == WEFT__NONE)
            ready = k;
    }
    return ready;
}
