/*
 * pipeline: a large array processed in chunks, on every device.
 *
 * For each chunk the graph has three nodes: write the chunk from the input
 * array into a buffer, run a kernel on it, read it back into the output
 * array. weft infers that the three nodes of a chunk depend on each other
 * and that chunks do not, so it may copy one chunk in while it computes
 * another and copies a third out, and it spreads the chunks' kernels over
 * the devices (the placement policy, WEFT_PLACE; heft by default): no
 * device is named anywhere below.
 *
 * The program checks the result, says which device ran how many kernels,
 * prints a short summary of what the launch did (events and waits between
 * lanes, the lanes used, bytes per link), and writes a trace of the run,
 * which `weft-trace TRACE -o timeline.svg` draws.
 *
 *     pipeline [--trace PATH | --no-trace]
 *
 * The trace goes to PATH (default weft-demo/pipeline-trace.json; the
 * environment variable WEFT_TRACE, if set, wins). It is written when the
 * runtime is destroyed.
 */
#define _POSIX_C_SOURCE 200809L /* mkdir */

#include <weft.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* One step of a hash per element; exact, so the check can be too. */
static const char hash_source[] =
    "WEFT_KERNEL void hash(WEFT_GLOBAL weft_u32 *v, weft_u32 n)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < n) {\n"
    "        weft_u32 x = v[i] * 2654435761u;\n"
    "        v[i] = x ^ (x >> 15);\n"
    "    }\n"
    "}\n";

static uint32_t hash_one(uint32_t v)
{
    uint32_t x = v * 2654435761u;

    return x ^ (x >> 15);
}

static void hash_host(const weft_host_group *g, void *const *args)
{
    uint32_t *v = args[0];
    uint32_t n = *(const uint32_t *)args[1];
    uint32_t first = g->group[0] * g->group_size[0];

    for (uint32_t i = first; i < first + g->group_size[0] && i < n; i++)
        v[i] = hash_one(v[i]);
}

static const weft_param_type hash_params[] = {WEFT_PARAM_BUFFER,
                                              WEFT_PARAM_U32};
static const weft_host_kernel host_kernels[] = {
    {"hash", hash_host, 2, hash_params, NULL, NULL, NULL},
};

#define TRY(call)                                                              \
    do {                                                                       \
        rc = (call);                                                           \
        if (rc < 0) {                                                          \
            what = #call;                                                      \
            goto out;                                                          \
        }                                                                      \
    } while (0)

static double seconds(void)
{
    struct timespec ts;

    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double mib(uint64_t bytes)
{
    return (double)bytes / 1048576.0;
}

/* Make the folder part of path ("a/b/file" -> "a/b"), one level. */
static void make_parent(const char *path)
{
    char dir[1024];
    const char *slash = strrchr(path, '/');
    size_t n = slash ? (size_t)(slash - path) : 0;

    if (n == 0 || n >= sizeof dir)
        return;
    memcpy(dir, path, n);
    dir[n] = '\0';
    if (mkdir(dir, 0777) != 0 && errno != EEXIST)
        fprintf(stderr, "pipeline: cannot make %s: %s\n", dir, strerror(errno));
}

int main(int argc, char **argv)
{
    /* Chunks are a multiple of 4 KiB, so that every device accepts a
     * kernel argument that starts at a chunk (weft_device_info says the
     * alignment a device needs: arg_offset_align). */
    enum { N = 1 << 23, CHUNKS = 16, CHUNK = N / CHUNKS, MAXDEV = 64 };
    const size_t chunk_bytes = CHUNK * sizeof(uint32_t);
    const weft_module_source variants[] = {
        {WEFT_SOURCE_PORTABLE, hash_source, 0, NULL, "hash"},
        {WEFT_SOURCE_HOST, host_kernels, 1, NULL, "hash (C)"},
    };
    weft_runtime_options ro = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt = NULL;
    weft_module *mod = NULL;
    weft_kernel *hash;
    weft_buffer *buf = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_exec_stats es = {.size = sizeof es};
    weft_stats rs = {.size = sizeof rs};
    weft_node kernel_node[CHUNKS];
    unsigned per_device[MAXDEV] = {0}, ndev = 0, nodes = 0, edges = 0;
    const char *trace = "weft-demo/pipeline-trace.json", *driver = "";
    uint32_t *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    const char *what = NULL;
    double t0, t1;
    long wrong = 0;
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--trace") == 0 && i + 1 < argc) {
            trace = argv[++i];
        } else if (strcmp(argv[i], "--no-trace") == 0) {
            trace = NULL;
        } else {
            fprintf(stderr, "usage: pipeline [--trace PATH | --no-trace]\n");
            return 2;
        }
    }
    if (getenv("WEFT_TRACE") && *getenv("WEFT_TRACE"))
        trace = getenv("WEFT_TRACE"); /* what the runtime will use */
    if (!in || !out) {
        fprintf(stderr, "pipeline: out of memory\n");
        return 1;
    }
    for (uint32_t i = 0; i < N; i++) {
        in[i] = i;
        out[i] = 0;
    }
    if (trace) {
        make_parent(trace);
        remove(trace); /* so that a trace found afterwards is this run's */
    }

    ro.trace_file = trace;
    TRY(weft_runtime_create(&rt, &ro));
    TRY(weft_module_create(rt, variants, 2, &mod));
    TRY(weft_module_get_kernel(mod, "hash", &hash));
    /* A buffer that weft allocates: the host arrays stay the user's. */
    TRY(weft_buffer_create(rt, N * sizeof(uint32_t), &buf));

    TRY(weft_graph_create(rt, &g));
    for (size_t c = 0; c < CHUNKS; c++) {
        size_t off = c * chunk_bytes;
        weft_arg args[] = {
            weft_arg_buffer(buf, off, chunk_bytes, WEFT_READ_WRITE),
            weft_arg_u32(CHUNK),
        };

        TRY(weft_graph_add_write(g, buf, off, in + c * CHUNK, chunk_bytes,
                                 NULL));
        TRY(weft_graph_add_kernel(g, hash, weft_dims1(CHUNK), args, 2,
                                  &kernel_node[c]));
        TRY(weft_graph_add_read(g, buf, off, out + c * CHUNK, chunk_bytes,
                                NULL));
    }
    nodes = weft_graph_node_count(g);
    edges = weft_graph_edge_count(g);
    /* No device named: placement spreads the kernels. */
    TRY(weft_graph_instantiate(g, NULL, &e));

    t0 = seconds();
    TRY(weft_exec_launch(e));
    TRY(weft_exec_wait(e));
    t1 = seconds();

    /* The read nodes have filled out[]: no sync needed. */
    for (uint32_t i = 0; i < N; i++)
        if (out[i] != hash_one(in[i]) && wrong++ < 5)
            fprintf(stderr, "pipeline: out[%u] = %u, expected %u\n", i, out[i],
                    hash_one(in[i]));

    /* Where the kernels ran. */
    for (size_t c = 0; c < CHUNKS; c++) {
        weft_device_info info = {.size = sizeof info};

        TRY(weft_device_get_info(weft_exec_node_device(e, kernel_node[c]),
                                 &info));
        if (info.index < MAXDEV && per_device[info.index]++ == 0)
            ndev++;
        driver = info.driver;
    }
    printf("pipeline: %d chunks of %zu KiB, %u nodes, %u edges, on %u %s "
           "device%s; %.1f MiB in and out in %.2f ms: %s\n",
           CHUNKS, chunk_bytes / 1024, nodes, edges, ndev, driver,
           ndev == 1 ? "" : "s", mib(N * sizeof(uint32_t)), (t1 - t0) * 1e3,
           wrong ? "WRONG" : "correct");
    for (unsigned d = 0; d < MAXDEV && d < weft_runtime_device_count(rt); d++) {
        weft_device_info info = {.size = sizeof info};

        if (!per_device[d])
            continue;
        TRY(weft_device_get_info(weft_runtime_device(rt, d), &info));
        printf("  device %u (%s:%u, %s): %u kernels\n", d, info.driver,
               info.driver_index, info.name, per_device[d]);
    }

    /* What the launch did: weft_exec_get_stats, weft_runtime_get_stats. */
    TRY(weft_exec_get_stats(e, &es));
    TRY(weft_runtime_get_stats(rt, &rs));
    printf("  plan: %llu events and %llu device-side waits between lanes, "
           "%llu host waits, %u lanes:\n",
           (unsigned long long)es.events, (unsigned long long)es.waits,
           (unsigned long long)es.host_syncs, es.nlanes);
    for (unsigned i = 0; i < es.nlanes; i++) {
        weft_device_info info = {.size = sizeof info};

        TRY(weft_device_get_info(es.lanes[i].device, &info));
        printf("    device %u %-8s %4llu operations, %3llu nodes\n", info.index,
               es.lanes[i].role, (unsigned long long)es.lanes[i].ops,
               (unsigned long long)es.lanes[i].nodes);
    }
    printf("  moved: host->device %.1f MiB in %llu copies, device->host %.1f "
           "MiB in %llu, peer %.1f MiB in %llu\n",
           mib(rs.h2d_bytes), (unsigned long long)rs.h2d_copies,
           mib(rs.d2h_bytes), (unsigned long long)rs.d2h_copies,
           mib(rs.peer_bytes), (unsigned long long)rs.peer_copies);

out:
    if (rc < 0)
        fprintf(stderr, "pipeline: %s: %s\n  %s\n", what, weft_strerror(rc),
                weft_last_error());
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    weft_buffer_destroy(buf);
    weft_module_destroy(mod);
    /* The trace is written now. */
    weft_runtime_destroy(rt);
    if (rc == 0 && trace) {
        FILE *f = fopen(trace, "r");

        if (f) {
            fclose(f);
            printf("pipeline: trace written to %s\n", trace);
        } else {
            fprintf(stderr, "pipeline: no trace at %s: %s\n", trace,
                    strerror(errno));
            rc = -1;
        }
    }
    free(in);
    free(out);
    return rc < 0 || wrong ? 1 : 0;
}
