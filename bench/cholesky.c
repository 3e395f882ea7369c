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
 * cusolverMgPotrf (cuSOLVER's multi-GPU Cholesky) is not measured.
 * Figures, in GFLOP/s of n^3/3 flops, per n and tile size b:
 *
 *   weft_<k>dev_n<n>_b<b>         steady launches on k devices (the tile
 *                                 restore from A0 included, see the
 *                                 example)
 *   weft_<k>dev_n<n>_b<b>_first   the first launch, which moves the tiles
 *   cusolver_n<n>, openblas_n<n>  the baseline
 *   ratio_weft_<k>dev_n<n>_b<b>   weft over the baseline (x)
 *
 * Every factorisation is checked (the example's residual, on --check-rows
 * rows beyond n = 4096) and a residual above 1e-12 ends the bench.
 *
 *   bench/cholesky [--driver cuda|host] [--sizes 4096,8192] [--tiles
 *                  512,1024] [--devices 1,2] [--reps R] [--check-rows S]
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
    gpu_state *g = &m->gpu[0];
    uint64_t x = 0, work = 0;
    int lwork = 0, devinfo = 0, ok = 1;
    double t = 0;

    bench_check(weft_device_get_info(m->dev[0], &info));
    /* A and A0 in weft's memory, a work copy and the workspace here */
    if (3.2 * (double)bytes > 0.9 * (double)info.global_mem) {
        *why = "the matrix does not fit one GPU three times";
        return 0;
    }
    bench_check(
        weft_buffer_device_address(m->a0b, m->dev[0], 0, WEFT_WHOLE, &a0));
    if (cu.set_current(g->context) != 0 || cu.mem_alloc(&x, bytes) != 0 ||
        cu.potrf_size(g->solver, CUBLAS_FILL_MODE_UPPER, (int)n,
                      (double *)(uintptr_t)x, (int)n, &lwork) != 0 ||
        cu.mem_alloc(&work, (size_t)(lwork > 0 ? lwork : 1) * sizeof(double)) !=
            0 ||
        cu.dn_set_stream(g->solver, NULL) != 0)
        ok = 0;
    for (int r = 0; ok && r <= reps; r++) {
        double t0;

        /* run 0 warms up; the copy is outside the time */
        ok = cu.memcpy_dtod(x, a0.address, bytes) == 0 && cu.synchronize() == 0;
        t0 = bench_now_ns() * 1e-9;
        ok = ok &&
             cu.potrf(g->solver, CUBLAS_FILL_MODE_UPPER, (int)n,
                      (double *)(uintptr_t)x, (int)n, (double *)(uintptr_t)work,
                      lwork, (int *)(uintptr_t)g->info) == 0 &&
             cu.synchronize() == 0;
        if (r > 0)
            t += bench_now_ns() * 1e-9 - t0;
    }
    if (ok && (cu.memcpy_dtoh(&devinfo, g->info, sizeof devinfo) != 0 ||
               devinfo != 0))
        bench_die("cusolverDnDpotrf: devInfo %d", devinfo);
    if (x)
        cu.mem_free(x);
    if (work)
        cu.mem_free(work);
    if (!ok) {
        *why = "a cuSOLVER or libcuda call failed";
        return 0;
    }
    return (double)n * (double)n * (double)n / 3.0 / (t / reps) * 1e-9;
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

int main(int argc, char **argv)
{
    const char *driver = "cuda", *sizes_s = "4096,8192,16384",
               *tiles_s = "512,1024", *devs_s = NULL;
    int reps = 3;
    unsigned check_rows = 16;
    size_t sizes[16], tiles[16], devs[16];
    int nsizes, ntiles, ndevs;
    char why[512], name[128];
    chol m;
    const bench_option options[] = {
        {"--driver", BENCH_STRING, &driver, "cuda|host"},
        {"--sizes", BENCH_STRING, &sizes_s, "N,N..."},
        {"--tiles", BENCH_STRING, &tiles_s, "B,B..."},
        {"--devices", BENCH_STRING, &devs_s, "K,K..."},
        {"--reps", BENCH_INT, &reps, "R"},
        {"--check-rows", BENCH_UNSIGNED, &check_rows, "S"},
    };

    BENCH_OPTIONS(argc, argv, "cholesky", options);
    if (reps < 1 || check_rows < 1 ||
        (strcmp(driver, "cuda") && strcmp(driver, "host")))
        bench_usage();
    nsizes = parse_list(sizes_s, sizes, 16);
    ntiles = parse_list(tiles_s, tiles, 16);
    memset(&m, 0, sizeof m);
    if (chol_open(&m, driver, 1, why, sizeof why) != 0) {
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
    bench_note("%s: %u devices; weft's tiles %s; baseline %s; "
               "cusolverMgPotrf not measured",
               m.driver, m.ndev_all,
               m.cuda ? "cuSOLVER/cuBLAS" : "OpenBLAS, one thread per task",
               m.cuda ? "cusolverDnDpotrf on GPU 0"
                      : "OpenBLAS's threaded LAPACKE_dpotrf");
    for (int s = 0; s < nsizes; s++) {
        size_t n = sizes[s], nrates = 0, made = 0;
        const char *skip = NULL;
        double base = 0, flops = (double)n * (double)n * (double)n / 3.0;
        struct {
            size_t dev, b;
            double gflops;
        } rate[16 * 16];

        for (int t = 0; t < ntiles; t++) {
            size_t b = tiles[t];

            if (b == 0 || n % b) {
                bench_note("n %zu: tile %zu does not divide it, skipped", n, b);
                continue;
            }
            bench_progress("making the matrix");
            bench_check(chol_matrix(&m, n, b));
            made++;
            for (int d = 0; d < ndevs; d++) {
                weft_exec_stats st = {.size = sizeof st};
                double first = 0, steady = 0, res;
                size_t nodes;
                int bad;

                if (devs[d] < 1 || devs[d] > m.ndev_all)
                    continue;
                chol_use(&m, (unsigned)devs[d]);
                bench_progress("weft");
                bench_check(
                    chol_run(&m, reps, 1, &first, &steady, &st, &nodes, &bad));
                res = residual(&m, n <= 4096 ? n : check_rows);
                if (!(res <= 1e-12) || bad)
                    bench_die("n %zu, tile %zu, %zu devices: residual %.3g", n,
                              b, devs[d], res);
                snprintf(name, sizeof name, "weft_%zudev_n%zu_b%zu", devs[d], n,
                         b);
                bench_figure(name, flops / steady * 1e-9, "GFLOP/s");
                snprintf(name, sizeof name, "weft_%zudev_n%zu_b%zu_first",
                         devs[d], n, b);
                bench_figure(name, flops / first * 1e-9, "GFLOP/s");
                rate[nrates].dev = devs[d];
                rate[nrates].b = b;
                rate[nrates++].gflops = flops / steady * 1e-9;
            }
        }
        if (!made) /* (m holds another n's matrix, or none) */
            continue;
        /* after weft's first launches, which moved the tiles themselves */
        bench_progress("baseline");
        base = m.cuda ? cusolver_baseline(&m, reps, &skip)
                      : openblas_baseline(&m, reps, &skip);
        snprintf(name, sizeof name, "%s_n%zu", m.cuda ? "cusolver" : "openblas",
                 n);
        if (base > 0)
            bench_figure(name, base, "GFLOP/s");
        else
            bench_note("%s: skipped (%s)", name, skip);
        for (size_t r = 0; base > 0 && r < nrates; r++) {
            snprintf(name, sizeof name, "ratio_weft_%zudev_n%zu_b%zu",
                     rate[r].dev, n, rate[r].b);
            bench_figure(name, rate[r].gflops / base, "x");
        }
    }
    bench_progress("");
    bench_end();
    chol_close(&m);
    return 0;
}
