/*
 * overlap: copies and kernels of a chunked pipeline running side by side.
 *
 * A large array (1 GiB by default) goes through the device in chunks (16
 * by default): copy a chunk in, run a kernel on it, copy it out. The
 * kernel does iters dependent multiply-adds per element, calibrated here
 * so that one chunk's kernel takes about as long as one chunk's copy in;
 * then a perfect pipeline hides two thirds of the serial time.
 *
 *     overlap [--json] [--mib N] [--chunks C] [--iters K] [--reps R]
 *             [--ndev D] [--trace FILE] [--sim-fma-rate F]
 *
 * Figures (milliseconds are medians of R launches after one warm-up):
 *   serial               raw CUDA, copy in / kernel / copy out of every
 *                        chunk one after another on one stream, device 0
 *   hand pipelined       raw CUDA, three streams per device (copy in,
 *                        compute, copy out) with an event between stages,
 *                        chunks dealt round-robin over D devices
 *   weft                 one graph of C write/kernel/read chains through
 *                        the public API, from and to the same pinned host
 *                        memory as the raw figures (pageable where there
 *                        is no CUDA), relaunched
 *   weft wrapped         the same work on wrapped (pageable) user memory:
 *                        a kernel reads the chunk of a wrapped input and
 *                        a map node brings the chunk of a wrapped output
 *                        home; the input is invalidated before each launch
 *                        as if the program had refilled it, so every
 *                        launch moves every byte
 *   weft pageable        (where CUDA is) the weft graph from and to
 *                        pageable memory: every launch streams its input
 *                        through the pinned stager, the bound for a
 *                        first launch from pageable memory
 *   ... first launch     the first launch of each weft graph, on buffers
 *                        nothing has used (device memory is allocated
 *                        then, pinned staging buffers too), and its ratio
 *                        to the graph's steady launch (first/steady)
 *   weft/hand, serial/weft   ratios of the medians (the issue's target is
 *                        weft/hand <= 1.05)
 *   ... overlap          how much of the saving a perfect pipeline could
 *                        make this run made: (S - T) / (S - L), with S the
 *                        sum of the stage times of every chunk (what serial
 *                        costs) and L the perfect pipeline's time, the
 *                        slowest stage of ceil(C/D) chunks plus the other
 *                        two stages of one chunk to fill and drain it
 * On the sim driver the times are also given in virtual time (the sim's
 * record), where they are the model's prediction for the configured
 * machine. Without CUDA the raw figures are skipped and weft runs on the
 * first device there is, for a smoke run.
 *
 * The raw side loads libcuda itself and runs hand-written PTX that weft
 * is given too, so that both run the same machine code.
 */
#include "drivers/cuda/cuda_api.h"
#include "drivers/sim/sim.h"
#include "bench.h"
#include "runtime.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAXDEV = 16, MAXREPS = 64 };

static size_t bytes = (size_t)1 << 30;
static unsigned chunks = 16, ndev = 1;
static int reps = 7;
static uint32_t iters;              /* 0: calibrate */
static double sim_fma_rate = 33500; /* multiply-adds per ns: H200 FP32 */
static const char *trace_path;

/* Derived from the above. */
static size_t chunk_bytes;
static uint32_t chunk_elems;

static double ms_since(uint64_t t0)
{
    return (double)(bench_now_ns() - t0) / 1e6;
}

/* ---- the kernel -------------------------------------------------------- */

/*
 * out[i] = in[i] after iters steps of x = x * 0.999 + 0.001. The steps
 * depend on each other, so no compiler folds them, and the memory traffic
 * stays 8 bytes per element whatever iters is: iters sets the duration.
 */
static const char work_portable[] =
    "WEFT_KERNEL void work(WEFT_GLOBAL float *out, WEFT_GLOBAL const float "
    "*in,\n"
    "                      weft_u32 n, weft_u32 iters)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < n) {\n"
    "        float x = in[i];\n"
    "        for (weft_u32 k = 0; k < iters; k++)\n"
    "            x = x * 0.999f + 0.001f;\n"
    "        out[i] = x;\n"
    "    }\n"
    "}\n";

/*
 * The same kernel in PTX, for both the raw baselines and weft's CUDA
 * devices. 0f3F7FBE77 is 0.999f and 0f3A83126F is 0.001f.
 */
static const char work_ptx[] =
    ".version 7.0\n"
    ".target sm_52\n"
    ".address_size 64\n"
    ".visible .entry work(.param .u64 out_p, .param .u64 in_p,\n"
    "                     .param .u32 n_p, .param .u32 iters_p)\n"
    "{\n"
    "    .reg .pred %p<3>;\n"
    "    .reg .b32 %r<8>;\n"
    "    .reg .f32 %f<2>;\n"
    "    .reg .b64 %rd<6>;\n"
    "    ld.param.u64 %rd1, [out_p];\n"
    "    ld.param.u64 %rd2, [in_p];\n"
    "    ld.param.u32 %r1, [n_p];\n"
    "    ld.param.u32 %r2, [iters_p];\n"
    "    mov.u32 %r3, %ctaid.x;\n"
    "    mov.u32 %r4, %ntid.x;\n"
    "    mov.u32 %r5, %tid.x;\n"
    "    mad.lo.u32 %r6, %r3, %r4, %r5;\n"
    "    setp.ge.u32 %p1, %r6, %r1;\n"
    "    @%p1 bra DONE;\n"
    "    cvta.to.global.u64 %rd1, %rd1;\n"
    "    cvta.to.global.u64 %rd2, %rd2;\n"
    "    mul.wide.u32 %rd3, %r6, 4;\n"
    "    add.s64 %rd4, %rd2, %rd3;\n"
    "    ld.global.f32 %f1, [%rd4];\n"
    "    mov.u32 %r7, 0;\n"
    "    setp.eq.u32 %p2, %r2, 0;\n"
    "    @%p2 bra STORE;\n"
    "LOOP:\n"
    "    fma.rn.f32 %f1, %f1, 0f3F7FBE77, 0f3A83126F;\n"
    "    add.u32 %r7, %r7, 1;\n"
    "    setp.lt.u32 %p2, %r7, %r2;\n"
    "    @%p2 bra LOOP;\n"
    "STORE:\n"
    "    add.s64 %rd5, %rd1, %rd3;\n"
    "    st.global.f32 [%rd5], %f1;\n"
    "DONE:\n"
    "    ret;\n"
    "}\n";

static float work_one(float x, uint32_t k)
{
    while (k--)
        x = x * 0.999f + 0.001f;
    return x;
}

static void work_host(const weft_host_group *g, void *const *args)
{
    float *out = args[0];
    const float *in = args[1];
    uint32_t n = *(const uint32_t *)args[2];
    uint32_t k = *(const uint32_t *)args[3];
    uint32_t first = g->group[0] * g->group_size[0];

    for (uint32_t i = first; i < first + g->group_size[0] && i < n; i++)
        out[i] = work_one(in[i], k);
}

/*
 * A simulated launch: the multiply-adds at sim_fma_rate plus 8 bytes per
 * element at an H200's 4.8 TB/s. Scalars reach the cost function even
 * when buffers do not (real_data=0).
 */
static uint64_t work_sim_cost(uint64_t items, void *const *args, void *user)
{
    uint32_t k = args[3] ? *(const uint32_t *)args[3] : 0;

    (void)user;
    return (uint64_t)((double)items * k / sim_fma_rate +
                      (double)items * 8 / 4800.0);
}

static const weft_param_type work_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_U32};
static const weft_host_kernel work_table[] = {
    {"work", work_host, 4, work_params, NULL, work_sim_cost, NULL}};

/* Input values in [0, 1): every output differs from its input. */
static void fill_input(float *in, size_t n)
{
    for (size_t i = 0; i < n; i++)
        in[i] = (float)(i & 1023) / 1024.0f;
}

/*
 * Check a sample of out against the host's result. GPUs fuse the
 * multiply-add and C11 does not, so allow for rounding: the recurrence
 * contracts, and the difference stays near one float step per element.
 */
static void check(const char *what, const float *out, size_t n)
{
    size_t step = n / 4096 ? n / 4096 : 1;

    for (size_t i = 0; i < n; i += step) {
        float want = work_one((float)(i & 1023) / 1024.0f, iters);

        if (!(fabsf(out[i] - want) <= 1e-3f))
            bench_die("%s: out[%zu] = %g, expected %g", what, i, (double)out[i],
                      (double)want);
    }
}

/* ---- raw CUDA ---------------------------------------------------------- */

static weft__cuda_api cu;

/* One device of the hand-written pipeline. */
typedef struct raw_gpu {
    CUdevice dev;
    CUcontext ctx;
    CUmodule mod;
    CUfunction fn;
    CUstream s[3];              /* copy in, compute, copy out */
    CUevent *copied, *computed; /* per chunk slot */
    CUdeviceptr din, dout;      /* slots chunks each */
    unsigned slots;
} raw_gpu;

static raw_gpu gpu[MAXDEV];

#define CU(call)                                                               \
    do {                                                                       \
        CUresult res_ = (call);                                                \
        if (res_ != CUDA_SUCCESS) {                                            \
            const char *name_ = "?";                                           \
            cu.GetErrorName(res_, &name_);                                     \
            bench_die("%s: %s (%d)", #call, name_, res_);                      \
        }                                                                      \
    } while (0)

static void *raw_sym(void *lib, const char *name, const char *alt)
{
    void *p = dlsym(lib, name);

    return p || !alt ? p : dlsym(lib, alt);
}

/*
 * Load libcuda into our own table (not weft's: the baseline must not go
 * through weft). 0, or -1 if there is no usable libcuda.
 */
static int raw_load(void)
{
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!lib)
        return -1;
#define RAW_LOAD(m, req, name, alt)                                            \
    *(void **)&cu.m = raw_sym(lib, name, alt);                                 \
    if (!cu.m && (req))                                                        \
        return -1;
    WEFT__CUDA_FUNCS(RAW_LOAD)
#undef RAW_LOAD
    cu.lib = lib;
    return cu.Init(0) == CUDA_SUCCESS ? 0 : -1;
}

/* Device g (CUDA ordinal) with room for slots chunks. */
static void raw_open(raw_gpu *r, int ordinal, unsigned slots)
{
    CU(cu.DeviceGet(&r->dev, ordinal));
    CU(cu.DevicePrimaryCtxRetain(&r->ctx, r->dev));
    CU(cu.CtxSetCurrent(r->ctx));
    CU(cu.ModuleLoadData(&r->mod, work_ptx));
    CU(cu.ModuleGetFunction(&r->fn, r->mod, "work"));
    for (int i = 0; i < 3; i++)
        CU(cu.StreamCreateWithPriority(&r->s[i], CU_STREAM_NON_BLOCKING, 0));
    r->slots = slots;
    r->copied = calloc(slots, sizeof *r->copied);
    r->computed = calloc(slots, sizeof *r->computed);
    if (!r->copied || !r->computed)
        bench_die("out of memory");
    for (unsigned i = 0; i < slots; i++) {
        CU(cu.EventCreate(&r->copied[i], CU_EVENT_DISABLE_TIMING));
        CU(cu.EventCreate(&r->computed[i], CU_EVENT_DISABLE_TIMING));
    }
    CU(cu.MemAlloc(&r->din, slots * chunk_bytes));
    CU(cu.MemAlloc(&r->dout, slots * chunk_bytes));
}

static void raw_close(raw_gpu *r)
{
    CU(cu.CtxSetCurrent(r->ctx));
    CU(cu.MemFree(r->din));
    CU(cu.MemFree(r->dout));
    for (unsigned i = 0; i < r->slots; i++) {
        CU(cu.EventDestroy(r->copied[i]));
        CU(cu.EventDestroy(r->computed[i]));
    }
    for (int i = 0; i < 3; i++)
        CU(cu.StreamDestroy(r->s[i]));
    CU(cu.ModuleUnload(r->mod));
    CU(cu.DevicePrimaryCtxRelease(r->dev));
    free(r->copied);
    free(r->computed);
}

static void raw_kernel(raw_gpu *r, unsigned slot, uint32_t k, CUstream s)
{
    CUdeviceptr out = r->dout + slot * chunk_bytes;
    CUdeviceptr in = r->din + slot * chunk_bytes;
    uint32_t n = chunk_elems;
    void *params[] = {&out, &in, &n, &k};

    CU(cu.LaunchKernel(r->fn, (n + 255) / 256, 1, 1, 256, 1, 1, 0, s, params,
                       NULL));
}

/* Every chunk on device 0, one stream, one operation after another. */
static double raw_serial(const float *hin, float *hout)
{
    raw_gpu *r = &gpu[0];
    CUstream s = r->s[1];
    uint64_t t0;

    CU(cu.CtxSetCurrent(r->ctx));
    t0 = bench_now_ns();
    for (unsigned c = 0; c < chunks; c++) {
        size_t off = c * chunk_bytes;

        CU(cu.MemcpyHtoDAsync(r->din + off, (const char *)hin + off,
                              chunk_bytes, s));
        raw_kernel(r, c, iters, s);
        CU(cu.MemcpyDtoHAsync((char *)hout + off, r->dout + off, chunk_bytes,
                              s));
    }
    CU(cu.StreamSynchronize(s));
    return ms_since(t0);
}

/*
 * What an expert writes: per device a stream for each stage, an event
 * after each chunk's copy in that its kernel waits for, and one after its
 * kernel that its copy out waits for. Chunks are dealt round-robin, and
 * issued in chunk order so that every device starts at once.
 */
static double raw_pipelined(const float *hin, float *hout)
{
    uint64_t t0 = bench_now_ns();

    for (unsigned c = 0; c < chunks; c++) {
        raw_gpu *r = &gpu[c % ndev];
        unsigned slot = c / ndev;
        size_t off = c * chunk_bytes, doff = slot * chunk_bytes;

        CU(cu.CtxSetCurrent(r->ctx));
        CU(cu.MemcpyHtoDAsync(r->din + doff, (const char *)hin + off,
                              chunk_bytes, r->s[0]));
        CU(cu.EventRecord(r->copied[slot], r->s[0]));
        CU(cu.StreamWaitEvent(r->s[1], r->copied[slot], 0));
        raw_kernel(r, slot, iters, r->s[1]);
        CU(cu.EventRecord(r->computed[slot], r->s[1]));
        CU(cu.StreamWaitEvent(r->s[2], r->computed[slot], 0));
        CU(cu.MemcpyDtoHAsync((char *)hout + off, r->dout + doff, chunk_bytes,
                              r->s[2]));
    }
    for (unsigned g = 0; g < ndev; g++) {
        CU(cu.CtxSetCurrent(gpu[g].ctx));
        for (int i = 0; i < 3; i++)
            CU(cu.StreamSynchronize(gpu[g].s[i]));
    }
    return ms_since(t0);
}

/* One chunk's stages alone on device 0: copy in, kernel of k, copy out. */
static void raw_stages(const float *hin, float *hout, uint32_t k, double *h,
                       double *kt, double *d)
{
    raw_gpu *r = &gpu[0];
    CUstream s = r->s[1];
    double vh[MAXREPS], vk[MAXREPS], vd[MAXREPS];

    CU(cu.CtxSetCurrent(r->ctx));
    for (int i = 0; i < reps; i++) {
        uint64_t t0 = bench_now_ns();

        CU(cu.MemcpyHtoDAsync(r->din, hin, chunk_bytes, s));
        CU(cu.StreamSynchronize(s));
        vh[i] = ms_since(t0);
        t0 = bench_now_ns();
        raw_kernel(r, 0, k, s);
        CU(cu.StreamSynchronize(s));
        vk[i] = ms_since(t0);
        t0 = bench_now_ns();
        CU(cu.MemcpyDtoHAsync(hout, r->dout, chunk_bytes, s));
        CU(cu.StreamSynchronize(s));
        vd[i] = ms_since(t0);
    }
    *h = bench_median(vh, reps);
    *kt = bench_median(vk, reps);
    *d = bench_median(vd, reps);
}

/* ---- weft -------------------------------------------------------------- */

typedef struct bench {
    weft_runtime *rt;
    weft_kernel *work;
    const weft_device *dev[MAXDEV];
    weft__device *sim; /* device 0 if it is simulated, else NULL */
    int real_data;     /* kernels compute (not a counting-only sim) */
} bench;

/*
 * A launch's medians: wall clock, and virtual time on the sim; and the
 * first launch of the executable graph (on buffers no launch has used).
 */
typedef struct timing {
    double wall_ms, virt_ms, first_ms;
    weft_stats moved; /* per launch */
} timing;

/* Called before each launch, outside the timed span. */
typedef void before_launch_fn(void *user);

/*
 * The virtual time a launch took on the sim: from where the sim's clock
 * stood when it began (everything before had completed: the previous
 * launch was waited for) to the latest end of an operation recorded since
 * the record was cleared. An operation that starts before the launch
 * began can only come from a submitting thread whose virtual clock lags
 * (it never waited on the sim): it makes the figure too small, so it is
 * counted for a warning.
 */
static unsigned sim_early_ops;

static double sim_span_ms(weft__device *sim, uint64_t began)
{
    size_t n;
    const weft__sim_op *op = weft__sim_record(sim, &n);
    uint64_t last = began;

    for (size_t i = 0; i < n; i++) {
        if (op[i].engine != WEFT__SIM_ENGINE_NONE && op[i].start_ns < began)
            sim_early_ops++;
        if (op[i].end_ns > last)
            last = op[i].end_ns;
    }
    return (double)(last - began) / 1e6;
}

/*
 * Launch e once (the first launch, timed on its own), then reps times;
 * medians into *t.
 */
static void time_exec(bench *b, weft_exec *e, before_launch_fn *before,
                      void *user, timing *t)
{
    double wall[MAXREPS], virt[MAXREPS];
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};

    for (int i = -1; i < reps; i++) {
        uint64_t t0, began = 0;

        if (i == 0)
            bench_check(weft_runtime_get_stats(b->rt, &s0));
        if (before)
            before(user);
        if (b->sim) {
            weft__sim_record_clear(b->sim);
            began = weft__sim_now(b->sim);
        }
        t0 = bench_now_ns();
        bench_check(weft_exec_launch(e));
        bench_check(weft_exec_wait(e));
        if (i >= 0) {
            wall[i] = ms_since(t0);
            virt[i] = b->sim ? sim_span_ms(b->sim, began) : 0;
        } else {
            t->first_ms = ms_since(t0);
        }
    }
    bench_check(weft_runtime_get_stats(b->rt, &s1));
    {
        weft_exec_stats st = {.size = sizeof st};

        bench_check(weft_exec_get_stats(e, &st));
        bench_note(
            "%llu of %llu launches native (%u driver graphs), %llu replays",
            (unsigned long long)st.native_launches,
            (unsigned long long)st.launches, st.native_graphs,
            (unsigned long long)st.native_replays);
    }
    t->wall_ms = bench_median(wall, reps);
    t->virt_ms = bench_median(virt, reps);
    memset(&t->moved, 0, sizeof t->moved);
#define PER_LAUNCH(f) t->moved.f = (s1.f - s0.f) / (uint64_t)reps
    PER_LAUNCH(h2d_bytes);
    PER_LAUNCH(d2h_bytes);
    PER_LAUNCH(peer_bytes);
    PER_LAUNCH(staged_bytes);
    PER_LAUNCH(pinned_bytes);
#undef PER_LAUNCH
}

/* The time that counts on this device: virtual on the sim. */
static double t_of(const bench *b, const timing *t)
{
    return b->sim ? t->virt_ms : t->wall_ms;
}

static void moved_note(const char *what, const timing *t)
{
    bench_note("%s moved per launch: %.1f MiB in, %.1f MiB out, %.1f MiB peer "
               "(%.1f MiB staged, %.1f MiB from pinned memory)",
               what, (double)t->moved.h2d_bytes / 1048576,
               (double)t->moved.d2h_bytes / 1048576,
               (double)t->moved.peer_bytes / 1048576,
               (double)t->moved.staged_bytes / 1048576,
               (double)t->moved.pinned_bytes / 1048576);
}

static weft_exec *instantiate_on(weft_graph *g, const weft_device *dev)
{
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_exec *e;

    eo.device = dev;
    bench_check(weft_graph_instantiate(g, &eo, &e));
    return e;
}

/* A chunk's kernel node, placed on place unless that is NULL. */
static void add_work(weft_graph *g, bench *b, weft_buffer *out, weft_buffer *in,
                     size_t off, uint32_t k, const weft_device *place)
{
    weft_arg args[] = {
        weft_arg_buffer(out, off, chunk_bytes, WEFT_WRITE),
        weft_arg_buffer(in, off, chunk_bytes, WEFT_READ),
        weft_arg_u32(chunk_elems),
        weft_arg_u32(k),
    };
    weft_node node;

    bench_check(weft_graph_add_kernel(g, b->work, weft_dims1(chunk_elems), args,
                                      4, &node));
    if (place)
        bench_check(weft_graph_set_device(g, node, place));
}

/* The virtual time that the sim's recorded operations of kind took. */
static double sim_busy_ms(weft__device *sim, weft__sim_op_kind kind)
{
    size_t n;
    const weft__sim_op *op = weft__sim_record(sim, &n);
    uint64_t busy = 0;

    for (size_t i = 0; i < n; i++)
        if (op[i].kind == kind)
            busy += op[i].end_ns - op[i].start_ns;
    return (double)busy / 1e6;
}

/* The median time of one chunk's write/kernel/read chain through weft. */
static double weft_chain_ms(bench *b, weft_buffer *bin, weft_buffer *bout,
                            float *hin, float *hout, uint32_t k)
{
    weft_graph *g;
    weft_exec *e;
    timing t;

    bench_check(weft_graph_create(b->rt, &g));
    bench_check(weft_graph_add_write(g, bin, 0, hin, chunk_bytes, NULL));
    add_work(g, b, bout, bin, 0, k, NULL); /* the exec names device 0 */
    bench_check(weft_graph_add_read(g, bout, 0, hout, chunk_bytes, NULL));
    e = instantiate_on(g, b->dev[0]);
    time_exec(b, e, NULL, NULL, &t);
    bench_check(weft_exec_destroy(e));
    bench_check(weft_graph_destroy(g));
    return t_of(b, &t);
}

/*
 * One chunk's stage times through weft on device 0, where there is no raw
 * CUDA. On the sim they are exact: the engines' busy time in the record
 * of the last launch of one chain. Elsewhere (a smoke run) they are
 * estimates from the chain's time with and without arithmetic: the
 * kernel is the difference, and the copies share the rest evenly.
 */
static void weft_stages(bench *b, weft_buffer *bin, weft_buffer *bout,
                        float *hin, float *hout, uint32_t k, double *h,
                        double *kt, double *d)
{
    double with = weft_chain_ms(b, bin, bout, hin, hout, k), without;

    if (b->sim) {
        *h = sim_busy_ms(b->sim, WEFT__SIM_H2D);
        *kt = sim_busy_ms(b->sim, WEFT__SIM_KERNEL);
        *d = sim_busy_ms(b->sim, WEFT__SIM_D2H);
        return;
    }
    without = weft_chain_ms(b, bin, bout, hin, hout, 0);
    *h = *d = without / 2;
    *kt = with > without ? with - without : 0;
}

/* Before each launch: no output yet, so that the check sees the last. */
static void clear_output(void *user)
{
    memset(user, 0, bytes);
}

/*
 * The weft figure: C write/kernel/read chains, host memory hin/hout, on
 * buffers of its own (so that its first launch is a program's first).
 */
static timing weft_chains(bench *b, float *hin, float *hout)
{
    weft_buffer *bin, *bout;
    weft_graph *g;
    weft_exec *e;
    timing t;

    bench_check(weft_buffer_create(b->rt, bytes, &bin));
    bench_check(weft_buffer_create(b->rt, bytes, &bout));
    bench_check(weft_graph_create(b->rt, &g));
    for (unsigned c = 0; c < chunks; c++) {
        size_t off = c * chunk_bytes;

        bench_check(weft_graph_add_write(g, bin, off, (char *)hin + off,
                                         chunk_bytes, NULL));
        /* One device: the executable graph names it for every node. */
        add_work(g, b, bout, bin, off, iters,
                 ndev > 1 ? b->dev[c % ndev] : NULL);
        bench_check(weft_graph_add_read(g, bout, off, (char *)hout + off,
                                        chunk_bytes, NULL));
    }
    e = instantiate_on(g, ndev > 1 ? NULL : b->dev[0]);
    time_exec(b, e, clear_output, hout, &t);
    bench_check(weft_exec_destroy(e));
    bench_check(weft_graph_destroy(g));
    bench_check(weft_buffer_destroy(bout));
    bench_check(weft_buffer_destroy(bin));
    return t;
}

static void map_nothing(void *ptr, size_t size, void *user)
{
    (void)ptr;
    (void)size;
    (void)user;
}

static void refill_input(void *user)
{
    /* The program wrote its input again: every byte must move again. */
    bench_check(weft_buffer_invalidate(user, 0, WEFT_WHOLE));
}

/* The weft wrapped figure: kernel + map chains over wrapped memory. */
static timing weft_wrapped(bench *b, float *pin, float *pout)
{
    weft_buffer *win, *wout;
    weft_graph *g;
    weft_exec *e;
    timing t;

    bench_check(weft_buffer_wrap(b->rt, pin, bytes, &win));
    bench_check(weft_buffer_wrap(b->rt, pout, bytes, &wout));
    bench_check(weft_graph_create(b->rt, &g));
    for (unsigned c = 0; c < chunks; c++) {
        size_t off = c * chunk_bytes;

        add_work(g, b, wout, win, off, iters,
                 ndev > 1 ? b->dev[c % ndev] : NULL);
        bench_check(weft_graph_add_map(g, wout, off, chunk_bytes, WEFT_READ,
                                       map_nothing, NULL, NULL));
    }
    e = instantiate_on(g, ndev > 1 ? NULL : b->dev[0]);
    time_exec(b, e, refill_input, win, &t);
    bench_check(weft_exec_destroy(e));
    bench_check(weft_graph_destroy(g));
    bench_check(weft_buffer_destroy(wout));
    bench_check(weft_buffer_destroy(win));
    return t;
}

/* ---- main -------------------------------------------------------------- */

/* One chunk's stage times: raw where CUDA is, else through weft. */
static void stages(bench *b, int have_raw, weft_buffer *bin, weft_buffer *bout,
                   float *hin, float *hout, uint32_t k, double *h, double *kt,
                   double *d)
{
    if (have_raw)
        raw_stages(hin, hout, k, h, kt, d);
    else
        weft_stages(b, bin, bout, hin, hout, k, h, kt, d);
}

/*
 * How much of the possible saving a time t achieves, in percent, for
 * per-chunk stage times h, k, d (see the header).
 */
static double overlap_pct(double t, double h, double k, double d)
{
    double one = h + k + d, slow = fmax(h, fmax(k, d));
    double s = chunks * one;
    double l = ((chunks + ndev - 1) / ndev) * slow + (one - slow);

    return s > l ? 100 * (s - t) / (s - l) : 0;
}

int main(int argc, char **argv)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_device_info info = {.size = sizeof info};
    const weft_module_source v[] = {
        {WEFT_SOURCE_PTX, work_ptx, 0, NULL, "work.ptx"},
        {WEFT_SOURCE_PORTABLE, work_portable, 0, NULL, "work"},
        {WEFT_SOURCE_HOST, work_table, 1, NULL, "work (C)"},
    };
    bench b = {0};
    weft_module *mod;
    weft_buffer *bin, *bout;
    unsigned first = 0, have = 0;
    int have_raw = 0;
    double h = 0, k = 0, d = 0, t_serial = 0, t_hand = 0;
    float *hin, *hout;
    void *p, *q;
    timing tw, tww;
    const bench_option options[] = {
        {"--mib", BENCH_MIB, &bytes, "N"},
        {"--chunks", BENCH_UNSIGNED, &chunks, "C"},
        {"--iters", BENCH_U32, &iters, "K"},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--ndev", BENCH_UNSIGNED, &ndev, "D"},
        {"--trace", BENCH_STRING, &trace_path, "FILE"},
        {"--sim-fma-rate", BENCH_DOUBLE, &sim_fma_rate, "F"},
    };

    BENCH_OPTIONS(argc, argv, "overlap", options);
    if (chunks == 0 || bytes == 0 || reps < 1 || reps > MAXREPS || ndev < 1 ||
        ndev > MAXDEV || !(sim_fma_rate > 0))
        bench_die("need --mib > 0, --chunks > 0, 1 <= --reps <= %d, "
                  "1 <= --ndev <= %d, --sim-fma-rate > 0",
                  MAXREPS, MAXDEV);
    /* Whole 4 KiB pages per chunk: every device takes such an offset as a
     * kernel argument (arg_offset_align). */
    chunk_bytes = bytes / chunks / 4096 * 4096;
    if (chunk_bytes == 0 || chunk_bytes / sizeof(float) > UINT32_MAX)
        bench_die("chunks of %zu bytes: need 4 KiB to 16 GiB", bytes / chunks);
    bytes = chunk_bytes * chunks;
    chunk_elems = (uint32_t)(chunk_bytes / sizeof(float));

    o.devices = getenv("WEFT_DEVICES") ? NULL : "cuda,opencl,host";
    bench_sim_timing_only(); /* on the sim: its virtual times */
    /* --trace: every launch of the run, written when the runtime goes. */
    o.trace_file = trace_path;
    bench_check(weft_runtime_create(&b.rt, &o));
    if (!weft_runtime_device_count(b.rt))
        bench_die("no device");
    /* The first CUDA device, else the first device; then the next ones of
     * the same driver. */
    for (unsigned i = weft_runtime_device_count(b.rt); i-- > 0;) {
        bench_check(weft_device_get_info(weft_runtime_device(b.rt, i), &info));
        if (strcmp(info.driver, "cuda") == 0)
            first = i;
    }
    bench_check(weft_device_get_info(weft_runtime_device(b.rt, first), &info));
    for (unsigned i = first; i < weft_runtime_device_count(b.rt) && have < ndev;
         i++) {
        weft_device_info di = {.size = sizeof di};

        bench_check(weft_device_get_info(weft_runtime_device(b.rt, i), &di));
        if (strcmp(di.driver, info.driver) == 0)
            b.dev[have++] = weft_runtime_device(b.rt, i);
    }
    if (have < ndev)
        bench_die("--ndev %u: only %u %s device(s)", ndev, have, info.driver);
    if (info.type == WEFT_DEVICE_SIMULATED)
        b.sim = weft__runtime_device(b.rt, first);
    b.real_data = !b.sim;

    bench_check(weft_module_create(b.rt, v, 3, &mod));
    bench_check(weft_module_get_kernel(mod, "work", &b.work));
    if (strcmp(info.driver, "cuda") == 0 && raw_load() == 0)
        have_raw = 1;

    bench_begin("\"device\": \"%s\", \"driver\": \"%s\", \"devices\": %u, "
                "\"bytes\": %zu, \"chunks\": %u",
                info.name, info.driver, ndev, bytes, chunks);
    bench_note("%s:%u (%s) x%u, %zu MiB in %u chunks of %zu KiB, median "
               "of %d",
               info.driver, info.driver_index, info.name, ndev, bytes >> 20,
               chunks, chunk_bytes >> 10, reps);

    /* Host memory: pinned where CUDA is, for the raw figures and weft's
     * alike; pageable elsewhere. */
    if (have_raw) {
        for (unsigned g = 0; g < ndev; g++) {
            weft_device_info di = {.size = sizeof di};

            bench_check(weft_device_get_info(b.dev[g], &di));
            raw_open(&gpu[g], (int)di.driver_index,
                     g ? (chunks + ndev - 1) / ndev : chunks);
        }
        CU(cu.MemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE));
        CU(cu.MemHostAlloc(&q, bytes, CU_MEMHOSTALLOC_PORTABLE));
        hin = p;
        hout = q;
    } else {
        hin = malloc(bytes);
        hout = malloc(bytes);
        if (!hin || !hout)
            bench_die("out of memory");
        bench_note("raw CUDA figures: skipped (%s)",
                   strcmp(info.driver, "cuda") ? "not a CUDA device"
                                               : "libcuda not usable");
    }
    fill_input(hin, bytes / sizeof(float));
    bench_check(weft_buffer_create(b.rt, bytes, &bin));
    bench_check(weft_buffer_create(b.rt, bytes, &bout));

    /* Calibration: scale iters by copy time / kernel time, twice, from a
     * guess; a kernel's time is about linear in iters. */
    bench_progress("calibrating");
    if (!iters) {
        uint32_t guess = 256;

        for (int round = 0; round < 2; round++) {
            double next;

            stages(&b, have_raw, bin, bout, hin, hout, guess, &h, &k, &d);
            next = k > 0 ? guess * h / k : guess * 16.0;
            guess = next < 1 ? 1 : next > 1e8 ? 100000000u : (uint32_t)next;
        }
        iters = guess;
    }
    stages(&b, have_raw, bin, bout, hin, hout, iters, &h, &k, &d);
    bench_note("per chunk (%s): copy in %.3f ms, kernel %.3f ms with iters %u, "
               "copy out %.3f ms",
               have_raw ? "raw CUDA"
               : b.sim  ? "weft, virtual time"
                        : "weft",
               h, k, iters, d);
    bench_figure("chunk copy in", h, "ms");
    bench_figure("chunk kernel", k, "ms");
    bench_figure("chunk copy out", d, "ms");
    bench_figure("iters", iters, "");

    if (have_raw) {
        double v1[MAXREPS], v2[MAXREPS];

        bench_progress("raw CUDA");
        memset(hout, 0, bytes);
        for (int i = -1; i < reps; i++) {
            double a = raw_serial(hin, hout), c = raw_pipelined(hin, hout);

            if (i >= 0) {
                v1[i] = a;
                v2[i] = c;
            }
        }
        check("raw", hout, bytes / sizeof(float));
        t_serial = bench_median(v1, reps);
        t_hand = bench_median(v2, reps);
        bench_figure("serial", t_serial, "ms");
        bench_figure("hand pipelined", t_hand, "ms");
        bench_figure("hand overlap", overlap_pct(t_hand, h, k, d), "%");
    }

    /* Calibration's buffers go: each variant's first launch is a first. */
    bench_check(weft_buffer_destroy(bout));
    bench_check(weft_buffer_destroy(bin));

    bench_progress("weft");
    memset(hout, 0, bytes);
    tw = weft_chains(&b, hin, hout);
    if (b.real_data)
        check("weft", hout, bytes / sizeof(float));
    bench_figure("weft", tw.wall_ms, "ms");
    bench_figure("weft first launch", tw.first_ms, "ms");
    bench_figure("weft first/steady", tw.first_ms / tw.wall_ms, "x");
    moved_note("weft", &tw);

    if (have_raw) {
        /* The same graph from pageable memory: every launch stages. */
        float *pin = malloc(bytes), *pout = malloc(bytes);
        timing tp;

        if (!pin || !pout)
            bench_die("out of memory");
        bench_progress("weft pageable");
        fill_input(pin, bytes / sizeof(float));
        tp = weft_chains(&b, pin, pout);
        check("weft pageable", pout, bytes / sizeof(float));
        free(pin);
        free(pout);
        bench_figure("weft pageable", tp.wall_ms, "ms");
        bench_figure("weft pageable first launch", tp.first_ms, "ms");
        bench_figure("weft pageable first/steady", tp.first_ms / tp.wall_ms,
                     "x");
        moved_note("weft pageable", &tp);
    }

    bench_progress("weft wrapped");
    {
        float *pin = malloc(bytes), *pout = malloc(bytes);

        if (!pin || !pout)
            bench_die("out of memory");
        fill_input(pin, bytes / sizeof(float));
        /* Touched, as the other variants' output is before each launch:
         * the first launch does not time the kernel's first page faults. */
        memset(pout, 0, bytes);
        tww = weft_wrapped(&b, pin, pout);
        if (b.real_data)
            check("weft wrapped", pout, bytes / sizeof(float));
        free(pin);
        free(pout);
    }
    bench_figure("weft wrapped", tww.wall_ms, "ms");
    bench_figure("weft wrapped first launch", tww.first_ms, "ms");
    bench_figure("weft wrapped first/steady", tww.first_ms / tww.wall_ms, "x");
    moved_note("weft wrapped", &tww);

    if (have_raw) {
        bench_figure("weft/hand", tw.wall_ms / t_hand, "x");
        bench_figure("weft wrapped/hand", tww.wall_ms / t_hand, "x");
        bench_figure("serial/weft", t_serial / tw.wall_ms, "x");
    }
    if (b.sim) {
        /* The model's figures: serial is the sum of the stage times. */
        double s = chunks * (h + k + d);

        bench_figure("sim serial", s, "ms");
        bench_figure("sim weft", tw.virt_ms, "ms");
        bench_figure("sim weft wrapped", tww.virt_ms, "ms");
        bench_figure("sim serial/weft", tw.virt_ms > 0 ? s / tw.virt_ms : 0,
                     "x");
    }
    bench_figure("weft overlap", overlap_pct(t_of(&b, &tw), h, k, d), "%");
    bench_figure("weft wrapped overlap", overlap_pct(t_of(&b, &tww), h, k, d),
                 "%");
    bench_progress("");
    bench_end();
    if (sim_early_ops)
        fprintf(stderr,
                "%s: warning: %u simulated operation(s) started before "
                "their launch (a submitting thread's virtual clock lags): "
                "the virtual times are too small\n",
                argv[0], sim_early_ops);

    if (have_raw) {
        for (unsigned g = 0; g < ndev; g++)
            raw_close(&gpu[g]);
        CU(cu.MemFreeHost(hin));
        CU(cu.MemFreeHost(hout));
    } else {
        free(hin);
        free(hout);
    }
    bench_check(weft_module_destroy(mod));
    bench_check(weft_runtime_destroy(b.rt));
    return 0;
}
