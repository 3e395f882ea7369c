/*
 * Executable weft_mpi graphs: the persistent requests, the send and
 * receive tasks, and the protocol that ends every launch alike on every
 * rank.
 *
 * A launch: every receive of this rank is started (so that a send never
 * waits for its receive to be posted), and the control receives; then the
 * local graph launches. Send tasks copy their range into staging and
 * start a synchronous-mode send (MPI_Ssend_init). Receive tasks wait for
 * their request, or give up once the launch is aborted; an empty message
 * is a send that its rank did not make (below): the task fails.
 *
 * No deadlock: a receive runs after the earlier receive and every earlier
 * send of its rank (graph.c), and a send comes before its receive in graph
 * order. Take R, the earliest receive of the graph not done, and its send
 * S on rank w. The nodes S depends on come before S, so the receives among
 * them are done, and the rest (computation, sends) wait on nothing. The
 * only waits that could hold w's threads are receives running there; each
 * is later than R, so it started after every earlier send of w, S among
 * them: while S is not made, none runs. So S is made and R completes,
 * whatever the number of threads (a receive that waits holds one: the
 * next receive of its rank follows it). A receive that needs, through
 * other ranks, a send that a failure canceled follows that send (it is
 * earlier), so it is canceled too and every launch ends.
 *
 * The end (end_launch), with nothing canceled: wait for the local graph;
 * a rank that failed and has not heard of another's failure sends its
 * code, any other rank 0; every send this launch did not make (its node
 * failed or was canceled) is made as an empty message, so that every
 * receive posted completes; then every rank waits for its sends, its
 * receives and one control message from every other rank, which tell it
 * which ranks failed. Nothing is left in flight for the next launch.
 */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* MPI_Test of req under mpi_lock. */
static int test(weft_mpi_exec *e, MPI_Request *req, MPI_Status *st)
{
    int flag = 0;

    pthread_mutex_lock(&e->mpi_lock);
    MPI_Test(req, &flag, st);
    pthread_mutex_unlock(&e->mpi_lock);
    return flag;
}

/* Wait for req by testing it (mpi_lock is not held while another waits). */
static void wait_req(weft_mpi_exec *e, MPI_Request *req)
{
    while (!test(e, req, MPI_STATUS_IGNORE))
        sched_yield();
}

/* MPI_Start of req under mpi_lock. */
static void start(weft_mpi_exec *e, MPI_Request *req)
{
    pthread_mutex_lock(&e->mpi_lock);
    MPI_Start(req);
    pthread_mutex_unlock(&e->mpi_lock);
}

/* Test the control messages not arrived yet; ctrl_lock held. */
static void ctrl_test(weft_mpi_exec *e)
{
    weft_mpi *mpi = e->g->mpi;

    for (int r = 0; r < mpi->size; r++) {
        if (r == mpi->rank || e->ctrl_done[r])
            continue;
        if (!test(e, &e->ctrl_recv[r], MPI_STATUS_IGNORE))
            continue;
        e->ctrl_done[r] = 1;
        if (e->ctrl_msg[r] != 0)
            atomic_store(&e->aborted, 1);
    }
}

/* Whether this launch is aborted, here or on another rank. */
static int aborted(weft_mpi_exec *e)
{
    if (atomic_load(&e->aborted))
        return 1;
    if (pthread_mutex_trylock(&e->ctrl_lock) == 0) {
        ctrl_test(e);
        pthread_mutex_unlock(&e->ctrl_lock);
    }
    return atomic_load(&e->aborted);
}

static void ctrl_send(weft_mpi_exec *e, int code)
{
    weft_mpi *mpi = e->g->mpi;

    if (atomic_exchange(&e->ctrl_sent, 1))
        return;
    e->my_code = code;
    for (int r = 0; r < mpi->size; r++)
        if (r != mpi->rank) {
            pthread_mutex_lock(&e->mpi_lock);
            MPI_Isend(&e->my_code, 1, MPI_INT, r, 0, e->comm, &e->ctrl_send[r]);
            pthread_mutex_unlock(&e->mpi_lock);
        }
}

void wm_abort(weft_mpi_exec *e, int code)
{
    atomic_store(&e->aborted, 1);
    ctrl_send(e, code);
}

/*
 * A poll task's look at req: 0 once it completed, WEFT_HOST_AGAIN while
 * it has not (weft calls the task again, its worker free meanwhile),
 * WM_TASK_FAILED once the launch aborted.
 */
static int poll_req(weft_mpi_exec *e, MPI_Request *req, MPI_Status *st)
{
    if (test(e, req, st))
        return 0;
    return aborted(e) ? WM_TASK_FAILED : WEFT_HOST_AGAIN;
}

/* The endpoint's persistent request on its host copy at host. */
static int make_direct(wm_endpoint *ep, void *host)
{
    weft_mpi_exec *e = ep->g->exec;
    int rc;

    if (ep->direct != MPI_REQUEST_NULL)
        MPI_Request_free(&ep->direct);
    ep->host = host;
    rc = ep->send ? MPI_Ssend_init(host, ep->count, ep->type, ep->peer, ep->tag,
                                   e->comm, &ep->direct)
                  : MPI_Recv_init(host, ep->count, ep->type, ep->peer, ep->tag,
                                  e->comm, &ep->direct);
    if (rc != MPI_SUCCESS) {
        ep->direct = MPI_REQUEST_NULL;
        return -1;
    }
    return 0;
}

int wm_send_task(void *const *ptrs, void *user)
{
    wm_endpoint *ep = user;

    if (ep->dev) { /* its native node copied the bytes out, or IPC did */
        ep->done = 1;
        start(ep->g->exec, &ep->req);
        return 0;
    }
    if (ep->packed) {
        for (size_t r = 0; r < ep->at.rows; r++)
            memcpy((char *)ep->staging + r * ep->at.row_bytes,
                   (const char *)ptrs[0] + r * ep->at.pitch, ep->at.row_bytes);
        ep->done = 1;
        start(ep->g->exec, &ep->req);
        return 0;
    }
    if ((ep->direct == MPI_REQUEST_NULL || ep->host != ptrs[0]) &&
        make_direct(ep, ptrs[0]) < 0) {
        wm_abort(ep->g->exec, WEFT_EIO);
        return WM_TASK_FAILED;
    }
    ep->done = 1;
    start(ep->g->exec, &ep->direct);
    return 0;
}

int wm_sent_task(void *const *ptrs, void *user)
{
    wm_endpoint *ep = user;

    (void)ptrs; /* a device send's (aware) request is req */
    return poll_req(ep->g->exec, ep->dev ? &ep->req : &ep->direct,
                    MPI_STATUS_IGNORE);
}

int wm_recv_task(void *const *ptrs, void *user)
{
    wm_endpoint *ep = user;
    weft_mpi_exec *e = ep->g->exec;
    MPI_Status st;
    int n = 0, rc;

    if ((rc = poll_req(e, ep->posted_direct ? &ep->direct : &ep->req, &st)))
        return rc;
    ep->done = 1;
    MPI_Get_count(&st, MPI_BYTE, &n);
    if ((size_t)n != (ep->ipc ? sizeof ep->ipc_msg : ep->size) || aborted(e))
        return WM_TASK_FAILED; /* the sender's node failed or was canceled */
    if (ep->dev) /* its native node copies staging in, or IPC brought it */
        return 0;
    if (ep->posted_direct) /* (weft.h: host copies do not move) */
        return ptrs[0] != ep->host ? WM_TASK_FAILED : 0;
    for (size_t r = 0; r < ep->at.rows; r++)
        memcpy((char *)ptrs[0] + r * ep->at.pitch,
               (char *)ep->staging + r * ep->at.row_bytes, ep->at.row_bytes);
    /* the next launch receives there directly, where early */
    if (ep->early && ep->direct == MPI_REQUEST_NULL)
        make_direct(ep, ptrs[0]);
    return 0;
}

static void *progress_main(void *arg)
{
    weft_mpi_exec *e = arg;
    int flag;

    pthread_mutex_lock(&e->plock);
    for (;;) {
        while (e->pstate == 0)
            pthread_cond_wait(&e->pcond, &e->plock);
        if (e->pstate == 2)
            break;
        pthread_mutex_unlock(&e->plock);
        pthread_mutex_lock(&e->mpi_lock);
        MPI_Iprobe(MPI_ANY_SOURCE, e->probe_tag, e->comm, &flag,
                   MPI_STATUS_IGNORE);
        pthread_mutex_unlock(&e->mpi_lock);
        sched_yield();
        pthread_mutex_lock(&e->plock);
    }
    pthread_mutex_unlock(&e->plock);
    return NULL;
}

/* The progress thread polls (1), stops (0) or ends (2). */
static void progress_set(weft_mpi_exec *e, int state)
{
    /* (polling is for large messages: none left where IPC took them) */
    if (!e->has_progress || (state == 1 && e->ipc_small))
        return;
    pthread_mutex_lock(&e->plock);
    e->pstate = state;
    pthread_cond_signal(&e->pcond);
    pthread_mutex_unlock(&e->plock);
}

static void free_requests(weft_mpi_exec *e)
{
    weft_mpi_graph *g = e->g;

    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (ep->req != MPI_REQUEST_NULL)
            MPI_Request_free(&ep->req);
        if (ep->direct != MPI_REQUEST_NULL)
            MPI_Request_free(&ep->direct);
        if (ep->type != MPI_DATATYPE_NULL && ep->type != MPI_BYTE)
            MPI_Type_free(&ep->type);
        ep->type = MPI_DATATYPE_NULL;
        ep->staging = NULL;
        ep->host = NULL;
    }
}

static void exec_free(weft_mpi_exec *e)
{
    weft_mpi_graph *g = e->g;

    if (e->has_progress) {
        progress_set(e, 2);
        pthread_join(e->progress, NULL);
    }
    pthread_mutex_destroy(&e->plock);
    pthread_mutex_destroy(&e->mpi_lock);
    pthread_cond_destroy(&e->pcond);
    free_requests(e);
    wm_ipc_release(e);
    for (int r = 0; e->ctrl_recv && r < g->mpi->size; r++)
        if (e->ctrl_recv[r] != MPI_REQUEST_NULL)
            MPI_Request_free(&e->ctrl_recv[r]);
    if (e->local)
        weft_exec_destroy(e->local);
    if (e->comm != MPI_COMM_NULL)
        MPI_Comm_free(&e->comm);
    pthread_mutex_destroy(&e->ctrl_lock);
    free(e->staging);
    if (e->pinned)
        weft_host_free(g->mpi->rt, e->pinned);
    free(e->ipc_offer);
    free(e->ipc_req);
    free(e->ctrl_recv);
    free(e->ctrl_send);
    free(e->ctrl_msg);
    free(e->ctrl_done);
    for (unsigned i = 0; i < g->ntracks; i++)
        g->tracks[i].reg->users--;
    for (unsigned i = 0; i < g->mpi->nexecs; i++)
        if (g->mpi->execs[i] == e) {
            g->mpi->execs[i] = g->mpi->execs[--g->mpi->nexecs];
            break;
        }
    g->exec = NULL;
    free(e);
}

/* This rank's part of instantiate: requests, staging, the local exec. */
static int exec_setup(weft_mpi_exec *e, const weft_exec_options *opts)
{
    static const char fn[] = "weft_mpi_graph_instantiate";
    weft_mpi_graph *g = e->g;
    size_t total = 0, pinned = 0, off = 0, poff = 0, size;
    int *ub = NULL, flag = 0, rc;

    if (g->mpi->nexecs == g->mpi->xcap) {
        unsigned cap = g->mpi->xcap ? 2 * g->mpi->xcap : 4;
        weft_mpi_exec **x = realloc(g->mpi->execs, cap * sizeof *x);

        if (!x)
            return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
        g->mpi->execs = x;
        g->mpi->xcap = cap;
    }
    MPI_Comm_get_attr(e->comm, MPI_TAG_UB, &ub, &flag);
    if (flag && (long)g->ntransfers + 1 >= (long)*ub)
        return wm_error(WEFT_ENOTSUP,
                        "%s: %u transfers need more tags than MPI's %d", fn,
                        g->ntransfers, *ub);
    for (unsigned i = 0; i < g->neps; i++) {
        if (g->eps[i]->size > INT_MAX)
            return wm_error(WEFT_ENOTSUP,
                            "%s: a transfer of %zu bytes: weft_mpi moves at "
                            "most INT_MAX bytes at once",
                            fn, g->eps[i]->size);
        if (g->eps[i]->dev)
            pinned += (g->eps[i]->size + 63) & ~(size_t)63;
        else if (!g->eps[i]->send || g->eps[i]->packed)
            total += (g->eps[i]->size + 63) & ~(size_t)63;
    }
    /* device endpoints copy between the device and staging: pinned */
    if (pinned && (rc = weft_host_alloc(g->mpi->rt, pinned, &e->pinned)) < 0)
        return wm_weft_error(rc, fn);
    e->staging = malloc(total ? total : 1);
    size = (size_t)g->mpi->size;
    e->ctrl_recv = malloc(size * sizeof *e->ctrl_recv);
    e->ctrl_send = malloc(size * sizeof *e->ctrl_send);
    e->ctrl_msg = calloc(size, sizeof *e->ctrl_msg);
    e->ctrl_done = calloc(size, 1);
    if (!e->staging || !e->ctrl_recv || !e->ctrl_send || !e->ctrl_msg ||
        !e->ctrl_done)
        return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    for (int r = 0; r < g->mpi->size; r++) {
        e->ctrl_send[r] = MPI_REQUEST_NULL;
        e->ctrl_recv[r] = MPI_REQUEST_NULL;
        if (r != g->mpi->rank &&
            MPI_Recv_init(&e->ctrl_msg[r], 1, MPI_INT, r, 0, e->comm,
                          &e->ctrl_recv[r]) != MPI_SUCCESS)
            return wm_error(WEFT_EIO, "%s: MPI could not make a request", fn);
    }
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        ep->fill = MPI_REQUEST_NULL;
        /* a range: its bytes; a block: one hvector of its rows */
        ep->type = MPI_BYTE;
        ep->count = (int)ep->size;
        if (ep->at.rows > 1 && ep->size > 0) {
            if (ep->at.rows > INT_MAX || ep->at.row_bytes > INT_MAX ||
                MPI_Type_create_hvector((int)ep->at.rows, (int)ep->at.row_bytes,
                                        (MPI_Aint)ep->at.pitch, MPI_BYTE,
                                        &ep->type) != MPI_SUCCESS ||
                MPI_Type_commit(&ep->type) != MPI_SUCCESS) {
                ep->type = MPI_DATATYPE_NULL;
                return wm_error(WEFT_EIO, "%s: MPI could not make a type", fn);
            }
            ep->count = 1;
        }
        if (ep->send && !ep->packed && !ep->dev)
            continue;
        if (ep->dev) {
            ep->staging = (char *)e->pinned + poff;
            poff += (ep->size + 63) & ~(size_t)63;
        } else {
            ep->staging = (char *)e->staging + off;
            off += (ep->size + 63) & ~(size_t)63;
        }
        rc = ep->send ? MPI_Ssend_init(ep->staging, (int)ep->size, MPI_BYTE,
                                       ep->peer, ep->tag, e->comm, &ep->req)
                      : MPI_Recv_init(ep->staging, (int)ep->size, MPI_BYTE,
                                      ep->peer, ep->tag, e->comm, &ep->req);
        if (rc != MPI_SUCCESS)
            return wm_error(WEFT_EIO, "%s: MPI could not make a request", fn);
    }
    if (wm_ipc_alloc(e) < 0)
        return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    e->probe_tag = 1 + (int)g->ntransfers;
    for (unsigned i = 0; i < g->neps && !e->has_progress; i++) {
        if (g->eps[i]->size < WM_PROGRESS_MIN)
            continue;
        if (pthread_create(&e->progress, NULL, progress_main, e) != 0)
            return wm_error(WEFT_ENOMEM, "%s: no thread for MPI's progress",
                            fn);
        e->has_progress = 1;
    }
    rc = weft_graph_instantiate(g->local, opts, &e->local);
    if (rc < 0)
        return wm_weft_error(rc, fn);
    return 0;
}

int weft_mpi_graph_instantiate(weft_mpi_graph *g, const weft_exec_options *opts,
                               weft_mpi_exec **out)
{
    static const char fn[] = "weft_mpi_graph_instantiate";
    weft_mpi_exec *e = NULL;
    int rc, ok, all_ok = 0;

    if (!g || !out)
        return wm_error(WEFT_EINVAL, "%s: %s is NULL", fn, !g ? "g" : "e");
    if (g->broken)
        rc = wm_error(WEFT_ESTATE,
                      "%s: a node failed on this rank, so the ranks' graphs "
                      "disagree",
                      fn);
    else if (g->exec)
        rc = wm_error(WEFT_EBUSY, "%s: an exec made from g lives", fn);
    else if ((rc = wm_graph_close(g)) < 0)
        rc = rc == WEFT_ENOMEM ? wm_error(rc, "%s: out of memory", fn)
                               : wm_weft_error(rc, fn);
    else if (!(e = calloc(1, sizeof *e)))
        rc = wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    /* every rank goes on, or none does (none waits in a collective call) */
    ok = rc == 0;
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, g->mpi->comm);
    if (rc == 0 && !all_ok)
        rc = wm_error(WEFT_EIO, "%s: another rank failed to instantiate", fn);
    if (rc < 0) {
        free(e);
        return rc;
    }
    e->g = g;
    e->comm = MPI_COMM_NULL;
    pthread_mutex_init(&e->ctrl_lock, NULL);
    pthread_mutex_init(&e->plock, NULL);
    pthread_mutex_init(&e->mpi_lock, NULL);
    pthread_cond_init(&e->pcond, NULL);
    g->exec = e;
    for (unsigned i = 0; i < g->ntracks; i++)
        g->tracks[i].reg->users++;
    if (MPI_Comm_dup(g->mpi->comm, &e->comm) != MPI_SUCCESS) {
        e->comm = MPI_COMM_NULL;
        rc = wm_error(WEFT_EIO, "%s: MPI_Comm_dup failed", fn);
    } else {
        rc = exec_setup(e, opts);
    }
    /* every rank instantiates, or none does */
    ok = rc == 0;
    if (e->comm != MPI_COMM_NULL)
        MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, e->comm);
    if (rc == 0 && !all_ok)
        rc = wm_error(WEFT_EIO, "%s: another rank failed to instantiate", fn);
    if (rc < 0) {
        exec_free(e);
        return rc;
    }
    g->mpi->execs[g->mpi->nexecs++] = e;
    *out = e;
    return 0;
}

static int end_launch(weft_mpi_exec *e, int rc)
{
    weft_mpi_graph *g = e->g;
    weft_mpi *mpi = g->mpi;
    char detail[512];
    int nfailed = 0, first;

    progress_set(e, 0); /* the waits below make progress */
    if (rc < 0) {
        snprintf(detail, sizeof detail, "%s", weft_last_error());
        if (!aborted(e)) /* else it failed for another rank's failure */
            ctrl_send(e, rc);
    }
    ctrl_send(e, 0); /* where this rank did not fail */
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (ep->send && !ep->done) {
            pthread_mutex_lock(&e->mpi_lock);
            MPI_Isend(NULL, 0, MPI_BYTE, ep->peer, ep->tag, e->comm, &ep->fill);
            pthread_mutex_unlock(&e->mpi_lock);
        }
    }
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (ep->send)
            wait_req(e, !ep->done               ? &ep->fill
                        : ep->packed || ep->dev ? &ep->req
                                                : &ep->direct);
        else if (!ep->done)
            wait_req(e, ep->posted_direct ? &ep->direct : &ep->req);
    }
    pthread_mutex_lock(&e->ctrl_lock);
    for (int r = 0; r < mpi->size; r++)
        if (r != mpi->rank && !e->ctrl_done[r])
            wait_req(e, &e->ctrl_recv[r]);
    pthread_mutex_unlock(&e->ctrl_lock);
    for (int r = 0; r < mpi->size; r++)
        wait_req(e, &e->ctrl_send[r]);
    e->in_flight = 0;
    first = mpi->size;
    for (int r = 0; r < mpi->size; r++) {
        int code = r == mpi->rank ? e->my_code : e->ctrl_msg[r];

        if (code != 0) {
            nfailed++;
            if (r < first)
                first = r;
        }
    }
    /*
     * The first launch left the device extents as the graph uses them:
     * the receivers of device endpoints export theirs now, and both ends
     * of a CUDA-aware pair hold theirs (every rank takes part, as every
     * rank waits).
     */
    if (nfailed == 0 && !e->ipc_setup && (mpi->ipc_pairs || mpi->aware_pairs))
        return wm_ipc_setup(e);
    if (nfailed == 0)
        return 0;
    if (e->my_code != 0) {
        e->failed = rc;
        return wm_error(rc, "weft_mpi_exec_wait: %s", detail);
    }
    e->failed = WEFT_EIO;
    return wm_error(WEFT_EIO,
                    "weft_mpi_exec_wait: rank %d failed (%d rank(s) in all), "
                    "so this launch did not complete",
                    first, nfailed);
}

int weft_mpi_exec_wait(weft_mpi_exec *e)
{
    if (!e)
        return wm_error(WEFT_EINVAL, "weft_mpi_exec_wait: e is NULL");
    if (!e->in_flight)
        return e->failed;
    return end_launch(e, weft_exec_wait(e->local));
}

/* Whether a and b name a registered buffer in common. */
static int shares_buffer(const weft_mpi_graph *a, const weft_mpi_graph *b)
{
    for (unsigned i = 0; i < a->ntracks; i++)
        for (unsigned k = 0; k < b->ntracks; k++)
            if (a->tracks[i].reg == b->tracks[k].reg)
                return 1;
    return 0;
}

int weft_mpi_exec_launch(weft_mpi_exec *e)
{
    weft_mpi_graph *g;
    int rc;

    if (!e)
        return wm_error(WEFT_EINVAL, "weft_mpi_exec_launch: e is NULL");
    g = e->g;
    if (e->in_flight && (rc = weft_mpi_exec_wait(e)) < 0)
        return rc;
    /*
     * Receives write host copies from the launch's start, before weft
     * orders anything: another exec's launch on the same buffers ends
     * first (the program makes the same calls on every rank, so every
     * rank waits alike). Its result stays for its own wait.
     */
    for (unsigned i = 0; i < g->mpi->nexecs; i++) {
        weft_mpi_exec *x = g->mpi->execs[i];

        if (x != e && x->in_flight && shares_buffer(x->g, g))
            weft_mpi_exec_wait(x);
    }
    if (e->failed)
        return wm_error(WEFT_ESTATE,
                        "weft_mpi_exec_launch: a launch of e failed: "
                        "destroy it");
    /*
     * Once device endpoints move by IPC (from the first launch's end), no
     * rank starts a launch before every other rank has: a sender writes a
     * receiver's device memory only once the receiver is in the same
     * launch.
     */
    if (e->ipc_any && MPI_Barrier(e->comm) != MPI_SUCCESS)
        return wm_error(WEFT_EIO, "weft_mpi_exec_launch: MPI_Barrier failed");
    atomic_store(&e->aborted, 0);
    atomic_store(&e->ctrl_sent, 0);
    e->my_code = 0;
    for (int r = 0; r < g->mpi->size; r++) {
        e->ctrl_done[r] = 0;
        e->ctrl_msg[r] = 0;
        if (r != g->mpi->rank)
            start(e, &e->ctrl_recv[r]);
    }
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        ep->done = 0;
        if (ep->send)
            continue;
        ep->posted_direct = ep->early && ep->direct != MPI_REQUEST_NULL;
        start(e, ep->posted_direct ? &ep->direct : &ep->req);
    }
    e->in_flight = 1;
    progress_set(e, 1);
    rc = weft_exec_launch(e->local);
    if (rc < 0)
        return end_launch(e, rc);
    return 0;
}

int weft_mpi_exec_write_transfers(const weft_mpi_exec *e, const char *path)
{
    static const char fn[] = "weft_mpi_exec_write_transfers";
    const weft_mpi_graph *g;
    FILE *f;
    int bad;

    if (!e || !path)
        return wm_error(WEFT_EINVAL, "%s: %s is NULL", fn, !e ? "e" : "path");
    g = e->g;
    f = fopen(path, "w");
    if (!f)
        return wm_error(WEFT_EIO, "%s: cannot write %s", fn, path);
    fprintf(f, "{\"rank\":%d,\"size\":%d,\"transfers\":[", g->mpi->rank,
            g->mpi->size);
    for (unsigned i = 0; i < g->neps; i++) {
        const wm_endpoint *ep = g->eps[i];

        fprintf(f,
                "%s\n{\"tag\":%d,\"dir\":\"%s\",\"peer\":%d,\"node\":%u,"
                "\"bytes\":%zu,\"early\":%s,\"ipc\":%s,\"aware\":%s}",
                i ? "," : "", ep->tag, ep->send ? "send" : "recv", ep->peer,
                (unsigned)ep->node, ep->size, ep->early ? "true" : "false",
                ep->ipc ? "true" : "false", ep->cuda_mpi ? "true" : "false");
    }
    fputs("\n]}\n", f);
    bad = ferror(f);
    if (fclose(f) != 0 || bad)
        return wm_error(WEFT_EIO, "%s: writing %s failed", fn, path);
    return 0;
}

unsigned weft_mpi_exec_ipc_transfers(const weft_mpi_exec *e)
{
    return e ? e->nipc : 0;
}

unsigned weft_mpi_exec_aware_transfers(const weft_mpi_exec *e)
{
    return e ? e->naware : 0;
}

weft_exec *weft_mpi_exec_local(weft_mpi_exec *e)
{
    return e ? e->local : NULL;
}

int weft_mpi_exec_destroy(weft_mpi_exec *e)
{
    if (!e)
        return 0;
    if (e->in_flight)
        weft_mpi_exec_wait(e);
    exec_free(e);
    return 0;
}
