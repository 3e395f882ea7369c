/*
 * cublas_gemm: a tiled matrix product C = A x B whose tile kernels are
 * cuBLAS calls in native nodes, spread over every GPU.
 *
 * The n x n matrices (row-major floats) are cut into t x t tiles, each
 * tile a buffer of its own (contiguous, row-major). For every tile (i, j)
 * of C and every k, one native node computes C_ij (+)= A_ik x B_kj with
 * cublasSgemm on the CUDA stream weft hands over (cublasSetStream): weft
 * moves the tiles to the node's GPU and orders the stream around the call
 * as around its own kernels. The nodes of one C tile go to one GPU,
 * round-robin by tile (--place auto: placement chooses).
 *
 * The nodes are capturable (weft_graph_set_native_capture): cuBLAS calls
 * on the given stream are captured into CUDA graphs, so that from the
 * second launch on (the first moves the tiles) weft records each launch
 * once and replays it as one CUDA graph per GPU without calling cublasSgemm
 * again. It prints how many launches were replayed (weft_exec_stats:
 * native_replays of launches); --no-capture calls the functions at every
 * launch instead.
 *
 * Figures, in one run: weft on one GPU, weft on every GPU, and plain
 * cuBLAS on one GPU (one cublasSgemm of the whole product, on device
 * memory that weft_buffer_device_address hands out), in GFLOP/s of steady
 * launches (the tiles already on the GPUs), with the ratios; the first
 * launch (moving every tile) is timed too. A sub-sample of C is checked
 * against a CPU reference (the inputs are small multiples of powers of two,
 * so every product is exact in single precision whatever the order of the
 * sums).
 *
 * cuBLAS is loaded at run time (dlopen of libcublas; --cublas PATH), so
 * this builds without the CUDA toolkit and says "skipped: no CUDA device"
 * (exit 0) where there is no GPU or no cuBLAS.
 *
 *   cublas_gemm [--n N] [--tile T] [--reps R] [--samples S]
 *               [--place rr|auto] [--no-baseline] [--cublas PATH] [--json]
 *               [--driver host] [--no-capture] [--all-gpus-only]
 *
 * --all-gpus-only runs the product on every GPU alone (no one-GPU run, no
 * baseline): for matrices larger than one GPU's memory.
 *
 * --driver host runs the same graph with a C tile product on the host
 * driver's devices (no cuBLAS, no baseline): the tiling and the check
 * without a GPU.
 */
#include <weft.h>

#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- cuBLAS and two calls of libcuda, loaded at run time ---------------- */

/* The few cuBLAS types and entry points used here (cublas_api.h). */
typedef void *cublas_handle;
enum { CUBLAS_SUCCESS = 0, CUBLAS_OP_N = 0 };
typedef int cublas_create_fn(cublas_handle *handle);
typedef int cublas_destroy_fn(cublas_handle handle);
typedef int cublas_set_stream_fn(cublas_handle handle, void *stream);
typedef int cublas_sgemm_fn(cublas_handle handle, int transa, int transb, int m,
                            int n, int k, const float *alpha, const float *a,
                            int lda, const float *b, int ldb, const float *beta,
                            float *c, int ldc);
/* libcuda: the context current on this thread, and waiting for it. */
typedef int cu_ctx_set_current_fn(void *ctx);
typedef int cu_ctx_synchronize_fn(void);

static struct {
    void *lib, *cuda;
    cublas_create_fn *create;
    cublas_destroy_fn *destroy;
    cublas_set_stream_fn *set_stream;
    cublas_sgemm_fn *sgemm;
    cu_ctx_set_current_fn *set_current;
    cu_ctx_synchronize_fn *synchronize;
} cublas;

static int cublas_load(const char *path, char *why, size_t size)
{
    static const char *names[] = {
        "libcublas.so.13",
        "libcublas.so.12",
        "libcublas.so.11",
        "libcublas.so",
        "/usr/local/cuda/lib64/libcublas.so",
    };

    for (size_t i = 0; !cublas.lib && i < sizeof names / sizeof *names; i++)
        cublas.lib = dlopen(path ? path : names[i], RTLD_NOW | RTLD_LOCAL);
    if (!cublas.lib) {
        snprintf(why, size, "no libcublas (%s)", dlerror());
        return -1;
    }
    cublas.cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    *(void **)&cublas.create = dlsym(cublas.lib, "cublasCreate_v2");
    *(void **)&cublas.destroy = dlsym(cublas.lib, "cublasDestroy_v2");
    *(void **)&cublas.set_stream = dlsym(cublas.lib, "cublasSetStream_v2");
    *(void **)&cublas.sgemm = dlsym(cublas.lib, "cublasSgemm_v2");
    if (cublas.cuda) {
        *(void **)&cublas.set_current = dlsym(cublas.cuda, "cuCtxSetCurrent");
        *(void **)&cublas.synchronize = dlsym(cublas.cuda, "cuCtxSynchronize");
    }
    if (!cublas.create || !cublas.destroy || !cublas.set_stream ||
        !cublas.sgemm || !cublas.set_current || !cublas.synchronize) {
        snprintf(why, size, "cuBLAS or libcuda lacks an entry point");
        return -1;
    }
    return 0;
}

/* ---- the matrices ---------------------------------------------------------
 */

/* Small multiples of 1/8 and 1/16: every sum of products is exact. */
static float a_at(size_t r, size_t c)
{
    return (float)((long)((r * 3 + c * 5) % 11) - 5) * 0.125f;
}

static float b_at(size_t r, size_t c)
{
    return (float)((long)((r * 7 + c * 2) % 13) - 6) * 0.0625f;
}

static double c_ref(size_t n, size_t r, size_t c)
{
    double s = 0;

    for (size_t k = 0; k < n; k++)
        s += (double)a_at(r, k) * (double)b_at(k, c);
    return s;
}

typedef struct gemm {
    const char *driver; /* "cuda", or "host" to try the graph without one */
    size_t n, t, nt;    /* matrix side, tile side, tiles per side */
    unsigned ngpus;
    const weft_device *gpu[64];
    weft_runtime *rt;
    weft_buffer **a, **b, **c; /* nt * nt tiles each, row-major by tile */
    /* One cuBLAS handle per GPU, made on the GPU's first native call. */
    pthread_mutex_t lock[64];
    cublas_handle handle[64];
    void *context[64]; /* the GPU's CUcontext, as native nodes see it */
} gemm;

/* What one native node computes: beta 0 for the first k, else 1. */
typedef struct tile_job {
    gemm *m;
    float beta;
} tile_job;

static unsigned gpu_index(const gemm *m, const weft_device *dev)
{
    for (unsigned i = 0; i < m->ngpus; i++)
        if (m->gpu[i] == dev)
            return i;
    return 0;
}

/* C_ij (+)= A_ik x B_kj on the node's stream: accesses 0, 1, 2. */
static int tile_gemm(const weft_native_ctx *ctx, void *user)
{
    const tile_job *job = user;
    gemm *m = job->m;
    unsigned g = gpu_index(m, weft_native_device(ctx));
    const float one = 1.0f;
    int t = (int)m->t, rc = CUBLAS_SUCCESS;
    const float *a = (const float *)(uintptr_t)weft_native_address(ctx, 0);
    const float *b = (const float *)(uintptr_t)weft_native_address(ctx, 1);
    float *c = (float *)(uintptr_t)weft_native_address(ctx, 2);

    pthread_mutex_lock(&m->lock[g]);
    if (!m->handle[g]) {
        /* The GPU's context is current here: the handle is for it. */
        rc = cublas.create(&m->handle[g]);
        m->context[g] = weft_native_context(ctx);
    }
    if (rc == CUBLAS_SUCCESS)
        rc = cublas.set_stream(m->handle[g], weft_native_queue(ctx));
    /*
     * cuBLAS is column-major: a row-major tile is its transpose, so the
     * row-major C = A x B is the column-major C^T = B^T x A^T.
     */
    if (rc == CUBLAS_SUCCESS)
        rc = cublas.sgemm(m->handle[g], CUBLAS_OP_N, CUBLAS_OP_N, t, t, t, &one,
                          b, t, a, t, &job->beta, c, t);
    pthread_mutex_unlock(&m->lock[g]);
    return rc;
}

/*
 * The same tile product in C, for --driver host: the graph, the tiling and
 * the check run without a GPU (on WEFT_HOST_DEVICES host devices).
 */
static int tile_gemm_host(const weft_native_ctx *ctx, void *user)
{
    const tile_job *job = user;
    size_t t = job->m->t;
    const float *a = weft_native_ptr(ctx, 0), *b = weft_native_ptr(ctx, 1);
    float *c = weft_native_ptr(ctx, 2);

    for (size_t r = 0; r < t; r++) {
        for (size_t j = 0; j < t; j++)
            c[r * t + j] = job->beta ? c[r * t + j] : 0.0f;
        for (size_t k = 0; k < t; k++)
            for (size_t j = 0; j < t; j++)
                c[r * t + j] += a[r * t + k] * b[k * t + j];
    }
    return 0;
}

/* A GPU's handle goes on that GPU (its context current). */
static int handle_destroy(const weft_native_ctx *ctx, void *user)
{
    gemm *m = user;
    unsigned g = gpu_index(m, weft_native_device(ctx));
    int rc = 0;

    if (m->handle[g])
        rc = cublas.destroy(m->handle[g]);
    m->handle[g] = NULL;
    return rc;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#define TRY(call)                                                              \
    do {                                                                       \
        rc = (call);                                                           \
        if (rc < 0) {                                                          \
            what = #call;                                                      \
            goto out;                                                          \
        }                                                                      \
    } while (0)

/* The tiles, written from the functions above. */
static int tiles_create(gemm *m, float *scratch)
{
    size_t t = m->t, bytes = t * t * sizeof(float);
    int rc = 0;

    for (size_t i = 0; i < m->nt; i++)
        for (size_t j = 0; j < m->nt; j++) {
            size_t x = i * m->nt + j;

            if ((rc = weft_buffer_create(m->rt, bytes, &m->a[x])) < 0 ||
                (rc = weft_buffer_create(m->rt, bytes, &m->b[x])) < 0 ||
                (rc = weft_buffer_create(m->rt, bytes, &m->c[x])) < 0)
                return rc;
            for (size_t r = 0; r < t; r++)
                for (size_t c = 0; c < t; c++)
                    scratch[r * t + c] = a_at(i * t + r, j * t + c);
            if ((rc = weft_buffer_write(m->a[x], 0, scratch, bytes)) < 0)
                return rc;
            for (size_t r = 0; r < t; r++)
                for (size_t c = 0; c < t; c++)
                    scratch[r * t + c] = b_at(i * t + r, j * t + c);
            if ((rc = weft_buffer_write(m->b[x], 0, scratch, bytes)) < 0)
                return rc;
        }
    return 0;
}

/*
 * The product as a graph on gpus[0, ngpus): one native node per (i, j, k),
 * the nodes of C_ij on gpu (i * nt + j) % ngpus, or where placement puts
 * them (place_auto).
 */
static int graph_build(gemm *m, tile_job jobs[2], unsigned ngpus,
                       int place_auto, int capture, weft_graph **out)
{
    const weft_native_impl impl = {
        m->driver, 0, strcmp(m->driver, "cuda") ? tile_gemm_host : tile_gemm};
    size_t nt = m->nt, bytes = m->t * m->t * sizeof(float);
    weft_graph *g;
    int rc;

    if ((rc = weft_graph_create(m->rt, &g)) < 0)
        return rc;
    for (size_t i = 0; i < nt && rc == 0; i++)
        for (size_t j = 0; j < nt && rc == 0; j++)
            for (size_t k = 0; k < nt && rc == 0; k++) {
                weft_access_desc acc[3] = {
                    weft_access_range(m->a[i * nt + k], 0, bytes, WEFT_READ),
                    weft_access_range(m->b[k * nt + j], 0, bytes, WEFT_READ),
                    weft_access_range(m->c[i * nt + j], 0, bytes,
                                      k ? WEFT_READ_WRITE : WEFT_WRITE),
                };
                weft_node node;

                rc = weft_graph_add_native(g, &impl, 1, acc, 3, &jobs[k != 0],
                                           &node);
                /* Only enqueues on the stream, the same at every launch. */
                if (rc == 0 && capture)
                    rc = weft_graph_set_native_capture(g, node, 1);
                if (rc == 0 && (!place_auto || ngpus == 1))
                    rc = weft_graph_set_device(g, node,
                                               m->gpu[(i * nt + j) % ngpus]);
            }
    if (rc < 0) {
        weft_graph_destroy(g);
        return rc;
    }
    *out = g;
    return 0;
}

/* What graph_time saw of native graphs. */
typedef struct replayed {
    unsigned long long launches, native, replays;
} replayed;

/*
 * Launch once (the tiles move to the GPUs), then reps steady launches;
 * *rp says how many launches ran as native graphs and replayed them.
 */
static int graph_time(weft_graph *g, int reps, double *first, double *steady,
                      replayed *rp)
{
    weft_exec_stats st = {.size = sizeof st};
    weft_exec *e;
    double t0;
    int rc;

    if ((rc = weft_graph_instantiate(g, NULL, &e)) < 0)
        return rc;
    t0 = now();
    if ((rc = weft_exec_launch(e)) == 0)
        rc = weft_exec_wait(e);
    *first = now() - t0;
    t0 = now();
    for (int r = 0; rc == 0 && r < reps; r++)
        rc = weft_exec_launch(e);
    if (rc == 0)
        rc = weft_exec_wait(e);
    *steady = (now() - t0) / reps;
    if (rc == 0 && (rc = weft_exec_get_stats(e, &st)) == 0) {
        rp->launches = st.launches;
        rp->native = st.native_launches;
        rp->replays = st.native_replays;
    }
    weft_exec_destroy(e);
    return rc;
}

/* The largest |C - reference| over samples elements of the tiles. */
static int check_tiles(gemm *m, int samples, double *err)
{
    unsigned long long s = 12345;
    int rc = 0;

    *err = 0;
    for (int i = 0; i < samples && rc == 0; i++) {
        size_t r, c;
        float v;

        s = s * 6364136223846793005ull + 1442695040888963407ull;
        r = (size_t)(s >> 33) % m->n;
        c = (size_t)(s >> 13) % m->n;
        rc = weft_buffer_read(m->c[(r / m->t) * m->nt + c / m->t],
                              ((r % m->t) * m->t + c % m->t) * sizeof v, &v,
                              sizeof v);
        if (rc == 0)
            *err = fmax(*err, fabs((double)v - c_ref(m->n, r, c)));
    }
    return rc;
}

/*
 * Plain cuBLAS on the first GPU: the whole product as one cublasSgemm on
 * row-major n x n buffers, through the device addresses weft hands out.
 * *gflops 0 where it does not fit (3 n^2 floats beyond 90% of the GPU).
 */
static int baseline(gemm *m, int reps, int samples, double *gflops, double *err,
                    const char **what)
{
    size_t n = m->n, bytes = n * n * sizeof(float), rows = 64;
    weft_device_info info = {.size = sizeof info};
    weft_buffer *x[3] = {NULL, NULL, NULL};
    weft_device_address addr[3];
    cublas_handle h = NULL;
    float *chunk = NULL, zero = 0, one = 1;
    unsigned long long s = 777;
    double t0 = now();
    int rc;

    *gflops = 0;
    *err = 0;
    if ((rc = weft_device_get_info(m->gpu[0], &info)) < 0)
        return rc;
    if (3.0 * (double)bytes > 0.9 * (double)info.global_mem || !m->context[0])
        return 0;
    chunk = malloc(rows * n * sizeof *chunk);
    if (!chunk)
        return WEFT_ENOMEM;
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = weft_buffer_create(m->rt, bytes, &x[i]);
    for (size_t r0 = 0; r0 < n && rc == 0; r0 += rows) {
        size_t nr = r0 + rows <= n ? rows : n - r0;

        for (int w = 0; w < 2 && rc == 0; w++) {
            for (size_t r = 0; r < nr; r++)
                for (size_t c = 0; c < n; c++)
                    chunk[r * n + c] = w ? b_at(r0 + r, c) : a_at(r0 + r, c);
            rc = weft_buffer_write(x[w], r0 * n * sizeof *chunk, chunk,
                                   nr * n * sizeof *chunk);
        }
    }
    for (int i = 0; i < 3 && rc == 0; i++)
        rc = weft_buffer_device_address(x[i], m->gpu[0], 0, WEFT_WHOLE,
                                        &addr[i]);
    *what = "plain cuBLAS";
    if (rc == 0 && (cublas.set_current(m->context[0]) != 0 ||
                    cublas.create(&h) != CUBLAS_SUCCESS))
        rc = WEFT_EDRIVER;
    /* Once to warm up, then timed; on the default stream. */
    for (int r = 0; rc == 0 && r <= reps; r++) {
        if (r == 1) {
            if (cublas.synchronize() != 0)
                rc = WEFT_EDRIVER;
            t0 = now();
        }
        if (cublas.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n,
                         &one, (const float *)(uintptr_t)addr[1].address,
                         (int)n, (const float *)(uintptr_t)addr[0].address,
                         (int)n, &zero, (float *)(uintptr_t)addr[2].address,
                         (int)n) != CUBLAS_SUCCESS)
            rc = WEFT_EDRIVER;
    }
    if (rc == 0 && cublas.synchronize() != 0)
        rc = WEFT_EDRIVER;
    if (rc == 0)
        *gflops = 2.0 * (double)n * (double)n * (double)n /
                  ((now() - t0) / reps) * 1e-9;
    if (h)
        cublas.destroy(h);
    /* The program wrote C on the GPU: weft's reads see it. */
    if (rc == 0)
        rc = weft_buffer_mark_device_written(x[2], m->gpu[0], 0, WEFT_WHOLE);
    for (int i = 0; i < samples && rc == 0; i++) {
        size_t r, c;
        float v;

        s = s * 6364136223846793005ull + 1442695040888963407ull;
        r = (size_t)(s >> 33) % n;
        c = (size_t)(s >> 13) % n;
        rc = weft_buffer_read(x[2], (r * n + c) * sizeof v, &v, sizeof v);
        if (rc == 0)
            *err = fmax(*err, fabs((double)v - c_ref(n, r, c)));
    }
    for (int i = 0; i < 3; i++)
        weft_buffer_destroy(x[i]);
    free(chunk);
    return rc;
}

int main(int argc, char **argv)
{
    size_t n = 4096, t = 1024;
    int reps = 3, samples = 256, json = 0, place_auto = 0, base = 1;
    int capture = 1, one = 1; /* one: the one-GPU run too */
    replayed r1 = {0, 0, 0}, rall = {0, 0, 0};
    const char *lib = NULL, *what = NULL, *driver = "cuda";
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    gemm m;
    tile_job jobs[2];
    weft_graph *g1 = NULL, *gall = NULL, *gend = NULL;
    weft_exec *eend = NULL;
    double first1 = 0, t1 = 0, firstall = 0, tall = 0, err1 = 0, errall = 0,
           cub = 0, errcub = 0, flops;
    float *scratch = NULL;
    char why[256];
    int rc = 0;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--n") && i + 1 < argc)
            n = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--tile") && i + 1 < argc)
            t = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
            samples = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--place") && i + 1 < argc)
            place_auto = !strcmp(argv[++i], "auto");
        else if (!strcmp(argv[i], "--cublas") && i + 1 < argc)
            lib = argv[++i];
        else if (!strcmp(argv[i], "--driver") && i + 1 < argc)
            driver = argv[++i];
        else if (!strcmp(argv[i], "--no-baseline"))
            base = 0;
        else if (!strcmp(argv[i], "--json"))
            json = 1;
        else if (!strcmp(argv[i], "--no-capture"))
            capture = 0;
        else if (!strcmp(argv[i], "--all-gpus-only"))
            one = base = 0;
        else {
            fprintf(stderr, "usage: cublas_gemm [--n N] [--tile T] [--reps R] "
                            "[--samples S] [--place rr|auto] [--no-baseline] "
                            "[--cublas PATH] [--json] [--driver host] "
                            "[--no-capture] [--all-gpus-only]\n");
            return 2;
        }
    }
    if (t == 0 || n == 0 || n % t || t > 46340 || n > 1u << 20 || reps < 1) {
        fprintf(stderr, "cublas_gemm: --n must be a multiple of --tile, "
                        "--reps at least 1\n");
        return 2;
    }
    memset(&m, 0, sizeof m);
    m.driver = strcmp(driver, "host") ? "cuda" : "host";
    m.n = n;
    m.t = t;
    m.nt = n / t;
    /* The GPUs only (WEFT_DEVICES may say otherwise). */
    o.devices = m.driver;
    if ((rc = weft_runtime_create(&m.rt, &o)) < 0) {
        printf("skipped: no CUDA device (%s)\n", weft_last_error());
        return 0;
    }
    for (unsigned i = 0; i < weft_runtime_device_count(m.rt) && m.ngpus < 64;
         i++) {
        weft_device_info info = {.size = sizeof info};
        const weft_device *d = weft_runtime_device(m.rt, i);

        if (weft_device_get_info(d, &info) == 0 &&
            !strcmp(info.driver, m.driver)) {
            pthread_mutex_init(&m.lock[m.ngpus], NULL);
            m.gpu[m.ngpus++] = d;
        }
    }
    if (m.ngpus == 0 ||
        (!strcmp(m.driver, "cuda") && cublas_load(lib, why, sizeof why) < 0)) {
        printf("skipped: no CUDA device (%s)\n",
               m.ngpus ? why : "weft found no CUDA GPU");
        weft_runtime_destroy(m.rt);
        return 0;
    }
    jobs[0] = (tile_job){&m, 0.0f};
    jobs[1] = (tile_job){&m, 1.0f};
    m.a = calloc(m.nt * m.nt, sizeof *m.a);
    m.b = calloc(m.nt * m.nt, sizeof *m.b);
    m.c = calloc(m.nt * m.nt, sizeof *m.c);
    scratch = malloc(t * t * sizeof *scratch);
    if (!m.a || !m.b || !m.c || !scratch) {
        rc = WEFT_ENOMEM;
        what = "allocating the tiles' table";
        goto out;
    }
    TRY(tiles_create(&m, scratch));
    flops = 2.0 * (double)n * (double)n * (double)n;

    if (one) {
        TRY(graph_build(&m, jobs, 1, 0, capture, &g1));
        TRY(graph_time(g1, reps, &first1, &t1, &r1));
        TRY(check_tiles(&m, samples, &err1));
    }
    TRY(graph_build(&m, jobs, m.ngpus, place_auto, capture, &gall));
    TRY(graph_time(gall, reps, &firstall, &tall, &rall));
    TRY(check_tiles(&m, samples, &errall));
    if (base && !strcmp(m.driver, "cuda"))
        TRY(baseline(&m, reps, samples, &cub, &errcub, &what));

    if (json) {
        printf("{\"n\": %zu, \"tile\": %zu, \"gpus\": %u, "
               "\"weft_1gpu_gflops\": %.1f, \"weft_all_gpus_gflops\": %.1f, "
               "\"cublas_1gpu_gflops\": %.1f, "
               "\"weft_1gpu_first_launch_s\": %.4f, "
               "\"weft_all_gpus_first_launch_s\": %.4f, "
               "\"ratio_weft_1gpu_to_cublas\": %.3f, "
               "\"ratio_weft_all_gpus_to_cublas\": %.3f, "
               "\"weft_1gpu_launches\": %llu, \"weft_1gpu_replayed\": %llu, "
               "\"weft_all_gpus_launches\": %llu, "
               "\"weft_all_gpus_replayed\": %llu, "
               "\"samples\": %d, \"max_abs_error\": %.3g}\n",
               n, t, m.ngpus, one ? flops / t1 * 1e-9 : 0, flops / tall * 1e-9,
               cub, first1, firstall, cub ? flops / t1 * 1e-9 / cub : 0,
               cub ? flops / tall * 1e-9 / cub : 0, r1.launches, r1.replays,
               rall.launches, rall.replays, samples,
               fmax(fmax(err1, errall), errcub));
    } else {
        printf("n: %zu elements\ntile: %zu elements\ngpus: %u devices (%s)\n",
               n, t, m.ngpus, m.driver);
        if (one)
            printf("weft_1gpu: %.1f GFLOP/s\n", flops / t1 * 1e-9);
        else
            printf("weft_1gpu: skipped (--all-gpus-only)\n");
        printf("weft_all_gpus: %.1f GFLOP/s\n", flops / tall * 1e-9);
        if (cub) {
            printf("cublas_1gpu: %.1f GFLOP/s\n", cub);
            printf("ratio_weft_1gpu_to_cublas: %.3f x\n",
                   flops / t1 * 1e-9 / cub);
            printf("ratio_weft_all_gpus_to_cublas: %.3f x\n",
                   flops / tall * 1e-9 / cub);
        } else {
            printf("cublas_1gpu: skipped (%s)\n",
                   !one                       ? "--all-gpus-only"
                   : !base                    ? "--no-baseline"
                   : strcmp(m.driver, "cuda") ? "no cuBLAS on the host driver"
                                              : "the matrices do not fit one "
                                                "GPU");
        }
        printf("weft_1gpu_first_launch: %.4f s\n", first1);
        printf("weft_all_gpus_first_launch: %.4f s\n", firstall);
        printf("weft_1gpu_replayed: %llu of %llu launches (%llu as native "
               "graphs)\n",
               r1.replays, r1.launches, r1.native);
        printf("weft_all_gpus_replayed: %llu of %llu launches (%llu as native "
               "graphs)\n",
               rall.replays, rall.launches, rall.native);
        printf("checked: %d samples per product\n", samples);
        printf("max_abs_error: %.3g\n", fmax(fmax(err1, errall), errcub));
    }
    if (fmax(fmax(err1, errall), errcub) > 1e-3) {
        fprintf(stderr, "cublas_gemm: WRONG result\n");
        rc = WEFT_EIO;
        what = "the check against the CPU reference";
    }

out:
    if (rc < 0 && what && strcmp(what, "the check against the CPU reference"))
        fprintf(stderr, "cublas_gemm: %s: %s\n  %s\n", what, weft_strerror(rc),
                weft_last_error());
    weft_graph_destroy(g1);
    weft_graph_destroy(gall);
    /* The handles go on their GPUs: one native node per GPU. */
    if (m.ngpus && !strcmp(m.driver, "cuda") &&
        weft_graph_create(m.rt, &gend) == 0) {
        const weft_native_impl impl = {"cuda", 0, handle_destroy};
        int ok = 1;

        for (unsigned i = 0; ok && i < m.ngpus; i++) {
            weft_node node;

            ok = weft_graph_add_native(gend, &impl, 1, NULL, 0, &m, &node) ==
                     0 &&
                 weft_graph_set_device(gend, node, m.gpu[i]) == 0;
        }
        if (ok && weft_graph_instantiate(gend, NULL, &eend) == 0 &&
            weft_exec_launch(eend) == 0)
            weft_exec_wait(eend);
        weft_exec_destroy(eend);
        weft_graph_destroy(gend);
    }
    for (size_t x = 0; m.a && x < m.nt * m.nt; x++) {
        weft_buffer_destroy(m.a[x]);
        weft_buffer_destroy(m.b[x]);
        weft_buffer_destroy(m.c[x]);
    }
    free(m.a);
    free(m.b);
    free(m.c);
    free(scratch);
    weft_runtime_destroy(m.rt);
    return rc < 0 ? 1 : 0;
}
