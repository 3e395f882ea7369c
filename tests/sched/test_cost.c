/*
 * The cost model: link arithmetic and the kernel time model (medians,
 * buckets, neighbours, the prior, concurrent records).
 */
#include "sched/cost.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include "wt_test.h"

static void test_links_through_host(void **state)
{
    weft__links l;

    (void)state;
    assert_int_equal(weft__links_alloc(&l, 2), 0);
    for (unsigned d = 0; d < 2; d++) {
        l.h2d[d] = (weft__link){50e9, 1000};
        l.d2h[d] = (weft__link){25e9, 3000};
        l.d2d[d] = (weft__link){1e12, 500};
    }
    assert_int_equal(weft__links_finish(&l), 0);
    assert_int_equal(l.direct[1], 0);
    /*
     * 1 MB from 0 to 1 without peer access: d2h of 0 (3000 + 1e6 / 25e9 s
     * = 3000 + 40000 ns) then h2d of 1 (1000 + 20000 ns): 64000 ns.
     */
    assert_true(fabs(weft__links_copy_ns(&l, 0, 1, 1000000) - 64000) < 1e-6);
    assert_true(fabs(weft__links_copy_ns(&l, WEFT__MEM_HOST, 1, 1000000) -
                     21000) < 1e-6);
    assert_true(weft__links_copy_ns(&l, 1, 1, 1000000) == 0);
    assert_true(weft__links_copy_ns(&l, WEFT__MEM_HOST, WEFT__MEM_HOST, 9) ==
                0);
    /* A direct peer link is taken as given. */
    l.direct[0 * 2 + 1] = 1;
    l.peer[0 * 2 + 1] = (weft__link){400e9, 2000};
    assert_int_equal(weft__links_finish(&l), 0);
    assert_true(fabs(weft__links_copy_ns(&l, 0, 1, 4000000) - 12000) < 1e-6);
    /* A device without figures is refused. */
    l.h2d[1].bw = 0;
    assert_int_equal(weft__links_finish(&l), WEFT_EINVAL);
    weft__links_free(&l);
}

static void test_median_outlier(void **state)
{
    weft__ktime *m;
    int known;

    (void)state;
    assert_int_equal(weft__ktime_create(1, NULL, &m), 0);
    /* Ten launches of 1000 ns and one of a second: the median is 1000. */
    for (int i = 0; i < 10; i++)
        assert_int_equal(weft__ktime_record(m, "k", 0, 1000, 1000), 0);
    assert_int_equal(weft__ktime_record(m, "k", 0, 1000, 1000000000), 0);
    assert_true(weft__ktime_estimate(m, "k", 0, 1000, &known) == 1000);
    assert_int_equal(known, 2);
    /*
     * The ring keeps the last 15: after 15 launches of 5000 ns nothing of
     * the old ones is left, so the median is 5000 exactly.
     */
    for (int i = 0; i < WEFT__KTIME_RING; i++)
        assert_int_equal(weft__ktime_record(m, "k", 0, 1000, 5000), 0);
    assert_true(weft__ktime_estimate(m, "k", 0, 1000, NULL) == 5000);
    weft__ktime_destroy(m);
}

static void test_buckets(void **state)
{
    weft__ktime *m;
    int known;

    (void)state;
    assert_int_equal(weft__ktime_create(1, NULL, &m), 0);
    assert_int_equal(weft__ktime_record(m, "k", 0, 1024, 1000), 0);
    assert_int_equal(weft__ktime_record(m, "k", 0, 4096, 4000), 0);
    /* 2047 items share the bucket of 1024 (2^10 .. 2^11 - 1). */
    assert_true(weft__ktime_estimate(m, "k", 0, 2047, &known) == 1000);
    assert_int_equal(known, 2);
    /*
     * 2048 is in an empty bucket between 1024 (1000 ns) and 4096 (4000
     * ns): on the line between them, 1000 + 3000 * 1024 / 3072 = 2000.
     */
    assert_true(fabs(weft__ktime_estimate(m, "k", 0, 2048, &known) - 2000) <
                1e-9);
    assert_int_equal(known, 1);
    /* Above the largest known: in proportion, 4000 * 65536 / 4096. */
    assert_true(fabs(weft__ktime_estimate(m, "k", 0, 65536, NULL) - 64000) <
                1e-9);
    /*
     * Below the smallest: in proportion would be 1000 * 16 / 1024 = 15.6,
     * but a launch costs at least its fixed part, min(1000, prior 5000).
     */
    assert_true(weft__ktime_estimate(m, "k", 0, 16, NULL) == 1000);
    weft__ktime_destroy(m);
}

static void test_prior(void **state)
{
    const unsigned cu[2] = {132, 66};
    weft__ktime *m;
    int known;

    (void)state;
    assert_int_equal(weft__ktime_create(2, cu, &m), 0);
    /* 5000 + 1e6 * 0.01 * 132 / cu: 15000 on 132 units, 25000 on 66. */
    assert_true(fabs(weft__ktime_estimate(m, "new", 0, 1000000, &known) -
                     15000) < 1e-6);
    assert_int_equal(known, 0);
    assert_true(fabs(weft__ktime_estimate(m, "new", 1, 1000000, NULL) - 25000) <
                1e-6);
    /* What device 0 learns goes for device 1 too, in the priors' ratio,
     * until device 1 has times of its own. */
    assert_int_equal(weft__ktime_record(m, "new", 0, 1000000, 777), 0);
    assert_true(weft__ktime_estimate(m, "new", 0, 1000000, NULL) == 777);
    assert_true(fabs(weft__ktime_estimate(m, "new", 1, 1000000, &known) -
                     777.0 * 25000 / 15000) < 1e-6);
    assert_int_equal(known, 1);
    assert_int_equal(weft__ktime_record(m, "new", 1, 1000000, 900), 0);
    assert_true(weft__ktime_estimate(m, "new", 1, 1000000, &known) == 900);
    assert_int_equal(known, 2);
    weft__ktime_set_prior(m, 1, 100, 1);
    /* 100 + 1000 * 1 * 2 */
    assert_true(fabs(weft__ktime_estimate(m, "other", 1, 1000, NULL) - 2100) <
                1e-6);
    assert_int_equal(weft__ktime_record(m, "k", 2, 1, 1), WEFT_EINVAL);
    weft__ktime_destroy(m);
}

typedef struct recorder {
    weft__ktime *m;
    unsigned id;
    int rc;
} recorder;

static void *record_many(void *arg)
{
    recorder *r = arg;
    char name[16];

    for (unsigned i = 0; i < 2000 && r->rc == 0; i++) {
        /* Every thread adds to a shared kernel and to one of its own. */
        snprintf(name, sizeof name, "own%u", r->id);
        r->rc = weft__ktime_record(r->m, i % 2 ? "shared" : name, 0,
                                   (uint64_t)1 << (i % 20), 100 + r->id);
        if (r->rc == 0)
            (void)weft__ktime_estimate(r->m, "shared", 0, 4096, NULL);
    }
    return NULL;
}

static void test_concurrent(void **state)
{
    recorder r[4];
    pthread_t t[4];
    weft__ktime *m;

    (void)state;
    assert_int_equal(weft__ktime_create(1, NULL, &m), 0);
    for (unsigned i = 0; i < 4; i++) {
        r[i] = (recorder){m, i, 0};
        assert_int_equal(pthread_create(&t[i], NULL, record_many, &r[i]), 0);
    }
    for (unsigned i = 0; i < 4; i++) {
        assert_int_equal(pthread_join(t[i], NULL), 0);
        assert_int_equal(r[i].rc, 0);
    }
    /* Each thread's own kernel saw only its value, 100 + id. */
    for (unsigned i = 0; i < 4; i++) {
        char name[16];
        int known;

        snprintf(name, sizeof name, "own%u", i);
        assert_true(weft__ktime_estimate(m, name, 0, 1, &known) == 100 + i);
        assert_int_equal(known, 2);
    }
    /* The shared one holds values 100..103 only. */
    {
        double t4 = weft__ktime_estimate(m, "shared", 0, 2, NULL);

        assert_true(t4 >= 100 && t4 <= 103);
    }
    weft__ktime_destroy(m);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_links_through_host),
        cmocka_unit_test(test_median_outlier),
        cmocka_unit_test(test_buckets),
        cmocka_unit_test(test_prior),
        cmocka_unit_test(test_concurrent),
    };

    return wt_run_group(argc, argv, tests, NULL, NULL);
}
