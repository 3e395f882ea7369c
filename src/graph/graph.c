/*
 * Graph building: nodes, accesses, dependency inference with transitive
 * reduction, explicit edges. graph.h describes the structures and the
 * two-pass add that keeps a failing add from changing anything.
 */
#include "graph.h"

#include <stdarg.h>
#include <stdio.h>
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

const char *weft__hazard_name(weft__hazard h)
{
    switch (h) {
    case WEFT__RAW:
        return "RAW";
    case WEFT__WAR:
        return "WAR";
    case WEFT__WAW:
        return "WAW";
    case WEFT__EXPLICIT:
        break;
    }
    return "explicit";
}

/* Here, not in module.c: graphs and the scheduler name kernels. */
const char *weft_kernel_name(const weft_kernel *k)
{
    return k ? k->name : NULL;
}

const char *weft__node_label(const weft__node *n, char *buf, size_t size)
{
    static const char *const names[] = {
        "?",    "kernel", "write", "read",  "copy",
        "fill", "map",    "host",  "empty", "native",
    };

    if (n->kind == WEFT__NODE_KERNEL)
        snprintf(buf, size, "kernel %s", weft_kernel_name(n->u.kernel.k));
    else if (n->kind == WEFT__NODE_NATIVE && n->u.native.what)
        snprintf(buf, size, "event %s",
                 n->u.native.what == WEFT__NATIVE_WAIT ? "wait" : "record");
    else
        snprintf(buf, size, "%s", names[n->kind]);
    return buf;
}

int weft__node_error(int code, const weft__node *nodes, uint32_t i,
                     const char *fmt, ...)
{
    char label[128], msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return weft__error(code, "node %u (%s): %s", i,
                       weft__node_label(&nodes[i], label, sizeof label), msg);
}

/* ---- create / destroy / counts ----------------------------------------- */

int weft_graph_create(weft_runtime *rt, weft_graph **out)
{
    weft_graph *g;

    if (!rt || !out)
        return weft__error(WEFT_EINVAL, "weft_graph_create: %s is NULL",
                           rt ? "result" : "runtime");
    g = weft__calloc(1, sizeof *g);
    if (!g)
        return weft__error(WEFT_ENOMEM, "weft_graph_create: out of memory");
    g->rt = rt;
    weft__runtime_live(rt, 1);
    *out = g;
    return 0;
}

int weft_graph_destroy(weft_graph *g)
{
    if (!g)
        return 0;
    /* What the graph names may be destroyed once it has gone. */
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].kind == WEFT__NODE_KERNEL)
            weft__kernel_ref(&g->nodes[i].u.kernel.k->graph_nodes, -1);
    for (uint32_t i = 0; i < g->nacc; i++)
        weft__buffer_graph_ref(g->acc[i].buf, -1);
    for (uint32_t i = 0; i < g->nroots; i++)
        weft__bandmap_fini(&g->roots[i].deps);
    weft__free(g->nodes);
    weft__free(g->marks);
    weft__free(g->acc);
    weft__free(g->args);
    weft__free(g->bytes);
    weft__free(g->edges);
    weft__free(g->xedges);
    weft__free(g->roots);
    weft__map_fini(&g->root_index);
    weft__free(g->readers);
    weft__free(g->cands);
    weft__free(g->rawtmp);
    weft__free(g->raws);
    weft__free(g->stack);
    weft__runtime_live(g->rt, -1);
    weft__free(g);
    return 0;
}

unsigned weft_graph_node_count(const weft_graph *g)
{
    return g ? g->nnodes : 0;
}

unsigned weft_graph_edge_count(const weft_graph *g)
{
    return g ? g->nedges + g->nxedges : 0;
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
    qsort(g->cands, g->ncands, sizeof *g->cands, weft__by_from_desc);
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
    if ((rc = weft__grow(&g->nodes, &g->cap_nodes, n + 1, sizeof *g->nodes)) <
            0 ||
        (rc = weft__grow(&g->marks, &g->cap_marks, n + 1, sizeof *g->marks)) <
            0 ||
        (rc = weft__grow(&g->acc, &g->cap_acc, g->nacc + nacc,
                         sizeof *g->acc)) < 0 ||
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
                         sizeof *g->edges)) < 0)
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
    for (uint32_t i = 0; i < nacc; i++)
        weft__buffer_graph_ref(g->acc[g->nacc + i].buf, 1);
    /* The candidates are in decreasing order; keep edges increasing. */
    for (uint32_t i = 0; i < g->ncands; i++) {
        weft__edge *e = &g->edges[g->nedges + i];

        *e = g->cands[g->ncands - 1 - i];
        e->to = n;
    }
    g->nedges += g->ncands;
    g->nacc += nacc;
    g->nargs += nargs;
    g->nnodes = n + 1;
}

/*
 * Add node *proto with its accesses and arguments (already checked). On
 * failure nothing observable has changed.
 */
static int weft__add_node(weft_graph *g, const weft__node *proto,
                          const weft__access *acc, uint32_t nacc,
                          const weft_arg *args, uint32_t nargs, size_t nbytes,
                          weft_node *out)
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

/* ---- arguments --------------------------------------------------------- */

/* What every argument must be, whatever the kernel (the add-time check). */
static int weft__args_basic(const weft_arg *args, unsigned nargs,
                            size_t *nbytes, unsigned *nbuffers)
{
    *nbytes = 0;
    *nbuffers = 0;
    for (unsigned i = 0; i < nargs; i++) {
        const weft_arg *a = &args[i];
        size_t want;

        switch (a->type) {
        case WEFT_PARAM_BUFFER:
            if (!a->buffer)
                return weft__error(WEFT_EINVAL, "argument %u: buffer is NULL",
                                   i);
            if (a->access < WEFT_READ || a->access > WEFT_READ_WRITE)
                return weft__error(WEFT_EINVAL,
                                   "argument %u: unknown access mode %d", i,
                                   (int)a->access);
            ++*nbuffers;
            break;
        case WEFT_PARAM_LOCAL:
            if (a->size == 0)
                return weft__error(WEFT_EARGS,
                                   "argument %u: local scratch of 0 bytes", i);
            break;
        case WEFT_PARAM_BYTES:
            if (a->size == 0)
                return weft__error(WEFT_EARGS, "argument %u: bytes of size 0",
                                   i);
            if (!a->value.bytes)
                return weft__error(WEFT_EINVAL,
                                   "argument %u: bytes pointer is NULL", i);
            if (a->size > SIZE_MAX / 4 - *nbytes)
                return weft__error(WEFT_EARGS, "argument %u: %zu bytes", i,
                                   a->size);
            *nbytes += a->size;
            break;
        case WEFT_PARAM_I32:
        case WEFT_PARAM_U32:
        case WEFT_PARAM_I64:
        case WEFT_PARAM_U64:
        case WEFT_PARAM_F32:
        case WEFT_PARAM_F64:
            want = weft_param_type_size(a->type);
            if (a->size != want)
                return weft__error(WEFT_EARGS,
                                   "argument %u is %s but has %zu bytes", i,
                                   weft_param_type_name(a->type), a->size);
            break;
        default:
            return weft__error(WEFT_EARGS, "argument %u has unknown type %d", i,
                               (int)a->type);
        }
    }
    return 0;
}

/*
 * The arguments against an implementation's parameter list, by the rules
 * of the driver layer's launch check: buffer-ness, local-ness, sizes, and
 * where the parameter types are known a scalar parameter takes an argument
 * of its own type only (an f32 is not a u32, whatever their sizes).
 */
int weft__args_match(const weft_kernel *k, const weft__kernel *impl,
                     const weft_arg *args, unsigned nargs)
{
    const char *name = weft_kernel_name(k);

    if (!impl || !impl->params_known)
        return 0;
    if (nargs != impl->nparams)
        return weft__error(WEFT_EARGS, "%u arguments given, kernel %s takes %u",
                           nargs, name, impl->nparams);
    for (unsigned i = 0; i < nargs; i++) {
        const weft_arg *a = &args[i];
        size_t want;

        if (impl->params) {
            weft_param_type p = impl->params[i];

            if ((p == WEFT_PARAM_BUFFER) != (a->type == WEFT_PARAM_BUFFER) ||
                (p == WEFT_PARAM_LOCAL) != (a->type == WEFT_PARAM_LOCAL))
                return weft__error(WEFT_EARGS,
                                   "argument %u is a %s, parameter %u of %s a "
                                   "%s",
                                   i, weft_param_type_name(a->type), i, name,
                                   weft_param_type_name(p));
            if (p == WEFT_PARAM_BUFFER || p == WEFT_PARAM_LOCAL)
                continue;
            if (p != WEFT_PARAM_BYTES && a->type != p)
                return weft__error(WEFT_EARGS,
                                   "argument %u is %s, parameter %u of %s "
                                   "takes %s",
                                   i, weft_param_type_name(a->type), i, name,
                                   weft_param_type_name(p));
            want = p == WEFT_PARAM_BYTES && impl->param_sizes
                       ? impl->param_sizes[i]
                       : weft_param_type_size(p);
            if (want && a->size != want)
                return weft__error(WEFT_EARGS,
                                   "argument %u has %zu bytes, parameter %u "
                                   "of %s (%s) %zu",
                                   i, a->size, i, name, weft_param_type_name(p),
                                   want);
        } else if (impl->param_sizes) {
            want = impl->param_sizes[i];
            if (a->type == WEFT_PARAM_LOCAL)
                continue;
            if ((a->type == WEFT_PARAM_BUFFER ? sizeof(uint64_t) : a->size) !=
                want)
                return weft__error(WEFT_EARGS,
                                   "argument %u (%s) does not fit parameter %u "
                                   "of %s (%zu bytes)",
                                   i, weft_param_type_name(a->type), i, name,
                                   want);
        }
    }
    return 0;
}

/* The first implementation of k whose parameters are known, or NULL. */
static const weft__kernel *weft__known_impl(const weft_graph *g,
                                            const weft_kernel *k)
{
    for (unsigned i = 0; i < g->rt->ndevices; i++) {
        const weft__kernel *impl = weft__kernel_impl(k, i);

        if (impl && impl->params_known)
            return impl;
    }
    return NULL;
}

/* ---- adding nodes ------------------------------------------------------ */

static int weft__check_graph(const weft_graph *g, const char *fn)
{
    if (!g)
        return weft__error(WEFT_EINVAL, "%s: graph is NULL", fn);
    return 0;
}

/*
 * The prefix of every add error past the graph check: the function and the
 * node it would have been, by kind only (no node of that index exists).
 */
static int weft__add_error(const char *fn, weft__node_kind kind,
                           const weft_kernel *k, int rc)
{
    weft__node n;
    char label[128];

    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.u.kernel.k = (weft_kernel *)k;
    return weft__error_prefix(rc, "%s: the node being added (%s)", fn,
                              weft__node_label(&n, label, sizeof label));
}

/* The same for a node whose label needs more than its kind. */
static int weft__add_error_node(const char *fn, const weft__node *n, int rc)
{
    char label[128];

    return weft__error_prefix(rc, "%s: the node being added (%s)", fn,
                              weft__node_label(n, label, sizeof label));
}

/*
 * Buffer b as an access of a node of g, called what in messages: not NULL,
 * of g's runtime, and [off, off + size) inside it (WEFT_WHOLE: from off to
 * its end, off at most its size). WEFT_EINVAL or WEFT_ERANGE.
 */
static int weft__buffer_arg(const weft_graph *g, const weft_buffer *b,
                            size_t off, size_t size, const char *what)
{
    char desc[96];

    if (!b)
        return weft__error(WEFT_EINVAL, "%s: buffer is NULL", what);
    if (b->rt != g->rt)
        return weft__error(WEFT_EINVAL,
                           "%s: the buffer belongs to another runtime than "
                           "the graph",
                           what);
    if (off <= b->size && (size == WEFT_WHOLE || size <= b->size - off))
        return 0;
    weft__buffer_describe(b, desc, sizeof desc);
    if (off > b->size)
        return weft__error(WEFT_ERANGE, "%s: offset %zu is past the end of %s",
                           what, off, desc);
    return weft__error(WEFT_ERANGE, "%s: range [%zu, %zu + %zu) is outside %s",
                       what, off, off, size, desc);
}

static weft__access weft__access_make(weft_buffer *b, size_t off, size_t size,
                                      weft_access mode)
{
    weft__access a = {b, off, size, 0, mode, 1, 1, 0, 0};

    if (size == WEFT_WHOLE && off <= b->size)
        a.size = b->size - off;
    return a;
}

/*
 * A block as an access (checked by weft__block_arg); rows 0 or one row of
 * one slice: the range [origin, + row_bytes).
 */
static weft__access weft__access_block_make(weft_buffer *b, size_t origin,
                                            size_t row_bytes, size_t rows,
                                            size_t slices, size_t row_pitch,
                                            size_t slice_pitch,
                                            weft_access mode)
{
    weft__access a = weft__access_make(b, origin, row_bytes, mode);

    if (rows == 0 || (rows == 1 && slices == 1))
        return a;
    a.rows = rows;
    a.slices = slices;
    a.row_pitch = row_pitch;
    a.slice_pitch = slices > 1 ? slice_pitch : 0;
    return a;
}

/*
 * The block (origin, row_bytes, rows, slices, row_pitch, slice_pitch) of
 * b, named what in messages, by weft_block's rules: b as for
 * weft__buffer_arg, then WEFT_EINVAL naming the field and its value, or
 * WEFT_ERANGE where its last byte is past b's end. One row of one slice is
 * the range [origin, + row_bytes), its pitches not looked at.
 */
static int weft__block_arg(const weft_graph *g, const weft_buffer *b,
                           size_t origin, size_t row_bytes, size_t rows,
                           size_t slices, size_t row_pitch, size_t slice_pitch,
                           const char *what)
{
    size_t a = 0, c = 0, end = 0;
    char desc[96];
    int rc;

    if ((rc = weft__buffer_arg(g, b, 0, 0, what)) < 0)
        return rc;
    if (row_bytes == 0)
        return weft__error(WEFT_EINVAL,
                           "%s: row_bytes is 0 (a block's rows "
                           "have at least one byte)",
                           what);
    if (rows == 0)
        return weft__error(WEFT_EINVAL, "%s: rows is 0", what);
    if (slices == 0)
        return weft__error(WEFT_EINVAL, "%s: slices is 0", what);
    if (rows == 1 && slices == 1)
        return weft__buffer_arg(g, b, origin, row_bytes, what);
    if (row_pitch < row_bytes)
        return weft__error(WEFT_EINVAL,
                           "%s: row_pitch %zu is below row_bytes %zu (rows "
                           "would overlap)",
                           what, row_pitch, row_bytes);
    if (slices > 1 && slice_pitch % row_pitch)
        return weft__error(WEFT_EINVAL,
                           "%s: slice_pitch %zu is no multiple of row_pitch "
                           "%zu",
                           what, slice_pitch, row_pitch);
    if (slices > 1 && slice_pitch / row_pitch < rows)
        return weft__error(WEFT_EINVAL,
                           "%s: slice_pitch %zu is below rows * row_pitch "
                           "(%zu x %zu: slices would overlap)",
                           what, slice_pitch, rows, row_pitch);
    if (!__builtin_mul_overflow(slices - 1, slices > 1 ? slice_pitch : 0, &a) &&
        !__builtin_mul_overflow(rows - 1, row_pitch, &c) &&
        !__builtin_add_overflow(a, c, &end) &&
        !__builtin_add_overflow(end, row_bytes, &end) &&
        !__builtin_add_overflow(end, origin, &end) && end <= b->size)
        return 0;
    weft__buffer_describe(b, desc, sizeof desc);
    return weft__error(WEFT_ERANGE,
                       "%s: block at origin %zu (%zu rows of %zu bytes, "
                       "%zu apart, x %zu slices %zu apart) ends past the end "
                       "of %s",
                       what, origin, rows, row_bytes, row_pitch, slices,
                       slice_pitch, desc);
}

enum { WEFT__STACK_ACC = 16 };

/* The kernel and its arguments, for weft_graph_add_kernel. */
static int weft__kernel_check(const weft_graph *g, const weft_kernel *k,
                              weft_dims dims, const weft_arg *args,
                              unsigned nargs, size_t *nbytes, unsigned *nbuf)
{
    char what[32];
    int rc;

    if (k->rt != g->rt)
        return weft__error(WEFT_EINVAL, "the kernel belongs to another "
                                        "runtime than the graph");
    if (nargs && !args)
        return weft__error(WEFT_EINVAL, "%u arguments but the array is NULL",
                           nargs);
    if (!dims.items[0] || !dims.items[1] || !dims.items[2])
        return weft__error(WEFT_EINVAL, "dims: empty grid of %ux%ux%u items",
                           dims.items[0], dims.items[1], dims.items[2]);
    if ((rc = weft__args_basic(args, nargs, nbytes, nbuf)) < 0)
        return rc;
    for (unsigned i = 0; i < nargs; i++) {
        if (args[i].type != WEFT_PARAM_BUFFER)
            continue;
        snprintf(what, sizeof what, "argument %u", i);
        if (args[i].rows == 0)
            rc = weft__buffer_arg(g, args[i].buffer, args[i].offset,
                                  args[i].size, what);
        else
            rc = weft__block_arg(g, args[i].buffer, args[i].offset,
                                 args[i].size, args[i].rows, args[i].slices,
                                 args[i].row_pitch, args[i].slice_pitch, what);
        if (rc < 0)
            return rc;
    }
    return weft__args_match(k, weft__known_impl(g, k), args, nargs);
}

int weft_graph_add_kernel(weft_graph *g, weft_kernel *k, weft_dims dims,
                          const weft_arg *args, unsigned nargs, weft_node *node)
{
    static const char fn[] = "weft_graph_add_kernel";
    weft__access stack_acc[WEFT__STACK_ACC], *acc = stack_acc;
    weft__node proto;
    unsigned nbuf = 0, j = 0;
    size_t nbytes = 0;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if (!k)
        return weft__error(WEFT_EINVAL, "%s: kernel is NULL", fn);
    rc = weft__kernel_check(g, k, dims, args, nargs, &nbytes, &nbuf);
    if (rc < 0)
        return weft__add_error(fn, WEFT__NODE_KERNEL, k, rc);
    if (nbuf > WEFT__STACK_ACC && !(acc = weft__malloc(nbuf * sizeof *acc)))
        return weft__add_error(fn, WEFT__NODE_KERNEL, k,
                               weft__error(WEFT_ENOMEM, "out of memory"));
    for (unsigned i = 0; i < nargs; i++)
        if (args[i].type == WEFT_PARAM_BUFFER)
            acc[j++] = weft__access_block_make(
                args[i].buffer, args[i].offset, args[i].size, args[i].rows,
                args[i].slices, args[i].row_pitch, args[i].slice_pitch,
                args[i].access);
    memset(&proto, 0, sizeof proto);
    proto.kind = WEFT__NODE_KERNEL;
    proto.u.kernel.k = k;
    proto.u.kernel.dims = dims;
    rc = weft__add_node(g, &proto, acc, nbuf, args, nargs, nbytes, node);
    if (acc != stack_acc)
        weft__free(acc);
    return rc < 0 ? weft__add_error(fn, WEFT__NODE_KERNEL, k, rc) : 0;
}

/* A node with one buffer access (called what) and no arguments. */
static int weft__add_simple(weft_graph *g, const char *fn, weft__node *proto,
                            weft_buffer *b, const char *what, size_t off,
                            size_t size, weft_access mode, weft_node *node)
{
    weft__access a;
    int rc;

    if ((rc = weft__buffer_arg(g, b, off, size, what)) < 0)
        return weft__add_error(fn, proto->kind, NULL, rc);
    a = weft__access_make(b, off, size, mode);
    rc = weft__add_node(g, proto, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, proto->kind, NULL, rc) : 0;
}

static weft__node weft__proto(weft__node_kind kind)
{
    weft__node n;

    memset(&n, 0, sizeof n);
    n.kind = kind;
    return n;
}

int weft_graph_add_write(weft_graph *g, weft_buffer *dst, size_t offset,
                         const void *src, size_t size, weft_node *node)
{
    static const char fn[] = "weft_graph_add_write";
    weft__node p = weft__proto(WEFT__NODE_WRITE);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    p.u.write.src = src; /* NULL is reported by instantiate */
    return weft__add_simple(g, fn, &p, dst, "dst", offset, size, WEFT_WRITE,
                            node);
}

int weft_graph_add_read(weft_graph *g, weft_buffer *src, size_t offset,
                        void *dst, size_t size, weft_node *node)
{
    static const char fn[] = "weft_graph_add_read";
    weft__node p = weft__proto(WEFT__NODE_READ);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    p.u.read.dst = dst;
    return weft__add_simple(g, fn, &p, src, "src", offset, size, WEFT_READ,
                            node);
}

int weft_graph_add_copy(weft_graph *g, weft_buffer *dst, size_t dst_offset,
                        weft_buffer *src, size_t src_offset, size_t size,
                        weft_node *node)
{
    static const char fn[] = "weft_graph_add_copy";
    weft__node p = weft__proto(WEFT__NODE_COPY);
    weft__access a[2];
    size_t slo, shi, dlo, dhi;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if (size == WEFT_WHOLE)
        rc = weft__error(WEFT_EINVAL, "size: a copy needs an explicit size, "
                                      "not WEFT_WHOLE");
    else if ((rc = weft__buffer_arg(g, dst, dst_offset, size, "dst")) == 0)
        rc = weft__buffer_arg(g, src, src_offset, size, "src");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    /* Accesses: [0] the source, [1] the destination (exec.c relies on it). */
    a[0] = weft__access_make(src, src_offset, size, WEFT_READ);
    a[1] = weft__access_make(dst, dst_offset, size, WEFT_WRITE);
    weft__access_root_range(&a[0], &slo, &shi);
    weft__access_root_range(&a[1], &dlo, &dhi);
    if (src->root == dst->root && slo < dhi && dlo < shi)
        return weft__add_error(
            fn, p.kind, NULL,
            weft__error(WEFT_EINVAL,
                        "source [%zu, %zu) and destination [%zu, %zu) "
                        "overlap in the same buffer",
                        slo, shi, dlo, dhi));
    rc = weft__add_node(g, &p, a, 2, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

int weft_graph_add_fill(weft_graph *g, weft_buffer *dst, size_t offset,
                        size_t size, const void *pattern, size_t pattern_size,
                        weft_node *node)
{
    static const char fn[] = "weft_graph_add_fill";
    weft__node p = weft__proto(WEFT__NODE_FILL);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__buffer_arg(g, dst, offset, size, "dst")) < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    if (size == WEFT_WHOLE)
        size = dst->size - offset;
    if ((rc = weft__fill_check(pattern, pattern_size, offset, size, "fill")) <
        0)
        return weft__add_error(fn, p.kind, NULL, rc);
    memcpy(p.u.fill.pattern, pattern, pattern_size);
    p.u.fill.size = (unsigned)pattern_size;
    return weft__add_simple(g, fn, &p, dst, "dst", offset, size, WEFT_WRITE,
                            node);
}

/* ---- block transfers --------------------------------------------------- */

/* *blk of b (named by buf and "blk" in messages) as an access of mode. */
static int weft__block_access(const weft_graph *g, weft_buffer *b,
                              const char *buf, const weft_block *blk,
                              const char *what, weft_access mode,
                              weft__access *out)
{
    int rc;

    if ((rc = weft__buffer_arg(g, b, 0, 0, buf)) < 0)
        return rc;
    if (!blk)
        return weft__error(WEFT_EINVAL, "%s is NULL", what);
    if ((rc = weft__block_arg(g, b, blk->origin, blk->row_bytes, blk->rows,
                              blk->slices, blk->row_pitch, blk->slice_pitch,
                              what)) < 0)
        return rc;
    *out = weft__access_block_make(b, blk->origin, blk->row_bytes, blk->rows,
                                   blk->slices, blk->row_pitch,
                                   blk->slice_pitch, mode);
    return 0;
}

/*
 * The host side's pitches of a block transfer of *a (named row and slice in
 * messages): 0 packed, else at least the block's row and slice. One row of
 * one slice looks at neither.
 */
static int weft__host_pitches(const weft__access *a, size_t *row_pitch,
                              size_t *slice_pitch, const char *row,
                              const char *slice)
{
    size_t rp = *row_pitch ? *row_pitch : a->size;

    if (!weft__access_is_block(a)) {
        *row_pitch = *slice_pitch = 0;
        return 0;
    }
    if (rp < a->size)
        return weft__error(WEFT_EINVAL,
                           "%s %zu is below the block's row_bytes %zu", row, rp,
                           a->size);
    if (a->slices > 1 && *slice_pitch && *slice_pitch / rp < a->rows)
        return weft__error(WEFT_EINVAL, "%s %zu is below rows * %s (%zu x %zu)",
                           slice, *slice_pitch, row, a->rows, rp);
    if (a->slices > 1 && !*slice_pitch &&
        __builtin_mul_overflow(rp, a->rows, slice_pitch))
        return weft__error(WEFT_EINVAL, "%s %zu x %zu rows overflows", row, rp,
                           a->rows);
    if (a->slices == 1)
        *slice_pitch = 0;
    *row_pitch = rp;
    return 0;
}

int weft_graph_add_write_block(weft_graph *g, weft_buffer *dst,
                               const weft_block *blk, const void *src,
                               size_t src_row_pitch, size_t src_slice_pitch,
                               weft_node *node)
{
    static const char fn[] = "weft_graph_add_write_block";
    weft__node p = weft__proto(WEFT__NODE_WRITE);
    weft__access a;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__block_access(g, dst, "dst", blk, "blk", WEFT_WRITE, &a)) ==
        0)
        rc = weft__host_pitches(&a, &src_row_pitch, &src_slice_pitch,
                                "src_row_pitch", "src_slice_pitch");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    p.u.write.src = src; /* NULL is reported by instantiate */
    p.u.write.row_pitch = src_row_pitch;
    p.u.write.slice_pitch = src_slice_pitch;
    rc = weft__add_node(g, &p, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

int weft_graph_add_read_block(weft_graph *g, weft_buffer *src,
                              const weft_block *blk, void *dst,
                              size_t dst_row_pitch, size_t dst_slice_pitch,
                              weft_node *node)
{
    static const char fn[] = "weft_graph_add_read_block";
    weft__node p = weft__proto(WEFT__NODE_READ);
    weft__access a;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__block_access(g, src, "src", blk, "blk", WEFT_READ, &a)) ==
        0)
        rc = weft__host_pitches(&a, &dst_row_pitch, &dst_slice_pitch,
                                "dst_row_pitch", "dst_slice_pitch");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    p.u.read.dst = dst;
    p.u.read.row_pitch = dst_row_pitch;
    p.u.read.slice_pitch = dst_slice_pitch;
    rc = weft__add_node(g, &p, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

/* Access a (of a root) as a block of addresses for weft__block_overlap. */
static weft__block weft__access_addr_block(const weft__access *a)
{
    weft__block b = {a->buf->offset + a->offset,
                     a->size,
                     a->rows,
                     a->slices,
                     a->row_pitch,
                     a->slice_pitch};

    return b;
}

int weft_graph_add_copy_block(weft_graph *g, weft_buffer *dst,
                              const weft_block *dblk, weft_buffer *src,
                              const weft_block *sblk, weft_node *node)
{
    static const char fn[] = "weft_graph_add_copy_block";
    weft__node p = weft__proto(WEFT__NODE_COPY);
    weft__access a[2];
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    /* Accesses: [0] the source, [1] the destination (exec.c relies on it). */
    if ((rc = weft__block_access(g, dst, "dst", dblk, "dblk", WEFT_WRITE,
                                 &a[1])) == 0)
        rc = weft__block_access(g, src, "src", sblk, "sblk", WEFT_READ, &a[0]);
    if (rc == 0 && (dblk->row_bytes != sblk->row_bytes ||
                    dblk->rows != sblk->rows || dblk->slices != sblk->slices))
        rc = weft__error(WEFT_EINVAL,
                         "dblk (%zu rows of %zu bytes x %zu slices) and sblk "
                         "(%zu rows of %zu bytes x %zu slices) differ in "
                         "extent",
                         dblk->rows, dblk->row_bytes, dblk->slices, sblk->rows,
                         sblk->row_bytes, sblk->slices);
    if (rc == 0 && src->root == dst->root) {
        weft__block x = weft__access_addr_block(&a[0]);
        weft__block y = weft__access_addr_block(&a[1]);

        if (weft__block_overlap(&x, &y))
            rc = weft__error(WEFT_EINVAL, "the source and destination blocks "
                                          "share bytes of the same buffer");
    }
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    rc = weft__add_node(g, &p, a, 2, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

int weft_graph_add_fill_block(weft_graph *g, weft_buffer *dst,
                              const weft_block *blk, const void *pattern,
                              size_t pattern_size, weft_node *node)
{
    static const char fn[] = "weft_graph_add_fill_block";
    weft__node p = weft__proto(WEFT__NODE_FILL);
    weft__access a;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__block_access(g, dst, "dst", blk, "blk", WEFT_WRITE, &a)) ==
        0)
        rc = weft__fill_check(pattern, pattern_size, blk->origin,
                              blk->row_bytes, "fill");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    memcpy(p.u.fill.pattern, pattern, pattern_size);
    p.u.fill.size = (unsigned)pattern_size;
    rc = weft__add_node(g, &p, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

int weft_graph_add_map(weft_graph *g, weft_buffer *buf, size_t offset,
                       size_t size, weft_access mode, weft_map_fn *fn,
                       void *user, weft_node *node)
{
    static const char name[] = "weft_graph_add_map";
    weft__node p = weft__proto(WEFT__NODE_MAP);
    int rc;

    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if (!fn)
        return weft__add_error(name, p.kind, NULL,
                               weft__error(WEFT_EINVAL, "fn is NULL"));
    if (mode < WEFT_READ || mode > WEFT_READ_WRITE)
        return weft__add_error(name, p.kind, NULL,
                               weft__error(WEFT_EINVAL,
                                           "mode: unknown access mode %d",
                                           (int)mode));
    p.u.map.fn = fn;
    p.u.map.user = user;
    return weft__add_simple(g, name, &p, buf, "buf", offset, size, mode, node);
}

/* The declared accesses of a host task or native node, checked. */
static int weft__desc_check(const weft_graph *g, const weft_access_desc *acc,
                            unsigned nacc)
{
    char what[32];
    int rc = 0;

    if (nacc && !acc)
        return weft__error(WEFT_EINVAL, "%u accesses but the array is NULL",
                           nacc);
    for (unsigned i = 0; rc == 0 && i < nacc; i++) {
        /* "access <i>", by hand: snprintf costs more than the checks. */
        char digits[12];
        size_t nd = 0, at = sizeof "access " - 1;

        memcpy(what, "access ", at);
        for (unsigned v = i; nd == 0 || v; v /= 10)
            digits[nd++] = (char)('0' + v % 10);
        while (nd)
            what[at++] = digits[--nd];
        what[at] = '\0';
        if (acc[i].mode < WEFT_READ || acc[i].mode > WEFT_READ_WRITE)
            rc = weft__error(WEFT_EINVAL, "access %u: unknown mode %d", i,
                             (int)acc[i].mode);
        else if (acc[i].rows == 0)
            rc = weft__buffer_arg(g, acc[i].buffer, acc[i].offset, acc[i].size,
                                  what);
        else
            rc = weft__block_arg(g, acc[i].buffer, acc[i].offset, acc[i].size,
                                 acc[i].rows, acc[i].slices, acc[i].row_pitch,
                                 acc[i].slice_pitch, what);
    }
    return rc;
}

/* A declared access (checked by weft__desc_check) as the graph keeps it. */
static weft__access weft__access_desc_make(const weft_access_desc *d)
{
    return weft__access_block_make(d->buffer, d->offset, d->size, d->rows,
                                   d->slices, d->row_pitch, d->slice_pitch,
                                   d->mode);
}

/* A host task of either kind (fn or status set, not both). */
static int weft__add_host(weft_graph *g, const char *name,
                          weft_host_task_fn *fn, weft_host_status_fn *status,
                          void *user, const weft_access_desc *acc,
                          unsigned nacc, weft_node *node)
{
    weft__access stack_acc[WEFT__STACK_ACC], *a = stack_acc;
    weft__node p = weft__proto(WEFT__NODE_HOST);
    int rc = 0;

    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if (!fn && !status)
        rc = weft__error(WEFT_EINVAL, "fn is NULL");
    else
        rc = weft__desc_check(g, acc, nacc);
    if (rc == 0 && nacc > WEFT__STACK_ACC &&
        !(a = weft__malloc(nacc * sizeof *a)))
        rc = weft__error(WEFT_ENOMEM, "out of memory");
    if (rc < 0)
        return weft__add_error(name, p.kind, NULL, rc);
    for (unsigned i = 0; i < nacc; i++)
        a[i] = weft__access_desc_make(&acc[i]);
    p.u.host.fn = fn;
    p.u.host.status = status;
    p.u.host.user = user;
    rc = weft__add_node(g, &p, a, nacc, NULL, 0, 0, node);
    if (a != stack_acc)
        weft__free(a);
    return rc < 0 ? weft__add_error(name, p.kind, NULL, rc) : 0;
}

int weft_graph_add_host(weft_graph *g, weft_host_task_fn *fn, void *user,
                        const weft_access_desc *acc, unsigned nacc,
                        weft_node *node)
{
    return weft__add_host(g, "weft_graph_add_host", fn, NULL, user, acc, nacc,
                          node);
}

int weft_graph_add_host_status(weft_graph *g, weft_host_status_fn *fn,
                               void *user, const weft_access_desc *acc,
                               unsigned nacc, weft_node *node)
{
    return weft__add_host(g, "weft_graph_add_host_status", NULL, fn, user, acc,
                          nacc, node);
}

/* ---- native nodes ------------------------------------------------------ */

void weft__native_impl_at(const weft__node *nd, const weft_arg *args,
                          const unsigned char *bytes, uint32_t k,
                          weft__native_impl *out)
{
    const weft_arg *a = &args[nd->u.native.arg];

    memcpy(out, bytes + a->value.u64 + (size_t)k * sizeof *out, sizeof *out);
}

weft_native_fn *weft__native_fn_for(const weft__node *nd, const weft_arg *args,
                                    const unsigned char *bytes,
                                    const weft__device *dev)
{
    weft__native_impl im;

    if (!weft__drv_native_supported(dev))
        return NULL;
    for (uint32_t k = 0; k < nd->u.native.nimpl; k++) {
        weft__native_impl_at(nd, args, bytes, k, &im);
        if (strcmp(im.driver, dev->drv->name) == 0 &&
            (im.type == 0 || im.type == dev->props.type))
            return im.fn;
    }
    return NULL;
}

int weft__node_runs_on(const weft__node *nd, const weft_arg *args,
                       const unsigned char *bytes, weft_runtime *rt,
                       unsigned dev)
{
    if (dev >= rt->ndevices)
        return 0;
    if (nd->kind == WEFT__NODE_KERNEL)
        return weft__kernel_impl(nd->u.kernel.k, dev) != NULL;
    if (nd->kind == WEFT__NODE_NATIVE)
        return weft__native_fn_for(nd, args, bytes, rt->devices[dev]) != NULL;
    return 0;
}

/* The implementations of weft_graph_add_native, checked. */
static int weft__native_check(const weft_native_impl *impls, unsigned nimpls)
{
    static const char *const drivers[] = {"cuda", "opencl", "host", "sim"};

    if (!impls)
        return weft__error(WEFT_EINVAL, "impls is NULL");
    if (nimpls == 0)
        return weft__error(WEFT_EINVAL, "nimpls is 0: a native node needs "
                                        "an implementation");
    if (nimpls > 64)
        return weft__error(WEFT_EINVAL,
                           "nimpls: %u implementations (at "
                           "most 64)",
                           nimpls);
    for (unsigned i = 0; i < nimpls; i++) {
        unsigned d = 0;

        if (!impls[i].fn)
            return weft__error(WEFT_EINVAL, "impls[%u]: fn is NULL", i);
        if (!impls[i].driver)
            return weft__error(WEFT_EINVAL, "impls[%u]: driver is NULL", i);
        while (d < WEFT__COUNTOF(drivers) &&
               strcmp(impls[i].driver, drivers[d]) != 0)
            d++;
        if (d == WEFT__COUNTOF(drivers))
            return weft__error(WEFT_EINVAL,
                               "impls[%u]: driver \"%.32s\" is none of cuda, "
                               "opencl, host, sim",
                               i, impls[i].driver);
        if ((int)impls[i].type < 0 ||
            (int)impls[i].type > WEFT_DEVICE_SIMULATED)
            return weft__error(WEFT_EINVAL,
                               "impls[%u]: type %d is no weft_device_type", i,
                               (int)impls[i].type);
    }
    return 0;
}

/* A native node of kind what (WEFT__NATIVE_*), for the public adds. */
static int weft__add_native(weft_graph *g, const char *name, uint32_t what,
                            const weft_native_impl *impls, unsigned nimpls,
                            const weft_access_desc *acc, unsigned nacc,
                            void *user, weft_node *node)
{
    weft__access stack_acc[WEFT__STACK_ACC], *a = stack_acc;
    weft__native_impl tab[64];
    weft__node p = weft__proto(WEFT__NODE_NATIVE);
    weft_arg blob;
    int rc;

    p.u.native.what = what;
    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if ((rc = weft__native_check(impls, nimpls)) == 0)
        rc = weft__desc_check(g, acc, nacc);
    if (rc == 0 && nacc > WEFT__STACK_ACC &&
        !(a = weft__malloc(nacc * sizeof *a)))
        rc = weft__error(WEFT_ENOMEM, "out of memory");
    if (rc < 0)
        return weft__add_error_node(name, &p, rc);
    for (unsigned i = 0; i < nacc; i++)
        a[i] = weft__access_desc_make(&acc[i]);
    memset(tab, 0, sizeof tab);
    for (unsigned i = 0; i < nimpls; i++) {
        weft__strlcpy(tab[i].driver, impls[i].driver, sizeof tab[i].driver);
        tab[i].type = impls[i].type;
        tab[i].fn = impls[i].fn;
    }
    /* The table is the node's one argument: bytes copied into the graph. */
    blob = weft_arg_bytes(tab, nimpls * sizeof *tab);
    p.u.native.nimpl = nimpls;
    p.u.native.user = user;
    rc = weft__add_node(g, &p, a, nacc, &blob, 1, blob.size, node);
    if (a != stack_acc)
        weft__free(a);
    return rc < 0 ? weft__add_error_node(name, &p, rc) : 0;
}

int weft_graph_add_native(weft_graph *g, const weft_native_impl *impls,
                          unsigned nimpls, const weft_access_desc *acc,
                          unsigned nacc, void *user, weft_node *node)
{
    return weft__add_native(g, "weft_graph_add_native", WEFT__NATIVE_FN, impls,
                            nimpls, acc, nacc, user, node);
}

int weft__native_event_wait(const weft_native_ctx *ctx, void *event)
{
    return weft__drv_external_wait(ctx->q, event);
}

int weft__native_event_record(const weft_native_ctx *ctx, void *event)
{
    return weft__drv_external_record(ctx->q, event);
}

/* An event node: a native node whose function is weft's own. */
static int weft__add_event(weft_graph *g, const char *name, uint32_t what,
                           const char *driver, void *event,
                           const weft_access_desc *acc, unsigned nacc,
                           weft_node *node)
{
    weft_native_impl impl = {driver, 0,
                             what == WEFT__NATIVE_WAIT
                                 ? weft__native_event_wait
                                 : weft__native_event_record};
    weft__node p = weft__proto(WEFT__NODE_NATIVE);
    int rc;

    p.u.native.what = what;
    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if (!driver)
        rc = weft__error(WEFT_EINVAL, "driver is NULL");
    else if (!event)
        rc = weft__error(WEFT_EINVAL, "event is NULL");
    else if ((rc = weft__native_check(&impl, 1)) < 0)
        rc = weft__error(WEFT_EINVAL,
                         "driver \"%.32s\" is none of cuda, opencl, host, sim",
                         driver);
    if (rc < 0)
        return weft__add_error_node(name, &p, rc);
    return weft__add_native(g, name, what, &impl, 1, acc, nacc, event, node);
}

int weft_graph_add_event_wait(weft_graph *g, const char *driver, void *event,
                              const weft_access_desc *acc, unsigned nacc,
                              weft_node *node)
{
    return weft__add_event(g, "weft_graph_add_event_wait", WEFT__NATIVE_WAIT,
                           driver, event, acc, nacc, node);
}

int weft_graph_add_event_record(weft_graph *g, const char *driver, void *event,
                                const weft_access_desc *acc, unsigned nacc,
                                weft_node *node)
{
    return weft__add_event(g, "weft_graph_add_event_record",
                           WEFT__NATIVE_RECORD, driver, event, acc, nacc, node);
}

int weft_graph_add_empty(weft_graph *g, weft_node *node)
{
    static const char fn[] = "weft_graph_add_empty";
    weft__node p = weft__proto(WEFT__NODE_EMPTY);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    rc = weft__add_node(g, &p, NULL, 0, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

/*
 * Whether node `to` already runs before node `from` (a path of inferred or
 * explicit edges leads from `to` to `from`): then an edge from -> to would
 * close a cycle. A search back from `from` over the in-edges; *path_to is
 * the node through which it reached `to` (the predecessor of `from` on the
 * path, or `from` itself for a direct edge). WEFT_ENOMEM changes nothing.
 */
static int weft__runs_before(weft_graph *g, uint32_t to, uint32_t from,
                             uint32_t *via)
{
    size_t sp = 0;
    int rc;

    if ((rc = weft__grow(&g->stack, &g->cap_stack, (size_t)g->nnodes + 1,
                         sizeof *g->stack)) < 0)
        return rc;
    g->epoch++;
    g->marks[from].seen_epoch = g->epoch;
    g->stack[sp++] = from;
    while (sp) {
        uint32_t v = g->stack[--sp];
        const weft__node *nd = &g->nodes[v];
        uint32_t e = 0, x = nd->xin;

        /* Inferred in-edges, then explicit ones. */
        for (;;) {
            uint32_t u;

            if (e < nd->nin)
                u = g->edges[nd->in_first + e++].from;
            else if (x != WEFT__NONE) {
                u = g->xedges[x].from;
                x = g->xedges[x].next;
            } else
                break;
            if (u == to) {
                *via = v;
                return 1;
            }
            if (g->marks[u].seen_epoch == g->epoch)
                continue;
            g->marks[u].seen_epoch = g->epoch;
            g->stack[sp++] = u;
        }
    }
    return 0;
}

int weft_graph_add_edge(weft_graph *g, weft_node from, weft_node to)
{
    uint32_t via = WEFT__NONE;
    const weft__node *t;
    int rc;

    if ((rc = weft__check_graph(g, "weft_graph_add_edge")) < 0)
        return rc;
    if (from >= g->nnodes || to >= g->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_add_edge: node %u does not exist (%u "
                           "nodes)",
                           from >= g->nnodes ? from : to, g->nnodes);
    if (from == to)
        return weft__node_error(WEFT_ECYCLE, g->nodes, from,
                                "an edge from the node to itself");
    t = &g->nodes[to];
    /* An edge that is there already adds nothing. */
    for (uint32_t e = 0; e < t->nin; e++)
        if (g->edges[t->in_first + e].from == from)
            return 0;
    for (uint32_t e = t->xin; e != WEFT__NONE; e = g->xedges[e].next)
        if (g->xedges[e].from == from)
            return 0;
    /* Refused here, the graph unchanged, rather than at instantiate. */
    if ((rc = weft__runs_before(g, to, from, &via)) < 0)
        return rc;
    if (rc && via == from)
        return weft__error(WEFT_ECYCLE,
                           "weft_graph_add_edge: an edge from node %u to "
                           "node %u would close a cycle: node %u already "
                           "runs before node %u (an edge %u -> %u)",
                           from, to, to, from, to, from);
    if (rc)
        return weft__error(WEFT_ECYCLE,
                           "weft_graph_add_edge: an edge from node %u to "
                           "node %u would close a cycle: node %u already "
                           "runs before node %u (through node %u)",
                           from, to, to, from, via);
    if ((rc = weft__grow(&g->xedges, &g->cap_xedges, g->nxedges + 1,
                         sizeof *g->xedges)) < 0)
        return rc;
    g->xedges[g->nxedges] =
        (weft__edge){from, to, WEFT__EXPLICIT, WEFT__NONE, t->xin, 0, 0};
    g->nodes[to].xin = g->nxedges++;
    return 0;
}

int weft_graph_set_native_capture(weft_graph *g, weft_node node, int on)
{
    static const char fn[] = "weft_graph_set_native_capture";
    weft__node *n;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if (node >= g->nnodes)
        return weft__error(WEFT_EINVAL, "%s: node %u does not exist (%u nodes)",
                           fn, node, g->nnodes);
    n = &g->nodes[node];
    if (n->kind != WEFT__NODE_NATIVE || n->u.native.what != WEFT__NATIVE_FN)
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "%s: only nodes of weft_graph_add_native are "
                                "captured",
                                fn);
    if (on != 0 && on != 1)
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "%s: on is %d (0 or 1)", fn, on);
    n->u.native.capture = (uint32_t)on;
    return 0;
}

int weft_graph_set_priority(weft_graph *g, weft_node node,
                            weft_priority priority)
{
    int rc;

    if ((rc = weft__check_graph(g, "weft_graph_set_priority")) < 0)
        return rc;
    if (node >= g->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_set_priority: node %u does not exist "
                           "(%u nodes)",
                           node, g->nnodes);
    if (priority != WEFT_PRIORITY_DEFAULT && priority != WEFT_PRIORITY_HIGH)
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "priority %d is none of weft_priority",
                                (int)priority);
    g->nodes[node].priority = (uint32_t)priority;
    return 0;
}

int weft_graph_set_device(weft_graph *g, weft_node node, const weft_device *dev)
{
    const weft__device *d = weft__device_of(dev);
    weft__node *n;
    int rc;

    if ((rc = weft__check_graph(g, "weft_graph_set_device")) < 0)
        return rc;
    if (node >= g->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_set_device: node %u does not exist (%u "
                           "nodes)",
                           node, g->nnodes);
    n = &g->nodes[node];
    if (!d || d->props.index >= g->rt->ndevices ||
        g->rt->devices[d->props.index] != d)
        return weft__node_error(WEFT_EINVAL, g->nodes, node, "the device is %s",
                                d ? "not one of the graph's runtime" : "NULL");
    if (!weft__node_placed(n))
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "only kernel and native nodes are placed on "
                                "devices");
    if (!weft__node_runs_on(n, g->args, g->bytes, g->rt, d->props.index))
        return weft__node_error(WEFT_ENODEV, g->nodes, node,
                                "the %s has no implementation on device "
                                "%u (%s)",
                                n->kind == WEFT__NODE_KERNEL ? "kernel"
                                                             : "native node",
                                d->props.index, d->name);
    n->device = (int32_t)d->props.index;
    return 0;
}
