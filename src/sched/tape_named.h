/*
 * The tape's named edges (tape.h, "Named edges"), for tape.c's capture:
 * per node of the plan, its work operations (2: two or more), the last of
 * them, whether its launch takes named edges, and the driver's name for
 * that launch once captured; per op, what the capture does with it
 * (WEFT__TAPE_NAMED_*).
 */
#ifndef WEFT_SCHED_TAPE_NAMED_H
#define WEFT_SCHED_TAPE_NAMED_H

#include "tape.h"

enum {
    /* a wait of a node whose launch takes named edges, for the event that
     * one of its predecessors recorded after its launch */
    WEFT__TAPE_NAMED_WAIT = 1,
    /* a record that a wait captured as a wait, or as a graph_wait_later,
     * waits for */
    WEFT__TAPE_NAMED_NEEDED = 2,
    /* a wait before which its queue's front (host_graph.c) is still to be
     * taken in its segment: by a record another waits for, or by an op
     * captured in queue order */
    WEFT__TAPE_NAMED_LATER = 4,
};

typedef struct weft__tape_named {
    uint8_t *nwork;
    uint32_t *work;
    uint8_t *ordered; /* per node: its launch takes named edges */
    uint32_t *cap;
    uint8_t *flag; /* per op */
    uint32_t *ids; /* the edges of one launch */
    /* WEFT_CHECK_GRAPHS: per node, its launches (2: two or more), the last
     * of them, and the driver's name for it once captured */
    uint8_t *nlaunch;
    uint32_t *launch;
    uint32_t *kid;
} weft__tape_named;

/*
 * Set e up for the capture of t's segments (after the cut: segments
 * known) where the driver takes named edges; 0 also where it does not
 * (then e stays empty, and the calls below do nothing), < 0 out of memory.
 */
int weft__tape_named_init(const weft__tape *t, weft__tape_named *e);
void weft__tape_named_free(weft__tape_named *e);
/*
 * Op i, about to be captured: 1 if it is a named wait, left out (or, in
 * *rc, made a graph_wait_later); 0 to capture it.
 */
int weft__tape_named_skip(const weft__tape *t, const weft__tape_named *e,
                          size_t i, int *rc);
/*
 * Op i, the launch of a node that takes named edges: the driver's names of
 * its predecessors' launches into e->ids, their count in *n; 0 for any
 * other op.
 */
int weft__tape_named_edges(const weft__tape *t, const weft__tape_named *e,
                           size_t i, unsigned *n);
/* Op i was captured: the driver's name for it, where a node's is needed. */
int weft__tape_named_captured(const weft__tape *t, weft__tape_named *e,
                              size_t i);
/* WEFT_CHECK_GRAPHS, once segment s is a driver graph (aborts on a miss). */
void weft__tape_named_check(const weft__tape *t, const weft__tape_named *e,
                            unsigned s);

#endif /* WEFT_SCHED_TAPE_NAMED_H */
