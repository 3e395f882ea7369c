/*
 * pipeline: a large array processed in chunks.
 *
 * For each chunk the graph has three nodes: write the chunk from the input
 * array into a device buffer, run a kernel on it, read it back into the
 * output array. weft infers that the three nodes of a chunk depend on each
 * other and that chunks do not, so it may copy one chunk in while it
 * computes another and copies a third out.
 */
#include <weft.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
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

    timespec_get(&ts, TIME_UTC); /* C11; clock_gettime needs POSIX */
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    /* Chunks are a multiple of 4 KiB, so that every device accepts a
     * kernel argument that starts at a chunk (weft_device_info says the
     * alignment a device needs: arg_offset_align). */
    enum { N = 1 << 23, CHUNKS = 16, CHUNK = N / CHUNKS };
    const size_t chunk_bytes = CHUNK * sizeof(uint32_t);
    const weft_module_source variants[] = {
        {WEFT_SOURCE_PORTABLE, hash_source, 0, NULL, "hash"},
        {WEFT_SOURCE_HOST, host_kernels, 1, NULL, "hash (C)"},
    };
    weft_runtime *rt = NULL;
    weft_module *mod = NULL;
    weft_kernel *hash;
    weft_buffer *buf = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_device_info info = {.size = sizeof info};
    uint32_t *in = malloc(N * sizeof *in), *out = malloc(N * sizeof *out);
    const char *what = NULL;
    double t0, t1;
    long wrong = 0;
    int rc = 0;

    if (!in || !out) {
        fprintf(stderr, "pipeline: out of memory\n");
        return 1;
    }
    for (uint32_t i = 0; i < N; i++) {
        in[i] = i;
        out[i] = 0;
    }

    TRY(weft_runtime_create(&rt, NULL));
    eo.device = weft_runtime_device(rt, 0);
    TRY(weft_device_get_info(eo.device, &info));
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
        TRY(weft_graph_add_kernel(g, hash, weft_dims1(CHUNK), args, 2, NULL));
        TRY(weft_graph_add_read(g, buf, off, out + c * CHUNK, chunk_bytes,
                                NULL));
    }
    TRY(weft_graph_instantiate(g, &eo, &e));

    t0 = seconds();
    TRY(weft_exec_launch(e));
    TRY(weft_exec_wait(e));
    t1 = seconds();

    /* The read nodes have filled out[]: no sync needed. */
    for (uint32_t i = 0; i < N; i++)
        if (out[i] != hash_one(in[i]) && wrong++ < 5)
            fprintf(stderr, "pipeline: out[%u] = %u, expected %u\n", i, out[i],
                    hash_one(in[i]));
    printf("pipeline: on %s (%s): %d chunks of %zu KiB, %u nodes, %u edges; "
           "%.1f MiB in and out in %.2f ms: %s\n",
           info.name, info.driver, CHUNKS, chunk_bytes / 1024,
           weft_graph_node_count(g), weft_graph_edge_count(g),
           N * sizeof(uint32_t) / 1048576.0, (t1 - t0) * 1e3,
           wrong ? "WRONG" : "correct");

out:
    if (rc < 0)
        fprintf(stderr, "pipeline: %s: %s\n  %s\n", what, weft_strerror(rc),
                weft_last_error());
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    weft_buffer_destroy(buf);
    weft_module_destroy(mod);
    weft_runtime_destroy(rt);
    free(in);
    free(out);
    return rc < 0 || wrong ? 1 : 0;
}
