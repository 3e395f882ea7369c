/*
 * sgemm_tiles: a tiled single-precision matrix product C = A x B on
 * row-major matrices, without packing.
 *
 * A (m x k), B (k x n) and C (m x n) are plain row-major arrays wrapped as
 * buffers. Each is seen as a weft_matrix, and a tile is a weft_block of
 * its buffer (weft_matrix_tile): rows of tile_cols elements, ld elements
 * apart. The graph has one kernel node per (i, j, p) tile triple, C(i, j)
 * += A(i, p) x B(p, j), whose arguments are the three tiles as blocks
 * (weft_arg_block) and the pitches as scalars. weft infers the order on the
 * tiles' own bytes: the nodes of one C tile follow each other, tiles of
 * one block row are independent although their rows interleave. The nodes
 * of C tile (i, j) go to device (i * tiles_n + j) mod devices, so that
 * every device of the runtime (WEFT_DEVICES) takes a share; weft moves the
 * A and B tiles each device needs, and nothing else.
 *
 * One kernel source, in the portable dialect, for every driver: OpenCL C
 * on OpenCL devices, CUDA C++ on GPUs, C compiled by the system compiler on
 * host and sim devices.
 *
 *     sgemm_tiles [--m M] [--n N] [--k K] [--tile T]
 *
 * The result is checked against a product on the CPU in double precision:
 * each element's error must stay below a bound relative to the sum of
 * |a| |b| over its dot product.
 */
#include <weft.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/*
 * c = a x b (+ c when accumulate) on an m x n tile of c, with kk the
 * inner extent; item (x, y) computes element (y, x). Pitches in elements.
 */
static const char gemm_source[] =
    "WEFT_KERNEL void gemm_tile(WEFT_GLOBAL float *c,\n"
    "                           WEFT_GLOBAL const float *a,\n"
    "                           WEFT_GLOBAL const float *b, unsigned ldc,\n"
    "                           unsigned lda, unsigned ldb, unsigned m,\n"
    "                           unsigned n, unsigned kk, unsigned accumulate)\n"
    "{\n"
    "    long x = weft_global_id(0), y = weft_global_id(1);\n"
    "    float s;\n"
    "    if (x >= (long)n || y >= (long)m)\n"
    "        return;\n"
    "    s = accumulate ? c[y * ldc + x] : 0.0f;\n"
    "    for (unsigned p = 0; p < kk; p++)\n"
    "        s += a[y * lda + p] * b[p * ldb + x];\n"
    "    c[y * ldc + x] = s;\n"
    "}\n";

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
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static size_t gcd(size_t a, size_t b)
{
    while (b) {
        size_t t = a % b;

        a = b;
        b = t;
    }
    return a;
}

static size_t arg_size(int argc, char **argv, int *i)
{
    char *end;
    unsigned long v;

    if (*i + 1 >= argc)
        return 0;
    v = strtoul(argv[++*i], &end, 10);
    return *end ? 0 : (size_t)v;
}

static void usage(void)
{
    fprintf(stderr, "usage: sgemm_tiles [--m M] [--n N] [--k K] [--tile T]\n");
    exit(2);
}

int main(int argc, char **argv)
{
    size_t m = 512, n = 512, k = 512, t = 128;
    weft_runtime *rt = NULL;
    weft_module *mod = NULL;
    weft_kernel *gemm;
    weft_buffer *ab = NULL, *bb = NULL, *cb = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_exec_stats st = {.size = sizeof st};
    float *a = NULL, *b = NULL, *c = NULL;
    const char *what = NULL;
    size_t tm, tn, tk, nodes = 0, bad = 0, step, checked = 0;
    unsigned ndev;
    double worst = 0, t0, t1;
    int rc = 0, skip = 0;

    for (int i = 1; i < argc; i++) {
        size_t *dst = !strcmp(argv[i], "--m")      ? &m
                      : !strcmp(argv[i], "--n")    ? &n
                      : !strcmp(argv[i], "--k")    ? &k
                      : !strcmp(argv[i], "--tile") ? &t
                                                   : NULL;

        if (!dst || (*dst = arg_size(argc, argv, &i)) == 0)
            usage();
    }
    if (m > 65535 || n > 65535 || k > 65535) {
        fprintf(stderr, "sgemm_tiles: sizes up to 65535\n");
        return 2;
    }
    tm = (m + t - 1) / t;
    tn = (n + t - 1) / t;
    tk = (k + t - 1) / t;
    a = malloc(m * k * sizeof *a);
    b = malloc(k * n * sizeof *b);
    c = malloc(m * n * sizeof *c);
    if (!a || !b || !c) {
        fprintf(stderr, "sgemm_tiles: out of memory\n");
        return 1;
    }
    /* small integers over 16: exact in float, so errors come from sums */
    srand(1);
    for (size_t i = 0; i < m * k; i++)
        a[i] = (float)(rand() % 33 - 16) / 16.0f;
    for (size_t i = 0; i < k * n; i++)
        b[i] = (float)(rand() % 33 - 16) / 16.0f;
    memset(c, 0xff, m * n * sizeof *c); /* NaNs: every element is written */

    rc = weft_runtime_create(&rt, NULL);
    if (rc == WEFT_ENODEV) { /* none of the devices asked for is here */
        printf("sgemm_tiles: skipped: %s\n", weft_last_error());
        rc = 0;
        skip = 1;
        goto out;
    }
    TRY(rc);
    ndev = weft_runtime_device_count(rt);
    if (ndev == 0) { /* WEFT_DEVICES named only drivers that found none */
        printf("sgemm_tiles: skipped: no device\n");
        skip = 1;
        goto out;
    }
    TRY(weft_module_create_portable(rt, gemm_source, NULL, &mod));
    TRY(weft_module_get_kernel(mod, "gemm_tile", &gemm));
    TRY(weft_buffer_wrap(rt, a, m * k * sizeof *a, &ab));
    TRY(weft_buffer_wrap(rt, b, k * n * sizeof *b, &bb));
    TRY(weft_buffer_wrap(rt, c, m * n * sizeof *c, &cb));

    {
        const weft_matrix A = weft_matrix_of(ab, 0, sizeof(float), m, k, k);
        const weft_matrix B = weft_matrix_of(bb, 0, sizeof(float), k, n, n);
        const weft_matrix C = weft_matrix_of(cb, 0, sizeof(float), m, n, n);

        TRY(weft_graph_create(rt, &g));
        for (size_t i = 0; i < tm; i++)
            for (size_t j = 0; j < tn; j++) {
                const weft_device *dev =
                    weft_runtime_device(rt, (unsigned)((i * tn + j) % ndev));
                weft_block cblk = weft_matrix_tile(C, t, t, i, j);
                uint32_t rows = (uint32_t)cblk.rows;
                uint32_t cols = (uint32_t)(cblk.row_bytes / sizeof(float));

                for (size_t p = 0; p < tk; p++) {
                    weft_block ablk = weft_matrix_tile(A, t, t, i, p);
                    weft_block bblk = weft_matrix_tile(B, t, t, p, j);
                    weft_arg args[] = {
                        weft_arg_block(cb, cblk,
                                       p ? WEFT_READ_WRITE : WEFT_WRITE),
                        weft_arg_block(ab, ablk, WEFT_READ),
                        weft_arg_block(bb, bblk, WEFT_READ),
                        weft_arg_u32((uint32_t)C.ld),
                        weft_arg_u32((uint32_t)A.ld),
                        weft_arg_u32((uint32_t)B.ld),
                        weft_arg_u32(rows),
                        weft_arg_u32(cols),
                        weft_arg_u32(
                            (uint32_t)(ablk.row_bytes / sizeof(float))),
                        weft_arg_u32(p ? 1 : 0),
                    };
                    weft_node node;

                    TRY(weft_graph_add_kernel(g, gemm, weft_dims2(cols, rows),
                                              args, 10, &node));
                    TRY(weft_graph_set_device(g, node, dev));
                    nodes++;
                }
            }
    }
    TRY(weft_graph_instantiate(g, NULL, &e));
    t0 = seconds();
    TRY(weft_exec_launch(e));
    TRY(weft_exec_wait(e));
    TRY(weft_buffer_sync_host(cb));
    t1 = seconds();
    TRY(weft_exec_get_stats(e, &st));

    /* The product on the CPU, in double, with the bound of each element:
     * every element up to 2^30 multiply-adds, else every step-th one (a
     * step prime to n, so that the sample covers all columns). */
    step = (double)m * (double)n * (double)k <= (double)(1u << 30)
               ? 1
               : (size_t)((double)m * (double)n * (double)k / (1u << 30)) | 1;
    while (gcd(step, n) != 1)
        step += 2;
    for (size_t x = 0; x < m * n; x += step) {
        size_t i = x / n, j = x % n;
        double s = 0, mag = 0, d;

        checked++;
        for (size_t p = 0; p < k; p++) {
            s += (double)a[i * k + p] * (double)b[p * n + j];
            mag += fabs((double)a[i * k + p] * (double)b[p * n + j]);
        }
        /* float sums of k terms: k ulps of the magnitude, and some */
        d = fabs((double)c[i * n + j] - s) / (mag > 0 ? mag : 1);
        if (!(d <= worst))
            worst = d;
        if (!(d <= 1e-6 * (double)k + 1e-6) && bad++ < 5)
            fprintf(stderr, "sgemm_tiles: C[%zu][%zu] = %.8g, expected %.8g\n",
                    i, j, (double)c[i * n + j], s);
    }

    printf("sgemm_tiles: C(%zu x %zu) = A(%zu x %zu) x B(%zu x %zu) in %zu x "
           "%zu tiles: %zu kernel nodes on %u of %u device(s) in %.3f s "
           "(%.2f GFLOP/s, the first launch with its copies); %zu elements "
           "checked, largest relative error %.2g: %s\n",
           m, n, m, k, k, n, t, t, nodes, st.devices_used, ndev, t1 - t0,
           2.0 * (double)m * (double)n * (double)k / (t1 - t0) * 1e-9, checked,
           worst, bad ? "WRONG" : "ok");

out:
    if (rc < 0)
        fprintf(stderr, "sgemm_tiles: %s: %s\n  %s\n", what, weft_strerror(rc),
                weft_last_error());
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    weft_buffer_destroy(cb);
    weft_buffer_destroy(bb);
    weft_buffer_destroy(ab);
    weft_module_destroy(mod);
    weft_runtime_destroy(rt);
    free(a);
    free(b);
    free(c);
    return skip ? 77 : rc < 0 || bad ? 1 : 0;
}
