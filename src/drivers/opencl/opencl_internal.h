/*
 * What the files of the OpenCL driver share. Nothing outside
 * src/drivers/opencl/ includes this, except the driver's own tests.
 *
 * The driver reaches every platform and device the ICD loader knows. The
 * loader (libOpenCL.so.1) is loaded at run time (opencl_lib.c): a machine
 * without it has no OpenCL devices, and libweft does not link it.
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
#ifndef WEFT_OPENCL_INTERNAL_H
#define WEFT_OPENCL_INTERNAL_H

#include "opencl.h"

#include <CL/cl_icd.h>
#include <pthread.h>

/* ---- the ICD loader ---------------------------------------------------- */

/*
 * The OpenCL entry points the driver calls, X(name, required): table member
 * name, symbol "cl" name, type cl_api_cl<name> (CL/cl_icd.h). What OpenCL
 * 1.2 has is required. Without an optional one, the feature it serves is
 * off: queue priorities (clCreateCommandQueueWithProperties, 2.0), SPIR-V
 * through the core entry point (clCreateProgramWithIL, 2.1), device memory
 * as SVM (clSVMAlloc, clSVMFree, clSetKernelArgSVMPointer, 2.0).
 */
#define WEFT__OCL_FUNCS(X)                                                     \
    X(GetPlatformIDs, 1)                                                       \
    X(GetPlatformInfo, 1)                                                      \
    X(GetDeviceIDs, 1)                                                         \
    X(GetDeviceInfo, 1)                                                        \
    X(GetExtensionFunctionAddressForPlatform, 1)                               \
    X(CreateContext, 1)                                                        \
    X(ReleaseContext, 1)                                                       \
    X(CreateCommandQueue, 1)                                                   \
    X(CreateCommandQueueWithProperties, 0)                                     \
    X(ReleaseCommandQueue, 1)                                                  \
    X(Flush, 1)                                                                \
    X(Finish, 1)                                                               \
    X(CreateBuffer, 1)                                                         \
    X(CreateSubBuffer, 1)                                                      \
    X(ReleaseMemObject, 1)                                                     \
    X(RetainMemObject, 1)                                                      \
    X(GetMemObjectInfo, 1)                                                     \
    X(EnqueueReadBuffer, 1)                                                    \
    X(EnqueueWriteBuffer, 1)                                                   \
    X(EnqueueCopyBuffer, 1)                                                    \
    X(EnqueueReadBufferRect, 0)                                                \
    X(EnqueueWriteBufferRect, 0)                                               \
    X(EnqueueCopyBufferRect, 0)                                                \
    X(EnqueueFillBuffer, 1)                                                    \
    X(EnqueueMapBuffer, 1)                                                     \
    X(EnqueueUnmapMemObject, 1)                                                \
    X(CreateProgramWithSource, 1)                                              \
    X(CreateProgramWithBinary, 1)                                              \
    X(CreateProgramWithIL, 0)                                                  \
    X(BuildProgram, 1)                                                         \
    X(GetProgramInfo, 1)                                                       \
    X(GetProgramBuildInfo, 1)                                                  \
    X(ReleaseProgram, 1)                                                       \
    X(CreateKernel, 1)                                                         \
    X(GetKernelInfo, 1)                                                        \
    X(GetKernelArgInfo, 1)                                                     \
    X(SetKernelArg, 1)                                                         \
    X(SetKernelArgSVMPointer, 0)                                               \
    X(SVMAlloc, 0)                                                             \
    X(SVMFree, 0)                                                              \
    X(ReleaseKernel, 1)                                                        \
    X(EnqueueNDRangeKernel, 1)                                                 \
    X(EnqueueMarkerWithWaitList, 1)                                            \
    X(EnqueueBarrierWithWaitList, 1)                                           \
    X(CreateUserEvent, 1)                                                      \
    X(SetUserEventStatus, 1)                                                   \
    X(SetEventCallback, 1)                                                     \
    X(GetEventInfo, 1)                                                         \
    X(GetEventProfilingInfo, 1)                                                \
    X(WaitForEvents, 1)                                                        \
    X(RetainEvent, 1)                                                          \
    X(ReleaseEvent, 1)

/*
 * The loader's entry points. Filled by weft__ocl_load under the loader's
 * lock and cleared by the weft__ocl_unload that drops the last load; read
 * without a lock by code that holds a load (every platform of a runtime
 * does), for which it does not change.
 */
typedef struct weft__ocl_api {
    void *lib; /* dlopen handle; NULL while not loaded */
#define WEFT__OCL_MEMBER(name, required) cl_api_cl##name name;
    WEFT__OCL_FUNCS(WEFT__OCL_MEMBER)
#undef WEFT__OCL_MEMBER
} weft__ocl_api;

extern weft__ocl_api weft__cl;

/*
 * Take a load of the ICD loader (WEFT_OPENCL_LIBRARY, else libOpenCL.so.1,
 * else libOpenCL.so), loading it if this is the first; WEFT_ENOTSUP with a
 * detail naming the library or the missing entry point, and nothing held,
 * if it cannot be. Every load is given back by one weft__ocl_unload; the
 * last one closes the library.
 */
int weft__ocl_load(void);
void weft__ocl_unload(void);

/* The driver calls OpenCL only through weft__cl: libweft links no libOpenCL. */
#define WEFT__OCL_POISON_(pragma)        _Pragma(#pragma)
#define WEFT__OCL_POISON(name, required) WEFT__OCL_POISON_(GCC poison cl##name)
WEFT__OCL_FUNCS(WEFT__OCL_POISON)
#undef WEFT__OCL_POISON

/* ---- errors ------------------------------------------------------------ */

/*
 * The cl_int of a call, or the failure a test injects at its site
 * ("opencl.clCreateBuffer"): the call is then not made at all.
 */
#define OCL_FAULT(call) weft__fault("opencl." call)
#define OCL(call, expr) (OCL_FAULT(call) ? CL_OUT_OF_HOST_MEMORY : (expr))
/* The same for calls that return an object and an errcode_ret. */
#define OCL_NEW(call, err, expr)                                               \
    (OCL_FAULT(call) ? ((err) = CL_OUT_OF_HOST_MEMORY, NULL) : (expr))

/* Report rc (a CL_* code) as the weft code it maps to; that code. */
int weft__ocl_fail(cl_int rc, const char *fmt, ...) WEFT__PRINTF(2, 3);

/*
 * Releases, checked: a release that fails can only be logged (the object
 * is gone for weft either way).
 */
#define OCL_RELEASE_FN(name, type, call)                                       \
    static inline void name(type x)                                            \
    {                                                                          \
        cl_int rc_ = weft__cl.call(x);                                         \
        if (rc_ != CL_SUCCESS)                                                 \
            weft__warn("opencl", "%s: error %d", "cl" #call, (int)rc_);        \
    }
OCL_RELEASE_FN(ocl_release_event, cl_event, ReleaseEvent)
OCL_RELEASE_FN(ocl_release_memobject, cl_mem, ReleaseMemObject)
OCL_RELEASE_FN(ocl_release_kernel, cl_kernel, ReleaseKernel)
OCL_RELEASE_FN(ocl_release_program, cl_program, ReleaseProgram)
OCL_RELEASE_FN(ocl_release_commandqueue, cl_command_queue, ReleaseCommandQueue)
OCL_RELEASE_FN(ocl_release_context, cl_context, ReleaseContext)
#undef OCL_RELEASE_FN

/* pthread_mutex_init, with its failure injected ("opencl.pthread_mutex_init").
 */
int weft__ocl_mutex_init(pthread_mutex_t *m);

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
    /*
     * Device memory is coarse-grained SVM (clSVMAlloc) with a cl_mem made
     * on it (CL_MEM_USE_HOST_PTR) for copies and fills, and kernels take
     * pointers at offsets (clSetKernelArgSVMPointer) instead of sub-buffers:
     * by default on NVIDIA's OpenCL, which dies when kernels on sub-buffers
     * wait behind a barrier on a user event (tests/gpu/ocl_subbuf.c);
     * WEFT_OPENCL_SVM says otherwise.
     */
    unsigned svm;
    ocl_il_fn il_khr; /* clCreateProgramWithILKHR, or NULL */
    unsigned il_core; /* clCreateProgramWithIL takes SPIR-V */
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
    uint64_t id;                  /* names it in failure notes, never reused */
    uint64_t ticks; /* the clock of failure notes (weft__ocl_tick), atomic */
} ocl_context;

/* A queue's host function thread (opencl_queue.c). */
typedef struct ocl_host_worker ocl_host_worker;

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
    uint64_t id;   /* names it in failure notes, never reused */
    uint64_t tick; /* of its last ticked command; its issuing thread's */
    uint64_t told; /* the tick whose failure a sync of it reported */
} ocl_queue;

typedef struct ocl_sub {
    struct ocl_sub *next;
    size_t offset;
    cl_mem cl;
} ocl_sub;

typedef struct ocl_mem {
    weft__mem base;
    cl_mem cl;
    void *svm;            /* DEVICE memory on an SVM device: cl is made on it */
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
    uint64_t ctx_id, queue_id, tick; /* where last was recorded */
} ocl_event;

static inline ocl_device *ocl_dev(weft__device *d)
{
    return (ocl_device *)d;
}

static inline ocl_context *ocl_ctx(weft__context *c)
{
    return (ocl_context *)c;
}

static inline ocl_device *ocl_ctx_dev(weft__context *c)
{
    return ocl_dev(c->dev);
}

static inline const char *ocl_qname(weft__queue *q)
{
    return q->ctx->dev->name;
}

static inline cl_command_queue ocl_q(weft__queue *q)
{
    return ((ocl_queue *)q)->cl;
}

static inline cl_mem ocl_cl(weft__mem *m)
{
    return ((ocl_mem *)m)->cl;
}

/* ---- opencl.c: discovery ----------------------------------------------- */

/* Cut trailing blanks and newlines off s. */
void weft__ocl_trim(char *s);

/* ---- opencl_queue.c: contexts, queues, events, host functions ---------- */

int weft__ocl_context_create(weft__device *dev, weft__context **out);
void weft__ocl_context_destroy(weft__context *ctx);
int weft__ocl_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                           weft__queue **out);
int weft__ocl_queue_sync(weft__queue *q);
void weft__ocl_queue_release(weft__queue *q);
/* Submit what is queued on q; a failure is only logged. */
void weft__ocl_flush(cl_command_queue q);
/*
 * Failures past weft's gates and bridges (opencl_queue.c). weft never sets
 * one of its user events, nor the program's, to an error status (PoCL 3
 * aborts on it, PoCL 5 hangs): they complete with CL_COMPLETE, and the
 * failure is noted in weft's own state instead. Each context has a clock:
 * the commands weft orders or observes (markers, barriers, gates) take a
 * tick before they are enqueued, so a command that comes after another in
 * the context (on its queue, or through a wait) has a later tick; a bridge
 * from another context carries a failure across explicitly. A failure
 * note (the queue whose gate or bridge met a failure, the tick of that
 * gate) covers every later tick of the context until it is cleared, and
 * the events and syncs of covered commands report the failure. The first
 * report through the noted queue itself (a sync of it or of an event
 * recorded on it: its own launch) clears it from the clock's next tick
 * on; covered commands keep reporting it. Other queues' commands in that
 * window are covered too (the note is per device: they may have waited on
 * the failed work); the queue's or the context's release forgets it.
 */
typedef struct ocl_mark {
    uint64_t ctx, queue, tick; /* ids; 0: none */
} ocl_mark;

/* A tick of q's context for the command about to be enqueued on q. */
ocl_mark weft__ocl_tick(ocl_queue *q);
/*
 * A user event of context to that completes (CL_COMPLETE) when src does.
 * A failure of src (its status, or a note covering from, if not NULL) is
 * noted as into (if not NULL: the command that waits on *out). *out holds
 * the caller's reference.
 */
int weft__ocl_bridge(cl_event src, const ocl_mark *from, ocl_context *to,
                     const ocl_mark *into, cl_event *out);
int weft__ocl_event_create(weft__context *ctx, unsigned flags,
                           weft__event **out);
void weft__ocl_event_destroy(weft__event *ev);
/* The marker of ev's last record with a reference of the caller's; NULL. */
cl_event weft__ocl_event_get(weft__event *ev);
cl_int weft__ocl_event_status(cl_event e, cl_int *status);
int weft__ocl_event_record(weft__event *ev, weft__queue *q);
int weft__ocl_queue_wait_event(weft__queue *q, weft__event *ev);
int weft__ocl_event_query(weft__event *ev);
int weft__ocl_event_sync(weft__event *ev);
int weft__ocl_event_elapsed(weft__event *start, weft__event *end, uint64_t *ns);
int weft__ocl_host_fn(weft__queue *q, weft__host_fn *fn, void *user);
int weft__ocl_native_call(weft__queue *q, weft__native_fn *fn, void *user);
void weft__ocl_native_mem(weft__mem *m, size_t off, weft__native_mem *out);
void weft__ocl_native_context(weft__context *ctx, weft__native_queue *out);
int weft__ocl_external_wait(weft__queue *q, void *ev);
int weft__ocl_external_record(weft__queue *q, void *ev);
int weft__ocl_external_mark(void *queue, void **mark);
int weft__ocl_external_mark_end(void *mark, int wait);

/* ---- opencl_mem.c: memory and copies ----------------------------------- */

int weft__ocl_mem_alloc(weft__context *ctx, size_t size, weft__mem **out);
int weft__ocl_host_alloc(weft__context *ctx, size_t size, weft__mem **out);
int weft__ocl_host_register(weft__context *ctx, void *ptr, size_t size,
                            weft__mem **out);
void weft__ocl_mem_free(weft__mem *mem);
int weft__ocl_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                       size_t size, weft__mem **out, size_t *moff);
/*
 * The cl_mem that starts at offset off of m, for argument argi of a launch
 * of kname; *oneoff set if the caller must release it after the enqueue.
 */
int weft__ocl_sub_buffer(weft__queue *q, ocl_mem *m, size_t off,
                         const char *kname, unsigned argi, cl_mem *out,
                         int *oneoff);
int weft__ocl_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       const void *src, size_t size);
int weft__ocl_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                       size_t src_off, size_t size);
int weft__ocl_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                       weft__mem *src, size_t src_off, size_t size);
/* Block copies: 1 (declined, nothing enqueued) where the rows go one by
 * one (see opencl_mem.c). */
int weft__ocl_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                            const weft__rect *r);
int weft__ocl_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                            const weft__rect *r);
int weft__ocl_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                            const weft__rect *r);
int weft__ocl_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r);
int weft__ocl_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size);
int weft__ocl_fill(weft__queue *q, weft__mem *dst, size_t off,
                   const void *pattern, size_t pattern_size, size_t size);
/* Unmap and free b, a bounce buffer of c that no copy uses. */
void weft__ocl_bounce_drop(ocl_context *c, ocl_bounce *b);

/* ---- opencl_kernel.c: modules, kernels, launches ----------------------- */

int weft__ocl_module_create(weft__context *ctx, const weft__module_source *src,
                            weft__module **out);
void weft__ocl_module_destroy(weft__module *mod);
int weft__ocl_kernel_get(weft__module *mod, const char *name,
                         weft__kernel **out);
int weft__ocl_launch(weft__queue *q, weft__kernel *kernel,
                     const weft__grid *grid, const weft__karg *args,
                     unsigned nargs);

/* ---- opencl_graph.c: native graphs ------------------------------------- */

int weft__ocl_graph_supported(const weft__device *dev);
int weft__ocl_graph_begin(weft__queue *q);
int weft__ocl_graph_end(weft__queue *q, void *old, void **graph, int *updated);
int weft__ocl_graph_launch(void *graph, weft__queue *q);
void weft__ocl_graph_destroy(void *graph);
/*
 * While q captures (q->cap): what its operations do instead of enqueueing.
 * capture_refuse fails the capture for an operation that a command buffer
 * cannot hold (what names it); the others record into it. Each returns 0
 * or the weft code the capture failed with (detail set).
 */
int weft__ocl_capture_refuse(ocl_queue *q, const char *what);
int weft__ocl_capture_copy(ocl_queue *q, cl_mem src, size_t src_off, cl_mem dst,
                           size_t dst_off, size_t size);
int weft__ocl_capture_fill(ocl_queue *q, cl_mem dst, size_t off,
                           const void *pattern, size_t pattern_size,
                           size_t size);
int weft__ocl_capture_kernel(ocl_queue *q, ocl_kernel *k, cl_kernel *out);
int weft__ocl_capture_launch(ocl_queue *q, ocl_kernel *k, cl_kernel kcl,
                             cl_uint dims, const size_t *gws, const size_t *lws,
                             cl_mem *oneoff, unsigned *noneoff);
int weft__ocl_capture_record(ocl_event *e, ocl_queue *q);
/*
 * A wait of q for ev that involves a capture: q captures, or ev was
 * recorded in the capture cap_id (has_sp, sp: what it names there).
 */
int weft__ocl_capture_wait(ocl_queue *q, weft__event *ev, uint64_t cap_id,
                           unsigned has_sp, cl_sync_point_khr sp);

#endif /* WEFT_OPENCL_INTERNAL_H */
