/*
 * The test kernels, in two sets.
 *
 * The conformance kernels, written once per source kind (driver level:
 * weft__module_source) so that each driver runs the same computation:
 *
 *   iota(buffer out, u32 add, u64 n)            out[i] = i + add
 *   axpy(buffer y, buffer x, f32 a, u64 n)      y[i] = a * x[i] + y[i]
 *   iota2d(buffer out, u32 width, u32 height)   out[y * width + x] =
 *                                                   (y << 16) | x
 *   advance(buffer x, u32 k, u64 n)             x[i] = x[i] * 3 + k
 *
 * Buffers hold u32 (iota, iota2d, advance) or f32 (axpy) elements; i is the
 * global item index in dimension 0 (x, y: dimensions 0 and 1). advance is not
 * commutative with itself, so a result shows whether launches ran in order.
 *
 * The graph kernels, one public-API module (wt_kernels_module) holding host
 * C functions (host and sim devices) and the portable dialect (OpenCL, CUDA):
 *
 *   scale(buffer f32 x, f32 a, i64 n)              x[i] *= a
 *   advance(buffer u32 x, u32 k, i64 n)            x[i] = x[i] * 3 + k
 *   addone(buffer u32 x, i64 n)                    x[i] += 1
 *   twice(buffer u32 dst, buffer u32 src, i64 n)   dst[i] = 2 * src[i]
 */
#ifndef WT_KERNELS_H
#define WT_KERNELS_H

#include "drivers/driver.h"
#include "wt_devices.h"

/*
 * The module source of the kernels above for a driver ("host", "sim",
 * "opencl", "cuda"). WEFT_ENOTSUP if the tests have none for that driver.
 */
int wt_kernels_source(const char *driver, weft__module_source *src);

/*
 * A well-formed source of a kind the driver does not take (module_create
 * must answer WEFT_ENOTSUP).
 */
int wt_kernels_foreign_source(const char *driver, weft__module_source *src);

/*
 * A source of the driver's own kind that does not compile (module_create
 * must answer WEFT_EBUILD); WEFT_ENOTSUP where the driver compiles nothing
 * (host, sim).
 */
int wt_kernels_broken_source(const char *driver, weft__module_source *src);

/* The graph kernels as one module of rt; weft_module_create's codes. */
int wt_kernels_module(weft_runtime *rt, weft_module **mod);

/*
 * A suite's usual setup: the runtime from the environment (wt_devices_open
 * into *devs), the graph kernels' module (*mod) and its kernel `name`
 * (*k), then a line naming device 0; 0, or -1 with the error printed.
 * wt_kernels_teardown destroys the module and the runtime.
 */
int wt_kernels_setup(wt_devices *devs, weft_module **mod, const char *name,
                     weft_kernel **k);
int wt_kernels_teardown(wt_devices *devs, weft_module *mod);

/*
 * f32 kernels as host functions with their parameter lists, for tests that
 * make their own host table (their own kernel names and sim cost hooks):
 *
 *   wt_host_fill(buffer y, f32 v, i64 n)               y[i] = v
 *   wt_host_affine(buffer y, buffer x, i64 n)          y[i] = 2 * x[i] + 1
 *   wt_host_sum(buffer w, buffer y, buffer z, i64 n)   w[i] = y[i] + z[i]
 *   wt_host_addone(buffer x, i64 n)                    x[i] += 1
 */
void wt_host_fill(const weft_host_group *g, void *const *args);
void wt_host_affine(const weft_host_group *g, void *const *args);
void wt_host_sum(const weft_host_group *g, void *const *args);
void wt_host_addone(const weft_host_group *g, void *const *args);
extern const weft_param_type wt_fill_params[3], wt_affine_params[3],
    wt_sum_params[4], wt_addone_params[2];

/* What the kernels compute (advance: both sets), on the host, for checking
 * results. */
static inline uint32_t wt_iota2d_value(uint32_t x, uint32_t y)
{
    return (y << 16) | x;
}

static inline uint32_t wt_advance_value(uint32_t x, uint32_t k)
{
    return x * 3u + k;
}

#endif /* WT_KERNELS_H */
