/*
 * driver_overhead: what weft's driver layer adds to a kernel launch.
 *
 * For the first CUDA device and the first OpenCL device, launch an empty
 * one-argument kernel many times through the raw vendor API and through
 * weft's checked driver entry point (weft__drv_launch), in the same
 * process, alternating rounds, and print the median time per launch of
 * each and the difference.
 *
 *     driver_overhead [--json] [--launches N] [--rounds R]
 */
#include "drivers/cuda/cuda_api.h"
#include "bench.h"
#include "runtime.h"

#include <CL/cl.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char ptx_empty[] = ".version 7.0\n"
                                ".target sm_52\n"
                                ".address_size 64\n"
                                ".visible .entry empty(.param .u64 p)\n"
                                "{\n"
                                "    ret;\n"
                                "}\n";
static const char cl_empty[] = "__kernel void empty(__global int *p) {}\n";

static long launches = 20000;
static int rounds = 7;

/* ---- weft's side -------------------------------------------------------- */

typedef struct weft_side {
    weft__context *ctx;
    weft__queue *q;
    weft__module *mod;
    weft__kernel *k;
    weft__mem *buf;
} weft_side;

static void weft_open(weft__device *dev, weft__source_kind kind,
                      const char *src, weft_side *w)
{
    weft__module_source ms = {kind, src, 0, NULL, "empty"};

    if (weft__drv_context_create(dev, &w->ctx) < 0 ||
        weft__drv_queue_create(w->ctx, NULL, &w->q) < 0 ||
        weft__drv_module_create(w->ctx, &ms, &w->mod) < 0 ||
        weft__drv_kernel_get(w->mod, "empty", &w->k) < 0 ||
        weft__drv_mem_alloc(w->ctx, 4096, &w->buf) < 0)
        bench_die("weft on %s: %s", dev->name, weft_last_error());
}

static double weft_round(weft_side *w, long n)
{
    weft__karg arg = {.type = WEFT_PARAM_BUFFER, .u.buf = {w->buf, 0}};
    weft__grid grid = {{1, 1, 1}, {1, 1, 1}, 0};
    uint64_t t0 = bench_now_ns();

    for (long i = 0; i < n; i++)
        if (weft__drv_launch(w->q, w->k, &grid, &arg, 1) < 0)
            bench_die("weft launch: %s", weft_last_error());
    if (weft__drv_queue_sync(w->q) < 0)
        bench_die("weft sync: %s", weft_last_error());
    return (double)(bench_now_ns() - t0) / 1e3 / (double)n;
}

static void weft_close(weft_side *w)
{
    weft__drv_mem_free(w->buf);
    weft__drv_module_destroy(w->mod);
    weft__drv_queue_destroy(w->q);
    weft__drv_context_destroy(w->ctx);
}

/* ---- raw CUDA ----------------------------------------------------------- */

typedef struct raw_cuda {
    weft__cu_Init_fn *Init;
    weft__cu_DeviceGet_fn *DeviceGet;
    weft__cu_DevicePrimaryCtxRetain_fn *PrimaryCtxRetain;
    weft__cu_CtxSetCurrent_fn *CtxSetCurrent;
    weft__cu_StreamCreateWithPriority_fn *StreamCreate;
    weft__cu_StreamSynchronize_fn *StreamSynchronize;
    weft__cu_ModuleLoadData_fn *ModuleLoadData;
    weft__cu_ModuleGetFunction_fn *ModuleGetFunction;
    weft__cu_LaunchKernel_fn *LaunchKernel;
    CUresult (*MemAlloc)(CUdeviceptr *p, size_t n);
    CUstream stream;
    CUfunction fn;
    CUdeviceptr buf;
} raw_cuda;

static void *sym(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        bench_die("libcuda has no %s", name);
    return p;
}

static void raw_cuda_open(raw_cuda *r, int ordinal)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;

    if (!lib)
        bench_die("dlopen libcuda.so.1: %s", dlerror());
    *(void **)&r->Init = sym(lib, "cuInit");
    *(void **)&r->DeviceGet = sym(lib, "cuDeviceGet");
    *(void **)&r->PrimaryCtxRetain = sym(lib, "cuDevicePrimaryCtxRetain");
    *(void **)&r->CtxSetCurrent = sym(lib, "cuCtxSetCurrent");
    *(void **)&r->StreamCreate = sym(lib, "cuStreamCreateWithPriority");
    *(void **)&r->StreamSynchronize = sym(lib, "cuStreamSynchronize");
    *(void **)&r->ModuleLoadData = sym(lib, "cuModuleLoadData");
    *(void **)&r->ModuleGetFunction = sym(lib, "cuModuleGetFunction");
    *(void **)&r->LaunchKernel = sym(lib, "cuLaunchKernel");
    *(void **)&r->MemAlloc = sym(lib, "cuMemAlloc_v2");
    if (r->Init(0) || r->DeviceGet(&dev, ordinal) ||
        r->PrimaryCtxRetain(&ctx, dev) || r->CtxSetCurrent(ctx) ||
        r->StreamCreate(&r->stream, CU_STREAM_NON_BLOCKING, 0) ||
        r->ModuleLoadData(&mod, ptx_empty) ||
        r->ModuleGetFunction(&r->fn, mod, "empty") ||
        r->MemAlloc(&r->buf, 4096))
        bench_die("raw CUDA set-up failed");
    /* the primary context, module and stream live until the process ends */
}

static double raw_cuda_round(raw_cuda *r, long n)
{
    void *params[] = {&r->buf};
    uint64_t t0 = bench_now_ns();

    for (long i = 0; i < n; i++)
        if (r->LaunchKernel(r->fn, 1, 1, 1, 1, 1, 1, 0, r->stream, params,
                            NULL))
            bench_die("raw cuLaunchKernel failed");
    if (r->StreamSynchronize(r->stream))
        bench_die("raw cuStreamSynchronize failed");
    return (double)(bench_now_ns() - t0) / 1e3 / (double)n;
}

/* ---- raw OpenCL --------------------------------------------------------- */

typedef struct raw_cl {
    cl_context ctx;
    cl_command_queue q;
    cl_kernel k;
    cl_mem buf;
} raw_cl;

/* The index-th OpenCL device over all platforms, as weft counts them. */
static void raw_cl_open(raw_cl *r, unsigned index)
{
    cl_platform_id plats[16];
    cl_device_id devs[64], dev = NULL;
    cl_uint np = 0, nd;
    cl_program prog;
    const char *src = cl_empty;
    cl_int err;

    if (clGetPlatformIDs(16, plats, &np) != CL_SUCCESS)
        bench_die("clGetPlatformIDs failed");
    for (cl_uint p = 0; p < np && !dev; p++) {
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 64, devs, &nd) !=
            CL_SUCCESS)
            continue;
        if (index < nd)
            dev = devs[index];
        else
            index -= nd;
    }
    if (!dev)
        bench_die("raw OpenCL: device not found");
    r->ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        bench_die("clCreateContext: %d", err);
    r->q = clCreateCommandQueueWithProperties(r->ctx, dev, NULL, &err);
    if (err != CL_SUCCESS)
        bench_die("clCreateCommandQueue: %d", err);
    prog = clCreateProgramWithSource(r->ctx, 1, &src, NULL, &err);
    if (err != CL_SUCCESS || clBuildProgram(prog, 1, &dev, "", NULL, NULL))
        bench_die("raw OpenCL build failed");
    r->k = clCreateKernel(prog, "empty", &err);
    if (err != CL_SUCCESS)
        bench_die("clCreateKernel: %d", err);
    r->buf = clCreateBuffer(r->ctx, CL_MEM_READ_WRITE, 4096, NULL, &err);
    if (err != CL_SUCCESS)
        bench_die("clCreateBuffer: %d", err);
    clReleaseProgram(prog);
}

static double raw_cl_round(raw_cl *r, long n)
{
    size_t g = 1, l = 1;
    uint64_t t0 = bench_now_ns();

    /* the arguments are set per launch, as weft does */
    for (long i = 0; i < n; i++)
        if (clSetKernelArg(r->k, 0, sizeof r->buf, &r->buf) ||
            clEnqueueNDRangeKernel(r->q, r->k, 1, NULL, &g, &l, 0, NULL, NULL))
            bench_die("raw clEnqueueNDRangeKernel failed");
    if (clFinish(r->q) != CL_SUCCESS)
        bench_die("raw clFinish failed");
    return (double)(bench_now_ns() - t0) / 1e3 / (double)n;
}

static void raw_cl_close(raw_cl *r)
{
    clReleaseMemObject(r->buf);
    clReleaseKernel(r->k);
    clReleaseCommandQueue(r->q);
    clReleaseContext(r->ctx);
}

/* ---- the comparison ----------------------------------------------------- */

static void compare(const char *driver, const char *devname, void *raw,
                    double (*raw_round)(void *, long), weft_side *w, long n)
{
    double r[64], ws[64], rm, wm;
    char name[160];

    raw_round(raw, n / 10 + 1); /* warm up both */
    weft_round(w, n / 10 + 1);
    for (int i = 0; i < rounds; i++) {
        r[i] = raw_round(raw, n);
        ws[i] = weft_round(w, n);
    }
    rm = bench_median(r, rounds);
    wm = bench_median(ws, rounds);
    bench_note("%s: %s, %ld launches x %d rounds, medians", driver, devname, n,
               rounds);
    snprintf(name, sizeof name, "%s raw launch", driver);
    bench_figure(name, rm, "us");
    snprintf(name, sizeof name, "%s weft launch", driver);
    bench_figure(name, wm, "us");
    snprintf(name, sizeof name, "%s weft overhead", driver);
    bench_figure(name, wm - rm, "us");
    snprintf(name, sizeof name, "%s weft/raw", driver);
    bench_figure(name, wm / rm, "x");
}

static double raw_cuda_round_v(void *r, long n)
{
    return raw_cuda_round(r, n);
}

static double raw_cl_round_v(void *r, long n)
{
    return raw_cl_round(r, n);
}

int main(int argc, char **argv)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt;
    int done_cuda = 0, done_cl = 0;

    const bench_option options[] = {
        {"--launches", BENCH_LONG, &launches, "N"},
        {"--rounds", BENCH_INT, &rounds, "R"},
    };

    BENCH_OPTIONS(argc, argv, "driver_overhead", options);
    if (launches < 10 || rounds < 1 || rounds > 64)
        bench_die("--launches >= 10 and 1 <= --rounds <= 64");
    o.devices = "cuda:*,opencl:*";
    if (weft_runtime_create(&rt, &o) < 0)
        bench_die("%s", weft_last_error());
    bench_begin(NULL);
    /* OpenCL: a GPU if there is one (it is what the figure is about) */
    int cl_gpu = 0;
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft__device *dev = weft__runtime_device(rt, i);
        if (strcmp(dev->drv->name, "opencl") == 0 &&
            dev->props.type == WEFT_DEVICE_GPU)
            cl_gpu = 1;
    }
    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft__device *dev = weft__runtime_device(rt, i);
        weft_side w = {0};

        if (strcmp(dev->drv->name, "opencl") == 0 && cl_gpu &&
            dev->props.type != WEFT_DEVICE_GPU)
            continue;

        if (strcmp(dev->drv->name, "cuda") == 0 && !done_cuda) {
            raw_cuda rc = {0};

            raw_cuda_open(&rc, (int)dev->driver_index);
            weft_open(dev, WEFT__SRC_PTX, ptx_empty, &w);
            compare("cuda", dev->name, &rc, raw_cuda_round_v, &w, launches);
            weft_close(&w);
            done_cuda = 1;
        } else if (strcmp(dev->drv->name, "opencl") == 0 && !done_cl) {
            raw_cl rc;

            raw_cl_open(&rc, dev->driver_index);
            weft_open(dev, WEFT__SRC_OPENCL_C, cl_empty, &w);
            compare("opencl", dev->name, &rc, raw_cl_round_v, &w, launches);
            weft_close(&w);
            raw_cl_close(&rc);
            done_cl = 1;
        }
    }
    bench_end();
    if (!done_cuda)
        bench_note("cuda: skipped (no CUDA device)");
    if (!done_cl)
        bench_note("opencl: skipped (no OpenCL device)");
    weft_runtime_destroy(rt);
    return 0;
}
