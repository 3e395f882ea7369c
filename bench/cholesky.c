/*
 * The tiled Cholesky of examples/cholesky.c (the same graph: that file is
 * included here without its main) for several n and tile sizes, on 1 and
 * more devices of one driver, beside the vendor's own factorisation of the
 * same matrix in the same run:
 *
 *   cuda   cusolverDnDpotrf on the first GPU, on a copy of the matrix in
 *          device memory (restored from the pristine copy before each
 *          run, outside the time), timed with cuCtxSynchronize;
 *   host   OpenBLAS's threaded LAPACKE_dpotrf on every core of the
 *          machine (the host driver's tasks call it with one thread).
 *
 *   cuda, k > 1 devices
 *          cusolverMgPotrf (cuSOLVER's multi-GPU Cholesky) on GPUs 0 ..
 *          k - 1 (CUDA ordinals: WEFT_DEVICES should name every GPU in
 *          order), the matrix in its 1-D column block-cyclic layout
 *          (blocks of --mg-block columns, 256 by default), put there from
 *          the host before each run, outside the time.
 *
 * Figures, in GFLOP/s of n^3/3 flops, per n and tile size b:
 *
 *   weft_<k>dev_n<n>_b<b>         steady launches on k devices (the tile
 *                                 restore from A0 included, see the
 *                                 example)
 *   weft_<k>dev_n<n>_b<b>_first   the first launch, which moves the tiles
 *                                 (each run wraps A and A0 anew, so the
 *                                 first launch finds nothing on a device)
 *   cusolver_n<n>, openblas_n<n>  the baseline
 *   cusolvermg_<k>dev_n<n>        cusolverMgPotrf on k GPUs
 *   ratio_weft_<k>dev_n<n>_b<b>   weft over the baseline (x)
 *   ratio_mg_weft_<k>dev_n<n>_b<b> weft over cusolverMgPotrf on as many
 *                                 GPUs (x)
 *   scaling_weft_<k>dev_n<n>_b<b> weft on k devices over weft on one (x)
 *   bytes_h2d_first_ratio_<k>dev_n<n>_b<b>
 *                                 the first launch's host->device bytes
 *                                 over the least (A0's lower tiles once)
 *   bytes_peer_ratio_<k>dev_n<n>_b<b>
 *                                 a steady launch's peer bytes over the
 *                                 least under the example's owner mapping
 *                                 (k > 1; the example's header comment);
 *                                 a note gives a steady launch's bytes
 *
 * --out-of-core N: n = N on one device, the matrix starting on the host
 * (the example's --once: fresh buffers, no restore, one launch, then
 * weft_buffer_sync_host, all timed), in a runtime without a memory limit
 * and in one whose device_mem_limit is the matrix's N^2 * 8 bytes / 1.5
 * (WEFT_DEVICE_MEM_LIMIT, where set, overrides both), --reps runs each
 * (the median), per tile size of --tiles that divides N, with the matrix
 * stored tile by tile (--oc-layout tiles, the default: the example's
 * --layout tiles, so that eviction takes single tiles; --oc-layout rows
 * keeps the row-major matrix, whose tiles' device copies span whole
 * bands of b rows):
 *
 *   weft_once_1dev_n<N>_b<b>      in core, GFLOP/s
 *   weft_once_oc_1dev_n<N>_b<b>   out of core, GFLOP/s
 *   ratio_oc_n<N>_b<b>            the second over the first (x; the
 *                                 issue's target: at least 0.5)
 *
 * with a note of each one's evictions, write-backs and host bytes.
 *
 * --driver sim runs the portable kernels on the simulated GPUs (real data:
 * the figures are of this machine's CPU, and there is no baseline): the
 * code paths of the figures, out of core included, without a GPU.
 *
 * --lookahead 1,0 runs weft's figures with the example's lookahead
 * priorities (1, the default) and/or without them (its --no-lookahead;
 * those figures end in _nola).
 *
 * --map snake,cyclic runs weft's figures with the example's tile owners
 * reflected every other cycle (snake, the default) and/or in plain
 * block-cyclic cycles (its --map cyclic; those figures end in _cyc).
 *
 * --warm 1 (the default) first runs one untimed factorisation per size
 * and tile on every device the figures use.
 *
 * Every factorisation is checked (the example's residual, on --check-rows
 * rows beyond n = 4096) and a residual above 1e-12 ends the bench.
 *
 *   bench/cholesky [--driver cuda|host|sim] [--sizes 4096,8192] [--tiles
 *                  512,1024] [--devices 1,2] [--reps R] [--check-rows S]
 *                  [--mg-block T] [--out-of-core N] [--oc-layout rows|tiles]
 *                  [--lookahead 1,0] [--map snake,cyclic] [--warm 0|1]
 *                  [--json]
 */
#define CHOLESKY_NO_MAIN
#include "../examples/cholesky.c"

#include "bench.h"

#include <unistd.h>

/* The numbers of a comma-separated list, up to max of them. */
static int parse_list(const char *s, size_t *v, int max)
{
    int n = 0;

    while (s && *s && n < max) {
        char *end;

        v[n++] = strtoull(s, &end, 10);
        if (end == s || (*end && *end != ','))
            bench_die("bad list: %s", s);
        s = *end ? end + 1 : end;
    }
    return n;
}

/*
 * cusolverDnDpotrf of the whole matrix on the first GPU: the pristine
 * copy (weft's A0 on that GPU) copied to a work matrix, then the factor,
 * reps times; GFLOP/s of the mean, 0 where it does not fit.
 */
static double cusolver_baseline(chol *m, int reps, const char **why)
{
    size_t n = m->n, bytes = n * n * sizeof(double);
    weft_device_info info = {.size = sizeof info};
    weft_device_address a0;
    chol_gpu *g = &m->tl.gpu[0];
    uint64_t x = 0, work = 0;
    int lwork = 0, devinfo = 0, ok = 1;
    double t = 0;

    bench_check(weft_device_get_info(m->tl.dev[0], &info));
    /* A and A0 in weft's memory, a work copy and the workspace here */
    if (3.2 * (double)bytes > 0.9 * (double)info.global_mem) {
        *why = "the matrix does not fit one GPU three times";
        return 0;
    }
    bench_check(
        weft_buffer_device_address(m->a0b, m->tl.dev[0], 0, WEFT_WHOLE, &a0));
    if (chol_cu.set_current(g->context) != 0 ||
        chol_cu.mem_alloc(&x, bytes) != 0 ||
        chol_cu.potrf_size(g->solver, CUBLAS_FILL_MODE_UPPER, (int)n,
                           (double *)(uintptr_t)x, (int)n, &lwork) != 0 ||
        chol_cu.mem_alloc(&work, (size_t)(lwork > 0 ? lwork : 1) *
                                     sizeof(double)) != 0 ||
        chol_cu.dn_set_stream(g->solver, NULL) != 0)
        ok = 0;
    for (int r = 0; ok && r <= reps; r++) {
        double t0;

        /* run 0 warms up; the copy is outside the time */
        ok = chol_cu.memcpy_dtod(x, a0.address, bytes) == 0 &&
             chol_cu.synchronize() == 0;
        t0 = bench_now_ns() * 1e-9;
        ok = ok &&
             chol_cu.potrf(g->solver, CUBLAS_FILL_MODE_UPPER, (int)n,
                           (double *)(uintptr_t)x, (int)n,
                           (double *)(uintptr_t)work, lwork,
                           (int *)(uintptr_t)g->info) == 0 &&
             chol_cu.synchronize() == 0;
        if (r > 0)
            t += bench_now_ns() * 1e-9 - t0;
    }
    if (ok && (chol_cu.memcpy_dtoh(&devinfo, g->info, sizeof devinfo) != 0 ||
               devinfo != 0))
        bench_die("cusolverDnDpotrf: devInfo %d", devinfo);
    if (x)
        chol_cu.mem_free(x);
    if (work)
        chol_cu.mem_free(work);
    if (!ok) {
        *why = "a cuSOLVER or libcuda call failed";
        return 0;
    }
    return (double)n * (double)n * (double)n / 3.0 / (t / reps) * 1e-9;
}

/* ---- cusolverMgPotrf, loaded at run time (cusolverMg.h) ------------------ */

enum {
    CUDA_R_64F = 1,                      /* cudaDataType */
    CUBLAS_FILL_MODE_LOWER = 0,          /* cublasFillMode_t */
    CUDALIBMG_GRID_MAPPING_COL_MAJOR = 0 /* cusolverMgGridMapping_t */
};

static struct {
    void *lib;
    int (*create)(void **handle);
    int (*destroy)(void *handle);
    int (*device_select)(void *handle, int n, int *ids);
    int (*create_grid)(void **grid, int32_t rows, int32_t cols,
                       const int32_t *ids, int mapping);
    int (*destroy_grid)(void *grid);
    int (*create_desc)(void **desc, int64_t rows, int64_t cols,
                       int64_t row_block, int64_t col_block, int type,
                       void *grid);
    int (*destroy_desc)(void *desc);
    int (*potrf_size)(void *handle, int uplo, int n, void **a, int ia, int ja,
                      void *desc, int type, int64_t *lwork);
    int (*potrf)(void *handle, int uplo, int n, void **a, int ia, int ja,
                 void *desc, int type, void **work, int64_t lwork, int *info);
    int (*memcpy_htod)(uint64_t dst, const void *src, size_t bytes);
} mg;

static int mg_load(const char **why)
{
    static const char *const names[] = {
        "libcusolverMg.so.12",
        "libcusolverMg.so.11",
        "libcusolverMg.so",
        "/usr/local/cuda/lib64/libcusolverMg.so.12",
        "/usr/local/cuda/lib64/libcusolverMg.so.11",
        "/usr/local/cuda/lib64/libcusolverMg.so",
    };

    if (mg.lib)
        return 0;
    if (!(mg.lib = chol_open_first(names, sizeof names / sizeof *names))) {
        *why = "no libcusolverMg";
        return -1;
    }
    if (!(*(void **)&mg.create = dlsym(mg.lib, "cusolverMgCreate")) ||
        !(*(void **)&mg.destroy = dlsym(mg.lib, "cusolverMgDestroy")) ||
        !(*(void **)&mg.device_select =
              dlsym(mg.lib, "cusolverMgDeviceSelect")) ||
        !(*(void **)&mg.create_grid =
              dlsym(mg.lib, "cusolverMgCreateDeviceGrid")) ||
        !(*(void **)&mg.destroy_grid =
              dlsym(mg.lib, "cusolverMgDestroyGrid")) ||
        !(*(void **)&mg.create_desc =
              dlsym(mg.lib, "cusolverMgCreateMatrixDesc")) ||
        !(*(void **)&mg.destroy_desc =
              dlsym(mg.lib, "cusolverMgDestroyMatrixDesc")) ||
        !(*(void **)&mg.potrf_size =
              dlsym(mg.lib, "cusolverMgPotrf_bufferSize")) ||
        !(*(void **)&mg.potrf = dlsym(mg.lib, "cusolverMgPotrf")) ||
        !(*(void **)&mg.memcpy_htod =
              dlsym(chol_cu.cuda_lib, "cuMemcpyHtoD_v2"))) {
        *why = "libcusolverMg lacks an entry point";
        return -1;
    }
    return 0;
}

/*
 * cusolverMgPotrf of the whole matrix (lower) on GPUs 0 .. k - 1, reps
 * times after one untimed run; GFLOP/s of the mean, 0 with *why where it
 * cannot run. The matrix is symmetric, so its column-major column block j
 * is the row-major rows of block j: contiguous on the host, copied to GPU
 * j mod k at local block j / k (lda n) before each run.
 */
static double mg_baseline(chol *m, unsigned k, size_t t, int reps,
                          const char **why)
{
    size_t n = m->n, nb = (n + t - 1) / t;
    void *h = NULL, *grid = NULL, *desc = NULL;
    void *a[MAX_DEVICES] = {0}, *work[MAX_DEVICES] = {0};
    int32_t ids[MAX_DEVICES];
    int64_t lwork = 0;
    double secs = 0;
    int ok = 1, info = 0, st = 0;

    if (mg_load(why) < 0)
        return 0;
    for (unsigned p = 0; p < k; p++)
        ids[p] = (int32_t)p;
    if ((st = mg.create(&h)) != 0 || (st = mg.device_select(h, (int)k, ids)) ||
        (st = mg.create_grid(&grid, 1, (int32_t)k, ids,
                             CUDALIBMG_GRID_MAPPING_COL_MAJOR)) ||
        (st = mg.create_desc(&desc, (int64_t)n, (int64_t)n, (int64_t)n,
                             (int64_t)t, CUDA_R_64F, grid))) {
        *why = "cusolverMg setup failed";
        ok = 0;
    }
    /* each GPU's blocks, lda n; then the workspace of potrf_size */
    for (unsigned p = 0; ok && p < k; p++) {
        size_t mine = nb / k + (p < nb % k);
        uint64_t x = 0;

        ok = chol_cu.set_current(m->tl.gpu[p].context) == 0 &&
             chol_cu.mem_alloc(&x,
                               (mine ? mine : 1) * t * n * sizeof(double)) == 0;
        a[p] = (void *)(uintptr_t)x;
    }
    if (ok && (st = mg.potrf_size(h, CUBLAS_FILL_MODE_LOWER, (int)n, a, 1, 1,
                                  desc, CUDA_R_64F, &lwork)) != 0)
        ok = 0;
    for (unsigned p = 0; ok && p < k; p++) {
        uint64_t x = 0;

        ok = chol_cu.set_current(m->tl.gpu[p].context) == 0 &&
             chol_cu.mem_alloc(&x, (size_t)(lwork > 0 ? lwork : 1) *
                                       sizeof(double)) == 0;
        work[p] = (void *)(uintptr_t)x;
    }
    if (!ok && !*why)
        *why = st ? "cusolverMg: a call failed (status in --json's note)"
                  : "out of device memory for cusolverMgPotrf";
    for (int r = 0; ok && r <= reps; r++) {
        double t0;

        for (size_t j = 0; ok && j < nb; j++) {
            size_t cols = (t < n - j * t ? t : n - j * t);

            ok = chol_cu.set_current(m->tl.gpu[j % k].context) == 0 &&
                 mg.memcpy_htod((uint64_t)(uintptr_t)a[j % k] +
                                    (j / k) * t * n * sizeof(double),
                                m->a0 + j * t * n,
                                cols * n * sizeof(double)) == 0;
        }
        for (unsigned p = 0; ok && p < k; p++)
            ok = chol_cu.set_current(m->tl.gpu[p].context) == 0 &&
                 chol_cu.synchronize() == 0;
        t0 = bench_now_ns() * 1e-9;
        ok = ok && (st = mg.potrf(h, CUBLAS_FILL_MODE_LOWER, (int)n, a, 1, 1,
                                  desc, CUDA_R_64F, work, lwork, &info)) == 0;
        for (unsigned p = 0; ok && p < k; p++)
            ok = chol_cu.set_current(m->tl.gpu[p].context) == 0 &&
                 chol_cu.synchronize() == 0;
        if (r > 0)
            secs += bench_now_ns() * 1e-9 - t0;
        if (ok && info != 0)
            bench_die("cusolverMgPotrf: info %d", info);
        if (!ok && !*why)
            *why = "cusolverMgPotrf or a copy for it failed";
    }
    if (st)
        bench_note("cusolverMg: status %d", st);
    for (unsigned p = 0; p < k; p++) {
        chol_cu.set_current(m->tl.gpu[p].context);
        if (a[p])
            chol_cu.mem_free((uint64_t)(uintptr_t)a[p]);
        if (work[p])
            chol_cu.mem_free((uint64_t)(uintptr_t)work[p]);
    }
    if (desc)
        mg.destroy_desc(desc);
    if (grid)
        mg.destroy_grid(grid);
    if (h)
        mg.destroy(h);
    if (!ok)
        return 0;
    return (double)n * (double)n * (double)n / 3.0 / (secs / reps) * 1e-9;
}

/* OpenBLAS's threaded dpotrf on every core, reps times; GFLOP/s. */
static double openblas_baseline(chol *m, int reps, const char **why)
{
#ifdef WEFT_HAVE_OPENBLAS
    size_t n = m->n, bytes = n * n * sizeof(double);
    double *x = malloc(bytes), t = 0;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    if (!x)
        bench_die("out of memory");
    openblas_set_num_threads(cores > 0 ? (int)cores : 1);
    for (int r = 0; r <= reps; r++) {
        double t0;
        int info;

        memcpy(x, m->a0, bytes);
        t0 = bench_now_ns() * 1e-9;
        /* row-major lower = column-major upper, as the tiles */
        info =
            (int)LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'U', (int)n, x, (int)n);
        if (r > 0)
            t += bench_now_ns() * 1e-9 - t0;
        if (info != 0)
            bench_die("LAPACKE_dpotrf: info %d", info);
    }
    openblas_set_num_threads(1);
    free(x);
    return (double)n * (double)n * (double)n / 3.0 / (t / reps) * 1e-9;
#else
    (void)m;
    (void)reps;
    *why = "built without OpenBLAS";
    return 0;
#endif
}

/*
 * Bytes moved against the least a tiled Cholesky moves (the example's
 * header comment): the first launch's host->device bytes and, on more
 * than one device, a steady launch's peer bytes, as ratios.
 */
static void bytes_figures(const chol *m, const chol_result *r, size_t k,
                          size_t n, size_t b)
{
    chol_bytes first = chol_min_links(m, LAUNCH_FIRST),
               steady = chol_min_links(m, LAUNCH_STEADY);
    char name[128];

    snprintf(name, sizeof name, "bytes_h2d_first_ratio_%zudev_n%zu_b%zu", k, n,
             b);
    bench_figure(name, (double)r->first_bytes.h2d / (double)first.h2d, "x");
    if (steady.peer) {
        snprintf(name, sizeof name, "bytes_peer_ratio_%zudev_n%zu_b%zu", k, n,
                 b);
        bench_figure(name, (double)r->steady_bytes.peer / (double)steady.peer,
                     "x");
    }
    bench_note("%zu dev, n %zu, b %zu: steady launch: host->device %llu, "
               "device->host %llu, peer %llu bytes (minimum %llu, %llu, %llu)",
               k, n, b, (unsigned long long)r->steady_bytes.h2d,
               (unsigned long long)r->steady_bytes.d2h,
               (unsigned long long)r->steady_bytes.peer,
               (unsigned long long)steady.h2d, (unsigned long long)steady.d2h,
               (unsigned long long)steady.peer);
}

/*
 * Out of core: n on one device, the matrix starting on the host (the
 * example's --once: launch, wait and sync_host timed), in core and with
 * device_mem_limit at the matrix's n^2 doubles / 1.5, in fresh runtimes;
 * reps runs each, the median, every one checked.
 */
static void out_of_core(const char *driver, int kernels, size_t n,
                        const size_t *tiles, int ntiles, int reps,
                        unsigned check_rows, int tiled)
{
    uint64_t bytes = (uint64_t)n * n * sizeof(double);
    double flops = (double)n * (double)n * (double)n / 3.0;
    char why[512], name[128];

    if (getenv("WEFT_DEVICE_MEM_LIMIT"))
        bench_note("WEFT_DEVICE_MEM_LIMIT=%s overrides both runs' limits",
                   getenv("WEFT_DEVICE_MEM_LIMIT"));
    for (int t = 0; t < ntiles; t++) {
        size_t b = tiles[t];
        double rate[2] = {0, 0};

        if (b == 0 || n % b) {
            bench_note("out of core: tile %zu does not divide %zu, skipped", b,
                       n);
            continue;
        }
        for (int oc = 0; oc < 2; oc++) {
            double secs[64];
            chol c;
            chol_result r;
            chol_bytes least;
            int runs = reps < 64 ? reps : 64;

            memset(&c, 0, sizeof c);
            c.mem_limit = oc ? (uint64_t)((double)bytes / 1.5) : 0;
            c.tiled = tiled;
            if (chol_open(&c, driver, kernels, why, sizeof why) != 0)
                bench_die("out of core: %s", why);
            chol_use(&c, 1);
            bench_progress(oc ? "out of core" : "in core, from the host");
            bench_check(chol_matrix(&c, n, b));
            least = chol_min_links(&c, LAUNCH_ONCE);
            for (int x = 0; x < runs; x++) {
                double res;

                bench_check(chol_once(&c, 1, &r));
                res =
                    chol_residual(&c.tl, c.a, c.a0, n <= 4096 ? n : check_rows);
                if (!(res <= 1e-12) || r.bad)
                    bench_die("n %zu, tile %zu, %s: residual %.3g", n, b,
                              oc ? "out of core" : "in core", res);
                secs[x] = r.first;
            }
            rate[oc] = flops / bench_median(secs, runs) * 1e-9;
            snprintf(name, sizeof name, "weft_once%s_1dev_n%zu_b%zu",
                     oc ? "_oc" : "", n, b);
            bench_figure(name, rate[oc], "GFLOP/s");
            bench_note(
                "%s, n %zu, b %zu, %s layout (limit %llu bytes, matrix %llu): "
                "a "
                "run: %llu evictions, %llu written back (%llu bytes); "
                "host->device %llu, device->host %llu bytes (minimum "
                "%llu, %llu)",
                oc ? "out of core" : "in core", n, b, tiled ? "tile" : "row",
                (unsigned long long)c.mem_limit, (unsigned long long)bytes,
                (unsigned long long)r.evictions,
                (unsigned long long)r.writebacks,
                (unsigned long long)r.evict_bytes,
                (unsigned long long)r.first_bytes.h2d,
                (unsigned long long)r.first_bytes.d2h,
                (unsigned long long)least.h2d, (unsigned long long)least.d2h);
            chol_close(&c);
        }
        snprintf(name, sizeof name, "ratio_oc_n%zu_b%zu", n, b);
        bench_figure(name, rate[1] / rate[0], "x");
    }
}

int main(int argc, char **argv)
{
    const char *driver = "cuda", *sizes_s = "4096,8192,16384",
               *tiles_s = "512,1024", *devs_s = NULL, *la_s = "1",
               *oc_layout = "tiles", *map_s = "snake";
    int reps = 3, kernels;
    unsigned check_rows = 16, mg_block = 256, oc_n = 0, warm = 1;
    size_t sizes[16], tiles[16], devs[16], las[2];
    int nsizes, ntiles, ndevs, nlas, nmaps, maps[2];
    char why[512], name[128];
    chol m;
    const bench_option options[] = {
        {"--driver", BENCH_STRING, &driver, "cuda|host|sim"},
        {"--sizes", BENCH_STRING, &sizes_s, "N,N..."},
        {"--tiles", BENCH_STRING, &tiles_s, "B,B..."},
        {"--devices", BENCH_STRING, &devs_s, "K,K..."},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--check-rows", BENCH_UNSIGNED, &check_rows, "S"},
        {"--mg-block", BENCH_UNSIGNED, &mg_block, "T"},
        {"--out-of-core", BENCH_UNSIGNED, &oc_n, "N"},
        {"--lookahead", BENCH_STRING, &la_s, "1,0"},
        {"--oc-layout", BENCH_STRING, &oc_layout, "rows|tiles"},
        {"--map", BENCH_STRING, &map_s, "snake,cyclic"},
        {"--warm", BENCH_UNSIGNED, &warm, "0|1"},
    };

    BENCH_OPTIONS(argc, argv, "cholesky", options);
    if (reps < 1 || check_rows < 1 || mg_block < 1 ||
        (strcmp(oc_layout, "rows") && strcmp(oc_layout, "tiles")) ||
        (strcmp(driver, "cuda") && strcmp(driver, "host") &&
         strcmp(driver, "sim")))
        bench_usage();
    /* the libraries' tiles on cuda and host, the portable ones on the sim */
    kernels = strcmp(driver, "sim") ? 1 : -1;
    nsizes = parse_list(sizes_s, sizes, 16);
    ntiles = parse_list(tiles_s, tiles, 16);
    nlas = parse_list(la_s, las, 2);
    /* maps[k]: 1 for cyclic */
    nmaps = 0;
    if (strstr(map_s, "snake"))
        maps[nmaps++] = 0;
    if (strstr(map_s, "cyclic"))
        maps[nmaps++] = 1;
    if (!nmaps)
        bench_usage();
    memset(&m, 0, sizeof m);
    if (chol_open(&m, driver, kernels, why, sizeof why) != 0) {
        printf("skipped: %s%s\n",
               strcmp(driver, "cuda") ? "" : "no CUDA device: ", why);
        chol_close(&m);
        return 0;
    }
    if (devs_s) {
        ndevs = parse_list(devs_s, devs, 16);
    } else { /* 1 and every device */
        devs[0] = 1;
        devs[1] = m.ndev_all;
        ndevs = m.ndev_all > 1 ? 2 : 1;
    }
    bench_begin("\"driver\": \"%s\", \"devices\": %u, \"reps\": %d", m.driver,
                m.ndev_all, reps);
    bench_note("%s: %u devices; weft's tiles %s; baseline %s", m.driver,
               m.ndev_all,
               m.cuda     ? "cuSOLVER/cuBLAS"
               : m.native ? "OpenBLAS, one thread per task"
                          : "portable kernels",
               m.cuda     ? "cusolverDnDpotrf on GPU 0, cusolverMgPotrf on as "
                            "many GPUs as weft"
               : m.native ? "OpenBLAS's threaded LAPACKE_dpotrf"
                          : "none (the sim's figures are of this machine)");
    for (int s = 0; s < nsizes; s++) {
        size_t n = sizes[s], nrates = 0, made = 0;
        const char *skip = NULL;
        double base = 0, flops = (double)n * (double)n * (double)n / 3.0;
        struct {
            size_t dev, b;
            const char *sfx;
            double gflops;
        } rate[16 * 16 * 2 * 2];

        for (int t = 0; t < ntiles; t++) {
            size_t b = tiles[t];

            if (b == 0 || n % b) {
                bench_note("n %zu: tile %zu does not divide it, skipped", n, b);
                continue;
            }
            bench_progress("making the matrix");
            bench_check(chol_matrix(&m, n, b));
            made++;
            /*
             * Warm-up, untimed: one factorisation on every device the
             * figures use. The first configuration of a process that
             * uses a device ran about 6% slower than later ones on it
             * (two H100s, n 32768: 65.4 then 69.4 TFLOP/s on two).
             */
            if (warm) {
                chol_result r;
                size_t most = 1;

                for (int x = 0; x < ndevs; x++)
                    if (devs[x] <= m.ndev_all && devs[x] > most)
                        most = devs[x];
                bench_progress("warm-up");
                chol_use(&m, (unsigned)most);
                bench_check(chol_rewrap(&m, 0, 1));
                bench_check(chol_run(&m, 1, 1, &r));
            }
            for (int x = 0; x < ndevs * nlas * nmaps; x++) {
                size_t k = devs[x / (nlas * nmaps)];
                int cyc = maps[x % nmaps], ahead = las[(x / nmaps) % nlas] != 0;
                /* the figures' suffix: the configuration off the defaults */
                const char *sfx =
                    ahead ? (cyc ? "_cyc" : "") : (cyc ? "_nola_cyc" : "_nola");
                chol_result r;
                double res;

                if (k < 1 || k > m.ndev_all)
                    continue;
                chol_use(&m, (unsigned)k);
                m.no_lookahead = !ahead;
                m.cyclic = cyc;
                bench_progress("weft");
                memset(&r, 0, sizeof r);
                /* the first launch from the host, as on a fresh matrix */
                bench_check(chol_rewrap(&m, 0, 1));
                bench_check(chol_run(&m, reps, 1, &r));
                res =
                    chol_residual(&m.tl, m.a, m.a0, n <= 4096 ? n : check_rows);
                if (!(res <= 1e-12) || r.bad)
                    bench_die("n %zu, tile %zu, %zu devices: residual %.3g", n,
                              b, k, res);
                snprintf(name, sizeof name, "weft_%zudev_n%zu_b%zu%s", k, n, b,
                         sfx);
                bench_figure(name, flops / r.steady * 1e-9, "GFLOP/s");
                snprintf(name, sizeof name, "weft_%zudev_n%zu_b%zu%s_first", k,
                         n, b, sfx);
                bench_figure(name, flops / r.first * 1e-9, "GFLOP/s");
                if (!*sfx)
                    bytes_figures(&m, &r, k, n, b);
                rate[nrates].dev = k;
                rate[nrates].b = b;
                rate[nrates].sfx = sfx;
                rate[nrates++].gflops = flops / r.steady * 1e-9;
            }
            m.no_lookahead = 0;
            m.cyclic = 0;
        }
        if (!made) /* (m holds another n's matrix, or none) */
            continue;
        /* after weft's first launches, which moved the tiles themselves */
        bench_progress("baseline");
        if (m.cuda)
            base = cusolver_baseline(&m, reps, &skip);
        else if (m.native)
            base = openblas_baseline(&m, reps, &skip);
        else
            skip = "no baseline for the portable kernels";
        snprintf(name, sizeof name, "%s_n%zu", m.cuda ? "cusolver" : "openblas",
                 n);
        if (base > 0)
            bench_figure(name, base, "GFLOP/s");
        else
            bench_note("%s: skipped (%s)", name, skip);
        for (size_t r = 0; base > 0 && r < nrates; r++) {
            snprintf(name, sizeof name, "ratio_weft_%zudev_n%zu_b%zu%s",
                     rate[r].dev, n, rate[r].b, rate[r].sfx);
            bench_figure(name, rate[r].gflops / base, "x");
        }
        /* k devices against one, for the same tile and priorities */
        for (size_t r = 0; r < nrates; r++)
            for (size_t o = 0; rate[r].dev > 1 && o < nrates; o++) {
                if (rate[o].dev != 1 || rate[o].b != rate[r].b ||
                    strcmp(rate[o].sfx, rate[r].sfx))
                    continue;
                snprintf(name, sizeof name, "scaling_weft_%zudev_n%zu_b%zu%s",
                         rate[r].dev, n, rate[r].b, rate[r].sfx);
                bench_figure(name, rate[r].gflops / rate[o].gflops, "x");
            }
        /* cuSOLVER's own multi-GPU factorisation on as many GPUs */
        for (int d = 0; m.cuda && d < ndevs; d++) {
            double mgr;

            if (devs[d] < 2 || devs[d] > m.ndev_all)
                continue;
            skip = NULL;
            bench_progress("cusolverMgPotrf");
            mgr = mg_baseline(&m, (unsigned)devs[d], mg_block, reps, &skip);
            snprintf(name, sizeof name, "cusolvermg_%zudev_n%zu", devs[d], n);
            if (mgr <= 0) {
                bench_note("%s: skipped (%s)", name, skip);
                continue;
            }
            bench_figure(name, mgr, "GFLOP/s");
            for (size_t r = 0; r < nrates; r++) {
                if (rate[r].dev != devs[d])
                    continue;
                snprintf(name, sizeof name, "ratio_mg_weft_%zudev_n%zu_b%zu%s",
                         rate[r].dev, n, rate[r].b, rate[r].sfx);
                bench_figure(name, rate[r].gflops / mgr, "x");
            }
        }
    }
    /* (its device memory given back before the out-of-core runtimes) */
    chol_close(&m);
    if (oc_n)
        out_of_core(driver, kernels, oc_n, tiles, ntiles, reps, check_rows,
                    !strcmp(oc_layout, "tiles"));
    bench_progress("");
    bench_end();
    return 0;
}
