/*
 * The host driver's capture (host_graph.c) against a model: random mixes
 * of nodes in queue order, nodes that graph_order gave predecessors of
 * their own (random sets, repeats, other queues' nodes), event records,
 * waits and joins across 3 queues, graph_wait_later, and external wait
 * and record nodes. Two models are checked against every captured graph:
 *  - the exact edges each node gets (a queue's front as a set, each
 *    edge once; before a record on a queue whose front holds more than
 *    16 nodes, a barrier node that waits for them all becomes the front);
 *  - what each node must follow, transitively, against the closure of
 *    the graph's edges (and weft__host_graph_reaches on a sample): no
 *    missing and no extra ordering.
 * Then every allocation of a fixed scenario fails in turn: a graph that
 * still comes out must match the model of the calls that took. And a
 * wide front recorded and waited for again and again keeps the edges
 * linear in the nodes.
 */
#include "wt_test.h"

#include "drivers/driver.h"
#include "drivers/host/host_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define OK(call) assert_int_equal((call), 0)

enum { MAXN = 1024, W = MAXN / 64, NQ = 3, NE = 4, NONE = -1 };

typedef struct bits {
    uint64_t w[W];
} bits;

static void b_set(bits *b, int i)
{
    b->w[i / 64] |= 1ull << (i % 64);
}
static int b_has(const bits *b, int i)
{
    return (b->w[i / 64] >> (i % 64)) & 1;
}
static void b_or(bits *a, const bits *b)
{
    for (int i = 0; i < W; i++)
        a->w[i] |= b->w[i];
}
static void b_andnot(bits *a, const bits *b)
{
    for (int i = 0; i < W; i++)
        a->w[i] &= ~b->w[i];
}

typedef struct mqueue {
    int joined;
    bits F, P;   /* impl model: front, pend */
    bits A, S;   /* semantic: all it must precede-follow, pend */
    int ordered; /* graph_order given for its next node */
    bits O;
    int ext;
} mqueue;

typedef struct mevent {
    int recorded; /* in this capture */
    bits D, SD;   /* impl deps, semantic deps */
} mevent;

typedef struct model {
    int n;
    mqueue q[NQ];
    mevent e[NE];
    bits dep[MAXN]; /* impl: a node's exact deps */
    bits anc[MAXN]; /* semantic: what it follows, transitively */
} model;

static uint64_t rs;
static uint32_t rnd(uint32_t n)
{
    rs ^= rs << 13;
    rs ^= rs >> 7;
    rs ^= rs << 17;
    return (uint32_t)(rs % n);
}

typedef struct env {
    weft__platform **platforms;
    unsigned nplatforms;
    weft__context *ctx;
    weft__queue *q[NQ];
    weft__event *e[NE], *xev;
    weft__mem *m;
} env;

static env E;
static model M;
static int max_front;
static int phases; /* grow and shrink fronts in turn, this many nodes */
static uint32_t front_bias = 4; /* in 10: an order pick from the front */

static int setup(void **state)
{
    weft__driver_config cfg = {NULL, 1, 2, 0};

    (void)state;
    if (weft__driver_host.platforms_open(&cfg, &E.platforms, &E.nplatforms))
        return -1;
    if (weft__drv_context_create(E.platforms[0]->devices[0], &E.ctx))
        return -1;
    for (int i = 0; i < NQ; i++)
        if (weft__drv_queue_create(E.ctx, NULL, &E.q[i]))
            return -1;
    for (int i = 0; i < NE; i++)
        if (weft__drv_event_create(E.ctx, 0, &E.e[i]))
            return -1;
    if (weft__drv_event_create(E.ctx, 0, &E.xev) ||
        weft__drv_mem_alloc(E.ctx, 64, &E.m))
        return -1;
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft__fault_disarm();
    weft__drv_mem_free(E.m);
    for (int i = 0; i < NE; i++)
        weft__drv_event_destroy(E.e[i]);
    weft__drv_event_destroy(E.xev);
    for (int i = 0; i < NQ; i++)
        weft__drv_queue_destroy(E.q[i]);
    if (weft__drv_context_destroy(E.ctx))
        return -1;
    weft__driver_host.platforms_close(E.platforms, E.nplatforms);
    return 0;
}

/* ---- model steps: each returns the driver's rc; model changes on 0 --- */

static int do_node(int qi, int kind /* 0 fill, 1 wait ext, 2 record ext */)
{
    mqueue *q = &M.q[qi];
    int self = M.n, rc;
    uint32_t got = UINT32_MAX;
    bits dep, must;
    static const uint32_t zero = 0;

    if (kind == 0)
        rc = weft__drv_fill(E.q[qi], E.m, 0, &zero, 4, 4);
    else if (kind == 1)
        rc = weft__driver_host.graph_wait_external(E.q[qi], E.xev);
    else
        rc = weft__driver_host.graph_record_external(E.xev, E.q[qi]);
    if (rc < 0)
        return rc;
    if (weft__drv_graph_node_last(E.q[qi], &got) < 0 || got != (uint32_t)self)
        return 1; /* the capture broke (OOM pass only) */
    memset(&dep, 0, sizeof dep);
    memset(&must, 0, sizeof must);
    if (q->ordered) {
        b_or(&dep, &q->O);
        b_or(&must, &q->O);
    } else {
        b_or(&dep, &q->F);
        b_or(&must, &q->A);
    }
    b_or(&dep, &q->P);
    b_or(&must, &q->S);
    if (q->ext != NONE) {
        b_set(&dep, q->ext);
        b_set(&must, q->ext);
    }
    M.dep[self] = dep;
    memset(&M.anc[self], 0, sizeof(bits));
    for (int v = 0; v < self; v++)
        if (b_has(&must, v)) {
            b_set(&M.anc[self], v);
            b_or(&M.anc[self], &M.anc[v]);
        }
    if (kind == 1)
        q->ext = self;
    if (q->ordered)
        b_andnot(&q->F, &q->O);
    else
        memset(&q->F, 0, sizeof q->F);
    b_set(&q->F, self);
    b_set(&q->A, self);
    memset(&q->P, 0, sizeof q->P);
    memset(&q->S, 0, sizeof q->S);
    q->ordered = 0;
    memset(&q->O, 0, sizeof q->O);
    M.n++;
    {
        int cnt = 0;

        for (int k = 0; k <= self; k++)
            cnt += b_has(&q->F, k);
        if (cnt > max_front)
            max_front = cnt;
    }
    return 0;
}

static int do_order(int qi, const uint32_t *v, unsigned nv)
{
    mqueue *q = &M.q[qi];
    int rc = weft__drv_graph_order(E.q[qi], v, nv);

    if (rc < 0)
        return rc;
    q->ordered = 1;
    memset(&q->O, 0, sizeof q->O);
    for (unsigned i = 0; i < nv; i++)
        b_set(&q->O, (int)v[i]);
    return 0;
}

/* The nodes of b below M.n. */
static int b_count(const bits *b)
{
    int cnt = 0;

    for (int k = 0; k < M.n; k++)
        cnt += b_has(b, k);
    return cnt;
}

static int do_record(int ei, int qi)
{
    mqueue *q = &M.q[qi];
    int rc = weft__drv_event_record(E.e[ei], E.q[qi]);

    if (rc < 0)
        return rc;
    if (b_count(&q->F) > 16) {
        /* The barrier: after the whole front, then the front alone. */
        int self = M.n;

        M.dep[self] = q->F;
        memset(&M.anc[self], 0, sizeof(bits));
        for (int v = 0; v < self; v++)
            if (b_has(&q->F, v)) {
                b_set(&M.anc[self], v);
                b_or(&M.anc[self], &M.anc[v]);
            }
        memset(&q->F, 0, sizeof q->F);
        b_set(&q->F, self);
        b_set(&q->A, self);
        M.n++;
    }
    M.e[ei].recorded = 1;
    M.e[ei].D = M.q[qi].F;
    b_or(&M.e[ei].D, &M.q[qi].P);
    M.e[ei].SD = M.q[qi].A;
    b_or(&M.e[ei].SD, &M.q[qi].S);
    return 0;
}

static int do_wait(int qi, int ei)
{
    mqueue *q = &M.q[qi];
    int rc = weft__drv_queue_wait_event(E.q[qi], E.e[ei]);

    if (rc < 0)
        return rc;
    if (!q->joined) {
        memset(q, 0, sizeof *q);
        q->joined = 1;
        q->ext = NONE;
        q->P = M.e[ei].D;
        q->S = M.e[ei].SD;
    } else {
        b_or(&q->P, &M.e[ei].D);
        b_or(&q->S, &M.e[ei].SD);
    }
    return 0;
}

static int do_wait_later(int qi, int ei)
{
    int rc = weft__drv_graph_wait_later(E.q[qi], E.e[ei]);

    if (rc < 0)
        return rc;
    b_or(&M.q[qi].F, &M.e[ei].D);
    b_or(&M.q[qi].A, &M.e[ei].SD);
    return 0;
}

static void model_begin(void)
{
    memset(&M, 0, sizeof M);
    M.q[0].joined = 1;
    for (int i = 0; i < NQ; i++)
        M.q[i].ext = NONE;
}

/* A random predecessor set for q's next node (may repeat nodes). */
static unsigned pick_order(int qi, uint32_t *v)
{
    unsigned nv = rnd(10) < 3 ? 0 : 1 + rnd(front_bias > 6 ? 5 : 4);

    if (!M.n)
        return 0;
    if (phases && (M.n / phases) % 4 == 0)
        return 0; /* the front grows */
    for (unsigned i = 0; i < nv; i++) {
        uint32_t r = rnd(10);

        if (r < front_bias) { /* a node of q's front (drops it) */
            int cnt = 0, pick;

            for (int k = 0; k < M.n; k++)
                cnt += b_has(&M.q[qi].F, k);
            if (cnt) {
                pick = (int)rnd((uint32_t)cnt);
                for (int k = 0; k < M.n; k++)
                    if (b_has(&M.q[qi].F, k) && pick-- == 0) {
                        v[i] = (uint32_t)k;
                        break;
                    }
                continue;
            }
        }
        if (r < 7)
            v[i] =
                (uint32_t)(M.n - 1 - (int)rnd((uint32_t)(M.n < 8 ? M.n : 8)));
        else
            v[i] = rnd((uint32_t)M.n);
    }
    if (nv > 1 && rnd(4) == 0)
        v[nv - 1] = v[0]; /* a duplicate */
    return nv;
}

/* One random step; rc of the driver call (0 where nothing was called). */
static int step(const unsigned *wt)
{
    unsigned tot = 0, r;
    int qi = (int)rnd(NQ), ei = (int)rnd(NE);
    uint32_t v[8];
    unsigned nv;

    for (int i = 0; i < 7; i++)
        tot += wt[i];
    r = rnd(tot);
    if (!M.q[qi].joined) {
        /* join through a recorded event, if any */
        if (!M.e[ei].recorded)
            return 0;
        return do_wait(qi, ei);
    }
    if (r < wt[0])
        return do_node(qi, 0);
    r -= wt[0];
    if (r < wt[1]) {
        int rc;

        nv = pick_order(qi, v);
        if ((rc = do_order(qi, v, nv)) < 0)
            return rc;
        return rnd(5) == 0 ? 0
                           : do_node(qi, rnd(20) == 0 ? 1 + (int)rnd(2) : 0);
    }
    r -= wt[1];
    if (r < wt[2])
        return do_record(ei, qi);
    r -= wt[2];
    if (r < wt[3])
        return M.e[ei].recorded ? do_wait(qi, ei) : 0;
    r -= wt[3];
    if (r < wt[4])
        return M.e[ei].recorded ? do_wait_later(qi, ei) : 0;
    r -= wt[4];
    if (r < wt[5])
        return do_node(qi, 1 + (int)rnd(2));
    /* an order alone (replaced or used later) */
    nv = pick_order(qi, v);
    return do_order(qi, v, nv);
}

static void check_graph(void *graph)
{

    static bits clo[MAXN];

    assert_int_equal(weft__host_graph_nodes(graph), (size_t)M.n);
    for (int i = 0; i < M.n; i++) {
        bits got;
        size_t nd;
        const uint32_t *deps = weft__host_graph_deps(graph, (size_t)i, &nd);

        memset(&got, 0, sizeof got);
        memset(&clo[i], 0, sizeof clo[i]);
        for (size_t k = 0; k < nd; k++) {
            uint32_t d = deps[k];

            if (d >= (uint32_t)i)
                fail_msg("node %d waits for %u (not earlier)", i, d);
            if (b_has(&got, (int)d))
                fail_msg("node %d waits for %u twice", i, d);
            b_set(&got, (int)d);
            b_set(&clo[i], (int)d);
            b_or(&clo[i], &clo[d]);
        }
        for (int d = 0; d < i; d++) {
            if (b_has(&M.dep[i], d) && !b_has(&got, d))
                fail_msg("node %d: missing edge from %d (impl model)", i, d);
            if (!b_has(&M.dep[i], d) && b_has(&got, d))
                fail_msg("node %d: extra edge from %d (impl model)", i, d);
            if (b_has(&M.anc[i], d) && !b_has(&clo[i], d))
                fail_msg("node %d does not follow %d: MISSING ORDER", i, d);
            if (!b_has(&M.anc[i], d) && b_has(&clo[i], d))
                fail_msg("node %d follows %d needlessly", i, d);
        }
    }
    for (int s = 0; s < 30 && M.n > 1; s++) {
        int to = 1 + (int)rnd((uint32_t)M.n - 1), from = (int)rnd((uint32_t)to);

        assert_int_equal(
            weft__host_graph_reaches(graph, (uint32_t)from, (uint32_t)to),
            b_has(&clo[to], from));
    }
}

static void random_captures(void **state)
{
    unsigned ncap =
        getenv("CAPTURE_COUNT") ? (unsigned)atoi(getenv("CAPTURE_COUNT")) : 400;
    void *old = NULL;
    unsigned long nodes = 0;

    (void)state;
    rs = getenv("CAPTURE_SEED") ? strtoull(getenv("CAPTURE_SEED"), NULL, 0)
                                : 0x9e3779b97f4a7c15ull;
    for (unsigned c = 0; c < ncap; c++) {
        unsigned wt[7];
        int target = 1 + (int)rnd(c % 4 == 0 ? 900 : 200);
        void *g = NULL;
        int updated;

        /* a mix per capture: some all ordered-wide, some event heavy */
        for (int i = 0; i < 7; i++)
            wt[i] = rnd(10);
        wt[1] += c % 3 == 0 ? 30 : 0;
        wt[0] += 1;
        front_bias = 4;
        phases = 0;
        if (c % 5 == 1) { /* wide then narrowing fronts: compaction */
            wt[0] = 0;
            wt[1] = 40;
            wt[2] = wt[2] % 3;
            front_bias = 6 + rnd(4);
            phases = 20 + (int)rnd(60);
            wt[5] = 0;
        }
        model_begin();
        OK(weft__driver_host.graph_begin(E.q[0]));
        for (int guard = 0; M.n < target && guard < 20 * target + 100; guard++)
            assert_int_equal(step(wt), 0);
        OK(weft__driver_host.graph_end(E.q[0], old, &g, &updated));
        assert_non_null(g);
        check_graph(g);
        nodes += (unsigned long)M.n;
        if (rnd(2)) {
            old = g;
        } else {
            weft__driver_host.graph_destroy(g);
            old = NULL;
        }
    }
    weft__driver_host.graph_destroy(old);
    printf("# %u captures, %lu nodes checked, largest front %d\n", ncap, nodes,
           max_front);
}

/* A fixed scenario with allocation n failing; returns the graph or NULL. */
static void oom_run(const unsigned *wt, uint64_t seed, int nodes, int ph,
                    uint32_t bias)
{
    int fired = 0, ok_graphs = 0;

    for (long n = 1;; n++) {
        void *g = NULL;
        int rc = 0, erc, broke = 0;

        rs = seed;
        phases = ph;
        front_bias = bias;
        model_begin();
        weft__fault_arm(n, "malloc");
        if ((rc = weft__driver_host.graph_begin(E.q[0])) < 0) {
            weft__fault_disarm();
            fired++;
            continue;
        }
        for (int guard = 0; M.n < nodes && guard < 20 * nodes && rc == 0;
             guard++)
            rc = step(wt);
        broke = rc > 0;
        erc = weft__driver_host.graph_end(E.q[0], NULL, &g, NULL);
        if (!weft__fault_fired()) {
            weft__fault_disarm();
            OK(rc);
            OK(erc);
            check_graph(g);
            weft__driver_host.graph_destroy(g);
            break;
        }
        weft__fault_disarm();
        fired++;
        if (broke)
            assert_true(erc < 0); /* a broken capture makes no graph */
        if (erc == 0) {
            ok_graphs++;
            check_graph(g); /* what took is all there, and only that */
            weft__driver_host.graph_destroy(g);
        }
        /* every queue left the capture */
        OK(weft__drv_queue_sync(E.q[0]));
        OK(weft__drv_queue_sync(E.q[1]));
        OK(weft__drv_queue_sync(E.q[2]));
    }
    printf("# %d allocations failed in turn, %d still made a graph\n", fired,
           ok_graphs);
}

static void oom_captures(void **state)
{
    static const unsigned mixed[7] = {3, 8, 3, 3, 3, 1, 1};
    static const unsigned wide[7] = {0, 40, 1, 2, 3, 0, 2};

    (void)state;
    oom_run(mixed, 12345, 300, 0, 4);
    oom_run(wide, 777, 500, 30, 8);
    oom_run(wide, 778, 700, 50, 7);
    phases = 0;
    front_bias = 4;
}

/* N roots (graph_order, no edges) on q0, each followed by a record that
 * q1 waits for and an unordered node on q1: capture time and edges. */
static void wide_front_records(void **state)
{
    static const uint32_t zero = 0;

    (void)state;
    for (int n = 1000; n <= 8000; n *= 2) {
        struct timespec t0, t1;
        void *g = NULL;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        OK(weft__driver_host.graph_begin(E.q[0]));
        for (int i = 0; i < n; i++) {
            OK(weft__drv_graph_order(E.q[0], NULL, 0));
            OK(weft__drv_fill(E.q[0], E.m, 0, &zero, 4, 4));
            OK(weft__drv_event_record(E.e[0], E.q[0]));
            OK(weft__drv_queue_wait_event(E.q[1], E.e[0]));
            OK(weft__drv_fill(E.q[1], E.m, 4, &zero, 4, 4));
        }
        OK(weft__driver_host.graph_end(E.q[0], NULL, &g, NULL));
        clock_gettime(CLOCK_MONOTONIC, &t1);
        printf("# %d roots + records: %zu nodes, %zu edges, %.1f ms\n", n,
               weft__host_graph_nodes(g), weft__host_graph_edges(g),
               (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6);
        /* Each root joined by one barrier; each q1 node after the one
         * before and what q0's record came after: the barrier and at
         * most 16 roots since. Linear, not quadratic (8,000 rounds made
         * 32 million edges when a record took the whole front). */
        assert_true(weft__host_graph_edges(g) <= (size_t)20 * n);
        weft__driver_host.graph_destroy(g);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(random_captures),
        cmocka_unit_test(oom_captures),
        cmocka_unit_test(wide_front_records),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
