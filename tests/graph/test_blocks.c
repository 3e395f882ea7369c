/*
 * Blocks run end to end on the device WEFT_DEVICES names (host, sim with
 * real data, PoCL, CUDA): a padded row-major matrix computed tile by tile
 * by host tasks and by a kernel per tile (the tiles independent, their
 * bytes moved by the block forms of the copies), and the block transfer
 * nodes (write, read, copy, fill; 2-D and 3-D) round trip. Every result
 * is checked byte by byte, padding included, against the same work done
 * on the CPU.
 */
#include "wt_test.h"

#include "wt_devices.h"

#include "base/base.h"
#include "sched/exec.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static wt_devices devs;
static weft_module *mod;
static weft_kernel *k_tile;

/*
 * tile_advance(buffer u32 x, u32 k, u32 cols, u32 rows, u32 ld): for item
 * (i, j) of a 2-D grid, x[j * ld + i] = x[j * ld + i] * 3 + k where i <
 * cols and j < rows. x is a block's first element, ld its pitch in
 * elements.
 */
static void host_tile_advance(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t k = *(const uint32_t *)args[1];
    uint32_t cols = *(const uint32_t *)args[2];
    uint32_t rows = *(const uint32_t *)args[3];
    uint32_t ld = *(const uint32_t *)args[4];

    for (uint32_t ly = 0; ly < g->group_size[1]; ly++)
        for (uint32_t lx = 0; lx < g->group_size[0]; lx++) {
            uint64_t i = (uint64_t)g->group[0] * g->group_size[0] + lx;
            uint64_t j = (uint64_t)g->group[1] * g->group_size[1] + ly;

            if (i < cols && j < rows)
                x[j * ld + i] = x[j * ld + i] * 3u + k;
        }
}

static const weft_param_type tile_params[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_U32,
                                              WEFT_PARAM_U32, WEFT_PARAM_U32,
                                              WEFT_PARAM_U32};
static const weft_host_kernel tile_host[] = {
    {"tile_advance", host_tile_advance, 5, tile_params, NULL, NULL, NULL},
};
static const char tile_portable[] =
    "WEFT_KERNEL void tile_advance(WEFT_GLOBAL unsigned int *x,\n"
    "    unsigned int k, unsigned int cols, unsigned int rows,\n"
    "    unsigned int ld)\n"
    "{\n"
    "    long i = weft_global_id(0), j = weft_global_id(1);\n"
    "    if (i < cols && j < rows) x[j * ld + i] = x[j * ld + i] * 3u + k;\n"
    "}\n";

static int setup(void **state)
{
    const weft_module_source v[] = {
        {WEFT_SOURCE_HOST, tile_host, 1, NULL, "test_blocks"},
        {WEFT_SOURCE_PORTABLE, tile_portable, 0, NULL, "test_blocks"},
    };

    (void)state;
    wt_devices_open(&devs);
    if (weft_module_create(devs.rt, v, 2, &mod) < 0 ||
        weft_module_get_kernel(mod, "tile_advance", &k_tile) < 0) {
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

/*
 * A 45 x 37 matrix of u32 with padded rows: a leading dimension of 41, or
 * where device 0 wants kernel arguments aligned (PoCL: 128 bytes), the
 * next multiple of that; tiles of 16 rows of 8 columns (or the alignment's
 * columns, at most the matrix's) so that every tile starts aligned.
 */
enum { R = 45, C = 37, TR = 16, MAXLD = 1024 };
static unsigned LD, TC, TI, TJ;

static void geometry(void)
{
    weft_device_info info;
    unsigned a;

    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    check(weft_device_get_info(weft_runtime_device(devs.rt, 0), &info));
    a = info.arg_offset_align > 4 ? info.arg_offset_align / 4 : 1;
    LD = (C + 4 + a - 1) / a * a;
    TC = a > 8 ? a : 8;
    /* (an alignment wider than the matrix: one column of tiles) */
    if (TC > C)
        TC = C;
    TI = (R + TR - 1) / TR;
    TJ = (C + TC - 1) / TC;
    assert_true(LD + 16 <= MAXLD);
}

static uint32_t seed_value(size_t i)
{
    return (uint32_t)(i * 2654435761u) ^ 0x5a5a5a5au;
}

/* tile_advance over tile (ti, tj) of the reference m. */
static void ref_tile(uint32_t *m, unsigned ti, unsigned tj, uint32_t k)
{
    for (unsigned r = ti * TR; r < R && r < (ti + 1) * TR; r++)
        for (unsigned c = tj * TC; c < C && c < (tj + 1) * TC; c++)
            m[r * LD + c] = m[r * LD + c] * 3u + k;
}

/* k of tile (ti, tj) and pass p. */
static uint32_t tile_k(unsigned ti, unsigned tj, unsigned p)
{
    return ti * 100u + tj * 10u + p;
}

static void assert_bytes(const void *got, const void *want, size_t n)
{
    const unsigned char *g = got, *w = want;

    for (size_t i = 0; i < n; i++)
        if (g[i] != w[i])
            fail_msg("byte %zu: got 0x%02x, wanted 0x%02x", i, g[i], w[i]);
}

/* The host task of a tile: tile_advance over the block's rows. */
typedef struct tile_job {
    weft_block blk;
    uint32_t k;
} tile_job;

static void tile_task(void *const *ptrs, void *user)
{
    const tile_job *j = user;
    unsigned char *base = ptrs[0];

    for (size_t r = 0; r < j->blk.rows; r++) {
        uint32_t *row = (uint32_t *)(void *)(base + r * j->blk.row_pitch);

        for (size_t c = 0; c < j->blk.row_bytes / 4; c++)
            row[c] = row[c] * 3u + j->k;
    }
}

/*
 * Two passes over every tile, each tile's second pass after its first
 * only: by host tasks (kernels 0) or by a kernel per tile, then a host
 * task per tile after the kernels (its bytes come back block by block).
 */
static void run_tiles(int kernels)
{
    static uint32_t init[R * MAXLD], ref[R * MAXLD], out[R * MAXLD];
    static tile_job jobs[2][R][C];
    size_t bytes;
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_matrix m;

    geometry();
    bytes = (size_t)R * LD * 4;
    for (size_t i = 0; i < R * LD; i++)
        init[i] = ref[i] = seed_value(i);
    check(weft_buffer_create(devs.rt, bytes, &x));
    m = weft_matrix_of(x, 0, sizeof(uint32_t), R, C, LD);
    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, x, 0, init, bytes, NULL));
    for (unsigned p = 0; p < 2; p++)
        for (unsigned ti = 0; ti < TI; ti++)
            for (unsigned tj = 0; tj < TJ; tj++) {
                weft_block t = weft_matrix_tile(m, TR, TC, ti, tj);
                tile_job *j = &jobs[p][ti][tj];

                j->blk = t;
                j->k = tile_k(ti, tj, p);
                ref_tile(ref, ti, tj, j->k);
                if (kernels && p == 0) {
                    weft_arg a[] = {weft_arg_block(x, t, WEFT_READ_WRITE),
                                    weft_arg_u32(j->k),
                                    weft_arg_u32((uint32_t)(t.row_bytes / 4)),
                                    weft_arg_u32((uint32_t)t.rows),
                                    weft_arg_u32(LD)};

                    check(weft_graph_add_kernel(
                        g, k_tile,
                        weft_dims2((uint32_t)(t.row_bytes / 4),
                                   (uint32_t)t.rows),
                        a, 5, NULL));
                } else {
                    weft_access_desc d =
                        weft_access_block(x, t, WEFT_READ_WRITE);

                    check(weft_graph_add_host(g, tile_task, j, &d, 1, NULL));
                }
            }
    /* The write, then each tile's chain of two: no edge between tiles. */
    assert_int_equal(weft_graph_edge_count(g), 2 * TI * TJ);
    check(weft_graph_add_read(g, x, 0, out, bytes, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    /* Twice: the second launch finds the tiles where the first left them. */
    for (int it = 0; it < 2; it++) {
        memset(out, 0, bytes);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_exec_status(e));
        assert_bytes(out, ref, bytes);
    }
    check(weft_exec_destroy(e));
    weft_graph_destroy(g);
    check(weft_buffer_destroy(x));
}

static void test_tiles_host_tasks(void **state)
{
    (void)state;
    run_tiles(0);
}

static void test_tiles_kernels(void **state)
{
    (void)state;
    run_tiles(1);
}

/*
 * Block transfers: tiles written from packed host memory, advanced by a
 * kernel, copied into another buffer at another pitch, one filled, and
 * read back at a third pitch; a 3-D block written and read back too.
 */
static void test_block_transfers(void **state)
{
    /* y's pitch (elements), out's (bytes), x's bytes */
    const size_t YLD = 53 + MAXLD / 2, OP = 40 + MAXLD * 4;
    static uint32_t src[TR * MAXLD], xinit[R * MAXLD], yinit[R * 2 * MAXLD];
    static uint32_t xref[R * MAXLD], yref[R * 2 * MAXLD], xout[R * MAXLD],
        yout[R * 2 * MAXLD];
    static unsigned char out[TR * (40 + MAXLD * 4)],
        outref[TR * (40 + MAXLD * 4)];
    size_t xbytes, ybytes;
    static unsigned char cube[4 * 6 * 32], cin[3 * 5 * 12], cout[3 * 5 * 16];
    const uint16_t pat = 0xbeef;
    weft_buffer *x, *y, *z;
    weft_graph *g;
    weft_exec *e;
    weft_matrix mx, my;
    weft_block t10, t20, u, c3;

    (void)state;
    geometry();
    xbytes = (size_t)R * LD * 4;
    ybytes = (size_t)R * YLD * 4;
    for (size_t i = 0; i < R * LD; i++)
        xinit[i] = xref[i] = seed_value(i);
    for (size_t i = 0; i < R * YLD; i++)
        yinit[i] = yref[i] = seed_value(i + 7);
    for (size_t i = 0; i < TR * TC; i++)
        src[i] = (uint32_t)i * 7u + 1u;
    for (size_t i = 0; i < sizeof cin; i++)
        cin[i] = (unsigned char)(i * 13 + 5);
    check(weft_buffer_create(devs.rt, xbytes, &x));
    check(weft_buffer_create(devs.rt, ybytes, &y));
    check(weft_buffer_create(devs.rt, sizeof cube, &z));
    mx = weft_matrix_of(x, 0, 4, R, C, LD);
    my = weft_matrix_of(y, 0, 4, R, C, YLD);
    t10 = weft_matrix_tile(mx, TR, TC, 1, 0);
    t20 = weft_matrix_tile(mx, TR, TC, 2, 0); /* clipped: 13 rows */
    u = weft_matrix_block(my, 3, 5, TR, TC);
    /* 3 slices of 5 rows of 12 bytes in a 4 x 6 x 32 cube, at (1, 1, 8). */
    c3 = weft_block3(32 * 6 + 32 + 8, 12, 5, 3, 32, 32 * 6);

    check(weft_graph_create(devs.rt, &g));
    check(weft_graph_add_write(g, x, 0, xinit, xbytes, NULL));
    check(weft_graph_add_write(g, y, 0, yinit, ybytes, NULL));
    check(weft_graph_add_fill(g, z, 0, WEFT_WHOLE, "\x11", 1, NULL));
    /* src is packed: row pitch TC * 4. */
    check(weft_graph_add_write_block(g, x, &t10, src, 0, 0, NULL));
    for (size_t r = 0; r < TR; r++)
        memcpy(&xref[(TR + r) * LD], &src[r * TC], TC * 4);
    {
        weft_arg a[] = {weft_arg_block(x, t10, WEFT_READ_WRITE),
                        weft_arg_u32(9), weft_arg_u32(TC), weft_arg_u32(TR),
                        weft_arg_u32(LD)};

        check(weft_graph_add_kernel(g, k_tile, weft_dims2(TC, TR), a, 5, NULL));
        ref_tile(xref, 1, 0, 9);
    }
    check(weft_graph_add_copy_block(g, y, &u, x, &t10, NULL));
    for (size_t r = 0; r < TR; r++)
        memcpy(&yref[(3 + r) * YLD + 5], &xref[(TR + r) * LD], TC * 4);
    check(weft_graph_add_fill_block(g, x, &t20, &pat, 2, NULL));
    for (size_t r = 2 * TR; r < R; r++)
        for (size_t c = 0; c < TC; c++)
            xref[r * LD + c] = (uint32_t)pat << 16 | pat;
    memset(out, 0xee, sizeof out);
    memset(outref, 0xee, sizeof outref);
    assert_true(OP >= TC * 4);
    check(weft_graph_add_read_block(g, y, &u, out, OP, 0, NULL));
    for (size_t r = 0; r < TR; r++)
        memcpy(outref + r * OP, &yref[(3 + r) * YLD + 5], TC * 4);
    /* 3-D: packed in, 16-byte rows out. */
    check(weft_graph_add_write_block(g, z, &c3, cin, 0, 0, NULL));
    check(weft_graph_add_read_block(g, z, &c3, cout, 16, 0, NULL));
    check(weft_graph_add_read(g, x, 0, xout, xbytes, NULL));
    check(weft_graph_add_read(g, y, 0, yout, ybytes, NULL));
    check(weft_graph_add_read(g, z, 0, cube, sizeof cube, NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int it = 0; it < 2; it++) {
        unsigned char cube_ref[sizeof cube], cout_ref[sizeof cout];

        memset(cout, 0, sizeof cout);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_exec_status(e));
        assert_bytes(xout, xref, xbytes);
        assert_bytes(yout, yref, ybytes);
        assert_bytes(out, outref, sizeof out);
        memset(cube_ref, 0x11, sizeof cube_ref);
        memset(cout_ref, 0, sizeof cout_ref);
        for (size_t s = 0; s < 3; s++)
            for (size_t r = 0; r < 5; r++) {
                memcpy(cube_ref + c3.origin + s * c3.slice_pitch +
                           r * c3.row_pitch,
                       cin + (s * 5 + r) * 12, 12);
                memcpy(cout_ref + (s * 5 + r) * 16, cin + (s * 5 + r) * 12, 12);
            }
        assert_bytes(cube, cube_ref, sizeof cube);
        assert_bytes(cout, cout_ref, sizeof cout);
    }
    check(weft_exec_destroy(e));
    weft_graph_destroy(g);
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
}

/*
 * Host tasks alone over tiles of user memory: the launches go with no
 * issue (weft__exec_fast), each task seeing its tile at the block's first
 * byte with the matrix's pitch; the result after three launches is the
 * model's.
 */
static void test_tiles_fast(void **state)
{
    static uint32_t data[R * MAXLD], ref[R * MAXLD];
    static tile_job jobs[R][C];
    weft_buffer *x;
    weft_graph *g;
    weft_exec *e;
    weft_matrix m;
    uint64_t fast;

    (void)state;
    geometry();
    for (size_t i = 0; i < R * LD; i++)
        data[i] = ref[i] = seed_value(i);
    check(weft_buffer_wrap(devs.rt, data, (size_t)R * LD * 4, &x));
    m = weft_matrix_of(x, 0, sizeof(uint32_t), R, C, LD);
    check(weft_graph_create(devs.rt, &g));
    for (unsigned ti = 0; ti < TI; ti++)
        for (unsigned tj = 0; tj < TJ; tj++) {
            tile_job *j = &jobs[ti][tj];
            weft_access_desc d;

            j->blk = weft_matrix_tile(m, TR, TC, ti, tj);
            j->k = tile_k(ti, tj, 0);
            d = weft_access_block(x, j->blk, WEFT_READ_WRITE);
            check(weft_graph_add_host(g, tile_task, j, &d, 1, NULL));
        }
    assert_int_equal(weft_graph_edge_count(g), 0);
    check(weft_graph_instantiate(g, NULL, &e));
    for (int it = 0; it < 3; it++) {
        check(weft_exec_launch(e));
        for (unsigned ti = 0; ti < TI; ti++)
            for (unsigned tj = 0; tj < TJ; tj++)
                ref_tile(ref, ti, tj, tile_k(ti, tj, 0));
    }
    check(weft_exec_wait(e));
    check(weft_exec_status(e));
    pthread_mutex_lock(&e->lock);
    fast = e->fast_launches;
    pthread_mutex_unlock(&e->lock);
    print_message("# %llu of 3 launches with no issue\n",
                  (unsigned long long)fast);
    check(weft_exec_destroy(e));
    weft_graph_destroy(g);
    check(weft_buffer_destroy(x));
    assert_bytes(data, ref, (size_t)R * LD * 4);
    assert_int_equal(fast, 3);
}

/*
 * Every failure point over instantiate and a launch of block transfers
 * and a block kernel (driver calls and allocations, in turn): the call
 * fails with a message or computes the right bytes, and a launch after
 * the failure computes them.
 */
static void test_block_faults(void **state)
{
    static uint32_t init[R * MAXLD], src[TR * MAXLD], xref[R * MAXLD],
        xout[R * MAXLD], out[TR * MAXLD], outref[TR * MAXLD];
    const uint32_t pat = 0x12345678u;
    size_t bytes;
    long n;

    (void)state;
    geometry();
    bytes = (size_t)R * LD * 4;
    for (size_t i = 0; i < R * LD; i++)
        init[i] = xref[i] = seed_value(i);
    for (size_t i = 0; i < TR * TC; i++)
        src[i] = (uint32_t)i + 3u;
    for (size_t r = 0; r < TR; r++)
        memcpy(&xref[(TR + r) * LD], &src[r * TC], TC * 4);
    ref_tile(xref, 1, 0, 5);
    for (size_t r = 0; r < TR; r++)
        memcpy(&outref[r * TC], &xref[(TR + r) * LD], TC * 4);
    for (size_t r = 2 * TR; r < R; r++)
        for (size_t c = 0; c < TC; c++)
            xref[r * LD + c] = pat;
    for (n = 1;; n++) {
        weft_buffer *x, *y;
        weft_graph *g;
        weft_exec *e = NULL;
        weft_matrix m;
        weft_block t, f;
        int rc, fired;

        check(weft_buffer_create(devs.rt, bytes, &x));
        check(weft_buffer_create(devs.rt, bytes, &y));
        m = weft_matrix_of(x, 0, 4, R, C, LD);
        t = weft_matrix_tile(m, TR, TC, 1, 0);
        f = weft_matrix_tile(m, TR, TC, 2, 0);
        check(weft_graph_create(devs.rt, &g));
        {
            weft_arg a[] = {weft_arg_block(x, t, WEFT_READ_WRITE),
                            weft_arg_u32(5), weft_arg_u32(TC), weft_arg_u32(TR),
                            weft_arg_u32(LD)};

            check(weft_graph_add_write(g, x, 0, init, bytes, NULL));
            check(weft_graph_add_write_block(g, x, &t, src, 0, 0, NULL));
            check(weft_graph_add_kernel(g, k_tile, weft_dims2(TC, TR), a, 5,
                                        NULL));
            check(weft_graph_add_copy_block(g, y, &t, x, &t, NULL));
            check(weft_graph_add_fill_block(g, x, &f, &pat, 4, NULL));
            check(weft_graph_add_read_block(g, y, &t, out, 0, 0, NULL));
            check(weft_graph_add_read(g, x, 0, xout, bytes, NULL));
        }
        memset(out, 0, sizeof out);
        memset(xout, 0, sizeof xout);
        weft__fault_arm(n, NULL);
        rc = weft_graph_instantiate(g, NULL, &e);
        if (rc == 0)
            rc = weft_exec_launch(e);
        if (rc == 0)
            rc = weft_exec_wait(e);
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (rc < 0) {
            assert_true(fired);
            assert_true(weft_last_error()[0] != '\0');
        } else {
            assert_bytes(xout, xref, bytes);
            assert_bytes(out, outref, TR * TC * 4);
        }
        if (e) {
            memset(out, 0, sizeof out);
            memset(xout, 0, sizeof xout);
            check(weft_exec_launch(e));
            check(weft_exec_wait(e));
            assert_bytes(xout, xref, bytes);
            assert_bytes(out, outref, TR * TC * 4);
            check(weft_exec_destroy(e));
        }
        check(weft_graph_destroy(g));
        check(weft_buffer_destroy(x));
        check(weft_buffer_destroy(y));
        if (!fired)
            break;
    }
    printf("# %ld failure points over instantiate and launch\n", n - 1);
    assert_true(n > 5);
}

/* ---- random blocks against a model -------------------------------------- */

enum { RB_ROWS = 48, RB_LD = 64, RB_OPS = 120, RB_READS = 16 };

static uint64_t rb_state;

static unsigned rb_pick(unsigned n)
{
    rb_state = rb_state * 6364136223846793005ull + 1442695040888963407ull;
    return (unsigned)((rb_state >> 33) % n);
}

/*
 * A random block of a RB_ROWS x RB_LD u32 matrix: rows every 1 or 2 rows
 * (pitch LD or 2 LD elements), a column start that is a multiple of
 * `align` elements (kernel arguments on devices that want aligned
 * addresses), sometimes 3-D (two slices of its rows).
 */
static weft_block rb_block(unsigned align, int three_d)
{
    unsigned step = 1 + rb_pick(2);
    unsigned c0 = align < RB_LD ? rb_pick(RB_LD / align) * align : 0;
    unsigned w = 1 + rb_pick(RB_LD - c0), h, r0;

    if (w > 24)
        w = 24;
    if (three_d) {
        /* slices 16 rows apart, each h rows of pitch step */
        h = 1 + rb_pick(16 / step);
        r0 = rb_pick(RB_ROWS - 16 - (h - 1) * step);
        return weft_block3(((size_t)r0 * RB_LD + c0) * 4, w * 4, h, 2,
                           step * RB_LD * 4, 16 * RB_LD * 4);
    }
    h = 1 + rb_pick(RB_ROWS / step);
    r0 = rb_pick(RB_ROWS - (h - 1) * step);
    return weft_block2(((size_t)r0 * RB_LD + c0) * 4, w * 4, h,
                       step * RB_LD * 4);
}

/* Element (s, r, c) of block b: its index in the matrix. */
static size_t rb_at(const weft_block *b, size_t s, size_t r, size_t c)
{
    return (b->origin + s * b->slice_pitch + r * b->row_pitch) / 4 + c;
}

static void rb_model_advance(uint32_t *m, const weft_block *b, uint32_t k)
{
    for (size_t s = 0; s < b->slices; s++)
        for (size_t r = 0; r < b->rows; r++)
            for (size_t c = 0; c < b->row_bytes / 4; c++)
                m[rb_at(b, s, r, c)] = m[rb_at(b, s, r, c)] * 3u + k;
}

typedef struct rb_task {
    weft_block blk;
    uint32_t k;
} rb_task;

static void rb_host_advance(void *const *ptrs, void *user)
{
    const rb_task *t = user;
    unsigned char *base = ptrs[0];

    for (size_t s = 0; s < t->blk.slices; s++)
        for (size_t r = 0; r < t->blk.rows; r++) {
            uint32_t *row = (uint32_t *)(void *)(base + s * t->blk.slice_pitch +
                                                 r * t->blk.row_pitch);

            for (size_t c = 0; c < t->blk.row_bytes / 4; c++)
                row[c] = row[c] * 3u + t->k;
        }
}

/*
 * Random kernels, host tasks, block writes, fills, copies between two
 * matrices and block reads, then both matrices read whole: the results
 * equal the model's, which runs the nodes one by one.
 */
static void random_blocks(uint64_t seed)
{
    enum { M = RB_ROWS * RB_LD };
    static uint32_t init[2][M], model[2][M], out[2][M];
    static uint32_t wsrc[RB_OPS][RB_ROWS * 24];
    static uint32_t rd[RB_READS][2 * RB_ROWS * 24],
        rdm[RB_READS][2 * RB_ROWS * 24];
    static rb_task tasks[RB_OPS];
    weft_device_info info;
    weft_buffer *x[2];
    weft_graph *g;
    weft_exec *e;
    unsigned align, nreads = 0;

    memset(&info, 0, sizeof info);
    info.size = sizeof info;
    check(weft_device_get_info(weft_runtime_device(devs.rt, 0), &info));
    align = info.arg_offset_align > 4 ? info.arg_offset_align / 4 : 1;
    rb_state = seed;
    for (unsigned m = 0; m < 2; m++) {
        for (size_t i = 0; i < M; i++)
            init[m][i] = model[m][i] = seed_value(i + m * M);
        check(weft_buffer_create(devs.rt, sizeof init[m], &x[m]));
    }
    memset(rd, 0, sizeof rd);
    memset(rdm, 0, sizeof rdm);
    check(weft_graph_create(devs.rt, &g));
    for (unsigned m = 0; m < 2; m++)
        check(weft_graph_add_write(g, x[m], 0, init[m], sizeof init[m], NULL));
    for (unsigned op = 0; op < RB_OPS; op++) {
        unsigned m = rb_pick(2), kind = rb_pick(6);
        weft_block b = rb_block(kind == 0 ? align : 1, kind == 1 && rb_pick(2));
        uint32_t k = op * 7u + 1u;

        switch (kind) {
        case 0: { /* a kernel, 2-D */
            weft_arg a[] = {weft_arg_block(x[m], b, WEFT_READ_WRITE),
                            weft_arg_u32(k),
                            weft_arg_u32((uint32_t)(b.row_bytes / 4)),
                            weft_arg_u32((uint32_t)b.rows),
                            weft_arg_u32((uint32_t)(b.row_pitch / 4))};

            check(weft_graph_add_kernel(
                g, k_tile,
                weft_dims2((uint32_t)(b.row_bytes / 4), (uint32_t)b.rows), a, 5,
                NULL));
            rb_model_advance(model[m], &b, k);
            break;
        }
        case 1: { /* a host task, 2-D or 3-D */
            weft_access_desc d = weft_access_block(x[m], b, WEFT_READ_WRITE);

            tasks[op].blk = b;
            tasks[op].k = k;
            check(weft_graph_add_host(g, rb_host_advance, &tasks[op], &d, 1,
                                      NULL));
            rb_model_advance(model[m], &b, k);
            break;
        }
        case 2: { /* a block write from packed host memory */
            size_t w = b.row_bytes / 4, n = 0;

            for (size_t s = 0; s < b.slices; s++)
                for (size_t r = 0; r < b.rows; r++)
                    for (size_t c = 0; c < w; c++, n++) {
                        wsrc[op][n] = (uint32_t)(op * 1000 + n);
                        model[m][rb_at(&b, s, r, c)] = wsrc[op][n];
                    }
            check(
                weft_graph_add_write_block(g, x[m], &b, wsrc[op], 0, 0, NULL));
            break;
        }
        case 3: { /* a fill */
            uint32_t pat = 0x01010101u * (op & 0xff);

            check(weft_graph_add_fill_block(g, x[m], &b, &pat, 4, NULL));
            for (size_t s = 0; s < b.slices; s++)
                for (size_t r = 0; r < b.rows; r++)
                    for (size_t c = 0; c < b.row_bytes / 4; c++)
                        model[m][rb_at(&b, s, r, c)] = pat;
            break;
        }
        case 4: { /* the same block of the other matrix into this one */
            check(weft_graph_add_copy_block(g, x[m], &b, x[1 - m], &b, NULL));
            for (size_t s = 0; s < b.slices; s++)
                for (size_t r = 0; r < b.rows; r++)
                    for (size_t c = 0; c < b.row_bytes / 4; c++)
                        model[m][rb_at(&b, s, r, c)] =
                            model[1 - m][rb_at(&b, s, r, c)];
            break;
        }
        default: { /* a block read, packed */
            size_t n = 0;

            if (nreads == RB_READS)
                break;
            check(
                weft_graph_add_read_block(g, x[m], &b, rd[nreads], 0, 0, NULL));
            for (size_t s = 0; s < b.slices; s++)
                for (size_t r = 0; r < b.rows; r++)
                    for (size_t c = 0; c < b.row_bytes / 4; c++)
                        rdm[nreads][n++] = model[m][rb_at(&b, s, r, c)];
            nreads++;
            break;
        }
        }
    }
    for (unsigned m = 0; m < 2; m++)
        check(weft_graph_add_read(g, x[m], 0, out[m], sizeof out[m], NULL));
    check(weft_graph_instantiate(g, NULL, &e));
    for (int it = 0; it < 2; it++) {
        memset(out, 0, sizeof out);
        memset(rd, 0, sizeof rd);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        check(weft_exec_status(e));
        for (unsigned m = 0; m < 2; m++)
            if (memcmp(out[m], model[m], sizeof model[m]))
                fail_msg("seed %llu: matrix %u differs",
                         (unsigned long long)seed, m);
        if (memcmp(rd, rdm, sizeof rd))
            fail_msg("seed %llu: a block read differs",
                     (unsigned long long)seed);
    }
    check(weft_exec_destroy(e));
    weft_graph_destroy(g);
    for (unsigned m = 0; m < 2; m++)
        check(weft_buffer_destroy(x[m]));
}

static void test_random_blocks(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 12; seed++)
        random_blocks(seed);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tiles_host_tasks),
        cmocka_unit_test(test_tiles_kernels),
        cmocka_unit_test(test_block_transfers),
        cmocka_unit_test(test_tiles_fast),
        cmocka_unit_test(test_block_faults),
        cmocka_unit_test(test_random_blocks),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
