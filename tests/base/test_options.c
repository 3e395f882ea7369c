/*
 * The WEFT_* variables (src/base/options.h): bad values are refused with
 * the variable named, good ones parse, unknown names are warned about.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "base/options.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ------------------------------------------------------------ */

static void unset_all(void)
{
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++)
        unsetenv(weft__opt_info_of((weft__opt)i)->name);
}

static void assert_has(const char *s, const char *part)
{
    if (!strstr(s, part))
        fail_msg("\"%s\" lacks \"%s\"", s, part);
}

/* Load with name=value set: the load's status; the variable is unset after. */
static int load_with(const char *name, const char *value)
{
    int rc;

    unset_all();
    setenv(name, value, 1);
    rc = weft__options_load();
    unsetenv(name);
    return rc;
}

/* name=value is refused, the detail naming it and containing each part. */
static void refused(const char *name, const char *value, const char *part)
{
    char head[128];

    if (load_with(name, value) != WEFT_EINVAL)
        fail_msg("%s=%s was accepted", name, value);
    snprintf(head, sizeof head, *value ? "%s=%s:" : "%s is set but empty", name,
             value);
    assert_has(weft_last_error(), head);
    if (part)
        assert_has(weft_last_error(), part);
}

typedef struct captured {
    unsigned calls;
    weft_log_level level;
    char line[1024];
} captured;

static void capture(weft_log_level level, const char *sub, const char *line,
                    void *user)
{
    captured *c = user;
    (void)sub;
    c->calls++;
    c->level = level;
    weft__strlcpy(c->line, line, sizeof c->line);
}

/* ---- the first read, with no load before it ------------------------------ */

/*
 * Outside runtime creation a bad value goes to the log, and the variable
 * reads as unset. In a child: this must be the process's first read.
 */
static void first_read_reports_bad_values_through_the_log(void **state)
{
    pid_t pid;
    int status;
    (void)state;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        captured c = {0};
        bool on = false;
        unsigned level = 99;

        unset_all();
        setenv("WEFT_CACHE", "maybe", 1);
        setenv("WEFT_LOG", "loud", 1);
        weft_log_set_sink(capture, &c);
        /* unset after a bad value: the table's default (on) */
        if (weft__opt_bool(WEFT__OPT_CACHE, &on) || !on)
            _exit(1);
        if (weft__opt_enum(WEFT__OPT_LOG, &level) || level != WEFT_LOG_WARN)
            _exit(2);
        if (c.calls != 2 || c.level != WEFT_LOG_ERROR ||
            !strstr(c.line, "WEFT_LOG=loud: expected one of trace, debug, "
                            "info, warn, error or off; using the default"))
            _exit(3);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---- bad values ------------------------------------------------------------
 */

static void bad_values_are_refused_naming_the_variable(void **state)
{
    (void)state;

    refused("WEFT_HOST_DEVICES", "abc",
            "expected a whole number from 1 to 256");
    assert_string_equal(weft_last_error(), "WEFT_HOST_DEVICES=abc: expected a "
                                           "whole number from 1 to 256");
    refused("WEFT_HOST_DEVICES", "0", "from 1 to 256");
    refused("WEFT_HOST_DEVICES", "257", "from 1 to 256");
    refused("WEFT_HOST_DEVICES", "-1", NULL);
    refused("WEFT_HOST_DEVICES", " 2", NULL);
    refused("WEFT_HOST_DEVICES", "99999999999999999999999", NULL);
    refused("WEFT_HOST_WORKERS", "many", "from 0 to 64");
    refused("WEFT_HOST_THREADS", "4x", NULL);
    refused("WEFT_NATIVE_GRAPHS", "maybe",
            "expected 1, 0, on, off, yes, no, true or false");
    refused("WEFT_STATS", "2", NULL);
    refused("WEFT_CACHE", "disabled", NULL);
    refused("WEFT_PLACE_SCOPE", "everything", "expected one of driver or all");
    refused("WEFT_PLACE", "random",
            "one of single, round-robin, locality or heft");
    refused("WEFT_EXEC_ORDER", "reverse", "earliest or latest");
    refused("WEFT_LOG", "loud", NULL);
    /* (libweft_mpi reads it itself; the runtime refuses what it would not) */
    refused("WEFT_MPI_CUDA_AWARE", "maybe", "one of auto, 1, 0, on, off");
    assert_int_equal(load_with("WEFT_MPI_CUDA_AWARE", "AUTO"), 0);
    assert_int_equal(load_with("WEFT_MPI_CUDA_AWARE", "off"), 0);
    refused("WEFT_DEVICE_MEM_LIMIT", "lots", "a size in bytes");
    refused("WEFT_DEVICE_MEM_LIMIT", "-64M", NULL);
    refused("WEFT_DEVICE_MEM_LIMIT", "64Q", NULL);
}

/* An empty value is bad for every variable; the detail says how to unset. */
static void an_empty_value_is_refused(void **state)
{
    (void)state;

    refused("WEFT_DEVICES", "", "unset it for the default (cuda,opencl,host)");
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++)
        refused(weft__opt_info_of((weft__opt)i)->name, "", "expected ");
}

/* Every bad variable is named, and the last good snapshot stays current. */
static void a_failed_load_changes_nothing(void **state)
{
    unsigned n = 0;
    (void)state;

    unset_all();
    setenv("WEFT_HOST_DEVICES", "3", 1);
    assert_int_equal(weft__options_load(), 0);
    setenv("WEFT_HOST_DEVICES", "x", 1);
    setenv("WEFT_PLACE", "nowhere", 1);
    assert_int_equal(weft__options_load(), WEFT_EINVAL);
    assert_has(weft_last_error(), "WEFT_HOST_DEVICES=x");
    assert_has(weft_last_error(), "WEFT_PLACE=nowhere");
    assert_true(weft__opt_uint(WEFT__OPT_HOST_DEVICES, &n));
    assert_int_equal(n, 3);
    assert_null(weft__opt_raw(WEFT__OPT_PLACE));
    unset_all();
    assert_int_equal(weft__options_load(), 0);
}

/* weft_runtime_create refuses the same values, with the same detail. */
static void runtime_creation_refuses_bad_values(void **state)
{
    static const char *const bad[][2] = {
        {"WEFT_HOST_DEVICES", "abc"},
        {"WEFT_HOST_WORKERS", "many"},
        {"WEFT_NATIVE_GRAPHS", "maybe"},
        {"WEFT_HOST_DEVICES", "0"},
        {"WEFT_DEVICES", ""},
    };
    weft_runtime *rt = NULL;
    (void)state;

    for (unsigned i = 0; i < WEFT__COUNTOF(bad); i++) {
        unset_all();
        setenv("WEFT_DEVICES", "host", 1);
        setenv(bad[i][0], bad[i][1], 1);
        assert_int_equal(weft_runtime_create(&rt, NULL), WEFT_EINVAL);
        assert_has(weft_last_error(), bad[i][0]);
    }
    /* good values, in any case, reach the runtime */
    unset_all();
    setenv("WEFT_DEVICES", "host", 1);
    setenv("WEFT_HOST_DEVICES", "3", 1);
    setenv("WEFT_PLACE", "Round-Robin", 1);
    setenv("WEFT_PLACE_SCOPE", "ALL", 1);
    assert_int_equal(weft_runtime_create(&rt, NULL), 0);
    assert_int_equal(weft_runtime_device_count(rt), 3);
    assert_int_equal(weft_runtime_destroy(rt), 0);
    /* a device list the table takes as text, named by the runtime */
    unset_all();
    setenv("WEFT_DEVICES", "host,gpu", 1);
    assert_int_equal(weft_runtime_create(&rt, NULL), WEFT_EINVAL);
    assert_has(weft_last_error(), "WEFT_DEVICES=host,gpu: ");
    assert_has(weft_last_error(), "unknown driver 'gpu'");
    unset_all();
}

/* ---- good values ------------------------------------------------------------
 */

static void good_values_parse(void **state)
{
    static const struct {
        const char *text;
        uint64_t bytes;
    } sizes[] = {
        {"4096", 4096},      {"64K", 64 << 10},   {"64M", 64ull << 20},
        {"2G", 2ull << 30},  {"1T", 1ull << 40},  {"1.5G", 3ull << 29},
        {"16KiB", 16 << 10}, {"8mb", 8ull << 20}, {"0", 0},
    };
    static const struct {
        const char *text;
        bool value;
    } bools[] = {
        {"1", true},   {"0", false},  {"on", true},   {"off", false},
        {"yes", true}, {"no", false}, {"true", true}, {"false", false},
        {"ON", true},  {"No", false},
    };
    uint64_t size = 0;
    unsigned u = 0;
    bool b;
    const char *s = NULL;
    (void)state;

    for (unsigned i = 0; i < WEFT__COUNTOF(sizes); i++) {
        unset_all();
        setenv("WEFT_DEVICE_MEM_LIMIT", sizes[i].text, 1);
        assert_int_equal(weft__options_load(), 0);
        assert_true(weft__opt_size(WEFT__OPT_DEVICE_MEM_LIMIT, &size));
        assert_true(size == sizes[i].bytes);
    }
    for (unsigned i = 0; i < WEFT__COUNTOF(bools); i++) {
        unset_all();
        setenv("WEFT_NATIVE_GRAPHS", bools[i].text, 1);
        assert_int_equal(weft__options_load(), 0);
        b = !bools[i].value;
        assert_true(weft__opt_bool(WEFT__OPT_NATIVE_GRAPHS, &b));
        assert_int_equal(b, bools[i].value);
    }
    unset_all();
    setenv("WEFT_PLACE", "Round-Robin", 1);
    setenv("WEFT_PLACE_SCOPE", "all", 1);
    setenv("WEFT_HOST_DEVICES", "256", 1);
    setenv("WEFT_HOST_WORKERS", "0", 1);
    setenv("WEFT_CACHE_DIR", "/tmp/some where", 1);
    assert_int_equal(weft__options_load(), 0);
    assert_true(weft__opt_enum(WEFT__OPT_PLACE, &u));
    assert_int_equal(u, 1);
    assert_string_equal(weft__opt_raw(WEFT__OPT_PLACE), "Round-Robin");
    assert_true(weft__opt_enum(WEFT__OPT_PLACE_SCOPE, &u));
    assert_int_equal(u, 1);
    assert_true(weft__opt_uint(WEFT__OPT_HOST_DEVICES, &u));
    assert_int_equal(u, 256);
    assert_true(weft__opt_uint(WEFT__OPT_HOST_WORKERS, &u));
    assert_int_equal(u, 0);
    assert_true(weft__opt_str(WEFT__OPT_CACHE_DIR, &s));
    assert_string_equal(s, "/tmp/some where");
    unset_all();
    assert_int_equal(weft__options_load(), 0);
}

/* Unset: false, and the table's default, or the caller's where it has none. */
static void unset_variables_give_the_default(void **state)
{
    unsigned u = 77;
    bool b = false;
    const char *s = NULL;
    uint64_t size = 5;
    (void)state;

    unset_all();
    assert_int_equal(weft__options_load(), 0);
    assert_false(weft__opt_enum(WEFT__OPT_PLACE, &u));
    assert_int_equal(u, 3); /* heft */
    assert_false(weft__opt_bool(WEFT__OPT_CACHE, &b));
    assert_true(b);
    assert_false(weft__opt_str(WEFT__OPT_DEVICES, &s));
    assert_string_equal(s, "cuda,opencl,host");
    assert_false(weft__opt_str(WEFT__OPT_CUDA_LIBRARY, &s));
    assert_string_equal(s, "libcuda.so.1");
    assert_false(weft__opt_size(WEFT__OPT_DEVICE_MEM_LIMIT, &size));
    assert_true(size == 0);
    u = 77;
    assert_false(weft__opt_uint(WEFT__OPT_HOST_WORKERS, &u));
    assert_int_equal(u, 77); /* no fixed default: the caller's */
    b = true;
    assert_false(weft__opt_bool(WEFT__OPT_NATIVE_GRAPHS, &b));
    assert_true(b);
    s = "mine";
    assert_false(weft__opt_str(WEFT__OPT_TRACE, &s));
    assert_string_equal(s, "mine");
    assert_null(weft__opt_raw(WEFT__OPT_DEVICES));
}

/* WEFT_LOG's words are weft_log_level's, in order; a load applies it. */
static void log_level_follows_weft_log(void **state)
{
    static const char *const words[] = {"trace", "debug", "info",
                                        "warn",  "error", "off"};
    (void)state;

    for (unsigned i = 0; i < WEFT__COUNTOF(words); i++) {
        unset_all();
        setenv("WEFT_LOG", words[i], 1);
        assert_int_equal(weft__options_load(), 0);
        assert_int_equal(weft_log_get_level(), (int)i);
    }
    unset_all();
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(weft_log_get_level(), WEFT_LOG_WARN);
}

/* ---- the table ------------------------------------------------------------
 */

static void every_variable_is_described(void **state)
{
    char accepted[512];
    (void)state;

    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        const weft__opt_info *o = weft__opt_info_of((weft__opt)i);

        assert_int_equal(strncmp(o->name, "WEFT_", 5), 0);
        assert_true(strlen(o->help) > 10);
        weft__opt_accepted((weft__opt)i, accepted, sizeof accepted);
        assert_true(strlen(accepted) > 2);
        /* a default is a good value (the load asserts it too) */
        assert_int_equal(weft__opt_check((weft__opt)i, o->dflt), 0);
        for (unsigned j = 0; j < i; j++)
            assert_string_not_equal(o->name,
                                    weft__opt_info_of((weft__opt)j)->name);
    }
    /* enum words in the order of the public enums (options.h) */
    for (unsigned i = 0; i < 4; i++) {
        const char *name = weft_place_policy_name(WEFT_PLACE_SINGLE + i);
        unsigned w = 99;

        assert_non_null(name);
        assert_int_equal(weft__opt_check(WEFT__OPT_PLACE, name), 0);
        setenv("WEFT_PLACE", name, 1);
        assert_int_equal(weft__options_load(), 0);
        assert_true(weft__opt_enum(WEFT__OPT_PLACE, &w));
        assert_int_equal(w, i);
    }
    unset_all();
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(weft__opt_check(WEFT__OPT_HOST_DEVICES, "12"), 0);
    assert_int_equal(weft__opt_check(WEFT__OPT_HOST_DEVICES, "abc"),
                     WEFT_EINVAL);
}

/* ---- unknown names
 * ------------------------------------------------------------ */

static void an_unknown_variable_is_a_warning(void **state)
{
    captured c = {0};
    (void)state;

    assert_int_equal(weft__opt_closest("WEFT_HOST_WORKER"),
                     WEFT__OPT_HOST_WORKERS);
    assert_int_equal(weft__opt_closest("WEFT_PLCAE"), WEFT__OPT_PLACE);
    assert_int_equal(weft__opt_closest("WEFT_DEVICE"), WEFT__OPT_DEVICES);
    assert_int_equal(weft__opt_closest("weft_trace"), WEFT__OPT_TRACE);

    unset_all();
    weft_log_set_sink(capture, &c);
    setenv("WEFT_HOST_WORKER", "2", 1);
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(c.calls, 1);
    assert_int_equal(c.level, WEFT_LOG_WARN);
    assert_string_equal(c.line, "WEFT_HOST_WORKER is not a weft variable "
                                "(did you mean WEFT_HOST_WORKERS?)");
    /* once per name */
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(c.calls, 1);
    /* variables of weft's tests are not weft's library's, nor warned of */
    setenv("WEFT_KEEP_TEST_FILES", "1", 1);
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(c.calls, 1);
    unsetenv("WEFT_KEEP_TEST_FILES");
    unsetenv("WEFT_HOST_WORKER");
    weft_log_set_sink(NULL, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        /* first: it needs a process that has read no option yet */
        cmocka_unit_test(first_read_reports_bad_values_through_the_log),
        cmocka_unit_test(bad_values_are_refused_naming_the_variable),
        cmocka_unit_test(an_empty_value_is_refused),
        cmocka_unit_test(a_failed_load_changes_nothing),
        cmocka_unit_test(runtime_creation_refuses_bad_values),
        cmocka_unit_test(good_values_parse),
        cmocka_unit_test(unset_variables_give_the_default),
        cmocka_unit_test(log_level_follows_weft_log),
        cmocka_unit_test(every_variable_is_described),
        cmocka_unit_test(an_unknown_variable_is_a_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
