/*
 * Memory of the OpenCL driver (buffers, pinned and registered host memory,
 * sub-buffers for arguments at an offset) and copies, with the bounce
 * buffers of copies between devices.
 */
#include "opencl_internal.h"

#include <string.h>

/* Sub-buffers cached per memory for kernel arguments at an offset. */
#define OCL_SUB_CACHE 256
/* Free bounce buffers kept per context for peer copies. */
#define OCL_BOUNCE_KEEP 4
#define OCL_BOUNCE_MIN  ((size_t)64 << 10)

/* ---- memory ------------------------------------------------------------ */

static int ocl_mem_new(weft__context *ctx, cl_mem_flags flags, size_t size,
                       void *host, ocl_mem **out)
{
    ocl_mem *m;
    cl_int rc;
    int err;

    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "opencl: memory");
    if ((err = weft__ocl_mutex_init(&m->lock)) < 0) {
        weft__free(m);
        return err;
    }
    m->cl = OCL_NEW(
        "clCreateBuffer", rc,
        weft__cl.CreateBuffer(ocl_ctx(ctx)->cl, flags, size, host, &rc));
    if (!m->cl) {
        pthread_mutex_destroy(&m->lock);
        weft__free(m);
        return weft__ocl_fail(rc, "clCreateBuffer: %zu bytes on %s", size,
                              ctx->dev->name);
    }
    *out = m;
    return 0;
}

/*
 * Implementations may allocate lazily, so running out of device memory can
 * also show at the first command that uses the buffer.
 */
int weft__ocl_mem_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    ocl_mem *m = NULL;
    void *svm = NULL;
    int err;

    if (ocl_ctx_dev(ctx)->svm) {
        svm = OCL_FAULT("clSVMAlloc")
                  ? NULL
                  : weft__cl.SVMAlloc(ocl_ctx(ctx)->cl, CL_MEM_READ_WRITE, size,
                                      0);
        if (!svm)
            return weft__error(WEFT_EDEVMEM, "clSVMAlloc: %zu bytes on %s",
                               size, ctx->dev->name);
    }
    err = ocl_mem_new(
        ctx, svm ? CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR : CL_MEM_READ_WRITE,
        size, svm, &m);
    if (err < 0) {
        if (svm)
            weft__cl.SVMFree(ocl_ctx(ctx)->cl, svm);
        return err;
    }
    m->svm = svm;
    *out = &m->base;
    return 0;
}

static void ocl_mem_release(ocl_mem *m)
{
    ocl_sub *s = m->subs;

    while (s) {
        ocl_sub *next = s->next;

        ocl_release_memobject(s->cl);
        weft__free(s);
        s = next;
    }
    ocl_release_memobject(m->cl);
    /* No queued work uses it (driver.h's mem_free): freed at once. */
    if (m->svm)
        weft__cl.SVMFree(ocl_ctx(m->base.ctx)->cl, m->svm);
    pthread_mutex_destroy(&m->lock);
    weft__free(m);
}

/*
 * Pinned memory: a buffer the implementation allocates in host memory it
 * can reach at full speed, mapped once for its whole life. Passing that
 * mapped pointer to a copy is how OpenCL implementations recognise pinned
 * memory.
 */
int weft__ocl_host_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    ocl_context *c = ocl_ctx(ctx);
    ocl_mem *m = NULL;
    cl_int rc;
    int err = ocl_mem_new(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size,
                          NULL, &m);

    if (err < 0)
        return err;
    m->base.host =
        OCL_NEW("clEnqueueMapBuffer", rc,
                weft__cl.EnqueueMapBuffer(c->mapq, m->cl, CL_TRUE,
                                          CL_MAP_READ | CL_MAP_WRITE, 0, size,
                                          0, NULL, NULL, &rc));
    if (!m->base.host) {
        ocl_mem_release(m);
        return weft__ocl_fail(rc, "clEnqueueMapBuffer: %zu pinned bytes on %s",
                              size, ctx->dev->name);
    }
    *out = &m->base;
    return 0;
}

int weft__ocl_host_register(weft__context *ctx, void *ptr, size_t size,
                            weft__mem **out)
{
    ocl_mem *m = NULL;
    int err = ocl_mem_new(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, size,
                          ptr, &m);

    if (err < 0)
        return err;
    m->base.host = ptr;
    *out = &m->base;
    return 0;
}

void weft__ocl_mem_free(weft__mem *mem)
{
    ocl_mem *m = (ocl_mem *)mem;

    if (mem->kind == WEFT__MEM_PINNED && mem->host) {
        cl_int rc = weft__cl.EnqueueUnmapMemObject(
            ocl_ctx(mem->ctx)->mapq, m->cl, mem->host, 0, NULL, NULL);

        if (rc != CL_SUCCESS)
            weft__warn("opencl", "unmapping pinned memory on %s failed (%d)",
                       mem->ctx->dev->name, (int)rc);
    }
    ocl_mem_release(m);
}

/*
 * The program's cl_mem: it must belong to ctx's cl_context (weft's queues
 * cannot use a buffer of another context) and hold the range. The wrap
 * retains it; mem_free releases that retain and the sub-buffers made of it.
 */
int weft__ocl_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                       size_t size, weft__mem **out, size_t *moff)
{
    cl_mem cl = (cl_mem)(uintptr_t)handle;
    cl_context owner = NULL;
    size_t bytes = 0;
    cl_int rc;
    ocl_mem *m;
    int err;

    if (!cl)
        return weft__error(WEFT_EINVAL, "opencl: wrapping a NULL cl_mem");
    rc = OCL("clGetMemObjectInfo",
             weft__cl.GetMemObjectInfo(cl, CL_MEM_CONTEXT, sizeof owner, &owner,
                                       NULL));
    if (rc == CL_SUCCESS)
        rc = OCL("clGetMemObjectInfo",
                 weft__cl.GetMemObjectInfo(cl, CL_MEM_SIZE, sizeof bytes,
                                           &bytes, NULL));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(
            rc, "clGetMemObjectInfo: the cl_mem to wrap on %s", ctx->dev->name);
    if (owner != ocl_ctx(ctx)->cl)
        return weft__error(WEFT_EINVAL,
                           "opencl: the cl_mem belongs to another cl_context "
                           "than weft's for %s (the device's native context)",
                           ctx->dev->name);
    if (off > bytes || size > bytes - off)
        return weft__error(WEFT_ERANGE,
                           "opencl: [%zu, %zu + %zu) is outside the cl_mem's "
                           "%zu bytes",
                           off, off, size, bytes);
    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "opencl: memory");
    if ((err = weft__ocl_mutex_init(&m->lock)) < 0) {
        weft__free(m);
        return err;
    }
    rc = OCL("clRetainMemObject", weft__cl.RetainMemObject(cl));
    if (rc != CL_SUCCESS) {
        pthread_mutex_destroy(&m->lock);
        weft__free(m);
        return weft__ocl_fail(rc, "clRetainMemObject on %s", ctx->dev->name);
    }
    m->cl = cl;
    m->base.size = bytes;
    *out = &m->base;
    *moff = off;
    return 0;
}

/*
 * The cl_mem that starts at offset off of m, for a kernel argument. Offsets
 * seen before reuse their cached sub-buffer (relaunching a graph passes the
 * same ones); past OCL_SUB_CACHE a new one is made and *oneoff set, and the
 * caller releases it after the enqueue.
 */
int weft__ocl_sub_buffer(weft__queue *q, ocl_mem *m, size_t off,
                         const char *kname, unsigned argi, cl_mem *out,
                         int *oneoff)
{
    ocl_device *d = ocl_ctx_dev(q->ctx);
    cl_buffer_region region = {off, m->base.size - off};
    ocl_sub *s;
    cl_mem sub;
    cl_int rc;

    *oneoff = 0;
    if (off % d->align)
        return weft__error(WEFT_EINVAL,
                           "launch of %s: buffer argument %u at offset %zu, "
                           "which is not a multiple of the %u-byte base "
                           "address alignment of %s",
                           kname, argi, off, d->align, d->base.name);
    pthread_mutex_lock(&m->lock);
    for (s = m->subs; s; s = s->next)
        if (s->offset == off) {
            *out = s->cl;
            pthread_mutex_unlock(&m->lock);
            return 0;
        }
    sub = OCL_NEW("clCreateSubBuffer", rc,
                  weft__cl.CreateSubBuffer(
                      m->cl, 0, CL_BUFFER_CREATE_TYPE_REGION, &region, &rc));
    if (!sub) {
        pthread_mutex_unlock(&m->lock);
        return weft__ocl_fail(rc,
                              "clCreateSubBuffer: launch of %s, argument %u at "
                              "offset %zu on %s",
                              kname, argi, off, d->base.name);
    }
    if (m->nsubs < OCL_SUB_CACHE && (s = weft__calloc(1, sizeof *s))) {
        s->offset = off;
        s->cl = sub;
        s->next = m->subs;
        m->subs = s;
        m->nsubs++;
    } else {
        *oneoff = 1;
    }
    pthread_mutex_unlock(&m->lock);
    *out = sub;
    return 0;
}

/* ---- copies ------------------------------------------------------------ */

int weft__ocl_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       const void *src, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_refuse((ocl_queue *)q,
                                        "a copy from host memory");
    rc = OCL("clEnqueueWriteBuffer",
             weft__cl.EnqueueWriteBuffer(ocl_q(q), ocl_cl(dst), CL_FALSE,
                                         dst_off, size, src, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clEnqueueWriteBuffer: %zu bytes to %s", size,
                              ocl_qname(q));
    return 0;
}

int weft__ocl_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                       size_t src_off, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_refuse((ocl_queue *)q,
                                        "a copy to host memory");
    rc = OCL("clEnqueueReadBuffer",
             weft__cl.EnqueueReadBuffer(ocl_q(q), ocl_cl(src), CL_FALSE,
                                        src_off, size, dst, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clEnqueueReadBuffer: %zu bytes from %s",
                              size, ocl_qname(q));
    return 0;
}

int weft__ocl_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       weft__mem *src, size_t src_off, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_copy((ocl_queue *)q, ocl_cl(src), src_off,
                                      ocl_cl(dst), dst_off, size);
    rc = OCL("clEnqueueCopyBuffer",
             weft__cl.EnqueueCopyBuffer(ocl_q(q), ocl_cl(src), ocl_cl(dst),
                                        src_off, dst_off, size, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clEnqueueCopyBuffer: %zu bytes on %s", size,
                              ocl_qname(q));
    return 0;
}

/*
 * Block copies: clEnqueue{Read,Write,Copy}BufferRect. The buffer side's
 * offset becomes an origin (x bytes, y rows, z slices) of its pitches;
 * the host side is addressed from host + off. OpenCL wants each slice
 * pitch a multiple of its row pitch, and some implementations a block
 * whose rows do not run past their pitch from x: a block that is not so,
 * a copy within one cl_mem (which OpenCL takes only with equal pitches
 * and checks for overlap by bounding boxes), a loader without the entry
 * points, and a queue in a capture (whose command buffer takes only the
 * 1-D copies weft records) are declined (1) and go row by row.
 */
static int ocl_rect_origin(const weft__rect *r, const weft__rect_side *s,
                           size_t origin[3], size_t pitch[2])
{
    size_t sp = r->depth > 1 ? s->slice_pitch : s->row_pitch * r->height;
    size_t at = r->depth > 1 ? s->off % sp : s->off;

    if (sp % s->row_pitch)
        return 0;
    origin[2] = r->depth > 1 ? s->off / sp : 0;
    origin[1] = at / s->row_pitch;
    origin[0] = at % s->row_pitch;
    pitch[0] = s->row_pitch;
    pitch[1] = sp;
    return origin[0] + r->width <= s->row_pitch &&
           (r->depth == 1 || (origin[1] + r->height) * s->row_pitch <= sp);
}

/* The host side's pitches, 0 if OpenCL cannot take them. */
static int ocl_rect_host(const weft__rect *r, const weft__rect_side *s,
                         size_t pitch[2])
{
    size_t sp = r->depth > 1 ? s->slice_pitch : s->row_pitch * r->height;

    pitch[0] = s->row_pitch;
    pitch[1] = sp;
    return sp % s->row_pitch == 0;
}

/*
 * A block the implementation refused as an invalid value (NVIDIA's does
 * for some blocks near the end of a buffer that the specification
 * allows): nothing was enqueued, so it is declined and goes row by row.
 */
static int ocl_rect_refused(const char *call, const weft__rect *r)
{
    weft__info("opencl",
               "%s refused a block of %zux%zux%zu bytes: copied "
               "row by row",
               call, r->width, r->height, r->depth);
    return 1;
}

int weft__ocl_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                            const weft__rect *r)
{
    size_t org[3], host_org[3] = {0, 0, 0}, bp[2], hp[2];
    size_t region[3] = {r->width, r->height, r->depth};
    cl_int rc;

    if (!weft__cl.EnqueueWriteBufferRect || ((ocl_queue *)q)->cap ||
        !ocl_rect_origin(r, &r->dst, org, bp) || !ocl_rect_host(r, &r->src, hp))
        return 1;
    rc = OCL("clEnqueueWriteBufferRect",
             weft__cl.EnqueueWriteBufferRect(
                 ocl_q(q), ocl_cl(dst), CL_FALSE, org, host_org, region, bp[0],
                 bp[1], hp[0], hp[1], (const char *)src + r->src.off, 0, NULL,
                 NULL));
    if (rc == CL_INVALID_VALUE)
        return ocl_rect_refused("clEnqueueWriteBufferRect", r);
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc,
                              "clEnqueueWriteBufferRect: %zux%zux%zu bytes to "
                              "%s",
                              r->width, r->height, r->depth, ocl_qname(q));
    return 0;
}

int weft__ocl_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                            const weft__rect *r)
{
    size_t org[3], host_org[3] = {0, 0, 0}, bp[2], hp[2];
    size_t region[3] = {r->width, r->height, r->depth};
    cl_int rc;

    if (!weft__cl.EnqueueReadBufferRect || ((ocl_queue *)q)->cap ||
        !ocl_rect_origin(r, &r->src, org, bp) || !ocl_rect_host(r, &r->dst, hp))
        return 1;
    rc = OCL("clEnqueueReadBufferRect",
             weft__cl.EnqueueReadBufferRect(
                 ocl_q(q), ocl_cl(src), CL_FALSE, org, host_org, region, bp[0],
                 bp[1], hp[0], hp[1], (char *)dst + r->dst.off, 0, NULL, NULL));
    if (rc == CL_INVALID_VALUE)
        return ocl_rect_refused("clEnqueueReadBufferRect", r);
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc,
                              "clEnqueueReadBufferRect: %zux%zux%zu bytes "
                              "from %s",
                              r->width, r->height, r->depth, ocl_qname(q));
    return 0;
}

int weft__ocl_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                            const weft__rect *r)
{
    size_t dorg[3], sorg[3], dp[2], sp[2];
    size_t region[3] = {r->width, r->height, r->depth};
    cl_int rc;

    if (!weft__cl.EnqueueCopyBufferRect || ((ocl_queue *)q)->cap ||
        dst == src || !ocl_rect_origin(r, &r->dst, dorg, dp) ||
        !ocl_rect_origin(r, &r->src, sorg, sp))
        return 1;
    rc = OCL("clEnqueueCopyBufferRect",
             weft__cl.EnqueueCopyBufferRect(ocl_q(q), ocl_cl(src), ocl_cl(dst),
                                            sorg, dorg, region, sp[0], sp[1],
                                            dp[0], dp[1], 0, NULL, NULL));
    if (rc == CL_INVALID_VALUE)
        return ocl_rect_refused("clEnqueueCopyBufferRect", r);
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc,
                              "clEnqueueCopyBufferRect: %zux%zux%zu bytes on "
                              "%s",
                              r->width, r->height, r->depth, ocl_qname(q));
    return 0;
}

int weft__ocl_fill(weft__queue *q, weft__mem *dst, size_t off,
                   const void *pattern, size_t pattern_size, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_fill((ocl_queue *)q, ocl_cl(dst), off, pattern,
                                      pattern_size, size);
    rc =
        OCL("clEnqueueFillBuffer",
            weft__cl.EnqueueFillBuffer(ocl_q(q), ocl_cl(dst), pattern,
                                       pattern_size, off, size, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clEnqueueFillBuffer: %zu bytes on %s", size,
                              ocl_qname(q));
    return 0;
}

/* ---- copies between devices -------------------------------------------- */

void weft__ocl_bounce_drop(ocl_context *c, ocl_bounce *b)
{
    cl_int rc = OCL("clEnqueueUnmapMemObject",
                    weft__cl.EnqueueUnmapMemObject(c->mapq, b->mem, b->host, 0,
                                                   NULL, NULL));

    if (rc != CL_SUCCESS)
        weft__warn("opencl", "unmapping a bounce buffer on %s failed (%d)",
                   c->base.dev->name, (int)rc);
    ocl_release_memobject(b->mem);
    weft__free(b);
}

static void ocl_bounce_put(ocl_bounce *b)
{
    ocl_context *c = b->owner;

    pthread_mutex_lock(&c->lock);
    b->next = c->bounce_free;
    c->bounce_free = b;
    c->nbounce_free++;
    if (--c->bounce_out == 0)
        pthread_cond_broadcast(&c->idle);
    pthread_mutex_unlock(&c->lock);
}

static void CL_CALLBACK ocl_bounce_back(cl_event e, cl_int status, void *user)
{
    (void)e;
    (void)status;
    ocl_bounce_put(user);
}

/* A pinned bounce buffer of at least size bytes from c's pool. */
static int ocl_bounce_take(ocl_context *c, size_t size, ocl_bounce **out)
{
    ocl_bounce *b, **pp, *victim = NULL;
    size_t want = OCL_BOUNCE_MIN;
    cl_int rc;

    pthread_mutex_lock(&c->lock);
    for (pp = &c->bounce_free; *pp; pp = &(*pp)->next)
        if ((*pp)->size >= size)
            break;
    if ((b = *pp) != NULL) {
        *pp = b->next;
        c->nbounce_free--;
        c->bounce_out++;
        pthread_mutex_unlock(&c->lock);
        *out = b;
        return 0;
    }
    if (c->nbounce_free >= OCL_BOUNCE_KEEP) {
        victim = c->bounce_free;
        c->bounce_free = victim->next;
        c->nbounce_free--;
    }
    pthread_mutex_unlock(&c->lock);
    if (victim)
        weft__ocl_bounce_drop(c, victim);

    /* powers of two, so that copies of similar sizes share buffers */
    while (want < size && want < ((size_t)1 << 62))
        want <<= 1;
    if (want > c->base.dev->props.max_alloc)
        want = size;
    if (!(b = weft__calloc(1, sizeof *b)))
        return weft__error(WEFT_ENOMEM, "opencl: bounce buffer");
    b->owner = c;
    b->size = want;
    b->mem = OCL_NEW(
        "clCreateBuffer", rc,
        weft__cl.CreateBuffer(c->cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                              want, NULL, &rc));
    if (!b->mem) {
        weft__free(b);
        return weft__ocl_fail(rc,
                              "clCreateBuffer: %zu-byte bounce buffer on %s",
                              want, c->base.dev->name);
    }
    b->host = OCL_NEW("clEnqueueMapBuffer", rc,
                      weft__cl.EnqueueMapBuffer(c->mapq, b->mem, CL_TRUE,
                                                CL_MAP_READ | CL_MAP_WRITE, 0,
                                                want, 0, NULL, NULL, &rc));
    if (!b->host) {
        ocl_release_memobject(b->mem);
        weft__free(b);
        return weft__ocl_fail(rc, "clEnqueueMapBuffer: bounce buffer on %s",
                              c->base.dev->name);
    }
    pthread_mutex_lock(&c->lock);
    c->bounce_out++;
    pthread_mutex_unlock(&c->lock);
    *out = b;
    return 0;
}

/*
 * Give b back to its pool once e, the last command using it, completes;
 * e's queue must have been flushed.
 */
static void ocl_bounce_after(cl_event e, ocl_bounce *b)
{
    cl_int rc =
        OCL("clSetEventCallback",
            weft__cl.SetEventCallback(e, CL_COMPLETE, ocl_bounce_back, b));

    if (rc != CL_SUCCESS) {
        /* rare; waiting here keeps the buffer from being reused too early */
        weft__cl.WaitForEvents(1, &e);
        ocl_bounce_put(b);
    }
}

/*
 * Peer copy, staged through a pinned bounce buffer of the source's
 * context, without blocking the caller:
 *   read src -> bounce on the source's side (q if q is the source's,
 *   else the source context's aux queue, gated on a marker of q),
 *   write bounce -> dst on the destination's side (q, or aux gated on the
 *   read through a bridge), and, if the write is not on q, q waits for it
 *   through another bridge. The bounce buffer goes back to the pool from
 *   the write's completion callback.
 * A failure after the read was enqueued leaves dst untouched. If only the
 * final wait of q cannot be enqueued, the caller blocks until the copy is
 * done instead, so that the order on q holds.
 */
/*
 * The staged copy's two transfers: the range [off, off + size), or, with
 * r, the block's side (its offset in r) packed in the bounce buffer.
 */
typedef struct ocl_peer_block {
    const weft__rect *r;
    size_t org[2][3]; /* [0] the source's origin, [1] the destination's */
    size_t pitch[2][2];
} ocl_peer_block;

static cl_int ocl_peer_read(cl_command_queue qa, weft__mem *src, size_t off,
                            size_t size, void *host, const ocl_peer_block *b,
                            cl_uint nwait, const cl_event *wait, cl_event *e)
{
    size_t host_org[3] = {0, 0, 0};

    if (!b->r)
        return OCL("clEnqueueReadBuffer",
                   weft__cl.EnqueueReadBuffer(qa, ocl_cl(src), CL_FALSE, off,
                                              size, host, nwait, wait, e));
    {
        size_t region[3] = {b->r->width, b->r->height, b->r->depth};

        return OCL("clEnqueueReadBufferRect",
                   weft__cl.EnqueueReadBufferRect(
                       qa, ocl_cl(src), CL_FALSE, b->org[0], host_org, region,
                       b->pitch[0][0], b->pitch[0][1], b->r->width,
                       b->r->width * b->r->height, host, nwait, wait, e));
    }
}

static cl_int ocl_peer_write(cl_command_queue qb, weft__mem *dst, size_t off,
                             size_t size, const void *host,
                             const ocl_peer_block *b, const cl_event *wait,
                             cl_event *e)
{
    size_t host_org[3] = {0, 0, 0};

    if (!b->r)
        return OCL("clEnqueueWriteBuffer",
                   weft__cl.EnqueueWriteBuffer(qb, ocl_cl(dst), CL_FALSE, off,
                                               size, host, 1, wait, e));
    {
        size_t region[3] = {b->r->width, b->r->height, b->r->depth};

        return OCL("clEnqueueWriteBufferRect",
                   weft__cl.EnqueueWriteBufferRect(
                       qb, ocl_cl(dst), CL_FALSE, b->org[1], host_org, region,
                       b->pitch[1][0], b->pitch[1][1], b->r->width,
                       b->r->width * b->r->height, host, 1, wait, e));
    }
}

static int ocl_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                    weft__mem *src, size_t src_off, size_t size,
                    const ocl_peer_block *blk);

int weft__ocl_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size)
{
    ocl_peer_block none = {NULL, {{0}}, {{0}}};

    return ocl_peer(q, dst, dst_off, src, src_off, size, &none);
}

/*
 * A block between devices: the source's block read packed into the bounce
 * buffer, written from there into the destination's block (declined as
 * the other block copies are, 1).
 */
int weft__ocl_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r)
{
    ocl_peer_block b = {r, {{0}}, {{0}}};

    if (!weft__cl.EnqueueReadBufferRect || !weft__cl.EnqueueWriteBufferRect ||
        ((ocl_queue *)q)->cap ||
        !ocl_rect_origin(r, &r->src, b.org[0], b.pitch[0]) ||
        !ocl_rect_origin(r, &r->dst, b.org[1], b.pitch[1]))
        return 1;
    return ocl_peer(q, dst, 0, src, 0, (size_t)weft__rect_bytes(r), &b);
}

/*
 * The copy failed after its read e1 was enqueued: nothing on q waits for
 * that read, so the host does (it reads src, which the caller may free
 * once q's work is done: NVIDIA's OpenCL ends the process on a free of
 * memory in use); then the bounce buffer goes back.
 */
static void ocl_peer_abandon(cl_event e1, ocl_bounce *bb)
{
    /* (not a failure-injection site: a wait that cannot fail here) */
    if (weft__cl.WaitForEvents(1, &e1) != CL_SUCCESS)
        weft__warn("opencl", "peer copy: its read could not be waited for");
    ocl_bounce_after(e1, bb);
    ocl_release_event(e1);
}

static int ocl_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                    weft__mem *src, size_t src_off, size_t size,
                    const ocl_peer_block *blk)
{
    ocl_context *a = ocl_ctx(src->ctx), *b = ocl_ctx(dst->ctx);
    cl_command_queue qa = q->ctx == src->ctx ? ocl_q(q) : a->aux;
    cl_command_queue qb = q->ctx == dst->ctx ? ocl_q(q) : b->aux;
    cl_event m0 = NULL, pre = NULL, e1 = NULL, u1 = NULL, e2 = NULL;
    cl_event back = NULL;
    ocl_bounce *bb = NULL;
    ocl_mark from, into;
    cl_int rc;
    int err;

    if (((ocl_queue *)q)->cap)
        return weft__ocl_capture_refuse((ocl_queue *)q,
                                        "a copy between devices");
    if ((err = ocl_bounce_take(a, size, &bb)) < 0)
        return err;
    /*
     * A failure anywhere in the chain is noted on q at into, the tick of
     * q's last command of the copy: each bridge's source is q's work
     * (from) or the copy's own commands.
     */
    from = weft__ocl_tick((ocl_queue *)q);
    into = weft__ocl_tick((ocl_queue *)q);
    if (qa != ocl_q(q)) {
        rc = OCL("clEnqueueMarkerWithWaitList",
                 weft__cl.EnqueueMarkerWithWaitList(ocl_q(q), 0, NULL, &m0));
        if (rc != CL_SUCCESS) {
            err = weft__ocl_fail(rc,
                                 "clEnqueueMarkerWithWaitList: peer copy on %s",
                                 ocl_qname(q));
            goto unused;
        }
        weft__ocl_flush(ocl_q(q));
        err = weft__ocl_bridge(m0, &from, a, &into, &pre);
        ocl_release_event(m0);
        if (err < 0)
            goto unused;
    }
    rc = ocl_peer_read(qa, src, src_off, size, bb->host, blk, pre ? 1 : 0,
                       pre ? &pre : NULL, &e1);
    if (pre)
        ocl_release_event(pre);
    if (rc != CL_SUCCESS) {
        err = weft__ocl_fail(rc, "%s: peer copy of %zu bytes from %s",
                             blk->r ? "clEnqueueReadBufferRect"
                                    : "clEnqueueReadBuffer",
                             size, src->ctx->dev->name);
        goto unused;
    }
    weft__ocl_flush(qa);
    if ((err = weft__ocl_bridge(e1, qa == ocl_q(q) ? &from : NULL, b, &into,
                                &u1)) < 0) {
        ocl_peer_abandon(e1, bb);
        return err;
    }
    rc = ocl_peer_write(qb, dst, dst_off, size, bb->host, blk, &u1, &e2);
    ocl_release_event(u1);
    if (rc != CL_SUCCESS) {
        ocl_peer_abandon(e1, bb);
        return weft__ocl_fail(rc, "%s: peer copy of %zu bytes to %s",
                              blk->r ? "clEnqueueWriteBufferRect"
                                     : "clEnqueueWriteBuffer",
                              size, dst->ctx->dev->name);
    }
    ocl_release_event(e1);
    weft__ocl_flush(qb);
    ocl_bounce_after(e2, bb);
    if (qb != ocl_q(q)) {
        err = weft__ocl_bridge(e2, NULL, ocl_ctx(q->ctx), &into, &back);
        if (err == 0) {
            rc = OCL(
                "clEnqueueBarrierWithWaitList",
                weft__cl.EnqueueBarrierWithWaitList(ocl_q(q), 1, &back, NULL));
            ocl_release_event(back);
        }
        if (err < 0 || rc != CL_SUCCESS) {
            weft__warn("opencl",
                       "peer copy: %s cannot wait for the copy; waiting on "
                       "the host",
                       ocl_qname(q));
            rc = weft__cl.WaitForEvents(1, &e2);
            if (rc != CL_SUCCESS) {
                ocl_release_event(e2);
                return weft__ocl_fail(rc, "clWaitForEvents: peer copy to %s",
                                      dst->ctx->dev->name);
            }
        }
    }
    ocl_release_event(e2);
    return 0;
unused:
    ocl_bounce_put(bb);
    return err;
}
