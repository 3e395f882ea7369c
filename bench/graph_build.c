/*
 * graph_build: what it costs to build a graph and instantiate it, per node.
 *
 * Four shapes of N nodes, built through the public API on the host driver
 * (no launch: this is the cost a program pays once per graph):
 *   chain        N kernels, each reading and writing the same range, so
 *                each depends on the one before;
 *   independent  N kernels on N disjoint ranges of one buffer: no edges,
 *                and every access must be checked against the others;
 *   pipeline16   write, kernel, read of one chunk, over 16 chunks in turn,
 *                as a program streaming a large array would build it;
 *   nearest      host tasks in rows of 32 (bench/metg's nearest pattern):
 *                each writes its 16-byte cell of one row (cells 64 bytes
 *                apart, rows two views of one buffer in turn) and reads
 *                cells i - 2 .. i + 2 of the other: six accesses a node,
 *                each among the cells of other nodes.
 * For each, the median over rounds of (add every node + instantiate) / N,
 * and the two parts on their own. Target (issue 4): at most 1 us per node.
 *
 *     graph_build [--json] [--rounds R] [--sizes N,N,...]
 *                 [--shapes chain,independent,pipeline16,nearest]
 */
#include <weft.h>

#include "bench.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rounds = 5;

/* The kernel is never run; it only needs to exist with its parameters. */
static void touch(const weft_host_group *g, void *const *args)
{
    (void)g;
    (void)args;
}
static const weft_param_type touch_params[] = {WEFT_PARAM_BUFFER,
                                               WEFT_PARAM_U32};
static const weft_host_kernel host_kernels[] = {
    {"touch", touch, 2, touch_params, NULL, NULL, NULL},
};

enum { ELEMS = 16, CHUNKS = 16 };
#define RANGE (ELEMS * sizeof(uint32_t))

typedef enum shape { CHAIN, INDEPENDENT, PIPELINE16, NEAREST, NSHAPES } shape;
static const char *const shape_names[NSHAPES] = {"chain", "independent",
                                                 "pipeline16", "nearest"};

/* nearest: cells a row, and a cell's stride and bytes */
enum { NEAR_W = 32, NEAR_STRIDE = 64, NEAR_CELL = 16 };

typedef struct bench {
    weft_runtime *rt;
    weft_kernel *touch;
    weft_buffer *buf;     /* large enough for every shape's ranges */
    weft_buffer *rows[2]; /* nearest's: views of buf */
    uint32_t *host;       /* write sources and read targets */
} bench;

static void add_touch(bench *b, weft_graph *g, size_t offset)
{
    weft_arg args[] = {
        weft_arg_buffer(b->buf, offset, RANGE, WEFT_READ_WRITE),
        weft_arg_u32(ELEMS),
    };

    bench_check(
        weft_graph_add_kernel(g, b->touch, weft_dims1(ELEMS), args, 2, NULL));
}

static void nop_task(void *const *ptrs, void *user)
{
    (void)ptrs;
    (void)user;
}

/* nearest's node i: its cell of row i / NEAR_W, the neighbours' before. */
static void add_near(bench *b, weft_graph *g, unsigned i)
{
    unsigned row = i / NEAR_W, col = i % NEAR_W, n = 0;
    weft_access_desc acc[6];

    acc[n++] = weft_access_range(b->rows[row % 2], (size_t)col * NEAR_STRIDE,
                                 NEAR_CELL, WEFT_WRITE);
    for (unsigned d = col < 2 ? 0 : col - 2; d <= col + 2 && d < NEAR_W; d++)
        acc[n++] =
            weft_access_range(b->rows[(row + 1) % 2], (size_t)d * NEAR_STRIDE,
                              NEAR_CELL, WEFT_READ);
    bench_check(weft_graph_add_host(g, nop_task, NULL, acc, n, NULL));
}

/* One build of shape with n nodes: *add and *inst in ns. */
static void build_once(bench *b, shape s, unsigned n, double *add, double *inst)
{
    weft_graph *g;
    weft_exec *e;
    uint64_t t0, t1, t2;

    t0 = bench_now_ns();
    bench_check(weft_graph_create(b->rt, &g));
    for (unsigned i = 0; i < n; i++) {
        size_t chunk = (i / 3) % CHUNKS * RANGE;

        switch (s) {
        case CHAIN:
            add_touch(b, g, 0);
            break;
        case INDEPENDENT:
            add_touch(b, g, (size_t)i * RANGE);
            break;
        case NEAREST:
            add_near(b, g, i);
            break;
        default:
            if (i % 3 == 0)
                bench_check(weft_graph_add_write(
                    g, b->buf, chunk, b->host + chunk / 4, RANGE, NULL));
            else if (i % 3 == 1)
                add_touch(b, g, chunk);
            else
                bench_check(weft_graph_add_read(
                    g, b->buf, chunk, b->host + chunk / 4, RANGE, NULL));
            break;
        }
    }
    t1 = bench_now_ns();
    bench_check(weft_graph_instantiate(g, NULL, &e));
    t2 = bench_now_ns();
    if (weft_graph_node_count(g) != n)
        bench_die("%s: %u nodes, not %u", shape_names[s],
                  weft_graph_node_count(g), n);
    bench_check(weft_exec_destroy(e));
    bench_check(weft_graph_destroy(g));
    *add = (double)(t1 - t0);
    *inst = (double)(t2 - t1);
}

static void measure(bench *b, shape s, unsigned n)
{
    double *total = calloc((size_t)rounds, sizeof(double));
    double *add = calloc((size_t)rounds, sizeof(double));
    double *inst = calloc((size_t)rounds, sizeof(double));
    char name[96];

    if (!total || !add || !inst)
        bench_die("out of memory");
    build_once(b, s, n, &add[0], &inst[0]); /* warm the allocator */
    for (int r = 0; r < rounds; r++) {
        build_once(b, s, n, &add[r], &inst[r]);
        total[r] = add[r] + inst[r];
    }
    snprintf(name, sizeof name, "graph_build %s N=%u", shape_names[s], n);
    bench_figure(name, bench_median(total, rounds) / 1e3 / n, "us/node");
    snprintf(name, sizeof name, "graph_build %s N=%u add", shape_names[s], n);
    bench_figure(name, bench_median(add, rounds) / 1e3 / n, "us/node");
    snprintf(name, sizeof name, "graph_build %s N=%u instantiate",
             shape_names[s], n);
    bench_figure(name, bench_median(inst, rounds) / 1e3 / n, "us/node");
    free(total);
    free(add);
    free(inst);
}

int main(int argc, char **argv)
{
    weft_runtime_options opts = WEFT_RUNTIME_OPTIONS_INIT;
    const weft_module_source src = {WEFT_SOURCE_HOST, host_kernels, 1, NULL,
                                    "graph_build"};
    unsigned sizes[8] = {1000, 10000}, nsizes = 2, largest = 0;
    const char *size_list = NULL, *shape_list = NULL;
    int want[NSHAPES];
    const bench_option options[] = {
        {"--rounds", BENCH_INT, &rounds, "R"},
        {"--sizes", BENCH_STRING, &size_list, "N,N,..."},
        {"--shapes", BENCH_STRING, &shape_list, "chain,independent,..."},
    };
    weft_module *mod;
    bench b;

    BENCH_OPTIONS(argc, argv, "graph_build", options);
    if (size_list) {
        char *p = (char *)size_list;

        for (nsizes = 0; *p && nsizes < 8; nsizes++) {
            sizes[nsizes] = (unsigned)strtoul(p, &p, 10);
            if (*p == ',')
                p++;
        }
    }
    if (rounds < 1 || nsizes == 0)
        bench_usage();
    for (int s = 0; s < NSHAPES; s++)
        want[s] = shape_list == NULL;
    for (const char *p = shape_list; p && *p;) {
        size_t len = strcspn(p, ",");
        int s = 0;

        while (s < NSHAPES && (strlen(shape_names[s]) != len ||
                               strncmp(p, shape_names[s], len) != 0))
            s++;
        if (s == NSHAPES)
            bench_die("--shapes: no shape \"%.*s\" (chain, independent, "
                      "pipeline16, nearest)",
                      (int)len, p);
        want[s] = 1;
        p += len + (p[len] == ',');
    }
    for (unsigned i = 0; i < nsizes; i++) {
        if (sizes[i] == 0)
            bench_die("a size of 0 nodes");
        if (sizes[i] > largest)
            largest = sizes[i];
    }

    memset(&b, 0, sizeof b);
    opts.devices = "host"; /* building is the same for every driver */
    bench_check(weft_runtime_create(&b.rt, &opts));
    bench_check(weft_module_create(b.rt, &src, 1, &mod));
    bench_check(weft_module_get_kernel(mod, "touch", &b.touch));
    b.host = calloc((size_t)CHUNKS * ELEMS, sizeof(uint32_t));
    if (!b.host)
        bench_die("out of memory");
    bench_check(
        weft_buffer_create(b.rt,
                           (size_t)largest * RANGE > 2 * NEAR_W * NEAR_STRIDE
                               ? (size_t)largest * RANGE
                               : 2 * NEAR_W * NEAR_STRIDE,
                           &b.buf));
    for (int r = 0; r < 2; r++)
        bench_check(weft_buffer_view(b.buf, (size_t)r * NEAR_W * NEAR_STRIDE,
                                     NEAR_W * NEAR_STRIDE, &b.rows[r]));

    bench_begin("\"rounds\": %d", rounds);
    for (unsigned i = 0; i < nsizes; i++)
        for (int s = 0; s < NSHAPES; s++)
            if (want[s])
                measure(&b, (shape)s, sizes[i]);
    bench_end();

    for (int r = 0; r < 2; r++)
        bench_check(weft_buffer_destroy(b.rows[r]));
    bench_check(weft_buffer_destroy(b.buf));
    bench_check(weft_module_destroy(mod));
    bench_check(weft_runtime_destroy(b.rt));
    free(b.host);
    return 0;
}
