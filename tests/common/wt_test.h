/*
 * What every CMocka test executable shares: check() for weft calls, and one
 * main loop that can run a single case.
 *
 * Picking cases: a test executable runs every case of its group, or only
 * the cases whose names match a glob (CMocka's: '*' and '?') given as its
 * argument or in WEFT_TEST_CASE (the argument wins):
 *
 *     build/tests/graph/test_exec 'test_native_*'
 *     WEFT_TEST_CASE=test_relaunch_changes ctest --test-dir build -R exec_
 *     build/tests/graph/test_exec --list
 *
 * A glob that matches no case is an error, so that a typo cannot pass.
 */
#ifndef WT_TEST_H
#define WT_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "weft.h"

/*
 * call returns a weft code; a negative one fails the running test at the
 * caller's file:line with the call's text, the code's name and
 * weft_last_error().
 */
#define check(call) wt_check((call), #call, __FILE__, __LINE__)

static inline void wt_check(int rc, const char *call, const char *file,
                            int line)
{
    if (rc < 0) {
        print_error("ERROR: %s: %s: %s\n", call, weft_err_name(rc),
                    weft_last_error());
        _fail(file, line);
    }
}

/*
 * Runs the group tests[0..n) as cmocka_run_group_tests_name does, after
 * applying the case glob. argv[1..argc) are the kit's arguments: none, a
 * glob, or --list (print the case names, one a line, and exit 0); argv[0]
 * is not read, so a main that takes arguments of its own passes argv
 * shifted past them. Bad arguments print a usage line and exit 2; a glob
 * that matches no case exits 1. Returns the number of failed cases.
 */
int wt_run_tests(int argc, char **argv, const char *group,
                 const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction setup, CMFixtureFunction teardown);

#define wt_run_group_name(argc, argv, group, tests, setup, teardown)           \
    wt_run_tests((argc), (argv), (group), (tests),                             \
                 sizeof(tests) / sizeof((tests)[0]), (setup), (teardown))

/* The group is named after the array, as cmocka_run_group_tests does. */
#define wt_run_group(argc, argv, tests, setup, teardown)                       \
    wt_run_group_name((argc), (argv), #tests, tests, (setup), (teardown))

/* The threads of this process now (/proc/self/task). */
unsigned wt_threads_now(void);

#endif /* WT_TEST_H */
