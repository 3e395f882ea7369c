/*
 * The OpenCL driver: every platform and device the ICD loader knows.
 *
 * Object mapping: one cl_context per device (contexts of one platform could
 * span devices, but one per device keeps a weft context's objects on its
 * own device and makes cross-device work explicit), one in-order
 * cl_command_queue per weft queue, one cl_mem per weft memory, one
 * cl_program per module.
 *
 * Two internal queues per context:
 * - mapq takes the persistent maps and unmaps of pinned memory and bounce
 *   buffers. A blocking map on it waits only for other maps, never for
 *   user work.
 * - aux runs the half of a peer copy that is not on the caller's queue.
 *
 * Cross-context ordering: OpenCL cannot wait on an event of another
 * context, so a "bridge" makes a user event in the waiting context and
 * completes it from clSetEventCallback on the source event. The callback
 * fires on completion and on failure; a failed source passes its negative
 * status on, so that work waiting on it fails instead of hanging.
 *
 * Event callbacks run on the implementation's threads. They only set user
 * event status, release objects and push to lists under a mutex: never a
 * blocking call (clFinish, clWaitForEvents, blocking maps), which OpenCL
 * leaves undefined inside a callback.
 *
 * Releasing a cl_mem that enqueued commands still use is safe in OpenCL:
 * the object is deleted once those commands finish. The driver relies on
 * that for one-off sub-buffers and for memory of unmaps in flight.
 */
#include "opencl.h"

#include <CL/cl.h>
#include <CL/cl_ext.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* NVIDIA's device attribute query (cl_nv_device_attribute_query). */
#ifndef CL_DEVICE_PCI_BUS_ID_NV
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#endif
#ifndef CL_DEVICE_PCI_SLOT_ID_NV
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#endif
#ifndef CL_DEVICE_PCI_DOMAIN_ID_NV
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#endif

/* Sub-buffers cached per memory for kernel arguments at an offset. */
#define OCL_SUB_CACHE 256
/* Free bounce buffers kept per context for peer copies. */
#define OCL_BOUNCE_KEEP 4
#define OCL_BOUNCE_MIN  ((size_t)64 << 10)

/*
 * The cl_int of a call, or the failure a test injects at its site
 * ("opencl.clCreateBuffer"): the call is then not made at all.
 */
#define OCL_FAULT(call) weft__fault("opencl." call)
#define OCL(call, expr) (OCL_FAULT(call) ? CL_OUT_OF_HOST_MEMORY : (expr))
/* The same for calls that return an object and an errcode_ret. */
#define OCL_NEW(call, err, expr)                                               \
    (OCL_FAULT(call) ? ((err) = CL_OUT_OF_HOST_MEMORY, NULL) : (expr))

/* ---- error translation ------------------------------------------------- */

#define OCL_CODES(X)                                                           \
    X(CL_DEVICE_NOT_FOUND, WEFT_ENODEV)                                        \
    X(CL_DEVICE_NOT_AVAILABLE, WEFT_ENODEV)                                    \
    X(CL_COMPILER_NOT_AVAILABLE, WEFT_ENOTSUP)                                 \
    X(CL_MEM_OBJECT_ALLOCATION_FAILURE, WEFT_EDEVMEM)                          \
    X(CL_OUT_OF_RESOURCES, WEFT_EDEVMEM)                                       \
    X(CL_OUT_OF_HOST_MEMORY, WEFT_ENOMEM)                                      \
    X(CL_PROFILING_INFO_NOT_AVAILABLE, WEFT_ENOTSUP)                           \
    X(CL_MEM_COPY_OVERLAP, WEFT_EINVAL)                                        \
    X(CL_IMAGE_FORMAT_MISMATCH, WEFT_EINVAL)                                   \
    X(CL_IMAGE_FORMAT_NOT_SUPPORTED, WEFT_ENOTSUP)                             \
    X(CL_BUILD_PROGRAM_FAILURE, WEFT_EBUILD)                                   \
    X(CL_MAP_FAILURE, WEFT_EDRIVER)                                            \
    X(CL_MISALIGNED_SUB_BUFFER_OFFSET, WEFT_EINVAL)                            \
    X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, WEFT_ECANCELED)            \
    X(CL_COMPILE_PROGRAM_FAILURE, WEFT_EBUILD)                                 \
    X(CL_LINKER_NOT_AVAILABLE, WEFT_ENOTSUP)                                   \
    X(CL_LINK_PROGRAM_FAILURE, WEFT_EBUILD)                                    \
    X(CL_DEVICE_PARTITION_FAILED, WEFT_EDRIVER)                                \
    X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE, WEFT_ENOTSUP)                          \
    X(CL_INVALID_VALUE, WEFT_EINVAL)                                           \
    X(CL_INVALID_DEVICE_TYPE, WEFT_EINVAL)                                     \
    X(CL_INVALID_PLATFORM, WEFT_ENODEV)                                        \
    X(CL_INVALID_DEVICE, WEFT_ENODEV)                                          \
    X(CL_INVALID_CONTEXT, WEFT_EINVAL)                                         \
    X(CL_INVALID_QUEUE_PROPERTIES, WEFT_ENOTSUP)                               \
    X(CL_INVALID_COMMAND_QUEUE, WEFT_EINVAL)                                   \
    X(CL_INVALID_HOST_PTR, WEFT_EINVAL)                                        \
    X(CL_INVALID_MEM_OBJECT, WEFT_EINVAL)                                      \
    X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, WEFT_EINVAL)                         \
    X(CL_INVALID_IMAGE_SIZE, WEFT_EINVAL)                                      \
    X(CL_INVALID_SAMPLER, WEFT_EINVAL)                                         \
    X(CL_INVALID_BINARY, WEFT_EBUILD)                                          \
    X(CL_INVALID_BUILD_OPTIONS, WEFT_EBUILD)                                   \
    X(CL_INVALID_PROGRAM, WEFT_EINVAL)                                         \
    X(CL_INVALID_PROGRAM_EXECUTABLE, WEFT_EBUILD)                              \
    X(CL_INVALID_KERNEL_NAME, WEFT_ENOTFOUND)                                  \
    X(CL_INVALID_KERNEL_DEFINITION, WEFT_EBUILD)                               \
    X(CL_INVALID_KERNEL, WEFT_EINVAL)                                          \
    X(CL_INVALID_ARG_INDEX, WEFT_EARGS)                                        \
    X(CL_INVALID_ARG_VALUE, WEFT_EARGS)                                        \
    X(CL_INVALID_ARG_SIZE, WEFT_EARGS)                                         \
    X(CL_INVALID_KERNEL_ARGS, WEFT_EARGS)                                      \
    X(CL_INVALID_WORK_DIMENSION, WEFT_EINVAL)                                  \
    X(CL_INVALID_WORK_GROUP_SIZE, WEFT_EINVAL)                                 \
    X(CL_INVALID_WORK_ITEM_SIZE, WEFT_EINVAL)                                  \
    X(CL_INVALID_GLOBAL_OFFSET, WEFT_EINVAL)                                   \
    X(CL_INVALID_EVENT_WAIT_LIST, WEFT_EINVAL)                                 \
    X(CL_INVALID_EVENT, WEFT_EINVAL)                                           \
    X(CL_INVALID_OPERATION, WEFT_ENOTSUP)                                      \
    X(CL_INVALID_GL_OBJECT, WEFT_EINVAL)                                       \
    X(CL_INVALID_BUFFER_SIZE, WEFT_EINVAL)                                     \
    X(CL_INVALID_MIP_LEVEL, WEFT_EINVAL)                                       \
    X(CL_INVALID_GLOBAL_WORK_SIZE, WEFT_EINVAL)                                \
    X(CL_INVALID_PROPERTY, WEFT_EINVAL)                                        \
    X(CL_INVALID_IMAGE_DESCRIPTOR, WEFT_EINVAL)                                \
    X(CL_INVALID_COMPILER_OPTIONS, WEFT_EBUILD)                                \
    X(CL_INVALID_LINKER_OPTIONS, WEFT_EBUILD)                                  \
    X(CL_INVALID_DEVICE_PARTITION_COUNT, WEFT_EINVAL)                          \
    X(CL_INVALID_PIPE_SIZE, WEFT_EINVAL)                                       \
    X(CL_INVALID_DEVICE_QUEUE, WEFT_EINVAL)                                    \
    X(CL_INVALID_SPEC_ID, WEFT_EINVAL)                                         \
    X(CL_MAX_SIZE_RESTRICTION_EXCEEDED, WEFT_EINVAL)                           \
    X(CL_PLATFORM_NOT_FOUND_KHR, WEFT_ENOTSUP)                                 \
    X(CL_INVALID_COMMAND_BUFFER_KHR, WEFT_EINVAL)                              \
    X(CL_INVALID_SYNC_POINT_WAIT_LIST_KHR, WEFT_EINVAL)                        \
    X(CL_INCOMPATIBLE_COMMAND_QUEUE_KHR, WEFT_ENOTSUP)

typedef struct ocl_code {
    cl_int code;
    int weft;
    const char *name;
} ocl_code;

static const ocl_code ocl_codes[] = {
#define OCL_CODE_ENTRY(name, weft) {name, weft, #name},
    OCL_CODES(OCL_CODE_ENTRY)
#undef OCL_CODE_ENTRY
};

static const ocl_code *ocl_code_of(cl_int rc)
{
    for (size_t i = 0; i < WEFT__COUNTOF(ocl_codes); i++)
        if (ocl_codes[i].code == rc)
            return &ocl_codes[i];
    return NULL;
}

/* Report rc (a CL_* code) as the weft code of the table. */
/*
 * Releases, checked: a release that fails can only be logged (the object
 * is gone for weft either way).
 */
#define OCL_RELEASE_FN(name, type, call)                                       \
    static void name(type x)                                                   \
    {                                                                          \
        cl_int rc_ = call(x);                                                  \
        if (rc_ != CL_SUCCESS)                                                 \
            weft__warn("opencl", "%s: error %d", #call, (int)rc_);             \
    }
OCL_RELEASE_FN(ocl_release_event, cl_event, clReleaseEvent)
OCL_RELEASE_FN(ocl_release_memobject, cl_mem, clReleaseMemObject)
OCL_RELEASE_FN(ocl_release_kernel, cl_kernel, clReleaseKernel)
OCL_RELEASE_FN(ocl_release_program, cl_program, clReleaseProgram)
OCL_RELEASE_FN(ocl_release_commandqueue, cl_command_queue,
               clReleaseCommandQueue)
OCL_RELEASE_FN(ocl_release_context, cl_context, clReleaseContext)
#undef OCL_RELEASE_FN

static int ocl_fail(cl_int rc, const char *fmt, ...) WEFT__PRINTF(2, 3);
static int ocl_fail(cl_int rc, const char *fmt, ...)
{
    const ocl_code *c = ocl_code_of(rc);
    char msg[1800];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return weft__driver_error(c ? c->weft : WEFT_EDRIVER, "opencl", rc,
                              c ? c->name : "CL_UNKNOWN_ERROR", "%s", msg);
}

/* ---- objects ----------------------------------------------------------- */

/*
 * cl_khr_command_buffer, looked up once per platform at discovery (which
 * runs on one thread). The extension is provisional and its ABI changed at
 * 0.9.5: the copy, fill and barrier commands gained a properties parameter
 * after the queue. The pointers of both forms are kept untyped and called
 * through the type that the device's version says (ocl_cmd_*).
 */
typedef void (*ocl_any_fn)(void);
typedef cl_int(CL_API_CALL *ocl_cmd_copy_v5)(
    cl_command_buffer_khr, cl_command_queue, const cl_properties *, cl_mem,
    cl_mem, size_t, size_t, size_t, cl_uint, const cl_sync_point_khr *,
    cl_sync_point_khr *, cl_mutable_command_khr *);
typedef cl_int(CL_API_CALL *ocl_cmd_fill_v5)(
    cl_command_buffer_khr, cl_command_queue, const cl_properties *, cl_mem,
    const void *, size_t, size_t, size_t, cl_uint, const cl_sync_point_khr *,
    cl_sync_point_khr *, cl_mutable_command_khr *);
typedef cl_int(CL_API_CALL *ocl_cmd_barrier_v5)(
    cl_command_buffer_khr, cl_command_queue, const cl_properties *, cl_uint,
    const cl_sync_point_khr *, cl_sync_point_khr *, cl_mutable_command_khr *);

typedef struct ocl_cmdbuf_api {
    unsigned resolved; /* looked up, found or not */
    unsigned ok;       /* every entry point below was found */
    clCreateCommandBufferKHR_fn create;
    clFinalizeCommandBufferKHR_fn finalize;
    clReleaseCommandBufferKHR_fn release;
    clEnqueueCommandBufferKHR_fn enqueue;
    clCommandNDRangeKernelKHR_fn ndrange; /* the same in every version */
    /* the form of these depends on the version */
    ocl_any_fn copy, fill, barrier;
} ocl_cmdbuf_api;

typedef struct ocl_platform {
    weft__platform base;
    cl_platform_id id;
    unsigned version; /* major * 100 + minor */
    ocl_cmdbuf_api cmdbuf;
} ocl_platform;

typedef cl_program(CL_API_CALL *ocl_il_fn)(cl_context, const void *, size_t,
                                           cl_int *);

typedef struct ocl_device {
    weft__device base;
    cl_device_id id;
    unsigned version;    /* of the device, major * 100 + minor */
    unsigned new_queues; /* clCreateCommandQueueWithProperties exists */
    unsigned align;      /* CL_DEVICE_MEM_BASE_ADDR_ALIGN, in bytes */
    unsigned profiling;  /* queues can profile */
    unsigned priorities; /* cl_khr_priority_hints */
    ocl_il_fn il_khr;    /* clCreateProgramWithILKHR, or NULL */
    unsigned il_core;    /* clCreateProgramWithIL takes SPIR-V */
    /* cl_khr_command_buffer where weft can use it (native graphs), or NULL */
    const ocl_cmdbuf_api *cmdbuf;
    unsigned cmdbuf_v5;           /* version 0.9.5 or later: that ABI */
    unsigned cmdbuf_simultaneous; /* may be enqueued while pending */
    char platform_name[128];
} ocl_device;

typedef struct ocl_bounce {
    struct ocl_bounce *next;
    struct ocl_context *owner;
    cl_mem mem;
    void *host; /* persistently mapped */
    size_t size;
} ocl_bounce;

typedef struct ocl_context {
    weft__context base;
    cl_context cl;
    cl_device_id dev;
    cl_command_queue mapq;
    cl_command_queue aux;
    /* lock guards the bounce pool; idle is signalled when bounce_out is 0 */
    pthread_mutex_t lock;
    pthread_cond_t idle;
    ocl_bounce *bounce_free;
    unsigned nbounce_free;
    long bounce_out;              /* lent to peer copies in flight */
    struct ocl_capture *captures; /* in progress; guarded by lock */
} ocl_context;

typedef struct ocl_host_call ocl_host_call;

/*
 * The thread that runs a queue's host functions. Event callbacks only hand
 * calls to it: a callback may run inline in the thread that sets it (when
 * the event is already complete) or on the implementation's own threads,
 * and a host function may block for as long as it likes.
 */
typedef struct ocl_host_worker {
    pthread_t thread;
    pthread_mutex_t lock; /* guards head, tail, stop */
    pthread_cond_t cond;
    ocl_host_call *head, *tail;
    int stop;
} ocl_host_worker;

/*
 * While a queue takes part in a capture (cap not NULL), its enqueues
 * record into the capture's command buffer; the lanes of the queues map
 * onto sync points: last is the queue's last recorded command (in-order
 * semantics), waits the sync points that its next command must also wait
 * for (its waits on events recorded in the capture). Only the capturing
 * thread touches these, as it is the only one that enqueues on the queues
 * of its capture.
 */
typedef struct ocl_queue {
    weft__queue base;
    cl_command_queue cl;
    pthread_mutex_t lock;    /* guards the creation of worker */
    ocl_host_worker *worker; /* started by the first host function */
    struct ocl_capture *cap;
    unsigned has_last;
    cl_sync_point_khr last;
    cl_sync_point_khr *waits;
    unsigned nwaits, cap_waits;
} ocl_queue;

typedef struct ocl_sub {
    struct ocl_sub *next;
    size_t offset;
    cl_mem cl;
} ocl_sub;

typedef struct ocl_mem {
    weft__mem base;
    cl_mem cl;
    pthread_mutex_t lock; /* guards subs */
    ocl_sub *subs;
    unsigned nsubs;
} ocl_mem;

typedef struct ocl_kernel {
    weft__kernel base;
    struct ocl_kernel *next;
    cl_kernel cl;
    /* held from the first clSetKernelArg to the enqueue of a launch */
    pthread_mutex_t lock;
    char *name;
    weft_param_type *params;
    size_t *sizes;
} ocl_kernel;

typedef struct ocl_module {
    weft__module base;
    cl_program prog;
    char *name;
    pthread_mutex_t lock; /* guards kernels */
    ocl_kernel *kernels;
} ocl_module;

/*
 * An event recorded in a capture has no marker (last is NULL): it names
 * the sync point of what its queue had recorded then (has_sp 0: nothing),
 * for the capture cap_id, and only while that capture is in progress.
 */
typedef struct ocl_event {
    weft__event base;
    pthread_mutex_t lock; /* guards the rest */
    cl_event last;        /* the marker of the last record, or NULL */
    uint64_t cap_id;      /* the capture of the last record, or 0 */
    unsigned has_sp;
    cl_sync_point_khr sp;
} ocl_event;

static ocl_device *ocl_dev(weft__device *d)
{
    return (ocl_device *)d;
}

static ocl_context *ocl_ctx(weft__context *c)
{
    return (ocl_context *)c;
}

static ocl_device *ocl_ctx_dev(weft__context *c)
{
    return ocl_dev(c->dev);
}

static const char *ocl_qname(weft__queue *q)
{
    return q->ctx->dev->name;
}

static int ocl_mutex_init(pthread_mutex_t *m)
{
    int rc = weft__fault("opencl.pthread_mutex_init")
                 ? 12
                 : pthread_mutex_init(m, NULL);

    if (rc)
        return weft__error(WEFT_ENOMEM, "opencl: pthread_mutex_init: %s",
                           strerror(rc));
    return 0;
}

/* ---- discovery --------------------------------------------------------- */

static void ocl_trim(char *s)
{
    size_t n = strlen(s);

    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
        s[--n] = 0;
}

/* A string property of a device, allocated; NULL with *rc on failure. */
static char *ocl_device_string(cl_device_id d, cl_device_info what, cl_int *rc)
{
    size_t n = 0;
    char *s;

    *rc = OCL("clGetDeviceInfo", clGetDeviceInfo(d, what, 0, NULL, &n));
    if (*rc != CL_SUCCESS)
        return NULL;
    if (!(s = weft__malloc(n + 1))) {
        *rc = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    *rc = OCL("clGetDeviceInfo", clGetDeviceInfo(d, what, n, s, NULL));
    if (*rc != CL_SUCCESS) {
        weft__free(s);
        return NULL;
    }
    s[n] = 0;
    ocl_trim(s);
    return s;
}

static cl_int ocl_device_text(cl_device_id d, cl_device_info what, char *dst,
                              size_t cap)
{
    cl_int rc;
    char *s = ocl_device_string(d, what, &rc);

    if (s) {
        weft__strlcpy(dst, s, cap);
        weft__free(s);
    }
    return rc;
}

static cl_int ocl_platform_text(cl_platform_id p, cl_platform_info what,
                                char *dst, size_t cap)
{
    size_t n = 0;
    char *s;
    cl_int rc;

    rc = OCL("clGetPlatformInfo", clGetPlatformInfo(p, what, 0, NULL, &n));
    if (rc != CL_SUCCESS)
        return rc;
    if (!(s = weft__malloc(n + 1)))
        return CL_OUT_OF_HOST_MEMORY;
    rc = OCL("clGetPlatformInfo", clGetPlatformInfo(p, what, n, s, NULL));
    if (rc == CL_SUCCESS) {
        s[n] = 0;
        ocl_trim(s);
        weft__strlcpy(dst, s, cap);
    }
    weft__free(s);
    return rc;
}

static cl_int ocl_device_get(cl_device_id d, cl_device_info what, size_t size,
                             void *out)
{
    return OCL("clGetDeviceInfo", clGetDeviceInfo(d, what, size, out, NULL));
}

static cl_int ocl_device_get_size(cl_device_id d, cl_device_info what,
                                  size_t *size)
{
    return OCL("clGetDeviceInfo", clGetDeviceInfo(d, what, 0, NULL, size));
}

/* "OpenCL 3.0 ..." -> 300; 0 if unreadable. */
static unsigned ocl_parse_version(const char *s)
{
    unsigned major = 0, minor = 0;

    if (sscanf(s, "OpenCL %u.%u", &major, &minor) != 2)
        return 0;
    return major * 100 + minor;
}

/* Whether the space-separated list exts names ext. */
static int ocl_has_ext(const char *exts, const char *ext)
{
    size_t n = strlen(ext);

    for (const char *p = exts; (p = strstr(p, ext)) != NULL; p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return 1;
    return 0;
}

/*
 * The PCI address, where an extension tells it: cl_khr_pci_bus_info, or
 * NVIDIA's attribute query, whose slot id packs device << 3 | function.
 * Optional: a failure leaves it empty.
 */
static void ocl_pci_bus_id(ocl_device *d, const char *exts)
{
    if (ocl_has_ext(exts, "cl_khr_pci_bus_info")) {
        cl_device_pci_bus_info_khr info;

        if (ocl_device_get(d->id, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof info,
                           &info) == CL_SUCCESS) {
            snprintf(d->base.pci_bus_id, sizeof d->base.pci_bus_id,
                     "%04x:%02x:%02x.%x", info.pci_domain, info.pci_bus,
                     info.pci_device, info.pci_function);
            return;
        }
    }
    if (ocl_has_ext(exts, "cl_nv_device_attribute_query")) {
        cl_uint bus, slot, domain = 0;

        if (ocl_device_get(d->id, CL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus) ==
                CL_SUCCESS &&
            ocl_device_get(d->id, CL_DEVICE_PCI_SLOT_ID_NV, sizeof slot,
                           &slot) == CL_SUCCESS) {
            if (ocl_device_get(d->id, CL_DEVICE_PCI_DOMAIN_ID_NV, sizeof domain,
                               &domain) != CL_SUCCESS)
                domain = 0;
            snprintf(d->base.pci_bus_id, sizeof d->base.pci_bus_id,
                     "%04x:%02x:%02x.%x", domain & 0xffff, bus & 0xff,
                     (slot >> 3) & 0x1f, slot & 7);
        }
    }
}

/* The platform's command-buffer entry points, looked up on first need. */
static const ocl_cmdbuf_api *ocl_cmdbuf_resolve(ocl_platform *p)
{
    ocl_cmdbuf_api *a = &p->cmdbuf;

    if (a->resolved)
        return a->ok ? a : NULL;
    a->resolved = 1;
#define OCL_RESOLVE(field, type, name)                                         \
    a->field = (type)clGetExtensionFunctionAddressForPlatform(p->id, name)
    OCL_RESOLVE(create, clCreateCommandBufferKHR_fn,
                "clCreateCommandBufferKHR");
    OCL_RESOLVE(finalize, clFinalizeCommandBufferKHR_fn,
                "clFinalizeCommandBufferKHR");
    OCL_RESOLVE(release, clReleaseCommandBufferKHR_fn,
                "clReleaseCommandBufferKHR");
    OCL_RESOLVE(enqueue, clEnqueueCommandBufferKHR_fn,
                "clEnqueueCommandBufferKHR");
    OCL_RESOLVE(ndrange, clCommandNDRangeKernelKHR_fn,
                "clCommandNDRangeKernelKHR");
    OCL_RESOLVE(copy, ocl_any_fn, "clCommandCopyBufferKHR");
    OCL_RESOLVE(fill, ocl_any_fn, "clCommandFillBufferKHR");
    OCL_RESOLVE(barrier, ocl_any_fn, "clCommandBarrierWithWaitListKHR");
#undef OCL_RESOLVE
    a->ok = a->create && a->finalize && a->release && a->enqueue &&
            a->ndrange && a->copy && a->fill && a->barrier;
    if (!a->ok)
        weft__info("opencl",
                   "%s lists cl_khr_command_buffer but not all of its entry "
                   "points: no native graphs",
                   p->base.name);
    return a->ok ? a : NULL;
}

/*
 * Native graphs need cl_khr_command_buffer at a version whose ABI weft
 * knows (0.9.x: it is provisional, and 0.9.5 changed it), the entry points,
 * and command buffers that take weft's queues as they are (in order,
 * profiling where the device can). Optional: anything missing or
 * unreadable leaves d->cmdbuf NULL.
 */
static void ocl_cmdbuf_probe(ocl_platform *p, ocl_device *d, const char *exts)
{
    cl_command_queue_properties ours =
        d->profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    cl_command_queue_properties required = 0, supported = 0;
    cl_device_command_buffer_capabilities_khr caps = 0;
    cl_name_version *list = NULL;
    cl_version version = 0;
    const ocl_cmdbuf_api *api;
    size_t n = 0;

    if (!ocl_has_ext(exts, "cl_khr_command_buffer"))
        return;
    /* Only OpenCL 3.0 devices say which version of it they have. */
    if (d->version < 300 || p->version < 300 ||
        ocl_device_get_size(d->id, CL_DEVICE_EXTENSIONS_WITH_VERSION, &n) !=
            CL_SUCCESS ||
        !(list = weft__malloc(n ? n : 1))) {
        weft_clear_error();
        return;
    }
    if (ocl_device_get(d->id, CL_DEVICE_EXTENSIONS_WITH_VERSION, n, list) ==
        CL_SUCCESS)
        for (size_t i = 0; i < n / sizeof *list; i++)
            if (!strcmp(list[i].name, "cl_khr_command_buffer"))
                version = list[i].version;
    weft__free(list);
    if (CL_VERSION_MAJOR(version) != 0 || CL_VERSION_MINOR(version) != 9) {
        weft__info("opencl",
                   "%s: cl_khr_command_buffer %u.%u.%u is a version weft "
                   "does not know: no native graphs",
                   d->base.name, (unsigned)CL_VERSION_MAJOR(version),
                   (unsigned)CL_VERSION_MINOR(version),
                   (unsigned)CL_VERSION_PATCH(version));
        return;
    }
    if (ocl_device_get(d->id,
                       CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR,
                       sizeof required, &required) != CL_SUCCESS ||
        ocl_device_get(d->id, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR,
                       sizeof caps, &caps) != CL_SUCCESS ||
        (required & ~ours))
        return;
    /* 0.9.5 also says which queue properties command buffers take. */
    if (CL_VERSION_PATCH(version) >= 5 &&
        ocl_device_get(d->id, 0x129A /* ..._SUPPORTED_QUEUE_PROPERTIES_KHR */,
                       sizeof supported, &supported) == CL_SUCCESS &&
        (ours & ~supported))
        return;
    if (!(api = ocl_cmdbuf_resolve(p)))
        return;
    d->cmdbuf = api;
    d->cmdbuf_v5 = CL_VERSION_PATCH(version) >= 5;
    d->cmdbuf_simultaneous =
        (caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) != 0;
}

/*
 * Fill what the device tells about itself. The queries every conformant
 * device answers are required (a failure fails discovery); the extension
 * and version-dependent ones are optional and only ever asked of a device
 * that claims them, so that older implementations (OpenCL 1.2) work.
 */
static int ocl_device_fill(ocl_platform *p, ocl_device *d)
{
    weft_device_info *pr = &d->base.props;
    char version[128];
    char *exts = NULL;
    cl_device_type type;
    cl_ulong global_mem, max_alloc, local_mem;
    cl_uint units, align_bits;
    size_t group;
    cl_command_queue_properties qprops;
    cl_int rc;

    if ((rc = ocl_device_text(d->id, CL_DEVICE_NAME, d->base.name,
                              sizeof d->base.name)) != CL_SUCCESS ||
        (rc = ocl_device_text(d->id, CL_DEVICE_VENDOR, d->base.vendor,
                              sizeof d->base.vendor)) != CL_SUCCESS ||
        (rc = ocl_device_text(d->id, CL_DRIVER_VERSION, d->base.driver_version,
                              sizeof d->base.driver_version)) != CL_SUCCESS ||
        (rc = ocl_device_text(d->id, CL_DEVICE_VERSION, version,
                              sizeof version)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_TYPE, sizeof type, &type)) !=
            CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_GLOBAL_MEM_SIZE,
                             sizeof global_mem, &global_mem)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
                             sizeof max_alloc, &max_alloc)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem,
                             &local_mem)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units,
                             &units)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group,
                             &group)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                             sizeof align_bits, &align_bits)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_QUEUE_PROPERTIES, sizeof qprops,
                             &qprops)) != CL_SUCCESS ||
        !(exts = ocl_device_string(d->id, CL_DEVICE_EXTENSIONS, &rc)))
        return ocl_fail(rc,
                        "clGetDeviceInfo: properties of device %u of "
                        "platform %s",
                        d->base.driver_index, p->base.name);

    d->version = ocl_parse_version(version);
    d->new_queues = d->version >= 200 && p->version >= 200;
    d->align = align_bits >= 8 ? align_bits / 8 : 1;
    pr->arg_offset_align = d->align;
    d->profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) != 0;
    d->priorities = d->new_queues && ocl_has_ext(exts, "cl_khr_priority_hints");
    weft__strlcpy(d->platform_name, p->base.name, sizeof d->platform_name);

    pr->size = sizeof *pr;
    pr->driver = "opencl";
    pr->driver_index = d->base.driver_index;
    pr->type = type & CL_DEVICE_TYPE_GPU   ? WEFT_DEVICE_GPU
               : type & CL_DEVICE_TYPE_CPU ? WEFT_DEVICE_CPU
                                           : WEFT_DEVICE_ACCELERATOR;
    pr->name = d->base.name;
    pr->vendor = d->base.vendor;
    pr->platform = d->platform_name;
    pr->driver_version = d->base.driver_version;
    pr->global_mem = global_mem;
    pr->max_alloc = max_alloc;
    pr->local_mem = local_mem;
    pr->compute_units = units;
    pr->max_group_size = group > UINT32_MAX ? UINT32_MAX : (unsigned)group;
    /*
     * OpenCL has no query for the number of copy engines, so one, whatever
     * the hardware has. Kernels of independent queues may run at once on
     * every implementation weft knows, so concurrent_kernels is 1.
     */
    pr->copy_engines = 1;
    pr->concurrent_kernels = 1;
    pr->timing_events = d->profiling;
    pr->pinned_host = 1;   /* CL_MEM_ALLOC_HOST_PTR, persistently mapped */
    pr->host_register = 1; /* CL_MEM_USE_HOST_PTR */
    pr->managed_memory = 0;
    pr->queue_priority_low = 0;
    pr->queue_priority_high = d->priorities ? -1 : 0;
    pr->numa_node = -1;
    pr->pci_bus_id = d->base.pci_bus_id;
    pr->cpuset = d->base.cpuset;

    {
        /* Deprecated since 2.0 but still answered; optional. */
        cl_bool unified = CL_FALSE;

        if (ocl_device_get(d->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified,
                           &unified) == CL_SUCCESS)
            pr->unified_memory = unified == CL_TRUE;
    }
    if (d->version >= 200) {
        cl_device_svm_capabilities svm = 0;

        if (ocl_device_get(d->id, CL_DEVICE_SVM_CAPABILITIES, sizeof svm,
                           &svm) == CL_SUCCESS)
            pr->svm = (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
    }
    if (d->version >= 201 && p->version >= 201) {
        cl_int irc;
        char *il = ocl_device_string(d->id, CL_DEVICE_IL_VERSION, &irc);

        d->il_core = il && strstr(il, "SPIR-V") != NULL;
        weft__free(il);
    }
    if (!d->il_core && ocl_has_ext(exts, "cl_khr_il_program"))
        d->il_khr = (ocl_il_fn)clGetExtensionFunctionAddressForPlatform(
            p->id, "clCreateProgramWithILKHR");
    if (ocl_has_ext(exts, "cl_nv_device_attribute_query")) {
        cl_uint major, minor;

        if (ocl_device_get(d->id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV,
                           sizeof major, &major) == CL_SUCCESS &&
            ocl_device_get(d->id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV,
                           sizeof minor, &minor) == CL_SUCCESS) {
            pr->cc_major = (int)major;
            pr->cc_minor = (int)minor;
        }
    }
    ocl_pci_bus_id(d, exts);
    ocl_cmdbuf_probe(p, d, exts);
    weft__free(exts);
    return 0;
}

static void ocl_platform_free(weft__platform *p)
{
    for (unsigned j = 0; j < p->ndevices; j++)
        weft__free(p->devices[j]);
    weft__free(p->devices);
    weft__free(p);
}

static void ocl_platforms_close(weft__platform **platforms, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (platforms[i])
            ocl_platform_free(platforms[i]);
    weft__free(platforms);
}

/* One platform with its devices; *out = NULL if it has no device. */
static int ocl_platform_open(cl_platform_id id, unsigned *next_index,
                             ocl_platform **out)
{
    ocl_platform *p;
    cl_device_id *ids = NULL;
    cl_uint nd = 0;
    char version[128];
    cl_int rc;
    int err;

    *out = NULL;
    rc = OCL("clGetDeviceIDs",
             clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, 0, NULL, &nd));
    if (rc == CL_DEVICE_NOT_FOUND || (rc == CL_SUCCESS && nd == 0))
        return 0;
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clGetDeviceIDs: counting devices");
    if (!(p = weft__calloc(1, sizeof *p)))
        return weft__error(WEFT_ENOMEM, "opencl: platform");
    p->base.drv = &weft__driver_opencl;
    p->id = id;
    if ((rc = ocl_platform_text(id, CL_PLATFORM_NAME, p->base.name,
                                sizeof p->base.name)) != CL_SUCCESS ||
        (rc = ocl_platform_text(id, CL_PLATFORM_VENDOR, p->base.vendor,
                                sizeof p->base.vendor)) != CL_SUCCESS ||
        (rc = ocl_platform_text(id, CL_PLATFORM_VERSION, version,
                                sizeof version)) != CL_SUCCESS) {
        err = ocl_fail(rc, "clGetPlatformInfo: platform name and version");
        goto fail;
    }
    weft__strlcpy(p->base.version, version, sizeof p->base.version);
    p->version = ocl_parse_version(version);
    if (!(ids = weft__calloc(nd, sizeof *ids)) ||
        !(p->base.devices = weft__calloc(nd, sizeof *p->base.devices))) {
        err = weft__error(WEFT_ENOMEM, "opencl: %u devices", nd);
        goto fail;
    }
    rc = OCL("clGetDeviceIDs",
             clGetDeviceIDs(id, CL_DEVICE_TYPE_ALL, nd, ids, &nd));
    if (rc != CL_SUCCESS) {
        err = ocl_fail(rc, "clGetDeviceIDs: devices of platform %s",
                       p->base.name);
        goto fail;
    }
    for (cl_uint i = 0; i < nd; i++) {
        ocl_device *d = weft__calloc(1, sizeof *d);

        if (!d) {
            err = weft__error(WEFT_ENOMEM, "opencl: device");
            goto fail;
        }
        p->base.devices[p->base.ndevices++] = &d->base;
        d->base.drv = &weft__driver_opencl;
        d->base.platform = &p->base;
        d->base.driver_index = (*next_index)++;
        d->id = ids[i];
        if ((err = ocl_device_fill(p, d)) < 0)
            goto fail;
    }
    weft__free(ids);
    *out = p;
    return 0;
fail:
    weft__free(ids);
    ocl_platform_free(&p->base);
    return err;
}

static int ocl_platforms_open(const weft__driver_config *cfg,
                              weft__platform ***platforms, unsigned *n)
{
    cl_platform_id *ids = NULL;
    weft__platform **out = NULL;
    cl_uint np = 0;
    unsigned nout = 0, index = 0;
    cl_int rc;
    int err;

    (void)cfg;
    *platforms = NULL;
    *n = 0;
    rc = OCL("clGetPlatformIDs", clGetPlatformIDs(0, NULL, &np));
    if (rc == CL_PLATFORM_NOT_FOUND_KHR || (rc == CL_SUCCESS && np == 0))
        return weft__driver_error(WEFT_ENOTSUP, "opencl", rc,
                                  rc ? "CL_PLATFORM_NOT_FOUND_KHR" : "",
                                  "no OpenCL platform");
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clGetPlatformIDs: counting platforms");
    if (!(ids = weft__calloc(np, sizeof *ids)) ||
        !(out = weft__calloc(np, sizeof *out))) {
        err = weft__error(WEFT_ENOMEM, "opencl: %u platforms", np);
        goto fail;
    }
    rc = OCL("clGetPlatformIDs", clGetPlatformIDs(np, ids, &np));
    if (rc != CL_SUCCESS) {
        err = ocl_fail(rc, "clGetPlatformIDs: listing platforms");
        goto fail;
    }
    for (cl_uint i = 0; i < np; i++) {
        ocl_platform *p;

        if ((err = ocl_platform_open(ids[i], &index, &p)) < 0)
            goto fail;
        if (p)
            out[nout++] = &p->base;
    }
    weft__free(ids);
    if (nout == 0) {
        weft__free(out);
        return weft__error(WEFT_ENOTSUP,
                           "no OpenCL device on %u OpenCL platform(s)", np);
    }
    *platforms = out;
    *n = nout;
    return 0;
fail:
    weft__free(ids);
    if (out)
        ocl_platforms_close(out, nout);
    return err;
}

/*
 * OpenCL has no peer access: memory of one context is not usable from
 * another. copy_peer stages through the host instead.
 */
static int ocl_can_access_peer(weft__device *a, weft__device *b, int *can)
{
    (void)a;
    (void)b;
    *can = 0;
    return 0;
}

/* ---- contexts and queues ----------------------------------------------- */

static int ocl_signaller_join(const char *devname);
static void ocl_signaller_leave(void);

static void CL_CALLBACK ocl_context_notify(const char *info, const void *priv,
                                           size_t cb, void *user)
{
    (void)priv;
    (void)cb;
    weft__warn("opencl", "%s: %s", ((ocl_device *)user)->base.name, info);
}

/*
 * An in-order queue. priority is -1 (high) or 0 (default) where the device
 * has priority hints.
 */
static cl_command_queue ocl_new_queue(ocl_device *d, cl_context ctx,
                                      cl_command_queue_properties props,
                                      int priority, cl_int *rc)
{
    if (d->new_queues) {
        cl_queue_properties p[5];
        unsigned i = 0;

        p[i++] = CL_QUEUE_PROPERTIES;
        p[i++] = props;
        if (priority < 0 && d->priorities) {
            p[i++] = CL_QUEUE_PRIORITY_KHR;
            p[i++] = CL_QUEUE_PRIORITY_HIGH_KHR;
        }
        p[i] = 0;
        return OCL_NEW("clCreateCommandQueueWithProperties", *rc,
                       clCreateCommandQueueWithProperties(ctx, d->id, p, rc));
    }
    return OCL_NEW("clCreateCommandQueue", *rc,
                   clCreateCommandQueue(ctx, d->id, props, rc));
}

static int ocl_context_create(weft__device *dev, weft__context **out)
{
    ocl_device *d = ocl_dev(dev);
    ocl_platform *p = (ocl_platform *)dev->platform;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM,
                                     (cl_context_properties)p->id, 0};
    ocl_context *c;
    cl_int rc;
    int err;

    if (!(c = weft__calloc(1, sizeof *c)))
        return weft__error(WEFT_ENOMEM, "opencl: context");
    if ((err = ocl_mutex_init(&c->lock)) < 0) {
        weft__free(c);
        return err;
    }
    if (weft__fault("opencl.pthread_cond_init") ||
        pthread_cond_init(&c->idle, NULL) != 0) {
        pthread_mutex_destroy(&c->lock);
        weft__free(c);
        return weft__error(WEFT_ENOMEM, "opencl: pthread_cond_init failed");
    }
    if ((err = ocl_signaller_join(dev->name)) < 0) {
        pthread_cond_destroy(&c->idle);
        pthread_mutex_destroy(&c->lock);
        weft__free(c);
        return err;
    }
    c->dev = d->id;
    c->cl =
        OCL_NEW("clCreateContext", rc,
                clCreateContext(props, 1, &d->id, ocl_context_notify, d, &rc));
    if (!c->cl) {
        err = ocl_fail(rc, "clCreateContext: on %s", dev->name);
        goto fail;
    }
    if (!(c->mapq = ocl_new_queue(d, c->cl, 0, 0, &rc)) ||
        !(c->aux = ocl_new_queue(d, c->cl, 0, 0, &rc))) {
        err = ocl_fail(rc, "clCreateCommandQueue: internal queue on %s",
                       dev->name);
        goto fail;
    }
    *out = &c->base;
    return 0;
fail:
    if (c->mapq)
        ocl_release_commandqueue(c->mapq);
    if (c->cl)
        ocl_release_context(c->cl);
    ocl_signaller_leave();
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->lock);
    weft__free(c);
    return err;
}

static void ocl_bounce_drop(ocl_context *c, ocl_bounce *b)
{
    cl_int rc =
        OCL("clEnqueueUnmapMemObject",
            clEnqueueUnmapMemObject(c->mapq, b->mem, b->host, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        weft__warn("opencl", "unmapping a bounce buffer on %s failed (%d)",
                   c->base.dev->name, (int)rc);
    ocl_release_memobject(b->mem);
    weft__free(b);
}

static void ocl_context_destroy(weft__context *ctx)
{
    ocl_context *c = ocl_ctx(ctx);
    ocl_bounce *b;

    /*
     * The halves of peer copies on aux are done once it is finished; their
     * completion callbacks may still be returning bounce buffers.
     */
    clFinish(c->aux);
    pthread_mutex_lock(&c->lock);
    if (c->bounce_out > 0)
        weft__debug("opencl", "%s: waiting for %ld bounce buffers",
                    ctx->dev->name, c->bounce_out);
    while (c->bounce_out > 0)
        pthread_cond_wait(&c->idle, &c->lock);
    b = c->bounce_free;
    c->bounce_free = NULL;
    c->nbounce_free = 0;
    pthread_mutex_unlock(&c->lock);
    while (b) {
        ocl_bounce *next = b->next;

        ocl_bounce_drop(c, b);
        b = next;
    }
    weft__debug("opencl", "%s: finishing the map queue", ctx->dev->name);
    clFinish(c->mapq);
    ocl_release_commandqueue(c->aux);
    ocl_release_commandqueue(c->mapq);
    ocl_release_context(c->cl);
    ocl_signaller_leave();
    pthread_cond_destroy(&c->idle);
    pthread_mutex_destroy(&c->lock);
    weft__free(c);
}

/*
 * Queues profile whenever the device can: timing is then available on every
 * queue, as on CUDA, and the cost (a timestamp per command) is small next to
 * a command's launch cost on the implementations weft knows.
 */
static int ocl_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                            weft__queue **out)
{
    ocl_device *d = ocl_ctx_dev(ctx);
    ocl_queue *q;
    cl_int rc;

    int err;

    if (!(q = weft__calloc(1, sizeof *q)))
        return weft__error(WEFT_ENOMEM, "opencl: queue");
    if ((err = ocl_mutex_init(&q->lock)) < 0) {
        weft__free(q);
        return err;
    }
    q->cl = ocl_new_queue(d, ocl_ctx(ctx)->cl,
                          d->profiling ? CL_QUEUE_PROFILING_ENABLE : 0,
                          desc ? desc->priority : 0, &rc);
    if (!q->cl) {
        pthread_mutex_destroy(&q->lock);
        weft__free(q);
        return ocl_fail(rc, "clCreateCommandQueue: on %s", ctx->dev->name);
    }
    *out = &q->base;
    return 0;
}

/*
 * Host functions run on weft's worker threads and the thread that waits
 * learns of their end through the OpenCL implementation, whose own
 * synchronisation the memory model (and ThreadSanitizer) cannot see. Each
 * worker bumps this counter with release after a host function returns,
 * and every wait that can observe a host function's end loads it with
 * acquire: what the function wrote is then ordered before the waiter's
 * next reads.
 */
static unsigned long ocl_host_epoch;

static void ocl_host_acquire(void)
{
    (void)__atomic_load_n(&ocl_host_epoch, __ATOMIC_ACQUIRE);
}

static int ocl_capture_refuse(ocl_queue *q, const char *what);

static int ocl_queue_sync(weft__queue *q)
{
    cl_int rc;

    /* What a capture recorded has not run: there is nothing to wait for. */
    if (((ocl_queue *)q)->cap)
        return ocl_capture_refuse((ocl_queue *)q, "a wait by the host");
    rc = OCL("clFinish", clFinish(((ocl_queue *)q)->cl));

    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clFinish: queue on %s", ocl_qname(q));
    ocl_host_acquire();
    return 0;
}

static void ocl_worker_stop(ocl_host_worker *w);

/*
 * After clFinish every host function has run (each one gates the queue),
 * so the worker has nothing left but to exit.
 */
static void ocl_queue_release(weft__queue *q)
{
    ocl_queue *oq = (ocl_queue *)q;

    clFinish(oq->cl);
    if (oq->worker)
        ocl_worker_stop(oq->worker);
    oq->worker = NULL;
    ocl_release_commandqueue(oq->cl);
    oq->cl = NULL;
    weft__free(oq->waits);
    oq->waits = NULL;
    oq->nwaits = oq->cap_waits = 0;
    pthread_mutex_destroy(&oq->lock);
}

/* ---- native graphs: captures into command buffers --------------------- */

/*
 * A capture (graph_begin .. graph_end) records what its queues enqueue
 * into one command buffer, made for the queue it began on: the base
 * extension has exactly one queue per command buffer, and every queue of
 * the capture maps onto it through sync points (ocl_queue). A queue takes
 * part once it waits for an event recorded in the capture (as CUDA's
 * stream capture), so other threads' work on other queues of the same
 * context keeps running as usual while one thread captures.
 *
 * What a command buffer cannot hold (copies from or to host memory, host
 * functions, peer copies, waits for events from outside the capture that
 * are not complete) fails with WEFT_ENOTSUP and marks the capture failed;
 * graph_end then makes no graph of it.
 *
 * The context's list of captures in progress (under its lock) lets a
 * queue that waits for a captured event find the capture to join, and
 * tells a stale event (its capture ended) from a live one.
 */
/* What a command buffer's recorded commands use, held for its life. */
typedef struct ocl_held {
    cl_mem *keep; /* one-off sub-buffers of recorded launches */
    unsigned nkeep, cap_keep;
    cl_kernel *kernels; /* of recorded launches (ocl_capture_kernel) */
    unsigned nkernels, cap_kernels;
} ocl_held;

static void ocl_held_release(ocl_held *h)
{
    for (unsigned i = 0; i < h->nkeep; i++)
        ocl_release_memobject(h->keep[i]);
    for (unsigned i = 0; i < h->nkernels; i++)
        ocl_release_kernel(h->kernels[i]);
    weft__free(h->keep);
    weft__free(h->kernels);
    memset(h, 0, sizeof *h);
}

typedef struct ocl_capture {
    struct ocl_capture *next; /* in the context's list */
    uint64_t id;              /* never 0 */
    ocl_context *ctx;
    const ocl_device *dev;
    cl_command_buffer_khr cb;
    ocl_queue **queues; /* taking part, the first one first */
    unsigned nqueues, cap_queues;
    ocl_held held;
    int failed; /* the first failure (a weft code), or 0 */
} ocl_capture;

/* A graph: a finalized command buffer and what its commands use. */
typedef struct ocl_graph {
    weft__context *ctx;
    const ocl_device *dev;
    cl_command_buffer_khr cb;
    ocl_held held; /* the capture's */
    cl_event done; /* of the last launch, or NULL */
} ocl_graph;

static uint64_t ocl_capture_ids; /* atomic: the last id given */

static void ocl_flush(cl_command_queue q);

static int ocl_graph_supported(const weft__device *dev)
{
    return ((const ocl_device *)dev)->cmdbuf != NULL;
}

/* Room for one more element of size in *arr of *cap (used n); 0 or -1. */
static int ocl_grow(void **arr, unsigned *cap, unsigned n, size_t size)
{
    unsigned c = *cap ? *cap * 2 : 8;
    void *p;

    if (n < *cap)
        return 0;
    if (!(p = weft__realloc(*arr, (size_t)c * size)))
        return -1;
    *arr = p;
    *cap = c;
    return 0;
}

/* Mark q's capture failed with err (a weft code, detail set); err. */
static int ocl_capture_fail(ocl_queue *q, int err)
{
    if (q->cap && !q->cap->failed)
        q->cap->failed = err;
    return err;
}

/* An operation a command buffer cannot hold, enqueued on a capturing q. */
static int ocl_capture_refuse(ocl_queue *q, const char *what)
{
    return ocl_capture_fail(
        q, weft__error(WEFT_ENOTSUP,
                       "opencl: %s cannot be recorded in a command buffer "
                       "(cl_khr_command_buffer), and a queue on %s is "
                       "capturing one",
                       what, q->base.ctx->dev->name));
}

/*
 * The sync points q's next command waits for: its waits and its last
 * command. They stay valid until the next call on q.
 */
static int ocl_capture_deps(ocl_queue *q, const cl_sync_point_khr **list,
                            cl_uint *n)
{
    if (ocl_grow((void **)&q->waits, &q->cap_waits, q->nwaits,
                 sizeof *q->waits) < 0)
        return ocl_capture_fail(
            q, weft__error(WEFT_ENOMEM, "opencl: recording a command"));
    *n = q->nwaits;
    if (q->has_last)
        q->waits[(*n)++] = q->last;
    *list = *n ? q->waits : NULL;
    return 0;
}

/* sp is q's last command now; what it waited for is behind it. */
static void ocl_capture_then(ocl_queue *q, cl_sync_point_khr sp)
{
    q->last = sp;
    q->has_last = 1;
    q->nwaits = 0;
}

/*
 * After recording one command (rc; its sync point sp): q's last command,
 * or the capture fails, the message saying which command (fmt, ...).
 */
static int ocl_capture_recorded(ocl_queue *q, cl_int rc, cl_sync_point_khr sp,
                                const char *fmt, ...) WEFT__PRINTF(4, 5);
static int ocl_capture_recorded(ocl_queue *q, cl_int rc, cl_sync_point_khr sp,
                                const char *fmt, ...)
{
    char what[256];
    va_list ap;

    if (rc == CL_SUCCESS) {
        ocl_capture_then(q, sp);
        return 0;
    }
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return ocl_capture_fail(
        q, ocl_fail(rc, "%s on %s", what, q->cap->dev->base.name));
}

/* Take q out of whatever capture it took part in. */
static void ocl_capture_leave(ocl_queue *q)
{
    q->cap = NULL;
    q->has_last = 0;
    q->nwaits = 0;
}

/* Join q to c, after the commands of c so far that sp names (has_sp). */
static int ocl_capture_join(ocl_capture *c, ocl_queue *q, unsigned has_sp,
                            cl_sync_point_khr sp)
{
    if (ocl_grow((void **)&c->queues, &c->cap_queues, c->nqueues,
                 sizeof *c->queues) < 0 ||
        (has_sp &&
         ocl_grow((void **)&q->waits, &q->cap_waits, 0, sizeof *q->waits) < 0))
        return weft__error(WEFT_ENOMEM, "opencl: a queue joining a capture");
    c->queues[c->nqueues++] = q;
    ocl_capture_leave(q);
    q->cap = c;
    if (has_sp)
        q->waits[q->nwaits++] = sp;
    return 0;
}

/* Record a copy between buffers on capturing q. */
static int ocl_capture_copy(ocl_queue *q, cl_mem src, size_t src_off,
                            cl_mem dst, size_t dst_off, size_t size)
{
    ocl_capture *c = q->cap;
    const ocl_device *d = c->dev;
    const cl_sync_point_khr *w;
    cl_sync_point_khr sp;
    cl_uint n;
    cl_int rc;
    int err;

    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    if (OCL_FAULT("clCommandCopyBufferKHR"))
        rc = CL_OUT_OF_HOST_MEMORY;
    else if (d->cmdbuf_v5)
        rc = ((ocl_cmd_copy_v5)d->cmdbuf->copy)(c->cb, NULL, NULL, src, dst,
                                                src_off, dst_off, size, n, w,
                                                &sp, NULL);
    else
        rc = ((clCommandCopyBufferKHR_fn)d->cmdbuf->copy)(
            c->cb, NULL, src, dst, src_off, dst_off, size, n, w, &sp, NULL);
    return ocl_capture_recorded(q, rc, sp, "clCommandCopyBufferKHR: %zu bytes",
                                size);
}

static int ocl_capture_fill(ocl_queue *q, cl_mem dst, size_t off,
                            const void *pattern, size_t pattern_size,
                            size_t size)
{
    ocl_capture *c = q->cap;
    const ocl_device *d = c->dev;
    const cl_sync_point_khr *w;
    cl_sync_point_khr sp;
    cl_uint n;
    cl_int rc;
    int err;

    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    if (OCL_FAULT("clCommandFillBufferKHR"))
        rc = CL_OUT_OF_HOST_MEMORY;
    else if (d->cmdbuf_v5)
        rc = ((ocl_cmd_fill_v5)d->cmdbuf->fill)(c->cb, NULL, NULL, dst, pattern,
                                                pattern_size, off, size, n, w,
                                                &sp, NULL);
    else
        rc = ((clCommandFillBufferKHR_fn)d->cmdbuf->fill)(
            c->cb, NULL, dst, pattern, pattern_size, off, size, n, w, &sp,
            NULL);
    return ocl_capture_recorded(q, rc, sp, "clCommandFillBufferKHR: %zu bytes",
                                size);
}

/*
 * Make q's waits and last command one sync point (a barrier), so that an
 * event recorded now can name them all.
 */
static int ocl_capture_barrier(ocl_queue *q)
{
    ocl_capture *c = q->cap;
    const ocl_device *d = c->dev;
    const cl_sync_point_khr *w;
    cl_sync_point_khr sp;
    cl_uint n;
    cl_int rc;
    int err;

    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    if (OCL_FAULT("clCommandBarrierWithWaitListKHR"))
        rc = CL_OUT_OF_HOST_MEMORY;
    else if (d->cmdbuf_v5)
        rc = ((ocl_cmd_barrier_v5)d->cmdbuf->barrier)(c->cb, NULL, NULL, n, w,
                                                      &sp, NULL);
    else
        rc = ((clCommandBarrierWithWaitListKHR_fn)d->cmdbuf->barrier)(
            c->cb, NULL, n, w, &sp, NULL);
    return ocl_capture_recorded(q, rc, sp, "clCommandBarrierWithWaitListKHR");
}

/* Free what a capture holds that did not go to a graph. */
static void ocl_capture_free(ocl_capture *c)
{
    if (c->cb && c->dev->cmdbuf->release(c->cb) != CL_SUCCESS)
        weft__warn("opencl", "a command buffer of %s was not released",
                   c->dev->base.name);
    ocl_held_release(&c->held);
    weft__free(c->queues);
    weft__free(c);
}

static void ocl_graph_destroy(void *graph)
{
    ocl_graph *g = graph;

    if (!g)
        return;
    if (g->done)
        ocl_release_event(g->done);
    if (g->dev->cmdbuf->release(g->cb) != CL_SUCCESS)
        weft__warn("opencl", "a command buffer of %s was not released",
                   g->dev->base.name);
    ocl_held_release(&g->held);
    weft__free(g);
}

static int ocl_graph_begin(weft__queue *q)
{
    ocl_queue *oq = (ocl_queue *)q;
    ocl_context *ctx = ocl_ctx(q->ctx);
    const ocl_device *d = ocl_ctx_dev(q->ctx);
    cl_command_buffer_properties_khr props[] = {
        CL_COMMAND_BUFFER_FLAGS_KHR, CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
    ocl_capture *c;
    cl_int rc;

    if (!d->cmdbuf)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: %s has no cl_khr_command_buffer that weft "
                           "can use: no native graphs",
                           d->base.name);
    if (oq->cap)
        return weft__error(WEFT_EINVAL,
                           "graph_begin: a queue on %s is capturing already",
                           d->base.name);
    if (!(c = weft__calloc(1, sizeof *c)) ||
        ocl_grow((void **)&c->queues, &c->cap_queues, 0, sizeof *c->queues) <
            0) {
        weft__free(c);
        return weft__error(WEFT_ENOMEM, "opencl: a capture");
    }
    c->ctx = ctx;
    c->dev = d;
    /*
     * Simultaneous use where the device has it: a launch then never finds
     * the buffer still pending from the launch before (whose completion
     * the implementation may learn after the queue's own).
     */
    c->cb =
        OCL_NEW("clCreateCommandBufferKHR", rc,
                d->cmdbuf->create(1, &oq->cl,
                                  d->cmdbuf_simultaneous ? props : NULL, &rc));
    if (!c->cb) {
        ocl_capture_free(c);
        return ocl_fail(rc, "clCreateCommandBufferKHR: on %s", d->base.name);
    }
    c->id = __atomic_add_fetch(&ocl_capture_ids, 1, __ATOMIC_RELAXED);
    c->queues[c->nqueues++] = oq;
    ocl_capture_leave(oq);
    oq->cap = c;
    pthread_mutex_lock(&ctx->lock);
    c->next = ctx->captures;
    ctx->captures = c;
    pthread_mutex_unlock(&ctx->lock);
    return 0;
}

/*
 * cl_khr_command_buffer_mutable_dispatch could update old in place; it is
 * rare, so old is always replaced by a new command buffer (*updated = 0).
 */
static int ocl_graph_end(weft__queue *q, void *old, void **graph, int *updated)
{
    ocl_queue *oq = (ocl_queue *)q;
    ocl_capture *c = oq->cap, **link;
    ocl_graph *g;
    cl_int rc;
    int err;

    if (updated)
        *updated = 0;
    ocl_graph_destroy(old);
    if (!c || c->queues[0] != oq)
        return weft__error(WEFT_EINVAL,
                           "graph_end: a queue on %s that no capture began on",
                           q->ctx->dev->name);
    pthread_mutex_lock(&c->ctx->lock);
    for (link = &c->ctx->captures; *link != c; link = &(*link)->next)
        ;
    *link = c->next;
    pthread_mutex_unlock(&c->ctx->lock);
    for (unsigned i = 0; i < c->nqueues; i++)
        ocl_capture_leave(c->queues[i]);
    if (!graph || c->failed) {
        err = graph ? weft__error(c->failed,
                                  "graph_end: the capture on %s failed (%s): "
                                  "no graph",
                                  c->dev->base.name, weft_err_name(c->failed))
                    : 0;
        ocl_capture_free(c);
        return err;
    }
    rc = OCL("clFinalizeCommandBufferKHR", c->dev->cmdbuf->finalize(c->cb));
    if (rc != CL_SUCCESS) {
        err = ocl_fail(rc, "clFinalizeCommandBufferKHR: on %s",
                       c->dev->base.name);
        ocl_capture_free(c);
        return err;
    }
    if (!(g = weft__calloc(1, sizeof *g))) {
        ocl_capture_free(c);
        return weft__error(WEFT_ENOMEM, "opencl: a graph");
    }
    g->ctx = q->ctx;
    g->dev = c->dev;
    g->cb = c->cb;
    g->held = c->held;
    c->cb = NULL;
    memset(&c->held, 0, sizeof c->held);
    ocl_capture_free(c);
    *graph = g;
    return 0;
}

static int ocl_graph_launch(void *graph, weft__queue *q)
{
    ocl_graph *g = graph;
    ocl_queue *oq = (ocl_queue *)q;
    cl_event done = NULL;
    cl_int rc;

    if (q->ctx != g->ctx)
        return weft__error(WEFT_EINVAL,
                           "graph_launch: a graph of %s on a queue of %s",
                           g->dev->base.name, q->ctx->dev->name);
    if (oq->cap)
        return ocl_capture_refuse(oq, "a command buffer's launch");
    /*
     * Without simultaneous use a pending buffer cannot be enqueued again:
     * the launch before must be over first.
     */
    if (!g->dev->cmdbuf_simultaneous && g->done) {
        rc = OCL("clWaitForEvents", clWaitForEvents(1, &g->done));
        if (rc != CL_SUCCESS &&
            rc != CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST)
            return ocl_fail(rc, "clWaitForEvents: a graph's launch on %s",
                            g->dev->base.name);
    }
    /* An event always: some implementations (PoCL 3) need one. */
    rc = OCL("clEnqueueCommandBufferKHR",
             g->dev->cmdbuf->enqueue(1, &oq->cl, g->cb, 0, NULL, &done));
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clEnqueueCommandBufferKHR: on %s",
                        g->dev->base.name);
    if (g->done)
        ocl_release_event(g->done);
    g->done = done;
    ocl_flush(oq->cl);
    return 0;
}

/* ---- memory ------------------------------------------------------------ */

static int ocl_mem_new(weft__context *ctx, cl_mem_flags flags, size_t size,
                       void *host, ocl_mem **out)
{
    ocl_mem *m;
    cl_int rc;
    int err;

    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "opencl: memory");
    if ((err = ocl_mutex_init(&m->lock)) < 0) {
        weft__free(m);
        return err;
    }
    m->cl = OCL_NEW("clCreateBuffer", rc,
                    clCreateBuffer(ocl_ctx(ctx)->cl, flags, size, host, &rc));
    if (!m->cl) {
        pthread_mutex_destroy(&m->lock);
        weft__free(m);
        return ocl_fail(rc, "clCreateBuffer: %zu bytes on %s", size,
                        ctx->dev->name);
    }
    *out = m;
    return 0;
}

/*
 * Implementations may allocate lazily, so running out of device memory can
 * also show at the first command that uses the buffer.
 */
static int ocl_mem_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    ocl_mem *m = NULL;
    int err = ocl_mem_new(ctx, CL_MEM_READ_WRITE, size, NULL, &m);

    if (err < 0)
        return err;
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
    pthread_mutex_destroy(&m->lock);
    weft__free(m);
}

/*
 * Pinned memory: a buffer the implementation allocates in host memory it
 * can reach at full speed, mapped once for its whole life. Passing that
 * mapped pointer to a copy is how OpenCL implementations recognise pinned
 * memory.
 */
static int ocl_host_alloc(weft__context *ctx, size_t size, weft__mem **out)
{
    ocl_context *c = ocl_ctx(ctx);
    ocl_mem *m = NULL;
    cl_int rc;
    int err = ocl_mem_new(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, size,
                          NULL, &m);

    if (err < 0)
        return err;
    m->base.host = OCL_NEW("clEnqueueMapBuffer", rc,
                           clEnqueueMapBuffer(c->mapq, m->cl, CL_TRUE,
                                              CL_MAP_READ | CL_MAP_WRITE, 0,
                                              size, 0, NULL, NULL, &rc));
    if (!m->base.host) {
        ocl_mem_release(m);
        return ocl_fail(rc, "clEnqueueMapBuffer: %zu pinned bytes on %s", size,
                        ctx->dev->name);
    }
    *out = &m->base;
    return 0;
}

static int ocl_host_register(weft__context *ctx, void *ptr, size_t size,
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

static void ocl_mem_free(weft__mem *mem)
{
    ocl_mem *m = (ocl_mem *)mem;

    if (mem->kind == WEFT__MEM_PINNED && mem->host) {
        cl_int rc = clEnqueueUnmapMemObject(ocl_ctx(mem->ctx)->mapq, m->cl,
                                            mem->host, 0, NULL, NULL);

        if (rc != CL_SUCCESS)
            weft__warn("opencl", "unmapping pinned memory on %s failed (%d)",
                       mem->ctx->dev->name, (int)rc);
    }
    ocl_mem_release(m);
}

/*
 * The cl_mem that starts at offset off of m, for a kernel argument. Offsets
 * seen before reuse their cached sub-buffer (relaunching a graph passes the
 * same ones); past OCL_SUB_CACHE a new one is made and *oneoff set, and the
 * caller releases it after the enqueue.
 */
static int ocl_sub_buffer(weft__queue *q, ocl_mem *m, size_t off,
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
                  clCreateSubBuffer(m->cl, 0, CL_BUFFER_CREATE_TYPE_REGION,
                                    &region, &rc));
    if (!sub) {
        pthread_mutex_unlock(&m->lock);
        return ocl_fail(rc,
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

static cl_command_queue ocl_q(weft__queue *q)
{
    return ((ocl_queue *)q)->cl;
}

static cl_mem ocl_cl(weft__mem *m)
{
    return ((ocl_mem *)m)->cl;
}

/*
 * Submit what is queued on q. Implementations may hold commands back until
 * a flush (NVIDIA's does), and an event only completes once its command
 * was submitted: every event that another queue, a callback or a polling
 * host depends on must have its queue flushed. The commands are queued
 * already, so a failed flush is only reported in the log.
 */
static void ocl_flush(cl_command_queue q)
{
    cl_int rc = clFlush(q);

    if (rc != CL_SUCCESS)
        weft__warn("opencl", "clFlush failed (%d)", (int)rc);
}

static int ocl_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        const void *src, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return ocl_capture_refuse((ocl_queue *)q, "a copy from host memory");
    rc = OCL("clEnqueueWriteBuffer",
             clEnqueueWriteBuffer(ocl_q(q), ocl_cl(dst), CL_FALSE, dst_off,
                                  size, src, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clEnqueueWriteBuffer: %zu bytes to %s", size,
                        ocl_qname(q));
    return 0;
}

static int ocl_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                        size_t src_off, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return ocl_capture_refuse((ocl_queue *)q, "a copy to host memory");
    rc = OCL("clEnqueueReadBuffer",
             clEnqueueReadBuffer(ocl_q(q), ocl_cl(src), CL_FALSE, src_off, size,
                                 dst, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clEnqueueReadBuffer: %zu bytes from %s", size,
                        ocl_qname(q));
    return 0;
}

static int ocl_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return ocl_capture_copy((ocl_queue *)q, ocl_cl(src), src_off,
                                ocl_cl(dst), dst_off, size);
    rc = OCL("clEnqueueCopyBuffer",
             clEnqueueCopyBuffer(ocl_q(q), ocl_cl(src), ocl_cl(dst), src_off,
                                 dst_off, size, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clEnqueueCopyBuffer: %zu bytes on %s", size,
                        ocl_qname(q));
    return 0;
}

static int ocl_fill(weft__queue *q, weft__mem *dst, size_t off,
                    const void *pattern, size_t pattern_size, size_t size)
{
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return ocl_capture_fill((ocl_queue *)q, ocl_cl(dst), off, pattern,
                                pattern_size, size);
    rc = OCL("clEnqueueFillBuffer",
             clEnqueueFillBuffer(ocl_q(q), ocl_cl(dst), pattern, pattern_size,
                                 off, size, 0, NULL, NULL));

    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clEnqueueFillBuffer: %zu bytes on %s", size,
                        ocl_qname(q));
    return 0;
}

/*
 * Bridge completions are delivered by one driver thread, the signaller:
 * the callback on the source event only queues them. Setting a user event
 * may run dependent work, and its callbacks, inline in the calling thread;
 * done from a callback, that would nest one implementation's callback in
 * another's (or in its own), which implementations do not all survive (a
 * hang was seen between NVIDIA's and PoCL's). The signaller runs while any
 * context lives; it exits once none does and no bridge is pending.
 */
typedef struct ocl_signal {
    struct ocl_signal *next;
    cl_event user; /* the bridge's reference */
    cl_int status;
} ocl_signal;

static struct {
    pthread_mutex_t life; /* serialises starting and stopping the thread */
    pthread_mutex_t lock; /* guards the rest */
    pthread_cond_t cond;
    ocl_signal *head, *tail;
    long pending;   /* bridges made and not yet delivered */
    unsigned users; /* live contexts */
    int running, stop;
    pthread_t thread;
} ocl_sig = {.life = PTHREAD_MUTEX_INITIALIZER,
             .lock = PTHREAD_MUTEX_INITIALIZER,
             .cond = PTHREAD_COND_INITIALIZER};

static void *ocl_signaller_main(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ocl_sig.lock);
    for (;;) {
        ocl_signal *sig = ocl_sig.head;

        if (!sig) {
            if (ocl_sig.stop && ocl_sig.pending == 0)
                break;
            pthread_cond_wait(&ocl_sig.cond, &ocl_sig.lock);
            continue;
        }
        ocl_sig.head = sig->next;
        if (!ocl_sig.head)
            ocl_sig.tail = NULL;
        pthread_mutex_unlock(&ocl_sig.lock);
        clSetUserEventStatus(sig->user,
                             sig->status < 0 ? sig->status : CL_COMPLETE);
        ocl_release_event(sig->user);
        weft__free(sig);
        pthread_mutex_lock(&ocl_sig.lock);
        ocl_sig.pending--;
    }
    pthread_mutex_unlock(&ocl_sig.lock);
    return NULL;
}

/* A context begins to use the signaller, which starts if needed. */
static int ocl_signaller_join(const char *devname)
{
    int rc = 0;

    pthread_mutex_lock(&ocl_sig.life);
    if (!ocl_sig.running) {
        rc = weft__fault("opencl.pthread_create")
                 ? 11
                 : pthread_create(&ocl_sig.thread, NULL, ocl_signaller_main,
                                  NULL);
        ocl_sig.running = rc == 0;
    }
    if (rc == 0)
        ocl_sig.users++;
    pthread_mutex_unlock(&ocl_sig.life);
    if (rc)
        return weft__error(WEFT_ENOMEM,
                           "opencl: starting the event thread for %s: %s",
                           devname, strerror(rc));
    return 0;
}

/*
 * A context is done with the signaller; the last one stops it, after the
 * bridges still pending (their sources are queued work, which completes).
 */
static void ocl_signaller_leave(void)
{
    pthread_mutex_lock(&ocl_sig.life);
    if (--ocl_sig.users == 0) {
        pthread_mutex_lock(&ocl_sig.lock);
        ocl_sig.stop = 1;
        pthread_cond_signal(&ocl_sig.cond);
        pthread_mutex_unlock(&ocl_sig.lock);
        pthread_join(ocl_sig.thread, NULL);
        ocl_sig.stop = 0;
        ocl_sig.running = 0;
    }
    pthread_mutex_unlock(&ocl_sig.life);
}

static void CL_CALLBACK ocl_bridge_fire(cl_event src, cl_int status, void *user)
{
    ocl_signal *sig = user;

    (void)src;
    sig->status = status;
    pthread_mutex_lock(&ocl_sig.lock);
    if (ocl_sig.tail)
        ocl_sig.tail->next = sig;
    else
        ocl_sig.head = sig;
    ocl_sig.tail = sig;
    pthread_cond_signal(&ocl_sig.cond);
    pthread_mutex_unlock(&ocl_sig.lock);
}

/*
 * A user event of context to that completes when src does, or fails with
 * src's status. *out holds the caller's reference.
 */
static int ocl_bridge(cl_event src, ocl_context *to, cl_event *out)
{
    ocl_signal *sig;
    cl_int rc;

    if (!(sig = weft__calloc(1, sizeof *sig)))
        return weft__error(WEFT_ENOMEM, "opencl: event bridge");
    sig->user =
        OCL_NEW("clCreateUserEvent", rc, clCreateUserEvent(to->cl, &rc));
    if (!sig->user) {
        weft__free(sig);
        return ocl_fail(rc, "clCreateUserEvent: on %s", to->base.dev->name);
    }
    rc = OCL("clRetainEvent", clRetainEvent(sig->user));
    if (rc != CL_SUCCESS) {
        ocl_release_event(sig->user);
        weft__free(sig);
        return ocl_fail(rc, "clRetainEvent: on %s", to->base.dev->name);
    }
    *out = sig->user;
    pthread_mutex_lock(&ocl_sig.lock);
    ocl_sig.pending++;
    pthread_mutex_unlock(&ocl_sig.lock);
    /* may fire at once, in this thread: *out stays valid, ours */
    rc = OCL("clSetEventCallback",
             clSetEventCallback(src, CL_COMPLETE, ocl_bridge_fire, sig));
    if (rc != CL_SUCCESS) {
        pthread_mutex_lock(&ocl_sig.lock);
        ocl_sig.pending--;
        pthread_mutex_unlock(&ocl_sig.lock);
        ocl_release_event(sig->user);
        ocl_release_event(sig->user);
        weft__free(sig);
        return ocl_fail(rc, "clSetEventCallback: waiting from %s",
                        to->base.dev->name);
    }
    return 0;
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
        ocl_bounce_drop(c, victim);

    /* powers of two, so that copies of similar sizes share buffers */
    while (want < size && want < ((size_t)1 << 62))
        want <<= 1;
    if (want > c->base.dev->props.max_alloc)
        want = size;
    if (!(b = weft__calloc(1, sizeof *b)))
        return weft__error(WEFT_ENOMEM, "opencl: bounce buffer");
    b->owner = c;
    b->size = want;
    b->mem =
        OCL_NEW("clCreateBuffer", rc,
                clCreateBuffer(c->cl, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR,
                               want, NULL, &rc));
    if (!b->mem) {
        weft__free(b);
        return ocl_fail(rc, "clCreateBuffer: %zu-byte bounce buffer on %s",
                        want, c->base.dev->name);
    }
    b->host = OCL_NEW("clEnqueueMapBuffer", rc,
                      clEnqueueMapBuffer(c->mapq, b->mem, CL_TRUE,
                                         CL_MAP_READ | CL_MAP_WRITE, 0, want, 0,
                                         NULL, NULL, &rc));
    if (!b->host) {
        ocl_release_memobject(b->mem);
        weft__free(b);
        return ocl_fail(rc, "clEnqueueMapBuffer: bounce buffer on %s",
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
    cl_int rc = OCL("clSetEventCallback",
                    clSetEventCallback(e, CL_COMPLETE, ocl_bounce_back, b));

    if (rc != CL_SUCCESS) {
        /* rare; waiting here keeps the buffer from being reused too early */
        clWaitForEvents(1, &e);
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
static int ocl_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                         weft__mem *src, size_t src_off, size_t size)
{
    ocl_context *a = ocl_ctx(src->ctx), *b = ocl_ctx(dst->ctx);
    cl_command_queue qa = q->ctx == src->ctx ? ocl_q(q) : a->aux;
    cl_command_queue qb = q->ctx == dst->ctx ? ocl_q(q) : b->aux;
    cl_event m0 = NULL, pre = NULL, e1 = NULL, u1 = NULL, e2 = NULL;
    cl_event back = NULL;
    ocl_bounce *bb = NULL;
    cl_int rc;
    int err;

    if (((ocl_queue *)q)->cap)
        return ocl_capture_refuse((ocl_queue *)q, "a copy between devices");
    if ((err = ocl_bounce_take(a, size, &bb)) < 0)
        return err;
    if (qa != ocl_q(q)) {
        rc = OCL("clEnqueueMarkerWithWaitList",
                 clEnqueueMarkerWithWaitList(ocl_q(q), 0, NULL, &m0));
        if (rc != CL_SUCCESS) {
            err = ocl_fail(rc, "clEnqueueMarkerWithWaitList: peer copy on %s",
                           ocl_qname(q));
            goto unused;
        }
        ocl_flush(ocl_q(q));
        err = ocl_bridge(m0, a, &pre);
        ocl_release_event(m0);
        if (err < 0)
            goto unused;
    }
    rc =
        OCL("clEnqueueReadBuffer",
            clEnqueueReadBuffer(qa, ocl_cl(src), CL_FALSE, src_off, size,
                                bb->host, pre ? 1 : 0, pre ? &pre : NULL, &e1));
    if (pre)
        ocl_release_event(pre);
    if (rc != CL_SUCCESS) {
        err = ocl_fail(rc,
                       "clEnqueueReadBuffer: peer copy of %zu bytes from "
                       "%s",
                       size, src->ctx->dev->name);
        goto unused;
    }
    ocl_flush(qa);
    if ((err = ocl_bridge(e1, b, &u1)) < 0) {
        ocl_bounce_after(e1, bb);
        ocl_release_event(e1);
        return err;
    }
    rc = OCL("clEnqueueWriteBuffer",
             clEnqueueWriteBuffer(qb, ocl_cl(dst), CL_FALSE, dst_off, size,
                                  bb->host, 1, &u1, &e2));
    ocl_release_event(u1);
    if (rc != CL_SUCCESS) {
        ocl_bounce_after(e1, bb);
        ocl_release_event(e1);
        return ocl_fail(rc,
                        "clEnqueueWriteBuffer: peer copy of %zu bytes "
                        "to %s",
                        size, dst->ctx->dev->name);
    }
    ocl_release_event(e1);
    ocl_flush(qb);
    ocl_bounce_after(e2, bb);
    if (qb != ocl_q(q)) {
        err = ocl_bridge(e2, ocl_ctx(q->ctx), &back);
        if (err == 0) {
            rc = OCL("clEnqueueBarrierWithWaitList",
                     clEnqueueBarrierWithWaitList(ocl_q(q), 1, &back, NULL));
            ocl_release_event(back);
        }
        if (err < 0 || rc != CL_SUCCESS) {
            weft__warn("opencl",
                       "peer copy: %s cannot wait for the copy; waiting on "
                       "the host",
                       ocl_qname(q));
            rc = clWaitForEvents(1, &e2);
            if (rc != CL_SUCCESS) {
                ocl_release_event(e2);
                return ocl_fail(rc, "clWaitForEvents: peer copy to %s",
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

/* ---- modules and kernels ----------------------------------------------- */

/* The build log of prog on d, allocated; NULL if there is none. */
static char *ocl_build_log(cl_program prog, cl_device_id d)
{
    size_t n = 0;
    char *log;

    if (OCL("clGetProgramBuildInfo",
            clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, 0, NULL,
                                  &n)) != CL_SUCCESS ||
        n == 0 || !(log = weft__malloc(n + 1)))
        return NULL;
    if (OCL("clGetProgramBuildInfo",
            clGetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, n, log,
                                  NULL)) != CL_SUCCESS) {
        weft__free(log);
        return NULL;
    }
    log[n] = 0;
    ocl_trim(log);
    return log;
}

static int ocl_module_create(weft__context *ctx, const weft__module_source *src,
                             weft__module **out)
{
    ocl_context *c = ocl_ctx(ctx);
    ocl_device *d = ocl_ctx_dev(ctx);
    const char *name = src->name ? src->name : "module";
    /* argument info lets kernel_get report the parameter types */
    static const char arg_info[] = "-cl-kernel-arg-info";
    ocl_module *m;
    char *opts = NULL;
    size_t optlen;
    cl_int rc, bstatus;
    int err;

    if (src->kind != WEFT__SRC_OPENCL_C && src->kind != WEFT__SRC_SPIRV &&
        src->kind != WEFT__SRC_CL_BINARY)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: %s: source kind %d cannot be loaded by "
                           "the OpenCL driver",
                           name, (int)src->kind);
    if (src->kind == WEFT__SRC_SPIRV && !d->il_core && !d->il_khr)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: %s: device %s takes no SPIR-V (no IL "
                           "support)",
                           name, d->base.name);
    if (src->kind != WEFT__SRC_OPENCL_C && src->size == 0)
        return weft__error(WEFT_EINVAL, "opencl: %s: binary of size 0", name);
    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "opencl: module");
    if (!(m->name = weft__strdup(name))) {
        weft__free(m);
        return weft__error(WEFT_ENOMEM, "opencl: module");
    }
    if ((err = ocl_mutex_init(&m->lock)) < 0) {
        weft__free(m->name);
        weft__free(m);
        return err;
    }
    optlen = sizeof arg_info + 1 + (src->options ? strlen(src->options) : 0);
    if (!(opts = weft__malloc(optlen))) {
        err = weft__error(WEFT_ENOMEM, "opencl: build options");
        goto fail;
    }
    snprintf(opts, optlen, "%s %s", arg_info, src->options ? src->options : "");

    switch (src->kind) {
    case WEFT__SRC_OPENCL_C: {
        const char *text = src->data;
        size_t len = src->size ? src->size : strlen(text);

        m->prog =
            OCL_NEW("clCreateProgramWithSource", rc,
                    clCreateProgramWithSource(c->cl, 1, &text, &len, &rc));
        break;
    }
    case WEFT__SRC_SPIRV:
        if (d->il_core)
            m->prog = OCL_NEW(
                "clCreateProgramWithIL", rc,
                clCreateProgramWithIL(c->cl, src->data, src->size, &rc));
        else
            m->prog = OCL_NEW("clCreateProgramWithILKHR", rc,
                              d->il_khr(c->cl, src->data, src->size, &rc));
        break;
    default: {
        const unsigned char *bytes = src->data;

        m->prog =
            OCL_NEW("clCreateProgramWithBinary", rc,
                    clCreateProgramWithBinary(c->cl, 1, &d->id, &src->size,
                                              &bytes, &bstatus, &rc));
        if (m->prog && bstatus != CL_SUCCESS) {
            ocl_release_program(m->prog);
            m->prog = NULL;
            rc = bstatus;
        }
        break;
    }
    }
    if (!m->prog) {
        err = ocl_fail(rc, "creating program %s on %s", name, d->base.name);
        goto fail;
    }
    rc = OCL("clBuildProgram",
             clBuildProgram(m->prog, 1, &d->id, opts, NULL, NULL));
    if (rc != CL_SUCCESS) {
        char *log = ocl_build_log(m->prog, d->id);

        if (log)
            weft__info("opencl", "build log of %s on %s:\n%s", name,
                       d->base.name, log);
        err = ocl_fail(rc, "clBuildProgram: %s on %s: %s", name, d->base.name,
                       log && *log ? log : "(no build log)");
        weft__free(log);
        goto fail;
    }
    weft__free(opts);
    *out = &m->base;
    return 0;
fail:
    weft__free(opts);
    if (m->prog)
        ocl_release_program(m->prog);
    pthread_mutex_destroy(&m->lock);
    weft__free(m->name);
    weft__free(m);
    return err;
}

static void ocl_kernel_free(ocl_kernel *k)
{
    if (k->cl)
        ocl_release_kernel(k->cl);
    pthread_mutex_destroy(&k->lock);
    weft__free(k->params);
    weft__free(k->sizes);
    weft__free(k->name);
    weft__free(k);
}

static void ocl_module_destroy(weft__module *mod)
{
    ocl_module *m = (ocl_module *)mod;
    ocl_kernel *k = m->kernels;

    while (k) {
        ocl_kernel *next = k->next;

        ocl_kernel_free(k);
        k = next;
    }
    ocl_release_program(m->prog);
    pthread_mutex_destroy(&m->lock);
    weft__free(m->name);
    weft__free(m);
}

/* The weft type of a by-value OpenCL C parameter type; 0 if none fits. */
static weft_param_type ocl_scalar_type(const char *t)
{
    static const struct {
        const char *name;
        weft_param_type type;
    } map[] = {
        {"int", WEFT_PARAM_I32},          {"uint", WEFT_PARAM_U32},
        {"unsigned int", WEFT_PARAM_U32}, {"long", WEFT_PARAM_I64},
        {"ulong", WEFT_PARAM_U64},        {"unsigned long", WEFT_PARAM_U64},
        {"float", WEFT_PARAM_F32},        {"double", WEFT_PARAM_F64},
    };

    for (size_t i = 0; i < WEFT__COUNTOF(map); i++)
        if (strcmp(t, map[i].name) == 0)
            return map[i].type;
    return (weft_param_type)0;
}

/*
 * Parameter types from the argument info, where the implementation keeps
 * it (programs built from source with -cl-kernel-arg-info) and every type
 * maps onto a weft type; otherwise only the count is known.
 */
static int ocl_kernel_params(ocl_kernel *k, const char *devname)
{
    cl_uint n;
    cl_int rc;

    rc = OCL("clGetKernelInfo",
             clGetKernelInfo(k->cl, CL_KERNEL_NUM_ARGS, sizeof n, &n, NULL));
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clGetKernelInfo: arguments of %s on %s", k->name,
                        devname);
    k->base.nparams = n;
    k->base.params_known = 0;
    if (n == 0) {
        k->base.params_known = 1;
        return 0;
    }
    if (!(k->params = weft__calloc(n, sizeof *k->params)) ||
        !(k->sizes = weft__calloc(n, sizeof *k->sizes)))
        return weft__error(WEFT_ENOMEM, "opencl: parameters of %s", k->name);
    for (cl_uint i = 0; i < n; i++) {
        cl_kernel_arg_address_qualifier aq;
        char type[64];
        weft_param_type t;

        if (OCL("clGetKernelArgInfo",
                clGetKernelArgInfo(k->cl, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER,
                                   sizeof aq, &aq, NULL)) != CL_SUCCESS ||
            OCL("clGetKernelArgInfo",
                clGetKernelArgInfo(k->cl, i, CL_KERNEL_ARG_TYPE_NAME,
                                   sizeof type, type, NULL)) != CL_SUCCESS)
            goto unknown;
        type[sizeof type - 1] = 0;
        ocl_trim(type);
        if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL ||
            aq == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
            k->params[i] = WEFT_PARAM_BUFFER;
            k->sizes[i] = sizeof(uint64_t);
        } else if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL) {
            k->params[i] = WEFT_PARAM_LOCAL;
            k->sizes[i] = 0;
        } else if ((t = ocl_scalar_type(type)) != 0) {
            k->params[i] = t;
            k->sizes[i] = weft_param_type_size(t);
        } else {
            goto unknown;
        }
    }
    k->base.params = k->params;
    k->base.param_sizes = k->sizes;
    k->base.params_known = 1;
    return 0;
unknown:
    weft__free(k->params);
    weft__free(k->sizes);
    k->params = NULL;
    k->sizes = NULL;
    return 0;
}

static int ocl_kernel_get(weft__module *mod, const char *name,
                          weft__kernel **out)
{
    ocl_module *m = (ocl_module *)mod;
    const char *devname = mod->ctx->dev->name;
    ocl_kernel *k;
    cl_int rc;
    int err;

    pthread_mutex_lock(&m->lock);
    for (k = m->kernels; k; k = k->next)
        if (strcmp(k->name, name) == 0)
            goto found;
    if (!(k = weft__calloc(1, sizeof *k))) {
        err = weft__error(WEFT_ENOMEM, "opencl: kernel %s", name);
        goto fail;
    }
    if ((err = ocl_mutex_init(&k->lock)) < 0) {
        weft__free(k);
        goto fail;
    }
    if (!(k->name = weft__strdup(name))) {
        err = weft__error(WEFT_ENOMEM, "opencl: kernel %s", name);
        ocl_kernel_free(k);
        goto fail;
    }
    k->base.name = k->name;
    k->cl = OCL_NEW("clCreateKernel", rc, clCreateKernel(m->prog, name, &rc));
    if (!k->cl) {
        err = rc == CL_INVALID_KERNEL_NAME
                  ? weft__driver_error(WEFT_ENOTFOUND, "opencl", rc,
                                       "CL_INVALID_KERNEL_NAME",
                                       "clCreateKernel: no kernel %s in %s "
                                       "on %s",
                                       name, m->name, devname)
                  : ocl_fail(rc, "clCreateKernel: %s in %s on %s", name,
                             m->name, devname);
        ocl_kernel_free(k);
        goto fail;
    }
    if ((err = ocl_kernel_params(k, devname)) < 0) {
        ocl_kernel_free(k);
        goto fail;
    }
    k->next = m->kernels;
    m->kernels = k;
found:
    pthread_mutex_unlock(&m->lock);
    *out = &k->base;
    return 0;
fail:
    pthread_mutex_unlock(&m->lock);
    return err;
}

/*
 * The kernel object that a launch of k recorded on capturing q sets its
 * arguments on: one of its own, which the capture keeps for the graph's
 * life. The extension says that a recorded command takes the argument
 * values as they are when it is recorded, but PoCL 3.1 reads them from
 * the kernel object when the command buffer is enqueued: with k's own
 * object, every recorded launch of k would run with the arguments of the
 * last one set.
 */
static int ocl_capture_kernel(ocl_queue *q, ocl_kernel *k, cl_kernel *out)
{
    ocl_capture *c = q->cap;
    ocl_module *m = (ocl_module *)k->base.module;
    cl_kernel own;
    cl_int rc;

    if (ocl_grow((void **)&c->held.kernels, &c->held.cap_kernels,
                 c->held.nkernels, sizeof *c->held.kernels) < 0)
        return ocl_capture_fail(
            q, weft__error(WEFT_ENOMEM, "opencl: recording %s", k->name));
    own = OCL_NEW("clCreateKernel", rc, clCreateKernel(m->prog, k->name, &rc));
    if (!own)
        return ocl_capture_fail(
            q, ocl_fail(rc, "clCreateKernel: %s, recorded on %s", k->name,
                        c->dev->base.name));
    c->held.kernels[c->held.nkernels++] = own;
    *out = own;
    return 0;
}

/*
 * Record a launch of k, whose arguments are set on kcl, on capturing q. The
 * one-off sub-buffers go to the capture, which keeps them for the graph's life
 * (*noneoff = 0: the caller releases none).
 */
static int ocl_capture_launch(ocl_queue *q, ocl_kernel *k, cl_kernel kcl,
                              cl_uint dims, const size_t *gws,
                              const size_t *lws, cl_mem *oneoff,
                              unsigned *noneoff)
{
    ocl_capture *c = q->cap;
    const cl_sync_point_khr *w;
    cl_sync_point_khr sp;
    cl_uint n;
    cl_int rc;
    int err;

    while (*noneoff > 0) {
        if (ocl_grow((void **)&c->held.keep, &c->held.cap_keep, c->held.nkeep,
                     sizeof *c->held.keep) < 0)
            return ocl_capture_fail(
                q, weft__error(WEFT_ENOMEM, "opencl: recording %s", k->name));
        c->held.keep[c->held.nkeep++] = oneoff[--*noneoff];
    }
    if ((err = ocl_capture_deps(q, &w, &n)) < 0)
        return err;
    rc = OCL("clCommandNDRangeKernelKHR",
             c->dev->cmdbuf->ndrange(c->cb, NULL, NULL, kcl, dims, NULL, gws,
                                     lws, n, w, &sp, NULL));
    return ocl_capture_recorded(q, rc, sp, "clCommandNDRangeKernelKHR: %s",
                                k->name);
}

/*
 * Arguments are kernel state in OpenCL, so setting them and enqueueing is
 * one critical section per kernel: two threads launching the same kernel
 * cannot mix their arguments.
 */
static int ocl_launch(weft__queue *q, weft__kernel *kernel,
                      const weft__grid *grid, const weft__karg *args,
                      unsigned nargs)
{
    ocl_kernel *k = (ocl_kernel *)kernel;
    ocl_queue *oq = (ocl_queue *)q;
    size_t gws[3], lws[3];
    cl_uint dims = 1;
    cl_mem *oneoff = NULL;
    unsigned noneoff = 0;
    cl_kernel kcl = k->cl;
    cl_int rc = CL_SUCCESS;
    int err = 0;

    if (grid->shared_bytes)
        return weft__error(WEFT_ENOTSUP,
                           "launch of %s: OpenCL takes group-local memory as "
                           "a LOCAL argument, not as %u dynamic bytes",
                           k->name, grid->shared_bytes);
    for (unsigned i = 0; i < 3; i++) {
        lws[i] = grid->group_size[i];
        gws[i] = (size_t)grid->groups[i] * grid->group_size[i];
        if (i > 0 && gws[i] > 1)
            dims = i + 1;
    }
    if (oq->cap && (err = ocl_capture_kernel(oq, k, &kcl)) < 0)
        return err;
    pthread_mutex_lock(&k->lock);
    for (unsigned i = 0; i < nargs && rc == CL_SUCCESS; i++) {
        const weft__karg *a = &args[i];

        switch (a->type) {
        case WEFT_PARAM_BUFFER: {
            ocl_mem *m = (ocl_mem *)a->u.buf.mem;
            cl_mem arg = m ? m->cl : NULL;
            int one = 0;

            if (m && a->u.buf.offset) {
                if (!oneoff &&
                    !(oneoff = weft__calloc(nargs, sizeof *oneoff))) {
                    err = weft__error(WEFT_ENOMEM, "opencl: launch of %s",
                                      k->name);
                    goto out;
                }
                err = ocl_sub_buffer(q, m, a->u.buf.offset, k->name, i, &arg,
                                     &one);
                if (err < 0)
                    goto out;
                if (one)
                    oneoff[noneoff++] = arg;
            }
            rc =
                OCL("clSetKernelArg", clSetKernelArg(kcl, i, sizeof arg, &arg));
            break;
        }
        case WEFT_PARAM_LOCAL:
            rc = OCL("clSetKernelArg", clSetKernelArg(kcl, i, a->size, NULL));
            break;
        default:
            rc = OCL("clSetKernelArg",
                     clSetKernelArg(kcl, i, a->size, a->u.value));
            break;
        }
        if (rc != CL_SUCCESS) {
            err = ocl_fail(rc,
                           "clSetKernelArg: launch of %s, argument %u "
                           "on %s",
                           k->name, i, ocl_qname(q));
            goto out;
        }
    }
    if (oq->cap) {
        err = ocl_capture_launch(oq, k, kcl, dims, gws, lws, oneoff, &noneoff);
        goto out;
    }
    rc = OCL("clEnqueueNDRangeKernel",
             clEnqueueNDRangeKernel(ocl_q(q), k->cl, dims, NULL, gws, lws, 0,
                                    NULL, NULL));
    if (rc != CL_SUCCESS)
        err = ocl_fail(rc, "clEnqueueNDRangeKernel: %s on %s", k->name,
                       ocl_qname(q));
out:
    pthread_mutex_unlock(&k->lock);
    /* the queued launch keeps them alive until it completes */
    for (unsigned i = 0; i < noneoff; i++)
        ocl_release_memobject(oneoff[i]);
    weft__free(oneoff);
    return err;
}

int weft__opencl_module_binary(weft__module *mod, void **bytes, size_t *size)
{
    ocl_module *m = (ocl_module *)mod;
    unsigned char *buf;
    size_t n = 0;
    cl_int rc;

    if (!mod || !bytes || !size || mod->drv != &weft__driver_opencl)
        return weft__error(WEFT_EINVAL, "opencl: module_binary: %s",
                           !mod || mod->drv == &weft__driver_opencl
                               ? "NULL argument"
                               : "not an OpenCL module");
    rc = OCL(
        "clGetProgramInfo",
        clGetProgramInfo(m->prog, CL_PROGRAM_BINARY_SIZES, sizeof n, &n, NULL));
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clGetProgramInfo: binary size of %s", m->name);
    if (n == 0)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: module %s has no device binary", m->name);
    if (!(buf = weft__malloc(n)))
        return weft__error(WEFT_ENOMEM, "opencl: %zu-byte binary", n);
    rc = OCL("clGetProgramInfo", clGetProgramInfo(m->prog, CL_PROGRAM_BINARIES,
                                                  sizeof buf, &buf, NULL));
    if (rc != CL_SUCCESS) {
        weft__free(buf);
        return ocl_fail(rc, "clGetProgramInfo: binary of %s", m->name);
    }
    *bytes = buf;
    *size = n;
    return 0;
}

/* ---- events ------------------------------------------------------------ */

static int ocl_event_create(weft__context *ctx, unsigned flags,
                            weft__event **out)
{
    ocl_event *e;
    int err;

    (void)ctx;
    (void)flags;
    if (!(e = weft__calloc(1, sizeof *e)))
        return weft__error(WEFT_ENOMEM, "opencl: event");
    if ((err = ocl_mutex_init(&e->lock)) < 0) {
        weft__free(e);
        return err;
    }
    *out = &e->base;
    return 0;
}

static void ocl_event_destroy(weft__event *ev)
{
    ocl_event *e = (ocl_event *)ev;

    if (e->last)
        ocl_release_event(e->last);
    pthread_mutex_destroy(&e->lock);
    weft__free(e);
}

/* The marker of ev's last record with a reference of the caller's; NULL. */
static cl_event ocl_event_get(weft__event *ev)
{
    ocl_event *e = (ocl_event *)ev;
    cl_event cl;

    pthread_mutex_lock(&e->lock);
    cl = e->last;
    if (cl && clRetainEvent(cl) != CL_SUCCESS)
        cl = NULL;
    pthread_mutex_unlock(&e->lock);
    return cl;
}

/*
 * An event recorded in a capture names its queue's last command, after a
 * barrier that makes the queue's waits part of it where it has any.
 */
static int ocl_capture_record(ocl_event *e, ocl_queue *q)
{
    cl_event old;
    int err;

    if (q->base.ctx != e->base.ctx)
        return ocl_capture_fail(
            q, weft__error(WEFT_EINVAL,
                           "event_record: an event of %s on a capturing "
                           "queue of %s",
                           e->base.ctx->dev->name, q->base.ctx->dev->name));
    if (q->nwaits > 0 && (err = ocl_capture_barrier(q)) < 0)
        return err;
    pthread_mutex_lock(&e->lock);
    old = e->last;
    e->last = NULL;
    e->cap_id = q->cap->id;
    e->has_sp = q->has_last;
    e->sp = q->last;
    pthread_mutex_unlock(&e->lock);
    if (old)
        ocl_release_event(old);
    return 0;
}

static int ocl_event_record(weft__event *ev, weft__queue *q)
{
    ocl_event *e = (ocl_event *)ev;
    cl_event marker, old;
    cl_int rc;

    if (((ocl_queue *)q)->cap)
        return ocl_capture_record(e, (ocl_queue *)q);
    rc = OCL("clEnqueueMarkerWithWaitList",
             clEnqueueMarkerWithWaitList(ocl_q(q), 0, NULL, &marker));
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clEnqueueMarkerWithWaitList: event on %s",
                        ocl_qname(q));
    ocl_flush(ocl_q(q));
    pthread_mutex_lock(&e->lock);
    old = e->last;
    e->last = marker;
    e->cap_id = 0;
    pthread_mutex_unlock(&e->lock);
    if (old)
        ocl_release_event(old);
    return 0;
}

static cl_int ocl_event_status(cl_event e, cl_int *status)
{
    return OCL("clGetEventInfo",
               clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS,
                              sizeof *status, status, NULL));
}

/*
 * A wait that involves a capture: q is capturing, or ev was recorded in a
 * capture (cap_id, has_sp and sp, read under ev's lock). A wait for an
 * event of q's capture is a dependency between sync points; a queue that
 * is not capturing joins the capture of the event it waits for while that
 * capture is in progress (an event of a capture that has ended stands for
 * nothing, as one never recorded); a capture cannot wait for work outside
 * it that is still to complete.
 */
static int ocl_capture_wait(ocl_queue *q, weft__event *ev, uint64_t cap_id,
                            unsigned has_sp, cl_sync_point_khr sp)
{
    ocl_context *ctx = ocl_ctx(ev->ctx);
    ocl_capture *c;
    cl_event e;
    cl_int status;
    int err = 0;

    if (q->cap && cap_id == q->cap->id) {
        if (!has_sp)
            return 0;
        if (ocl_grow((void **)&q->waits, &q->cap_waits, q->nwaits,
                     sizeof *q->waits) < 0)
            return ocl_capture_fail(
                q, weft__error(WEFT_ENOMEM, "opencl: recording a wait"));
        q->waits[q->nwaits++] = sp;
        return 0;
    }
    if (q->cap && cap_id)
        return ocl_capture_fail(
            q, weft__error(WEFT_ENOTSUP,
                           "opencl: a capture on %s waits for an event of "
                           "another capture",
                           q->base.ctx->dev->name));
    if (q->cap) {
        /* Work from before the capture: fine if it is over already. */
        if (!(e = ocl_event_get(ev)))
            return 0;
        if (ocl_event_status(e, &status) != CL_SUCCESS || status != CL_COMPLETE)
            err = ocl_capture_refuse(
                q, "a wait for an event recorded outside the capture and "
                   "not yet complete");
        ocl_release_event(e);
        return err;
    }
    pthread_mutex_lock(&ctx->lock);
    for (c = ctx->captures; c && c->id != cap_id; c = c->next)
        ;
    if (c && q->base.ctx != ev->ctx)
        err = weft__error(WEFT_ENOTSUP,
                          "opencl: a queue on %s waits for an event that a "
                          "capture on %s recorded; a command buffer holds "
                          "the work of one device",
                          q->base.ctx->dev->name, ev->ctx->dev->name);
    else if (c)
        err = ocl_capture_join(c, q, has_sp, sp);
    pthread_mutex_unlock(&ctx->lock);
    return err;
}

static int ocl_queue_wait_event(weft__queue *q, weft__event *ev)
{
    ocl_event *oe = (ocl_event *)ev;
    cl_event e, wait;
    cl_int rc, status;
    uint64_t cap_id;
    unsigned has_sp;
    cl_sync_point_khr sp;
    int err = 0;

    pthread_mutex_lock(&oe->lock);
    cap_id = oe->cap_id;
    has_sp = oe->has_sp;
    sp = oe->sp;
    pthread_mutex_unlock(&oe->lock);
    if (cap_id || ((ocl_queue *)q)->cap)
        return ocl_capture_wait((ocl_queue *)q, ev, cap_id, has_sp, sp);
    if (!(e = ocl_event_get(ev)))
        return 0;
    rc = ocl_event_status(e, &status);
    if (rc == CL_SUCCESS && status == CL_COMPLETE) {
        ocl_release_event(e);
        return 0;
    }
    if (ev->ctx == q->ctx) {
        wait = e;
    } else if ((err = ocl_bridge(e, ocl_ctx(q->ctx), &wait)) < 0) {
        ocl_release_event(e);
        return err;
    }
    rc = OCL("clEnqueueBarrierWithWaitList",
             clEnqueueBarrierWithWaitList(ocl_q(q), 1, &wait, NULL));
    if (rc != CL_SUCCESS)
        err = ocl_fail(rc,
                       "clEnqueueBarrierWithWaitList: %s waiting on an "
                       "event of %s",
                       ocl_qname(q), ev->ctx->dev->name);
    if (wait != e)
        ocl_release_event(wait);
    ocl_release_event(e);
    return err;
}

static int ocl_event_query(weft__event *ev)
{
    cl_event e = ocl_event_get(ev);
    cl_int rc, status;

    if (!e)
        return 0;
    rc = ocl_event_status(e, &status);
    ocl_release_event(e);
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clGetEventInfo: event of %s", ev->ctx->dev->name);
    if (status < 0)
        return ocl_fail(status, "event of %s: the work it waits for failed",
                        ev->ctx->dev->name);
    if (status != CL_COMPLETE)
        return WEFT_ENOTREADY;
    ocl_host_acquire();
    return 0;
}

static int ocl_event_sync(weft__event *ev)
{
    cl_event e = ocl_event_get(ev);
    cl_int rc, status;

    if (!e)
        return 0;
    rc = OCL("clWaitForEvents", clWaitForEvents(1, &e));
    if (rc == CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST &&
        ocl_event_status(e, &status) == CL_SUCCESS && status < 0)
        rc = status;
    ocl_release_event(e);
    if (rc != CL_SUCCESS)
        return ocl_fail(rc, "clWaitForEvents: event of %s", ev->ctx->dev->name);
    ocl_host_acquire();
    return 0;
}

/* Markers complete when the work before them has: their END is the time. */
static int ocl_event_elapsed(weft__event *start, weft__event *end, uint64_t *ns)
{
    cl_event ev[2] = {ocl_event_get(start), ocl_event_get(end)};
    cl_ulong t[2];
    cl_int rc = CL_SUCCESS, status;
    int err = 0;

    for (int i = 0; i < 2 && err == 0; i++) {
        if (!ev[i])
            err = weft__error(WEFT_EINVAL,
                              "event_elapsed: %s event was "
                              "never recorded",
                              i ? "end" : "start");
        else if ((rc = ocl_event_status(ev[i], &status)) != CL_SUCCESS)
            err = ocl_fail(rc, "clGetEventInfo: elapsed time");
        else if (status < 0)
            err = ocl_fail(status,
                           "event_elapsed: the work of the %s event "
                           "failed",
                           i ? "end" : "start");
        else if (status != CL_COMPLETE)
            err = WEFT_ENOTREADY;
        else if ((rc = OCL("clGetEventProfilingInfo",
                           clGetEventProfilingInfo(
                               ev[i], CL_PROFILING_COMMAND_END, sizeof t[i],
                               &t[i], NULL))) != CL_SUCCESS)
            err = ocl_fail(rc, "clGetEventProfilingInfo: elapsed time on %s",
                           start->ctx->dev->name);
    }
    for (int i = 0; i < 2; i++)
        if (ev[i])
            ocl_release_event(ev[i]);
    if (err == 0)
        *ns = t[1] > t[0] ? t[1] - t[0] : 0;
    return err;
}

/* ---- host functions ---------------------------------------------------- */

struct ocl_host_call {
    ocl_host_call *next;
    ocl_host_worker *worker;
    weft__host_fn *fn;
    void *user;
    cl_event gate; /* holds the queue until fn has returned */
    cl_int status; /* of the work before, as the marker ended */
};

/*
 * Runs fn even when the work before it failed, since callers use host
 * functions to learn that work is over; the failure still passes to the
 * gate, so that the queue's later work sees it.
 */
static void *ocl_worker_main(void *arg)
{
    ocl_host_worker *w = arg;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        ocl_host_call *call = w->head;

        if (!call) {
            if (w->stop)
                break;
            pthread_cond_wait(&w->cond, &w->lock);
            continue;
        }
        w->head = call->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock(&w->lock);
        call->fn(call->user);
        __atomic_add_fetch(&ocl_host_epoch, 1, __ATOMIC_RELEASE);
        clSetUserEventStatus(call->gate,
                             call->status < 0 ? call->status : CL_COMPLETE);
        ocl_release_event(call->gate);
        weft__free(call);
        pthread_mutex_lock(&w->lock);
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static void ocl_worker_stop(ocl_host_worker *w)
{
    pthread_mutex_lock(&w->lock);
    w->stop = 1;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    pthread_cond_destroy(&w->cond);
    pthread_mutex_destroy(&w->lock);
    weft__free(w);
}

static int ocl_worker_get(ocl_queue *q, ocl_host_worker **out)
{
    ocl_host_worker *w;
    int rc;

    pthread_mutex_lock(&q->lock);
    if ((w = q->worker) != NULL)
        goto done;
    if (!(w = weft__calloc(1, sizeof *w))) {
        pthread_mutex_unlock(&q->lock);
        return weft__error(WEFT_ENOMEM, "opencl: host function thread");
    }
    if ((rc = ocl_mutex_init(&w->lock)) < 0) {
        weft__free(w);
        pthread_mutex_unlock(&q->lock);
        return rc;
    }
    rc = weft__fault("opencl.pthread_cond_init")
             ? 12
             : pthread_cond_init(&w->cond, NULL);
    if (rc == 0) {
        rc = weft__fault("opencl.pthread_create")
                 ? 11
                 : pthread_create(&w->thread, NULL, ocl_worker_main, w);
        if (rc)
            pthread_cond_destroy(&w->cond);
    }
    if (rc) {
        pthread_mutex_destroy(&w->lock);
        weft__free(w);
        pthread_mutex_unlock(&q->lock);
        return weft__error(WEFT_ENOMEM,
                           "opencl: starting the host function thread of a "
                           "queue on %s: %s",
                           q->base.ctx->dev->name, strerror(rc));
    }
    q->worker = w;
done:
    pthread_mutex_unlock(&q->lock);
    *out = w;
    return 0;
}

static void CL_CALLBACK ocl_host_call_fire(cl_event marker, cl_int status,
                                           void *user)
{
    ocl_host_call *call = user;
    ocl_host_worker *w = call->worker;

    (void)marker;
    call->status = status;
    pthread_mutex_lock(&w->lock);
    if (w->tail)
        w->tail->next = call;
    else
        w->head = call;
    w->tail = call;
    pthread_cond_signal(&w->cond);
    pthread_mutex_unlock(&w->lock);
}

/*
 * A marker (done when the work before it is) whose callback hands fn to
 * the queue's worker, then a barrier on a user event that the worker
 * completes once fn has returned.
 */
static int ocl_host_fn(weft__queue *q, weft__host_fn *fn, void *user)
{
    ocl_host_call *call;
    cl_event marker;
    cl_int rc;
    int err;

    if (((ocl_queue *)q)->cap)
        return ocl_capture_refuse((ocl_queue *)q, "a host function");
    if (!(call = weft__calloc(1, sizeof *call)))
        return weft__error(WEFT_ENOMEM, "opencl: host function");
    if ((err = ocl_worker_get((ocl_queue *)q, &call->worker)) < 0) {
        weft__free(call);
        return err;
    }
    call->fn = fn;
    call->user = user;
    call->gate = OCL_NEW("clCreateUserEvent", rc,
                         clCreateUserEvent(ocl_ctx(q->ctx)->cl, &rc));
    if (!call->gate) {
        weft__free(call);
        return ocl_fail(rc, "clCreateUserEvent: host function on %s",
                        ocl_qname(q));
    }
    rc = OCL("clEnqueueMarkerWithWaitList",
             clEnqueueMarkerWithWaitList(ocl_q(q), 0, NULL, &marker));
    if (rc != CL_SUCCESS) {
        err = ocl_fail(rc, "clEnqueueMarkerWithWaitList: host function on %s",
                       ocl_qname(q));
        goto fail;
    }
    rc = OCL("clEnqueueBarrierWithWaitList",
             clEnqueueBarrierWithWaitList(ocl_q(q), 1, &call->gate, NULL));
    if (rc != CL_SUCCESS) {
        ocl_release_event(marker);
        err = ocl_fail(rc,
                       "clEnqueueBarrierWithWaitList: host function on "
                       "%s",
                       ocl_qname(q));
        goto fail;
    }
    /*
     * The callback thread gets call through the OpenCL implementation;
     * taking the worker's lock here orders the writes above before the
     * callback's push (which takes the same lock), whatever ordering the
     * implementation's own handoff gives.
     */
    pthread_mutex_lock(&call->worker->lock);
    pthread_mutex_unlock(&call->worker->lock);
    rc = OCL("clSetEventCallback",
             clSetEventCallback(marker, CL_COMPLETE, ocl_host_call_fire, call));
    ocl_release_event(marker);
    ocl_flush(ocl_q(q));
    if (rc != CL_SUCCESS) {
        /* the barrier is queued: open it, the function never runs */
        clSetUserEventStatus(call->gate, CL_COMPLETE);
        err = ocl_fail(rc, "clSetEventCallback: host function on %s",
                       ocl_qname(q));
        goto fail;
    }
    return 0;
fail:
    ocl_release_event(call->gate);
    weft__free(call);
    return err;
}

/* The table's module_binary: a device binary for the kernel cache. */
static int ocl_module_binary(weft__module *mod, void **bytes, size_t *size,
                             weft__source_kind *kind)
{
    int rc = weft__opencl_module_binary(mod, bytes, size);

    if (rc == 0)
        *kind = WEFT__SRC_CL_BINARY;
    return rc;
}

const weft__driver weft__driver_opencl = {
    .name = "opencl",
    .source_kinds =
        (const weft_source_kind[]){WEFT_SOURCE_CL_BINARY, WEFT_SOURCE_SPIRV,
                                   WEFT_SOURCE_OPENCL_C, WEFT_SOURCE_PORTABLE,
                                   0},
    .portable_kind = WEFT__SRC_OPENCL_C,
    .platforms_open = ocl_platforms_open,
    .platforms_close = ocl_platforms_close,
    .can_access_peer = ocl_can_access_peer,
    .context_create = ocl_context_create,
    .context_destroy = ocl_context_destroy,
    .queue_create = ocl_queue_create,
    .queue_sync = ocl_queue_sync,
    .queue_release = ocl_queue_release,
    .mem_alloc = ocl_mem_alloc,
    .host_alloc = ocl_host_alloc,
    .host_register = ocl_host_register,
    .mem_free = ocl_mem_free,
    .copy_h2d = ocl_copy_h2d,
    .copy_d2h = ocl_copy_d2h,
    .copy_d2d = ocl_copy_d2d,
    .copy_peer = ocl_copy_peer,
    .fill = ocl_fill,
    .module_create = ocl_module_create,
    .module_destroy = ocl_module_destroy,
    .module_binary = ocl_module_binary,
    .kernel_get = ocl_kernel_get,
    .launch = ocl_launch,
    .event_create = ocl_event_create,
    .event_record = ocl_event_record,
    .queue_wait_event = ocl_queue_wait_event,
    .event_query = ocl_event_query,
    .event_sync = ocl_event_sync,
    .event_elapsed = ocl_event_elapsed,
    .event_destroy = ocl_event_destroy,
    .host_fn = ocl_host_fn,
    .graph_supported = ocl_graph_supported,
    .graph_begin = ocl_graph_begin,
    .graph_end = ocl_graph_end,
    .graph_launch = ocl_graph_launch,
    .graph_destroy = ocl_graph_destroy,
};
