/*
 * Buffers and their copies (src/mem/).
 *
 * A buffer is a root (it owns the bytes) or a view (a range of a root).
 * Every access through a view is an access of the root's bytes, so all the
 * state below lives in the root; a view only knows its root and offset.
 *
 * Copies. The root has a host copy (weft's allocation, or the user's memory
 * for a wrapped buffer) and one replica per device of the runtime,
 * allocated on first use. For now validity is one flag per copy for the
 * whole buffer; the coherence tracker of a later issue replaces it per
 * range. Everything above this file goes through the functions below
 * (make_valid, written, store, load, fill), which take the range they care
 * about, so that the swap touches this file only.
 *
 * Invariant: at least one copy is valid at any time (a new buffer's host
 * copy is valid, with undefined contents for weft_buffer_create). Every
 * valid copy holds the same bytes.
 *
 * Locking. root->lock guards the copies, their flags and the counters. A
 * graph node holds the locks of every root it touches for as long as it
 * runs; several roots are locked in increasing address order. The
 * synchronous helpers (weft_buffer_read, ...) take the one lock and first
 * wait, on root->idle, until no launch that uses the root is in flight.
 */
#ifndef WEFT_MEM_BUFFER_H
#define WEFT_MEM_BUFFER_H

#include "../runtime.h"

#include <limits.h>

/* "where" for the host copy; devices are runtime device indices. */
#define WEFT__HOST UINT_MAX

typedef struct weft__replica {
    weft__mem *mem; /* NULL until the device first needs the bytes */
    unsigned valid;
} weft__replica;

struct weft_buffer {
    weft_runtime *rt;
    weft_buffer *root;   /* itself for a root */
    weft_buffer *parent; /* the buffer a view was made from; NULL for roots */
    size_t offset;       /* of the first byte in the root */
    size_t size;
    long views; /* views made from this buffer and alive (root->lock) */
    long execs; /* live executable graphs naming this buffer (atomic) */

    /* The rest is used in roots only. */
    pthread_mutex_t lock;
    pthread_cond_t idle; /* signalled when inflight drops to 0 */
    unsigned char *host; /* the host copy */
    unsigned owned;      /* host was allocated by weft */
    unsigned host_valid;
    long inflight; /* launches queued or running that use the root */
    weft_buffer *mapped_by;
    void *map_ptr;
    weft_access map_mode;
    weft__replica *replicas; /* rt->ndevices entries */
};

/*
 * Queues for the transfers of one thread: one per device, created when a
 * transfer first needs that device. The executor keeps one set per
 * executable graph (its worker is the only user); the synchronous helpers
 * make one per call. Driver queues are not shared between threads.
 */
typedef struct weft__lanes {
    weft_runtime *rt;
    weft__queue **queues; /* rt->ndevices entries, or NULL */
} weft__lanes;

void weft__lanes_init(weft__lanes *l, weft_runtime *rt);
int weft__lanes_queue(weft__lanes *l, unsigned device, weft__queue **q);
void weft__lanes_release(weft__lanes *l);
/*
 * queue_sync that, when it fails, still waits for the work (so that no
 * copy writes memory after its caller saw it fail).
 */
int weft__lanes_sync(weft__queue *q);

void weft__buffer_lock(weft_buffer *root);
void weft__buffer_unlock(weft_buffer *root);

/*
 * The functions below take a root, locked by the caller, and a range of
 * it; they are the whole interface of the copies.
 *
 * make_valid: after it, copy `where` holds the current bytes of the range
 * (with whole-buffer flags: of the whole buffer), moving them from another
 * copy as needed. A copy that is already valid is not touched, so a buffer
 * kept on a device crosses to it once.
 */
int weft__buffer_make_valid(weft_buffer *root, unsigned where, size_t off,
                            size_t size, weft__lanes *l);
/*
 * The range was written in copy `where` (which was valid before): the
 * other copies of it are stale now.
 */
void weft__buffer_written(weft_buffer *root, unsigned where, size_t off,
                          size_t size);
/*
 * Work on `where` that was meant to write the range failed part-way, so
 * that its bytes there are unknown: it stops being valid, unless it is the
 * only valid copy (then there is nothing better to keep).
 */
void weft__buffer_discard(weft_buffer *root, unsigned where, size_t off,
                          size_t size);
/* The device memory of a replica that make_valid made valid. */
weft__mem *weft__buffer_replica(weft_buffer *root, unsigned device);
/* The host address of byte off of the root's host copy. */
void *weft__buffer_host(weft_buffer *root, size_t off);

/*
 * Write, read and fill a range wherever it is valid (store and fill write
 * every valid copy, so that no copy is invalidated by a small write; load
 * reads the host copy if valid, else a device's). A failure leaves the
 * bytes as they were.
 */
int weft__buffer_store(weft_buffer *root, size_t off, const void *src,
                       size_t size, weft__lanes *l);
int weft__buffer_load(weft_buffer *root, size_t off, void *dst, size_t size,
                      weft__lanes *l);
int weft__buffer_fill_range(weft_buffer *root, size_t off, size_t size,
                            const void *pattern, size_t pattern_size,
                            weft__lanes *l);

/*
 * For the executor: an executable graph names buf (count it in or out);
 * a launch that uses root begins (WEFT_EBUSY if the root is mapped) and
 * ends. These take the lock themselves.
 */
void weft__buffer_exec_ref(weft_buffer *buf, long d);
int weft__buffer_launch_begin(weft_buffer *root);
void weft__buffer_launch_end(weft_buffer *root);

/* 0 if a fill pattern fits the range, else WEFT_EINVAL saying why. */
int weft__fill_check(const void *pattern, size_t pattern_size, size_t offset,
                     size_t size, const char *fn);

/* "buffer of 4096 bytes" / "view [64, 128) of a 4096-byte buffer". */
void weft__buffer_describe(const weft_buffer *buf, char *out, size_t size);

#endif /* WEFT_MEM_BUFFER_H */
