/*
 * The tape's named edges (tape.h, "Named edges"): which launches of a
 * recording take edges from their predecessors' launches when it is
 * captured, and the waits that then go or move to the queue's front.
 */
#include "tape_named.h"

#include "../base/options.h"

#include <stdlib.h>
#include <string.h>

void weft__tape_named_free(weft__tape_named *e)
{
    weft__free(e->nwork);
    weft__free(e->work);
    weft__free(e->ordered);
    weft__free(e->cap);
    weft__free(e->flag);
    weft__free(e->ids);
    weft__free(e->nlaunch);
    weft__free(e->launch);
    weft__free(e->kid);
    memset(e, 0, sizeof *e);
}

void weft__tape_set_dag(weft__tape *t, uint32_t n, const uint32_t *pred_first,
                        const uint32_t *preds)
{
    t->nnodes = n;
    t->pred_first = pred_first;
    t->preds = preds;
    t->node = WEFT__TAPE_NO_NODE;
}

/* A node whose only work is one launch. */
static int weft__tape_lone_launch(const weft__tape *t,
                                  const weft__tape_named *e, uint32_t node)
{
    return node < t->nnodes && e->nwork[node] == 1 &&
           t->ops[e->work[node]].kind == WEFT__TAPE_LAUNCH;
}

/* Whether node's launch can take named edges: every predecessor a lone
 * launch captured before it in its segment. */
static int weft__tape_orderable(const weft__tape *t, const weft__tape_named *e,
                                uint32_t node)
{
    if (!weft__tape_lone_launch(t, e, node))
        return 0;
    for (uint32_t k = t->pred_first[node]; k < t->pred_first[node + 1]; k++) {
        uint32_t p = t->preds[k];

        if (!weft__tape_lone_launch(t, e, p) || e->work[p] >= e->work[node] ||
            t->ops[e->work[p]].seg != t->ops[e->work[node]].seg)
            return 0;
    }
    return 1;
}

/* Whether wait op i is a WEFT__TAPE_NAMED_WAIT. */
static int weft__tape_wait_named(const weft__tape *t, const weft__tape_named *e,
                                 size_t i)
{
    const weft__tape_op *o = &t->ops[i], *r;
    uint32_t n = o->node, p, k;

    if (o->how != 0 || o->rec == WEFT__TAPE_NO_NODE || n >= t->nnodes ||
        !e->ordered[n] || e->work[n] < i || t->ops[e->work[n]].q != o->q)
        return 0;
    r = &t->ops[o->rec];
    p = r->node;
    if (!weft__tape_lone_launch(t, e, p) || r->q != t->ops[e->work[p]].q ||
        o->rec < e->work[p])
        return 0;
    for (k = t->pred_first[n]; k < t->pred_first[n + 1] && t->preds[k] != p;
         k++)
        ;
    return k < t->pred_first[n + 1];
}

/* Whether op i takes its queue's front in the capture. */
static int weft__tape_takes_front(const weft__tape *t,
                                  const weft__tape_named *e, size_t i)
{
    const weft__tape_op *o = &t->ops[i];

    if (o->kind == WEFT__TAPE_WAIT)
        return 0;
    if (o->kind == WEFT__TAPE_RECORD)
        return (o->how & WEFT__TAPE_EXTERNAL) ||
               (e->flag[i] & WEFT__TAPE_NAMED_NEEDED);
    return o->node >= t->nnodes || !e->ordered[o->node] ||
           e->work[o->node] != i;
}

/*
 * The flags of the ops (after the cut: segments known), in one pass from
 * the end: a wait's record takes its queue's front where the wait is
 * captured, as a wait or as a graph_wait_later (its record's nodes then
 * stand for what its queue knew, which later ops of the waiting queue
 * count on), and a record that takes the front makes the named waits
 * before it on its queue graph_wait_laters in turn. A record comes before
 * its waits, so each is settled before the pass reaches it.
 */
static void weft__tape_named_flags(const weft__tape *t, weft__tape_named *e)
{
    /* (queue, segment) pairs with an op that takes the front ahead */
    enum { PAIRS = 64 };
    weft__queue *pq[PAIRS];
    unsigned ps[PAIRS], np = 0;
    int all = 0;

    for (size_t i = 0; i < t->n; i++)
        if (t->ops[i].kind == WEFT__TAPE_WAIT && weft__tape_wait_named(t, e, i))
            e->flag[i] |= WEFT__TAPE_NAMED_WAIT;
    for (size_t i = t->n; i-- > 0;) {
        const weft__tape_op *o = &t->ops[i];
        unsigned k;

        for (k = 0; k < np && (pq[k] != o->q || ps[k] != o->seg); k++)
            ;
        if (o->kind == WEFT__TAPE_WAIT) {
            if ((e->flag[i] & WEFT__TAPE_NAMED_WAIT) && (all || k < np))
                e->flag[i] |= WEFT__TAPE_NAMED_LATER;
            if (o->rec != WEFT__TAPE_NO_NODE &&
                (!(e->flag[i] & WEFT__TAPE_NAMED_WAIT) ||
                 (e->flag[i] & WEFT__TAPE_NAMED_LATER)))
                e->flag[o->rec] |= WEFT__TAPE_NAMED_NEEDED;
        }
        if (k == np && weft__tape_takes_front(t, e, i)) {
            if (np == PAIRS) {
                all = 1;
            } else {
                pq[np] = o->q;
                ps[np++] = o->seg;
            }
        }
    }
}

/* Set e up where the driver takes named edges; 0 also where it does not
 * (then e stays empty), -1 out of memory. */
int weft__tape_named_init(const weft__tape *t, weft__tape_named *e)
{
    const weft__driver *drv = t->ctx->drv;
    uint32_t most = 0;
    bool check = false;

    memset(e, 0, sizeof *e);
    if (!drv->graph_order || !drv->graph_node_last || !drv->graph_wait_later ||
        !t->preds || !t->nnodes)
        return 0;
    for (uint32_t i = 0; i < t->nnodes; i++)
        most = WEFT__MAX(most, t->pred_first[i + 1] - t->pred_first[i]);
    e->nwork = weft__calloc(t->nnodes, sizeof *e->nwork);
    e->work = weft__calloc(t->nnodes, sizeof *e->work);
    e->ordered = weft__calloc(t->nnodes, sizeof *e->ordered);
    e->cap = weft__calloc(t->nnodes, sizeof *e->cap);
    e->flag = weft__calloc(t->n ? t->n : 1, sizeof *e->flag);
    e->ids = weft__calloc(most ? most : 1, sizeof *e->ids);
    if (drv->graph_reaches && weft__opt_bool(WEFT__OPT_CHECK_GRAPHS, &check) &&
        check) {
        e->nlaunch = weft__calloc(t->nnodes, sizeof *e->nlaunch);
        e->launch = weft__calloc(t->nnodes, sizeof *e->launch);
        e->kid = weft__calloc(t->nnodes, sizeof *e->kid);
    }
    if (!e->nwork || !e->work || !e->ordered || !e->cap || !e->flag ||
        !e->ids || (check && (!e->nlaunch || !e->launch || !e->kid))) {
        weft__tape_named_free(e);
        return weft__error(WEFT_ENOMEM, "tape: no memory for a graph's edges");
    }
    /* Per node its work ops and the last of them; with the check, its
     * launches and the last of them too. */
    for (size_t i = 0; i < t->n; i++) {
        const weft__tape_op *o = &t->ops[i];

        if (o->node >= t->nnodes || o->kind == WEFT__TAPE_RECORD ||
            o->kind == WEFT__TAPE_WAIT)
            continue;
        if (e->nwork[o->node] < 2)
            e->nwork[o->node]++;
        e->work[o->node] = (uint32_t)i;
        if (e->nlaunch && o->kind == WEFT__TAPE_LAUNCH) {
            if (e->nlaunch[o->node] < 2)
                e->nlaunch[o->node]++;
            e->launch[o->node] = (uint32_t)i;
        }
    }
    for (uint32_t i = 0; i < t->nnodes; i++) {
        e->ordered[i] = (uint8_t)weft__tape_orderable(t, e, i);
        e->cap[i] = WEFT__TAPE_NO_NODE;
    }
    weft__tape_named_flags(t, e);
    return 0;
}

/*
 * WEFT_CHECK_GRAPHS, once segment s is a driver graph: every edge of the
 * plan between two nodes of one launch each in s must be a path from the
 * one launch to the other in the graph. A graph that misses one would
 * race: the process aborts, naming the edge.
 */
void weft__tape_named_check(const weft__tape *t, const weft__tape_named *e,
                            unsigned s)
{
    const void *graph = t->segs[s].graph;

    for (uint32_t n = 0; e->nlaunch && n < t->nnodes; n++) {
        if (e->nlaunch[n] != 1 || t->ops[e->launch[n]].seg != s)
            continue;
        for (uint32_t k = t->pred_first[n]; k < t->pred_first[n + 1]; k++) {
            uint32_t p = t->preds[k];

            if (e->nlaunch[p] != 1 || t->ops[e->launch[p]].seg != s ||
                t->ctx->drv->graph_reaches(graph, e->kid[p], e->kid[n]))
                continue;
            weft__log(WEFT_LOG_ERROR, "tape",
                      "WEFT_CHECK_GRAPHS: the native graph lets node %u's "
                      "kernel (graph node %u) start before node %u's (graph "
                      "node %u) has finished",
                      n, e->kid[n], p, e->kid[p]);
            abort();
        }
    }
}

/*
 * Whether predecessor p of a node (preds[first .. end)) is a predecessor
 * of another of them, so that the edge from p is implied (checked for
 * nodes of up to 16 predecessors).
 */
static int weft__tape_pred_implied(const weft__tape *t, uint32_t first,
                                   uint32_t end, uint32_t p)
{
    if (end - first > 16)
        return 0;
    for (uint32_t k = first; k < end; k++) {
        uint32_t q = t->preds[k];

        if (q == p)
            continue;
        for (uint32_t j = t->pred_first[q]; j < t->pred_first[q + 1]; j++)
            if (t->preds[j] == p)
                return 1;
    }
    return 0;
}

/*
 * Op i, the launch of a node that takes named edges: the driver's names of
 * its predecessors' launches into e->ids, their count in *n; 0 for any
 * other op.
 */
int weft__tape_named_edges(const weft__tape *t, const weft__tape_named *e,
                           size_t i, unsigned *n)
{
    uint32_t node = t->ops[i].node, first, end;

    *n = 0;
    if (!e->nwork || node >= t->nnodes || !e->ordered[node] ||
        e->work[node] != i)
        return 0;
    first = t->pred_first[node];
    end = t->pred_first[node + 1];
    for (uint32_t k = first; k < end; k++) {
        uint32_t p = t->preds[k];

        weft__assert(e->cap[p] != WEFT__TAPE_NO_NODE);
        if (!weft__tape_pred_implied(t, first, end, p))
            e->ids[(*n)++] = e->cap[p];
    }
    return 1;
}

int weft__tape_named_skip(const weft__tape *t, const weft__tape_named *e,
                          size_t i, int *rc)
{
    if (!e->flag || !(e->flag[i] & WEFT__TAPE_NAMED_WAIT))
        return 0;
    /* Its predecessor's edge says it all; its queue's later ops in queue
     * order still wait for what the record stands for. */
    if (e->flag[i] & WEFT__TAPE_NAMED_LATER)
        *rc = weft__drv_graph_wait_later(t->ops[i].q, t->ops[i].ev);
    return 1;
}

int weft__tape_named_captured(const weft__tape *t, weft__tape_named *e,
                              size_t i)
{
    const weft__tape_op *o = &t->ops[i];
    int rc = 0;

    if (o->node >= t->nnodes)
        return 0;
    if (e->nwork && e->work[o->node] == i &&
        weft__tape_lone_launch(t, e, o->node))
        rc = weft__drv_graph_node_last(o->q, &e->cap[o->node]);
    if (rc == 0 && e->nlaunch && e->launch[o->node] == i &&
        e->nlaunch[o->node] == 1)
        rc = weft__drv_graph_node_last(o->q, &e->kid[o->node]);
    return rc;
}
