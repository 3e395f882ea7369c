/*
 * The portable kernel dialect. One source, written with the names below,
 * compiles as OpenCL C and as CUDA C++: weft puts a prelude of definitions
 * in front of it for the target and compiles the result.
 *
 *   WEFT_KERNEL            before a kernel: __kernel / extern "C" __global__
 *   WEFT_FUNC              before a helper function called by kernels
 *   WEFT_GLOBAL            qualifier of a pointer to buffer memory
 *   WEFT_LOCAL             qualifier of a group-local array declared in a
 *                          kernel (fixed size; __local / __shared__)
 *   WEFT_CONSTANT          qualifier of read-only constant data
 *   weft_global_id(d)      index of this item in the grid, dimension d
 *   weft_local_id(d)       index of this item in its group
 *   weft_group_id(d)       index of this group
 *   weft_local_size(d)     items per group
 *   weft_num_groups(d)     groups in the grid
 *   weft_global_size(d)    items in the grid
 *   weft_barrier()         all items of the group wait; local and global
 *                          memory written before it is visible after it
 *   weft_atomic_add_i32(p, v), weft_atomic_add_u32(p, v)
 *                          atomic add on WEFT_GLOBAL memory, returns the old
 *   weft_i32 weft_u32 weft_i64 weft_u64 weft_f32 weft_f64
 *                          fixed-size scalar types (also use int, long,
 *                          float: long is 64 bits on both targets)
 * The index functions return long. Dynamic group-local memory (sized at
 * launch) is not part of the dialect: declare fixed-size WEFT_LOCAL arrays.
 */
#include "kcache.h"

#include <string.h>

static const char weft__prelude_opencl[] =
    "#define WEFT_OPENCL 1\n"
    "#define WEFT_KERNEL __kernel\n"
    "#define WEFT_FUNC inline\n"
    "#define WEFT_GLOBAL __global\n"
    "#define WEFT_LOCAL __local\n"
    "#define WEFT_CONSTANT __constant\n"
    "#define weft_global_id(d) ((long)get_global_id(d))\n"
    "#define weft_local_id(d) ((long)get_local_id(d))\n"
    "#define weft_group_id(d) ((long)get_group_id(d))\n"
    "#define weft_local_size(d) ((long)get_local_size(d))\n"
    "#define weft_num_groups(d) ((long)get_num_groups(d))\n"
    "#define weft_global_size(d) ((long)get_global_size(d))\n"
    "#define weft_barrier() barrier(CLK_LOCAL_MEM_FENCE | "
    "CLK_GLOBAL_MEM_FENCE)\n"
    "#define weft_atomic_add_i32(p, v) atomic_add((p), (v))\n"
    "#define weft_atomic_add_u32(p, v) atomic_add((p), (v))\n"
    "typedef int weft_i32;\n"
    "typedef uint weft_u32;\n"
    "typedef long weft_i64;\n"
    "typedef ulong weft_u64;\n"
    "typedef float weft_f32;\n"
    "#ifdef cl_khr_fp64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef double weft_f64;\n"
    "#endif\n";

static const char weft__prelude_cuda[] =
    "#define WEFT_CUDA 1\n"
    "#define WEFT_KERNEL extern \"C\" __global__\n"
    "#define WEFT_FUNC __device__ inline\n"
    "#define WEFT_GLOBAL\n"
    "#define WEFT_LOCAL __shared__\n"
    "#define WEFT_CONSTANT const\n"
    "__device__ inline unsigned weft__dim3(dim3 v, int d)\n"
    "{ return d == 0 ? v.x : d == 1 ? v.y : d == 2 ? v.z : 0u; }\n"
    "__device__ inline unsigned weft__uint3(uint3 v, int d)\n"
    "{ return d == 0 ? v.x : d == 1 ? v.y : d == 2 ? v.z : 0u; }\n"
    "#define weft_local_id(d) ((long)weft__uint3(threadIdx, (d)))\n"
    "#define weft_group_id(d) ((long)weft__uint3(blockIdx, (d)))\n"
    "#define weft_local_size(d) ((long)weft__dim3(blockDim, (d)))\n"
    "#define weft_num_groups(d) ((long)weft__dim3(gridDim, (d)))\n"
    "#define weft_global_id(d) (weft_group_id(d) * weft_local_size(d) + "
    "weft_local_id(d))\n"
    "#define weft_global_size(d) (weft_num_groups(d) * "
    "weft_local_size(d))\n"
    "#define weft_barrier() __syncthreads()\n"
    "#define weft_atomic_add_i32(p, v) atomicAdd((int *)(p), (int)(v))\n"
    "#define weft_atomic_add_u32(p, v) atomicAdd((unsigned *)(p), "
    "(unsigned)(v))\n"
    "typedef int weft_i32;\n"
    "typedef unsigned int weft_u32;\n"
    "typedef long long weft_i64;\n"
    "typedef unsigned long long weft_u64;\n"
    "typedef float weft_f32;\n"
    "typedef double weft_f64;\n";

int weft__portable_translate(const char *src, weft__source_kind target,
                             const char *name, char **out)
{
    char line[160];
    const char *prelude;
    size_t np, ns, nl;
    char *s;

    /* The name as the compilers' messages give the file: a C string. */
    {
        size_t k = 0;

        if (!name || !name[0])
            name = "portable";
        k = (size_t)snprintf(line, sizeof line, "#line 1 \"");
        for (; *name && k < sizeof line - 4; name++)
            line[k++] =
                *name == '"' || *name == '\\' || (unsigned char)*name < ' '
                    ? '_'
                    : *name;
        memcpy(line + k, "\"\n", 3);
        nl = k + 2;
    }
    if (!src || !out)
        return weft__error(WEFT_EINVAL, "portable source is NULL");
    if (target == WEFT__SRC_OPENCL_C)
        prelude = weft__prelude_opencl;
    else if (target == WEFT__SRC_CUDA_CXX)
        prelude = weft__prelude_cuda;
    else
        return weft__error(WEFT_EINVAL,
                           "portable kernels compile to OpenCL C or CUDA "
                           "C++ only (asked for source kind %d)",
                           (int)target);
    np = strlen(prelude);
    ns = strlen(src);
    s = weft__malloc(np + nl + ns + 1);
    if (!s)
        return weft__error(WEFT_ENOMEM, "portable kernel: out of memory");
    memcpy(s, prelude, np);
    memcpy(s + np, line, nl);
    memcpy(s + np + nl, src, ns + 1);
    *out = s;
    return 0;
}
