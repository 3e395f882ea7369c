/*
 * Adding a node to a graph: its root buffers, the inference of its edges
 * from the band maps with transitive reduction, and the two-pass add
 * (graph.h) that keeps a failing add from changing anything.
 */
#include "graph_internal.h"

#include <stdlib.h>
#include <string.h>

/* The reduction's search visits at most this many nodes per candidate. */
enum { WEFT__REDUCE_BUDGET = 16 };

static int weft__grow_bytes(weft_graph *g, size_t more)
{
    size_t ncap;
    unsigned char *np;

    if (more <= g->cap_bytes - g->nbytes)
        return 0;
    if (more > SIZE_MAX / 4 - g->nbytes)
        return weft__error(WEFT_ENOMEM, "graph: out of memory");
    ncap = WEFT__MAX(g->cap_bytes * 2, g->nbytes + more);
    ncap = WEFT__MAX(ncap, (size_t)256);
    np = weft__realloc(g->bytes, ncap);
    if (!np)
        return weft__error(WEFT_ENOMEM, "graph: out of memory");
    g->bytes = np;
    g->cap_bytes = ncap;
    return 0;
}

/* ---- roots ------------------------------------------------------------- */

static bool weft__root_is(uintptr_t index, const void *buf, const void *g)
{
    return ((const weft_graph *)g)->roots[index].buf == buf;
}

/*
 * The graph's index of root buffer b, adding it (with a map of bytes that
 * nobody touched) if new. A root added by an add that fails later is
 * harmless: it says the same as no entry.
 */
static int weft__root_index(weft_graph *g, weft_buffer *b, uint32_t *index)
{
    uint64_t h = weft__hash_ptr(b);
    uintptr_t *found = weft__map_find(&g->root_index, h, b, weft__root_is, g);
    weft__root *r;
    int rc;

    if (found) {
        *index = (uint32_t)*found;
        return 0;
    }
    /* Room first: the put below cannot fail. */
    if ((rc = weft__map_reserve(&g->root_index, (size_t)g->nroots + 1)) < 0 ||
        (rc = weft__grow(&g->roots, &g->cap_roots, g->nroots + 1,
                         sizeof *g->roots)) < 0)
        return rc;
    r = &g->roots[g->nroots];
    r->buf = b;
    if ((rc = weft__bandmap_init(&r->deps, b->size,
                                 weft__dep_value(WEFT__NONE, WEFT__NONE))) < 0)
        return rc;
    /* (a graph is built by one thread at a time) */
    weft__bandmap_keep_spans(&r->deps);
    rc = weft__map_put(&g->root_index, h, b, g->nroots, weft__root_is, g, NULL);
    weft__assert_internal(rc == 1);
    *index = g->nroots++;
    return 0;
}

/* ---- inference --------------------------------------------------------- */

static int weft__cand(weft_graph *g, uint32_t from, weft__hazard h,
                      uint32_t root, size_t lo, size_t hi)
{
    weft__mark *m = &g->marks[from];
    weft__edge *e;
    int rc;

    if (m->cand_epoch == g->epoch) {
        /* One edge per pair; widen its range when it continues. */
        e = &g->cands[m->cand_slot];
        if (e->hazard == h && e->root == root && lo <= e->hi && hi >= e->lo) {
            e->lo = WEFT__MIN(e->lo, lo);
            e->hi = WEFT__MAX(e->hi, hi);
        }
        return 0;
    }
    if ((rc = weft__grow(&g->cands, &g->cap_cands, g->ncands + 1,
                         sizeof *g->cands)) < 0)
        return rc;
    m->cand_epoch = g->epoch;
    m->cand_slot = g->ncands;
    g->cands[g->ncands++] = (weft__edge){from, 0, h, root, WEFT__NONE, lo, hi};
    return 0;
}

/*
 * Note that the node being added reads root's bytes that from wrote (once
 * per pair as a rule: a writer of two roots the node reads may come twice,
 * which costs nothing).
 */
static int weft__raw_add(weft_graph *g, uint32_t from, uint32_t root)
{
    weft__mark *m = &g->marks[from];
    int rc;

    if (m->raw_epoch == g->epoch && m->raw_root == root)
        return 0;
    if ((rc = weft__grow(&g->rawtmp, &g->cap_rawtmp, g->nrawtmp + 1,
                         sizeof *g->rawtmp)) < 0)
        return rc;
    g->rawtmp[g->nrawtmp++] = (weft__raw){from, root};
    m->raw_epoch = g->epoch;
    m->raw_root = root;
    return 0;
}

/* The inference's walk over one region of an access of node n. */
typedef struct weft__dep_walk {
    weft_graph *g;
    uint32_t n, root;
    int phase;       /* WEFT_READ or WEFT_WRITE */
    uint64_t nreads; /* pieces read: reader entries the commit may add */
} weft__dep_walk;

static int weft__dep_visit(const weft__region *piece, uint64_t v, void *user)
{
    weft__dep_walk *w = user;
    weft_graph *g = w->g;
    uint32_t writer = weft__dep_writer(v), readers = weft__dep_readers(v);
    size_t lo = piece->off, hi = weft__region_end(piece);
    int rc;

    if (w->phase == WEFT_READ) {
        w->nreads++;
        if (writer != WEFT__NONE && writer != w->n &&
            ((rc = weft__cand(g, writer, WEFT__RAW, w->root, lo, hi)) < 0 ||
             (rc = weft__raw_add(g, writer, w->root)) < 0))
            return rc;
        return 0;
    }
    if (readers == WEFT__NONE) {
        if (writer != WEFT__NONE && writer != w->n &&
            (rc = weft__cand(g, writer, WEFT__WAW, w->root, lo, hi)) < 0)
            return rc;
        return 0;
    }
    for (uint32_t x = readers; x != WEFT__NONE; x = g->readers[x].next)
        if (g->readers[x].node != w->n &&
            (rc = weft__cand(g, g->readers[x].node, WEFT__WAR, w->root, lo,
                             hi)) < 0)
            return rc;
    return 0;
}

/*
 * Pass one over node n's accesses: the band maps cut at every region they
 * touch (no value changes), then, in phase READ then WRITE, the candidate
 * edges and the pieces read (for reservation: after the cuts, each piece
 * is one entry that the commit's apply changes).
 */
static int weft__find_candidates(weft_graph *g, const weft__access *acc,
                                 uint32_t nacc, uint32_t n, uint64_t *nreads)
{
    weft__dep_walk w = {g, n, 0, 0, 0};
    int rc;

    for (uint32_t a = 0; a < nacc; a++) {
        weft__bandmap *m = &g->roots[acc[a].root].deps;

        if (acc[a].size == 0)
            continue;
        for (size_t s = 0; s < acc[a].slices; s++) {
            weft__region r = weft__access_slice(&acc[a], s);

            if ((rc = weft__bandmap_split(m, &r)) < 0)
                return rc;
        }
    }
    for (int phase = WEFT_READ; phase <= WEFT_WRITE; phase++)
        for (uint32_t a = 0; a < nacc; a++) {
            const weft__bandmap *m = &g->roots[acc[a].root].deps;

            if (!(acc[a].mode & phase) || acc[a].size == 0)
                continue;
            w.root = acc[a].root;
            w.phase = phase;
            for (size_t s = 0; s < acc[a].slices; s++) {
                weft__region r = weft__access_slice(&acc[a], s);

                if ((rc = weft__bandmap_visit(m, &r, weft__dep_visit, &w)) < 0)
                    return rc;
            }
        }
    *nreads = w.nreads;
    return 0;
}

static int weft__by_from_desc(const void *a, const void *b)
{
    const weft__edge *x = a, *y = b;

    return x->from < y->from ? 1 : x->from > y->from ? -1 : 0;
}

/*
 * The candidates by decreasing source, equal ones in their order: a node
 * has a handful (an insertion sort, no call per comparison), a few nodes
 * many (qsort, whose glibc form is a merge sort: stable too).
 */
static void weft__sort_cands(weft__edge *v, uint32_t n)
{
    if (n > 32) {
        qsort(v, n, sizeof *v, weft__by_from_desc);
        return;
    }
    for (uint32_t i = 1; i < n; i++) {
        weft__edge x = v[i];
        uint32_t j = i;

        for (; j > 0 && v[j - 1].from < x.from; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
}

/*
 * Drop the candidates that a path through another candidate implies. In
 * decreasing order, each kept candidate's ancestors (through inferred
 * edges, which point forwards, so no deeper than the lowest candidate) are
 * marked; a marked candidate is implied. The search has a budget: when it
 * runs out, candidates not yet marked are kept, which costs an edge, never
 * an ordering.
 */
static void weft__reduce(weft_graph *g)
{
    uint32_t kept = 0, minfrom, budget, sp;

    if (g->ncands < 2)
        return;
    weft__sort_cands(g->cands, g->ncands);
    minfrom = g->cands[g->ncands - 1].from;
    budget = WEFT__REDUCE_BUDGET * g->ncands;
    for (uint32_t c = 0; c < g->ncands; c++) {
        uint32_t v = g->cands[c].from;

        if (g->marks[v].seen_epoch == g->epoch)
            continue;
        g->cands[kept++] = g->cands[c];
        if (c + 1 == g->ncands)
            break;
        sp = 0;
        g->stack[sp++] = v;
        while (sp && budget) {
            const weft__node *nd = &g->nodes[g->stack[--sp]];

            for (uint32_t e = 0; e < nd->nin && budget; e++) {
                uint32_t u = g->edges[nd->in_first + e].from;

                if (u < minfrom || g->marks[u].seen_epoch == g->epoch)
                    continue;
                g->marks[u].seen_epoch = g->epoch;
                g->stack[sp++] = u;
                budget--;
            }
        }
    }
    g->ncands = kept;
}

/*
 * Room for node n (g->nnodes), its marks, nacc accesses, nargs arguments
 * and nbytes of argument bytes; the counts stay as they were.
 */
static int weft__node_room(weft_graph *g, uint32_t n, uint32_t nacc,
                           uint32_t nargs, size_t nbytes)
{
    int rc;

    if (n >= UINT32_MAX - 1 || nacc > UINT32_MAX - g->nacc ||
        nargs > UINT32_MAX - g->nargs)
        return weft__error(WEFT_ENOMEM, "graph: too many nodes");
    /* (executable graphs that share the arrays keep the old ones) */
    if ((rc = weft__graph_unshare(g)) < 0 ||
        (rc = weft__grow(&g->nodes, &g->cap_nodes, n + 1, sizeof *g->nodes)) <
            0 ||
        (rc = weft__grow(&g->marks, &g->cap_marks, n + 1, sizeof *g->marks)) <
            0 ||
        (rc = weft__grow(&g->acc, &g->cap_acc, g->nacc + nacc,
                         sizeof *g->acc)) < 0 ||
        (rc = weft__grow(&g->runs, &g->cap_runs, (size_t)g->nruns + nacc,
                         sizeof *g->runs)) < 0 ||
        (rc = weft__grow(&g->args, &g->cap_args, g->nargs + nargs,
                         sizeof *g->args)) < 0 ||
        (rc = weft__grow_bytes(g, nbytes)) < 0)
        return rc;
    return 0;
}

/*
 * Room for what the commit of a node writes, after weft__find_candidates
 * (g->ncands, g->nrawtmp, nreads): raws, readers, the reduction's stack
 * and edges. Counts unchanged.
 */
static int weft__commit_room(weft_graph *g, uint64_t nreads)
{
    int rc = 0;

    if (g->nrawtmp > UINT32_MAX - g->nraws ||
        (rc = weft__grow(&g->raws, &g->cap_raws, g->nraws + g->nrawtmp,
                         sizeof *g->raws)) < 0)
        return rc < 0 ? rc : weft__error(WEFT_ENOMEM, "graph: too many reads");
    /* A read adds at most one reader per piece it visited. */
    if (nreads > UINT32_MAX - 1 - g->nreaders ||
        (uint64_t)WEFT__REDUCE_BUDGET * g->ncands + 1 > UINT32_MAX)
        return weft__error(WEFT_ENOMEM, "graph: too many accesses");
    if ((rc = weft__grow(&g->readers, &g->cap_readers, g->nreaders + nreads,
                         sizeof *g->readers)) < 0 ||
        (rc = weft__grow(&g->stack, &g->cap_stack,
                         WEFT__REDUCE_BUDGET * g->ncands + 1,
                         sizeof *g->stack)) < 0 ||
        (rc = weft__grow(&g->edges, &g->cap_edges, g->nedges + g->ncands,
                         sizeof *g->edges)) < 0 ||
        (rc = weft__grow(&g->edge_from, &g->cap_edge_from,
                         (size_t)g->nedges + g->ncands, sizeof *g->edge_from)) <
            0 ||
        (rc = weft__grow(&g->in_first, &g->cap_in_first, (size_t)g->nnodes + 1,
                         sizeof *g->in_first)) < 0)
        return rc;
    return 0;
}

/*
 * Copy args into g->args past g->nargs (which stays), bytes arguments'
 * values into g->bytes (g->nbytes grows). Room made by weft__node_room.
 */
static void weft__args_copy(weft_graph *g, const weft_arg *args, uint32_t nargs)
{
    for (uint32_t i = 0; i < nargs; i++) {
        weft_arg *ar = &g->args[g->nargs + i];

        *ar = args[i];
        if (ar->type == WEFT_PARAM_BYTES) {
            memcpy(g->bytes + g->nbytes, args[i].value.bytes, args[i].size);
            ar->value.u64 = g->nbytes;
            g->nbytes += args[i].size;
        }
    }
}

/*
 * A read's new value: node n pushed on the byte's readers (once: a byte
 * whose list starts with n keeps it). Neighbouring entries that held the
 * same value share the new list head, so that they may merge again.
 */
typedef struct weft__dep_read {
    weft_graph *g;
    uint32_t n;
    uint64_t last_old, last_new; /* the previous entry's change */
} weft__dep_read;

static uint64_t weft__dep_apply_read(uint64_t v, void *user)
{
    weft__dep_read *d = user;
    weft_graph *g = d->g;
    uint32_t head = weft__dep_readers(v);

    if (head != WEFT__NONE && g->readers[head].node == d->n)
        return v;
    if (v == d->last_old)
        return d->last_new;
    weft__assert_internal(g->nreaders < g->cap_readers);
    g->readers[g->nreaders] = (weft__reader){d->n, head};
    d->last_old = v;
    d->last_new = weft__dep_value(weft__dep_writer(v), g->nreaders++);
    return d->last_new;
}

static uint64_t weft__dep_apply_write(uint64_t v, void *user)
{
    (void)v;
    return *(const uint64_t *)user;
}

/*
 * Node n's accesses ga[0, nacc) into the roots' band maps, reads before
 * writes, then equal neighbours merged. Room made by weft__commit_room
 * and the cuts by weft__find_candidates; cannot fail.
 */
static void weft__apply_accesses(weft_graph *g, const weft__access *ga,
                                 uint32_t nacc, uint32_t n)
{
    uint64_t wv = weft__dep_value(n, WEFT__NONE);

    for (int phase = WEFT_READ; phase <= WEFT_WRITE; phase++)
        for (uint32_t i = 0; i < nacc; i++) {
            weft__bandmap *m = &g->roots[ga[i].root].deps;
            weft__dep_read d = {g, n, 0, 0};

            if (!(ga[i].mode & phase) || ga[i].size == 0)
                continue;
            /* No byte holds (n, n's reader entry) before this node. */
            d.last_old = weft__dep_value(n, n);
            for (size_t s = 0; s < ga[i].slices; s++) {
                weft__region r = weft__access_slice(&ga[i], s);

                if (phase == WEFT_READ)
                    weft__bandmap_apply(m, &r, weft__dep_apply_read, &d);
                else
                    weft__bandmap_apply(m, &r, weft__dep_apply_write, &wv);
            }
        }
    for (uint32_t i = 0; i < nacc; i++) {
        size_t lo, hi;

        if (ga[i].size == 0)
            continue;
        weft__access_root_range(&ga[i], &lo, &hi);
        weft__bandmap_merge(&g->roots[ga[i].root].deps, lo, hi);
    }
}

/*
 * Make node n = g->nnodes (*proto, its nacc accesses and nargs arguments
 * written past the counts, its reduced candidates and raws) part of g:
 * the counts grow. Cannot fail.
 */
static void weft__node_commit(weft_graph *g, const weft__node *proto,
                              uint32_t nacc, uint32_t nargs)
{
    uint32_t n = g->nnodes;
    weft__node *nd = &g->nodes[n];

    *nd = *proto;
    nd->acc_first = g->nacc;
    nd->nacc = nacc;
    nd->in_first = g->nedges;
    nd->nin = g->ncands;
    nd->raw_first = g->nraws;
    nd->nraw = g->nrawtmp;
    if (g->nrawtmp)
        memcpy(g->raws + g->nraws, g->rawtmp, g->nrawtmp * sizeof *g->raws);
    g->nraws += g->nrawtmp;
    nd->xin = WEFT__NONE;
    nd->device = -1;
    nd->priority = WEFT_PRIORITY_DEFAULT;
    if (nd->kind == WEFT__NODE_KERNEL) {
        nd->u.kernel.arg_first = g->nargs;
        nd->u.kernel.nargs = nargs;
        weft__kernel_ref(&nd->u.kernel.k->graph_nodes, 1);
    } else if (nd->kind == WEFT__NODE_NATIVE) {
        nd->u.native.arg = g->nargs;
    }
    /*
     * The accesses into the runs: a buffer among the last few runs counts
     * there (a node's reads and writes of a few buffers, repeated node
     * after node, stay a few runs). The node's references are taken per
     * run it adds to, not per access.
     */
    for (uint32_t i = 0, j; i < nacc; i = j) {
        weft_buffer *b = g->acc[g->nacc + i].buf;
        uint32_t r = g->nruns,
                 lo = r > WEFT__RUNS_LOOK ? r - WEFT__RUNS_LOOK : 0;

        for (j = i + 1; j < nacc && g->acc[g->nacc + j].buf == b; j++)
            ;
        while (r > lo && g->runs[r - 1].buf != b)
            r--;
        if (r > lo)
            g->runs[r - 1].n += j - i;
        else
            g->runs[g->nruns++] = (weft__acc_run){b, j - i};
        weft__buffer_graph_ref(b, (long)(j - i));
    }
    /* The candidates are in decreasing order; keep edges increasing. */
    for (uint32_t i = 0; i < g->ncands; i++) {
        weft__edge *e = &g->edges[g->nedges + i];

        *e = g->cands[g->ncands - 1 - i];
        e->to = n;
        g->edge_from[g->nedges + i] = e->from;
    }
    g->in_first[n] = g->nedges;
    g->nedges += g->ncands;
    g->max_node_acc = WEFT__MAX(g->max_node_acc, nacc);
    if ((nd->kind != WEFT__NODE_HOST || nd->u.host.status) &&
        nd->kind != WEFT__NODE_MAP && nd->kind != WEFT__NODE_EMPTY)
        g->nissued++;
    if (nd->kind == WEFT__NODE_KERNEL)
        g->max_node_args = WEFT__MAX(g->max_node_args, nargs);
    g->nacc += nacc;
    g->nargs += nargs;
    g->nnodes = n + 1;
}

/*
 * Add node *proto with its accesses and arguments (already checked). On
 * failure nothing observable has changed.
 */
int weft__add_node(weft_graph *g, const weft__node *proto,
                   const weft__access *acc, uint32_t nacc, const weft_arg *args,
                   uint32_t nargs, size_t nbytes, weft_node *out)
{
    uint32_t n = g->nnodes, i;
    uint64_t nreads = 0;
    weft__access *ga;
    int rc;

    if ((rc = weft__node_room(g, n, nacc, nargs, nbytes)) < 0)
        return rc;
    g->marks[n] = (weft__mark){0, 0, 0, 0, 0};
    /* Written past the counts: invisible until the commit below (no
     * array yet while no node has an access). */
    ga = g->acc ? g->acc + g->nacc : NULL;
    for (i = 0; i < nacc; i++) {
        ga[i] = acc[i];
        if ((rc = weft__root_index(g, acc[i].buf->root, &ga[i].root)) < 0)
            return rc;
    }
    g->epoch++;
    g->ncands = 0;
    g->nrawtmp = 0;
    if ((rc = weft__find_candidates(g, ga, nacc, n, &nreads)) < 0 ||
        (rc = weft__commit_room(g, nreads)) < 0)
        return rc;

    /* Nothing below fails. */
    weft__reduce(g);
    weft__args_copy(g, args, nargs);
    weft__apply_accesses(g, ga, nacc, n);
    weft__node_commit(g, proto, nacc, nargs);
    if (out)
        *out = n;
    return 0;
}
