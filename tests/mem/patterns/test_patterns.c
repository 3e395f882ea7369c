/*
 * Memory patterns: for each access pattern, the bytes that crossed each
 * link (weft_runtime_get_stats, and on sim the driver's record too) must
 * EQUAL the minimum, derived by hand next to each case. Runs on two
 * devices (WEFT_SIM=devices=2 or WEFT_HOST_DEVICES=2); whether the two
 * reach each other directly decides what the minimum is.
 *
 * N is the size of every buffer below: 16 KiB, i.e. 4096 uint32.
 */
#include "wt_test.h"

#include "drivers/sim/sim.h"
#include "mem/buffer.h"
#include "wt_kernels.h"
#include "wt_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { M = 4096, N = M * 4 };

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_addone, *k_twice;
static weft_device *dev0, *dev1;
static int peer; /* dev0 and dev1 copy to each other directly */

/* What moved between two snapshots, from weft and from the sim record. */
typedef struct moved {
    weft_stats a;
    uint64_t sim_h2d, sim_d2h, sim_peer;
} moved;

static void sim_sums(uint64_t *h2d, uint64_t *d2h, uint64_t *p)
{
    weft__device *d = wt_device(&devs, 0);

    *h2d = *d2h = *p = 0;
    if (d->drv != &weft__driver_sim)
        return;
    for (int i = 0; i < 2; i++) {
        *h2d += weft__sim_bytes(d, WEFT__SIM_H2D, WEFT__SIM_HOST, i);
        *d2h += weft__sim_bytes(d, WEFT__SIM_D2H, i, WEFT__SIM_HOST);
        *p += weft__sim_bytes(d, WEFT__SIM_PEER, i, 1 - i);
    }
}

static void snap(moved *m)
{
    m->a.size = sizeof m->a;
    check(weft_runtime_get_stats(devs.rt, &m->a));
    sim_sums(&m->sim_h2d, &m->sim_d2h, &m->sim_peer);
}

/*
 * Since the snapshot: h2d, d2h and peer bytes must equal the minimum, in
 * weft's counters and (on sim) in the record of what the driver did.
 */
static void expect_moved(const moved *m, uint64_t h2d, uint64_t d2h, uint64_t p,
                         const char *what)
{
    moved now;

    snap(&now);
    if (now.a.h2d_bytes - m->a.h2d_bytes != h2d ||
        now.a.d2h_bytes - m->a.d2h_bytes != d2h ||
        now.a.peer_bytes - m->a.peer_bytes != p)
        fail_msg("%s: moved h2d %llu d2h %llu peer %llu, minimum %llu %llu "
                 "%llu",
                 what, (unsigned long long)(now.a.h2d_bytes - m->a.h2d_bytes),
                 (unsigned long long)(now.a.d2h_bytes - m->a.d2h_bytes),
                 (unsigned long long)(now.a.peer_bytes - m->a.peer_bytes),
                 (unsigned long long)h2d, (unsigned long long)d2h,
                 (unsigned long long)p);
    if (wt_device(&devs, 0)->drv == &weft__driver_sim) {
        assert_int_equal(now.sim_h2d - m->sim_h2d, h2d);
        assert_int_equal(now.sim_d2h - m->sim_d2h, d2h);
        assert_int_equal(now.sim_peer - m->sim_peer, p);
    }
}

static int setup(void **state)
{
    weft_device_info info = {.size = sizeof info},
                     info1 = {.size = sizeof info1};
    int can = 0;

    (void)state;
    wt_devices_open(&devs);
    wt_devices_need(&devs, NULL, 2, "the patterns need two devices");
    dev0 = weft_runtime_device(devs.rt, 0);
    dev1 = weft_runtime_device(devs.rt, 1);
    if (weft_device_can_access_peer(dev0, dev1, &can) < 0 ||
        weft_device_get_info(dev0, &info) < 0 ||
        weft_device_get_info(dev1, &info1) < 0 ||
        wt_kernels_module(devs.rt, &mod) < 0 ||
        weft_module_get_kernel(mod, "addone", &k_addone) < 0 ||
        weft_module_get_kernel(mod, "twice", &k_twice) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    peer = can;
    printf("# %s and %s, peer access %d\n", info.name, info1.name, peer);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    weft_module_destroy(mod);
    wt_devices_close(&devs);
    return 0;
}

static void add_twice(weft_graph *g, weft_buffer *dst, weft_buffer *src,
                      weft_device *on)
{
    weft_arg a[] = {weft_arg_buffer(dst, 0, N, WEFT_WRITE),
                    weft_arg_buffer(src, 0, N, WEFT_READ), weft_arg_i64(M)};
    weft_node n;

    check(weft_graph_add_kernel(g, k_twice, weft_dims1(M), a, 3, &n));
    check(weft_graph_set_device(g, n, on));
}

static void add_addone(weft_graph *g, weft_buffer *x, size_t off, size_t size,
                       weft_device *on)
{
    weft_arg a[] = {weft_arg_buffer(x, off, size, WEFT_READ_WRITE),
                    weft_arg_i64((int64_t)(size / 4))};
    weft_node n;

    check(weft_graph_add_kernel(g, k_addone, weft_dims1((uint32_t)(size / 4)),
                                a, 2, &n));
    check(weft_graph_set_device(g, n, on));
}

static void run(weft_exec *e)
{
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
}

static void expect_values(weft_buffer *b, uint32_t base, uint32_t mul,
                          uint32_t add)
{
    static uint32_t out[M];

    check(weft_buffer_read(b, 0, out, N));
    for (uint32_t i = 0; i < M; i++)
        if (out[i] != (base + i) * mul + add)
            fail_msg("element %u is %u, want %u", i, out[i],
                     (base + i) * mul + add);
}

/*
 * One read-only input shared by four kernels on one device; then the same
 * graph again, then again after the user rewrote a quarter of the input.
 * First launch: `in` crosses once (N h2d), the outputs are written whole
 * on the device (nothing to bring), and nothing goes back: (N, 0, 0); the
 * three later kernels found N bytes each already there. Second launch:
 * every range is still valid where it is needed: (0, 0, 0). After
 * weft_buffer_invalidate of [0, N/4): only that quarter is stale on the
 * device: (N/4, 0, 0).
 */
static void test_shared_input_one_device(void **state)
{
    static uint32_t data[M];
    weft_buffer *in, *out[4];
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    for (uint32_t i = 0; i < M; i++)
        data[i] = i;
    check(weft_buffer_wrap(devs.rt, data, N, &in));
    check(weft_graph_create(devs.rt, &g));
    for (int k = 0; k < 4; k++) {
        check(weft_buffer_create(devs.rt, N, &out[k]));
        add_twice(g, out[k], in, dev0);
    }
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    run(e);
    expect_moved(&m, N, 0, 0, "first launch");
    {
        uint64_t cached = m.a.cached_bytes;

        snap(&m);
        assert_int_equal(m.a.cached_bytes - cached, 3 * N);
    }
    run(e);
    expect_moved(&m, 0, 0, 0, "relaunch, inputs unchanged");
    for (uint32_t i = 0; i < M / 4; i++)
        data[i] = i + 1000;
    check(weft_buffer_invalidate(in, 0, N / 4));
    snap(&m);
    run(e);
    expect_moved(&m, N / 4, 0, 0, "relaunch after invalidating N/4");
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    {
        static uint32_t got[M];

        check(weft_buffer_read(out[3], 0, got, N));
        for (uint32_t i = 0; i < M; i++)
            assert_int_equal(got[i], 2 * (i < M / 4 ? i + 1000 : i));
    }
    for (int k = 0; k < 4; k++)
        check(weft_buffer_destroy(out[k]));
    check(weft_buffer_destroy(in));
}

/*
 * The same input read by kernels on both devices, alternating. It crosses
 * to dev0 from the host (N h2d); dev1 takes it from dev0 over the peer
 * link (N peer) when the two reach each other, else from the host, which
 * holds it too (another N h2d: the host is cheaper than a trip through
 * it). Later kernels find it in place.
 */
static void test_shared_input_two_devices(void **state)
{
    weft_buffer *in, *out[4];
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    check(weft_buffer_create(devs.rt, N, &in));
    check(weft_graph_create(devs.rt, &g));
    for (int k = 0; k < 4; k++) {
        check(weft_buffer_create(devs.rt, N, &out[k]));
        add_twice(g, out[k], in, k % 2 ? dev1 : dev0);
    }
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    run(e);
    expect_moved(&m, peer ? N : 2 * N, 0, peer ? N : 0, "two devices");
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    for (int k = 0; k < 4; k++)
        check(weft_buffer_destroy(out[k]));
    check(weft_buffer_destroy(in));
}

/*
 * Producer on dev0, consumer on dev1: `in` goes to dev0 (N h2d), the
 * produced `mid` is only on dev0 and goes to dev1 once (N peer; without
 * peer access through the host: N d2h + N h2d). Reading `out` back is the
 * only other traffic: N d2h from dev1.
 */
static void test_producer_consumer(void **state)
{
    static uint32_t data[M];
    weft_buffer *in, *mid, *out;
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    for (uint32_t i = 0; i < M; i++)
        data[i] = i;
    check(weft_buffer_wrap(devs.rt, data, N, &in));
    check(weft_buffer_create(devs.rt, N, &mid));
    check(weft_buffer_create(devs.rt, N, &out));
    check(weft_graph_create(devs.rt, &g));
    add_twice(g, mid, in, dev0);
    add_twice(g, out, mid, dev1);
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    run(e);
    expect_moved(&m, peer ? N : 2 * N, peer ? 0 : N, peer ? N : 0,
                 "producer/consumer");
    snap(&m);
    expect_values(out, 0, 4, 0);
    expect_moved(&m, 0, N, 0, "reading the result");
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(out));
    check(weft_buffer_destroy(mid));
    check(weft_buffer_destroy(in));
}

/*
 * x += 1 four times, alternating devices: x goes up once (N h2d), then
 * each of the three changes of device moves the modified x (3N peer, or
 * 3N d2h + 3N h2d through the host), and the final read brings N back.
 */
static void test_ping_pong(void **state)
{
    static uint32_t data[M];
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    for (uint32_t i = 0; i < M; i++)
        data[i] = i;
    check(weft_buffer_wrap(devs.rt, data, N, &x));
    check(weft_graph_create(devs.rt, &g));
    for (int k = 0; k < 4; k++)
        add_addone(g, x, 0, N, k % 2 ? dev1 : dev0);
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    run(e);
    expect_moved(&m, peer ? N : 4 * N, peer ? 0 : 3 * N, peer ? 3 * N : 0,
                 "ping-pong");
    snap(&m);
    check(weft_buffer_sync_host(x));
    expect_moved(&m, 0, N, 0, "sync_host after ping-pong");
    for (uint32_t i = 0; i < M; i++)
        assert_int_equal(data[i], i + 4);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

/*
 * A kernel that writes a quarter of x on dev0, when the host and dev0
 * both hold all of x: nothing goes up (dev0 has it), and reading all of x
 * back brings only the written quarter (N/4 d2h): the rest of the host
 * copy is still current.
 */
static void test_partial_write(void **state)
{
    static uint32_t data[M];
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    for (uint32_t i = 0; i < M; i++)
        data[i] = i;
    check(weft_buffer_wrap(devs.rt, data, N, &x));
    check(weft_graph_create(devs.rt, &g));
    add_addone(g, x, N / 4, N / 4, dev0);
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    run(e);
    /* Only the quarter the kernel reads and writes goes up. */
    expect_moved(&m, N / 4, 0, 0, "first partial write");
    check(weft_buffer_sync_host(x));
    snap(&m);
    run(e);
    expect_moved(&m, 0, 0, 0, "partial write, data in place");
    check(weft_buffer_sync_host(x));
    expect_moved(&m, 0, N / 4, 0, "sync_host after a partial write");
    for (uint32_t i = 0; i < M; i++)
        assert_int_equal(data[i], i + (i >= M / 4 && i < M / 2 ? 2 : 0));
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
}

static uint32_t seen_first;
static void look(void *ptr, size_t size, void *user)
{
    (void)size;
    (void)user;
    seen_first = *(const uint32_t *)ptr;
}

/*
 * A host map of the first eighth of x between two kernels on dev0: x goes
 * up once (N h2d), only the mapped eighth comes back for the map (N/8
 * d2h), and since the map only read it, dev0's copy is still current for
 * the second kernel: nothing more.
 */
static void test_map_in_the_middle(void **state)
{
    static uint32_t data[M];
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    for (uint32_t i = 0; i < M; i++)
        data[i] = i + 7;
    check(weft_buffer_wrap(devs.rt, data, N, &x));
    check(weft_graph_create(devs.rt, &g));
    add_addone(g, x, 0, N, dev0);
    check(weft_graph_add_map(g, x, 0, N / 8, WEFT_READ, look, NULL, NULL));
    add_addone(g, x, 0, N, dev0);
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    run(e);
    expect_moved(&m, N, N / 8, 0, "map in the middle");
    assert_int_equal(seen_first, 8);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    assert_int_equal(data[0], 9);
}

/* A graph of one kernel on dev0, out = 2 x in over n u32, instantiated. */
static weft_exec *twice_on_dev0(weft_buffer *out, weft_buffer *in, uint32_t n,
                                weft_graph **g)
{
    weft_arg a[] = {weft_arg_buffer(out, 0, (size_t)n * 4, WEFT_WRITE),
                    weft_arg_buffer(in, 0, (size_t)n * 4, WEFT_READ),
                    weft_arg_i64(n)};
    weft_exec *e;
    weft_node nd;

    check(weft_graph_create(devs.rt, g));
    check(weft_graph_add_kernel(*g, k_twice, weft_dims1(n), a, 3, &nd));
    check(weft_graph_set_device(*g, nd, dev0));
    check(weft_graph_instantiate(*g, NULL, &e));
    return e;
}

/*
 * Staging and registration: a wrapped buffer of 1 MiB read on dev0, three
 * launches with the input invalidated between them. The first crossing is
 * staged (pageable memory), the second registers the user memory once and
 * runs from it directly, the third too. Every launch moves the whole MiB.
 */
static void test_staged_then_registered(void **state)
{
    enum { BM = 1 << 18, BN = BM * 4 };
    uint32_t *data = malloc(BN);
    weft_buffer *in, *out;
    weft_graph *g;
    weft_exec *e;
    weft_stats s0, s1;
    moved m;

    (void)state;
    assert_non_null(data);
    for (uint32_t i = 0; i < BM; i++)
        data[i] = i;
    check(weft_buffer_wrap(devs.rt, data, BN, &in));
    check(weft_buffer_create(devs.rt, BN, &out));
    e = twice_on_dev0(out, in, BM, &g);
    s0.size = sizeof s0;
    check(weft_runtime_get_stats(devs.rt, &s0));
    for (int k = 0; k < 3; k++) {
        snap(&m);
        run(e);
        expect_moved(&m, BN, 0, 0, "wrapped MiB");
        check(weft_buffer_invalidate(in, 0, WEFT_WHOLE));
    }
    s1.size = sizeof s1;
    check(weft_runtime_get_stats(devs.rt, &s1));
    if (wt_device(&devs, 0)->drv == &weft__driver_host) {
        /* Host devices copy with memcpy: neither staged nor registered. */
        assert_int_equal(s1.staged_bytes - s0.staged_bytes, 0);
        assert_int_equal(s1.registered_buffers - s0.registered_buffers, 0);
    } else {
        assert_int_equal(s1.staged_bytes - s0.staged_bytes, BN);
        assert_int_equal(s1.registered_buffers - s0.registered_buffers, 1);
        assert_int_equal(s1.registered_bytes - s0.registered_bytes, BN);
        assert_int_equal(s1.pinned_bytes - s0.pinned_bytes, 2 * (uint64_t)BN);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(out));
    check(weft_buffer_destroy(in));
    free(data);
}

/*
 * A large wrapped buffer (16 MiB, over WEFT__REGISTER_AHEAD) is registered
 * by a thread of its own from its second crossing while its copies go on
 * staging: launches with the input invalidated between them, every one
 * moving the whole input and computing the right bytes, until the
 * registration is in (at most 20 s), then one more that copies from the
 * registered memory (pinned, not staged). A second such buffer is
 * destroyed right after its second crossing, its registration maybe still
 * running (its replicas wait for it).
 */
static void test_large_registered_ahead(void **state)
{
    enum { BM = 1 << 22, BN = BM * 4 };
    uint32_t *data = malloc(BN), *back = malloc(BN);
    weft_buffer *in, *out;
    weft_graph *g;
    weft_exec *e;
    weft_stats s0, s1;
    int launches = 0;
    moved m;

    (void)state;
    assert_non_null(data);
    assert_non_null(back);
    for (uint32_t i = 0; i < BM; i++)
        data[i] = 3 * i;
    check(weft_buffer_wrap(devs.rt, data, BN, &in));
    check(weft_buffer_create(devs.rt, BN, &out));
    e = twice_on_dev0(out, in, BM, &g);
    s0.size = s1.size = sizeof s0;
    check(weft_runtime_get_stats(devs.rt, &s0));
    for (uint64_t t0 = weft__now_ns();
         launches < 3 || weft__now_ns() - t0 < 20000000000ull;) {
        snap(&m);
        run(e);
        launches++;
        expect_moved(&m, BN, 0, 0, "wrapped 16 MiB");
        check(weft_buffer_invalidate(in, 0, WEFT_WHOLE));
        check(weft_runtime_get_stats(devs.rt, &s1));
        if (s1.registered_buffers != s0.registered_buffers ||
            wt_device(&devs, 0)->drv == &weft__driver_host)
            break;
        usleep(1000);
    }
    check(weft_buffer_read(out, 0, back, BN));
    for (uint32_t i = 0; i < BM; i++)
        if (back[i] != 6 * i)
            fail_msg("out[%u] = %u after %d launches", i, back[i], launches);
    printf("# registered after %d launches\n", launches);
    if (wt_device(&devs, 0)->drv == &weft__driver_host) {
        assert_int_equal(s1.registered_buffers - s0.registered_buffers, 0);
    } else {
        assert_int_equal(s1.registered_buffers - s0.registered_buffers, 1);
        assert_int_equal(s1.registered_bytes - s0.registered_bytes, BN);
        /* From now on: pinned, not staged. */
        check(weft_runtime_get_stats(devs.rt, &s0));
        run(e);
        check(weft_runtime_get_stats(devs.rt, &s1));
        assert_int_equal(s1.staged_bytes - s0.staged_bytes, 0);
        assert_int_equal(s1.pinned_bytes - s0.pinned_bytes, BN);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    /* Destroyed while its registration may still run. */
    check(weft_buffer_destroy(in));
    check(weft_buffer_wrap(devs.rt, data, BN, &in));
    e = twice_on_dev0(out, in, BM, &g);
    for (int k = 0; k < 2; k++) {
        run(e);
        check(weft_buffer_invalidate(in, 0, WEFT_WHOLE));
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(in));
    check(weft_buffer_destroy(out));
    free(data);
    free(back);
}

/*
 * A program's first launch: a write node of 1 MiB into a buffer no launch
 * has used, read by a kernel on dev0. The bytes go from the program's
 * memory to dev0 only: (BN, 0, 0), and the buffer's own host copy is not
 * written (it would be a copy on the issuing thread, then an upload from
 * it). The kernel's output read back checks the bytes. Relaunched: the
 * write moves the MiB again, still not through the host copy.
 */
static void test_first_write_goes_to_the_device(void **state)
{
    enum { BM = 1 << 18, BN = BM * 4 };
    uint32_t *data = malloc(BN), *back = malloc(BN);
    weft_buffer *in, *out;
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    assert_non_null(data);
    assert_non_null(back);
    for (uint32_t i = 0; i < BM; i++)
        data[i] = i;
    check(weft_buffer_create(devs.rt, BN, &in));
    check(weft_buffer_create(devs.rt, BN, &out));
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, in, 0, data, BN, NULL));
    {
        weft_arg a[] = {weft_arg_buffer(out, 0, BN, WEFT_WRITE),
                        weft_arg_buffer(in, 0, BN, WEFT_READ),
                        weft_arg_i64(BM)};
        weft_node n;

        check(weft_graph_add_kernel(g, k_twice, weft_dims1(BM), a, 3, &n));
        check(weft_graph_set_device(g, n, dev0));
    }
    check(weft_graph_add_read(g, out, 0, back, BN, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int k = 0; k < 2; k++) {
        snap(&m);
        run(e);
        expect_moved(&m, BN, BN, 0, "first write");
        if (weft__coherence_holders(&in->coh, 0, BN) & 1)
            fail_msg("launch %d: the write went through the buffer's host "
                     "copy",
                     k + 1);
        for (uint32_t i = 0; i < BM; i++)
            if (back[i] != 2 * i)
                fail_msg("launch %d: element %u is %u, want %u", k + 1, i,
                         back[i], 2 * i);
        memset(back, 0, BN);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(out));
    check(weft_buffer_destroy(in));
    free(back);
    free(data);
}

/* The smallest slice every device takes as a kernel argument's offset. */
static size_t slice_align(void)
{
    weft_device_info a = {.size = sizeof a}, b = {.size = sizeof b};

    check(weft_device_get_info(dev0, &a));
    check(weft_device_get_info(dev1, &b));
    return WEFT__MAX(16, WEFT__MAX(a.arg_offset_align, b.arg_offset_align));
}

/*
 * A small root touched in tiny ranges, one kernel each, in shuffled order:
 * the first of them brings the whole root over in one copy (a copy that
 * small costs its fixed price, not its bytes), and the others find their
 * bytes there: (N, 0, 0) in one H2D copy. Relaunched: (0, 0, 0).
 */
static void test_tiny_ranges_of_a_small_root(void **state)
{
    static uint32_t data[M];
    size_t s = slice_align(), n = N / s;
    size_t *order = calloc(n, sizeof *order);
    weft_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    assert_non_null(order);
    for (uint32_t i = 0; i < M; i++)
        data[i] = 3 * i;
    for (size_t i = 0; i < n; i++)
        order[i] = i;
    srand(7);
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    check(weft_buffer_wrap(devs.rt, data, N, &x));
    check(weft_graph_create(devs.rt, &g));
    for (size_t i = 0; i < n; i++)
        add_addone(g, x, order[i] * s, s, dev0);
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    check(weft_runtime_get_stats(devs.rt, &before));
    run(e);
    check(weft_runtime_get_stats(devs.rt, &after));
    expect_moved(&m, N, 0, 0, "first launch of tiny ranges");
    assert_int_equal(after.h2d_copies - before.h2d_copies, 1);
    snap(&m);
    run(e);
    expect_moved(&m, 0, 0, 0, "tiny ranges, data in place");
    check(weft_buffer_sync_host(x));
    for (uint32_t i = 0; i < M; i++)
        assert_int_equal(data[i], 3 * i + 2);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    free(order);
}

/*
 * A root larger than one extent takes (2 MiB and a bit): first 256 small
 * slices in shuffled order, each its own extent on dev0, then ranges of 12
 * KiB that each cover several of those extents and the bytes between
 * them, so that the extents merge. No range of it is small enough to bring
 * more than itself: the bytes moved are exactly the union of the ranges
 * (the slices' bytes moved once, before the merges), and the values are
 * each element plus the number of ranges holding it, per launch.
 */
static void test_many_extents_of_a_large_root(void **state)
{
    enum { WORDS = (2 << 20) / 4 + 1024, SLICES = 256, WIDE = 12 << 10 };
    size_t s = slice_align(), stride = (size_t)WORDS * 4 / SLICES / s * s;
    uint32_t *data = calloc(WORDS, 4), *hits = calloc(WORDS, 4);
    size_t order[SLICES], covered = 0;
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    moved m;

    (void)state;
    assert_non_null(data);
    assert_non_null(hits);
    for (uint32_t i = 0; i < WORDS; i++)
        data[i] = i;
    for (size_t i = 0; i < SLICES; i++)
        order[i] = i;
    srand(11);
    for (size_t i = SLICES - 1; i > 0; i--) {
        size_t j = (size_t)rand() % (i + 1), t = order[i];

        order[i] = order[j];
        order[j] = t;
    }
    check(weft_buffer_wrap(devs.rt, data, (size_t)WORDS * 4, &x));
    check(weft_graph_create(devs.rt, &g));
    for (size_t i = 0; i < SLICES; i++) {
        add_addone(g, x, order[i] * stride, s, dev0);
        for (size_t w = order[i] * stride / 4; w < (order[i] * stride + s) / 4;
             w++)
            hits[w]++;
    }
    for (size_t off = stride / 2; off + WIDE <= (size_t)WORDS * 4;
         off += 5 * WIDE) {
        size_t lo = off / s * s;

        add_addone(g, x, lo, WIDE, dev0);
        for (size_t w = lo / 4; w < (lo + WIDE) / 4; w++)
            hits[w]++;
    }
    for (size_t w = 0; w < WORDS; w++)
        covered += hits[w] ? 4 : 0;
    check(weft_graph_instantiate(g, NULL, &e));
    snap(&m);
    run(e);
    expect_moved(&m, covered, 0, 0, "first launch over many extents");
    snap(&m);
    run(e);
    expect_moved(&m, 0, 0, 0, "many extents, data in place");
    check(weft_buffer_sync_host(x));
    for (uint32_t i = 0; i < WORDS; i++)
        if (data[i] != i + 2 * hits[i])
            fail_msg("element %u is %u, want %u", i, data[i], i + 2 * hits[i]);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    free(hits);
    free(data);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shared_input_one_device),
        cmocka_unit_test(test_shared_input_two_devices),
        cmocka_unit_test(test_producer_consumer),
        cmocka_unit_test(test_ping_pong),
        cmocka_unit_test(test_partial_write),
        cmocka_unit_test(test_map_in_the_middle),
        cmocka_unit_test(test_staged_then_registered),
        cmocka_unit_test(test_large_registered_ahead),
        cmocka_unit_test(test_first_write_goes_to_the_device),
        cmocka_unit_test(test_tiny_ranges_of_a_small_root),
        cmocka_unit_test(test_many_extents_of_a_large_root),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
