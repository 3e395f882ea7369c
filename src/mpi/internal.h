/*
 * weft_mpi's private header. weft_mpi sits above the public API: it
 * includes weft.h and weft_mpi.h, never a header of src/ outside src/mpi/
 * (tools/check-layers).
 */
#ifndef WEFT_MPI_INTERNAL_H
#define WEFT_MPI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <weft_mpi.h>

/* A registered buffer. Heap-allocated, so that graphs keep its address. */
typedef struct wm_reg {
    weft_buffer *buf;
    size_t size;
    int owner;
    unsigned users; /* live graphs and execs that name it */
} wm_reg;

struct weft_mpi {
    weft_runtime *rt;
    MPI_Comm comm; /* a duplicate of the program's */
    int rank, size;
    wm_reg **regs;
    unsigned nregs, cap;
    unsigned graphs; /* live weft_mpi graphs */
};

/*
 * Bytes [lo, hi) of a buffer in the graph being built: the rank holding
 * its current bytes and the ranks holding a valid copy (a bitmap of
 * wm_track.words words).
 */
typedef struct wm_seg {
    size_t lo, hi;
    int holder;
    uint64_t *valid;
} wm_seg;

/* What the graph knows of one buffer: segments sorted, covering it. */
typedef struct wm_track {
    wm_reg *reg;
    int owner; /* the owner when the graph first named it */
    wm_seg *segs;
    unsigned nsegs, cap;
} wm_track;

/*
 * One end of a transfer on this rank: the send or the receive host task's
 * user data. Its request and staging belong to the graph's live exec.
 * Heap-allocated: the local graph holds its address.
 */
typedef struct wm_endpoint {
    weft_mpi_graph *g;
    int send; /* 1: a send to peer, 0: a receive from peer */
    int peer, tag;
    size_t size;
    void *staging;
    MPI_Request req;
    MPI_Request fill; /* an empty message in place of a send not made */
    int done; /* this launch: the send started, the receive's bytes came */
} wm_endpoint;

/* A status host task of the program's, wrapped to broadcast its failure. */
typedef struct wm_wrap {
    weft_mpi_graph *g;
    weft_host_status_fn *fn;
    void *user;
} wm_wrap;

struct weft_mpi_graph {
    weft_mpi *mpi;
    weft_graph *local;
    int broken; /* the ranks' graphs disagree: weft refused a node here */
    wm_track *tracks;
    unsigned ntracks, tcap;
    wm_endpoint **eps; /* this rank's ends of transfers, in graph order */
    unsigned neps, ecap;
    unsigned ntransfers;   /* of every rank: the tag of the next is 1 + it */
    int *node_rank;        /* per program node */
    weft_node *node_local; /* per program node: UINT32_MAX where not here */
    unsigned nnodes, ncap;
    wm_wrap **wraps;
    unsigned nwraps, wcap;
    /*
     * A receive runs after every earlier node of this rank (edges from the
     * last receive and from the nodes added since, in since), so that a
     * receive task waiting holds up nothing that a send it waits for
     * needs (see exec.c).
     */
    int have_recv;
    weft_node last_recv;
    weft_node *since;
    unsigned nsince, scap;
    weft_mpi_exec *exec; /* the live exec, or NULL */
};

/*
 * An executable graph. Every launch, each rank sends every other rank one
 * control message (tag 0 on comm): its error code as soon as it fails,
 * else 0 when its launch ends; ctrl_recv[r] receives rank r's (persistent,
 * started with the launch), tested by whichever thread holds ctrl_lock.
 * aborted (atomic): 0, or 1 once a failure here or a non-zero code from
 * another rank was seen: receive tasks then give up. ctrl_sent (atomic):
 * this rank sent its control messages, with code my_code.
 */
struct weft_mpi_exec {
    weft_mpi_graph *g;
    weft_exec *local;
    MPI_Comm comm;
    void *staging; /* one block for every endpoint */
    pthread_mutex_t ctrl_lock;
    MPI_Request *ctrl_recv, *ctrl_send; /* one per rank */
    int *ctrl_msg;
    unsigned char *ctrl_done; /* per rank: its message arrived */
    int my_code;
    atomic_int aborted;
    atomic_int ctrl_sent;
    int in_flight;
    int failed; /* a launch failed: the error it returned */
};

/* Record the detail of an error and return err. */
int wm_error(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Record weft's own detail of err, prefixed by the function's name. */
int wm_weft_error(int err, const char *fn);
/* Close g: the bytes of every track go back to its owner. */
int wm_graph_close(weft_mpi_graph *g);
wm_reg *wm_find(const weft_mpi *mpi, const weft_buffer *buf);
/* Send this rank's control messages (once per launch): code, an error. */
void wm_abort(weft_mpi_exec *e, int code);
int wm_recv_task(void *const *ptrs, void *user);
void wm_send_task(void *const *ptrs, void *user);

#endif
