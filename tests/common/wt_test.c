/* The test main loop: case globs and --list; a thread count (wt_test.h). */
#include "wt_test.h"

#include <dirent.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int wt_run_tests(int argc, char **argv, const char *group,
                 const struct CMUnitTest *tests, size_t n,
                 CMFixtureFunction setup, CMFixtureFunction teardown)
{
    const char *glob = getenv("WEFT_TEST_CASE");
    size_t matched = 0;

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
