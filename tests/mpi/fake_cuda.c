/*
 * A libcuda of five calls for test_shim (WEFT_CUDA_LIBRARY names it): the
 * calls cuda_aware_shim.c makes, over "device memory" that this library
 * hands out (fake_device_alloc) and keeps inaccessible (PROT_NONE) except
 * inside its own copies, so that any code reading or writing it directly,
 * as MPI would where the shim failed to stage it, crashes.
 */
#include "drivers/cuda/cuda_api.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

enum { MAX_BLOCKS = 64 };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char *p;
    size_t size;
} blocks[MAX_BLOCKS];
static unsigned nblocks;
static int fake_context; /* its address is the one context */

int cuInit(unsigned flags);
int cuPointerGetAttribute(void *data, int attribute, uint64_t ptr);
int cuCtxPushCurrent_v2(void *ctx);
int cuCtxPopCurrent_v2(void **ctx);
int cuMemcpy2D_v2(const CUDA_MEMCPY2D *p);
int cuStreamSynchronize(void *stream);
void *fake_device_alloc(size_t size);
unsigned long fake_device_copies(void);

static unsigned long copies;

/* The block holding [p, p + size), or -1. */
static int block_of(uint64_t p, size_t size)
{
    for (unsigned i = 0; i < nblocks; i++) {
        uint64_t lo = (uint64_t)(uintptr_t)blocks[i].p;

        if (p >= lo && p - lo <= blocks[i].size &&
            size <= blocks[i].size - (p - lo))
            return (int)i;
    }
    return -1;
}

int cuInit(unsigned flags)
{
    return flags == 0 ? 0 : CUDA_ERROR_INVALID_VALUE;
}

int cuPointerGetAttribute(void *data, int attribute, uint64_t ptr)
{
    int b;

    pthread_mutex_lock(&lock);
    b = block_of(ptr, 1);
    pthread_mutex_unlock(&lock);
    if (b < 0)
        return CUDA_ERROR_INVALID_VALUE; /* as CUDA says of memory it does not
                                            know */
    if (attribute == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
        *(unsigned *)data = CU_MEMORYTYPE_DEVICE;
    else if (attribute == CU_POINTER_ATTRIBUTE_CONTEXT)
        *(void **)data = &fake_context;
    else
        return CUDA_ERROR_INVALID_VALUE;
    return 0;
}

int cuCtxPushCurrent_v2(void *ctx)
{
    return ctx == &fake_context ? 0 : CUDA_ERROR_INVALID_VALUE;
}

int cuCtxPopCurrent_v2(void **ctx)
{
    if (ctx)
        *ctx = &fake_context;
    return 0;
}

/* Copies here are done when they return: nothing to wait for. */
int cuStreamSynchronize(void *stream)
{
    return stream == NULL ? 0 : CUDA_ERROR_INVALID_VALUE;
}

/* Rows of the copy, each side checked: device rows inside one block. */
int cuMemcpy2D_v2(const CUDA_MEMCPY2D *p)
{
    int b = -1, rc = 0;
    uint64_t dev =
        p->srcMemoryType == CU_MEMORYTYPE_DEVICE ? p->srcDevice : p->dstDevice;
    size_t pitch =
        p->srcMemoryType == CU_MEMORYTYPE_DEVICE ? p->srcPitch : p->dstPitch;

    if ((p->srcMemoryType == CU_MEMORYTYPE_DEVICE) ==
            (p->dstMemoryType == CU_MEMORYTYPE_DEVICE) ||
        p->srcPitch < p->WidthInBytes || p->dstPitch < p->WidthInBytes ||
        !p->Height)
        return CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    b = block_of(dev, (p->Height - 1) * pitch + p->WidthInBytes);
    if (b < 0) {
        pthread_mutex_unlock(&lock);
        return CUDA_ERROR_INVALID_VALUE;
    }
    mprotect(blocks[b].p, blocks[b].size, PROT_READ | PROT_WRITE);
    for (size_t r = 0; r < p->Height; r++) {
        const char *src = p->srcMemoryType == CU_MEMORYTYPE_DEVICE
                              ? (const char *)(uintptr_t)p->srcDevice
                              : (const char *)p->srcHost;
        char *dst = p->dstMemoryType == CU_MEMORYTYPE_DEVICE
                        ? (char *)(uintptr_t)p->dstDevice
                        : (char *)p->dstHost;

        memcpy(dst + r * p->dstPitch, src + r * p->srcPitch, p->WidthInBytes);
    }
    mprotect(blocks[b].p, blocks[b].size, PROT_NONE);
    copies++;
    pthread_mutex_unlock(&lock);
    return rc;
}

void *fake_device_alloc(size_t size)
{
    void *p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        return NULL;
    pthread_mutex_lock(&lock);
    if (nblocks == MAX_BLOCKS) {
        pthread_mutex_unlock(&lock);
        munmap(p, size);
        return NULL;
    }
    blocks[nblocks].p = p;
    blocks[nblocks++].size = size;
    pthread_mutex_unlock(&lock);
    return p;
}

/* The copies made so far (each a 2-D copy of some rows). */
unsigned long fake_device_copies(void)
{
    unsigned long n;

    pthread_mutex_lock(&lock);
    n = copies;
    pthread_mutex_unlock(&lock);
    return n;
}
