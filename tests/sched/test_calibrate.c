/*
 * Link calibration: measured figures on host devices, the configured ones
 * on sim devices, and the on-disk cache (round trip, corrupt files).
 * The test opens its own runtimes and points WEFT_CACHE_DIR at a fresh
 * directory of its own.
 */
#include "sched/calibrate.h"

#include <dirent.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "wt_test.h"

/* The simulated machine: islands of 2 peers, so 0-2 goes through the host. */
#define SIM_CONFIG                                                             \
    "devices=4,peer_group=2,h2d_bw=20e9,d2h_bw=30e9,h2d_lat=1500,"             \
    "d2h_lat=2500,peer_bw=300e9,peer_lat=1000,d2d_bw=1e12,launch_lat=4000"

static char cache_dir[256];

static weft_runtime *open_rt(const char *devices)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt = NULL;

    o.devices = devices;
    o.sim_config = SIM_CONFIG;
    o.host_devices = 2;
    o.host_threads = 2;
    assert_int_equal(weft_runtime_create(&rt, &o), 0);
    assert_non_null(rt);
    return rt;
}

static void assert_sane(const weft__links *l)
{
    for (unsigned a = 0; a < l->n; a++) {
        assert_true(l->h2d[a].bw > 0 && isfinite(l->h2d[a].bw));
        assert_true(l->d2h[a].bw > 0 && isfinite(l->d2h[a].bw));
        assert_true(l->d2d[a].bw > 0 && isfinite(l->d2d[a].bw));
        assert_true(l->h2d[a].lat_ns >= 0 && l->d2h[a].lat_ns >= 0);
        for (unsigned b = 0; b < l->n; b++) {
            const weft__link *p = &l->peer[a * l->n + b];

            assert_true(p->bw > 0 && isfinite(p->bw) && p->lat_ns >= 0);
        }
    }
}

static void assert_same(const weft__links *x, const weft__links *y)
{
    assert_int_equal(x->n, y->n);
    /* %.17g round-trips a double exactly. */
    assert_memory_equal(x->h2d, y->h2d, x->n * sizeof *x->h2d);
    assert_memory_equal(x->d2h, y->d2h, x->n * sizeof *x->d2h);
    assert_memory_equal(x->d2d, y->d2d, x->n * sizeof *x->d2d);
    assert_memory_equal(x->peer, y->peer, x->n * x->n * sizeof *x->peer);
    assert_memory_equal(x->direct, y->direct, x->n * x->n);
}

static void assert_source(const weft__links *l, weft__link_source s)
{
    for (unsigned d = 0; d < l->n; d++)
        assert_int_equal(l->source[d], s);
}

static void test_host_measured_and_cached(void **state)
{
    weft_runtime *rt = open_rt("host");
    weft__links a, b;
    char path[4200];

    (void)state;
    assert_int_equal(weft__links_cache_path(rt, path, sizeof path), 0);
    assert_int_equal(strncmp(path, cache_dir, strlen(cache_dir)), 0);
    (void)unlink(path);
    /* No cache: measured, positive, and stored. */
    assert_int_equal(weft__links_load(rt, &a), 0);
    assert_int_equal(a.n, 2);
    assert_sane(&a);
    assert_source(&a, WEFT__LINK_MEASURED);
    assert_int_equal(access(path, R_OK), 0);
    /* Again: the same figures, from the cache. */
    assert_int_equal(weft__links_load(rt, &b), 0);
    assert_source(&b, WEFT__LINK_CACHED);
    assert_same(&a, &b);
    weft__links_free(&a);
    weft__links_free(&b);
    assert_int_equal(weft_runtime_destroy(rt), 0);
}

static uint64_t fnv64(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

static void write_file(const char *path, const char *text, size_t n)
{
    FILE *f = fopen(path, "w");

    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, n, f), n);
    assert_int_equal(fclose(f), 0);
}

static size_t read_file(const char *path, char *buf, size_t size)
{
    FILE *f = fopen(path, "r");
    size_t n;

    assert_non_null(f);
    n = fread(buf, 1, size - 1, f);
    assert_int_equal(fclose(f), 0);
    buf[n] = '\0';
    return n;
}

static void test_corrupt_cache_rebuilt(void **state)
{
    weft_runtime *rt = open_rt("host");
    char path[4200], good[8192], bad[8192];
    weft__links l;
    size_t n;
    char *p;

    (void)state;
    assert_int_equal(weft__links_cache_path(rt, path, sizeof path), 0);
    assert_int_equal(weft__links_load(rt, &l), 0);
    weft__links_free(&l);
    n = read_file(path, good, sizeof good);
    assert_true(n > 0 && n < sizeof good - 1);
    for (int c = 0; c < 6; c++) {
        memcpy(bad, good, n + 1);
        switch (c) {
        case 0: /* garbage */
            write_file(path, "\x01\x02garbage\nno lines here", 22);
            break;
        case 1: /* empty */
            write_file(path, "", 0);
            break;
        case 2: /* truncated */
            write_file(path, bad, n / 2);
            break;
        case 3: /* one digit changed: the check no longer matches */
            p = strstr(bad, "device 0 ");
            assert_non_null(p);
            p[9] = p[9] == '1' ? '2' : '1';
            write_file(path, bad, n);
            break;
        case 4: /* a negative bandwidth behind a valid check */
        case 5: /* a device line twice behind a valid check */
            *strstr(bad, "\ncheck ") = '\0';
            if (c == 4) {
                /* Replace device 0's line by one with bandwidth -1. */
                char *d = strstr(bad, "device 0 "), *e = strchr(d, '\n');

                memmove(d, e + 1, strlen(e + 1) + 1);
                strcat(bad, "\ndevice 0 -1 0 1 0 1 0");
            } else {
                char *d = strstr(good, "device 1 "), *e = strchr(d, '\n');

                strcat(bad, "\n");
                strncat(bad, d, (size_t)(e - d));
            }
            strcat(bad, "\n");
            snprintf(bad + strlen(bad), sizeof bad - strlen(bad),
                     "check %016llx\n",
                     (unsigned long long)fnv64(bad, strlen(bad)));
            write_file(path, bad, strlen(bad));
            break;
        }
        /* Rebuilt: measured again, sane, and the file is valid again. */
        assert_int_equal(weft__links_load(rt, &l), 0);
        assert_source(&l, WEFT__LINK_MEASURED);
        assert_sane(&l);
        weft__links_free(&l);
        assert_int_equal(weft__links_load(rt, &l), 0);
        assert_source(&l, WEFT__LINK_CACHED);
        weft__links_free(&l);
    }
    assert_int_equal(weft_runtime_destroy(rt), 0);
}

static void assert_near(double got, double want, double rel, double abs_)
{
    if (!(fabs(got - want) <= WEFT__MAX(rel * fabs(want), abs_)))
        fail_msg("got %.9g, want %.9g", got, want);
}

static void assert_link(const weft__link *k, double bw, double lat)
{
    /*
     * Virtual time rounds each part of a copy to the ns: the latency is
     * exact to 2 ns, the bandwidth to 1 ns over the large copy (16 MiB,
     * half of it within a device: over 8 us at 1e12), so within 1e-3.
     */
    assert_near(k->bw, bw, 1e-3, 0);
    assert_near(k->lat_ns, lat, 0, 2);
}

static void test_sim_configured(void **state)
{
    weft_runtime *rt = open_rt("sim");
    char path[4200];
    weft__links l;

    (void)state;
    assert_int_equal(weft__links_cache_path(rt, path, sizeof path), 0);
    (void)unlink(path);
    assert_int_equal(weft__links_load(rt, &l), 0);
    assert_int_equal(l.n, 4);
    assert_source(&l, WEFT__LINK_SIM);
    for (unsigned d = 0; d < 4; d++) {
        assert_link(&l.h2d[d], 20e9, 1500);
        assert_link(&l.d2h[d], 30e9, 2500);
        assert_link(&l.d2d[d], 1e12, 4000);
    }
    /* Peers within an island of 2: direct, the configured peer figures. */
    assert_int_equal(l.direct[0 * 4 + 1], 1);
    assert_int_equal(l.direct[3 * 4 + 2], 1);
    assert_link(&l.peer[0 * 4 + 1], 300e9, 1000);
    assert_link(&l.peer[3 * 4 + 2], 300e9, 1000);
    /*
     * Across islands, through the host: d2h then h2d, 2500 + 1500 ns and
     * 1 / (1 / 30e9 + 1 / 20e9) = 12e9 bytes/s.
     */
    assert_int_equal(l.direct[0 * 4 + 2], 0);
    assert_link(&l.peer[0 * 4 + 2], 12e9, 4000);
    weft__links_free(&l);
    /* Sim figures follow WEFT_SIM, not the machine: never cached. */
    assert_int_not_equal(access(path, F_OK), 0);
    assert_int_equal(weft_runtime_destroy(rt), 0);
}

static void progress(void *user, unsigned done, unsigned total,
                     const char *what)
{
    unsigned *calls = user;

    assert_true(done <= total);
    assert_non_null(what);
    (*calls)++;
}

static void test_mixed_and_progress(void **state)
{
    weft_runtime *rt = open_rt("host,sim");
    weft__calibrate_opts o = {0};
    unsigned calls = 0, nsim = 0;
    weft__links l, c;

    (void)state;
    /* A full measurement with progress: 2 host + 4 sim devices. */
    o.quick = 1;
    o.progress = progress;
    o.user = &calls;
    assert_int_equal(weft__links_measure(rt, &o, &l), 0);
    assert_int_equal(l.n, 6);
    assert_sane(&l);
    /* 3 steps per device, one per direct pair, and the final call. */
    assert_true(calls >= 6 * 3 + 1);
    assert_int_equal(weft__links_store(rt, &l), 0);
    /*
     * Loading takes the host devices from the cache and the sim devices
     * from their configuration; between a host and a sim device copies go
     * through the host.
     */
    assert_int_equal(weft__links_load(rt, &c), 0);
    for (unsigned d = 0; d < 6; d++) {
        weft__device *dev = weft__runtime_device(rt, d);

        if (dev->drv == &weft__driver_sim) {
            nsim++;
            assert_int_equal(c.source[d], WEFT__LINK_SIM);
            assert_link(&c.h2d[d], 20e9, 1500);
        } else {
            assert_int_equal(c.source[d], WEFT__LINK_CACHED);
            assert_memory_equal(&c.h2d[d], &l.h2d[d], sizeof c.h2d[d]);
        }
    }
    assert_int_equal(nsim, 4);
    weft__links_free(&l);
    weft__links_free(&c);
    assert_int_equal(weft_runtime_destroy(rt), 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_host_measured_and_cached),
        cmocka_unit_test(test_corrupt_cache_rebuilt),
        cmocka_unit_test(test_sim_configured),
        cmocka_unit_test(test_mixed_and_progress),
    };
    const char *tmp = getenv("TMPDIR");
    struct dirent *e;
    DIR *dir;
    int rc;

    snprintf(cache_dir, sizeof cache_dir, "%s/weft-links-XXXXXX",
             tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(cache_dir)) {
        perror("mkdtemp");
        return 1;
    }
    setenv("WEFT_CACHE_DIR", cache_dir, 1);
    unsetenv("WEFT_DEVICES");
    unsetenv("WEFT_SIM");
    unsetenv("WEFT_HOST_DEVICES");
    rc = wt_run_group(argc, argv, tests, NULL, NULL);
    /* The directory and what is in it are this process's own. */
    if ((dir = opendir(cache_dir))) {
        while ((e = readdir(dir)))
            if (e->d_name[0] != '.') {
                char path[512];

                snprintf(path, sizeof path, "%s/%s", cache_dir, e->d_name);
                (void)unlink(path);
            }
        closedir(dir);
    }
    if (rmdir(cache_dir) < 0)
        fprintf(stderr, "could not remove %s\n", cache_dir);
    return rc;
}
