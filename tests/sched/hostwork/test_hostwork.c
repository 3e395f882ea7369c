/*
 * Maps and host tasks on the host workers, on the first device of
 * WEFT_DEVICES (host, sim with real data, PoCL), with two workers:
 * two independent host nodes of one launch run at the same time; a host
 * node's successors see what it wrote (write-only over bytes a device
 * wrote last included); device work is issued while a host node runs; a
 * failed node cancels the host nodes after it only; several executable
 * graphs launched at once from several threads all end right; a
 * successor a worker keeps for itself is taken by another worker; a
 * launch's start wakes every sleeping worker.
 *
 * Nothing here measures time: two nodes prove that they overlap by each
 * waiting, with a generous limit, until the other has started.
 */
#include "wt_test.h"

#include "sched/exec.h"
#include "wt_kernels.h"
#include "wt_devices.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_advance, *k_addone;

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    if (wt_kernels_module(devs.rt, &mod) < 0 ||
        weft_module_get_kernel(mod, "advance", &k_advance) < 0 ||
        weft_module_get_kernel(mod, "addone", &k_addone) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    printf("# device 0: %s (%s)\n", wt_device(&devs, 0)->name,
           wt_device(&devs, 0)->drv->name);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod);
    return weft_runtime_destroy(devs.rt);
}

/* ---- a meeting point for host nodes ------------------------------------ */

enum { MEET_SECONDS = 30 };

typedef struct meeting {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned started; /* a bit per party */
} meeting;

static meeting meet = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

/* Party `me` has started; wait (MEET_SECONDS at most) for every party in
 * `others`. 1 if they came. */
static int meet_wait(unsigned me, unsigned others)
{
    struct timespec until;
    int rc = 0;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += MEET_SECONDS;
    pthread_mutex_lock(&meet.lock);
    meet.started |= me;
    pthread_cond_broadcast(&meet.cond);
    while ((meet.started & others) != others && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&meet.cond, &meet.lock, &until);
    rc = (meet.started & others) == others;
    pthread_mutex_unlock(&meet.lock);
    return rc;
}

static void meet_reset(void)
{
    pthread_mutex_lock(&meet.lock);
    meet.started = 0;
    pthread_mutex_unlock(&meet.lock);
}

/* A map that meets the other party: user is a party, with the result. */
typedef struct party {
    unsigned me, others;
    int met;
    uint32_t first; /* the map's first word when it ran */
} party;

static void map_meet(void *ptr, size_t size, void *user)
{
    party *p = user;

    (void)size;
    p->first = *(const uint32_t *)ptr;
    p->met = meet_wait(p->me, p->others);
}

/* ---- the tests ---------------------------------------------------------- */

/* A host task: out[0] = in[0] + in[1] + 1 (ins absent read as 0). */
static void task_sum(void *const *ptrs, void *user)
{
    const unsigned *n = user; /* accesses: *n inputs, then the output */
    uint32_t sum = 1;

    for (unsigned i = 0; i < *n; i++)
        sum += *(const uint32_t *)ptrs[i];
    *(uint32_t *)ptrs[*n] = sum;
}

static void task_inc(void *const *ptrs, void *user)
{
    (void)user;
    *(uint32_t *)ptrs[0] += 1;
}

static void map_twice(void *ptr, size_t size, void *user)
{
    (void)size;
    (void)user;
    *(uint32_t *)ptr *= 2;
}

/* One device kernel advances the uint32 at off of b k times, and ends. */
static void advance_on_device(weft_buffer *b, size_t off, uint32_t k)
{
    weft_arg a[] = {weft_arg_buffer(b, off, 4, WEFT_READ_WRITE),
                    weft_arg_u32(k), weft_arg_i64(1)};
    weft_graph *g;
    weft_exec *e;

    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_kernel(g, k_advance, weft_dims1(1), a, 3, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
}

/*
 * A graph of host tasks, maps and empty nodes alone (weft__exec_fast: no
 * issue, the workers start what each node made ready): a diamond, a chain
 * and a fan over cells of one buffer, relaunched; every result is the
 * sequential one, the stats count every node, and a launch after a device
 * kernel wrote a cell (its host copy stale: the issue brings it back)
 * is right too.
 */
static void test_host_only_graph(void **state)
{
    enum { CELLS = 12 };
    static const unsigned zero = 0, one = 1, two = 2;
    uint32_t init[CELLS], got[CELLS], want[CELLS];
    weft_buffer *b, *cb; /* cb: the chain's cell, which a kernel also writes */
    weft_graph *g;
    weft_exec *e;
    weft_exec_stats st;
    weft_node n0, n1;

    (void)state;
    for (unsigned i = 0; i < CELLS; i++)
        init[i] = i;
    check(weft_buffer_create(devs.rt, sizeof init, &b));
    check(weft_buffer_write(b, 0, init, sizeof init));
    check(weft_buffer_create(devs.rt, 4, &cb));
    check(weft_buffer_write(cb, 0, &init[4], 4));
    check(weft_graph_create(devs.rt, &g));
#define CELL(i, m) weft_access_range(b, (i)*4, 4, (m))
    {
        /* diamond: 1 = 0 + 1, 2 = 0 + 1 (both after 0), 3 = 1 + 2 */
        weft_access_desc a0[] = {CELL(0, WEFT_WRITE)};
        weft_access_desc a1[] = {CELL(0, WEFT_READ), CELL(1, WEFT_WRITE)};
        weft_access_desc a2[] = {CELL(0, WEFT_READ), CELL(2, WEFT_WRITE)};
        weft_access_desc a3[] = {CELL(1, WEFT_READ), CELL(2, WEFT_READ),
                                 CELL(3, WEFT_WRITE)};

        check(weft_graph_add_host(g, task_sum, (void *)&zero, a0, 1, &n0));
        check(weft_graph_add_host(g, task_sum, (void *)&one, a1, 2, NULL));
        check(weft_graph_add_host(g, task_sum, (void *)&one, a2, 2, NULL));
        check(weft_graph_add_host(g, task_sum, (void *)&two, a3, 3, NULL));
    }
    /* a chain through cb, with a map in it */
    for (int k = 0; k < 5; k++) {
        weft_access_desc a[] = {weft_access_range(cb, 0, 4, WEFT_READ_WRITE)};

        check(weft_graph_add_host(g, task_inc, NULL, a, 1, NULL));
        check(weft_graph_add_map(g, cb, 0, 4, WEFT_READ_WRITE, map_twice, NULL,
                                 NULL));
    }
    /* a fan: cells 5..11 each from cell 3, joined by an empty node */
    check(weft_graph_add_empty(g, &n1));
    for (unsigned c = 5; c < CELLS; c++) {
        weft_access_desc a[] = {CELL(3, WEFT_READ), CELL(c, WEFT_WRITE)};
        weft_node t;

        check(weft_graph_add_host(g, task_sum, (void *)&one, a, 2, &t));
        check(weft_graph_add_edge(g, t, n1));
    }
#undef CELL
    check(weft_graph_instantiate(g, NULL, &e));
    /* The sequential result, from init, once per launch. */
    memcpy(want, init, sizeof want);
    for (int launch = 1; launch <= 6; launch++) {
        if (launch == 4) {
            /* A device kernel advances cb first: the host's copy of it is
             * stale, and this launch must bring it back. */
            advance_on_device(cb, 0, 5);
            want[4] = wt_advance_value(want[4], 5);
        }
        want[0] = 1;
        want[1] = want[0] + 1;
        want[2] = want[0] + 1;
        want[3] = want[1] + want[2] + 1;
        for (int k = 0; k < 5; k++)
            want[4] = (want[4] + 1) * 2;
        for (unsigned c = 5; c < CELLS; c++)
            want[c] = want[3] + 1;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        memset(&st, 0, sizeof st);
        st.size = sizeof st;
        check(weft_exec_get_stats(e, &st));
        assert_int_equal(st.nodes, 4 + 10 + 1 + (CELLS - 5));
        check(weft_buffer_read(b, 0, got, sizeof got));
        check(weft_buffer_read(cb, 0, &got[4], 4));
        for (unsigned c = 0; c < CELLS; c++)
            if (got[c] != want[c])
                fail_msg("launch %d: cell %u is %u, not %u", launch, c, got[c],
                         want[c]);
    }
    /* Every launch but the fourth went with no issue (weft__exec_fast),
     * claiming each root's union of ranges. */
    pthread_mutex_lock(&e->lock);
    assert_int_equal(e->fast_launches, 5);
    assert_non_null(e->fast_claims);
    pthread_mutex_unlock(&e->lock);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    check(weft_buffer_destroy(cb));
}

/*
 * Host tasks on more disjoint ranges of one buffer than a claim keeps as
 * a union (WEFT__FAST_CLAIM_MAX): launches still go with no issue,
 * claiming the hull of the ranges (the host holds all of it alone); after
 * a device wrote some of the ranges the launch is issued (the host copy
 * of those is stale) and right, and the launch after it, the host alone
 * again, goes with no issue.
 */
enum { SPREAD = 5000 };

static void test_host_only_many_ranges(void **state)
{
    static uint32_t want[2 * SPREAD], got[2 * SPREAD];
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    check(weft_buffer_create(devs.rt, sizeof got, &b));
    for (unsigned i = 0; i < 2 * SPREAD; i++)
        want[i] = i;
    check(weft_buffer_write(b, 0, want, sizeof want));
    check(weft_graph_create(devs.rt, &g));
    /* every other cell: SPREAD ranges that do not touch */
    for (unsigned i = 0; i < SPREAD; i++) {
        weft_access_desc a[] = {
            weft_access_range(b, (size_t)2 * i * 4, 4, WEFT_READ_WRITE)};

        check(weft_graph_add_host(g, task_inc, NULL, a, 1, NULL));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    for (int launch = 1; launch <= 4; launch++) {
        if (launch == 3) {
            /* a device advances cell 0 first */
            advance_on_device(b, 0, 5);
            want[0] = wt_advance_value(want[0], 5);
        }
        for (unsigned i = 0; i < SPREAD; i++)
            want[2 * i]++;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_buffer_read(b, 0, got, sizeof got));
        for (unsigned i = 0; i < 2 * SPREAD; i++)
            if (got[i] != want[i])
                fail_msg("launch %d: cell %u is %u, not %u", launch, i, got[i],
                         want[i]);
    }
    pthread_mutex_lock(&e->lock);
    assert_int_equal(e->fast_launches, 3);
    /* one claim: each side the hull of the cells */
    assert_non_null(e->fast_claims);
    assert_int_equal(e->fast_nclaims, 1);
    assert_true(e->fast_claims[0].rd.hull && e->fast_claims[0].wr.hull);
    assert_int_equal(e->fast_claims[0].wr.n, 1);
    assert_int_equal(e->fast_claims[0].wr.v[0].off, 0);
    assert_int_equal(e->fast_claims[0].wr.v[0].w, (2 * SPREAD - 1) * 4);
    pthread_mutex_unlock(&e->lock);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/*
 * A host-only graph large enough that the host workers prepare its first
 * fast launch side by side, in shares (weft__fast_prepare): rows of
 * cells, each task the sum of three cells of the row before (a ring of
 * two rows), every fifth row also adding a 2 x 2 block of a second
 * buffer into a cell of it; relaunched, every result is the sequential
 * one, every launch goes with no issue, and the shares' unions merged
 * into one claim per root. A second graph of 6,000 disjoint ranges, each
 * share's union within WEFT__FAST_CLAIM_MAX but their merge not, claims
 * access by access; a third whose last node may fail goes through the
 * issue. Both are right too.
 */
enum { SH_W = 64, SH_T = 120, SH_BW = 8 };

static void task_sum3(void *const *ptrs, void *user)
{
    (void)user;
    *(uint32_t *)ptrs[3] = *(const uint32_t *)ptrs[0] +
                           *(const uint32_t *)ptrs[1] +
                           *(const uint32_t *)ptrs[2] + 1;
}

/* ptrs[0]: a 2 x 2 block of rows SH_BW cells apart; ptrs[1]: the sum's. */
static void task_block(void *const *ptrs, void *user)
{
    const uint32_t *q = ptrs[0];

    (void)user;
    *(uint32_t *)ptrs[1] += q[0] + q[1] + q[SH_BW] + q[SH_BW + 1];
}

static int status_ok(void *const *ptrs, void *user)
{
    (void)user;
    *(uint32_t *)ptrs[0] += 1;
    return 0;
}

static void host_shares_graph(weft_buffer *b, weft_buffer *m, weft_graph *g,
                              int may_fail)
{
    for (unsigned t = 1; t < SH_T; t++) {
        for (unsigned c = 0; c < SH_W; c++) {
            size_t prev = (size_t)((t - 1) % 2) * SH_W, cur = (t % 2) * SH_W;
            weft_access_desc a[4];

            for (int d = -1; d <= 1; d++)
                a[d + 1] = weft_access_range(
                    b, (prev + (c + SH_W + d) % SH_W) * 4, 4, WEFT_READ);
            a[3] = weft_access_range(b, (cur + c) * 4, 4, WEFT_WRITE);
            check(weft_graph_add_host(g, task_sum3, NULL, a, 4, NULL));
        }
        if (t % 5 == 0) {
            weft_access_desc a[] = {
                weft_access_block(m,
                                  weft_block2((t % SH_BW) * 4, 8, 2, SH_BW * 4),
                                  WEFT_READ),
                weft_access_range(m, (size_t)(2 * SH_BW + t % SH_BW) * 4, 4,
                                  WEFT_READ_WRITE)};

            check(weft_graph_add_host(g, task_block, NULL, a, 2, NULL));
        }
    }
    if (may_fail) {
        weft_access_desc a[] = {weft_access_range(m, 0, 4, WEFT_READ_WRITE)};

        check(weft_graph_add_host_status(g, status_ok, NULL, a, 1, NULL));
    }
}

/* The sequential result of one launch of host_shares_graph. */
static void host_shares_want(uint32_t *rows, uint32_t *m, int may_fail)
{
    for (unsigned t = 1; t < SH_T; t++) {
        uint32_t *prev = rows + ((t - 1) % 2) * SH_W,
                 *cur = rows + (t % 2) * SH_W;

        for (unsigned c = 0; c < SH_W; c++)
            cur[c] = prev[(c + SH_W - 1) % SH_W] + prev[c] +
                     prev[(c + 1) % SH_W] + 1;
        if (t % 5 == 0) {
            const uint32_t *q = m + t % SH_BW;

            m[2 * SH_BW + t % SH_BW] += q[0] + q[1] + q[SH_BW] + q[SH_BW + 1];
        }
    }
    if (may_fail)
        m[0] += 1;
}

static void test_host_only_shares(void **state)
{
    static uint32_t rows[2 * SH_W], mw[3 * SH_BW], got[3 * SH_BW + 2 * SH_W];
    weft_buffer *b, *m;

    (void)state;
    for (int may_fail = 0; may_fail <= 1; may_fail++) {
        weft_graph *g;
        weft_exec *e;

        for (unsigned i = 0; i < 2 * SH_W; i++)
            rows[i] = i;
        for (unsigned i = 0; i < 3 * SH_BW; i++)
            mw[i] = 7 * i;
        check(weft_buffer_create(devs.rt, sizeof rows, &b));
        check(weft_buffer_create(devs.rt, sizeof mw, &m));
        check(weft_buffer_write(b, 0, rows, sizeof rows));
        check(weft_buffer_write(m, 0, mw, sizeof mw));
        check(weft_graph_create(devs.rt, &g));
        host_shares_graph(b, m, g, may_fail);
        /* more accesses than two shares hold */
        assert_true(4u * SH_W * (SH_T - 1) > 2u * 8192);
        check(weft_graph_instantiate(g, NULL, &e));
        for (int launch = 1; launch <= 3; launch++) {
            host_shares_want(rows, mw, may_fail);
            check(weft_exec_launch(e));
            check(weft_exec_wait(e));
            check(weft_buffer_read(b, 0, got, sizeof rows));
            check(weft_buffer_read(m, 0, got + 2 * SH_W, sizeof mw));
            for (unsigned i = 0; i < 2 * SH_W; i++)
                if (got[i] != rows[i])
                    fail_msg("launch %d: cell %u is %u, not %u", launch, i,
                             got[i], rows[i]);
            for (unsigned i = 0; i < 3 * SH_BW; i++)
                if (got[2 * SH_W + i] != mw[i])
                    fail_msg("launch %d: block cell %u is %u, not %u", launch,
                             i, got[2 * SH_W + i], mw[i]);
        }
        pthread_mutex_lock(&e->lock);
        if (may_fail) {
            assert_int_equal(e->fast_launches, 0);
        } else {
            assert_int_equal(e->fast_launches, 3);
            /*
             * One claim per root, every share's union merged into it: b's
             * two rows one range read and written; m's 2 x 2 blocks read,
             * one slice each (every share's: a share lost loses some).
             */
            assert_non_null(e->fast_claims);
            assert_int_equal(e->fast_nclaims, 2);
            for (uint32_t k = 0; k < e->fast_nclaims; k++) {
                const weft__fast_union *u = &e->fast_claims[k];

                if (e->roots[u->root] == b) {
                    assert_int_equal(u->rd.n, 1);
                    assert_int_equal(u->wr.n, 1);
                    assert_int_equal(u->rd.v[0].off, 0);
                    assert_int_equal(u->rd.v[0].w, sizeof rows);
                    assert_int_equal(u->wr.v[0].w, sizeof rows);
                } else {
                    assert_ptr_equal(e->roots[u->root], m);
                    assert_int_equal(u->rd.n - u->rd.nranges, (SH_T - 1) / 5);
                }
            }
        }
        pthread_mutex_unlock(&e->lock);
        check(weft_exec_destroy(e));
        check(weft_graph_destroy(g));
        check(weft_buffer_destroy(b));
        check(weft_buffer_destroy(m));
    }
}

/* A host task that meets the other party (user: the party). */
static void task_meet(void *const *ptrs, void *user)
{
    party *p = user;

    p->first = *(const uint32_t *)ptrs[0];
    p->met = meet_wait(p->me, p->others);
}

/*
 * Successors a worker makes ready are open to the other workers: A, then
 * B and C, which both read A's cell and wait for each other. The worker
 * that ran A runs one of them next and keeps the other (its own deque);
 * only another worker taking that one lets the two meet, launch after
 * launch, all with no issue.
 */
static void test_host_only_successors_spread(void **state)
{
    static const uint32_t zero[3];
    party pb = {1, 2, 0, 0}, pc = {2, 1, 0, 0};
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    weft_access_desc a, bc[2];

    (void)state;
    check(weft_buffer_create(devs.rt, sizeof zero, &b));
    check(weft_buffer_write(b, 0, zero, sizeof zero));
    check(weft_graph_create(devs.rt, &g));
    a = weft_access_range(b, 0, 4, WEFT_READ_WRITE);
    check(weft_graph_add_host(g, task_inc, NULL, &a, 1, NULL));
    bc[0] = weft_access_range(b, 0, 4, WEFT_READ);
    bc[1] = weft_access_range(b, 4, 4, WEFT_WRITE);
    check(weft_graph_add_host(g, task_meet, &pb, bc, 2, NULL));
    bc[1] = weft_access_range(b, 8, 4, WEFT_WRITE);
    check(weft_graph_add_host(g, task_meet, &pc, bc, 2, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (uint32_t launch = 1; launch <= 3; launch++) {
        meet_reset();
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        if (!pb.met || !pc.met)
            fail_msg("launch %u: B and C did not run at the same time "
                     "(B met %d, C met %d)",
                     launch, pb.met, pc.met);
        assert_int_equal(pb.first, launch); /* after A */
        assert_int_equal(pc.first, launch);
    }
    pthread_mutex_lock(&e->lock);
    assert_int_equal(e->fast_launches, 3);
    pthread_mutex_unlock(&e->lock);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/* Up to 10 s for the pool's counts to say what want() asks; 0 if never. */
static int counts_reach(weft__hostwork *hw, unsigned n, unsigned w0,
                        int (*want)(unsigned sleepers, unsigned wakes,
                                    unsigned n))
{
    for (int i = 0; i < 10000; i++) {
        unsigned sl, wk;

        weft__hostwork_counts(hw, &sl, &wk);
        if (want(sl, wk - w0, n))
            return 1;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
    return 0;
}

static int all_asleep(unsigned sleepers, unsigned wakes, unsigned n)
{
    (void)wakes;
    return sleepers == n;
}

static int all_woken(unsigned sleepers, unsigned wakes, unsigned n)
{
    (void)sleepers;
    return wakes >= n;
}

/*
 * The start of a launch with host tasks wakes every sleeping worker at
 * once (to poll for its tasks), not one by one as tasks come: with every
 * worker asleep and no task queued, weft__hostwork_busy wakes them all.
 */
static void test_launch_start_wakes_sleepers(void **state)
{
    weft__hostwork *hw = weft__hostwork_get(devs.rt);
    unsigned n, sl, w0;

    (void)state;
    if (!hw)
        skip();
    n = weft__hostwork_workers(hw);
    if (!counts_reach(hw, n, 0, all_asleep)) {
        weft__hostwork_counts(hw, &sl, &w0);
        fail_msg("%u of %u workers asleep after 10 s with nothing to do", sl,
                 n);
    }
    weft__hostwork_counts(hw, &sl, &w0);
    weft__hostwork_busy(hw, 1);
    if (!counts_reach(hw, n, w0, all_woken)) {
        unsigned wk;

        weft__hostwork_counts(hw, &sl, &wk);
        weft__hostwork_busy(hw, -1);
        fail_msg("a launch's start woke %u of %u sleeping workers in 10 s",
                 wk - w0, n);
    }
    weft__hostwork_busy(hw, -1);
    /* With no launch running they sleep again. */
    assert_true(counts_reach(hw, n, 0, all_asleep));
}

/* 6,000 disjoint ranges, each of three accesses: shares within the limit,
 * their merge past it. */
enum { SH_SPREAD = 6000 };

static void test_host_only_shares_past_limit(void **state)
{
    static uint32_t want[2 * SH_SPREAD], got[2 * SH_SPREAD];
    static const uint32_t consts[2] = {3, 4};
    static const unsigned two = 2;
    weft_buffer *b, *c;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    check(weft_buffer_create(devs.rt, sizeof got, &b));
    check(weft_buffer_create(devs.rt, sizeof consts, &c));
    for (unsigned i = 0; i < 2 * SH_SPREAD; i++)
        want[i] = i;
    check(weft_buffer_write(b, 0, want, sizeof want));
    check(weft_buffer_write(c, 0, consts, sizeof consts));
    check(weft_graph_create(devs.rt, &g));
    for (unsigned i = 0; i < SH_SPREAD; i++) {
        weft_access_desc a[] = {
            weft_access_range(c, 0, 4, WEFT_READ),
            weft_access_range(c, 4, 4, WEFT_READ),
            weft_access_range(b, (size_t)2 * i * 4, 4, WEFT_WRITE)};

        check(weft_graph_add_host(g, task_sum, (void *)&two, a, 3, NULL));
    }
    assert_true(3u * SH_SPREAD > 2u * 8192 && SH_SPREAD / 2 < 4096);
    check(weft_graph_instantiate(g, NULL, &e));
    for (int launch = 1; launch <= 2; launch++) {
        for (unsigned i = 0; i < SH_SPREAD; i++)
            want[2 * i] = consts[0] + consts[1] + 1;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_buffer_read(b, 0, got, sizeof got));
        for (unsigned i = 0; i < 2 * SH_SPREAD; i++)
            if (got[i] != want[i])
                fail_msg("launch %d: cell %u is %u, not %u", launch, i, got[i],
                         want[i]);
    }
    pthread_mutex_lock(&e->lock);
    assert_int_equal(e->fast_launches, 2);
    /* b's writes past the limit once merged: their hull; c's reads exact */
    assert_non_null(e->fast_claims);
    for (uint32_t k = 0; k < e->fast_nclaims; k++) {
        const weft__fast_union *u = &e->fast_claims[k];

        if (e->roots[u->root] == b) {
            assert_true(u->wr.hull);
            assert_int_equal(u->wr.v[0].w, (2 * SH_SPREAD - 1) * 4);
        } else {
            assert_false(u->rd.hull);
            assert_int_equal(u->rd.n, 1);
        }
    }
    pthread_mutex_unlock(&e->lock);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    check(weft_buffer_destroy(c));
}

/* Two maps of one launch, on different buffers: each waits for the other. */
static void test_two_host_nodes_overlap(void **state)
{
    static const uint32_t one = 1, two = 2;
    party a = {1, 2, 0, 0}, b = {2, 1, 0, 0};
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;

    (void)state;
    check(weft_buffer_create(devs.rt, 4096, &x));
    check(weft_buffer_create(devs.rt, 4096, &y));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, x, 0, &one, 4, NULL));
    check(weft_graph_add_write(g, y, 0, &two, 4, NULL));
    check(weft_graph_add_map(g, x, 0, 4096, WEFT_READ, map_meet, &a, NULL));
    check(weft_graph_add_map(g, y, 0, 4096, WEFT_READ, map_meet, &b, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int it = 0; it < 2; it++) {
        meet_reset();
        a.met = b.met = 0;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        if (!a.met || !b.met)
            fail_msg("launch %d: the two maps did not run at the same time "
                     "(first met the second: %d, second the first: %d)",
                     it, a.met, b.met);
        assert_int_equal(a.first, 1);
        assert_int_equal(b.first, 2);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
}

enum { M = 1024 };

static void host_fill(void *const *ptrs, void *user)
{
    uint32_t *x = ptrs[0], base = *(const uint32_t *)user;

    for (uint32_t i = 0; i < M; i++)
        x[i] = base + i;
}

static void host_sum(void *const *ptrs, void *user)
{
    const uint32_t *x = ptrs[0];
    uint32_t *s = ptrs[1];

    (void)user;
    s[0] = 0;
    for (uint32_t i = 0; i < M; i++)
        s[0] += x[i];
}

static void map_triple(void *ptr, size_t size, void *user)
{
    uint32_t *x = ptr;

    (void)user;
    for (size_t i = 0; i < size / 4; i++)
        x[i] *= 3;
}

/*
 * kernel (x on the device) -> host task overwriting x whole (write-only,
 * over bytes only the device held) -> kernel -> map -> host task summing
 * x into s -> read of x and s: each sees what the one before wrote.
 */
static void test_successors_see_writes(void **state)
{
    static uint32_t out[M], sum;
    uint32_t base = 100, want_sum = 0;
    weft_buffer *x, *s;
    weft_graph *g;
    weft_exec *e;
    weft_arg k[] = {weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                    weft_arg_i64(M)};

    (void)state;
    check(weft_buffer_create(devs.rt, M * 4, &x));
    check(weft_buffer_create(devs.rt, 4, &s));
    k[0].buffer = x;
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_kernel(g, k_addone, weft_dims1(M), k, 2, NULL));
    {
        weft_access_desc acc[] = {weft_access_range(x, 0, M * 4, WEFT_WRITE)};

        check(weft_graph_add_host(g, host_fill, &base, acc, 1, NULL));
    }
    check(weft_graph_add_kernel(g, k_addone, weft_dims1(M), k, 2, NULL));
    check(weft_graph_add_map(g, x, 0, M * 4, WEFT_READ_WRITE, map_triple, NULL,
                             NULL));
    {
        weft_access_desc acc[] = {weft_access_range(x, 0, M * 4, WEFT_READ),
                                  weft_access_range(s, 0, 4, WEFT_WRITE)};

        check(weft_graph_add_host(g, host_sum, NULL, acc, 2, NULL));
    }
    check(weft_graph_add_read(g, x, 0, out, sizeof out, NULL));
    check(weft_graph_add_read(g, s, 0, &sum, 4, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (uint32_t i = 0; i < M; i++)
        want_sum += (base + i + 1) * 3;
    for (int it = 0; it < 3; it++) {
        memset(out, 0, sizeof out);
        sum = 0;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (uint32_t i = 0; i < M; i++)
            if (out[i] != (base + i + 1) * 3)
                fail_msg("launch %d: x[%u] = %u, want %u", it, i, out[i],
                         (base + i + 1) * 3);
        assert_int_equal(sum, want_sum);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(s));
}

/*
 * map A on x; kernel on y; map B on y, after the kernel. A waits until B
 * has started, which needs the kernel issued, and B issued after it: so
 * device work must go out while A runs (inline, A would wait in vain).
 * B sees the kernel's result.
 */
static void test_interleaves_with_device_work(void **state)
{
    static const uint32_t one = 1, seven = 7;
    party a = {1, 2, 0, 0}, b = {2, 0, 0, 0};
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;
    weft_arg k[] = {weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                    weft_arg_u32(5), weft_arg_i64(M)};

    (void)state;
    check(weft_buffer_create(devs.rt, M * 4, &x));
    check(weft_buffer_create(devs.rt, M * 4, &y));
    k[0].buffer = y;
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, x, 0, &one, 4, NULL));
    check(weft_graph_add_write(g, y, 0, &seven, 4, NULL));
    check(weft_graph_add_map(g, x, 0, M * 4, WEFT_READ, map_meet, &a, NULL));
    check(weft_graph_add_kernel(g, k_advance, weft_dims1(M), k, 3, NULL));
    check(weft_graph_add_map(g, y, 0, M * 4, WEFT_READ, map_meet, &b, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int it = 0; it < 2; it++) {
        meet_reset();
        a.met = 0;
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        if (!a.met)
            fail_msg("launch %d: the map after the kernel did not start "
                     "while the first map ran",
                     it);
        assert_int_equal(a.first, 1);
        assert_int_equal(b.first, wt_advance_value(7, 5));
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
}

static void map_count(void *ptr, size_t size, void *user)
{
    (void)ptr;
    (void)size;
    __atomic_add_fetch((int *)user, 1, __ATOMIC_RELAXED);
}

/* A failed kernel cancels the map after it; an independent map runs. */
static void test_failure_cancels_host_nodes(void **state)
{
    static const uint32_t zero = 0;
    int after = 0, independent = 0, rc;
    weft_buffer *a, *b;
    weft_graph *g;
    weft_exec *e;
    weft_arg k[] = {weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                    weft_arg_i64(64)};

    (void)state;
    check(weft_buffer_create(devs.rt, 256, &a));
    check(weft_buffer_create(devs.rt, 256, &b));
    k[0].buffer = a;
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_fill(g, a, 0, 256, &zero, 4, NULL));
    check(weft_graph_add_kernel(g, k_addone, weft_dims1(64), k, 2, NULL));
    check(weft_graph_add_map(g, a, 0, 256, WEFT_READ, map_count, &after, NULL));
    check(weft_graph_add_map(g, b, 0, 256, WEFT_READ_WRITE, map_count,
                             &independent, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    weft__fault_arm(1, ".launch");
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    weft__fault_disarm();
    assert_true(rc < 0);
    if (!strstr(weft_last_error(), "node 1 (kernel addone)"))
        fail_msg("detail: %s", weft_last_error());
    assert_int_equal(after, 0);
    assert_int_equal(independent, 1);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(after, 1);
    assert_int_equal(independent, 2);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(a));
    check(weft_buffer_destroy(b));
}

/* ---- several graphs in flight at once ----------------------------------- */

enum { GRAPHS = 3, CHUNKS = 4, LAUNCHES = 8 };

typedef struct graph_run {
    uint32_t in[M], out[M];
    int rc;
    char msg[256];
} graph_run;

static void map_double(void *ptr, size_t size, void *user)
{
    uint32_t *x = ptr;

    (void)user;
    for (size_t i = 0; i < size / 4; i++)
        x[i] *= 2;
}

/* Per chunk: write, advance, map (double), addone, read; relaunched. */
static void *run_graph(void *arg)
{
    graph_run *r = arg;
    size_t chunk = M / CHUNKS * 4;
    weft_buffer *x = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    int rc;

    rc = weft_buffer_create(devs.rt, M * 4, &x);
    if (rc == 0)
        rc = weft_graph_create(devs.rt, &g);
    for (unsigned c = 0; rc == 0 && c < CHUNKS; c++) {
        weft_arg adv[] = {weft_arg_buffer(x, c * chunk, chunk, WEFT_READ_WRITE),
                          weft_arg_u32(c), weft_arg_i64(M / CHUNKS)};
        weft_arg one[] = {weft_arg_buffer(x, c * chunk, chunk, WEFT_READ_WRITE),
                          weft_arg_i64(M / CHUNKS)};

        rc = weft_graph_add_write(g, x, c * chunk, (char *)r->in + c * chunk,
                                  chunk, NULL);
        if (rc == 0)
            rc = weft_graph_add_kernel(g, k_advance, weft_dims1(M / CHUNKS),
                                       adv, 3, NULL);
        if (rc == 0)
            rc = weft_graph_add_map(g, x, c * chunk, chunk, WEFT_READ_WRITE,
                                    map_double, NULL, NULL);
        if (rc == 0)
            rc = weft_graph_add_kernel(g, k_addone, weft_dims1(M / CHUNKS), one,
                                       2, NULL);
        if (rc == 0)
            rc = weft_graph_add_read(g, x, c * chunk,
                                     (char *)r->out + c * chunk, chunk, NULL);
    }
    if (rc == 0)
        rc = weft_graph_instantiate(g, NULL, &e);
    for (int i = 0; rc == 0 && i < LAUNCHES; i++)
        rc = weft_exec_launch(e);
    if (rc == 0)
        rc = weft_exec_wait(e);
    if (rc < 0)
        snprintf(r->msg, sizeof r->msg, "%s: %s", weft_err_name(rc),
                 weft_last_error());
    r->rc = rc;
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    weft_buffer_destroy(x);
    return NULL;
}

static void test_graphs_in_flight(void **state)
{
    static graph_run runs[GRAPHS];
    pthread_t t[GRAPHS];

    (void)state;
    for (int r = 0; r < GRAPHS; r++)
        for (uint32_t i = 0; i < M; i++)
            runs[r].in[i] = (uint32_t)r * 100000u + i;
    for (int r = 0; r < GRAPHS; r++)
        assert_int_equal(pthread_create(&t[r], NULL, run_graph, &runs[r]), 0);
    for (int r = 0; r < GRAPHS; r++) {
        pthread_join(t[r], NULL);
        if (runs[r].rc < 0)
            fail_msg("graph %d: %s", r, runs[r].msg);
        for (uint32_t i = 0; i < M; i++) {
            uint32_t c = i / (M / CHUNKS);
            uint32_t want = wt_advance_value(runs[r].in[i], c) * 2 + 1;

            if (runs[r].out[i] != want)
                fail_msg("graph %d: out[%u] = %u, want %u", r, i,
                         runs[r].out[i], want);
        }
    }
}

/* ---- a graph made and launched while another's host node runs ---------- */

typedef struct slow_map {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int started, done;
} slow_map;

/* Say it started, give the other thread time to act, then double x. */
static void map_slow_double(void *ptr, size_t size, void *user)
{
    slow_map *s = user;
    uint32_t *x = ptr;
    struct timespec pause = {0, 100 * 1000 * 1000};

    pthread_mutex_lock(&s->lock);
    s->started = 1;
    pthread_cond_broadcast(&s->cond);
    pthread_mutex_unlock(&s->lock);
    nanosleep(&pause, NULL);
    for (size_t i = 0; i < size / 4; i++)
        x[i] *= 2;
    pthread_mutex_lock(&s->lock);
    s->done = 1;
    pthread_mutex_unlock(&s->lock);
}

/*
 * Graph A advances x on the device, then a map doubles it on a host
 * worker. While the map runs (it waits a little, so that this has time to
 * go wrong), graph B is made on x, launched and waited for: it adds one on
 * the device and reads x out. B comes after A on x, so it must see the
 * doubled bytes, however far A's map had got when B was made.
 */
static void test_graph_made_while_host_node_runs(void **state)
{
    static uint32_t in[M], out[M];
    static slow_map s = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0,
                         0};
    weft_buffer *x;
    weft_graph *ga, *gb;
    weft_exec *ea, *eb;

    (void)state;
    for (uint32_t i = 0; i < M; i++)
        in[i] = i * 7u + 3u;
    check(weft_buffer_create(devs.rt, sizeof in, &x));
    check(weft_graph_create(devs.rt, &ga));
    check(weft_graph_add_write(ga, x, 0, in, sizeof in, NULL));
    {
        weft_arg adv[] = {weft_arg_buffer(x, 0, sizeof in, WEFT_READ_WRITE),
                          weft_arg_u32(5), weft_arg_i64(M)};

        check(
            weft_graph_add_kernel(ga, k_advance, weft_dims1(M), adv, 3, NULL));
    }
    check(weft_graph_add_map(ga, x, 0, sizeof in, WEFT_READ_WRITE,
                             map_slow_double, &s, NULL));
    check(weft_graph_instantiate(ga, NULL, &ea));
    check(weft_exec_launch(ea));
    pthread_mutex_lock(&s.lock);
    while (!s.started)
        pthread_cond_wait(&s.cond, &s.lock);
    pthread_mutex_unlock(&s.lock);

    check(weft_graph_create(devs.rt, &gb));
    {
        weft_arg one[] = {weft_arg_buffer(x, 0, sizeof in, WEFT_READ_WRITE),
                          weft_arg_i64(M)};

        check(weft_graph_add_kernel(gb, k_addone, weft_dims1(M), one, 2, NULL));
    }
    check(weft_graph_add_read(gb, x, 0, out, sizeof out, NULL));
    check(weft_graph_instantiate(gb, NULL, &eb));
    check(weft_exec_launch(eb));
    check(weft_exec_wait(eb));
    pthread_mutex_lock(&s.lock);
    assert_int_equal(s.done, 1); /* B's read came after the map */
    pthread_mutex_unlock(&s.lock);
    check(weft_exec_wait(ea));
    for (uint32_t i = 0; i < M; i++)
        if (out[i] != wt_advance_value(in[i], 5) * 2 + 1)
            fail_msg("out[%u] = %u, want %u (the map's doubling %s)", i, out[i],
                     wt_advance_value(in[i], 5) * 2 + 1,
                     out[i] == wt_advance_value(in[i], 5) + 1 ? "missed"
                                                              : "torn");
    check(weft_exec_destroy(eb));
    check(weft_exec_destroy(ea));
    check(weft_graph_destroy(gb));
    check(weft_graph_destroy(ga));
    check(weft_buffer_destroy(x));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_host_nodes_overlap),
        cmocka_unit_test(test_successors_see_writes),
        cmocka_unit_test(test_interleaves_with_device_work),
        cmocka_unit_test(test_failure_cancels_host_nodes),
        cmocka_unit_test(test_graphs_in_flight),
        cmocka_unit_test(test_graph_made_while_host_node_runs),
        cmocka_unit_test(test_host_only_graph),
        cmocka_unit_test(test_host_only_many_ranges),
        cmocka_unit_test(test_host_only_shares),
        cmocka_unit_test(test_host_only_shares_past_limit),
        cmocka_unit_test(test_host_only_successors_spread),
        cmocka_unit_test(test_launch_start_wakes_sleepers),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
