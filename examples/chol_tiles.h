/*
 * The tile operations of the tiled Cholesky examples (examples/cholesky.c,
 * one process over the devices of a driver; examples/mpi_cholesky.c, over
 * MPI ranks): cuSOLVER, cuBLAS and libcuda loaded at run time, the native
 * tile functions (cuSOLVER/cuBLAS on CUDA, LAPACKE/CBLAS of OpenBLAS on
 * the host driver, where built with WEFT_HAVE_OPENBLAS), the portable
 * tile kernels, the test matrix and the residual.
 *
 * Tiles are b x b doubles of a ROW-MAJOR matrix with ld doubles a row (or
 * contiguous tiles: chol_tiles.tiled); every native function takes a
 * chol_tiles as its user data: POTRF (the tile, read-write), TRSM (L(k,k),
 * the tile), SYRK (L(i,k), the tile), GEMM (L(i,k), L(j,k), the tile),
 * COPY (the source tile, the destination tile).
 */
#ifndef CHOL_TILES_H
#define CHOL_TILES_H

#include <weft.h>

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define CHOL_MAX_DEVICES 64

/* The few types, values and entry points used (cublas_api.h,
 * cusolverDn.h, cuda.h). */
typedef void *cu_handle;
enum {
    CUBLAS_FILL_MODE_UPPER = 1,
    CUBLAS_OP_N = 0,
    CUBLAS_OP_T = 1,
    CUBLAS_SIDE_LEFT = 0,
    CUBLAS_DIAG_NON_UNIT = 0,
    CU_MEMORYTYPE_DEVICE = 2,
};
typedef struct cu_memcpy2d { /* CUDA_MEMCPY2D */
    size_t src_x_bytes, src_y;
    int src_type;
    const void *src_host;
    uint64_t src_device;
    void *src_array;
    size_t src_pitch;
    size_t dst_x_bytes, dst_y;
    int dst_type;
    void *dst_host;
    uint64_t dst_device;
    void *dst_array;
    size_t dst_pitch;
    size_t width_bytes, height;
} cu_memcpy2d;

typedef struct chol_cuda {
    void *solver_lib, *blas_lib, *cuda_lib;
    int (*dn_create)(cu_handle *);
    int (*dn_destroy)(cu_handle);
    int (*dn_set_stream)(cu_handle, void *);
    int (*potrf_size)(cu_handle, int, int, double *, int, int *);
    int (*potrf)(cu_handle, int, int, double *, int, double *, int, int *);
    int (*blas_create)(cu_handle *);
    int (*blas_destroy)(cu_handle);
    int (*blas_set_stream)(cu_handle, void *);
    int (*trsm)(cu_handle, int, int, int, int, int, int, const double *,
                const double *, int, double *, int);
    int (*syrk)(cu_handle, int, int, int, int, const double *, const double *,
                int, const double *, double *, int);
    int (*gemm)(cu_handle, int, int, int, int, int, const double *,
                const double *, int, const double *, int, const double *,
                double *, int);
    int (*set_current)(void *ctx);
    int (*mem_alloc)(uint64_t *ptr, size_t bytes);
    int (*mem_free)(uint64_t ptr);
    int (*memcpy_dtoh)(void *dst, uint64_t src, size_t bytes);
    int (*memcpy2d_async)(const cu_memcpy2d *copy, void *stream);
    int (*memcpy_dtod)(uint64_t dst, uint64_t src, size_t bytes);
    int (*synchronize)(void);
} chol_cuda;
extern chol_cuda chol_cu;

#define CHOL_MAX_STREAMS 32

/*
 * One GPU's library state. POTRFs follow each other (each waits for the
 * last one's trailing update), so one cuSOLVER handle, workspace and
 * devInfo serve them all. TRSM, SYRK and GEMM run on several of weft's
 * streams at once: one cuBLAS handle per stream (made at its first call,
 * bound to that stream), so that no two streams share a handle's
 * workspace.
 */
typedef struct chol_gpu {
    void *context; /* the CUcontext weft uses for the GPU */
    cu_handle solver;
    uint64_t work, info; /* POTRF's workspace (lwork doubles) and devInfo */
    int lwork;
    unsigned nblas;
    struct {
        void *stream;
        cu_handle handle;
    } blas[CHOL_MAX_STREAMS];
    pthread_mutex_t lock; /* all of the above, from several weft threads */
} chol_gpu;

enum { OP_POTRF, OP_TRSM, OP_SYRK, OP_GEMM, OP_COPY, OP_COUNT };

/*
 * The tiles and the devices the native functions run on: n x n in b x b
 * tiles (nt a side), ld doubles a row; dev[0, ndev) the driver's devices
 * (gpu[x] the state of dev[x] on CUDA).
 */
typedef struct chol_tiles {
    const char *driver;
    size_t n, b, nt, ld;
    int tiled; /* tile by tile: tile (i, j) at (i * nt + j) b^2, ld = b */
    unsigned ndev;
    const weft_device *dev[CHOL_MAX_DEVICES];
    chol_gpu gpu[CHOL_MAX_DEVICES];
} chol_tiles;

/* The first of names that dlopen opens (RTLD_NOW | RTLD_LOCAL), or NULL. */
void *chol_open_first(const char *const *names, size_t n);
/* Load cuSOLVER, cuBLAS and libcuda (chol_cu); -1 with why where not. */
int chol_cuda_load(char *why, size_t size);
/* The portable tile kernels potrf_tile, trsm_tile, syrk_tile, gemm_tile,
 * copy_tile (arguments: the tiles as above, then ld and b as unsigned). */
extern const char chol_tile_source[];
/* The native function of op for driver ("cuda", else the host's: NULL
 * where built without OpenBLAS, except OP_COPY). */
weft_native_fn *chol_native_fn(const char *driver, int op);

/* Element (r, c) of the test matrix: symmetric, diagonally dominant. */
double chol_a_at(size_t n, size_t r, size_t c);
/* Where element (r, c) lies in the matrix's doubles. */
size_t chol_at(const chol_tiles *m, size_t r, size_t c);
/*
 * ||A0 - L L^T||_F / ||A0||_F, L the lower triangle of l, over rows (all
 * rows, or rows spread evenly), both triangles counted.
 */
double chol_residual(const chol_tiles *m, const double *l, const double *a0,
                     size_t rows);

/* CUDA: handles, POTRF's workspace and devInfo per GPU of m (outside any
 * graph; the workspace grows with b). */
int chol_gpu_setup(chol_tiles *m, weft_runtime *rt);
/* The last POTRF's devInfo of every GPU: 0 where each succeeded. */
int chol_gpu_info(chol_tiles *m);
/* Forget the cuBLAS handles of the streams of an exec that is gone. */
void chol_gpu_forget_streams(chol_tiles *m);
void chol_gpu_teardown(chol_tiles *m);

#endif
