/* The base containers: the hash map (map.h) and the growing array. */
#include "wt_test.h"

#include "base/base.h"
#include "base/map.h"

#include <string.h>

/* Keys are indices into a table the test owns, as weft's tables use it. */
typedef struct pair {
    const void *p;
    uint32_t i;
} pair;

static bool pair_is(uintptr_t value, const void *key, const void *user)
{
    const pair *t = user, *k = key;

    return t[value].p == k->p && t[value].i == k->i;
}

static uint64_t pair_hash(const pair *k)
{
    return weft__hash_mix(weft__hash_ptr(k->p), k->i);
}

enum { NPAIRS = 5000 };

static void map_put_find_grow_remove(void **state)
{
    static pair keys[NPAIRS];
    static char base[64];
    weft__map m = WEFT__MAP_INIT;
    uintptr_t *at = NULL;
    (void)state;

    for (uint32_t i = 0; i < NPAIRS; i++)
        keys[i] = (pair){&base[i % 64], i / 64};
    assert_null(
        weft__map_find(&m, pair_hash(&keys[0]), &keys[0], pair_is, keys));
    for (uint32_t i = 0; i < NPAIRS; i++) {
        assert_int_equal(weft__map_put(&m, pair_hash(&keys[i]), &keys[i], i,
                                       pair_is, keys, &at),
                         1);
        assert_int_equal(*at, i);
    }
    assert_int_equal(m.n, NPAIRS);
    assert_true(m.cap >= 2 * NPAIRS); /* grown, at most half full */
    for (uint32_t i = 0; i < NPAIRS; i++) {
        /* A second put finds the first and changes nothing. */
        assert_int_equal(weft__map_put(&m, pair_hash(&keys[i]), &keys[i],
                                       NPAIRS + i, pair_is, keys, &at),
                         0);
        assert_int_equal(*at, i);
    }
    /* Remove the even ones; the odd ones stay reachable past the holes. */
    for (uint32_t i = 0; i < NPAIRS; i += 2)
        assert_int_equal(
            weft__map_remove(&m, pair_hash(&keys[i]), &keys[i], pair_is, keys),
            1);
    assert_int_equal(
        weft__map_remove(&m, pair_hash(&keys[0]), &keys[0], pair_is, keys), 0);
    assert_int_equal(m.n, NPAIRS / 2);
    for (uint32_t i = 0; i < NPAIRS; i++) {
        at = weft__map_find(&m, pair_hash(&keys[i]), &keys[i], pair_is, keys);
        if (i % 2) {
            assert_non_null(at);
            assert_int_equal(*at, i);
        } else {
            assert_null(at);
        }
    }
    weft__map_clear(&m);
    assert_int_equal(m.n, 0);
    assert_null(
        weft__map_find(&m, pair_hash(&keys[1]), &keys[1], pair_is, keys));
    weft__map_fini(&m);
    assert_null(m.slots);
}

static bool ptr_is(uintptr_t value, const void *key, const void *user)
{
    (void)user;
    return (const void *)value == key;
}

/* Every hash the same: one long probe run, then removals inside it. */
static void map_collisions(void **state)
{
    static char objs[100];
    weft__map m = WEFT__MAP_INIT;
    (void)state;

    for (int i = 0; i < 100; i++)
        assert_int_equal(weft__map_put(&m, 7, &objs[i], (uintptr_t)&objs[i],
                                       ptr_is, NULL, NULL),
                         1);
    for (int i = 0; i < 100; i += 3)
        assert_int_equal(weft__map_remove(&m, 7, &objs[i], ptr_is, NULL), 1);
    for (int i = 0; i < 100; i++)
        assert_true(!weft__map_find(&m, 7, &objs[i], ptr_is, NULL) ==
                    (i % 3 == 0));
    weft__map_fini(&m);
}

/* Each allocation fails in turn: the call fails, the map is unchanged. */
static void map_failure_changes_nothing(void **state)
{
    static char objs[200];
    weft__map m = WEFT__MAP_INIT;
    int failed = 0;
    (void)state;

    for (int i = 0; i < 200; i++) {
        weft__map before = m;
        int rc;

        weft__fault_arm(1, "malloc");
        rc = weft__map_put(&m, weft__hash_ptr(&objs[i]), &objs[i],
                           (uintptr_t)&objs[i], ptr_is, NULL, NULL);
        weft__fault_disarm();
        if (rc < 0) {
            assert_int_equal(rc, WEFT_ENOMEM);
            assert_memory_equal(&m, &before, sizeof m);
            failed++;
            rc = weft__map_put(&m, weft__hash_ptr(&objs[i]), &objs[i],
                               (uintptr_t)&objs[i], ptr_is, NULL, NULL);
        }
        assert_int_equal(rc, 1);
        for (int j = 0; j <= i; j++)
            assert_non_null(weft__map_find(&m, weft__hash_ptr(&objs[j]),
                                           &objs[j], ptr_is, NULL));
    }
    assert_true(failed >= 4); /* the first put and each doubling */
    /* Reserved room: puts up to it need no memory. */
    assert_int_equal(weft__map_reserve(&m, 1000), 0);
    weft__fault_arm(1, "malloc");
    for (int i = 0; i < 200; i++)
        assert_int_equal(weft__map_put(&m, (uint64_t)i, &objs[i] + 1000,
                                       (uintptr_t)&objs[i] + 1000, ptr_is, NULL,
                                       NULL),
                         1);
    assert_int_equal(weft__fault_fired(), 0);
    weft__fault_disarm();
    weft__map_fini(&m);
}

static void grow_doubles_and_fails_cleanly(void **state)
{
    uint32_t *a = NULL;
    size_t cap = 0;
    (void)state;

    assert_int_equal(weft__grow(&a, &cap, 1, sizeof *a), 0);
    assert_int_equal(cap, 8);
    a[0] = 42;
    assert_int_equal(weft__grow(&a, &cap, 8, sizeof *a), 0);
    assert_int_equal(cap, 8);
    assert_int_equal(weft__grow(&a, &cap, 100, sizeof *a), 0);
    assert_int_equal(cap, 128);
    assert_int_equal(a[0], 42);
    weft__fault_arm(1, "malloc");
    {
        uint32_t *was = a;

        assert_int_equal(weft__grow(&a, &cap, 129, sizeof *a), WEFT_ENOMEM);
        assert_ptr_equal(a, was);
        assert_int_equal(cap, 128);
    }
    weft__fault_disarm();
    assert_int_equal(weft__grow(&a, &cap, SIZE_MAX / 2, 16), WEFT_ENOMEM);
    assert_int_equal(cap, 128);
    assert_int_equal(a[0], 42);
    weft__free(a);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(map_put_find_grow_remove),
        cmocka_unit_test(map_collisions),
        cmocka_unit_test(map_failure_changes_nothing),
        cmocka_unit_test(grow_doubles_and_fails_cleanly),
    };
    return wt_run_group(argc, argv, tests, NULL, NULL);
}
