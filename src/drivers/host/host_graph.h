/*
 * Host native graphs: the graph that host_capture.c captures and
 * host_graph.c launches (the file comments of both).
 */
#ifndef WEFT_DRIVERS_HOST_GRAPH_H
#define WEFT_DRIVERS_HOST_GRAPH_H

#include "host_internal.h"

#include <stdint.h>

enum { NO_NODE = UINT32_MAX };

/*
 * A node's predecessors not finished in a launch, a cache line each: the
 * threads that finish its predecessors count it down while others count
 * down their neighbours' (a node's successors are often another's too).
 */
struct node_pending {
    _Alignas(WEFT__CACHE_LINE) unsigned n; /* atomic */
};

typedef struct weft__host_graph {
    weft__context *ctx;
    weft__host_op **nodes; /* capture order; the graph's (weft__free) */
    size_t n, cap;
    /* Node i waits for nodes deps[dep_first[i] .. dep_first[i + 1]). */
    uint32_t *dep_first; /* n + 1 entries once a node is in */
    uint32_t *deps;
    size_t cap_first, ndeps, cap_deps;
    /* Node i's successors: succs[succ_first[i] .. succ_first[i + 1]). */
    uint32_t *succ_first, *succs;
    /*
     * A launch's state (weft__host_graph_run). Read by every thread:
     * pending (per node, its predecessors not finished; atomic) and link
     * (the stack's links). The runner's own, on lines of their own:
     * ready[rhead .. rtail) (to start), blocked (external waits whose
     * record has not run).
     */
    struct node_pending *pending;
    uint32_t *link, *ready, *blocked;
    char pad0[64];
    /*
     * Written by every thread of a launch, a line of its own. count
     * (atomic): the nodes not finished << 32 | those in flight (started,
     * by the runner or by whoever made a kernel ready, and not finished):
     * a node's finish and the start of the successor its thread runs next
     * are one add. stack (atomic): nodes made ready by other threads for
     * the runner, linked through link.
     */
    uint64_t count;
    uint32_t stack;
    char pad1[64];
    size_t rhead, rtail, nblocked;
    char pad2[64];
    unsigned joined;  /* pool threads inside its launches' jobs; pool lock */
    unsigned next;    /* external nodes: each has a slot in a launch */
    unsigned running; /* atomic: a launch enqueued and not finished */
    /* The first failure of its native nodes in the launch that runs; the
     * runner hands it to the launching queue at the launch's end. */
    weft__host_fail failed;
    /*
     * Kernels and native calls of one group that wait for nothing: where
     * more than the pool has threads, a launch posts them as one job
     * whose groups they are (roots_job, on lines of its own), so that the
     * pool's threads claim them a few at a time, instead of the runner
     * handing each to the pool.
     */
    uint32_t *roots;
    size_t nroots;
    uint64_t roots_posted; /* over all launches (the runner's; tests) */
    char pad3[64];
    weft__host_job roots_job;
    char pad4[64];
} weft__host_graph;

/* The successors and a launch's arrays of g, once captured; -1: no memory. */
int weft__host_graph_prepare(weft__host_graph *g);

#endif /* WEFT_DRIVERS_HOST_GRAPH_H */
