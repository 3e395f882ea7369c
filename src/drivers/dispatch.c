/*
 * The checked entry points of the driver interface. Everything above
 * src/drivers/ calls these, never a driver's table directly: what can be
 * checked without the driver is checked here once, for every driver.
 *
 * Live counts: ctx->live counts the queues, memories, modules and events
 * alive in a context (atomic: they may be created from several threads),
 * so that destroying a context that still has children is WEFT_EBUSY.
 *
 * Destroyed queues: queue_release frees what the driver holds, but the
 * weft__queue itself stays on ctx->dead_queues (pushed with a CAS) until the
 * context goes, so that a stale handle reads destroyed = 1 and answers
 * WEFT_EDESTROYED instead of touching freed memory.
 *
 * The operations on queues, events and graphs are generated from one table
 * (WEFT__DRV_CALLS, driver.h): each has a check function here,
 * weft__check_<op>, and the shape they share (checks, missing operation,
 * failure injection, the call) is written once, in WEFT__DRV_DEFINE.
 */
#include "dispatch.h"
#include "hostcc.h"
#include "kcache.h"

#include <stdio.h>
#include <string.h>

int weft__drv_injected(const weft__driver *drv, const char *op, int code)
{
    char site[64];

    snprintf(site, sizeof site, "%s.%s", drv->name, op);
    if (!weft__fault_check(site))
        return 0;
    return weft__driver_error(code, drv->name, 0, "injected",
                              "%s: injected failure", site);
}

static void weft__live_add(weft__context *ctx, long d)
{
    __atomic_add_fetch(&ctx->live, d, __ATOMIC_RELAXED);
}

int weft__drv_missing(const weft__driver *drv, const char *op)
{
    return weft__error(WEFT_ENOTSUP, "%s: the %s driver has no %s operation",
                       op, drv->name, op);
}

#define WEFT__NEED_OP(drv, op)                                                 \
    do {                                                                       \
        if (!(drv)->op)                                                        \
            return weft__drv_missing((drv), #op);                              \
    } while (0)

int weft__drv_check_queue(const weft__queue *q, const char *op)
{
    if (!q)
        return weft__error(WEFT_EINVAL, "%s: queue is NULL", op);
    if (__atomic_load_n(&q->destroyed, __ATOMIC_ACQUIRE))
        return weft__error(WEFT_EDESTROYED, "%s: queue was destroyed", op);
    return 0;
}

int weft__drv_check_mem(const weft__queue *q, const weft__mem *m,
                        const char *what, const char *op, int same_ctx)
{
    if (!m)
        return weft__error(WEFT_EINVAL, "%s: %s memory is NULL", op, what);
    if (m->drv != q->drv)
        return weft__error(WEFT_EINVAL,
                           "%s: %s memory belongs to the %s driver, the "
                           "queue to %s",
                           op, what, m->drv->name, q->drv->name);
    if (m->kind != WEFT__MEM_DEVICE)
        return weft__error(WEFT_EINVAL,
                           "%s: %s memory is host memory, not device memory",
                           op, what);
    if (same_ctx && m->ctx != q->ctx)
        return weft__error(WEFT_EINVAL,
                           "%s: %s memory is on device %s, the queue on %s", op,
                           what, m->ctx->dev->name, q->ctx->dev->name);
    return 0;
}

static int weft__check_range(const weft__mem *m, size_t off, size_t size,
                             const char *what, const char *op)
{
    if (off > m->size || size > m->size - off)
        return weft__error(WEFT_ERANGE,
                           "%s: %s range [%zu, %zu + %zu) is outside the "
                           "allocation of %zu bytes",
                           op, what, off, off, size, m->size);
    return 0;
}

int weft__drv_context_create(weft__device *dev, weft__context **ctx)
{
    weft__context *c = NULL;
    int rc;

    if (!dev || !ctx)
        return weft__error(WEFT_EINVAL, "context_create: %s is NULL",
                           dev ? "result" : "device");
    WEFT__NEED_OP(dev->drv, context_create);
    WEFT__INJECT(dev->drv, "context_create", WEFT_EDRIVER);
    rc = dev->drv->context_create(dev, &c);
    if (rc < 0)
        return rc;
    c->drv = dev->drv;
    c->dev = dev;
    c->live = 0;
    c->dead_queues = NULL;
    *ctx = c;
    return 0;
}

int weft__drv_context_destroy(weft__context *ctx)
{
    weft__queue *q, *next;
    long live;

    if (!ctx)
        return weft__error(WEFT_EINVAL, "context_destroy: context is NULL");
    live = __atomic_load_n(&ctx->live, __ATOMIC_ACQUIRE);
    if (live > 0)
        return weft__error(WEFT_EBUSY,
                           "context_destroy: %ld objects (queues, memory, "
                           "modules, events) of device %s still live",
                           live, ctx->dev->name);
    for (q = ctx->dead_queues; q; q = next) {
        next = q->next_dead;
        weft__free(q);
    }
    ctx->dead_queues = NULL;
    ctx->drv->context_destroy(ctx);
    return 0;
}

int weft__drv_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                           weft__queue **q)
{
    static const weft__queue_desc dflt = {WEFT__QUEUE_COMPUTE, 0, 0};
    const weft_device_info *p;
    weft__queue *nq = NULL;
    int lo, hi, rc;

    if (!ctx || !q)
        return weft__error(WEFT_EINVAL, "queue_create: %s is NULL",
                           ctx ? "result" : "context");
    if (!desc)
        desc = &dflt;
    p = &ctx->dev->props;
    lo = WEFT__MIN(p->queue_priority_low, p->queue_priority_high);
    hi = WEFT__MAX(p->queue_priority_low, p->queue_priority_high);
    if (desc->priority < lo || desc->priority > hi)
        return weft__error(WEFT_EINVAL,
                           "queue_create: priority %d outside [%d, %d] of "
                           "device %s",
                           desc->priority, lo, hi, ctx->dev->name);
    if (desc->role > WEFT__QUEUE_PEER)
        return weft__error(WEFT_EINVAL, "queue_create: unknown role %d",
                           (int)desc->role);
    WEFT__NEED_OP(ctx->drv, queue_create);
    WEFT__INJECT(ctx->drv, "queue_create", WEFT_EDRIVER);
    rc = ctx->drv->queue_create(ctx, desc, &nq);
    if (rc < 0)
        return rc;
    nq->drv = ctx->drv;
    nq->ctx = ctx;
    nq->desc = *desc;
    nq->destroyed = 0;
    nq->next_dead = NULL;
    weft__live_add(ctx, 1);
    *q = nq;
    return 0;
}

int weft__drv_queue_destroy(weft__queue *q)
{
    weft__context *ctx;
    int rc = weft__drv_check_queue(q, "queue_destroy");

    if (rc < 0)
        return rc;
    ctx = q->ctx;
    q->drv->queue_release(q);
    __atomic_store_n(&q->destroyed, 1, __ATOMIC_RELEASE);
    q->next_dead = __atomic_load_n(&ctx->dead_queues, __ATOMIC_RELAXED);
    while (!__atomic_compare_exchange_n(&ctx->dead_queues, &q->next_dead, q, 1,
                                        __ATOMIC_RELEASE, __ATOMIC_RELAXED))
        ;
    weft__live_add(ctx, -1);
    return 0;
}

static int weft__finish_mem(weft__context *ctx, weft__mem *m,
                            weft__mem_kind kind, size_t size, weft__mem **out)
{
    m->drv = ctx->drv;
    m->ctx = ctx;
    m->kind = kind;
    m->size = size;
    weft__live_add(ctx, 1);
    *out = m;
    return 0;
}

int weft__drv_mem_alloc(weft__context *ctx, size_t size, weft__mem **mem)
{
    weft__mem *m = NULL;
    int rc;

    if (!ctx || !mem)
        return weft__error(WEFT_EINVAL, "mem_alloc: %s is NULL",
                           ctx ? "result" : "context");
    if (size == 0)
        return weft__error(WEFT_EINVAL, "mem_alloc: size 0 on device %s",
                           ctx->dev->name);
    if (ctx->dev->props.max_alloc && size > ctx->dev->props.max_alloc)
        return weft__error(WEFT_EDEVMEM,
                           "mem_alloc: %zu bytes exceed the largest "
                           "allocation of device %s (%llu bytes)",
                           size, ctx->dev->name,
                           (unsigned long long)ctx->dev->props.max_alloc);
    WEFT__NEED_OP(ctx->drv, mem_alloc);
    WEFT__INJECT(ctx->drv, "mem_alloc", WEFT_EDEVMEM);
    rc = ctx->drv->mem_alloc(ctx, size, &m);
    if (rc < 0)
        return rc;
    m->host = NULL;
    return weft__finish_mem(ctx, m, WEFT__MEM_DEVICE, size, mem);
}

int weft__drv_host_alloc(weft__context *ctx, size_t size, weft__mem **mem)
{
    weft__mem *m = NULL;
    int rc;

    if (!ctx || !mem)
        return weft__error(WEFT_EINVAL, "host_alloc: %s is NULL",
                           ctx ? "result" : "context");
    if (size == 0)
        return weft__error(WEFT_EINVAL, "host_alloc: size 0");
    if (!ctx->dev->props.pinned_host)
        return weft__error(WEFT_ENOTSUP,
                           "host_alloc: device %s has no pinned host memory",
                           ctx->dev->name);
    WEFT__NEED_OP(ctx->drv, host_alloc);
    WEFT__INJECT(ctx->drv, "host_alloc", WEFT_ENOMEM);
    rc = ctx->drv->host_alloc(ctx, size, &m);
    if (rc < 0)
        return rc;
    weft__assert(m->host != NULL);
    return weft__finish_mem(ctx, m, WEFT__MEM_PINNED, size, mem);
}

int weft__drv_host_register(weft__context *ctx, void *ptr, size_t size,
                            weft__mem **mem)
{
    weft__mem *m = NULL;
    int rc;

    if (!ctx || !mem || !ptr)
        return weft__error(WEFT_EINVAL, "host_register: %s is NULL",
                           !ctx   ? "context"
                           : !mem ? "result"
                                  : "pointer");
    if (size == 0)
        return weft__error(WEFT_EINVAL, "host_register: size 0");
    if (!ctx->dev->props.host_register)
        return weft__error(WEFT_ENOTSUP,
                           "host_register: device %s cannot register host "
                           "memory",
                           ctx->dev->name);
    WEFT__NEED_OP(ctx->drv, host_register);
    WEFT__INJECT(ctx->drv, "host_register", WEFT_EDRIVER);
    rc = ctx->drv->host_register(ctx, ptr, size, &m);
    if (rc < 0)
        return rc;
    m->host = ptr;
    return weft__finish_mem(ctx, m, WEFT__MEM_REGISTERED, size, mem);
}

int weft__drv_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                       size_t size, weft__mem **mem, size_t *moff)
{
    weft__mem *m = NULL;
    size_t at = 0;
    int rc;

    if (!ctx || !mem || !moff)
        return weft__error(WEFT_EINVAL, "mem_wrap: %s is NULL",
                           ctx ? "result" : "context");
    if (size == 0 || off > SIZE_MAX - size)
        return weft__error(WEFT_EINVAL, "mem_wrap: range [%zu, %zu + %zu)", off,
                           off, size);
    if (!ctx->drv->mem_wrap)
        return weft__error(WEFT_ENOTSUP,
                           "the %s driver cannot wrap the program's memory",
                           ctx->drv->name);
    WEFT__INJECT(ctx->drv, "mem_wrap", WEFT_EDRIVER);
    rc = ctx->drv->mem_wrap(ctx, handle, off, size, &m, &at);
    if (rc < 0)
        return rc;
    weft__assert(m->size >= at + size);
    m->host = NULL;
    rc = weft__finish_mem(ctx, m, WEFT__MEM_DEVICE, m->size, mem);
    m->borrowed = 1;
    *moff = at;
    return rc;
}

int weft__drv_has_ipc(const weft__device *dev)
{
    return dev && dev->drv->ipc_export && dev->drv->ipc_open &&
           dev->drv->ipc_close;
}

static int weft__no_ipc(const weft__driver *drv)
{
    return weft__error(WEFT_ENOTSUP,
                       "the %s driver has no memory shared between processes "
                       "(IPC)",
                       drv->name);
}

int weft__drv_ipc_export(weft__mem *m, size_t off, unsigned char *handle,
                         size_t *base_off)
{
    if (!m || !handle || !base_off)
        return weft__error(WEFT_EINVAL, "ipc_export: an argument is NULL");
    if (!m->drv->ipc_export)
        return weft__no_ipc(m->drv);
    if (m->kind != WEFT__MEM_DEVICE || off >= m->size)
        return weft__error(WEFT_EINVAL,
                           "ipc_export: byte %zu of %zu bytes of kind %d", off,
                           m->size, (int)m->kind);
    WEFT__INJECT(m->drv, "ipc_export", WEFT_EDRIVER);
    return m->drv->ipc_export(m, off, handle, base_off);
}

int weft__drv_ipc_open(weft__context *ctx, const unsigned char *handle,
                       uint64_t *ptr)
{
    if (!ctx || !handle || !ptr)
        return weft__error(WEFT_EINVAL, "ipc_open: an argument is NULL");
    if (!ctx->drv->ipc_open)
        return weft__no_ipc(ctx->drv);
    WEFT__INJECT(ctx->drv, "ipc_open", WEFT_EDRIVER);
    return ctx->drv->ipc_open(ctx, handle, ptr);
}

int weft__drv_ipc_close(weft__context *ctx, uint64_t ptr)
{
    if (!ctx)
        return weft__error(WEFT_EINVAL, "ipc_close: context is NULL");
    if (!ctx->drv->ipc_close)
        return weft__no_ipc(ctx->drv);
    return ctx->drv->ipc_close(ctx, ptr);
}

int weft__drv_host_is_pinned(weft__context *ctx, const void *ptr, size_t size)
{
    if (!ctx || !ptr || !size || !ctx->drv->host_is_pinned)
        return 0;
    return ctx->drv->host_is_pinned(ctx, ptr, size) == 1;
}

uint64_t weft__drv_host_seen(const weft__device *dev)
{
    return dev && dev->drv->host_seen ? dev->drv->host_seen(dev) : 0;
}

void weft__drv_host_join(const weft__device *dev, uint64_t seen)
{
    if (dev && dev->drv->host_join)
        dev->drv->host_join(dev, seen);
}

/*
 * Module creation through the compiled-kernel cache: a module built from
 * source (OpenCL C, CUDA C++, host C) on a driver that can hand out its
 * binary is looked up first; a hit that the driver refuses (a stale or
 * foreign entry) is removed and the source built again. An entry keeps the
 * build log of the module it was made from, which a module loaded from it gets
 * in place of the driver's log of the load.
 */
static int weft__module_build(weft__context *ctx,
                              const weft__module_source *src, weft__module **m)
{
    const weft__driver *drv = ctx->drv;
    const weft__device *dev = ctx->dev;
    weft__kcache_key key;
    weft__module_source bin;
    weft__source_kind kind;
    char kindstr[16], *log = NULL;
    void *bytes = NULL;
    size_t size = 0;
    int rc;

    if (!drv->module_binary ||
        (src->kind != WEFT__SRC_OPENCL_C && src->kind != WEFT__SRC_CUDA_CXX &&
         src->kind != WEFT__SRC_HOST_C))
        return drv->module_create(ctx, src, m);

    if (src->kind == WEFT__SRC_HOST_C) {
        /*
         * The same shared object serves host and sim devices alike: keyed
         * on the compiler, not the device.
         */
        char ccid[8192];
        const void *parts[] = {"weft-kcache/2",
                               weft_version(),
                               "host-c",
                               ccid,
                               src->options ? src->options : "",
                               src->data};
        const size_t lens[] = {(size_t)-1, (size_t)-1,
                               (size_t)-1, (size_t)-1,
                               (size_t)-1, src->size ? src->size : (size_t)-1};

        if ((rc = weft__hostcc_identity(ccid, sizeof ccid)) < 0)
            return rc;
        weft__kcache_key_make(&key, parts, lens, WEFT__COUNTOF(parts));
    } else {
        const void *parts[] = {"weft-kcache/2",
                               weft_version(),
                               drv->name,
                               dev->name,
                               dev->driver_version,
                               dev->platform ? dev->platform->version : "",
                               kindstr,
                               src->options ? src->options : "",
                               src->data};
        const size_t lens[] = {
            (size_t)-1, (size_t)-1, (size_t)-1,
            (size_t)-1, (size_t)-1, (size_t)-1,
            (size_t)-1, (size_t)-1, src->size ? src->size : (size_t)-1};

        snprintf(kindstr, sizeof kindstr, "%d", (int)src->kind);
        weft__kcache_key_make(&key, parts, lens, WEFT__COUNTOF(parts));
    }
    if (weft__kcache_load(&key, &bytes, &size, &kind, &log) == 0) {
        bin = *src;
        bin.kind = kind;
        bin.data = bytes;
        bin.size = size;
        rc = drv->module_create(ctx, &bin, m);
        weft__free(bytes);
        if (rc == 0) {
            /* The log of the build that made the binary, not of its load. */
            weft__free((*m)->build_log);
            (*m)->build_log = log;
            return 0;
        }
        weft__free(log);
        weft__info("kcache", "%s refused cached binary for %s (%s); rebuilding",
                   dev->name, src->name ? src->name : "module",
                   weft_last_error());
        weft__kcache_remove(&key);
    }
    rc = drv->module_create(ctx, src, m);
    if (rc < 0)
        return rc;
    (*m)->drv = drv; /* module_binary may look at the common part */
    (*m)->ctx = ctx;
    (*m)->kind = src->kind;
    if (drv->module_binary(*m, &bytes, &size, &kind) == 0) {
        weft__kcache_store(&key, bytes, size, kind, (*m)->build_log);
        weft__free(bytes);
    }
    weft_clear_error();
    return 0;
}

int weft__drv_module_create(weft__context *ctx, const weft__module_source *src,
                            weft__module **mod)
{
    weft__module *m = NULL;
    int rc;

    if (!ctx || !src || !mod)
        return weft__error(WEFT_EINVAL, "module_create: %s is NULL",
                           !ctx   ? "context"
                           : !src ? "source"
                                  : "result");
    if (!src->data)
        return weft__error(WEFT_EINVAL, "module_create: %s has no data",
                           src->name ? src->name : "source");
    if (src->kind < WEFT__SRC_HOST_TABLE || src->kind > WEFT__SRC_HOST_SO)
        return weft__error(WEFT_EINVAL, "module_create: unknown source kind %d",
                           (int)src->kind);
    WEFT__NEED_OP(ctx->drv, module_create);
    WEFT__INJECT(ctx->drv, "module_create", WEFT_EBUILD);
    rc = weft__module_build(ctx, src, &m);
    if (rc < 0)
        return rc;
    m->drv = ctx->drv;
    m->ctx = ctx;
    m->kind = src->kind;
    weft__live_add(ctx, 1);
    *mod = m;
    return 0;
}

int weft__drv_kernel_get(weft__module *mod, const char *name, weft__kernel **k)
{
    weft__kernel *nk = NULL;
    int rc;

    if (!mod || !name || !k)
        return weft__error(WEFT_EINVAL, "kernel_get: %s is NULL",
                           !mod    ? "module"
                           : !name ? "name"
                                   : "result");
    if (!*name)
        return weft__error(WEFT_EINVAL, "kernel_get: empty kernel name");
    WEFT__INJECT(mod->drv, "kernel_get", WEFT_EDRIVER);
    rc = mod->drv->kernel_get(mod, name, &nk);
    if (rc < 0)
        return rc;
    nk->drv = mod->drv;
    nk->module = mod;
    *k = nk;
    return 0;
}

int weft__drv_event_create(weft__context *ctx, unsigned flags, weft__event **ev)
{
    weft__event *e = NULL;
    int rc;

    if (!ctx || !ev)
        return weft__error(WEFT_EINVAL, "event_create: %s is NULL",
                           ctx ? "result" : "context");
    if (flags & ~(unsigned)WEFT__EVENT_TIMING)
        return weft__error(WEFT_EINVAL, "event_create: unknown flags %#x",
                           flags);
    if ((flags & WEFT__EVENT_TIMING) && !ctx->dev->props.timing_events)
        return weft__error(WEFT_ENOTSUP,
                           "event_create: device %s has no timing events",
                           ctx->dev->name);
    WEFT__NEED_OP(ctx->drv, event_create);
    WEFT__INJECT(ctx->drv, "event_create", WEFT_EDRIVER);
    rc = ctx->drv->event_create(ctx, flags, &e);
    if (rc < 0)
        return rc;
    e->drv = ctx->drv;
    e->ctx = ctx;
    e->flags = flags;
    weft__live_add(ctx, 1);
    *ev = e;
    return 0;
}

/* X(op, type, what the message calls it): releases of one object. */
#define WEFT__DRV_RELEASES(X)                                                  \
    X(mem_free, weft__mem, "memory")                                           \
    X(module_destroy, weft__module, "module")                                  \
    X(event_destroy, weft__event, "event")

#define WEFT__DRV_RELEASE(op, type, what)                                      \
    int weft__drv_##op(type *obj)                                              \
    {                                                                          \
        weft__context *ctx;                                                    \
                                                                               \
        if (!obj)                                                              \
            return weft__error(WEFT_EINVAL, #op ": " what " is NULL");         \
        ctx = obj->ctx;                                                        \
        obj->drv->op(obj);                                                     \
        weft__live_add(ctx, -1);                                               \
        return 0;                                                              \
    }
WEFT__DRV_RELEASES(WEFT__DRV_RELEASE)
#undef WEFT__DRV_RELEASE

/* ---- the checks of the calls (WEFT__DRV_CALLS) -------------------------- */
/*
 * Each returns < 0 with the error set, 1 when there is nothing to enqueue
 * (the call returns 0), or 0.
 */

static int weft__check_queue_sync(weft__queue *q)
{
    return weft__drv_check_queue(q, "queue_sync");
}

static int weft__check_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                                const void *src, size_t size)
{
    int rc;

    if ((rc = weft__drv_check_queue(q, "copy_h2d")) < 0 ||
        (rc = weft__drv_check_mem(q, dst, "destination", "copy_h2d", 1)) < 0 ||
        (rc = weft__check_range(dst, dst_off, size, "destination",
                                "copy_h2d")) < 0)
        return rc;
    if (!src)
        return weft__error(WEFT_EINVAL, "copy_h2d: source pointer is NULL");
    return size == 0;
}

static int weft__check_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                                size_t src_off, size_t size)
{
    int rc;

    if ((rc = weft__drv_check_queue(q, "copy_d2h")) < 0 ||
        (rc = weft__drv_check_mem(q, src, "source", "copy_d2h", 1)) < 0 ||
        (rc = weft__check_range(src, src_off, size, "source", "copy_d2h")) < 0)
        return rc;
    if (!dst)
        return weft__error(WEFT_EINVAL,
                           "copy_d2h: destination pointer is NULL");
    return size == 0;
}

static int weft__check_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                           weft__mem *src, size_t src_off, size_t size,
                           const char *op, int same_ctx)
{
    int rc;

    if ((rc = weft__drv_check_queue(q, op)) < 0 ||
        (rc = weft__drv_check_mem(q, dst, "destination", op, same_ctx)) < 0 ||
        (rc = weft__drv_check_mem(q, src, "source", op, same_ctx)) < 0 ||
        (rc = weft__check_range(dst, dst_off, size, "destination", op)) < 0 ||
        (rc = weft__check_range(src, src_off, size, "source", op)) < 0)
        return rc;
    if (dst == src && dst_off < src_off + size && src_off < dst_off + size)
        return weft__error(WEFT_EINVAL,
                           "%s: source and destination ranges overlap", op);
    return 0;
}

static int weft__check_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                                weft__mem *src, size_t src_off, size_t size)
{
    int rc =
        weft__check_d2d(q, dst, dst_off, src, src_off, size, "copy_d2d", 1);

    return rc < 0 ? rc : size == 0;
}

static int weft__check_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                                 weft__mem *src, size_t src_off, size_t size)
{
    int rc =
        weft__check_d2d(q, dst, dst_off, src, src_off, size, "copy_peer", 0);

    if (rc < 0)
        return rc;
    if (dst->ctx->dev == src->ctx->dev)
        return weft__error(WEFT_EINVAL,
                           "copy_peer: source and destination are both on "
                           "device %s (use copy_d2d)",
                           dst->ctx->dev->name);
    if (dst->ctx != q->ctx && src->ctx != q->ctx)
        return weft__error(WEFT_EINVAL,
                           "copy_peer: the queue's device %s is neither the "
                           "source's nor the destination's",
                           q->ctx->dev->name);
    return size == 0;
}

static int weft__check_fill(weft__queue *q, weft__mem *dst, size_t off,
                            const void *pattern, size_t pattern_size,
                            size_t size)
{
    int rc;

    if ((rc = weft__drv_check_queue(q, "fill")) < 0 ||
        (rc = weft__drv_check_mem(q, dst, "destination", "fill", 1)) < 0 ||
        (rc = weft__check_range(dst, off, size, "destination", "fill")) < 0)
        return rc;
    if (!pattern)
        return weft__error(WEFT_EINVAL, "fill: pattern is NULL");
    if (pattern_size != 1 && pattern_size != 2 && pattern_size != 4)
        return weft__error(WEFT_EINVAL,
                           "fill: pattern of %zu bytes (1, 2 or 4 allowed)",
                           pattern_size);
    if (off % pattern_size || size % pattern_size)
        return weft__error(WEFT_EINVAL,
                           "fill: offset %zu and size %zu must be multiples "
                           "of the %zu-byte pattern",
                           off, size, pattern_size);
    return size == 0;
}

static int weft__is_scalar(weft_param_type t)
{
    return t != WEFT_PARAM_BUFFER && t != WEFT_PARAM_LOCAL;
}

/* Check one argument against parameter i of k. */
static int weft__check_arg(const weft__queue *q, const weft__kernel *k,
                           unsigned i, const weft__karg *a)
{
    size_t want;

    if (a->type < WEFT_PARAM_BUFFER || a->type > WEFT_PARAM_LOCAL)
        return weft__error(WEFT_EARGS,
                           "launch of %s: argument %u has an "
                           "unknown type %d",
                           k->name, i, (int)a->type);
    if (a->type == WEFT_PARAM_BUFFER) {
        int rc;

        if (!a->u.buf.mem)
            return weft__error(WEFT_EARGS,
                               "launch of %s: buffer argument %u is NULL",
                               k->name, i);
        rc = weft__drv_check_mem(q, a->u.buf.mem, "argument", "launch", 1);
        if (rc < 0)
            return weft__error_prefix(WEFT_EARGS, "%s argument %u", k->name, i);
        if (a->u.buf.offset >= a->u.buf.mem->size)
            return weft__error(WEFT_ERANGE,
                               "launch of %s: argument %u offset %zu is "
                               "outside its %zu-byte buffer",
                               k->name, i, a->u.buf.offset, a->u.buf.mem->size);
        if (q->ctx->dev->props.arg_offset_align > 1 &&
            a->u.buf.offset % q->ctx->dev->props.arg_offset_align)
            return weft__error(WEFT_EINVAL,
                               "launch of %s: argument %u starts at offset "
                               "%zu, not a multiple of the %u-byte alignment "
                               "that device %s needs",
                               k->name, i, a->u.buf.offset,
                               q->ctx->dev->props.arg_offset_align,
                               q->ctx->dev->name);
    } else if (a->type == WEFT_PARAM_LOCAL) {
        if (a->size == 0)
            return weft__error(WEFT_EARGS,
                               "launch of %s: local argument %u has size 0",
                               k->name, i);
    } else {
        if (!a->u.value)
            return weft__error(WEFT_EARGS,
                               "launch of %s: argument %u has no value",
                               k->name, i);
        want = weft_param_type_size(a->type);
        if (want && a->size != want)
            return weft__error(WEFT_EARGS,
                               "launch of %s: argument %u is %s but has %zu "
                               "bytes",
                               k->name, i, weft_param_type_name(a->type),
                               a->size);
    }
    if (!k->params_known)
        return 0;
    if (k->params) {
        weft_param_type p = k->params[i];

        if ((p == WEFT_PARAM_BUFFER) != (a->type == WEFT_PARAM_BUFFER) ||
            (p == WEFT_PARAM_LOCAL) != (a->type == WEFT_PARAM_LOCAL))
            return weft__error(WEFT_EARGS,
                               "launch of %s: argument %u is a %s, the "
                               "parameter a %s",
                               k->name, i, weft_param_type_name(a->type),
                               weft_param_type_name(p));
        if (weft__is_scalar(p) && p != WEFT_PARAM_BYTES && a->type != p)
            return weft__error(WEFT_EARGS,
                               "launch of %s: argument %u is %s, the "
                               "parameter takes %s",
                               k->name, i, weft_param_type_name(a->type),
                               weft_param_type_name(p));
        want = p == WEFT_PARAM_BYTES && k->param_sizes
                   ? k->param_sizes[i]
                   : weft_param_type_size(p);
        if (weft__is_scalar(p) && want && a->size != want)
            return weft__error(WEFT_EARGS,
                               "launch of %s: argument %u has %zu bytes, the "
                               "parameter (%s) %zu",
                               k->name, i, a->size, weft_param_type_name(p),
                               want);
    } else if (k->param_sizes) {
        want = k->param_sizes[i];
        if (a->type == WEFT_PARAM_BUFFER  ? want != sizeof(uint64_t)
            : a->type == WEFT_PARAM_LOCAL ? 0
                                          : want != a->size)
            return weft__error(WEFT_EARGS,
                               "launch of %s: argument %u (%s, %zu bytes) "
                               "does not fit the parameter of %zu bytes",
                               k->name, i, weft_param_type_name(a->type),
                               a->type == WEFT_PARAM_BUFFER ? sizeof(uint64_t)
                                                            : a->size,
                               want);
    }
    return 0;
}
static int weft__check_launch(weft__queue *q, weft__kernel *k,
                              const weft__grid *grid, const weft__karg *args,
                              unsigned nargs)
{
    const weft_device_info *p;
    uint64_t group;
    int rc;

    if ((rc = weft__drv_check_queue(q, "launch")) < 0)
        return rc;
    if (!k || !grid)
        return weft__error(WEFT_EINVAL, "launch: %s is NULL",
                           k ? "grid" : "kernel");
    if (k->drv != q->drv || k->module->ctx != q->ctx)
        return weft__error(WEFT_EINVAL,
                           "launch of %s: the kernel was loaded on device %s, "
                           "the queue is on %s",
                           k->name, k->module->ctx->dev->name,
                           q->ctx->dev->name);
    if (weft__grid_items(grid) == 0)
        return weft__error(WEFT_EINVAL,
                           "launch of %s: empty grid (%ux%ux%u groups of "
                           "%ux%ux%u)",
                           k->name, grid->groups[0], grid->groups[1],
                           grid->groups[2], grid->group_size[0],
                           grid->group_size[1], grid->group_size[2]);
    p = &q->ctx->dev->props;
    group = (uint64_t)grid->group_size[0] * grid->group_size[1] *
            grid->group_size[2];
    if (p->max_group_size && group > p->max_group_size)
        return weft__error(WEFT_EINVAL,
                           "launch of %s: group of %llu items exceeds the "
                           "device's maximum of %u",
                           k->name, (unsigned long long)group,
                           p->max_group_size);
    if (nargs && !args)
        return weft__error(WEFT_EINVAL, "launch of %s: %u arguments but NULL",
                           k->name, nargs);
    if ((k->params_known || k->count_known) && nargs != k->nparams)
        return weft__error(WEFT_EARGS,
                           "launch of %s: %u arguments given, the kernel "
                           "takes %u",
                           k->name, nargs, k->nparams);
    for (unsigned i = 0; i < nargs; i++)
        if ((rc = weft__check_arg(q, k, i, &args[i])) < 0)
            return rc;
    return 0;
}

static int weft__check_event_record(weft__event *ev, weft__queue *q)
{
    int rc;

    if ((rc = weft__drv_check_queue(q, "event_record")) < 0)
        return rc;
    if (!ev)
        return weft__error(WEFT_EINVAL, "event_record: event is NULL");
    if (ev->ctx != q->ctx)
        return weft__error(WEFT_EINVAL,
                           "event_record: the event belongs to device %s, "
                           "the queue to %s",
                           ev->ctx->dev->name, q->ctx->dev->name);
    return 0;
}

static int weft__check_queue_wait_event(weft__queue *q, weft__event *ev)
{
    int rc;

    if ((rc = weft__drv_check_queue(q, "queue_wait_event")) < 0)
        return rc;
    if (!ev)
        return weft__error(WEFT_EINVAL, "queue_wait_event: event is NULL");
    if (ev->drv != q->drv)
        return weft__error(WEFT_EINVAL,
                           "queue_wait_event: a %s queue cannot wait on a %s "
                           "event",
                           q->drv->name, ev->drv->name);
    return 0;
}

static int weft__check_event_query(weft__event *ev)
{
    return ev ? 0 : weft__error(WEFT_EINVAL, "event_query: event is NULL");
}

static int weft__check_event_sync(weft__event *ev)
{
    return ev ? 0 : weft__error(WEFT_EINVAL, "event_sync: event is NULL");
}

static int weft__check_event_elapsed(weft__event *start, weft__event *end,
                                     uint64_t *ns)
{
    if (!start || !end || !ns)
        return weft__error(WEFT_EINVAL, "event_elapsed: %s is NULL",
                           !start ? "start"
                           : !end ? "end"
                                  : "result");
    if (!(start->flags & end->flags & WEFT__EVENT_TIMING))
        return weft__error(WEFT_EINVAL,
                           "event_elapsed: both events need timing");
    if (start->drv != end->drv)
        return weft__error(WEFT_EINVAL,
                           "event_elapsed: events of different drivers");
    return 0;
}

static int weft__check_host_fn(weft__queue *q, weft__host_fn *fn, void *user)
{
    int rc;

    (void)user;
    if ((rc = weft__drv_check_queue(q, "host_fn")) < 0)
        return rc;
    if (!fn)
        return weft__error(WEFT_EINVAL, "host_fn: function is NULL");
    return 0;
}

static int weft__check_native_call(weft__queue *q, weft__native_fn *fn,
                                   void *user)
{
    int rc;

    (void)user;
    if ((rc = weft__drv_check_queue(q, "native_call")) < 0)
        return rc;
    if (!fn)
        return weft__error(WEFT_EINVAL, "native_call: function is NULL");
    return 0;
}

static int weft__check_native_enqueue(weft__queue *q, weft__native_fn *fn,
                                      void *user)
{
    int rc;

    (void)user;
    if ((rc = weft__drv_check_queue(q, "native_enqueue")) < 0)
        return rc;
    if (!fn)
        return weft__error(WEFT_EINVAL, "native_enqueue: function is NULL");
    return 0;
}

static int weft__check_external_wait(weft__queue *q, void *ev)
{
    int rc = weft__drv_check_queue(q, "external_wait");

    if (rc == 0 && !ev)
        rc = weft__error(WEFT_EINVAL, "external_wait: event is NULL");
    return rc;
}

static int weft__check_external_record(weft__queue *q, void *ev)
{
    int rc = weft__drv_check_queue(q, "external_record");

    if (rc == 0 && !ev)
        rc = weft__error(WEFT_EINVAL, "external_record: event is NULL");
    return rc;
}

static int weft__check_graph_begin(weft__queue *q)
{
    return weft__drv_check_queue(q, "graph_begin");
}

static int weft__check_graph_end(weft__queue *q, void *old, void **graph,
                                 int *updated)
{
    (void)old;
    (void)graph;
    (void)updated;
    return weft__drv_check_queue(q, "graph_end");
}

static int weft__check_graph_launch(void *graph, weft__queue *q)
{
    int rc = weft__drv_check_queue(q, "graph_launch");

    if (rc == 0 && !graph)
        rc = weft__error(WEFT_EINVAL, "graph_launch: graph is NULL");
    return rc;
}

static int weft__check_graph_record_external(weft__event *ev, weft__queue *q)
{
    int rc = weft__drv_check_queue(q, "graph_record_external");

    if (rc == 0 && !ev)
        rc = weft__error(WEFT_EINVAL, "graph_record_external: event is NULL");
    return rc;
}

static int weft__check_graph_wait_external(weft__queue *q, weft__event *ev)
{
    int rc = weft__drv_check_queue(q, "graph_wait_external");

    if (rc == 0 && !ev)
        rc = weft__error(WEFT_EINVAL, "graph_wait_external: event is NULL");
    return rc;
}

static int weft__check_graph_node_last(weft__queue *q, uint32_t *node)
{
    int rc = weft__drv_check_queue(q, "graph_node_last");

    if (rc == 0 && !node)
        rc = weft__error(WEFT_EINVAL, "graph_node_last: node is NULL");
    return rc;
}

static int weft__check_graph_order(weft__queue *q, const uint32_t *nodes,
                                   unsigned n)
{
    int rc = weft__drv_check_queue(q, "graph_order");

    if (rc == 0 && n && !nodes)
        rc = weft__error(WEFT_EINVAL, "graph_order: nodes is NULL");
    return rc;
}

static int weft__check_graph_wait_later(weft__queue *q, weft__event *ev)
{
    int rc = weft__drv_check_queue(q, "graph_wait_later");

    if (rc == 0 && !ev)
        rc = weft__error(WEFT_EINVAL, "graph_wait_later: event is NULL");
    return rc;
}

/* ---- the calls ----------------------------------------------------------- */

#define WEFT__DRV_DEFINE(op, params, args, obj, inject)                        \
    int weft__drv_check_##op params                                            \
    {                                                                          \
        int rc = weft__check_##op args;                                        \
                                                                               \
        if (rc != 0)                                                           \
            return rc;                                                         \
        WEFT__NEED_OP((obj)->drv, op);                                         \
        return 0;                                                              \
    }                                                                          \
                                                                               \
    int weft__drv_##op params                                                  \
    {                                                                          \
        int rc = weft__check_##op args;                                        \
                                                                               \
        if (rc != 0)                                                           \
            return rc < 0 ? rc : 0;                                            \
        WEFT__NEED_OP((obj)->drv, op);                                         \
        if (inject)                                                            \
            WEFT__INJECT((obj)->drv, #op, WEFT_EDRIVER);                       \
        return (obj)->drv->op args;                                            \
    }
WEFT__DRV_CALLS(WEFT__DRV_DEFINE)
#undef WEFT__DRV_DEFINE

int weft__drv_graph_supported(const weft__device *dev)
{
    const weft__driver *drv;

    if (!dev)
        return 0;
    drv = dev->drv;
    if (!drv->graph_begin || !drv->graph_end || !drv->graph_launch ||
        !drv->graph_destroy)
        return 0;
    return !drv->graph_supported || drv->graph_supported(dev);
}

void weft__drv_graph_destroy(weft__context *ctx, void *graph)
{
    if (ctx && graph)
        ctx->drv->graph_destroy(graph);
}

int weft__drv_native_supported(const weft__device *dev)
{
    return dev && dev->drv->native_call && dev->drv->native_mem;
}

void weft__drv_native_context(weft__context *ctx, weft__native_queue *out)
{
    memset(out, 0, sizeof *out);
    if (ctx && ctx->drv->native_context)
        ctx->drv->native_context(ctx, out);
}

void weft__drv_native_mem(weft__mem *m, size_t off, weft__native_mem *out)
{
    memset(out, 0, sizeof *out);
    if (m && m->drv->native_mem)
        m->drv->native_mem(m, off, out);
}

int weft__drv_external_mark(const weft__driver *drv, void *queue, void **mark)
{
    WEFT__NEED_OP(drv, external_mark);
    WEFT__NEED_OP(drv, external_mark_end);
    WEFT__INJECT(drv, "external_mark", WEFT_EDRIVER);
    return drv->external_mark(queue, mark);
}

int weft__drv_external_mark_end(const weft__driver *drv, void *mark, int wait)
{
    WEFT__NEED_OP(drv, external_mark_end);
    return drv->external_mark_end(mark, wait);
}

/* The program's event must be of q's driver (and context: the driver's
 * own entry points check what else they need). */
static int weft__own_event(weft__queue *q, void *ev, const char *op)
{
    const weft__event *e = ev;

    if (e->drv != q->drv)
        return weft__error(WEFT_EINVAL,
                           "%s: the event belongs to the %s driver, the queue "
                           "to %s",
                           op, e->drv->name, q->drv->name);
    return 0;
}

int weft__drv_own_external_wait(weft__queue *q, void *ev)
{
    int rc = weft__own_event(q, ev, "external_wait");

    return rc < 0 ? rc : weft__drv_queue_wait_event(q, ev);
}

int weft__drv_own_external_record(weft__queue *q, void *ev)
{
    int rc = weft__own_event(q, ev, "external_record");

    return rc < 0 ? rc : weft__drv_event_record(ev, q);
}

int weft__drv_own_external_mark(void *queue, void **mark)
{
    weft__queue *q = queue;
    weft__event *ev = NULL;
    int rc;

    if (!q)
        return weft__error(WEFT_EINVAL, "external_mark: queue is NULL");
    if ((rc = weft__drv_event_create(q->ctx, 0, &ev)) < 0)
        return rc;
    if ((rc = weft__drv_event_record(ev, q)) < 0) {
        weft__drv_event_destroy(ev);
        return rc;
    }
    *mark = ev;
    return 0;
}

int weft__drv_own_external_mark_end(void *mark, int wait)
{
    int rc = wait ? weft__drv_event_sync(mark) : 0;

    weft__drv_event_destroy(mark);
    return rc;
}
