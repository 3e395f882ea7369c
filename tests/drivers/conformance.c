/*
 * The driver conformance suite: every semantic that src/drivers/driver.h
 * promises, checked through the weft__drv_* wrappers on every device the
 * runtime finds (WEFT_DEVICES picks the driver), with the same kernels on
 * each driver. Each test observes results: bytes copied back, values
 * computed by kernels, the order host functions saw, error codes and
 * details.
 *
 * Tests that must see work not yet done block a queue with a gate: a host
 * function that waits until the test opens it. No test sleeps; a gate that
 * stays closed for WT_GATE_LIMIT_S seconds gives up and fails the test, so
 * that a driver that runs host functions on the enqueuing thread fails
 * instead of hanging.
 */
#include "drivers/sim/sim.h"
#include "drivers/submit.h"
#include "wt_devices.h"
#include "wt_kernels.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <setjmp.h>
#include "wt_test.h"

#define WT_GATE_LIMIT_S 20
#define WT_MAX_GATES    4

/* ---- checking helpers -------------------------------------------------- */

static void wt_fail_rc(int want, int got, const char *expr, const char *file,
                       int line)
{
    print_error("%s: expected %s, got %s (%s)\n", expr, weft_err_name(want),
                weft_err_name(got), weft_last_error());
    _fail(file, line);
}

/* expr must return want (0 or a WEFT_E code). */
#define WT_RC(want, expr)                                                      \
    do {                                                                       \
        int wt_rc_ = (expr);                                                   \
        if (wt_rc_ != (want))                                                  \
            wt_fail_rc((want), wt_rc_, #expr, __FILE__, __LINE__);             \
    } while (0)
#define WT_OK(expr) WT_RC(0, expr)

/* Bytes that no copy of the suite writes by accident. */
static void wt_pattern(void *p, size_t n, uint32_t seed)
{
    unsigned char *b = p;
    uint32_t x = seed * 2654435761u + 1;

    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        b[i] = (unsigned char)x;
    }
}

static void wt_bytes_equal(const void *got, const void *want, size_t n,
                           const char *what, const char *file, int line)
{
    const unsigned char *g = got, *w = want;

    for (size_t i = 0; i < n; i++)
        if (g[i] != w[i]) {
            print_error("%s: byte %zu of %zu is 0x%02x, expected 0x%02x\n",
                        what, i, n, g[i], w[i]);
            _fail(file, line);
        }
}
#define WT_BYTES(got, want, n, what)                                           \
    wt_bytes_equal((got), (want), (n), (what), __FILE__, __LINE__)

static void *wt_alloc_host(size_t n)
{
    void *p = malloc(n ? n : 1);

    assert_non_null(p);
    return p;
}

/* ---- gates: host functions that hold a queue --------------------------- */

typedef struct wt_gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
    int passed;    /* the host function has returned */
    int timed_out; /* it gave up waiting */
    double waited; /* seconds the host function waited */
} wt_gate;

static void wt_gate_init(wt_gate *g)
{
    pthread_condattr_t attr;

    /* Monotonic: a step of the wall clock must not end the wait early. */
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, &attr);
    pthread_condattr_destroy(&attr);
    g->open = g->passed = g->timed_out = 0;
}

static void wt_gate_fn(void *user)
{
    wt_gate *g = user;
    struct timespec start, limit, end;

    clock_gettime(CLOCK_MONOTONIC, &start);
    limit = start;
    limit.tv_sec += WT_GATE_LIMIT_S;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        if (pthread_cond_timedwait(&g->cv, &g->mu, &limit) == ETIMEDOUT) {
            g->timed_out = 1;
            break;
        }
    g->passed = 1;
    clock_gettime(CLOCK_MONOTONIC, &end);
    g->waited = (double)(end.tv_sec - start.tv_sec) +
                (double)(end.tv_nsec - start.tv_nsec) * 1e-9;
    pthread_mutex_unlock(&g->mu);
}

static void wt_gate_open(wt_gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = 1;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static int wt_gate_timed_out(wt_gate *g)
{
    int t;

    pthread_mutex_lock(&g->mu);
    t = g->timed_out;
    if (t)
        print_error("gate: the held queue's host function gave up after "
                    "%.1f s, although the test had opened it\n",
                    g->waited);
    pthread_mutex_unlock(&g->mu);
    return t;
}

/* ---- the device under test and the per-test fixture -------------------- */

static wt_devices wt_devs;
static weft__device *wt_dev;  /* the device of the running group */
static weft__device *wt_peer; /* another device of its driver, or NULL */

typedef struct wt_fixture {
    weft__context *ctx;
    weft__queue *q;
    weft__context *peer_ctx; /* on wt_peer, made by tests that need it */
    wt_gate gates[WT_MAX_GATES];
    unsigned ngates;
} wt_fixture;

static int wt_setup(void **state)
{
    wt_fixture *f = calloc(1, sizeof *f);

    weft__drv_rect_rows = 0; /* a failed test may have left it set */
    if (!f)
        return -1;
    if (weft__drv_context_create(wt_dev, &f->ctx) < 0 ||
        weft__drv_queue_create(f->ctx, NULL, &f->q) < 0) {
        fprintf(stderr, "setup on %s: %s\n", wt_dev->name, weft_last_error());
        if (f->ctx)
            weft__drv_context_destroy(f->ctx);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

/*
 * Open every gate first (a failed test may have left one closed, and a
 * queue is destroyed only once its work is done), then destroy: a context
 * destroy that answers WEFT_EBUSY here means the test leaked an object.
 */
static int wt_teardown(void **state)
{
    wt_fixture *f = *state;
    int rc = 0;

    for (unsigned i = 0; i < f->ngates; i++)
        wt_gate_open(&f->gates[i]);
    if (f->q && weft__drv_queue_destroy(f->q) < 0)
        rc = -1;
    if (f->ctx && weft__drv_context_destroy(f->ctx) < 0) {
        fprintf(stderr, "teardown: %s\n", weft_last_error());
        rc = -1;
    }
    if (f->peer_ctx && weft__drv_context_destroy(f->peer_ctx) < 0) {
        fprintf(stderr, "teardown (peer): %s\n", weft_last_error());
        rc = -1;
    }
    for (unsigned i = 0; i < f->ngates; i++) {
        pthread_mutex_destroy(&f->gates[i].mu);
        pthread_cond_destroy(&f->gates[i].cv);
    }
    free(f);
    return rc;
}

static wt_gate *wt_gate_new(wt_fixture *f)
{
    wt_gate *g;

    assert_true(f->ngates < WT_MAX_GATES);
    g = &f->gates[f->ngates++];
    wt_gate_init(g);
    return g;
}

/* Close q behind a gate: nothing enqueued later on q runs until it opens. */
static wt_gate *wt_hold(wt_fixture *f, weft__queue *q)
{
    wt_gate *g = wt_gate_new(f);

    WT_OK(weft__drv_host_fn(q, wt_gate_fn, g));
    return g;
}

static void wt_release(wt_gate *g)
{
    wt_gate_open(g);
}

/* After the queue behind g has been synchronized. */
static void wt_gate_check(wt_gate *g)
{
    assert_false(wt_gate_timed_out(g));
}

static weft__context *wt_peer_context(wt_fixture *f)
{
    if (!f->peer_ctx)
        WT_OK(weft__drv_context_create(wt_peer, &f->peer_ctx));
    return f->peer_ctx;
}

/* Compare the whole of m with model (m->size bytes), reading through q. */
static void wt_check_mem(weft__queue *q, weft__mem *m, const void *model,
                         const char *what, const char *file, int line)
{
    void *got = wt_alloc_host(m->size);

    memset(got, 0xEE, m->size);
    WT_OK(weft__drv_copy_d2h(q, got, m, 0, m->size));
    WT_OK(weft__drv_queue_sync(q));
    wt_bytes_equal(got, model, m->size, what, file, line);
    free(got);
}
#define WT_MEM(q, m, model, what)                                              \
    wt_check_mem((q), (m), (model), (what), __FILE__, __LINE__)

static uint32_t wt_group_size(uint32_t want)
{
    uint32_t max = wt_dev->props.max_group_size;

    return max && max < want ? max : want;
}

static weft__module *wt_module(weft__context *ctx)
{
    weft__module_source src;
    weft__module *mod = NULL;

    assert_int_equal(wt_kernels_source(wt_dev->drv->name, &src), 0);
    WT_OK(weft__drv_module_create(ctx, &src, &mod));
    assert_non_null(mod);
    return mod;
}

static weft__kernel *wt_kernel(weft__module *mod, const char *name)
{
    weft__kernel *k = NULL;

    WT_OK(weft__drv_kernel_get(mod, name, &k));
    assert_non_null(k);
    return k;
}

static weft__karg wt_buf(weft__mem *m, size_t off)
{
    weft__karg a;

    memset(&a, 0, sizeof a);
    a.type = WEFT_PARAM_BUFFER;
    a.u.buf.mem = m;
    a.u.buf.offset = off;
    return a;
}

static weft__karg wt_scalar(weft_param_type type, const void *value,
                            size_t size)
{
    weft__karg a;

    memset(&a, 0, sizeof a);
    a.type = type;
    a.size = size;
    a.u.value = value;
    return a;
}

static weft__grid wt_grid1(uint64_t n, uint32_t group)
{
    weft__grid g = {
        {(uint32_t)((n + group - 1) / group), 1, 1}, {group, 1, 1}, 0};
    return g;
}

/* advance(x, k, n) over n elements of m. */
static void wt_advance(weft__queue *q, weft__kernel *k, weft__mem *m,
                       const uint32_t *kv, const uint64_t *n)
{
    weft__karg args[3] = {wt_buf(m, 0),
                          wt_scalar(WEFT_PARAM_U32, kv, sizeof *kv),
                          wt_scalar(WEFT_PARAM_U64, n, sizeof *n)};
    weft__grid g = wt_grid1(*n, wt_group_size(64));

    WT_OK(weft__drv_launch(q, k, &g, args, 3));
}

/* ---- contexts ---------------------------------------------------------- */

static void test_context_lifecycle(void **state)
{
    wt_fixture *f = *state;
    weft__context *c2 = NULL;
    weft__queue *q2 = NULL;
    weft__mem *m = NULL;
    uint32_t v = 0x01020304, got = 0;

    assert_ptr_equal(f->ctx->dev, wt_dev);
    assert_ptr_equal(f->ctx->drv, wt_dev->drv);
    /* A second context on the same device works beside the first. */
    WT_OK(weft__drv_context_create(wt_dev, &c2));
    assert_ptr_not_equal(c2, f->ctx);
    WT_OK(weft__drv_queue_create(c2, NULL, &q2));
    WT_OK(weft__drv_mem_alloc(c2, sizeof v, &m));
    WT_OK(weft__drv_copy_h2d(q2, m, 0, &v, sizeof v));
    WT_OK(weft__drv_copy_d2h(q2, &got, m, 0, sizeof got));
    WT_OK(weft__drv_queue_sync(q2));
    assert_int_equal(got, v);
    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_queue_destroy(q2));
    WT_OK(weft__drv_context_destroy(c2));
}

static void test_context_busy(void **state)
{
    weft__context *c = NULL;
    weft__queue *q = NULL;
    weft__mem *m = NULL;
    weft__module *mod = NULL;
    weft__event *ev = NULL;
    weft__module_source src;

    (void)state;
    WT_OK(weft__drv_context_create(wt_dev, &c));
    WT_OK(weft__drv_queue_create(c, NULL, &q));
    WT_RC(WEFT_EBUSY, weft__drv_context_destroy(c));
    assert_true(strlen(weft_last_error()) > 0);
    /* The failed destroy changed nothing: the context still works. */
    WT_OK(weft__drv_mem_alloc(c, 64, &m));
    WT_OK(weft__drv_queue_destroy(q));
    WT_RC(WEFT_EBUSY, weft__drv_context_destroy(c));
    WT_OK(weft__drv_mem_free(m));
    assert_int_equal(wt_kernels_source(wt_dev->drv->name, &src), 0);
    WT_OK(weft__drv_module_create(c, &src, &mod));
    WT_RC(WEFT_EBUSY, weft__drv_context_destroy(c));
    WT_OK(weft__drv_module_destroy(mod));
    WT_OK(weft__drv_event_create(c, 0, &ev));
    WT_RC(WEFT_EBUSY, weft__drv_context_destroy(c));
    WT_OK(weft__drv_event_destroy(ev));
    WT_OK(weft__drv_context_destroy(c));
}

/* ---- memory ------------------------------------------------------------ */

static void test_alloc_sizes(void **state)
{
    static const size_t sizes[] = {1, 3, 4096, (1u << 20) + 7, 64u << 20};
    wt_fixture *f = *state;
    const weft_device_info *p = &wt_dev->props;

    for (unsigned i = 0; i < WEFT__COUNTOF(sizes); i++) {
        size_t n = sizes[i];
        weft__mem *m = NULL;
        unsigned char first = 0xA5, last = 0x5A, got[2] = {0, 0};

        if (p->max_alloc && n > p->max_alloc) {
            printf("    size %zu is over max_alloc %llu: not tried\n", n,
                   (unsigned long long)p->max_alloc);
            continue;
        }
        WT_OK(weft__drv_mem_alloc(f->ctx, n, &m));
        assert_non_null(m);
        assert_int_equal(m->size, n);
        assert_int_equal(m->kind, WEFT__MEM_DEVICE);
        assert_null(m->host);
        assert_ptr_equal(m->ctx, f->ctx);
        /* Both ends of the allocation hold bytes. */
        WT_OK(weft__drv_copy_h2d(f->q, m, 0, &first, 1));
        WT_OK(weft__drv_copy_h2d(f->q, m, n - 1, n > 1 ? &last : &first, 1));
        WT_OK(weft__drv_copy_d2h(f->q, &got[0], m, 0, 1));
        WT_OK(weft__drv_copy_d2h(f->q, &got[1], m, n - 1, 1));
        WT_OK(weft__drv_queue_sync(f->q));
        assert_int_equal(got[0], first);
        assert_int_equal(got[1], n > 1 ? last : first);
        if (n == sizes[WEFT__COUNTOF(sizes) - 1]) {
            /* The largest is filled and read back whole. */
            uint32_t pat = 0xC0FFEE11;
            unsigned char *want = wt_alloc_host(n);

            for (size_t j = 0; j < n; j += 4)
                memcpy(want + j, &pat, 4);
            WT_OK(weft__drv_fill(f->q, m, 0, &pat, 4, n));
            WT_MEM(f->q, m, want, "64 MiB fill");
            free(want);
        }
        WT_OK(weft__drv_mem_free(m));
    }
}

static void test_alloc_invalid(void **state)
{
    wt_fixture *f = *state;
    const weft_device_info *p = &wt_dev->props;
    weft__mem *m = NULL;

    WT_RC(WEFT_EINVAL, weft__drv_mem_alloc(f->ctx, 0, &m));
    assert_null(m);
    if (p->max_alloc && p->max_alloc < SIZE_MAX) {
        WT_RC(WEFT_EDEVMEM,
              weft__drv_mem_alloc(f->ctx, (size_t)p->max_alloc + 1, &m));
        assert_null(m);
        assert_non_null(strstr(weft_last_error(), wt_dev->name));
    }
    WT_RC(WEFT_EDEVMEM, weft__drv_mem_alloc(f->ctx, SIZE_MAX, &m));
    assert_null(m);
}

/* ---- copies ------------------------------------------------------------ */

static void test_copy_h2d_d2h(void **state)
{
    wt_fixture *f = *state;
    const size_t n = (1u << 20) + 13;
    unsigned char *src = wt_alloc_host(n), *model = wt_alloc_host(n);
    unsigned char *out = wt_alloc_host(n);
    weft__mem *m = NULL;

    wt_pattern(src, n, 1);
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &m));
    WT_OK(weft__drv_copy_h2d(f->q, m, 0, src, n));
    memcpy(model, src, n);
    WT_MEM(f->q, m, model, "whole h2d");

    /* Odd offsets and sizes, both ways. */
    wt_pattern(src, n, 2);
    WT_OK(weft__drv_copy_h2d(f->q, m, 1, src + 7, 4095));
    memcpy(model + 1, src + 7, 4095);
    WT_OK(weft__drv_copy_h2d(f->q, m, n - 3, src + 100, 3));
    memcpy(model + n - 3, src + 100, 3);
    WT_OK(weft__drv_copy_h2d(f->q, m, 65537, src + 3, 77777));
    memcpy(model + 65537, src + 3, 77777);
    WT_MEM(f->q, m, model, "h2d at offsets");

    memset(out, 0xEE, n);
    WT_OK(weft__drv_copy_d2h(f->q, out + 5, m, 3, 10001));
    WT_OK(weft__drv_copy_d2h(f->q, out + 20000, m, n - 1, 1));
    WT_OK(weft__drv_queue_sync(f->q));
    WT_BYTES(out + 5, model + 3, 10001, "d2h at offsets");
    assert_int_equal(out[20000], model[n - 1]);
    assert_int_equal(out[4], 0xEE);
    assert_int_equal(out[10006], 0xEE);

    WT_OK(weft__drv_mem_free(m));
    free(src);
    free(model);
    free(out);
}

static void test_copy_d2d(void **state)
{
    wt_fixture *f = *state;
    const size_t na = 100003, nb = 65521;
    unsigned char *a_model = wt_alloc_host(na), *b_model = wt_alloc_host(nb);
    weft__mem *a = NULL, *b = NULL;

    wt_pattern(a_model, na, 3);
    wt_pattern(b_model, nb, 4);
    WT_OK(weft__drv_mem_alloc(f->ctx, na, &a));
    WT_OK(weft__drv_mem_alloc(f->ctx, nb, &b));
    WT_OK(weft__drv_copy_h2d(f->q, a, 0, a_model, na));
    WT_OK(weft__drv_copy_h2d(f->q, b, 0, b_model, nb));
    /* the models change below: the uploads must have read them first */
    WT_OK(weft__drv_queue_sync(f->q));

    WT_OK(weft__drv_copy_d2d(f->q, b, 5, a, 11, 777));
    memcpy(b_model + 5, a_model + 11, 777);
    WT_OK(weft__drv_copy_d2d(f->q, b, nb - 1000, a, na - 1000, 1000));
    memcpy(b_model + nb - 1000, a_model + na - 1000, 1000);
    /* Disjoint ranges of one allocation. */
    WT_OK(weft__drv_copy_d2d(f->q, a, 50001, a, 1, 40000));
    memmove(a_model + 50001, a_model + 1, 40000);
    WT_MEM(f->q, a, a_model, "d2d within one allocation");
    WT_MEM(f->q, b, b_model, "d2d at offsets");

    /* Overlapping ranges of one allocation are refused and change nothing. */
    WT_RC(WEFT_EINVAL, weft__drv_copy_d2d(f->q, a, 10, a, 0, 100));
    WT_MEM(f->q, a, a_model, "after a refused overlapping d2d");

    WT_OK(weft__drv_mem_free(a));
    WT_OK(weft__drv_mem_free(b));
    free(a_model);
    free(b_model);
}

static void test_copy_out_of_range(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 4099;
    unsigned char *model = wt_alloc_host(n), buf[64];
    uint32_t pat = 0xFFFFFFFF;
    weft__mem *a = NULL, *b = NULL;

    wt_pattern(model, n, 5);
    memset(buf, 0xAB, sizeof buf);
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &a));
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &b));
    WT_OK(weft__drv_copy_h2d(f->q, a, 0, model, n));
    WT_OK(weft__drv_copy_h2d(f->q, b, 0, model, n));

    WT_RC(WEFT_ERANGE, weft__drv_copy_h2d(f->q, a, n - 3, buf, 4));
    WT_RC(WEFT_ERANGE, weft__drv_copy_h2d(f->q, a, n + 1, buf, 1));
    WT_RC(WEFT_ERANGE, weft__drv_copy_h2d(f->q, a, 0, buf, n + 1));
    /* off + size wraps around: still out of range */
    WT_RC(WEFT_ERANGE, weft__drv_copy_h2d(f->q, a, SIZE_MAX, buf, 2));
    WT_RC(WEFT_ERANGE, weft__drv_copy_d2h(f->q, buf, a, n - 63, 64));
    WT_RC(WEFT_ERANGE, weft__drv_copy_d2h(f->q, buf, a, 2, SIZE_MAX));
    WT_RC(WEFT_ERANGE, weft__drv_copy_d2d(f->q, b, n - 10, a, 0, 11));
    WT_RC(WEFT_ERANGE, weft__drv_copy_d2d(f->q, b, 0, a, n - 10, 11));
    WT_RC(WEFT_ERANGE, weft__drv_fill(f->q, a, n - 3, &pat, 1, 4));
    WT_RC(WEFT_ERANGE, weft__drv_fill(f->q, a, 4096, &pat, 4, 8));
    assert_non_null(strstr(weft_last_error(), "4099"));

    /* No refused copy wrote anything. */
    WT_MEM(f->q, a, model, "a after refused copies");
    WT_MEM(f->q, b, model, "b after refused copies");
    for (size_t i = 0; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0xAB);
    WT_OK(weft__drv_mem_free(a));
    WT_OK(weft__drv_mem_free(b));
    free(model);
}

static void test_fill_patterns(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 8192 + 12;
    unsigned char *model = wt_alloc_host(n);
    const uint8_t p1 = 0xAB, zero = 0;
    const uint16_t p2 = 0x1234;
    const uint32_t p4 = 0xDEADBEEF;
    weft__mem *m = NULL;

    WT_OK(weft__drv_mem_alloc(f->ctx, n, &m));
    WT_OK(weft__drv_fill(f->q, m, 0, &zero, 1, n));
    memset(model, 0, n);
    WT_OK(weft__drv_fill(f->q, m, 3, &p1, 1, 5));
    memset(model + 3, p1, 5);
    WT_OK(weft__drv_fill(f->q, m, 10, &p2, 2, 6));
    for (size_t i = 10; i < 16; i += 2)
        memcpy(model + i, &p2, 2);
    WT_OK(weft__drv_fill(f->q, m, 20, &p4, 4, 12));
    for (size_t i = 20; i < 32; i += 4)
        memcpy(model + i, &p4, 4);
    /* A long 4-byte fill ending at the last byte. */
    WT_OK(weft__drv_fill(f->q, m, 4096, &p4, 4, n - 4096));
    for (size_t i = 4096; i < n; i += 4)
        memcpy(model + i, &p4, 4);
    WT_MEM(f->q, m, model, "fills");

    /* Misaligned or odd patterns are refused and change nothing. */
    WT_RC(WEFT_EINVAL, weft__drv_fill(f->q, m, 1, &p2, 2, 4));
    WT_RC(WEFT_EINVAL, weft__drv_fill(f->q, m, 0, &p4, 4, 6));
    WT_RC(WEFT_EINVAL, weft__drv_fill(f->q, m, 0, &p4, 3, 6));
    WT_MEM(f->q, m, model, "after refused fills");
    WT_OK(weft__drv_mem_free(m));
    free(model);
}

static void test_pinned_host(void **state)
{
    wt_fixture *f = *state;
    const size_t n = (1u << 20) + 5;
    unsigned char *model;
    weft__mem *pin = NULL, *d = NULL;

    if (!wt_dev->props.pinned_host) {
        WT_RC(WEFT_ENOTSUP, weft__drv_host_alloc(f->ctx, n, &pin));
        skip();
    }
    model = wt_alloc_host(n);
    WT_OK(weft__drv_host_alloc(f->ctx, n, &pin));
    assert_int_equal(pin->kind, WEFT__MEM_PINNED);
    assert_non_null(pin->host);
    assert_int_equal(pin->size, n);
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &d));

    unsigned char *h = pin->host;
    wt_pattern(h, n, 6);
    memcpy(model, h, n);
    WT_OK(weft__drv_copy_h2d(f->q, d, 0, h, n));
    /* Pinned memory is the host side of copies, at offsets. */
    WT_OK(weft__drv_copy_d2h(f->q, h + 100, d, 7, 5000));
    WT_OK(weft__drv_queue_sync(f->q));
    memmove(model + 100, model + 7, 5000);
    WT_BYTES(h, model, n, "pinned after d2h");
    /* Pinned memory is not device memory. */
    WT_RC(WEFT_EINVAL, weft__drv_copy_h2d(f->q, pin, 0, model, 1));
    WT_OK(weft__drv_mem_free(d));
    WT_OK(weft__drv_mem_free(pin));
    free(model);
}

static void test_host_register(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 1u << 20;
    unsigned char *host = aligned_alloc(4096, n), *model = wt_alloc_host(n);
    weft__mem *reg = NULL, *d = NULL;

    assert_non_null(host);
    if (!wt_dev->props.host_register) {
        WT_RC(WEFT_ENOTSUP, weft__drv_host_register(f->ctx, host, n, &reg));
        free(host);
        free(model);
        skip();
    }
    wt_pattern(host, n, 7);
    memcpy(model, host, n);
    WT_OK(weft__drv_host_register(f->ctx, host, n, &reg));
    assert_int_equal(reg->kind, WEFT__MEM_REGISTERED);
    assert_ptr_equal(reg->host, host);
    assert_int_equal(reg->size, n);
    /* Registering leaves the bytes alone. */
    WT_BYTES(host, model, n, "registered memory");
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &d));
    WT_OK(weft__drv_copy_h2d(f->q, d, 0, host, n));
    WT_OK(weft__drv_copy_d2h(f->q, host + 3, d, 4096, 9999));
    WT_OK(weft__drv_queue_sync(f->q));
    memmove(model + 3, model + 4096, 9999);
    WT_BYTES(host, model, n, "registered after d2h");
    WT_OK(weft__drv_mem_free(d));
    WT_OK(weft__drv_mem_free(reg));
    free(host);
    free(model);
}

/* ---- modules and launches ---------------------------------------------- */

static void test_module_kernels(void **state)
{
    static const struct {
        const char *name;
        unsigned nparams;
    } kernels[] = {{"iota", 3}, {"axpy", 4}, {"iota2d", 3}, {"advance", 3}};
    wt_fixture *f = *state;
    weft__module *mod = wt_module(f->ctx);
    weft__kernel *k = NULL, *again = NULL;

    assert_ptr_equal(mod->ctx, f->ctx);
    for (unsigned i = 0; i < WEFT__COUNTOF(kernels); i++) {
        k = wt_kernel(mod, kernels[i].name);
        assert_string_equal(k->name, kernels[i].name);
        assert_ptr_equal(k->module, mod);
        if (k->params_known)
            assert_int_equal(k->nparams, kernels[i].nparams);
    }
    /* The same name twice is fine (the same object or an equal one). */
    k = wt_kernel(mod, "iota");
    again = wt_kernel(mod, "iota");
    assert_string_equal(again->name, k->name);

    k = NULL;
    WT_RC(WEFT_ENOTFOUND, weft__drv_kernel_get(mod, "no_such_kernel", &k));
    assert_null(k);
    assert_non_null(strstr(weft_last_error(), "no_such_kernel"));
    WT_OK(weft__drv_module_destroy(mod));
}

static void test_module_bad_sources(void **state)
{
    wt_fixture *f = *state;
    weft__module_source src;
    weft__module *mod = NULL;

    assert_int_equal(wt_kernels_foreign_source(wt_dev->drv->name, &src), 0);
    WT_RC(WEFT_ENOTSUP, weft__drv_module_create(f->ctx, &src, &mod));
    assert_null(mod);
    if (wt_kernels_broken_source(wt_dev->drv->name, &src) == 0) {
        WT_RC(WEFT_EBUILD, weft__drv_module_create(f->ctx, &src, &mod));
        assert_null(mod);
        /* The build log names what is wrong. */
        printf("    build failure reads: %.200s\n", weft_last_error());
        assert_true(strstr(weft_last_error(), "no_such_identifier") ||
                    strstr(weft_last_error(), "no.such.instruction") ||
                    strstr(weft_last_error(), "broken"));
    }
}

static void test_launch_bad_args(void **state)
{
    wt_fixture *f = *state;
    weft__module *mod = wt_module(f->ctx);
    weft__kernel *iota = wt_kernel(mod, "iota");
    const uint32_t add = 1;
    const uint64_t n = 64, add64 = 1;
    const float fl = 1.0f;
    weft__mem *out = NULL;
    weft__grid g = wt_grid1(n, wt_group_size(64));
    uint32_t *model = wt_alloc_host(n * 4);
    const uint8_t zero = 0;

    WT_OK(weft__drv_mem_alloc(f->ctx, n * 4, &out));
    WT_OK(weft__drv_fill(f->q, out, 0, &zero, 1, n * 4));
    memset(model, 0, n * 4);
    {
        weft__karg bad_off[3] = {wt_buf(out, n * 4),
                                 wt_scalar(WEFT_PARAM_U32, &add, 4),
                                 wt_scalar(WEFT_PARAM_U64, &n, 8)};
        /* A buffer argument that starts past its allocation. */
        WT_RC(WEFT_ERANGE, weft__drv_launch(f->q, iota, &g, bad_off, 3));
    }
    if (!iota->params_known) {
        printf("    %s does not know the parameters of iota: argument "
               "checks not tried\n",
               wt_dev->drv->name);
        WT_MEM(f->q, out, model, "after refused launches");
        WT_OK(weft__drv_mem_free(out));
        WT_OK(weft__drv_module_destroy(mod));
        free(model);
        skip();
    }
    weft__karg too_few[2] = {wt_buf(out, 0),
                             wt_scalar(WEFT_PARAM_U32, &add, 4)};
    weft__karg too_many[4] = {
        wt_buf(out, 0), wt_scalar(WEFT_PARAM_U32, &add, 4),
        wt_scalar(WEFT_PARAM_U64, &n, 8), wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__karg wide[3] = {wt_buf(out, 0), wt_scalar(WEFT_PARAM_U64, &add64, 8),
                          wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__karg scalar_for_buffer[3] = {wt_scalar(WEFT_PARAM_U64, &n, 8),
                                       wt_scalar(WEFT_PARAM_U32, &add, 4),
                                       wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__karg buffer_for_scalar[3] = {wt_buf(out, 0), wt_buf(out, 0),
                                       wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__karg float_for_u64[3] = {wt_buf(out, 0),
                                   wt_scalar(WEFT_PARAM_U32, &add, 4),
                                   wt_scalar(WEFT_PARAM_F32, &fl, 4)};

    WT_RC(WEFT_EARGS, weft__drv_launch(f->q, iota, &g, too_few, 2));
    assert_non_null(strstr(weft_last_error(), "iota"));
    WT_RC(WEFT_EARGS, weft__drv_launch(f->q, iota, &g, too_many, 4));
    WT_RC(WEFT_EARGS, weft__drv_launch(f->q, iota, &g, wide, 3));
    /*
     * A 64-bit scalar where a pointer goes has the pointer's size: only a
     * driver that knows the parameter types (not just their sizes) can
     * tell, and launching it anyway would write through a bad address.
     */
    if (iota->params)
        WT_RC(WEFT_EARGS,
              weft__drv_launch(f->q, iota, &g, scalar_for_buffer, 3));
    WT_RC(WEFT_EARGS, weft__drv_launch(f->q, iota, &g, buffer_for_scalar, 3));
    WT_RC(WEFT_EARGS, weft__drv_launch(f->q, iota, &g, float_for_u64, 3));
    /* None of the refused launches ran. */
    WT_MEM(f->q, out, model, "after refused launches");
    WT_OK(weft__drv_mem_free(out));
    WT_OK(weft__drv_module_destroy(mod));
    free(model);
}

/*
 * Buffer arguments start at offsets that are multiples of 4096: OpenCL
 * devices take only offsets aligned to their base address alignment.
 */
static void test_launch_1d(void **state)
{
    wt_fixture *f = *state;
    weft__module *mod = wt_module(f->ctx);
    weft__kernel *iota = wt_kernel(mod, "iota");
    const uint64_t n = 1000, cap = 1024, one = 1;
    const size_t off = 4096, off3 = off + cap * 4, size = off3 + 4096;
    const uint32_t add = 7, add2 = 1000000, ones = 0xFFFFFFFF;
    uint32_t *model = wt_alloc_host(size);
    weft__mem *out = NULL;

    WT_OK(weft__drv_mem_alloc(f->ctx, size, &out));
    WT_OK(weft__drv_fill(f->q, out, 0, &ones, 4, size));
    for (size_t i = 0; i < size / 4; i++)
        model[i] = ones;

    weft__karg args[3] = {wt_buf(out, 0), wt_scalar(WEFT_PARAM_U32, &add, 4),
                          wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__grid g = wt_grid1(n, wt_group_size(64));
    WT_OK(weft__drv_launch(f->q, iota, &g, args, 3));
    for (uint32_t i = 0; i < n; i++)
        model[i] = i + add;

    /* At an offset into the buffer; items past n write nothing. */
    weft__karg args2[3] = {wt_buf(out, off),
                           wt_scalar(WEFT_PARAM_U32, &add2, 4),
                           wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__grid g2 = wt_grid1(cap, wt_group_size(32));
    WT_OK(weft__drv_launch(f->q, iota, &g2, args2, 3));
    for (uint32_t i = 0; i < n; i++)
        model[off / 4 + i] = i + add2;

    /* One item. */
    weft__karg args3[3] = {wt_buf(out, off3),
                           wt_scalar(WEFT_PARAM_U32, &add, 4),
                           wt_scalar(WEFT_PARAM_U64, &one, 8)};
    weft__grid g3 = wt_grid1(1, 1);
    WT_OK(weft__drv_launch(f->q, iota, &g3, args3, 3));
    model[off3 / 4] = add;

    WT_MEM(f->q, out, model, "iota over 1-D grids");
    WT_OK(weft__drv_mem_free(out));
    WT_OK(weft__drv_module_destroy(mod));
    free(model);
}

static void test_launch_2d(void **state)
{
    wt_fixture *f = *state;
    weft__module *mod = wt_module(f->ctx);
    weft__kernel *k = wt_kernel(mod, "iota2d");
    const uint32_t w = 100, h = 37, pad = 0x77777777;
    const size_t n = (size_t)w * h + 16;
    uint32_t *model = wt_alloc_host(n * 4);
    weft__mem *out = NULL;
    weft__grid g = {{13, 10, 1}, {8, 4, 1}, 0};

    if (wt_dev->props.max_group_size && wt_dev->props.max_group_size < 32) {
        g.group_size[0] = g.group_size[1] = 1;
        g.groups[0] = w;
        g.groups[1] = h;
    }
    WT_OK(weft__drv_mem_alloc(f->ctx, n * 4, &out));
    WT_OK(weft__drv_fill(f->q, out, 0, &pad, 4, n * 4));
    for (size_t i = 0; i < n; i++)
        model[i] = pad;
    for (uint32_t y = 0; y < h; y++)
        for (uint32_t x = 0; x < w; x++)
            model[y * w + x] = wt_iota2d_value(x, y);
    weft__karg args[3] = {wt_buf(out, 0), wt_scalar(WEFT_PARAM_U32, &w, 4),
                          wt_scalar(WEFT_PARAM_U32, &h, 4)};
    WT_OK(weft__drv_launch(f->q, k, &g, args, 3));
    WT_MEM(f->q, out, model, "iota2d over a 2-D grid");
    WT_OK(weft__drv_mem_free(out));
    WT_OK(weft__drv_module_destroy(mod));
    free(model);
}

static void test_launch_axpy(void **state)
{
    wt_fixture *f = *state;
    weft__module *mod = wt_module(f->ctx);
    weft__kernel *k = wt_kernel(mod, "axpy");
    const uint64_t n = 4097;
    const float a = 2.0f;
    float *x = wt_alloc_host(n * 4), *y = wt_alloc_host(n * 4);
    float *want = wt_alloc_host(n * 4);
    weft__mem *dx = NULL, *dy = NULL;

    /* Exact in binary: the result does not depend on fused multiply-add. */
    for (uint64_t i = 0; i < n; i++) {
        x[i] = (float)i;
        y[i] = 0.5f * (float)i;
        want[i] = 2.5f * (float)i;
    }
    WT_OK(weft__drv_mem_alloc(f->ctx, n * 4, &dx));
    WT_OK(weft__drv_mem_alloc(f->ctx, n * 4, &dy));
    WT_OK(weft__drv_copy_h2d(f->q, dx, 0, x, n * 4));
    WT_OK(weft__drv_copy_h2d(f->q, dy, 0, y, n * 4));
    weft__karg args[4] = {wt_buf(dy, 0), wt_buf(dx, 0),
                          wt_scalar(WEFT_PARAM_F32, &a, 4),
                          wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__grid g = wt_grid1(n, wt_group_size(128));
    WT_OK(weft__drv_launch(f->q, k, &g, args, 4));
    WT_MEM(f->q, dy, want, "axpy");
    WT_MEM(f->q, dx, x, "axpy's x unchanged");
    WT_OK(weft__drv_mem_free(dx));
    WT_OK(weft__drv_mem_free(dy));
    WT_OK(weft__drv_module_destroy(mod));
    free(x);
    free(y);
    free(want);
}

/* ---- events ------------------------------------------------------------ */

static void test_event_never_recorded(void **state)
{
    wt_fixture *f = *state;
    weft__event *ev = NULL;
    weft__mem *m = NULL;
    uint32_t v = 42, got = 0;

    WT_OK(weft__drv_event_create(f->ctx, 0, &ev));
    assert_ptr_equal(ev->ctx, f->ctx);
    WT_OK(weft__drv_event_query(ev));
    WT_OK(weft__drv_event_sync(ev));
    /* Waiting on it holds nothing up. */
    WT_OK(weft__drv_queue_wait_event(f->q, ev));
    WT_OK(weft__drv_mem_alloc(f->ctx, 4, &m));
    WT_OK(weft__drv_copy_h2d(f->q, m, 0, &v, 4));
    WT_OK(weft__drv_copy_d2h(f->q, &got, m, 0, 4));
    WT_OK(weft__drv_queue_sync(f->q));
    assert_int_equal(got, v);
    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_event_destroy(ev));
}

static void test_event_record_sync(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 1u << 16;
    unsigned char *src = wt_alloc_host(n), *out = wt_alloc_host(n);
    weft__event *ev = NULL;
    weft__mem *m = NULL;
    wt_gate *gate;

    wt_pattern(src, n, 8);
    memset(out, 0, n);
    WT_OK(weft__drv_event_create(f->ctx, 0, &ev));
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &m));
    gate = wt_hold(f, f->q);
    WT_OK(weft__drv_copy_h2d(f->q, m, 0, src, n));
    WT_OK(weft__drv_copy_d2h(f->q, out, m, 0, n));
    WT_OK(weft__drv_event_record(ev, f->q));
    /* The queue is held: the event cannot have completed. */
    WT_RC(WEFT_ENOTREADY, weft__drv_event_query(ev));
    wt_release(gate);
    /* Synchronizing on the event alone makes the copies' results visible. */
    WT_OK(weft__drv_event_sync(ev));
    WT_OK(weft__drv_event_query(ev));
    WT_BYTES(out, src, n, "d2h before the recorded event");
    wt_gate_check(gate);
    WT_OK(weft__drv_queue_sync(f->q));
    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_event_destroy(ev));
    free(src);
    free(out);
}

static void test_event_rerecord(void **state)
{
    wt_fixture *f = *state;
    weft__queue *q2 = NULL;
    weft__event *ev = NULL;
    wt_gate *gate;

    WT_OK(weft__drv_queue_create(f->ctx, NULL, &q2));
    WT_OK(weft__drv_event_create(f->ctx, 0, &ev));
    gate = wt_hold(f, f->q);
    WT_OK(weft__drv_event_record(ev, f->q));
    WT_RC(WEFT_ENOTREADY, weft__drv_event_query(ev));
    /* Recording again on an idle queue re-targets the event. */
    WT_OK(weft__drv_event_record(ev, q2));
    WT_OK(weft__drv_event_sync(ev));
    WT_OK(weft__drv_event_query(ev));
    wt_release(gate);
    WT_OK(weft__drv_queue_sync(f->q));
    wt_gate_check(gate);
    WT_OK(weft__drv_event_destroy(ev));
    WT_OK(weft__drv_queue_destroy(q2));
}

static void test_event_cross_queue(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 100001;
    unsigned char *src = wt_alloc_host(n), *out = wt_alloc_host(n);
    weft__queue *q2 = NULL;
    weft__event *e1 = NULL, *e2 = NULL;
    weft__mem *m = NULL;
    wt_gate *gate;

    wt_pattern(src, n, 9);
    memset(out, 0, n);
    WT_OK(weft__drv_queue_create(f->ctx, NULL, &q2));
    WT_OK(weft__drv_event_create(f->ctx, 0, &e1));
    WT_OK(weft__drv_event_create(f->ctx, 0, &e2));
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &m));

    gate = wt_hold(f, f->q);
    WT_OK(weft__drv_copy_h2d(f->q, m, 0, src, n));
    WT_OK(weft__drv_event_record(e1, f->q));
    WT_OK(weft__drv_queue_wait_event(q2, e1));
    WT_OK(weft__drv_copy_d2h(q2, out, m, 0, n));
    WT_OK(weft__drv_event_record(e2, q2));
    /* q2 waits for the held queue. */
    WT_RC(WEFT_ENOTREADY, weft__drv_event_query(e2));
    wt_release(gate);
    WT_OK(weft__drv_event_sync(e2));
    WT_BYTES(out, src, n, "q2 reads what q1 wrote before e1");
    wt_gate_check(gate);

    WT_OK(weft__drv_queue_sync(f->q));
    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_event_destroy(e1));
    WT_OK(weft__drv_event_destroy(e2));
    WT_OK(weft__drv_queue_destroy(q2));
    free(src);
    free(out);
}

static void test_event_cross_device(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 65537;
    unsigned char *src = wt_alloc_host(n), *mid = wt_alloc_host(n);
    unsigned char *out = wt_alloc_host(n);
    weft__context *pc;
    weft__queue *pq = NULL;
    weft__event *e1 = NULL, *e2 = NULL;
    weft__mem *a = NULL, *b = NULL;
    wt_gate *gate;

    if (!wt_peer) {
        free(src);
        free(mid);
        free(out);
        skip();
    }
    pc = wt_peer_context(f);
    wt_pattern(src, n, 10);
    memset(mid, 0, n);
    memset(out, 0, n);
    WT_OK(weft__drv_queue_create(pc, NULL, &pq));
    WT_OK(weft__drv_event_create(f->ctx, 0, &e1));
    WT_OK(weft__drv_event_create(pc, 0, &e2));
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &a));
    WT_OK(weft__drv_mem_alloc(pc, n, &b));
    WT_OK(weft__drv_copy_h2d(f->q, a, 0, src, n));
    WT_OK(weft__drv_queue_sync(f->q));

    /*
     * Device 1 reads host memory that device 0 writes: only the event
     * orders the two, and no peer access is needed.
     */
    gate = wt_hold(f, f->q);
    WT_OK(weft__drv_copy_d2h(f->q, mid, a, 0, n));
    WT_OK(weft__drv_event_record(e1, f->q));
    WT_OK(weft__drv_queue_wait_event(pq, e1));
    WT_OK(weft__drv_copy_h2d(pq, b, 0, mid, n));
    WT_OK(weft__drv_copy_d2h(pq, out, b, 0, n));
    WT_OK(weft__drv_event_record(e2, pq));
    WT_RC(WEFT_ENOTREADY, weft__drv_event_query(e2));
    wt_release(gate);
    WT_OK(weft__drv_event_sync(e2));
    WT_BYTES(out, src, n, "device 1 after waiting on device 0's event");
    wt_gate_check(gate);

    WT_OK(weft__drv_queue_sync(f->q));
    WT_OK(weft__drv_mem_free(a));
    WT_OK(weft__drv_mem_free(b));
    WT_OK(weft__drv_event_destroy(e1));
    WT_OK(weft__drv_event_destroy(e2));
    WT_OK(weft__drv_queue_destroy(pq));
    free(src);
    free(mid);
    free(out);
}

static void test_event_timing(void **state)
{
    wt_fixture *f = *state;
    const weft__queue_desc desc = {WEFT__QUEUE_COMPUTE, 0, 1};
    weft__queue *q = NULL;
    weft__event *t0 = NULL, *t1 = NULL, *plain = NULL;
    weft__module *mod;
    weft__mem *m = NULL;
    const uint64_t n = 1u << 20;
    const uint32_t k = 3;
    uint64_t ns = UINT64_MAX;

    if (!wt_dev->props.timing_events) {
        WT_RC(WEFT_ENOTSUP,
              weft__drv_event_create(f->ctx, WEFT__EVENT_TIMING, &t0));
        skip();
    }
    mod = wt_module(f->ctx);
    WT_OK(weft__drv_queue_create(f->ctx, &desc, &q));
    WT_OK(weft__drv_event_create(f->ctx, WEFT__EVENT_TIMING, &t0));
    WT_OK(weft__drv_event_create(f->ctx, WEFT__EVENT_TIMING, &t1));
    WT_OK(weft__drv_event_create(f->ctx, 0, &plain));
    WT_OK(weft__drv_mem_alloc(f->ctx, n * 4, &m));
    WT_OK(weft__drv_event_record(t0, q));
    wt_advance(q, wt_kernel(mod, "advance"), m, &k, &n);
    WT_OK(weft__drv_event_record(t1, q));
    WT_OK(weft__drv_event_record(plain, q));
    WT_OK(weft__drv_event_sync(t1));
    WT_OK(weft__drv_event_elapsed(t0, t1, &ns));
    /* Some time, and less than the whole test's limit. */
    assert_true(ns < 600ull * 1000000000ull);
    printf("    advance over %llu items: %llu ns\n", (unsigned long long)n,
           (unsigned long long)ns);
    WT_RC(WEFT_EINVAL, weft__drv_event_elapsed(t0, plain, &ns));
    WT_OK(weft__drv_queue_sync(q));
    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_event_destroy(t0));
    WT_OK(weft__drv_event_destroy(t1));
    WT_OK(weft__drv_event_destroy(plain));
    WT_OK(weft__drv_queue_destroy(q));
    WT_OK(weft__drv_module_destroy(mod));
}

/* ---- host functions ---------------------------------------------------- */

typedef struct wt_host_log {
    pthread_mutex_t mu;
    int order[8];
    unsigned n;
    const unsigned char *seen; /* host bytes a copy wrote before fn 0 */
    const unsigned char *want;
    size_t size;
    int seen_ok;
    uint32_t *fill; /* written by fn 1, read by the copy after it */
    size_t fill_count;
} wt_host_log;

typedef struct wt_host_step {
    wt_host_log *log;
    int id;
} wt_host_step;

static void wt_host_step_fn(void *user)
{
    wt_host_step *s = user;
    wt_host_log *log = s->log;

    pthread_mutex_lock(&log->mu);
    if (log->n < WEFT__COUNTOF(log->order))
        log->order[log->n++] = s->id;
    if (s->id == 0)
        log->seen_ok = memcmp(log->seen, log->want, log->size) == 0;
    if (s->id == 1)
        for (size_t i = 0; i < log->fill_count; i++)
            log->fill[i] = 0xF00D0000u + (uint32_t)i;
    pthread_mutex_unlock(&log->mu);
}

static void test_host_fn_order(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 1u << 18, count = 1000;
    unsigned char *src = wt_alloc_host(n), *dst = wt_alloc_host(n);
    uint32_t *fill = wt_alloc_host(count * 4), *back = wt_alloc_host(count * 4);
    wt_host_log log;
    wt_host_step steps[4];
    weft__mem *m = NULL, *m2 = NULL;

    memset(&log, 0, sizeof log);
    pthread_mutex_init(&log.mu, NULL);
    wt_pattern(src, n, 11);
    memset(dst, 0, n);
    memset(fill, 0, count * 4);
    log.seen = dst;
    log.want = src;
    log.size = n;
    log.fill = fill;
    log.fill_count = count;
    for (int i = 0; i < 4; i++)
        steps[i] = (wt_host_step){&log, i};

    WT_OK(weft__drv_mem_alloc(f->ctx, n, &m));
    WT_OK(weft__drv_mem_alloc(f->ctx, count * 4, &m2));
    WT_OK(weft__drv_copy_h2d(f->q, m, 0, src, n));
    WT_OK(weft__drv_copy_d2h(f->q, dst, m, 0, n));
    /* fn 0 sees the copies before it complete */
    WT_OK(weft__drv_host_fn(f->q, wt_host_step_fn, &steps[0]));
    /* fn 1 writes host memory that the copy after it reads */
    WT_OK(weft__drv_host_fn(f->q, wt_host_step_fn, &steps[1]));
    WT_OK(weft__drv_copy_h2d(f->q, m2, 0, fill, count * 4));
    WT_OK(weft__drv_host_fn(f->q, wt_host_step_fn, &steps[2]));
    WT_OK(weft__drv_copy_d2h(f->q, back, m2, 0, count * 4));
    WT_OK(weft__drv_host_fn(f->q, wt_host_step_fn, &steps[3]));
    WT_OK(weft__drv_queue_sync(f->q));

    pthread_mutex_lock(&log.mu);
    assert_int_equal(log.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(log.order[i], i);
    assert_true(log.seen_ok);
    pthread_mutex_unlock(&log.mu);
    for (size_t i = 0; i < count; i++)
        assert_int_equal(back[i], 0xF00D0000u + (uint32_t)i);

    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_mem_free(m2));
    pthread_mutex_destroy(&log.mu);
    free(src);
    free(dst);
    free(fill);
    free(back);
}

/* ---- destroyed queues -------------------------------------------------- */

static void wt_never(void *user)
{
    *(int *)user = 1;
}

static void test_queue_destroyed(void **state)
{
    wt_fixture *f = *state;
    weft__queue *q = NULL;
    weft__mem *m = NULL, *m2 = NULL;
    weft__event *ev = NULL;
    weft__module *mod = wt_module(f->ctx);
    weft__kernel *k = wt_kernel(mod, "iota");
    unsigned char buf[16] = {0};
    const uint32_t add = 0, pat = 0;
    const uint64_t n = 4;
    int ran = 0;

    WT_OK(weft__drv_mem_alloc(f->ctx, 16, &m));
    WT_OK(weft__drv_mem_alloc(f->ctx, 16, &m2));
    WT_OK(weft__drv_event_create(f->ctx, 0, &ev));
    WT_OK(weft__drv_queue_create(f->ctx, NULL, &q));
    WT_OK(weft__drv_copy_h2d(q, m, 0, buf, sizeof buf));
    WT_OK(weft__drv_queue_destroy(q));

    weft__karg args[3] = {wt_buf(m, 0), wt_scalar(WEFT_PARAM_U32, &add, 4),
                          wt_scalar(WEFT_PARAM_U64, &n, 8)};
    weft__grid g = wt_grid1(n, 1);
    WT_RC(WEFT_EDESTROYED, weft__drv_queue_sync(q));
    WT_RC(WEFT_EDESTROYED, weft__drv_copy_h2d(q, m, 0, buf, 4));
    WT_RC(WEFT_EDESTROYED, weft__drv_copy_d2h(q, buf, m, 0, 4));
    WT_RC(WEFT_EDESTROYED, weft__drv_copy_d2d(q, m2, 0, m, 0, 4));
    WT_RC(WEFT_EDESTROYED, weft__drv_fill(q, m, 0, &pat, 4, 4));
    WT_RC(WEFT_EDESTROYED, weft__drv_launch(q, k, &g, args, 3));
    WT_RC(WEFT_EDESTROYED, weft__drv_event_record(ev, q));
    WT_RC(WEFT_EDESTROYED, weft__drv_queue_wait_event(q, ev));
    WT_RC(WEFT_EDESTROYED, weft__drv_host_fn(q, wt_never, &ran));
    WT_OK(weft__drv_queue_sync(f->q));
    assert_int_equal(ran, 0);

    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_mem_free(m2));
    WT_OK(weft__drv_event_destroy(ev));
    WT_OK(weft__drv_module_destroy(mod));
}

/* ---- peer copies ------------------------------------------------------- */

static void test_copy_peer(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 300007;
    unsigned char *a_model = wt_alloc_host(n), *b_model = wt_alloc_host(n);
    weft__context *pc;
    weft__queue *pq = NULL;
    weft__mem *a = NULL, *b = NULL, *a2 = NULL;
    int can = -1, rc;

    if (!wt_peer) {
        free(a_model);
        free(b_model);
        skip();
    }
    WT_OK(wt_dev->drv->can_access_peer(wt_dev, wt_peer, &can));
    assert_true(can == 0 || can == 1);
    printf("    %s -> %s: peer access %d\n", wt_dev->name, wt_peer->name, can);
    pc = wt_peer_context(f);
    WT_OK(weft__drv_queue_create(pc, NULL, &pq));
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &a));
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &a2));
    WT_OK(weft__drv_mem_alloc(pc, n, &b));
    wt_pattern(a_model, n, 12);
    wt_pattern(b_model, n, 13);
    WT_OK(weft__drv_copy_h2d(f->q, a, 0, a_model, n));
    WT_OK(weft__drv_copy_h2d(pq, b, 0, b_model, n));
    WT_OK(weft__drv_queue_sync(f->q));
    WT_OK(weft__drv_queue_sync(pq));

    /* On the source's queue, at odd offsets. */
    rc = weft__drv_copy_peer(f->q, b, 17, a, 3, 200001);
    if (rc == WEFT_ENOTSUP && can == 0) {
        printf("    no peer copy between these devices: %s\n",
               weft_last_error());
    } else {
        WT_OK(rc);
        memcpy(b_model + 17, a_model + 3, 200001);
        WT_OK(weft__drv_queue_sync(f->q));
        WT_MEM(pq, b, b_model, "peer copy on the source's queue");
        /* On the destination's queue, the other way. */
        WT_OK(weft__drv_copy_peer(f->q, a2, 0, b, 0, n));
        WT_MEM(f->q, a2, b_model, "peer copy on the destination's queue");
    }
    /* Both sides on one device is not a peer copy. */
    WT_RC(WEFT_EINVAL, weft__drv_copy_peer(f->q, a2, 0, a, 0, 16));
    /* A d2d copy does not cross devices. */
    WT_RC(WEFT_EINVAL, weft__drv_copy_d2d(f->q, b, 0, a, 0, 16));

    WT_OK(weft__drv_mem_free(a));
    WT_OK(weft__drv_mem_free(a2));
    WT_OK(weft__drv_mem_free(b));
    WT_OK(weft__drv_queue_destroy(pq));
    free(a_model);
    free(b_model);
}

/* ---- rectangular copies ------------------------------------------------ */
/*
 * Each case copies a block between two buffers that are larger than the
 * block, filled with other bytes first, and the whole of the destination
 * is compared with a model: the block's rows moved, every other byte as
 * it was. Host buffers are pinned where the device has pinned memory
 * (wt_rect_pinned), so that CUDA's own 2-D/3-D copies run; pageable in
 * test_rect_pageable; test_rect_by_rows forces the dispatcher's fallback.
 */

typedef struct wt_rect_case {
    const char *name;
    size_t width, height, depth;
    size_t dst_off, dst_rp, dst_sp; /* pitches 0: packed */
    size_t src_off, src_rp, src_sp;
} wt_rect_case;

static const wt_rect_case wt_rect_cases[] = {
    {"2-D packed", 37, 5, 1, 0, 0, 0, 0, 0, 0},
    {"2-D pitched, offsets", 13, 7, 1, 3, 29, 0, 5, 17, 0},
    {"2-D packed from pitched", 24, 9, 1, 1, 0, 0, 11, 40, 0},
    {"2-D one byte per row", 1, 9, 1, 2, 3, 0, 0, 7, 0},
    {"2-D tile of a matrix", 257, 63, 1, 1031 * 5 + 17, 1031, 0, 300, 260, 0},
    {"3-D slices whole rows", 8, 3, 5, 4, 12, 48, 1, 10, 40},
    {"3-D slice pitch not whole rows", 11, 4, 3, 7, 16, 72, 2, 23, 23 * 5},
    {"3-D packed", 6, 5, 4, 0, 0, 0, 9, 0, 0},
    {"3-D single-row slices", 9, 1, 6, 5, 0, 20, 0, 0, 13},
    {"3-D rows run past the pitch from the origin", 6, 3, 2, 5, 8, 32, 0, 6,
     18},
};

/* The model's copy of the block (pitches 0 packed, as the entry points). */
static void wt_rect_apply(unsigned char *dst, const unsigned char *src,
                          const weft__rect *r0)
{
    weft__rect r = *r0;

    if (!r.dst.row_pitch)
        r.dst.row_pitch = r.width;
    if (!r.src.row_pitch)
        r.src.row_pitch = r.width;
    if (!r.dst.slice_pitch)
        r.dst.slice_pitch = r.dst.row_pitch * r.height;
    if (!r.src.slice_pitch)
        r.src.slice_pitch = r.src.row_pitch * r.height;
    for (size_t z = 0; z < r.depth; z++)
        for (size_t y = 0; y < r.height; y++)
            memcpy(
                dst + r.dst.off + z * r.dst.slice_pitch + y * r.dst.row_pitch,
                src + r.src.off + z * r.src.slice_pitch + y * r.src.row_pitch,
                r.width);
}

static weft__rect wt_rect_of(const wt_rect_case *c)
{
    weft__rect r;

    memset(&r, 0, sizeof r);
    r.width = c->width;
    r.height = c->height;
    r.depth = c->depth;
    r.dst.off = c->dst_off;
    r.dst.row_pitch = c->dst_rp;
    r.dst.slice_pitch = c->dst_sp;
    r.src.off = c->src_off;
    r.src.row_pitch = c->src_rp;
    r.src.slice_pitch = c->src_sp;
    return r;
}

/* Bytes a side needs, and some more that the copy must leave alone. */
static size_t wt_rect_size(const weft__rect *r, const weft__rect_side *s)
{
    size_t rp = s->row_pitch ? s->row_pitch : r->width;
    size_t sp = s->slice_pitch ? s->slice_pitch : rp * r->height;

    return s->off + (r->depth - 1) * sp + (r->height - 1) * rp + r->width + 37;
}

/* Host memory for a case: pinned (*pin set) where asked and possible. */
static unsigned char *wt_rect_host(wt_fixture *f, size_t n, int pinned,
                                   weft__mem **pin)
{
    *pin = NULL;
    if (pinned && wt_dev->props.pinned_host) {
        WT_OK(weft__drv_host_alloc(f->ctx, n, pin));
        return (*pin)->host;
    }
    return wt_alloc_host(n);
}

static void wt_rect_host_free(void *p, weft__mem *pin)
{
    if (pin)
        WT_OK(weft__drv_mem_free(pin));
    else
        free(p);
}

/* Device memory of n bytes holding model (pattern seed). */
static weft__mem *wt_rect_mem(weft__context *ctx, weft__queue *q, size_t n,
                              unsigned char *model, uint32_t seed)
{
    weft__mem *m = NULL;

    wt_pattern(model, n, seed);
    WT_OK(weft__drv_mem_alloc(ctx, n, &m));
    WT_OK(weft__drv_copy_h2d(q, m, 0, model, n));
    WT_OK(weft__drv_queue_sync(q));
    return m;
}

static void wt_rect_one(wt_fixture *f, const wt_rect_case *c, int pinned)
{
    weft__rect r = wt_rect_of(c);
    size_t nd = wt_rect_size(&r, &r.dst), ns = wt_rect_size(&r, &r.src);
    unsigned char *dmodel = wt_alloc_host(nd), *smodel = wt_alloc_host(ns);
    unsigned char *host;
    weft__mem *pin, *a, *b;
    char what[160];

    /* host -> device */
    host = wt_rect_host(f, ns, pinned, &pin);
    wt_pattern(host, ns, 101);
    b = wt_rect_mem(f->ctx, f->q, nd, dmodel, 102);
    WT_OK(weft__drv_copy_h2d_rect(f->q, b, host, &r));
    wt_rect_apply(dmodel, host, &r);
    snprintf(what, sizeof what, "h2d %s", c->name);
    WT_MEM(f->q, b, dmodel, what);
    WT_OK(weft__drv_mem_free(b));
    wt_rect_host_free(host, pin);

    /* device -> host */
    host = wt_rect_host(f, nd, pinned, &pin);
    a = wt_rect_mem(f->ctx, f->q, ns, smodel, 103);
    wt_pattern(host, nd, 104);
    memcpy(dmodel, host, nd);
    WT_OK(weft__drv_copy_d2h_rect(f->q, host, a, &r));
    WT_OK(weft__drv_queue_sync(f->q));
    wt_rect_apply(dmodel, smodel, &r);
    snprintf(what, sizeof what, "d2h %s", c->name);
    WT_BYTES(host, dmodel, nd, what);
    wt_rect_host_free(host, pin);

    /* device -> device, two allocations */
    b = wt_rect_mem(f->ctx, f->q, nd, dmodel, 105);
    WT_OK(weft__drv_copy_d2d_rect(f->q, b, a, &r));
    wt_rect_apply(dmodel, smodel, &r);
    snprintf(what, sizeof what, "d2d %s", c->name);
    WT_MEM(f->q, b, dmodel, what);
    WT_OK(weft__drv_mem_free(b));

    /* to another device */
    if (wt_peer) {
        weft__context *pc = wt_peer_context(f);
        weft__queue *pq = NULL;
        int rc;

        WT_OK(weft__drv_queue_create(pc, NULL, &pq));
        b = wt_rect_mem(pc, pq, nd, dmodel, 106);
        rc = weft__drv_copy_peer_rect(f->q, b, a, &r);
        if (rc == WEFT_ENOTSUP) {
            printf("    no peer copy: %s\n", weft_last_error());
        } else {
            WT_OK(rc);
            WT_OK(weft__drv_queue_sync(f->q));
            wt_rect_apply(dmodel, smodel, &r);
            snprintf(what, sizeof what, "peer %s", c->name);
            WT_MEM(pq, b, dmodel, what);
        }
        WT_OK(weft__drv_mem_free(b));
        WT_OK(weft__drv_queue_destroy(pq));
    }
    WT_OK(weft__drv_mem_free(a));
    free(dmodel);
    free(smodel);
}

/* Two blocks of one allocation whose rows interleave: every other row. */
static void wt_rect_interleaved(wt_fixture *f)
{
    const size_t w = 40, h = 33, n = 2 * w * h + 16;
    unsigned char *model = wt_alloc_host(n);
    weft__mem *m = wt_rect_mem(f->ctx, f->q, n, model, 107);
    weft__rect r;

    memset(&r, 0, sizeof r);
    r.width = w;
    r.height = h;
    r.depth = 1;
    r.src.off = 3;
    r.src.row_pitch = 2 * w;
    r.dst.off = 3 + w;
    r.dst.row_pitch = 2 * w;
    WT_OK(weft__drv_copy_d2d_rect(f->q, m, m, &r));
    wt_rect_apply(model, model, &r);
    WT_MEM(f->q, m, model, "d2d between interleaved blocks of one buffer");
    WT_OK(weft__drv_mem_free(m));
    free(model);
}

static void wt_rect_all(wt_fixture *f, int pinned, unsigned rows)
{
    weft__drv_rect_rows = rows;
    for (size_t i = 0; i < WEFT__COUNTOF(wt_rect_cases); i++)
        wt_rect_one(f, &wt_rect_cases[i], pinned);
    wt_rect_interleaved(f);
    weft__drv_rect_rows = 0;
}

static void test_rect_copies(void **state)
{
    wt_rect_all(*state, 1, 0);
}

static void test_rect_pageable(void **state)
{
    wt_rect_all(*state, 0, 0);
}

static void test_rect_by_rows(void **state)
{
    wt_rect_all(*state, 1, 1);
}

/* Bad blocks: a clear error, and nothing written. */
static void test_rect_bad_input(void **state)
{
    wt_fixture *f = *state;
    const size_t n = 4096;
    unsigned char *model = wt_alloc_host(n), *host = wt_alloc_host(n);
    weft__mem *m = wt_rect_mem(f->ctx, f->q, n, model, 108), *m2 = NULL;
    weft__rect r, ok;

    memset(&ok, 0, sizeof ok);
    ok.width = 16;
    ok.height = 8;
    ok.depth = 2;
    ok.dst.row_pitch = 32;
    ok.src.row_pitch = 16;
    wt_pattern(host, n, 109);

    WT_RC(WEFT_EINVAL, weft__drv_copy_h2d_rect(f->q, m, host, NULL));
    WT_RC(WEFT_EINVAL, weft__drv_copy_h2d_rect(f->q, m, NULL, &ok));
    WT_RC(WEFT_EINVAL, weft__drv_copy_d2h_rect(f->q, NULL, m, &ok));
    WT_RC(WEFT_EINVAL, weft__drv_copy_h2d_rect(NULL, m, host, &ok));
    WT_RC(WEFT_EINVAL, weft__drv_copy_d2d_rect(f->q, NULL, m, &ok));
    /* a row pitch shorter than the row */
    r = ok;
    r.dst.row_pitch = 15;
    WT_RC(WEFT_EINVAL, weft__drv_copy_h2d_rect(f->q, m, host, &r));
    assert_non_null(strstr(weft_last_error(), "row pitch"));
    r = ok;
    r.src.row_pitch = 8;
    WT_RC(WEFT_EINVAL, weft__drv_copy_d2h_rect(f->q, host, m, &r));
    /* a slice pitch shorter than its rows */
    r = ok;
    r.dst.slice_pitch = 32 * 8 - 1;
    WT_RC(WEFT_EINVAL, weft__drv_copy_h2d_rect(f->q, m, host, &r));
    assert_non_null(strstr(weft_last_error(), "slice pitch"));
    /* past the end of the memory, by one byte */
    r = ok;
    r.dst.off = n - (32 * 8 + 32 * 7 + 16) + 1;
    WT_RC(WEFT_ERANGE, weft__drv_copy_h2d_rect(f->q, m, host, &r));
    assert_non_null(strstr(weft_last_error(), "outside"));
    r.dst.off--;
    WT_OK(weft__drv_copy_h2d_rect(f->q, m, host, &r));
    wt_rect_apply(model, host, &r);
    r = ok;
    r.src.off = n;
    WT_RC(WEFT_ERANGE, weft__drv_copy_d2h_rect(f->q, host, m, &r));
    /* sizes that overflow */
    r = ok;
    r.dst.slice_pitch = SIZE_MAX / 2 + 1;
    WT_RC(WEFT_ERANGE, weft__drv_copy_h2d_rect(f->q, m, host, &r));
    r = ok;
    r.depth = SIZE_MAX;
    WT_RC(WEFT_ERANGE, weft__drv_copy_h2d_rect(f->q, m, host, &r));
    /* overlapping blocks of one memory */
    r = ok;
    r.dst.off = 8;
    r.src.row_pitch = 32;
    WT_RC(WEFT_EINVAL, weft__drv_copy_d2d_rect(f->q, m, m, &r));
    assert_non_null(strstr(weft_last_error(), "overlap"));
    /* host memory is not device memory */
    if (wt_dev->props.pinned_host) {
        WT_OK(weft__drv_host_alloc(f->ctx, n, &m2));
        WT_RC(WEFT_EINVAL, weft__drv_copy_d2d_rect(f->q, m2, m, &ok));
        WT_OK(weft__drv_mem_free(m2));
    }
    /* both on one device is not a peer copy */
    WT_OK(weft__drv_mem_alloc(f->ctx, n, &m2));
    WT_RC(WEFT_EINVAL, weft__drv_copy_peer_rect(f->q, m2, m, &ok));
    WT_OK(weft__drv_mem_free(m2));
    /* an extent of 0 moves nothing */
    r = ok;
    r.height = 0;
    r.dst.row_pitch = 3; /* not looked at */
    WT_OK(weft__drv_copy_h2d_rect(f->q, m, host, &r));
    r = ok;
    r.width = 0;
    assert_int_equal(weft__drv_check_copy_d2h_rect(f->q, host, m, &r, NULL), 1);
    WT_MEM(f->q, m, model, "memory after refused blocks");
    WT_OK(weft__drv_mem_free(m));
    free(model);
    free(host);
}

/*
 * The driver's own block copy is the one a 2-D block takes, and 3-D (a
 * failure injected at its call reaches the caller, and nothing is
 * written): clEnqueue*BufferRect on OpenCL, cuMemcpy2DAsync and
 * cuMemcpy3DAsync (pinned host memory) on CUDA. The host and the sim
 * have no vendor call (test_rect_sim checks the sim's record).
 */
static void test_rect_native(void **state)
{
    wt_fixture *f = *state;
    const char *name = wt_dev->drv->name;
    int ocl = strcmp(name, "opencl") == 0, cuda = strcmp(name, "cuda") == 0;
    const size_t n = 8192;
    unsigned char *model = wt_alloc_host(n), *host;
    weft__mem *m, *m2, *pin = NULL;
    weft__rect r;
    int rc;

    if (!ocl && !cuda) {
        free(model);
        skip();
    }
    host = wt_rect_host(f, n, 1, &pin);
    wt_pattern(host, n, 112);
    m = wt_rect_mem(f->ctx, f->q, n, model, 113);
    m2 = wt_rect_mem(f->ctx, f->q, n, model, 113);
    memset(&r, 0, sizeof r);
    r.width = 24;
    r.height = 10;
    r.depth = 1;
    r.dst.off = 8;
    r.dst.row_pitch = 64;
    r.src.row_pitch = 48;
    for (int dim = 2; dim <= 3; dim++) {
        const char *sites[3] = {ocl        ? "opencl.clEnqueueWriteBufferRect"
                                : dim == 2 ? "cuda.cuMemcpy2DAsync"
                                           : "cuda.cuMemcpy3DAsync",
                                ocl ? "opencl.clEnqueueReadBufferRect" : NULL,
                                ocl ? "opencl.clEnqueueCopyBufferRect" : NULL};

        if (dim == 3) {
            r.depth = 3;
            r.dst.slice_pitch = 64 * 12;
            r.src.slice_pitch = 48 * 11;
        }
        if (cuda && !pin) {
            printf("    no pinned host memory: CUDA's own copies not "
                   "checked\n");
            break;
        }
        for (int op = 0; op < 3; op++) {
            const char *site = sites[op] ? sites[op] : sites[0];

            weft__fault_arm(1, site);
            rc = op == 0   ? weft__drv_copy_h2d_rect(f->q, m, host, &r)
                 : op == 1 ? weft__drv_copy_d2h_rect(f->q, host, m, &r)
                           : weft__drv_copy_d2d_rect(f->q, m2, m, &r);
            weft__fault_disarm();
            if (rc == 0)
                fail_msg("%dd op %d: no failure at %s: the block did not take "
                         "the driver's own copy",
                         dim, op, site);
            assert_true(rc < 0);
        }
    }
    if (ocl && wt_peer) { /* staged through the host, by blocks too */
        weft__context *pc = wt_peer_context(f);
        weft__mem *pm = NULL;

        WT_OK(weft__drv_mem_alloc(pc, n, &pm));
        weft__fault_arm(1, "opencl.clEnqueueReadBufferRect");
        rc = weft__drv_copy_peer_rect(f->q, pm, m, &r);
        weft__fault_disarm();
        assert_true(rc < 0);
        WT_OK(weft__drv_mem_free(pm));
    }
    WT_OK(weft__drv_queue_sync(f->q));
    WT_MEM(f->q, m, model, "memory after failed block copies");
    WT_MEM(f->q, m2, model, "memory after a failed d2d block copy");
    WT_OK(weft__drv_mem_free(m));
    WT_OK(weft__drv_mem_free(m2));
    wt_rect_host_free(host, pin);
    free(model);
}

/*
 * A submission without block operations (the scheduler's tape, say) gets
 * a block as one 1-D copy per row, through its own 1-D operations.
 */
static int wt_sub_rows;

static int wt_sub_h2d(void *self, weft__queue *q, weft__mem *dst,
                      size_t dst_off, const void *src, size_t size)
{
    (void)self;
    wt_sub_rows++;
    return weft__drv_copy_h2d(q, dst, dst_off, src, size);
}

static int wt_sub_d2h(void *self, weft__queue *q, void *dst, weft__mem *src,
                      size_t src_off, size_t size)
{
    (void)self;
    wt_sub_rows++;
    return weft__drv_copy_d2h(q, dst, src, src_off, size);
}

static int wt_sub_d2d(void *self, weft__queue *q, weft__mem *dst,
                      size_t dst_off, weft__mem *src, size_t src_off,
                      size_t size)
{
    (void)self;
    wt_sub_rows++;
    return weft__drv_copy_d2d(q, dst, dst_off, src, src_off, size);
}

static void test_rect_submit(void **state)
{
    wt_fixture *f = *state;
    const wt_rect_case *c = &wt_rect_cases[6]; /* 3-D, 4 rows x 3 slices */
    weft__submit sub;
    weft__rect r = wt_rect_of(c);
    size_t nd = wt_rect_size(&r, &r.dst), ns = wt_rect_size(&r, &r.src);
    unsigned char *dmodel = wt_alloc_host(nd), *smodel = wt_alloc_host(ns);
    unsigned char *host = wt_alloc_host(ns > nd ? ns : nd);
    weft__mem *a, *b;

    memset(&sub, 0, sizeof sub);
    sub.copy_h2d = wt_sub_h2d;
    sub.copy_d2h = wt_sub_d2h;
    sub.copy_d2d = wt_sub_d2d;
    a = wt_rect_mem(f->ctx, f->q, ns, smodel, 114);
    b = wt_rect_mem(f->ctx, f->q, nd, dmodel, 115);
    wt_rect_apply(dmodel, smodel, &r);
    wt_sub_rows = 0;
    WT_OK(weft__submit_copy_d2d_rect(&sub, f->q, b, a, &r));
    assert_int_equal(wt_sub_rows, c->height * c->depth);
    WT_MEM(f->q, b, dmodel, "d2d block through a submission");
    wt_pattern(host, ns, 116);
    wt_rect_apply(dmodel, host, &r);
    WT_OK(weft__submit_copy_h2d_rect(&sub, f->q, b, host, &r));
    WT_MEM(f->q, b, dmodel, "h2d block through a submission");
    wt_pattern(host, nd, 117);
    memcpy(dmodel, host, nd);
    wt_rect_apply(dmodel, smodel, &r); /* a still holds smodel */
    WT_OK(weft__submit_copy_d2h_rect(&sub, f->q, host, a, &r));
    WT_OK(weft__drv_queue_sync(f->q));
    WT_BYTES(host, dmodel, nd, "d2h block through a submission");
    assert_int_equal(wt_sub_rows, 3 * c->height * c->depth);
    /* bad blocks are refused before any row */
    r.dst.row_pitch = 1;
    WT_RC(WEFT_EINVAL, weft__submit_copy_h2d_rect(&sub, f->q, b, host, &r));
    assert_int_equal(wt_sub_rows, 3 * c->height * c->depth);
    WT_OK(weft__drv_mem_free(a));
    WT_OK(weft__drv_mem_free(b));
    free(dmodel);
    free(smodel);
    free(host);
}

/* The checks fold what is contiguous and fill in packed pitches. */
static void test_rect_fold(void **state)
{
    wt_fixture *f = *state;
    weft__mem *m = NULL;
    weft__rect r, out;
    unsigned char host[1];

    WT_OK(weft__drv_mem_alloc(f->ctx, 4096, &m));
    memset(&r, 0, sizeof r);
    r.width = 10;
    r.height = 6;
    r.depth = 3;
    WT_OK(weft__drv_check_copy_h2d_rect(f->q, m, host, &r, &out));
    assert_int_equal(out.width, 180);
    assert_int_equal(out.height * out.depth, 1);
    r.dst.row_pitch = 12;
    WT_OK(weft__drv_check_copy_h2d_rect(f->q, m, host, &r, &out));
    assert_int_equal(out.width, 10);
    assert_int_equal(out.height, 6);
    assert_int_equal(out.depth, 3);
    assert_int_equal(out.dst.slice_pitch, 72);
    assert_int_equal(out.src.row_pitch, 10);
    assert_int_equal(out.src.slice_pitch, 60);
    /* single-row slices are rows */
    r.height = 1;
    r.dst.slice_pitch = 40;
    r.src.slice_pitch = 10;
    WT_OK(weft__drv_check_copy_h2d_rect(f->q, m, host, &r, &out));
    assert_int_equal(out.height, 3);
    assert_int_equal(out.depth, 1);
    assert_int_equal(out.dst.row_pitch, 40);
    WT_OK(weft__drv_mem_free(m));
}

/*
 * The sim: a block is one operation of its bytes in the record (one per
 * row when forced), and with check=1 the hazard check sees the block's
 * rows: blocks whose rows interleave are independent, overlapping ones
 * are not.
 */
static void test_rect_sim(void **state)
{
    wt_fixture *f = *state;
    const char *cfg = getenv("WEFT_SIM");
    const size_t w = 64, h = 32, n = 2 * w * h;
    unsigned char *host = wt_alloc_host(n), *model = wt_alloc_host(n);
    weft__mem *m;
    weft__queue *q2 = NULL;
    const weft__sim_op *rec;
    size_t count;
    uint64_t hz;
    weft__rect a, b;

    if (strcmp(wt_dev->drv->name, "sim") != 0) {
        free(host);
        free(model);
        skip();
    }
    m = wt_rect_mem(f->ctx, f->q, n, model, 110);
    memset(&a, 0, sizeof a);
    a.width = w;
    a.height = h;
    a.depth = 1;
    a.dst.row_pitch = 2 * w;
    a.src.row_pitch = 2 * w;
    b = a;
    b.dst.off = b.src.off = w;
    wt_pattern(host, n, 111);

    weft__sim_record_clear(wt_dev);
    WT_OK(weft__drv_copy_h2d_rect(f->q, m, host, &a));
    WT_OK(weft__drv_queue_sync(f->q));
    rec = weft__sim_record(wt_dev, &count);
    assert_int_equal(count, 1);
    assert_int_equal(rec[0].kind, WEFT__SIM_H2D);
    assert_int_equal(rec[0].bytes, w * h);
    weft__sim_record_clear(wt_dev);
    weft__drv_rect_rows = 1;
    WT_OK(weft__drv_copy_h2d_rect(f->q, m, host, &a));
    weft__drv_rect_rows = 0;
    WT_OK(weft__drv_queue_sync(f->q));
    rec = weft__sim_record(wt_dev, &count);
    assert_int_equal(count, h);
    assert_int_equal(rec[0].bytes, w);

    if (cfg && strstr(cfg, "check=1")) {
        WT_OK(weft__drv_queue_create(f->ctx, NULL, &q2));
        hz = weft__sim_hazards(wt_dev);
        /* a write of block a beside a read of block b: rows apart */
        WT_OK(weft__drv_copy_h2d_rect(f->q, m, host, &a));
        WT_OK(weft__drv_copy_d2h_rect(q2, model, m, &b));
        WT_OK(weft__drv_queue_sync(f->q));
        WT_OK(weft__drv_queue_sync(q2));
        assert_int_equal(weft__sim_hazards(wt_dev), hz);
#if !defined(__SANITIZE_THREAD__)
        /*
         * The same block, unordered: a hazard. (Not in the thread-sanitizer
         * build: with real data the sim's two queues do copy the block at
         * once, the very race the check is to find, and TSan reports it.)
         */
        WT_OK(weft__drv_copy_h2d_rect(f->q, m, host, &a));
        WT_OK(weft__drv_copy_d2h_rect(q2, model, m, &a));
        WT_OK(weft__drv_queue_sync(f->q));
        WT_OK(weft__drv_queue_sync(q2));
        assert_true(weft__sim_hazards(wt_dev) > hz);
#endif
        WT_OK(weft__drv_queue_destroy(q2));
    } else {
        printf("    hazard checks need WEFT_SIM=...,check=1\n");
    }
    WT_OK(weft__drv_mem_free(m));
    free(host);
    free(model);
}

/* ---- many small operations on three queues ----------------------------- */

enum { WT_STRESS_QUEUES = 3, WT_STRESS_EVENTS = 6, WT_STRESS_N = 257 };

static void test_stress_three_queues(void **state)
{
    wt_fixture *f = *state;
    const unsigned rounds = 600;
    const uint64_t n = WT_STRESS_N;
    weft__module *mod = wt_module(f->ctx);
    weft__kernel *adv = wt_kernel(mod, "advance");
    weft__queue *q[WT_STRESS_QUEUES] = {NULL};
    weft__event *ev[WT_STRESS_EVENTS] = {NULL};
    weft__mem *shared = NULL, *own[WT_STRESS_QUEUES] = {NULL};
    uint32_t shared_model[WT_STRESS_N],
        own_model[WT_STRESS_QUEUES][WT_STRESS_N];
    uint32_t *ks = wt_alloc_host(rounds * sizeof *ks);
    uint32_t *writes = wt_alloc_host(rounds * 5 * sizeof *writes);
    const uint8_t zero = 0;
    weft__event *prev = NULL;

    memset(shared_model, 0, sizeof shared_model);
    memset(own_model, 0, sizeof own_model);
    for (unsigned i = 0; i < WT_STRESS_QUEUES; i++)
        WT_OK(weft__drv_queue_create(f->ctx, NULL, &q[i]));
    for (unsigned i = 0; i < WT_STRESS_EVENTS; i++)
        WT_OK(weft__drv_event_create(f->ctx, 0, &ev[i]));
    WT_OK(weft__drv_mem_alloc(f->ctx, n * 4, &shared));
    WT_OK(weft__drv_fill(f->q, shared, 0, &zero, 1, n * 4));
    for (unsigned i = 0; i < WT_STRESS_QUEUES; i++) {
        WT_OK(weft__drv_mem_alloc(f->ctx, n * 4, &own[i]));
        WT_OK(weft__drv_fill(f->q, own[i], 0, &zero, 1, n * 4));
    }
    WT_OK(weft__drv_queue_sync(f->q));

    /*
     * Each round runs on the next queue: it advances that queue's own
     * buffer (ordered by the queue alone), then waits for the previous
     * round's event and advances the shared buffer, sometimes overwrites a
     * few of its elements from the host, and records the round's event.
     * advance does not commute, so any reordering shows in the result.
     */
    for (unsigned r = 0; r < rounds; r++) {
        unsigned qi = r % WT_STRESS_QUEUES;

        ks[r] = r * 2654435761u;
        wt_advance(q[qi], adv, own[qi], &ks[r], &n);
        for (unsigned i = 0; i < n; i++)
            own_model[qi][i] = wt_advance_value(own_model[qi][i], ks[r]);
        if (prev)
            WT_OK(weft__drv_queue_wait_event(q[qi], prev));
        wt_advance(q[qi], adv, shared, &ks[r], &n);
        for (unsigned i = 0; i < n; i++)
            shared_model[i] = wt_advance_value(shared_model[i], ks[r]);
        if (r % 10 == 0) {
            size_t at = (r * 7) % n, count = WEFT__MIN(5, n - at);

            for (size_t i = 0; i < count; i++)
                writes[r * 5 + i] = r * 1000 + (uint32_t)i;
            WT_OK(weft__drv_copy_h2d(q[qi], shared, at * 4, &writes[r * 5],
                                     count * 4));
            memcpy(&shared_model[at], &writes[r * 5], count * 4);
        }
        prev = ev[r % WT_STRESS_EVENTS];
        WT_OK(weft__drv_event_record(prev, q[qi]));
    }
    for (unsigned i = 0; i < WT_STRESS_QUEUES; i++)
        WT_OK(weft__drv_queue_sync(q[i]));
    WT_MEM(f->q, shared, shared_model, "shared buffer after 600 rounds");
    for (unsigned i = 0; i < WT_STRESS_QUEUES; i++)
        WT_MEM(f->q, own[i], own_model[i], "a queue's own buffer");

    WT_OK(weft__drv_mem_free(shared));
    for (unsigned i = 0; i < WT_STRESS_QUEUES; i++) {
        WT_OK(weft__drv_mem_free(own[i]));
        WT_OK(weft__drv_queue_destroy(q[i]));
    }
    for (unsigned i = 0; i < WT_STRESS_EVENTS; i++)
        WT_OK(weft__drv_event_destroy(ev[i]));
    WT_OK(weft__drv_module_destroy(mod));
    free(ks);
    free(writes);
}

/* ---- main -------------------------------------------------------------- */

#define WT_TEST(fn) cmocka_unit_test_setup_teardown(fn, wt_setup, wt_teardown)

static const struct CMUnitTest wt_tests[] = {
    WT_TEST(test_context_lifecycle),
    WT_TEST(test_context_busy),
    WT_TEST(test_alloc_sizes),
    WT_TEST(test_alloc_invalid),
    WT_TEST(test_copy_h2d_d2h),
    WT_TEST(test_copy_d2d),
    WT_TEST(test_copy_out_of_range),
    WT_TEST(test_fill_patterns),
    WT_TEST(test_pinned_host),
    WT_TEST(test_host_register),
    WT_TEST(test_module_kernels),
    WT_TEST(test_module_bad_sources),
    WT_TEST(test_launch_bad_args),
    WT_TEST(test_launch_1d),
    WT_TEST(test_launch_2d),
    WT_TEST(test_launch_axpy),
    WT_TEST(test_event_never_recorded),
    WT_TEST(test_event_record_sync),
    WT_TEST(test_event_rerecord),
    WT_TEST(test_event_cross_queue),
    WT_TEST(test_event_cross_device),
    WT_TEST(test_event_timing),
    WT_TEST(test_host_fn_order),
    WT_TEST(test_queue_destroyed),
    WT_TEST(test_copy_peer),
    WT_TEST(test_rect_copies),
    WT_TEST(test_rect_pageable),
    WT_TEST(test_rect_by_rows),
    WT_TEST(test_rect_bad_input),
    WT_TEST(test_rect_fold),
    WT_TEST(test_rect_native),
    WT_TEST(test_rect_submit),
    WT_TEST(test_rect_sim),
    WT_TEST(test_stress_three_queues),
};

int main(int argc, char **argv)
{
    int failed = 0;

    wt_devices_open(&wt_devs);
    for (unsigned i = 0; i < wt_devs.n; i++) {
        char group[384];

        wt_dev = wt_device(&wt_devs, i);
        wt_peer = wt_device_sibling(&wt_devs, wt_dev);
        snprintf(group, sizeof group, "%s:%u %s", wt_dev->drv->name,
                 wt_dev->driver_index, wt_dev->name);
        printf("conformance: device %u: %s (driver %s, max_alloc %llu, "
               "pinned %u, register %u, timing %u)%s%s\n",
               i, wt_dev->name, wt_dev->drv->name,
               (unsigned long long)wt_dev->props.max_alloc,
               wt_dev->props.pinned_host, wt_dev->props.host_register,
               wt_dev->props.timing_events, wt_peer ? ", peer " : "",
               wt_peer ? wt_peer->name : "");
        fflush(stdout);
        failed += wt_run_group_name(argc, argv, group, wt_tests, NULL, NULL);
    }
    wt_devices_close(&wt_devs);
    return failed ? 1 : 0;
}
