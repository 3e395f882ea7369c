/*
 * weft: a task-graph runtime for GPUs.
 *
 * This is the one public header. Every function returns 0 on success or a
 * negative WEFT_E... code on failure; a call that fails changes nothing, and
 * weft_last_error() then says what happened on the calling thread.
 *
 * Handles are opaque. Unless a function says otherwise it is safe to call
 * from any thread.
 *
 * Lifetimes follow one rule: an object is destroyed only when nothing else
 * uses it. Destroying one that another live object uses (a runtime with
 * anything made from it, a module whose kernel a graph or executable graph
 * names, a buffer that a graph, an executable graph or a view names, a
 * mapped buffer) is refused with WEFT_EBUSY, the message naming what holds
 * it, and the object stays usable. Destroy in the reverse order of
 * creation: executable graphs, graphs, views, buffers, modules, runtime.
 * A handle must not be used once its destroy succeeded, nor destroyed by
 * one thread while another still passes it to a call.
 */
#ifndef WEFT_H
#define WEFT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(WEFT_STATIC)
#define WEFT_API
#elif defined(_WIN32)
#if defined(WEFT_BUILDING)
#define WEFT_API __declspec(dllexport)
#else
#define WEFT_API __declspec(dllimport)
#endif
#else
#define WEFT_API __attribute__((visibility("default")))
#endif

#define WEFT_VERSION_MAJOR 0
#define WEFT_VERSION_MINOR 1
#define WEFT_VERSION_PATCH 0

/* The version of the library that was loaded, as "MAJOR.MINOR.PATCH". */
WEFT_API const char *weft_version(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                   */
/* ------------------------------------------------------------------------ */

/*
 * X(name, value, message). One table: the enum, weft_strerror() and
 * weft_err_name() are all generated from it.
 */
#define WEFT_ERRNO_MAP(X)                                                      \
    X(EINVAL, -1, "invalid argument")                                          \
    X(ENOMEM, -2, "out of host memory")                                        \
    X(EDEVMEM, -3, "out of device memory")                                     \
    X(ENODEV, -4, "no such device")                                            \
    X(ENOTSUP, -5, "not supported by this device or driver")                   \
    X(EBUSY, -6, "object is in use")                                           \
    X(ENOTFOUND, -7, "not found")                                              \
    X(ERANGE, -8, "range out of bounds")                                       \
    X(EARGS, -9, "kernel arguments do not match the kernel")                   \
    X(EBUILD, -10, "kernel compilation failed")                                \
    X(EDRIVER, -11, "driver error")                                            \
    X(EDESTROYED, -12, "object was destroyed")                                 \
    X(ENOTREADY, -13, "not complete yet")                                      \
    X(ETIMEDOUT, -14, "timed out")                                             \
    X(EIO, -15, "input/output error")                                          \
    X(ECYCLE, -16, "dependency cycle")                                         \
    X(ECANCELED, -17, "canceled because a dependency failed")                  \
    X(EDEVLOST, -18, "device lost")                                            \
    X(ESTATE, -19, "operation not valid in the object's current state")        \
    X(EINTERNAL, -20, "internal error in weft")

typedef enum weft_errno {
    WEFT_OK = 0,
#define WEFT__ERRNO_ENUM(name, value, msg) WEFT_##name = (value),
    WEFT_ERRNO_MAP(WEFT__ERRNO_ENUM)
#undef WEFT__ERRNO_ENUM
} weft_errno;

/* A short message for an error code ("out of device memory"). Never NULL. */
WEFT_API const char *weft_strerror(int err);
/* The name of an error code ("WEFT_EDEVMEM"). Never NULL. */
WEFT_API const char *weft_err_name(int err);

/*
 * What the last failing weft call on this thread said: the weft code, the
 * driver involved (or NULL), the driver's own code and name where there was
 * one, and a message that names the object or argument concerned.
 */
typedef struct weft_error_detail {
    int code;                /* the weft error code, or 0 */
    const char *driver;      /* "cuda", "opencl", "host", "sim" or NULL */
    long driver_code;        /* CUresult, cl_int, errno...; 0 if none */
    const char *driver_name; /* e.g. "CUDA_ERROR_OUT_OF_MEMORY", or "" */
    const char *message;     /* the whole detail, never NULL */
} weft_error_detail;

/*
 * The detail of the last error on this thread, as one line (never NULL;
 * empty if no call failed yet). The string stays valid until the next weft
 * call on this thread.
 */
WEFT_API const char *weft_last_error(void);
/* The same as a structure; the pointers stay valid as for weft_last_error(). */
WEFT_API const weft_error_detail *weft_last_error_detail(void);
/* Forget the last error on this thread. */
WEFT_API void weft_clear_error(void);

/* ------------------------------------------------------------------------ */
/* Logging                                                                  */
/* ------------------------------------------------------------------------ */

typedef enum weft_log_level {
    WEFT_LOG_TRACE = 0,
    WEFT_LOG_DEBUG = 1,
    WEFT_LOG_INFO = 2,
    WEFT_LOG_WARN = 3,
    WEFT_LOG_ERROR = 4,
    WEFT_LOG_OFF = 5,
} weft_log_level;

/*
 * A log sink. It receives one complete line without a trailing newline. It
 * may be called from any thread, also from weft's own worker threads, and
 * must not call back into weft.
 */
typedef void weft_log_fn(weft_log_level level, const char *subsystem,
                         const char *line, void *user);

/*
 * Replace the sink (NULL restores the default, which writes
 * "weft[level] subsystem: line" to stderr).
 */
WEFT_API void weft_log_set_sink(weft_log_fn *fn, void *user);
/*
 * Messages below this level are dropped. The default is WEFT_LOG_WARN, or
 * what the environment variable WEFT_LOG says: trace, debug, info, warn,
 * error or off. A call of this function overrides the environment; a
 * value that is no weft_log_level is taken as WEFT_LOG_WARN.
 */
WEFT_API void weft_log_set_level(weft_log_level level);
WEFT_API weft_log_level weft_log_get_level(void);

/* ------------------------------------------------------------------------ */
/* Kernel parameters and host kernels                                       */
/* ------------------------------------------------------------------------ */

/* The type of one kernel parameter. */
typedef enum weft_param_type {
    WEFT_PARAM_UNKNOWN = 0, /* weft_kernel_param_info: no build tells it */
    WEFT_PARAM_BUFFER = 1,  /* device memory (a pointer or cl_mem) */
    WEFT_PARAM_I32,
    WEFT_PARAM_U32,
    WEFT_PARAM_I64,
    WEFT_PARAM_U64,
    WEFT_PARAM_F32,
    WEFT_PARAM_F64,
    WEFT_PARAM_BYTES, /* a plain struct passed by value, of a given size */
    WEFT_PARAM_LOCAL, /* group-local scratch of a given size (OpenCL) */
} weft_param_type;

/* The size in bytes of a scalar parameter type; 0 for the others. */
WEFT_API size_t weft_param_type_size(weft_param_type type);
/* "buffer", "i32", ...; "unknown" for a value that is no type. */
WEFT_API const char *weft_param_type_name(weft_param_type type);

/*
 * Where one call of a host kernel runs in the launch grid. A host kernel is
 * called once per work-group and loops over the items of its group itself,
 * so that a barrier is the end of one loop and the start of the next.
 */
typedef struct weft_host_group {
    uint32_t group[3];      /* this group's index */
    uint32_t group_size[3]; /* items per group in each dimension */
    uint32_t groups[3];     /* groups in the grid in each dimension */
} weft_host_group;

/*
 * A host kernel. args[i] is the data pointer (already offset) for a buffer
 * parameter, a pointer to the value for a scalar or BYTES parameter, and a
 * pointer to group-local scratch for a LOCAL parameter.
 */
typedef void weft_host_kernel_fn(const weft_host_group *group,
                                 void *const *args);

/*
 * The cost of one launch of a kernel on a simulated device, in nanoseconds
 * of virtual time. items is the total number of work items.
 */
typedef uint64_t weft_sim_cost_fn(uint64_t items, void *const *args,
                                  void *user);

/*
 * One kernel implemented in C: its name, its parameters, the function, and
 * for the sim driver an optional cost function (without one, the sim driver
 * charges its configured cost per work item).
 */
typedef struct weft_host_kernel {
    const char *name;
    weft_host_kernel_fn *fn;
    unsigned nparams;
    const weft_param_type *params;
    const size_t *param_sizes; /* for BYTES parameters; may be NULL */
    weft_sim_cost_fn *sim_cost;
    void *sim_cost_user;
} weft_host_kernel;

/* ------------------------------------------------------------------------ */
/* Runtime and devices                                                      */
/* ------------------------------------------------------------------------ */

typedef struct weft_runtime weft_runtime;
typedef struct weft_device weft_device;

/*
 * Options for weft_runtime_create(). Always start from
 * WEFT_RUNTIME_OPTIONS_INIT so that fields added later get their defaults.
 */
typedef struct weft_runtime_options {
    size_t size; /* sizeof(weft_runtime_options) */
    /*
     * Which devices to use: a comma-separated list of DRIVER or
     * DRIVER:INDEX or DRIVER:* entries, where DRIVER is cuda, opencl, host
     * or sim and INDEX counts that driver's devices from 0; "all" takes
     * every driver including sim. NULL means "cuda,opencl,host". The
     * environment variable WEFT_DEVICES overrides it.
     */
    const char *devices;
    /*
     * The simulated machine, as "key=value" pairs separated by commas (see
     * README.md, "The sim driver"); NULL for the default. WEFT_SIM
     * overrides it.
     */
    const char *sim_config;
    /*
     * Number of host-driver devices (default 1) and threads per host device
     * (default: the cores of the machine). WEFT_HOST_DEVICES and
     * WEFT_HOST_THREADS override them.
     */
    unsigned host_devices;
    unsigned host_threads;
    /*
     * The most device memory, in bytes, that weft holds on each device
     * for buffer replicas (0: the device's memory), counted in granules of
     * 256 bytes (README.md, "Eviction"). Beyond it weft evicts replicas; a
     * node fails with WEFT_EDEVMEM only if it needs more than the limit by
     * itself: for each buffer, the union of the ranges it touches (ranges
     * that overlap or touch count once) in whole granules. The environment
     * variable WEFT_DEVICE_MEM_LIMIT ("64M", "2G", "4096") overrides it.
     */
    uint64_t device_mem_limit;
    /*
     * How executable graphs place the kernel nodes the user did not place
     * (weft_place_policy; WEFT_PLACE_DEFAULT: heft). WEFT_PLACE ("single",
     * "round-robin", "locality", "heft") overrides it. A graph can choose
     * its own in weft_exec_options.
     */
    int place_policy;
    /*
     * Write a Chrome trace / Perfetto JSON file of everything the
     * runtime's executable graphs ran (README.md, "Traces") to this path
     * when the runtime is destroyed; NULL: no trace, and tracing costs
     * nothing. WEFT_TRACE overrides it.
     */
    const char *trace_file;
} weft_runtime_options;

#define WEFT_RUNTIME_OPTIONS_INIT                                              \
    {                                                                          \
        sizeof(weft_runtime_options), NULL, NULL, 0, 0, 0, 0, NULL             \
    }

/*
 * Find every device of every selected driver. A driver whose library is
 * missing (no libcuda, no OpenCL platform) simply contributes no devices;
 * it is an error only if the selection names it explicitly with an index
 * that does not exist. opts may be NULL.
 */
WEFT_API int weft_runtime_create(weft_runtime **rt,
                                 const weft_runtime_options *opts);
/*
 * Destroy the runtime. WEFT_EBUSY if objects created from it still live.
 * NULL is accepted and ignored.
 */
WEFT_API int weft_runtime_destroy(weft_runtime *rt);

/* The drivers that were asked for, whether or not they found devices. */
WEFT_API unsigned weft_runtime_driver_count(const weft_runtime *rt);
/*
 * Name, number of devices, and a status (0, or the error that kept the
 * driver from loading, e.g. WEFT_ENOTSUP when libcuda is absent) of one
 * driver. reason gets a line saying why a driver has no devices, or "".
 */
WEFT_API int weft_runtime_driver(const weft_runtime *rt, unsigned index,
                                 const char **name, unsigned *ndevices,
                                 int *status, const char **reason);

WEFT_API unsigned weft_runtime_device_count(const weft_runtime *rt);
/*
 * The index-th device, in driver order (cuda, opencl, host, sim); NULL,
 * with weft_last_error() saying why, for a NULL runtime or an index past
 * the last device.
 */
WEFT_API weft_device *weft_runtime_device(const weft_runtime *rt,
                                          unsigned index);

typedef enum weft_device_type {
    WEFT_DEVICE_GPU = 1,
    WEFT_DEVICE_CPU = 2,
    WEFT_DEVICE_ACCELERATOR = 3,
    WEFT_DEVICE_SIMULATED = 4,
} weft_device_type;

/* What a device is and can do. Capabilities are read here, never assumed. */
typedef struct weft_device_info {
    size_t size;           /* set by the caller to sizeof(weft_device_info) */
    const char *driver;    /* "cuda", "opencl", "host", "sim" */
    unsigned index;        /* index in weft_runtime_device() */
    unsigned driver_index; /* index among the devices of its driver */
    weft_device_type type;
    const char *name;
    const char *vendor;
    const char *platform;       /* OpenCL platform, CUDA driver, ... */
    const char *driver_version; /* as the driver reports it */
    uint64_t global_mem;        /* bytes */
    uint64_t max_alloc;         /* largest single allocation, bytes */
    uint64_t local_mem;         /* per group, bytes */
    unsigned compute_units;
    unsigned max_group_size;
    /*
     * A buffer argument of a kernel may start at an offset into its buffer
     * only if the offset is a multiple of this (OpenCL sub-buffers need the
     * device's base address alignment, often 128 bytes or more).
     */
    unsigned arg_offset_align;
    unsigned copy_engines;       /* copies that can run at once */
    unsigned concurrent_kernels; /* 1 if kernels of several queues overlap */
    unsigned timing_events;      /* 1 if events can measure elapsed time */
    unsigned pinned_host;        /* 1 if page-locked host allocation exists */
    unsigned host_register;      /* 1 if host memory can be registered */
    unsigned unified_memory;     /* 1 if device and host share memory */
    unsigned managed_memory;     /* 1 if managed (migrating) memory exists */
    unsigned svm;                /* 1 if OpenCL shared virtual memory exists */
    int queue_priority_low;      /* numerically; CUDA: 0 */
    int queue_priority_high;     /* lower is higher: CUDA, OpenCL, host, sim */
    int cc_major, cc_minor;      /* CUDA compute capability, else 0 */
    const char *pci_bus_id;      /* "0000:3b:00.0", or "" if unknown */
    int numa_node;               /* nearest NUMA node, -1 if unknown */
    const char *cpuset;          /* nearest cores, e.g. "0-15,32-47" */
    unsigned ncores;             /* number of cores in cpuset */
} weft_device_info;

/* Fill info (whose size field the caller set) for dev. */
WEFT_API int weft_device_get_info(const weft_device *dev,
                                  weft_device_info *info);

/*
 * *can is set to 1 if dev can copy to and from peer directly (NVLink, PCIe
 * peer-to-peer, or shared memory), else 0. Devices of different drivers
 * never can.
 */
WEFT_API int weft_device_can_access_peer(const weft_device *dev,
                                         const weft_device *peer, int *can);

/*
 * What weft's memory layer did since the runtime was created, summed over
 * every device. Bytes count what crossed each link; the cause fields split
 * the same bytes by why they moved. Read with weft_runtime_get_stats().
 */
typedef struct weft_stats {
    size_t size; /* set by the caller to sizeof(weft_stats) */
    /* Bytes and copies per link. */
    uint64_t h2d_bytes, d2h_bytes, peer_bytes;
    uint64_t h2d_copies, d2h_copies, peer_copies;
    /* Bytes per cause: a device needed them (a kernel or copy node, or a
     * write that had to land there), the host needed them (map, read,
     * host task, sync, destroy), or a modified replica was evicted. */
    uint64_t read_bytes, host_bytes, evict_bytes;
    /* Bytes that a node or helper needed and found valid where it ran. */
    uint64_t cached_bytes;
    /* Device replica extents evicted; of them, written back first. */
    uint64_t evictions, writebacks;
    /* Device memory pool: allocations served from the pool or needing a
     * new driver allocation, and driver bytes held now. */
    uint64_t pool_hits, pool_misses, pool_bytes;
    /* Host side of host<->device copies: bytes of pageable memory moved
     * through pinned staging, bytes copied from or to registered (pinned)
     * user memory, and the wrapped buffers registered and their bytes. */
    uint64_t staged_bytes, pinned_bytes;
    uint64_t registered_buffers, registered_bytes;
    /* Executable graphs' plans: events recorded to order work across
     * lanes and devices, and the waits on them that devices did (an edge
     * that lane order or other edges imply costs neither). */
    uint64_t plan_events, plan_waits;
    /* Times eviction waited for a device's work to end so as to free its
     * extents: each frees several at once (evictions / evict_rounds). */
    uint64_t evict_rounds;
} weft_stats;

/*
 * Fill stats (whose size field the caller set) with rt's counters. The
 * counters only grow: take differences to measure one launch. Counters of
 * work in flight may be part-way.
 */
WEFT_API int weft_runtime_get_stats(const weft_runtime *rt, weft_stats *stats);

/* ------------------------------------------------------------------------ */
/* Modules and kernels                                                      */
/* ------------------------------------------------------------------------ */

typedef struct weft_module weft_module;
typedef struct weft_kernel weft_kernel;

/* The forms a module's code can take. */
typedef enum weft_source_kind {
    /*
     * The portable dialect (README.md, "Portable kernels"): one source that
     * weft compiles as CUDA C++ for CUDA devices and as OpenCL C for
     * OpenCL devices.
     */
    WEFT_SOURCE_PORTABLE = 1,
    WEFT_SOURCE_OPENCL_C,  /* OpenCL C source text */
    WEFT_SOURCE_SPIRV,     /* SPIR-V (OpenCL devices with IL support) */
    WEFT_SOURCE_CL_BINARY, /* an OpenCL device binary */
    WEFT_SOURCE_CUDA_CXX,  /* CUDA C++ source, compiled with NVRTC */
    WEFT_SOURCE_PTX,       /* PTX text */
    WEFT_SOURCE_CUBIN,     /* a cubin */
    WEFT_SOURCE_FATBIN,    /* a fatbin */
    /*
     * C functions: data is a const weft_host_kernel array and size its
     * length. For host devices, and for sim devices (which use sim_cost).
     */
    WEFT_SOURCE_HOST,
} weft_source_kind;

/* One variant of a module's code. */
typedef struct weft_module_source {
    weft_source_kind kind;
    const void *data;    /* text, bytes, or a weft_host_kernel array */
    size_t size;         /* bytes (0 for NUL-terminated text), or count */
    const char *options; /* compiler options, or NULL */
    const char *name;    /* for messages, e.g. "saxpy.cl"; may be NULL */
} weft_module_source;

/*
 * Create a module from one or more variants of the same kernels (say PTX
 * for NVIDIA GPUs, OpenCL C for the rest, C functions for the host), and
 * build it now on every device of rt that one of the variants fits, so that
 * compile errors surface here: WEFT_EBUILD with the compiler's log and the
 * device in weft_last_error(). For each device weft takes the first variant
 * in its order of preference that the device accepts (CUDA: cubin, fatbin,
 * PTX, CUDA C++, portable; OpenCL: binary, SPIR-V, OpenCL C, portable; host
 * and sim: C functions). Builds from source go through the compiled-kernel
 * cache (README.md). The variants' memory may be freed once this returns.
 * WEFT_ENODEV if no device fits any variant.
 */
WEFT_API int weft_module_create(weft_runtime *rt,
                                const weft_module_source *variants,
                                unsigned nvariants, weft_module **mod);
/*
 * The same for one source in the portable dialect, named "portable" in
 * messages and build logs; to give it a name of its own, pass
 * weft_module_create one variant {WEFT_SOURCE_PORTABLE, source, 0,
 * options, "name"}.
 */
WEFT_API int weft_module_create_portable(weft_runtime *rt, const char *source,
                                         const char *options,
                                         weft_module **mod);
/*
 * Destroy a module. NULL is ignored. Its kernels go with it, so it is
 * WEFT_EBUSY (naming the kernel) while a live graph or executable graph has
 * a node of one of them.
 */
WEFT_API int weft_module_destroy(weft_module *mod);
/*
 * The kernel called name. WEFT_ENOTFOUND, naming it, if no device's build
 * of the module has it; WEFT_EINVAL for an empty name. The kernel lives as
 * long as its module.
 */
WEFT_API int weft_module_get_kernel(weft_module *mod, const char *name,
                                    weft_kernel **kernel);
/* 1 if kernel has an implementation on dev, else 0. */
WEFT_API int weft_kernel_supports(const weft_kernel *kernel,
                                  const weft_device *dev);
/* The kernel's name. */
WEFT_API const char *weft_kernel_name(const weft_kernel *kernel);

/*
 * What the builds of a kernel tell of its parameters, for checking
 * arguments before a node is added. Each device's build tells what its
 * driver knows, and weft takes the most a build tells:
 *
 *   host, sim    every type (the weft_host_kernel tables, the portable
 *                dialect's signatures)
 *   opencl       the number; the types where the build kept the argument
 *                info (sources: weft builds them with -cl-kernel-arg-info)
 *                and each is a pointer to global, constant or local memory
 *                or a scalar of a weft type; a struct or vector parameter
 *                is unknown
 *   cuda         the number and each parameter's size in bytes
 *                (cuFuncGetParamInfo, libcuda 12.4 and later), no types
 *
 * and for a build from portable source on any driver, the types that the
 * kernel's signature in that source declares (a pointer is a buffer, or
 * with WEFT_LOCAL local scratch; int, unsigned, long, unsigned long,
 * float and double, with their weft_ and stdint names, their types; any
 * other type bytes). A type that nothing
 * tells is WEFT_PARAM_UNKNOWN, never guessed from a size.
 */
typedef struct weft_param_info {
    weft_param_type type;
    /*
     * The bytes the argument takes: a scalar type's size; a BYTES
     * parameter's size where a build tells it; for an unknown type the
     * size a build tells (a CUDA pointer takes 8); else 0 (a buffer, a
     * local array, or nothing known).
     */
    size_t size;
} weft_param_info;

/*
 * The number of parameters of kernel. WEFT_EINVAL for a NULL kernel or
 * count; WEFT_ENOTSUP, naming the kernel, where no build of it tells the
 * number (a CUDA driver without cuFuncGetParamInfo).
 */
WEFT_API int weft_kernel_param_count(const weft_kernel *kernel,
                                     unsigned *count);
/*
 * Parameter index of kernel in *info. WEFT_EINVAL for a NULL kernel or
 * info; WEFT_ENOTSUP as weft_kernel_param_count; WEFT_ERANGE for an index
 * past the parameters. A failed call leaves *info as it was.
 */
WEFT_API int weft_kernel_param_info(const weft_kernel *kernel, unsigned index,
                                    weft_param_info *info);
/*
 * The module's name: that of its first variant with one ("portable" for
 * weft_module_create_portable), else "module". NULL, with
 * weft_last_error() set, for a NULL mod. Valid while the module lives.
 */
WEFT_API const char *weft_module_name(const weft_module *mod);
/*
 * What the compiler said when mod was built on dev, warnings included: the
 * OpenCL build log (clGetProgramBuildInfo, CL_PROGRAM_BUILD_LOG) for
 * OpenCL C, SPIR-V and binaries; on CUDA, NVRTC's log for CUDA C++ and
 * portable sources, followed by the PTX JIT's info log (cuModuleLoadDataEx)
 * where PTX was loaded. Empty where nothing was said or compiled (cubin
 * and fatbin are loaded as they are; host and sim kernels are the
 * program's C functions, which its own compiler built). A module that
 * weft's compiled-kernel cache gave (README, "The compiled-kernel cache")
 * has the log of the build that made the cached binary, stored beside
 * it. The
 * log is copied into buf (size bytes, truncated and always NUL-terminated
 * when size > 0; buf may be NULL with size 0) and *length (may be NULL)
 * gets its whole length, without the NUL, so that a first call with size
 * 0 sizes the buffer. WEFT_EINVAL for a NULL mod or dev, a NULL buf with a
 * size, or a device of another runtime; WEFT_ENOTFOUND where none of the
 * module's variants fits dev. A build that fails has its log in
 * weft_last_error() of weft_module_create.
 */
WEFT_API int weft_module_build_log(const weft_module *mod,
                                   const weft_device *dev, char *buf,
                                   size_t size, size_t *length);

/* ------------------------------------------------------------------------ */
/* Buffers                                                                  */
/* ------------------------------------------------------------------------ */

typedef struct weft_buffer weft_buffer;

/* How a node uses a range of a buffer. */
typedef enum weft_access {
    WEFT_READ = 1,
    WEFT_WRITE = 2, /* every byte of the range is written */
    WEFT_READ_WRITE = 3,
} weft_access;

/*
 * A size that means "to the end of the buffer".
 *
 * Ranges. Every offset and size of this API name the bytes [offset,
 * offset + size) of one buffer or view, the same way everywhere: offset is
 * at most the buffer's size and the range ends inside the buffer (no
 * overflow: SIZE_MAX offsets are refused), else WEFT_ERANGE naming the
 * argument. WEFT_WHOLE as a size means "from offset to the end" wherever a
 * size belongs to one buffer: weft_buffer_view, _write, _read, _fill, _map
 * and _invalidate, the graph's write, read, fill and map nodes, host task
 * accesses and kernel buffer arguments (with _write and _read the host
 * memory then holds size - offset bytes). weft_graph_add_copy, whose one
 * size serves two buffers, refuses it (WEFT_EINVAL). A size of 0 is an
 * empty range, which moves no bytes; only buffers and views cannot be
 * empty (WEFT_EINVAL). Graph nodes are checked when they are added.
 */
#define WEFT_WHOLE ((size_t)-1)

/*
 * Blocks: a 2-D or 3-D rectangle of a buffer's bytes. The buffer is seen
 * as rows of row_pitch bytes (and slices of slice_pitch bytes); the block
 * is rows x slices runs of row_bytes bytes, its bytes being, for s <
 * slices and r < rows,
 *
 *     [origin + s * slice_pitch + r * row_pitch, + row_bytes)
 *
 * of the buffer (or view) it is declared on. A block is valid when
 * row_bytes, rows and slices are above 0, row_pitch >= row_bytes (rows do
 * not overlap), and, for slices > 1, slice_pitch is a multiple of
 * row_pitch and at least rows * row_pitch (WEFT_EINVAL, naming the field
 * and the value); its last byte must lie inside the buffer (WEFT_ERANGE).
 * A block of one row and one slice is the range [origin, + row_bytes);
 * its pitches are not looked at. Dependencies are inferred on a block's
 * own bytes: blocks that share no byte are independent however their
 * rows interleave.
 *
 * Where a node, a kernel or a host task is given a block, it gets the
 * address of its first byte (origin), and the block keeps the buffer's
 * layout in every memory weft keeps it in: row r of slice s is at that
 * address + s * slice_pitch + r * row_pitch there too. The program passes
 * the pitches to its kernel as scalars where the kernel needs them.
 */
typedef struct weft_block {
    size_t origin;                  /* offset of the first byte */
    size_t row_bytes, rows, slices; /* extent: bytes per row, rows, slices */
    size_t row_pitch, slice_pitch;  /* bytes between rows, between slices */
} weft_block;

static inline weft_block weft_block2(size_t origin, size_t row_bytes,
                                     size_t rows, size_t row_pitch)
{
    weft_block b = {origin, row_bytes, rows, 1, row_pitch, 0};
    return b;
}
static inline weft_block weft_block3(size_t origin, size_t row_bytes,
                                     size_t rows, size_t slices,
                                     size_t row_pitch, size_t slice_pitch)
{
    weft_block b = {origin, row_bytes, rows, slices, row_pitch, slice_pitch};
    return b;
}

/*
 * A row-major matrix in a buffer: rows x cols elements of elem_size bytes,
 * element (i, j) at offset + (i * ld + j) * elem_size of the buffer (ld,
 * the leading dimension, in elements, at least cols). Tiles and blocks of
 * it are weft_blocks of the buffer, for node accesses, kernel arguments
 * and block transfers.
 */
typedef struct weft_matrix {
    weft_buffer *buffer;
    size_t offset;     /* bytes: element (0, 0) */
    size_t elem_size;  /* bytes per element */
    size_t rows, cols; /* elements */
    size_t ld;         /* elements from one row to the next */
} weft_matrix;

static inline weft_matrix weft_matrix_of(weft_buffer *buffer, size_t offset,
                                         size_t elem_size, size_t rows,
                                         size_t cols, size_t ld)
{
    weft_matrix m = {buffer, offset, elem_size, rows, cols, ld};
    return m;
}
/* Rows [row, + nrows) and columns [col, + ncols) of m. */
static inline weft_block weft_matrix_block(weft_matrix m, size_t row,
                                           size_t col, size_t nrows,
                                           size_t ncols)
{
    return weft_block2(m.offset + (row * m.ld + col) * m.elem_size,
                       ncols * m.elem_size, nrows, m.ld * m.elem_size);
}
/*
 * Tile (ti, tj) of m cut into tiles of tile_rows x tile_cols elements:
 * rows [ti * tile_rows, + tile_rows) and the columns alike, the last tile
 * of a row or column clipped to the matrix. A tile index past the matrix
 * gives a block of 0 rows or bytes, which every call refuses.
 */
static inline weft_block weft_matrix_tile(weft_matrix m, size_t tile_rows,
                                          size_t tile_cols, size_t ti,
                                          size_t tj)
{
    size_t r = ti * tile_rows, c = tj * tile_cols;
    size_t nr = r < m.rows ? m.rows - r : 0, nc = c < m.cols ? m.cols - c : 0;

    return weft_matrix_block(m, r, c, nr < tile_rows ? nr : tile_rows,
                             nc < tile_cols ? nc : tile_cols);
}

/*
 * A buffer of size bytes that weft allocates (contents undefined until
 * written). Buffers belong to the runtime, not to a graph: a graph may be
 * destroyed while its buffers live on.
 */
WEFT_API int weft_buffer_create(weft_runtime *rt, size_t size,
                                weft_buffer **buf);
/*
 * A buffer over the user's memory [host, host + size). That memory is the
 * buffer's host copy: weft reads it when a device needs the bytes, and
 * makes it hold the buffer's current bytes when weft_buffer_sync_host() is
 * called, when the buffer is read, mapped or destroyed. The memory must stay
 * valid until the buffer is destroyed.
 */
WEFT_API int weft_buffer_wrap(weft_runtime *rt, void *host, size_t size,
                              weft_buffer **buf);
/*
 * A view of the bytes [offset, offset + size) of parent (WEFT_WHOLE: to the
 * end). Accesses through a view are accesses of the parent's bytes, and
 * dependencies are inferred on them. The parent must outlive its views
 * (destroying it first is WEFT_EBUSY).
 */
WEFT_API int weft_buffer_view(weft_buffer *parent, size_t offset, size_t size,
                              weft_buffer **view);
/*
 * Destroy a buffer; a wrapped buffer first makes its user memory hold the
 * final bytes. WEFT_EBUSY if a live graph or executable graph names it (the
 * handle: a view's graphs hold the view), a view of it lives, or it is
 * mapped. NULL is ignored.
 */
WEFT_API int weft_buffer_destroy(weft_buffer *buf);
WEFT_API size_t weft_buffer_size(const weft_buffer *buf);

/*
 * Synchronous helpers for code outside graphs. Each waits for graphs in
 * flight that use the buffer, then acts. fill takes a pattern of 1, 2 or 4
 * bytes; offset and size are multiples of it.
 */
WEFT_API int weft_buffer_write(weft_buffer *buf, size_t offset, const void *src,
                               size_t size);
WEFT_API int weft_buffer_read(weft_buffer *buf, size_t offset, void *dst,
                              size_t size);
WEFT_API int weft_buffer_fill(weft_buffer *buf, size_t offset, size_t size,
                              const void *pattern, size_t pattern_size);
/*
 * Host access to [offset, offset + size): *ptr points at the current bytes
 * (for WEFT_READ or WEFT_READ_WRITE) until weft_buffer_unmap(); what is
 * written there through a WEFT_WRITE or WEFT_READ_WRITE map is the buffer's
 * content after the unmap. One map at a time per buffer.
 */
WEFT_API int weft_buffer_map(weft_buffer *buf, size_t offset, size_t size,
                             weft_access mode, void **ptr);
WEFT_API int weft_buffer_unmap(weft_buffer *buf, void *ptr);
/* Make a wrapped buffer's user memory hold its current bytes. */
WEFT_API int weft_buffer_sync_host(weft_buffer *buf);
/*
 * The user wrote [offset, offset + size) of a wrapped buffer's memory
 * directly, outside weft (WEFT_WHOLE: to the end): those bytes are the
 * buffer's content now, and copies that weft keeps of them elsewhere (on
 * devices) are dropped. Bytes of the range that only a device held are
 * lost, as the user overwrote them; call weft_buffer_sync_host() first to
 * keep them. Waits for graphs in flight that use the buffer. WEFT_EINVAL if
 * the buffer does not wrap user memory.
 */
WEFT_API int weft_buffer_invalidate(weft_buffer *buf, size_t offset,
                                    size_t size);

/*
 * Page-locked host memory for the program: size bytes that devices copy
 * from and into in place, at full speed, with no staging through weft's
 * pinned pool. Made by the first device of rt (in runtime order) whose
 * driver pins host memory: cuMemHostAlloc (portable: page-locked for every
 * CUDA GPU) on CUDA, a CL_MEM_ALLOC_HOST_PTR buffer mapped for its whole
 * life on OpenCL (pinned for that device), the sim's pinned memory; where
 * no device needs it (the host driver alone) plain memory aligned to 4096
 * bytes. It is then made pinned for every other device of rt that has a
 * notion of it: nothing to do where that device's driver recognises it
 * (CUDA GPUs, for portable memory; the sim's other devices), else
 * registered with it (another OpenCL device, whose context is its own; a
 * device of another driver: cuMemHostRegister, CL_MEM_USE_HOST_PTR),
 * making the device's context first if need be. weft's copies recognise
 * it on every device, in buffers that wrap it (weft_buffer_wrap) and in
 * the host side of write and read nodes; a wrapped buffer over it is not
 * registered again. Thread safe. WEFT_EINVAL for a NULL rt or ptr or a
 * size of 0; WEFT_ENOMEM, or the driver's error (naming the device, and
 * the registration that failed), where it cannot be had: then nothing is
 * left allocated or registered.
 */
WEFT_API int weft_host_alloc(weft_runtime *rt, size_t size, void **ptr);
/*
 * Free memory of weft_host_alloc(rt). NULL is ignored. WEFT_EBUSY while a
 * live buffer wraps bytes of it (naming how many); WEFT_EINVAL for a NULL
 * rt or a pointer that weft_host_alloc of rt did not return (or that was
 * freed). Graph nodes that read or write it (weft_graph_add_write, _read)
 * are the program's to keep from running after this. The runtime counts
 * every block as a live object: weft_runtime_destroy is WEFT_EBUSY until
 * each is freed.
 */
WEFT_API int weft_host_free(weft_runtime *rt, void *ptr);

/*
 * Device memory of the program's own. The native handle of memory is, by
 * driver: cuda, a CUdeviceptr; opencl, a cl_mem (cast to an integer: its
 * address) made in weft's cl_context for the device, the one native nodes
 * are given (a cl_mem of another context is refused, WEFT_EINVAL, as
 * weft's queues cannot use it); host, a host pointer; sim, the sim's
 * memory object (weft_native_mem of a native node on the sim; for tests).
 *
 * weft_buffer_wrap_device: a buffer of size bytes whose replica on dev is
 * [offset, offset + size) of the program's memory handle. Its bytes there
 * are the buffer's first content (the host copy, which weft allocates, is
 * stale until needed). weft never frees that memory and never evicts that
 * replica (it does not count against the device's memory limit); the
 * program keeps it allocated until the buffer is destroyed. Destroying the
 * buffer first makes that memory hold the final bytes (waiting for them),
 * then leaves it to the program. offset must be a multiple of the
 * device's arg_offset_align. WEFT_EINVAL for a NULL runtime, result or
 * device, a device of another runtime, a handle of 0, a size of 0 or
 * WEFT_WHOLE, memory of another device or context; WEFT_ERANGE where the
 * driver tells that the range is outside the allocation; WEFT_ENOTSUP
 * where the driver cannot wrap memory.
 */
WEFT_API int weft_buffer_wrap_device(weft_runtime *rt, const weft_device *dev,
                                     uint64_t handle, size_t offset,
                                     size_t size, weft_buffer **buf);

/* Where a range of a buffer is on a device (weft_buffer_device_address). */
typedef struct weft_device_address {
    uint64_t address; /* cuda: the CUdeviceptr of the first byte; host (and
                         sim with real bytes): its host address; else 0 */
    void *mem;        /* opencl: the cl_mem holding it (sim: the sim's
                         memory object); else NULL */
    size_t offset;    /* of the first byte in mem */
    void *ptr;        /* host (and sim with real bytes): the host address */
} weft_device_address;

/*
 * Make [offset, offset + size) of buf valid on dev (waiting for graphs in
 * flight that use it, then for the copies) and say where it is there, for
 * code that weft does not run. The address stays valid, and weft keeps
 * the bytes there (eviction leaves them), until the next launch of a
 * graph that uses the buffer, the buffer's destruction, or another call
 * on it for the same device whose range is not inside this one's. Reading
 * through it is the program's business; to write, order that work before
 * weft's next use of the buffer (wait for it, or launch after it with
 * weft_exec_launch_after) and call weft_buffer_mark_device_written. For a
 * buffer wrapped on dev, the address is in the program's own memory.
 * WEFT_EINVAL for a NULL argument or a device of another runtime,
 * WEFT_ERANGE for a range outside buf, WEFT_EBUSY if buf is mapped,
 * WEFT_EDEVMEM if the range does not fit on dev.
 */
WEFT_API int weft_buffer_device_address(weft_buffer *buf,
                                        const weft_device *dev, size_t offset,
                                        size_t size, weft_device_address *out);
/*
 * The program wrote [offset, offset + size) of buf on dev through an
 * address from weft_buffer_device_address (WEFT_WHOLE: to the end): those
 * bytes are the buffer's content now and every other copy of them is
 * stale. Waits for graphs in flight that use the buffer. WEFT_ESTATE if
 * weft holds no copy of the whole range on dev (none was asked for, or a
 * launch since moved it), WEFT_EBUSY if buf is mapped, WEFT_EINVAL and
 * WEFT_ERANGE as weft_buffer_device_address.
 */
WEFT_API int weft_buffer_mark_device_written(weft_buffer *buf,
                                             const weft_device *dev,
                                             size_t offset, size_t size);

/*
 * Device memory shared between processes of one machine (CUDA IPC; every
 * other driver answers WEFT_ENOTSUP). One process exports a range of a
 * buffer on a device; another process opens the handle and gets a device
 * address through which its own device work (a native node, code of the
 * program's) reads and writes those bytes, over NVLink or PCIe.
 */
#define WEFT_IPC_HANDLE_SIZE 96
/* An exported range: plain bytes, to send to another process as they are. */
typedef struct weft_ipc_handle {
    unsigned char bytes[WEFT_IPC_HANDLE_SIZE];
} weft_ipc_handle;

/*
 * Hold [offset, offset + size) of buf in device memory of dev (waiting as
 * weft_buffer_device_address does) and export it: *out is a handle that
 * weft_ipc_open takes in another process. mode says what that process
 * does: with WEFT_READ in it the range is made valid on dev first; with
 * WEFT_WRITE alone only room is made (its bytes there are whatever weft
 * left: the other process writes them). The extent of device memory
 * holding the range stays where it is until the export is released
 * (weft_buffer_export_release): eviction leaves it, and a node whose range
 * would need that extent moved or widened fails with WEFT_EBUSY. What
 * another process writes through the handle is the program's to order
 * (nothing of weft's may read or write the range meanwhile) and to declare
 * (weft_buffer_mark_device_written, or a node that writes the range on
 * dev). Each export is released once; weft_buffer_destroy is WEFT_EBUSY
 * while one is not. WEFT_EINVAL for a NULL argument, a device of another
 * runtime, a size of 0 or an unknown mode; WEFT_ERANGE for a range outside
 * buf; WEFT_EBUSY if buf is mapped; WEFT_EDEVMEM if the range does not fit
 * on dev; WEFT_ENOTSUP where dev's driver cannot share memory (host, sim,
 * OpenCL); the driver's error (naming the call) where it refuses.
 */
WEFT_API int weft_buffer_export(weft_buffer *buf, const weft_device *dev,
                                size_t offset, size_t size, weft_access mode,
                                weft_ipc_handle *out);
/*
 * Release one export of [offset, offset + size) of buf on dev (the range
 * of a weft_buffer_export call): its extent may move again once no export
 * holds it. WEFT_ESTATE where no export holds that range there;
 * WEFT_ENOTSUP, WEFT_EINVAL and WEFT_ERANGE as weft_buffer_export.
 */
WEFT_API int weft_buffer_export_release(weft_buffer *buf,
                                        const weft_device *dev, size_t offset,
                                        size_t size);
/*
 * Map the range of handle h (exported by another process of this machine)
 * into dev's address space, in weft's context for dev (peer access between
 * the two devices is enabled as needed): *address is the device address
 * of its first byte there (a CUdeviceptr), valid until weft_ipc_close.
 * Opening a handle of the same allocation twice is counted; each open is
 * closed once. The runtime counts every open mapping as a live object.
 * Thread safe. WEFT_EINVAL for a NULL argument, a device of another
 * runtime, or a handle that is not one of weft_buffer_export's or that
 * this process exported; WEFT_ENOTSUP where dev's driver cannot share
 * memory; the driver's error where it cannot map the handle (the
 * exporting process has released it or exited, or the devices cannot
 * reach each other).
 */
WEFT_API int weft_ipc_open(weft_runtime *rt, const weft_device *dev,
                           const weft_ipc_handle *h, uint64_t *address);
/*
 * Unmap an address that weft_ipc_open returned for dev. Work that uses it
 * must be complete. WEFT_EINVAL for a NULL runtime, a device of another
 * runtime, or an address that no open mapping of dev has.
 */
WEFT_API int weft_ipc_close(weft_runtime *rt, const weft_device *dev,
                            uint64_t address);

/* ------------------------------------------------------------------------ */
/* Graphs                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct weft_graph weft_graph;
typedef struct weft_exec weft_exec;
/* A node: its index in the graph, in the order the nodes were added. */
typedef uint32_t weft_node;

/*
 * A kernel argument. Build one with the weft_arg_* helpers below. A buffer
 * argument names a byte range of a buffer and how the kernel uses it; the
 * kernel receives the address of the range's first byte.
 */
typedef struct weft_arg {
    weft_param_type type;
    weft_access access; /* buffers */
    weft_buffer *buffer;
    size_t offset, size; /* buffers: the range; LOCAL: bytes; BYTES: bytes */
    union {
        int32_t i32;
        uint32_t u32;
        int64_t i64;
        uint64_t u64;
        float f32;
        double f64;
        const void *bytes; /* BYTES: copied when the node is added */
    } value;
    /*
     * Buffers given as a block (weft_arg_block): offset is its origin,
     * size its row_bytes, and these the rest; rows 0 means a range.
     */
    size_t rows, slices, row_pitch, slice_pitch;
} weft_arg;

static inline weft_arg weft_arg_buffer(weft_buffer *b, size_t offset,
                                       size_t size, weft_access access)
{
    weft_arg a = {WEFT_PARAM_BUFFER, access, b, offset, size, {0}, 0, 0, 0, 0};
    return a;
}
/*
 * A block of a buffer as a buffer argument: the kernel receives the
 * address of the block's first byte (see weft_block for the layout).
 */
static inline weft_arg weft_arg_block(weft_buffer *b, weft_block blk,
                                      weft_access access)
{
    weft_arg a = {WEFT_PARAM_BUFFER, access,        b,
                  blk.origin,        blk.row_bytes, {0},
                  blk.rows,          blk.slices,    blk.row_pitch,
                  blk.slice_pitch};
    return a;
}
#define WEFT__ARG_SCALAR(fn, T, tag, member)                                   \
    static inline weft_arg fn(T v)                                             \
    {                                                                          \
        weft_arg a = {                                                         \
            tag, (weft_access)0, NULL, 0, sizeof(T), {0}, 0, 0, 0, 0};         \
        a.value.member = v;                                                    \
        return a;                                                              \
    }
WEFT__ARG_SCALAR(weft_arg_i32, int32_t, WEFT_PARAM_I32, i32)
WEFT__ARG_SCALAR(weft_arg_u32, uint32_t, WEFT_PARAM_U32, u32)
WEFT__ARG_SCALAR(weft_arg_i64, int64_t, WEFT_PARAM_I64, i64)
WEFT__ARG_SCALAR(weft_arg_u64, uint64_t, WEFT_PARAM_U64, u64)
WEFT__ARG_SCALAR(weft_arg_f32, float, WEFT_PARAM_F32, f32)
WEFT__ARG_SCALAR(weft_arg_f64, double, WEFT_PARAM_F64, f64)
#undef WEFT__ARG_SCALAR
static inline weft_arg weft_arg_bytes(const void *p, size_t size)
{
    weft_arg a = {
        WEFT_PARAM_BYTES, (weft_access)0, NULL, 0, size, {0}, 0, 0, 0, 0};
    a.value.bytes = p;
    return a;
}
static inline weft_arg weft_arg_local(size_t size)
{
    weft_arg a = {
        WEFT_PARAM_LOCAL, (weft_access)0, NULL, 0, size, {0}, 0, 0, 0, 0};
    return a;
}

/*
 * Launch dimensions: items in each dimension, and items per group (0: weft
 * chooses). Items need not be a multiple of the group size: weft rounds the
 * grid up, and the kernel checks its index against its own bound.
 */
typedef struct weft_dims {
    uint32_t items[3];
    uint32_t group[3];
} weft_dims;

static inline weft_dims weft_dims1(uint32_t x)
{
    weft_dims d = {{x, 1, 1}, {0, 0, 0}};
    return d;
}
static inline weft_dims weft_dims2(uint32_t x, uint32_t y)
{
    weft_dims d = {{x, y, 1}, {0, 0, 0}};
    return d;
}
static inline weft_dims weft_dims3(uint32_t x, uint32_t y, uint32_t z)
{
    weft_dims d = {{x, y, z}, {0, 0, 0}};
    return d;
}

/*
 * A declared buffer access of a host task or native node: the range
 * [offset, + size), or, where rows is above 0, the block whose origin is
 * offset and whose row_bytes is size (weft_access_block). The task gets the
 * address of the first byte.
 */
typedef struct weft_access_desc {
    weft_buffer *buffer;
    size_t offset, size;
    weft_access mode;
    size_t rows, slices, row_pitch, slice_pitch; /* blocks; rows 0: a range */
} weft_access_desc;

/* The range [offset, + size) of b (WEFT_WHOLE: to the end). */
static inline weft_access_desc weft_access_range(weft_buffer *b, size_t offset,
                                                 size_t size, weft_access mode)
{
    weft_access_desc d = {b, offset, size, mode, 0, 0, 0, 0};
    return d;
}
static inline weft_access_desc weft_access_block(weft_buffer *b, weft_block blk,
                                                 weft_access mode)
{
    weft_access_desc d = {b,        blk.origin, blk.row_bytes, mode,
                          blk.rows, blk.slices, blk.row_pitch, blk.slice_pitch};
    return d;
}

/*
 * A host task: ptrs[i] is the host address of access i's range, valid for
 * the call. It runs on a weft thread and must not wait on the graph that
 * runs it. The address is in the buffer's host copy (a wrapped buffer's
 * user memory), which does not move for the buffer's life: every launch
 * gives a task the same addresses.
 */
typedef void weft_host_task_fn(void *const *ptrs, void *user);
/*
 * A host task that says whether it succeeded: 0, or non-zero for a
 * failure (weft_graph_add_host_status).
 */
typedef int weft_host_status_fn(void *const *ptrs, void *user);
/* A map node's callback: host access to the range, as for weft_buffer_map. */
typedef void weft_map_fn(void *ptr, size_t size, void *user);

/*
 * A graph of nodes. Its result is, by definition, the result of running its
 * nodes one by one, in the order they were added, on the host: weft infers
 * the dependencies from the buffer accesses (a node depends on the last
 * earlier writer of any byte it reads and on the earlier readers and
 * writers of any byte it writes) and may run anything else side by side.
 * One thread builds a graph at a time.
 */
WEFT_API int weft_graph_create(weft_runtime *rt, weft_graph **g);
/* Destroy a graph; executable graphs made from it live on. NULL ignored. */
WEFT_API int weft_graph_destroy(weft_graph *g);

/*
 * Add a kernel node: k over dims with nargs arguments, checked against the
 * kernel's parameters where they are known. node (may be NULL) receives the
 * node's index. WEFT_EINVAL for a NULL kernel or buffer, a kernel or buffer
 * of another runtime, an empty grid or an unknown access mode; WEFT_ERANGE
 * for a buffer range outside its buffer; WEFT_EARGS for arguments that do
 * not fit the parameters: another count, a buffer or local array for a
 * value or the reverse, another size, or, where the parameter types are
 * known (host and sim kernels; OpenCL kernels built from source), a scalar
 * of another type (weft_arg_f32 for a u32 parameter). The message names the
 * argument, the kernel and the types.
 *
 * The errors of every weft_graph_add_* call name the function and the node
 * being added by its kind ("weft_graph_add_kernel: the node being added
 * (kernel saxpy): argument 2 ..."); a failed add leaves the graph as it
 * was.
 */
WEFT_API int weft_graph_add_kernel(weft_graph *g, weft_kernel *k,
                                   weft_dims dims, const weft_arg *args,
                                   unsigned nargs, weft_node *node);
/*
 * One node of weft_graph_add_kernels: weft_graph_add_kernel's arguments
 * (the arguments first, so that a binding that lays each node's arguments
 * after it writes the rest in one run).
 */
typedef struct weft_kernel_node {
    const weft_arg *args;
    unsigned nargs;
    weft_kernel *kernel;
    weft_dims dims;
} weft_kernel_node;
/*
 * Add n kernel nodes, the first at nodes, as n calls of
 * weft_graph_add_kernel would: the same nodes, indices, dependencies and
 * checks, for one call's cost (language bindings, which pay for each
 * foreign call, gather their nodes into one). stride: the bytes from one
 * node's weft_kernel_node to the next's (0: sizeof(weft_kernel_node); more
 * leaves room between them, e.g. for each node's arguments); a multiple
 * of the struct's alignment. added (may be NULL) receives the number of
 * nodes added; they are the graph's last ones. Every node is checked
 * before any is added: one that weft_graph_add_kernel would refuse fails
 * the call with that function's code and message, naming the function and
 * the node's position ("weft_graph_add_kernels: nodes[2]: the node being
 * added (kernel saxpy): argument 1 ..."), and the graph is as it was
 * (*added 0). Only running out of memory (WEFT_ENOMEM) stops the call
 * part-way: the nodes before the one being added stay (*added of them),
 * each node being added whole or not at all. WEFT_EINVAL for a NULL graph,
 * nodes NULL with n above 0, or a stride below the struct's size or off
 * its alignment; n 0 adds nothing.
 */
WEFT_API int weft_graph_add_kernels(weft_graph *g,
                                    const weft_kernel_node *nodes, unsigned n,
                                    size_t stride, unsigned *added);
/*
 * Transfers. write: size bytes of host memory src into dst at offset (src
 * is read when the node runs, so it must stay valid and unchanged until the
 * launch completes); read: from src at offset into host memory dst; copy:
 * buffer to buffer; fill: a 1, 2 or 4-byte pattern (copied when added).
 * Buffers must be of the graph's runtime (WEFT_EINVAL) and ranges inside
 * them (WEFT_ERANGE; see WEFT_WHOLE).
 */
WEFT_API int weft_graph_add_write(weft_graph *g, weft_buffer *dst,
                                  size_t offset, const void *src, size_t size,
                                  weft_node *node);
WEFT_API int weft_graph_add_read(weft_graph *g, weft_buffer *src, size_t offset,
                                 void *dst, size_t size, weft_node *node);
WEFT_API int weft_graph_add_copy(weft_graph *g, weft_buffer *dst,
                                 size_t dst_offset, weft_buffer *src,
                                 size_t src_offset, size_t size,
                                 weft_node *node);
WEFT_API int weft_graph_add_fill(weft_graph *g, weft_buffer *dst, size_t offset,
                                 size_t size, const void *pattern,
                                 size_t pattern_size, weft_node *node);
/*
 * Block transfers (see weft_block). write_block: the block blk of dst from
 * host memory whose first byte is src, its rows src_row_pitch bytes apart
 * and its slices src_slice_pitch (0: packed, row_bytes and rows *
 * src_row_pitch); read_block: the block of src into host memory at dst
 * with dst's pitches; copy_block: the block sblk of src into the block
 * dblk of dst, which must have the same row_bytes, rows and slices
 * (WEFT_EINVAL); fill_block: a 1, 2 or 4-byte pattern into every row of
 * the block (origin and row_bytes multiples of it). The drivers' own 2-D
 * and 3-D copies move the block where they have them. Errors as for the
 * range forms, and the block rules of weft_block; a host pitch below the
 * block's row_bytes (or a slice pitch below rows * row pitch) is
 * WEFT_EINVAL.
 */
WEFT_API int weft_graph_add_write_block(weft_graph *g, weft_buffer *dst,
                                        const weft_block *blk, const void *src,
                                        size_t src_row_pitch,
                                        size_t src_slice_pitch,
                                        weft_node *node);
WEFT_API int weft_graph_add_read_block(weft_graph *g, weft_buffer *src,
                                       const weft_block *blk, void *dst,
                                       size_t dst_row_pitch,
                                       size_t dst_slice_pitch, weft_node *node);
WEFT_API int weft_graph_add_copy_block(weft_graph *g, weft_buffer *dst,
                                       const weft_block *dblk, weft_buffer *src,
                                       const weft_block *sblk, weft_node *node);
WEFT_API int weft_graph_add_fill_block(weft_graph *g, weft_buffer *dst,
                                       const weft_block *blk,
                                       const void *pattern, size_t pattern_size,
                                       weft_node *node);
/* A map node: fn sees the range on the host with the given access. */
WEFT_API int weft_graph_add_map(weft_graph *g, weft_buffer *buf, size_t offset,
                                size_t size, weft_access mode, weft_map_fn *fn,
                                void *user, weft_node *node);
/* A host task with its declared buffer accesses (nacc may be 0). */
WEFT_API int weft_graph_add_host(weft_graph *g, weft_host_task_fn *fn,
                                 void *user, const weft_access_desc *acc,
                                 unsigned nacc, weft_node *node);
/*
 * A host task that returns a status, otherwise as weft_graph_add_host. A
 * non-zero return fails the node (WEFT_EIO, the message naming the node
 * and the value), as a native function's does: its descendants are
 * canceled, independent nodes complete, and weft_exec_wait returns the
 * error. The bytes it was to write hold whatever the function left in
 * them (the host copy is the only current one from the call on). Errors
 * of the call as weft_graph_add_host's.
 */
WEFT_API int weft_graph_add_host_status(weft_graph *g, weft_host_status_fn *fn,
                                        void *user, const weft_access_desc *acc,
                                        unsigned nacc, weft_node *node);
/* A poll task's return while what it waits for has not happened yet. */
#define WEFT_HOST_AGAIN 1
/*
 * A host task that waits for something outside the graph (a message, a
 * device's or another library's event) without holding a thread: fn
 * returns 0 once the node's work is done, WEFT_HOST_AGAIN while it is not
 * yet, and anything else to fail the node as a status task does. After
 * WEFT_HOST_AGAIN, weft calls fn again later, on whichever host worker is
 * free, and runs other ready work meanwhile, so that fn must not block:
 * it tests and returns. Idle workers call pending poll tasks in turn
 * instead of sleeping, so a poll keeps at most one core busy while
 * nothing else is ready. The bytes of its accesses belong to the node
 * from its first call to its last. With no host workers
 * (WEFT_HOST_WORKERS=0) the issuing thread calls fn until it is done.
 * Errors of the call as weft_graph_add_host's.
 */
WEFT_API int weft_graph_add_host_poll(weft_graph *g, weft_host_status_fn *fn,
                                      void *user, const weft_access_desc *acc,
                                      unsigned nacc, weft_node *node);
/* A node that does nothing: a join point for explicit edges. */
WEFT_API int weft_graph_add_empty(weft_graph *g, weft_node *node);

/*
 * Native nodes: a function of the program's that weft calls on the device
 * the node was placed on, with the device's native handles, so that
 * vendor libraries (cuBLAS, cuSOLVER) or the program's own CUDA or OpenCL
 * code run inside a graph. weft makes every declared range valid on that
 * device before the call, exactly as for a kernel argument, and orders
 * everything after the node behind the work the function enqueued on the
 * queue it was given. The handles are the driver's own, passed as void *
 * or integers that the program casts (this header names no CUDA or OpenCL
 * type):
 *
 *   driver  context               device_id             queue
 *   cuda    CUcontext (current)   CUdevice (integer)    CUstream
 *   opencl  cl_context            cl_device_id          cl_command_queue
 *   host    NULL                  NULL                  NULL
 *   sim     weft's own objects (for weft's tests)
 *
 * and for each declared range (weft_native_address, _mem, _ptr):
 *
 *   cuda    address: the CUdeviceptr of the range's first byte
 *   opencl  mem: the cl_mem that holds it, and the offset in it
 *   host    ptr (and address): the host address of the first byte
 *   sim     ptr: the bytes where the sim keeps them (real_data=1), else NULL
 *
 * On CUDA and OpenCL the function enqueues its work on the queue (any
 * queue it makes itself is its own to order after this one) and returns
 * without waiting; the CUDA context is current on the calling thread. On
 * the host driver there is no queue: the node's inputs are complete when
 * the function is called and its work must be done when it returns. The
 * function runs on a weft thread while the launch is issued: it must not
 * wait on the graph that runs it or call weft on its buffers. On the host
 * driver that thread is one of the driver's (the runner of the node's
 * compute lane, with WEFT_HOST_WORKERS above 0, the default), and the
 * functions of native nodes that no edge orders may run at the same time on
 * different threads, one per core at most (WEFT_HOST_THREADS): a function
 * that uses more threads of its own (a multithreaded BLAS) oversubscribes
 * the cores.
 *
 * A non-zero return fails the node (WEFT_EIO, the message naming the node
 * and the value); its descendants are canceled as for any failed node.
 * The bytes it was to write keep the launch's earlier contents where
 * another copy of them was current; where the node's device held the only
 * current copy, they are whatever the function left there (on the host
 * driver, whose function runs while the issue goes on, the device's copy
 * is taken as the current one from the call on: whatever the function
 * left there).
 *
 * Native graphs (weft_exec_options.native_graphs): a launch that runs a
 * native node is recorded into and replayed as a native graph only where
 * every native node of it is capturable (weft_graph_set_native_capture)
 * and its driver can capture one; otherwise the function is called at
 * every launch, op by op.
 */
typedef struct weft_native_ctx weft_native_ctx;
typedef int weft_native_fn(const weft_native_ctx *ctx, void *user);

/*
 * One implementation of a native node: the driver it is for ("cuda",
 * "opencl", "host" or "sim") and, optionally, the type of device
 * (0: any device of that driver).
 */
typedef struct weft_native_impl {
    const char *driver;
    weft_device_type type;
    weft_native_fn *fn;
} weft_native_impl;

/*
 * Add a native node with nimpls implementations (at least one; copied)
 * and nacc declared buffer accesses (ranges and modes as for host tasks;
 * nacc may be 0). user is passed to the function. Placement treats it as
 * a kernel whose implementations are on the devices of those drivers:
 * weft_graph_set_device may place it, and weft_graph_instantiate fails
 * with WEFT_ENODEV naming the node where no usable device has an
 * implementation. WEFT_EINVAL for a NULL impls array or function, an
 * unknown driver name or device type, or a bad access (as
 * weft_graph_add_host); WEFT_ERANGE for a range outside its buffer.
 */
WEFT_API int weft_graph_add_native(weft_graph *g, const weft_native_impl *impls,
                                   unsigned nimpls, const weft_access_desc *acc,
                                   unsigned nacc, void *user, weft_node *node);

/*
 * Declare whether the work of native node node may be captured into
 * native graphs (on: 1) or not (0, the default), for the executable
 * graphs instantiated from g after the call. A capturable function
 * promises:
 *
 *   - It enqueues on the queue it is given only work that the driver's
 *     graphs can hold (on CUDA, work that stream capture takes: kernels,
 *     cuBLAS and cuSOLVER calls, asynchronous copies and memsets between
 *     device memory or pinned host memory; not cuMemcpy to pageable
 *     memory, cuStreamSynchronize, cuEventSynchronize, cuEventQuery or
 *     cuStreamQuery on that stream, which end or invalidate the capture),
 *     and no work on any other queue that the queue's later work must
 *     wait for.
 *   - It does not wait on the host for any work (it must not synchronise).
 *   - What it enqueues depends only on what it is given (the addresses of
 *     its ranges, the queue, user) and on nothing that changes between
 *     launches: scalars it reads from user when it is called are those of
 *     every replay.
 *
 * weft then records the launch as for a kernel: the function is called
 * while weft records the launch, once more when weft captures the
 * recording into a native graph (at the next launch that needs the graph,
 * not at the recording launch), and again whenever weft records anew; and
 * later launches that replay the native graph run the work it enqueued
 * WITHOUT calling it. The addresses and the queue it is
 * given are the same at every replay; where a range moves (another
 * device memory), weft records again and calls the function with the new
 * addresses. Per driver:
 *
 *   cuda    stream capture on the queue handed to the function (the
 *           capture is relaxed: other threads may allocate meanwhile).
 *           Where the function's work ends or invalidates the capture,
 *           no native graph is made (weft logs why, WEFT_LOG=info) and
 *           the executable graph runs op by op from then on.
 *   sim     the sim's capture takes the sim operations the function
 *           enqueues on its queue; a replay runs them, not the function.
 *   host    there is no queue: a replay calls the function again, on a
 *           thread of the host driver, once the node's inputs are
 *           complete (the graph's independent native nodes side by side,
 *           on the device's threads). A non-zero return there fails that
 *           launch
 *           (WEFT_EIO; the message names the device and the value)
 *           without canceling the nodes after it in the native graph,
 *           and the next launch is issued op by op (and records anew).
 *   opencl  a command buffer cannot record the program's own clEnqueue
 *           calls: a launch with a native node on an OpenCL device is
 *           never recorded, capturable or not.
 *
 * A launch with any native node that is not capturable is never recorded.
 * WEFT_EINVAL for a NULL g, a node past the graph's, a node that
 * weft_graph_add_native did not make (event nodes are never captured),
 * or an on other than 0 or 1.
 */
WEFT_API int weft_graph_set_native_capture(weft_graph *g, weft_node node,
                                           int on);

/*
 * What a native node's function is given. ctx is valid during the call
 * only. The accessors return NULL or 0, and set weft_last_error(), for a
 * NULL ctx or an index past the accesses.
 */
/* The driver's name ("cuda", "opencl", "host", "sim"). */
WEFT_API const char *weft_native_driver(const weft_native_ctx *ctx);
/* The device the node was placed on. */
WEFT_API const weft_device *weft_native_device(const weft_native_ctx *ctx);
/* The node's index in its graph. */
WEFT_API weft_node weft_native_node(const weft_native_ctx *ctx);
/* The native context, device and queue (see the table above). */
WEFT_API void *weft_native_context(const weft_native_ctx *ctx);
WEFT_API void *weft_native_device_id(const weft_native_ctx *ctx);
/*
 * Outside nodes: weft's context and device handle for dev (made now if
 * weft had not made them yet), the ones a native node on dev is given:
 * cuda, the CUcontext weft uses (the device's primary context) and the
 * CUdevice (cast to a pointer-sized integer); opencl, weft's cl_context
 * for the device and its cl_device_id, in which the program can make
 * memory for weft_buffer_wrap_device or queues of its own; host, NULL and
 * NULL; sim, its own objects (for tests). Either out-pointer may be NULL,
 * not both. WEFT_EINVAL for a NULL runtime or device, a device of another
 * runtime, or both out-pointers NULL; the driver's error where the
 * context cannot be made.
 */
WEFT_API int weft_device_native(weft_runtime *rt, const weft_device *dev,
                                void **context, void **device_id);
WEFT_API void *weft_native_queue(const weft_native_ctx *ctx);
/*
 * The number of declared accesses, and the bytes of access i (a block's:
 * from its first byte to one past its last).
 */
WEFT_API unsigned weft_native_count(const weft_native_ctx *ctx);
WEFT_API size_t weft_native_size(const weft_native_ctx *ctx, unsigned i);
/* CUDA: the CUdeviceptr of access i's first byte; host: its address. */
WEFT_API uint64_t weft_native_address(const weft_native_ctx *ctx, unsigned i);
/* OpenCL: the cl_mem holding access i, and in *offset (may be NULL) where
 * its first byte is in it; NULL elsewhere. */
WEFT_API void *weft_native_mem(const weft_native_ctx *ctx, unsigned i,
                               size_t *offset);
/* Where the device's memory is host memory (host; sim with real bytes):
 * the host address of access i's first byte; NULL elsewhere. */
WEFT_API void *weft_native_ptr(const weft_native_ctx *ctx, unsigned i);

/*
 * External events: a graph inside the program's own stream order. The
 * event is the driver's own handle, passed as void *:
 *
 *   cuda    a CUevent (to record: of the device's primary context, the
 *           one the CUDA runtime API uses; with several GPUs, place the
 *           record node on the event's device, weft_graph_set_device)
 *   opencl  a cl_event of any context (to signal: a user event,
 *           clCreateUserEvent, which weft sets CL_COMPLETE, also when
 *           the work before it failed: the launch reports that. A user
 *           event completes once: a launch fails at the record node,
 *           WEFT_EINVAL, where the event is set already or is to be set
 *           by a launch still running; signal each launch with a new
 *           event, in a new graph)
 *   host, sim  weft's internal events (for weft's tests)
 *
 * The event is the program's: weft does not own it, and it must stay
 * valid while a graph or executable graph has the node. An event node
 * is a native node of that one driver (placement, errors, traces and
 * native graphs as above) whose function weft provides. Its
 * accesses (nacc may be 0; as for host tasks) order it among the nodes
 * that use those bytes, as any node's; explicit edges order it among the
 * others.
 *
 * weft_graph_add_event_wait: the node's work, and so every node after it,
 * waits on the device for the event (cuStreamWaitEvent; a barrier on the
 * event, bridged from another context). A CUDA event never recorded is
 * waited for as complete. weft_graph_add_event_record: the event is
 * recorded (CUDA) or signalled (OpenCL) once the work of the node's
 * predecessors on its device is done. WEFT_EINVAL for a NULL or unknown
 * driver, a NULL event, or bad accesses; a launch fails at the node
 * (naming it) where the driver refuses the event.
 */
WEFT_API int weft_graph_add_event_wait(weft_graph *g, const char *driver,
                                       void *event, const weft_access_desc *acc,
                                       unsigned nacc, weft_node *node);
WEFT_API int weft_graph_add_event_record(weft_graph *g, const char *driver,
                                         void *event,
                                         const weft_access_desc *acc,
                                         unsigned nacc, weft_node *node);
/*
 * An explicit edge: to runs after from, on top of the inferred edges. An
 * edge that would close a cycle (to already runs before from, through any
 * edges) is WEFT_ECYCLE naming the nodes, and the graph stays as it was.
 */
WEFT_API int weft_graph_add_edge(weft_graph *g, weft_node from, weft_node to);
/* Run a kernel node on dev (the user's placement). */
WEFT_API int weft_graph_set_device(weft_graph *g, weft_node node,
                                   const weft_device *dev);

/* Number of nodes, and of edges kept after inference and reduction. */
WEFT_API unsigned weft_graph_node_count(const weft_graph *g);
WEFT_API unsigned weft_graph_edge_count(const weft_graph *g);
/*
 * Write the graph in Graphviz DOT to f: nodes with their kind and kernel
 * name, edges labelled with the buffer range and hazard (RAW, WAR, WAW) that
 * made them, or "explicit".
 */
WEFT_API int weft_graph_write_dot(const weft_graph *g, FILE *f);

/*
 * Placement policies for the kernel nodes that weft_graph_set_device did
 * not place (a placed node stays where the user put it under every
 * policy). Candidates are the devices of one driver and one device type:
 * those of the first device (in runtime order) that has an implementation
 * of every unplaced kernel, so that one GPU is not driven twice (through
 * CUDA and OpenCL) and CPUs are not mixed with GPUs unless the user places
 * nodes there; a node goes only where its group size and buffer offsets
 * fit the device.
 */
typedef enum weft_place_policy {
    WEFT_PLACE_DEFAULT = 0,     /* the runtime's choice (heft unless set) */
    WEFT_PLACE_SINGLE = 1,      /* every unplaced node on one device */
    WEFT_PLACE_ROUND_ROBIN = 2, /* the next candidate device, in turn */
    WEFT_PLACE_LOCALITY = 3,    /* the fewest bytes to move */
    /* Earliest finish time, critical path first, from the cost model:
     * link bandwidths (weft-info --calibrate) and kernel times learned
     * from earlier launches. */
    WEFT_PLACE_HEFT = 4,
} weft_place_policy;

/* "default", "single", "round-robin", "locality", "heft"; NULL if none. */
WEFT_API const char *weft_place_policy_name(weft_place_policy policy);

/*
 * Which devices a policy chooses among for an unplaced kernel node. In
 * both, a device must have an implementation of the kernel and fit its
 * group size and buffer offsets.
 */
typedef enum weft_place_scope {
    /* The runtime's: WEFT_PLACE_SCOPE ("driver", "all"), else DRIVER. */
    WEFT_PLACE_SCOPE_DEFAULT = 0,
    /* The devices of the default device's driver and type (see above). */
    WEFT_PLACE_SCOPE_DRIVER = 1,
    /*
     * Every device of every driver, one per piece of hardware: a GPU seen
     * through CUDA and through OpenCL (the same PCI bus id), or the CPU
     * seen through PoCL and the host driver, counts once, through the
     * default device's driver first, else the first driver in runtime
     * order. A kernel with implementations for several drivers can go to
     * any of them; GPUs and CPUs mix, which heft weighs by its cost model
     * and round-robin does not.
     */
    WEFT_PLACE_SCOPE_ALL = 2,
} weft_place_scope;

/*
 * Native graphs for one executable graph (README "Native graphs"): whether
 * its relaunches may be handed to the driver as one native graph (a CUDA
 * graph, an OpenCL command buffer, a host-driver graph). The environment
 * variable WEFT_NATIVE_GRAPHS=0 turns them off for every graph whatever
 * this says; WEFT_NATIVE_GRAPHS=1 makes the default ON.
 */
typedef enum weft_native_graphs {
    /* Where the driver has them and they pay: not on OpenCL CPU devices. */
    WEFT_NATIVE_GRAPHS_DEFAULT = 0,
    WEFT_NATIVE_GRAPHS_OFF = 1, /* never: every launch runs op by op */
    WEFT_NATIVE_GRAPHS_ON = 2,  /* also on CPU devices (PoCL) */
} weft_native_graphs;

/*
 * The priority of an executable graph's work on each device: the streams
 * or queues weft makes for it (compute and copy lanes) get the device's
 * highest priority (weft_device_info.queue_priority_high) for HIGH.
 * CUDA: cuStreamCreateWithPriority, so that its kernels are scheduled
 * ahead of those of default-priority streams (of other graphs, or of the
 * program) where both wait for the GPU; OpenCL: CL_QUEUE_PRIORITY_HIGH_KHR
 * where the device has cl_khr_priority_hints (elsewhere the queues are
 * as by default); host devices (range 0..-1) run the queues of high
 * priority first where their runner threads have several waiting; sim
 * devices (0..-1) record the priority of each operation's queue and place
 * work in virtual time as it is issued. weft_graph_set_priority sets it
 * per node.
 */
typedef enum weft_priority {
    WEFT_PRIORITY_DEFAULT = 0,
    WEFT_PRIORITY_HIGH = 1,
} weft_priority;

/*
 * The priority of one node (WEFT_PRIORITY_DEFAULT until set), on top of
 * its executable graph's (weft_exec_options.priority). A node of
 * WEFT_PRIORITY_HIGH, and every node it depends on, is issued before the
 * other nodes that are ready at the same time (the issue order, and so
 * the order in which host tasks reach the host workers); a high kernel,
 * native or copy node goes on its device's high-priority compute lane, a
 * stream or queue of the device's highest priority made for such nodes,
 * so that it waits behind no normal node's work on an in-order queue and
 * the device (CUDA, OpenCL with cl_khr_priority_hints) starts its work
 * ahead of the normal lanes' waiting work. The copies that make its
 * inputs valid share the copy lanes. Host devices run the queues of
 * higher priority first where their runners have several to choose
 * from; sim devices record each operation's queue priority
 * (README "Priorities" has the mapping per driver). WEFT_EINVAL for a NULL
 * graph, a node past the graph's or a value that is none of
 * weft_priority.
 */
WEFT_API int weft_graph_set_priority(weft_graph *g, weft_node node,
                                     weft_priority priority);

/* Options for weft_graph_instantiate(). Start from WEFT_EXEC_OPTIONS_INIT. */
typedef struct weft_exec_options {
    size_t size;
    /* Run every node on this device (NULL: weft chooses). */
    const weft_device *device;
    /* Placement of the unplaced kernel nodes when device is NULL. */
    weft_place_policy policy;
    /* Native graphs for its relaunches (WEFT_NATIVE_GRAPHS_DEFAULT). */
    weft_native_graphs native_graphs;
    /* The devices placement chooses among (WEFT_PLACE_SCOPE_DEFAULT). */
    weft_place_scope place_scope;
    /* The priority of its streams or queues (WEFT_PRIORITY_DEFAULT). */
    weft_priority priority;
} weft_exec_options;
#define WEFT_EXEC_OPTIONS_INIT                                                 \
    {                                                                          \
        sizeof(weft_exec_options), NULL, WEFT_PLACE_DEFAULT,                   \
            WEFT_NATIVE_GRAPHS_DEFAULT, WEFT_PLACE_SCOPE_DEFAULT,              \
            WEFT_PRIORITY_DEFAULT                                              \
    }

/*
 * The devices that weft_graph_instantiate(g, opts) would choose among for
 * node (opts may be NULL, as there), in runtime order: up to max of them
 * into devs (devs may be NULL with max 0), and how many there are in
 * *count. Placement places kernel and native nodes only: for any other
 * node (transfers, maps, host tasks, empty nodes) there are none. A node
 * that weft_graph_set_device placed has that device; with opts->device,
 * every node has that one; under WEFT_PLACE_SINGLE, or where the scope
 * holds fewer than two devices, every node has the default device (the
 * first that has every unplaced kernel); else the devices of the scope
 * (weft_place_scope) that have an implementation of the node and fit its
 * group size and buffer offsets. Placement (and placement again after
 * the first timed launches) picks within these; weft_exec_node_device
 * tells which it picked. The graph must be complete enough to
 * instantiate: its errors (WEFT_ENODEV naming a node with no device, bad
 * options) are those of weft_graph_instantiate. WEFT_EINVAL for a NULL g
 * or count, a NULL devs with max > 0, or a node past the graph's.
 */
WEFT_API int weft_graph_candidate_devices(weft_graph *g, weft_node node,
                                          const weft_exec_options *opts,
                                          const weft_device **devs,
                                          unsigned max, unsigned *count);

/*
 * Validate the graph and lower it once into an executable graph that can
 * be launched many times. Errors name the node: WEFT_ENODEV (a kernel with
 * no implementation on any usable device), WEFT_EARGS (an argument of the
 * wrong type or size for the implementation placement chose), WEFT_EINVAL
 * (a NULL host pointer where bytes must be read or written, a group too
 * large for the device). WEFT_EINVAL also for options of a wrong size, an
 * unknown policy, scope, native_graphs or priority value, or a device of
 * another runtime. opts may be NULL.
 */
WEFT_API int weft_graph_instantiate(weft_graph *g,
                                    const weft_exec_options *opts,
                                    weft_exec **exec);
/*
 * Launch: asynchronous. Launching again reruns the graph on the buffers'
 * current contents, after the previous launch.
 */
WEFT_API int weft_exec_launch(weft_exec *e);
/*
 * Launch e after the work the program has queued so far on its own queue
 * of driver (a CUstream, NULL being the current context's default stream;
 * a cl_command_queue; for host and sim a weft queue, for tests), like
 * cuGraphLaunch on a stream: weft marks that work now (an event recorded
 * on the queue; the program's queue is not otherwise touched) and the
 * launch issues nothing before the mark completes (an engine thread
 * waits for it). Otherwise as weft_exec_launch. WEFT_EINVAL for a NULL
 * or unknown driver; WEFT_ENOTSUP for a driver with no device in the
 * runtime; the driver's error where it refuses the queue.
 */
WEFT_API int weft_exec_launch_after(weft_exec *e, const char *driver,
                                    void *queue);
/*
 * Wait for every launch of e. Returns 0, or the error of the first node
 * that failed (its descendants were canceled; the detail names the node).
 */
WEFT_API int weft_exec_wait(weft_exec *e);
/* 0 if idle and the last launch succeeded, WEFT_ENOTREADY while running,
 * else the error of the failed node. */
WEFT_API int weft_exec_status(weft_exec *e);
/*
 * Wait for e, then destroy it. NULL is ignored. Threads waiting on e in
 * weft_exec_wait or weft_exec_set_arg when it is called return first; a
 * call on e that starts after it is a use of a destroyed object.
 */
WEFT_API int weft_exec_destroy(weft_exec *e);

/*
 * Change a value argument (a scalar or bytes, not a buffer or local array)
 * of kernel node node in e, for the launches made after this call: arg must
 * have the type and size of the argument it replaces. Waits for the
 * launches already made. On CUDA a graph running as one native graph is
 * updated in place (no new lowering). WEFT_EARGS for a buffer or local
 * argument, or another type or size; WEFT_EINVAL for a node that is not a
 * kernel node.
 */
WEFT_API int weft_exec_set_arg(weft_exec *e, unsigned node, unsigned index,
                               weft_arg arg);

/* The device node runs on in e (kernel nodes: where placement put it). */
WEFT_API const weft_device *weft_exec_node_device(const weft_exec *e,
                                                  unsigned node);

/*
 * What the last finished launch of e did, per lane of every device it
 * used. Busy times come from the devices' own clocks (timing events) and
 * are measured only in timed launches: when the runtime traces
 * (WEFT_TRACE), when WEFT_STATS is set, and in the first launches of a
 * graph that a cost model placed; otherwise they are 0 and timed is 0.
 */
typedef struct weft_lane_stats {
    const weft_device *device;
    const char *role; /* "compute0", "compute1" (up to "compute7" on a
                         CPU device, one per thread), "h2d", "d2h", "peer" */
    uint64_t ops;     /* operations enqueued: work and waits (not the
                         event records that others wait on) */
    uint64_t nodes;   /* graph nodes whose work ended on this lane */
    uint64_t busy_ns; /* time the lane's work ran (timed launches) */
    uint64_t span_ns; /* from its first start to its last end; idle time
                         is span_ns - busy_ns (timed launches) */
} weft_lane_stats;

typedef struct weft_exec_stats {
    size_t size;           /* set by the caller to sizeof(weft_exec_stats) */
    uint64_t launches;     /* finished launches */
    uint64_t nodes;        /* nodes issued by the last launch */
    uint64_t events;       /* events recorded to order work across lanes */
    uint64_t waits;        /* device-side waits on them */
    uint64_t host_syncs;   /* times the host waited for a device */
    uint64_t last_ns;      /* host time of the last launch, issue to end */
    unsigned timed;        /* 1 if the last launch was timed (busy_ns) */
    unsigned devices_used; /* distinct devices that ran kernel or native
                              nodes */
    /* Launches that ran as native graphs (a CUDA graph per device,
     * replayed when a launch issues exactly what the one before did;
     * WEFT_NATIVE_GRAPHS=0 turns this off). */
    uint64_t native_launches;
    unsigned nlanes; /* entries of lanes that are filled */
    weft_lane_stats lanes[64];
    /* Native launches that skipped the issue: every buffer's copies were
     * where the launch before (which ran the same graph) found and left
     * them, so the graph ran again without weft walking the nodes. */
    uint64_t native_replays;
    /* Native graphs updated in place (or made anew) because a launch
     * changed only parameters: scalar arguments (weft_exec_set_arg) or
     * the device memory a buffer occupies. */
    uint64_t native_updates;
    /* Driver graphs that a native launch runs: one per device, and more
     * where work goes from a device to another and back within a launch
     * (the graphs wait for each other through events). 0 while the
     * executable graph has none. */
    unsigned native_graphs;
} weft_exec_stats;

/* Fill stats (size set by the caller) for the last finished launch. */
WEFT_API int weft_exec_get_stats(weft_exec *e, weft_exec_stats *stats);

/*
 * Per-node device timings. weft_exec_enable_timings(e, 1): every launch of
 * e made from then on is timed as traces are (WEFT_TRACE): each operation
 * weft issues on a device is bracketed by two of the driver's timing
 * events (cuEventRecord; OpenCL event profiling, on queues made with
 * profiling; the sim's virtual clock) placed on the host clock, and each
 * host step is read from the host clock. A timed launch runs its
 * operations one by one: it is never replayed as a native graph, so
 * timings cost launch time. 0 turns it off again. Thread safe.
 * WEFT_EINVAL for a NULL e or an on other than 0 or 1.
 */
WEFT_API int weft_exec_enable_timings(weft_exec *e, int on);

/* What weft_exec_node_timing gives. */
typedef struct weft_node_timing {
    size_t size;    /* set by the caller to sizeof(weft_node_timing) */
    unsigned timed; /* 1 if the node had timed work in the launch (an
                       empty node, or one canceled, has none: zeros) */
    /* From the launch's start (weft_exec_launch's job starting to issue)
     * to the start of the node's first operation and the end of its last,
     * in nanoseconds: everything weft issued for the node (the transfers
     * that made its inputs valid on its device, any write-back to make
     * room, and its own work: the kernel, the native function's queue
     * work, the copy or fill, the host task). */
    uint64_t start_ns;
    uint64_t end_ns;
    /* The sum of those operations' own times (they may overlap). The
     * times of one device are exact against each other; a device's are
     * placed on the host clock through an event waited for at the
     * launch's start, so times of different devices, or of a device and
     * the host, compare to within that wait (microseconds). */
    uint64_t busy_ns;
} weft_node_timing;

/*
 * The timing of node in the last finished launch of e (t->size set by the
 * caller). WEFT_ENOTFOUND if that launch was not timed (timings were off
 * when it was made, or it failed before issuing); WEFT_EINVAL for a NULL
 * argument, a wrong size or a node past the graph's.
 */
WEFT_API int weft_exec_node_timing(weft_exec *e, weft_node node,
                                   weft_node_timing *t);

/*
 * Graphviz DOT of the lowered plan: nodes grouped by device and lane,
 * the events and waits between lanes of the last launch, and the
 * transfers weft inserted (as counted by the last launch).
 */
WEFT_API int weft_exec_write_dot(weft_exec *e, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* WEFT_H */
