/*
 * launch_overhead: what a graph of N empty kernels costs per node, through
 * weft and through raw CUDA, in the same process.
 *
 * Two shapes of N kernel nodes (N = 1000 by default), each kernel empty
 * with one buffer parameter:
 *   chain   every node reads and writes the same small range: N - 1 edges;
 *   fan     every node writes its own slice of one buffer: no edges.
 * Figures, per node (medians of R; relaunch rounds alternate between the
 * weft and raw sides so that both see the same machine):
 *   weft <shape> instantiate    weft_graph_instantiate
 *   weft <shape> first launch   launch + wait of a fresh executable graph
 *                               on a fresh buffer (filled on the host)
 *   weft <shape> second launch  launch + wait of each fresh one again
 *                               (where a native graph is first made: the
 *                               lookahead's capture, or the first
 *                               launch's recording captured, then run)
 *   weft <shape> relaunch       launch + wait of it again
 *   raw stream                  N cuLaunchKernel on one stream, then
 *                               cuStreamSynchronize
 *   raw graph <shape> instantiate   cuGraphAddKernelNode N times (a chain:
 *                               each after the one before; a fan: none)
 *                               and cuGraphInstantiateWithFlags
 *   raw graph <shape> first launch  cuGraphLaunch + cuStreamSynchronize
 *   raw graph <shape> replay    the same again
 *   weft <shape> relaunch / raw graph, / raw stream   ratios of medians
 *
 * --ndev 2 spreads weft's nodes over the driver's first two devices: the
 * fan's round-robin, the chain's first half on one and second half on the
 * other (one hop). Native, that is a graph per device joined by an event
 * (src/sched/tape.h); the raw side stays on one device, so the ratios
 * compare two devices' relaunch with one device's replay.
 *
 * The raw side loads libcuda itself (weft's declarations of the Driver
 * API, cuda_api.h, plus the few graph entry points declared here) and runs
 * the PTX that weft is given. Without a CUDA device it prints "skipped:"
 * and the reason, and exits 0. --driver opencl, host or sim runs the weft
 * side alone on that driver's first device (PoCL, the host driver, a
 * simulated GPU: with native graphs, graphs=1, unless WEFT_SIM says
 * otherwise).
 *
 *     launch_overhead [--json] [--nodes N] [--reps R] [--ndev 1|2]
 *                     [--driver cuda|opencl|host|sim]
 */
#include <weft.h>

#include "drivers/cuda/cuda_api.h"
#include "bench.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAXREPS = 64 };

static uint32_t nodes = 1000;
static int reps = 7;
static const char *driver = "cuda";
static unsigned ndevs = 1;

static double us_per_node(uint64_t ns)
{
    return (double)ns / 1e3 / nodes;
}

/* ---- the kernel, in every form ------------------------------------------ */

static const char ptx_empty[] = ".version 7.0\n"
                                ".target sm_52\n"
                                ".address_size 64\n"
                                ".visible .entry empty(.param .u64 p)\n"
                                "{\n"
                                "    ret;\n"
                                "}\n";
static const char cl_empty[] = "__kernel void empty(__global int *p) {}\n";

static void empty_host(const weft_host_group *g, void *const *args)
{
    (void)g;
    (void)args;
}
static const weft_param_type empty_params[] = {WEFT_PARAM_BUFFER};
static const weft_host_kernel empty_table[] = {
    {"empty", empty_host, 1, empty_params, NULL, NULL, NULL},
};

typedef enum shape { CHAIN, FAN, NSHAPES } shape;
static const char *const shape_names[NSHAPES] = {"chain", "fan"};

/* ---- raw CUDA ----------------------------------------------------------- */

/*
 * The graph entry points, which weft's cuda_api.h does not declare (yet).
 * The node parameters are CUDA_KERNEL_NODE_PARAMS_v2; its first fields
 * are the whole of the v1 struct, so the unversioned entry point of an
 * older driver reads them alike.
 */
typedef struct cu_graph_st *cu_graph;
typedef struct cu_graph_exec_st *cu_graph_exec;
typedef struct cu_graph_node_st *cu_graph_node;
typedef struct cu_kernel_node_params {
    CUfunction func;
    unsigned grid[3], block[3], shared_bytes;
    void **params;
    void **extra;
    void *kern;    /* CUkernel: NULL, func says which */
    CUcontext ctx; /* NULL: the current context */
} cu_kernel_node_params;

typedef struct raw_cuda {
    weft__cuda_api cu;
    CUresult (*GraphCreate)(cu_graph *g, unsigned flags);
    CUresult (*GraphAddKernelNode)(cu_graph_node *node, cu_graph g,
                                   const cu_graph_node *deps, size_t ndeps,
                                   const cu_kernel_node_params *params);
    CUresult (*GraphInstantiateWithFlags)(cu_graph_exec *x, cu_graph g,
                                          unsigned long long flags);
    CUresult (*GraphLaunch)(cu_graph_exec x, CUstream s);
    CUresult (*GraphExecDestroy)(cu_graph_exec x);
    CUresult (*GraphDestroy)(cu_graph g);
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUstream stream;
    CUdeviceptr buf; /* nodes slices: the fan's; the chain uses the first */
    size_t slice;
    cu_graph graph[NSHAPES];
    cu_graph_exec exec[NSHAPES];
} raw_cuda;

#define CU(r, call)                                                            \
    do {                                                                       \
        CUresult res_ = (r)->cu.call;                                          \
        if (res_ != CUDA_SUCCESS) {                                            \
            const char *name_ = "?";                                           \
            (r)->cu.GetErrorName(res_, &name_);                                \
            bench_die("%s: %s (%d)", #call, name_, res_);                      \
        }                                                                      \
    } while (0)
#define CUG(r, call)                                                           \
    do {                                                                       \
        CUresult res_ = (r)->call;                                             \
        if (res_ != CUDA_SUCCESS) {                                            \
            const char *name_ = "?";                                           \
            (r)->cu.GetErrorName(res_, &name_);                                \
            bench_die("%s: %s (%d)", #call, name_, res_);                      \
        }                                                                      \
    } while (0)

static void *raw_sym(void *lib, const char *name, const char *alt)
{
    void *p = dlsym(lib, name);

    return p || !alt ? p : dlsym(lib, alt);
}

/*
 * libcuda in our own table (the baseline must not go through weft): NULL
 * on success, else why not.
 */
static const char *raw_load(raw_cuda *r)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!lib)
        return "libcuda.so.1 not found";
#define RAW_LOAD(m, req, name, alt)                                            \
    *(void **)&r->cu.m = raw_sym(lib, name, alt);                              \
    if (!r->cu.m && (req))                                                     \
        return "libcuda lacks " name;
    WEFT__CUDA_FUNCS(RAW_LOAD)
#undef RAW_LOAD
    *(void **)&r->GraphCreate = raw_sym(lib, "cuGraphCreate", NULL);
    *(void **)&r->GraphAddKernelNode =
        raw_sym(lib, "cuGraphAddKernelNode_v2", "cuGraphAddKernelNode");
    *(void **)&r->GraphInstantiateWithFlags =
        raw_sym(lib, "cuGraphInstantiateWithFlags", NULL);
    *(void **)&r->GraphLaunch = raw_sym(lib, "cuGraphLaunch", NULL);
    *(void **)&r->GraphExecDestroy = raw_sym(lib, "cuGraphExecDestroy", NULL);
    *(void **)&r->GraphDestroy = raw_sym(lib, "cuGraphDestroy", NULL);
    if (!r->GraphCreate || !r->GraphAddKernelNode ||
        !r->GraphInstantiateWithFlags || !r->GraphLaunch ||
        !r->GraphExecDestroy || !r->GraphDestroy)
        return "libcuda lacks the graph API (CUDA 11.4 or later)";
    r->cu.lib = lib;
    return r->cu.Init(0) == CUDA_SUCCESS ? NULL : "cuInit failed";
}

static void raw_open(raw_cuda *r, int ordinal, size_t slice)
{
    r->slice = slice;
    CU(r, DeviceGet(&r->dev, ordinal));
    CU(r, DevicePrimaryCtxRetain(&r->ctx, r->dev));
    CU(r, CtxSetCurrent(r->ctx));
    CU(r, ModuleLoadData(&r->mod, ptx_empty));
    CU(r, ModuleGetFunction(&r->fn, r->mod, "empty"));
    CU(r, StreamCreateWithPriority(&r->stream, CU_STREAM_NON_BLOCKING, 0));
    CU(r, MemAlloc(&r->buf, (size_t)nodes * slice));
}

static void raw_close(raw_cuda *r)
{
    CU(r, CtxSetCurrent(r->ctx));
    for (int s = 0; s < NSHAPES; s++) {
        if (r->exec[s])
            CUG(r, GraphExecDestroy(r->exec[s]));
        if (r->graph[s])
            CUG(r, GraphDestroy(r->graph[s]));
    }
    CU(r, MemFree(r->buf));
    CU(r, StreamDestroy(r->stream));
    CU(r, ModuleUnload(r->mod));
    CU(r, DevicePrimaryCtxRelease(r->dev));
}

/* N launches on one stream, then a synchronize: us per node. */
static double raw_stream_round(raw_cuda *r)
{
    CUdeviceptr p = r->buf;
    void *params[] = {&p};
    uint64_t t0;

    CU(r, CtxSetCurrent(r->ctx)); /* weft's calls on this thread may not */
    t0 = bench_now_ns();
    for (uint32_t i = 0; i < nodes; i++)
        CU(r,
           LaunchKernel(r->fn, 1, 1, 1, 1, 1, 1, 0, r->stream, params, NULL));
    CU(r, StreamSynchronize(r->stream));
    return us_per_node(bench_now_ns() - t0);
}

/* Build and instantiate the shape's graph (again): us per node. */
static double raw_graph_build(raw_cuda *r, shape s)
{
    cu_graph_node prev = NULL, node;
    uint64_t t0;

    CU(r, CtxSetCurrent(r->ctx));
    if (r->exec[s])
        CUG(r, GraphExecDestroy(r->exec[s]));
    if (r->graph[s])
        CUG(r, GraphDestroy(r->graph[s]));
    t0 = bench_now_ns();
    CUG(r, GraphCreate(&r->graph[s], 0));
    for (uint32_t i = 0; i < nodes; i++) {
        CUdeviceptr p = r->buf + (s == FAN ? (CUdeviceptr)i * r->slice : 0);
        void *params[] = {&p}; /* copied by the call */
        cu_kernel_node_params kp = {r->fn,  {1, 1, 1}, {1, 1, 1}, 0,
                                    params, NULL,      NULL,      NULL};

        CUG(r, GraphAddKernelNode(&node, r->graph[s], &prev,
                                  s == CHAIN && prev ? 1 : 0, &kp));
        prev = node;
    }
    CUG(r, GraphInstantiateWithFlags(&r->exec[s], r->graph[s], 0));
    return us_per_node(bench_now_ns() - t0);
}

/* One replay of the shape's graph, to the end: us per node. */
static double raw_graph_round(raw_cuda *r, shape s)
{
    uint64_t t0;

    CU(r, CtxSetCurrent(r->ctx));
    t0 = bench_now_ns();
    CUG(r, GraphLaunch(r->exec[s], r->stream));
    CU(r, StreamSynchronize(r->stream));
    return us_per_node(bench_now_ns() - t0);
}

/* ---- weft --------------------------------------------------------------- */

typedef struct weft_side {
    weft_runtime *rt;
    const weft_device *dev;  /* every node runs here, as the raw side's */
    const weft_device *dev2; /* --ndev 2: the second device, else NULL */
    weft_kernel *k;
    size_t slice;
    weft_buffer *buf[NSHAPES]; /* one per shape: no root shared by two */
    weft_graph *graph[NSHAPES];
    weft_exec *exec[NSHAPES];
} weft_side;

static void weft_build(weft_side *w, shape s)
{
    size_t size = s == FAN ? (size_t)nodes * w->slice : w->slice;
    uint32_t zero = 0;

    bench_check(weft_buffer_create(w->rt, size, &w->buf[s]));
    bench_check(weft_buffer_fill(w->buf[s], 0, size, &zero, sizeof zero));
    bench_check(weft_graph_create(w->rt, &w->graph[s]));
    for (uint32_t i = 0; i < nodes; i++) {
        weft_arg arg =
            s == FAN ? weft_arg_buffer(w->buf[s], (size_t)i * w->slice,
                                       w->slice, WEFT_WRITE)
                     : weft_arg_buffer(w->buf[s], 0, w->slice, WEFT_READ_WRITE);
        weft_node n;

        bench_check(weft_graph_add_kernel(w->graph[s], w->k, weft_dims1(1),
                                          &arg, 1, &n));
        if (w->dev2)
            bench_check(weft_graph_set_device(
                w->graph[s], n,
                (s == FAN ? i % 2 : i >= nodes / 2) ? w->dev2 : w->dev));
    }
    if (weft_graph_edge_count(w->graph[s]) != (s == CHAIN ? nodes - 1 : 0))
        bench_die("%s: %u edges", shape_names[s],
                  weft_graph_edge_count(w->graph[s]));
}

/*
 * reps fresh executable graphs of the shape, each on a fresh buffer (the
 * program's first launch on its bytes): instantiate, first launch and
 * second launch, us per node, medians. The last one stays for the relaunches.
 * (Not inlined: tests/gpu/profile_launch.sh finds its callees in perf's call
 * graphs.)
 */
__attribute__((noinline)) static void
weft_first(weft_side *w, shape s, double *inst, double *first, double *second)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    double ti[MAXREPS], tf[MAXREPS], t2[MAXREPS];

    o.device = w->dev2 ? NULL : w->dev; /* two: each node's own */
    for (int r = 0; r < reps; r++) {
        uint64_t t0, t1;

        if (w->exec[s]) {
            bench_check(weft_exec_destroy(w->exec[s]));
            bench_check(weft_graph_destroy(w->graph[s]));
            bench_check(weft_buffer_destroy(w->buf[s]));
        }
        weft_build(w, s);
        t0 = bench_now_ns();
        bench_check(weft_graph_instantiate(w->graph[s], &o, &w->exec[s]));
        t1 = bench_now_ns();
        bench_check(weft_exec_launch(w->exec[s]));
        bench_check(weft_exec_wait(w->exec[s]));
        ti[r] = us_per_node(t1 - t0);
        tf[r] = us_per_node((t0 = bench_now_ns()) - t1);
        bench_check(weft_exec_launch(w->exec[s]));
        bench_check(weft_exec_wait(w->exec[s]));
        t2[r] = us_per_node(bench_now_ns() - t0);
    }
    *inst = bench_median(ti, reps);
    *first = bench_median(tf, reps);
    *second = bench_median(t2, reps);
}

static double weft_round(weft_side *w, shape s)
{
    uint64_t t0 = bench_now_ns();

    bench_check(weft_exec_launch(w->exec[s]));
    bench_check(weft_exec_wait(w->exec[s]));
    return us_per_node(bench_now_ns() - t0);
}

static void weft_close(weft_side *w)
{
    for (int s = 0; s < NSHAPES; s++) {
        bench_check(weft_exec_destroy(w->exec[s]));
        bench_check(weft_graph_destroy(w->graph[s]));
        bench_check(weft_buffer_destroy(w->buf[s]));
    }
}

/* ---- the comparison ----------------------------------------------------- */

static void figure(const char *a, const char *b, double value, const char *unit)
{
    char name[128];

    snprintf(name, sizeof name, "%s %s", a, b);
    bench_figure(name, value, unit);
}

/* Print "skipped: why" (or its JSON) and end the run successfully. */
static void skip(const char *why)
{
    if (bench_json) {
        printf("{\"bench\": \"launch_overhead\", \"skipped\": \"");
        for (const char *c = why; *c; c++) /* a JSON string */
            if (*c == '"' || *c == '\\')
                printf("\\%c", *c);
            else if ((unsigned char)*c >= ' ')
                putchar(*c);
        printf("\"}\n");
    } else {
        printf("skipped: %s\n", why);
    }
    exit(0);
}

int main(int argc, char **argv)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_device_info info = {.size = sizeof info};
    const weft_module_source v[] = {
        {WEFT_SOURCE_PTX, ptx_empty, 0, NULL, "empty.ptx"},
        {WEFT_SOURCE_OPENCL_C, cl_empty, 0, NULL, "empty.cl"},
        {WEFT_SOURCE_HOST, empty_table, 1, NULL, "empty (C)"},
    };
    double wi[NSHAPES], wf[NSHAPES], w2[NSHAPES], wr[NSHAPES][MAXREPS];
    double ri[NSHAPES], rf[NSHAPES], rg[NSHAPES][MAXREPS], rs[MAXREPS];
    weft_side w = {0};
    raw_cuda *raw = NULL;
    weft_module *mod;
    unsigned dev = 0, ndev;
    char why[256];
    const bench_option options[] = {
        {"--nodes", BENCH_U32, &nodes, "N"},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--driver", BENCH_STRING, &driver, "cuda|opencl|host|sim"},
        {"--ndev", BENCH_UNSIGNED, &ndevs, "1|2"},
    };

    BENCH_OPTIONS(argc, argv, "launch_overhead", options);
    if (nodes < 2 || reps < 1 || reps > MAXREPS || ndevs < 1 || ndevs > 2)
        bench_die("--nodes >= 2, 1 <= --reps <= %d and --ndev 1 or 2", MAXREPS);
    if (strcmp(driver, "cuda") && strcmp(driver, "opencl") &&
        strcmp(driver, "host") && strcmp(driver, "sim"))
        bench_usage();

    /* The driver's first device (WEFT_DEVICES may still narrow it). */
    o.devices = driver;
    if (!getenv("WEFT_SIM"))
        o.sim_config = "graphs=1";
    bench_check(weft_runtime_create(&w.rt, &o));
    ndev = weft_runtime_device_count(w.rt);
    for (dev = 0; dev < ndev; dev++) {
        bench_check(
            weft_device_get_info(weft_runtime_device(w.rt, dev), &info));
        if (strcmp(info.driver, driver) == 0)
            break;
    }
    if (dev == ndev) {
        const char *reason = "";

        for (unsigned d = 0; d < weft_runtime_driver_count(w.rt); d++) {
            const char *name, *r;

            if (weft_runtime_driver(w.rt, d, &name, NULL, NULL, &r) == 0 &&
                strcmp(name, driver) == 0)
                reason = r;
        }
        snprintf(why, sizeof why, "no %s device%s%s", driver,
                 reason[0] ? ": " : "", reason);
        weft_runtime_destroy(w.rt);
        skip(why);
    }
    if (strcmp(driver, "cuda") == 0) {
        const char *no;

        raw = calloc(1, sizeof *raw);
        if (!raw)
            bench_die("out of memory");
        if ((no = raw_load(raw)) != NULL) {
            snprintf(why, sizeof why, "raw CUDA: %s", no);
            weft_runtime_destroy(w.rt);
            skip(why);
        }
    }

    w.dev = weft_runtime_device(w.rt, dev);
    if (ndevs == 2) {
        weft_device_info i2 = {.size = sizeof i2};

        if (dev + 1 < ndev)
            bench_check(
                weft_device_get_info(weft_runtime_device(w.rt, dev + 1), &i2));
        if (dev + 1 >= ndev || strcmp(i2.driver, driver) != 0) {
            snprintf(why, sizeof why, "--ndev 2: one %s device", driver);
            weft_runtime_destroy(w.rt);
            skip(why);
        }
        w.dev2 = weft_runtime_device(w.rt, dev + 1);
    }
    w.slice = info.arg_offset_align > 64 ? info.arg_offset_align : 64;
    bench_check(weft_module_create(w.rt, v, 3, &mod));
    bench_check(weft_module_get_kernel(mod, "empty", &w.k));
    bench_begin("\"device\": \"%s\", \"driver\": \"%s\", \"nodes\": %u, "
                "\"reps\": %d",
                info.name, info.driver, nodes, reps);
    bench_note("%s:%u (%s)%s, %u empty kernels per graph, medians of %d",
               info.driver, info.driver_index, info.name,
               w.dev2 ? " and the next (weft's nodes over both)" : "", nodes,
               reps);

    for (int s = 0; s < NSHAPES; s++) {
        bench_progress(shape_names[s]);
        weft_first(&w, (shape)s, &wi[s], &wf[s], &w2[s]);
    }
    if (raw) {
        raw_open(raw, (int)info.driver_index, w.slice);
        raw_stream_round(raw); /* warm up */
        /* as weft's: reps fresh graphs, the last one stays */
        for (int s = 0; s < NSHAPES; s++) {
            double ti[MAXREPS], tf[MAXREPS];

            for (int r = 0; r < reps; r++) {
                ti[r] = raw_graph_build(raw, (shape)s);
                tf[r] = raw_graph_round(raw, (shape)s);
            }
            ri[s] = bench_median(ti, reps);
            rf[s] = bench_median(tf, reps);
        }
    }
    bench_progress("relaunching");
    for (int r = 0; r < reps; r++) {
        if (raw) {
            rs[r] = raw_stream_round(raw);
            for (int s = 0; s < NSHAPES; s++)
                rg[s][r] = raw_graph_round(raw, (shape)s);
        }
        for (int s = 0; s < NSHAPES; s++)
            wr[s][r] = weft_round(&w, (shape)s);
    }
    bench_progress("");
    for (int s = 0; s < NSHAPES; s++) {
        weft_exec_stats st = {.size = sizeof st};

        bench_check(weft_exec_get_stats(w.exec[s], &st));
        bench_note(
            "weft %s: %llu launches, %llu native (%u driver graphs), %llu of "
            "them replayed without an issue",
            shape_names[s], (unsigned long long)st.launches,
            (unsigned long long)st.native_launches, st.native_graphs,
            (unsigned long long)st.native_replays);
    }

    double rsm = raw ? bench_median(rs, reps) : 0;

    if (raw)
        bench_figure("raw stream", rsm, "us/node");
    else
        bench_note("raw CUDA figures: skipped (driver %s)", driver);

    for (int s = 0; s < NSHAPES; s++) {
        const char *sn = shape_names[s];
        double m = bench_median(wr[s], reps);
        char who[32];

        snprintf(who, sizeof who, "weft %s", sn);
        figure(who, "instantiate", wi[s], "us/node");
        figure(who, "first launch", wf[s], "us/node");
        figure(who, "second launch", w2[s], "us/node");
        figure(who, "relaunch", m, "us/node");
        if (!raw)
            continue;
        double gm = bench_median(rg[s], reps);

        snprintf(who, sizeof who, "raw graph %s", sn);
        figure(who, "instantiate", ri[s], "us/node");
        figure(who, "first launch", rf[s], "us/node");
        figure(who, "replay", gm, "us/node");
        snprintf(who, sizeof who, "weft %s relaunch", sn);
        figure(who, "/ raw graph", m / gm, "x");
        figure(who, "/ raw stream", m / rsm, "x");
    }
    bench_end();

    weft_close(&w);
    bench_check(weft_module_destroy(mod));
    bench_check(weft_runtime_destroy(w.rt));
    if (raw)
        raw_close(raw);
    free(raw);
    return 0;
}
