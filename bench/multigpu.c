/*
 * multigpu: a compute-bound tiled workload spread over 1, 2, 4 and 8
 * devices of one driver, through the public API.
 *
 * T independent tiles: each is written from host memory, run through a
 * kernel of iters dependent multiply-adds per element, summed within the
 * tile into a small block, and read back; a last kernel adds the tiles'
 * blocks into one total (--no-reduce leaves the sums out). Each device
 * count gets its own runtime holding exactly that many devices, and runs
 * the graph twice: with the tiles placed round-robin by
 * weft_graph_set_device ("rr"), and with no placement at all ("auto").
 *
 *     multigpu [--json] [--devices-max N] [--tiles T] [--tile-mib M]
 *              [--iters K] [--reps R] [--no-reduce] [--sim-fma-rate F]
 *
 * Figures per placement and device count (medians of R launches after a
 * warm-up):
 *   time, speed-up          against the same placement on one device
 *   h2d/min, d2h/min        bytes moved per launch (weft_runtime_get_stats)
 *                           over the least the tiles need: every input in,
 *                           every output (and the total) out
 *   peer, peer min          MiB between devices per launch, and the least a
 *                           placement spreading the tiles evenly needs: the
 *                           blocks of the tiles away from the device that
 *                           adds them up
 *   tile kernel             one tile's kernel alone, on one device
 * On the sim driver (WEFT_DEVICES=sim WEFT_SIM=devices=8,...) every time is
 * the sim's virtual time, the model's prediction for the configured
 * machine: kernels cost their multiply-adds at --sim-fma-rate per ns
 * (default 33500, an H200's 67 TFLOP/s of FP32; set it from a real run's
 * tile kernel figure to compare like with like).
 */
#include "drivers/sim/sim.h"
#include "bench.h"
#include "runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

enum { MAXDEV = 64, MAXREPS = 64, BLOCK = 4096, MAXTILES = 4096 };

static int reduce = 1;
static unsigned devices_max = 8, tiles = 64;
static size_t tile_bytes = (size_t)16 << 20;
static uint32_t tile_elems, iters = 16384;
static int reps = 5;
static double sim_fma_rate = 33500; /* multiply-adds per ns: H200 FP32 */

/* ---- kernels ----------------------------------------------------------- */

/*
 * work: out[i] = in[i] after iters dependent steps of x = x * 0.999 +
 * 0.001, so that iters sets the arithmetic and nothing else.
 * tilesum: one group of 256 items adds n floats into block[0] and zeroes
 * the rest of the 4 KiB block, so that every byte it declares is written;
 * run over the tiles' blocks it adds them up, zeros and all.
 */
static const char portable_src[] =
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
    "}\n"
    "WEFT_KERNEL void tilesum(WEFT_GLOBAL float *block,\n"
    "                         WEFT_GLOBAL const float *x, weft_u32 n)\n"
    "{\n"
    "    WEFT_LOCAL float part[256];\n"
    "    long l = weft_local_id(0);\n"
    "    float s = 0.0f;\n"
    "    for (long i = l; i < n; i += 256)\n"
    "        s += x[i];\n"
    "    part[l] = s;\n"
    "    weft_barrier();\n"
    "    for (long w = 128; w > 0; w /= 2) {\n"
    "        if (l < w)\n"
    "            part[l] += part[l + w];\n"
    "        weft_barrier();\n"
    "    }\n"
    "    for (long j = l; j < 1024; j += 256)\n"
    "        block[j] = j == 0 ? part[0] : 0.0f;\n"
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

static void tilesum_host(const weft_host_group *g, void *const *args)
{
    float *block = args[0];
    const float *x = args[1];
    uint32_t n = *(const uint32_t *)args[2];
    float s = 0;

    (void)g;
    for (uint32_t i = 0; i < n; i++)
        s += x[i];
    memset(block, 0, BLOCK);
    block[0] = s;
}

/*
 * Simulated durations. work: its multiply-adds at sim_fma_rate, plus 8
 * bytes per element at an H200's 4.8 TB/s. tilesum: one group streams n
 * floats at about 100 GB/s. Scalars reach cost functions even when
 * buffers do not (real_data=0).
 */
static uint64_t work_cost(uint64_t items, void *const *args, void *user)
{
    uint32_t k = args[3] ? *(const uint32_t *)args[3] : 0;

    (void)user;
    return (uint64_t)((double)items * k / sim_fma_rate +
                      (double)items * 8 / 4800.0);
}

static uint64_t tilesum_cost(uint64_t items, void *const *args, void *user)
{
    uint32_t n = args[2] ? *(const uint32_t *)args[2] : 0;

    (void)items;
    (void)user;
    return (uint64_t)((double)n * 4 / 100.0);
}

static const weft_param_type work_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_U32};
static const weft_param_type tilesum_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_U32};
static const weft_host_kernel host_table[] = {
    {"work", work_host, 4, work_params, NULL, work_cost, NULL},
    {"tilesum", tilesum_host, 3, tilesum_params, NULL, tilesum_cost, NULL},
};

/* ---- one device count -------------------------------------------------- */

typedef struct machine {
    weft_runtime *rt;
    unsigned n;
    const weft_device *dev[MAXDEV];
    weft__device *sim; /* a sim device of the platform, or NULL */
    weft_module *mod;
    weft_kernel *work, *tilesum;
    weft_buffer *bin, *bout, *blocks, *total;
} machine;

typedef struct result {
    double ms;
    weft_stats moved; /* per launch */
} result;

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

/* Warm-up, then reps launches: the median time, the bytes per launch. */
static result time_exec(machine *m, weft_exec *e)
{
    double v[MAXREPS];
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    result r;

    uint64_t peer_prev = 0;
    char peers[MAXREPS * 12];
    size_t len = 0;

    peers[0] = '\0';
    for (int i = -1; i < reps; i++) {
        uint64_t t0, began = 0;

        if (i == 0) {
            bench_check(weft_runtime_get_stats(m->rt, &s0));
            peer_prev = s0.peer_bytes;
        }
        if (m->sim) {
            weft__sim_record_clear(m->sim);
            began = weft__sim_now(m->sim);
        }
        t0 = bench_now_ns();
        bench_check(weft_exec_launch(e));
        bench_check(weft_exec_wait(e));
        if (i >= 0) {
            v[i] = m->sim ? sim_span_ms(m->sim, began)
                          : (double)(bench_now_ns() - t0) / 1e6;
            bench_check(weft_runtime_get_stats(m->rt, &s1));
            len +=
                (size_t)snprintf(peers + len, sizeof peers - len, " %.1f",
                                 (double)(s1.peer_bytes - peer_prev) / 1048576);
            peer_prev = s1.peer_bytes;
        }
    }
    if (m->n > 1)
        bench_note("peer MiB of each timed launch:%s", peers);
    bench_check(weft_runtime_get_stats(m->rt, &s1));
    r.ms = bench_median(v, reps);
    memset(&r.moved, 0, sizeof r.moved);
    r.moved.h2d_bytes = (s1.h2d_bytes - s0.h2d_bytes) / (uint64_t)reps;
    r.moved.d2h_bytes = (s1.d2h_bytes - s0.d2h_bytes) / (uint64_t)reps;
    r.moved.peer_bytes = (s1.peer_bytes - s0.peer_bytes) / (uint64_t)reps;
    return r;
}

static weft_node add_kernel(weft_graph *g, weft_kernel *k, weft_dims dims,
                            const weft_arg *args, unsigned nargs,
                            const weft_device *place)
{
    weft_node node;

    bench_check(weft_graph_add_kernel(g, k, dims, args, nargs, &node));
    if (place)
        bench_check(weft_graph_set_device(g, node, place));
    return node;
}

/*
 * The workload's graph. rr: tile t and its sum on device t mod n, the
 * total on device 0; else no placement. The host arrays stay the
 * caller's; *sum receives the total.
 */
static weft_node work_node[MAXTILES]; /* of the graph build made last */
static weft_node sum_node[MAXTILES];  /* ... and its tile sums */

static weft_graph *build(machine *m, int rr, float *hin, float *hout,
                         float *sum)
{
    weft_dims one_group = weft_dims1(256);
    weft_graph *g;

    one_group.group[0] = 256; /* tilesum's local array is that size */
    one_group.group[1] = one_group.group[2] = 1;
    bench_check(weft_graph_create(m->rt, &g));
    for (unsigned t = 0; t < tiles; t++) {
        size_t off = t * tile_bytes;
        const weft_device *place = rr ? m->dev[t % m->n] : NULL;
        weft_arg wa[] = {
            weft_arg_buffer(m->bout, off, tile_bytes, WEFT_WRITE),
            weft_arg_buffer(m->bin, off, tile_bytes, WEFT_READ),
            weft_arg_u32(tile_elems),
            weft_arg_u32(iters),
        };
        weft_arg sa[] = {
            weft_arg_buffer(m->blocks, (size_t)t * BLOCK, BLOCK, WEFT_WRITE),
            weft_arg_buffer(m->bout, off, tile_bytes, WEFT_READ),
            weft_arg_u32(tile_elems),
        };

        bench_check(weft_graph_add_write(g, m->bin, off, (char *)hin + off,
                                         tile_bytes, NULL));
        work_node[t] =
            add_kernel(g, m->work, weft_dims1(tile_elems), wa, 4, place);
        if (reduce)
            sum_node[t] = add_kernel(g, m->tilesum, one_group, sa, 3, place);
        bench_check(weft_graph_add_read(g, m->bout, off, (char *)hout + off,
                                        tile_bytes, NULL));
    }
    if (reduce) {
        weft_arg ta[] = {
            weft_arg_buffer(m->total, 0, BLOCK, WEFT_WRITE),
            weft_arg_buffer(m->blocks, 0, (size_t)tiles * BLOCK, WEFT_READ),
            weft_arg_u32(tiles * (BLOCK / 4)),
        };

        add_kernel(g, m->tilesum, one_group, ta, 3, rr ? m->dev[0] : NULL);
        bench_check(
            weft_graph_add_read(g, m->total, 0, sum, sizeof *sum, NULL));
    }
    return g;
}

/* How many tiles' kernels ran on each device (a note). */
static void note_split(machine *m, weft_exec *e, const char *what)
{
    unsigned count[MAXDEV] = {0};
    char line[MAXDEV * 8];
    size_t len = 0;

    for (unsigned t = 0; t < tiles; t++) {
        const weft_device *d = weft_exec_node_device(e, work_node[t]);

        for (unsigned i = 0; i < m->n; i++)
            if (d == m->dev[i])
                count[i]++;
    }
    for (unsigned i = 0; i < m->n; i++)
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%u",
                                i ? "/" : "", count[i]);
    bench_note("%s: tiles per device %s", what, line);
    if (reduce) {
        unsigned away = 0;

        for (unsigned t = 0; t < tiles; t++)
            away += weft_exec_node_device(e, sum_node[t]) !=
                    weft_exec_node_device(e, work_node[t]);
        bench_note("%s: %u of %u tile sums away from their tile's device", what,
                   away, tiles);
    }
    {
        weft_exec_stats st = {.size = sizeof st};

        if (weft_exec_get_stats(e, &st) == 0)
            bench_note(
                "%s: %llu of %llu launches native (%u driver graphs), %llu "
                "replays",
                what, (unsigned long long)st.native_launches,
                (unsigned long long)st.launches, st.native_graphs,
                (unsigned long long)st.native_replays);
    }
}

/* The outputs against the host's, on a sample; the total against hout. */
static void check(const char *what, const float *hout, float sum)
{
    size_t n = (size_t)tiles * tile_elems, step = n / 4096 ? n / 4096 : 1;
    double want = 0;

    for (size_t i = 0; i < n; i += step) {
        float w = work_one((float)(i & 1023) / 1024.0f, iters);

        /* GPUs fuse the multiply-add and C11 does not: allow rounding. */
        if (!(fabsf(hout[i] - w) <= 1e-3f))
            bench_die("%s: out[%zu] = %g, expected %g", what, i,
                      (double)hout[i], (double)w);
    }
    if (!reduce)
        return;
    for (size_t i = 0; i < n; i++)
        want += hout[i];
    if (!(fabs(sum - want) <= 1e-3 * fabs(want) + 1e-3))
        bench_die("%s: total %g, expected %g", what, (double)sum, want);
}

/* ---- main -------------------------------------------------------------- */

/* What the probe found: the driver and its devices' indices. */
typedef struct selection {
    char driver[16];
    unsigned count;
    unsigned index[MAXDEV]; /* driver_index of each */
    int sim;
} selection;

static void probe(selection *s)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_device_info info = {.size = sizeof info};
    weft_runtime *rt;
    unsigned first = 0, n;

    o.devices = getenv("WEFT_DEVICES") ? NULL : "cuda,opencl,host";
    bench_sim_timing_only(); /* on the sim: its virtual times */
    bench_check(weft_runtime_create(&rt, &o));
    if (!(n = weft_runtime_device_count(rt)))
        bench_die("no device");
    /* The first CUDA device's driver, else the first device's. */
    for (unsigned i = n; i-- > 0;) {
        bench_check(weft_device_get_info(weft_runtime_device(rt, i), &info));
        if (strcmp(info.driver, "cuda") == 0)
            first = i;
    }
    bench_check(weft_device_get_info(weft_runtime_device(rt, first), &info));
    snprintf(s->driver, sizeof s->driver, "%s", info.driver);
    s->sim = info.type == WEFT_DEVICE_SIMULATED;
    s->count = 0;
    for (unsigned i = first; i < n && s->count < MAXDEV; i++) {
        bench_check(weft_device_get_info(weft_runtime_device(rt, i), &info));
        if (strcmp(info.driver, s->driver) == 0)
            s->index[s->count++] = info.driver_index;
    }
    bench_check(weft_runtime_destroy(rt));
}

/* A runtime with the first n devices of the selection and nothing else. */
static void machine_open(machine *m, const selection *s, unsigned n)
{
    const weft_module_source v[] = {
        {WEFT_SOURCE_PORTABLE, portable_src, 0, NULL, "multigpu"},
        {WEFT_SOURCE_HOST, host_table, 2, NULL, "multigpu (C)"},
    };
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    char spec[MAXDEV * 24];
    size_t len = 0;

    memset(m, 0, sizeof *m);
    for (unsigned i = 0; i < n; i++)
        len += (size_t)snprintf(spec + len, sizeof spec - len, "%s%s:%u",
                                i ? "," : "", s->driver, s->index[i]);
    o.devices = spec;
    o.host_devices = s->index[n - 1] + 1;
    bench_check(weft_runtime_create(&m->rt, &o));
    if (weft_runtime_device_count(m->rt) != n)
        bench_die("asked for %s, got %u devices", spec,
                  weft_runtime_device_count(m->rt));
    m->n = n;
    for (unsigned i = 0; i < n; i++)
        m->dev[i] = weft_runtime_device(m->rt, i);
    if (s->sim)
        m->sim = weft__runtime_device(m->rt, 0);
    bench_check(weft_module_create(m->rt, v, 2, &m->mod));
    bench_check(weft_module_get_kernel(m->mod, "work", &m->work));
    bench_check(weft_module_get_kernel(m->mod, "tilesum", &m->tilesum));
    bench_check(weft_buffer_create(m->rt, tiles * tile_bytes, &m->bin));
    bench_check(weft_buffer_create(m->rt, tiles * tile_bytes, &m->bout));
    bench_check(weft_buffer_create(m->rt, (size_t)tiles * BLOCK, &m->blocks));
    bench_check(weft_buffer_create(m->rt, BLOCK, &m->total));
}

static void machine_close(machine *m)
{
    bench_check(weft_buffer_destroy(m->total));
    bench_check(weft_buffer_destroy(m->blocks));
    bench_check(weft_buffer_destroy(m->bout));
    bench_check(weft_buffer_destroy(m->bin));
    bench_check(weft_module_destroy(m->mod));
    bench_check(weft_runtime_destroy(m->rt));
}

/* One tile's kernel alone on device 0, its input already there. */
static double tile_kernel_ms(machine *m)
{
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_arg wa[] = {
        weft_arg_buffer(m->bout, 0, tile_bytes, WEFT_WRITE),
        weft_arg_buffer(m->bin, 0, tile_bytes, WEFT_READ),
        weft_arg_u32(tile_elems),
        weft_arg_u32(iters),
    };
    weft_graph *g;
    weft_exec *e;
    result r;

    eo.device = m->dev[0];
    bench_check(weft_graph_create(m->rt, &g));
    add_kernel(g, m->work, weft_dims1(tile_elems), wa, 4, NULL);
    bench_check(weft_graph_instantiate(g, &eo, &e));
    r = time_exec(m, e);
    bench_check(weft_exec_destroy(e));
    bench_check(weft_graph_destroy(g));
    return r.ms;
}

int main(int argc, char **argv)
{
    static const char *const mode_name[2] = {"auto", "rr"};
    selection sel;
    double base[2] = {0, 0};
    float *hin, *hout, sum = 0;
    size_t total_bytes;
    unsigned ran = 0;
    const bench_option options[] = {
        {"--devices-max", BENCH_UNSIGNED, &devices_max, "N"},
        {"--tiles", BENCH_UNSIGNED, &tiles, "T"},
        {"--tile-mib", BENCH_MIB, &tile_bytes, "M"},
        {"--iters", BENCH_U32, &iters, "K"},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--no-reduce", BENCH_OFF, &reduce, NULL},
        {"--sim-fma-rate", BENCH_DOUBLE, &sim_fma_rate, "F"},
    };

    BENCH_OPTIONS(argc, argv, "multigpu", options);
    if (devices_max < 1 || tiles < 1 || tiles > MAXTILES || tile_bytes == 0 ||
        tile_bytes / 4 > UINT32_MAX || reps < 1 || reps > MAXREPS ||
        !(sim_fma_rate > 0))
        bench_die("need --devices-max >= 1, --tiles >= 1, --tile-mib >= 1, "
                  "1 <= --reps <= %d, --sim-fma-rate > 0",
                  MAXREPS);
    tile_elems = (uint32_t)(tile_bytes / sizeof(float));
    total_bytes = tiles * tile_bytes;

    probe(&sel);
    /* From here each runtime names its devices itself (the environment
     * would override that); WEFT_SIM still describes the sim machine. */
    unsetenv("WEFT_DEVICES");
    hin = malloc(total_bytes);
    hout = malloc(total_bytes);
    if (!hin || !hout)
        bench_die("out of memory");
    for (size_t i = 0; i < total_bytes / sizeof(float); i++)
        hin[i] = (float)(i & 1023) / 1024.0f;

    bench_begin("\"driver\": \"%s\", \"virtual\": %s, \"tiles\": %u, "
                "\"tile_bytes\": %zu, \"iters\": %u",
                sel.driver, sel.sim ? "true" : "false", tiles, tile_bytes,
                iters);
    bench_note("%s: %u device(s); %u tiles of %zu MiB, iters %u%s; median "
               "of %d%s",
               sel.driver, sel.count, tiles, tile_bytes >> 20, iters,
               reduce ? ", summed" : "", reps,
               sel.sim ? "; times are the sim's virtual time" : "");

    for (unsigned n = 1; n <= devices_max && n <= sel.count; n *= 2) {
        machine m;
        /* The least: inputs in, outputs out; and with the sums, the total
         * out and the blocks of the tiles away from the device adding. */
        uint64_t min_io = total_bytes;
        uint64_t min_peer =
            reduce ? (uint64_t)(tiles - (tiles + n - 1) / n) * BLOCK : 0;

        machine_open(&m, &sel, n);
        ran = n;
        for (int rr = 1; rr >= 0; rr--) {
            char name[96], what[32];
            weft_graph *g;
            weft_exec *e;
            result r;

            snprintf(what, sizeof what, "%s %u", mode_name[rr], n);
            bench_progress(what);
            memset(hout, 0, total_bytes);
            g = build(&m, rr, hin, hout, &sum);
            bench_check(weft_graph_instantiate(g, NULL, &e));
            r = time_exec(&m, e);
            note_split(&m, e, what);
            bench_check(weft_exec_destroy(e));
            bench_check(weft_graph_destroy(g));
            if (!sel.sim)
                check(what, hout, sum);
            if (n == 1)
                base[rr] = r.ms;
#define FIG(suffix, value, unit)                                               \
    do {                                                                       \
        snprintf(name, sizeof name, "%s %u device%s %s", mode_name[rr], n,     \
                 n > 1 ? "s" : "", suffix);                                    \
        bench_figure(name, value, unit);                                       \
    } while (0)
            FIG("time", r.ms, "ms");
            FIG("speed-up", r.ms > 0 ? base[rr] / r.ms : 0, "x");
            FIG("h2d/min", (double)r.moved.h2d_bytes / (double)min_io, "x");
            FIG("d2h/min",
                (double)r.moved.d2h_bytes /
                    (double)(min_io + (reduce ? sizeof sum : 0)),
                "x");
            FIG("peer", (double)r.moved.peer_bytes / 1048576, "MiB");
            FIG("peer min", (double)min_peer / 1048576, "MiB");
#undef FIG
            bench_note("%s: per launch %llu B in, %llu B out, %llu B peer",
                       what, (unsigned long long)r.moved.h2d_bytes,
                       (unsigned long long)r.moved.d2h_bytes,
                       (unsigned long long)r.moved.peer_bytes);
        }
        if (n == 1)
            bench_figure("tile kernel", tile_kernel_ms(&m), "ms");
        machine_close(&m);
    }
    if (ran * 2 <= devices_max)
        bench_note(
            "runs on %u device(s) and more not made: the %s driver has %u",
            ran * 2, sel.driver, sel.count);
    bench_progress("");
    bench_end();
    if (sim_early_ops)
        fprintf(stderr,
                "%s: warning: %u simulated operation(s) started before "
                "their launch (a submitting thread's virtual clock lags): "
                "the virtual times are too small\n",
                argv[0], sim_early_ops);
    free(hin);
    free(hout);
    return 0;
}
