/*
 * The public-API fuzz target (fuzz_api.c) and its host kernels
 * (fuzz_kernels.c). Only include/weft.h is used: the target sees weft as a
 * program would.
 */
#ifndef WEFT_FUZZ_H
#define WEFT_FUZZ_H

#include <weft.h>

#include <stddef.h>
#include <stdint.h>

/*
 * The host kernels, all on bytes (uint8_t), each with its bound n as its
 * last parameter (U64): item i < n of dimension 0 is done once whatever the
 * group size, so the effect is known (fuzz_kernel_apply does it on the
 * model).
 *   affine  (x RW, u32 k, u64 n):            x[i] = x[i] * 3 + k
 *   setseq  (x W, i64 v, u64 n):             x[i] = v + i
 *   addcopy (y W, x R, f32 a, u64 n):        y[i] = x[i] + (int)a
 *   xorbytes(x RW, bytes{u32 m,u32 pad}, local 64, u64 n): x[i] ^= m
 */
enum { FUZZ_AFFINE, FUZZ_SETSEQ, FUZZ_ADDCOPY, FUZZ_XORBYTES, FUZZ_NKERNELS };

typedef struct fuzz_kernel_info {
    const char *name;
    unsigned nparams;
    const weft_param_type *params;
    const weft_access *modes; /* per buffer parameter, what it does */
} fuzz_kernel_info;

extern const fuzz_kernel_info fuzz_kernels[FUZZ_NKERNELS];
/* The module source: the host table of the kernels above. */
extern const weft_module_source fuzz_module_source;

/*
 * Apply kernel kid to the model: bufs[i] points at the model bytes of
 * buffer parameter i's range (def[i] at their "defined" marks), scalars as
 * the kernel receives them (by parameter index).
 */
void fuzz_kernel_apply(unsigned kid, uint8_t *const *bufs, uint8_t *const *def,
                       const weft_arg *args);

#endif
