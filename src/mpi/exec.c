/*
 * Executable weft_mpi graphs: the persistent requests, the send and
 * receive tasks, and the protocol that ends every launch alike on every
 * rank.
 *
 * A launch: every receive of this rank is started (so that a send never
 * waits for its receive to be posted), and one receive for control
 * messages; then the local graph launches. Send tasks copy their range
 * into staging and start a synchronous-mode send (MPI_Ssend_init: it
 * completes only once matched). Receive tasks wait for their request, or
 * give up once the launch is aborted.
 *
 * The end (end_launch): wait for the local graph; a rank that failed and
 * has not heard of another's failure sends its control messages; wait for
 * this rank's sends, then two MPI_Allreduce on the exec's communicator
 * (the failing ranks: how many, the lowest). Once every rank is past its
 * sends, every started send has been matched, so a receive still pending
 * will never be: it is canceled. Each rank receives the control messages
 * the failing ranks sent it (their count is known), so that nothing is
 * left in flight for the next launch.
 */
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

/* Set after a control message was received (under abort_lock). */
static int peer_aborted(weft_mpi_exec *e)
{
    int flag = 0;

    if (atomic_load(&e->aborted))
        return 1;
    if (pthread_mutex_trylock(&e->abort_lock) == 0) {
        if (e->abort_req != MPI_REQUEST_NULL) {
            MPI_Test(&e->abort_req, &flag, MPI_STATUS_IGNORE);
            if (flag)
                atomic_store(&e->aborted, 1);
        }
        pthread_mutex_unlock(&e->abort_lock);
    }
    return atomic_load(&e->aborted);
}

void wm_abort(weft_mpi_exec *e, int code)
{
    weft_mpi *mpi = e->g->mpi;

    atomic_store(&e->aborted, 1);
    if (atomic_exchange(&e->abort_sent, 1))
        return;
    e->abort_code = code;
    for (int r = 0; r < mpi->size; r++)
        if (r != mpi->rank)
            MPI_Isend(&e->abort_code, 1, MPI_INT, r, 0, e->comm,
                      &e->abort_sends[r]);
}

void wm_send_task(void *const *ptrs, void *user)
{
    wm_endpoint *ep = user;

    memcpy(ep->staging, ptrs[0], ep->size);
    MPI_Start(&ep->req);
}

int wm_recv_task(void *const *ptrs, void *user)
{
    wm_endpoint *ep = user;
    weft_mpi_exec *e = ep->g->exec;
    unsigned spins = 0;
    int flag = 0;

    for (;;) {
        MPI_Test(&ep->req, &flag, MPI_STATUS_IGNORE);
        if (flag) {
            memcpy(ptrs[0], ep->staging, ep->size);
            ep->done = 1;
            return 0;
        }
        if (peer_aborted(e))
            return 1;
        /* yield at first; past that, let the other ranks' threads run */
        if (++spins < 1000) {
            sched_yield();
        } else {
            struct timespec ts = {0, 20000};

            nanosleep(&ts, NULL);
        }
    }
}

static void free_requests(weft_mpi_exec *e)
{
    weft_mpi_graph *g = e->g;

    for (unsigned i = 0; i < g->neps; i++) {
        if (g->eps[i]->req != MPI_REQUEST_NULL)
            MPI_Request_free(&g->eps[i]->req);
        g->eps[i]->staging = NULL;
    }
}

static void exec_free(weft_mpi_exec *e)
{
    weft_mpi_graph *g = e->g;

    free_requests(e);
    if (e->local)
        weft_exec_destroy(e->local);
    if (e->comm != MPI_COMM_NULL)
        MPI_Comm_free(&e->comm);
    pthread_mutex_destroy(&e->abort_lock);
    free(e->staging);
    free(e->abort_sends);
    for (unsigned i = 0; i < g->ntracks; i++)
        g->tracks[i].reg->users--;
    g->exec = NULL;
    free(e);
}

/* This rank's part of instantiate: requests, staging, the local exec. */
static int exec_setup(weft_mpi_exec *e, const weft_exec_options *opts)
{
    static const char fn[] = "weft_mpi_graph_instantiate";
    weft_mpi_graph *g = e->g;
    size_t total = 0, off = 0;
    int *ub = NULL, flag = 0, rc;

    MPI_Comm_get_attr(e->comm, MPI_TAG_UB, &ub, &flag);
    if (flag && (long)g->ntransfers >= (long)*ub)
        return wm_error(WEFT_ENOTSUP,
                        "%s: %u transfers need more tags than MPI's %d", fn,
                        g->ntransfers, *ub);
    for (unsigned i = 0; i < g->neps; i++) {
        if (g->eps[i]->size > INT_MAX)
            return wm_error(WEFT_ENOTSUP,
                            "%s: a transfer of %zu bytes: weft_mpi moves at "
                            "most INT_MAX bytes at once",
                            fn, g->eps[i]->size);
        total += (g->eps[i]->size + 63) & ~(size_t)63;
    }
    e->staging = malloc(total ? total : 1);
    e->abort_sends = malloc((size_t)g->mpi->size * sizeof *e->abort_sends);
    if (!e->staging || !e->abort_sends)
        return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    for (int r = 0; r < g->mpi->size; r++)
        e->abort_sends[r] = MPI_REQUEST_NULL;
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        ep->staging = (char *)e->staging + off;
        off += (ep->size + 63) & ~(size_t)63;
        rc = ep->send ? MPI_Ssend_init(ep->staging, (int)ep->size, MPI_BYTE,
                                       ep->peer, ep->tag, e->comm, &ep->req)
                      : MPI_Recv_init(ep->staging, (int)ep->size, MPI_BYTE,
                                      ep->peer, ep->tag, e->comm, &ep->req);
        if (rc != MPI_SUCCESS)
            return wm_error(WEFT_EIO, "%s: MPI could not make a request", fn);
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
    weft_mpi_exec *e;
    int rc, ok, all_ok = 0;

    if (!g || !out)
        return wm_error(WEFT_EINVAL, "%s: %s is NULL", fn, !g ? "g" : "e");
    if (g->broken)
        return wm_error(WEFT_ESTATE,
                        "%s: a node failed on this rank, so the ranks' "
                        "graphs disagree",
                        fn);
    if (g->exec)
        return wm_error(WEFT_EBUSY, "%s: an exec made from g lives", fn);
    if ((rc = wm_graph_close(g)) < 0)
        return rc == WEFT_ENOMEM ? wm_error(rc, "%s: out of memory", fn)
                                 : wm_weft_error(rc, fn);
    e = calloc(1, sizeof *e);
    if (!e)
        return wm_error(WEFT_ENOMEM, "%s: out of memory", fn);
    e->g = g;
    e->comm = MPI_COMM_NULL;
    e->abort_req = MPI_REQUEST_NULL;
    pthread_mutex_init(&e->abort_lock, NULL);
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
    *out = e;
    return 0;
}

static int end_launch(weft_mpi_exec *e, int rc)
{
    weft_mpi_graph *g = e->g;
    weft_mpi *mpi = g->mpi;
    char detail[512];
    int mine, nsent = 0, first = mpi->size, expected, got = 0, msg;

    if (rc < 0) {
        snprintf(detail, sizeof detail, "%s", weft_last_error());
        if (!peer_aborted(e) || atomic_load(&e->abort_sent))
            wm_abort(e, rc);
    }
    for (unsigned i = 0; i < g->neps; i++)
        if (g->eps[i]->send)
            MPI_Wait(&g->eps[i]->req, MPI_STATUS_IGNORE);
    mine = atomic_load(&e->abort_sent);
    MPI_Allreduce(&mine, &nsent, 1, MPI_INT, MPI_SUM, e->comm);
    msg = mine ? mpi->rank : mpi->size;
    MPI_Allreduce(&msg, &first, 1, MPI_INT, MPI_MIN, e->comm);
    /* every started send is matched now: a pending receive never will be */
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (!ep->send && !ep->done) {
            MPI_Cancel(&ep->req);
            MPI_Wait(&ep->req, MPI_STATUS_IGNORE);
        }
    }
    expected = nsent - mine;
    pthread_mutex_lock(&e->abort_lock);
    if (e->abort_req == MPI_REQUEST_NULL) {
        got = 1;
    } else if (expected > 0) {
        MPI_Wait(&e->abort_req, MPI_STATUS_IGNORE);
        got = 1;
    } else {
        MPI_Cancel(&e->abort_req);
        MPI_Wait(&e->abort_req, MPI_STATUS_IGNORE);
    }
    pthread_mutex_unlock(&e->abort_lock);
    for (; got < expected; got++)
        MPI_Recv(&msg, 1, MPI_INT, MPI_ANY_SOURCE, 0, e->comm,
                 MPI_STATUS_IGNORE);
    MPI_Waitall(mpi->size, e->abort_sends, MPI_STATUSES_IGNORE);
    e->in_flight = 0;
    if (nsent == 0)
        return 0;
    if (mine && rc < 0) {
        e->failed = rc;
        return wm_error(rc, "weft_mpi_exec_wait: %s", detail);
    }
    e->failed = WEFT_EIO;
    return wm_error(WEFT_EIO,
                    "weft_mpi_exec_wait: rank %d failed (%d rank(s) in all), "
                    "so this launch did not complete",
                    first, nsent);
}

int weft_mpi_exec_wait(weft_mpi_exec *e)
{
    if (!e)
        return wm_error(WEFT_EINVAL, "weft_mpi_exec_wait: e is NULL");
    if (!e->in_flight)
        return e->failed;
    return end_launch(e, weft_exec_wait(e->local));
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
    if (e->failed)
        return wm_error(WEFT_ESTATE,
                        "weft_mpi_exec_launch: a launch of e failed: "
                        "destroy it");
    atomic_store(&e->aborted, 0);
    atomic_store(&e->abort_sent, 0);
    MPI_Irecv(&e->abort_msg, 1, MPI_INT, MPI_ANY_SOURCE, 0, e->comm,
              &e->abort_req);
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        ep->done = 0;
        if (!ep->send)
            MPI_Start(&ep->req);
    }
    e->in_flight = 1;
    rc = weft_exec_launch(e->local);
    if (rc < 0)
        return end_launch(e, rc);
    return 0;
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
