/*
 * Memory, copies and fills of the cuda driver, with the staging of copies
 * to and from pageable host memory and the lazy set-up of peer access.
 */
#include "internal.h"

#include <string.h>

/* ---- memory ------------------------------------------------------------ */

static cuda_mem *cuda_mem_new(weft__context *ctx, weft__mem_kind kind,
                              size_t size)
{
    cuda_mem *m = weft__calloc(1, sizeof *m);

    if (!m) {
        weft__error(WEFT_ENOMEM, "cuda memory object");
        return NULL;
    }
    m->base.drv = &weft__driver_cuda;
    m->base.ctx = ctx;
    m->base.kind = kind;
    m->base.size = size;
    return m;
}

int weft__cuda_mem_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    cuda_mem *m;
    CUresult res;
    int rc;

    if (!(m = cuda_mem_new(ctx, WEFT__MEM_DEVICE, size)))
        return WEFT_ENOMEM;
    if ((rc = weft__cuda_enter(ctx)) < 0) {
        weft__free(m);
        return rc;
    }
    res = weft__fault("cuda.cuMemAlloc") ? CUDA_ERROR_OUT_OF_MEMORY
                                         : weft__cu.MemAlloc(&m->ptr, size);
    if (res != CUDA_SUCCESS) {
        weft__free(m);
        return weft__cuda_fail(res, 0, "cuMemAlloc: %zu bytes on GPU %d", size,
                               cuda_ctx(ctx)->ordinal);
    }
    *out = &m->base;
    return 0;
}

int weft__cuda_host_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    cuda_mem *m;
    void *p = NULL;
    CUresult res;
    int rc;

    if (!(m = cuda_mem_new(ctx, WEFT__MEM_PINNED, size)))
        return WEFT_ENOMEM;
    if ((rc = weft__cuda_enter(ctx)) < 0) {
        weft__free(m);
        return rc;
    }
    /* PORTABLE: staging memory serves the copies of every GPU. */
    res = weft__fault("cuda.cuMemHostAlloc")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : weft__cu.MemHostAlloc(&p, size,
                                      CU_MEMHOSTALLOC_PORTABLE |
                                          CU_MEMHOSTALLOC_DEVICEMAP);
    if (res != CUDA_SUCCESS) {
        weft__free(m);
        return weft__cuda_fail(
            res, res == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ENOMEM : 0,
            "cuMemHostAlloc: %zu pinned bytes for GPU %d", size,
            cuda_ctx(ctx)->ordinal);
    }
    m->base.host = p;
    m->ptr = (CUdeviceptr)(uintptr_t)p;
    *out = &m->base;
    return 0;
}

int weft__cuda_host_register(weft__context *ctx, void *ptr, size_t size,
                             weft__mem **out)
{
    cuda_mem *m;
    CUresult res;
    int rc;

    if (!(m = cuda_mem_new(ctx, WEFT__MEM_REGISTERED, size)))
        return WEFT_ENOMEM;
    if ((rc = weft__cuda_enter(ctx)) < 0) {
        weft__free(m);
        return rc;
    }
    res =
        weft__fault("cuda.cuMemHostRegister")
            ? CUDA_ERROR_OUT_OF_MEMORY
            : weft__cu.MemHostRegister(ptr, size, CU_MEMHOSTREGISTER_PORTABLE);
    if (res != CUDA_SUCCESS) {
        weft__free(m);
        return weft__cuda_fail(
            res, res == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ENOMEM : 0,
            "cuMemHostRegister: %zu bytes at %p for GPU %d", size, ptr,
            cuda_ctx(ctx)->ordinal);
    }
    m->base.host = ptr;
    m->ptr = (CUdeviceptr)(uintptr_t)ptr;
    *out = &m->base;
    return 0;
}

/*
 * The program's CUdeviceptr: it must be memory of this context's device
 * (the pointer's device ordinal) and the range inside its allocation,
 * where the driver says what that is.
 */
int weft__cuda_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                        size_t size, weft__mem **out, size_t *moff)
{
    CUdeviceptr p = (CUdeviceptr)handle, start = 0;
    size_t range = 0;
    int ordinal = -1, rc;
    cuda_mem *m;

    if ((rc = weft__cuda_enter(ctx)) < 0)
        return rc;
    if (weft__cu.PointerGetAttribute(
            &ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p) != CUDA_SUCCESS ||
        ordinal != cuda_ctx(ctx)->ordinal)
        return weft__error(WEFT_EINVAL,
                           "cuda: %#llx is not memory of GPU %d (device "
                           "ordinal %d)",
                           (unsigned long long)handle, cuda_ctx(ctx)->ordinal,
                           ordinal);
    if (weft__cu.PointerGetAttribute(
            &start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR, p) == CUDA_SUCCESS &&
        weft__cu.PointerGetAttribute(&range, CU_POINTER_ATTRIBUTE_RANGE_SIZE,
                                     p) == CUDA_SUCCESS &&
        (off > range - (p - start) || size > range - (p - start) - off))
        return weft__error(WEFT_ERANGE,
                           "cuda: [%zu, %zu + %zu) from %#llx is outside its "
                           "allocation of %zu bytes at %#llx",
                           off, off, size, (unsigned long long)handle, range,
                           (unsigned long long)start);
    if (!(m = cuda_mem_new(ctx, WEFT__MEM_DEVICE, off + size)))
        return WEFT_ENOMEM;
    m->ptr = p;
    *out = &m->base;
    *moff = off;
    return 0;
}

/* ---- memory shared between processes (legacy CUDA IPC) ----------------- */

static int cuda_no_ipc(void)
{
    return weft__error(WEFT_ENOTSUP,
                       "cuda: this libcuda lacks the IPC entry points "
                       "(cuIpcGetMemHandle, cuIpcOpenMemHandle, "
                       "cuIpcCloseMemHandle, cuMemGetAddressRange)");
}

/*
 * The handle is of the allocation that holds the byte (cuMemAlloc's, of
 * which weft's pool hands out pieces): cuIpcGetMemHandle takes only an
 * allocation's first byte, which cuMemGetAddressRange gives.
 */
int weft__cuda_ipc_export(weft__mem *m, size_t off, unsigned char *handle,
                          size_t *base_off)
{
    CUdeviceptr p = cuda_mm(m)->ptr + off, base = 0;
    CUipcMemHandle h;
    size_t range = 0;
    CUresult res;
    int rc;

    if (!weft__cu.IpcGetMemHandle || !weft__cu.MemGetAddressRange)
        return cuda_no_ipc();
    if ((rc = weft__cuda_enter(m->ctx)) < 0)
        return rc;
    res = weft__cu.MemGetAddressRange(&base, &range, p);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuMemGetAddressRange: %#llx on GPU %d",
                               (unsigned long long)p,
                               cuda_ctx(m->ctx)->ordinal);
    memset(&h, 0, sizeof h);
    res = weft__cu.IpcGetMemHandle(&h, base);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0,
                               "cuIpcGetMemHandle: the allocation of %zu bytes "
                               "at %#llx on GPU %d",
                               range, (unsigned long long)base,
                               cuda_ctx(m->ctx)->ordinal);
    memcpy(handle, h.reserved, CU_IPC_HANDLE_SIZE);
    *base_off = (size_t)(p - base);
    return 0;
}

int weft__cuda_ipc_open(weft__context *ctx, const unsigned char *handle,
                        uint64_t *ptr)
{
    CUipcMemHandle h;
    CUdeviceptr p = 0;
    CUresult res;
    int rc;

    if (!weft__cu.IpcOpenMemHandle || !weft__cu.IpcCloseMemHandle)
        return cuda_no_ipc();
    if ((rc = weft__cuda_enter(ctx)) < 0)
        return rc;
    memcpy(h.reserved, handle, CU_IPC_HANDLE_SIZE);
    res = weft__cu.IpcOpenMemHandle(&p, h, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuIpcOpenMemHandle on GPU %d",
                               cuda_ctx(ctx)->ordinal);
    *ptr = p;
    return 0;
}

int weft__cuda_ipc_close(weft__context *ctx, uint64_t ptr)
{
    CUresult res;
    int rc;

    if (!weft__cu.IpcCloseMemHandle)
        return cuda_no_ipc();
    if ((rc = weft__cuda_enter(ctx)) < 0)
        return rc;
    res = weft__cu.IpcCloseMemHandle((CUdeviceptr)ptr);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuIpcCloseMemHandle: %#llx on GPU %d",
                               (unsigned long long)ptr, cuda_ctx(ctx)->ordinal);
    return 0;
}

void weft__cuda_mem_free(weft__mem *mem)
{
    cuda_mem *m = cuda_mm(mem);
    CUresult res = CUDA_SUCCESS;

    if (mem->borrowed) {
        weft__free(m);
        return;
    }

    if (weft__cuda_enter(mem->ctx) < 0)
        weft__warn("cuda", "memory release: %s", weft_last_error());
    switch (mem->kind) {
    case WEFT__MEM_DEVICE:
        res = weft__cu.MemFree(m->ptr);
        break;
    case WEFT__MEM_PINNED:
        res = weft__cu.MemFreeHost(mem->host);
        break;
    case WEFT__MEM_REGISTERED:
        res = weft__cu.MemHostUnregister(mem->host);
        break;
    }
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "freeing %zu bytes of kind %d: error %d", mem->size,
                   (int)mem->kind, (int)res);
    weft__free(m);
}

/* ---- copies and fills -------------------------------------------------- */

/* 1 if [p, p + size) is page-locked memory that CUDA copies from in place. */
static int cuda_is_pinned(const void *p, size_t size)
{
    unsigned type = 0;
    CUdeviceptr a = (CUdeviceptr)(uintptr_t)p;

    if (weft__cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                     a) != CUDA_SUCCESS ||
        type != CU_MEMORYTYPE_HOST)
        return 0;
    return weft__cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                        a + size - 1) == CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_HOST;
}

int weft__cuda_host_is_pinned(weft__context *ctx, const void *p, size_t size)
{
    if (weft__cuda_enter(ctx) < 0) {
        weft_clear_error();
        return 0;
    }
    return cuda_is_pinned(p, size);
}

/* One chunk's host-side copy, run by CUDA's callback thread. */
typedef struct cuda_stage_copy {
    void *dst;
    const void *src;
    size_t size;
} cuda_stage_copy;

static void cuda_stage_run(void *user)
{
    cuda_stage_copy *c = user;

    memcpy(c->dst, c->src, c->size);
    weft__free(c);
}

/*
 * Room in q's staging buffers for a copy of size bytes (internal.h), under
 * q->stage_lock: afterwards each holds min(size, CUDA_STAGE_BYTES) bytes
 * at least. On failure the buffers are as they were (none, or the first,
 * smaller ones: cuda_staged copies through those in more chunks).
 */
static CUresult cuda_stage_room(cuda_queue *q, size_t size)
{
    size_t want = CUDA_STAGE_BYTES;
    void *made[2] = {NULL, NULL};
    CUresult res = CUDA_SUCCESS;

    if (q->stage_size >= WEFT__MIN(size, (size_t)CUDA_STAGE_BYTES))
        return CUDA_SUCCESS;
    /* The first: as large as this copy needs. Then the largest, once. */
    if (q->stage_size == 0)
        for (want = CUDA_STAGE_FIRST; want < size && want < CUDA_STAGE_BYTES;)
            want *= 2;
    for (int b = 0; b < 2 && res == CUDA_SUCCESS; b++)
        res = weft__fault("cuda.cuMemHostAlloc")
                  ? CUDA_ERROR_OUT_OF_MEMORY
                  : weft__cu.MemHostAlloc(&made[b], want, 0);
    if (res != CUDA_SUCCESS) {
        for (int b = 0; b < 2; b++)
            if (made[b])
                weft__cu.MemFreeHost(made[b]);
        return res;
    }
    for (int b = 0; b < 2; b++) {
        weft__assert_internal(!q->stage_old[b]);
        q->stage_old[b] = q->stage[b];
        q->stage[b] = made[b];
    }
    q->stage_size = want;
    return CUDA_SUCCESS;
}

/*
 * A staged copy between pageable host memory and device memory dev, in
 * chunks of the queue's pinned buffers' size (CUDA_STAGE_BYTES at most)
 * through them. Every chunk record is made before anything is enqueued,
 * so that a host allocation failure has no effect; a CUDA failure part-way
 * leaves the chunks before it enqueued (they complete harmlessly) and is
 * reported.
 */
static int cuda_staged(weft__queue *wq, CUdeviceptr dev, void *host,
                       size_t size, int to_device)
{
    cuda_queue *q = (cuda_queue *)wq;
    size_t nchunks = 0, chunk;
    cuda_stage_copy **recs = NULL;
    CUresult res = CUDA_SUCCESS;
    size_t i = 0;
    int rc = 0;

    pthread_mutex_lock(&q->stage_lock);
    /* Larger buffers where the copy needs them; where they cannot be had,
     * the ones the queue has serve, in more chunks. */
    res = cuda_stage_room(q, size);
    if (res != CUDA_SUCCESS && q->stage_size) {
        weft__debug("cuda",
                    "no larger staging buffers for GPU %d (error "
                    "%d): a copy of %zu bytes in chunks of %zu",
                    cuda_ctx(wq->ctx)->ordinal, (int)res, size, q->stage_size);
        res = CUDA_SUCCESS;
    }
    if (res != CUDA_SUCCESS) {
        pthread_mutex_unlock(&q->stage_lock);
        return weft__cuda_fail(res, WEFT_ENOMEM,
                               "cuMemHostAlloc: staging buffers for GPU %d",
                               cuda_ctx(wq->ctx)->ordinal);
    }
    chunk = WEFT__MIN(q->stage_size, (size_t)CUDA_STAGE_BYTES);
    nchunks = (size + chunk - 1) / chunk;
    if (!(recs = weft__calloc(nchunks, sizeof *recs))) {
        rc = weft__error(WEFT_ENOMEM, "cuda staged copy");
        goto out;
    }
    for (i = 0; i < nchunks; i++)
        if (!(recs[i] = weft__malloc(sizeof *recs[i]))) {
            rc = weft__error(WEFT_ENOMEM, "cuda staged copy");
            goto out;
        }
    for (i = 0; i < nchunks; i++) {
        size_t off = i * chunk;
        size_t n = WEFT__MIN(size - off, chunk);
        char *stage = q->stage[q->stage_next++ & 1];
        cuda_stage_copy *c = recs[i];

        c->size = n;
        if (to_device) {
            c->dst = stage;
            c->src = (const char *)host + off;
            res = weft__fault("cuda.cuLaunchHostFunc")
                      ? CUDA_ERROR_UNKNOWN
                      : weft__cu.LaunchHostFunc(q->stream, cuda_stage_run, c);
            if (res != CUDA_SUCCESS)
                break;
            recs[i] = NULL; /* the callback owns it now */
            res =
                weft__fault("cuda.cuMemcpyHtoDAsync")
                    ? CUDA_ERROR_UNKNOWN
                    : weft__cu.MemcpyHtoDAsync(dev + off, stage, n, q->stream);
        } else {
            c->dst = (char *)host + off;
            c->src = stage;
            res =
                weft__fault("cuda.cuMemcpyDtoHAsync")
                    ? CUDA_ERROR_UNKNOWN
                    : weft__cu.MemcpyDtoHAsync(stage, dev + off, n, q->stream);
            if (res != CUDA_SUCCESS)
                break;
            res = weft__fault("cuda.cuLaunchHostFunc")
                      ? CUDA_ERROR_UNKNOWN
                      : weft__cu.LaunchHostFunc(q->stream, cuda_stage_run, c);
            if (res == CUDA_SUCCESS)
                recs[i] = NULL;
        }
        if (res != CUDA_SUCCESS)
            break;
    }
    if (res != CUDA_SUCCESS)
        rc = weft__cuda_fail(res, 0, "staged copy of %zu bytes %s GPU %d", size,
                             to_device ? "to" : "from",
                             cuda_ctx(wq->ctx)->ordinal);
out:
    pthread_mutex_unlock(&q->stage_lock);
    for (i = 0; recs && i < nchunks; i++)
        weft__free(recs[i]);
    weft__free(recs);
    return rc;
}

int weft__cuda_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        const void *src, size_t size)
{
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    if (!cuda_is_pinned(src, size))
        return cuda_staged(q, cuda_mm(dst)->ptr + dst_off, (void *)src, size,
                           1);
    res = weft__fault("cuda.cuMemcpyHtoDAsync")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.MemcpyHtoDAsync(cuda_mm(dst)->ptr + dst_off, src, size,
                                         cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuMemcpyHtoDAsync: %zu bytes to GPU %d",
                               size, cuda_ctx(q->ctx)->ordinal);
    return 0;
}

int weft__cuda_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                        size_t src_off, size_t size)
{
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    if (!cuda_is_pinned(dst, size))
        return cuda_staged(q, cuda_mm(src)->ptr + src_off, dst, size, 0);
    res = weft__fault("cuda.cuMemcpyDtoHAsync")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.MemcpyDtoHAsync(dst, cuda_mm(src)->ptr + src_off, size,
                                         cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0,
                               "cuMemcpyDtoHAsync: %zu bytes from GPU %d", size,
                               cuda_ctx(q->ctx)->ordinal);
    return 0;
}

int weft__cuda_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size)
{
    CUdeviceptr d = cuda_mm(dst)->ptr + dst_off;
    CUdeviceptr s = cuda_mm(src)->ptr + src_off;
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    /* Host kinds go by their unified address; CUDA tells them apart. */
    if (dst->kind == WEFT__MEM_DEVICE && src->kind == WEFT__MEM_DEVICE)
        res = weft__fault("cuda.cuMemcpyDtoDAsync")
                  ? CUDA_ERROR_UNKNOWN
                  : weft__cu.MemcpyDtoDAsync(d, s, size, cuda_stream(q));
    else
        res = weft__fault("cuda.cuMemcpyAsync")
                  ? CUDA_ERROR_UNKNOWN
                  : weft__cu.MemcpyAsync(d, s, size, cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuMemcpyDtoDAsync: %zu bytes on GPU %d",
                               size, cuda_ctx(q->ctx)->ordinal);
    return 0;
}

/*
 * Let the context of `from` reach the memory of `to` directly. Failure is
 * not an error (the copy still works through host memory); the pair is
 * marked done either way so that it is tried once. Leaves `from` current.
 */
static void cuda_peer_setup_one(cuda_context *from, cuda_context *to)
{
    uint64_t bit = (uint64_t)1 << to->ordinal;
    int can = 0;
    CUresult res;

    if (__atomic_load_n(&weft__cuda_peer_done[from->ordinal],
                        __ATOMIC_ACQUIRE) &
        bit)
        return;
    if (weft__cuda_enter(&from->base) < 0)
        return;
    res = weft__cu.DeviceCanAccessPeer(&can, cuda_dev(from->base.dev)->cu,
                                       cuda_dev(to->base.dev)->cu);
    if (res == CUDA_SUCCESS && can) {
        res = weft__fault("cuda.cuCtxEnablePeerAccess")
                  ? CUDA_ERROR_TOO_MANY_PEERS
                  : weft__cu.CtxEnablePeerAccess(to->cu, 0);
        if (res == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
            res = CUDA_SUCCESS;
        if (res != CUDA_SUCCESS)
            weft__info("cuda",
                       "peer access GPU %d -> GPU %d: error %d; copies go "
                       "through the host",
                       from->ordinal, to->ordinal, (int)res);
    }
    pthread_mutex_lock(&weft__cuda_lock);
    /* Both contexts are alive (the copy holds memory of each). */
    __atomic_or_fetch(&weft__cuda_peer_done[from->ordinal], bit,
                      __ATOMIC_RELEASE);
    pthread_mutex_unlock(&weft__cuda_lock);
}

int weft__cuda_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                         weft__mem *src, size_t src_off, size_t size)
{
    cuda_context *dc = cuda_ctx(dst->ctx), *sc = cuda_ctx(src->ctx);
    CUresult res;
    int rc;

    if (dc->ordinal == sc->ordinal || dst->kind != WEFT__MEM_DEVICE ||
        src->kind != WEFT__MEM_DEVICE)
        return weft__cuda_copy_d2d(q, dst, dst_off, src, src_off, size);
    cuda_peer_setup_one(dc, sc);
    cuda_peer_setup_one(sc, dc);
    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    /*
     * cuMemcpyAsync under unified addressing, not cuMemcpyPeerAsync: the
     * same copy (over the peer link where access is enabled), and a stream
     * capture takes it in, where cuMemcpyPeerAsync fails with
     * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture
     * (2x H200, CUDA 13: tests/gpu/event_nodes.cu).
     */
    res = weft__fault("cuda.cuMemcpyAsync.peer")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.MemcpyAsync(cuda_mm(dst)->ptr + dst_off,
                                     cuda_mm(src)->ptr + src_off, size,
                                     cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(
            res, 0, "cuMemcpyAsync (peer): %zu bytes GPU %d -> GPU %d", size,
            sc->ordinal, dc->ordinal);
    return 0;
}

/* ---- block copies ------------------------------------------------------ */
/*
 * One side of a block for cuMemcpy2D/3D: host memory (type HOST, host
 * pointer), device memory (DEVICE) or, for a copy between devices or one
 * involving a host kind of weft__mem, UNIFIED (the driver tells by the
 * address).
 */
typedef struct cuda_rect_end {
    int type;
    const void *host; /* HOST */
    CUdeviceptr dev;  /* DEVICE, UNIFIED */
} cuda_rect_end;

static cuda_rect_end cuda_rect_host(const void *p, size_t off)
{
    cuda_rect_end e = {CU_MEMORYTYPE_HOST, (const char *)p + off, 0};
    return e;
}

static cuda_rect_end cuda_rect_mem(weft__mem *m, size_t off, int unified)
{
    cuda_rect_end e = {unified || m->kind != WEFT__MEM_DEVICE
                           ? CU_MEMORYTYPE_UNIFIED
                           : CU_MEMORYTYPE_DEVICE,
                       NULL, cuda_mm(m)->ptr + off};
    return e;
}

/*
 * Enqueue block r from src to dst (the sides' offsets already applied) on
 * q: one cuMemcpy3DAsync where the slice pitches are whole rows, a
 * cuMemcpy2DAsync per slice otherwise (or for one slice, or where the 3-D
 * copy is refused as an invalid value). 1 if CUDA refuses the first 2-D
 * call as an invalid value (a pitch beyond the device's limit, say:
 * nothing was enqueued) or lacks the entry point.
 */
static int cuda_rect(weft__queue *q, cuda_rect_end dst, cuda_rect_end src,
                     const weft__rect *r, const char *what)
{
    CUstream s = cuda_stream(q);
    CUresult res = CUDA_SUCCESS;
    const char *call;
    int rc, threed;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    threed = r->depth > 1 && weft__cu.Memcpy3DAsync &&
             r->src.slice_pitch % r->src.row_pitch == 0 &&
             r->dst.slice_pitch % r->dst.row_pitch == 0;
    if (threed) {
        CUDA_MEMCPY3D p;

        memset(&p, 0, sizeof p);
        p.srcMemoryType = src.type;
        p.srcHost = src.host;
        p.srcDevice = src.dev;
        p.srcPitch = r->src.row_pitch;
        p.srcHeight = r->src.slice_pitch / r->src.row_pitch;
        p.dstMemoryType = dst.type;
        p.dstHost = (void *)(uintptr_t)dst.host;
        p.dstDevice = dst.dev;
        p.dstPitch = r->dst.row_pitch;
        p.dstHeight = r->dst.slice_pitch / r->dst.row_pitch;
        p.WidthInBytes = r->width;
        p.Height = r->height;
        p.Depth = r->depth;
        call = "cuMemcpy3DAsync";
        res = weft__fault("cuda.cuMemcpy3DAsync")
                  ? CUDA_ERROR_UNKNOWN
                  : weft__cu.Memcpy3DAsync(&p, s);
        if (res == CUDA_ERROR_INVALID_VALUE) {
            weft__info("cuda",
                       "cuMemcpy3DAsync refused a block of "
                       "%zux%zux%zu bytes; trying a 2-D copy per "
                       "slice",
                       r->width, r->height, r->depth);
            res = CUDA_SUCCESS;
            threed = 0;
        }
    }
    if (!threed) {
        if (!weft__cu.Memcpy2DAsync)
            return 1;
        call = "cuMemcpy2DAsync";
        for (size_t z = 0; z < r->depth && res == CUDA_SUCCESS; z++) {
            size_t ds = z * r->dst.slice_pitch, ss = z * r->src.slice_pitch;
            CUDA_MEMCPY2D p;

            memset(&p, 0, sizeof p);
            p.srcMemoryType = src.type;
            p.srcHost = src.host ? (const char *)src.host + ss : NULL;
            p.srcDevice = src.host ? 0 : src.dev + ss;
            p.srcPitch = r->src.row_pitch;
            p.dstMemoryType = dst.type;
            p.dstHost = dst.host ? (char *)(uintptr_t)dst.host + ds : NULL;
            p.dstDevice = dst.host ? 0 : dst.dev + ds;
            p.dstPitch = r->dst.row_pitch;
            p.WidthInBytes = r->width;
            p.Height = r->height;
            res = weft__fault("cuda.cuMemcpy2DAsync")
                      ? CUDA_ERROR_UNKNOWN
                      : weft__cu.Memcpy2DAsync(&p, s);
            if (res == CUDA_ERROR_INVALID_VALUE && z == 0)
                goto declined;
        }
    }
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0,
                               "%s: %zux%zux%zu bytes (pitches %zu, %zu from "
                               "%zu, %zu) %s GPU %d",
                               call, r->width, r->height, r->depth,
                               r->src.row_pitch, r->src.slice_pitch,
                               r->dst.row_pitch, r->dst.slice_pitch, what,
                               cuda_ctx(q->ctx)->ordinal);
    return 0;
declined:
    weft__info("cuda",
               "%s refused a block of %zux%zux%zu bytes (pitches %zu, %zu "
               "from %zu, %zu); copying it row by row",
               call, r->width, r->height, r->depth, r->src.row_pitch,
               r->src.slice_pitch, r->dst.row_pitch, r->dst.slice_pitch);
    return 1;
}

/*
 * Pageable host memory is declined: the rows go one by one through the
 * staged 1-D copies (cuMemcpy2DAsync would copy it synchronously).
 */
int weft__cuda_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                             const weft__rect *r)
{
    if (!cuda_is_pinned((const char *)src + r->src.off,
                        weft__rect_span(r, &r->src)))
        return 1;
    return cuda_rect(q, cuda_rect_mem(dst, r->dst.off, 0),
                     cuda_rect_host(src, r->src.off), r, "to");
}

int weft__cuda_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                             const weft__rect *r)
{
    if (!cuda_is_pinned((char *)dst + r->dst.off, weft__rect_span(r, &r->dst)))
        return 1;
    return cuda_rect(q, cuda_rect_host(dst, r->dst.off),
                     cuda_rect_mem(src, r->src.off, 0), r, "from");
}

int weft__cuda_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r)
{
    return cuda_rect(q, cuda_rect_mem(dst, r->dst.off, 0),
                     cuda_rect_mem(src, r->src.off, 0), r, "on");
}

/* Between devices: unified addresses, over the peer link where enabled. */
int weft__cuda_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                              const weft__rect *r)
{
    cuda_context *dc = cuda_ctx(dst->ctx), *sc = cuda_ctx(src->ctx);

    if (dc->ordinal != sc->ordinal && dst->kind == WEFT__MEM_DEVICE &&
        src->kind == WEFT__MEM_DEVICE) {
        cuda_peer_setup_one(dc, sc);
        cuda_peer_setup_one(sc, dc);
    }
    return cuda_rect(q, cuda_rect_mem(dst, r->dst.off, 1),
                     cuda_rect_mem(src, r->src.off, 1), r, "between GPUs on");
}

int weft__cuda_fill(weft__queue *q, weft__mem *dst, size_t off,
                    const void *pattern, size_t pattern_size, size_t size)
{
    CUdeviceptr p = cuda_mm(dst)->ptr + off;
    CUstream s = cuda_stream(q);
    uint16_t v16;
    uint32_t v32;
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    if (weft__fault("cuda.cuMemsetAsync"))
        res = CUDA_ERROR_UNKNOWN;
    else if (pattern_size == 1)
        res =
            weft__cu.MemsetD8Async(p, *(const unsigned char *)pattern, size, s);
    else if (pattern_size == 2) {
        memcpy(&v16, pattern, 2);
        res = weft__cu.MemsetD16Async(p, v16, size / 2, s);
    } else if (pattern_size == 4) {
        memcpy(&v32, pattern, 4);
        res = weft__cu.MemsetD32Async(p, v32, size / 4, s);
    } else
        return weft__error(WEFT_EINVAL, "fill pattern of %zu bytes",
                           pattern_size);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuMemsetD%zuAsync: %zu bytes on GPU %d",
                               pattern_size * 8, size,
                               cuda_ctx(q->ctx)->ordinal);
    return 0;
}
