/*
 * What the files of the cuda driver share. Nothing outside
 * src/drivers/cuda/ includes this, except the driver's own tests.
 *
 * cuda.c has the driver's overview, discovery, contexts and the driver
 * table; cuda_lib.c loads libcuda and translates its errors; queues,
 * events and host functions are in cuda_queue.c, memory, copies and fills
 * in cuda_mem.c, modules and launches in cuda_kernel.c, native graphs in
 * cuda_graph.c, and CUDA C++ compilation in cuda_nvrtc.c.
 */
#ifndef WEFT_CUDA_INTERNAL_H
#define WEFT_CUDA_INTERNAL_H

#include "../driver.h"
#include "cuda_api.h"

#include <pthread.h>
#include <stdint.h>

/* Devices beyond this many are ignored (peer state is a 64-bit mask). */
#define CUDA_MAX_DEVICES 64

/* ---- objects ----------------------------------------------------------- */

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
 * guards stage, stage_size, stage_old and stage_next, for queues fed from
 * several threads.
 *
 * The memory layer sends the large ones through its stager, so a queue's
 * own copies are mostly small: its buffers are first made as large as the
 * first copy needs (a power of two, CUDA_STAGE_FIRST at least), since a
 * page-locked allocation costs about 1.2 ms a MiB and a queue belongs to
 * an executable graph; a later copy that needs more replaces them with
 * CUDA_STAGE_BYTES ones once (the old ones, which copies enqueued before
 * may still read, are freed with the queue); where those cannot be had,
 * the copy goes through the buffers the queue has, in more chunks.
 */
enum { CUDA_STAGE_BYTES = 4 << 20, CUDA_STAGE_FIRST = 64 << 10 };

typedef struct cuda_queue {
    weft__queue base;
    CUstream stream;
    pthread_mutex_t stage_lock;
    void *stage[2];
    size_t stage_size;  /* bytes of each of stage[] (0: not made yet) */
    void *stage_old[2]; /* the first, smaller ones, once replaced */
    unsigned stage_next;
} cuda_queue;

typedef struct cuda_mem {
    weft__mem base;
    /* The device address; for host kinds, the host address (UVA). */
    CUdeviceptr ptr;
} cuda_mem;

typedef struct cuda_event {
    weft__event base;
    CUevent cu;
} cuda_event;

static inline cuda_context *cuda_ctx(weft__context *ctx)
{
    return (cuda_context *)ctx;
}

static inline cuda_device *cuda_dev(weft__device *dev)
{
    return (cuda_device *)dev;
}

static inline cuda_mem *cuda_mm(weft__mem *m)
{
    return (cuda_mem *)m;
}

static inline CUstream cuda_stream(weft__queue *q)
{
    return ((cuda_queue *)q)->stream;
}

static inline CUevent cuda_ev(weft__event *ev)
{
    return ((cuda_event *)ev)->cu;
}

/* ---- cuda_lib.c: the library, process-wide state, errors --------------- */

/*
 * Process-wide state. weft__cu is filled once under weft__cuda_lock
 * before the library counts as loaded (release); code that holds a weft
 * object of this driver got it after that, so it reads weft__cu and
 * weft__cuda_driver_version without the lock. weft__cuda_peer_done[i]
 * bit j: the pair (i, j) has been set up for peer copies (enabled, or
 * found impossible); read with acquire without the lock, changed under it.
 */
extern pthread_mutex_t weft__cuda_lock;
extern weft__cuda_api weft__cu;
extern int weft__cuda_driver_version;
extern uint64_t weft__cuda_peer_done[CUDA_MAX_DEVICES];

/*
 * Load libcuda (WEFT_CUDA_LIBRARY, else libcuda.so.1) and cuInit it, once;
 * thread-safe. On failure nothing stays loaded and a later call tries
 * again.
 */
int weft__cuda_load(void);
/*
 * Report a failed CUDA call: code 0 takes the usual translation of res.
 * The detail reads "<what>: <CUDA's message> [cuda CUDA_ERROR_X n]".
 */
int weft__cuda_fail(CUresult res, int code, const char *fmt, ...)
    WEFT__PRINTF(3, 4);

/* ---- cuda.c: discovery and contexts ------------------------------------ */

/* Make ctx current on this thread. */
int weft__cuda_enter(weft__context *ctx);

/* ---- cuda_queue.c: queues, events, host functions ---------------------- */

int weft__cuda_queue_create(weft__context *ctx, const weft__queue_desc *desc,
                            weft__queue **out);
int weft__cuda_queue_sync(weft__queue *q);
void weft__cuda_queue_release(weft__queue *q);
int weft__cuda_event_create(weft__context *ctx, unsigned flags,
                            weft__event **out);
int weft__cuda_event_record(weft__event *ev, weft__queue *q);
int weft__cuda_queue_wait_event(weft__queue *q, weft__event *ev);
int weft__cuda_event_query(weft__event *ev);
int weft__cuda_event_sync(weft__event *ev);
int weft__cuda_event_elapsed(weft__event *start, weft__event *end,
                             uint64_t *ns);
void weft__cuda_event_destroy(weft__event *ev);
int weft__cuda_host_fn(weft__queue *q, weft__host_fn *fn, void *user);
int weft__cuda_native_call(weft__queue *q, weft__native_fn *fn, void *user);
void weft__cuda_native_mem(weft__mem *m, size_t off, weft__native_mem *out);
void weft__cuda_native_context(weft__context *ctx, weft__native_queue *out);
int weft__cuda_external_wait(weft__queue *q, void *ev);
int weft__cuda_external_record(weft__queue *q, void *ev);
int weft__cuda_external_mark(void *queue, void **mark);
int weft__cuda_external_mark_end(void *mark, int wait);

/* ---- cuda_mem.c: memory, copies, fills --------------------------------- */

int weft__cuda_mem_alloc(weft__context *ctx, size_t size, weft__mem **out);
int weft__cuda_host_alloc(weft__context *ctx, size_t size, weft__mem **out);
int weft__cuda_host_register(weft__context *ctx, void *ptr, size_t size,
                             weft__mem **out);
void weft__cuda_mem_free(weft__mem *mem);
int weft__cuda_mem_wrap(weft__context *ctx, uint64_t handle, size_t off,
                        size_t size, weft__mem **out, size_t *moff);
int weft__cuda_host_is_pinned(weft__context *ctx, const void *p, size_t size);
int weft__cuda_ipc_export(weft__mem *m, size_t off, unsigned char *handle,
                          size_t *base_off);
int weft__cuda_ipc_open(weft__context *ctx, const unsigned char *handle,
                        uint64_t *ptr);
int weft__cuda_ipc_close(weft__context *ctx, uint64_t ptr);
int weft__cuda_copy_h2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        const void *src, size_t size);
int weft__cuda_copy_d2h(weft__queue *q, void *dst, weft__mem *src,
                        size_t src_off, size_t size);
int weft__cuda_copy_d2d(weft__queue *q, weft__mem *dst, size_t dst_off,
                        weft__mem *src, size_t src_off, size_t size);
int weft__cuda_copy_peer(weft__queue *q, weft__mem *dst, size_t dst_off,
                         weft__mem *src, size_t src_off, size_t size);
/* Block copies (cuMemcpy2DAsync / cuMemcpy3DAsync); 1 where declined. */
int weft__cuda_copy_h2d_rect(weft__queue *q, weft__mem *dst, const void *src,
                             const weft__rect *r);
int weft__cuda_copy_d2h_rect(weft__queue *q, void *dst, weft__mem *src,
                             const weft__rect *r);
int weft__cuda_copy_d2d_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                             const weft__rect *r);
int weft__cuda_copy_peer_rect(weft__queue *q, weft__mem *dst, weft__mem *src,
                              const weft__rect *r);
int weft__cuda_fill(weft__queue *q, weft__mem *dst, size_t off,
                    const void *pattern, size_t pattern_size, size_t size);

/* ---- cuda_kernel.c: modules, kernels, launches ------------------------- */

int weft__cuda_module_create(weft__context *ctx, const weft__module_source *src,
                             weft__module **out);
void weft__cuda_module_destroy(weft__module *mod);
int weft__cuda_module_binary(weft__module *mod, void **bytes, size_t *size,
                             weft__source_kind *kind);
int weft__cuda_kernel_get(weft__module *mod, const char *name,
                          weft__kernel **out);
int weft__cuda_launch(weft__queue *q, weft__kernel *k, const weft__grid *grid,
                      const weft__karg *args, unsigned nargs);

/* ---- cuda_graph.c: native graphs (stream capture) ---------------------- */

int weft__cuda_graph_supported(const weft__device *dev);
int weft__cuda_graph_begin(weft__queue *q);
int weft__cuda_graph_record_external(weft__event *ev, weft__queue *q);
int weft__cuda_graph_wait_external(weft__queue *q, weft__event *ev);
int weft__cuda_graph_end(weft__queue *q, void *old, void **out, int *updated);
int weft__cuda_graph_launch(void *graph, weft__queue *q);
void weft__cuda_graph_destroy(void *graph);

/* ---- cuda_nvrtc.c: CUDA C++ to cubin or PTX ---------------------------- */

/*
 * A program image ready for the driver: cubin bytes, or PTX text (then
 * data is NUL-terminated and size counts the NUL). data comes from
 * weft__malloc.
 */
typedef struct weft__cuda_image {
    void *data;
    size_t size;
    unsigned is_cubin;
    int arch;  /* the sm_XY / compute_XY it was built for, as XY */
    char *log; /* NVRTC's log of the build (warnings), or NULL */
} weft__cuda_image;

/*
 * Compile CUDA C++ (len bytes of src, or up to its NUL if len is 0) with
 * NVRTC for a device of compute capability cc_major.cc_minor. The image is
 * a cubin for that exact architecture where NVRTC knows it, else PTX for
 * the newest architecture NVRTC knows below it, which the driver then
 * compiles. options are extra compiler flags separated by blanks (NULL for
 * none); if they name an architecture, weft adds none. name is used in
 * messages and #line directives.
 *
 * WEFT_ENOTSUP if NVRTC cannot be loaded or cannot target the device,
 * WEFT_EBUILD with the compiler log in the detail if compilation fails.
 * Thread-safe; needs no GPU.
 */
int weft__cuda_nvrtc_compile(const char *src, size_t len, const char *name,
                             const char *options, int cc_major, int cc_minor,
                             weft__cuda_image *out);
void weft__cuda_image_free(weft__cuda_image *img);

/* The library names tried, in order, by the NVRTC loader. */
extern const char *const weft__cuda_nvrtc_names[];

#endif /* WEFT_CUDA_INTERNAL_H */
