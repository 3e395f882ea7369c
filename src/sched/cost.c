/*
 * The cost model: link figures and learned kernel times (cost.h).
 */
#include "cost.h"

#include "../base/map.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- links ------------------------------------------------------------- */

int weft__links_alloc(weft__links *l, unsigned n)
{
    memset(l, 0, sizeof *l);
    if (n == 0)
        return 0;
    l->h2d = weft__calloc(n, sizeof *l->h2d);
    l->d2h = weft__calloc(n, sizeof *l->d2h);
    l->d2d = weft__calloc(n, sizeof *l->d2d);
    l->peer = weft__calloc((size_t)n * n, sizeof *l->peer);
    l->direct = weft__calloc((size_t)n * n, 1);
    l->source = weft__calloc(n, 1);
    if (!l->h2d || !l->d2h || !l->d2d || !l->peer || !l->direct || !l->source) {
        weft__links_free(l);
        return weft__error(WEFT_ENOMEM, "links: out of memory for %u devices",
                           n);
    }
    l->n = n;
    return 0;
}

void weft__links_free(weft__links *l)
{
    weft__free(l->h2d);
    weft__free(l->d2h);
    weft__free(l->d2d);
    weft__free(l->peer);
    weft__free(l->direct);
    weft__free(l->source);
    memset(l, 0, sizeof *l);
}

static int weft__link_ok(const weft__link *k)
{
    return k->bw > 0 && isfinite(k->bw) && k->lat_ns >= 0 &&
           isfinite(k->lat_ns);
}

int weft__links_finish(weft__links *l)
{
    unsigned n = l->n;

    for (unsigned d = 0; d < n; d++)
        if (!weft__link_ok(&l->h2d[d]) || !weft__link_ok(&l->d2h[d]) ||
            !weft__link_ok(&l->d2d[d]))
            return weft__error(
                WEFT_EINVAL, "links: device %u lacks a host or local link", d);
    for (unsigned a = 0; a < n; a++) {
        for (unsigned b = 0; b < n; b++) {
            weft__link *p = &l->peer[(size_t)a * n + b];

            if (a == b) {
                *p = l->d2d[a];
                l->direct[(size_t)a * n + b] = 1;
                continue;
            }
            if (l->direct[(size_t)a * n + b]) {
                if (!weft__link_ok(p))
                    return weft__error(WEFT_EINVAL,
                                       "links: peer link %u->%u has no "
                                       "figures",
                                       a, b);
                continue;
            }
            /*
             * Through the host the legs run one after the other, so their
             * times add: 1/bw = 1/bw1 + 1/bw2.
             */
            p->lat_ns = l->d2h[a].lat_ns + l->h2d[b].lat_ns;
            p->bw = 1.0 / (1.0 / l->d2h[a].bw + 1.0 / l->h2d[b].bw);
        }
    }
    return 0;
}

double weft__links_copy_ns(const weft__links *l, int src, int dst,
                           uint64_t bytes)
{
    const weft__link *k;

    if (src == dst || bytes == 0)
        return 0;
    if (src == WEFT__MEM_HOST) {
        /* Host to host is a memcpy the model does not count. */
        if (dst == WEFT__MEM_HOST)
            return 0;
        k = &l->h2d[dst];
    } else if (dst == WEFT__MEM_HOST) {
        k = &l->d2h[src];
    } else {
        k = &l->peer[(size_t)src * l->n + (unsigned)dst];
    }
    weft__assert_internal((unsigned)(src < 0 ? dst : src) < l->n);
    return k->lat_ns + (double)bytes * 1e9 / k->bw;
}

/* ---- kernel times ------------------------------------------------------ */

/*
 * The samples of one bucket: a ring of the last WEFT__KTIME_RING, next the
 * slot the next sample overwrites, count how many slots hold one.
 */
typedef struct weft__ktime_bucket {
    uint64_t ns[WEFT__KTIME_RING];
    uint64_t items[WEFT__KTIME_RING];
    unsigned next, count;
} weft__ktime_bucket;

typedef struct weft__ktime_entry {
    char *kernel;
    unsigned dev;
    weft__ktime_bucket *bucket[WEFT__KTIME_BUCKETS]; /* NULL: no sample */
} weft__ktime_entry;

typedef struct weft__ktime_prior {
    double launch_ns, item_ns, scale;
} weft__ktime_prior;

struct weft__ktime {
    pthread_mutex_t lock; /* guards entries and each entry's buckets */
    unsigned ndevices;
    weft__ktime_prior *prior; /* ndevices */
    weft__map entries;        /* (kernel, dev) -> weft__ktime_entry * */
};

/* The key of an entry. */
typedef struct weft__ktime_key {
    const char *kernel;
    unsigned dev;
} weft__ktime_key;

int weft__ktime_create(unsigned ndevices, const unsigned *compute_units,
                       weft__ktime **model)
{
    weft__ktime *m;
    int e;

    m = weft__calloc(1, sizeof *m);
    if (!m)
        return weft__error(WEFT_ENOMEM, "kernel time model: out of memory");
    m->prior = weft__calloc(ndevices ? ndevices : 1, sizeof *m->prior);
    if (!m->prior) {
        weft__free(m);
        return weft__error(WEFT_ENOMEM, "kernel time model: out of memory");
    }
    m->ndevices = ndevices;
    for (unsigned d = 0; d < ndevices; d++) {
        unsigned cu = compute_units ? compute_units[d] : 132;

        m->prior[d].launch_ns = 5000;
        m->prior[d].item_ns = 0.01;
        m->prior[d].scale = 132.0 / (cu ? cu : 1);
    }
    e = weft__fault("ktime.pthread_mutex_init")
            ? 12
            : pthread_mutex_init(&m->lock, NULL);
    if (e) {
        weft__free(m->prior);
        weft__free(m);
        return weft__error(WEFT_ENOMEM,
                           "kernel time model: pthread_mutex_init: %s",
                           weft__errno_name(e));
    }
    *model = m;
    return 0;
}

void weft__ktime_destroy(weft__ktime *m)
{
    if (!m)
        return;
    for (size_t s = 0; s < m->entries.cap; s++) {
        weft__ktime_entry *e = (weft__ktime_entry *)m->entries.slots[s].value;

        if (!m->entries.slots[s].hash)
            continue;
        for (unsigned b = 0; b < WEFT__KTIME_BUCKETS; b++)
            weft__free(e->bucket[b]);
        weft__free(e->kernel);
        weft__free(e);
    }
    weft__map_fini(&m->entries);
    pthread_mutex_destroy(&m->lock);
    weft__free(m->prior);
    weft__free(m);
}

void weft__ktime_set_prior(weft__ktime *m, unsigned dev, double launch_ns,
                           double item_ns)
{
    if (dev >= m->ndevices)
        weft__client_crash("weft__ktime_set_prior: device %u of %u", dev,
                           m->ndevices);
    pthread_mutex_lock(&m->lock);
    m->prior[dev].launch_ns = launch_ns;
    m->prior[dev].item_ns = item_ns;
    pthread_mutex_unlock(&m->lock);
}

static uint64_t weft__ktime_hash(const char *kernel, unsigned dev)
{
    return weft__hash_str(dev, kernel);
}

static bool weft__ktime_is(uintptr_t entry, const void *key, const void *user)
{
    const weft__ktime_entry *e = (const weft__ktime_entry *)entry;
    const weft__ktime_key *k = key;

    return e->dev == k->dev && !strcmp(e->kernel, k->kernel);
}

/* floor(log2(items)), items 0 and 1 both in bucket 0. */
static unsigned weft__ktime_bucket_of(uint64_t items)
{
    return items ? 63u - (unsigned)__builtin_clzll(items) : 0;
}

/* Called with the lock held. */
static weft__ktime_entry *weft__ktime_find(weft__ktime *m, const char *kernel,
                                           unsigned dev)
{
    weft__ktime_key k = {kernel, dev};
    uintptr_t *e = weft__map_find(&m->entries, weft__ktime_hash(kernel, dev),
                                  &k, weft__ktime_is, NULL);

    return e ? (weft__ktime_entry *)*e : NULL;
}

int weft__ktime_record(weft__ktime *m, const char *kernel, unsigned dev,
                       uint64_t items, uint64_t ns)
{
    weft__ktime_key key = {kernel, dev};
    weft__ktime_entry *e, *fresh = NULL;
    unsigned b;
    weft__ktime_bucket *k;

    if (dev >= m->ndevices)
        return weft__error(WEFT_EINVAL, "kernel time of %s: device %u of %u",
                           kernel, dev, m->ndevices);
    /* Allocate outside the lock; most records find their entry. */
    pthread_mutex_lock(&m->lock);
    e = weft__ktime_find(m, kernel, dev);
    pthread_mutex_unlock(&m->lock);
    if (!e) {
        fresh = weft__calloc(1, sizeof *fresh);
        if (fresh)
            fresh->kernel = weft__strdup(kernel);
        if (!fresh || !fresh->kernel) {
            weft__free(fresh);
            return weft__error(WEFT_ENOMEM, "kernel time of %s: out of memory",
                               kernel);
        }
        fresh->dev = dev;
    }
    b = weft__ktime_bucket_of(items);
    k = weft__calloc(1, sizeof *k);
    if (!k) {
        if (fresh)
            weft__free(fresh->kernel);
        weft__free(fresh);
        return weft__error(WEFT_ENOMEM, "kernel time of %s: out of memory",
                           kernel);
    }
    pthread_mutex_lock(&m->lock);
    /* Another thread may have added the entry since the lookup above. */
    e = weft__ktime_find(m, kernel, dev);
    if (!e && weft__map_put(&m->entries, weft__ktime_hash(kernel, dev), &key,
                            (uintptr_t)fresh, weft__ktime_is, NULL, NULL) < 0) {
        pthread_mutex_unlock(&m->lock);
        weft__free(k);
        weft__free(fresh->kernel);
        weft__free(fresh);
        return weft__error(WEFT_ENOMEM, "kernel time of %s: out of memory",
                           kernel);
    }
    if (!e) {
        e = fresh;
        fresh = NULL;
    }
    if (!e->bucket[b]) {
        e->bucket[b] = k;
        k = NULL;
    }
    {
        weft__ktime_bucket *r = e->bucket[b];

        r->ns[r->next] = ns;
        r->items[r->next] = items;
        r->next = (r->next + 1) % WEFT__KTIME_RING;
        if (r->count < WEFT__KTIME_RING)
            r->count++;
    }
    pthread_mutex_unlock(&m->lock);
    weft__free(k);
    if (fresh)
        weft__free(fresh->kernel);
    weft__free(fresh);
    return 0;
}

static int weft__cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return (x > y) - (x < y);
}

/* The median of n values (the mean of the middle two if n is even). */
static double weft__median(const uint64_t *v, unsigned n)
{
    uint64_t s[WEFT__KTIME_RING];

    memcpy(s, v, n * sizeof *s);
    qsort(s, n, sizeof *s, weft__cmp_u64);
    if (n % 2)
        return (double)s[n / 2];
    return ((double)s[n / 2 - 1] + (double)s[n / 2]) / 2;
}

double weft__ktime_estimate(weft__ktime *m, const char *kernel, unsigned dev,
                            uint64_t items, int *known)
{
    const weft__ktime_bucket *lo = NULL, *hi = NULL;
    double t = 0, tl = 0, th = 0, il = 0, ih = 0, x = (double)items;
    unsigned b = weft__ktime_bucket_of(items);
    weft__ktime_entry *e;
    weft__ktime_prior p;
    int how = 0;

    if (dev >= m->ndevices)
        weft__client_crash("weft__ktime_estimate: device %u of %u", dev,
                           m->ndevices);
    pthread_mutex_lock(&m->lock);
    p = m->prior[dev];
    e = weft__ktime_find(m, kernel, dev);
    if (e && e->bucket[b]) {
        t = weft__median(e->bucket[b]->ns, e->bucket[b]->count);
        how = 2;
    } else if (e) {
        for (unsigned i = b; i-- > 0 && !lo;)
            lo = e->bucket[i];
        for (unsigned i = b + 1; i < WEFT__KTIME_BUCKETS && !hi; i++)
            hi = e->bucket[i];
        if (lo) {
            tl = weft__median(lo->ns, lo->count);
            il = weft__median(lo->items, lo->count);
        }
        if (hi) {
            th = weft__median(hi->ns, hi->count);
            ih = weft__median(hi->items, hi->count);
        }
    }
    pthread_mutex_unlock(&m->lock);
    if (how == 2) {
        /* nothing to add */
    } else if (lo && hi && ih > il) {
        t = tl + (th - tl) * (x - il) / (ih - il);
        how = 1;
    } else if (lo || hi) {
        /*
         * One side only: in proportion to items, the model of a kernel
         * bound by its work. Below the smallest known size a launch still
         * costs its fixed part, which the prior knows best.
         */
        double tn = lo ? tl : th, in = lo ? il : ih;

        t = in > 0 ? tn * x / in : tn;
        if (!lo && t < WEFT__MIN(tn, p.launch_ns))
            t = WEFT__MIN(tn, p.launch_ns);
        how = 1;
    } else {
        t = p.launch_ns + x * p.item_ns * p.scale;
        /*
         * Never run here, but learned on another device: that time, in
         * the ratio of the two devices' priors (a kernel that the prior
         * underrates by far does so on every device alike).
         */
        for (unsigned d = 0; !e && d < m->ndevices && !how; d++) {
            weft__ktime_prior q;
            weft__ktime_entry *o;
            int k = 0;
            double td, pd;

            if (d == dev)
                continue;
            pthread_mutex_lock(&m->lock);
            o = weft__ktime_find(m, kernel, d);
            q = m->prior[d];
            pthread_mutex_unlock(&m->lock);
            if (!o)
                continue;
            td = weft__ktime_estimate(m, kernel, d, items, &k);
            pd = q.launch_ns + x * q.item_ns * q.scale;
            if (k && pd > 0) {
                t = td * t / pd;
                how = 1;
            }
        }
    }
    if (known)
        *known = how;
    return t > 0 ? t : 0;
}
