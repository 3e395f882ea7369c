/*
 * Runtime creation never binds a thread to a CPU. hwloc's x86 discovery
 * binds the calling thread to each CPU in turn, and on small VMs such a
 * binding stalled runtime creation for seconds; weft loads its topology
 * without that component. The test counts the binding calls made in the
 * process (this executable's definitions interpose on the C library's, for
 * libhwloc and weft alike) and, as its own check, shows that hwloc's
 * default discovery does make them here.
 */
#include "wt_test.h"

#include <weft.h>

#include <dlfcn.h>
#include <hwloc.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

/* Visible to the shared libraries, whatever the build's default. */
#define WT_EXPORT __attribute__((visibility("default")))

static long binds;

WT_EXPORT int sched_setaffinity(pid_t pid, size_t size, const cpu_set_t *set)
{
    static int (*real)(pid_t, size_t, const cpu_set_t *);

    __atomic_add_fetch(&binds, 1, __ATOMIC_RELAXED);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "sched_setaffinity");
    return real ? real(pid, size, set) : -1;
}

WT_EXPORT int pthread_setaffinity_np(pthread_t t, size_t size,
                                     const cpu_set_t *set)
{
    static int (*real)(pthread_t, size_t, const cpu_set_t *);

    __atomic_add_fetch(&binds, 1, __ATOMIC_RELAXED);
    if (!real)
        *(void **)&real = dlsym(RTLD_NEXT, "pthread_setaffinity_np");
    return real ? real(t, size, set) : -1;
}

static long binds_now(void)
{
    return __atomic_load_n(&binds, __ATOMIC_RELAXED);
}

/* hwloc's own default load binds (on x86): the counting works. */
static void test_counting_works(void **state)
{
    hwloc_topology_t topo;
    long before = binds_now();

    (void)state;
#if defined(__x86_64__) || defined(__i386__)
    if (getenv("HWLOC_COMPONENTS"))
        skip();
    assert_int_equal(hwloc_topology_init(&topo), 0);
    assert_int_equal(hwloc_topology_load(topo), 0);
    hwloc_topology_destroy(topo);
    assert_true(binds_now() > before);
#else
    (void)topo;
    (void)before;
    skip();
#endif
}

static void test_create_binds_nothing(void **state)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    const char *devices = getenv("WT_NOBIND_DEVICES");

    (void)state;
    o.devices = devices ? devices : "host,sim";
    for (int i = 0; i < 20; i++) {
        weft_runtime *rt;
        long before = binds_now();

        assert_int_equal(weft_runtime_create(&rt, &o), 0);
        assert_int_equal(binds_now(), before);
        assert_int_equal(weft_runtime_destroy(rt), 0);
    }
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counting_works),
        cmocka_unit_test(test_create_binds_nothing),
    };

    return wt_run_group(argc, argv, tests, NULL, NULL);
}
