/*
 * The host driver: discovery, contexts, memory and modules. Queues and
 * events are in host_queue.c, launches and the thread pool in host_pool.c.
 */
#include "host_internal.h"

#include "../../base/os.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The ranges of WEFT_HOST_DEVICES and WEFT_HOST_THREADS (base/options.h). */
#define HOST_MAX_DEVICES 256
#define HOST_MAX_THREADS 4096
#define HOST_LOCAL_MEM   (64 * 1024)
#define HOST_MAX_GROUP   1024

int weft__host_os_error(int weft_code, int err, const char *what)
{
    /* Resource exhaustion is what the caller can act on; the rest is ours. */
    int code = err == EAGAIN || err == ENOMEM ? weft_code : WEFT_EDRIVER;

    return weft__driver_error(code, "host", err, weft__errno_name(err),
                              "host: %s: %s", what, strerror(err));
}

/* ---- discovery --------------------------------------------------------- */

/* The CPU's model as /proc/cpuinfo names it; a name is only for people. */
static void cpu_model(char *out, size_t size)
{
    char line[512];
    FILE *f = fopen("/proc/cpuinfo", "r");

    weft__strlcpy(out, "unknown model", size);
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (strncmp(line, "model name", 10) != 0 || !colon)
            continue;
        colon += 1 + strspn(colon + 1, " \t");
        colon[strcspn(colon, "\n")] = '\0';
        if (*colon)
            weft__strlcpy(out, colon, size);
        break;
    }
    fclose(f);
}

static uint64_t physical_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

    if (pages <= 0 || page <= 0) {
        weft__warn("host", "physical memory unknown; assuming 1 GiB");
        return (uint64_t)1 << 30;
    }
    return (uint64_t)pages * (uint64_t)page;
}

static void host_platforms_close(weft__platform **platforms, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        weft__platform *p = platforms[i];
        weft__host_runners_fini(&((weft__host_platform *)p)->runners);
        for (unsigned d = 0; p->devices && d < p->ndevices; d++)
            weft__free(p->devices[d]);
        weft__free(p->devices);
        weft__free(p);
    }
    weft__free(platforms);
}

static void device_init(weft__host_device *hd, weft__platform *p, unsigned i,
                        unsigned nthreads, uint64_t mem, const char *model)
{
    weft__device *d = &hd->base;
    weft_device_info *info = &d->props;

    hd->nthreads = nthreads;
    d->drv = &weft__driver_host;
    d->platform = p;
    d->driver_index = i;
    snprintf(d->name, sizeof d->name, "host CPU %u (%s)", i, model);
    weft__strlcpy(d->vendor, "weft", sizeof d->vendor);
    weft__strlcpy(d->driver_version, p->version, sizeof d->driver_version);

    info->size = sizeof *info;
    info->driver = weft__driver_host.name;
    info->driver_index = i;
    info->type = WEFT_DEVICE_CPU;
    info->name = d->name;
    info->vendor = d->vendor;
    info->platform = p->name;
    info->driver_version = d->driver_version;
    /*
     * Every host device reports all of RAM: they share it, and a device's
     * memory is only a set of allocations. One allocation is capped at half
     * of RAM: the kernel overcommits, so a larger one would "succeed" and
     * fail later, when touched, by killing the process; capped, it fails
     * cleanly with WEFT_EDEVMEM.
     */
    info->global_mem = mem;
    info->max_alloc = mem / 2;
    info->local_mem = HOST_LOCAL_MEM;
    info->compute_units = nthreads;
    info->max_group_size = HOST_MAX_GROUP;
    /* Copies run on queue runners: two queues copy at once. */
    info->copy_engines = 2;
    info->concurrent_kernels = 1;
    info->timing_events = 1;
    info->pinned_host = 1;
    info->host_register = 1;
    /* Host devices keep separate memories on purpose (see host_internal.h). */
    info->unified_memory = 0;
    info->managed_memory = 0;
    info->svm = 0;
    /* High queues go ahead of the others on the runnable list. */
    info->queue_priority_low = 0;
    info->queue_priority_high = -1;
    info->pci_bus_id = d->pci_bus_id; /* "": no PCI device */
    info->numa_node = -1;
    info->cpuset = d->cpuset;
}

static int host_platforms_open(const weft__driver_config *cfg,
                               weft__platform ***platforms,
                               unsigned *nplatforms)
{
    unsigned ndev = cfg && cfg->host_devices ? cfg->host_devices : 1;
    unsigned nthreads = cfg && cfg->host_threads ? cfg->host_threads : 0;
    weft__platform **list;
    weft__host_platform *hp;
    weft__platform *p;
    char model[192];
    uint64_t mem;
    int rc;

    if (ndev > HOST_MAX_DEVICES)
        return weft__error(WEFT_EINVAL, "host: %u devices asked, at most %u",
                           ndev, HOST_MAX_DEVICES);
    if (nthreads == 0) {
        unsigned cores = weft__cpuset_count(NULL, NULL);

        nthreads = cores ? WEFT__MIN(cores, HOST_MAX_THREADS) : 1;
    }
    if (nthreads > HOST_MAX_THREADS)
        return weft__error(WEFT_EINVAL,
                           "host: %u threads per device asked, at most %u",
                           nthreads, HOST_MAX_THREADS);
    cpu_model(model, sizeof model);
    mem = physical_memory();

    list = weft__calloc(1, sizeof *list);
    hp = weft__calloc(1, sizeof *hp);
    p = hp ? &hp->base : NULL;
    if (list && p) {
        list[0] = p;
        p->devices = weft__calloc(ndev, sizeof *p->devices);
    }
    if (!p || !p->devices) {
        if (p)
            weft__free(p->devices);
        weft__free(p);
        weft__free(list);
        return weft__error(WEFT_ENOMEM, "host: no memory for the platform");
    }
    /* Queue runners, max(2, threads per device, 2 x devices): see
     * weft__host_runners. */
    rc = weft__host_runners_init(&hp->runners,
                                 WEFT__MAX(WEFT__MAX(2u, nthreads), 2 * ndev));
    if (rc < 0) {
        weft__free(p->devices);
        weft__free(p);
        weft__free(list);
        return rc;
    }
    p->drv = &weft__driver_host;
    weft__strlcpy(p->name, "weft host", sizeof p->name);
    weft__strlcpy(p->vendor, "weft", sizeof p->vendor);
    snprintf(p->version, sizeof p->version, "weft host %d.%d.%d",
             WEFT_VERSION_MAJOR, WEFT_VERSION_MINOR, WEFT_VERSION_PATCH);
    for (unsigned i = 0; i < ndev; i++) {
        weft__host_device *hd = weft__calloc(1, sizeof *hd);
        if (!hd) {
            host_platforms_close(list, 1);
            return weft__error(WEFT_ENOMEM, "host: no memory for device %u", i);
        }
        p->devices[i] = &hd->base;
        p->ndevices = i + 1;
        device_init(hd, p, i, nthreads, mem, model);
    }
    *platforms = list;
    *nplatforms = 1;
    return 0;
}

/* Every host device reaches every other's memory: a copy is a memcpy. */
static int host_can_access_peer(weft__device *a, weft__device *b, int *can)
{
    *can = 1;
    return 0;
}

/* ---- contexts ---------------------------------------------------------- */

static int host_context_create(weft__device *dev, weft__context **ctx)
{
    weft__host_device *hd = (weft__host_device *)dev;
    weft__host_context *hc = weft__calloc(1, sizeof *hc);
    int rc;

    if (!hc)
        return weft__error(WEFT_ENOMEM, "host: no memory for a context");
    /* The runner of the launching queue is the pool's other thread. */
    if ((rc = weft__host_pool_start(&hc->pool, hd->nthreads - 1)) < 0) {
        weft__free(hc);
        return rc;
    }
    hc->base.drv = &weft__driver_host;
    hc->base.dev = dev;
    *ctx = &hc->base;
    return 0;
}

static void host_context_destroy(weft__context *ctx)
{
    weft__host_context *hc = (weft__host_context *)ctx;

    weft__host_pool_stop(&hc->pool);
    weft__free(hc);
}

/* ---- memory ------------------------------------------------------------ */

static int mem_new(weft__context *ctx, weft__mem_kind kind, size_t size,
                   void *user_ptr, weft__mem **mem)
{
    weft__host_mem *m;
    void *data = user_ptr;
    const weft_device_info *info = &ctx->dev->props;
    int rc;

    if (!user_ptr) {
        if (size > info->max_alloc)
            return weft__error(WEFT_EDEVMEM,
                               "host: %zu bytes asked, at most %llu in one "
                               "allocation on %s",
                               size, (unsigned long long)info->max_alloc,
                               ctx->dev->name);
        if (weft__fault("host.posix_memalign"))
            rc = ENOMEM;
        else
            rc = posix_memalign(&data, WEFT__HOST_ALIGN, size);
        if (rc != 0)
            return weft__driver_error(kind == WEFT__MEM_DEVICE ? WEFT_EDEVMEM
                                                               : WEFT_ENOMEM,
                                      "host", rc, weft__errno_name(rc),
                                      "host: allocating %zu bytes on %s: %s",
                                      size, ctx->dev->name, strerror(rc));
    }
    m = weft__calloc(1, sizeof *m);
    if (!m) {
        if (!user_ptr)
            free(data);
        return weft__error(WEFT_ENOMEM, "host: no memory for a memory object");
    }
    m->base.drv = &weft__driver_host;
    m->base.ctx = ctx;
    m->base.kind = kind;
    m->base.size = size;
    m->base.host = kind == WEFT__MEM_DEVICE ? NULL : data;
    m->data = data;
    m->owned = !user_ptr;
    *mem = &m->base;
    return 0;
}

static int host_mem_alloc(weft__context *ctx, size_t size, weft__mem **mem)
{
    return mem_new(ctx, WEFT__MEM_DEVICE, size, NULL, mem);
}

/*
 * Host memory is never paged out from under a copy here, so "pinned" is an
 * ordinary aligned allocation; no mlock, which would only eat the limit.
 */
static int host_host_alloc(weft__context *ctx, size_t size, weft__mem **mem)
{
    return mem_new(ctx, WEFT__MEM_PINNED, size, NULL, mem);
}

static int host_host_register(weft__context *ctx, void *ptr, size_t size,
                              weft__mem **mem)
{
    if (!ptr)
        return weft__error(WEFT_EINVAL, "host: registering a NULL pointer");
    return mem_new(ctx, WEFT__MEM_REGISTERED, size, ptr, mem);
}

/* The program's host memory is the device's memory as it is. */
static int host_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                         size_t size, weft__mem **mem, size_t *moff)
{
    if (!handle)
        return weft__error(WEFT_EINVAL, "host: wrapping a NULL pointer");
    *moff = off;
    return mem_new(ctx, WEFT__MEM_DEVICE, off + size, (void *)(uintptr_t)handle,
                   mem);
}

static void host_mem_free(weft__mem *mem)
{
    weft__host_mem *m = (weft__host_mem *)mem;

    if (m->owned)
        free(m->data);
    weft__free(m);
}

/* ---- native nodes ------------------------------------------------------ */

/*
 * No queue to hand: the function runs on this thread once q's work is
 * done. In a capture it does not run: the graph gets a node that calls it
 * (driver.h). native_enqueue runs it on q's runner instead (host_queue.c).
 */
static int host_native_call(weft__queue *q, weft__native_fn *fn, void *user)
{
    weft__native_queue nq = {NULL, NULL, NULL};
    int rc;

    if (__atomic_load_n(&((weft__host_queue *)q)->cap, __ATOMIC_ACQUIRE))
        return weft__host_native_enqueue(q, fn, user);
    rc = weft__host_queue_sync(q);
    return rc < 0 ? rc : fn(&nq, user);
}

static void host_native_mem(weft__mem *mem, size_t off, weft__native_mem *out)
{
    char *p = (char *)((weft__host_mem *)mem)->data + off;

    out->host = p;
    out->address = (uint64_t)(uintptr_t)p;
}

/* ---- modules and kernels ----------------------------------------------- */

static void module_free(weft__host_module *hm)
{
    for (unsigned i = 0; hm->kernels && i < hm->nkernels; i++) {
        weft__kernel *k = &hm->kernels[i].base;
        weft__free((void *)k->name);
        weft__free((void *)k->params);
        weft__free((void *)k->param_sizes);
    }
    weft__free(hm->kernels);
    weft__hostcc_close(hm->lib);
    weft__free(hm->base.build_log);
    weft__free(hm);
}

static int table_check(const weft_host_kernel *table, size_t n,
                       const char *src_name)
{
    const char *what = src_name ? src_name : "host kernel table";

    for (size_t i = 0; i < n; i++) {
        const weft_host_kernel *t = &table[i];
        if (!t->name || !t->fn)
            return weft__error(WEFT_EINVAL, "host: %s: entry %zu has no %s",
                               what, i, t->name ? "function" : "name");
        if (t->nparams && !t->params)
            return weft__error(WEFT_EINVAL,
                               "host: %s: kernel %s has %u parameters but "
                               "no types",
                               what, t->name, t->nparams);
        for (unsigned p = 0; p < t->nparams; p++) {
            weft_param_type type = t->params[p];
            if (type < WEFT_PARAM_BUFFER || type > WEFT_PARAM_LOCAL)
                return weft__error(WEFT_EINVAL,
                                   "host: %s: parameter %u of %s has an "
                                   "unknown type %d",
                                   what, p, t->name, (int)type);
            if (type == WEFT_PARAM_BYTES &&
                (!t->param_sizes || t->param_sizes[p] == 0))
                return weft__error(WEFT_EINVAL,
                                   "host: %s: parameter %u of %s is BYTES "
                                   "without a size",
                                   what, p, t->name);
        }
        for (size_t j = 0; j < i; j++)
            if (strcmp(table[j].name, t->name) == 0)
                return weft__error(WEFT_EINVAL,
                                   "host: %s: kernel %s appears twice", what,
                                   t->name);
    }
    return 0;
}

/* Fill k from t, copying what the caller's table owns. */
static int kernel_init(weft__host_kernel *hk, weft__host_module *hm,
                       const weft_host_kernel *t)
{
    weft__kernel *k = &hk->base;
    weft_param_type *params = NULL;
    size_t *sizes = NULL;

    k->drv = &weft__driver_host;
    k->module = &hm->base;
    hk->fn = t->fn;
    k->name = weft__strdup(t->name);
    if (t->nparams) {
        params = weft__malloc(t->nparams * sizeof *params);
        sizes = weft__malloc(t->nparams * sizeof *sizes);
    }
    k->params = params;
    k->param_sizes = sizes;
    if (!k->name || (t->nparams && (!params || !sizes)))
        return weft__error(WEFT_ENOMEM, "host: no memory for kernel %s",
                           t->name);
    k->params_known = 1;
    k->nparams = t->nparams;
    for (unsigned p = 0; p < t->nparams; p++) {
        params[p] = t->params[p];
        /*
         * What the kernel receives: a pointer for BUFFER, the value for a
         * scalar or BYTES. LOCAL scratch is sized at launch, so 0.
         */
        if (params[p] == WEFT_PARAM_BUFFER)
            sizes[p] = sizeof(void *);
        else if (params[p] == WEFT_PARAM_BYTES)
            sizes[p] = t->param_sizes[p];
        else
            sizes[p] = weft_param_type_size(params[p]);
    }
    return 0;
}

static int host_module_create(weft__context *ctx,
                              const weft__module_source *src,
                              weft__module **mod)
{
    weft__module_source tsrc = *src;
    const weft_host_kernel *table = src->data;
    weft__hostcc_lib *lib = NULL;
    weft__host_module *hm;
    char *log = NULL;
    int rc;

    if (src->kind == WEFT__SRC_HOST_C || src->kind == WEFT__SRC_HOST_SO) {
        /* Portable source: its kernels from the shared object built. */
        if ((rc = weft__hostcc_open(src, &lib, &log)) < 0)
            return rc;
        table = weft__hostcc_table(lib, &tsrc.size);
        tsrc.kind = WEFT__SRC_HOST_TABLE;
        tsrc.data = table;
        rc = host_module_create(ctx, &tsrc, mod);
        if (rc < 0) {
            weft__hostcc_close(lib);
            weft__free(log);
            return rc;
        }
        hm = (weft__host_module *)*mod;
        hm->lib = lib;
        hm->base.build_log = log;
        return 0;
    }
    if (src->kind != WEFT__SRC_HOST_TABLE)
        return weft__error(WEFT_ENOTSUP,
                           "host: %s: a host device runs C functions given "
                           "as a weft_host_kernel table or portable source, "
                           "not source kind %d",
                           src->name ? src->name : "module", (int)src->kind);
    if (src->size && !table)
        return weft__error(WEFT_EINVAL, "host: kernel table is NULL");
    if (src->size > UINT32_MAX)
        return weft__error(WEFT_EINVAL, "host: %zu kernels in one table",
                           src->size);
    if ((rc = table_check(table, src->size, src->name)) < 0)
        return rc;
    hm = weft__calloc(1, sizeof *hm);
    if (!hm)
        return weft__error(WEFT_ENOMEM, "host: no memory for a module");
    hm->base.drv = &weft__driver_host;
    hm->base.ctx = ctx;
    hm->base.kind = src->kind;
    if (src->size) {
        hm->kernels = weft__calloc(src->size, sizeof *hm->kernels);
        if (!hm->kernels) {
            weft__free(hm);
            return weft__error(WEFT_ENOMEM, "host: no memory for a module");
        }
    }
    for (size_t i = 0; i < src->size; i++) {
        /* Counted first, so that module_free frees a half-built kernel. */
        hm->nkernels = (unsigned)i + 1;
        if ((rc = kernel_init(&hm->kernels[i], hm, &table[i])) < 0) {
            module_free(hm);
            return rc;
        }
    }
    *mod = &hm->base;
    return 0;
}

static void host_module_destroy(weft__module *mod)
{
    module_free((weft__host_module *)mod);
}

static int host_module_binary(weft__module *mod, void **bytes, size_t *size,
                              weft__source_kind *kind)
{
    weft__host_module *hm = (weft__host_module *)mod;

    if (!hm->lib)
        return weft__error(WEFT_ENOTSUP, "host: no binary for a table");
    *kind = WEFT__SRC_HOST_SO;
    return weft__hostcc_binary(hm->lib, bytes, size);
}

static int host_kernel_get(weft__module *mod, const char *name,
                           weft__kernel **k)
{
    weft__host_module *hm = (weft__host_module *)mod;

    for (unsigned i = 0; i < hm->nkernels; i++) {
        if (strcmp(hm->kernels[i].base.name, name) == 0) {
            *k = &hm->kernels[i].base;
            return 0;
        }
    }
    return weft__error(WEFT_ENOTFOUND, "host: no kernel named %s in module",
                       name);
}

const weft__driver weft__driver_host = {
    .name = "host",
    .memory_is_host = 1,
    .source_kinds =
        (const weft_source_kind[]){WEFT_SOURCE_HOST, WEFT_SOURCE_PORTABLE, 0},
    .portable_kind = WEFT__SRC_HOST_C,
    .platforms_open = host_platforms_open,
    .platforms_close = host_platforms_close,
    .can_access_peer = host_can_access_peer,
    .context_create = host_context_create,
    .context_destroy = host_context_destroy,
    .queue_create = weft__host_queue_create,
    .queue_sync = weft__host_queue_sync,
    .queue_release = weft__host_queue_release,
    .mem_alloc = host_mem_alloc,
    .host_alloc = host_host_alloc,
    .host_register = host_host_register,
    .mem_free = host_mem_free,
    .mem_wrap = host_mem_wrap,
    .copy_h2d = weft__host_copy_h2d,
    .copy_d2h = weft__host_copy_d2h,
    .copy_d2d = weft__host_copy_d2d,
    .copy_peer = weft__host_copy_d2d,
    .fill = weft__host_fill,
    .copy_h2d_rect = weft__host_copy_h2d_rect,
    .copy_d2h_rect = weft__host_copy_d2h_rect,
    .copy_d2d_rect = weft__host_copy_d2d_rect,
    .copy_peer_rect = weft__host_copy_d2d_rect,
    .module_create = host_module_create,
    .module_destroy = host_module_destroy,
    .module_binary = host_module_binary,
    .kernel_get = host_kernel_get,
    .launch = weft__host_launch,
    .event_create = weft__host_event_create,
    .event_record = weft__host_event_record,
    .queue_wait_event = weft__host_queue_wait_event,
    .event_query = weft__host_event_query,
    .event_sync = weft__host_event_sync,
    .event_elapsed = weft__host_event_elapsed,
    .event_destroy = weft__host_event_destroy,
    .host_fn = weft__host_host_fn,
    .native_call = host_native_call,
    .native_enqueue = weft__host_native_enqueue,
    .native_mem = host_native_mem,
    .native_capture = 1,
    .external_wait = weft__drv_own_external_wait,
    .external_record = weft__drv_own_external_record,
    .external_mark = weft__drv_own_external_mark,
    .external_mark_end = weft__drv_own_external_mark_end,
    .graphs_on_cpu = 1,
    .graph_record_external = weft__host_graph_record_external,
    .graph_wait_external = weft__host_graph_wait_external,
    .graph_node_last = weft__host_graph_node_last,
    .graph_order = weft__host_graph_order,
    .graph_wait_later = weft__host_graph_wait_later,
    .graph_reaches = weft__host_graph_reaches,
    .graph_begin = weft__host_graph_begin,
    .graph_end = weft__host_graph_end,
    .graph_launch = weft__host_graph_launch,
    .graph_destroy = weft__host_graph_destroy,
};
