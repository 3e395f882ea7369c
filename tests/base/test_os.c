/*
 * The OS layer (src/base/os.h): threads, CPU sets, dynamic libraries,
 * directories.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/options.h"
#include "base/os.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

static void assert_has(const char *s, const char *part)
{
    if (!strstr(s, part))
        fail_msg("\"%s\" lacks \"%s\"", s, part);
}

static bool is_dir(const char *path)
{
    struct stat st;

    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* ---- threads ------------------------------------------------------------ */

/* Blocks until a byte arrives on the pipe; returns arg. */
static void *wait_for_byte(void *arg)
{
    int *fds = arg;
    char c;

    return read(fds[0], &c, 1) == 1 ? arg : NULL;
}

static void threads_start_named_and_fail_on_demand(void **state)
{
    char name[16] = "";
    int fds[2];
    pthread_t t;
    void *ret;
    (void)state;

    assert_int_equal(pipe(fds), 0);
    assert_int_equal(weft__thread_start(&t, "weft-test-thread-long-name",
                                        "test.thread", wait_for_byte, fds),
                     0);
    assert_int_equal(pthread_getname_np(t, name, sizeof name), 0);
    assert_string_equal(name, "weft-test-threa"); /* 15 characters kept */
    assert_int_equal(write(fds[1], "x", 1), 1);
    assert_int_equal(pthread_join(t, &ret), 0);
    assert_ptr_equal(ret, fds);

    weft__fault_arm(1, "test.thread");
    assert_int_equal(
        weft__thread_start(&t, "weft-test", "test.thread", wait_for_byte, fds),
        EAGAIN);
    assert_true(weft__fault_fired());
    weft__fault_disarm();
    close(fds[0]);
    close(fds[1]);
}

/* ---- CPU sets ------------------------------------------------------------ */

static void cpusets_count_and_bind(void **state)
{
    hwloc_topology_t topo;
    hwloc_bitmap_t old;
    unsigned n;
    (void)state;

    /* without a topology: the online processors, no binding, no set */
    assert_true(weft__cpuset_count(NULL, NULL) >= 1);
    assert_null(weft__cpuset_near(NULL, "0-1"));
    weft__thread_bind(NULL, NULL);
    assert_null(weft__thread_bind_save(NULL, NULL));
    weft__thread_rebind(NULL, NULL);

    assert_int_equal(hwloc_topology_init(&topo), 0);
    assert_int_equal(hwloc_topology_load(topo), 0);
    n = weft__cpuset_count(topo, NULL);
    assert_int_equal(
        n, hwloc_bitmap_weight(hwloc_topology_get_topology_cpuset(topo)));
    /* the whole machine is no locality */
    {
        char list[256];

        hwloc_bitmap_list_snprintf(list, sizeof list,
                                   hwloc_topology_get_topology_cpuset(topo));
        assert_null(weft__cpuset_near(topo, list));
        assert_null(weft__cpuset_near(topo, ""));
    }
    /* binding to the machine and back leaves the thread where it was */
    old =
        weft__thread_bind_save(topo, hwloc_topology_get_topology_cpuset(topo));
    weft__thread_rebind(topo, old);
    weft__thread_bind(topo, hwloc_topology_get_topology_cpuset(topo));
    hwloc_topology_destroy(topo);
}

/* ---- dynamic libraries ----------------------------------------------------
 */

static void libraries_open_with_a_detail(void **state)
{
    void *lib = (void *)1;
    double (*cosine)(double);
    void *p;
    (void)state;

    assert_int_equal(
        weft__dl_open("libweft-no-such-library.so", "test.dl", &lib),
        WEFT_ENOTSUP);
    assert_null(lib);
    assert_has(weft_last_error(), "libweft-no-such-library.so");

    assert_int_equal(weft__dl_open("libm.so.6", "test.dl", &lib), 0);
    assert_non_null(lib);
    p = weft__dl_sym(lib, "cos", "test.dlsym(cos)");
    assert_non_null(p);
    memcpy(&cosine, &p, sizeof p);
    assert_true(cosine(0.0) == 1.0);
    assert_null(weft__dl_sym(lib, "weft_no_such_symbol", NULL));
    weft__fault_arm(1, "test.dlsym");
    assert_null(weft__dl_sym(lib, "cos", "test.dlsym(cos)"));
    weft__fault_disarm();
    weft__dl_close(lib);
    weft__dl_close(NULL);

    weft__fault_arm(1, "test.dl");
    assert_int_equal(weft__dl_open("libm.so.6", "test.dl", &lib), WEFT_ENOTSUP);
    assert_string_equal(weft_last_error(), "injected failure");
    weft__fault_disarm();
}

/* ---- directories ------------------------------------------------------------
 */

static void directories_are_made_with_their_parents(void **state)
{
    char path[512], file[512];
    FILE *f;
    (void)state;

    snprintf(path, sizeof path, "%s/a/b/c", tmpdir);
    assert_int_equal(weft__dir_make(path), 0);
    assert_true(is_dir(path));
    assert_int_equal(weft__dir_make(path), 0); /* already there */

    snprintf(file, sizeof file, "%s/file", tmpdir);
    f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    snprintf(path, sizeof path, "%s/file/sub", tmpdir);
    errno = 0;
    assert_int_equal(weft__dir_make(path), -1);
    assert_int_equal(errno, ENOTDIR);
}

static void cache_dir(char *buf, size_t size, int want)
{
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(weft__cache_dir(buf, size), want);
}

static void the_cache_directory_is_resolved_in_order(void **state)
{
    const char *home = getenv("HOME");
    char keep_home[512] = "";
    char buf[512];
    (void)state;

    if (home)
        weft__strlcpy(keep_home, home, sizeof keep_home);
    unsetenv("WEFT_CACHE");
    setenv("WEFT_CACHE_DIR", "/tmp/weft-cache-here", 1);
    setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
    setenv("HOME", "/tmp/home", 1);
    cache_dir(buf, sizeof buf, 0);
    assert_string_equal(buf, "/tmp/weft-cache-here");

    unsetenv("WEFT_CACHE_DIR");
    cache_dir(buf, sizeof buf, 0);
    assert_string_equal(buf, "/tmp/xdg/weft");

    setenv("XDG_CACHE_HOME", "", 1); /* empty: as if unset */
    cache_dir(buf, sizeof buf, 0);
    assert_string_equal(buf, "/tmp/home/.cache/weft");

    cache_dir(buf, 8, WEFT_ENOTFOUND); /* does not fit */

    setenv("WEFT_CACHE", "off", 1);
    cache_dir(buf, sizeof buf, WEFT_ENOTFOUND);
    unsetenv("WEFT_CACHE");

    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    cache_dir(buf, sizeof buf, WEFT_ENOTFOUND);

    if (keep_home[0])
        setenv("HOME", keep_home, 1);
    assert_int_equal(weft__options_load(), 0);
}

static int remove_tree(const char *dir)
{
    char cmd[600];

    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(threads_start_named_and_fail_on_demand),
        cmocka_unit_test(cpusets_count_and_bind),
        cmocka_unit_test(libraries_open_with_a_detail),
        cmocka_unit_test(directories_are_made_with_their_parents),
        cmocka_unit_test(the_cache_directory_is_resolved_in_order),
    };
    const char *base = getenv("TMPDIR");
    int rc;

    snprintf(tmpdir, sizeof tmpdir, "%s/weft-os-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    rc = cmocka_run_group_tests(tests, NULL, NULL);
    /* our own directory, made above by mkdtemp */
    if (remove_tree(tmpdir) != 0)
        fprintf(stderr, "could not remove %s\n", tmpdir);
    return rc;
}
