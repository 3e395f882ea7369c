/*
 * The cuda driver: the CUDA Driver API, loaded at run time with dlopen so
 * that weft links and runs on machines without CUDA (they simply have no
 * cuda devices).
 *
 * Contexts. weft uses each device's primary context (the one the CUDA
 * runtime also uses, so memory and streams can be shared with code that
 * uses it). Every operation first makes the right context current on the
 * calling thread; it asks the driver which one is current instead of
 * caching it, so that user code switching contexts on the same thread
 * cannot leave weft working in the wrong one.
 *
 * Queue priorities. CUDA tells the priority range only through a current
 * context, and creating one at discovery costs a primary context (time and
 * device memory) on every GPU, also on those the user never selects. So
 * discovery reports 0..0 and the first context created on a device fills
 * the real range into its props (CUDA clamps a priority outside the range
 * to the nearest valid one, so a queue asked for before then still works).
 *
 * Peer access is enabled lazily, both ways, on the first peer copy between
 * two devices, and forgotten when weft's last context on either device goes.
 * A pair that cannot (or may no longer: CUDA caps the number of peers) is
 * still copied, by cuMemcpyAsync under unified addressing, which then
 * goes through host memory.
 *
 * This file has discovery, contexts and the driver table; internal.h says
 * where the rest is.
 */
#include "internal.h"

#include <stdio.h>
#include <string.h>

/* Weft contexts alive per device; guarded by weft__cuda_lock. */
static unsigned cuda_ctx_count[CUDA_MAX_DEVICES];

/* ---- helpers ----------------------------------------------------------- */

/* Make ctx current on this thread. */
int weft__cuda_enter(weft__context *ctx)
{
    cuda_context *c = cuda_ctx(ctx);
    CUcontext cur = NULL;
    CUresult res;

    if (weft__cu.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c->cu)
        return 0;
    res = weft__fault("cuda.cuCtxSetCurrent") ? CUDA_ERROR_UNKNOWN
                                              : weft__cu.CtxSetCurrent(c->cu);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuCtxSetCurrent: GPU %d", c->ordinal);
    return 0;
}

static int cuda_attr(cuda_device *d, int attr, int *value)
{
    CUresult res = weft__fault("cuda.cuDeviceGetAttribute")
                       ? CUDA_ERROR_UNKNOWN
                       : weft__cu.DeviceGetAttribute(value, attr, d->cu);

    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuDeviceGetAttribute(%d): GPU %d", attr,
                               d->ordinal);
    return 0;
}

/* "0000:3B:00.0" or "00000000:3b:00.0" -> "0000:3b:00.0". */
static void cuda_pci_bus_id(cuda_device *d, char *out, size_t size)
{
    char raw[64] = "";
    unsigned dom, bus, slot, fn = 0;
    int a = 0, b = 0, c = 0;

    if (!weft__fault("cuda.cuDeviceGetPCIBusId") &&
        weft__cu.DeviceGetPCIBusId(raw, (int)sizeof raw, d->cu) ==
            CUDA_SUCCESS &&
        sscanf(raw, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) >= 3) {
        snprintf(out, size, "%04x:%02x:%02x.%x", dom, bus, slot, fn);
        return;
    }
    /* The attributes say the same without the function number. */
    if (weft__cu.DeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID,
                                    d->cu) == CUDA_SUCCESS &&
        weft__cu.DeviceGetAttribute(&b, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID,
                                    d->cu) == CUDA_SUCCESS &&
        weft__cu.DeviceGetAttribute(&c, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID,
                                    d->cu) == CUDA_SUCCESS)
        snprintf(out, size, "%04x:%02x:%02x.0", (unsigned)a, (unsigned)b,
                 (unsigned)c);
    else
        out[0] = '\0';
}

/* ---- discovery --------------------------------------------------------- */

static int cuda_device_fill(cuda_device *d, weft__platform *plat,
                            unsigned index)
{
    weft_device_info *p = &d->base.props;
    size_t total = 0;
    int v[10];
    CUresult res;
    int rc;

    d->base.drv = &weft__driver_cuda;
    d->base.platform = plat;
    d->base.driver_index = index;
    res = weft__fault("cuda.cuDeviceGet")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.DeviceGet(&d->cu, d->ordinal);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuDeviceGet(%d)", d->ordinal);
    res = weft__fault("cuda.cuDeviceGetName")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.DeviceGetName(d->base.name, (int)sizeof d->base.name,
                                       d->cu);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuDeviceGetName: GPU %d", d->ordinal);
    d->base.name[sizeof d->base.name - 1] = '\0';
    res = weft__fault("cuda.cuDeviceTotalMem")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.DeviceTotalMem(&total, d->cu);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuDeviceTotalMem: GPU %d", d->ordinal);
    static const int attrs[] = {
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
        CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
        CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
        CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
        CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT,
        CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS,
        CU_DEVICE_ATTRIBUTE_INTEGRATED,
        CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY,
    };
    for (unsigned i = 0; i < WEFT__COUNTOF(attrs); i++)
        if ((rc = cuda_attr(d, attrs[i], &v[i])) < 0)
            return rc;
    /* Newer than the rest: a driver that does not know it can register. */
    if (weft__cu.DeviceGetAttribute(&v[9],
                                    CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
                                    d->cu) != CUDA_SUCCESS)
        v[9] = 1;

    weft__strlcpy(d->base.vendor, "NVIDIA", sizeof d->base.vendor);
    snprintf(d->base.driver_version, sizeof d->base.driver_version, "%d.%d",
             weft__cuda_driver_version / 1000,
             weft__cuda_driver_version % 1000 / 10);
    cuda_pci_bus_id(d, d->base.pci_bus_id, sizeof d->base.pci_bus_id);

    memset(p, 0, sizeof *p);
    p->size = sizeof *p;
    p->driver = "cuda";
    p->driver_index = index;
    p->type = WEFT_DEVICE_GPU;
    p->name = d->base.name;
    p->vendor = d->base.vendor;
    p->platform = plat->name;
    p->driver_version = d->base.driver_version;
    p->global_mem = total;
    p->max_alloc = total;
    p->cc_major = v[0];
    p->cc_minor = v[1];
    p->compute_units = (unsigned)v[2];
    p->max_group_size = (unsigned)v[3];
    p->local_mem = (uint64_t)v[4];
    p->copy_engines = (unsigned)v[5];
    p->concurrent_kernels = v[6] != 0;
    p->unified_memory = v[7] != 0;
    p->managed_memory = v[8] != 0;
    p->host_register = v[9] != 0;
    p->timing_events = 1;
    p->pinned_host = 1;
    p->svm = 0;
    p->queue_priority_low = 0; /* filled by the first context */
    p->queue_priority_high = 0;
    p->pci_bus_id = d->base.pci_bus_id;
    p->numa_node = -1;
    p->cpuset = d->base.cpuset;
    return 0;
}

static void cuda_platforms_close(weft__platform **platforms, unsigned n)
{
    for (unsigned i = 0; platforms && i < n; i++) {
        weft__platform *plat = platforms[i];

        if (!plat)
            continue;
        for (unsigned j = 0; plat->devices && j < plat->ndevices; j++)
            weft__free(plat->devices[j]);
        weft__free(plat->devices);
        weft__free(plat);
    }
    weft__free(platforms);
}

static int cuda_platforms_open(const weft__driver_config *cfg,
                               weft__platform ***platforms,
                               unsigned *nplatforms)
{
    weft__platform **list = NULL;
    weft__platform *plat;
    CUresult res;
    int count = 0;
    int rc;

    (void)cfg;
    *platforms = NULL;
    *nplatforms = 0;
    if ((rc = weft__cuda_load()) < 0)
        return rc;
    res = weft__fault("cuda.cuDeviceGetCount")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.DeviceGetCount(&count);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuDeviceGetCount");
    if (count <= 0)
        return weft__error(WEFT_ENOTSUP, "no CUDA device");
    if (count > CUDA_MAX_DEVICES) {
        weft__warn("cuda", "%d GPUs: weft uses the first %d", count,
                   CUDA_MAX_DEVICES);
        count = CUDA_MAX_DEVICES;
    }

    if (!(list = weft__calloc(1, sizeof *list)) ||
        !(list[0] = weft__calloc(1, sizeof **list)))
        goto nomem;
    plat = list[0];
    plat->drv = &weft__driver_cuda;
    weft__strlcpy(plat->name, "CUDA", sizeof plat->name);
    weft__strlcpy(plat->vendor, "NVIDIA Corporation", sizeof plat->vendor);
    snprintf(plat->version, sizeof plat->version, "CUDA %d.%d",
             weft__cuda_driver_version / 1000,
             weft__cuda_driver_version % 1000 / 10);
    if (!(plat->devices = weft__calloc((size_t)count, sizeof *plat->devices)))
        goto nomem;
    for (int i = 0; i < count; i++) {
        cuda_device *d = weft__calloc(1, sizeof *d);

        if (!d)
            goto nomem;
        plat->devices[i] = &d->base;
        plat->ndevices = (unsigned)i + 1;
        d->ordinal = i;
        if ((rc = cuda_device_fill(d, plat, (unsigned)i)) < 0)
            goto fail;
    }
    *platforms = list;
    *nplatforms = 1;
    return 0;
nomem:
    rc = weft__error(WEFT_ENOMEM, "cuda discovery");
fail:
    cuda_platforms_close(list, list ? 1 : 0);
    return rc;
}

static int cuda_can_access_peer(weft__device *a, weft__device *b, int *can)
{
    cuda_device *da = cuda_dev(a), *db = cuda_dev(b);
    int ab = 0, ba = 0;
    CUresult res;

    *can = 0;
    if (da->cu == db->cu) {
        *can = 1;
        return 0;
    }
    res = weft__fault("cuda.cuDeviceCanAccessPeer")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.DeviceCanAccessPeer(&ab, da->cu, db->cu);
    if (res == CUDA_SUCCESS)
        res = weft__cu.DeviceCanAccessPeer(&ba, db->cu, da->cu);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0,
                               "cuDeviceCanAccessPeer: GPU %d and GPU %d",
                               da->ordinal, db->ordinal);
    *can = ab && ba;
    return 0;
}

/* ---- contexts ---------------------------------------------------------- */

static int cuda_context_create(weft__device *dev, weft__context **out)
{
    cuda_device *d = cuda_dev(dev);
    cuda_context *c;
    int least = 0, greatest = 0;
    CUresult res;
    int rc;

    if (!(c = weft__calloc(1, sizeof *c)))
        return weft__error(WEFT_ENOMEM, "cuda context");
    c->base.drv = &weft__driver_cuda;
    c->base.dev = dev;
    c->ordinal = d->ordinal;
    res = weft__fault("cuda.cuDevicePrimaryCtxRetain")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : weft__cu.DevicePrimaryCtxRetain(&c->cu, d->cu);
    if (res != CUDA_SUCCESS) {
        weft__free(c);
        return weft__cuda_fail(res, 0, "cuDevicePrimaryCtxRetain: GPU %d",
                               d->ordinal);
    }
    if ((rc = weft__cuda_enter(&c->base)) < 0)
        goto fail;
    res = weft__fault("cuda.cuCtxGetStreamPriorityRange")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.CtxGetStreamPriorityRange(&least, &greatest);
    if (res != CUDA_SUCCESS) {
        rc = weft__cuda_fail(res, 0, "cuCtxGetStreamPriorityRange: GPU %d",
                             d->ordinal);
        goto fail;
    }
    pthread_mutex_lock(&weft__cuda_lock);
    /* Written once: later contexts find the same range already there. */
    if (dev->props.queue_priority_low != least ||
        dev->props.queue_priority_high != greatest) {
        dev->props.queue_priority_low = least;
        dev->props.queue_priority_high = greatest;
    }
    cuda_ctx_count[d->ordinal]++;
    pthread_mutex_unlock(&weft__cuda_lock);
    *out = &c->base;
    return 0;
fail:
    weft__cu.DevicePrimaryCtxRelease(d->cu);
    weft__free(c);
    return rc;
}

static void cuda_context_destroy(weft__context *ctx)
{
    cuda_context *c = cuda_ctx(ctx);
    cuda_device *d = cuda_dev(ctx->dev);
    CUcontext cur = NULL;
    CUresult res;

    /*
     * The primary context may go with the release; then its peer mappings
     * go too, and must be set up again by the next peer copy.
     */
    pthread_mutex_lock(&weft__cuda_lock);
    if (--cuda_ctx_count[c->ordinal] == 0) {
        uint64_t bit = (uint64_t)1 << c->ordinal;

        __atomic_store_n(&weft__cuda_peer_done[c->ordinal], 0,
                         __ATOMIC_RELEASE);
        for (unsigned i = 0; i < CUDA_MAX_DEVICES; i++)
            __atomic_and_fetch(&weft__cuda_peer_done[i], ~bit,
                               __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&weft__cuda_lock);
    /* Leave no thread of ours current in a context that may be gone. */
    if (weft__cu.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c->cu)
        weft__cu.CtxSetCurrent(NULL);
    res = weft__cu.DevicePrimaryCtxRelease(d->cu);
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuDevicePrimaryCtxRelease: GPU %d: error %d",
                   c->ordinal, (int)res);
    weft__free(c);
}

const weft__driver weft__driver_cuda = {
    .name = "cuda",
    .source_kinds =
        (const weft_source_kind[]){WEFT_SOURCE_CUBIN, WEFT_SOURCE_FATBIN,
                                   WEFT_SOURCE_PTX, WEFT_SOURCE_CUDA_CXX,
                                   WEFT_SOURCE_PORTABLE, 0},
    .portable_kind = WEFT__SRC_CUDA_CXX,
    .platforms_open = cuda_platforms_open,
    .platforms_close = cuda_platforms_close,
    .can_access_peer = cuda_can_access_peer,
    .context_create = cuda_context_create,
    .context_destroy = cuda_context_destroy,
    .queue_create = weft__cuda_queue_create,
    .queue_sync = weft__cuda_queue_sync,
    .queue_release = weft__cuda_queue_release,
    .mem_alloc = weft__cuda_mem_alloc,
    .host_alloc = weft__cuda_host_alloc,
    .host_register = weft__cuda_host_register,
    .mem_free = weft__cuda_mem_free,
    .mem_wrap = weft__cuda_mem_wrap,
    .ipc_export = weft__cuda_ipc_export,
    .ipc_open = weft__cuda_ipc_open,
    .ipc_close = weft__cuda_ipc_close,
    .copy_h2d = weft__cuda_copy_h2d,
    .copy_d2h = weft__cuda_copy_d2h,
    .copy_d2d = weft__cuda_copy_d2d,
    .copy_peer = weft__cuda_copy_peer,
    .fill = weft__cuda_fill,
    .copy_h2d_rect = weft__cuda_copy_h2d_rect,
    .copy_d2h_rect = weft__cuda_copy_d2h_rect,
    .copy_d2d_rect = weft__cuda_copy_d2d_rect,
    .copy_peer_rect = weft__cuda_copy_peer_rect,
    .module_create = weft__cuda_module_create,
    .host_is_pinned = weft__cuda_host_is_pinned,
    .module_destroy = weft__cuda_module_destroy,
    .module_binary = weft__cuda_module_binary,
    .kernel_get = weft__cuda_kernel_get,
    .launch = weft__cuda_launch,
    .event_create = weft__cuda_event_create,
    .event_record = weft__cuda_event_record,
    .queue_wait_event = weft__cuda_queue_wait_event,
    .event_query = weft__cuda_event_query,
    .event_sync = weft__cuda_event_sync,
    .event_elapsed = weft__cuda_event_elapsed,
    .event_destroy = weft__cuda_event_destroy,
    .host_fn = weft__cuda_host_fn,
    .native_call = weft__cuda_native_call,
    .native_context = weft__cuda_native_context,
    .native_mem = weft__cuda_native_mem,
    .native_capture = 1,
    .external_wait = weft__cuda_external_wait,
    .external_record = weft__cuda_external_record,
    .external_mark = weft__cuda_external_mark,
    .external_mark_end = weft__cuda_external_mark_end,
    .graph_supported = weft__cuda_graph_supported,
    .graph_record_external = weft__cuda_graph_record_external,
    .graph_wait_external = weft__cuda_graph_wait_external,
    .graph_begin = weft__cuda_graph_begin,
    .graph_end = weft__cuda_graph_end,
    .graph_launch = weft__cuda_graph_launch,
    .graph_destroy = weft__cuda_graph_destroy,
};
