/*
 * What executable graphs put in a trace, and what weft_exec_get_stats and
 * weft_exec_write_dot say about a launch: real graphs run with tracing on,
 * then the written file read back with the trace reader and compared with
 * the graph, the placement and the runtime's statistics.
 *
 * Each case opens its own runtime from weft_runtime_options (the sim driver
 * with real data, or the host driver) with trace_file in a temporary
 * directory, and main() clears the environment variables that would
 * override those options, so that the environment cannot change what runs.
 * The trace is written when the runtime is destroyed.
 */
#include "wt_test.h"

#include "base/trace.h"
#include "tracefile.h"
#include "drivers/sim/sim.h"
#include "runtime.h"

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmpdir[256];

/* ---- kernels ----------------------------------------------------------- */
/*
 * step(buffer v, u32 n): v[i] = v[i] * 3 + 1, exact on u32, so that every
 * case checks its result as well. On the sim driver it costs STEP_NS of
 * virtual time plus the launch latency, about as long as a chunk's copy.
 */
enum { STEP_NS = 2000 };

static uint32_t step_one(uint32_t v)
{
    return v * 3u + 1u;
}

static void step_fn(const weft_host_group *g, void *const *args)
{
    uint32_t *v = args[0];
    uint32_t n = *(const uint32_t *)args[1];
    uint32_t first = g->group[0] * g->group_size[0];

    for (uint32_t i = first; i < first + g->group_size[0] && i < n; i++)
        v[i] = step_one(v[i]);
}

static uint64_t step_cost(uint64_t items, void *const *args, void *user)
{
    (void)items, (void)args, (void)user;
    return STEP_NS;
}

/* add(buffer out, buffer in, u32 n): out[i] = in[i] + 1000 */
static void add_fn(const weft_host_group *g, void *const *args)
{
    uint32_t *out = args[0];
    const uint32_t *in = args[1];
    uint32_t n = *(const uint32_t *)args[2];
    uint32_t first = g->group[0] * g->group_size[0];

    for (uint32_t i = first; i < first + g->group_size[0] && i < n; i++)
        out[i] = in[i] + 1000u;
}

static const weft_param_type step_params[] = {WEFT_PARAM_BUFFER,
                                              WEFT_PARAM_U32};
static const weft_param_type add_params[] = {WEFT_PARAM_BUFFER,
                                             WEFT_PARAM_BUFFER, WEFT_PARAM_U32};
static const weft_host_kernel host_kernels[] = {
    {"step", step_fn, 2, step_params, NULL, step_cost, NULL},
    {"add", add_fn, 3, add_params, NULL, step_cost, NULL},
};

/* ---- a runtime that traces --------------------------------------------- */
typedef struct tr_run {
    weft_runtime *rt;
    weft_module *mod;
    weft_kernel *step, *add;
    char path[512];
    weft_stats stats; /* the runtime's counters just before it went */
    unsigned ndev;
    char names[8][128]; /* the devices' names, for the trace's processes */
} tr_run;

/* A runtime on devices (with sim_config, host_devices) tracing to name. */
static void tr_open(tr_run *r, const char *devices, const char *sim,
                    unsigned host_devices, const char *name)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft_module_source src = {WEFT_SOURCE_HOST, host_kernels,
                              sizeof host_kernels / sizeof host_kernels[0],
                              NULL, "exec-trace"};

    memset(r, 0, sizeof *r);
    snprintf(r->path, sizeof r->path, "%s/%s", tmpdir, name);
    o.devices = devices;
    o.sim_config = sim;
    o.host_devices = host_devices;
    o.host_threads = 2;
    o.trace_file = r->path;
    check(weft_runtime_create(&r->rt, &o));
    check(weft_module_create(r->rt, &src, 1, &r->mod));
    check(weft_module_get_kernel(r->mod, "step", &r->step));
    check(weft_module_get_kernel(r->mod, "add", &r->add));
    r->ndev = weft_runtime_device_count(r->rt);
    assert_true(r->ndev >= 1 && r->ndev <= 8);
    for (unsigned d = 0; d < r->ndev; d++) {
        weft_device_info info = {.size = sizeof info};

        check(weft_device_get_info(weft_runtime_device(r->rt, d), &info));
        snprintf(r->names[d], sizeof r->names[d], "%s", info.name);
    }
}

/* Destroy the runtime (which writes the trace) and read the trace back. */
static weft__trace_view *tr_close(tr_run *r)
{
    weft__trace_view *v = NULL;
    struct stat st;

    memset(&r->stats, 0, sizeof r->stats);
    r->stats.size = sizeof r->stats;
    check(weft_runtime_get_stats(r->rt, &r->stats));
    check(weft_module_destroy(r->mod));
    check(weft_runtime_destroy(r->rt));
    r->rt = NULL;
    assert_int_equal(stat(r->path, &st), 0);
    if (weft__trace_view_load(r->path, &v) < 0)
        fail_msg("%s: %s", r->path, weft_last_error());
    return v;
}

static unsigned dev_index(const weft_device *d)
{
    weft_device_info info = {.size = sizeof info};

    assert_non_null(d);
    check(weft_device_get_info(d, &info));
    return info.index;
}

/* ---- reading the trace ------------------------------------------------- */
static const char *track_name(const weft__trace_view *v,
                              const weft__trace_slice_view *s)
{
    assert_true(s->track < v->ntracks);
    return v->tracks[s->track].name;
}

static const char *process_name(const weft__trace_view *v,
                                const weft__trace_slice_view *s)
{
    return v->processes[v->tracks[s->track].process];
}

static int ends_with(const char *s, const char *tail)
{
    size_t a = strlen(s), b = strlen(tail);

    return a >= b && strcmp(s + a - b, tail) == 0;
}

static int starts_with(const char *s, const char *head)
{
    return strncmp(s, head, strlen(head)) == 0;
}

/*
 * The host's tracks (process "host"): the thread issuing a graph ("graph N
 * worker") and the host workers that ran its maps and host tasks ("graph
 * N host worker K").
 */
static int on_worker(const weft__trace_view *v, const weft__trace_slice_view *s)
{
    unsigned g, k;
    char tail[8];

    return strcmp(process_name(v, s), "host") == 0 &&
           starts_with(track_name(v, s), "graph ") &&
           (ends_with(track_name(v, s), " worker") ||
            sscanf(track_name(v, s), "graph %u host worker %u%7s", &g, &k,
                   tail) == 2);
}

/*
 * The device a slice's track belongs to: "devD <lane>" in process
 * "devD <device name>"; -1 for the host's tracks.
 */
static int slice_device(const weft__trace_view *v,
                        const weft__trace_slice_view *s)
{
    unsigned d;
    char lane[64];

    if (on_worker(v, s))
        return -1;
    if (sscanf(track_name(v, s), "dev%u %63s", &d, lane) != 2)
        fail_msg("track \"%s\" names no device", track_name(v, s));
    return (int)d;
}

/* The lane part of a device track's name: "compute0", "h2d", ... */
static const char *slice_lane(const weft__trace_view *v,
                              const weft__trace_slice_view *s)
{
    const char *sp = strchr(track_name(v, s), ' ');

    assert_non_null(sp);
    return sp + 1;
}

/* Slices of kind for node (kind WEFT__TRACE_KIND_COUNT: any kind). */
static size_t count_node(const weft__trace_view *v, long node,
                         weft__trace_kind kind)
{
    size_t n = 0;

    for (size_t i = 0; i < v->nslices; i++)
        n += v->slices[i].node == node &&
             (kind == WEFT__TRACE_KIND_COUNT || v->slices[i].kind == kind);
    return n;
}

static uint64_t bytes_of(const weft__trace_view *v, weft__trace_kind kind)
{
    uint64_t b = 0;

    for (size_t i = 0; i < v->nslices; i++)
        if (v->slices[i].kind == kind)
            b += v->slices[i].bytes;
    return b;
}

static size_t count_kind(const weft__trace_view *v, weft__trace_kind kind)
{
    size_t n = 0;

    for (size_t i = 0; i < v->nslices; i++)
        n += v->slices[i].kind == kind;
    return n;
}

/*
 * What every trace of weft keeps: each track is a lane (an in-order queue)
 * or the worker (one thread), so its slices never overlap; every slice
 * names a node, copies sit on copy lanes of their direction, kernels on
 * compute lanes, and the processes are "devD <device name>" and "host".
 */
static void check_well_formed(const weft__trace_view *v, const tr_run *r)
{
    assert_true(v->nslices > 0);
    for (size_t i = 0; i < v->ntracks; i++)
        assert_true(v->tracks[i].process < v->nprocesses);
    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *s = &v->slices[i];
        const weft__trace_slice_view *p = i ? &v->slices[i - 1] : NULL;
        int d = slice_device(v, s);

        assert_true(s->end_ns >= s->start_ns);
        assert_true(s->node >= 0);
        if (p && p->track == s->track && s->start_ns < p->end_ns)
            fail_msg("track \"%s\": slice \"%s\" (node %ld) starts at %llu "
                     "ns, before \"%s\" (node %ld) ends at %llu ns",
                     track_name(v, s), s->name, s->node,
                     (unsigned long long)s->start_ns, p->name, p->node,
                     (unsigned long long)p->end_ns);
        if (d >= 0) {
            char want[300];

            assert_true((unsigned)d < r->ndev);
            snprintf(want, sizeof want, "dev%d %s", d, r->names[d]);
            assert_string_equal(process_name(v, s), want);
        }
        switch (s->kind) {
        case WEFT__TRACE_KERNEL:
            assert_true(d >= 0);
            assert_true(starts_with(slice_lane(v, s), "compute"));
            assert_non_null(s->kernel);
            assert_string_equal(s->name, s->kernel);
            break;
        case WEFT__TRACE_H2D:
            assert_true(d >= 0);
            assert_string_equal(slice_lane(v, s), "h2d");
            assert_non_null(s->cause);
            break;
        case WEFT__TRACE_D2H:
            assert_true(d >= 0);
            assert_true(strcmp(slice_lane(v, s), "d2h") == 0 ||
                        strcmp(slice_lane(v, s), "h2d") == 0);
            assert_non_null(s->cause);
            break;
        case WEFT__TRACE_HOST:
        case WEFT__TRACE_MAP:
            assert_true(on_worker(v, s));
            break;
        default:
            break;
        }
    }
    for (size_t i = 0; i < v->nflows; i++) {
        assert_non_null(weft__trace_view_find(v, v->flows[i].from));
        assert_non_null(weft__trace_view_find(v, v->flows[i].to));
    }
}

/*
 * A flow says its target waited for its source: on one device (one clock)
 * the target starts after the source ended. (Across devices the two
 * devices' clocks are each placed on the host's by their own origin, and
 * the sim's virtual clocks are not the host's: no order is asserted.)
 */
static size_t check_flows(const weft__trace_view *v, size_t *cross_device)
{
    size_t same = 0;

    *cross_device = 0;
    for (size_t i = 0; i < v->nflows; i++) {
        const weft__trace_slice_view *a =
            weft__trace_view_find(v, v->flows[i].from);
        const weft__trace_slice_view *b =
            weft__trace_view_find(v, v->flows[i].to);
        int da = slice_device(v, a), db = slice_device(v, b);

        assert_true(a->track != b->track);
        if (da >= 0 && da == db) {
            same++;
            if (b->start_ns < a->end_ns)
                fail_msg("flow %s (node %ld, %s) -> %s (node %ld, %s): the "
                         "target starts %llu ns before the source ends",
                         a->name, a->node, track_name(v, a), b->name, b->node,
                         track_name(v, b),
                         (unsigned long long)(a->end_ns - b->start_ns));
        } else if (da >= 0 && db >= 0) {
            (*cross_device)++;
        }
    }
    return same;
}

/* Whether some h2d slice of device d overlaps some kernel slice of d. */
static int copy_overlaps_kernel(const weft__trace_view *v, int d)
{
    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *a = &v->slices[i];

        if (a->kind != WEFT__TRACE_H2D || slice_device(v, a) != d)
            continue;
        for (size_t j = 0; j < v->nslices; j++) {
            const weft__trace_slice_view *b = &v->slices[j];

            if (b->kind == WEFT__TRACE_KERNEL && slice_device(v, b) == d &&
                a->start_ns < b->end_ns && b->start_ns < a->end_ns)
                return 1;
        }
    }
    return 0;
}

/* ---- the chunked pipeline ---------------------------------------------- */
typedef struct pipeline {
    weft_buffer *buf;
    weft_graph *g;
    weft_exec *e;
    uint32_t *in, *out;
    size_t chunks, chunk; /* elements per chunk */
    weft_node *write, *kernel, *read;
    unsigned *kdev; /* chunks: the device index each kernel ran on */
} pipeline;

/* write, step, read per chunk; on device dev (NULL: placement decides). */
static void pipeline_make(pipeline *p, tr_run *r, size_t chunks, size_t chunk,
                          const weft_device *dev, weft_place_policy policy)
{
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    const size_t bytes = chunk * sizeof(uint32_t);

    memset(p, 0, sizeof *p);
    p->chunks = chunks;
    p->chunk = chunk;
    p->in = malloc(chunks * bytes);
    p->out = malloc(chunks * bytes);
    p->write = malloc(chunks * sizeof *p->write);
    p->kernel = malloc(chunks * sizeof *p->kernel);
    p->read = malloc(chunks * sizeof *p->read);
    p->kdev = malloc(chunks * sizeof *p->kdev);
    assert_true(p->in && p->out && p->write && p->kernel && p->read && p->kdev);
    for (size_t i = 0; i < chunks * chunk; i++) {
        p->in[i] = (uint32_t)(i * 7u);
        p->out[i] = 0;
    }
    check(weft_buffer_create(r->rt, chunks * bytes, &p->buf));
    check(weft_graph_create(r->rt, &p->g));
    for (size_t c = 0; c < chunks; c++) {
        weft_arg a[] = {
            weft_arg_buffer(p->buf, c * bytes, bytes, WEFT_READ_WRITE),
            weft_arg_u32((uint32_t)chunk),
        };

        check(weft_graph_add_write(p->g, p->buf, c * bytes, p->in + c * chunk,
                                   bytes, &p->write[c]));
        check(weft_graph_add_kernel(p->g, r->step, weft_dims1((uint32_t)chunk),
                                    a, 2, &p->kernel[c]));
        check(weft_graph_add_read(p->g, p->buf, c * bytes, p->out + c * chunk,
                                  bytes, &p->read[c]));
    }
    eo.device = dev;
    eo.policy = policy;
    check(weft_graph_instantiate(p->g, &eo, &p->e));
    for (size_t c = 0; c < chunks; c++)
        p->kdev[c] = dev_index(weft_exec_node_device(p->e, p->kernel[c]));
}

static void pipeline_run(pipeline *p)
{
    memset(p->out, 0, p->chunks * p->chunk * sizeof *p->out);
    check(weft_exec_launch(p->e));
    check(weft_exec_wait(p->e));
    for (size_t i = 0; i < p->chunks * p->chunk; i++)
        if (p->out[i] != step_one(p->in[i]))
            fail_msg("out[%zu] = %u, want %u", i, p->out[i],
                     step_one(p->in[i]));
}

/* The graph's objects go (before the runtime); the arrays stay. */
static void pipeline_destroy(pipeline *p)
{
    check(weft_exec_destroy(p->e));
    check(weft_graph_destroy(p->g));
    check(weft_buffer_destroy(p->buf));
    p->e = NULL;
}

static void pipeline_free(pipeline *p)
{
    free(p->kdev);
    free(p->in);
    free(p->out);
    free(p->write);
    free(p->kernel);
    free(p->read);
}

/*
 * The copies' slices carry the bytes that moved: per link, the sum over the
 * trace equals what the runtime counted (nothing but traced graphs moved
 * bytes in these runtimes). Called last in each case, so that a mismatch
 * does not hide the case's other checks.
 */
static void check_bytes(const weft__trace_view *v, const tr_run *r)
{
    print_message("# trace: h2d %llu B, d2h %llu B, peer %llu B; runtime: h2d "
                  "%llu B, d2h %llu B, peer %llu B\n",
                  (unsigned long long)bytes_of(v, WEFT__TRACE_H2D),
                  (unsigned long long)bytes_of(v, WEFT__TRACE_D2H),
                  (unsigned long long)bytes_of(v, WEFT__TRACE_PEER),
                  (unsigned long long)r->stats.h2d_bytes,
                  (unsigned long long)r->stats.d2h_bytes,
                  (unsigned long long)r->stats.peer_bytes);
    if (bytes_of(v, WEFT__TRACE_H2D) != r->stats.h2d_bytes)
        fail_msg("h2d slices carry %llu bytes, the runtime moved %llu",
                 (unsigned long long)bytes_of(v, WEFT__TRACE_H2D),
                 (unsigned long long)r->stats.h2d_bytes);
    if (bytes_of(v, WEFT__TRACE_PEER) != r->stats.peer_bytes)
        fail_msg("peer slices carry %llu bytes, the runtime moved %llu",
                 (unsigned long long)bytes_of(v, WEFT__TRACE_PEER),
                 (unsigned long long)r->stats.peer_bytes);
    if (bytes_of(v, WEFT__TRACE_D2H) != r->stats.d2h_bytes)
        fail_msg("d2h slices carry %llu bytes, the runtime moved %llu",
                 (unsigned long long)bytes_of(v, WEFT__TRACE_D2H),
                 (unsigned long long)r->stats.d2h_bytes);
}

/*
 * What every pipeline trace shows, launched `launches` times: each kernel
 * node exactly once per launch as a kernel slice, on the device placement
 * gave it; each write on the worker track; each read on a D2H lane (its
 * download straight into the caller's memory) or, if no device held the
 * bytes, on the worker; every chunk uploaded once per launch.
 */
static void check_pipeline_trace(const weft__trace_view *v, const tr_run *r,
                                 const pipeline *p, unsigned launches,
                                 unsigned *per_device)
{
    const size_t bytes = p->chunk * sizeof(uint32_t);

    for (size_t c = 0; c < p->chunks; c++) {
        unsigned d = p->kdev[c];
        size_t found = 0;

        assert_int_equal(count_node(v, p->kernel[c], WEFT__TRACE_KERNEL),
                         launches);
        for (size_t i = 0; i < v->nslices; i++) {
            const weft__trace_slice_view *s = &v->slices[i];

            if (s->node == (long)p->kernel[c] &&
                s->kind == WEFT__TRACE_KERNEL) {
                assert_int_equal(slice_device(v, s), (int)d);
                assert_string_equal(s->kernel, "step");
                found++;
            }
            if (s->node == (long)p->write[c] && s->kind == WEFT__TRACE_HOST) {
                assert_true(on_worker(v, s));
                assert_int_equal(s->bytes, bytes);
            }
            if (s->node == (long)p->read[c] && s->kind == WEFT__TRACE_D2H)
                assert_int_equal(slice_device(v, s), (int)d);
        }
        assert_int_equal(found, launches);
        if (per_device)
            per_device[d]++;
        assert_int_equal(count_node(v, p->write[c], WEFT__TRACE_HOST),
                         launches);
        /* A read: at most one download per launch, and in each launch a
         * download or a step on the worker (or both). */
        assert_true(count_node(v, p->read[c], WEFT__TRACE_D2H) <= launches);
        assert_true(count_node(v, p->read[c], WEFT__TRACE_KIND_COUNT) >=
                    launches);
    }
    assert_int_equal(bytes_of(v, WEFT__TRACE_H2D),
                     (uint64_t)launches * p->chunks * bytes);
}

/*
 * 16 chunks of write, kernel, read on one sim device, launched twice:
 * every node in the trace, lanes in order, the bytes the runtime moved,
 * flows from the copies to the kernels (which start after them), and in
 * virtual time an upload overlapping a kernel, as the pipeline intends.
 * Once with 32 KiB chunks (copied directly) and once with 256 KiB chunks
 * (through the pinned stager).
 */
static void sim_pipeline(size_t chunk_bytes, const char *name)
{
    tr_run r;
    pipeline p;
    weft__trace_view *v;
    weft_exec_stats st = {.size = sizeof st};
    size_t same, cross;
    unsigned per_device[2] = {0, 0};
    size_t ops, kernels = 0, h2d = 0;
    uint64_t sim_h2d_bytes = 0;
    const weft__sim_op *rec;

    tr_open(&r, "sim", "devices=2,real_data=1", 0, name);
    weft__sim_record_clear(r.rt->devices[0]);
    pipeline_make(&p, &r, 16, chunk_bytes / sizeof(uint32_t),
                  weft_runtime_device(r.rt, 0), WEFT_PLACE_DEFAULT);
    pipeline_run(&p);
    pipeline_run(&p);
    check(weft_exec_get_stats(p.e, &st));
    assert_int_equal(st.launches, 2);
    assert_int_equal(st.devices_used, 1);
    /* The sim's own record of what ran, to compare with the trace. */
    rec = weft__sim_record(r.rt->devices[0], &ops);
    for (size_t i = 0; i < ops; i++) {
        kernels += rec[i].kind == WEFT__SIM_KERNEL;
        if (rec[i].kind == WEFT__SIM_H2D) {
            h2d++;
            sim_h2d_bytes += rec[i].bytes;
        }
    }
    pipeline_destroy(&p);
    v = tr_close(&r);

    check_well_formed(v, &r);
    check_pipeline_trace(v, &r, &p, 2, per_device);
    assert_int_equal(per_device[0], 16);
    assert_int_equal(count_kind(v, WEFT__TRACE_KERNEL), kernels);
    /* Staged uploads are several engine copies per slice. */
    assert_true(count_kind(v, WEFT__TRACE_H2D) <= h2d);
    assert_int_equal(bytes_of(v, WEFT__TRACE_H2D), sim_h2d_bytes);
    same = check_flows(v, &cross);
    print_message("# %s: %zu slices, %zu flows (%zu on one device)\n", name,
                  v->nslices, v->nflows, same);
    assert_true(same >= 16); /* each chunk's upload before its kernel */
    assert_int_equal(cross, 0);
    assert_true(copy_overlaps_kernel(v, 0));
    check_bytes(v, &r);
    weft__trace_view_destroy(v);
    pipeline_free(&p);
}

static void sim_pipeline_direct(void **state)
{
    (void)state;
    sim_pipeline(32 << 10, "pipeline-direct.json");
}

static void sim_pipeline_staged(void **state)
{
    (void)state;
    sim_pipeline(256 << 10, "pipeline-staged.json");
}

/*
 * The pipeline with its kernels spread by placement (round-robin, so that
 * the spread does not depend on learned costs) over two sim devices, and
 * on two host-driver devices: the trace puts each kernel on the device
 * weft_exec_node_device names, and both devices ran some.
 */
static void spread_pipeline(const char *devices, const char *sim,
                            unsigned host_devices, const char *name)
{
    tr_run r;
    pipeline p;
    weft__trace_view *v;
    unsigned per_device[8] = {0};
    size_t cross;

    tr_open(&r, devices, sim, host_devices, name);
    assert_int_equal(r.ndev, 2);
    pipeline_make(&p, &r, 8, 16 << 10, NULL, WEFT_PLACE_ROUND_ROBIN);
    pipeline_run(&p);
    pipeline_destroy(&p);
    v = tr_close(&r);
    check_well_formed(v, &r);
    check_pipeline_trace(v, &r, &p, 1, per_device);
    print_message("# %s: kernels on dev0 %u, dev1 %u; %zu slices\n", name,
                  per_device[0], per_device[1], v->nslices);
    assert_true(per_device[0] > 0 && per_device[1] > 0);
    check_flows(v, &cross);
    check_bytes(v, &r);
    weft__trace_view_destroy(v);
    pipeline_free(&p);
}

static void sim_pipeline_spread(void **state)
{
    (void)state;
    spread_pipeline("sim", "devices=2,real_data=1", 0, "spread-sim.json");
}

static void host_pipeline_spread(void **state)
{
    (void)state;
    spread_pipeline("host", NULL, 2, "spread-host.json");
}

/* ---- across devices ---------------------------------------------------- */
/*
 * x written, stepped on device 0, read by a kernel on device 1 (placed
 * with weft_graph_set_device), its result read back: the bytes of x cross
 * from device 0 to device 1, after the kernel on device 0.
 */
enum { M = 4096 }; /* elements of the cross-device graph's buffers */

typedef struct cross_graph {
    uint32_t in[M], out[M];
    weft_buffer *x, *y;
    weft_graph *g;
    weft_exec *e;
    weft_node write, prod, cons, read;
} cross_graph;

static void cross_make(cross_graph *c, tr_run *r)
{
    weft_arg a[] = {weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                    weft_arg_u32(M)};
    weft_arg b[] = {weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_WRITE),
                    weft_arg_buffer(NULL, 0, WEFT_WHOLE, WEFT_READ),
                    weft_arg_u32(M)};

    for (uint32_t i = 0; i < M; i++) {
        c->in[i] = i;
        c->out[i] = 0;
    }
    check(weft_buffer_create(r->rt, sizeof c->in, &c->x));
    check(weft_buffer_create(r->rt, sizeof c->in, &c->y));
    a[0].buffer = c->x;
    b[0].buffer = c->y;
    b[1].buffer = c->x;
    check(weft_graph_create(r->rt, &c->g));
    check(weft_graph_add_write(c->g, c->x, 0, c->in, sizeof c->in, &c->write));
    check(weft_graph_add_kernel(c->g, r->step, weft_dims1(M), a, 2, &c->prod));
    check(weft_graph_add_kernel(c->g, r->add, weft_dims1(M), b, 3, &c->cons));
    check(weft_graph_add_read(c->g, c->y, 0, c->out, sizeof c->out, &c->read));
    check(weft_graph_set_device(c->g, c->prod, weft_runtime_device(r->rt, 0)));
    check(weft_graph_set_device(c->g, c->cons, weft_runtime_device(r->rt, 1)));
    check(weft_graph_instantiate(c->g, NULL, &c->e));
    assert_int_equal(dev_index(weft_exec_node_device(c->e, c->prod)), 0);
    assert_int_equal(dev_index(weft_exec_node_device(c->e, c->cons)), 1);
}

static void cross_run(cross_graph *c)
{
    check(weft_exec_launch(c->e));
    check(weft_exec_wait(c->e));
    for (uint32_t i = 0; i < M; i++)
        if (c->out[i] != step_one(c->in[i]) + 1000u)
            fail_msg("out[%u] = %u, want %u", i, c->out[i],
                     step_one(c->in[i]) + 1000u);
}

static void cross_destroy(cross_graph *c)
{
    check(weft_exec_destroy(c->e));
    check(weft_graph_destroy(c->g));
    check(weft_buffer_destroy(c->x));
    check(weft_buffer_destroy(c->y));
}

/*
 * The trace of it: the kernels on their devices' compute lanes, the peer
 * copy of x on device 1 for the consumer, with x's size in bytes and a
 * cause, and a flow from device 0's work to device 1's.
 */
static void cross_device_flows(void **state)
{
    static cross_graph c;
    tr_run r;
    weft__trace_view *v;
    size_t cross, peers = 0;

    (void)state;
    tr_open(&r, "sim", "devices=2,real_data=1", 0, "cross.json");
    cross_make(&c, &r);
    cross_run(&c);
    cross_destroy(&c);
    v = tr_close(&r);
    check_well_formed(v, &r);
    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *s = &v->slices[i];

        if (s->kind == WEFT__TRACE_KERNEL)
            assert_int_equal(slice_device(v, s),
                             s->node == (long)c.prod ? 0 : 1);
        if (s->kind == WEFT__TRACE_PEER) {
            peers++;
            assert_int_equal(s->node, c.cons);
            assert_int_equal(slice_device(v, s), 1);
            assert_non_null(s->cause);
        }
    }
    assert_int_equal(count_node(v, c.prod, WEFT__TRACE_KERNEL), 1);
    assert_int_equal(count_node(v, c.cons, WEFT__TRACE_KERNEL), 1);
    assert_int_equal(count_node(v, c.write, WEFT__TRACE_HOST), 1);
    assert_true(peers >= 1);
    assert_int_equal(r.stats.peer_bytes, sizeof c.in);
    check_flows(v, &cross);
    print_message("# cross: %zu slices, %zu flows, %zu across devices\n",
                  v->nslices, v->nflows, cross);
    assert_true(cross >= 1);
    /* A flow that leaves device 0 for device 1. */
    {
        int found = 0;

        for (size_t i = 0; i < v->nflows; i++) {
            const weft__trace_slice_view *a =
                weft__trace_view_find(v, v->flows[i].from);
            const weft__trace_slice_view *b =
                weft__trace_view_find(v, v->flows[i].to);

            found |= slice_device(v, a) == 0 && slice_device(v, b) == 1;
        }
        assert_true(found);
    }
    check_bytes(v, &r);
    weft__trace_view_destroy(v);
}

/* ---- every kind of node ------------------------------------------------ */
static void map_fn(void *ptr, size_t size, void *user)
{
    const uint32_t *v = ptr;
    uint64_t *sum = user;

    for (size_t i = 0; i < size / sizeof *v; i++)
        *sum += v[i];
}

static void host_task_fn(void *const *ptrs, void *user)
{
    const uint32_t *x = ptrs[0];
    uint32_t *w = ptrs[1];

    (void)user;
    for (size_t i = 0; i < 1024; i++)
        w[i] = x[i] + 5u;
}

/*
 * write, fill, kernel, copy, map, host task, read and an empty join on
 * one sim device, launched twice: every node but the join shows up in the
 * trace in each launch, the host's steps (write, map, host task) on the
 * worker track with their kinds, each kernel once per launch on a compute
 * lane; a fill (on the host copy in the first launch, on the device in the
 * second) and a copy inside the device are not traced as link copies, and
 * the links' bytes are the runtime's.
 */
static void every_node_kind(void **state)
{
    enum { K = 1024 };
    static uint32_t in[K], out[K];
    const size_t bytes = sizeof in;
    const uint32_t zero = 0;
    tr_run r;
    weft_buffer *x, *y, *z, *w;
    weft_graph *g;
    weft_exec *e;
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_node n[9];
    uint64_t sum = 0, want = 0;
    char missing[128] = "";
    size_t mlen = 0;
    weft__trace_view *v;
    static const char *const what[] = {"write", "fill",  "kernel",
                                       "copy",  "map",   "host task",
                                       "read",  "empty", "kernel 2"};

    (void)state;
    for (uint32_t i = 0; i < K; i++) {
        in[i] = i;
        want += step_one(i);
    }
    tr_open(&r, "sim", "devices=2,real_data=1", 0, "kinds.json");
    check(weft_buffer_create(r.rt, bytes, &x));
    check(weft_buffer_create(r.rt, bytes, &y));
    check(weft_buffer_create(r.rt, bytes, &z));
    check(weft_buffer_create(r.rt, bytes, &w));
    check(weft_graph_create(r.rt, &g));
    check(weft_graph_add_write(g, x, 0, in, bytes, &n[0]));
    check(weft_graph_add_fill(g, y, 0, bytes, &zero, sizeof zero, &n[1]));
    {
        weft_arg a[] = {weft_arg_buffer(x, 0, WEFT_WHOLE, WEFT_READ_WRITE),
                        weft_arg_u32(K)};

        check(weft_graph_add_kernel(g, r.step, weft_dims1(K), a, 2, &n[2]));
    }
    check(weft_graph_add_copy(g, z, 0, x, 0, bytes, &n[3]));
    check(weft_graph_add_map(g, z, 0, bytes, WEFT_READ, map_fn, &sum, &n[4]));
    {
        weft_access_desc acc[] = {weft_access_range(x, 0, bytes, WEFT_READ),
                                  weft_access_range(w, 0, bytes, WEFT_WRITE)};

        check(weft_graph_add_host(g, host_task_fn, NULL, acc, 2, &n[5]));
    }
    check(weft_graph_add_read(g, w, 0, out, bytes, &n[6]));
    check(weft_graph_add_empty(g, &n[7]));
    check(weft_graph_add_edge(g, n[6], n[7]));
    {
        weft_arg a[] = {weft_arg_buffer(y, 0, WEFT_WHOLE, WEFT_WRITE),
                        weft_arg_buffer(z, 0, WEFT_WHOLE, WEFT_READ),
                        weft_arg_u32(K)};

        check(weft_graph_add_kernel(g, r.add, weft_dims1(K), a, 3, &n[8]));
    }
    eo.device = weft_runtime_device(r.rt, 0);
    check(weft_graph_instantiate(g, &eo, &e));
    /* The second launch fills y where the first left it: on the device. */
    for (int launch = 0; launch < 2; launch++) {
        sum = 0;
        memset(out, 0, sizeof out);
        check(weft_exec_launch(e));
        check(weft_exec_wait(e));
        assert_int_equal(sum, want);
        for (uint32_t i = 0; i < K; i++)
            assert_int_equal(out[i], step_one(i) + 5u);
    }
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(x));
    check(weft_buffer_destroy(y));
    check(weft_buffer_destroy(z));
    check(weft_buffer_destroy(w));
    v = tr_close(&r);
    check_well_formed(v, &r);
    assert_int_equal(count_node(v, n[7], WEFT__TRACE_KIND_COUNT), 0);
    assert_int_equal(count_node(v, n[2], WEFT__TRACE_KERNEL), 2);
    assert_int_equal(count_node(v, n[8], WEFT__TRACE_KERNEL), 2);
    assert_int_equal(count_node(v, n[0], WEFT__TRACE_HOST), 2);
    assert_int_equal(count_node(v, n[4], WEFT__TRACE_MAP), 2);
    assert_int_equal(count_node(v, n[5], WEFT__TRACE_HOST), 2);
    for (unsigned i = 0; i < 9; i++) {
        char kinds[256] = "";
        size_t len = 0;

        for (size_t k = 0; k < v->nslices; k++)
            if (v->slices[k].node == (long)n[i] && len < sizeof kinds)
                len += (size_t)snprintf(
                    kinds + len, sizeof kinds - len, " %s on %s",
                    weft__trace_kind_name(v->slices[k].kind),
                    track_name(v, &v->slices[k]));
        print_message("# node %u (%s):%s\n", n[i], what[i],
                      len ? kinds : " none");
        /* At least one slice per launch. */
        if (i != 7 && count_node(v, n[i], WEFT__TRACE_KIND_COUNT) < 2 &&
            mlen < sizeof missing)
            mlen += (size_t)snprintf(missing + mlen, sizeof missing - mlen,
                                     " %s", what[i]);
    }
    if (mlen)
        fail_msg("nodes not in the trace in each launch:%s", missing);
    /* The map and the host task ran on host workers, and show there. */
    if (!getenv("WEFT_HOST_WORKERS") || atoi(getenv("WEFT_HOST_WORKERS")))
        for (size_t k = 0; k < v->nslices; k++) {
            const weft__trace_slice_view *sl = &v->slices[k];

            if ((sl->node == (long)n[4] || sl->node == (long)n[5]) &&
                (sl->kind == WEFT__TRACE_MAP || sl->kind == WEFT__TRACE_HOST) &&
                !strstr(track_name(v, sl), " host worker "))
                fail_msg("node %ld ran on the track \"%s\", not a host "
                         "worker's",
                         sl->node, track_name(v, sl));
        }
    /* A fill moves no bytes over a link, nor does a copy in one device. */
    for (size_t k = 0; k < v->nslices; k++) {
        const weft__trace_slice_view *sl = &v->slices[k];

        if (sl->node == (long)n[1] && weft__trace_kind_is_copy(sl->kind))
            fail_msg("the fill (node %u) is traced as %s on %s", n[1],
                     weft__trace_kind_name(sl->kind), track_name(v, sl));
        if (sl->node == (long)n[3] && weft__trace_kind_is_copy(sl->kind) &&
            starts_with(slice_lane(v, sl), "compute"))
            fail_msg("the copy in device 0 (node %u) is traced as %s on %s",
                     n[3], weft__trace_kind_name(sl->kind), track_name(v, sl));
    }
    check_bytes(v, &r);
    weft__trace_view_destroy(v);
}

/* ---- weft_exec_get_stats and weft_exec_write_dot ------------------------ */
/*
 * The statistics of one launch of the cross-device graph: the nodes, the
 * events and waits the runtime counted for it, two devices, and lanes
 * that name their device and role.
 */
static void exec_stats(void **state)
{
    static cross_graph c;
    tr_run r;
    weft_exec_stats st, small;
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    uint64_t nodes = 0;
    int peer = 0;
    weft__trace_view *v;

    (void)state;
    tr_open(&r, "sim", "devices=2,real_data=1", 0, "stats.json");
    cross_make(&c, &r);
    memset(&st, 0, sizeof st);
    st.size = sizeof st;
    check(weft_exec_get_stats(c.e, &st));
    assert_int_equal(st.launches, 0);
    assert_int_equal(st.devices_used, 2); /* where placement put them */
    check(weft_runtime_get_stats(r.rt, &s0));
    cross_run(&c);
    check(weft_runtime_get_stats(r.rt, &s1));
    check(weft_exec_get_stats(c.e, &st));
    assert_int_equal(st.size, sizeof st);
    assert_int_equal(st.launches, 1);
    assert_int_equal(st.nodes, weft_graph_node_count(c.g));
    assert_int_equal(st.devices_used, 2);
    assert_int_equal(st.events, s1.plan_events - s0.plan_events);
    assert_int_equal(st.waits, s1.plan_waits - s0.plan_waits);
    assert_true(st.events >= 1); /* device 1 waits for device 0 */
    assert_true(st.waits >= 1);
    assert_true(st.nlanes >= 3 && st.nlanes <= 64);
    assert_int_equal(st.timed, 1);
    for (unsigned i = 0; i < st.nlanes; i++) {
        const weft_lane_stats *l = &st.lanes[i];
        unsigned d = dev_index(l->device);

        assert_non_null(l->role);
        assert_true(
            strcmp(l->role, "compute0") == 0 ||
            strcmp(l->role, "compute1") == 0 || strcmp(l->role, "h2d") == 0 ||
            strcmp(l->role, "d2h") == 0 || strcmp(l->role, "peer") == 0);
        assert_true(l->ops >= l->nodes);
        /* Traced, so timed: busy time within the lane's span, and some on
         * every lane that ran a node. */
        assert_true(l->busy_ns <= l->span_ns);
        if (l->nodes)
            assert_true(l->busy_ns > 0);
        nodes += l->nodes;
        if (strcmp(l->role, "peer") == 0 && d == 1)
            peer = 1;
        for (unsigned j = 0; j < i; j++)
            assert_false(st.lanes[j].device == l->device &&
                         strcmp(st.lanes[j].role, l->role) == 0);
    }
    assert_true(peer); /* x crossed to device 1 */
    assert_true(nodes <= st.nodes);
    /* A caller built against a smaller struct gets its part only. */
    memset(&small, 0xab, sizeof small);
    small.size = offsetof(weft_exec_stats, lanes);
    check(weft_exec_get_stats(c.e, &small));
    assert_int_equal(small.launches, 1);
    assert_int_equal(small.nlanes, st.nlanes);
    assert_int_equal(small.lanes[0].ops, 0xababababababababull);
    small.size = 0;
    assert_int_equal(weft_exec_get_stats(c.e, &small), WEFT_EINVAL);
    small.size = sizeof small + 8;
    assert_int_equal(weft_exec_get_stats(c.e, &small), WEFT_EINVAL);
    assert_int_equal(weft_exec_get_stats(NULL, &st), WEFT_EINVAL);
    assert_int_equal(weft_exec_get_stats(c.e, NULL), WEFT_EINVAL);
    assert_null(weft_exec_node_device(c.e, 99));
    cross_destroy(&c);
    v = tr_close(&r);
    weft__trace_view_destroy(v);
}

/* DOT as written, parsed line by line into clusters and edges. */
typedef struct dot_plan {
    char *text;
    char cluster[16][48]; /* the lane cluster each node sits in */
    unsigned nodes;
    unsigned edges, event_edges, host_wait_edges;
} dot_plan;

static void dot_parse(dot_plan *d, const char *path, unsigned nnodes)
{
    FILE *f = fopen(path, "r");
    char line[1024], cur[48] = "", *text;
    size_t len = 0;
    int depth = 0;

    assert_non_null(f);
    memset(d, 0, sizeof *d);
    assert_true(nnodes <= 16);
    text = calloc(1, 1 << 16);
    assert_non_null(text);
    while (fgets(line, sizeof line, f)) {
        unsigned a, b;
        char name[48];

        assert_true(len + strlen(line) < (1 << 16));
        memcpy(text + len, line, strlen(line) + 1);
        len += strlen(line);
        for (const char *p = line; *p; p++) {
            if (*p == '"') /* braces inside labels do not count */
                for (p++; *p && *p != '"'; p++)
                    if (*p == '\\' && p[1])
                        p++;
            if (*p == '{')
                depth++;
            else if (*p == '}')
                depth--;
            if (!*p)
                break;
        }
        if (sscanf(line, " subgraph cluster_%47[a-z0-9_] {", name) == 1) {
            snprintf(cur, sizeof cur, "%s", name);
        } else if (sscanf(line, " n%u -> n%u", &a, &b) == 2) {
            assert_true(a < nnodes && b < nnodes);
            d->edges++;
            if (strstr(line, "label=\"event\"")) {
                d->event_edges++;
                /* An event orders two different lanes, never one. */
                if (strcmp(d->cluster[a], d->cluster[b]) == 0)
                    fail_msg("event edge n%u -> n%u inside lane %s", a, b,
                             d->cluster[a]);
            }
            d->host_wait_edges += strstr(line, "host wait") != NULL;
        } else if (sscanf(line, " n%u [label=", &a) == 1 && depth >= 3) {
            assert_true(a < nnodes);
            assert_string_equal(d->cluster[a], ""); /* in one cluster */
            snprintf(d->cluster[a], sizeof d->cluster[a], "%s", cur);
            d->nodes++;
        }
    }
    fclose(f);
    assert_int_equal(depth, 0);
    d->text = text;
}

static void exec_dot(void **state)
{
    static cross_graph c;
    tr_run r;
    weft_exec_stats st = {.size = sizeof st};
    dot_plan d;
    char path[512], want[64];
    unsigned nn;
    FILE *f;

    (void)state;
    tr_open(&r, "sim", "devices=2,real_data=1", 0, "dot.json");
    cross_make(&c, &r);
    nn = weft_graph_node_count(c.g);
    /* Before any launch: the lowered lanes. */
    snprintf(path, sizeof path, "%s/lowered.dot", tmpdir);
    f = fopen(path, "w");
    assert_non_null(f);
    check(weft_exec_write_dot(c.e, f));
    fclose(f);
    dot_parse(&d, path, nn);
    assert_true(starts_with(d.text, "digraph "));
    assert_non_null(strstr(d.text, "lowered lanes"));
    assert_int_equal(d.event_edges, 0);
    assert_true(starts_with(d.cluster[c.prod], "d0_compute"));
    assert_true(starts_with(d.cluster[c.cons], "d1_compute"));
    free(d.text);

    cross_run(&c);
    check(weft_exec_get_stats(c.e, &st));
    snprintf(path, sizeof path, "%s/plan.dot", tmpdir);
    f = fopen(path, "w");
    assert_non_null(f);
    check(weft_exec_write_dot(c.e, f));
    fclose(f);
    dot_parse(&d, path, nn);
    print_message("# dot: %u nodes in clusters, %u edges, %u event, %u host "
                  "wait\n",
                  d.nodes, d.edges, d.event_edges, d.host_wait_edges);
    assert_true(starts_with(d.text, "digraph "));
    assert_non_null(strstr(d.text, "lanes of the last launch"));
    assert_non_null(strstr(d.text, "subgraph cluster_d0 {"));
    assert_non_null(strstr(d.text, "subgraph cluster_d1 {"));
    assert_int_equal(d.nodes, nn); /* every node ran, each in one lane */
    assert_int_equal(d.edges, weft_graph_edge_count(c.g));
    assert_true(starts_with(d.cluster[c.prod], "d0_compute"));
    assert_true(starts_with(d.cluster[c.cons], "d1_compute"));
    /* The write goes from the program's memory to its reader's device. */
    assert_true(starts_with(d.cluster[c.write], "d0_h2d"));
    /* Kernels on device 1 waited for device 0's: an event edge. */
    assert_true(d.event_edges >= 1);
    /* A cluster for each lane on which a node's work ended. */
    for (unsigned i = 0; i < st.nlanes; i++) {
        if (!st.lanes[i].nodes)
            continue;
        snprintf(want, sizeof want, "subgraph cluster_d%u_%s {",
                 dev_index(st.lanes[i].device), st.lanes[i].role);
        if (!strstr(d.text, want))
            fail_msg("no \"%s\" in the DOT", want);
    }
    /* The copy of x to device 1 and the read's download of y, as the last
     * launch counted them. */
    assert_non_null(strstr(d.text, "+peer 16.0 KiB in 1"));
    if (!strstr(d.text, "+d2h 16.0 KiB in 1"))
        fail_msg("the read node's download (+d2h 16.0 KiB in 1) is not in "
                 "the DOT (%s)",
                 path);
    free(d.text);
    assert_int_equal(weft_exec_write_dot(c.e, NULL), WEFT_EINVAL);
    assert_int_equal(weft_exec_write_dot(NULL, stdout), WEFT_EINVAL);
    cross_destroy(&c);
    weft__trace_view_destroy(tr_close(&r));
}

/*
 * A one-kernel graph on a wrapped buffer, on one host device: the DOT of
 * the first launch shows its kernel's upload. (The launch's lookahead,
 * which records the next launch ahead and moves nothing, used to clear
 * the per-node copies before the program could read them.)
 */
static void dot_first_launch_copies(void **state)
{
    static uint32_t v[300 * 256];
    tr_run r;
    weft_buffer *b;
    weft_graph *g;
    weft_exec *e;
    weft_node n;
    char path[512], *text;
    FILE *f;
    long len;
    uint32_t cnt = 128;

    (void)state;
    /* Untraced: a traced launch makes no lookahead. */
    memset(&r, 0, sizeof r);
    {
        weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
        weft_module_source src = {WEFT_SOURCE_HOST, host_kernels, 1, NULL,
                                  "dot"};

        o.devices = "host";
        o.host_devices = 1;
        check(weft_runtime_create(&r.rt, &o));
        check(weft_module_create(r.rt, &src, 1, &r.mod));
        check(weft_module_get_kernel(r.mod, "step", &r.step));
    }
    check(weft_buffer_wrap(r.rt, v, sizeof v, &b));
    check(weft_graph_create(r.rt, &g));
    {
        weft_arg a[] = {weft_arg_buffer(b, 0, 512, WEFT_READ_WRITE),
                        weft_arg_u32(cnt)};

        check(weft_graph_add_kernel(g, r.step, weft_dims1(cnt), a, 2, &n));
    }
    check(weft_graph_instantiate(g, NULL, &e));
    check(weft_exec_launch(e));
    check(weft_exec_wait(e));
    snprintf(path, sizeof path, "%s/first.dot", tmpdir);
    f = fopen(path, "w+");
    assert_non_null(f);
    check(weft_exec_write_dot(e, f));
    len = ftell(f);
    assert_true(len > 0);
    text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    rewind(f);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    if (!strstr(text, "+h2d 512 B in 1"))
        fail_msg("the kernel's upload (+h2d 512 B in 1) is not in the DOT "
                 "(%s)",
                 path);
    free(text);
    check(weft_exec_destroy(e));
    check(weft_graph_destroy(g));
    check(weft_buffer_destroy(b));
    check(weft_module_destroy(r.mod));
    check(weft_runtime_destroy(r.rt));
}

/* ---- main -------------------------------------------------------------- */
static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sim_pipeline_direct),
        cmocka_unit_test(dot_first_launch_copies),
        cmocka_unit_test(sim_pipeline_staged),
        cmocka_unit_test(sim_pipeline_spread),
        cmocka_unit_test(host_pipeline_spread),
        cmocka_unit_test(cross_device_flows),
        cmocka_unit_test(every_node_kind),
        cmocka_unit_test(exec_stats),
        cmocka_unit_test(exec_dot),
    };
    /* The options of each case decide; nothing from the environment. */
    static const char *const overrides[] = {
        "WEFT_TRACE",
        "WEFT_DEVICES",
        "WEFT_SIM",
        "WEFT_HOST_DEVICES",
        "WEFT_HOST_THREADS",
        "WEFT_PLACE",
        "WEFT_DEVICE_MEM_LIMIT",
        "WEFT_EXEC_ORDER",
        "WEFT_STATS",
    };
    const char *base = getenv("TMPDIR");
    int rc;

    for (size_t i = 0; i < sizeof overrides / sizeof overrides[0]; i++)
        unsetenv(overrides[i]);
    snprintf(tmpdir, sizeof tmpdir, "%s/weft-exec-trace-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    rc = wt_run_group(argc, argv, tests, NULL, NULL);
    /* our own directory, made above by mkdtemp; kept when a test failed */
    if (rc == 0 && !getenv("WEFT_KEEP_TEST_FILES")) {
        if (nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    } else {
        fprintf(stderr, "files kept in %s\n", tmpdir);
    }
    return rc;
}
