/*
 * The oracle's native nodes (OR_NATIVE in oracle.h): acc[0] = acc[1], then
 * acc[2] filled with the byte key & 0xff, each driver with its own
 * operations on the queue weft hands over: memcpy and memset on the host
 * driver, the sim's copy and fill, clEnqueueCopyBuffer and
 * clEnqueueFillBuffer on OpenCL, cuMemcpyDtoDAsync and cuMemsetD8Async on
 * CUDA (through weft's table of libcuda: the oracle has no CUDA header).
 */
#include "oracle.h"

#include "drivers/cuda/internal.h"
#include "drivers/opencl/opencl_internal.h"

#include <string.h>

static int or_native_host(const weft_native_ctx *c, void *user)
{
    const or_node *n = user;

    memcpy(weft_native_ptr(c, 0), weft_native_ptr(c, 1),
           weft_native_size(c, 0));
    if (n->nacc == 3)
        memset(weft_native_ptr(c, 2), (int)(n->key & 0xff),
               weft_native_size(c, 2));
    return 0;
}

static int or_native_sim(const weft_native_ctx *c, void *user)
{
    const or_node *n = user;
    weft__queue *q = weft_native_queue(c);
    size_t o0, o1, o2;
    weft__mem *m0 = weft_native_mem(c, 0, &o0),
              *m1 = weft_native_mem(c, 1, &o1);
    uint8_t byte = (uint8_t)(n->key & 0xff);
    int rc = weft__drv_copy_d2d(q, m0, o0, m1, o1, weft_native_size(c, 0));

    if (rc == 0 && n->nacc == 3) {
        weft__mem *m2 = weft_native_mem(c, 2, &o2);

        rc = weft__drv_fill(q, m2, o2, &byte, 1, weft_native_size(c, 2));
    }
    return rc;
}

static int or_native_opencl(const weft_native_ctx *c, void *user)
{
    const or_node *n = user;
    cl_command_queue q = weft_native_queue(c);
    size_t o0, o1, o2;
    cl_mem m0 = weft_native_mem(c, 0, &o0), m1 = weft_native_mem(c, 1, &o1);
    cl_uchar byte = (cl_uchar)(n->key & 0xff);
    cl_int err = weft__cl.EnqueueCopyBuffer(
        q, m1, m0, o1, o0, weft_native_size(c, 0), 0, NULL, NULL);

    if (err == CL_SUCCESS && n->nacc == 3) {
        cl_mem m2 = weft_native_mem(c, 2, &o2);

        err = weft__cl.EnqueueFillBuffer(q, m2, &byte, 1, o2,
                                         weft_native_size(c, 2), 0, NULL, NULL);
    }
    return (int)err;
}

static int or_native_cuda(const weft_native_ctx *c, void *user)
{
    const or_node *n = user;
    CUstream s = weft_native_queue(c);
    CUresult res = weft__cu.MemcpyDtoDAsync(weft_native_address(c, 0),
                                            weft_native_address(c, 1),
                                            weft_native_size(c, 0), s);

    if (res == CUDA_SUCCESS && n->nacc == 3)
        res = weft__cu.MemsetD8Async(weft_native_address(c, 2),
                                     (unsigned char)(n->key & 0xff),
                                     weft_native_size(c, 2), s);
    return (int)res;
}

const weft_native_impl or_native_impls[] = {
    {"host", 0, or_native_host},
    {"sim", 0, or_native_sim},
    {"opencl", 0, or_native_opencl},
    {"cuda", 0, or_native_cuda},
};
const unsigned or_native_nimpls =
    sizeof or_native_impls / sizeof or_native_impls[0];
