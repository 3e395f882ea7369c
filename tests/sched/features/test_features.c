/*
 * Driver-level features of the public API on the devices of WEFT_DEVICES
 * (host, sim, OpenCL on PoCL, CUDA where there is a GPU; the CUDA case
 * exits 77, skipped, elsewhere): per-node device timings of a launch,
 * executable graphs of high priority, page-locked host memory, build logs
 * and module names, the devices placement chooses among, host tasks that
 * return a status.
 *
 * Each case checks what a user sees through weft.h.
 */
#include "wt_test.h"

#include "sched/exec.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include "drivers/cuda/internal.h"
#include "drivers/sim/sim.h"
#include "sched/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { N = 4096, K = 5 };
/* How far a device's times placed on the host clock may be off. */
#define SLACK_NS 1000000u

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_advance;

static int setup(void **state)
{
    (void)state;
    return wt_kernels_setup(&devs, &mod, "advance", &k_advance);
}

static int teardown(void **state)
{
    (void)state;
    return wt_kernels_teardown(&devs, mod);
}

static void add_advance(weft_graph *g, weft_buffer *b, weft_node *node)
{
    weft_arg args[3] = {
        weft_arg_buffer(b, 0, N * 4, WEFT_READ_WRITE),
        weft_arg_u32(K),
        weft_arg_i64(N),
    };

    check(weft_graph_add_kernel(g, k_advance, weft_dims1(N), args, 3, node));
}

/* ---- per-node timings --------------------------------------------------- */

static void host_spin(void *const *ptrs, void *user)
{
    volatile uint32_t *x = ptrs[0];

    (void)user;
    for (unsigned r = 0; r < 64; r++)
        for (unsigned i = 0; i < N; i++)
            x[i] = x[i] + 1;
}

/*
 * write -> advance -> advance -> host task -> read, and an empty node: each
 * node with work is timed, in the order the dependencies impose; the empty
 * node has none; turning timings off leaves the next launch untimed.
 */
static void test_timings(void **state)
{
    static uint32_t in[N], out[N];
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    weft_node nw, k1, k2, nh, nr, ne;
    weft_node_timing t[6];
    weft_access_desc acc;

    (void)state;
    for (unsigned i = 0; i < N; i++)
        in[i] = i;
    check(weft_buffer_create(devs.rt, N * 4, &b));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, b, 0, in, N * 4, &nw));
    add_advance(g, b, &k1);
    add_advance(g, b, &k2);
    /* One device: its times share one origin on the host clock. */
    check(weft_graph_set_device(g, k1, weft_runtime_device(devs.rt, 0)));
    check(weft_graph_set_device(g, k2, weft_runtime_device(devs.rt, 0)));
    acc = (weft_access_desc)weft_access_range(b, 0, N * 4, WEFT_READ_WRITE);
    check(weft_graph_add_host(g, host_spin, NULL, &acc, 1, &nh));
    check(weft_graph_add_read(g, b, 0, out, N * 4, &nr));
    check(weft_graph_add_empty(g, &ne));
    check(weft_graph_instantiate(g, NULL, &e));

    t[0].size = sizeof t[0];
    assert_int_equal(weft_exec_node_timing(e, k1, &t[0]), WEFT_ENOTFOUND);
    check(weft_exec_enable_timings(e, 1));
    for (int launch = 0; launch < 2; launch++) {
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
    }
    for (unsigned i = 0; i < N; i++)
        assert_int_equal(out[i],
                         wt_advance_value(wt_advance_value(i, K), K) + 64);
    {
        weft_node nodes[6] = {nw, k1, k2, nh, nr, ne};

        for (int i = 0; i < 6; i++) {
            memset(&t[i], 0, sizeof t[i]);
            t[i].size = sizeof t[i];
            check(weft_exec_node_timing(e, nodes[i], &t[i]));
            printf("# node %u: timed %u, %llu..%llu ns, busy %llu ns\n",
                   nodes[i], t[i].timed, (unsigned long long)t[i].start_ns,
                   (unsigned long long)t[i].end_ns,
                   (unsigned long long)t[i].busy_ns);
        }
    }
    /* The write moves bytes only where the buffer's device copy is not
     * the host's; every other node with work is timed. */
    for (int i = 1; i < 5; i++) {
        assert_int_equal(t[i].timed, 1);
        assert_true(t[i].end_ns >= t[i].start_ns);
    }
    assert_true(t[1].busy_ns > 0 && t[2].busy_ns > 0 && t[3].busy_ns > 0);
    /* k2 after k1 (same bytes, one device: exact), the host task ending
     * after k2 (the device's clock against the host's: within SLACK_NS; its
     * start counts its wait for k2's bytes, so only its end is ordered),
     * the read last. */
    assert_true(t[2].start_ns >= t[1].end_ns);
    assert_true(t[3].end_ns + SLACK_NS >= t[2].end_ns);
    assert_true(t[4].start_ns >= t[3].start_ns);
    assert_int_equal(t[5].timed, 0);
    assert_int_equal(t[5].end_ns, 0);

    check(weft_exec_enable_timings(e, 0));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    assert_int_equal(weft_exec_node_timing(e, k1, &t[0]), WEFT_ENOTFOUND);
    /* A smaller struct (an older caller) gets what fits. */
    check(weft_exec_enable_timings(e, 1));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    t[0].size = offsetof(weft_node_timing, end_ns);
    t[0].end_ns = 12345;
    check(weft_exec_node_timing(e, k1, &t[0]));
    assert_int_equal(t[0].timed, 1);
    assert_int_equal(t[0].end_ns, 12345);

    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/* ---- priorities ---------------------------------------------------------- */

/* What a native node saw of its queue's priority (CUDA: the stream's). */
typedef struct prio_seen {
    int calls;
    int priority;
} prio_seen;

static int prio_native(const weft_native_ctx *c, void *user)
{
    prio_seen *s = user;

    s->calls++;
    if (strcmp(weft_native_driver(c), "cuda") == 0) {
        if (!weft__cu.StreamGetPriority ||
            weft__cu.StreamGetPriority((CUstream)weft_native_queue(c),
                                       &s->priority) != CUDA_SUCCESS)
            return 1;
    }
    return 0;
}

/*
 * A graph instantiated with WEFT_PRIORITY_HIGH runs on queues of the
 * device's highest priority (every lane it used), one with the default on
 * priority 0; results are the same. On CUDA the native node's stream
 * reports that priority to cuStreamGetPriority.
 */
static void test_priority(void **state)
{
    static uint32_t in[N], out[N];
    static const weft_native_impl impls[] = {{"cuda", 0, prio_native},
                                             {"opencl", 0, prio_native},
                                             {"host", 0, prio_native},
                                             {"sim", 0, prio_native}};
    const weft_device *dev = weft_runtime_device(devs.rt, 0);
    weft_device_info info = {.size = sizeof info};
    weft_access_desc acc;

    (void)state;
    check(weft_device_get_info(dev, &info));
    printf("# queue priorities %d (low) .. %d (high)\n",
           info.queue_priority_low, info.queue_priority_high);
    for (unsigned i = 0; i < N; i++)
        in[i] = i;
    for (int high = 0; high < 2; high++) {
        weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
        weft__plan_lane_count lc[64];
        prio_seen seen = {0, 12345};
        weft_buffer *b;
        weft_graph *g;
        weft_exec *e;
        weft_node k;
        unsigned n;

        o.priority = high ? WEFT_PRIORITY_HIGH : WEFT_PRIORITY_DEFAULT;
        o.device = dev;
        check(weft_buffer_create(devs.rt, N * 4, &b));
        check(weft_graph_create(devs.rt, &g));
        check(weft_graph_add_write(g, b, 0, in, N * 4, NULL));
        add_advance(g, b, &k);
        acc = (weft_access_desc)weft_access_range(b, 0, N * 4, WEFT_READ_WRITE);
        check(weft_graph_add_native(g, impls, 4, &acc, 1, &seen, NULL));
        check(weft_graph_add_read(g, b, 0, out, N * 4, NULL));
        check(weft_graph_instantiate(g, &o, &e));
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        for (unsigned i = 0; i < N; i++)
            assert_int_equal(out[i], wt_advance_value(i, K));
        /* CUDA fills the range in with the device's first context. */
        check(weft_device_get_info(dev, &info));
        n = weft__plan_lane_counts(e->plan, lc, 64);
        assert_true(n > 0);
        for (unsigned i = 0; i < n; i++)
            assert_int_equal(lc[i].priority,
                             high ? info.queue_priority_high : 0);
        assert_int_equal(seen.calls, 1);
        if (strcmp(info.driver, "cuda") == 0)
            assert_int_equal(seen.priority, high ? info.queue_priority_high
                                                 : info.queue_priority_low);
        check(weft_exec_destroy(e));
        check(weft_graph_destroy(g));
        check(weft_buffer_destroy(b));
    }
}

enum { PR_CHUNK = 1024, PR_NCHUNK = 9 };

static void add_advance_chunk(weft_graph *g, weft_buffer *b, unsigned c,
                              unsigned items, weft_node *node)
{
    weft_arg args[3] = {
        weft_arg_buffer(b, (size_t)c * PR_CHUNK * 4, (size_t)items * 4,
                        WEFT_READ_WRITE),
        weft_arg_u32(K),
        weft_arg_i64(items),
    };

    check(
        weft_graph_add_kernel(g, k_advance, weft_dims1(items), args, 3, node));
}

/*
 * Priorities per node: eight independent normal kernels (chunks 1 to 8),
 * then a normal kernel A and a high one H after it (both on half of chunk
 * 0). H and A, which H waits for, are issued first; H goes on the
 * device's high lane, whose queue has the device's highest priority, the
 * others on normal lanes. Results are those of insertion order. On a sim
 * device (one compute engine, operations placed as they are issued) A
 * and H start before every normal kernel in virtual time, and the
 * record shows H's queue priority.
 */
static void test_node_priority(void **state)
{
    static uint32_t data[PR_NCHUNK * PR_CHUNK];
    weft__device *d0 = wt_device(&devs, 0);
    weft_device_info info = {.size = sizeof info};
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft__plan_lane_count lc[64];
    weft_node a, h, k;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    unsigned n, high_lanes = 0;

    (void)state;
    for (unsigned i = 0; i < PR_NCHUNK * PR_CHUNK; i++)
        data[i] = i;
    o.device = weft_runtime_device(devs.rt, 0);
    o.native_graphs = WEFT_NATIVE_GRAPHS_OFF;
    check(weft_buffer_create(devs.rt, sizeof data, &b));
    check(weft_buffer_write(b, 0, data, sizeof data));
    check(weft_graph_create(devs.rt, &g));
    for (unsigned c = 1; c < PR_NCHUNK; c++)
        add_advance_chunk(g, b, c, PR_CHUNK, NULL);
    add_advance_chunk(g, b, 0, PR_CHUNK / 2, &a);
    add_advance_chunk(g, b, 0, PR_CHUNK / 2, &h);
    check(weft_graph_set_priority(g, h, WEFT_PRIORITY_HIGH));
    check(weft_graph_set_priority(g, 0, WEFT_PRIORITY_DEFAULT));
    check(weft_graph_instantiate(g, &o, &e));
    /* The issue order: A, H, then the others in insertion order. */
    assert_int_equal(e->order[0], a);
    assert_int_equal(e->order[1], h);
    for (unsigned i = 2; i < PR_NCHUNK + 1; i++)
        assert_int_equal(e->order[i], i - 2);
    assert_int_equal(weft__plan_node_lane(e->plan, h) % WEFT__LANE_SLOTS,
                     WEFT__HIGH_LANE);
    for (k = 0; k < h; k++)
        assert_true(weft__plan_node_lane(e->plan, k) % WEFT__LANE_SLOTS <
                    WEFT__HIGH_LANE);
    check(weft_exec_launch(e)); /* the chunks go to the device */
    check(weft_exec_wait(e));
    if (strcmp(d0->drv->name, "sim") == 0)
        weft__sim_record_clear(d0);
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_device_get_info(o.device, &info));
    n = weft__plan_lane_counts(e->plan, lc, 64);
    for (unsigned i = 0; i < n; i++) {
        int hl = lc[i].slot == WEFT__HIGH_LANE;

        high_lanes += hl;
        assert_int_equal(lc[i].priority, hl ? info.queue_priority_high : 0);
    }
    assert_int_equal(high_lanes, 1);
    if (strcmp(d0->drv->name, "sim") == 0) {
        size_t nops;
        const weft__sim_op *r = weft__sim_record(d0, &nops);
        uint64_t first_normal = UINT64_MAX, a_start = 0, h_start = 0;
        unsigned nk = 0, nh = 0;

        assert_int_equal(info.queue_priority_high, -1);
        for (size_t i = 0; i < nops; i++) {
            if (r[i].kind != WEFT__SIM_KERNEL)
                continue;
            nk++;
            if (r[i].items == PR_CHUNK)
                first_normal = WEFT__MIN(first_normal, r[i].start_ns);
            else if (r[i].priority == -1)
                h_start = r[i].start_ns, nh++;
            else
                a_start = r[i].start_ns;
            assert_int_equal(
                r[i].priority,
                r[i].items == PR_CHUNK / 2 && r[i].priority == -1 ? -1 : 0);
        }
        printf("# sim: A at %llu ns, H at %llu ns, first normal at %llu ns\n",
               (unsigned long long)a_start, (unsigned long long)h_start,
               (unsigned long long)first_normal);
        assert_int_equal(nk, PR_NCHUNK + 1);
        assert_int_equal(nh, 1);
        assert_true(a_start < h_start);
        assert_true(h_start < first_normal);
    }
    check(weft_buffer_read(b, 0, data, sizeof data));
    for (unsigned i = 0; i < PR_NCHUNK * PR_CHUNK; i++) {
        uint32_t want = i;

        for (int l = 0; l < 2; l++) {
            want = wt_advance_value(want, K);
            if (i < PR_CHUNK / 2)
                want = wt_advance_value(want, K);
        }
        if (i >= PR_CHUNK / 2 && i < PR_CHUNK)
            want = i;
        assert_int_equal(data[i], want);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/* ---- page-locked host memory --------------------------------------------- */

enum { BIG = 1 << 20 }; /* past the staging threshold */

/* One launch of advance over BIG bytes of host memory at p, on device d:
 * what it moved pinned and staged. */
static void advance_over(uint32_t *p, unsigned d, uint64_t *pinned,
                         uint64_t *staged)
{
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft_arg args[3];
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;

    for (unsigned i = 0; i < BIG / 4; i++)
        p[i] = i;
    check(weft_buffer_wrap(devs.rt, p, BIG, &b));
    args[0] = weft_arg_buffer(b, 0, BIG, WEFT_READ_WRITE);
    args[1] = weft_arg_u32(K);
    args[2] = weft_arg_i64(BIG / 4);
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_kernel(g, k_advance, weft_dims1(BIG / 4), args, 3,
                                NULL));
    o.device = weft_runtime_device(devs.rt, d);
    check(weft_graph_instantiate(g, &o, &e));
    check(weft_runtime_get_stats(devs.rt, &s0));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_buffer_sync_host(b));
    check(weft_runtime_get_stats(devs.rt, &s1));
    for (unsigned i = 0; i < BIG / 4; i++)
        assert_int_equal(p[i], wt_advance_value(i, K));
    *pinned = s1.pinned_bytes - s0.pinned_bytes;
    *staged = s1.staged_bytes - s0.staged_bytes;
    /* The block is held while the buffer wraps it. */
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/*
 * weft_host_alloc's memory crosses to every device and back pinned (no
 * staging), whichever device's driver made it (PoCL: the other device's
 * context registered it), where memory of malloc goes through the
 * staging pool the first time; a buffer that wraps it holds it; freed, it
 * is gone.
 */
static void test_host_alloc(void **state)
{
    const weft__device *dev = wt_device(&devs, 0);
    uint64_t pinned, staged;
    uint32_t *p, *q;
    weft_buffer *b;

    (void)state;
    check(weft_host_alloc(devs.rt, BIG, (void **)&p));
    assert_non_null(p);
    /* Plain memory (no device pins host memory) is page-aligned. */
    {
        int pins = 0;

        for (unsigned d = 0; d < devs.n; d++)
            pins |= !wt_device(&devs, d)->drv->memory_is_host &&
                    wt_device(&devs, d)->props.pinned_host;
        if (!pins)
            assert_int_equal((uintptr_t)p % 4096, 0);
    }
    for (unsigned d = 0; d < devs.n; d++) {
        const weft__device *dd = wt_device(&devs, d);

        advance_over(p, d, &pinned, &staged);
        printf("# weft_host_alloc, device %u (%s): %llu bytes pinned, %llu "
               "staged\n",
               d, dd->name, (unsigned long long)pinned,
               (unsigned long long)staged);
        assert_int_equal(staged, 0);
        if (!dd->drv->memory_is_host)
            assert_true(pinned >= 2 * (uint64_t)BIG);
    }

    q = malloc(BIG);
    assert_non_null(q);
    advance_over(q, 0, &pinned, &staged);
    printf("# malloc: %llu bytes pinned, %llu staged\n",
           (unsigned long long)pinned, (unsigned long long)staged);
    if (!dev->drv->memory_is_host)
        assert_true(staged > 0);
    free(q);

    check(weft_buffer_wrap(devs.rt, p + 16, 4096, &b));
    assert_int_equal(weft_host_free(devs.rt, p), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "wrapped by 1 live buffers"));
    check(weft_buffer_destroy(b));
    check(weft_host_free(devs.rt, p));
    assert_int_equal(weft_host_free(devs.rt, p), WEFT_EINVAL);
    check(weft_host_free(devs.rt, NULL));

    /* Each allocation inside fails in turn: an error, nothing left. */
    for (long n = 1;; n++) {
        void *x = NULL;
        int rc;

        weft__fault_arm(n, NULL);
        rc = weft_host_alloc(devs.rt, 4096, &x);
        weft__fault_disarm();
        if (rc == 0) {
            check(weft_host_free(devs.rt, x));
            break;
        }
        assert_null(x);
        assert_true(n < 50);
    }
}

/* ---- build logs -----------------------------------------------------------
 */

/*
 * A portable module named by its variant, whose source makes the compiler
 * warn (#warning): its log on every device it was compiled for (OpenCL,
 * CUDA) has the warning, and where nothing was compiled (host and sim
 * prefer the C functions) it is empty; portable source alone is compiled
 * for host and sim too (the C compiler's log). A constant unique to the
 * run keeps the compiled-kernel caches (weft's, PoCL's) from answering
 * instead of the compiler.
 */
static void test_build_log(void **state)
{
    char src[512], small[8], *log;
    static const weft_host_kernel host_k[] = {
        {"twice_f", wt_host_addone, 2, wt_addone_params, NULL, NULL, NULL}};
    weft_module_source hv[2] = {{WEFT_SOURCE_HOST, host_k, 1, NULL, NULL},
                                {WEFT_SOURCE_PORTABLE, src, 0, NULL, "warner"}};
    weft_module *m;
    size_t len = 0, len2 = 0;
    unsigned compiled = 0;

    (void)state;
    snprintf(src, sizeof src,
             "#warning weft_build_log_check\n"
             "WEFT_KERNEL void twice_f(WEFT_GLOBAL float *x, long n) {\n"
             "    long i = weft_global_id(0);\n"
             "    if (i < n) x[i] *= 2.0f + 0.0f * %ld.0f;\n"
             "}\n",
             (long)getpid() * 100000 + (long)(time(NULL) % 100000));
    /* Host and sim take a C function (unnamed variant), without a log. */
    check(weft_module_create(devs.rt, hv, 2, &m));
    assert_string_equal(weft_module_name(m), "warner");
    for (unsigned d = 0; d < devs.n; d++) {
        const weft_device *dev = weft_runtime_device(devs.rt, d);
        const weft__device *wd = wt_device(&devs, d);

        check(weft_module_build_log(m, dev, NULL, 0, &len));
        log = malloc(len + 1);
        assert_non_null(log);
        check(weft_module_build_log(m, dev, log, len + 1, &len2));
        assert_int_equal(len, len2);
        assert_int_equal(strlen(log), len);
        printf("# %s (%s): %zu bytes of log%s%s\n", wd->name, wd->drv->name,
               len, len ? ":\n# " : "", len ? log : "");
        if (wd->drv->source_kinds[0] != WEFT_SOURCE_HOST) {
            compiled++;
            assert_non_null(strstr(log, "weft_build_log_check"));
            /* The name, where the compiler's messages name files (#line):
             * clang-based ones (PoCL) do, NVIDIA's OpenCL does not. */
            if (!strstr(log, "warner")) {
                weft_device_info di = {.size = sizeof di};

                check(weft_device_get_info(dev, &di));
                if (!strstr(di.platform, "NVIDIA"))
                    fail_msg("%s: the log does not name the module", wd->name);
                printf("# %s: the log names no file\n", wd->name);
            }
            /* Truncated, terminated. */
            check(weft_module_build_log(m, dev, small, sizeof small, NULL));
            assert_int_equal(strlen(small), sizeof small - 1);
            assert_memory_equal(small, log, sizeof small - 1);
        } else {
            assert_int_equal(len, 0);
        }
        free(log);
    }
    printf("# %u devices compiled it\n", compiled);
    check(weft_module_destroy(m));

    /* weft_module_create_portable names its module "portable". */
    check(weft_module_create_portable(devs.rt, src, NULL, &m));
    assert_string_equal(weft_module_name(m), "portable");
    for (unsigned d = 0; d < devs.n; d++) {
        const weft_device *dev = weft_runtime_device(devs.rt, d);
        char text[4096];

        check(weft_module_build_log(m, dev, text, sizeof text, NULL));
        assert_non_null(strstr(text, "weft_build_log_check"));
    }
    check(weft_module_destroy(m));
}

static void host_spin_none(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
}

/* ---- placement's candidates --------------------------------------------- */

enum { CHUNKS = 4, CHUNK = N / CHUNKS };

static int has_device(const weft_device *const *set, unsigned n,
                      const weft_device *d)
{
    for (unsigned i = 0; i < n; i++)
        if (set[i] == d)
            return 1;
    return 0;
}

/*
 * For every policy and scope, each kernel node's device after
 * instantiate is one of its candidates; a placed node has its device, a
 * host task and an empty node none, opts->device that one device; the
 * count says how many there are when devs is too short.
 */
static void test_candidates(void **state)
{
    static const weft_place_policy policies[] = {
        WEFT_PLACE_DEFAULT, WEFT_PLACE_SINGLE, WEFT_PLACE_ROUND_ROBIN,
        WEFT_PLACE_LOCALITY, WEFT_PLACE_HEFT};
    static uint32_t in[N], out[N];
    const weft_device *cand[64];
    const weft_device *last = weft_runtime_device(devs.rt, devs.n - 1);
    weft_node k[CHUNKS], nh, ne;
    weft_access_desc acc;
    weft_buffer *b;
    weft_graph *g;
    unsigned n, kinds = 0;

    (void)state;
    for (unsigned i = 0; i < N; i++)
        in[i] = i;
    check(weft_buffer_create(devs.rt, N * 4, &b));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, b, 0, in, N * 4, NULL));
    for (int c = 0; c < CHUNKS; c++) {
        weft_arg args[3] = {
            weft_arg_buffer(b, (size_t)c * CHUNK * 4, CHUNK * 4,
                            WEFT_READ_WRITE),
            weft_arg_u32(K),
            weft_arg_i64(CHUNK),
        };

        check(weft_graph_add_kernel(g, k_advance, weft_dims1(CHUNK), args, 3,
                                    &k[c]));
    }
    acc = (weft_access_desc)weft_access_range(b, 0, N * 4, WEFT_READ);
    check(weft_graph_add_host(g, host_spin_none, NULL, &acc, 1, &nh));
    check(weft_graph_add_read(g, b, 0, out, N * 4, NULL));
    check(weft_graph_add_empty(g, &ne));

    check(weft_graph_candidate_devices(g, nh, NULL, cand, 64, &n));
    assert_int_equal(n, 0);
    check(weft_graph_candidate_devices(g, ne, NULL, NULL, 0, &n));
    assert_int_equal(n, 0);
    for (int scope = WEFT_PLACE_SCOPE_DRIVER; scope <= WEFT_PLACE_SCOPE_ALL;
         scope++)
        for (unsigned p = 0; p < WEFT__COUNTOF(policies); p++) {
            weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
            weft_exec *e;

            o.policy = policies[p];
            o.place_scope = (weft_place_scope)scope;
            check(weft_graph_instantiate(g, &o, &e));
            for (int c = 0; c < CHUNKS; c++) {
                const weft_device *d = weft_exec_node_device(e, k[c]);

                check(weft_graph_candidate_devices(g, k[c], &o, cand, 64, &n));
                assert_true(n >= 1 && n <= devs.n);
                assert_true(has_device(cand, n, d));
                for (unsigned i = 0; i < n; i++)
                    assert_true(weft_kernel_supports(k_advance, cand[i]));
                if (policies[p] == WEFT_PLACE_SINGLE)
                    assert_int_equal(n, 1);
                kinds |= 1u << (n > 1);
            }
            check(weft_exec_launch(e));
            check(weft_exec_wait(e));
            for (unsigned i = 0; i < N; i++)
                assert_int_equal(out[i], wt_advance_value(i, K));
            check(weft_exec_destroy(e));
        }
    /* Two devices of one driver: the unplaced kernels may go to either. */
    if (devs.n >= 2)
        assert_true(kinds & 2);
    /* Too short a devs: the count says how many. */
    check(weft_graph_candidate_devices(g, k[0], NULL, cand, 1, &n));
    assert_true(n >= 1);
    /* opts->device: that one, for every kernel. */
    {
        weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;

        o.device = last;
        check(weft_graph_candidate_devices(g, k[1], &o, cand, 64, &n));
        assert_int_equal(n, 1);
        assert_ptr_equal(cand[0], last);
        check(weft_graph_candidate_devices(g, nh, &o, cand, 64, &n));
        assert_int_equal(n, 0);
    }
    /* A placed node: its device. */
    check(weft_graph_set_device(g, k[2], last));
    check(weft_graph_candidate_devices(g, k[2], NULL, cand, 64, &n));
    assert_int_equal(n, 1);
    assert_ptr_equal(cand[0], last);
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
}

/* ---- host tasks with a status -------------------------------------------- */

typedef struct status_run {
    int ret;       /* what the task returns */
    unsigned runs; /* atomic */
} status_run;

/* Adds 1 to its range unless it fails. */
static int status_task(void *const *ptrs, void *user)
{
    status_run *r = user;
    uint32_t *x = ptrs[0];

    __atomic_add_fetch(&r->runs, 1, __ATOMIC_RELAXED);
    if (r->ret)
        return r->ret;
    for (unsigned i = 0; i < N / 2; i++)
        x[i] += 1;
    return 0;
}

/*
 * write -> status task (first half) -> advance (first half), and advance
 * (second half) beside them, then a read: a task that returns 7 fails the
 * launch naming it, the advance after it is canceled, the independent
 * one completes; returning 0 again, the next launch succeeds. Also a graph
 * of host tasks alone (which otherwise runs without an issue).
 */
static void test_host_status(void **state)
{
    static uint32_t in[N], out[N];
    status_run r = {0, 0};
    weft_access_desc acc;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    weft_node nt;
    int rc;

    (void)state;
    for (unsigned i = 0; i < N; i++)
        in[i] = i;
    check(weft_buffer_create(devs.rt, N * 4, &b));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, b, 0, in, N * 4, NULL));
    acc = (weft_access_desc)weft_access_range(b, 0, N / 2 * 4, WEFT_READ_WRITE);
    check(weft_graph_add_host_status(g, status_task, &r, &acc, 1, &nt));
    for (int half = 0; half < 2; half++) {
        weft_arg args[3] = {
            weft_arg_buffer(b, (size_t)half * N / 2 * 4, N / 2 * 4,
                            WEFT_READ_WRITE),
            weft_arg_u32(K),
            weft_arg_i64(N / 2),
        };

        check(weft_graph_add_kernel(g, k_advance, weft_dims1(N / 2), args, 3,
                                    NULL));
    }
    check(weft_graph_add_read(g, b, N / 2 * 4, out + N / 2, N / 2 * 4, NULL));
    check(weft_graph_instantiate(g, NULL, &e));

    r.ret = 7;
    memset(out, 0, sizeof out);
    check(weft_exec_launch(e));
    rc = weft_exec_wait(e);
    printf("# %s\n", weft_last_error());
    assert_int_equal(rc, WEFT_EIO);
    assert_non_null(strstr(weft_last_error(), "returned 7"));
    {
        char node[32];

        snprintf(node, sizeof node, "node %u", nt);
        assert_non_null(strstr(weft_last_error(), node));
    }
    assert_int_equal(weft_exec_status(e), WEFT_EIO);
    assert_int_equal(r.runs, 1);
    /* The independent half ran; the first half kept the write's bytes
     * (the advance after the task was canceled). */
    for (unsigned i = N / 2; i < N; i++)
        assert_int_equal(out[i], wt_advance_value(i, K));
    check(weft_buffer_read(b, 0, out, N / 2 * 4));
    for (unsigned i = 0; i < N / 2; i++)
        assert_int_equal(out[i], i);

    r.ret = 0;
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    check(weft_buffer_read(b, 0, out, N * 4));
    for (unsigned i = 0; i < N / 2; i++)
        assert_int_equal(out[i], wt_advance_value(i + 1, K));
    for (unsigned i = N / 2; i < N; i++)
        assert_int_equal(out[i], wt_advance_value(i, K));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));

    /* Host tasks alone: status task -> plain task after it (canceled). */
    {
        weft_node n1;

        check(weft_graph_create(devs.rt, &g));
        check(weft_graph_add_host_status(g, status_task, &r, &acc, 1, &n1));
        check(weft_graph_add_host(g, host_spin, NULL, &acc, 1, NULL));
        check(weft_graph_instantiate(g, NULL, &e));
        for (int launch = 0; launch < 3; launch++) {
            uint32_t before[N / 2], after[N / 2];

            r.ret = launch == 1 ? -3 : 0;
            check(weft_buffer_read(b, 0, before, sizeof before));
            check(weft_exec_launch(e));
            rc = weft_exec_wait(e);
            check(weft_buffer_read(b, 0, after, sizeof after));
            if (launch == 1) {
                assert_int_equal(rc, WEFT_EIO);
                assert_non_null(strstr(weft_last_error(), "returned -3"));
                /* Neither the task nor the one after it changed them. */
                assert_memory_equal(before, after, sizeof before);
            } else {
                check(rc);
                assert_int_equal(after[0], before[0] + 1 + 64);
            }
        }
        check(weft_exec_destroy(e));
        check(weft_graph_destroy(g));
    }
    check(weft_buffer_destroy(b));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_timings),       cmocka_unit_test(test_priority),
        cmocka_unit_test(test_node_priority), cmocka_unit_test(test_host_alloc),
        cmocka_unit_test(test_build_log),     cmocka_unit_test(test_candidates),
        cmocka_unit_test(test_host_status),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
