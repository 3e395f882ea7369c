/*
 * Launches with no issue (sched/exec.h, weft__exec_fast): host tasks,
 * maps and empty nodes whose ranges are valid on the host, claimed per
 * root and run by the host workers, each starting the nodes its node made
 * ready.
 */
#include "exec.h"

#include "hostwork.h"
#include "plan.h"

#include <limits.h>
#include <string.h>

/*
 * A node's task and its launch count (pending, atomic: predecessors not
 * finished), a cache line each: the workers that finish a node's
 * predecessors count it down at about the same time as their neighbours'
 * successors, which would otherwise share lines.
 */
typedef struct weft__fast_task {
    _Alignas(WEFT__CACHE_LINE) weft__host_task task;
    weft_exec *e;
    uint32_t node;
    uint32_t pending;
} weft__fast_task;

static void weft__fast_run(weft__host_task *t);
static void weft__fast_roots_run(weft__host_task *t);

/*
 * Past this many regions a side (reads, writes) of a root's union becomes
 * its hull: one range from its first byte to its last (weft__side_add).
 */
enum { WEFT__FAST_CLAIM_MAX = 4096 };

/* Room for one more region in sd; -2 past the limit, -1 no memory. */
static int weft__claim_room(weft__fast_side *sd)
{
    if (sd->n >= WEFT__FAST_CLAIM_MAX)
        return -2;
    if (sd->n == sd->cap) {
        uint32_t c = sd->cap ? 2 * sd->cap : 8;
        weft__region *nv = weft__realloc(sd->v, c * sizeof *nv);

        if (!nv)
            return -1;
        sd->v = nv;
        sd->cap = c;
    }
    return 0;
}

/*
 * Add range [lo, hi) to sd's sorted disjoint ranges (followed by its
 * block slices), merging those it touches; -2 past the limit, -1 without
 * memory. A program's accesses come mostly in address order or repeat
 * recent ones: the range the last add fell in (hint) and the one after it
 * are tried first, then the last range, then a binary search.
 */
static int weft__claim_add_range(weft__fast_side *sd, size_t lo, size_t hi)
{
    weft__region *v = sd->v;
    uint32_t a = 0, b = sd->nranges, nr = sd->nranges, k;

    for (k = sd->hint; k < nr && k < sd->hint + 2; k++)
        if (v[k].off <= lo && hi <= v[k].off + v[k].w) {
            sd->hint = k; /* inside one already */
            return 0;
        }
    if (nr && v[nr - 1].off <= lo) {
        a = nr - 1; /* at or after the last range */
    } else {
        while (a < b) { /* the first range that ends at or after lo */
            uint32_t m = a + (b - a) / 2;

            if (v[m].off + v[m].w < lo)
                a = m + 1;
            else
                b = m;
        }
    }
    if (a < nr && v[a].off + v[a].w < lo)
        a++;
    /* ranges [a, k) touch [lo, hi): one range replaces them */
    for (k = a; k < nr && v[k].off <= hi; k++) {
        lo = WEFT__MIN(lo, v[k].off);
        hi = WEFT__MAX(hi, v[k].off + v[k].w);
    }
    if (k == a) { /* none: insert one */
        int rc = weft__claim_room(sd);

        if (rc < 0)
            return rc;
        v = sd->v;
        memmove(v + a + 1, v + a, (sd->n - a) * sizeof *v);
        sd->n++;
        sd->nranges++;
    } else if (k > a + 1) { /* several merge into [a] */
        memmove(v + a + 1, v + k, (sd->n - k) * sizeof *v);
        sd->n -= k - a - 1;
        sd->nranges -= k - a - 1;
    }
    v[a] = weft__region_range(lo, hi - lo);
    sd->hint = a;
    return 0;
}

/* Append a block's slice after the ranges; -2 past the limit, -1. */
static int weft__claim_add_block(weft__fast_side *sd, const weft__region *r)
{
    int rc = weft__claim_room(sd);

    if (rc < 0)
        return rc;
    sd->v[sd->n++] = *r;
    return 0;
}

/* The side becomes the range from its first byte to r's or its last. */
static void weft__side_to_hull(weft__fast_side *sd, const weft__region *r)
{
    size_t lo = r->off, hi = weft__region_end(r);

    for (uint32_t k = 0; k < sd->n; k++) {
        lo = WEFT__MIN(lo, sd->v[k].off);
        hi = WEFT__MAX(hi, weft__region_end(&sd->v[k]));
    }
    sd->v[0] = weft__region_range(lo, hi - lo); /* (at least one) */
    sd->n = sd->nranges = 1;
    sd->hint = 0;
    sd->hull = 1;
}

/*
 * r into the side; 0, or -1 without memory. Past WEFT__FAST_CLAIM_MAX
 * regions (a launch of many small scattered writes) the side becomes its
 * hull, which a launch claims whole where the host can stand for all of
 * it (weft__fast_claim_roots).
 */
static int weft__side_add(weft__fast_side *sd, const weft__region *r)
{
    int rc;

    if (sd->hull) {
        weft__side_to_hull(sd, r);
        return 0;
    }
    rc = r->h == 1 ? weft__claim_add_range(sd, r->off, r->off + r->w)
                   : weft__claim_add_block(sd, r);
    if (rc == -2) {
        weft__side_to_hull(sd, r);
        rc = 0;
    }
    return rc;
}

/*
 * A share of a launch's preparation (weft__fast_prepare): nodes [lo, hi)
 * by index with their accesses (contiguous: a node's follow the
 * previous node's), each node's task and pending count, each access's
 * host address (fast_ptrs: a host copy does not move for its buffer's
 * life) and the share's own per-root unions of the accesses (cl, ncl;
 * slot: root -> its union). Large graphs are cut in shares that the host
 * workers prepare side by side; the unions are merged after.
 */
typedef struct weft__fast_part {
    uint32_t lo, hi;
    uint32_t *slot;
    weft__fast_union *cl;
    uint32_t ncl;
    int ok; /* memory for the unions */
} weft__fast_part;

/*
 * Accesses a share holds at least; at most this many roots, and at least
 * this many workers, for shares (on fewer the workers and the launching
 * thread share the cores: no gain, measured on 2).
 */
enum {
    WEFT__FAST_PART_ACC = 8192,
    WEFT__FAST_PART_ROOTS = 1024,
    WEFT__FAST_PART_WORKERS = 4
};

typedef struct weft__fast_parts {
    weft_exec *e;
    weft__fast_part *v;
} weft__fast_parts;

static void weft__fast_union_free(weft__fast_union *cl, uint32_t n)
{
    for (uint32_t c = 0; cl && c < n; c++) {
        weft__free(cl[c].rd.v);
        weft__free(cl[c].wr.v);
    }
    weft__free(cl);
}

void weft__exec_fast_free_claims(weft_exec *e)
{
    weft__fast_union_free(e->fast_claims, e->fast_nclaims);
    e->fast_claims = NULL;
    e->fast_nclaims = 0;
}

/* Access acc's slices into union c; 0, or -1 without memory. */
static int weft__union_add_access(weft__fast_union *c, const weft__access *acc)
{
    int ok = 1;

    for (size_t sl = 0; ok && sl < acc->slices; sl++) {
        weft__region r = weft__access_slice(acc, sl);

        if (acc->mode & WEFT_READ)
            ok = weft__side_add(&c->rd, &r) == 0;
        if (ok && (acc->mode & WEFT_WRITE))
            ok = weft__side_add(&c->wr, &r) == 0;
    }
    return ok ? 0 : -1;
}

/* One side into another (both of one root); a hull makes a hull. */
static int weft__side_merge(weft__fast_side *to, const weft__fast_side *from)
{
    int ok = 1;

    for (uint32_t k = 0; ok && k < from->n; k++)
        ok = weft__side_add(to, &from->v[k]) == 0;
    if (ok && from->hull && !to->hull)
        weft__side_to_hull(to, &from->v[0]);
    return ok ? 0 : -1;
}

/* Union u's regions into c (both of one root); 0, or -1 without memory. */
static int weft__union_merge(weft__fast_union *c, const weft__fast_union *u)
{
    if (weft__side_merge(&c->rd, &u->rd) < 0 ||
        weft__side_merge(&c->wr, &u->wr) < 0)
        return -1;
    return 0;
}

/* Share k: its nodes' tasks, its accesses' addresses, its unions. */
static void weft__fast_part_run(void *ctx, unsigned k)
{
    weft__fast_parts *ps = ctx;
    weft_exec *e = ps->e;
    weft__fast_part *pt = &ps->v[k];
    uint32_t a0 = e->nodes[pt->lo].acc_first;
    uint32_t a1 = pt->hi < e->nnodes ? e->nodes[pt->hi].acc_first : e->nacc;

    for (uint32_t i = pt->lo; i < pt->hi; i++) {
        e->fast_tasks[i].task.run = weft__fast_run;
        e->fast_tasks[i].task.next = NULL;
        e->fast_tasks[i].e = e;
        e->fast_tasks[i].node = i;
        e->fast_tasks[i].pending = e->pred_first[i + 1] - e->pred_first[i];
    }
    pt->slot = weft__malloc(((size_t)e->nroots + 1) * sizeof *pt->slot);
    pt->cl = weft__calloc((size_t)e->nroots + 1, sizeof *pt->cl);
    pt->ok = pt->slot && pt->cl;
    for (uint32_t r = 0; pt->ok && r < e->nroots; r++)
        pt->slot[r] = UINT32_MAX;
    /* One pass over the accesses: a pass costs its memory traffic. */
    for (uint32_t a = a0; a < a1; a++) {
        const weft__access *acc = &e->acc[a];

        e->fast_ptrs[a] =
            weft__buffer_host(acc->buf->root, weft__acc_origin(acc));
        if (!pt->ok)
            continue;
        if (pt->slot[acc->root] == UINT32_MAX) {
            pt->slot[acc->root] = pt->ncl;
            pt->cl[pt->ncl++].root = acc->root;
        }
        pt->ok = weft__union_add_access(&pt->cl[pt->slot[acc->root]], acc) == 0;
    }
}

/*
 * The shares' unions as the launch's claims (fast_claims), one per root;
 * none where memory ran out: launches claim access by access then.
 */
static void weft__fast_claims_merge(weft_exec *e, weft__fast_part *v,
                                    unsigned np)
{
    weft__fast_union *cl;
    uint32_t *slot, n = 0;
    int ok = 1;

    for (unsigned k = 0; k < np; k++)
        ok = ok && v[k].ok;
    if (ok && np == 1) { /* one share: its unions */
        cl = v[0].cl;
        n = v[0].ncl;
        v[0].cl = NULL;
    } else {
        slot = ok ? v[0].slot : NULL; /* reused: share 0 is merged first */
        cl = ok ? weft__calloc((size_t)e->nroots + 1, sizeof *cl) : NULL;
        ok = cl != NULL;
        for (uint32_t r = 0; ok && r < e->nroots; r++)
            slot[r] = UINT32_MAX;
        for (unsigned k = 0; ok && k < np; k++)
            for (uint32_t c = 0; ok && c < v[k].ncl; c++) {
                const weft__fast_union *u = &v[k].cl[c];

                if (slot[u->root] == UINT32_MAX) {
                    slot[u->root] = n;
                    cl[n++].root = u->root;
                }
                ok = weft__union_merge(&cl[slot[u->root]], u) == 0;
            }
    }
    for (uint32_t k = 0; ok && k < n; k++)
        for (uint32_t w = 0; w < cl[k].wr.n; w++)
            cl[k].updates += cl[k].wr.v[w].h;
    if (!ok) {
        weft__fast_union_free(cl, n);
        cl = NULL;
        n = 0;
        weft_clear_error();
    }
    e->fast_claims = cl;
    e->fast_nclaims = n;
}

/*
 * Whether e's nodes allow it (host tasks, maps and empty nodes, at least
 * one, and host workers), with the per-node state made on first use; 0 if
 * not (or no memory: the issue does it then). A graph of many accesses is
 * prepared by the host workers side by side, in shares of at least
 * WEFT__FAST_PART_ACC accesses, where it names few roots (each share has
 * a slot per root).
 */
static int weft__fast_prepare(weft_exec *e)
{
    uint32_t n = e->nnodes;
    weft__hostwork *hw;
    weft__fast_parts ps = {e, NULL};
    unsigned np = 1;

    if (e->fast)
        return e->fast > 0;
    e->fast = -1;
    /* Host tasks that may fail (and device nodes) need the issue. */
    if (n == 0 || !e->host_only || !(hw = weft__hostwork_get(e->rt)))
        return 0;
    e->fast_tasks =
        weft__calloc_aligned(n, sizeof *e->fast_tasks, WEFT__CACHE_LINE);
    e->fast_roots = weft__malloc((size_t)n * sizeof *e->fast_roots);
    e->fast_nrunners = weft__hostwork_workers(hw);
    e->fast_runners = weft__calloc_aligned(
        e->fast_nrunners + 1, sizeof *e->fast_runners, WEFT__CACHE_LINE);
    e->fast_ptrs = weft__malloc(((size_t)e->nacc + 1) * sizeof *e->fast_ptrs);
    if (e->nroots <= WEFT__FAST_PART_ROOTS &&
        weft__hostwork_workers(hw) >= WEFT__FAST_PART_WORKERS)
        np = WEFT__MAX(1u, WEFT__MIN(weft__hostwork_workers(hw) + 1,
                                     e->nacc / WEFT__FAST_PART_ACC));
    np = WEFT__MIN(np, n);
    ps.v = weft__calloc(np, sizeof *ps.v);
    if (!e->fast_tasks || !e->fast_ptrs || !e->fast_roots || !e->fast_runners ||
        !ps.v) {
        weft__free(ps.v);
        weft_clear_error();
        return 0;
    }
    /* Shares of about as many nodes each (their accesses follow). */
    for (unsigned k = 0; k < np; k++) {
        ps.v[k].lo = (uint32_t)((uint64_t)n * k / np);
        ps.v[k].hi = (uint32_t)((uint64_t)n * (k + 1) / np);
    }
    if (np > 1)
        weft__hostwork_for(hw, np, weft__fast_part_run, &ps);
    else
        weft__fast_part_run(&ps, 0);
    weft__fast_claims_merge(e, ps.v, np);
    for (unsigned k = 0; k < np; k++) {
        weft__free(ps.v[k].slot);
        weft__fast_union_free(ps.v[k].cl, ps.v[k].ncl);
    }
    weft__free(ps.v);
    /* Roots in the issue order: urgent ones (priorities) are claimed first. */
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = e->order[k];

        if (e->pred_first[i + 1] == e->pred_first[i])
            e->fast_roots[e->fast_nroots++] = i;
    }
    /* A DAG has a root; a few chunks per runner, to even the load out. */
    weft__assert(e->fast_nroots > 0);
    e->fast_nrunners = WEFT__MIN(e->fast_nrunners, e->fast_nroots);
    e->fast_chunk =
        WEFT__MAX(1u, WEFT__MIN(64u, e->fast_nroots / (e->fast_nrunners * 8)));
    for (unsigned r = 0; r < e->fast_nrunners; r++) {
        e->fast_runners[r].task.run = weft__fast_roots_run;
        e->fast_runners[r].e = e;
        e->fast_runners[r].node = WEFT__NONE;
    }
    e->fast = 1;
    return 1;
}

/*
 * Under the launch's start, with no root lock held: each root locked in
 * turn, every range read valid on the host and room for the tracker's
 * updates, then (all of them so) what the nodes write marked written on
 * the host, as a handed-over host node's is, and the host addresses
 * taken. 0 if some range is not valid there (nothing changed).
 */
/* Whether the host copy holds every byte of access a (root locked). */
static int weft__acc_valid_host(const weft__access *a)
{
    for (size_t s = 0; s < a->slices; s++) {
        weft__region r = weft__access_slice(a, s);

        if (!weft__buffer_is_valid_region(a->buf->root, WEFT__HOST, &r))
            return 0;
    }
    return 1;
}

/* Cut the tracker at each slice of a written access (root locked). */
static int weft__acc_cut(const weft__access *a)
{
    int rc = 0;

    for (size_t s = 0; s < a->slices && rc == 0; s++) {
        weft__region r = weft__access_slice(a, s);

        rc = weft__buffer_cut_region(a->buf->root, &r);
    }
    return rc;
}

/*
 * weft__fast_claim by the roots' unions: per root, room for the marks,
 * the tracker cut at what is written, what is read valid on the host;
 * then (all of them so) the writes marked, one host writer per root. 1 if
 * made, 0 if the launch must be issued, -1 if a hull was refused (the
 * claim may go access by access).
 */
static int weft__fast_claim_roots(weft_exec *e)
{
    int ok = 1, hull = 1; /* hull: no hull refused */

    for (uint32_t k = 0; k < e->fast_nclaims && ok; k++) {
        const weft__fast_union *c = &e->fast_claims[k];
        weft_buffer *root = e->roots[c->root];

        weft__buffer_lock(root);
        ok = root->mapped_by == NULL && c->updates <= UINT_MAX &&
             weft__buffer_reserve(root, (unsigned)c->updates) == 0;
        /*
         * A hull of writes is marked written whole: right only where the
         * host holds all of it alone already (the bytes between the
         * writes then keep their state). Else, and where a hull of reads
         * is not all valid on the host, the claim goes access by access.
         */
        if (ok && c->wr.hull)
            ok = hull =
                weft__buffer_held_alone_region(root, WEFT__HOST, &c->wr.v[0]);
        for (uint32_t w = 0; w < c->wr.n && ok; w++)
            ok = weft__buffer_cut_region(root, &c->wr.v[w]) == 0;
        for (uint32_t r = 0; r < c->rd.n && ok; r++)
            if (!weft__buffer_is_valid_region(root, WEFT__HOST, &c->rd.v[r])) {
                ok = 0;
                hull = !c->rd.hull;
            }
        weft__buffer_unlock(root);
    }
    if (!ok) {
        weft_clear_error();
        return hull ? 0 : -1; /* -1: a hull refused */
    }
    for (uint32_t k = 0; k < e->fast_nclaims; k++) {
        const weft__fast_union *c = &e->fast_claims[k];
        weft_buffer *root = e->roots[c->root];

        if (!c->wr.n)
            continue;
        weft__buffer_lock(root);
        for (uint32_t w = 0; w < c->wr.n; w++)
            weft__buffer_written_region(root, WEFT__HOST, &c->wr.v[w]);
        __atomic_add_fetch(&root->host_writers, 1, __ATOMIC_RELAXED);
        weft__buffer_unlock(root);
    }
    return 1;
}

static int weft__fast_claim(weft_exec *e)
{
    uint64_t updates = 0;
    int ok = 1;

    if (e->fast_claims) {
        int rc = weft__fast_claim_roots(e);

        if (rc >= 0)
            return rc;
        /* a hull the host cannot stand for: access by access */
    }

    for (uint32_t a = 0; a < e->nacc; a++)
        updates += weft__acc_updates(&e->acc[a]);
    ok = updates <= UINT_MAX;
    for (uint32_t r = 0; r < e->nroots && ok; r++) {
        weft_buffer *root = e->roots[r];

        weft__buffer_lock(root);
        ok = root->mapped_by == NULL &&
             weft__buffer_reserve(root, (unsigned)updates) == 0;
        weft__buffer_unlock(root);
    }
    for (uint32_t a = 0; a < e->nacc && ok; a++) {
        weft_buffer *root = e->acc[a].buf->root;

        weft__buffer_lock(root);
        /* the later marks of what it writes cannot fail then */
        if (e->acc[a].mode & WEFT_WRITE)
            ok = weft__acc_cut(&e->acc[a]) == 0;
        if (ok && (e->acc[a].mode & WEFT_READ))
            ok = weft__acc_valid_host(&e->acc[a]);
        weft__buffer_unlock(root);
    }
    if (!ok) {
        weft_clear_error();
        return 0;
    }
    for (uint32_t a = 0; a < e->nacc; a++) {
        weft_buffer *root = e->acc[a].buf->root;

        if (!(e->acc[a].mode & WEFT_WRITE))
            continue;
        weft__buffer_lock(root);
        weft__acc_written(&e->acc[a], WEFT__HOST, 1);
        __atomic_add_fetch(&root->host_writers, 1, __ATOMIC_RELAXED);
        weft__buffer_unlock(root);
    }
    return 1;
}

int weft__exec_fast(weft_exec *e, int shared)
{
    weft__hostwork *hw;
    weft__fast_task *runners;
    unsigned nrunners;

    if (shared || e->run.timed || !weft__fast_prepare(e) ||
        !weft__fast_claim(e))
        return 0;
    hw = weft__hostwork_get(e->rt);
    weft__debug("sched", "a launch of %u host nodes with no issue", e->nnodes);
    weft__lanes_host_effect(&e->lanes);
    __atomic_store_n(&e->fast_remaining, e->nnodes + e->fast_nrunners,
                     __ATOMIC_RELAXED);
    __atomic_store_n(&e->fast_next_root, 0, __ATOMIC_RELAXED);
    /* The plan's, which a re-placement between launches may replace. */
    weft__plan_succs(e->plan, &e->fast_succ_first, &e->fast_succs);
    weft__exec_leave(e);
    /*
     * The runners go to the workers (the submits publish the state above);
     * the engine thread returns. The pending counts are as the previous
     * launch's runs of the nodes left them (or prepare): each at its
     * predecessors, which the end of that launch made visible here.
     * Once the last runner is submitted the launch may end: e is not read
     * again.
     */
    runners = e->fast_runners;
    nrunners = e->fast_nrunners;
    for (unsigned r = 0; r < nrunners; r++)
        weft__hostwork_submit(hw, -1, &runners[r].task);
    return 1;
}

/*
 * On a host worker: node t's function, then its successors counted down:
 * those it made ready go to the workers but the first, which this worker
 * runs next. Counting remaining down is the last look at e but for the
 * worker that takes it to zero, which ends the launch. The workers only
 * read what the host had seen when the launch started (weft__exec_take):
 * a host-only launch moves no device's order; the last one hands it on.
 */
/* n of the launch's count done; the one that ends it ends the launch. */
static int weft__fast_done(weft_exec *e, uint32_t n)
{
    if (__atomic_sub_fetch(&e->fast_remaining, n, __ATOMIC_ACQ_REL))
        return 0;
    /* The last: every write is done and visible here. */
    if (e->fast_claims) {
        for (uint32_t k = 0; k < e->fast_nclaims; k++)
            if (e->fast_claims[k].wr.n)
                __atomic_sub_fetch(
                    &e->roots[e->fast_claims[k].root]->host_writers, 1,
                    __ATOMIC_RELEASE);
    } else {
        for (uint32_t a = 0; a < e->nacc; a++)
            if (e->acc[a].mode & WEFT_WRITE)
                __atomic_sub_fetch(&e->acc[a].buf->root->host_writers, 1,
                                   __ATOMIC_RELEASE);
    }
    weft__exec_fast_end(e);
    return 1;
}

/*
 * Node i and the successors it makes ready, one after another (the others
 * go to the workers); how many nodes it ran. Those are counted off
 * remaining by the caller, once for the whole chain (a count every worker
 * changes is a contended line): the launch cannot end before, so e stays
 * valid to here.
 */
static uint32_t weft__fast_chain(weft_exec *e, uint32_t i);

static void weft__fast_run(weft__host_task *t)
{
    weft__fast_task *ft = (weft__fast_task *)(void *)t;
    weft_exec *e = ft->e;

    weft__exec_take(e);
    weft__fast_done(e, weft__fast_chain(e, ft->node));
}

/*
 * A runner: roots claimed a chunk at a time until none is left, then the
 * runner's own count with its chains' (so that no runner looks at e after
 * the end).
 */
static void weft__fast_roots_run(weft__host_task *t)
{
    weft_exec *e = ((weft__fast_task *)(void *)t)->e;
    uint32_t n = e->fast_nroots, chunk = e->fast_chunk, ran = 1;

    weft__exec_take(e);
    for (;;) {
        uint32_t k =
            __atomic_fetch_add(&e->fast_next_root, chunk, __ATOMIC_RELAXED);

        if (k >= n)
            break;
        for (uint32_t j = k; j < n && j < k + chunk; j++)
            ran += weft__fast_chain(e, e->fast_roots[j]);
    }
    weft__fast_done(e, ran);
}

static uint32_t weft__fast_chain(weft_exec *e, uint32_t i)
{
    weft__hostwork *hw = weft__hostwork_get(e->rt);
    uint32_t ran = 0;

    for (;;) {
        const weft__node *nd = &e->nodes[i];
        void **ptrs = &e->fast_ptrs[nd->acc_first];
        uint32_t next = WEFT__NONE,
                 np = e->pred_first[i + 1] - e->pred_first[i];

        /*
         * Every predecessor has counted i down: nothing else touches its
         * count in this launch, which is set back for the next one here
         * (no pass over every node at each launch).
         */
        if (np)
            __atomic_store_n(&e->fast_tasks[i].pending, np, __ATOMIC_RELAXED);
        if (nd->kind == WEFT__NODE_HOST)
            nd->u.host.fn(ptrs, nd->u.host.user);
        else if (nd->kind == WEFT__NODE_MAP)
            nd->u.map.fn(ptrs[0], e->acc[nd->acc_first].size, nd->u.map.user);
        ran++;
        for (uint32_t k = e->fast_succ_first[i]; k < e->fast_succ_first[i + 1];
             k++) {
            uint32_t s = e->fast_succs[k];

            if (__atomic_sub_fetch(&e->fast_tasks[s].pending, 1,
                                   __ATOMIC_ACQ_REL))
                continue;
            if (next == WEFT__NONE)
                next = s;
            else
                weft__hostwork_submit(hw, -1, &e->fast_tasks[s].task);
        }
        if (next == WEFT__NONE)
            return ran;
        i = next;
    }
}
