/*
 * What graph.c, infer.c and nodes.c share to add nodes; the rest of weft
 * sees graph.h only.
 */
#ifndef WEFT_GRAPH_GRAPH_INTERNAL_H
#define WEFT_GRAPH_GRAPH_INTERNAL_H

#include "graph.h"

/* Accesses an add keeps on its stack; more are allocated. */
enum { WEFT__STACK_ACC = 16 };

/* ---- infer.c ----------------------------------------------------------- */
/*
 * Add node *proto with its accesses and arguments (already checked). On
 * failure nothing observable has changed.
 */
int weft__add_node(weft_graph *g, const weft__node *proto,
                   const weft__access *acc, uint32_t nacc, const weft_arg *args,
                   uint32_t nargs, size_t nbytes, weft_node *out);

/* ---- graph.c: the checks and errors of every add ----------------------- */
/* WEFT_EINVAL naming fn where g is NULL. */
int weft__check_graph(const weft_graph *g, const char *fn);
/*
 * The prefix of every add error past the graph check: the function and the
 * node it would have been, by kind only (k for a kernel, else NULL).
 */
int weft__add_error(const char *fn, weft__node_kind kind, const weft_kernel *k,
                    int rc);
/*
 * Buffer b as an access of a node of g, called what in messages: not NULL,
 * of g's runtime, and [off, off + size) inside it (WEFT_WHOLE: from off to
 * its end). WEFT_EINVAL or WEFT_ERANGE.
 */
int weft__buffer_arg(const weft_graph *g, const weft_buffer *b, size_t off,
                     size_t size, const char *what);
/* Whether weft__buffer_arg would pass b, off and size (no message). */
static inline int weft__buffer_arg_ok(const weft_graph *g, const weft_buffer *b,
                                      size_t off, size_t size)
{
    return b && b->rt == g->rt && off <= b->size &&
           (size == WEFT_WHOLE || size <= b->size - off);
}
/*
 * The block (origin, row_bytes, rows, slices, row_pitch, slice_pitch) of
 * b, named what in messages, by weft_block's rules; one row of one slice
 * is a range. WEFT_EINVAL or WEFT_ERANGE.
 */
int weft__block_arg(const weft_graph *g, const weft_buffer *b, size_t origin,
                    size_t row_bytes, size_t rows, size_t slices,
                    size_t row_pitch, size_t slice_pitch, const char *what);
/* A block checked by weft__block_arg as an access (one row: a range). */
weft__access weft__access_block_make(weft_buffer *b, size_t origin,
                                     size_t row_bytes, size_t rows,
                                     size_t slices, size_t row_pitch,
                                     size_t slice_pitch, weft_access mode);
/* A node of kind, all else zero: what an add fills in. */
weft__node weft__proto(weft__node_kind kind);

#endif /* WEFT_GRAPH_GRAPH_INTERNAL_H */
