/*
 * A libcuda of five calls for test_shim (WEFT_CUDA_LIBRARY names it): the
 * calls cuda_aware_shim.c makes, over "device memory" that this library
 * hands out (fake_device_alloc) and keeps inaccessible (PROT_NONE) except
 * inside its own copies, so that any code reading or writing it directly,
 * as MPI would where the shim failed to stage it, crashes.
 */
#include "cu_copy2d.h"

#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

typedef wt_cu_copy2d fake_copy2d;

enum { CONTEXT = 1, MEMORY_TYPE = 2, HOST = 1, DEVICE = 2, BAD = 1 };
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
int cuMemcpy2D_v2(const fake_copy2d *p);
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
    return flags == 0 ? 0 : BAD;
}

int cuPointerGetAttribute(void *data, int attribute, uint64_t ptr)
{
    int b;

    pthread_mutex_lock(&lock);
    b = block_of(ptr, 1);
    pthread_mutex_unlock(&lock);
    if (b < 0)
        return BAD; /* as CUDA says of memory it does not know */
    if (attribute == MEMORY_TYPE)
        *(unsigned *)data = DEVICE;
    else if (attribute == CONTEXT)
        *(void **)data = &fake_context;
    else
        return BAD;
    return 0;
}

int cuCtxPushCurrent_v2(void *ctx)
{
    return ctx == &fake_context ? 0 : BAD;
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
    return stream == NULL ? 0 : BAD;
}

/* Rows of the copy, each side checked: device rows inside one block. */
int cuMemcpy2D_v2(const fake_copy2d *p)
{
    int b = -1, rc = 0;
    uint64_t dev = p->src_type == DEVICE ? p->src_device : p->dst_device;
    size_t pitch = p->src_type == DEVICE ? p->src_pitch : p->dst_pitch;

    if ((p->src_type == DEVICE) == (p->dst_type == DEVICE) ||
        p->src_pitch < p->width || p->dst_pitch < p->width || !p->height)
        return BAD;
    pthread_mutex_lock(&lock);
    b = block_of(dev, (p->height - 1) * pitch + p->width);
    if (b < 0) {
        pthread_mutex_unlock(&lock);
        return BAD;
    }
    mprotect(blocks[b].p, blocks[b].size, PROT_READ | PROT_WRITE);
    for (size_t r = 0; r < p->height; r++) {
        const char *src = p->src_type == DEVICE
                              ? (const char *)(uintptr_t)p->src_device
                              : (const char *)p->src_host;
        char *dst = p->dst_type == DEVICE ? (char *)(uintptr_t)p->dst_device
                                          : (char *)p->dst_host;

        memcpy(dst + r * p->dst_pitch, src + r * p->src_pitch, p->width);
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
