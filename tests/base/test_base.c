/* Errors, the per-thread detail, logging, parsing, failure injection. */
#include "wt_test.h"

#include "base/base.h"
#include "base/deque.h"
#include "base/ring.h"

#include <pthread.h>
#include <sched.h>
#include <string.h>

static void every_code_has_a_name_and_message(void **state)
{
    static const int codes[] = {
#define CODE(name, value, msg) WEFT_##name,
        WEFT_ERRNO_MAP(CODE)
#undef CODE
    };
    (void)state;
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++) {
        assert_true(codes[i] < 0);
        assert_int_equal(strncmp(weft_err_name(codes[i]), "WEFT_E", 6), 0);
        assert_string_not_equal(weft_strerror(codes[i]), "unknown error");
        for (size_t j = 0; j < i; j++)
            assert_int_not_equal(codes[i], codes[j]);
    }
    assert_string_equal(weft_err_name(WEFT_EDEVMEM), "WEFT_EDEVMEM");
    assert_string_equal(weft_strerror(WEFT_EDEVMEM), "out of device memory");
    assert_string_equal(weft_err_name(0), "WEFT_OK");
    assert_string_equal(weft_strerror(-9999), "unknown error");
    assert_string_equal(weft_err_name(-9999), "WEFT_EUNKNOWN");
}

static void detail_carries_driver_code(void **state)
{
    const weft_error_detail *d;
    (void)state;

    assert_int_equal(weft__error(WEFT_EINVAL, "size %d", 0), WEFT_EINVAL);
    assert_string_equal(weft_last_error(), "size 0");
    d = weft_last_error_detail();
    assert_int_equal(d->code, WEFT_EINVAL);
    assert_null(d->driver);

    assert_int_equal(weft__driver_error(WEFT_EDEVMEM, "cuda", 2,
                                        "CUDA_ERROR_OUT_OF_MEMORY",
                                        "cuMemAlloc of %d bytes", 64),
                     WEFT_EDEVMEM);
    d = weft_last_error_detail();
    assert_int_equal(d->code, WEFT_EDEVMEM);
    assert_string_equal(d->driver, "cuda");
    assert_int_equal(d->driver_code, 2);
    assert_string_equal(d->driver_name, "CUDA_ERROR_OUT_OF_MEMORY");
    assert_non_null(strstr(weft_last_error(), "cuMemAlloc of 64 bytes"));
    assert_non_null(strstr(weft_last_error(), "CUDA_ERROR_OUT_OF_MEMORY"));

    weft__error_prefix(WEFT_EDEVMEM, "node %d", 7);
    assert_non_null(strstr(weft_last_error(), "node 7: cuMemAlloc"));
    weft_clear_error();
    assert_string_equal(weft_last_error(), "");
    assert_int_equal(weft_last_error_detail()->code, 0);
}

static void *other_thread(void *arg)
{
    (void)arg;
    weft__error(WEFT_ENODEV, "from the other thread");
    return NULL;
}

static void detail_is_per_thread(void **state)
{
    pthread_t t;
    (void)state;

    weft__error(WEFT_EBUSY, "from this thread");
    assert_int_equal(pthread_create(&t, NULL, other_thread, NULL), 0);
    pthread_join(t, NULL);
    assert_string_equal(weft_last_error(), "from this thread");
    assert_int_equal(weft_last_error_detail()->code, WEFT_EBUSY);
}

struct captured {
    int calls;
    weft_log_level level;
    char sub[32];
    char line[256];
};

static void capture(weft_log_level level, const char *sub, const char *line,
                    void *user)
{
    struct captured *c = user;

    c->calls++;
    c->level = level;
    weft__strlcpy(c->sub, sub, sizeof c->sub);
    weft__strlcpy(c->line, line, sizeof c->line);
}

static void log_levels_and_sink(void **state)
{
    struct captured c = {0};
    (void)state;

    weft_log_set_sink(capture, &c);
    weft_log_set_level(WEFT_LOG_WARN);
    assert_int_equal(weft_log_get_level(), WEFT_LOG_WARN);
    weft__info("test", "dropped %d", 1);
    assert_int_equal(c.calls, 0);
    weft__warn("test", "kept %d", 2);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.level, WEFT_LOG_WARN);
    assert_string_equal(c.sub, "test");
    assert_string_equal(c.line, "kept 2");
    weft_log_set_level(WEFT_LOG_DEBUG);
    weft__info("test", "now kept");
    assert_int_equal(c.calls, 2);
    weft_log_set_level(WEFT_LOG_OFF);
    weft__log(WEFT_LOG_ERROR, "test", "off drops everything");
    assert_int_equal(c.calls, 2);
    weft_log_set_sink(NULL, NULL);
    weft_log_set_level(WEFT_LOG_WARN);
}

static void parse_sizes_and_rates(void **state)
{
    uint64_t v;
    double d;
    (void)state;

    assert_int_equal(weft__parse_size("4096", &v), 0);
    assert_int_equal(v, 4096);
    assert_int_equal(weft__parse_size("64M", &v), 0);
    assert_int_equal(v, 64ull << 20);
    assert_int_equal(weft__parse_size("141GiB", &v), 0);
    assert_int_equal(v, 141ull << 30);
    assert_int_equal(weft__parse_size("1.5k", &v), 0);
    assert_int_equal(v, 1536);
    assert_int_equal(weft__parse_size("12Q", &v), -1);
    assert_int_equal(weft__parse_size("", &v), -1);
    assert_int_equal(weft__parse_size("-1", &v), -1);
    assert_int_equal(weft__parse_size("1e30T", &v), -1);
    assert_int_equal(weft__parse_double("55G", &d), 0);
    assert_true(d == 55e9);
    assert_int_equal(weft__parse_double("3.5", &d), 0);
    assert_true(d == 3.5);
    assert_int_equal(weft__parse_double("x", &d), -1);
}

static void fault_fires_once_at_the_nth_match(void **state)
{
    void *p;
    (void)state;

    assert_false(weft__fault("a.b"));
    weft__fault_arm(3, "site");
    assert_false(weft__fault("other.thing")); /* no match: not counted */
    assert_false(weft__fault("site.one"));
    assert_false(weft__fault("site.two"));
    assert_int_equal(weft__fault_fired(), 0);
    assert_true(weft__fault("site.three"));
    assert_int_equal(weft__fault_fired(), 1);
    assert_false(weft__fault("site.four")); /* once only */
    assert_int_equal(weft__fault_seen(), 3);
    weft__fault_disarm();

    weft__fault_arm(1, "malloc");
    p = weft__malloc(16);
    assert_null(p);
    p = weft__malloc(16);
    assert_non_null(p);
    weft__free(p);
    weft__fault_disarm();

    /* '!' sites (made-up completion failures): only a '!' filter sees them */
    weft__fault_arm(1, NULL);
    assert_false(weft__fault("!x.failed"));
    assert_true(weft__fault("x.call"));
    weft__fault_arm(1, "x.");
    assert_false(weft__fault("!x.failed"));
    assert_int_equal(weft__fault_seen(), 0);
    weft__fault_arm(2, "!x.");
    assert_false(weft__fault("x.call"));
    assert_false(weft__fault("!x.failed"));
    assert_true(weft__fault("!x.failed"));
    weft__fault_disarm();
}

/* ---- the lock-free ring ------------------------------------------------ */

enum { RING_ITEMS = 200000, RING_THREADS = 3 };

typedef struct ring_run {
    weft__ring r;
    uintptr_t *items; /* RING_ITEMS, each pushed once */
    uint64_t popped_sum, pushed_sum;
    unsigned popped;
} ring_run;

typedef struct ring_arg {
    ring_run *run;
    unsigned id;
} ring_arg;

static void *ring_producer(void *arg)
{
    ring_arg *a = arg;
    ring_run *run = a->run;
    uint64_t sum = 0;

    for (unsigned i = a->id; i < RING_ITEMS; i += RING_THREADS) {
        run->items[i] = i + 1; /* published by the push */
        while (!weft__ring_push(&run->r, &run->items[i]))
            ;
        sum += i + 1;
    }
    __atomic_add_fetch(&run->pushed_sum, sum, __ATOMIC_RELAXED);
    return NULL;
}

static void *ring_consumer(void *arg)
{
    ring_run *run = ((ring_arg *)arg)->run;
    uint64_t sum = 0;

    while (__atomic_load_n(&run->popped, __ATOMIC_RELAXED) < RING_ITEMS) {
        uintptr_t *v = weft__ring_pop(&run->r);

        if (!v)
            continue;
        sum += *v;
        __atomic_add_fetch(&run->popped, 1, __ATOMIC_RELAXED);
    }
    __atomic_add_fetch(&run->popped_sum, sum, __ATOMIC_RELAXED);
    return NULL;
}

/*
 * The ring: full and empty said as such; FIFO for one thread; with three
 * producers and three consumers through a ring of 64, every item comes
 * out exactly once (the sums agree) and what its producer wrote before
 * the push is what its consumer reads.
 */
static void ring_mpmc(void **state)
{
    ring_run run;
    ring_arg args[2 * RING_THREADS];
    pthread_t t[2 * RING_THREADS];
    int x[5];

    (void)state;
    memset(&run, 0, sizeof run);
    assert_int_equal(weft__ring_init(&run.r, 4), 0);
    assert_null(weft__ring_pop(&run.r));
    for (int i = 0; i < 4; i++)
        assert_int_equal(weft__ring_push(&run.r, &x[i]), 1);
    assert_int_equal(weft__ring_push(&run.r, &x[4]), 0);
    for (int i = 0; i < 4; i++)
        assert_ptr_equal(weft__ring_pop(&run.r), &x[i]);
    assert_null(weft__ring_pop(&run.r));
    weft__ring_fini(&run.r);

    assert_int_equal(weft__ring_init(&run.r, 64), 0);
    run.items = weft__calloc(RING_ITEMS, sizeof *run.items);
    assert_non_null(run.items);
    for (unsigned i = 0; i < 2 * RING_THREADS; i++) {
        args[i].run = &run;
        args[i].id = i % RING_THREADS;
        assert_int_equal(
            pthread_create(&t[i], NULL,
                           i < RING_THREADS ? ring_producer : ring_consumer,
                           &args[i]),
            0);
    }
    for (unsigned i = 0; i < 2 * RING_THREADS; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(run.popped, RING_ITEMS);
    assert_true(run.pushed_sum == (uint64_t)RING_ITEMS * (RING_ITEMS + 1) / 2);
    assert_true(run.popped_sum == run.pushed_sum);
    assert_null(weft__ring_pop(&run.r));
    weft__free(run.items);
    weft__ring_fini(&run.r);
}

/* ---- the work-stealing deque ------------------------------------------- */

enum { DEQUE_ITEMS = 300000, DEQUE_THIEVES = 3 };

typedef struct deque_run {
    weft__deque d;
    uintptr_t *items; /* DEQUE_ITEMS values, each pushed once */
    unsigned *taken;  /* per item: how many times it came out */
    uint64_t sum;     /* of the values taken, by anyone */
    unsigned ntaken;  /* items taken so far */
    unsigned stolen;  /* of which by thieves */
} deque_run;

/* What came out: its value as its owner wrote it, counted once. */
static void deque_took(deque_run *run, uintptr_t *v, uint64_t *sum)
{
    size_t i = (size_t)(v - run->items);

    assert_true(i < DEQUE_ITEMS);
    assert_true(*v == i + 1);
    __atomic_add_fetch(&run->taken[i], 1, __ATOMIC_RELAXED);
    __atomic_add_fetch(&run->ntaken, 1, __ATOMIC_RELAXED);
    *sum += *v;
}

static void *deque_thief(void *arg)
{
    deque_run *run = arg;
    uint64_t sum = 0;
    unsigned n = 0;

    while (__atomic_load_n(&run->ntaken, __ATOMIC_RELAXED) < DEQUE_ITEMS) {
        uintptr_t *v = weft__deque_steal(&run->d);

        if (v) {
            deque_took(run, v, &sum);
            n++;
        }
    }
    __atomic_add_fetch(&run->sum, sum, __ATOMIC_RELAXED);
    __atomic_add_fetch(&run->stolen, n, __ATOMIC_RELAXED);
    return NULL;
}

/*
 * The deque: full and empty said as such, the owner's end last in first
 * out and the thieves' first in first out; then an owner that pushes
 * every item (bursts of up to 11 into 8 cells, wrapping the array many
 * times) and pops about one in three itself, against three thieves: every
 * item comes out exactly once, with the value its owner wrote before the
 * push, and the last ones race owner and thieves for a deque of one.
 */
static void deque_owner_and_thieves(void **state)
{
    deque_run run;
    pthread_t t[DEQUE_THIEVES];
    uint64_t sum = 0;
    int x[5];

    (void)state;
    memset(&run, 0, sizeof run);
    assert_int_equal(weft__deque_init(&run.d, 4), 0);
    assert_null(weft__deque_pop(&run.d));
    assert_null(weft__deque_steal(&run.d));
    for (int i = 0; i < 4; i++)
        assert_int_equal(weft__deque_push(&run.d, &x[i]), 1);
    assert_int_equal(weft__deque_push(&run.d, &x[4]), 0);
    assert_true(weft__deque_nonempty_hint(&run.d));
    assert_ptr_equal(weft__deque_pop(&run.d), &x[3]);
    assert_ptr_equal(weft__deque_steal(&run.d), &x[0]);
    assert_int_equal(weft__deque_push(&run.d, &x[4]), 1); /* room again */
    assert_ptr_equal(weft__deque_steal(&run.d), &x[1]);
    assert_ptr_equal(weft__deque_pop(&run.d), &x[4]);
    assert_ptr_equal(weft__deque_pop(&run.d), &x[2]);
    assert_null(weft__deque_pop(&run.d));
    assert_null(weft__deque_steal(&run.d));
    assert_false(weft__deque_nonempty_hint(&run.d));
    weft__deque_fini(&run.d);

    assert_int_equal(weft__deque_init(&run.d, 8), 0);
    run.items = weft__calloc(DEQUE_ITEMS, sizeof *run.items);
    run.taken = weft__calloc(DEQUE_ITEMS, sizeof *run.taken);
    assert_non_null(run.items);
    assert_non_null(run.taken);
    for (unsigned i = 0; i < DEQUE_THIEVES; i++)
        assert_int_equal(pthread_create(&t[i], NULL, deque_thief, &run), 0);
    for (unsigned i = 0; i < DEQUE_ITEMS;) {
        unsigned burst = 1 + i % 11;

        for (unsigned k = 0; k < burst && i < DEQUE_ITEMS; k++, i++) {
            run.items[i] = i + 1; /* published by the push */
            while (!weft__deque_push(&run.d, &run.items[i])) {
                uintptr_t *v = weft__deque_pop(&run.d);

                if (v)
                    deque_took(&run, v, &sum);
            }
        }
        if (i % 3 == 0) {
            uintptr_t *v = weft__deque_pop(&run.d);

            if (v)
                deque_took(&run, v, &sum);
        }
        if (i % 64 == 0) /* (the thieves' turn, on a machine of few cores) */
            sched_yield();
    }
    for (uintptr_t *v; (v = weft__deque_pop(&run.d));)
        deque_took(&run, v, &sum);
    for (unsigned i = 0; i < DEQUE_THIEVES; i++)
        pthread_join(t[i], NULL);
    __atomic_add_fetch(&run.sum, sum, __ATOMIC_RELAXED);
    assert_int_equal(run.ntaken, DEQUE_ITEMS);
    for (unsigned i = 0; i < DEQUE_ITEMS; i++)
        assert_int_equal(run.taken[i], 1);
    assert_true(run.sum == (uint64_t)DEQUE_ITEMS * (DEQUE_ITEMS + 1) / 2);
    print_message("deque: %u of %u items stolen\n", run.stolen, DEQUE_ITEMS);
    assert_null(weft__deque_pop(&run.d));
    weft__free(run.items);
    weft__free(run.taken);
    weft__deque_fini(&run.d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_code_has_a_name_and_message),
        cmocka_unit_test(detail_carries_driver_code),
        cmocka_unit_test(detail_is_per_thread),
        cmocka_unit_test(log_levels_and_sink),
        cmocka_unit_test(parse_sizes_and_rates),
        cmocka_unit_test(fault_fires_once_at_the_nth_match),
        cmocka_unit_test(ring_mpmc),
        cmocka_unit_test(deque_owner_and_thieves),
    };
    return wt_run_group(argc, argv, tests, NULL, NULL);
}
