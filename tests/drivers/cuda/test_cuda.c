/*
 * The cuda driver: what is specific to it. One binary, one group of tests
 * per CTest case, picked by the first argument:
 *
 *   absent   WEFT_CUDA_LIBRARY names no library: discovery says ENOTSUP
 *            and leaves nothing behind, also under failure injection.
 *   default  the machine as it is: either CUDA devices, or a clean
 *            ENOTSUP (no libcuda, no device) seen also through the runtime.
 *   stub     WEFT_CUDA_LIBRARY is CUDA's stub library: every entry point
 *            resolves, cuInit refuses; ENOTSUP naming the stub.
 *   nvrtc    CUDA C++ to cubin/PTX with NVRTC, no GPU needed.
 *   gpu      everything else, on real GPUs (exit 77 without one): PTX and
 *            NVRTC modules, parameter sizes, priorities, timing events,
 *            fills, pinned and registered memory, peer copies and
 *            cross-device waits with two GPUs, failure injection.
 *
 * Each test prints what it saw, so one run on a GPU machine tells what
 * works. Nothing sleeps: work that must still be pending is held behind a
 * host function that waits for the test to open a gate.
 */
#include "drivers/cuda/internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "wt_test.h"

#define OK(call)                                                               \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != 0)                                                          \
            fail_msg("%s: %s: %s", #call, weft_err_name(rc_),                  \
                     weft_last_error());                                       \
    } while (0)

#define EXPECT(want, call)                                                     \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ != (want))                                                     \
            fail_msg("%s: expected %s, got %s: %s", #call,                     \
                     weft_err_name(want), weft_err_name(rc_),                  \
                     weft_last_error());                                       \
    } while (0)

#define HAS(text, part)                                                        \
    do {                                                                       \
        if (!strstr((text), (part)))                                           \
            fail_msg("\"%s\" not in: %s", (part), (text));                     \
    } while (0)

/* A hand-written PTX module: iota(out, add, n) and nothing(). */
static const char iota_ptx[] = ".version 7.0\n"
                               ".target sm_52\n"
                               ".address_size 64\n"
                               "\n"
                               ".visible .entry iota(\n"
                               "    .param .u64 out,\n"
                               "    .param .u32 add,\n"
                               "    .param .u64 n\n"
                               ")\n"
                               "{\n"
                               "    .reg .pred %p<2>;\n"
                               "    .reg .b32 %r<7>;\n"
                               "    .reg .b64 %rd<7>;\n"
                               "\n"
                               "    ld.param.u64 %rd1, [out];\n"
                               "    ld.param.u32 %r1, [add];\n"
                               "    ld.param.u64 %rd2, [n];\n"
                               "    mov.u32 %r2, %ctaid.x;\n"
                               "    mov.u32 %r3, %ntid.x;\n"
                               "    mov.u32 %r4, %tid.x;\n"
                               "    mad.lo.s32 %r5, %r2, %r3, %r4;\n"
                               "    cvt.u64.u32 %rd3, %r5;\n"
                               "    setp.ge.u64 %p1, %rd3, %rd2;\n"
                               "    @%p1 bra DONE;\n"
                               "    cvta.to.global.u64 %rd4, %rd1;\n"
                               "    shl.b64 %rd5, %rd3, 2;\n"
                               "    add.s64 %rd6, %rd4, %rd5;\n"
                               "    add.s32 %r6, %r5, %r1;\n"
                               "    st.global.u32 [%rd6], %r6;\n"
                               "DONE:\n"
                               "    ret;\n"
                               "}\n"
                               "\n"
                               ".visible .entry nothing()\n"
                               "{\n"
                               "    ret;\n"
                               "}\n";

/* Not PTX a JIT accepts: an unknown instruction on line 6. */
static const char bad_ptx[] = ".version 7.0\n"
                              ".target sm_52\n"
                              ".address_size 64\n"
                              ".visible .entry broken()\n"
                              "{\n"
                              "    frobnicate.u32 %r1;\n"
                              "    ret;\n"
                              "}\n";

static const char axpy_cu[] =
    "#ifndef SCALE\n"
    "#define SCALE 1\n"
    "#endif\n"
    "extern \"C\" __global__ void axpy(float *y, const float *x, float a,\n"
    "                                 unsigned long long n)\n"
    "{\n"
    "    unsigned long long i =\n"
    "        blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x;\n"
    "    if (i < n)\n"
    "        y[i] = SCALE * a * x[i] + y[i];\n"
    "}\n";

static const char broken_cu[] =
    "extern \"C\" __global__ void broken(float *y)\n"
    "{\n"
    "    y[0] = undeclared_thing + 1;\n"
    "}\n";

/* ---- gates: hold a queue until the test opens them ------------------- */

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
    int passed;
} gate;

static void gate_init(gate *g)
{
    pthread_mutex_init(&g->lock, NULL);
    pthread_cond_init(&g->cond, NULL);
    g->open = g->passed = 0;
}

static void gate_wait(void *user)
{
    gate *g = user;

    pthread_mutex_lock(&g->lock);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    g->passed = 1;
    pthread_mutex_unlock(&g->lock);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void gate_destroy(gate *g)
{
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

/* ---- absent / default / stub ------------------------------------------ */

static void check_nothing_found(int rc, weft__platform **p, unsigned n)
{
    assert_int_equal(rc, WEFT_ENOTSUP);
    assert_null(p);
    assert_int_equal(n, 0);
}

static void test_absent(void **state)
{
    weft__platform **p = (weft__platform **)1;
    unsigned n = 7;
    int rc;

    (void)state;
    rc = weft__driver_cuda.platforms_open(NULL, &p, &n);
    printf("absent: %s: %s\n", weft_err_name(rc), weft_last_error());
    check_nothing_found(rc, p, n);
    HAS(weft_last_error(), "not found");
    HAS(weft_last_error(), getenv("WEFT_CUDA_LIBRARY"));
    /* A second attempt tries again and fails the same way. */
    rc = weft__driver_cuda.platforms_open(NULL, &p, &n);
    check_nothing_found(rc, p, n);
}

/* Every failure point of discovery, in turn: always a clean ENOTSUP. */
static void test_discovery_faults(void **state)
{
    weft__platform **p;
    unsigned n;
    long i;

    (void)state;
    for (i = 1;; i++) {
        weft__fault_arm(i, NULL);
        int rc = weft__driver_cuda.platforms_open(NULL, &p, &n);
        int fired = weft__fault_fired();

        weft__fault_disarm();
        /* An injected failure may read as another code (cuInit's). */
        check_nothing_found(fired && rc < 0 ? WEFT_ENOTSUP : rc, p, n);
        if (!fired)
            break;
    }
    printf("discovery: %ld failure points, each clean\n", i - 1);
    assert_true(i > 1);
}

static void test_default(void **state)
{
    weft__platform **p = NULL;
    unsigned n = 0;
    int rc;

    (void)state;
    rc = weft__driver_cuda.platforms_open(NULL, &p, &n);
    printf("default: platforms_open: %s: %s\n", weft_err_name(rc),
           rc ? weft_last_error() : "");
    if (rc == 0) {
        /* A CUDA machine: one platform with at least one GPU. */
        assert_int_equal(n, 1);
        assert_true(p[0]->ndevices >= 1);
        for (unsigned i = 0; i < p[0]->ndevices; i++)
            printf("  GPU %u: %s\n", i, p[0]->devices[i]->name);
        weft__driver_cuda.platforms_close(p, n);
        return;
    }
    check_nothing_found(rc, p, n);
    if (!strstr(weft_last_error(), "libcuda.so.1 not found") &&
        !strstr(weft_last_error(), "no CUDA device"))
        fail_msg("unexpected detail: %s", weft_last_error());
}

/* The runtime sees the driver, with no devices and the reason. */
static void test_default_runtime(void **state)
{
    weft_runtime_options opts = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt = NULL;
    int found = 0;

    (void)state;
    opts.devices = "cuda";
    OK(weft_runtime_create(&rt, &opts));
    for (unsigned i = 0; i < weft_runtime_driver_count(rt); i++) {
        const char *name, *reason;
        unsigned ndev;
        int status;

        OK(weft_runtime_driver(rt, i, &name, &ndev, &status, &reason));
        if (strcmp(name, "cuda") != 0)
            continue;
        found = 1;
        printf("runtime: cuda: %u devices, %s, \"%s\"\n", ndev,
               weft_err_name(status), reason);
        if (ndev == 0) {
            assert_int_equal(status, WEFT_ENOTSUP);
            assert_true(reason[0] != '\0');
        } else {
            assert_int_equal(status, 0);
        }
    }
    assert_true(found);
    OK(weft_runtime_destroy(rt));
}

static void test_stub(void **state)
{
    weft__platform **p = (weft__platform **)1;
    unsigned n = 7;
    int rc;

    (void)state;
    rc = weft__driver_cuda.platforms_open(NULL, &p, &n);
    printf("stub: %s: %s\n", weft_err_name(rc), weft_last_error());
    check_nothing_found(rc, p, n);
    /* Every entry point resolved: the failure is cuInit's. */
    HAS(weft_last_error(), "stub");
    assert_string_equal(weft_last_error_detail()->driver_name,
                        "CUDA_ERROR_STUB_LIBRARY");
    assert_int_equal(weft_last_error_detail()->driver_code, 34);
}

/* ---- nvrtc ------------------------------------------------------------ */

static int nvrtc_present(void)
{
    for (unsigned i = 0; weft__cuda_nvrtc_names[i]; i++) {
        void *lib = dlopen(weft__cuda_nvrtc_names[i], RTLD_NOW | RTLD_LOCAL);

        if (lib) {
            dlclose(lib);
            return 1;
        }
    }
    return 0;
}

static void test_nvrtc_cubin(void **state)
{
    weft__cuda_image img;

    (void)state;
    OK(weft__cuda_nvrtc_compile(axpy_cu, 0, "axpy.cu", NULL, 7, 5, &img));
    printf("nvrtc: sm_75: %s of %zu bytes\n", img.is_cubin ? "cubin" : "PTX",
           img.size);
    assert_true(img.is_cubin);
    assert_int_equal(img.arch, 75);
    assert_true(img.size > 4);
    assert_memory_equal(img.data,
                        "\x7f"
                        "ELF",
                        4);
    weft__cuda_image_free(&img);
    assert_null(img.data);
}

/* A device newer than NVRTC gets PTX for the newest architecture it has. */
static void test_nvrtc_newer_device(void **state)
{
    weft__cuda_image img;

    (void)state;
    OK(weft__cuda_nvrtc_compile(axpy_cu, 0, "axpy.cu", NULL, 99, 9, &img));
    printf("nvrtc: sm_999 -> PTX for compute_%d\n", img.arch);
    assert_false(img.is_cubin);
    assert_true(img.arch >= 75 && img.arch < 999);
    assert_int_equal(strlen(img.data) + 1, img.size);
    HAS((const char *)img.data, ".entry axpy");
    weft__cuda_image_free(&img);
}

static void test_nvrtc_older_device(void **state)
{
    weft__cuda_image img;

    (void)state;
    EXPECT(WEFT_ENOTSUP,
           weft__cuda_nvrtc_compile(axpy_cu, 0, "axpy.cu", NULL, 1, 0, &img));
    printf("nvrtc: sm_10: %s\n", weft_last_error());
    HAS(weft_last_error(), "sm_10");
    assert_null(img.data);
}

static void test_nvrtc_options(void **state)
{
    weft__cuda_image img;
    /* Sized text without a NUL, options with an architecture of their own. */
    size_t len = sizeof axpy_cu - 1;
    char *text = malloc(len);

    (void)state;
    assert_non_null(text);
    memcpy(text, axpy_cu, len);
    OK(weft__cuda_nvrtc_compile(text, len, "axpy.cu",
                                " -DSCALE=3  --gpu-architecture=compute_80 ", 7,
                                5, &img));
    assert_false(img.is_cubin);
    HAS((const char *)img.data, ".target sm_80");
    /* SCALE=3 folds into the multiply: the constant 3.0f is in the code. */
    HAS((const char *)img.data, "0f40400000");
    weft__cuda_image_free(&img);
    free(text);
}

static void test_nvrtc_errors(void **state)
{
    const weft_error_detail *d;
    weft__cuda_image img;

    (void)state;
    EXPECT(WEFT_EBUILD, weft__cuda_nvrtc_compile(broken_cu, 0, "broken.cu",
                                                 NULL, 8, 0, &img));
    d = weft_last_error_detail();
    printf("nvrtc: broken.cu: %s\n", d->message);
    assert_null(img.data);
    assert_string_equal(d->driver, "cuda");
    assert_string_equal(d->driver_name, "NVRTC_ERROR_COMPILATION");
    HAS(d->message, "broken.cu");
    HAS(d->message, "undeclared_thing");
    HAS(d->message, "sm_80");

    EXPECT(WEFT_EBUILD, weft__cuda_nvrtc_compile(axpy_cu, 0, "axpy.cu",
                                                 "--no-such-flag", 8, 0, &img));
    printf("nvrtc: bad option: %s\n", weft_last_error());
    assert_null(img.data);
}

static void test_nvrtc_faults(void **state)
{
    weft__cuda_image img;
    long i;

    (void)state;
    for (i = 1;; i++) {
        weft__fault_arm(i, NULL);
        int rc = weft__cuda_nvrtc_compile(axpy_cu, 0, "axpy.cu", "-DSCALE=2", 8,
                                          6, &img);
        int fired = weft__fault_fired();

        weft__fault_disarm();
        if (rc == 0) {
            assert_non_null(img.data);
            weft__cuda_image_free(&img);
        } else {
            assert_true(fired);
            assert_null(img.data);
        }
        if (!fired)
            break;
    }
    printf("nvrtc: %ld failure points, none leaks\n", i - 1);
    assert_true(i > 1);
}

/* ---- gpu -------------------------------------------------------------- */

typedef struct fixture {
    weft__platform **platforms;
    unsigned nplatforms;
    unsigned ndev;
    weft__device *dev[2];
    weft__context *ctx[2];
    weft__queue *q[2];
} fixture;

static fixture gpu;

static int gpu_setup(void **state)
{
    weft__queue_desc desc = {WEFT__QUEUE_COMPUTE, 0, 1};

    gpu.ndev = WEFT__MIN(gpu.platforms[0]->ndevices, 2u);
    for (unsigned i = 0; i < gpu.ndev; i++) {
        gpu.dev[i] = gpu.platforms[0]->devices[i];
        if (weft__drv_context_create(gpu.dev[i], &gpu.ctx[i]) ||
            weft__drv_queue_create(gpu.ctx[i], &desc, &gpu.q[i])) {
            fprintf(stderr, "setup: %s\n", weft_last_error());
            return -1;
        }
    }
    *state = &gpu;
    return 0;
}

static int gpu_teardown(void **state)
{
    (void)state;
    weft__fault_disarm();
    for (unsigned i = 0; i < gpu.ndev; i++) {
        if (gpu.q[i])
            weft__drv_queue_destroy(gpu.q[i]);
        gpu.q[i] = NULL;
        if (gpu.ctx[i] && weft__drv_context_destroy(gpu.ctx[i])) {
            fprintf(stderr, "teardown: %s\n", weft_last_error());
            return -1; /* a test left a live object */
        }
        gpu.ctx[i] = NULL;
    }
    return 0;
}

static weft__module_source ptx_source(const char *text, const char *name)
{
    weft__module_source s = {WEFT__SRC_PTX, text, 0, NULL, name};

    return s;
}

static void test_props(void **state)
{
    fixture *f = *state;

    (void)state;
    for (unsigned i = 0; i < f->ndev; i++) {
        const weft_device_info *p = &f->dev[i]->props;
        unsigned a, b, c, d;
        char tail;

        printf("GPU %u: %s, sm_%d%d, %llu MiB, %u SMs, %u copy engines, "
               "priorities %d..%d, pci %s, CUDA %s\n",
               i, p->name, p->cc_major, p->cc_minor,
               (unsigned long long)(p->global_mem >> 20), p->compute_units,
               p->copy_engines, p->queue_priority_low, p->queue_priority_high,
               p->pci_bus_id, p->driver_version);
        assert_int_equal(p->size, sizeof *p);
        assert_string_equal(p->driver, "cuda");
        assert_int_equal(p->type, WEFT_DEVICE_GPU);
        assert_true(p->name[0] != '\0');
        assert_true(p->cc_major >= 3);
        assert_true(p->global_mem > 0 && p->max_alloc == p->global_mem);
        assert_true(p->compute_units > 0);
        assert_true(p->max_group_size >= 256);
        assert_true(p->local_mem >= 16384);
        assert_true(p->timing_events && p->pinned_host);
        /* Filled at context creation: CUDA's greatest priority <= 0. */
        assert_true(p->queue_priority_high <= p->queue_priority_low);
        assert_int_equal(p->queue_priority_low, 0);
        /* "dddd:bb:ss.f", lower-case hex. */
        assert_int_equal(strlen(p->pci_bus_id), 12);
        assert_int_equal(
            sscanf(p->pci_bus_id, "%4x:%2x:%2x.%1x%c", &a, &b, &c, &d, &tail),
            4);
        for (const char *s = p->pci_bus_id; *s; s++)
            assert_false(*s >= 'A' && *s <= 'F');
        assert_int_equal(sscanf(p->driver_version, "%u.%u", &a, &b), 2);
    }
}

/* Launch iota over n items and check out[i] == i + add. */
static void run_iota(weft__queue *q, weft__kernel *k, uint32_t add, size_t n)
{
    weft__mem *m;
    uint32_t *host = malloc(n * sizeof *host);
    uint64_t n64 = n;
    weft__karg args[3] = {
        {WEFT_PARAM_BUFFER, 0, {.buf = {NULL, 0}}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_U32, 4, {.value = &add}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_U64, 8, {.value = &n64}, 0, 0, 0, 0, 0, 0},
    };
    weft__grid grid = {{(uint32_t)((n + 127) / 128), 1, 1}, {128, 1, 1}, 0};

    assert_non_null(host);
    OK(weft__drv_mem_alloc(q->ctx, n * sizeof *host, &m));
    args[0].u.buf.mem = m;
    OK(weft__drv_launch(q, k, &grid, args, 3));
    OK(weft__drv_copy_d2h(q, host, m, 0, n * sizeof *host));
    OK(weft__drv_queue_sync(q));
    for (size_t i = 0; i < n; i++)
        if (host[i] != (uint32_t)i + add)
            fail_msg("iota[%zu] = %u, expected %u", i, host[i],
                     (unsigned)(i + add));
    OK(weft__drv_mem_free(m));
    free(host);
}

static void test_ptx_module(void **state)
{
    fixture *f = *state;
    weft__module_source src = ptx_source(iota_ptx, "iota.ptx");
    weft__module *mod;
    weft__kernel *k, *k2, *none;

    OK(weft__drv_module_create(f->ctx[0], &src, &mod));
    OK(weft__drv_kernel_get(mod, "iota", &k));
    OK(weft__drv_kernel_get(mod, "iota", &k2));
    assert_ptr_equal(k, k2);
    OK(weft__drv_kernel_get(mod, "nothing", &none));
    printf("ptx: iota params_known=%u nparams=%u\n", k->params_known,
           k->nparams);
    if (k->params_known) {
        assert_int_equal(k->nparams, 3);
        assert_int_equal(k->param_sizes[0], 8);
        assert_int_equal(k->param_sizes[1], 4);
        assert_int_equal(k->param_sizes[2], 8);
        assert_int_equal(none->params_known, 1);
        assert_int_equal(none->nparams, 0);
    } else {
        printf("ptx: the driver cannot tell parameter sizes (< CUDA 12.4)\n");
    }
    run_iota(f->q[0], k, 1000, 100000);
    /* Sized PTX without a NUL loads too. */
    weft__module *mod2;
    char *text = malloc(sizeof iota_ptx - 1);

    assert_non_null(text);
    memcpy(text, iota_ptx, sizeof iota_ptx - 1);
    src.data = text;
    src.size = sizeof iota_ptx - 1;
    OK(weft__drv_module_create(f->ctx[0], &src, &mod2));
    free(text);
    OK(weft__drv_module_destroy(mod2));
    OK(weft__drv_module_destroy(mod));
}

static void test_module_errors(void **state)
{
    fixture *f = *state;
    weft__module_source src = ptx_source(bad_ptx, "bad.ptx");
    weft__module_source cu = {WEFT__SRC_CUDA_CXX, broken_cu, 0, NULL,
                              "broken.cu"};
    weft__module_source cl = {WEFT__SRC_OPENCL_C, "kernel void k() {}", 0, NULL,
                              "k.cl"};
    weft__module *mod;
    weft__kernel *k;

    EXPECT(WEFT_EBUILD, weft__drv_module_create(f->ctx[0], &src, &mod));
    printf("bad PTX: %s\n", weft_last_error());
    HAS(weft_last_error(), "bad.ptx");
    HAS(weft_last_error(), "frobnicate");

    EXPECT(WEFT_ENOTSUP, weft__drv_module_create(f->ctx[0], &cl, &mod));

    if (nvrtc_present()) {
        EXPECT(WEFT_EBUILD, weft__drv_module_create(f->ctx[0], &cu, &mod));
        printf("broken CUDA C++: %s\n", weft_last_error());
        HAS(weft_last_error(), "undeclared_thing");
    }

    src = ptx_source(iota_ptx, "iota.ptx");
    OK(weft__drv_module_create(f->ctx[0], &src, &mod));
    EXPECT(WEFT_ENOTFOUND, weft__drv_kernel_get(mod, "no_such_kernel", &k));
    printf("missing kernel: %s\n", weft_last_error());
    HAS(weft_last_error(), "no_such_kernel");
    assert_string_equal(weft_last_error_detail()->driver_name,
                        "CUDA_ERROR_NOT_FOUND");
    OK(weft__drv_module_destroy(mod));
}

static void test_param_checks(void **state)
{
    fixture *f = *state;
    weft__module_source src = ptx_source(iota_ptx, "iota.ptx");
    weft__module *mod;
    weft__kernel *k;
    weft__mem *m;
    uint32_t add = 1;
    uint64_t n = 16;
    weft__karg args[3] = {
        {WEFT_PARAM_BUFFER, 0, {.buf = {NULL, 0}}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_U64, 8, {.value = &n}, 0, 0, 0, 0, 0, 0}, /* 8 bytes where 4
                                                                 go */
        {WEFT_PARAM_U64, 8, {.value = &n}, 0, 0, 0, 0, 0, 0},
    };
    weft__karg local = {
        WEFT_PARAM_LOCAL, 64, {.value = NULL}, 0, 0, 0, 0, 0, 0};
    weft__grid grid = {{1, 1, 1}, {16, 1, 1}, 0};

    OK(weft__drv_module_create(f->ctx[0], &src, &mod));
    OK(weft__drv_kernel_get(mod, "iota", &k));
    OK(weft__drv_mem_alloc(f->ctx[0], 64, &m));
    args[0].u.buf.mem = m;
    if (k->params_known) {
        EXPECT(WEFT_EARGS, weft__drv_launch(f->q[0], k, &grid, args, 2));
        printf("2 arguments: %s\n", weft_last_error());
        EXPECT(WEFT_EARGS, weft__drv_launch(f->q[0], k, &grid, args, 3));
        printf("u64 for u32: %s\n", weft_last_error());
    }
    args[1] =
        (weft__karg){WEFT_PARAM_U32, 4, {.value = &add}, 0, 0, 0, 0, 0, 0};
    args[2] = local;
    EXPECT(WEFT_EARGS, weft__drv_launch(f->q[0], k, &grid, args, 3));
    printf("LOCAL argument: %s\n", weft_last_error());
    /* Too large a group: the driver's own refusal, translated. */
    grid.group_size[0] = 1u << 16;
    args[2] = (weft__karg){WEFT_PARAM_U64, 8, {.value = &n}, 0, 0, 0, 0, 0, 0};
    assert_true(weft__drv_launch(f->q[0], k, &grid, args, 3) < 0);
    OK(weft__drv_queue_sync(f->q[0]));
    OK(weft__drv_mem_free(m));
    OK(weft__drv_module_destroy(mod));
}

static void test_nvrtc_module(void **state)
{
    fixture *f = *state;
    weft__module_source src = {WEFT__SRC_CUDA_CXX, axpy_cu, 0, "-DSCALE=2",
                               "axpy.cu"};
    enum { N = 4096 };
    static float x[N], y[N];
    weft__module *mod;
    weft__kernel *k;
    weft__mem *mx, *my;
    float a = 1.5f;
    uint64_t n = N;
    weft__karg args[4] = {
        {WEFT_PARAM_BUFFER, 0, {.buf = {NULL, 0}}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_BUFFER, 0, {.buf = {NULL, 0}}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_F32, 4, {.value = &a}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_U64, 8, {.value = &n}, 0, 0, 0, 0, 0, 0},
    };
    weft__grid grid = {{N / 256, 1, 1}, {256, 1, 1}, 0};

    if (!nvrtc_present()) {
        printf("nvrtc module: skipped: no NVRTC\n");
        skip();
    }
    OK(weft__drv_module_create(f->ctx[0], &src, &mod));
    OK(weft__drv_kernel_get(mod, "axpy", &k));
    if (k->params_known)
        assert_int_equal(k->nparams, 4);
    for (int i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof x, &mx));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof y, &my));
    OK(weft__drv_copy_h2d(f->q[0], mx, 0, x, sizeof x));
    OK(weft__drv_copy_h2d(f->q[0], my, 0, y, sizeof y));
    args[0].u.buf.mem = my;
    args[1].u.buf.mem = mx;
    OK(weft__drv_launch(f->q[0], k, &grid, args, 4));
    OK(weft__drv_copy_d2h(f->q[0], y, my, 0, sizeof y));
    OK(weft__drv_queue_sync(f->q[0]));
    for (int i = 0; i < N; i++)
        if (y[i] != 2 * a * (float)i + 1.0f)
            fail_msg("y[%d] = %g", i, (double)y[i]);
    printf("nvrtc module: axpy on sm_%d%d correct\n", f->dev[0]->props.cc_major,
           f->dev[0]->props.cc_minor);
    OK(weft__drv_mem_free(mx));
    OK(weft__drv_mem_free(my));
    OK(weft__drv_module_destroy(mod));
}

static void test_priorities(void **state)
{
    fixture *f = *state;
    const weft_device_info *p = &f->dev[0]->props;
    weft__queue_desc hi = {WEFT__QUEUE_COMPUTE, p->queue_priority_high, 0};
    weft__queue_desc lo = {WEFT__QUEUE_H2D, p->queue_priority_low, 0};
    weft__module_source src = ptx_source(iota_ptx, "iota.ptx");
    weft__queue *qh, *ql;
    weft__module *mod;
    weft__kernel *k;

    OK(weft__drv_queue_create(f->ctx[0], &hi, &qh));
    OK(weft__drv_queue_create(f->ctx[0], &lo, &ql));
    if (p->queue_priority_high < 0) {
        weft__queue *bad;
        weft__queue_desc beyond = hi;

        beyond.priority = p->queue_priority_high - 1;
        EXPECT(WEFT_EINVAL, weft__drv_queue_create(f->ctx[0], &beyond, &bad));
    }
    OK(weft__drv_module_create(f->ctx[0], &src, &mod));
    OK(weft__drv_kernel_get(mod, "iota", &k));
    run_iota(qh, k, 7, 1000);
    run_iota(ql, k, 9, 1000);
    printf("priorities: queues at %d and %d ran\n", hi.priority, lo.priority);
    OK(weft__drv_module_destroy(mod));
    OK(weft__drv_queue_destroy(qh));
    OK(weft__drv_queue_destroy(ql));
}

static void test_events(void **state)
{
    fixture *f = *state;
    weft__event *start, *end, *plain;
    weft__mem *pinned, *dev;
    size_t size = 64u << 20;
    uint64_t ns = 0;
    gate g;

    OK(weft__drv_event_create(f->ctx[0], WEFT__EVENT_TIMING, &start));
    OK(weft__drv_event_create(f->ctx[0], WEFT__EVENT_TIMING, &end));
    OK(weft__drv_event_create(f->ctx[0], 0, &plain));
    /* Never recorded: complete. */
    OK(weft__drv_event_query(plain));
    OK(weft__drv_event_sync(plain));

    /* Held behind a gate: not ready until the gate opens. */
    gate_init(&g);
    OK(weft__drv_host_fn(f->q[0], gate_wait, &g));
    OK(weft__drv_event_record(plain, f->q[0]));
    EXPECT(WEFT_ENOTREADY, weft__drv_event_query(plain));
    assert_false(g.passed);
    gate_open(&g);
    OK(weft__drv_event_sync(plain));
    OK(weft__drv_event_query(plain));
    assert_true(g.passed);
    gate_destroy(&g);

    /* Timing over a 64 MiB pinned upload. */
    OK(weft__drv_host_alloc(f->ctx[0], size, &pinned));
    OK(weft__drv_mem_alloc(f->ctx[0], size, &dev));
    memset(pinned->host, 0x5a, size);
    OK(weft__drv_event_record(start, f->q[0]));
    OK(weft__drv_copy_h2d(f->q[0], dev, 0, pinned->host, size));
    OK(weft__drv_event_record(end, f->q[0]));
    OK(weft__drv_event_sync(end));
    OK(weft__drv_event_elapsed(start, end, &ns));
    printf("events: 64 MiB upload in %.3f ms (%.1f GB/s)\n", ns / 1e6,
           ns ? (double)size / (double)ns : 0.0);
    assert_true(ns > 0 && ns < 10000000000ull);
    /* No timing on a plain event. */
    assert_true(weft__drv_event_elapsed(start, plain, &ns) < 0);
    OK(weft__drv_mem_free(dev));
    OK(weft__drv_mem_free(pinned));
    OK(weft__drv_event_destroy(start));
    OK(weft__drv_event_destroy(end));
    OK(weft__drv_event_destroy(plain));
}

static void set_flag(void *user)
{
    __atomic_store_n((int *)user, 1, __ATOMIC_RELEASE);
}

static void test_fill_and_host_memory(void **state)
{
    fixture *f = *state;
    enum { N = 1 << 16 };
    weft__mem *d, *d2, *pinned, *reg;
    uint8_t p8 = 0xab;
    uint16_t p16 = 0x1234;
    uint32_t p32 = 0xdeadbeef;
    uint8_t *user;
    int flag = 0;

    OK(weft__drv_mem_alloc(f->ctx[0], N, &d));
    OK(weft__drv_mem_alloc(f->ctx[0], N, &d2));
    OK(weft__drv_host_alloc(f->ctx[0], N, &pinned));
    assert_non_null(pinned->host);
    user = aligned_alloc(4096, N);
    assert_non_null(user);
    memset(user, 0, N);
    OK(weft__drv_host_register(f->ctx[0], user, N, &reg));
    assert_ptr_equal(reg->host, user);

    OK(weft__drv_fill(f->q[0], d, 0, &p8, 1, 1024));
    OK(weft__drv_fill(f->q[0], d, 1024, &p16, 2, 1024));
    OK(weft__drv_fill(f->q[0], d, 2048, &p32, 4, N - 2048));
    OK(weft__drv_copy_d2d(f->q[0], d2, 0, d, 0, N));
    OK(weft__drv_copy_d2h(f->q[0], pinned->host, d2, 0, N));
    OK(weft__drv_copy_h2d(f->q[0], d, 0, pinned->host, N));
    OK(weft__drv_copy_d2h(f->q[0], user, d, 0, N));
    OK(weft__drv_host_fn(f->q[0], set_flag, &flag));
    OK(weft__drv_queue_sync(f->q[0]));
    assert_int_equal(__atomic_load_n(&flag, __ATOMIC_ACQUIRE), 1);
    for (size_t i = 0; i < N; i++) {
        uint8_t want;

        if (i < 1024)
            want = p8;
        else if (i < 2048)
            want = (uint8_t)(p16 >> (8 * (i % 2)));
        else
            want = (uint8_t)(p32 >> (8 * (i % 4)));
        if (user[i] != want)
            fail_msg("byte %zu: %#x, expected %#x", i, user[i], want);
    }
    printf("fills D8/D16/D32, pinned and registered copies: correct\n");
    OK(weft__drv_mem_free(reg));
    OK(weft__drv_mem_free(pinned));
    OK(weft__drv_mem_free(d2));
    OK(weft__drv_mem_free(d));
    free(user);
}

/*
 * A host function that holds its stream until *flag is 1, or 20 s have
 * passed (then it sets *flag to 2: something the test enqueued waited for
 * the stream, which the test then reports instead of hanging).
 */
static void hold_until_set(void *user)
{
    int *flag = user;
    struct timespec t0, t;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!__atomic_load_n(flag, __ATOMIC_ACQUIRE)) {
        clock_gettime(CLOCK_MONOTONIC, &t);
        if (t.tv_sec - t0.tv_sec > 20) {
            __atomic_store_n(flag, 2, __ATOMIC_RELEASE);
            return;
        }
        sched_yield();
    }
}

/*
 * Pageable copies through a fresh queue's own staging buffers, the stream
 * held by a host function until all are enqueued (so that the first ones
 * still wait to run when the buffers are replaced): a small copy (its
 * buffers as large as it needs: CUDA_STAGE_FIRST), then copies larger
 * than the largest buffers (which replace them, the old ones kept), then
 * a small download. Then, on a second queue, the larger buffers refused
 * (an injected cuMemHostAlloc failure): the large copy goes through the
 * small ones. Every byte checked.
 */
static void test_pageable_staging(void **state)
{
    fixture *f = *state;
    enum { SMALL = 1000, LARGE = (9 << 20) + 123 };
    weft__queue *q, *q2;
    weft__mem *d;
    uint8_t *src = malloc(LARGE), *dst = malloc(LARGE), small[SMALL];
    int go = 0;

    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < LARGE; i++)
        src[i] = (uint8_t)(i * 7 + i / 4096);
    memset(dst, 0, LARGE);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], LARGE, &d));
    OK(weft__drv_host_fn(q, hold_until_set, &go));
    OK(weft__drv_copy_h2d(q, d, 0, src, SMALL));
    assert_int_equal(((cuda_queue *)q)->stage_size, CUDA_STAGE_FIRST);
    assert_null(((cuda_queue *)q)->stage_old[0]);
    OK(weft__drv_copy_h2d(q, d, SMALL, src + SMALL, LARGE - SMALL));
    assert_int_equal(((cuda_queue *)q)->stage_size, CUDA_STAGE_BYTES);
    assert_non_null(((cuda_queue *)q)->stage_old[0]);
    assert_non_null(((cuda_queue *)q)->stage_old[1]);
    OK(weft__drv_copy_d2h(q, dst, d, 0, LARGE));
    OK(weft__drv_copy_d2h(q, small, d, LARGE - SMALL, SMALL));
    /* (2: an enqueue above waited for the held stream) */
    assert_int_equal(__atomic_exchange_n(&go, 1, __ATOMIC_ACQ_REL), 0);
    OK(weft__drv_queue_sync(q));
    assert_memory_equal(dst, src, LARGE);
    assert_memory_equal(small, src + LARGE - SMALL, SMALL);
    OK(weft__drv_queue_destroy(q));

    /* The larger buffers refused: the small ones serve, in more chunks. */
    memset(dst, 0, LARGE);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q2));
    OK(weft__drv_copy_h2d(q2, d, 0, src + 5, SMALL));
    weft__fault_arm(1, "cuda.cuMemHostAlloc");
    OK(weft__drv_copy_h2d(q2, d, SMALL, src + 5 + SMALL, LARGE - SMALL - 5));
    assert_true(weft__fault_fired());
    weft__fault_disarm();
    assert_int_equal(((cuda_queue *)q2)->stage_size, CUDA_STAGE_FIRST);
    OK(weft__drv_copy_d2h(q2, dst, d, 0, LARGE - 5));
    OK(weft__drv_queue_sync(q2));
    assert_memory_equal(dst, src + 5, LARGE - 5);
    OK(weft__drv_queue_destroy(q2));
    printf("pageable copies of %d and %d bytes through a queue's staging "
           "(and through its first buffers when larger ones are refused): "
           "correct\n",
           SMALL, LARGE);
    OK(weft__drv_mem_free(d));
    free(src);
    free(dst);
}

static void test_peer(void **state)
{
    fixture *f = *state;
    enum { N = 1 << 20 };
    uint32_t pattern = 0xa5a5f00d;
    uint32_t *host;
    weft__mem *m0, *m1, *back;
    weft__event *ev;
    int can = -1;

    if (f->ndev < 2) {
        printf("peer: skipped: one GPU\n");
        skip();
    }
    OK(weft__driver_cuda.can_access_peer(f->dev[0], f->dev[1], &can));
    printf("peer: GPU 0 <-> GPU 1 direct access: %d\n", can);
    host = malloc(N);
    assert_non_null(host);
    OK(weft__drv_mem_alloc(f->ctx[0], N, &m0));
    OK(weft__drv_mem_alloc(f->ctx[1], N, &m1));
    OK(weft__drv_mem_alloc(f->ctx[0], N, &back));
    OK(weft__drv_event_create(f->ctx[0], 0, &ev));
    /* GPU 0 fills; GPU 1's queue waits for it and pulls the bytes over. */
    OK(weft__drv_fill(f->q[0], m0, 0, &pattern, 4, N));
    OK(weft__drv_event_record(ev, f->q[0]));
    OK(weft__drv_queue_wait_event(f->q[1], ev));
    OK(weft__drv_copy_peer(f->q[1], m1, 0, m0, 0, N));
    OK(weft__drv_queue_sync(f->q[1]));
    /* And back, driven from GPU 0's queue, into another buffer. */
    OK(weft__drv_copy_peer(f->q[0], back, 0, m1, 0, N));
    OK(weft__drv_copy_d2h(f->q[0], host, back, 0, N));
    OK(weft__drv_queue_sync(f->q[0]));
    for (size_t i = 0; i < N / 4; i++)
        if (host[i] != pattern)
            fail_msg("word %zu: %#x", i, host[i]);
    printf("peer: 1 MiB there and back: correct\n");
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_mem_free(m0));
    OK(weft__drv_mem_free(m1));
    OK(weft__drv_mem_free(back));
    free(host);
}

/*
 * One scenario over most operations; on failure it undoes what it made.
 * Returns the first failure.
 */
static int scenario(weft__context *ctx)
{
    weft__module_source src = ptx_source(iota_ptx, "iota.ptx");
    weft__queue_desc desc = {WEFT__QUEUE_COMPUTE, 0, 1};
    weft__queue *q = NULL;
    weft__mem *m = NULL, *pin = NULL;
    weft__module *mod = NULL;
    weft__kernel *k;
    weft__event *ev = NULL;
    uint32_t add = 3;
    uint64_t n = 256;
    weft__karg args[3] = {
        {WEFT_PARAM_BUFFER, 0, {.buf = {NULL, 0}}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_U32, 4, {.value = &add}, 0, 0, 0, 0, 0, 0},
        {WEFT_PARAM_U64, 8, {.value = &n}, 0, 0, 0, 0, 0, 0},
    };
    weft__grid grid = {{2, 1, 1}, {128, 1, 1}, 0};
    int rc;

    if ((rc = weft__drv_queue_create(ctx, &desc, &q)) ||
        (rc = weft__drv_mem_alloc(ctx, n * 4, &m)) ||
        (rc = weft__drv_host_alloc(ctx, n * 4, &pin)) ||
        (rc = weft__drv_module_create(ctx, &src, &mod)) ||
        (rc = weft__drv_kernel_get(mod, "iota", &k)) ||
        (rc = weft__drv_event_create(ctx, WEFT__EVENT_TIMING, &ev)))
        goto done;
    args[0].u.buf.mem = m;
    if ((rc = weft__drv_launch(q, k, &grid, args, 3)) ||
        (rc = weft__drv_copy_d2h(q, pin->host, m, 0, n * 4)) ||
        (rc = weft__drv_event_record(ev, q)) || (rc = weft__drv_event_sync(ev)))
        goto done;
    for (uint32_t i = 0; i < n; i++)
        if (((uint32_t *)pin->host)[i] != i + add)
            rc = WEFT_EINTERNAL;
done:
    if (q)
        weft__drv_queue_sync(q);
    if (ev)
        weft__drv_event_destroy(ev);
    if (mod)
        weft__drv_module_destroy(mod);
    if (pin)
        weft__drv_mem_free(pin);
    if (m)
        weft__drv_mem_free(m);
    if (q)
        weft__drv_queue_destroy(q);
    return rc;
}

static void test_gpu_faults(void **state)
{
    fixture *f = *state;
    long i, failed = 0;

    long base;

    OK(scenario(f->ctx[0]));
    /* what the fixture itself keeps in the context */
    base = __atomic_load_n(&f->ctx[0]->live, __ATOMIC_ACQUIRE);
    for (i = 1;; i++) {
        weft__fault_arm(i, "cuda.");
        int rc = scenario(f->ctx[0]);
        int fired = weft__fault_fired();

        weft__fault_disarm();
        /* No failure may leave an object alive in the context. */
        if (__atomic_load_n(&f->ctx[0]->live, __ATOMIC_ACQUIRE) != base)
            fail_msg("failure point %ld (rc %s: %s) left %ld objects live", i,
                     weft_err_name(rc), weft_last_error(),
                     f->ctx[0]->live - base);
        assert_true(rc != WEFT_EINTERNAL); /* never a wrong result */
        if (rc < 0) {
            assert_true(fired);
            failed++;
        }
        if (!fired)
            break;
    }
    printf("faults: %ld cuda failure points, %ld failed cleanly, the rest "
           "degraded without error\n",
           i - 1, failed);
    /* The driver still works. */
    OK(scenario(f->ctx[0]));
    assert_true(i > 1);
}

/* ---- main ------------------------------------------------------------- */

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "default";
    /* test_cuda MODE CASE: the case glob follows the mode */
    int case_argc = argc > 1 ? argc - 1 : argc;
    char **case_argv = argc > 1 ? argv + 1 : argv;

    if (strcmp(mode, "absent") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_absent),
            cmocka_unit_test(test_discovery_faults),
        };
        if (!getenv("WEFT_CUDA_LIBRARY")) {
            printf("skipped: set WEFT_CUDA_LIBRARY to a missing file\n");
            return 77;
        }
        return wt_run_group_name(case_argc, case_argv, "cuda_absent", tests,
                                 NULL, NULL);
    }
    if (strcmp(mode, "default") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_default),
            cmocka_unit_test(test_default_runtime),
        };
        return wt_run_group_name(case_argc, case_argv, "cuda_default", tests,
                                 NULL, NULL);
    }
    if (strcmp(mode, "stub") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_stub),
            cmocka_unit_test(test_discovery_faults),
        };
        return wt_run_group_name(case_argc, case_argv, "cuda_stub", tests, NULL,
                                 NULL);
    }
    if (strcmp(mode, "nvrtc") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_nvrtc_cubin),
            cmocka_unit_test(test_nvrtc_newer_device),
            cmocka_unit_test(test_nvrtc_older_device),
            cmocka_unit_test(test_nvrtc_options),
            cmocka_unit_test(test_nvrtc_errors),
            cmocka_unit_test(test_nvrtc_faults),
        };
        if (!nvrtc_present()) {
            printf("skipped: no NVRTC (libnvrtc.so.13/.12/.11.2)\n");
            return 77;
        }
        return wt_run_group_name(case_argc, case_argv, "cuda_nvrtc", tests,
                                 NULL, NULL);
    }
    if (strcmp(mode, "gpu") == 0) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test_setup_teardown(test_props, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_ptx_module, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_module_errors, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_param_checks, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_nvrtc_module, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_priorities, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_events, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_fill_and_host_memory,
                                            gpu_setup, gpu_teardown),
            cmocka_unit_test_setup_teardown(test_pageable_staging, gpu_setup,
                                            gpu_teardown),
            cmocka_unit_test_setup_teardown(test_peer, gpu_setup, gpu_teardown),
            cmocka_unit_test_setup_teardown(test_gpu_faults, gpu_setup,
                                            gpu_teardown),
        };
        int rc = weft__driver_cuda.platforms_open(NULL, &gpu.platforms,
                                                  &gpu.nplatforms);
        int failures;

        if (rc < 0) {
            printf("skipped: no CUDA device (%s)\n", weft_last_error());
            return 77;
        }
        printf("cuda: %u GPU(s)\n", gpu.platforms[0]->ndevices);
        failures = wt_run_group_name(case_argc, case_argv, "cuda_gpu", tests,
                                     NULL, NULL);
        weft__driver_cuda.platforms_close(gpu.platforms, gpu.nplatforms);
        return failures;
    }
    fprintf(stderr, "usage: %s absent|default|stub|nvrtc|gpu\n", argv[0]);
    return 2;
}
