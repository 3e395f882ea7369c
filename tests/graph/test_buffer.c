/*
 * Buffers through the public API: create, wrap, views, the synchronous
 * helpers, map/unmap, the EBUSY cases, the copies kept on a device (from
 * the runtime of WEFT_DEVICES), and failure injection over the helpers.
 */
#include "wt_test.h"

#include "wt_kernels.h"
#include "mem/buffer.h"
#include "wt_devices.h"

#include <stdlib.h>
#include <string.h>

static wt_devices devs;

static int setup(void **state)
{
    (void)state;
    wt_devices_open(&devs);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    return weft_runtime_destroy(devs.rt);
}

static void test_create_wrap(void **state)
{
    uint32_t user[256], out[256];
    weft_buffer *b, *w;

    (void)state;
    assert_int_equal(weft_buffer_create(devs.rt, 0, &b), WEFT_EINVAL);
    assert_int_equal(weft_buffer_wrap(devs.rt, NULL, 16, &b), WEFT_EINVAL);
    assert_int_equal(weft_buffer_create(devs.rt, sizeof user, &b), 0);
    assert_int_equal(weft_buffer_size(b), sizeof user);
    for (int i = 0; i < 256; i++)
        user[i] = (uint32_t)i;
    assert_int_equal(weft_buffer_write(b, 0, user, sizeof user), 0);
    assert_int_equal(weft_buffer_read(b, 16, out, 64), 0);
    assert_memory_equal(out, user + 4, 64);
    assert_int_equal(weft_buffer_read(b, 1000, out, 100), WEFT_ERANGE);
    assert_non_null(strstr(weft_last_error(), "outside buffer"));
    assert_int_equal(weft_buffer_write(b, 0, NULL, 4), WEFT_EINVAL);

    /* A wrapped buffer's memory is its host copy. */
    assert_int_equal(weft_buffer_wrap(devs.rt, user, sizeof user, &w), 0);
    assert_int_equal(weft_buffer_read(w, 0, out, sizeof out), 0);
    assert_memory_equal(out, user, sizeof out);
    assert_int_equal(weft_buffer_write(w, 0, "\xff\xff\xff\xff", 4), 0);
    assert_int_equal(user[0], 0xffffffffu);
    /* The runtime cannot go while buffers live. */
    assert_int_equal(weft_runtime_destroy(devs.rt), WEFT_EBUSY);
    assert_int_equal(weft_buffer_destroy(w), 0);
    assert_int_equal(weft_buffer_destroy(b), 0);
    assert_int_equal(weft_buffer_destroy(NULL), 0);
}

static void test_fill(void **state)
{
    uint8_t out[64];
    uint16_t p16 = 0x0201;
    uint32_t p32 = 0x04030201;
    weft_buffer *b;

    (void)state;
    assert_int_equal(weft_buffer_create(devs.rt, 64, &b), 0);
    assert_int_equal(weft_buffer_fill(b, 0, WEFT_WHOLE, "\x09", 1), 0);
    assert_int_equal(weft_buffer_fill(b, 8, 8, &p16, 2), 0);
    assert_int_equal(weft_buffer_fill(b, 32, 8, &p32, 4), 0);
    assert_int_equal(weft_buffer_fill(b, 2, 8, &p32, 4), WEFT_EINVAL);
    assert_int_equal(weft_buffer_fill(b, 0, 8, &p32, 3), WEFT_EINVAL);
    assert_int_equal(weft_buffer_read(b, 0, out, 64), 0);
    assert_int_equal(out[0], 9);
    assert_int_equal(out[8], 1);
    assert_int_equal(out[9], 2);
    assert_int_equal(out[15], 2);
    assert_int_equal(out[16], 9);
    assert_int_equal(out[32], 1);
    assert_int_equal(out[35], 4);
    assert_int_equal(out[39], 4);
    assert_int_equal(out[40], 9);
    weft_buffer_destroy(b);
}

static void test_views(void **state)
{
    uint8_t data[100], out[100];
    weft_buffer *b, *v, *vv, *w = NULL;

    (void)state;
    for (int i = 0; i < 100; i++)
        data[i] = (uint8_t)i;
    assert_int_equal(weft_buffer_wrap(devs.rt, data, 100, &b), 0);
    assert_int_equal(weft_buffer_view(b, 10, 50, &v), 0);
    assert_int_equal(weft_buffer_view(v, 5, WEFT_WHOLE, &vv), 0);
    assert_int_equal(weft_buffer_size(vv), 45);
    assert_int_equal(weft_buffer_view(b, 90, 20, &w), WEFT_ERANGE);
    assert_int_equal(weft_buffer_view(b, 100, WEFT_WHOLE, &w), WEFT_EINVAL);
    /* Accesses through a view are accesses of the root's bytes. */
    assert_int_equal(weft_buffer_read(vv, 0, out, 3), 0);
    assert_int_equal(out[0], 15);
    assert_int_equal(weft_buffer_write(vv, 1, "\xaa", 1), 0);
    assert_int_equal(data[16], 0xaa);
    assert_int_equal(weft_buffer_read(vv, 40, out, 10), WEFT_ERANGE);
    /* The parent outlives its views. */
    assert_int_equal(weft_buffer_destroy(b), WEFT_EBUSY);
    assert_int_equal(weft_buffer_destroy(v), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "live views"));
    assert_null(w);
    assert_int_equal(weft_buffer_destroy(vv), 0);
    assert_int_equal(weft_buffer_destroy(v), 0);
    assert_int_equal(weft_buffer_destroy(b), 0);
}

static void test_map(void **state)
{
    uint32_t data[64];
    weft_buffer *b, *v;
    void *p, *q;

    (void)state;
    for (int i = 0; i < 64; i++)
        data[i] = (uint32_t)i;
    assert_int_equal(weft_buffer_create(devs.rt, sizeof data, &b), 0);
    assert_int_equal(weft_buffer_write(b, 0, data, sizeof data), 0);
    assert_int_equal(weft_buffer_view(b, 64, 64, &v), 0);
    assert_int_equal(weft_buffer_map(v, 4, 8, WEFT_READ_WRITE, &p), 0);
    assert_int_equal(((uint32_t *)p)[0], 17);
    ((uint32_t *)p)[1] = 1000;
    /* One map at a time; a mapped buffer cannot go. */
    assert_int_equal(weft_buffer_map(b, 0, 4, WEFT_READ, &q), WEFT_EBUSY);
    assert_int_equal(weft_buffer_destroy(v), WEFT_EBUSY);
    assert_non_null(strstr(weft_last_error(), "mapped"));
    assert_int_equal(weft_buffer_unmap(b, p), WEFT_ESTATE);
    assert_int_equal(weft_buffer_unmap(v, (char *)p + 1), WEFT_EINVAL);
    assert_int_equal(weft_buffer_unmap(v, p), 0);
    assert_int_equal(weft_buffer_read(b, 72, data, 4), 0);
    assert_int_equal(data[0], 1000);
    assert_int_equal(weft_buffer_map(b, 0, 4, WEFT_WRITE, &q), 0);
    *(uint32_t *)q = 77;
    assert_int_equal(weft_buffer_unmap(b, q), 0);
    assert_int_equal(weft_buffer_read(b, 0, data, 4), 0);
    assert_int_equal(data[0], 77);
    assert_int_equal(weft_buffer_map(b, 0, 4, 0, &q), WEFT_EINVAL);
    assert_int_equal(weft_buffer_destroy(v), 0);
    assert_int_equal(weft_buffer_destroy(b), 0);
}

/*
 * The copies behind the helpers: once the bytes are on a device and only
 * there, every helper sees them, and a small write goes to each valid copy
 * rather than invalidating the device's.
 */
static void test_device_copies(void **state)
{
    uint32_t user[64], out[64];
    weft_buffer *w;
    weft__lanes l;

    (void)state;
    for (int i = 0; i < 64; i++)
        user[i] = (uint32_t)i;
    assert_int_equal(weft_buffer_wrap(devs.rt, user, sizeof user, &w), 0);
    weft__lanes_init(&l, devs.rt);
    weft__buffer_lock(w);
    assert_int_equal(weft__buffer_make_valid(w, 0, 0, sizeof user, &l), 0);
    assert_true(weft__buffer_is_valid(w, 0, 0, sizeof user) &&
                weft__buffer_is_valid(w, WEFT__HOST, 0, sizeof user));
    assert_int_equal(weft__buffer_reserve(w, 1), 0);
    /* Pretend a kernel wrote the device copy: the host is stale now. */
    weft__buffer_written(w, 0, 0, sizeof user);
    assert_false(weft__buffer_is_valid(w, WEFT__HOST, 0, 4));
    assert_int_equal(weft__buffer_store(w, 8, "\x05\0\0\0", 4, WEFT__HOST, &l),
                     0);
    assert_true(weft__buffer_is_valid(w, 0, 0, sizeof user));
    assert_int_equal(user[2], 2); /* only the device copy was valid */
    weft__buffer_unlock(w);
    weft__lanes_release(&l);
    assert_int_equal(weft_buffer_read(w, 0, out, sizeof out), 0);
    assert_int_equal(out[2], 5);
    /* A read of a wrapped buffer makes its memory current. */
    assert_int_equal(user[2], 5);
    assert_true(weft__buffer_is_valid(w, 0, 0, sizeof user) &&
                weft__buffer_is_valid(w, WEFT__HOST, 0, sizeof user));
    assert_int_equal(weft_buffer_destroy(w), 0);
}

/*
 * A tile of a row-major matrix on a device: the tracker holds it as one
 * cell, not a segment per row; written there, only its bytes go stale on
 * the host, and a read of the whole matrix brings exactly them back.
 */
static void test_tile_regions(void **state)
{
    enum { N = 64, P = N * 4 };
    static uint32_t user[N * N];
    uint32_t *out = malloc(sizeof user);
    const weft_device *dev = weft_runtime_device(devs.rt, 0);
    weft__region tile = {(8 * N + 4) * 4, 16 * 4, 16, P};
    weft_device_address at;
    weft_stats before = {.size = sizeof before}, after = {.size = sizeof after};
    weft_buffer *w;
    weft__lanes l;

    (void)state;
    assert_non_null(out);
    for (size_t i = 0; i < N * N; i++)
        user[i] = (uint32_t)i;
    assert_int_equal(weft_buffer_wrap(devs.rt, user, sizeof user, &w), 0);
    weft__lanes_init(&l, devs.rt);
    weft__buffer_lock(w);
    assert_int_equal(weft__buffer_make_valid_region(w, 0, &tile, &l), 0);
    assert_true(weft__coherence_is_valid_region(&w->coh, 1, &tile));
    /* the row before the tile's first is not on the device */
    assert_false(weft__buffer_is_valid(w, 0, tile.off - P, 4));
    weft__buffer_written_region(w, 0, &tile);
    weft__coherence_settle(&w->coh, 0, sizeof user);
    /* before, the tile's band (two cells outside it and one in), after */
    assert_true(weft__coherence_entries(&w->coh) <= 5);
    assert_false(weft__buffer_is_valid(w, WEFT__HOST, tile.off, 4));
    assert_true(weft__buffer_is_valid(w, WEFT__HOST, tile.off - 4, 4));
    assert_true(weft__buffer_is_valid(w, WEFT__HOST, tile.off + 64, 4));
    weft__buffer_unlock(w);
    weft__lanes_release(&l);
    /* What a kernel would write there: the device's bytes of the tile. */
    assert_int_equal(
        weft_buffer_device_address(w, dev, tile.off,
                                   weft__region_end(&tile) - tile.off, &at),
        0);
    if (!at.ptr) {
        weft_buffer_destroy(w);
        free(out);
        skip();
    }
    for (size_t r = 0; r < 16; r++)
        for (size_t c = 0; c < 16; c++)
            ((uint32_t *)at.ptr)[r * N + c] =
                0x80000000u + (uint32_t)(r * 16 + c);
    weft__buffer_lock(w);
    weft__buffer_written_region(w, 0, &tile);
    weft__buffer_unlock(w);
    assert_int_equal(weft_runtime_get_stats(devs.rt, &before), 0);
    assert_int_equal(weft_buffer_read(w, 0, out, sizeof user), 0);
    assert_int_equal(weft_runtime_get_stats(devs.rt, &after), 0);
    /* the tile came back in one block copy */
    assert_int_equal(after.d2h_copies - before.d2h_copies, 1);
    assert_int_equal(after.d2h_bytes - before.d2h_bytes, 16 * 16 * 4);
    for (size_t i = 0; i < N * N; i++) {
        size_t r = i / N, c = i % N;
        uint32_t want = r >= 8 && r < 24 && c >= 4 && c < 20
                            ? 0x80000000u + (uint32_t)((r - 8) * 16 + c - 4)
                            : (uint32_t)i;

        if (out[i] != want)
            fail_msg("element (%zu, %zu): %#x, not %#x", r, c, out[i], want);
    }
    assert_int_equal(weft_buffer_destroy(w), 0);
    free(out);
}

/* Every failure point of the helpers, in turn: each fails cleanly. */
static void test_helper_failures(void **state)
{
    uint32_t user[64], out[64];
    long n;

    (void)state;
    for (n = 1;; n++) {
        weft_buffer *w = NULL;
        weft__lanes l;
        int rc, fired;

        for (int i = 0; i < 64; i++)
            user[i] = (uint32_t)i;
        weft__fault_arm(n, NULL);
        rc = weft_buffer_wrap(devs.rt, user, sizeof user, &w);
        if (rc == 0) {
            weft__lanes_init(&l, devs.rt);
            weft__buffer_lock(w);
            rc = weft__buffer_make_valid(w, 0, 0, sizeof user, &l);
            if (rc == 0)
                rc = weft__buffer_reserve(w, 1);
            if (rc == 0)
                weft__buffer_written(w, 0, 0, sizeof user);
            weft__buffer_unlock(w);
            weft__lanes_release(&l);
        }
        if (rc == 0)
            rc = weft_buffer_write(w, 4, "\x09\0\0\0", 4);
        if (rc == 0)
            rc = weft_buffer_read(w, 0, out, sizeof out);
        fired = weft__fault_fired();
        weft__fault_disarm();
        if (rc < 0)
            assert_true(fired);
        if (rc == 0)
            assert_int_equal(out[1], 9);
        /* Whatever failed, the bytes are whole: old or new, never lost. */
        if (w) {
            assert_int_equal(weft_buffer_read(w, 0, out, sizeof out), 0);
            assert_true(out[1] == 1 || out[1] == 9);
            for (int i = 2; i < 64; i++)
                assert_int_equal(out[i], (uint32_t)i);
            assert_int_equal(weft_buffer_destroy(w), 0);
        }
        if (!fired)
            break;
    }
    assert_true(n > 3);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create_wrap),
        cmocka_unit_test(test_fill),
        cmocka_unit_test(test_views),
        cmocka_unit_test(test_map),
        cmocka_unit_test(test_device_copies),
        cmocka_unit_test(test_tile_regions),
        cmocka_unit_test(test_helper_failures),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
