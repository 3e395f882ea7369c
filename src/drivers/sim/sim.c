/*
 * The sim driver: simulated GPUs in virtual time.
 *
 * A sim platform is one configured machine ("weft sim") of identical
 * devices of type WEFT_DEVICE_SIMULATED, named "sim <name> #<i>". It lets
 * the scheduler be tested without hardware and on machines larger than any
 * we own. Every operation gets a virtual start and end when it is enqueued
 * and is appended to the platform's record (sim.h), which tests read.
 *
 * Configuration: "key=value" pairs separated by commas (weft_runtime_options
 * .sim_config, or WEFT_SIM); sim_config.c lists the keys and their defaults.
 *
 * Time model. A device has one compute engine (engine 0: kernels, fills and
 * copies within the device, one at a time) and copy_engines copy engines
 * (1..copy_engines). Copies pick engines by direction:
 *   0 engines: every copy runs on the compute engine;
 *   1 engine:  every copy on engine 1 (all copies serialise);
 *   2 engines: H2D on 1, D2H and peer on 2;
 *   3 or more: H2D on 1, D2H on 2, peer copies on whichever of 3.. can start
 *              first (the lowest on a tie).
 * A peer copy uses the engine of the queue's device. Each engine runs one
 * operation at a time; different engines overlap. An operation starts at
 * the earliest time >= its queue's ready time at which its engine is idle
 * for its whole duration: an engine backfills idle gaps left by operations
 * that wait, keeping the last 128 busy spans (older gaps are closed). A
 * queue is in order: its ready time becomes the operation's end.
 * queue_wait_event moves the queue's ready time to the event's, if later;
 * an event's time is its queue's ready time when recorded. Durations:
 *   copy:    latency + bytes / bandwidth (rounded to the nearest ns);
 *   kernel:  launch_lat + sim_cost(items, args, user) when the kernel has a
 *            cost function (buffer arguments are NULL unless real_data=1),
 *            else launch_lat + items * item_ns (rounded);
 *   fill, local copy: launch_lat + bytes / d2d_bw;
 *   host function: host_fn_ns, on no engine.
 * All of it is computed at enqueue time under the platform lock, so the same
 * submission order always gives the same record. Queue priorities (0, or
 * -1 for high) are recorded with each operation and change no time: work
 * is placed when it is enqueued, so what priority buys on a sim device is
 * what weft does with it (issue order, a lane of its own).
 *
 * The host's clock. Enqueueing takes no virtual time, but a thread that
 * blocks learns when work completes: queue_sync and event_sync (and
 * queue_release, which syncs) move the calling thread's clock to the
 * virtual time of what it waited for, and nothing that thread enqueues
 * afterwards starts earlier, as on a real machine where the host submits
 * only once the wait has returned. The clock is per thread so that a
 * progress thread that waits does not hold back, by a race, what another
 * thread submits; event_query moves no clock, since a poll has no virtual
 * time of its own, and answers as of the calling thread's clock: an event
 * whose virtual time is later is not complete yet (so a host that polls
 * before it waits sees what a real one would). A thread keeps the clock of the
 * last platform it waited on.
 *
 * Data. With real_data=0 device memory is only counted against mem (beyond
 * it mem_alloc fails with WEFT_EDEVMEM), copies move nothing and kernels do
 * not run. With real_data=1 device memory is host memory and effects run.
 * Pinned memory and host functions are always real. host_is_pinned says
 * 1 for ranges inside pinned memory of the platform (host_alloc), as CUDA
 * does for memory from cuMemHostAlloc, so that the layers above copy from
 * and into it in place.
 *
 * Execution. Effects run asynchronously, in order, on a worker thread of
 * their queue, started when the queue first has something to run (in
 * counted mode only host functions and waits for unfinished work do), so
 * that a blocked queue holds back only what depends on it. A record whose
 * queue still has unfinished work makes a marker that the queue's worker
 * sets on reaching it; a wait on an unfinished marker becomes an item that
 * blocks its queue's worker until the marker is set. Markers are counted
 * references shared by the event and the items that name them, so that an
 * event may be recorded again or destroyed while work still refers to its
 * old marker.
 *
 * Native graphs (graphs=1): see sim_graph.c. The objects, the lock and the
 * functions the files share: sim_internal.h.
 */
#include "sim_internal.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static uint64_t sim_platform_ids; /* atomic; last sim_platform.id handed out */

int weft__sim_pthread_fail(const char *call, int e)
{
    return weft__driver_error(WEFT_ENOMEM, "sim", e, weft__errno_name(e),
                              "sim: %s failed: %s", call, strerror(e));
}

/* ---- discovery --------------------------------------------------------- */

/* Every queue has been released (so every worker has exited). */
static void sim_platform_free(sim_platform *p)
{
    if (p->inited & SIM_INIT_DONE_CV)
        pthread_cond_destroy(&p->done_cv);
    if (p->inited & SIM_INIT_LOCK)
        pthread_mutex_destroy(&p->lock);
    if (p->base.devices)
        for (unsigned i = 0; i < p->base.ndevices; i++)
            weft__free(p->base.devices[i]);
    weft__free(p->base.devices);
    weft__free(p->record);
    weft__free(p->log);
    weft__free(p);
}

static int sim_platform_start(sim_platform *p)
{
    int e;

    e = weft__fault("sim.pthread_mutex_init")
            ? ENOMEM
            : pthread_mutex_init(&p->lock, NULL);
    if (e)
        return weft__sim_pthread_fail("pthread_mutex_init", e);
    p->inited |= SIM_INIT_LOCK;
    e = weft__fault("sim.pthread_cond_init")
            ? ENOMEM
            : pthread_cond_init(&p->done_cv, NULL);
    if (e)
        return weft__sim_pthread_fail("pthread_cond_init", e);
    p->inited |= SIM_INIT_DONE_CV;
    return 0;
}

static void sim_device_init(sim_platform *p, sim_device *d, unsigned i)
{
    const sim_config *c = &p->cfg;
    weft__device *b = &d->base;
    weft_device_info *info = &b->props;

    b->drv = &weft__driver_sim;
    b->platform = &p->base;
    b->driver_index = i;
    snprintf(b->name, sizeof b->name, "sim %s #%u", c->name, i);
    weft__strlcpy(b->vendor, "weft", sizeof b->vendor);
    snprintf(b->driver_version, sizeof b->driver_version, "weft sim %s",
             weft_version());
    d->nengines = 1 + c->copy_engines;
    info->size = sizeof *info;
    info->driver = "sim";
    info->driver_index = i;
    info->type = WEFT_DEVICE_SIMULATED;
    info->name = b->name;
    info->vendor = b->vendor;
    info->platform = p->base.name;
    info->driver_version = b->driver_version;
    info->global_mem = c->mem;
    info->max_alloc = c->mem;
    info->local_mem = 48 << 10;
    info->compute_units = c->compute_units;
    info->max_group_size = 1024;
    info->copy_engines = c->copy_engines;
    info->concurrent_kernels = 0; /* one compute engine */
    info->timing_events = 1;
    info->pinned_host = 1;
    info->host_register = 1;
    /* As CUDA: lower is higher. A queue's priority goes into the record. */
    info->queue_priority_low = 0;
    info->queue_priority_high = -1;
    info->pci_bus_id = b->pci_bus_id;
    info->numa_node = -1;
    info->cpuset = b->cpuset;
}

static int sim_platforms_open(const weft__driver_config *cfg,
                              weft__platform ***platforms, unsigned *nplatforms)
{
    weft__platform **list;
    sim_platform *p;
    sim_config c;
    int rc;

    rc = weft__sim_config_parse(cfg ? cfg->sim_config : NULL,
                                cfg ? cfg->sim_real_data : 0, &c);
    if (rc < 0)
        return rc;
    list = weft__calloc(1, sizeof *list);
    p = weft__calloc(1, sizeof *p);
    if (!list || !p) {
        weft__free(list);
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the platform");
    }
    p->cfg = c;
    if (c.check && c.real_data &&
        !(p->log = weft__calloc(SIM_LOG, sizeof *p->log))) {
        weft__free(list);
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "sim: out of memory for the check");
    }
    p->id = __atomic_add_fetch(&sim_platform_ids, 1, __ATOMIC_RELAXED);
    p->base.drv = &weft__driver_sim;
    weft__strlcpy(p->base.name, "weft sim", sizeof p->base.name);
    weft__strlcpy(p->base.vendor, "weft", sizeof p->base.vendor);
    weft__strlcpy(p->base.version, weft_version(), sizeof p->base.version);
    p->base.devices = weft__calloc(c.devices, sizeof *p->base.devices);
    if (!p->base.devices) {
        rc = weft__error(WEFT_ENOMEM, "sim: out of memory for %u devices",
                         c.devices);
        goto fail;
    }
    for (unsigned i = 0; i < c.devices; i++) {
        sim_device *d = weft__calloc(1, sizeof *d + (1 + c.copy_engines) *
                                                        sizeof d->engine[0]);

        if (!d) {
            rc =
                weft__error(WEFT_ENOMEM, "sim: out of memory for device %u", i);
            goto fail;
        }
        p->base.devices[i] = &d->base;
        p->base.ndevices = i + 1;
        sim_device_init(p, d, i);
    }
    rc = sim_platform_start(p);
    if (rc < 0)
        goto fail;
    list[0] = &p->base;
    *platforms = list;
    *nplatforms = 1;
    weft__debug("sim", "%u simulated %s devices, %u copy engines each%s",
                c.devices, c.name, c.copy_engines,
                c.real_data ? ", real data" : "");
    return 0;
fail:
    sim_platform_free(p);
    weft__free(list);
    return rc;
}

static void sim_platforms_close(weft__platform **platforms, unsigned nplatforms)
{
    for (unsigned i = 0; i < nplatforms; i++)
        sim_platform_free((sim_platform *)platforms[i]);
    weft__free(platforms);
}

int weft__sim_peers(const sim_platform *p, const weft__device *a,
                    const weft__device *b)
{
    unsigned g = p->cfg.peer_group;

    if (a->platform != b->platform)
        return 0;
    if (a == b)
        return 1;
    if (!p->cfg.peer)
        return 0;
    return !g || a->driver_index / g == b->driver_index / g;
}

static int sim_can_access_peer(weft__device *a, weft__device *b, int *can)
{
    *can = weft__sim_peers(sim_platform_of(a), a, b);
    return 0;
}

/* ---- contexts ---------------------------------------------------------- */

static int sim_context_create(weft__device *dev, weft__context **ctx)
{
    sim_context *c = weft__calloc(1, sizeof *c);

    if (!c)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a context");
    *ctx = &c->base;
    return 0;
}

static void sim_context_destroy(weft__context *ctx)
{
    weft__free(ctx);
}

/* ---- memory ------------------------------------------------------------ */

static int sim_mem_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_device *d = sim_dev(ctx->dev);
    sim_mem *m = weft__calloc(1, sizeof *m);
    uint64_t used;
    int rc = 0;

    if (!m)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a mem");
    sim_lock(p);
    used = d->mem_used;
    if (size > p->cfg.mem - used)
        rc = WEFT_EDEVMEM;
    else
        d->mem_used += size;
    sim_unlock(p);
    if (rc < 0) {
        weft__free(m);
        return weft__driver_error(
            WEFT_EDEVMEM, "sim", 0, "out of device memory",
            "sim: %zu bytes do not fit on %s (%llu of %llu bytes in use)", size,
            ctx->dev->name, (unsigned long long)used,
            (unsigned long long)p->cfg.mem);
    }
    if (p->cfg.real_data) {
        m->data = weft__malloc(size);
        if (!m->data) {
            sim_lock(p);
            d->mem_used -= size;
            sim_unlock(p);
            weft__free(m);
            return weft__error(WEFT_ENOMEM,
                               "sim: cannot allocate %zu bytes of host memory "
                               "for device memory of %s (real_data=1)",
                               size, ctx->dev->name);
        }
        m->owned = 1;
    }
    m->base.kind = WEFT__MEM_DEVICE;
    m->base.size = size;
    *out = &m->base;
    return 0;
}

static int sim_host_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    sim_platform *p = sim_ctx_platform(ctx);
    sim_mem *m = weft__calloc(1, sizeof *m);

    if (m)
        m->data = weft__malloc(size);
    if (!m || !m->data) {
        weft__free(m);
        return weft__error(WEFT_ENOMEM,
                           "sim: cannot allocate %zu bytes of pinned memory",
                           size);
    }
    m->owned = 1;
    m->base.kind = WEFT__MEM_PINNED;
    m->base.size = size;
    m->base.host = m->data;
    sim_lock(p);
    m->pinned_len = size;
    m->next = p->pinned;
    p->pinned = m;
    sim_unlock(p);
    *out = &m->base;
    return 0;
}

static int sim_host_is_pinned(weft__context *ctx, const void *ptr, size_t size)
{
    sim_platform *p = sim_ctx_platform(ctx);
    const unsigned char *a = ptr;
    int in = 0;

    sim_lock(p);
    for (sim_mem *m = p->pinned; m && !in; m = m->next)
        in = a >= m->data && size <= m->pinned_len &&
             (size_t)(a - m->data) <= m->pinned_len - size;
    sim_unlock(p);
    return in;
}

static int sim_host_register(weft__context *ctx, void *ptr, size_t size,
                             weft__mem **out)
{
    sim_mem *m = weft__calloc(1, sizeof *m);

    if (!m)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a mem");
    m->data = ptr;
    m->base.kind = WEFT__MEM_REGISTERED;
    m->base.size = size;
    m->base.host = ptr;
    *out = &m->base;
    return 0;
}

/*
 * The program's memory on the sim is a weft__mem of the sim's own, made on
 * the same device (tests make one with mem_alloc): the wrap shares its
 * bytes and counts none.
 */
static int sim_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                        size_t size, weft__mem **out, size_t *moff)
{
    sim_mem *src = (sim_mem *)(uintptr_t)handle, *m;

    if (!src || src->base.drv != &weft__driver_sim ||
        src->base.kind != WEFT__MEM_DEVICE)
        return weft__error(WEFT_EINVAL,
                           "sim: handle %#llx is not device memory of the sim",
                           (unsigned long long)handle);
    if (src->base.ctx->dev != ctx->dev)
        return weft__error(WEFT_EINVAL, "sim: the memory is on %s, not on %s",
                           src->base.ctx->dev->name, ctx->dev->name);
    if (off > src->base.size || size > src->base.size - off)
        return weft__error(WEFT_ERANGE,
                           "sim: [%zu, %zu + %zu) is outside the %zu bytes of "
                           "the memory",
                           off, off, size, src->base.size);
    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a mem");
    m->data = src->data;
    m->base.kind = WEFT__MEM_DEVICE;
    m->base.size = src->base.size;
    *out = &m->base;
    *moff = off;
    return 0;
}

static void sim_mem_free(weft__mem *wm)
{
    sim_mem *m = (sim_mem *)wm;

    if (wm->kind == WEFT__MEM_DEVICE && !wm->borrowed) {
        sim_platform *p = sim_ctx_platform(wm->ctx);
        sim_device *d = sim_dev(wm->ctx->dev);

        sim_lock(p);
        weft__assert(d->mem_used >= wm->size);
        d->mem_used -= wm->size;
        sim_unlock(p);
    }
    if (wm->kind == WEFT__MEM_PINNED) {
        sim_platform *p = sim_ctx_platform(wm->ctx);
        sim_mem **pp;

        sim_lock(p);
        for (pp = &p->pinned; *pp != m; pp = &(*pp)->next)
            ;
        *pp = m->next;
        sim_unlock(p);
    }
    if (m->owned)
        weft__free(m->data);
    weft__free(m);
}

/* ---- modules and kernels ----------------------------------------------- */

static int sim_module_create(weft__context *ctx, const weft__module_source *src,
                             weft__module **out)
{
    const weft_host_kernel *table = src->data;
    size_t n = src->size, bytes, off;
    sim_module *m;
    char *blob;

    if (src->kind == WEFT__SRC_HOST_C || src->kind == WEFT__SRC_HOST_SO) {
        /*
         * Portable source: the host's shared object; its kernels run with
         * real_data=1 only, as every kernel.
         */
        weft__module_source tsrc = *src;
        weft__hostcc_lib *lib;
        char *log;
        int rc;

        if ((rc = weft__hostcc_open(src, &lib, &log)) < 0)
            return rc;
        tsrc.kind = WEFT__SRC_HOST_TABLE;
        tsrc.data = weft__hostcc_table(lib, &tsrc.size);
        if ((rc = sim_module_create(ctx, &tsrc, out)) < 0) {
            weft__hostcc_close(lib);
            weft__free(log);
            return rc;
        }
        ((sim_module *)*out)->lib = lib;
        (*out)->build_log = log;
        return 0;
    }
    if (src->kind != WEFT__SRC_HOST_TABLE)
        return weft__error(WEFT_ENOTSUP,
                           "sim: %s: a simulated device takes host kernel "
                           "tables and portable source only",
                           src->name ? src->name : "module");
    if (n > UINT32_MAX)
        return weft__error(WEFT_EINVAL, "sim: %zu kernels in one module", n);
    /*
     * Everything in one allocation, so that the module does not depend on
     * the caller's table: the module, its kernels, each kernel's parameter
     * types and names. Every piece is rounded to SIM_ALIGN.
     */
    bytes = SIM_ALIGN_UP(sizeof *m) + SIM_ALIGN_UP(n * sizeof(sim_kernel));
    for (size_t i = 0; i < n; i++) {
        if (!table[i].name || !*table[i].name)
            return weft__error(WEFT_EINVAL, "sim: %s: kernel %zu has no name",
                               src->name ? src->name : "module", i);
        if (table[i].nparams && !table[i].params)
            return weft__error(WEFT_EINVAL,
                               "sim: %s: kernel %s has %u parameters but no "
                               "types",
                               src->name ? src->name : "module", table[i].name,
                               table[i].nparams);
        /* As the host driver checks its tables (host.c). */
        for (unsigned p = 0; p < table[i].nparams; p++) {
            weft_param_type t = table[i].params[p];

            if (t < WEFT_PARAM_BUFFER || t > WEFT_PARAM_LOCAL)
                return weft__error(WEFT_EINVAL,
                                   "sim: %s: parameter %u of %s has an "
                                   "unknown type %d",
                                   src->name ? src->name : "module", p,
                                   table[i].name, (int)t);
            if (t == WEFT_PARAM_BYTES &&
                (!table[i].param_sizes || table[i].param_sizes[p] == 0))
                return weft__error(WEFT_EINVAL,
                                   "sim: %s: parameter %u of %s is BYTES "
                                   "without a size",
                                   src->name ? src->name : "module", p,
                                   table[i].name);
        }
        bytes += SIM_ALIGN_UP(table[i].nparams * sizeof(size_t)) +
                 SIM_ALIGN_UP(table[i].nparams * sizeof(weft_param_type)) +
                 SIM_ALIGN_UP(strlen(table[i].name) + 1);
    }
    blob = weft__calloc(1, bytes);
    if (!blob)
        return weft__error(WEFT_ENOMEM, "sim: out of memory for a module");
    m = (sim_module *)(void *)blob;
    off = SIM_ALIGN_UP(sizeof *m);
    m->kernels = (sim_kernel *)(void *)(blob + off);
    m->nkernels = (unsigned)n;
    off += SIM_ALIGN_UP(n * sizeof(sim_kernel));
    for (size_t i = 0; i < n; i++) {
        const weft_host_kernel *h = &table[i];
        sim_kernel *k = &m->kernels[i];
        size_t *sizes = (size_t *)(void *)(blob + off);
        weft_param_type *types;
        char *name;

        off += SIM_ALIGN_UP(h->nparams * sizeof(size_t));
        types = (weft_param_type *)(void *)(blob + off);
        off += SIM_ALIGN_UP(h->nparams * sizeof(weft_param_type));
        name = blob + off;
        off += SIM_ALIGN_UP(strlen(h->name) + 1);
        memcpy(name, h->name, strlen(h->name) + 1);
        for (unsigned j = 0; j < h->nparams; j++) {
            types[j] = h->params[j];
            if (h->params[j] == WEFT_PARAM_BUFFER)
                sizes[j] = sizeof(uint64_t);
            else if (h->params[j] == WEFT_PARAM_BYTES)
                sizes[j] = h->param_sizes ? h->param_sizes[j] : 0;
            else
                sizes[j] = weft_param_type_size(h->params[j]);
        }
        k->hk = *h;
        k->hk.name = name;
        k->hk.params = types;
        k->hk.param_sizes = sizes;
        k->base.name = name;
        k->base.params_known = 1;
        k->base.nparams = h->nparams;
        k->base.params = types;
        k->base.param_sizes = sizes;
    }
    weft__assert_internal(off == bytes);
    *out = &m->base;
    return 0;
}

static void sim_module_destroy(weft__module *mod)
{
    /* The names in the module's allocation are copies: the lib may go. */
    weft__hostcc_close(((sim_module *)mod)->lib);
    weft__free(mod->build_log);
    weft__free(mod);
}

static int sim_module_binary(weft__module *mod, void **bytes, size_t *size,
                             weft__source_kind *kind)
{
    sim_module *m = (sim_module *)mod;

    if (!m->lib)
        return weft__error(WEFT_ENOTSUP, "sim: no binary for a table");
    *kind = WEFT__SRC_HOST_SO;
    return weft__hostcc_binary(m->lib, bytes, size);
}

static int sim_kernel_get(weft__module *mod, const char *name,
                          weft__kernel **out)
{
    sim_module *m = (sim_module *)mod;

    for (unsigned i = 0; i < m->nkernels; i++)
        if (!strcmp(m->kernels[i].hk.name, name)) {
            *out = &m->kernels[i].base;
            return 0;
        }
    return weft__error(WEFT_ENOTFOUND, "sim: no kernel named '%s' in module",
                       name);
}

/* ---- the record (sim.h) ------------------------------------------------ */

uint64_t weft__sim_hazards(weft__device *dev)
{
    sim_platform *p = sim_platform_of(dev);
    uint64_t n;

    sim_lock(p);
    n = p->hazards;
    sim_unlock(p);
    return n;
}

const weft__sim_op *weft__sim_record(weft__device *dev, size_t *count)
{
    sim_platform *p = sim_platform_of(dev);
    const weft__sim_op *r;

    sim_lock(p);
    r = p->record;
    *count = p->nrecord;
    sim_unlock(p);
    return r;
}

void weft__sim_record_clear(weft__device *dev)
{
    sim_platform *p = sim_platform_of(dev);

    sim_lock(p);
    p->nrecord = 0;
    sim_unlock(p);
}

uint64_t weft__sim_now(weft__device *dev)
{
    sim_platform *p = sim_platform_of(dev);
    uint64_t t;

    sim_lock(p);
    t = p->horizon;
    sim_unlock(p);
    return t;
}

uint64_t weft__sim_bytes(weft__device *dev, weft__sim_op_kind kind, int src,
                         int dst)
{
    sim_platform *p = sim_platform_of(dev);
    uint64_t bytes = 0;

    sim_lock(p);
    for (size_t i = 0; i < p->nrecord; i++) {
        const weft__sim_op *op = &p->record[i];

        if (op->kind == kind && op->src_device == src && op->dst_device == dst)
            bytes += op->bytes;
    }
    sim_unlock(p);
    return bytes;
}

const char *weft__sim_op_name(weft__sim_op_kind kind)
{
    switch (kind) {
    case WEFT__SIM_H2D:
        return "h2d";
    case WEFT__SIM_D2H:
        return "d2h";
    case WEFT__SIM_D2D:
        return "d2d";
    case WEFT__SIM_PEER:
        return "peer";
    case WEFT__SIM_FILL:
        return "fill";
    case WEFT__SIM_KERNEL:
        return "kernel";
    case WEFT__SIM_HOST_FN:
        return "host_fn";
    case WEFT__SIM_EVENT_RECORD:
        return "record";
    case WEFT__SIM_EVENT_WAIT:
        return "wait";
    }
    return "unknown";
}

/*
 * Native nodes: the sim's own objects, so that a test's function enqueues
 * sim operations (weft__drv_*) on the node's queue as a CUDA function
 * would on its stream.
 */
static int sim_native_call(weft__queue *q, weft__native_fn *fn, void *user)
{
    weft__native_queue nq = {q->ctx, q->ctx->dev, q};

    return fn(&nq, user);
}

static void sim_native_context(weft__context *ctx, weft__native_queue *out)
{
    out->context = ctx;
    out->device = ctx->dev;
}

static void sim_native_mem(weft__mem *mem, size_t off, weft__native_mem *out)
{
    sim_mem *m = (sim_mem *)mem;

    out->mem = mem;
    out->offset = off;
    if (m->data) {
        out->host = m->data + off;
        out->address = (uint64_t)(uintptr_t)out->host;
    }
}

const weft__driver weft__driver_sim = {
    .name = "sim",
    .virtual_time = 1,
    .host_seen = weft__sim_host_seen,
    .host_join = weft__sim_host_join,
    .source_kinds =
        (const weft_source_kind[]){WEFT_SOURCE_HOST, WEFT_SOURCE_PORTABLE, 0},
    .portable_kind = WEFT__SRC_HOST_C,
    .platforms_open = sim_platforms_open,
    .platforms_close = sim_platforms_close,
    .can_access_peer = sim_can_access_peer,
    .context_create = sim_context_create,
    .context_destroy = sim_context_destroy,
    .queue_create = weft__sim_queue_create,
    .queue_sync = weft__sim_queue_sync,
    .queue_release = weft__sim_queue_release,
    .mem_alloc = sim_mem_alloc,
    .host_alloc = sim_host_alloc,
    .host_register = sim_host_register,
    .host_is_pinned = sim_host_is_pinned,
    .mem_free = sim_mem_free,
    .mem_wrap = sim_mem_wrap,
    .copy_h2d = weft__sim_copy_h2d,
    .copy_d2h = weft__sim_copy_d2h,
    .copy_d2d = weft__sim_copy_d2d,
    .copy_peer = weft__sim_copy_peer,
    .copy_h2d_rect = weft__sim_copy_h2d_rect,
    .copy_d2h_rect = weft__sim_copy_d2h_rect,
    .copy_d2d_rect = weft__sim_copy_d2d_rect,
    .copy_peer_rect = weft__sim_copy_peer_rect,
    .fill = weft__sim_fill,
    .module_create = sim_module_create,
    .module_destroy = sim_module_destroy,
    .module_binary = sim_module_binary,
    .kernel_get = sim_kernel_get,
    .launch = weft__sim_launch,
    .event_create = weft__sim_event_create,
    .event_record = weft__sim_event_record,
    .queue_wait_event = weft__sim_queue_wait_event,
    .event_query = weft__sim_event_query,
    .event_sync = weft__sim_event_sync,
    .event_elapsed = weft__sim_event_elapsed,
    .event_destroy = weft__sim_event_destroy,
    .host_fn = weft__sim_host_fn,
    .native_call = sim_native_call,
    .native_context = sim_native_context,
    .native_mem = sim_native_mem,
    .native_capture = 1,
    .external_wait = weft__drv_own_external_wait,
    .external_record = weft__drv_own_external_record,
    .external_mark = weft__drv_own_external_mark,
    .external_mark_end = weft__drv_own_external_mark_end,
    .graph_record_external = weft__sim_graph_record_external,
    .graph_wait_external = weft__sim_graph_wait_external,
    .graph_supported = weft__sim_graph_supported,
    .graph_begin = weft__sim_graph_begin,
    .graph_end = weft__sim_graph_end,
    .graph_launch = weft__sim_graph_launch,
    .graph_destroy = weft__sim_graph_destroy,
};
