/*
 * stencil2d: a 2-D Jacobi iteration on a grid split into blocks in both
 * dimensions, with row and column halos exchanged by block copies.
 *
 * The design. The grid of rows x cols points is cut into by x bx blocks.
 * Each block is two buffers of its own (the state now and the next state,
 * used in turn), each holding the block's points with a halo of one point
 * all round: (h + 2) x (w + 2) floats, row-major, pitch w + 2, placed in
 * the buffer at the offset (base) that puts the first interior point at a
 * multiple of every device's kernel argument alignment (arg_offset_align;
 * the bytes before are padding). A step runs one kernel node per block,
 * which reads the whole of one buffer and writes the interior of the other
 * (a weft_matrix_block, passed to the kernel as a block: its address and,
 * as a scalar, its pitch). Then the halos of the buffers just written are
 * filled from the neighbours' edges, one weft_graph_add_copy_block node
 * each: a row halo is a block of one row, a column halo a block of h rows
 * of one float, pitch apart. Halos on the grid's border hold the fixed
 * boundary values and are never written. The graph is two steps (now ->
 * next, then next -> now), so that every launch leaves the state where it
 * found it, and is launched many times.
 *
 * Block (i, j)'s kernels go to device (i * bx + j) mod devices, so that with
 * several devices (WEFT_DEVICES; WEFT_HOST_DEVICES=2; two PoCL devices)
 * neighbours live on different devices and a halo copy must cross from one
 * memory to the other. The halo minimum is what a halo exchange must move
 * between memories: the bytes of every halo whose neighbour's block is on
 * another device. The bytes moved are weft's own count
 * (weft_runtime_get_stats: host to device, device to host and peer bytes)
 * over every launch after the first (which brings the blocks onto their
 * devices); copies that go through the host count twice. The program
 * prints both:
 *
 *     halo bytes moved: N, halo minimum: M
 *
 *     stencil2d [--rows R] [--cols C] [--by BY] [--bx BX] [--launches L]
 *
 * The result is checked against the same steps on the CPU.
 */
#include <weft.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * dst[y][x] = the average of the point and its four neighbours in src,
 * for the h x w interior; src is the whole buffer (padding and halo
 * included), its first interior point at element first, and dst the
 * interior block, both pitch floats a row.
 */
static const char jacobi_source[] =
    "WEFT_KERNEL void jacobi2d(WEFT_GLOBAL float *dst,\n"
    "                          WEFT_GLOBAL const float *src, unsigned first,\n"
    "                          unsigned pitch, unsigned w, unsigned h)\n"
    "{\n"
    "    long x = weft_global_id(0), y = weft_global_id(1);\n"
    "    long c = first + y * pitch + x;\n"
    "    if (x < (long)w && y < (long)h)\n"
    "        dst[y * pitch + x] = 0.2f * (src[c] + src[c - 1] + src[c + 1] +\n"
    "                                     src[c - pitch] + src[c + pitch]);\n"
    "}\n";

#define TRY(call)                                                              \
    do {                                                                       \
        rc = (call);                                                           \
        if (rc < 0) {                                                          \
            what = #call;                                                      \
            goto out;                                                          \
        }                                                                      \
    } while (0)

enum { MAX_BLOCKS = 64 };

/* The whole grid with its border, (rows + 2) x (cols + 2). */
static void jacobi_host(float *dst, const float *src, size_t rows, size_t cols)
{
    size_t p = cols + 2;

    for (size_t y = 1; y <= rows; y++)
        for (size_t x = 1; x <= cols; x++) {
            size_t c = y * p + x;

            dst[c] = 0.2f * (src[c] + src[c - 1] + src[c + 1] + src[c - p] +
                             src[c + p]);
        }
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
    fprintf(stderr, "usage: stencil2d [--rows R] [--cols C] [--by BY] "
                    "[--bx BX] [--launches L]\n");
    exit(2);
}

/* Sum of the link counters. */
static uint64_t link_bytes(const weft_stats *s)
{
    return s->h2d_bytes + s->d2h_bytes + s->peer_bytes;
}

int main(int argc, char **argv)
{
    size_t rows = 384, cols = 576, by = 2, bx = 3, launches = 100;
    size_t h, w, pitch, base, bytes, halo_min = 0, halo_all = 0, copies = 0;
    unsigned align = 4;
    weft_runtime *rt = NULL;
    weft_module *mod = NULL;
    weft_kernel *jacobi;
    weft_buffer *buf[2][MAX_BLOCKS] = {{NULL}};
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_stats s0 = {.size = sizeof s0}, s1 = {.size = sizeof s1};
    float *grid = NULL, *next = NULL, *block = NULL;
    const char *what = NULL;
    unsigned ndev;
    double worst = 0;
    int rc = 0, skip = 0;

    for (int i = 1; i < argc; i++) {
        size_t *dst = !strcmp(argv[i], "--rows")       ? &rows
                      : !strcmp(argv[i], "--cols")     ? &cols
                      : !strcmp(argv[i], "--by")       ? &by
                      : !strcmp(argv[i], "--bx")       ? &bx
                      : !strcmp(argv[i], "--launches") ? &launches
                                                       : NULL;

        if (!dst || (*dst = arg_size(argc, argv, &i)) == 0)
            usage();
    }
    if (by * bx > MAX_BLOCKS || rows % by || cols % bx || rows > 65535 ||
        cols > 65535) {
        fprintf(stderr,
                "stencil2d: the blocks (at most %d) must divide the "
                "grid evenly, of at most 65535 x 65535 points\n",
                MAX_BLOCKS);
        return 2;
    }
    h = rows / by;
    w = cols / bx;
    pitch = w + 2;
    grid = malloc((rows + 2) * (cols + 2) * sizeof *grid);
    next = malloc((rows + 2) * (cols + 2) * sizeof *next);
    if (!grid || !next) {
        fprintf(stderr, "stencil2d: out of memory\n");
        return 1;
    }
    /* The border: hot on the left and top, cold elsewhere; inside, a
     * pattern that the steps smooth out. */
    for (size_t y = 0; y < rows + 2; y++)
        for (size_t x = 0; x < cols + 2; x++)
            grid[y * (cols + 2) + x] =
                x == 0 || y == 0 ? 1.0f
                : x == cols + 1 || y == rows + 1
                    ? 0.0f
                    : (float)((x * 7 + y * 13) % 17) / 16.0f;
    memcpy(next, grid, (rows + 2) * (cols + 2) * sizeof *grid);

    rc = weft_runtime_create(&rt, NULL);
    if (rc == WEFT_ENODEV) { /* none of the devices asked for is here */
        printf("stencil2d: skipped: %s\n", weft_last_error());
        rc = 0;
        skip = 1;
        goto out;
    }
    TRY(rc);
    ndev = weft_runtime_device_count(rt);
    if (ndev == 0) { /* WEFT_DEVICES named only drivers that found none */
        printf("stencil2d: skipped: no device\n");
        skip = 1;
        goto out;
    }
    for (unsigned d = 0; d < ndev; d++) {
        weft_device_info info = {.size = sizeof info};

        TRY(weft_device_get_info(weft_runtime_device(rt, d), &info));
        if (info.arg_offset_align > align)
            align = info.arg_offset_align;
    }
    /* (pitch + 1) floats from base: the first interior point, aligned */
    base = (align - (pitch + 1) * sizeof(float) % align) % align;
    bytes = base + (h + 2) * pitch * sizeof(float);
    block = calloc(1, bytes); /* the padding stays 0 */
    if (!block) {
        rc = WEFT_ENOMEM;
        what = "calloc";
        goto out;
    }
    TRY(weft_module_create_portable(rt, jacobi_source, NULL, &mod));
    TRY(weft_module_get_kernel(mod, "jacobi2d", &jacobi));

    /* Both buffers of a block start as its part of the grid, halo and
     * all: the border halos stay as they are. */
    for (size_t b = 0; b < by * bx; b++) {
        size_t bi = b / bx, bj = b % bx;

        for (size_t y = 0; y < h + 2; y++)
            memcpy(block + base / sizeof(float) + y * pitch,
                   grid + (bi * h + y) * (cols + 2) + bj * w,
                   pitch * sizeof *block);
        for (int s = 0; s < 2; s++) {
            TRY(weft_buffer_create(rt, bytes, &buf[s][b]));
            TRY(weft_buffer_write(buf[s][b], 0, block, bytes));
        }
    }

    TRY(weft_graph_create(rt, &g));
    for (int step = 0; step < 2; step++) {
        weft_buffer **src = buf[step], **dst = buf[1 - step];

        for (size_t b = 0; b < by * bx; b++) {
            weft_matrix M = weft_matrix_of(dst[b], base, sizeof(float), h + 2,
                                           pitch, pitch);
            weft_arg args[] = {
                weft_arg_block(dst[b], weft_matrix_block(M, 1, 1, h, w),
                               WEFT_WRITE),
                weft_arg_buffer(src[b], 0, bytes, WEFT_READ),
                weft_arg_u32((uint32_t)(base / sizeof(float) + pitch + 1)),
                weft_arg_u32((uint32_t)pitch),
                weft_arg_u32((uint32_t)w),
                weft_arg_u32((uint32_t)h),
            };
            weft_node node;

            TRY(weft_graph_add_kernel(g, jacobi,
                                      weft_dims2((uint32_t)w, (uint32_t)h),
                                      args, 6, &node));
            TRY(weft_graph_set_device(g, node,
                                      weft_runtime_device(rt, b % ndev)));
        }
        /* The halos of dst from the neighbours' edges: above, below, left,
         * right; the destination block and the source block of each. */
        for (size_t b = 0; b < by * bx; b++) {
            size_t bi = b / bx, bj = b % bx;
            struct {
                int ok;
                size_t from;
                size_t drow, dcol, srow, scol, nrows, ncols;
            } halo[4] = {
                {bi > 0, b - bx, 0, 1, h, 1, 1, w},
                {bi + 1 < by, b + bx, h + 1, 1, 1, 1, 1, w},
                {bj > 0, b - 1, 1, 0, 1, w, h, 1},
                {bj + 1 < bx, b + 1, 1, w + 1, 1, 1, h, 1},
            };

            for (int k = 0; k < 4; k++) {
                weft_matrix D, S;
                weft_block dblk, sblk;
                size_t n = halo[k].nrows * halo[k].ncols * sizeof(float);

                if (!halo[k].ok)
                    continue;
                D = weft_matrix_of(dst[b], base, sizeof(float), h + 2, pitch,
                                   pitch);
                S = weft_matrix_of(dst[halo[k].from], base, sizeof(float),
                                   h + 2, pitch, pitch);
                dblk = weft_matrix_block(D, halo[k].drow, halo[k].dcol,
                                         halo[k].nrows, halo[k].ncols);
                sblk = weft_matrix_block(S, halo[k].srow, halo[k].scol,
                                         halo[k].nrows, halo[k].ncols);
                TRY(weft_graph_add_copy_block(g, dst[b], &dblk,
                                              dst[halo[k].from], &sblk, NULL));
                copies++;
                halo_all += n;
                if (b % ndev != halo[k].from % ndev)
                    halo_min += n;
            }
        }
    }
    TRY(weft_graph_instantiate(g, NULL, &e));
    /* The first launch brings the blocks onto their devices; count what
     * the others move. */
    TRY(weft_exec_launch(e));
    TRY(weft_exec_wait(e));
    TRY(weft_runtime_get_stats(rt, &s0));
    for (size_t l = 1; l < launches; l++)
        TRY(weft_exec_launch(e));
    TRY(weft_exec_wait(e));
    TRY(weft_runtime_get_stats(rt, &s1));

    /* The same steps on the CPU. */
    for (size_t l = 0; l < 2 * launches; l++) {
        jacobi_host(next, grid, rows, cols);
        memcpy(grid, next, (rows + 2) * (cols + 2) * sizeof *grid);
    }
    /* The state is back in buf[0]: compare each block's interior. */
    for (size_t b = 0; b < by * bx; b++) {
        size_t bi = b / bx, bj = b % bx;

        TRY(weft_buffer_read(buf[0][b], 0, block, bytes));
        for (size_t y = 1; y <= h; y++)
            for (size_t x = 1; x <= w; x++) {
                size_t gy = bi * h + y, gx = bj * w + x;
                double d =
                    fabs((double)block[base / sizeof(float) + y * pitch + x] -
                         (double)grid[gy * (cols + 2) + gx]);

                if (!(d <= worst))
                    worst = d;
            }
    }
    halo_min *= launches - 1;
    printf("stencil2d: %zu x %zu points in %zu x %zu blocks of %zu x %zu on "
           "%u device(s), %zu launches of 2 steps, %zu halo copies a step "
           "(%zu bytes, %zu of them between devices)\n",
           rows, cols, by, bx, h, w, ndev, launches, copies / 2, halo_all / 2,
           (size_t)(halo_min / (launches > 1 ? 2 * (launches - 1) : 1)));
    printf("stencil2d: launches 2 to %zu moved %llu bytes host to device, "
           "%llu device to host, %llu peer\n",
           launches, (unsigned long long)(s1.h2d_bytes - s0.h2d_bytes),
           (unsigned long long)(s1.d2h_bytes - s0.d2h_bytes),
           (unsigned long long)(s1.peer_bytes - s0.peer_bytes));
    printf("halo bytes moved: %llu, halo minimum: %zu\n",
           (unsigned long long)(link_bytes(&s1) - link_bytes(&s0)), halo_min);
    printf("stencil2d: largest difference from the CPU: %.2g: %s\n", worst,
           worst <= 1e-5 ? "ok" : "WRONG");

out:
    if (rc < 0)
        fprintf(stderr, "stencil2d: %s: %s\n  %s\n", what, weft_strerror(rc),
                weft_last_error());
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    for (size_t b = 0; b < MAX_BLOCKS; b++)
        for (int s = 0; s < 2; s++)
            weft_buffer_destroy(buf[s][b]);
    weft_module_destroy(mod);
    weft_runtime_destroy(rt);
    free(grid);
    free(next);
    free(block);
    return skip ? 77 : rc < 0 || worst > 1e-5 ? 1 : 0;
}
