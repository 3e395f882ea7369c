/*
 * The first executor (src/sched/): one worker thread per executable graph,
 * nodes run one at a time in a topological order, each kernel node on its
 * placed device (weft_graph_set_device) or the exec's default one; the
 * coherence tracker moves the bytes between devices. The scheduler issue
 * replaces it with placement, lanes and events.
 *
 * An executable graph owns copies of everything it needs from its graph
 * (nodes, accesses, arguments, the bytes of BYTES arguments, the order and
 * each node's predecessors), so the graph may be destroyed first.
 *
 * Launch protocol, under e->lock: launch counts the launch in `pending`
 * (and in each root's `inflight`) and wakes the worker; the worker runs
 * one launch at a time, in the order they came, then ends the roots'
 * inflight counts, decrements `pending` and broadcasts `done`. Errors of
 * a run go to last_err (what status reports) and, if none is pending
 * report yet, to first_err (what the next wait reports, then forgets).
 */
#ifndef WEFT_SCHED_EXEC_H
#define WEFT_SCHED_EXEC_H

#include "../graph/graph.h"

enum { WEFT__EXEC_MSG = 1024 };

struct weft_exec {
    weft_runtime *rt;
    unsigned device;    /* the default device */
    unsigned *node_dev; /* per node: where a kernel or copy node runs */

    weft__node *nodes;
    uint32_t nnodes;
    weft__access *acc;
    uint32_t nacc;
    weft_arg *args;
    unsigned char *bytes;
    uint32_t *order;      /* a topological order of the nodes */
    uint32_t *pred_first; /* nnodes + 1: preds[pred_first[i], [i + 1]) */
    uint32_t *preds;
    uint32_t *lock_first; /* nnodes + 1: the roots a node locks, sorted */
    uint32_t *locks;      /* ... by address, as indices into roots */
    /* Parallel to locks: how many nodes later in the order (wrapping into
     * the next launch) the root is used again; eviction keeps the near. */
    uint32_t *lock_next;
    weft_buffer **roots;
    uint32_t nroots;

    /* The worker's own: */
    weft__karg *kargs;    /* max kernel arguments */
    void **ptrs;          /* max host-task accesses */
    unsigned char *state; /* per node, during a run */
    weft__lanes lanes;

    pthread_mutex_t lock;
    pthread_cond_t wake, done;
    pthread_t worker;
    unsigned started, stop;
    unsigned long pending;
    int first_err, last_err;
    char first_msg[WEFT__EXEC_MSG], last_msg[WEFT__EXEC_MSG];
};

#endif /* WEFT_SCHED_EXEC_H */
