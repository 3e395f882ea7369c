/*
 * Failure injection over the driver interface: one scenario (runtime,
 * context, queues, memory of every kind, a module and a kernel, a launch,
 * events, copies, a host function, then everything freed) runs again and
 * again with the n-th failure point armed, n = 1, 2, 3, ... until a run
 * meets no failure point at all. Every run must:
 *  - fail only at or after the injected failure (a step that fails before
 *    it is a genuine bug), with a weft error code and a detail;
 *  - or recover from it and still compute the right bytes;
 *  - and clean up: every destroy succeeds (the context's too, so nothing
 *    is left alive in it), and LeakSanitizer (WEFT_SANITIZE builds) finds
 *    no leak at exit.
 * WEFT_DEVICES picks the driver; the scenario runs on its first device.
 * WT_FAULT_VERBOSE=1 prints every run.
 */
#include "wt_devices.h"
#include "wt_kernels.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include "wt_test.h"

/* No scenario has this many failure points; a loop that gets here is stuck. */
#define WT_MAX_RUNS 100000

enum { WT_N = 1024 };

/* ---- which site fired: from weft's own debug log ----------------------- */

static pthread_mutex_t wt_site_mu = PTHREAD_MUTEX_INITIALIZER;
static char wt_site[128];

static void wt_log_sink(weft_log_level level, const char *subsystem,
                        const char *line, void *user)
{
    static const char prefix[] = "injected failure at ";

    (void)user;
    if (strcmp(subsystem, "fault") == 0 &&
        strncmp(line, prefix, sizeof prefix - 1) == 0) {
        pthread_mutex_lock(&wt_site_mu);
        weft__strlcpy(wt_site, line + sizeof prefix - 1, sizeof wt_site);
        pthread_mutex_unlock(&wt_site_mu);
    } else if (level >= WEFT_LOG_WARN) {
        fprintf(stderr, "weft[%d] %s: %s\n", (int)level, subsystem, line);
    }
}

static void wt_site_get(char *buf, size_t size)
{
    pthread_mutex_lock(&wt_site_mu);
    weft__strlcpy(buf, wt_site[0] ? wt_site : "?", size);
    wt_site[0] = '\0';
    pthread_mutex_unlock(&wt_site_mu);
}

/* ---- the scenario ------------------------------------------------------ */

typedef struct wt_outcome {
    int rc;                /* 0, or the code of the first failing step */
    const char *step;      /* the step that failed */
    int fired_before_fail; /* the injected failure had fired by then */
    char detail[256];      /* weft_last_error() right after the failure */
    const char *cleanup;   /* the first clean-up step that failed, or NULL */
    int cleanup_rc;
    int verified; /* ran to the end and the bytes were right */
    unsigned ndevices;
} wt_outcome;

static void wt_host_fn(void *user)
{
    *(int *)user += 1;
}

/* The first failure of the run: remember it and where. */
static int wt_failed(wt_outcome *o, const char *step, int rc)
{
    o->rc = rc;
    o->step = step;
    o->fired_before_fail = weft__fault_fired();
    weft__strlcpy(o->detail, weft_last_error(), sizeof o->detail);
    return rc;
}

#define WT_STEP(name, expr)                                                    \
    do {                                                                       \
        int wt_rc_ = (expr);                                                   \
        if (wt_rc_ < 0) {                                                      \
            wt_failed(o, (name), wt_rc_);                                      \
            goto cleanup;                                                      \
        }                                                                      \
    } while (0)

#define WT_CLEAN(name, expr)                                                   \
    do {                                                                       \
        int wt_rc_ = (expr);                                                   \
        if (wt_rc_ < 0 && !o->cleanup) {                                       \
            o->cleanup = (name);                                               \
            o->cleanup_rc = wt_rc_;                                            \
        }                                                                      \
    } while (0)

static void wt_scenario(wt_outcome *o)
{
    weft_runtime *rt = NULL;
    weft__device *dev;
    weft__context *ctx = NULL;
    weft__queue *q = NULL, *q2 = NULL;
    weft__mem *d = NULL, *d2 = NULL, *pin = NULL, *reg = NULL;
    weft__module *mod = NULL;
    weft__kernel *adv = NULL;
    weft__event *ev = NULL;
    weft__module_source src;
    uint32_t *plain_src = NULL, *plain_dst = NULL, *host_src, *host_dst;
    const uint32_t zero = 0, k = 5;
    const uint64_t n = WT_N;
    int host_fn_ran = 0;
    weft__grid grid = {{WT_N / 64, 1, 1}, {64, 1, 1}, 0};
    weft__karg args[3];

    memset(args, 0, sizeof args);
    memset(o, 0, sizeof *o);
    o->step = "none";
    WT_STEP("runtime_create", weft_runtime_create(&rt, NULL));
    o->ndevices = weft_runtime_device_count(rt);
    if (o->ndevices == 0) {
        /* the runtime keeps why each driver has no device: say it */
        char why[600] = "";

        for (unsigned di = 0; di < weft_runtime_driver_count(rt); di++) {
            const char *name, *reason;
            unsigned nd;
            int st;

            if (weft_runtime_driver(rt, di, &name, &nd, &st, &reason) == 0 &&
                strncmp(reason, "not selected", 12) != 0) {
                size_t len = strlen(why);
                snprintf(why + len, sizeof why - len, "%s%s: %s",
                         len ? "; " : "", name, reason);
            }
        }
        weft__error(WEFT_ENODEV, "no device: %s", why);
        wt_failed(o, "runtime_create found no device", WEFT_ENODEV);
        goto cleanup;
    }
    dev = weft__runtime_device(rt, 0);
    WT_STEP("context_create", weft__drv_context_create(dev, &ctx));
    WT_STEP("queue_create", weft__drv_queue_create(ctx, NULL, &q));
    WT_STEP("queue_create 2", weft__drv_queue_create(ctx, NULL, &q2));
    WT_STEP("mem_alloc", weft__drv_mem_alloc(ctx, n * 4, &d));
    WT_STEP("mem_alloc 2", weft__drv_mem_alloc(ctx, n * 4, &d2));

    /* Host sides: pinned and registered memory where the device has them. */
    if (dev->props.pinned_host) {
        WT_STEP("host_alloc", weft__drv_host_alloc(ctx, n * 4, &pin));
        host_src = pin->host;
    } else {
        host_src = plain_src = malloc(n * 4);
        assert_non_null(plain_src);
    }
    host_dst = plain_dst = aligned_alloc(4096, n * 4);
    assert_non_null(plain_dst);
    if (dev->props.host_register)
        WT_STEP("host_register",
                weft__drv_host_register(ctx, plain_dst, n * 4, &reg));
    for (uint32_t i = 0; i < n; i++) {
        host_src[i] = i * 7u + 1u;
        host_dst[i] = 0;
    }

    assert_int_equal(wt_kernels_source(dev->drv->name, &src), 0);
    WT_STEP("module_create", weft__drv_module_create(ctx, &src, &mod));
    WT_STEP("kernel_get", weft__drv_kernel_get(mod, "advance", &adv));
    WT_STEP("event_create", weft__drv_event_create(ctx, 0, &ev));

    memset(args, 0, sizeof args);
    args[0].type = WEFT_PARAM_BUFFER;
    args[0].u.buf.mem = d;
    args[1].type = WEFT_PARAM_U32;
    args[1].size = 4;
    args[1].u.value = &k;
    args[2].type = WEFT_PARAM_U64;
    args[2].size = 8;
    args[2].u.value = &n;

    WT_STEP("fill", weft__drv_fill(q, d, 0, &zero, 4, n * 4));
    WT_STEP("copy_h2d", weft__drv_copy_h2d(q, d, 0, host_src, n * 4));
    WT_STEP("launch", weft__drv_launch(q, adv, &grid, args, 3));
    WT_STEP("event_record", weft__drv_event_record(ev, q));
    WT_STEP("queue_wait_event", weft__drv_queue_wait_event(q2, ev));
    WT_STEP("copy_d2d", weft__drv_copy_d2d(q2, d2, 0, d, 0, n * 4));
    WT_STEP("copy_d2h", weft__drv_copy_d2h(q2, host_dst, d2, 0, n * 4));
    WT_STEP("host_fn", weft__drv_host_fn(q2, wt_host_fn, &host_fn_ran));
    WT_STEP("event_sync", weft__drv_event_sync(ev));
    WT_STEP("queue_sync", weft__drv_queue_sync(q2));
    WT_STEP("event_query", weft__drv_event_query(ev));

    o->verified = host_fn_ran == 1;
    for (uint32_t i = 0; i < n && o->verified; i++)
        if (host_dst[i] != wt_advance_value(i * 7u + 1u, k))
            o->verified = 0;

cleanup:
    /* Queues first: destroying one waits for its work. */
    if (q)
        WT_CLEAN("queue_destroy", weft__drv_queue_destroy(q));
    if (q2)
        WT_CLEAN("queue_destroy 2", weft__drv_queue_destroy(q2));
    if (ev)
        WT_CLEAN("event_destroy", weft__drv_event_destroy(ev));
    if (mod)
        WT_CLEAN("module_destroy", weft__drv_module_destroy(mod));
    if (d)
        WT_CLEAN("mem_free", weft__drv_mem_free(d));
    if (d2)
        WT_CLEAN("mem_free 2", weft__drv_mem_free(d2));
    if (pin)
        WT_CLEAN("mem_free pinned", weft__drv_mem_free(pin));
    if (reg)
        WT_CLEAN("mem_free registered", weft__drv_mem_free(reg));
    if (ctx)
        WT_CLEAN("context_destroy", weft__drv_context_destroy(ctx));
    if (rt)
        WT_CLEAN("runtime_destroy", weft_runtime_destroy(rt));
    free(plain_src);
    free(plain_dst);
}

/* ---- the test ---------------------------------------------------------- */

static int wt_verbose;

static void test_every_failure_point(void **state)
{
    const char *driver = getenv("WEFT_DEVICES");
    wt_outcome o;
    char site[128];
    long points = 0, recovered = 0, swallowed = 0, failed_cleanly = 0;
    long checks;

    (void)state;
    /* A run with nothing armed: the scenario works and gives the count. */
    weft__fault_arm(WT_MAX_RUNS * 100L, NULL);
    wt_scenario(&o);
    checks = weft__fault_seen();
    weft__fault_disarm();
    if (o.rc < 0)
        fail_msg("the scenario fails without injection at %s: %s (%s)", o.step,
                 weft_err_name(o.rc), o.detail);
    assert_null(o.cleanup);
    assert_true(o.verified);
    printf("fault: %s: %ld failure checks in one run\n", driver, checks);

    for (long n = 1; n < WT_MAX_RUNS; n++) {
        int fired;

        weft__fault_arm(n, NULL);
        wt_scenario(&o);
        fired = weft__fault_fired();
        weft__fault_disarm();
        wt_site_get(site, sizeof site);
        if (!fired) {
            /* Past the last failure point: this run must be a clean one. */
            if (o.rc < 0)
                fail_msg("run %ld: nothing injected, yet %s failed: %s (%s)", n,
                         o.step, weft_err_name(o.rc), o.detail);
            assert_null(o.cleanup);
            assert_true(o.verified);
            break;
        }
        points++;
        if (wt_verbose)
            printf("  %4ld %-28s -> %-22s %s\n", n, site,
                   o.rc < 0 ? o.step : "(recovered)",
                   o.rc < 0 ? weft_err_name(o.rc) : "");
        if (o.cleanup)
            fail_msg("run %ld (failure at %s, step %s: %s): clean-up step %s "
                     "failed: %s",
                     n, site, o.step, weft_err_name(o.rc), o.cleanup,
                     weft_err_name(o.cleanup_rc));
        if (o.rc == 0) {
            /* The failure was absorbed: the results must still be right. */
            if (!o.verified)
                fail_msg("run %ld: failure at %s was absorbed but the "
                         "results are wrong",
                         n, site);
            recovered++;
            continue;
        }
        if (!o.fired_before_fail)
            fail_msg("run %ld: step %s failed (%s: %s) before the injected "
                     "failure fired",
                     n, o.step, weft_err_name(o.rc), o.detail);
        if (o.rc < WEFT_EINTERNAL)
            fail_msg("run %ld: failure at %s: step %s returned %d, not a "
                     "weft error code",
                     n, site, o.step, o.rc);
        if (!o.detail[0])
            fail_msg("run %ld: failure at %s: step %s returned %s with no "
                     "detail",
                     n, site, o.step, weft_err_name(o.rc));
        if (o.rc == WEFT_ENODEV && o.ndevices == 0) {
            /* The runtime dropped the driver instead of failing. */
            swallowed++;
            printf("  note: run %ld: failure at %s left the runtime with no "
                   "device and no error\n",
                   n, site);
        } else {
            failed_cleanly++;
        }
    }
    printf("fault: %s: %ld failure points: %ld failed cleanly, %ld "
           "recovered, %ld made the runtime drop the driver\n",
           driver, points, failed_cleanly, recovered, swallowed);
    assert_true(points > 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_failure_point),
    };
    wt_devices probe;
    const char *v = getenv("WT_FAULT_VERBOSE");

    wt_verbose = v && v[0] == '1';
    /* Skips (exit 77) when the driver has no device here. */
    wt_devices_open(&probe);
    printf("fault: device 0: %s (driver %s)\n", wt_device(&probe, 0)->name,
           wt_device(&probe, 0)->drv->name);
    wt_devices_close(&probe);
    weft_log_set_sink(wt_log_sink, NULL);
    weft_log_set_level(WEFT_LOG_DEBUG);
    return wt_run_group_name(argc, argv, "fault", tests, NULL, NULL);
}
