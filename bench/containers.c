/*
 * containers: weft's own containers (src/base/) beside concurrencykit's,
 * in the same run, to choose between them (docs/architecture.md).
 *
 * Hash tables: N distinct keys put into an empty table, then each looked
 * up once (hits), per key shapes weft's tables use:
 *   pointer       a buffer or an event (the graph's roots, the tape);
 *   pair          (pointer, index): a root and a range, a root and a copy;
 *   string+dev    (kernel name, device): the kernel time model.
 * weft__map (map.h) stores an index or a pointer and asks the caller's
 * eq; ck_hs stores the key's pointer (CK_HS_MODE_DIRECT for pointers,
 * CK_HS_MODE_OBJECT otherwise) and compares through its own callback.
 * Both allocate through weft__malloc. Medians of R, ns per key, the two
 * run in turn.
 *
 * Rings: one producer thread and one consumer thread pass M pointers
 * through a ring of 1024, as the host workers' rings are used
 * (any thread pushes, any worker pops): weft__ring (ring.h) beside
 * ck_ring's MPMC functions. Medians of R, ns per item.
 *
 *     containers [--json] [--keys N] [--items M] [--reps R]
 */
#include "bench.h"

#include "base/base.h"
#include "base/map.h"
#include "base/ring.h"

#include <ck_hs.h>
#include <ck_ring.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXREPS = 64, RING_SIZE = 1024 };

static unsigned nkeys = 100000;
static unsigned nitems = 2000000;
static int reps = 7;

/* ---- keys --------------------------------------------------------------- */

typedef struct pair_key {
    const void *p;
    uint32_t i;
} pair_key;

typedef struct str_key {
    const char *name;
    unsigned dev;
} str_key;

static void **ptrs;
static pair_key *pairs;
static str_key *strs;

static uint64_t hash_pair(const pair_key *k)
{
    return weft__hash_mix(weft__hash_ptr(k->p), k->i);
}

static uint64_t hash_str(const str_key *k)
{
    return weft__hash_str(k->dev, k->name);
}

/* ---- weft__map ---------------------------------------------------------- */

static bool ptr_is(uintptr_t v, const void *key, const void *user)
{
    (void)user;
    return (const void *)v == key;
}

static bool pair_is(uintptr_t v, const void *key, const void *user)
{
    const pair_key *a = &((const pair_key *)user)[v], *b = key;

    return a->p == b->p && a->i == b->i;
}

static bool str_is(uintptr_t v, const void *key, const void *user)
{
    const str_key *a = (const str_key *)v, *b = key;

    (void)user;
    return a->dev == b->dev && !strcmp(a->name, b->name);
}

static volatile uintptr_t sink;

static uint64_t run_map(int shape)
{
    weft__map m = WEFT__MAP_INIT;
    uint64_t t0 = bench_now_ns();
    uintptr_t acc = 0;

    for (unsigned i = 0; i < nkeys; i++) {
        int rc = shape == 0
                     ? weft__map_put(&m, weft__hash_ptr(ptrs[i]), ptrs[i],
                                     (uintptr_t)ptrs[i], ptr_is, NULL, NULL)
                 : shape == 1
                     ? weft__map_put(&m, hash_pair(&pairs[i]), &pairs[i], i,
                                     pair_is, pairs, NULL)
                     : weft__map_put(&m, hash_str(&strs[i]), &strs[i],
                                     (uintptr_t)&strs[i], str_is, NULL, NULL);
        if (rc != 1)
            bench_die("weft__map_put: %d", rc);
    }
    for (unsigned i = 0; i < nkeys; i++) {
        uintptr_t *v = shape == 0 ? weft__map_find(&m, weft__hash_ptr(ptrs[i]),
                                                   ptrs[i], ptr_is, NULL)
                       : shape == 1 ? weft__map_find(&m, hash_pair(&pairs[i]),
                                                     &pairs[i], pair_is, pairs)
                                    : weft__map_find(&m, hash_str(&strs[i]),
                                                     &strs[i], str_is, NULL);
        if (!v)
            bench_die("weft__map_find: key %u missing", i);
        acc += *v;
    }
    t0 = bench_now_ns() - t0;
    sink = acc;
    weft__map_fini(&m);
    return t0;
}

/* ---- ck_hs -------------------------------------------------------------- */

static void *ck_alloc(size_t n)
{
    return weft__malloc(n);
}

static void ck_release(void *p, size_t n, bool defer)
{
    (void)n;
    (void)defer;
    weft__free(p);
}

static struct ck_malloc ck_allocator = {ck_alloc, NULL, ck_release};

static unsigned long hs_hash_ptr(const void *k, unsigned long seed)
{
    (void)seed;
    return (unsigned long)weft__hash_ptr(k);
}

static unsigned long hs_hash_pair(const void *k, unsigned long seed)
{
    (void)seed;
    return (unsigned long)hash_pair(k);
}

static unsigned long hs_hash_str(const void *k, unsigned long seed)
{
    (void)seed;
    return (unsigned long)hash_str(k);
}

static bool hs_pair_eq(const void *a, const void *b)
{
    const pair_key *x = a, *y = b;

    return x->p == y->p && x->i == y->i;
}

static bool hs_str_eq(const void *a, const void *b)
{
    const str_key *x = a, *y = b;

    return x->dev == y->dev && !strcmp(x->name, y->name);
}

static uint64_t run_hs(int shape)
{
    ck_hs_hash_cb_t *hf = shape == 0   ? hs_hash_ptr
                          : shape == 1 ? hs_hash_pair
                                       : hs_hash_str;
    ck_hs_compare_cb_t *eq = shape == 0   ? NULL
                             : shape == 1 ? hs_pair_eq
                                          : hs_str_eq;
    unsigned mode =
        CK_HS_MODE_SPMC | (shape == 0 ? CK_HS_MODE_DIRECT : CK_HS_MODE_OBJECT);
    ck_hs_t hs;
    uint64_t t0;
    uintptr_t acc = 0;

    t0 = bench_now_ns();
    if (!ck_hs_init(&hs, mode, hf, eq, &ck_allocator, 16, 0))
        bench_die("ck_hs_init failed");
    for (unsigned i = 0; i < nkeys; i++) {
        const void *k = shape == 0   ? ptrs[i]
                        : shape == 1 ? (const void *)&pairs[i]
                                     : (const void *)&strs[i];

        if (!ck_hs_put(&hs, CK_HS_HASH(&hs, hf, k), k))
            bench_die("ck_hs_put failed at key %u", i);
    }
    for (unsigned i = 0; i < nkeys; i++) {
        const void *k = shape == 0   ? ptrs[i]
                        : shape == 1 ? (const void *)&pairs[i]
                                     : (const void *)&strs[i];
        void *v = ck_hs_get(&hs, CK_HS_HASH(&hs, hf, k), k);

        if (!v)
            bench_die("ck_hs_get: key %u missing", i);
        acc += (uintptr_t)v;
    }
    t0 = bench_now_ns() - t0;
    sink = acc;
    ck_hs_destroy(&hs);
    return t0;
}

/* ---- rings -------------------------------------------------------------- */

typedef struct ring_run {
    int ck;
    weft__ring wr;
    ck_ring_t cr;
    ck_ring_buffer_t *buf;
    uint64_t sum;
} ring_run;

static int ring_push(ring_run *r, void *v)
{
    return r->ck ? ck_ring_enqueue_mpmc(&r->cr, r->buf, v)
                 : weft__ring_push(&r->wr, v);
}

static void *ring_pop(ring_run *r)
{
    void *v = NULL;

    if (r->ck)
        return ck_ring_dequeue_mpmc(&r->cr, r->buf, &v) ? v : NULL;
    return weft__ring_pop(&r->wr);
}

static void *ring_consumer(void *arg)
{
    ring_run *r = arg;
    uint64_t sum = 0;

    for (unsigned got = 0; got < nitems;) {
        void *v = ring_pop(r);

        if (v) {
            sum += (uintptr_t)v;
            got++;
        }
    }
    r->sum = sum;
    return NULL;
}

static uint64_t run_ring(int ck)
{
    ring_run r = {.ck = ck};
    pthread_t tid;
    uint64_t t0, expect = 0;

    if (ck) {
        r.buf = weft__calloc(RING_SIZE, sizeof *r.buf);
        if (!r.buf)
            bench_die("out of memory");
        ck_ring_init(&r.cr, RING_SIZE);
    } else {
        bench_check(weft__ring_init(&r.wr, RING_SIZE));
    }
    t0 = bench_now_ns();
    if (pthread_create(&tid, NULL, ring_consumer, &r))
        bench_die("pthread_create failed");
    for (uintptr_t i = 1; i <= nitems; i++) {
        while (!ring_push(&r, (void *)i))
            ;
        expect += i;
    }
    pthread_join(tid, NULL);
    t0 = bench_now_ns() - t0;
    if (r.sum != expect)
        bench_die("ring lost items: sum %llu, expected %llu",
                  (unsigned long long)r.sum, (unsigned long long)expect);
    if (ck)
        weft__free(r.buf);
    else
        weft__ring_fini(&r.wr);
    return t0;
}

/* ---- main --------------------------------------------------------------- */

static void keys_make(void)
{
    static char objs[64];
    char name[32];

    ptrs = calloc(nkeys, sizeof *ptrs);
    pairs = calloc(nkeys, sizeof *pairs);
    strs = calloc(nkeys, sizeof *strs);
    if (!ptrs || !pairs || !strs)
        bench_die("out of memory");
    for (unsigned i = 0; i < nkeys; i++) {
        /* Pointers as a heap gives them: small blocks, 16-byte aligned. */
        ptrs[i] = malloc(32);
        pairs[i] = (pair_key){&objs[i % 64], i / 64};
        snprintf(name, sizeof name, "kernel_%u", i / 4);
        strs[i] = (str_key){strdup(name), i % 4};
        if (!ptrs[i] || !strs[i].name)
            bench_die("out of memory");
    }
}

/*
 * Medians of R, ns per unit, of a(arg) and b(arg) run in turn, so that a
 * machine busy for a while weighs on both alike.
 */
static void medians_ns(uint64_t (*a)(int), uint64_t (*b)(int), int arg,
                       unsigned per, double *ma, double *mb)
{
    double va[MAXREPS], vb[MAXREPS];

    for (int r = 0; r < reps; r++) {
        va[r] = (double)a(arg) / per;
        vb[r] = (double)b(arg) / per;
    }
    *ma = bench_median(va, reps);
    *mb = bench_median(vb, reps);
}

static uint64_t run_weft_ring(int unused)
{
    (void)unused;
    return run_ring(0);
}

static uint64_t run_ck_ring(int unused)
{
    (void)unused;
    return run_ring(1);
}

int main(int argc, char **argv)
{
    static const char *shapes[] = {"pointer", "pair", "string+dev"};
    const bench_option opts[] = {
        {"--keys", BENCH_UNSIGNED, &nkeys, "N"},
        {"--items", BENCH_UNSIGNED, &nitems, "M"},
        {"--reps", BENCH_INT, &reps, "R"},
    };
    char name[96];
    double ma, mb;

    BENCH_OPTIONS(argc, argv, "containers", opts);
    if (reps < 1 || reps > MAXREPS || nkeys < 1 || nitems < 1)
        bench_usage();
    keys_make();
    bench_begin("\"keys\": %u, \"items\": %u, \"reps\": %d", nkeys, nitems,
                reps);
    for (int s = 0; s < 3; s++) {
        bench_progress(shapes[s]);
        medians_ns(run_map, run_hs, s, nkeys, &ma, &mb);
        snprintf(name, sizeof name, "hash %s put+get weft__map", shapes[s]);
        bench_figure(name, ma, "ns/key");
        snprintf(name, sizeof name, "hash %s put+get ck_hs", shapes[s]);
        bench_figure(name, mb, "ns/key");
    }
    bench_progress("rings");
    medians_ns(run_weft_ring, run_ck_ring, 0, nitems, &ma, &mb);
    bench_figure("ring 1 producer 1 consumer weft__ring", ma, "ns/item");
    bench_figure("ring 1 producer 1 consumer ck_ring mpmc", mb, "ns/item");
    bench_progress("");
    bench_end();
    return 0;
}
