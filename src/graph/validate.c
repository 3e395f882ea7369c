/*
 * Validation of a graph as the scheduler takes it: every access inside its
 * buffer, host pointers present, predecessors as CSR arrays and a
 * topological order (WEFT_ECYCLE should a cycle have been let in).
 */
#include "graph.h"

#include <string.h>

/* A min-heap of node indices, so that Kahn's order stays near insertion. */
static void weft__heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
    uint32_t i = (*n)++;

    while (i && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static uint32_t weft__heap_pop(uint32_t *h, uint32_t *n)
{
    uint32_t top = h[0], v = h[--*n], i = 0;

    for (;;) {
        uint32_t c = 2 * i + 1;

        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

/*
 * Predecessors of every node (inferred and explicit) as CSR arrays. The
 * caller frees *first and *preds.
 */
int weft__graph_preds(const weft_graph *g, uint32_t **first, uint32_t **preds)
{
    uint32_t n = g->nnodes, *f, *p, k = 0;

    f = weft__malloc(((size_t)n + 1) * sizeof *f);
    p = weft__malloc(((size_t)g->nedges + g->nxedges + 1) * sizeof *p);
    if (!f || !p) {
        weft__free(f);
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    }
    if (g->nxedges == 0) {
        /* inferred edges alone: the compact copies are the lists */
        if (n)
            memcpy(f, g->in_first, (size_t)n * sizeof *f);
        if (g->nedges)
            memcpy(p, g->edge_from, (size_t)g->nedges * sizeof *p);
        k = g->nedges;
    }
    for (uint32_t i = 0; i < n && g->nxedges; i++) {
        const weft__node *nd = &g->nodes[i];

        f[i] = k;
        for (uint32_t e = 0; e < nd->nin; e++)
            p[k++] = g->edges[nd->in_first + e].from;
        for (uint32_t e = nd->xin; e != WEFT__NONE; e = g->xedges[e].next)
            p[k++] = g->xedges[e].from;
    }
    f[n] = k;
    *first = f;
    *preds = p;
    return 0;
}

/*
 * A topological order into order[]. Inferred edges point forwards, so
 * without a backward explicit edge insertion order is one.
 */
/*
 * Kahn's algorithm on the successor lists: a min-heap of keys, a node's
 * key its index (latest: mirrored), plus n unless it is urgent (urgent
 * NULL: none is). Fills order[]; returns how many nodes it ordered.
 */
static uint32_t weft__kahn(uint32_t n, const uint32_t *first,
                           const uint32_t *sfirst, const uint32_t *succ,
                           const unsigned char *urgent, int latest,
                           uint32_t *indeg, uint32_t *heap, uint32_t *order)
{
    uint32_t nheap = 0, k = 0;

#define WEFT__KEY(v)                                                           \
    ((latest ? n - 1 - (v) : (v)) + (urgent && urgent[v] ? 0 : n))
    for (uint32_t v = 0; v < n; v++) {
        indeg[v] = first[v + 1] - first[v];
        if (!indeg[v])
            weft__heap_push(heap, &nheap, WEFT__KEY(v));
    }
    while (nheap) {
        uint32_t v = weft__heap_pop(heap, &nheap) % n;

        if (latest)
            v = n - 1 - v; /* the min-heap holds mirrored indices */
        order[k++] = v;
        for (uint32_t e = sfirst[v]; e < sfirst[v + 1]; e++)
            if (--indeg[succ[e]] == 0)
                weft__heap_push(heap, &nheap, WEFT__KEY(succ[e]));
    }
#undef WEFT__KEY
    return k;
}

int weft__graph_order(const weft_graph *g, const uint32_t *first,
                      const uint32_t *preds, int latest, uint32_t *order)
{
    uint32_t n = g->nnodes, m = first[n], k;
    uint32_t *indeg, *sfirst, *cur, *succ, *heap;
    unsigned char *urgent = NULL;
    int backward = 0, high = 0, rc = 0;

    for (uint32_t i = 0; i < g->nxedges; i++)
        backward |= g->xedges[i].from > g->xedges[i].to;
    for (uint32_t i = 0; i < n; i++)
        high |= g->nodes[i].priority == WEFT_PRIORITY_HIGH;
    if (!backward && !latest && !high) {
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        return 0;
    }
    weft__assert(n <= UINT32_MAX / 2); /* keys below 2n */
    indeg = weft__malloc(((size_t)n + 1) * sizeof *indeg);
    sfirst = weft__calloc((size_t)n + 1, sizeof *sfirst);
    cur = weft__malloc(((size_t)n + 1) * sizeof *cur);
    succ = weft__malloc(((size_t)m + 1) * sizeof *succ);
    heap = weft__malloc(((size_t)n + 1) * sizeof *heap);
    if (high)
        urgent = weft__calloc((size_t)n + 1, 1);
    if (!indeg || !sfirst || !cur || !succ || !heap || (high && !urgent)) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto out;
    }
    /* Successor lists from the predecessor lists (a counting sort). */
    for (uint32_t e = 0; e < m; e++)
        sfirst[preds[e] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        sfirst[i + 1] += sfirst[i];
    memcpy(cur, sfirst, (size_t)n * sizeof *cur);
    for (uint32_t v = 0; v < n; v++)
        for (uint32_t e = first[v]; e < first[v + 1]; e++)
            succ[cur[preds[e]]++] = v;
    k = weft__kahn(n, first, sfirst, succ, NULL, high ? 0 : latest, indeg, heap,
                   order);
    if (k == n && high) {
        /* Urgency flows to predecessors: walk a first order backwards. */
        for (uint32_t j = n; j-- > 0;) {
            uint32_t v = order[j];

            urgent[v] |= g->nodes[v].priority == WEFT_PRIORITY_HIGH;
            for (uint32_t e = first[v]; urgent[v] && e < first[v + 1]; e++)
                urgent[preds[e]] = 1;
        }
    }
    if (k == n && high)
        k = weft__kahn(n, first, sfirst, succ, urgent, latest, indeg, heap,
                       order);
    if (k < n)
        /* weft_graph_add_edge refuses every edge that would close a
         * cycle, so a graph that still has one is a bug of weft's. */
        rc = weft__error(WEFT_ECYCLE,
                         "instantiate: %u nodes are on a dependency cycle "
                         "(an edge weft_graph_add_edge should have refused)",
                         n - k);
out:
    weft__free(indeg);
    weft__free(sfirst);
    weft__free(cur);
    weft__free(succ);
    weft__free(heap);
    weft__free(urgent);
    return rc;
}

/*
 * Host pointers: what does not depend on the device. An access's range
 * was checked against its buffer when its node was added, and neither
 * changes after (buffers keep their size), so only builds with the
 * expensive assertions (WEFT_DEBUG >= 2) walk the accesses again: a pass over every access
 * costs instantiate its memory traffic.
 */
int weft__graph_check(const weft_graph *g)
{
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const weft__node *nd = &g->nodes[i];

#if WEFT_DEBUG >= 2
        for (uint32_t a = 0; a < nd->nacc; a++) {
            const weft__access *ac = &g->acc[nd->acc_first + a];

            weft__assert_expensive(ac->offset <= ac->buf->size &&
                                   weft__access_span(ac) <=
                                       ac->buf->size - ac->offset);
        }
#endif
        if (nd->kind == WEFT__NODE_WRITE && !nd->u.write.src &&
            g->acc[nd->acc_first].size)
            return weft__node_error(WEFT_EINVAL, g->nodes, i,
                                    "the host source pointer is NULL");
        if (nd->kind == WEFT__NODE_READ && !nd->u.read.dst &&
            g->acc[nd->acc_first].size)
            return weft__node_error(WEFT_EINVAL, g->nodes, i,
                                    "the host destination pointer is NULL");
    }
    return 0;
}
