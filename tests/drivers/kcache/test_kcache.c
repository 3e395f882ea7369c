/*
 * The compiled-kernel cache and the portable dialect: keys, entries,
 * corruption, and (where an OpenCL device exists) a second build that loads
 * instead of compiling, and one portable kernel run through OpenCL.
 */
#include "wt_test.h"

#include "base/options.h"
#include "drivers/hostcc.h"
#include "drivers/kcache.h"
#include "runtime.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static char cache_dir[256];

static int setup(void **state)
{
    (void)state;
    snprintf(cache_dir, sizeof cache_dir, "/tmp/weft-kcache-test-%ld",
             (long)getpid());
    setenv("WEFT_CACHE_DIR", cache_dir, 1);
    unsetenv("WEFT_CACHE");
    /* read again: the options are read once, not at every use */
    return weft__options_load();
}

static int teardown(void **state)
{
    char cmd[300];
    (void)state;
    snprintf(cmd, sizeof cmd, "rm -rf %s", cache_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void make_key(weft__kcache_key *k, const char *a, const char *b)
{
    const void *parts[] = {a, b};
    const size_t lens[] = {(size_t)-1, (size_t)-1};

    weft__kcache_key_make(k, parts, lens, 2);
}

static void keys_separate_their_parts(void **state)
{
    weft__kcache_key k1, k2, k3;
    (void)state;

    make_key(&k1, "ab", "c");
    make_key(&k2, "a", "bc");
    make_key(&k3, "ab", "c");
    assert_string_not_equal(k1.hex, k2.hex);
    assert_string_equal(k1.hex, k3.hex);
    assert_int_equal(strlen(k1.hex), 32);
}

static void entry_round_trip(void **state)
{
    weft__kcache_key k;
    weft__kcache_stats before, after;
    weft__source_kind kind;
    void *bytes;
    size_t size;
    (void)state;

    make_key(&k, "round", "trip");
    weft__kcache_get_stats(&before);
    assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, NULL),
                     WEFT_ENOTFOUND);
    assert_int_equal(
        weft__kcache_store(&k, "binary\0bytes", 12, WEFT__SRC_CL_BINARY, NULL),
        0);
    assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, NULL), 0);
    assert_int_equal(size, 12);
    assert_int_equal(kind, WEFT__SRC_CL_BINARY);
    assert_memory_equal(bytes, "binary\0bytes", 12);
    weft__free(bytes);
    weft__kcache_get_stats(&after);
    assert_int_equal(after.hits - before.hits, 1);
    assert_int_equal(after.misses - before.misses, 1);
    assert_int_equal(after.stores - before.stores, 1);
}

/* An entry keeps the build log stored with it; an empty one is none. */
static void entry_keeps_its_log(void **state)
{
    weft__kcache_key k;
    weft__source_kind kind;
    void *bytes;
    size_t size;
    char *log = (char *)"stale";
    (void)state;

    make_key(&k, "with", "log");
    assert_int_equal(weft__kcache_store(&k, "bin", 3, WEFT__SRC_CL_BINARY,
                                        "warning: x is unused\n"),
                     0);
    assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, &log), 0);
    assert_int_equal(size, 3);
    assert_memory_equal(bytes, "bin", 3);
    assert_string_equal(log, "warning: x is unused\n");
    weft__free(bytes);
    weft__free(log);
    /* Without asking for it, the log is still checked, not returned. */
    assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, NULL), 0);
    weft__free(bytes);

    make_key(&k, "without", "log");
    assert_int_equal(weft__kcache_store(&k, "bin", 3, WEFT__SRC_CL_BINARY, ""),
                     0);
    log = (char *)"stale";
    assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, &log), 0);
    assert_null(log);
    weft__free(bytes);
}

/* Damage an entry's file in one of several ways; each is a miss. */
static void corrupt_entries_are_removed(void **state)
{
    static const char *const how[] = {"flip", "truncate", "magic", "grow"};
    weft__kcache_key k;
    weft__kcache_stats before, after;
    weft__source_kind kind;
    char path[512];
    void *bytes;
    size_t size;
    struct stat st;
    (void)state;

    for (unsigned i = 0; i < 4; i++) {
        FILE *f;

        make_key(&k, "corrupt", how[i]);
        assert_int_equal(weft__kcache_store(&k, "0123456789abcdef", 16,
                                            WEFT__SRC_PTX,
                                            i == 2 ? NULL : "a log"),
                         0);
        snprintf(path, sizeof path, "%s/%s.bin", cache_dir, k.hex);
        assert_int_equal(stat(path, &st), 0);
        if (i == 1) {
            assert_int_equal(truncate(path, st.st_size - 3), 0);
        } else {
            f = fopen(path, i == 3 ? "ab" : "r+b");
            assert_non_null(f);
            if (i == 0)
                fseek(f, st.st_size - 1, SEEK_SET);
            fputc('X', f);
            fclose(f);
        }
        weft__kcache_get_stats(&before);
        assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, NULL),
                         WEFT_ENOTFOUND);
        weft__kcache_get_stats(&after);
        assert_int_equal(after.corrupt - before.corrupt, 1);
        assert_int_not_equal(stat(path, &st), 0); /* removed */
    }
}

static void cache_can_be_turned_off(void **state)
{
    weft__kcache_key k;
    weft__source_kind kind;
    void *bytes;
    size_t size;
    (void)state;

    make_key(&k, "off", "switch");
    setenv("WEFT_CACHE", "off", 1);
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(weft__kcache_store(&k, "x", 1, WEFT__SRC_PTX, "log"), 0);
    assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, NULL),
                     WEFT_ENOTFOUND);
    unsetenv("WEFT_CACHE");
    assert_int_equal(weft__options_load(), 0);
    assert_int_equal(weft__kcache_load(&k, &bytes, &size, &kind, NULL),
                     WEFT_ENOTFOUND); /* nothing was written while off */
}

static const char portable_src[] =
    "WEFT_KERNEL void scale(WEFT_GLOBAL float *x, float a, long n)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < n) x[i] = x[i] * a + (float)weft_group_id(0);\n"
    "}\n";

static void portable_translation(void **state)
{
    char *cl = NULL, *cu = NULL;
    (void)state;

    assert_int_equal(
        weft__portable_translate(portable_src, WEFT__SRC_OPENCL_C, NULL, &cl),
        0);
    assert_int_equal(
        weft__portable_translate(portable_src, WEFT__SRC_CUDA_CXX, NULL, &cu),
        0);
    assert_non_null(strstr(cl, "#define WEFT_KERNEL __kernel"));
    assert_non_null(strstr(cu, "extern \"C\" __global__"));
    assert_non_null(strstr(cl, portable_src));
    assert_non_null(strstr(cu, portable_src));
    weft__free(cl);
    weft__free(cu);
    assert_int_equal(
        weft__portable_translate(portable_src, WEFT__SRC_PTX, NULL, &cl),
        WEFT_EINVAL);

    /* Host C: the source, a wrapper per kernel, the table of kernels. */
    assert_int_equal(
        weft__portable_translate(portable_src, WEFT__SRC_HOST_C, NULL, &cl), 0);
    assert_non_null(strstr(cl, portable_src));
    assert_non_null(strstr(cl, "{\"scale\", weft__g_scale, 3,"));
    assert_non_null(strstr(cl, "weft__cc_nkernels = 1;"));
    weft__free(cl);
    /* a prototype, comments and strings are no kernels; a WEFT_LOCAL
     * parameter is group-local scratch */
    assert_int_equal(
        weft__portable_translate(
            "WEFT_KERNEL void p(int n);\n"
            "/* WEFT_KERNEL void c(int n) {} */\n"
            "#define S \"WEFT_KERNEL void s(int n) {}\"\n"
            "WEFT_KERNEL void p(int n) { (void)n; }\n"
            "WEFT_KERNEL void q(WEFT_LOCAL float *t) { t[0] = 1; }\n",
            WEFT__SRC_HOST_C, NULL, &cl),
        0);
    assert_non_null(strstr(cl, "weft__cc_nkernels = 2;"));
    assert_non_null(strstr(cl, "{\"q\", weft__g_q, 1,"));
    assert_non_null(strstr(cl, "weft__p_q[] = {9}"));
    assert_null(strstr(cl, "weft__g_c"));
    assert_null(strstr(cl, "weft__g_s"));
    weft__free(cl);
    cl = NULL;
    assert_int_equal(weft__portable_translate("WEFT_KERNEL void a(int x[4]) {}",
                                              WEFT__SRC_HOST_C, NULL, &cl),
                     WEFT_EBUILD);
    assert_non_null(strstr(weft_last_error(), "array parameter"));
    assert_int_equal(weft__portable_translate("WEFT_KERNEL void b(int n) {",
                                              WEFT__SRC_HOST_C, NULL, &cl),
                     WEFT_EBUILD);
    assert_null(cl);
}

/* On an OpenCL device: build twice (the second is a hit), run the kernel. */
/* The parameter types a portable signature declares, by the dialect's rules. */
static void portable_parameter_types(void **state)
{
    static const char src[] =
        "/* WEFT_KERNEL void fake(int a) {} */\n"
        "typedef struct { int a; } pair;\n"
        "WEFT_KERNEL void decl(float x);\n"
        "WEFT_KERNEL void k(WEFT_GLOBAL const float *x, weft_u32 n,\n"
        "                   unsigned long m, double a, WEFT_LOCAL int *t,\n"
        "                   pair p, WEFT_GLOBAL pair *q) { }\n"
        "WEFT_KERNEL void none(void) { }\n"
        "WEFT_KERNEL void bad(int x[4]) { }\n";
    static const weft_param_type want[] = {
        WEFT_PARAM_BUFFER, WEFT_PARAM_U32,   WEFT_PARAM_U64,   WEFT_PARAM_F64,
        WEFT_PARAM_LOCAL,  WEFT_PARAM_BYTES, WEFT_PARAM_BUFFER};
    weft_param_type *t = NULL;
    unsigned n = 99;
    (void)state;

    assert_int_equal(weft__portable_params(src, "k", &t, &n), 0);
    assert_int_equal(n, 7);
    for (unsigned i = 0; i < n; i++)
        assert_int_equal(t[i], want[i]);
    weft__free(t);
    assert_int_equal(weft__portable_params(src, "none", &t, &n), 0);
    assert_int_equal(n, 0);
    weft__free(t);
    /* a declaration, a comment, a name not there: not found, no error */
    weft_clear_error();
    assert_int_equal(weft__portable_params(src, "decl", &t, &n),
                     WEFT_ENOTFOUND);
    assert_int_equal(weft__portable_params(src, "fake", &t, &n),
                     WEFT_ENOTFOUND);
    assert_int_equal(weft__portable_params(src, "nosuch", &t, &n),
                     WEFT_ENOTFOUND);
    assert_null(t);
    assert_int_equal(weft_last_error()[0], '\0');
    assert_int_equal(weft__portable_params(src, "bad", &t, &n), WEFT_EBUILD);
    assert_non_null(strstr(weft_last_error(), "array parameters"));
    assert_null(t);
}

static void opencl_second_build_hits(void **state)
{
    weft_runtime *rt = NULL;
    weft__context *ctx = NULL;
    weft__module *m1 = NULL, *m2 = NULL, *m3 = NULL;
    weft__kcache_stats s0, s1, s2;
    weft__kernel *k;
    weft__queue *q;
    weft__mem *buf;
    weft__device *dev;
    char *cl;
    float x[100];
    float a = 2.0f;
    long n = 100;
    (void)state;

    if (weft_runtime_create(&rt, NULL) < 0 || !weft_runtime_device_count(rt)) {
        weft_runtime_destroy(rt);
        printf("skipped: opencl_second_build_hits: no OpenCL device\n");
        skip();
    }
    dev = weft__runtime_device(rt, 0);
    if (!dev->drv->module_binary) {
        weft_runtime_destroy(rt);
        printf("skipped: opencl_second_build_hits: the OpenCL driver keeps "
               "no binaries\n");
        skip();
    }
    assert_int_equal(weft__drv_context_create(dev, &ctx), 0);
    assert_int_equal(
        weft__portable_translate(portable_src, WEFT__SRC_OPENCL_C, NULL, &cl),
        0);
    weft__module_source src = {WEFT__SRC_OPENCL_C, cl, 0, NULL, "scale"};
    weft__kcache_get_stats(&s0);
    assert_int_equal(weft__drv_module_create(ctx, &src, &m1), 0);
    weft__kcache_get_stats(&s1);
    assert_int_equal(s1.stores - s0.stores, 1);
    assert_int_equal(weft__drv_module_create(ctx, &src, &m2), 0);
    weft__kcache_get_stats(&s2);
    assert_int_equal(s2.hits - s1.hits, 1);
    assert_int_equal(s2.stores - s1.stores, 0);

    /* the module loaded from the cache runs the kernel correctly */
    for (int i = 0; i < 100; i++)
        x[i] = (float)i;
    assert_int_equal(weft__drv_kernel_get(m2, "scale", &k), 0);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, sizeof x, &buf), 0);
    assert_int_equal(weft__drv_copy_h2d(q, buf, 0, x, sizeof x), 0);
    weft__karg args[3] = {
        {.type = WEFT_PARAM_BUFFER, .u.buf = {buf, 0}},
        {.type = WEFT_PARAM_F32, .size = 4, .u.value = &a},
        {.type = WEFT_PARAM_I64, .size = 8, .u.value = &n},
    };
    weft__grid grid = {{4, 1, 1}, {25, 1, 1}, 0};
    assert_int_equal(weft__drv_launch(q, k, &grid, args, 3), 0);
    assert_int_equal(weft__drv_copy_d2h(q, x, buf, 0, sizeof x), 0);
    assert_int_equal(weft__drv_queue_sync(q), 0);
    for (int i = 0; i < 100; i++)
        assert_true(x[i] == (float)i * 2.0f + (float)(i / 25));

    /* a corrupt entry is rebuilt, not trusted */
    {
        char cmd[600];
        snprintf(cmd, sizeof cmd,
                 "for f in %s/*.bin; do printf garbage | dd of=$f bs=1 "
                 "seek=60 conv=notrunc 2>/dev/null; done",
                 cache_dir);
        assert_int_equal(system(cmd), 0);
    }
    assert_int_equal(weft__drv_module_create(ctx, &src, &m3), 0);

    weft__free(cl);
    assert_int_equal(weft__drv_mem_free(buf), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
    assert_int_equal(weft__drv_module_destroy(m1), 0);
    assert_int_equal(weft__drv_module_destroy(m2), 0);
    assert_int_equal(weft__drv_module_destroy(m3), 0);
    assert_int_equal(weft__drv_context_destroy(ctx), 0);
    weft_runtime_destroy(rt);
}

/* Set (value non-NULL) or unset name, keeping its old value in old. */
static void env_swap(const char *name, const char *value, char *old, size_t n,
                     int *had)
{
    const char *v = getenv(name);

    *had = v != NULL;
    snprintf(old, n, "%s", v ? v : "");
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

static void env_restore(const char *name, const char *old, int had)
{
    if (had)
        setenv(name, old, 1);
    else
        unsetenv(name);
}

/* Run kernel scale of m on device i of rt over 100 items. */
static void host_run_scale(weft_runtime *rt, weft_module *m, unsigned i)
{
    weft_kernel *wk;
    weft__kernel *k;
    weft__context *ctx;
    weft__queue *q;
    weft__mem *buf;
    float x[100], a = 2.0f;
    long n = 100;

    assert_int_equal(weft_module_get_kernel(m, "scale", &wk), 0);
    k = weft__kernel_impl(wk, i);
    assert_non_null(k);
    for (int j = 0; j < 100; j++)
        x[j] = (float)j;
    assert_int_equal(weft__runtime_context(rt, i, &ctx), 0);
    assert_int_equal(weft__drv_queue_create(ctx, NULL, &q), 0);
    assert_int_equal(weft__drv_mem_alloc(ctx, sizeof x, &buf), 0);
    assert_int_equal(weft__drv_copy_h2d(q, buf, 0, x, sizeof x), 0);
    weft__karg args[3] = {
        {.type = WEFT_PARAM_BUFFER, .u.buf = {buf, 0}},
        {.type = WEFT_PARAM_F32, .size = 4, .u.value = &a},
        {.type = WEFT_PARAM_I64, .size = 8, .u.value = &n},
    };
    weft__grid grid = {{4, 1, 1}, {25, 1, 1}, 0};
    assert_int_equal(weft__drv_launch(q, k, &grid, args, 3), 0);
    assert_int_equal(weft__drv_copy_d2h(q, x, buf, 0, sizeof x), 0);
    assert_int_equal(weft__drv_queue_sync(q), 0);
    for (int j = 0; j < 100; j++)
        assert_true(x[j] == (float)j * 2.0f + (float)(j / 25));
    assert_int_equal(weft__drv_mem_free(buf), 0);
    assert_int_equal(weft__drv_queue_destroy(q), 0);
}

/*
 * Host and sim devices: a portable module is compiled once (the sim takes
 * the host's entry), and a second runtime loads the shared object from
 * the cache without running the compiler.
 */
static void host_second_runtime_loads_from_cache(void **state)
{
    char src[512], od[256], os[256];
    int hd, hs;
    long c0, c1, c2;
    weft__kcache_stats s0, s1, s2;
    weft_runtime *rt;
    weft_module *m;
    (void)state;

    /* a source of its own, so that the first build is a miss */
    snprintf(src, sizeof src, "/* %ld.%ld */\n%s", (long)getpid(),
             (long)time(NULL), portable_src);
    env_swap("WEFT_DEVICES", "host,sim", od, sizeof od, &hd);
    env_swap("WEFT_SIM", "devices=1,real_data=1", os, sizeof os, &hs);
    c0 = weft__hostcc_compiles();
    weft__kcache_get_stats(&s0);
    assert_int_equal(weft_runtime_create(&rt, NULL), 0);
    assert_int_equal(weft_runtime_device_count(rt), 2);
    assert_int_equal(weft_module_create_portable(rt, src, NULL, &m), 0);
    c1 = weft__hostcc_compiles();
    weft__kcache_get_stats(&s1);
    assert_int_equal(c1 - c0, 1);
    assert_int_equal(s1.stores - s0.stores, 1);
    assert_int_equal(s1.hits - s0.hits, 1); /* the sim's */
    host_run_scale(rt, m, 0);
    host_run_scale(rt, m, 1);
    assert_int_equal(weft_module_destroy(m), 0);
    assert_int_equal(weft_runtime_destroy(rt), 0);

    assert_int_equal(weft_runtime_create(&rt, NULL), 0);
    assert_int_equal(weft_module_create_portable(rt, src, NULL, &m), 0);
    c2 = weft__hostcc_compiles();
    weft__kcache_get_stats(&s2);
    assert_int_equal(c2, c1); /* no compiler run */
    assert_int_equal(s2.hits - s1.hits, 2);
    assert_int_equal(s2.stores, s1.stores);
    host_run_scale(rt, m, 0);
    host_run_scale(rt, m, 1);
    printf("# compiler runs: %ld, then %ld in the second runtime\n", c1 - c0,
           c2 - c1);
    assert_int_equal(weft_module_destroy(m), 0);
    assert_int_equal(weft_runtime_destroy(rt), 0);
    env_restore("WEFT_DEVICES", od, hd);
    env_restore("WEFT_SIM", os, hs);
}

/*
 * No C compiler: a host device declines portable source with WEFT_ENOTSUP
 * naming what was tried, and a module nothing else can build is
 * WEFT_ENODEV carrying that reason.
 */
static void host_missing_compiler(void **state)
{
    char od[256], oc[256], op[4096], id[256];
    int hd, hc, hp;
    long c0 = weft__hostcc_compiles();
    weft_runtime *rt;
    weft_module *m = NULL;
    (void)state;

    env_swap("WEFT_DEVICES", "host", od, sizeof od, &hd);
    env_swap("CC", "/nonexistent/cc", oc, sizeof oc, &hc);
    assert_int_equal(weft__hostcc_identity(id, sizeof id), WEFT_ENOTSUP);
    assert_non_null(strstr(weft_last_error(), "/nonexistent/cc"));
    assert_int_equal(weft_runtime_create(&rt, NULL), 0);
    assert_int_equal(weft_module_create_portable(rt, portable_src, NULL, &m),
                     WEFT_ENODEV);
    printf("# without a compiler: %s\n", weft_last_error());
    assert_non_null(strstr(weft_last_error(), "/nonexistent/cc"));
    assert_non_null(strstr(weft_last_error(), "C compiler"));
    assert_null(m);

    /* CC unset: cc on PATH */
    unsetenv("CC");
    env_swap("PATH", "/nonexistent", op, sizeof op, &hp);
    assert_int_equal(weft_module_create_portable(rt, portable_src, NULL, &m),
                     WEFT_ENODEV);
    assert_non_null(strstr(weft_last_error(), "cc"));
    assert_non_null(strstr(weft_last_error(), "PATH"));
    env_restore("PATH", op, hp);
    env_restore("CC", oc, hc);
    assert_int_equal(weft__hostcc_compiles(), c0);
    assert_int_equal(weft_runtime_destroy(rt), 0);
    env_restore("WEFT_DEVICES", od, hd);
}

/* The key of the one entry of the cache directory not in `seen` (a
 * NUL-separated list of names), or 0 if there is none. */
static int new_entry(const char *seen, size_t nseen, weft__kcache_key *k)
{
    DIR *d = opendir(cache_dir);
    struct dirent *e;
    int found = 0;

    assert_non_null(d);
    while ((e = readdir(d))) {
        size_t at = 0;
        int old = 0;
        char half[17];

        if (strlen(e->d_name) != 36 || strcmp(e->d_name + 32, ".bin") != 0)
            continue;
        for (; at < nseen && !old; at += strlen(seen + at) + 1)
            old = strcmp(seen + at, e->d_name) == 0;
        if (old)
            continue;
        assert_false(found); /* one new entry */
        found = 1;
        memcpy(k->hex, e->d_name, 32);
        k->hex[32] = '\0';
        memcpy(half, e->d_name, 16);
        half[16] = '\0';
        k->h[0] = strtoull(half, NULL, 16);
        memcpy(half, e->d_name + 16, 16);
        k->h[1] = strtoull(half, NULL, 16);
    }
    closedir(d);
    return found;
}

/* The names of the cache directory's entries, NUL-separated, into buf. */
static size_t entries(char *buf, size_t cap)
{
    DIR *d = opendir(cache_dir);
    struct dirent *e;
    size_t n = 0;

    if (!d)
        return 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name) + 1;

        assert_true(n + l <= cap);
        memcpy(buf + n, e->d_name, l);
        n += l;
    }
    closedir(d);
    return n;
}

/* The build log of device 0 of rt for mod, malloc'd. */
static char *log_of(weft_runtime *rt, weft_module *mod)
{
    const weft_device *dev = weft_runtime_device(rt, 0);
    size_t len = 0;
    char *log;

    assert_int_equal(weft_module_build_log(mod, dev, NULL, 0, &len), 0);
    log = malloc(len + 1);
    assert_non_null(log);
    assert_int_equal(weft_module_build_log(mod, dev, log, len + 1, NULL), 0);
    return log;
}

/*
 * On device 0 (PoCL; CUDA in kcache_cuda, where the source goes through
 * NVRTC), through the public API: a portable module whose
 * build warns (#warning) is built by one runtime, and loaded from the
 * cache by a second: its build log is the first build's, warning and
 * file name included, as stored in the entry. PoCL repeats a program's
 * warnings when it loads its binary, so the entry's log is then swapped
 * for another (the same binary stored again) and a third runtime's module
 * must say that: the log comes from the entry, not from the load. A
 * constant unique to the run keeps PoCL's own cache and earlier runs out
 * of it.
 */
static void build_log_from_cache(void **state)
{
    weft_runtime *rt = NULL;
    weft_module *mod;
    weft__kcache_stats s0, s1, s2;
    weft__kcache_key key;
    weft__source_kind kind;
    void *bin;
    size_t size, nseen;
    char src[512], *log1, *log2, *stored, seen[8192];
    weft_module_source v = {WEFT_SOURCE_PORTABLE, src, 0, NULL, "warner"};
    (void)state;

    if (weft_runtime_create(&rt, NULL) < 0 || !weft_runtime_device_count(rt) ||
        !weft__runtime_device(rt, 0)->drv->module_binary) {
        weft_runtime_destroy(rt);
        printf("skipped: build_log_from_cache: no device that keeps "
               "binaries\n");
        skip();
    }
    snprintf(src, sizeof src,
             "#warning weft_kcache_log_check\n"
             "WEFT_KERNEL void twice(WEFT_GLOBAL float *x, long n) {\n"
             "    long i = weft_global_id(0);\n"
             "    if (i < n) x[i] *= 2.0f + 0.0f * %ld.0f;\n"
             "}\n",
             (long)getpid() * 100000 + (long)(time(NULL) % 100000));
    nseen = entries(seen, sizeof seen);
    weft__kcache_get_stats(&s0);
    assert_int_equal(weft_module_create(rt, &v, 1, &mod), 0);
    weft__kcache_get_stats(&s1);
    assert_int_equal(s1.stores - s0.stores, 1);
    assert_int_equal(s1.hits - s0.hits, 0);
    log1 = log_of(rt, mod);
    printf("# first build's log:\n%s\n", log1);
    /* The warning; PoCL also names the source (NVIDIA's OpenCL does not). */
    assert_non_null(strstr(log1, "weft_kcache_log_check"));
    assert_int_equal(weft_module_destroy(mod), 0);
    assert_int_equal(weft_runtime_destroy(rt), 0);

    assert_int_equal(weft_runtime_create(&rt, NULL), 0);
    assert_int_equal(weft_module_create(rt, &v, 1, &mod), 0);
    weft__kcache_get_stats(&s2);
    assert_int_equal(s2.hits - s1.hits, 1);
    assert_int_equal(s2.stores - s1.stores, 0);
    log2 = log_of(rt, mod);
    assert_string_equal(log2, log1);
    free(log2);
    assert_int_equal(weft_module_destroy(mod), 0);
    assert_int_equal(weft_runtime_destroy(rt), 0);

    /* The entry holds the first build's log; another log in its place is
     * what the next load reports. */
    assert_true(new_entry(seen, nseen, &key));
    assert_int_equal(weft__kcache_load(&key, &bin, &size, &kind, &stored), 0);
    assert_non_null(stored);
    assert_string_equal(stored, log1);
    assert_int_equal(
        weft__kcache_store(&key, bin, size, kind, "warning: from the entry"),
        0);
    weft__free(bin);
    weft__free(stored);
    assert_int_equal(weft_runtime_create(&rt, NULL), 0);
    assert_int_equal(weft_module_create(rt, &v, 1, &mod), 0);
    log2 = log_of(rt, mod);
    assert_string_equal(log2, "warning: from the entry");
    free(log1);
    free(log2);
    assert_int_equal(weft_module_destroy(mod), 0);
    assert_int_equal(weft_runtime_destroy(rt), 0);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(keys_separate_their_parts),
        cmocka_unit_test(entry_round_trip),
        cmocka_unit_test(entry_keeps_its_log),
        cmocka_unit_test(corrupt_entries_are_removed),
        cmocka_unit_test(cache_can_be_turned_off),
        cmocka_unit_test(portable_translation),
        cmocka_unit_test(portable_parameter_types),
        cmocka_unit_test(opencl_second_build_hits),
        cmocka_unit_test(build_log_from_cache),
        cmocka_unit_test(host_second_runtime_loads_from_cache),
        cmocka_unit_test(host_missing_compiler),
    };
    return wt_run_group(argc, argv, tests, setup, teardown);
}
