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
 * The library is loaded once and never unloaded: CUDA has no way to undo
 * cuInit, and its threads would outlive an unloaded library.
 */
#include "internal.h"

#include "../../base/options.h"
#include "../../base/os.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Devices beyond this many are ignored (peer state is a 64-bit mask). */
#define CUDA_MAX_DEVICES 64
/* Arguments of a launch that need no allocation. */
#define CUDA_LAUNCH_ARGS 32
/* Bytes of each of the JIT's info and error logs. */
#define CUDA_JIT_LOG 4096

typedef struct cuda_device {
    weft__device base;
    CUdevice cu;
    int ordinal;
} cuda_device;

typedef struct cuda_context {
    weft__context base;
    CUcontext cu;
    int ordinal;
} cuda_context;

/*
 * Copies to and from pageable host memory go through two pinned staging
 * buffers of the queue, in chunks: CUDA would read a pageable source when
 * the copy is enqueued and block the caller on a pageable destination,
 * while weft's queues read and write host memory in queue order (see
 * driver.h). Chunk i uses stage[i % 2]; stream order makes the reuse safe
 * (the fill of a buffer runs after the copy that last read it). stage_lock
 * guards next and the lazy allocation, for queues fed from several threads.
 */
enum { CUDA_STAGE_BYTES = 4 << 20 };

typedef struct cuda_queue {
    weft__queue base;
    CUstream stream;
    pthread_mutex_t stage_lock;
    void *stage[2];
    unsigned stage_next;
} cuda_queue;

typedef struct cuda_mem {
    weft__mem base;
    /* The device address; for host kinds, the host address (UVA). */
    CUdeviceptr ptr;
} cuda_mem;

typedef struct cuda_kernel {
    weft__kernel base;
    CUfunction fn;
    struct cuda_kernel *next;
    /* followed by param_sizes[nparams] and the name */
} cuda_kernel;

typedef struct cuda_module {
    weft__module base;
    CUmodule cu;
    /* what NVRTC made of CUDA C++ source, kept for the kernel cache */
    weft__cuda_image image;
    /* guards kernels: kernel_get may run on several threads */
    pthread_mutex_t lock;
    cuda_kernel *kernels;
} cuda_module;

typedef struct cuda_event {
    weft__event base;
    CUevent cu;
} cuda_event;

/*
 * Process-wide state. cu is filled once under cuda_lock before
 * cuda_loaded is set (release); code that holds a weft object of this
 * driver got it after that, so it reads cu without the lock.
 * cuda_ctx_count (weft contexts alive per device) is guarded by cuda_lock.
 * cuda_peer_done[i] bit j: the pair (i, j) has been set up for peer copies
 * (enabled, or found impossible); read with acquire without the lock,
 * changed under it.
 */
static pthread_mutex_t cuda_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__cuda_api cu;
static int cuda_loaded;
static int cuda_driver_version;
static unsigned cuda_ctx_count[CUDA_MAX_DEVICES];
static uint64_t cuda_peer_done[CUDA_MAX_DEVICES];

/* ---- errors ------------------------------------------------------------ */

static int cuda_code(CUresult res)
{
    switch (res) {
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
    case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED:
        return WEFT_EINVAL;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return WEFT_EDEVMEM;
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_FILE_NOT_FOUND:
        return WEFT_ENOTFOUND;
    case CUDA_ERROR_NOT_READY:
        return WEFT_ENOTREADY;
    case CUDA_ERROR_TIMEOUT:
        return WEFT_ETIMEDOUT;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
        return WEFT_ENODEV;
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
        return WEFT_EBUILD;
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_INSUFFICIENT_DRIVER:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return WEFT_ENOTSUP;
    /* Sticky errors: the context cannot be used any more. */
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return WEFT_EDEVLOST;
    default:
        return WEFT_EDRIVER;
    }
}

/*
 * Report a failed CUDA call: code 0 takes the usual translation of res.
 * The detail reads "<what>: <CUDA's message> [cuda CUDA_ERROR_X n]".
 */
static int cuda_fail(CUresult res, int code, const char *fmt, ...)
    WEFT__PRINTF(3, 4);
static int cuda_fail(CUresult res, int code, const char *fmt, ...)
{
    char what[512];
    char fallback[32];
    const char *name = NULL, *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!cu.GetErrorName || cu.GetErrorName(res, &name) != CUDA_SUCCESS ||
        !name) {
        snprintf(fallback, sizeof fallback, "CUDA_ERROR_%d", (int)res);
        name = fallback;
    }
    if (!cu.GetErrorString || cu.GetErrorString(res, &msg) != CUDA_SUCCESS ||
        !msg)
        msg = "unknown CUDA error";
    return weft__driver_error(code ? code : cuda_code(res), "cuda", res, name,
                              "%s: %s", what, msg);
}

/* ---- the library ------------------------------------------------------- */

static int cuda_load_locked(void)
{
    const char *path = "libcuda.so.1";
    CUresult res;
    void *lib;
    int rc;

    weft__opt_str(WEFT__OPT_CUDA_LIBRARY, &path);
    if ((rc = weft__dl_open(path, "cuda.dlopen", &lib)) < 0)
        return weft__error_prefix(rc, "%s not found", path);
#define CUDA_RESOLVE(m, req, sym, alt)                                         \
    do {                                                                       \
        void *p = weft__dl_sym(lib, sym, "cuda.dlsym(" sym ")");               \
        if (!p && (alt))                                                       \
            p = weft__dl_sym(lib, (alt) ? (alt) : sym, NULL);                  \
        if (!p && (req)) {                                                     \
            rc = weft__error(WEFT_ENOTSUP,                                     \
                             "%s lacks %s: the CUDA driver is too old", path,  \
                             sym);                                             \
            goto fail;                                                         \
        }                                                                      \
        memcpy(&cu.m, &p, sizeof p);                                           \
    } while (0);
    WEFT__CUDA_FUNCS(CUDA_RESOLVE)
#undef CUDA_RESOLVE

    res = weft__fault("cuda.cuInit") ? CUDA_ERROR_UNKNOWN : cu.Init(0);
    if (res == CUDA_ERROR_NO_DEVICE) {
        rc = weft__driver_error(WEFT_ENOTSUP, "cuda", res,
                                "CUDA_ERROR_NO_DEVICE", "no CUDA device");
        goto fail;
    }
    if (res == CUDA_ERROR_STUB_LIBRARY) {
        /* The stub answers nothing else either, not even error names. */
        rc = weft__driver_error(WEFT_ENOTSUP, "cuda", res,
                                "CUDA_ERROR_STUB_LIBRARY",
                                "cuInit: %s is the stub library, not a "
                                "CUDA driver",
                                path);
        goto fail;
    }
    if (res != CUDA_SUCCESS) {
        rc = cuda_fail(res, 0, "cuInit");
        goto fail;
    }
    res = weft__fault("cuda.cuDriverGetVersion")
              ? CUDA_ERROR_UNKNOWN
              : cu.DriverGetVersion(&cuda_driver_version);
    if (res != CUDA_SUCCESS) {
        rc = cuda_fail(res, 0, "cuDriverGetVersion");
        goto fail;
    }
    cu.lib = lib;
    __atomic_store_n(&cuda_loaded, 1, __ATOMIC_RELEASE);
    weft__debug("cuda", "%s loaded, CUDA %d.%d", path,
                cuda_driver_version / 1000, cuda_driver_version % 1000 / 10);
    return 0;
fail:
    memset(&cu, 0, sizeof cu);
    weft__dl_close(lib);
    return rc;
}

static int cuda_load(void)
{
    int rc = 0;

    if (__atomic_load_n(&cuda_loaded, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&cuda_lock);
    if (!cuda_loaded)
        rc = cuda_load_locked();
    pthread_mutex_unlock(&cuda_lock);
    return rc;
}

/* ---- helpers ----------------------------------------------------------- */

static cuda_context *cuda_ctx(weft__context *ctx)
{
    return (cuda_context *)ctx;
}

static cuda_device *cuda_dev(weft__device *dev)
{
    return (cuda_device *)dev;
}

static cuda_mem *cuda_mm(weft__mem *m)
{
    return (cuda_mem *)m;
}

static CUstream cuda_stream(weft__queue *q)
{
    return ((cuda_queue *)q)->stream;
}

/* Make ctx current on this thread. */
static int cuda_enter(weft__context *ctx)
{
    cuda_context *c = cuda_ctx(ctx);
    CUcontext cur = NULL;
    CUresult res;

    if (cu.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c->cu)
        return 0;
    res = weft__fault("cuda.cuCtxSetCurrent") ? CUDA_ERROR_UNKNOWN
                                              : cu.CtxSetCurrent(c->cu);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuCtxSetCurrent: GPU %d", c->ordinal);
    return 0;
}

static int cuda_attr(cuda_device *d, int attr, int *value)
{
    CUresult res = weft__fault("cuda.cuDeviceGetAttribute")
                       ? CUDA_ERROR_UNKNOWN
                       : cu.DeviceGetAttribute(value, attr, d->cu);

    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuDeviceGetAttribute(%d): GPU %d", attr,
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
        cu.DeviceGetPCIBusId(raw, (int)sizeof raw, d->cu) == CUDA_SUCCESS &&
        sscanf(raw, "%x:%x:%x.%x", &dom, &bus, &slot, &fn) >= 3) {
        snprintf(out, size, "%04x:%02x:%02x.%x", dom, bus, slot, fn);
        return;
    }
    /* The attributes say the same without the function number. */
    if (cu.DeviceGetAttribute(&a, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID, d->cu) ==
            CUDA_SUCCESS &&
        cu.DeviceGetAttribute(&b, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID, d->cu) ==
            CUDA_SUCCESS &&
        cu.DeviceGetAttribute(&c, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID, d->cu) ==
            CUDA_SUCCESS)
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
    res = weft__fault("cuda.cuDeviceGet") ? CUDA_ERROR_UNKNOWN
                                          : cu.DeviceGet(&d->cu, d->ordinal);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuDeviceGet(%d)", d->ordinal);
    res = weft__fault("cuda.cuDeviceGetName")
              ? CUDA_ERROR_UNKNOWN
              : cu.DeviceGetName(d->base.name, (int)sizeof d->base.name, d->cu);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuDeviceGetName: GPU %d", d->ordinal);
    d->base.name[sizeof d->base.name - 1] = '\0';
    res = weft__fault("cuda.cuDeviceTotalMem")
              ? CUDA_ERROR_UNKNOWN
              : cu.DeviceTotalMem(&total, d->cu);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuDeviceTotalMem: GPU %d", d->ordinal);
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
    if (cu.DeviceGetAttribute(&v[9],
                              CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED,
                              d->cu) != CUDA_SUCCESS)
        v[9] = 1;

    weft__strlcpy(d->base.vendor, "NVIDIA", sizeof d->base.vendor);
    snprintf(d->base.driver_version, sizeof d->base.driver_version, "%d.%d",
             cuda_driver_version / 1000, cuda_driver_version % 1000 / 10);
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
    if ((rc = cuda_load()) < 0)
        return rc;
    res = weft__fault("cuda.cuDeviceGetCount") ? CUDA_ERROR_UNKNOWN
                                               : cu.DeviceGetCount(&count);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuDeviceGetCount");
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
             cuda_driver_version / 1000, cuda_driver_version % 1000 / 10);
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
              : cu.DeviceCanAccessPeer(&ab, da->cu, db->cu);
    if (res == CUDA_SUCCESS)
        res = cu.DeviceCanAccessPeer(&ba, db->cu, da->cu);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuDeviceCanAccessPeer: GPU %d and GPU %d",
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
              : cu.DevicePrimaryCtxRetain(&c->cu, d->cu);
    if (res != CUDA_SUCCESS) {
        weft__free(c);
        return cuda_fail(res, 0, "cuDevicePrimaryCtxRetain: GPU %d",
                         d->ordinal);
    }
    if ((rc = cuda_enter(&c->base)) < 0)
        goto fail;
    res = weft__fault("cuda.cuCtxGetStreamPriorityRange")
              ? CUDA_ERROR_UNKNOWN
              : cu.CtxGetStreamPriorityRange(&least, &greatest);
    if (res != CUDA_SUCCESS) {
        rc = cuda_fail(res, 0, "cuCtxGetStreamPriorityRange: GPU %d",
                       d->ordinal);
        goto fail;
    }
    pthread_mutex_lock(&cuda_lock);
    /* Written once: later contexts find the same range already there. */
    if (dev->props.queue_priority_low != least ||
        dev->props.queue_priority_high != greatest) {
        dev->props.queue_priority_low = least;
        dev->props.queue_priority_high = greatest;
    }
    cuda_ctx_count[d->ordinal]++;
    pthread_mutex_unlock(&cuda_lock);
    *out = &c->base;
    return 0;
fail:
    cu.DevicePrimaryCtxRelease(d->cu);
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
    pthread_mutex_lock(&cuda_lock);
    if (--cuda_ctx_count[c->ordinal] == 0) {
        uint64_t bit = (uint64_t)1 << c->ordinal;

        __atomic_store_n(&cuda_peer_done[c->ordinal], 0, __ATOMIC_RELEASE);
        for (unsigned i = 0; i < CUDA_MAX_DEVICES; i++)
            __atomic_and_fetch(&cuda_peer_done[i], ~bit, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&cuda_lock);
    /* Leave no thread of ours current in a context that may be gone. */
    if (cu.CtxGetCurrent(&cur) == CUDA_SUCCESS && cur == c->cu)
        cu.CtxSetCurrent(NULL);
    res = cu.DevicePrimaryCtxRelease(d->cu);
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuDevicePrimaryCtxRelease: GPU %d: error %d",
                   c->ordinal, (int)res);
    weft__free(c);
}

/* ---- queues ------------------------------------------------------------ */

static int cuda_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                             weft__queue **out)
{
    cuda_queue *q;
    CUresult res;
    int rc;

    if (!(q = weft__calloc(1, sizeof *q)))
        return weft__error(WEFT_ENOMEM, "cuda queue");
    if ((rc = cuda_enter(ctx)) < 0) {
        weft__free(q);
        return rc;
    }
    pthread_mutex_init(&q->stage_lock, NULL);
    res = weft__fault("cuda.cuStreamCreateWithPriority")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : cu.StreamCreateWithPriority(&q->stream, CU_STREAM_NON_BLOCKING,
                                            desc->priority);
    if (res != CUDA_SUCCESS) {
        pthread_mutex_destroy(&q->stage_lock);
        weft__free(q);
        return cuda_fail(res, 0, "cuStreamCreateWithPriority: GPU %d",
                         cuda_ctx(ctx)->ordinal);
    }
    q->base.drv = &weft__driver_cuda;
    q->base.ctx = ctx;
    q->base.desc = *desc;
    *out = &q->base;
    return 0;
}

static int cuda_queue_sync(weft__queue *q)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuStreamSynchronize")
              ? CUDA_ERROR_UNKNOWN
              : cu.StreamSynchronize(cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuStreamSynchronize: GPU %d",
                         cuda_ctx(q->ctx)->ordinal);
    return 0;
}

static void cuda_queue_release(weft__queue *q)
{
    CUresult res;

    /*
     * Nothing to report to: errors are logged. The stream is destroyed
     * even if the context cannot be made current (CUDA then finds it by
     * the stream).
     */
    if (cuda_enter(q->ctx) < 0)
        weft__warn("cuda", "queue release: %s", weft_last_error());
    res = cu.StreamSynchronize(cuda_stream(q));
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuStreamSynchronize at queue release: error %d",
                   (int)res);
    res = cu.StreamDestroy(cuda_stream(q));
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuStreamDestroy: error %d", (int)res);
    ((cuda_queue *)q)->stream = NULL;
    for (int i = 0; i < 2; i++)
        if (((cuda_queue *)q)->stage[i])
            cu.MemFreeHost(((cuda_queue *)q)->stage[i]);
    pthread_mutex_destroy(&((cuda_queue *)q)->stage_lock);
}

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

static int cuda_mem_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    cuda_mem *m;
    CUresult res;
    int rc;

    if (!(m = cuda_mem_new(ctx, WEFT__MEM_DEVICE, size)))
        return WEFT_ENOMEM;
    if ((rc = cuda_enter(ctx)) < 0) {
        weft__free(m);
        return rc;
    }
    res = weft__fault("cuda.cuMemAlloc") ? CUDA_ERROR_OUT_OF_MEMORY
                                         : cu.MemAlloc(&m->ptr, size);
    if (res != CUDA_SUCCESS) {
        weft__free(m);
        return cuda_fail(res, 0, "cuMemAlloc: %zu bytes on GPU %d", size,
                         cuda_ctx(ctx)->ordinal);
    }
    *out = &m->base;
    return 0;
}

static int cuda_host_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    cuda_mem *m;
    void *p = NULL;
    CUresult res;
    int rc;

    if (!(m = cuda_mem_new(ctx, WEFT__MEM_PINNED, size)))
        return WEFT_ENOMEM;
    if ((rc = cuda_enter(ctx)) < 0) {
        weft__free(m);
        return rc;
    }
    /* PORTABLE: staging memory serves the copies of every GPU. */
    res = weft__fault("cuda.cuMemHostAlloc")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : cu.MemHostAlloc(&p, size,
                                CU_MEMHOSTALLOC_PORTABLE |
                                    CU_MEMHOSTALLOC_DEVICEMAP);
    if (res != CUDA_SUCCESS) {
        weft__free(m);
        return cuda_fail(res, res == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ENOMEM : 0,
                         "cuMemHostAlloc: %zu pinned bytes for GPU %d", size,
                         cuda_ctx(ctx)->ordinal);
    }
    m->base.host = p;
    m->ptr = (CUdeviceptr)(uintptr_t)p;
    *out = &m->base;
    return 0;
}

static int cuda_host_register(weft__context *ctx, void *ptr, size_t size,
                              weft__mem **out)
{
    cuda_mem *m;
    CUresult res;
    int rc;

    if (!(m = cuda_mem_new(ctx, WEFT__MEM_REGISTERED, size)))
        return WEFT_ENOMEM;
    if ((rc = cuda_enter(ctx)) < 0) {
        weft__free(m);
        return rc;
    }
    res = weft__fault("cuda.cuMemHostRegister")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : cu.MemHostRegister(ptr, size, CU_MEMHOSTREGISTER_PORTABLE);
    if (res != CUDA_SUCCESS) {
        weft__free(m);
        return cuda_fail(res, res == CUDA_ERROR_OUT_OF_MEMORY ? WEFT_ENOMEM : 0,
                         "cuMemHostRegister: %zu bytes at %p for GPU %d", size,
                         ptr, cuda_ctx(ctx)->ordinal);
    }
    m->base.host = ptr;
    m->ptr = (CUdeviceptr)(uintptr_t)ptr;
    *out = &m->base;
    return 0;
}

static void cuda_mem_free(weft__mem *mem)
{
    cuda_mem *m = cuda_mm(mem);
    CUresult res = CUDA_SUCCESS;

    if (cuda_enter(mem->ctx) < 0)
        weft__warn("cuda", "memory release: %s", weft_last_error());
    switch (mem->kind) {
    case WEFT__MEM_DEVICE:
        res = cu.MemFree(m->ptr);
        break;
    case WEFT__MEM_PINNED:
        res = cu.MemFreeHost(mem->host);
        break;
    case WEFT__MEM_REGISTERED:
        res = cu.MemHostUnregister(mem->host);
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

    if (cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, a) !=
            CUDA_SUCCESS ||
        type != CU_MEMORYTYPE_HOST)
        return 0;
    return cu.PointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                                  a + size - 1) == CUDA_SUCCESS &&
           type == CU_MEMORYTYPE_HOST;
}

static int cuda_host_is_pinned(weft__context *ctx, const void *p, size_t size)
{
    if (cuda_enter(ctx) < 0) {
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
 * A staged copy between pageable host memory and device memory dev, in
 * chunks through the queue's pinned buffers. Every chunk record is made
 * before anything is enqueued, so that a host allocation failure has no
 * effect; a CUDA failure part-way leaves the chunks before it enqueued
 * (they complete harmlessly) and is reported.
 */
static int cuda_staged(weft__queue *wq, CUdeviceptr dev, void *host,
                       size_t size, int to_device)
{
    cuda_queue *q = (cuda_queue *)wq;
    size_t nchunks = (size + CUDA_STAGE_BYTES - 1) / CUDA_STAGE_BYTES;
    cuda_stage_copy **recs;
    CUresult res = CUDA_SUCCESS;
    size_t i = 0;
    int rc = 0;

    if (!(recs = weft__calloc(nchunks, sizeof *recs)))
        return weft__error(WEFT_ENOMEM, "cuda staged copy");
    for (i = 0; i < nchunks; i++)
        if (!(recs[i] = weft__malloc(sizeof *recs[i]))) {
            rc = weft__error(WEFT_ENOMEM, "cuda staged copy");
            goto out;
        }
    pthread_mutex_lock(&q->stage_lock);
    for (int b = 0; b < 2 && res == CUDA_SUCCESS; b++)
        if (!q->stage[b])
            res = weft__fault("cuda.cuMemHostAlloc")
                      ? CUDA_ERROR_OUT_OF_MEMORY
                      : cu.MemHostAlloc(&q->stage[b], CUDA_STAGE_BYTES, 0);
    if (res != CUDA_SUCCESS) {
        pthread_mutex_unlock(&q->stage_lock);
        rc = cuda_fail(res, WEFT_ENOMEM,
                       "cuMemHostAlloc: staging buffers for GPU %d",
                       cuda_ctx(wq->ctx)->ordinal);
        goto out;
    }
    for (i = 0; i < nchunks; i++) {
        size_t off = i * CUDA_STAGE_BYTES;
        size_t n = WEFT__MIN(size - off, (size_t)CUDA_STAGE_BYTES);
        char *stage = q->stage[q->stage_next++ & 1];
        cuda_stage_copy *c = recs[i];

        c->size = n;
        if (to_device) {
            c->dst = stage;
            c->src = (const char *)host + off;
            res = weft__fault("cuda.cuLaunchHostFunc")
                      ? CUDA_ERROR_UNKNOWN
                      : cu.LaunchHostFunc(q->stream, cuda_stage_run, c);
            if (res != CUDA_SUCCESS)
                break;
            recs[i] = NULL; /* the callback owns it now */
            res = weft__fault("cuda.cuMemcpyHtoDAsync")
                      ? CUDA_ERROR_UNKNOWN
                      : cu.MemcpyHtoDAsync(dev + off, stage, n, q->stream);
        } else {
            c->dst = (char *)host + off;
            c->src = stage;
            res = weft__fault("cuda.cuMemcpyDtoHAsync")
                      ? CUDA_ERROR_UNKNOWN
                      : cu.MemcpyDtoHAsync(stage, dev + off, n, q->stream);
            if (res != CUDA_SUCCESS)
                break;
            res = weft__fault("cuda.cuLaunchHostFunc")
                      ? CUDA_ERROR_UNKNOWN
                      : cu.LaunchHostFunc(q->stream, cuda_stage_run, c);
            if (res == CUDA_SUCCESS)
                recs[i] = NULL;
        }
        if (res != CUDA_SUCCESS)
            break;
    }
    pthread_mutex_unlock(&q->stage_lock);
    if (res != CUDA_SUCCESS)
        rc = cuda_fail(res, 0, "staged copy of %zu bytes %s GPU %d", size,
                       to_device ? "to" : "from", cuda_ctx(wq->ctx)->ordinal);
out:
    for (i = 0; i < nchunks; i++)
        weft__free(recs[i]);
    weft__free(recs);
    return rc;
}

static int cuda_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                         const void *src, size_t size)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    if (!cuda_is_pinned(src, size))
        return cuda_staged(q, cuda_mm(dst)->ptr + dst_off, (void *)src, size,
                           1);
    res = weft__fault("cuda.cuMemcpyHtoDAsync")
              ? CUDA_ERROR_UNKNOWN
              : cu.MemcpyHtoDAsync(cuda_mm(dst)->ptr + dst_off, src, size,
                                   cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuMemcpyHtoDAsync: %zu bytes to GPU %d", size,
                         cuda_ctx(q->ctx)->ordinal);
    return 0;
}

static int cuda_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                         size_t src_off, size_t size)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    if (!cuda_is_pinned(dst, size))
        return cuda_staged(q, cuda_mm(src)->ptr + src_off, dst, size, 0);
    res = weft__fault("cuda.cuMemcpyDtoHAsync")
              ? CUDA_ERROR_UNKNOWN
              : cu.MemcpyDtoHAsync(dst, cuda_mm(src)->ptr + src_off, size,
                                   cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuMemcpyDtoHAsync: %zu bytes from GPU %d",
                         size, cuda_ctx(q->ctx)->ordinal);
    return 0;
}

static int cuda_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                         weft__mem *src, size_t src_off, size_t size)
{
    CUdeviceptr d = cuda_mm(dst)->ptr + dst_off;
    CUdeviceptr s = cuda_mm(src)->ptr + src_off;
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    /* Host kinds go by their unified address; CUDA tells them apart. */
    if (dst->kind == WEFT__MEM_DEVICE && src->kind == WEFT__MEM_DEVICE)
        res = weft__fault("cuda.cuMemcpyDtoDAsync")
                  ? CUDA_ERROR_UNKNOWN
                  : cu.MemcpyDtoDAsync(d, s, size, cuda_stream(q));
    else
        res = weft__fault("cuda.cuMemcpyAsync")
                  ? CUDA_ERROR_UNKNOWN
                  : cu.MemcpyAsync(d, s, size, cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuMemcpyDtoDAsync: %zu bytes on GPU %d", size,
                         cuda_ctx(q->ctx)->ordinal);
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

    if (__atomic_load_n(&cuda_peer_done[from->ordinal], __ATOMIC_ACQUIRE) & bit)
        return;
    if (cuda_enter(&from->base) < 0)
        return;
    res = cu.DeviceCanAccessPeer(&can, cuda_dev(from->base.dev)->cu,
                                 cuda_dev(to->base.dev)->cu);
    if (res == CUDA_SUCCESS && can) {
        res = weft__fault("cuda.cuCtxEnablePeerAccess")
                  ? CUDA_ERROR_TOO_MANY_PEERS
                  : cu.CtxEnablePeerAccess(to->cu, 0);
        if (res == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
            res = CUDA_SUCCESS;
        if (res != CUDA_SUCCESS)
            weft__info("cuda",
                       "peer access GPU %d -> GPU %d: error %d; copies go "
                       "through the host",
                       from->ordinal, to->ordinal, (int)res);
    }
    pthread_mutex_lock(&cuda_lock);
    /* Both contexts are alive (the copy holds memory of each). */
    __atomic_or_fetch(&cuda_peer_done[from->ordinal], bit, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&cuda_lock);
}

static int cuda_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                          weft__mem *src, size_t src_off, size_t size)
{
    cuda_context *dc = cuda_ctx(dst->ctx), *sc = cuda_ctx(src->ctx);
    CUresult res;
    int rc;

    if (dc->ordinal == sc->ordinal || dst->kind != WEFT__MEM_DEVICE ||
        src->kind != WEFT__MEM_DEVICE)
        return cuda_copy_d2d(q, dst, dst_off, src, src_off, size);
    cuda_peer_setup_one(dc, sc);
    cuda_peer_setup_one(sc, dc);
    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    /*
     * cuMemcpyAsync under unified addressing, not cuMemcpyPeerAsync: the
     * same copy (over the peer link where access is enabled), and a stream
     * capture takes it in, where cuMemcpyPeerAsync fails with
     * CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED and invalidates the capture
     * (2x H200, CUDA 13: tests/gpu/event_nodes.cu).
     */
    res =
        weft__fault("cuda.cuMemcpyAsync.peer")
            ? CUDA_ERROR_UNKNOWN
            : cu.MemcpyAsync(cuda_mm(dst)->ptr + dst_off,
                             cuda_mm(src)->ptr + src_off, size, cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0,
                         "cuMemcpyAsync (peer): %zu bytes GPU %d -> GPU %d",
                         size, sc->ordinal, dc->ordinal);
    return 0;
}

static int cuda_fill(weft__queue *q, weft__mem *dst, size_t off,
                     const void *pattern, size_t pattern_size, size_t size)
{
    CUdeviceptr p = cuda_mm(dst)->ptr + off;
    CUstream s = cuda_stream(q);
    uint16_t v16;
    uint32_t v32;
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    if (weft__fault("cuda.cuMemsetAsync"))
        res = CUDA_ERROR_UNKNOWN;
    else if (pattern_size == 1)
        res = cu.MemsetD8Async(p, *(const unsigned char *)pattern, size, s);
    else if (pattern_size == 2) {
        memcpy(&v16, pattern, 2);
        res = cu.MemsetD16Async(p, v16, size / 2, s);
    } else if (pattern_size == 4) {
        memcpy(&v32, pattern, 4);
        res = cu.MemsetD32Async(p, v32, size / 4, s);
    } else
        return weft__error(WEFT_EINVAL, "fill pattern of %zu bytes",
                           pattern_size);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuMemsetD%zuAsync: %zu bytes on GPU %d",
                         pattern_size * 8, size, cuda_ctx(q->ctx)->ordinal);
    return 0;
}

/* ---- modules and kernels ----------------------------------------------- */

/* Load PTX text with the JIT's logs going into the detail on failure. */
static int cuda_load_ptx(cuda_context *c, const char *ptx, const char *name,
                         CUmodule *mod)
{
    char *logs = weft__malloc(2 * CUDA_JIT_LOG);
    int opts[4] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                   CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[4];
    CUresult res;
    int rc = 0;

    if (!logs)
        return weft__error(WEFT_ENOMEM, "JIT logs for %s", name);
    logs[0] = logs[CUDA_JIT_LOG] = '\0';
    values[0] = logs;
    values[1] = (void *)(uintptr_t)CUDA_JIT_LOG;
    values[2] = logs + CUDA_JIT_LOG;
    values[3] = (void *)(uintptr_t)CUDA_JIT_LOG;
    res = weft__fault("cuda.cuModuleLoadDataEx")
              ? CUDA_ERROR_INVALID_PTX
              : cu.ModuleLoadDataEx(mod, ptx, 4, opts, values);
    if (res != CUDA_SUCCESS) {
        logs[2 * CUDA_JIT_LOG - 1] = '\0';
        rc = cuda_fail(res, 0, "cuModuleLoadDataEx: PTX %s on GPU %d: %s", name,
                       c->ordinal,
                       logs[CUDA_JIT_LOG] ? logs + CUDA_JIT_LOG
                                          : "(no JIT log)");
    } else if (logs[0]) {
        logs[CUDA_JIT_LOG - 1] = '\0';
        weft__debug("cuda", "JIT of %s: %s", name, logs);
    }
    weft__free(logs);
    return rc;
}

static int cuda_load_binary(cuda_context *c, const void *image, size_t size,
                            const char *what, const char *name, CUmodule *mod)
{
    void *copy = NULL;
    CUresult res;

    /* The driver reads the ELF and fatbin headers in place, aligned. */
    if (((uintptr_t)image & 7) != 0) {
        if (!size)
            return weft__error(WEFT_EINVAL, "%s %s: unaligned and no size",
                               what, name);
        if (!(copy = weft__malloc(size)))
            return weft__error(WEFT_ENOMEM, "copy of %s %s", what, name);
        memcpy(copy, image, size);
        image = copy;
    }
    res = weft__fault("cuda.cuModuleLoadData") ? CUDA_ERROR_INVALID_IMAGE
                                               : cu.ModuleLoadData(mod, image);
    weft__free(copy);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuModuleLoadData: %s %s on GPU %d", what,
                         name, c->ordinal);
    return 0;
}

static int cuda_module_create(weft__context *ctx,
                              const weft__module_source *src,
                              weft__module **out)
{
    cuda_context *c = cuda_ctx(ctx);
    const weft_device_info *p = &ctx->dev->props;
    const char *name = src->name ? src->name : "(unnamed)";
    weft__cuda_image img = {0};
    cuda_module *m;
    char *text = NULL;
    int rc;

    if (src->kind != WEFT__SRC_PTX && src->kind != WEFT__SRC_CUBIN &&
        src->kind != WEFT__SRC_FATBIN && src->kind != WEFT__SRC_CUDA_CXX)
        return weft__error(WEFT_ENOTSUP,
                           "the cuda driver takes PTX, cubin, fatbin or CUDA "
                           "C++ modules, not source kind %d (%s)",
                           (int)src->kind, name);
    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "cuda module");
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        weft__free(m);
        return weft__error(WEFT_ENOMEM, "cuda module lock");
    }
    if (src->kind == WEFT__SRC_CUDA_CXX &&
        (rc = weft__cuda_nvrtc_compile(src->data, src->size, src->name,
                                       src->options, p->cc_major, p->cc_minor,
                                       &img)) < 0)
        goto fail;
    if ((rc = cuda_enter(ctx)) < 0)
        goto fail;
    switch (src->kind) {
    case WEFT__SRC_PTX:
        if (src->size && memchr(src->data, '\0', src->size) == NULL) {
            /* Sized text without its NUL: the JIT wants one. */
            if (!(text = weft__malloc(src->size + 1))) {
                rc = weft__error(WEFT_ENOMEM, "copy of PTX %s", name);
                goto fail;
            }
            memcpy(text, src->data, src->size);
            text[src->size] = '\0';
        }
        rc = cuda_load_ptx(c, text ? text : src->data, name, &m->cu);
        break;
    case WEFT__SRC_CUBIN:
    case WEFT__SRC_FATBIN:
        rc = cuda_load_binary(c, src->data, src->size,
                              src->kind == WEFT__SRC_CUBIN ? "cubin" : "fatbin",
                              name, &m->cu);
        break;
    default:
        rc = img.is_cubin ? cuda_load_binary(c, img.data, img.size, "cubin",
                                             name, &m->cu)
                          : cuda_load_ptx(c, img.data, name, &m->cu);
        break;
    }
    if (rc < 0)
        goto fail;
    weft__free(text);
    m->image = img; /* owned by the module from here (NULL unless NVRTC) */
    m->base.drv = &weft__driver_cuda;
    m->base.ctx = ctx;
    m->base.kind = src->kind;
    *out = &m->base;
    return 0;
fail:
    weft__free(text);
    weft__cuda_image_free(&img);
    pthread_mutex_destroy(&m->lock);
    weft__free(m);
    return rc;
}

static void cuda_module_destroy(weft__module *mod)
{
    cuda_module *m = (cuda_module *)mod;
    CUresult res;

    if (cuda_enter(mod->ctx) < 0)
        weft__warn("cuda", "module release: %s", weft_last_error());
    res = cu.ModuleUnload(m->cu);
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuModuleUnload: error %d", (int)res);
    for (cuda_kernel *k = m->kernels, *next; k; k = next) {
        next = k->next;
        weft__free(k);
    }
    weft__cuda_image_free(&m->image);
    pthread_mutex_destroy(&m->lock);
    weft__free(m);
}

/* The cubin or PTX that NVRTC produced, for the compiled-kernel cache. */
static int cuda_module_binary(weft__module *mod, void **bytes, size_t *size,
                              weft__source_kind *kind)
{
    cuda_module *m = (cuda_module *)mod;
    void *copy;

    if (!m->image.data)
        return weft__error(WEFT_ENOTSUP, "module was not built from source");
    if (!(copy = weft__malloc(m->image.size)))
        return weft__error(WEFT_ENOMEM, "copy of a module binary");
    memcpy(copy, m->image.data, m->image.size);
    *bytes = copy;
    *size = m->image.size;
    *kind = m->image.is_cubin ? WEFT__SRC_CUBIN : WEFT__SRC_PTX;
    return 0;
}

/*
 * Number of parameters of fn, or -1 if the driver cannot tell. The driver
 * answers CUDA_ERROR_INVALID_VALUE for the first index past the end.
 */
static long cuda_param_count(CUfunction fn)
{
    size_t off, size;
    long n;

    if (!cu.FuncGetParamInfo || weft__fault("cuda.cuFuncGetParamInfo"))
        return -1;
    for (n = 0; n < 32768; n++) {
        CUresult res = cu.FuncGetParamInfo(fn, (size_t)n, &off, &size);

        if (res == CUDA_ERROR_INVALID_VALUE)
            return n;
        if (res != CUDA_SUCCESS)
            return -1;
    }
    return -1;
}

static int cuda_kernel_get(weft__module *mod, const char *name,
                           weft__kernel **out)
{
    cuda_module *m = (cuda_module *)mod;
    cuda_kernel *k;
    CUfunction fn = NULL;
    size_t len = strlen(name);
    size_t *sizes;
    long n;
    CUresult res;
    int rc = 0;

    pthread_mutex_lock(&m->lock);
    for (k = m->kernels; k; k = k->next)
        if (strcmp(k->base.name, name) == 0)
            goto found;
    if ((rc = cuda_enter(mod->ctx)) < 0)
        goto out;
    res = weft__fault("cuda.cuModuleGetFunction")
              ? CUDA_ERROR_NOT_FOUND
              : cu.ModuleGetFunction(&fn, m->cu, name);
    if (res != CUDA_SUCCESS) {
        rc = cuda_fail(res, 0,
                       "cuModuleGetFunction: no kernel \"%s\" in the module "
                       "on GPU %d (a C++ kernel needs extern \"C\")",
                       name, cuda_ctx(mod->ctx)->ordinal);
        goto out;
    }
    n = cuda_param_count(fn);
    k = weft__calloc(1, sizeof *k + (n > 0 ? (size_t)n : 0) * sizeof *sizes +
                            len + 1);
    if (!k) {
        rc = weft__error(WEFT_ENOMEM, "kernel %s", name);
        goto out;
    }
    sizes = (size_t *)(k + 1);
    for (long i = 0; i < n; i++) {
        size_t off;

        if (cu.FuncGetParamInfo(fn, (size_t)i, &off, &sizes[i]) !=
            CUDA_SUCCESS) {
            n = -1;
            break;
        }
    }
    memcpy((char *)(sizes + (n > 0 ? n : 0)), name, len + 1);
    k->base.drv = &weft__driver_cuda;
    k->base.module = mod;
    k->base.name = (char *)(sizes + (n > 0 ? n : 0));
    k->base.params_known = n >= 0;
    k->base.nparams = n > 0 ? (unsigned)n : 0;
    k->base.params = NULL; /* CUDA tells sizes, not types */
    k->base.param_sizes = n > 0 ? sizes : NULL;
    k->fn = fn;
    k->next = m->kernels;
    m->kernels = k;
found:
    *out = &k->base;
out:
    pthread_mutex_unlock(&m->lock);
    return rc;
}

static int cuda_launch(weft__queue *q, weft__kernel *k, const weft__grid *grid,
                       const weft__karg *args, unsigned nargs)
{
    void *params_fixed[CUDA_LAUNCH_ARGS];
    CUdeviceptr ptrs_fixed[CUDA_LAUNCH_ARGS];
    void **params = params_fixed;
    CUdeviceptr *ptrs = ptrs_fixed;
    void *block = NULL;
    CUresult res;
    int rc;

    if (nargs > CUDA_LAUNCH_ARGS) {
        block = weft__malloc(nargs * (sizeof *params + sizeof *ptrs));
        if (!block)
            return weft__error(WEFT_ENOMEM, "arguments of %s", k->name);
        ptrs = block;
        params = (void **)(ptrs + nargs);
    }
    for (unsigned i = 0; i < nargs; i++) {
        switch (args[i].type) {
        case WEFT_PARAM_BUFFER:
            ptrs[i] = cuda_mm(args[i].u.buf.mem)->ptr + args[i].u.buf.offset;
            params[i] = &ptrs[i];
            break;
        case WEFT_PARAM_LOCAL:
            weft__free(block);
            return weft__error(WEFT_EARGS,
                               "argument %u of %s is LOCAL: CUDA kernels get "
                               "dynamic shared memory from the grid's "
                               "shared_bytes",
                               i, k->name);
        default:
            params[i] = (void *)(uintptr_t)args[i].u.value;
            break;
        }
    }
    if ((rc = cuda_enter(q->ctx)) < 0) {
        weft__free(block);
        return rc;
    }
    res = weft__fault("cuda.cuLaunchKernel")
              ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
              : cu.LaunchKernel(((cuda_kernel *)k)->fn, grid->groups[0],
                                grid->groups[1], grid->groups[2],
                                grid->group_size[0], grid->group_size[1],
                                grid->group_size[2], grid->shared_bytes,
                                cuda_stream(q), nargs ? params : NULL, NULL);
    weft__free(block);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0,
                         "cuLaunchKernel: %s with %ux%ux%u groups of "
                         "%ux%ux%u, %u shared bytes, on GPU %d",
                         k->name, grid->groups[0], grid->groups[1],
                         grid->groups[2], grid->group_size[0],
                         grid->group_size[1], grid->group_size[2],
                         grid->shared_bytes, cuda_ctx(q->ctx)->ordinal);
    return 0;
}

/* ---- events ------------------------------------------------------------ */

static CUevent cuda_ev(weft__event *ev)
{
    return ((cuda_event *)ev)->cu;
}

static int cuda_event_create(weft__context *ctx, unsigned flags,
                             weft__event **out)
{
    cuda_event *e;
    CUresult res;
    int rc;

    if (!(e = weft__calloc(1, sizeof *e)))
        return weft__error(WEFT_ENOMEM, "cuda event");
    if ((rc = cuda_enter(ctx)) < 0) {
        weft__free(e);
        return rc;
    }
    /* Timing costs a timestamp write per record: only where asked for. */
    res = weft__fault("cuda.cuEventCreate")
              ? CUDA_ERROR_OUT_OF_MEMORY
              : cu.EventCreate(&e->cu, (flags & WEFT__EVENT_TIMING)
                                           ? CU_EVENT_DEFAULT
                                           : CU_EVENT_DISABLE_TIMING);
    if (res != CUDA_SUCCESS) {
        weft__free(e);
        return cuda_fail(res, 0, "cuEventCreate: GPU %d",
                         cuda_ctx(ctx)->ordinal);
    }
    e->base.drv = &weft__driver_cuda;
    e->base.ctx = ctx;
    e->base.flags = flags;
    *out = &e->base;
    return 0;
}

static int cuda_event_record(weft__event *ev, weft__queue *q)
{
    CUresult res;
    int rc;

    if (ev->ctx->dev != q->ctx->dev)
        return weft__error(
            WEFT_EINVAL, "event of GPU %d recorded on a queue of GPU %d",
            cuda_ctx(ev->ctx)->ordinal, cuda_ctx(q->ctx)->ordinal);
    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventRecord")
              ? CUDA_ERROR_UNKNOWN
              : cu.EventRecord(cuda_ev(ev), cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuEventRecord: GPU %d",
                         cuda_ctx(q->ctx)->ordinal);
    return 0;
}

static int cuda_queue_wait_event(weft__queue *q, weft__event *ev)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuStreamWaitEvent")
              ? CUDA_ERROR_UNKNOWN
              : cu.StreamWaitEvent(cuda_stream(q), cuda_ev(ev), 0);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0,
                         "cuStreamWaitEvent: queue of GPU %d on an event of "
                         "GPU %d",
                         cuda_ctx(q->ctx)->ordinal, cuda_ctx(ev->ctx)->ordinal);
    return 0;
}

static int cuda_event_query(weft__event *ev)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(ev->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventQuery") ? CUDA_ERROR_UNKNOWN
                                           : cu.EventQuery(cuda_ev(ev));
    if (res == CUDA_ERROR_NOT_READY)
        return WEFT_ENOTREADY; /* not a failure: no detail */
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuEventQuery: GPU %d",
                         cuda_ctx(ev->ctx)->ordinal);
    return 0;
}

static int cuda_event_sync(weft__event *ev)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(ev->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventSynchronize")
              ? CUDA_ERROR_UNKNOWN
              : cu.EventSynchronize(cuda_ev(ev));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuEventSynchronize: GPU %d",
                         cuda_ctx(ev->ctx)->ordinal);
    return 0;
}

static int cuda_event_elapsed(weft__event *start, weft__event *end,
                              uint64_t *ns)
{
    float ms = 0;
    CUresult res;
    int rc;

    if ((rc = cuda_enter(end->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventElapsedTime")
              ? CUDA_ERROR_UNKNOWN
              : cu.EventElapsedTime(&ms, cuda_ev(start), cuda_ev(end));
    if (res == CUDA_ERROR_NOT_READY)
        return weft__error(WEFT_ENOTREADY, "timing events not complete yet");
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuEventElapsedTime: GPU %d and GPU %d",
                         cuda_ctx(start->ctx)->ordinal,
                         cuda_ctx(end->ctx)->ordinal);
    /* Resolution is about 0.5 us; a negative time is an order mix-up. */
    *ns = ms > 0 ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
    return 0;
}

static void cuda_event_destroy(weft__event *ev)
{
    CUresult res;

    if (cuda_enter(ev->ctx) < 0)
        weft__warn("cuda", "event release: %s", weft_last_error());
    res = cu.EventDestroy(cuda_ev(ev));
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuEventDestroy: error %d", (int)res);
    weft__free(ev);
}

static int cuda_host_fn(weft__queue *q, weft__host_fn *fn, void *user)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuLaunchHostFunc")
              ? CUDA_ERROR_UNKNOWN
              : cu.LaunchHostFunc(cuda_stream(q), fn, user);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuLaunchHostFunc: GPU %d",
                         cuda_ctx(q->ctx)->ordinal);
    return 0;
}

/* ---- native graphs (stream capture) ------------------------------------ */

typedef struct cuda_graph {
    CUgraph graph;
    CUgraphExec exec;
    int ordinal;
} cuda_graph;

static void cuda_graph_destroy(void *graph);

static int cuda_graph_supported(const weft__device *dev)
{
    (void)dev;
    return cu.StreamBeginCapture && cu.StreamEndCapture &&
           cu.GraphInstantiateWithFlags && cu.GraphLaunch &&
           cu.GraphExecDestroy && cu.GraphDestroy;
}

static int cuda_graph_begin(weft__queue *q)
{
    CUresult res;
    int rc;

    if (!cu.StreamBeginCapture || !cu.StreamEndCapture ||
        !cu.GraphInstantiateWithFlags || !cu.GraphLaunch ||
        !cu.GraphExecDestroy || !cu.GraphDestroy)
        return weft__error(WEFT_ENOTSUP, "cuda: the driver has no graphs");
    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuStreamBeginCapture")
              ? CUDA_ERROR_UNKNOWN
              : cu.StreamBeginCapture(cuda_stream(q),
                                      CU_STREAM_CAPTURE_MODE_RELAXED);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuStreamBeginCapture: GPU %d",
                         cuda_ctx(q->ctx)->ordinal);
    return 0;
}

/*
 * In a capture: an event record node (for graphs of other GPUs to wait
 * for), and an event wait node (driver.h: the record waited for is the
 * latest when the graph is launched).
 */
static int cuda_graph_record_external(weft__event *ev, weft__queue *q)
{
    CUresult res;
    int rc;

    if (!cu.EventRecordWithFlags)
        return weft__error(WEFT_ENOTSUP,
                           "cuda: the driver has no cuEventRecordWithFlags");
    if (ev->ctx->dev != q->ctx->dev)
        return weft__error(
            WEFT_EINVAL, "event of GPU %d recorded on a queue of GPU %d",
            cuda_ctx(ev->ctx)->ordinal, cuda_ctx(q->ctx)->ordinal);
    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventRecordWithFlags")
              ? CUDA_ERROR_UNKNOWN
              : cu.EventRecordWithFlags(cuda_ev(ev), cuda_stream(q),
                                        CU_EVENT_RECORD_EXTERNAL);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuEventRecordWithFlags (external): GPU %d",
                         cuda_ctx(q->ctx)->ordinal);
    return 0;
}

static int cuda_graph_wait_external(weft__queue *q, weft__event *ev)
{
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuStreamWaitEvent")
              ? CUDA_ERROR_UNKNOWN
              : cu.StreamWaitEvent(cuda_stream(q), cuda_ev(ev),
                                   CU_EVENT_WAIT_EXTERNAL);
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0,
                         "cuStreamWaitEvent (external): queue of GPU %d on an "
                         "event of GPU %d",
                         cuda_ctx(q->ctx)->ordinal, cuda_ctx(ev->ctx)->ordinal);
    return 0;
}

/*
 * The capture becomes old's graph if old's executable graph can take it
 * (cuGraphExecUpdate: same topology, other parameters), else a new one.
 */
static int cuda_graph_end(weft__queue *q, void *old, void **out, int *updated)
{
    cuda_graph *g = old;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUresult res;
    int rc;

    if (updated)
        *updated = 0;
    if ((rc = cuda_enter(q->ctx)) < 0) {
        if (out)
            cuda_graph_destroy(g); /* ours, as driver.h says */
        return rc;
    }
    res = cu.StreamEndCapture(cuda_stream(q), &graph);
    if (res != CUDA_SUCCESS || !out) {
        if (graph && cu.GraphDestroy(graph) != CUDA_SUCCESS)
            weft__warn("cuda",
                       "a captured graph of GPU %d was not freed "
                       "cleanly",
                       cuda_ctx(q->ctx)->ordinal);
        if (out)
            cuda_graph_destroy(g);
        return res != CUDA_SUCCESS
                   ? cuda_fail(res, 0, "cuStreamEndCapture: GPU %d",
                               cuda_ctx(q->ctx)->ordinal)
                   : 0;
    }
    if (g && cu.GraphExecUpdate) {
        CUgraphExecUpdateResultInfo info;

        memset(&info, 0, sizeof info);
        res = weft__fault("cuda.cuGraphExecUpdate")
                  ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
                  : cu.GraphExecUpdate(g->exec, graph, &info);
        if (res == CUDA_SUCCESS) {
            /* The executable graph keeps what it needs of the new one. */
            if (cu.GraphDestroy(g->graph) != CUDA_SUCCESS)
                weft__warn("cuda", "a graph of GPU %d was not freed cleanly",
                           g->ordinal);
            g->graph = graph;
            if (updated)
                *updated = 1;
            *out = g;
            return 0;
        }
        weft__debug("cuda",
                    "cuGraphExecUpdate: GPU %d: error %d (result %d): a new "
                    "graph",
                    g->ordinal, (int)res, (int)info.result);
    }
    cuda_graph_destroy(g);
    g = NULL;
    res = weft__fault("cuda.cuGraphInstantiateWithFlags")
              ? CUDA_ERROR_UNKNOWN
              : cu.GraphInstantiateWithFlags(&exec, graph, 0);
    if (res != CUDA_SUCCESS) {
        cu.GraphDestroy(graph);
        return cuda_fail(res, 0, "cuGraphInstantiateWithFlags: GPU %d",
                         cuda_ctx(q->ctx)->ordinal);
    }
    if (!(g = weft__calloc(1, sizeof *g))) {
        cu.GraphExecDestroy(exec);
        cu.GraphDestroy(graph);
        return weft__error(WEFT_ENOMEM, "cuda: out of memory for a graph");
    }
    g->graph = graph;
    g->exec = exec;
    g->ordinal = cuda_ctx(q->ctx)->ordinal;
    *out = g;
    return 0;
}

static int cuda_graph_launch(void *graph, weft__queue *q)
{
    cuda_graph *g = graph;
    CUresult res;
    int rc;

    if ((rc = cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuGraphLaunch")
              ? CUDA_ERROR_UNKNOWN
              : cu.GraphLaunch(g->exec, cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return cuda_fail(res, 0, "cuGraphLaunch: GPU %d", g->ordinal);
    return 0;
}

static void cuda_graph_destroy(void *graph)
{
    cuda_graph *g = graph;

    if (!g)
        return;
    if (cu.GraphExecDestroy(g->exec) != CUDA_SUCCESS ||
        cu.GraphDestroy(g->graph) != CUDA_SUCCESS)
        weft__warn("cuda", "a graph of GPU %d was not freed cleanly",
                   g->ordinal);
    weft__free(g);
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
    .queue_create = cuda_queue_create,
    .queue_sync = cuda_queue_sync,
    .queue_release = cuda_queue_release,
    .mem_alloc = cuda_mem_alloc,
    .host_alloc = cuda_host_alloc,
    .host_register = cuda_host_register,
    .mem_free = cuda_mem_free,
    .copy_h2d = cuda_copy_h2d,
    .copy_d2h = cuda_copy_d2h,
    .copy_d2d = cuda_copy_d2d,
    .copy_peer = cuda_copy_peer,
    .fill = cuda_fill,
    .module_create = cuda_module_create,
    .host_is_pinned = cuda_host_is_pinned,
    .module_destroy = cuda_module_destroy,
    .module_binary = cuda_module_binary,
    .kernel_get = cuda_kernel_get,
    .launch = cuda_launch,
    .event_create = cuda_event_create,
    .event_record = cuda_event_record,
    .queue_wait_event = cuda_queue_wait_event,
    .event_query = cuda_event_query,
    .event_sync = cuda_event_sync,
    .event_elapsed = cuda_event_elapsed,
    .event_destroy = cuda_event_destroy,
    .host_fn = cuda_host_fn,
    .graph_supported = cuda_graph_supported,
    .graph_record_external = cuda_graph_record_external,
    .graph_wait_external = cuda_graph_wait_external,
    .graph_begin = cuda_graph_begin,
    .graph_end = cuda_graph_end,
    .graph_launch = cuda_graph_launch,
    .graph_destroy = cuda_graph_destroy,
};
