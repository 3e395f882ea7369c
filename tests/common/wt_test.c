/* The test main loop: case globs and --list; a thread count (wt_test.h). */
#include "wt_test.h"

#include <dirent.h>
#include <execinfo.h>
#include <fnmatch.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * WT_HANG_DUMP=1: SIGQUIT prints the stack of the thread that takes it,
 * then of every other thread (tests/gpu/hang_dump.sh sends it to a test
 * that blocks, on machines without a debugger), and the process goes on.
 */
static volatile int wt_dump_busy;

/* One thread's stack, written whole (a spin keeps two from mixing). */
static void wt_dump_one(int sig)
{
    void *pc[64];
    int n = backtrace(pc, 64);
    char head[80];
    int len = snprintf(head, sizeof head, "wt: stack of thread %ld%s\n",
                       (long)syscall(SYS_gettid),
                       sig == SIGQUIT ? " (took SIGQUIT)" : "");

    while (__atomic_exchange_n(&wt_dump_busy, 1, __ATOMIC_ACQUIRE))
        ;
    if (len > 0 && write(2, head, (size_t)len) >= 0)
        backtrace_symbols_fd(pc, n, 2);
    __atomic_store_n(&wt_dump_busy, 0, __ATOMIC_RELEASE);
}

/* SIGQUIT: this thread's stack, then every other thread's (SIGUSR2). */
static void wt_dump_stack(int sig)
{
    long self = (long)syscall(SYS_gettid);
    DIR *d;
    struct dirent *e;

    wt_dump_one(sig);
    /* (not async-signal-safe: a debugging aid for tests that hang) */
    if (!(d = opendir("/proc/self/task")))
        return;
    while ((e = readdir(d)))
        if (e->d_name[0] != '.' && atol(e->d_name) != self)
            syscall(SYS_tgkill, getpid(), atol(e->d_name), SIGUSR2);
    closedir(d);
}

int wt_run_tests(int argc, char **argv, const char *group,
                 const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction setup, CMFixtureFunction teardown)
{
    const char *glob = getenv("WEFT_TEST_CASE");
    size_t matched = 0;

    if (getenv("WT_HANG_DUMP")) {
        void *pc[4];

        (void)backtrace(pc,
                        4); /* loads what it needs now, not in the handler */
        signal(SIGQUIT, wt_dump_stack);
        signal(SIGUSR2, wt_dump_one);
    }

    if (argc > 2 ||
        (argc == 2 && argv[1][0] == '-' && strcmp(argv[1], "--list") != 0)) {
        fprintf(stderr,
                "usage: [--list | CASE-GLOB] (or WEFT_TEST_CASE=GLOB)\n");
        exit(2);
    }
    if (argc == 2 && strcmp(argv[1], "--list") == 0) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", tests[i].name);
        exit(0);
    }
    if (argc == 2)
        glob = argv[1];
    if (!glob || !glob[0])
        return _cmocka_run_group_tests(group, tests, n, setup, teardown);
    /* fnmatch's '*' and '?' are CMocka's; it also takes [...]. */
    for (size_t i = 0; i < n; i++)
        matched += fnmatch(glob, tests[i].name, 0) == 0;
    if (!matched) {
        fprintf(stderr, "%s: no case matches \"%s\" (--list shows them)\n",
                group, glob);
        exit(1);
    }
    cmocka_set_test_filter(glob);
    return _cmocka_run_group_tests(group, tests, n, setup, teardown);
}

unsigned wt_threads_now(void)
{
    DIR *d = opendir("/proc/self/task");
    struct dirent *de;
    unsigned n = 0;

    assert_non_null(d);
    while ((de = readdir(d)))
        n += de->d_name[0] != '.';
    closedir(d);
    return n;
}
