/*
 * Kernels of the graph and executor tests, as host C functions (host and
 * sim devices) and in the portable dialect (OpenCL, CUDA), in one module:
 *
 *   scale(buffer f32 x, f32 a, i64 n)        x[i] *= a
 *   advance(buffer u32 x, u32 k, i64 n)      x[i] = x[i] * 3 + k
 *   addone(buffer u32 x, i64 n)              x[i] += 1
 *   twice(buffer u32 dst, buffer u32 src, i64 n)   dst[i] = 2 * src[i]
 *
 * advance does not commute with itself: a result shows the order.
 */
#ifndef GT_KERNELS_H
#define GT_KERNELS_H

#include "weft.h"

int gt_module(weft_runtime *rt, weft_module **mod);

static inline uint32_t gt_advance(uint32_t x, uint32_t k)
{
    return x * 3u + k;
}

#endif /* GT_KERNELS_H */
