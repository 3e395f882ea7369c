/*
 * cuMemcpy2D_v2's argument (CUDA_MEMCPY2D), as the CUDA Driver API lays it
 * out: for the test libraries that stand in for a CUDA-aware MPI
 * (cuda_aware_shim.c) and for libcuda (fake_cuda.c), and the test of the
 * two (test_shim.c), none of which includes CUDA's headers.
 */
#ifndef WT_CU_COPY2D_H
#define WT_CU_COPY2D_H

#include <stddef.h>
#include <stdint.h>

typedef struct wt_cu_copy2d {
    size_t src_x, src_y;
    int src_type;
    const void *src_host;
    uint64_t src_device;
    void *src_array;
    size_t src_pitch;
    size_t dst_x, dst_y;
    int dst_type;
    void *dst_host;
    uint64_t dst_device;
    void *dst_array;
    size_t dst_pitch;
    size_t width, height;
} wt_cu_copy2d;

#endif /* WT_CU_COPY2D_H */
