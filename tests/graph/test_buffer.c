/*
 * Buffers through the public API: create, wrap, views, the synchronous
 * helpers, map/unmap, the EBUSY cases, the copies kept on a device (from
 * the runtime of WEFT_DEVICES), and failure injection over the helpers.
 */
#include "wt_test.h"

#include "wt_kernels.h"
#include "mem/buffer.h"
#include "wt_devices.h"

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
        cmocka_unit_test(test_helper_failures),
    };

    return wt_run_group(argc, argv, tests, setup, teardown);
}
