/*
 * The driver interface: one table of operations that every driver (cuda,
 * opencl, host, sim) fills. Nothing above src/drivers/ includes a vendor
 * header; it sees only these types.
 *
 * Objects. Every object a driver creates starts with the common part below
 * (a struct weft__X as its first member); the driver allocates the whole
 * object with weft__malloc/weft__calloc and casts. The rest of weft never
 * calls a driver operation directly: it calls the weft__drv_* wrappers of
 * dispatch.c, which check arguments, honour failure injection, keep
 * destroyed queues answering WEFT_EDESTROYED, and then call the driver. So a
 * driver operation may assume what the wrapper checks (non-NULL objects of
 * its own driver, ranges inside allocations, sizes > 0 where required).
 * What a launch enqueues, and the host's waits meanwhile, go through a
 * submission (submit.h) that the scheduler passes down; it ends in these
 * wrappers, or in the scheduler's tape, which calls them in turn.
 *
 * Semantics every driver keeps (the conformance suite checks them):
 * - A queue is in order: each operation starts after the previous one on
 *   the same queue has completed, including host functions.
 * - Operations are asynchronous: an enqueue returns once the operation is
 *   queued, never waiting for earlier work. Host memory passed to a copy
 *   may be any memory (pageable, pinned or registered); the copy reads or
 *   writes it when it runs, in queue order (after a host function queued
 *   before it, say), so it must stay valid and untouched until the copy
 *   completes. A driver whose API reads pageable memory at enqueue time or
 *   blocks on it stages such copies itself.
 * - An event captures, when recorded, all work enqueued so far on that
 *   queue; it completes when that work has. Recording again re-targets it.
 *   Waiting on an event that was never recorded does nothing (as CUDA).
 * - queue_wait_event makes later work on the queue wait for the event,
 *   without the host blocking, also across devices of the same driver.
 * - A host function on a queue runs on some host thread once the work
 *   before it has completed; work after it waits for it to return. It must
 *   not call driver operations.
 * - Errors are reported as weft codes through weft__error/weft__driver_error
 *   with the driver's own code kept in the detail. An operation that fails
 *   has no effect and leaks nothing.
 */
#ifndef WEFT_DRIVER_H
#define WEFT_DRIVER_H

#include "../base/base.h"

typedef struct weft__driver weft__driver;
typedef struct weft__platform weft__platform;
typedef struct weft__device weft__device;
typedef struct weft__context weft__context;
typedef struct weft__queue weft__queue;
typedef struct weft__mem weft__mem;
typedef struct weft__module weft__module;
typedef struct weft__kernel weft__kernel;
typedef struct weft__event weft__event;

/* ---- common object parts ----------------------------------------------- */

struct weft__platform {
    const weft__driver *drv;
    char name[128];
    char vendor[128];
    char version[128];
    unsigned ndevices;
    weft__device **devices; /* owned by the driver */
};

/*
 * A device as discovered. props.size is sizeof(weft_device_info); the
 * driver fills everything but index, numa_node, cpuset and ncores, which
 * the runtime fills (from hwloc and the PCI bus id). String fields point
 * into the arrays below.
 */
struct weft__device {
    const weft__driver *drv;
    weft__platform *platform;
    unsigned driver_index; /* among the devices of this driver */
    weft_device_info props;
    char name[256];
    char vendor[128];
    char driver_version[128];
    char pci_bus_id[32]; /* "" if unknown */
    char cpuset[256];
};

/*
 * A context owns the objects created on one device. Destroying a context
 * with live queues, memory, modules or events is WEFT_EBUSY.
 */
struct weft__context {
    const weft__driver *drv;
    weft__device *dev;
    /* kept by dispatch.c */
    long live;                /* queues + mems + modules + events alive */
    weft__queue *dead_queues; /* destroyed queues, freed with the context */
};

/* Roles let a driver pick an engine or stream priority. */
typedef enum weft__queue_role {
    WEFT__QUEUE_COMPUTE = 0,
    WEFT__QUEUE_H2D = 1,
    WEFT__QUEUE_D2H = 2,
    WEFT__QUEUE_PEER = 3,
} weft__queue_role;

typedef struct weft__queue_desc {
    weft__queue_role role;
    int priority;       /* within [queue_priority_low, _high]; 0 default */
    unsigned profiling; /* 1: events recorded on it can time */
} weft__queue_desc;

struct weft__queue {
    const weft__driver *drv;
    weft__context *ctx;
    weft__queue_desc desc;
    /* kept by dispatch.c */
    unsigned destroyed;
    weft__queue *next_dead;
};

typedef enum weft__mem_kind {
    WEFT__MEM_DEVICE = 1,     /* device memory */
    WEFT__MEM_PINNED = 2,     /* page-locked host memory made by the driver */
    WEFT__MEM_REGISTERED = 3, /* user host memory registered with the driver */
} weft__mem_kind;

/*
 * Memory. host is the host address of PINNED and REGISTERED memory (NULL
 * for DEVICE memory). Copies and kernel arguments name memory by (mem,
 * offset), never by raw address, so that cl_mem and CUdeviceptr look alike.
 * Pinned and registered memory may be used as the host side of copies by
 * passing mem->host + offset, which runs at pinned speed where the driver
 * can tell.
 */
struct weft__mem {
    const weft__driver *drv;
    weft__context *ctx;
    weft__mem_kind kind;
    size_t size;
    void *host;
    /* DEVICE memory the program allocated (mem_wrap): mem_free releases
     * weft's handle on it, never the memory. */
    unsigned borrowed;
};

/* Where a module comes from. */
typedef enum weft__source_kind {
    WEFT__SRC_HOST_TABLE = 1, /* weft_host_kernel[]: host and sim */
    WEFT__SRC_OPENCL_C,       /* OpenCL C source text */
    WEFT__SRC_SPIRV,          /* SPIR-V / IL bytes */
    WEFT__SRC_CL_BINARY,      /* an OpenCL device binary */
    WEFT__SRC_CUDA_CXX,       /* CUDA C++ source, compiled with NVRTC */
    WEFT__SRC_PTX,            /* PTX text */
    WEFT__SRC_CUBIN,          /* cubin bytes */
    WEFT__SRC_FATBIN,         /* fatbin bytes */
    WEFT__SRC_HOST_C,         /* C from portable source (hostcc.h) */
    WEFT__SRC_HOST_SO,        /* the shared object built from HOST_C */
} weft__source_kind;

typedef struct weft__module_source {
    weft__source_kind kind;
    /*
     * Bytes or text. For HOST_TABLE: a const weft_host_kernel * and size is
     * the number of kernels. For text kinds size may be 0 (then the text is
     * NUL-terminated).
     */
    const void *data;
    size_t size;
    const char *options; /* compiler options, or NULL */
    const char *name;    /* for messages ("saxpy.cl"), or NULL */
} weft__module_source;

/*
 * build_log: what the compiler said of a build from source, warnings
 * included (OpenCL: clGetProgramBuildInfo's log; CUDA: NVRTC's, then the
 * PTX JIT's info log), NUL-terminated and weft__malloc'd, set by
 * module_create and weft__free'd by module_destroy (the driver's); NULL
 * where nothing was said. dispatch.c replaces it, for a module loaded from
 * the compiled-kernel cache, with the log stored beside the binary (that
 * of the build that made it).
 */
struct weft__module {
    const weft__driver *drv;
    weft__context *ctx;
    weft__source_kind kind;
    char *build_log;
};

/*
 * A kernel belongs to its module and lives until the module is destroyed;
 * looking up the same name twice may return the same object.
 * nparams/params/param_sizes describe the parameter list where the driver
 * can tell it (params_known = 1); then launches are checked against it.
 * With params == NULL only sizes are known: an 8-byte scalar passed where
 * a buffer goes cannot be told from a buffer and is not caught. Where only
 * the number of parameters is known (count_known = 1, params_known = 0),
 * launches are checked against that number.
 */
struct weft__kernel {
    const weft__driver *drv;
    weft__module *module;
    const char *name;
    unsigned params_known;
    unsigned count_known;
    unsigned nparams;
    const weft_param_type *params; /* may be NULL if only sizes are known */
    const size_t *param_sizes;     /* bytes each parameter takes */
    /* Where the count is known but not every type: each parameter's type,
     * 0 (WEFT_PARAM_UNKNOWN) where unknown; may be NULL. */
    const weft_param_type *some_params;
};

/* A launch grid: groups in each dimension and items per group. */
typedef struct weft__grid {
    uint32_t groups[3];
    uint32_t group_size[3];
    uint32_t shared_bytes; /* dynamic group-local memory (CUDA) */
} weft__grid;

/* One kernel argument at launch. */
typedef struct weft__karg {
    weft_param_type type;
    /* value bytes for scalars/BYTES, scratch bytes for LOCAL; for buffers
     * the bytes the kernel may touch from offset (0: unknown) */
    size_t size;
    union {
        struct {
            weft__mem *mem; /* DEVICE memory of the queue's context */
            size_t offset;
        } buf;
        const void *value; /* scalars and BYTES: points at size bytes */
    } u;
    unsigned access; /* buffers: WEFT_READ | WEFT_WRITE (0: unknown) */
    /*
     * Buffers given as a block (rows * slices > 1): the bytes the kernel
     * may touch are rows of width bytes, row_pitch apart, slices
     * slice_pitch apart, from offset (size is their span); else 0s. For
     * the sim's hazard check; drivers pass the address alone.
     */
    size_t width, rows, slices, row_pitch, slice_pitch;
} weft__karg;

enum {
    WEFT__EVENT_TIMING = 1, /* the event can be used with event_elapsed */
};

struct weft__event {
    const weft__driver *drv;
    weft__context *ctx;
    unsigned flags;
};

typedef void weft__host_fn(void *user);

/*
 * A rectangular block copy (2-D or 3-D): width bytes per row, height rows
 * per slice, depth slices. Each side is at its memory's (or host
 * pointer's) byte off, and row r of slice z at off + z * slice_pitch + r *
 * row_pitch. The checked entry points (rect.c) hand the drivers a
 * block with every extent > 0, row_pitch >= width, slice_pitch >=
 * row_pitch * height on both sides, and both sides inside their memory;
 * contiguous rows and slices folded (row_pitch == width on both sides:
 * one row of width * height bytes; single-row slices: rows). A block that
 * is then one contiguous range goes to the 1-D copy: a driver's rect
 * operation sees height * depth > 1.
 */
typedef struct weft__rect_side {
    size_t off;
    size_t row_pitch;
    size_t slice_pitch;
} weft__rect_side;

typedef struct weft__rect {
    weft__rect_side dst, src;
    size_t width;  /* bytes per row */
    size_t height; /* rows per slice */
    size_t depth;  /* slices */
} weft__rect;

/* Bytes the block moves. */
static inline uint64_t weft__rect_bytes(const weft__rect *r)
{
    return (uint64_t)r->width * r->height * r->depth;
}

/* Bytes from a side's first byte to one past its last. */
static inline size_t weft__rect_span(const weft__rect *r,
                                     const weft__rect_side *s)
{
    return (r->depth - 1) * s->slice_pitch + (r->height - 1) * s->row_pitch +
           r->width;
}

/*
 * A block of addresses (lo, then rows of width bytes row_pitch apart,
 * height per slice, depth slices slice_pitch apart), for overlap tests;
 * pitches as in weft__rect (rows of one block never overlap).
 */
typedef struct weft__block {
    uintptr_t lo;
    size_t width, height, depth;
    size_t row_pitch, slice_pitch;
} weft__block;

/* 1 if a and b share a byte, else 0 (linear in their rows). */
int weft__block_overlap(const weft__block *a, const weft__block *b);

/*
 * Native nodes. What the program's function is handed of a queue
 * (native_call): the driver's own context, device and queue (CUcontext,
 * CUdevice as an integer, CUstream; cl_context, cl_device_id,
 * cl_command_queue; the sim's weft objects, for tests; NULL on the host).
 */
typedef struct weft__native_queue {
    void *context;
    void *device;
    void *queue;
} weft__native_queue;

/* Where (mem, offset) is for such a function (native_mem). */
typedef struct weft__native_mem {
    uint64_t address; /* CUdeviceptr; where memory is host memory, its
                         host address; else 0 */
    void *mem;        /* cl_mem, or the sim's weft__mem; else NULL */
    size_t offset;    /* of the range in mem */
    void *host;       /* host address where memory is host memory */
} weft__native_mem;

typedef int weft__native_fn(const weft__native_queue *nq, void *user);

/* Options that the runtime passes to every driver's discovery. */
typedef struct weft__driver_config {
    const char *sim_config; /* "devices=2,mem=16G,..." or NULL */
    unsigned host_devices;  /* 0: default */
    unsigned host_threads;  /* 0: default */
    /* The sim's real_data where its configuration does not say: 1 for a
     * runtime's, a driver test's own choice otherwise. */
    unsigned sim_real_data;
} weft__driver_config;

/* ---- the table --------------------------------------------------------- */

struct weft__driver {
    const char *name; /* "cuda", "opencl", "host", "sim" */

    /*
     * Capabilities, for the layers above, which never compare driver
     * identities. memory_is_host: device memory is host memory (a copy is
     * a memcpy), so registering or staging host memory buys nothing and a
     * graph with no kernels runs best there. virtual_time: the devices run
     * in virtual time, their links as configured (nothing to measure).
     * source_kinds: the module variant kinds the driver takes, best first,
     * 0-terminated. portable_kind: what WEFT_SOURCE_PORTABLE is translated
     * to for it (portable.c), 0 if it takes no portable source.
     */
    unsigned memory_is_host;
    unsigned virtual_time;
    const weft_source_kind *source_kinds;
    weft__source_kind portable_kind;

    /*
     * Discovery. platforms_open loads the driver (dlopen of libcuda or
     * of the OpenCL ICD loader) and finds its platforms and devices; a missing
     * library is WEFT_ENOTSUP with a detail saying what is missing, and leaves
     * nothing behind. platforms_close frees what platforms_open made; every
     * context must have been destroyed first.
     */
    int (*platforms_open)(const weft__driver_config *cfg,
                          weft__platform ***platforms, unsigned *nplatforms);
    void (*platforms_close)(weft__platform **platforms, unsigned nplatforms);
    /* *can = 1 if a and b (both of this driver) can copy peer-to-peer. */
    int (*can_access_peer)(weft__device *a, weft__device *b, int *can);

    int (*context_create)(weft__device *dev, weft__context **ctx);
    void (*context_destroy)(weft__context *ctx);

    int (*queue_create)(weft__context *ctx, const weft__queue_desc *desc,
                        weft__queue **q);
    /* Wait until all work on q has completed. */
    int (*queue_sync)(weft__queue *q);
    /*
     * Wait for q's work, then release what the driver holds. The object
     * itself is freed later by dispatch.c (weft__free), so that a stale
     * handle answers WEFT_EDESTROYED.
     */
    void (*queue_release)(weft__queue *q);

    /* DEVICE memory; WEFT_EDEVMEM when the device is out of memory. */
    int (*mem_alloc)(weft__context *ctx, size_t size, weft__mem **mem);
    /* PINNED memory; m->host is set. */
    int (*host_alloc)(weft__context *ctx, size_t size, weft__mem **mem);
    /* REGISTERED memory over [ptr, ptr + size); m->host == ptr. */
    int (*host_register)(weft__context *ctx, void *ptr, size_t size,
                         weft__mem **mem);
    /* Frees any kind. The memory must not be in use by queued work. */
    void (*mem_free)(weft__mem *mem);
    /*
     * Optional: DEVICE memory over the program's own allocation, handle
     * (a CUdeviceptr; a cl_mem; a host pointer; the sim's weft__mem),
     * whose bytes [off, off + size) are to be used: *mem and *moff, the
     * offset of byte off in *mem. The driver checks what it can (a cl_mem
     * of ctx's cl_context, a CUdeviceptr of ctx's device, the range inside
     * the allocation); mem_free releases only what the wrap took.
     */
    int (*mem_wrap)(weft__context *ctx, uint64_t handle, size_t off,
                    size_t size, weft__mem **mem, size_t *moff);
    /*
     * Optional: what the calling thread has seen complete on dev's platform
     * (host_seen), as a token that another thread takes in (host_join)
     * when work that the first thread ordered moves to it: the sim, whose
     * model of the host is a virtual clock per thread, needs it; a driver
     * whose devices run in real time leaves both NULL (a mutex between the
     * threads orders them already).
     */
    uint64_t (*host_seen)(const weft__device *dev);
    void (*host_join)(const weft__device *dev, uint64_t seen);
    /*
     * Optional: 1 if [ptr, ptr + size) is page-locked memory the device
     * copies from in place (however the program got it), else 0. Without
     * it weft treats host memory it did not pin itself as pageable.
     */
    int (*host_is_pinned)(weft__context *ctx, const void *ptr, size_t size);
    /*
     * Optional, together (CUDA IPC): ipc_export writes into handle the
     * WEFT__IPC_DRV_SIZE-byte handle of the allocation holding byte off of
     * m (DEVICE memory), and in *base_off that byte's offset from the
     * allocation's first byte; ipc_open maps a handle that another process
     * exported into ctx's device (*ptr: the allocation's first byte there);
     * ipc_close unmaps a pointer that ipc_open returned.
     */
    int (*ipc_export)(weft__mem *m, size_t off, unsigned char *handle,
                      size_t *base_off);
    int (*ipc_open)(weft__context *ctx, const unsigned char *handle,
                    uint64_t *ptr);
    int (*ipc_close)(weft__context *ctx, uint64_t ptr);

    int (*copy_h2d)(weft__queue *q, weft__mem *dst, size_t dst_off,
                    const void *src, size_t size);
    int (*copy_d2h)(weft__queue *q, void *dst, weft__mem *src, size_t src_off,
                    size_t size);
    /* Both on the queue's device. */
    int (*copy_d2d)(weft__queue *q, weft__mem *dst, size_t dst_off,
                    weft__mem *src, size_t src_off, size_t size);
    /*
     * dst and src on different devices of this driver (either may be the
     * queue's); WEFT_ENOTSUP where can_access_peer says 0 and the driver
     * has no way of its own.
     */
    int (*copy_peer)(weft__queue *q, weft__mem *dst, size_t dst_off,
                     weft__mem *src, size_t src_off, size_t size);
    /*
     * Fill size bytes at off with a pattern of pattern_size bytes (1, 2 or
     * 4); off and size are multiples of pattern_size.
     */
    int (*fill)(weft__queue *q, weft__mem *dst, size_t off, const void *pattern,
                size_t pattern_size, size_t size);
    /*
     * Rectangular copies (optional, each on its own): the block r (see
     * weft__rect; the host pointer is the base its side's off is from)
     * between host and device memory, within the queue's device, and
     * between devices (as copy_peer). A driver may decline a block
     * (pageable host memory it would have to stage, a pitch its API
     * refuses) by returning 1 having enqueued nothing; then, as where the
     * operation is NULL, rect.c enqueues the block one contiguous row
     * at a time through copy_h2d, copy_d2h, copy_d2d or copy_peer.
     */
    int (*copy_h2d_rect)(weft__queue *q, weft__mem *dst, const void *src,
                         const weft__rect *r);
    int (*copy_d2h_rect)(weft__queue *q, void *dst, weft__mem *src,
                         const weft__rect *r);
    int (*copy_d2d_rect)(weft__queue *q, weft__mem *dst, weft__mem *src,
                         const weft__rect *r);
    int (*copy_peer_rect)(weft__queue *q, weft__mem *dst, weft__mem *src,
                          const weft__rect *r);

    /*
     * Load or build a module; WEFT_ENOTSUP for a source kind this driver or
     * device cannot take, WEFT_EBUILD with the build log in the detail.
     */
    int (*module_create)(weft__context *ctx, const weft__module_source *src,
                         weft__module **mod);
    void (*module_destroy)(weft__module *mod);
    /*
     * Optional: the device binary of a module built from source, for the
     * compiled-kernel cache: *bytes (weft__malloc'd, the caller frees) can
     * be given back to module_create as source kind *kind on the same
     * device and driver version. WEFT_ENOTSUP if there is none.
     */
    int (*module_binary)(weft__module *mod, void **bytes, size_t *size,
                         weft__source_kind *kind);
    /* WEFT_ENOTFOUND with the name in the detail if there is no such kernel. */
    int (*kernel_get)(weft__module *mod, const char *name, weft__kernel **k);
    /*
     * Enqueue k over grid with nargs arguments (checked by dispatch.c
     * against the kernel's parameters when params_known).
     */
    int (*launch)(weft__queue *q, weft__kernel *k, const weft__grid *grid,
                  const weft__karg *args, unsigned nargs);

    int (*event_create)(weft__context *ctx, unsigned flags, weft__event **ev);
    int (*event_record)(weft__event *ev, weft__queue *q);
    /* Later work on q waits for ev (which may belong to another device). */
    int (*queue_wait_event)(weft__queue *q, weft__event *ev);
    /* 0 if complete (or never recorded), WEFT_ENOTREADY if not yet. */
    int (*event_query)(weft__event *ev);
    /* Block the calling thread until ev completes. */
    int (*event_sync)(weft__event *ev);
    /*
     * Nanoseconds between two completed TIMING events, recorded in that
     * order.
     */
    int (*event_elapsed)(weft__event *start, weft__event *end, uint64_t *ns);
    void (*event_destroy)(weft__event *ev);

    int (*host_fn)(weft__queue *q, weft__host_fn *fn, void *user);

    /*
     * Native nodes (optional: both or neither; none means no native node
     * goes to the driver's devices). native_call calls fn once, on the
     * calling thread, with q's native handles (the device's context
     * current where the driver has that notion), and returns what fn
     * returned: 0, or non-zero for a failure (which the caller reports).
     * What fn enqueued on the native queue is q's work from then on:
     * events recorded on q after the call cover it. A driver with no
     * native queue to hand (the host's) first waits for q's work and
     * passes a NULL queue; fn's work is done when it returns. native_mem
     * says where (m, off) of DEVICE memory is for fn.
     */
    int (*native_call)(weft__queue *q, weft__native_fn *fn, void *user);
    void (*native_mem)(weft__mem *m, size_t off, weft__native_mem *out);
    /*
     * Optional, where the driver has no native queue to hand but threads
     * of its own (the host's): fn is called later, on a thread of the
     * driver, as q's next operation (once q's earlier work is done; q's
     * later work waits for it), with a NULL queue, and user must live
     * until it has run. Returns 0 once enqueued. A non-zero return of fn
     * is q's error: its next queue_sync returns it (with the detail fn
     * set). On a queue in a capture, as native_call.
     */
    int (*native_enqueue)(weft__queue *q, weft__native_fn *fn, void *user);
    /*
     * 1 where native_call on a queue in a capture (graph_begin) puts the
     * function's work into the graph: CUDA and the sim call fn, whose
     * work on the capturing queue is captured (CUDA fails the call where
     * fn ended or invalidated the capture); the host driver calls
     * nothing then and makes a node that calls fn(nq, user) at each
     * launch of the graph, so user must outlive the graph (a non-zero
     * return there is the queue's error: its next queue_sync returns
     * it). 0 (OpenCL): a plan with a native node gets no tape.
     */
    unsigned native_capture;
    /* ctx's context and device, as native_call gives them (no queue);
     * optional: none means NULLs */
    void (*native_context)(weft__context *ctx, weft__native_queue *out);

    /*
     * External events (optional): the program's own, as the driver's
     * handle (CUevent; cl_event; for the host and sim drivers, which have
     * no public events, a weft__event of theirs, for tests).
     * external_wait: later work on q waits for ev, as queue_wait_event (an
     * OpenCL event of another context is bridged). external_record: ev
     * completes once q's work so far has (CUDA: cuEventRecord, which
     * re-targets it; OpenCL: ev is a user event, set complete then, once).
     * external_mark: a marker of the work on the program's own queue now
     * (a CUstream, NULL being the default stream; a cl_command_queue; a
     * weft__queue of the driver's), made on the calling thread;
     * external_mark_end waits for it on the host when wait is 1 (the
     * error returned), and frees it in any case.
     */
    int (*external_wait)(weft__queue *q, void *ev);
    int (*external_record)(weft__queue *q, void *ev);
    int (*external_mark)(void *queue, void **mark);
    int (*external_mark_end)(void *mark, int wait);

    /*
     * Native graphs (optional; NULL where the driver has none).
     * graph_supported says whether dev can make them at all (an OpenCL
     * device needs cl_khr_command_buffer); NULL means yes. graph_begin
     * starts capturing what is enqueued on q (and on queues that wait for
     * events recorded on it) instead of running it. graph_end stops and,
     * with graph not NULL, makes the capture an executable graph (with
     * graph NULL it only ends a capture that failed): where old is not
     * NULL (a graph of the same queue from an earlier capture, which the
     * driver then owns) it first tries to update old in place to the new
     * capture (the same operations, other scalar arguments or memory) and
     * gives old back in *graph; where that cannot be done old is destroyed
     * and a new graph is made. *updated (when not NULL) says which.
     * graph_launch runs it on q; graph_destroy frees it. The
     * scheduler's tape (src/sched/tape.h) makes them, through the
     * checked entry points. Callers join every queue of a capture back into
     * the first before graph_end (CUDA and the sim refuse a capture that
     * leaves one unjoined; the host driver, whose graphs run on one queue,
     * takes it), and launch a graph again only once its last launch has
     * completed (the tape waits for each; the host driver refuses an
     * earlier one with WEFT_EBUSY, CUDA and the sim queue it).
     */
    int (*graph_supported)(const weft__device *dev);
    /*
     * 1 where the driver's graphs pay on CPU devices too: the host
     * driver's graph launch is one hand-off to a queue's runner instead of
     * one per operation. PoCL's command buffers replay slower than their
     * commands run one by one, so OpenCL leaves it 0.
     */
    unsigned graphs_on_cpu;
    /*
     * Graphs of several devices (optional). CUDA's capture across devices
     * ends in CUDA_ERROR_STREAM_CAPTURE_INVALIDATED (2x H200, CUDA 13), so
     * the tape makes one graph per device and joins them by events: in a
     * capture, graph_record_external(ev, q) makes a node that records ev
     * at each launch of the graph (for graphs of other devices), and
     * graph_wait_external(q, ev) a node that waits for ev. Such a wait
     * waits for the record of ev that was latest when its graph was
     * launched, as cuStreamWaitEvent does when it is called (a graph
     * launched before the one that records ev does not wait for that
     * record: tests/gpu/event_nodes.cu showed it on 2x H200), so the
     * graphs must be launched in an order that puts every record first.
     * NULL where a driver's graphs cannot wait for each other (OpenCL:
     * a command buffer belongs to one queue's device): the tape keeps
     * such plans to one device.
     */
    int (*graph_record_external)(weft__event *ev, weft__queue *q);
    int (*graph_wait_external)(weft__queue *q, weft__event *ev);
    /*
     * Edges named by the caller (optional; NULL where a driver's capture
     * keeps queue order only). In a capture, graph_node_last(q, &node)
     * names the node last captured on q; graph_order(q, nodes, n) makes
     * the next node captured on q wait for those nodes (and the records
     * q waited for since) instead of q's earlier nodes: where the caller
     * knows every node that one depends on, independent nodes that share
     * a queue then run side by side. A later record on q, and a later
     * node without graph_order, still come after every node of q.
     * graph_wait_later(q, ev) is queue_wait_event for those only: the
     * nodes before ev's record (in the same capture) are waited for by
     * q's later records and nodes in queue order, not by a node that
     * graph_order gave its edges. (CUDA's cuStreamUpdateCaptureDependencies
     * would do much the same; only the host driver has them now.)
     */
    int (*graph_node_last)(weft__queue *q, uint32_t *node);
    int (*graph_order)(weft__queue *q, const uint32_t *nodes, unsigned n);
    int (*graph_wait_later)(weft__queue *q, weft__event *ev);
    /*
     * For checks (WEFT_CHECK_GRAPHS): 1 if node from of a graph made by
     * graph_end (nodes named as graph_node_last names them) finishes
     * before node to starts in every launch (a path of edges), else 0.
     */
    int (*graph_reaches)(const void *graph, uint32_t from, uint32_t to);
    int (*graph_begin)(weft__queue *q);
    int (*graph_end)(weft__queue *q, void *old, void **graph, int *updated);
    int (*graph_launch)(void *graph, weft__queue *q);
    void (*graph_destroy)(void *graph);
};

/* The drivers compiled in, in discovery order (cuda, opencl, host, sim). */
extern const weft__driver weft__driver_cuda;
extern const weft__driver weft__driver_opencl;
extern const weft__driver weft__driver_host;
extern const weft__driver weft__driver_sim;

/* ---- the checked entry points (dispatch.c) ----------------------------- */
/*
 * Same arguments and meaning as the table; each checks what can be checked
 * without the driver (NULL, wrong driver, ranges, zero sizes, destroyed
 * queue, argument count and sizes), honours failure injection at site
 * "<driver>.<op>", and keeps the context's count of live objects.
 */
int weft__drv_context_create(weft__device *dev, weft__context **ctx);
int weft__drv_context_destroy(weft__context *ctx);
int weft__drv_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                           weft__queue **q);
int weft__drv_queue_destroy(weft__queue *q);
int weft__drv_mem_alloc(weft__context *ctx, size_t size, weft__mem **mem);
int weft__drv_host_alloc(weft__context *ctx, size_t size, weft__mem **mem);
int weft__drv_host_register(weft__context *ctx, void *ptr, size_t size,
                            weft__mem **mem);
int weft__drv_mem_free(weft__mem *mem);
/* The table's mem_wrap (WEFT_ENOTSUP without); *mem is borrowed. */
int weft__drv_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                       size_t size, weft__mem **mem, size_t *moff);
/* The bytes of a driver's IPC handle (a CUipcMemHandle's). */
#define WEFT__IPC_DRV_SIZE 64
/*
 * The table's ipc_export, ipc_open and ipc_close (WEFT_ENOTSUP, naming the
 * driver, without them); weft__drv_has_ipc: whether dev's driver has them.
 */
int weft__drv_has_ipc(const weft__device *dev);
int weft__drv_ipc_export(weft__mem *m, size_t off, unsigned char *handle,
                         size_t *base_off);
int weft__drv_ipc_open(weft__context *ctx, const unsigned char *handle,
                       uint64_t *ptr);
int weft__drv_ipc_close(weft__context *ctx, uint64_t ptr);
/* 1 if the driver says ptr..ptr+size is pinned for ctx's device, else 0. */
int weft__drv_host_is_pinned(weft__context *ctx, const void *ptr, size_t size);
/* The table's host_seen and host_join; 0 and nothing where it has none. */
uint64_t weft__drv_host_seen(const weft__device *dev);
void weft__drv_host_join(const weft__device *dev, uint64_t seen);
int weft__drv_module_create(weft__context *ctx, const weft__module_source *src,
                            weft__module **mod);
int weft__drv_module_destroy(weft__module *mod);
int weft__drv_kernel_get(weft__module *mod, const char *name, weft__kernel **k);
int weft__drv_event_create(weft__context *ctx, unsigned flags,
                           weft__event **ev);
int weft__drv_event_destroy(weft__event *ev);
/*
 * Whether dev's driver has native graphs (every graph operation) and dev
 * can make them (the table's graph_supported).
 */
int weft__drv_graph_supported(const weft__device *dev);
/* graph_destroy of ctx's driver; NULL graph is ignored. */
void weft__drv_graph_destroy(weft__context *ctx, void *graph);
/* Whether dev's driver has native nodes (native_call and native_mem). */
int weft__drv_native_supported(const weft__device *dev);
/* The table's native_context; zeros where the driver has none. */
void weft__drv_native_context(weft__context *ctx, weft__native_queue *out);
/* The table's native_mem; zeros where the driver has none. */
void weft__drv_native_mem(weft__mem *m, size_t off, weft__native_mem *out);
/*
 * Rectangular copies (rect.c): the block *r (pitches of 0 mean packed:
 * row_pitch width, slice_pitch row_pitch * height) checked (extents, pitches,
 * both sides inside their memory, the host pointer not NULL, the two sides of
 * one memory disjoint), then the driver's operation, or one copy per
 * contiguous row where the driver has none or declines the block. A block
 * with an extent of 0 enqueues nothing. Failure injection at
 * "<driver>.<op>" as the 1-D copies. Where rows are enqueued one by one, a
 * failure after the first leaves the earlier rows enqueued (the block's
 * bytes are then undefined); every other failure enqueues nothing.
 * weft__drv_rect_rows (tests): 1 makes every block go row by row.
 */
int weft__drv_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                            const weft__rect *r);
int weft__drv_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                            const weft__rect *r);
int weft__drv_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                            const weft__rect *r);
int weft__drv_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r);
/*
 * The checks alone, as weft__drv_check_<op>: < 0 the error, 1 nothing to
 * do, 0 the call would go on; then *out (not NULL) holds the block the
 * driver would see (pitches filled in, contiguous rows folded).
 */
int weft__drv_check_copy_h2d_rect(weft__queue *q, weft__mem *dst,
                                  const void *src, const weft__rect *r,
                                  weft__rect *out);
int weft__drv_check_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                                  const weft__rect *r, weft__rect *out);
int weft__drv_check_copy_d2d_rect(weft__queue *q, weft__mem *dst,
                                  weft__mem *src, const weft__rect *r,
                                  weft__rect *out);
int weft__drv_check_copy_peer_rect(weft__queue *q, weft__mem *dst,
                                   weft__mem *src, const weft__rect *r,
                                   weft__rect *out);
extern unsigned weft__drv_rect_rows;

/* The table's external_mark and _end for drv (WEFT_ENOTSUP without). */
int weft__drv_external_mark(const weft__driver *drv, void *queue, void **mark);
int weft__drv_external_mark_end(const weft__driver *drv, void *mark, int wait);

/*
 * The operations on queues, events and graphs, one table:
 * X(op, parameters, arguments, the object whose driver runs it, inject).
 * For each, dispatch.c defines
 *   int weft__drv_<op>(parameters): the checked call (the operation's own
 *     checks, then the missing-operation error, then, where inject is 1,
 *     failure injection at "<driver>.<op>", then the driver);
 *   int weft__drv_check_<op>(parameters): the checks alone: < 0 the error
 *     the call would return, 1 nothing to do (a copy of 0 bytes: the call
 *     returns 0 without calling the driver), 0 the call would go on.
 * The graph operations inject nothing: a driver's own sites cover them.
 */
#define WEFT__DRV_CALLS(X)                                                     \
    X(queue_sync, (weft__queue * q), (q), q, 1)                                \
    X(copy_h2d,                                                                \
      (weft__queue * q, weft__mem * dst, size_t dst_off, const void *src,      \
       size_t size),                                                           \
      (q, dst, dst_off, src, size), q, 1)                                      \
    X(copy_d2h,                                                                \
      (weft__queue * q, void *dst, weft__mem *src, size_t src_off,             \
       size_t size),                                                           \
      (q, dst, src, src_off, size), q, 1)                                      \
    X(copy_d2d,                                                                \
      (weft__queue * q, weft__mem * dst, size_t dst_off, weft__mem * src,      \
       size_t src_off, size_t size),                                           \
      (q, dst, dst_off, src, src_off, size), q, 1)                             \
    X(copy_peer,                                                               \
      (weft__queue * q, weft__mem * dst, size_t dst_off, weft__mem * src,      \
       size_t src_off, size_t size),                                           \
      (q, dst, dst_off, src, src_off, size), q, 1)                             \
    X(fill,                                                                    \
      (weft__queue * q, weft__mem * dst, size_t off, const void *pattern,      \
       size_t pattern_size, size_t size),                                      \
      (q, dst, off, pattern, pattern_size, size), q, 1)                        \
    X(launch,                                                                  \
      (weft__queue * q, weft__kernel * k, const weft__grid *grid,              \
       const weft__karg *args, unsigned nargs),                                \
      (q, k, grid, args, nargs), q, 1)                                         \
    X(event_record, (weft__event * ev, weft__queue * q), (ev, q), q, 1)        \
    X(queue_wait_event, (weft__queue * q, weft__event * ev), (q, ev), q, 1)    \
    X(event_query, (weft__event * ev), (ev), ev, 0)                            \
    X(event_sync, (weft__event * ev), (ev), ev, 1)                             \
    X(event_elapsed, (weft__event * start, weft__event * end, uint64_t * ns),  \
      (start, end, ns), start, 0)                                              \
    X(host_fn, (weft__queue * q, weft__host_fn * fn, void *user),              \
      (q, fn, user), q, 1)                                                     \
    X(native_call, (weft__queue * q, weft__native_fn * fn, void *user),        \
      (q, fn, user), q, 1)                                                     \
    X(native_enqueue, (weft__queue * q, weft__native_fn * fn, void *user),     \
      (q, fn, user), q, 1)                                                     \
    X(external_wait, (weft__queue * q, void *ev), (q, ev), q, 1)               \
    X(external_record, (weft__queue * q, void *ev), (q, ev), q, 1)             \
    X(graph_begin, (weft__queue * q), (q), q, 0)                               \
    X(graph_end, (weft__queue * q, void *old, void **graph, int *updated),     \
      (q, old, graph, updated), q, 0)                                          \
    X(graph_launch, (void *graph, weft__queue *q), (graph, q), q, 0)           \
    X(graph_record_external, (weft__event * ev, weft__queue * q), (ev, q), q,  \
      0)                                                                       \
    X(graph_wait_external, (weft__queue * q, weft__event * ev), (q, ev), q, 0) \
    X(graph_node_last, (weft__queue * q, uint32_t * node), (q, node), q, 0)    \
    X(graph_order, (weft__queue * q, const uint32_t *nodes, unsigned n),       \
      (q, nodes, n), q, 0)                                                     \
    X(graph_wait_later, (weft__queue * q, weft__event * ev), (q, ev), q, 0)

#define WEFT__DRV_DECLARE(op, params, args, obj, inject)                       \
    int weft__drv_##op params;                                                 \
    int weft__drv_check_##op params;
WEFT__DRV_CALLS(WEFT__DRV_DECLARE)
#undef WEFT__DRV_DECLARE

/* ---- helpers for driver implementations -------------------------------- */
/*
 * Failure injection inside a driver: before each call into the vendor
 * library or the OS that can fail, a driver writes
 *     if (weft__fault("cuda.cuMemAlloc")) { rc = CUDA_ERROR_OUT_OF_MEMORY; }
 *     else rc = cu.MemAlloc(...);
 * so that its own clean-up paths are exercised by the tests.
 */

/*
 * External events for a driver with no public events of its own (host,
 * sim): the program's event is a weft__event of the driver, its queue a
 * weft__queue (tests reach them through the internal headers). The
 * table's external_* operations, over the checked entry points.
 */
int weft__drv_own_external_wait(weft__queue *q, void *ev);
int weft__drv_own_external_record(weft__queue *q, void *ev);
int weft__drv_own_external_mark(void *queue, void **mark);
int weft__drv_own_external_mark_end(void *mark, int wait);

/* Sizes of the launch: total items; 0 if any dimension is 0. */
static inline uint64_t weft__grid_items(const weft__grid *g)
{
    return (uint64_t)g->groups[0] * g->groups[1] * g->groups[2] *
           g->group_size[0] * g->group_size[1] * g->group_size[2];
}

#endif /* WEFT_DRIVER_H */
