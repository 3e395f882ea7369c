/*
 * Launches: the issuing loop of one launch, replays of a native graph,
 * placement again once kernel times are learned, and the public calls on
 * an executable graph. exec.h has the launch protocol.
 */
#include "exec.h"

#include "../base/trace.h"
#include "hostwork.h"
#include "placing.h"

#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Placement again, once the first (timed) launches have taught the kernel
 * time model what the graph's kernels cost: a cost model placing with its
 * prior guesses (a kernel's time from its size and the device's compute
 * units) can put the weight on the wrong side, copies against compute.
 * Where the devices change, the plan is lowered anew, between launches
 * (nothing in flight). A graph sharing a root with another is left alone
 * (the other may wait on this plan's fences), as is one whose new devices
 * would not take a kernel's arguments.
 */
static void weft__replace(weft_exec *e)
{
    weft__place_src src = {e->rt,   e->nodes, e->nnodes, e->acc,
                           e->nacc, e->args,  e->bytes,  e->roots};
    unsigned *dev, used = 0, moved = 0;
    weft__plan *plan;
    int rc;

    for (uint32_t r = 0; r < e->nroots; r++)
        if (__atomic_load_n(&e->roots[r]->root_execs, __ATOMIC_ACQUIRE) > 1)
            return;
    dev = weft__malloc(((size_t)e->nnodes + 1) * sizeof *dev);
    if (!dev)
        goto fail;
    memcpy(dev, e->node_dev, (size_t)e->nnodes * sizeof *dev);
    if (weft__place_graph(&src, e->policy, e->scope, e->device, e->order,
                          e->pred_first, e->preds, dev, &used) < 0)
        goto fail;
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const weft__node *nd = &e->nodes[i];

        if (dev[i] == e->node_dev[i])
            continue;
        if (nd->kind == WEFT__NODE_NATIVE &&
            weft__node_runs_on(nd, e->args, e->bytes, e->rt, dev[i])) {
            moved++;
            continue;
        }
        if (nd->kind != WEFT__NODE_KERNEL ||
            weft__args_match(
                nd->u.kernel.k, weft__kernel_impl(nd->u.kernel.k, dev[i]),
                &e->args[nd->u.kernel.arg_first], nd->u.kernel.nargs) < 0)
            goto fail;
        moved++;
    }
    if (!moved) {
        weft__free(dev);
        return;
    }
    rc = weft__plan_create(e->rt, e->nodes, e->nnodes, dev, e->order,
                           e->pred_first, e->preds, e->raws, e->roots,
                           e->native, &plan);
    if (rc < 0)
        goto fail;
    weft__plan_set_priority(plan, e->priority);
    weft__exec_free_jobs(e); /* made again for the new plan */
    {
        weft__plan *old = e->plan;
        unsigned *old_dev = e->node_dev;

        /* Readers of node_dev and the plan (stats, DOT) take the lock. */
        pthread_mutex_lock(&e->lock);
        e->plan = plan;
        e->lanes.set = plan;
        e->node_dev = dev;
        e->devices_used = used;
        e->steady_ok = 0;
        pthread_mutex_unlock(&e->lock);
        weft__exec_build_write_dev(e, dev);
        weft__plan_destroy(old);
        weft__free(old_dev);
    }
    weft__debug("exec",
                "placed again with the learned kernel times: %u kernel "
                "nodes moved, %u devices used",
                moved, used);
    return;
fail:
    weft__debug("exec", "placement kept: %s",
                dev ? weft_last_error() : "out of memory");
    weft_clear_error();
    weft__free(dev);
}

/* Every root's tracker state into *buf (see weft_exec.snap). */
static int weft__exec_snapshot(weft_exec *e, unsigned char **buf, size_t *cap,
                               size_t *len)
{
    size_t pos = 0;

    for (uint32_t r = 0; r < e->nroots; r++) {
        weft_buffer *root = e->roots[r];
        size_t need;

        weft__buffer_lock(root);
        need = weft__buffer_state(root, *buf ? *buf + pos : NULL,
                                  *buf ? *cap - pos : 0);
        if (pos + need > *cap) {
            size_t c = WEFT__MAX(2 * *cap, pos + need + 256);
            unsigned char *p = weft__realloc(*buf, c);

            if (!p) {
                weft__buffer_unlock(root);
                return weft__error(WEFT_ENOMEM, "launch: out of memory");
            }
            *buf = p;
            *cap = c;
            need = weft__buffer_state(root, *buf + pos, *cap - pos);
        }
        weft__buffer_unlock(root);
        pos += need;
    }
    *len = pos;
    return 0;
}

/* Whether the roots' state now (snap) is the steady one. */
static int weft__snap_is_steady(const weft_exec *e)
{
    return e->snap_len == e->steady_len &&
           memcmp(e->snap, e->steady, e->snap_len) == 0;
}

/* Whether copy dev of root holds every byte of buffer argument ar. */
static int weft__arg_valid(const weft_buffer *root, unsigned dev,
                           const weft_arg *ar)
{
    size_t off = ar->buffer->offset + ar->offset;

    if (!(ar->rows > 1 || (ar->rows == 1 && ar->slices > 1)))
        return weft__buffer_is_valid(root, dev, off, weft__arg_span(ar));
    for (size_t s = 0; s < ar->slices; s++)
        for (size_t y = 0; y < ar->rows; y++)
            if (!weft__buffer_is_valid(
                    root, dev, off + s * ar->slice_pitch + y * ar->row_pitch,
                    ar->size))
                return 0;
    return 1;
}

/*
 * Whether every buffer argument of kernel node i has an extent on device
 * dev that holds its whole range (at the address the last issue gave it,
 * where same_at), and every range it reads (or touches, where all) is
 * valid there.
 */
static int weft__args_ready(weft_exec *e, uint32_t i, unsigned dev, int same_at,
                            int all)
{
    const weft__node *nd = &e->nodes[i];

    for (uint32_t a = 0; a < nd->u.kernel.nargs; a++) {
        const weft_arg *ar = &e->args[nd->u.kernel.arg_first + a];
        const weft__arg_at *at = &e->arg_at[nd->u.kernel.arg_first + a];
        weft_buffer *root;
        size_t off, size, moff;
        weft__mem *mem;
        int ok;

        if (ar->type != WEFT_PARAM_BUFFER)
            continue;
        root = ar->buffer->root;
        off = ar->buffer->offset + ar->offset;
        size = weft__arg_span(ar);
        weft__buffer_lock(root);
        ok = weft__buffer_device_find(root, dev, off, size, &mem, &moff) &&
             (!same_at || (mem == at->mem && moff == at->off)) &&
             (!(all || (ar->access & WEFT_READ)) ||
              weft__arg_valid(root, dev, ar));
        weft__buffer_unlock(root);
        if (!ok)
            return 0;
    }
    return 1;
}

/*
 * After a launch that issued what the native graph holds but did not
 * leave the roots as it found them (the first launch, say, found a
 * buffer on the host and left it on the device): whether a launch from
 * the state it left would issue the same all the same. So it would if
 * the launch moved no bytes and evicted nothing (the graph holds kernel
 * launches, records and waits only), every range a kernel reads is valid
 * on its device now, and every buffer argument is still at the device
 * address the launch gave it. Then each byte the next launch's kernels
 * read is where this launch found it: one a kernel wrote before it in
 * the launch was written on the reader's device (no copy brought it
 * there), the others are valid there now and stay so until written; so
 * the next launch copies nothing, passes the same addresses and makes
 * the same writes, and ends with the roots as this one left them.
 */
static int weft__same_issue(weft_exec *e, const weft_stats *added)
{
    if (!weft__plan_native_kernels_only(e->plan) || added->evictions ||
        added->h2d_copies || added->d2h_copies || added->peer_copies)
        return 0;
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const weft__node *nd = &e->nodes[i];

        if (nd->kind != WEFT__NODE_KERNEL && nd->kind != WEFT__NODE_EMPTY)
            return 0;
        if (nd->kind == WEFT__NODE_KERNEL &&
            !weft__args_ready(e, i, e->node_dev[i], 1, 0))
            return 0;
    }
    return 1;
}

/*
 * After an issued launch: steady if it issued exactly what the native
 * graph holds (it ran the graph unchanged, or was recorded into it), did
 * no host-side work (which the graph does not hold: host_work) and the
 * roots end as they began (e->snap, taken before the issue). The next
 * launch that finds the roots so issues the same again: a replay.
 */
static void weft__note_steady(weft_exec *e, int have_snap, int host_work,
                              weft_stats *added)
{
    e->steady_ok = 0;
    if (!have_snap || host_work || !weft__plan_native_matched(e->plan) ||
        weft__exec_snapshot(e, &e->steady, &e->steady_cap, &e->steady_len) <
            0) {
        weft_clear_error();
        return;
    }
    e->steady_ok = weft__snap_is_steady(e);
    if (!e->steady_ok && weft__same_issue(e, added)) {
        /* What the launch allocated or registered, a replay does not. */
        added->pool_hits = added->pool_misses = added->pool_bytes = 0;
        added->registered_buffers = added->registered_bytes = 0;
        e->steady_ok = 1;
        weft__debug("exec", "replay next: the launch changed the buffers' "
                            "state, but not what a launch issues");
    }
    if (!e->steady_ok) {
        size_t at = 0;

        while (at < e->snap_len && at < e->steady_len &&
               e->snap[at] == e->steady[at])
            at++;
        weft__debug("exec",
                    "no replay next: the launch changed the buffers' state "
                    "(%zu bytes before, %zu after, first difference at %zu)",
                    e->snap_len, e->steady_len, at);
    }
}

/* A byte range a kernel touches, for weft__crosses_devices. */
typedef struct weft__kspan {
    uintptr_t root;
    size_t off, end;
    unsigned dev;
    int write;
} weft__kspan;

static int weft__kspan_cmp(const void *pa, const void *pb)
{
    const weft__kspan *a = pa, *b = pb;

    if (a->root != b->root)
        return a->root < b->root ? -1 : 1;
    return a->off < b->off ? -1 : a->off > b->off;
}

/*
 * Whether a byte that a kernel on one device writes is touched by a kernel
 * on another (1 also when there is no memory to tell). Ranges sorted by
 * root and start: one overlaps an earlier one exactly when it starts
 * before the end of that one, so the furthest end per device, of every
 * range and of written ones, tells each conflict at its later range.
 */
static int weft__crosses_devices(weft_exec *e)
{
    unsigned nd = e->rt->ndevices;
    size_t n = 0, cap = 0, *any_end, *write_end;
    weft__kspan *sp;
    int crosses = 0;

    for (uint32_t i = 0; i < e->nnodes; i++)
        if (e->nodes[i].kind == WEFT__NODE_KERNEL)
            cap += e->nodes[i].u.kernel.nargs;
    sp = weft__malloc((cap + 1) * sizeof *sp);
    any_end = weft__calloc(2 * (size_t)nd, sizeof *any_end);
    if (!sp || !any_end) {
        weft__free(sp);
        weft__free(any_end);
        weft_clear_error();
        return 1;
    }
    write_end = any_end + nd;
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const weft__node *knode = &e->nodes[i];

        if (knode->kind != WEFT__NODE_KERNEL)
            continue;
        for (uint32_t a = 0; a < knode->u.kernel.nargs; a++) {
            const weft_arg *ar = &e->args[knode->u.kernel.arg_first + a];
            size_t off, size;

            if (ar->type != WEFT_PARAM_BUFFER)
                continue;
            off = ar->buffer->offset + ar->offset;
            /* A block's bounding range: conservative. */
            size = weft__arg_span(ar);
            if (size == 0)
                continue;
            sp[n++] =
                (weft__kspan){(uintptr_t)ar->buffer->root, off, off + size,
                              e->node_dev[i], (ar->access & WEFT_WRITE) != 0};
        }
    }
    qsort(sp, n, sizeof *sp, weft__kspan_cmp);
    for (size_t k = 0; k < n && !crosses; k++) {
        const weft__kspan *s = &sp[k];

        if (k == 0 || s->root != sp[k - 1].root)
            memset(any_end, 0, 2 * (size_t)nd * sizeof *any_end);
        for (unsigned d = 0; d < nd && !crosses; d++)
            crosses = d != s->dev && (write_end[d] > s->off ||
                                      (s->write && any_end[d] > s->off));
        any_end[s->dev] = WEFT__MAX(any_end[s->dev], s->end);
        if (s->write)
            write_end[s->dev] = WEFT__MAX(write_end[s->dev], s->end);
    }
    weft__free(sp);
    weft__free(any_end);
    return crosses;
}

/*
 * Whether this launch's issue would move no bytes, from what the roots
 * hold now, after a launch that evicted nothing (weft__launch_finish
 * asks for no lookahead after one that did): every node
 * a kernel or an empty node, at least one kernel, every range a kernel
 * touches valid on its device and held by an extent there, and, where
 * the kernels are on several devices, no byte one device's kernels write
 * touched by another's (weft__crosses_devices). A byte a kernel of that
 * launch reads was then written before it in the launch on its own
 * device, or is valid there now and was not written since (no other
 * device writes it). Every node's extents (the runs of its ranges, as
 * weft__buffer_hold makes them) were made by the launch that ended, and
 * with no eviction only grew since: so nothing is allocated or evicted.
 * And a write marks valid on its device alone bytes that are valid there
 * already: the trackers may lose copies elsewhere (bytes no other device
 * of the launch touches), never claim one that is not there.
 */
static int weft__moves_nothing(weft_exec *e)
{
    unsigned dev = WEFT__HOST;
    int several = 0;

    for (uint32_t i = 0; i < e->nnodes; i++) {
        const weft__node *nd = &e->nodes[i];

        if (nd->kind == WEFT__NODE_EMPTY)
            continue;
        if (nd->kind != WEFT__NODE_KERNEL)
            return 0;
        if (dev != WEFT__HOST && e->node_dev[i] != dev)
            several = 1;
        dev = e->node_dev[i];
        if (!weft__args_ready(e, i, dev, 0, 1))
            return 0;
    }
    return dev != WEFT__HOST && !(several && weft__crosses_devices(e));
}

/*
 * At the start of the launch after one that could not make it a replay
 * (that one moved the bytes onto the device, say, which this one will
 * not): where this launch's issue moves no bytes (weft__moves_nothing),
 * it is made first, recorded into the native graph and not run (tape.h,
 * CAPTURE), so that the launch replays it. The trackers take that issue
 * as done and end as they are: it makes no copy, and its writes are on
 * the devices that hold the bytes, so every byte they touch stays valid
 * there alone. What it would have added to the statistics is what a
 * replay adds; they are not added for it. Made here rather than at the
 * end of the launch before, a graph launched once never pays for it, and
 * it sees the buffers as the program left them. A lookahead that did not
 * end in a replay stops them for the graph: each would cost an issue for
 * nothing.
 */
static void weft__lookahead(weft_exec *e)
{
    weft__stat_sink sink = {.of = &e->rt->stats};
    const uint64_t *add = (const uint64_t *)&sink.add;
    uint64_t *to = (uint64_t *)&e->rt->stats;
    weft__plan_counts c;
    uint32_t next = 0;
    int rc = 0;

    if (e->ahead_missed || !weft__plan_native_able(e->plan) ||
        !weft__moves_nothing(e) ||
        weft__exec_snapshot(e, &e->snap, &e->snap_cap, &e->snap_len) < 0) {
        weft_clear_error();
        return;
    }
    weft__plan_launch_begin(e->plan, 1);
    if (!(e->lanes.submit = weft__plan_native_capture(e->plan))) {
        weft__plan_native_end(e->plan);
        return;
    }
    e->lanes.sink = &sink;
    memset(e->state, WEFT__NODE_PENDING, e->nnodes);
    while (next < e->nnodes && rc == 0) {
        uint32_t k = weft__exec_pick(e, next), i;

        if (k == WEFT__NONE)
            break;
        i = e->order[k];
        if (k == next)
            while (++next < e->nnodes &&
                   e->state[e->order[next]] != WEFT__NODE_PENDING)
                ;
        rc = weft__exec_run_node(e, i);
        e->state[i] = rc == 0 ? WEFT__NODE_DONE : WEFT__NODE_FAILED;
    }
    e->lanes.submit = NULL;
    e->lanes.sink = NULL;
    if (weft__plan_native_end(e->plan) < 0 || next < e->nnodes)
        rc = rc < 0 ? rc : -1;
    if (weft__plan_drain(e->plan) < 0)
        rc = -1;
    weft__plan_launch_end(e->plan);
    for (size_t f = 1; f < sizeof sink.add / sizeof *add; f++)
        if (add[f])
            weft__stat_add(NULL, &to[f], (uint64_t)0 - add[f]);
    /* What launch_finish counts from the plan, for the replays only. */
    weft__plan_counts_get(e->plan, &c);
    sink.add.plan_events += c.events;
    sink.add.plan_waits += c.waits;
    weft_clear_error();
    if (rc == 0 && weft__plan_native_matched(e->plan) &&
        weft__exec_snapshot(e, &e->steady, &e->steady_cap, &e->steady_len) ==
            0) {
        /* As they began, unless the issue's writes dropped copies that
         * the launch before had made elsewhere after them (an eviction's
         * write-back): then no replay, the trackers being on the safe
         * side. */
        e->steady_ok = weft__snap_is_steady(e);
        e->ahead = e->steady_ok;
        if (e->steady_ok)
            e->replay_stats = sink.add;
    }
    weft_clear_error();
    weft__debug("exec", "the next launch's issue recorded ahead: %s",
                e->steady_ok ? "it will replay" : "no replay");
}

/* A failure the launch saw outside any node: the first one is kept. */
static void weft__launch_error(int *first, int rc, char *msg, size_t size)
{
    if (rc >= 0 || *first)
        return;
    *first = rc;
    weft__error_prefix(rc, "launch");
    weft__strlcpy(msg, weft_last_error(), size);
}

/*
 * A replay: the same decisions as the last launch, so its native graphs
 * run again with no issue. The counters the issue would have added are
 * added, and eviction's bookkeeping moves on as the issue's last steps
 * would leave it. The roots are this launch's while it runs, as a step
 * makes them (eviction by another graph passes them by).
 */
static int weft__replay(weft_exec *e, uint64_t t0, char *msg, size_t size)
{
    const uint64_t *add = (const uint64_t *)&e->replay_stats;
    uint64_t *to = (uint64_t *)&e->rt->stats;
    uint64_t tick;
    int first;

    /* Counters the issue would have added (the fields after size). */
    for (size_t f = 1; f < sizeof e->replay_stats / sizeof *add; f++)
        if (add[f])
            weft__stat_add(NULL, &to[f], add[f]);
    tick = __atomic_add_fetch(&e->rt->tick, e->nnodes, __ATOMIC_RELAXED);
    /* Each root is next used at its first node of the next launch, and its
     * copies were used now. */
    for (uint32_t r = 0; r < e->nroots; r++) {
        weft_buffer *root = e->roots[r];

        weft__buffer_lock(root);
        if (!root->fence_owner)
            root->fence_owner = &e->lanes;
        root->next_use = tick + e->root_first[r];
        for (unsigned d = 0; root->replicas && d < e->rt->ndevices; d++)
            for (size_t x = 0; x < root->replicas[d].nextents; x++)
                root->replicas[d].extents[x]->last_use = tick;
        weft__buffer_unlock(root);
    }
    if ((first = weft__plan_native_replay(e->plan)) < 0) {
        e->steady_ok = 0;
        weft__error_prefix(first, "launch (native graph)");
        weft__strlcpy(msg, weft_last_error(), size);
    }
    weft__plan_launch_end(e->plan);
    pthread_mutex_lock(&e->lock);
    e->launches++;
    e->replays++;
    e->last_ns = weft__now_ns() - t0;
    e->native_launches = weft__plan_native_launches(e->plan);
    /* (built at this launch's start where the last one recorded them) */
    e->native_graphs = weft__plan_native_graphs(e->plan);
    e->timed = 0;
    e->times_valid = 0;
    pthread_mutex_unlock(&e->lock);
    return first;
}

/*
 * The end of a launch, on whichever thread carried it there: the roots'
 * launch counts, the errors, and the graph's job queued again while
 * launches are pending (behind the other graphs' jobs; the engine has run
 * this job, so it has a thread and the submit cannot fail). After the
 * broadcast with nothing pending, e may be destroyed as soon as e->lock is
 * released.
 */
static void weft__launch_done(weft_exec *e, int rc, const char *msg)
{
    for (uint32_t r = 0; r < e->nroots; r++)
        weft__buffer_launch_end(e->roots[r], &e->lanes);
    weft__exec_running(e->rt, -1);
    if (e->run.busy)
        weft__hostwork_busy(weft__hostwork_get(e->rt), -1);
    e->run.busy = 0;
    weft__exec_leave(e); /* for the thread that starts the next launch */
    pthread_mutex_lock(&e->lock);
    e->last_err = rc;
    weft__strlcpy(e->last_msg, msg, sizeof e->last_msg);
    if (rc < 0 && !e->first_err) {
        e->first_err = rc;
        weft__strlcpy(e->first_msg, msg, sizeof e->first_msg);
    }
    e->pending--;
    if (e->pending)
        weft__engine_submit(e->rt, &e->job);
    else
        e->queued = 0;
    pthread_cond_broadcast(&e->done);
    pthread_mutex_unlock(&e->lock);
}

/*
 * After the issue: the deferred work goes to the device (a native graph,
 * or op by op), the launch drains, and its counts are kept. The launch's
 * first failure, or 0.
 */
static int weft__launch_finish(weft_exec *e)
{
    weft__exec_run *run = &e->run;
    weft__plan_lane_count lc[WEFT__COUNTOF(e->lane_counts)];
    weft__plan_counts c;
    unsigned nlc;

    e->lanes.submit = NULL;
    weft__launch_error(&run->first, weft__plan_native_end(e->plan), run->msg,
                       sizeof run->msg);
    /* The launch is over once its work is: a failure seen only here (work
     * that failed on the device) belongs to no node in particular. */
    weft__launch_error(&run->first, weft__plan_drain(e->plan), run->msg,
                       sizeof run->msg);
    weft__plan_launch_end(e->plan);
    if (!run->first)
        weft__note_steady(e, run->have_snap,
                          e->lanes.host_effects != run->effects0,
                          &run->sink.add);
    else
        e->steady_ok = 0;
    weft__plan_counts_get(e->plan, &c);
    nlc = weft__plan_lane_counts(e->plan, lc, WEFT__COUNTOF(lc));
    weft__stat_add(&run->sink, &e->rt->stats.plan_events, c.events);
    weft__stat_add(&run->sink, &e->rt->stats.plan_waits, c.waits);
    e->lanes.sink = NULL;
    if (e->steady_ok)
        e->replay_stats = run->sink.add;
    pthread_mutex_lock(&e->lock);
    e->counts = c;
    memcpy(e->lane_counts, lc, nlc * sizeof *lc);
    e->nlane_counts = nlc;
    e->launches++;
    e->last_ns = weft__now_ns() - run->t0;
    e->native_launches = weft__plan_native_launches(e->plan);
    e->native_updates = weft__plan_native_updates(e->plan);
    e->native_graphs = weft__plan_native_graphs(e->plan);
    e->timed = (unsigned)run->timed;
    e->times_valid = 0;
    if (e->node_times && weft__plan_node_timed(e->plan)) {
        for (uint32_t i = 0; i < e->nnodes; i++) {
            uint64_t *t = &e->node_times[4 * (size_t)i];

            t[3] = (uint64_t)weft__plan_node_time(e->plan, i, t);
            t[0] = t[0] > run->t0 ? t[0] - run->t0 : 0;
            t[1] = t[1] > run->t0 ? t[1] - run->t0 : 0;
        }
        e->times_valid = 1;
    }
    pthread_mutex_unlock(&e->lock);
    /* Not timed, no root shared (have_snap), no replay next yet, and no
     * eviction (which a replay would not make again): the next launch
     * begins with a lookahead. */
    e->ahead_want = !run->first && run->have_snap && !e->steady_ok &&
                    !run->sink.add.evictions;
    return run->first;
}

void weft__exec_seen_save(weft_exec *e, uint64_t *seen)
{
    for (unsigned d = 0; d < e->rt->ndevices; d++)
        seen[d] = weft__drv_host_seen(e->rt->devices[d]);
}

void weft__exec_seen_join(weft_exec *e, const uint64_t *seen)
{
    for (unsigned d = 0; d < e->rt->ndevices; d++)
        weft__drv_host_join(e->rt->devices[d], seen[d]);
}

void weft__exec_leave(weft_exec *e)
{
    weft__exec_seen_save(e, e->run.seen);
}

void weft__exec_take(weft_exec *e)
{
    weft__exec_seen_join(e, e->run.seen);
}

/*
 * How long a carrying thread with nothing to issue watches for a native
 * call in flight to end before it parks the launch: a call that ends
 * soon (a chain of small native nodes) is then carried on here, not by a
 * host worker after a hand-off; the watch yields the core, which the
 * call's thread may need.
 */
enum { WEFT__NATIVE_WATCH_NS = 20000 };

/* 1 once a host node finished (e->finished, peeked), 0 after the watch. */
static int weft__exec_watch(weft_exec *e)
{
    uint64_t t0 = weft__now_ns();

    do {
        if (__atomic_load_n(&e->finished, __ATOMIC_RELAXED))
            return 1;
        sched_yield();
    } while (weft__now_ns() - t0 < WEFT__NATIVE_WATCH_NS);
    return 0;
}

void weft__exec_advance(weft_exec *e)
{
    weft__exec_run *run = &e->run;

    for (;;) {
        unsigned char st = WEFT__NODE_DONE;
        uint32_t i, k;
        char label[128];
        int rc;

        weft__exec_host_finished(e, &run->first, run->msg, sizeof run->msg);
        k = run->next < e->nnodes ? weft__exec_pick(e, run->next) : WEFT__NONE;
        if (k == WEFT__NONE && e->inline_job) {
            /* Everything issuable is issued: this worker runs the host
             * node it kept, and carries on from its end. */
            weft__host_job *j = e->inline_job;

            e->inline_job = NULL;
            j->task.run(&j->task);
            continue;
        }
        if (k == WEFT__NONE) {
            if (!e->host_out)
                break; /* every node issued, none on a host worker */
            if (e->native_out && weft__exec_watch(e))
                continue;
            /* Nothing to issue before a host node finishes: the worker
             * that finishes one carries the launch on from here. */
            weft__exec_leave(e);
            pthread_mutex_lock(&e->host_lock);
            if (!e->finished) {
                e->parked = 1;
                pthread_mutex_unlock(&e->host_lock);
                return;
            }
            pthread_mutex_unlock(&e->host_lock);
            continue;
        }
        i = e->order[k];
        if (k == run->next)
            while (++run->next < e->nnodes &&
                   e->state[e->order[run->next]] != WEFT__NODE_PENDING)
                ;

        for (uint32_t p = e->pred_first[i]; p < e->pred_first[i + 1]; p++)
            if (e->state[e->preds[p]] != WEFT__NODE_DONE)
                st = WEFT__NODE_CANCELED;
        rc = st == WEFT__NODE_DONE ? weft__exec_run_node(e, i) : 0;
        if (rc == WEFT__HANDED_OVER) {
            st = WEFT__NODE_INFLIGHT;
        } else if (rc < 0) {
            st = WEFT__NODE_FAILED;
            if (!run->first) {
                run->first = rc;
                weft__error_prefix(
                    rc, "node %u (%s)", i,
                    weft__node_label(&e->nodes[i], label, sizeof label));
                weft__strlcpy(run->msg, weft_last_error(), sizeof run->msg);
            }
        }
        e->state[i] = st;
    }
    weft__assert(run->next == e->nnodes);
    weft__launch_done(e, weft__launch_finish(e), run->msg);
}

/* A mark of a program's queue that launch `launch` waits for. */
typedef struct weft__exec_after {
    struct weft__exec_after *next;
    uint64_t launch;
    const weft__driver *drv;
    void *mark;
} weft__exec_after;

/*
 * The start of a launch: the marks it waits for (the first ones of the
 * list, made for it) are waited for on this thread. The first failure, or
 * 0.
 */
static int weft__exec_after_wait(weft_exec *e)
{
    weft__exec_after *mine = NULL, **tail = &mine;
    uint64_t launch;
    int rc = 0;

    pthread_mutex_lock(&e->lock);
    launch = e->started++;
    while (e->after && e->after->launch == launch) {
        *tail = e->after;
        tail = &e->after->next;
        e->after = e->after->next;
        *tail = NULL;
    }
    if (!e->after)
        e->after_tail = NULL;
    pthread_mutex_unlock(&e->lock);
    while (mine) {
        weft__exec_after *a = mine;
        int arc = weft__drv_external_mark_end(a->drv, a->mark, rc == 0);

        if (rc == 0 && arc < 0)
            rc = weft__error_prefix(arc, "launch: waiting for the program's "
                                         "queue");
        mine = a->next;
        weft__free(a);
    }
    return rc;
}

/*
 * The graph's engine job: the start of one launch. A replay (the roots are
 * in the state the last native launch left them in) runs to its end here;
 * an issue goes on in weft__exec_advance, here and then wherever a host
 * node finishes.
 */
static void weft__exec_job(weft__engine_job *job)
{
    weft_exec *e =
        (weft_exec *)(void *)((char *)job - offsetof(weft_exec, job));
    weft__exec_run *run = &e->run;
    int shared = 0, after;

    weft__exec_take(e);
    /* The program's queues first: a launch that waits for them is not
     * running yet (launches waiting for room do not count on it). */
    after = weft__exec_after_wait(e);
    run->msg[0] = '\0';
    if (after < 0)
        weft__strlcpy(run->msg, weft_last_error(), sizeof run->msg);
    weft__exec_running(e->rt, 1);
    /* Idle host workers poll for this launch's tasks (hostwork.h). */
    if (e->host_tasks) {
        weft__hostwork *hw = weft__hostwork_get(e->rt);

        if (hw)
            weft__hostwork_busy(hw, 1);
        run->busy = hw != NULL;
    }
    if (after < 0) {
        weft__launch_done(e, after, run->msg);
        return;
    }
    pthread_mutex_lock(&e->lock);
    weft__exec_seen_join(e, e->launch_seen);
    pthread_mutex_unlock(&e->lock);
    run->t0 = weft__now_ns();
    run->first = 0;
    run->next = 0;
    if (e->replace && !weft__plan_learning(e->plan)) {
        e->replace = 0;
        weft__replace(e);
    }
    weft__plan_set_timings(e->plan,
                           (int)__atomic_load_n(&e->timings, __ATOMIC_ACQUIRE));
    weft__plan_launch_timed(e->plan);
    run->timed = weft__plan_timed(e->plan);
    for (uint32_t r = 0; r < e->nroots && !shared; r++)
        shared =
            __atomic_load_n(&e->roots[r]->root_execs, __ATOMIC_ACQUIRE) > 1;
    /*
     * A replay: the last launch ran the native graph unchanged and every
     * root is in the state that left it in, which was also the state it
     * began in; so an issue would make the same decisions, operation for
     * operation, and the graph is run again without one.
     */
    run->have_snap =
        !run->timed && !shared && weft__plan_native_able(e->plan) &&
        weft__exec_snapshot(e, &e->snap, &e->snap_cap, &e->snap_len) == 0;
    weft_clear_error();
    if (run->have_snap && e->ahead_want && !e->steady_ok) {
        weft__lookahead(e);
        pthread_mutex_lock(&e->lock);
        e->native_graphs = weft__plan_native_graphs(e->plan);
        pthread_mutex_unlock(&e->lock);
    }
    e->ahead_want = 0;
    if (run->have_snap && e->steady_ok && e->issue_state &&
        weft__plan_native_matched(e->plan) && weft__snap_is_steady(e) &&
        weft__plan_native_ready(e->plan)) {
        int rc = weft__replay(e, run->t0, run->msg, sizeof run->msg);

        e->ahead = 0;
        weft__launch_done(e, rc, run->msg);
        return;
    }
    /* A lookahead that did not end in a replay: it was made for nothing,
     * and is not made again. */
    e->ahead_missed += (unsigned)e->ahead;
    e->ahead = 0;
    weft__plan_launch_begin(e->plan, 0);
    memset(&run->sink, 0, sizeof run->sink);
    run->sink.of = &e->rt->stats;
    e->lanes.sink = &run->sink;
    run->effects0 = e->lanes.host_effects;
    e->lanes.submit = weft__plan_native_begin(e->plan, !shared);
    memset(e->state, WEFT__NODE_PENDING, e->nnodes);
    if (weft__exec_fast(e, shared))
        return;
    /* A graph that never needed the issue so far: its state now. */
    if ((after = weft__exec_issue_state(e)) < 0) {
        memset(e->state, WEFT__NODE_CANCELED, e->nnodes);
        weft__launch_error(&run->first, after, run->msg, sizeof run->msg);
        weft__launch_done(e, weft__launch_finish(e), run->msg);
        return;
    }
    weft__exec_advance(e);
}

void weft__exec_acc_refs(weft_exec *e, long sign)
{
    for (uint32_t i = 0; i < e->nruns; i++)
        weft__buffer_exec_ref(e->runs[i].buf, sign * (long)e->runs[i].n);
}

void weft__exec_fast_end(weft_exec *e)
{
    int rc;

    weft__exec_take(e);
    memset(e->state, WEFT__NODE_DONE, e->nnodes);
    rc = weft__launch_finish(e);
    pthread_mutex_lock(&e->lock);
    e->counts.steps = e->nnodes; /* every node ran, none through a step */
    e->fast_launches++;
    pthread_mutex_unlock(&e->lock);
    weft__launch_done(e, rc, e->run.msg);
}

void weft__exec_plan_counts(weft_exec *e, weft__plan_counts *c)
{
    pthread_mutex_lock(&e->lock);
    *c = e->counts;
    pthread_mutex_unlock(&e->lock);
}

/* ---- the public calls -------------------------------------------------- */

/* weft_exec_launch, with a mark for the launch when `after` is not NULL. */
static int weft__exec_launch(weft_exec *e, weft__exec_after *after,
                             const char *fn)
{
    uint32_t r;
    int rc = 0;

    pthread_mutex_lock(&e->lock);
    for (r = 0; r < e->nroots && rc == 0; r++)
        rc = weft__buffer_launch_begin(e->roots[r]);
    if (rc < 0) {
        /* The one that failed did not begin; undo the others. */
        for (uint32_t u = 0; u + 1 < r; u++)
            weft__buffer_launch_end(e->roots[u], NULL);
        pthread_mutex_unlock(&e->lock);
        return weft__error_prefix(rc, "%s", fn);
    }
    if (!e->queued) {
        e->job.run = weft__exec_job;
        if ((rc = weft__engine_submit(e->rt, &e->job)) < 0) {
            for (r = 0; r < e->nroots; r++)
                weft__buffer_launch_end(e->roots[r], NULL);
            pthread_mutex_unlock(&e->lock);
            return weft__error_prefix(rc, "%s", fn);
        }
        e->queued = 1;
    }
    if (after) {
        after->launch = e->made;
        if (e->after_tail)
            e->after_tail->next = after;
        else
            e->after = after;
        e->after_tail = after;
    }
    e->made++;
    e->pending++;
    /* What this thread has seen, the launch's first thread sees too. */
    for (unsigned d = 0; d < e->rt->ndevices; d++)
        e->launch_seen[d] = WEFT__MAX(e->launch_seen[d],
                                      weft__drv_host_seen(e->rt->devices[d]));
    pthread_mutex_unlock(&e->lock);
    return 0;
}

int weft_exec_launch(weft_exec *e)
{
    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_launch: exec is NULL");
    return weft__exec_launch(e, NULL, "weft_exec_launch");
}

int weft_exec_launch_after(weft_exec *e, const char *driver, void *queue)
{
    static const char fn[] = "weft_exec_launch_after";
    const weft__driver *drv = NULL;
    weft__exec_after *a;
    int rc;

    if (!e || !driver)
        return weft__error(WEFT_EINVAL, "%s: %s is NULL", fn,
                           e ? "driver" : "exec");
    if (strcmp(driver, "cuda") && strcmp(driver, "opencl") &&
        strcmp(driver, "host") && strcmp(driver, "sim"))
        return weft__error(WEFT_EINVAL,
                           "%s: driver \"%.32s\" is none of cuda, opencl, "
                           "host, sim",
                           fn, driver);
    for (unsigned d = 0; d < e->rt->ndevices && !drv; d++)
        if (strcmp(e->rt->devices[d]->drv->name, driver) == 0)
            drv = e->rt->devices[d]->drv;
    if (!drv)
        return weft__error(WEFT_ENOTSUP,
                           "%s: driver \"%.32s\": no device of the runtime "
                           "has it",
                           fn, driver);
    if (!(a = weft__calloc(1, sizeof *a)))
        return weft__error(WEFT_ENOMEM, "%s: out of memory", fn);
    a->drv = drv;
    if ((rc = weft__drv_external_mark(drv, queue, &a->mark)) < 0) {
        weft__free(a);
        return weft__error_prefix(rc, "%s", fn);
    }
    if ((rc = weft__exec_launch(e, a, fn)) < 0) {
        char keep[WEFT__EXEC_MSG];

        weft__strlcpy(keep, weft_last_error(), sizeof keep);
        weft__drv_external_mark_end(drv, a->mark, 0);
        weft__free(a);
        return weft__error(rc, "%s", keep);
    }
    return 0;
}

int weft_exec_wait(weft_exec *e)
{
    char msg[WEFT__EXEC_MSG];
    int rc;

    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_wait: exec is NULL");
    pthread_mutex_lock(&e->lock);
    e->waiters++;
    while (e->pending) {
        /*
         * A launch still queued on the engine starts here instead: this
         * thread would only wait for an engine thread to wake up, run it
         * (a replay: launch the graphs and wait for them) and wake this
         * one up again. It carries the launch as an engine thread would.
         */
        if (weft__engine_take(e->rt, &e->job)) {
            pthread_mutex_unlock(&e->lock);
            e->job.run(&e->job);
            pthread_mutex_lock(&e->lock);
            continue;
        }
        pthread_cond_wait(&e->done, &e->lock);
    }
    /* Reported once: a later wait speaks of later launches only. */
    rc = e->first_err;
    weft__strlcpy(msg, e->first_msg, sizeof msg);
    e->first_err = 0;
    /* This thread has seen the launches end, as the thread that ended
     * them had. */
    weft__exec_seen_join(e, e->run.seen);
    e->waiters--;
    pthread_cond_broadcast(&e->done); /* a destroy may wait for this */
    pthread_mutex_unlock(&e->lock);
    return rc < 0 ? weft__error(rc, "%s", msg) : 0;
}

int weft_exec_status(weft_exec *e)
{
    char msg[WEFT__EXEC_MSG];
    int rc;

    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_status: exec is NULL");
    pthread_mutex_lock(&e->lock);
    rc = e->pending ? WEFT_ENOTREADY : e->last_err;
    weft__strlcpy(msg, e->last_msg, sizeof msg);
    pthread_mutex_unlock(&e->lock);
    if (rc == WEFT_ENOTREADY)
        return weft__error(rc, "weft_exec_status: launches in flight");
    return rc < 0 ? weft__error(rc, "%s", msg) : 0;
}

int weft_exec_destroy(weft_exec *e)
{
    weft_runtime *rt;

    if (!e)
        return 0;
    /* Launches end, and threads waiting on e in other calls leave. */
    pthread_mutex_lock(&e->lock);
    while (e->pending || e->waiters)
        pthread_cond_wait(&e->done, &e->lock);
    pthread_mutex_unlock(&e->lock);
    for (uint32_t i = 0; i < e->nnodes; i++)
        if (e->nodes[i].kind == WEFT__NODE_KERNEL)
            weft__kernel_ref(&e->nodes[i].u.kernel.k->exec_nodes, -1);
    weft__exec_acc_refs(e, -1);
    for (uint32_t r = 0; r < e->nroots; r++)
        weft__buffer_root_execs(e->roots[r], -1);
    pthread_cond_destroy(&e->done);
    pthread_mutex_destroy(&e->lock);
    pthread_mutex_destroy(&e->host_lock);
    pthread_cond_destroy(&e->host_done);
    rt = e->rt;
    weft__exec_free(e);
    weft__runtime_live(rt, -1);
    return 0;
}

int weft_exec_set_arg(weft_exec *e, unsigned node, unsigned index, weft_arg arg)
{
    weft_arg *old;
    const weft__node *nd;

    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_set_arg: exec is NULL");
    if (node >= e->nnodes || e->nodes[node].kind != WEFT__NODE_KERNEL)
        return weft__error(WEFT_EINVAL,
                           "weft_exec_set_arg: node %u is not a kernel node "
                           "(of %u nodes)",
                           node, e->nnodes);
    nd = &e->nodes[node];
    if (index >= nd->u.kernel.nargs)
        return weft__error(WEFT_EARGS,
                           "weft_exec_set_arg: node %u has %u arguments, not "
                           "%u",
                           node, nd->u.kernel.nargs, index + 1);
    old = &e->args[nd->u.kernel.arg_first + index];
    if (old->type == WEFT_PARAM_BUFFER || old->type == WEFT_PARAM_LOCAL)
        return weft__error(WEFT_EARGS,
                           "weft_exec_set_arg: node %u argument %u is a %s: "
                           "only values can change (the graph's dependencies "
                           "were inferred from its buffers)",
                           node, index,
                           old->type == WEFT_PARAM_BUFFER ? "buffer"
                                                          : "local array");
    if (arg.type != old->type || arg.size != old->size ||
        (arg.type == WEFT_PARAM_BYTES && !arg.value.bytes))
        return weft__error(WEFT_EARGS,
                           "weft_exec_set_arg: node %u argument %u: a %s "
                           "value of %zu bytes replaces a %s of %zu bytes",
                           node, index, weft_param_type_name(arg.type),
                           arg.size, weft_param_type_name(old->type),
                           old->size);
    /* Launches already made run with the old value. */
    pthread_mutex_lock(&e->lock);
    e->waiters++;
    while (e->pending)
        pthread_cond_wait(&e->done, &e->lock);
    if (arg.type == WEFT_PARAM_BYTES)
        memcpy(e->bytes + old->value.u64, arg.value.bytes, arg.size);
    else
        old->value = arg.value;
    e->steady_ok = 0;
    e->waiters--;
    pthread_cond_broadcast(&e->done);
    pthread_mutex_unlock(&e->lock);
    return 0;
}

const weft_device *weft_exec_node_device(const weft_exec *e, unsigned node)
{
    unsigned d;

    if (!e || node >= e->nnodes) {
        weft__error(WEFT_EINVAL, "weft_exec_node_device: %s",
                    e ? "no such node" : "exec is NULL");
        return NULL;
    }
    /* The lock: placement again (weft__replace) swaps node_dev. */
    pthread_mutex_lock((pthread_mutex_t *)&e->lock);
    d = e->node_dev[node];
    pthread_mutex_unlock((pthread_mutex_t *)&e->lock);
    return weft_runtime_device(e->rt, d);
}

int weft_exec_enable_timings(weft_exec *e, int on)
{
    uint64_t *t = NULL;

    if (!e)
        return weft__error(WEFT_EINVAL,
                           "weft_exec_enable_timings: exec is NULL");
    if (on != 0 && on != 1)
        return weft__error(
            WEFT_EINVAL, "weft_exec_enable_timings: on is %d, not 0 or 1", on);
    if (on && !e->node_times) {
        t = weft__calloc(4 * (size_t)e->nnodes + 1, sizeof *t);
        if (!t)
            return weft__error(WEFT_ENOMEM,
                               "weft_exec_enable_timings: out of memory");
    }
    pthread_mutex_lock(&e->lock);
    if (t && !e->node_times) {
        e->node_times = t;
        t = NULL;
    }
    pthread_mutex_unlock(&e->lock);
    weft__free(t);
    __atomic_store_n(&e->timings, (unsigned)on, __ATOMIC_RELEASE);
    return 0;
}

int weft_exec_node_timing(weft_exec *e, weft_node node, weft_node_timing *t)
{
    weft_node_timing nt;

    if (!e || !t)
        return weft__error(WEFT_EINVAL, "weft_exec_node_timing: %s is NULL",
                           e ? "timing" : "exec");
    if (t->size < sizeof(size_t) || t->size > sizeof nt)
        return weft__error(WEFT_EINVAL,
                           "weft_exec_node_timing: timing->size %zu; set it "
                           "to sizeof(weft_node_timing) (%zu)",
                           t->size, sizeof nt);
    if (node >= e->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_exec_node_timing: node %u of %u nodes", node,
                           e->nnodes);
    memset(&nt, 0, sizeof nt);
    pthread_mutex_lock(&e->lock);
    if (!e->times_valid) {
        pthread_mutex_unlock(&e->lock);
        return weft__error(WEFT_ENOTFOUND,
                           "weft_exec_node_timing: the last finished launch "
                           "was not timed (weft_exec_enable_timings before "
                           "the launch)");
    }
    nt.start_ns = e->node_times[4 * (size_t)node];
    nt.end_ns = e->node_times[4 * (size_t)node + 1];
    nt.busy_ns = e->node_times[4 * (size_t)node + 2];
    nt.timed = (unsigned)e->node_times[4 * (size_t)node + 3];
    pthread_mutex_unlock(&e->lock);
    nt.size = t->size;
    memcpy(t, &nt, t->size);
    return 0;
}

int weft_exec_get_stats(weft_exec *e, weft_exec_stats *stats)
{
    weft_exec_stats st;
    unsigned char *seen;

    if (!e || !stats)
        return weft__error(WEFT_EINVAL, "weft_exec_get_stats: %s is NULL",
                           e ? "stats" : "exec");
    if (stats->size < sizeof(size_t) || stats->size > sizeof st)
        return weft__error(WEFT_EINVAL,
                           "weft_exec_get_stats: stats->size %zu; set it to "
                           "sizeof(weft_exec_stats) (%zu)",
                           stats->size, sizeof st);
    seen = weft__calloc((size_t)e->rt->ndevices + 1, 1);
    if (!seen)
        return weft__error(WEFT_ENOMEM, "weft_exec_get_stats: out of memory");
    memset(&st, 0, sizeof st);
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < e->nnodes; i++)
        if (weft__node_placed(&e->nodes[i]) && !seen[e->node_dev[i]]) {
            seen[e->node_dev[i]] = 1;
            st.devices_used++;
        }
    weft__free(seen);
    st.launches = e->launches;
    st.nodes = e->counts.steps;
    st.events = e->counts.events;
    st.waits = e->counts.waits;
    st.host_syncs = e->counts.host_syncs;
    st.last_ns = e->last_ns;
    st.native_launches = e->native_launches;
    st.native_replays = e->replays;
    st.native_updates = e->native_updates;
    st.native_graphs = e->native_graphs;
    st.timed = e->timed;
    for (unsigned i = 0;
         i < e->nlane_counts && st.nlanes < WEFT__COUNTOF(st.lanes); i++) {
        const weft__plan_lane_count *c = &e->lane_counts[i];
        weft_lane_stats *l = &st.lanes[st.nlanes++];

        l->device = weft_runtime_device(e->rt, c->device);
        l->role = weft__plan_slot_name(c->slot);
        l->ops = c->ops;
        l->nodes = c->nodes;
        l->busy_ns = c->busy_ns;
        l->span_ns = c->last_ns > c->first_ns ? c->last_ns - c->first_ns : 0;
    }
    pthread_mutex_unlock(&e->lock);
    st.size = stats->size;
    memcpy(stats, &st, stats->size);
    return 0;
}
