/*
 * Events and waits: a plan orders work across lanes with exactly one event
 * per node that has a successor on another lane and one wait per edge of
 * the transitive reduction that crosses lanes (counting the order of each
 * in-order lane). Each case is a small graph whose count is derived by hand
 * in its comment; the test asserts it on weft_exec_get_stats, on the
 * runtime's plan counters and on the sim driver's record, launch after
 * launch.
 *
 * Most graphs are built from "set" kernels that each write their own
 * buffer whole and are ordered by explicit edges: no bytes move, so every
 * event and wait comes from an edge. Each kernel is placed by hand. The
 * lowering rules (src/sched/plan.h) the derivations use:
 *  - a kernel that follows directly a predecessor on its device (nothing
 *    else was put on that lane since; the latest such first) keeps that
 *    lane; any other kernel takes the compute lane of its device whose
 *    last node came earliest (an empty one first), so independent kernels
 *    of one device are on different lanes;
 *  - an edge costs nothing if both ends are on one lane, or if the
 *    waiting lane already waited for something after the predecessor
 *    (the edge is implied); else one wait, on the predecessor's event;
 *  - a node records one event, however many lanes wait for it.
 *
 * The runtime is the test's own: 8 simulated GPUs with real data, chosen
 * by weft_runtime_options (main() clears WEFT_DEVICES, WEFT_SIM and
 * WEFT_PLACE). A case whose counts differ prints the record of the launch;
 * WT_DUMP=1 prints every launch's.
 */
#include "wt_test.h"

#include "drivers/sim/sim.h"
#include "runtime.h"
#include "wt_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    M = 4096, /* floats per buffer: 16 KiB */
    MAXN = 16,
    MAXE = 32,
    NDEV = 8,
    /*
     * The first launches of an executable graph on a runtime of several
     * devices are timed (plan.h: to learn kernel times): timing events
     * then join the record. From this launch on the record holds only the
     * plan's own events and waits.
     */
    UNTIMED = 3,
    LAUNCHES = 4,
};

/* ---- kernels ------------------------------------------------------------ */

static const weft_host_kernel kernels[] = {
    {"set", wt_host_fill, 3, wt_fill_params, NULL, NULL, NULL},
    {"tile", wt_host_affine, 3, wt_affine_params, NULL, NULL, NULL},
    {"sum", wt_host_sum, 4, wt_sum_params, NULL, NULL, NULL},
    {"addone", wt_host_addone, 2, wt_addone_params, NULL, NULL, NULL},
};

/* ---- the runtime -------------------------------------------------------- */

typedef struct fixture {
    int peer;
    weft_runtime *rt;
    weft_module *mod;
    weft_kernel *k_set, *k_tile, *k_sum, *k_addone;
} fixture;

static fixture peer_on = {1, NULL, NULL, NULL, NULL, NULL, NULL};
static fixture peer_off = {0, NULL, NULL, NULL, NULL, NULL, NULL};

static int setup(void **state)
{
    fixture *f = *state;
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_module_source src = {WEFT_SOURCE_HOST, kernels,
                              sizeof kernels / sizeof kernels[0], NULL,
                              "events"};
    char cfg[64];

    snprintf(cfg, sizeof cfg, "devices=%d,peer=%d,real_data=1,check=1", NDEV,
             f->peer);
    o.devices = "sim";
    o.sim_config = cfg;
    check(weft_runtime_create(&f->rt, &o));
    assert_int_equal(weft_runtime_device_count(f->rt), NDEV);
    check(weft_module_create(f->rt, &src, 1, &f->mod));
    check(weft_module_get_kernel(f->mod, "set", &f->k_set));
    check(weft_module_get_kernel(f->mod, "tile", &f->k_tile));
    check(weft_module_get_kernel(f->mod, "sum", &f->k_sum));
    check(weft_module_get_kernel(f->mod, "addone", &f->k_addone));
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    /* After a failed case objects may be left: nothing to check then. */
    weft_module_destroy(f->mod);
    weft_runtime_destroy(f->rt);
    f->rt = NULL;
    f->mod = NULL;
    return 0;
}

static const weft_device *dev(const fixture *f, unsigned d)
{
    return weft_runtime_device(f->rt, d);
}

static weft__device *sim0(const fixture *f)
{
    return weft__device_of(dev(f, 0));
}

/* The record of the last launch, one line per operation (on failures). */
static void dump_record(const fixture *f)
{
    static const char *const roles[] = {"compute", "h2d", "d2h", "peer"};
    size_t n;
    const weft__sim_op *r = weft__sim_record(sim0(f), &n);

    for (size_t i = 0; i < n; i++) {
        const weft__sim_op *o = &r[i];

        printf("#   %3llu %-7s dev %d queue %u (%s)",
               (unsigned long long)o->seq, weft__sim_op_name(o->kind),
               o->device, o->queue,
               (unsigned)o->role < 4 ? roles[o->role] : "?");
        if (o->kind == WEFT__SIM_EVENT_RECORD)
            printf(" event %u", o->event);
        else if (o->kind == WEFT__SIM_EVENT_WAIT)
            printf(" event %u of dev %d", o->event, o->event_device);
        else if (o->kind == WEFT__SIM_KERNEL)
            printf(" %s", o->kernel);
        else if (o->bytes)
            printf(" %llu bytes %d -> %d", (unsigned long long)o->bytes,
                   o->src_device, o->dst_device);
        printf("\n");
    }
}

/* What one launch did, seen three ways. */
typedef struct seen {
    weft_exec_stats st;
    uint64_t rt_events, rt_waits;   /* weft_runtime_get_stats deltas */
    uint64_t rec_events, rec_waits; /* the sim record */
    uint64_t lane_ops, lane_nodes;  /* summed over st.lanes */
} seen;

/*
 * Launch e once and say what it did; the three views must agree, and no
 * host sync may have been needed (no node touches host memory).
 */
static seen launch(const fixture *f, weft_exec *e, const char *what)
{
    seen s;
    weft_stats r0, r1;
    const weft__sim_op *r;
    size_t n;

    memset(&s, 0, sizeof s);
    memset(&r0, 0, sizeof r0);
    memset(&r1, 0, sizeof r1);
    r0.size = r1.size = sizeof r0;
    s.st.size = sizeof s.st;
    check(weft_runtime_get_stats(f->rt, &r0));
    weft__sim_record_clear(sim0(f));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_runtime_get_stats(f->rt, &r1));
    check(weft_exec_get_stats(e, &s.st));
    s.rt_events = r1.plan_events - r0.plan_events;
    s.rt_waits = r1.plan_waits - r0.plan_waits;
    /* Fewer events must not mean work on the same bytes left unordered. */
    if (weft__sim_hazards(sim0(f)))
        fail_msg("%s: the sim saw %llu hazards (work on the same bytes that "
                 "nothing ordered)",
                 what, (unsigned long long)weft__sim_hazards(sim0(f)));
    r = weft__sim_record(sim0(f), &n);
    for (size_t i = 0; i < n; i++) {
        s.rec_events += r[i].kind == WEFT__SIM_EVENT_RECORD;
        s.rec_waits += r[i].kind == WEFT__SIM_EVENT_WAIT;
    }
    assert_true(s.st.nlanes <= sizeof s.st.lanes / sizeof s.st.lanes[0]);
    for (unsigned l = 0; l < s.st.nlanes; l++) {
        s.lane_ops += s.st.lanes[l].ops;
        s.lane_nodes += s.st.lanes[l].nodes;
    }
    printf("# %s: %llu events, %llu waits, %llu host syncs, %u devices; "
           "record %llu/%llu; runtime %llu/%llu\n",
           what, (unsigned long long)s.st.events,
           (unsigned long long)s.st.waits, (unsigned long long)s.st.host_syncs,
           s.st.devices_used, (unsigned long long)s.rec_events,
           (unsigned long long)s.rec_waits, (unsigned long long)s.rt_events,
           (unsigned long long)s.rt_waits);
    if (getenv("WT_DUMP"))
        dump_record(f);
    assert_int_equal(s.st.events, s.rt_events);
    assert_int_equal(s.st.waits, s.rt_waits);
    if (s.st.launches >= UNTIMED) {
        assert_int_equal(s.st.events, s.rec_events);
        assert_int_equal(s.st.waits, s.rec_waits);
    }
    assert_int_equal(s.st.host_syncs, 0);
    return s;
}

/* ---- graphs of set kernels and explicit edges --------------------------- */

typedef struct ecase {
    const char *name;
    unsigned nnodes;
    unsigned dev[MAXN]; /* where each node is placed */
    unsigned nedges;
    unsigned edge[MAXE][2];
    unsigned events, waits; /* derived by hand */
    unsigned devices;       /* distinct devices */
} ecase;

/*
 * Build c (node i sets its own buffer to i + 1 on c->dev[i]), launch it
 * three times and check every launch against the derived counts, then
 * the buffers' contents. Each kernel is one operation on its lane and
 * the only node a lane finishes. lane_ops (may be NULL) receives the
 * operations of the last launch summed over its lanes.
 */
static void run_case(const fixture *f, const ecase *c, uint64_t *lane_ops)
{
    weft_buffer *buf[MAXN];
    weft_node id[MAXN];
    weft_graph *g;
    weft_exec *e;
    static float v[M];
    char bad[160] = "";

    check(weft_graph_create(f->rt, &g));
    for (unsigned i = 0; i < c->nnodes; i++) {
        check(weft_buffer_create(f->rt, sizeof v, &buf[i]));
        {
            weft_arg a[] = {weft_arg_buffer(buf[i], 0, WEFT_WHOLE, WEFT_WRITE),
                            weft_arg_f32((float)(i + 1)), weft_arg_i64(M)};

            check(weft_graph_add_kernel(g, f->k_set, weft_dims1(M), a, 3,
                                        &id[i]));
        }
        check(weft_graph_set_device(g, id[i], dev(f, c->dev[i])));
    }
    for (unsigned k = 0; k < c->nedges; k++)
        check(weft_graph_add_edge(g, id[c->edge[k][0]], id[c->edge[k][1]]));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int l = 0; l < LAUNCHES; l++) {
        char what[96];
        seen s;

        snprintf(what, sizeof what, "%s, launch %d", c->name, l + 1);
        s = launch(f, e, what);
        if ((s.st.events != c->events || s.st.waits != c->waits) && !bad[0]) {
            dump_record(f);
            snprintf(bad, sizeof bad,
                     "%s: %llu events and %llu waits, derived %u and %u", what,
                     (unsigned long long)s.st.events,
                     (unsigned long long)s.st.waits, c->events, c->waits);
        }
        assert_int_equal(s.st.nodes, c->nnodes);
        assert_int_equal(s.st.devices_used, c->devices);
        assert_int_equal(s.lane_nodes, c->nnodes);
        assert_true(s.lane_ops >= c->nnodes + s.st.waits);
        if (lane_ops)
            *lane_ops = s.lane_ops;
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    for (unsigned i = 0; i < c->nnodes; i++) {
        check(weft_buffer_read(buf[i], 0, v, sizeof v));
        for (unsigned j = 0; j < M; j++)
            if (v[j] != (float)(i + 1))
                fail_msg("%s: buffer %u [%u] = %g, want %u", c->name, i, j,
                         v[j], i + 1);
        check(weft_buffer_destroy(buf[i]));
    }
    if (bad[0])
        fail_msg("%s", bad);
}

/*
 * A -> B -> C -> D on device 0: each follows its predecessor directly on
 * its lane, so nothing crosses lanes: 0 events, 0 waits.
 */
static void test_chain(void **state)
{
    static const ecase c = {"chain on one device",
                            4,
                            {0, 0, 0, 0},
                            3,
                            {{0, 1}, {1, 2}, {2, 3}},
                            0,
                            0,
                            1};

    run_case(*state, &c, NULL);
}

/*
 * Fork-join on device 0: A -> B, A -> C, B -> D, C -> D. A on lane L0; B
 * follows A there; C cannot follow A directly (B did) and takes L1; D
 * follows C, its latest predecessor, on L1. Crossing lanes: A -> C and
 * B -> D: 2 events (A, B), 2 waits (L1 on each).
 */
static const ecase fork_join_one_device = {"fork-join on one device",
                                           4,
                                           {0, 0, 0, 0},
                                           4,
                                           {{0, 1}, {0, 2}, {1, 3}, {2, 3}},
                                           2,
                                           2,
                                           1};

static void test_fork_join_one_device(void **state)
{
    run_case(*state, &fork_join_one_device, NULL);
}

/*
 * weft_lane_stats.ops counts work and waits, not the event records others
 * wait on (weft.h): on the fork-join of one device, 4 kernels and 2 waits.
 */
static void test_lane_ops(void **state)
{
    uint64_t ops = 0;

    run_case(*state, &fork_join_one_device, &ops);
    assert_int_equal(ops, 4 + 2);
}

/*
 * The diamond across two devices: A, B, D on device 0, C on device 1;
 * A -> B, A -> C, B -> D, C -> D. B follows A and D follows B on one lane
 * of device 0; C is alone on device 1. Crossing: A -> C and C -> D:
 * 2 events (A, C), 2 waits.
 */
static void test_diamond_two_devices(void **state)
{
    static const ecase c = {"diamond over two devices",
                            4,
                            {0, 0, 1, 0},
                            4,
                            {{0, 1}, {0, 2}, {1, 3}, {2, 3}},
                            2,
                            2,
                            2};

    run_case(*state, &c, NULL);
}

/*
 * Two independent chains of three, X on device 0 and Y on device 1,
 * joined by J on device 0 (X3 -> J, Y3 -> J). J follows X3 on its lane;
 * only Y3 -> J crosses: 1 event, 1 wait.
 */
static void test_two_chains_joined(void **state)
{
    static const ecase c = {"two chains on two devices, joined",
                            7,
                            {0, 0, 0, 1, 1, 1, 0},
                            6,
                            {{0, 1}, {1, 2}, {3, 4}, {4, 5}, {2, 6}, {5, 6}},
                            1,
                            1,
                            2};

    run_case(*state, &c, NULL);
}

/*
 * The same two chains both on device 0: independent, so on the two
 * compute lanes of device 0 (X on L0, Y on L1); J follows Y3 (its latest
 * predecessor) on L1 and waits for X3: 1 event, 1 wait.
 */
static void test_two_chains_one_device(void **state)
{
    static const ecase c = {"two chains on one device, joined",
                            7,
                            {0, 0, 0, 0, 0, 0, 0},
                            6,
                            {{0, 1}, {1, 2}, {3, 4}, {4, 5}, {2, 6}, {5, 6}},
                            1,
                            1,
                            1};

    run_case(*state, &c, NULL);
}

/*
 * An edge that others imply: A on device 0, B and C on device 1, with
 * A -> B, B -> C and A -> C. C follows B on its lane, which already
 * waited for A before B: A -> C costs nothing. 1 event, 1 wait (not 2).
 */
static void test_implied_edge(void **state)
{
    static const ecase c = {"implied edge",           3, {0, 1, 1}, 3,
                            {{0, 1}, {1, 2}, {0, 2}}, 1, 1,         2};

    run_case(*state, &c, NULL);
}

/*
 * Fork-join over n devices: A on device 0 fans out to B_0 .. B_{n-1}
 * (B_k on device k), all of which J on device 0 joins. B_0 follows A on
 * its lane and J follows B_0. A records one event that the n - 1 other
 * devices wait for; each B_k (k >= 1) records one that J waits for:
 * n events, 2 (n - 1) waits.
 */
static void fan(const fixture *f, unsigned n)
{
    ecase c;
    char name[32];

    memset(&c, 0, sizeof c);
    snprintf(name, sizeof name, "fan-out, fan-in over %u", n);
    c.name = name;
    c.nnodes = n + 2;
    c.dev[0] = 0;
    for (unsigned k = 0; k < n; k++) {
        c.dev[1 + k] = k;
        c.edge[c.nedges][0] = 0;
        c.edge[c.nedges++][1] = 1 + k;
        c.edge[c.nedges][0] = 1 + k;
        c.edge[c.nedges++][1] = n + 1;
    }
    c.dev[n + 1] = 0;
    c.events = n;
    c.waits = 2 * (n - 1);
    c.devices = n;
    run_case(f, &c, NULL);
}

static void test_fan(void **state)
{
    fan(*state, 2);
    fan(*state, 4);
    fan(*state, 8);
}

/* ---- graphs that move data ---------------------------------------------- */

/*
 * A chain of four kernels on one buffer on device 0 (the buffer written
 * by weft_buffer_write, so valid on the host only). First launch: the
 * upload on device 0's H2D lane and the first kernel on a compute lane,
 * one edge across lanes: 1 event, 1 wait. Later launches find the bytes
 * on the device and move nothing: 0 and 0.
 */
static void test_chain_with_upload(void **state)
{
    const fixture *f = *state;
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    static float v[M];
    seen s;

    for (unsigned i = 0; i < M; i++)
        v[i] = (float)i;
    check(weft_buffer_create(f->rt, sizeof v, &x));
    check(weft_buffer_write(x, 0, v, sizeof v));
    check(weft_graph_create(f->rt, &g));
    for (int k = 0; k < 4; k++) {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, f->k_addone, weft_dims1(M), a, 2, NULL));
    }
    o.device = dev(f, 0);
    check(weft_graph_instantiate(g, &o, &e));
    s = launch(f, e, "chain with upload, launch 1");
    assert_int_equal(s.st.events, 1);
    assert_int_equal(s.st.waits, 1);
    for (int l = 2; l <= LAUNCHES; l++) {
        s = launch(f, e, "chain with upload, relaunch");
        assert_int_equal(s.st.events, 0);
        assert_int_equal(s.st.waits, 0);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_read(x, 0, v, sizeof v));
    for (unsigned i = 0; i < M; i++)
        assert_true(v[i] == (float)(i + 4 * LAUNCHES));
    check(weft_buffer_destroy(x));
}

/*
 * The diamond with data: A sets x on device 0; B: y = 2 x + 1 on device
 * 0; C: z = 2 x + 1 on device 1; D: w = y + z on device 0. The edges
 * A -> B and B -> D stay on one lane of device 0. The other two carry
 * bytes to the other device, on the copy lanes of the device they fill:
 *  - with peer links, x to device 1 (its peer lane waits for A: 1 event,
 *    1 wait; C waits for the copy: 1 and 1), then z to device 0 (the same
 *    again, for C and for D): 4 events, 4 waits;
 *  - without, each goes down to the host (the D2H lane of its device
 *    waits for the producer), up to the other device (the H2D lane waits
 *    for the D2H), and the kernel waits for the H2D: 3 and 3 per edge,
 *    6 events, 6 waits.
 * Nothing else needs ordering: the copy into device 0 does not wait for
 * B, which does not touch z, and a kernel that waits for its copy need
 * not wait for the copy's producer as well. Every launch moves the same
 * bytes again (A and C rewrite x and z).
 *
 * weft gives exactly that minimum: a copy for a node waits only for the
 * nodes that wrote the bytes it copies (the graph notes them, whether or
 * not the reduction kept the edge), a copy out of the host copy only for
 * the copy that brought them there, a lane's tail event serves every lane
 * that waits for it, and a kernel joins its copies' lanes latest first.
 * The sim's check (check=1, in launch()) shows that nothing that needs an
 * order lacks one.
 */
static void test_diamond_with_data(void **state)
{
    const fixture *f = *state;
    weft_buffer *x, *y, *z, *w;
    weft_node nd[4];
    weft_graph *g;
    weft_exec *e;
    static float v[M];
    const unsigned min = f->peer ? 4 : 6; /* the transitive reduction's */
    const unsigned want_ev = min, want_wait = min;
    char bad[160] = "";

    check(weft_buffer_create(f->rt, sizeof v, &x));
    check(weft_buffer_create(f->rt, sizeof v, &y));
    check(weft_buffer_create(f->rt, sizeof v, &z));
    check(weft_buffer_create(f->rt, sizeof v, &w));
    check(weft_graph_create(f->rt, &g));
    {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_f32(3), weft_arg_i64(M)};
        weft_arg b[] = {weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};
        weft_arg c[] = {weft_arg_buffer(z, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};
        weft_arg d[] = {weft_arg_buffer(w, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_buffer(z, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_i64(M)};

        check(weft_graph_add_kernel(g, f->k_set, weft_dims1(M), a, 3, &nd[0]));
        check(weft_graph_add_kernel(g, f->k_tile, weft_dims1(M), b, 3, &nd[1]));
        check(weft_graph_add_kernel(g, f->k_tile, weft_dims1(M), c, 3, &nd[2]));
        check(weft_graph_add_kernel(g, f->k_sum, weft_dims1(M), d, 4, &nd[3]));
    }
    check(weft_graph_set_device(g, nd[0], dev(f, 0)));
    check(weft_graph_set_device(g, nd[1], dev(f, 0)));
    check(weft_graph_set_device(g, nd[2], dev(f, 1)));
    check(weft_graph_set_device(g, nd[3], dev(f, 0)));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int l = 0; l < LAUNCHES; l++) {
        seen s = launch(f, e,
                        f->peer ? "diamond with data, peer"
                                : "diamond with data, no peer");

        if ((s.st.events != want_ev || s.st.waits != want_wait) && !bad[0]) {
            dump_record(f);
            snprintf(bad, sizeof bad,
                     "diamond with data (peer=%d), launch %d: %llu events, "
                     "%llu waits, expected %u and %u (the minimum is %u)",
                     f->peer, l + 1, (unsigned long long)s.st.events,
                     (unsigned long long)s.st.waits, want_ev, want_wait, min);
        }
        assert_int_equal(s.st.devices_used, 2);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_read(w, 0, v, sizeof v));
    for (unsigned i = 0; i < M; i++)
        assert_true(v[i] == 14); /* (2 * 3 + 1) * 2 */
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
    check(weft_buffer_destroy(w));
    if (bad[0])
        fail_msg("%s", bad);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        {"chain", test_chain, setup, teardown, &peer_on},
        {"fork_join_one_device", test_fork_join_one_device, setup, teardown,
         &peer_on},
        {"lane_ops", test_lane_ops, setup, teardown, &peer_on},
        {"diamond_two_devices", test_diamond_two_devices, setup, teardown,
         &peer_on},
        {"two_chains_joined", test_two_chains_joined, setup, teardown,
         &peer_on},
        {"two_chains_one_device", test_two_chains_one_device, setup, teardown,
         &peer_on},
        {"implied_edge", test_implied_edge, setup, teardown, &peer_on},
        {"fan/peer", test_fan, setup, teardown, &peer_on},
        {"fan/nopeer", test_fan, setup, teardown, &peer_off},
        {"chain_with_upload", test_chain_with_upload, setup, teardown,
         &peer_on},
        {"diamond_with_data/peer", test_diamond_with_data, setup, teardown,
         &peer_on},
        {"diamond_with_data/nopeer", test_diamond_with_data, setup, teardown,
         &peer_off},
    };

    /* This test chooses its machine itself. */
    unsetenv("WEFT_DEVICES");
    unsetenv("WEFT_SIM");
    unsetenv("WEFT_PLACE");
    unsetenv("WEFT_DEVICE_MEM_LIMIT");
    return wt_run_group(argc, argv, tests, NULL, NULL);
}
