/*
 * What a native node's function is given (weft.h, "Native nodes"): the
 * accessors of weft_native_ctx, which exec_run.c fills for one call.
 */
#include "exec.h"

static const weft_native_ctx *weft__native_ctx(const weft_native_ctx *c,
                                               const char *fn)
{
    if (!c)
        weft__error(WEFT_EINVAL, "%s: ctx is NULL", fn);
    return c;
}

/* Access i of c, or NULL (the error set). */
static const weft_native_ctx *weft__native_access(const weft_native_ctx *c,
                                                  unsigned i, const char *fn)
{
    if (!weft__native_ctx(c, fn))
        return NULL;
    if (i >= c->n) {
        weft__error(WEFT_EINVAL, "%s: access %u of a node with %u", fn, i,
                    c->n);
        return NULL;
    }
    return c;
}

const char *weft_native_driver(const weft_native_ctx *ctx)
{
    return weft__native_ctx(ctx, "weft_native_driver") ? ctx->driver : NULL;
}

const weft_device *weft_native_device(const weft_native_ctx *ctx)
{
    return weft__native_ctx(ctx, "weft_native_device") ? ctx->device : NULL;
}

weft_node weft_native_node(const weft_native_ctx *ctx)
{
    return weft__native_ctx(ctx, "weft_native_node") ? ctx->node : 0;
}

void *weft_native_context(const weft_native_ctx *ctx)
{
    return weft__native_ctx(ctx, "weft_native_context") ? ctx->nq.context
                                                        : NULL;
}

void *weft_native_device_id(const weft_native_ctx *ctx)
{
    return weft__native_ctx(ctx, "weft_native_device_id") ? ctx->nq.device
                                                          : NULL;
}

void *weft_native_queue(const weft_native_ctx *ctx)
{
    return weft__native_ctx(ctx, "weft_native_queue") ? ctx->nq.queue : NULL;
}

unsigned weft_native_count(const weft_native_ctx *ctx)
{
    return weft__native_ctx(ctx, "weft_native_count") ? ctx->n : 0;
}

size_t weft_native_size(const weft_native_ctx *ctx, unsigned i)
{
    return weft__native_access(ctx, i, "weft_native_size")
               ? weft__access_span(&ctx->acc[i])
               : 0;
}

uint64_t weft_native_address(const weft_native_ctx *ctx, unsigned i)
{
    return weft__native_access(ctx, i, "weft_native_address")
               ? ctx->mem[i].address
               : 0;
}

void *weft_native_mem(const weft_native_ctx *ctx, unsigned i, size_t *offset)
{
    if (offset)
        *offset = 0;
    if (!weft__native_access(ctx, i, "weft_native_mem"))
        return NULL;
    if (offset)
        *offset = ctx->mem[i].offset;
    return ctx->mem[i].mem;
}

void *weft_native_ptr(const weft_native_ctx *ctx, unsigned i)
{
    return weft__native_access(ctx, i, "weft_native_ptr") ? ctx->mem[i].host
                                                          : NULL;
}

int weft_device_native(weft_runtime *rt, const weft_device *dev, void **context,
                       void **device_id)
{
    static const char fn[] = "weft_device_native";
    weft__native_queue nq;
    weft__context *ctx;
    unsigned d;
    int rc;

    if (!rt)
        return weft__error(WEFT_EINVAL, "%s: runtime is NULL", fn);
    if ((rc = weft__device_index(rt, dev, &d, fn)) < 0)
        return rc;
    if (!context && !device_id)
        return weft__error(WEFT_EINVAL,
                           "%s: context and device_id are both NULL", fn);
    if ((rc = weft__runtime_context(rt, d, &ctx)) < 0)
        return weft__error_prefix(rc, "%s on %s", fn, rt->devices[d]->name);
    weft__drv_native_context(ctx, &nq);
    if (context)
        *context = nq.context;
    if (device_id)
        *device_id = nq.device;
    return 0;
}
