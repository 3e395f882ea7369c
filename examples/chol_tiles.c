/*
 * The tile operations of the tiled Cholesky examples (chol_tiles.h).
 */
#include "chol_tiles.h"

#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef WEFT_HAVE_OPENBLAS
#include <cblas.h>
#include <lapacke.h>
#endif

/* ---- cuSOLVER, cuBLAS and libcuda, loaded at run time -------------------- */

chol_cuda chol_cu;

void *chol_open_first(const char *const *names, size_t n)
{
    void *lib = NULL;

    for (size_t i = 0; !lib && i < n; i++)
        lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    return lib;
}

#define SYM(lib, field, name)                                                  \
    (*(void **)&chol_cu.field = dlsym(chol_cu.lib, name))

int chol_cuda_load(char *why, size_t size)
{
    static const char *const solver[] = {
        "libcusolver.so.12",
        "libcusolver.so.11",
        "libcusolver.so.10",
        "libcusolver.so",
        "/usr/local/cuda/lib64/libcusolver.so.12",
        "/usr/local/cuda/lib64/libcusolver.so.11",
        "/usr/local/cuda/lib64/libcusolver.so",
    };
    static const char *const blas[] = {
        "libcublas.so.13",
        "libcublas.so.12",
        "libcublas.so.11",
        "libcublas.so",
        "/usr/local/cuda/lib64/libcublas.so.13",
        "/usr/local/cuda/lib64/libcublas.so.12",
        "/usr/local/cuda/lib64/libcublas.so",
    };
    static const char *const cuda[] = {"libcuda.so.1", "libcuda.so"};

    chol_cu.solver_lib =
        chol_open_first(solver, sizeof solver / sizeof *solver);
    chol_cu.blas_lib = chol_open_first(blas, sizeof blas / sizeof *blas);
    chol_cu.cuda_lib = chol_open_first(cuda, sizeof cuda / sizeof *cuda);
    if (!chol_cu.solver_lib || !chol_cu.blas_lib || !chol_cu.cuda_lib) {
        snprintf(why, size, "no %s",
                 !chol_cu.solver_lib ? "libcusolver"
                 : !chol_cu.blas_lib ? "libcublas"
                                     : "libcuda");
        return -1;
    }
    if (!SYM(solver_lib, dn_create, "cusolverDnCreate") ||
        !SYM(solver_lib, dn_destroy, "cusolverDnDestroy") ||
        !SYM(solver_lib, dn_set_stream, "cusolverDnSetStream") ||
        !SYM(solver_lib, potrf_size, "cusolverDnDpotrf_bufferSize") ||
        !SYM(solver_lib, potrf, "cusolverDnDpotrf") ||
        !SYM(blas_lib, blas_create, "cublasCreate_v2") ||
        !SYM(blas_lib, blas_destroy, "cublasDestroy_v2") ||
        !SYM(blas_lib, blas_set_stream, "cublasSetStream_v2") ||
        !SYM(blas_lib, trsm, "cublasDtrsm_v2") ||
        !SYM(blas_lib, syrk, "cublasDsyrk_v2") ||
        !SYM(blas_lib, gemm, "cublasDgemm_v2") ||
        !SYM(cuda_lib, set_current, "cuCtxSetCurrent") ||
        !SYM(cuda_lib, mem_alloc, "cuMemAlloc_v2") ||
        !SYM(cuda_lib, mem_free, "cuMemFree_v2") ||
        !SYM(cuda_lib, memcpy_dtoh, "cuMemcpyDtoH_v2") ||
        !SYM(cuda_lib, memcpy2d_async, "cuMemcpy2DAsync_v2") ||
        !SYM(cuda_lib, memcpy_dtod, "cuMemcpyDtoD_v2") ||
        !SYM(cuda_lib, synchronize, "cuCtxSynchronize")) {
        snprintf(why, size, "cuSOLVER, cuBLAS or libcuda lacks an entry point");
        return -1;
    }
    return 0;
}

/*
 * Row-major tiles of b x b doubles, ld doubles from one row to the next.
 * potrf_tile runs as one work-group (any size): step k takes the square
 * root of the pivot, scales column k below it, then updates the trailing
 * lower triangle row by row, a barrier between the three. The others have
 * one item per row (trsm) or per element (x: column, y: row).
 */
const char chol_tile_source[] =
    "WEFT_KERNEL void potrf_tile(WEFT_GLOBAL double *a, unsigned ld,\n"
    "                            unsigned b)\n"
    "{\n"
    "    long t = weft_local_id(0), nt = weft_local_size(0);\n"
    "    for (long k = 0; k < (long)b; k++) {\n"
    "        if (t == 0)\n"
    "            a[k * ld + k] = sqrt(a[k * ld + k]);\n"
    "        weft_barrier();\n"
    "        for (long r = k + 1 + t; r < (long)b; r += nt)\n"
    "            a[r * ld + k] /= a[k * ld + k];\n"
    "        weft_barrier();\n"
    "        for (long r = k + 1 + t; r < (long)b; r += nt)\n"
    "            for (long c = k + 1; c <= r; c++)\n"
    "                a[r * ld + c] -= a[r * ld + k] * a[c * ld + k];\n"
    "        weft_barrier();\n"
    "    }\n"
    "}\n"
    "WEFT_KERNEL void trsm_tile(WEFT_GLOBAL const double *l,\n"
    "                           WEFT_GLOBAL double *x, unsigned ld,\n"
    "                           unsigned b)\n"
    "{\n"
    "    long r = weft_global_id(0);\n"
    "    if (r >= (long)b)\n"
    "        return;\n"
    "    for (long c = 0; c < (long)b; c++) {\n"
    "        double s = x[r * ld + c];\n"
    "        for (long p = 0; p < c; p++)\n"
    "            s -= l[c * ld + p] * x[r * ld + p];\n"
    "        x[r * ld + c] = s / l[c * ld + c];\n"
    "    }\n"
    "}\n"
    "WEFT_KERNEL void syrk_tile(WEFT_GLOBAL const double *x,\n"
    "                           WEFT_GLOBAL double *c, unsigned ld,\n"
    "                           unsigned b)\n"
    "{\n"
    "    long j = weft_global_id(0), i = weft_global_id(1);\n"
    "    double s = 0;\n"
    "    if (i >= (long)b || j > i)\n"
    "        return;\n"
    "    for (long p = 0; p < (long)b; p++)\n"
    "        s += x[i * ld + p] * x[j * ld + p];\n"
    "    c[i * ld + j] -= s;\n"
    "}\n"
    "WEFT_KERNEL void gemm_tile(WEFT_GLOBAL const double *x,\n"
    "                           WEFT_GLOBAL const double *y,\n"
    "                           WEFT_GLOBAL double *c, unsigned ld,\n"
    "                           unsigned b)\n"
    "{\n"
    "    long j = weft_global_id(0), i = weft_global_id(1);\n"
    "    double s = 0;\n"
    "    if (i >= (long)b || j >= (long)b)\n"
    "        return;\n"
    "    for (long p = 0; p < (long)b; p++)\n"
    "        s += x[i * ld + p] * y[j * ld + p];\n"
    "    c[i * ld + j] -= s;\n"
    "}\n"
    "WEFT_KERNEL void copy_tile(WEFT_GLOBAL const double *src,\n"
    "                           WEFT_GLOBAL double *dst, unsigned ld,\n"
    "                           unsigned b)\n"
    "{\n"
    "    long j = weft_global_id(0), i = weft_global_id(1);\n"
    "    if (i < (long)b && j < (long)b)\n"
    "        dst[i * ld + j] = src[i * ld + j];\n"
    "}\n";

static unsigned dev_index(const chol_tiles *m, const weft_device *dev)
{
    for (unsigned i = 0; i < m->ndev; i++)
        if (m->dev[i] == dev)
            return i;
    return 0;
}

#define ADDR(ctx, i) ((double *)(uintptr_t)weft_native_address((ctx), (i)))

/*
 * CUDA. The row-major lower tile L is the column-major upper tile U = L^T,
 * and a row-major tile X is the column-major X^T; so, column-major:
 *   POTRF  U^T U = A(k,k), upper
 *   TRSM   X(i,k) = U^-T X(i,k)            (left, upper, transposed)
 *   SYRK   A(i,i) -= X(i,k)^T X(i,k)       (upper, transposed)
 *   GEMM   A(i,j) -= X(j,k)^T X(i,k)
 */
static int cu_call(const weft_native_ctx *ctx, chol_tiles *m, int op)
{
    chol_gpu *g = &m->gpu[dev_index(m, weft_native_device(ctx))];
    void *stream = weft_native_queue(ctx);
    int b = (int)m->b, ld = (int)m->ld, rc;
    const double one = 1.0, minus_one = -1.0;

    if (op == OP_COPY) {
        cu_memcpy2d c = {0};

        c.src_type = c.dst_type = CU_MEMORYTYPE_DEVICE;
        c.src_device = weft_native_address(ctx, 0);
        c.dst_device = weft_native_address(ctx, 1);
        c.src_pitch = c.dst_pitch = m->ld * sizeof(double);
        c.width_bytes = m->b * sizeof(double);
        c.height = m->b;
        return chol_cu.memcpy2d_async(&c, stream);
    }
    pthread_mutex_lock(&g->lock);
    if (op == OP_POTRF) {
        rc = chol_cu.dn_set_stream(g->solver, stream);
        if (rc == 0)
            rc = chol_cu.potrf(g->solver, CUBLAS_FILL_MODE_UPPER, b,
                               ADDR(ctx, 0), ld, (double *)(uintptr_t)g->work,
                               g->lwork, (int *)(uintptr_t)g->info);
    } else {
        cu_handle h = NULL;
        unsigned x = 0;

        while (x < g->nblas && g->blas[x].stream != stream)
            x++;
        if (x < g->nblas) {
            h = g->blas[x].handle;
            rc = 0;
        } else if (x == CHOL_MAX_STREAMS) {
            rc = -1; /* more streams than weft makes */
        } else if ((rc = chol_cu.blas_create(&h)) == 0) {
            if ((rc = chol_cu.blas_set_stream(h, stream)) == 0) {
                g->blas[g->nblas].stream = stream;
                g->blas[g->nblas++].handle = h;
            } else {
                chol_cu.blas_destroy(h);
            }
        }
        if (rc == 0 && op == OP_TRSM)
            rc = chol_cu.trsm(h, CUBLAS_SIDE_LEFT, CUBLAS_FILL_MODE_UPPER,
                              CUBLAS_OP_T, CUBLAS_DIAG_NON_UNIT, b, b, &one,
                              ADDR(ctx, 0), ld, ADDR(ctx, 1), ld);
        else if (rc == 0 && op == OP_SYRK)
            rc = chol_cu.syrk(h, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_T, b, b,
                              &minus_one, ADDR(ctx, 0), ld, &one, ADDR(ctx, 1),
                              ld);
        else if (rc == 0)
            rc = chol_cu.gemm(h, CUBLAS_OP_T, CUBLAS_OP_N, b, b, b, &minus_one,
                              ADDR(ctx, 1), ld, ADDR(ctx, 0), ld, &one,
                              ADDR(ctx, 2), ld);
    }
    pthread_mutex_unlock(&g->lock);
    return rc;
}

static int cu_potrf(const weft_native_ctx *c, void *m)
{
    return cu_call(c, m, OP_POTRF);
}
static int cu_trsm(const weft_native_ctx *c, void *m)
{
    return cu_call(c, m, OP_TRSM);
}
static int cu_syrk(const weft_native_ctx *c, void *m)
{
    return cu_call(c, m, OP_SYRK);
}
static int cu_gemm(const weft_native_ctx *c, void *m)
{
    return cu_call(c, m, OP_GEMM);
}
static int cu_copy(const weft_native_ctx *c, void *m)
{
    return cu_call(c, m, OP_COPY);
}

/*
 * The host driver: OpenBLAS on the tiles in place (CBLAS takes row-major;
 * LAPACKE's row-major form would transpose a copy, so POTRF is the
 * column-major upper one, as on CUDA). The work is done when they return.
 */
#define PTR(ctx, i) ((double *)weft_native_ptr((ctx), (i)))
#ifdef WEFT_HAVE_OPENBLAS
static int host_potrf(const weft_native_ctx *c, void *user)
{
    const chol_tiles *m = user;

    return (int)LAPACKE_dpotrf_work(LAPACK_COL_MAJOR, 'U', (int)m->b, PTR(c, 0),
                                    (int)m->ld);
}
static int host_trsm(const weft_native_ctx *c, void *user)
{
    const chol_tiles *m = user;

    cblas_dtrsm(CblasRowMajor, CblasRight, CblasLower, CblasTrans, CblasNonUnit,
                (int)m->b, (int)m->b, 1.0, PTR(c, 0), (int)m->ld, PTR(c, 1),
                (int)m->ld);
    return 0;
}
static int host_syrk(const weft_native_ctx *c, void *user)
{
    const chol_tiles *m = user;

    cblas_dsyrk(CblasRowMajor, CblasLower, CblasNoTrans, (int)m->b, (int)m->b,
                -1.0, PTR(c, 0), (int)m->ld, 1.0, PTR(c, 1), (int)m->ld);
    return 0;
}
static int host_gemm(const weft_native_ctx *c, void *user)
{
    const chol_tiles *m = user;

    cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)m->b, (int)m->b,
                (int)m->b, -1.0, PTR(c, 0), (int)m->ld, PTR(c, 1), (int)m->ld,
                1.0, PTR(c, 2), (int)m->ld);
    return 0;
}
#endif
static int host_copy(const weft_native_ctx *c, void *user)
{
    const chol_tiles *m = user;
    const double *src = PTR(c, 0);
    double *dst = PTR(c, 1);

    for (size_t r = 0; r < m->b; r++)
        memcpy(dst + r * m->ld, src + r * m->ld, m->b * sizeof *dst);
    return 0;
}

weft_native_fn *chol_native_fn(const char *driver, int op)
{
    static weft_native_fn *const cuda_fns[] = {cu_potrf, cu_trsm, cu_syrk,
                                               cu_gemm, cu_copy};
#ifdef WEFT_HAVE_OPENBLAS
    static weft_native_fn *const host_fns[] = {host_potrf, host_trsm, host_syrk,
                                               host_gemm, host_copy};
#else
    static weft_native_fn *const host_fns[] = {NULL, NULL, NULL, NULL,
                                               host_copy};
#endif
    return strcmp(driver, "cuda") ? host_fns[op] : cuda_fns[op];
}

/* Symmetric, entries in [-1, 1) off the diagonal, n on it: diagonally
 * dominant enough to be SPD and well conditioned, and cheap to make. */
double chol_a_at(size_t n, size_t r, size_t c)
{
    uint64_t h;

    if (r == c)
        return (double)n;
    h = (uint64_t)(r > c ? r : c) * 0x9e3779b97f4a7c15ull ^
        (uint64_t)(r > c ? c : r) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (double)(h >> 11) * 0x1.0p-52 - 1.0;
}

/* Where element (r, c) of the matrix lies in A's (and A0's) doubles. */
size_t chol_at(const chol_tiles *m, size_t r, size_t c)
{
    if (!m->tiled)
        return r * m->n + c;
    return ((r / m->b) * m->nt + c / m->b) * m->b * m->b + (r % m->b) * m->b +
           c % m->b;
}

/* Elements (r, 0 .. len) of x, contiguous in out. */
static const double *row_of(const chol_tiles *m, const double *x, size_t r,
                            size_t len, double *out)
{
    if (!m->tiled)
        return x + r * m->n;
    for (size_t c = 0; c < len; c += m->b) {
        size_t k = len - c < m->b ? len - c : m->b;

        memcpy(out + c, x + chol_at(m, r, c), k * sizeof *out);
    }
    return out;
}

static double dot(const double *x, const double *y, size_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t p = 0;

    for (; p + 4 <= n; p += 4) {
        s0 += x[p] * y[p];
        s1 += x[p + 1] * y[p + 1];
        s2 += x[p + 2] * y[p + 2];
        s3 += x[p + 3] * y[p + 3];
    }
    for (; p < n; p++)
        s0 += x[p] * y[p];
    return (s0 + s1) + (s2 + s3);
}

/*
 * ||A - L L^T||_F / ||A||_F over rows (all rows, or rows spread evenly):
 * element (r, c), c <= r, counted twice off the diagonal (both triangles).
 */
double chol_residual(const chol_tiles *m, const double *l, const double *a0,
                     size_t rows)
{
    size_t n = m->n, step = rows >= n ? 1 : n / rows;
    double num = 0, den = 0;
    double *ra = m->tiled ? malloc(2 * n * sizeof *ra) : NULL;

    if (m->tiled && !ra)
        return INFINITY;
    for (size_t r = step - 1; r < n; r += step) {
        const double *lr = row_of(m, l, r, r + 1, ra);

        for (size_t c = 0; c <= r; c++) {
            double a = a0[chol_at(m, r, c)], w = c == r ? 1 : 2;
            double d = a - dot(lr, row_of(m, l, c, c + 1, ra + n), c + 1);

            num += w * d * d;
            den += w * a * a;
        }
    }
    free(ra);
    return sqrt(num) / sqrt(den);
}

/*
 * CUDA: handles, POTRF's workspace for b x b tiles and devInfo, per GPU,
 * made here (outside any graph); the workspace grows with b.
 */
int chol_gpu_setup(chol_tiles *m, weft_runtime *rt)
{
    for (unsigned x = 0; x < m->ndev; x++) {
        chol_gpu *g = &m->gpu[x];
        int lwork = 0, rc;

        if (!g->context &&
            (rc = weft_device_native(rt, m->dev[x], &g->context, NULL)) < 0)
            return rc;
        if (chol_cu.set_current(g->context) != 0 ||
            (!g->solver && chol_cu.dn_create(&g->solver) != 0) ||
            (!g->info && chol_cu.mem_alloc(&g->info, sizeof(int)) != 0) ||
            /* (the matrix is not read: any device address will do) */
            chol_cu.potrf_size(g->solver, CUBLAS_FILL_MODE_UPPER, (int)m->b,
                               (double *)(uintptr_t)g->info, (int)m->ld,
                               &lwork) != 0)
            return WEFT_EDRIVER;
        if (lwork > g->lwork || !g->work) {
            if (g->work)
                chol_cu.mem_free(g->work);
            g->work = 0;
            g->lwork = lwork > 1 ? lwork : 1;
            if (chol_cu.mem_alloc(&g->work,
                                  (size_t)g->lwork * sizeof(double)) != 0)
                return WEFT_EDRIVER;
        }
    }
    return 0;
}

/* The last POTRF's devInfo of every GPU: 0 where each succeeded. */
int chol_gpu_info(chol_tiles *m)
{
    int bad = 0;

    for (unsigned x = 0; x < m->ndev; x++) {
        int info = 0;

        if (m->gpu[x].info && chol_cu.set_current(m->gpu[x].context) == 0 &&
            chol_cu.memcpy_dtoh(&info, m->gpu[x].info, sizeof info) == 0 &&
            info)
            bad = info;
    }
    return bad;
}

/*
 * The cuBLAS handles of streams an executable graph used, once it is
 * gone: the next one makes streams of its own (so the table would fill
 * up over many graphs, and a new stream may reuse an old one's address).
 */
void chol_gpu_forget_streams(chol_tiles *m)
{
    for (unsigned x = 0; x < m->ndev; x++) {
        chol_gpu *g = &m->gpu[x];

        pthread_mutex_lock(&g->lock);
        if (g->context && chol_cu.set_current(g->context) == 0)
            for (unsigned h = 0; h < g->nblas; h++)
                chol_cu.blas_destroy(g->blas[h].handle);
        g->nblas = 0;
        pthread_mutex_unlock(&g->lock);
    }
}

void chol_gpu_teardown(chol_tiles *m)
{
    for (unsigned x = 0; x < m->ndev; x++) {
        chol_gpu *g = &m->gpu[x];

        if (!g->context || chol_cu.set_current(g->context) != 0)
            continue;
        if (g->solver)
            chol_cu.dn_destroy(g->solver);
        for (unsigned h = 0; h < g->nblas; h++)
            chol_cu.blas_destroy(g->blas[h].handle);
        if (g->work)
            chol_cu.mem_free(g->work);
        if (g->info)
            chol_cu.mem_free(g->info);
    }
}
