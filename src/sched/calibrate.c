/*
 * Link calibration and its on-disk cache (calibrate.h).
 */
#include "calibrate.h"

#include "sched.h"

#include "../base/os.h"
#include "../drivers/kcache.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WEFT__CAL_FILE_MAX (1u << 20) /* larger is not a file we wrote */

/* Devices in virtual time: their links are as configured, not measured. */
static int weft__is_sim(const weft__device *dev)
{
    return dev->drv->virtual_time != 0;
}

/* ---- measuring --------------------------------------------------------- */

typedef enum weft__cal_kind {
    WEFT__CAL_H2D,
    WEFT__CAL_D2H,
    WEFT__CAL_D2D,
    WEFT__CAL_PEER,
} weft__cal_kind;

/* What one device needs to be measured; every pointer may be NULL. */
typedef struct weft__cal_dev {
    weft__context *ctx;
    weft__queue *q;
    weft__event *ev[2];
    weft__mem *host; /* pinned, large bytes */
    weft__mem *mem;  /* device, large bytes */
    unsigned timing; /* the events can time */
    unsigned repeats;
    size_t small, large;
} weft__cal_dev;

typedef struct weft__cal {
    weft_runtime *rt;
    const weft__calibrate_opts *opts;
    weft__cal_dev *dev; /* rt->ndevices */
    unsigned done, total;
} weft__cal;

static void weft__cal_step(weft__cal *c, const char *fmt, unsigned a,
                           unsigned b)
{
    char what[128];

    if (c->opts && c->opts->progress) {
        snprintf(what, sizeof what, fmt, a, b);
        c->opts->progress(c->opts->user, c->done, c->total, what);
    }
    c->done++;
}

static int weft__cal_enqueue(weft__cal *c, weft__cal_kind kind, unsigned d,
                             unsigned peer, size_t size)
{
    weft__cal_dev *x = &c->dev[d];

    switch (kind) {
    case WEFT__CAL_H2D:
        return weft__drv_copy_h2d(x->q, x->mem, 0, x->host->host, size);
    case WEFT__CAL_D2H:
        return weft__drv_copy_d2h(x->q, x->host->host, x->mem, 0, size);
    case WEFT__CAL_D2D:
        /* Two halves of one allocation: large is at least twice small. */
        return weft__drv_copy_d2d(x->q, x->mem, x->large / 2, x->mem, 0, size);
    case WEFT__CAL_PEER:
        return weft__drv_copy_peer(x->q, c->dev[peer].mem, 0, x->mem, 0, size);
    }
    return weft__error(WEFT_EINTERNAL, "calibration: kind %d", (int)kind);
}

/* Nanoseconds one copy takes, by the device's events or the host's clock. */
static int weft__cal_time(weft__cal *c, weft__cal_kind kind, unsigned d,
                          unsigned peer, size_t size, uint64_t *ns)
{
    weft__cal_dev *x = &c->dev[d];
    uint64_t t0;
    int rc;

    if (x->timing) {
        if ((rc = weft__drv_event_record(x->ev[0], x->q)) < 0 ||
            (rc = weft__cal_enqueue(c, kind, d, peer, size)) < 0 ||
            (rc = weft__drv_event_record(x->ev[1], x->q)) < 0 ||
            (rc = weft__drv_event_sync(x->ev[1])) < 0)
            return rc;
        return weft__drv_event_elapsed(x->ev[0], x->ev[1], ns);
    }
    if ((rc = weft__drv_queue_sync(x->q)) < 0)
        return rc;
    t0 = weft__now_ns();
    if ((rc = weft__cal_enqueue(c, kind, d, peer, size)) < 0 ||
        (rc = weft__drv_queue_sync(x->q)) < 0)
        return rc;
    *ns = weft__now_ns() - t0;
    return 0;
}

static int weft__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* The median of the repeats at one size, after one untimed copy. */
static int weft__cal_median(weft__cal *c, weft__cal_kind kind, unsigned d,
                            unsigned peer, size_t size, double *ns)
{
    weft__cal_dev *x = &c->dev[d];
    uint64_t t[64], warm;
    unsigned n = WEFT__MIN(x->repeats, WEFT__COUNTOF(t));
    int rc;

    if ((rc = weft__cal_time(c, kind, d, peer, size, &warm)) < 0)
        return rc;
    for (unsigned i = 0; i < n; i++)
        if ((rc = weft__cal_time(c, kind, d, peer, size, &t[i])) < 0)
            return rc;
    qsort(t, n, sizeof *t, weft__cmp_u64);
    *ns = n % 2 ? (double)t[n / 2] : ((double)t[n / 2 - 1] + t[n / 2]) / 2;
    return 0;
}

static int weft__cal_link(weft__cal *c, weft__cal_kind kind, unsigned d,
                          unsigned peer, weft__link *link)
{
    weft__cal_dev *x = &c->dev[d];
    double ts, tl, s = (double)x->small, l = (double)x->large;
    int rc;

    if (kind == WEFT__CAL_D2D)
        l /= 2;
    if ((rc = weft__cal_median(c, kind, d, peer, x->small, &ts)) < 0 ||
        (rc = weft__cal_median(c, kind, d, peer, (size_t)l, &tl)) < 0)
        return rc;
    /*
     * A clock too coarse to tell the sizes apart, or noise that inverts
     * them, leaves only the large copy to go by: all of it counts as
     * bandwidth and the small copy as latency.
     */
    if (tl > ts)
        link->bw = (l - s) * 1e9 / (tl - ts);
    else
        link->bw = l * 1e9 / (tl > 1 ? tl : 1);
    link->lat_ns = WEFT__MAX(0.0, ts - s * 1e9 / link->bw);
    return 0;
}

/* x's queue (once its copies are done) and events, not its memory. */
static void weft__cal_dev_release_queue(weft__cal_dev *x)
{
    if (x->q)
        (void)weft__drv_queue_sync(x->q);
    for (unsigned e = 0; e < 2; e++)
        if (x->ev[e])
            (void)weft__drv_event_destroy(x->ev[e]);
    if (x->q)
        (void)weft__drv_queue_destroy(x->q);
    x->q = NULL;
    x->ev[0] = x->ev[1] = NULL;
}

static void weft__cal_dev_release(weft__cal_dev *x)
{
    weft__cal_dev_release_queue(x);
    if (x->mem)
        (void)weft__drv_mem_free(x->mem);
    if (x->host)
        (void)weft__drv_mem_free(x->host);
    memset(x, 0, sizeof *x);
}

static int weft__cal_dev_setup(weft__cal *c, unsigned d)
{
    const weft__calibrate_opts *o = c->opts;
    weft__device *dev = c->rt->devices[d];
    weft__cal_dev *x = &c->dev[d];
    weft__queue_desc qd = {WEFT__QUEUE_H2D, 0, 1};
    unsigned quick = o && o->quick;
    int rc;

    x->small = o && o->small_bytes ? o->small_bytes : 4096;
    x->large = o && o->large_bytes ? o->large_bytes
               : quick             ? (size_t)16 << 20
                                   : (size_t)64 << 20;
    x->repeats = o && o->repeats ? o->repeats : quick ? 3 : 7;
    if (weft__is_sim(dev)) {
        /* Virtual time: every repeat would read the same figure. */
        x->repeats = 1;
        x->large = (size_t)16 << 20;
    }
    if (x->large > dev->props.max_alloc && dev->props.max_alloc)
        x->large = (size_t)dev->props.max_alloc;
    if (x->large < 2 * x->small)
        return weft__error(WEFT_EINVAL,
                           "calibration of %s: sizes %zu and %zu are too "
                           "close",
                           dev->name, x->small, x->large);
    x->timing = dev->props.timing_events != 0;
    if ((rc = weft__runtime_context(c->rt, d, &x->ctx)) < 0 ||
        (rc = weft__drv_queue_create(x->ctx, &qd, &x->q)) < 0 ||
        (rc = weft__drv_host_alloc(x->ctx, x->large, &x->host)) < 0 ||
        (rc = weft__drv_mem_alloc(x->ctx, x->large, &x->mem)) < 0)
        goto fail;
    for (unsigned e = 0; x->timing && e < 2; e++)
        if ((rc = weft__drv_event_create(x->ctx, WEFT__EVENT_TIMING,
                                         &x->ev[e])) < 0)
            goto fail;
    /* Touch the pinned pages once, so no copy pays for faulting them. */
    memset(x->host->host, 0, x->large);
    return 0;
fail:
    weft__error_prefix(rc, "calibration of %s", dev->name);
    weft__cal_dev_release(x);
    return rc;
}

static unsigned weft__cal_peer(const weft_runtime *rt, unsigned a, unsigned b)
{
    return a != b && rt->peer[(size_t)a * rt->ndevices + b] &&
           rt->devices[a]->drv == rt->devices[b]->drv;
}

/*
 * One calibration's device resources, kept until the runtime goes
 * (sched.h, cal_held). Freeing device or pinned memory (cuMemFree,
 * cuMemFreeHost) waits for the whole device, and holds the driver's lock
 * while it does: behind a stream of the program's that waits for
 * something weft is still to do, it would stall every thread that calls
 * the driver, so calibration never frees a device's memory before
 * weft_runtime_destroy (64 MiB of each kind per device, once per machine:
 * the links are cached on disk).
 */
typedef struct weft__cal_held {
    weft__cal_dev *dev;
    unsigned n;
    struct weft__cal_held *next;
} weft__cal_held;

/*
 * Free dev[0, n) (and the array): a simulated device's now (nothing waits
 * there, and its memory is often small); the others' queues and events
 * now and their memory at runtime destruction (where that cannot be
 * recorded, now).
 */
static void weft__cal_release_all(weft_runtime *rt, weft__cal_dev *dev,
                                  unsigned n)
{
    weft__sched *s = rt->sched;
    weft__cal_held *h = NULL;
    unsigned real = 0;

    for (unsigned d = 0; d < n; d++) {
        weft__cal_dev *x = &dev[d];

        if (weft__is_sim(rt->devices[d]) || !x->ctx) {
            weft__cal_dev_release(x);
            continue;
        }
        weft__cal_dev_release_queue(x);
        real += x->mem || x->host;
    }
    if (real && s && (h = weft__calloc(1, sizeof *h))) {
        h->dev = dev;
        h->n = n;
        pthread_mutex_lock(&s->lock);
        h->next = s->cal_held;
        s->cal_held = h;
        pthread_mutex_unlock(&s->lock);
        return;
    }
    for (unsigned d = 0; d < n; d++)
        weft__cal_dev_release(&dev[d]);
    weft__free(dev);
}

void weft__cal_free_held(weft_runtime *rt)
{
    weft__sched *s = rt->sched;
    weft__cal_held *h;

    if (!s)
        return;
    pthread_mutex_lock(&s->lock);
    h = s->cal_held;
    s->cal_held = NULL;
    pthread_mutex_unlock(&s->lock);
    while (h) {
        weft__cal_held *next = h->next;

        for (unsigned d = 0; d < h->n; d++)
            weft__cal_dev_release(&h->dev[d]);
        weft__free(h->dev);
        weft__free(h);
        h = next;
    }
}

/*
 * Measure the devices flagged in which (NULL: all) into l, which has room
 * for every device of rt.
 */
static int weft__links_measure_some(weft_runtime *rt,
                                    const weft__calibrate_opts *opts,
                                    weft__links *l, const unsigned char *which)
{
    unsigned n = rt->ndevices;
    weft__cal c = {rt, opts, NULL, 0, 0};
    int rc = 0;

    c.dev = weft__calloc(n ? n : 1, sizeof *c.dev);
    if (!c.dev)
        return weft__error(WEFT_ENOMEM, "calibration: out of memory");
    for (unsigned a = 0; a < n; a++) {
        if (which && !which[a])
            continue;
        c.total += 3;
        for (unsigned b = 0; b < n; b++)
            c.total += (!which || which[b]) && weft__cal_peer(rt, a, b);
    }
    for (unsigned d = 0; rc == 0 && d < n; d++)
        if (!which || which[d])
            rc = weft__cal_dev_setup(&c, d);
    for (unsigned d = 0; rc == 0 && d < n; d++) {
        if (which && !which[d])
            continue;
        weft__cal_step(&c, "device %u: host to device", d, 0);
        rc = weft__cal_link(&c, WEFT__CAL_H2D, d, 0, &l->h2d[d]);
        if (rc == 0) {
            weft__cal_step(&c, "device %u: device to host", d, 0);
            rc = weft__cal_link(&c, WEFT__CAL_D2H, d, 0, &l->d2h[d]);
        }
        if (rc == 0) {
            weft__cal_step(&c, "device %u: within the device", d, 0);
            rc = weft__cal_link(&c, WEFT__CAL_D2D, d, 0, &l->d2d[d]);
        }
        l->source[d] =
            weft__is_sim(rt->devices[d]) ? WEFT__LINK_SIM : WEFT__LINK_MEASURED;
    }
    for (unsigned a = 0; rc == 0 && a < n; a++)
        for (unsigned b = 0; rc == 0 && b < n; b++) {
            if ((which && (!which[a] || !which[b])) ||
                !weft__cal_peer(rt, a, b))
                continue;
            weft__cal_step(&c, "peer %u to %u", a, b);
            l->direct[(size_t)a * n + b] = 1;
            rc = weft__cal_link(&c, WEFT__CAL_PEER, a, b,
                                &l->peer[(size_t)a * n + b]);
        }
    if (rc == 0 && opts && opts->progress)
        opts->progress(opts->user, c.total, c.total, "done");
    weft__cal_release_all(rt, c.dev, n);
    return rc;
}

int weft__links_measure(weft_runtime *rt, const weft__calibrate_opts *opts,
                        weft__links *l)
{
    int rc;

    if ((rc = weft__links_alloc(l, rt->ndevices)) < 0)
        return rc;
    rc = weft__links_measure_some(rt, opts, l, NULL);
    if (rc == 0)
        rc = weft__links_finish(l);
    if (rc < 0)
        weft__links_free(l);
    return rc;
}

/* ---- the cache --------------------------------------------------------- */

static void weft__links_key(weft_runtime *rt, weft__kcache_key *k)
{
    const void *parts[2 + 4 * 64];
    size_t lens[WEFT__COUNTOF(parts)];
    static const char tag[] = "weft-links 1";
    char host[256] = "";
    unsigned np = 0;
    weft__kcache_key sub;

    if (gethostname(host, sizeof host - 1) < 0)
        host[0] = '\0';
    parts[np] = tag;
    lens[np++] = (size_t)-1;
    parts[np] = host;
    lens[np++] = (size_t)-1;
    /* Chain through sub-keys, so that any number of devices fits. */
    for (unsigned d = 0; d < rt->ndevices; d++) {
        const weft__device *dev = rt->devices[d];

        if (weft__is_sim(dev))
            continue;
        parts[np] = dev->drv->name;
        lens[np++] = (size_t)-1;
        parts[np] = dev->name;
        lens[np++] = (size_t)-1;
        parts[np] = dev->pci_bus_id;
        lens[np++] = (size_t)-1;
        parts[np] = dev->driver_version;
        lens[np++] = (size_t)-1;
        if (np + 4 > WEFT__COUNTOF(parts)) {
            weft__kcache_key_make(&sub, parts, lens, np);
            np = 0;
            parts[np] = sub.hex;
            lens[np++] = (size_t)-1;
        }
    }
    weft__kcache_key_make(k, parts, lens, np);
}

int weft__links_cache_path(weft_runtime *rt, char *buf, size_t size)
{
    weft__kcache_key k;
    char dir[4096];
    int w;

    if (weft__cache_dir(dir, sizeof dir) < 0)
        return weft__error(WEFT_ENOTFOUND, "links cache: no cache directory");
    weft__links_key(rt, &k);
    w = snprintf(buf, size, "%s/links-%s.txt", dir, k.hex);
    if (w < 0 || (size_t)w >= size)
        return weft__error(WEFT_ENOTFOUND, "links cache: path too long");
    return 0;
}

static uint64_t weft__fnv64(const char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;

    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 0x100000001b3ull;
    return h;
}

/* The non-sim devices of rt in order: map[j] is the runtime index. */
static unsigned weft__real_devices(const weft_runtime *rt, unsigned *map)
{
    unsigned m = 0;

    for (unsigned d = 0; d < rt->ndevices; d++)
        if (!weft__is_sim(rt->devices[d]))
            map[m++] = d;
    return m;
}

/* The cache text of the real devices of l; *text is weft__malloc'd. */
static int weft__links_format(weft_runtime *rt, const weft__links *l,
                              const unsigned *map, unsigned m, char **text)
{
    size_t cap = 256 + (size_t)m * 200 + (size_t)m * m * 80, len = 0;
    weft__kcache_key k;
    char *t;

    t = weft__malloc(cap);
    if (!t)
        return weft__error(WEFT_ENOMEM, "links cache: out of memory");
    weft__links_key(rt, &k);
#define WEFT__PUT(...)                                                         \
    len += (size_t)snprintf(t + len, len < cap ? cap - len : 0, __VA_ARGS__)
    WEFT__PUT("weft-links 1\nkey %s\ndevices %u\n", k.hex, m);
    for (unsigned j = 0; j < m; j++) {
        unsigned d = map[j];

        WEFT__PUT("device %u %.17g %.17g %.17g %.17g %.17g %.17g\n", j,
                  l->h2d[d].bw, l->h2d[d].lat_ns, l->d2h[d].bw,
                  l->d2h[d].lat_ns, l->d2d[d].bw, l->d2d[d].lat_ns);
    }
    for (unsigned a = 0; a < m; a++)
        for (unsigned b = 0; b < m; b++) {
            size_t i = (size_t)map[a] * l->n + map[b];

            if (a != b && l->direct[i])
                WEFT__PUT("peer %u %u %.17g %.17g\n", a, b, l->peer[i].bw,
                          l->peer[i].lat_ns);
        }
    if (len < cap)
        WEFT__PUT("check %016llx\n", (unsigned long long)weft__fnv64(t, len));
#undef WEFT__PUT
    if (len >= cap) {
        weft__free(t);
        return weft__error(WEFT_EINTERNAL, "links cache: %zu bytes of text",
                           len);
    }
    *text = t;
    return 0;
}

int weft__links_store(weft_runtime *rt, const weft__links *l)
{
    unsigned *map, m;
    char path[4200], tmp[4300], dir[4096], *text = NULL, *slash;
    FILE *f = NULL;
    size_t len;
    int rc, ok;

    if ((rc = weft__links_cache_path(rt, path, sizeof path)) < 0)
        return rc;
    map = weft__calloc(rt->ndevices ? rt->ndevices : 1, sizeof *map);
    if (!map)
        return weft__error(WEFT_ENOMEM, "links cache: out of memory");
    m = weft__real_devices(rt, map);
    rc = weft__links_format(rt, l, map, m, &text);
    weft__free(map);
    if (rc < 0)
        return rc;
    weft__strlcpy(dir, path, sizeof dir);
    if ((slash = strrchr(dir, '/')))
        *slash = '\0';
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    len = strlen(text);
    ok = (slash == NULL || weft__dir_make(dir) == 0) &&
         (f = fopen(tmp, "w")) != NULL;
    if (ok) {
        ok = fwrite(text, 1, len, f) == len;
        ok = (fclose(f) == 0) && ok;
        if (!ok || rename(tmp, path) < 0) {
            ok = 0;
            (void)unlink(tmp);
        }
    }
    weft__free(text);
    if (!ok) {
        rc = weft__error(WEFT_EIO, "links cache: cannot write %s: %s", path,
                         strerror(errno));
        weft__warn("sched", "%s", weft_last_error());
        return rc;
    }
    weft__debug("sched", "links cache: stored %s", path);
    return 0;
}

/* The whole file into a NUL-terminated buffer; -1 if absent or too big. */
static char *weft__read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    char *t;
    size_t n;

    if (!f)
        return NULL;
    t = weft__malloc(WEFT__CAL_FILE_MAX + 1);
    if (!t) {
        fclose(f);
        return NULL;
    }
    n = fread(t, 1, WEFT__CAL_FILE_MAX + 1, f);
    fclose(f);
    if (n > WEFT__CAL_FILE_MAX) {
        weft__free(t);
        return NULL;
    }
    t[n] = '\0';
    return t;
}

static int weft__fig_ok(double x, int positive)
{
    return isfinite(x) && (positive ? x > 0 : x >= 0);
}

/*
 * Parse text into the real devices of l. 0 if it is a complete, consistent
 * entry for rt; -1 otherwise (l may then be partly written).
 */
static int weft__links_parse(weft_runtime *rt, char *text, weft__links *l,
                             const unsigned *map, unsigned m)
{
    unsigned char *seen = NULL;
    unsigned npeers = 0, want_peers = 0, ndev = 0, j, a, b, fm;
    unsigned have_key = 0, have_count = 0;
    char *check, *line, *next, key[64];
    unsigned long long sum;
    weft__kcache_key k;
    int rc = -1, pos;
    double f[6];

    /* The check line is the last one; it covers every byte before it. */
    check = strstr(text, "\ncheck ");
    if (!check || sscanf(check + 7, "%16llx%n", &sum, &pos) != 1 ||
        strcmp(check + 7 + pos, "\n") != 0 ||
        weft__fnv64(text, (size_t)(check + 1 - text)) != sum)
        return -1;
    check[1] = '\0';
    weft__links_key(rt, &k);
    if (strncmp(text, "weft-links 1\n", 13) != 0)
        return -1;
    seen = weft__calloc(m ? m : 1, 1);
    if (!seen)
        return -1;
    for (a = 0; a < m; a++)
        for (b = 0; b < m; b++)
            want_peers += weft__cal_peer(rt, map[a], map[b]);
    for (line = text + 13; *line; line = next) {
        next = strchr(line, '\n');
        if (!next)
            goto out;
        *next++ = '\0';
        pos = -1;
        if (sscanf(line, "key %40s%n", key, &pos) == 1 && !line[pos]) {
            if (have_key++ || strcmp(key, k.hex) != 0)
                goto out;
        } else if (sscanf(line, "devices %u%n", &fm, &pos) == 1 && !line[pos]) {
            if (have_count++ || fm != m)
                goto out;
        } else if (sscanf(line, "device %u %lf %lf %lf %lf %lf %lf%n", &j,
                          &f[0], &f[1], &f[2], &f[3], &f[4], &f[5],
                          &pos) == 7 &&
                   !line[pos]) {
            if (j >= m || seen[j] || !weft__fig_ok(f[0], 1) ||
                !weft__fig_ok(f[1], 0) || !weft__fig_ok(f[2], 1) ||
                !weft__fig_ok(f[3], 0) || !weft__fig_ok(f[4], 1) ||
                !weft__fig_ok(f[5], 0))
                goto out;
            seen[j] = 1;
            ndev++;
            l->h2d[map[j]] = (weft__link){f[0], f[1]};
            l->d2h[map[j]] = (weft__link){f[2], f[3]};
            l->d2d[map[j]] = (weft__link){f[4], f[5]};
        } else if (sscanf(line, "peer %u %u %lf %lf%n", &a, &b, &f[0], &f[1],
                          &pos) == 4 &&
                   !line[pos]) {
            size_t i;

            if (a >= m || b >= m || !weft__cal_peer(rt, map[a], map[b]) ||
                !weft__fig_ok(f[0], 1) || !weft__fig_ok(f[1], 0))
                goto out;
            i = (size_t)map[a] * l->n + map[b];
            if (l->direct[i])
                goto out;
            l->direct[i] = 1;
            l->peer[i] = (weft__link){f[0], f[1]};
            npeers++;
        } else {
            goto out;
        }
    }
    if (have_key && have_count && ndev == m && npeers == want_peers)
        rc = 0;
out:
    weft__free(seen);
    return rc;
}

/*
 * Fill the real devices of l from the cache: 0 on a hit; WEFT_ENOTFOUND on
 * a miss or a corrupt entry (which is removed).
 */
static int weft__links_fetch(weft_runtime *rt, weft__links *l,
                             const unsigned *map, unsigned m)
{
    char path[4200], *text;

    if (weft__links_cache_path(rt, path, sizeof path) < 0)
        return WEFT_ENOTFOUND;
    text = weft__read_file(path);
    if (!text)
        return WEFT_ENOTFOUND;
    if (weft__links_parse(rt, text, l, map, m) < 0) {
        weft__warn("sched", "links cache: %s is corrupt; measuring again",
                   path);
        (void)unlink(path);
        weft__free(text);
        for (unsigned j = 0; j < m; j++)
            for (unsigned b = 0; b < l->n; b++)
                l->direct[(size_t)map[j] * l->n + b] = 0;
        return WEFT_ENOTFOUND;
    }
    weft__free(text);
    for (unsigned j = 0; j < m; j++)
        l->source[map[j]] = WEFT__LINK_CACHED;
    return 0;
}

int weft__links_load(weft_runtime *rt, weft__links *l)
{
    unsigned char *sim = NULL, *real = NULL;
    unsigned *map = NULL, m, n = rt->ndevices;
    weft__calibrate_opts quick = {0};
    int rc;

    quick.quick = 1;
    if ((rc = weft__links_alloc(l, n)) < 0)
        return rc;
    sim = weft__calloc(n ? n : 1, 1);
    real = weft__calloc(n ? n : 1, 1);
    map = weft__calloc(n ? n : 1, sizeof *map);
    if (!sim || !real || !map) {
        rc = weft__error(WEFT_ENOMEM, "links: out of memory");
        goto out;
    }
    m = weft__real_devices(rt, map);
    for (unsigned d = 0; d < n; d++) {
        sim[d] = weft__is_sim(rt->devices[d]) != 0;
        real[d] = !sim[d];
    }
    if (m < n && (rc = weft__links_measure_some(rt, &quick, l, sim)) < 0)
        goto out;
    if (m > 0 && weft__links_fetch(rt, l, map, m) < 0) {
        if ((rc = weft__links_measure_some(rt, &quick, l, real)) < 0)
            goto out;
        (void)weft__links_store(rt, l);
        weft_clear_error();
    }
    rc = weft__links_finish(l);
out:
    weft__free(sim);
    weft__free(real);
    weft__free(map);
    if (rc < 0)
        weft__links_free(l);
    return rc;
}
