/*
 * Buffers and their copies (src/mem/).
 *
 * A buffer is a root (it owns the bytes) or a view (a range of a root).
 * Every access through a view is an access of the root's bytes, so all the
 * state below lives in the root; a view only knows its root and offset.
 *
 * Copies. The root has a host copy (weft's allocation, or the user's memory
 * for a wrapped buffer), always allocated, and on each device of the
 * runtime a replica made of extents: disjoint ranges of the root's bytes,
 * each a block of the device's pool, allocated when a node first needs
 * that range there (the whole root at once, for a small one) and freed by
 * eviction or with the buffer. A coherence tracker (coherence.h) says
 * which bytes are valid where: memory 0 is the host copy, memory 1 + d
 * device d. Bytes valid on a device always lie in one of its extents.
 *
 * Invariant: every byte is valid in at least one memory (a new buffer's
 * host copy is valid, with undefined contents for weft_buffer_create), and
 * every valid copy of a byte holds the same value.
 *
 * Locking. root->lock guards the copies, the tracker and the extents. A
 * graph node holds the locks of every root it touches for as long as it
 * runs; several roots are locked in increasing address order. The
 * synchronous helpers (weft_buffer_read, ...) take the one lock and first
 * wait, on root->idle, until no launch that uses the root is in flight.
 * Eviction, looking for room on a device, try-locks other roots (never
 * waits for one), and uses the roots its own thread holds (root->holder)
 * except the extents pinned by the work in progress (pin == epoch).
 */
#ifndef WEFT_MEM_BUFFER_H
#define WEFT_MEM_BUFFER_H

#include "../base/bandmap.h"
#include "../drivers/submit.h"
#include "coherence.h"
#include "machine.h"
#include "pool.h"

#include <limits.h>

/* "where" for the host copy; devices are runtime device indices. */
#define WEFT__HOST UINT_MAX

/*
 * One range [lo, hi) of a root held on device `device` in blk. The root's
 * replica on that device lists it (root->lock); dprev/dnext link every
 * extent of the device (its devmem lock).
 */
struct weft__extent {
    weft_buffer *root;
    unsigned device;
    size_t lo, hi;
    weft__pool_block blk;
    unsigned long pin; /* == root->epoch: in use by the lock holder */
    /* Its address was handed to the program (weft_buffer_device_address):
     * not evicted until a launch uses the root again (root->lock). */
    unsigned exported;
    /* Exports for other processes (weft_buffer_export) holding it: while
     * above 0 it is neither evicted nor absorbed into a wider extent
     * (root->lock; eviction reads it atomically). */
    unsigned ipc;
    unsigned long made; /* root->epoch when made (== : by the holder) */
    uint64_t last_use;  /* rt->tick when last pinned */
    weft__extent *dprev, *dnext;
};

/*
 * A root's copy on one device. extents is sorted by lo, the extents
 * disjoint: a lookup is a binary search, after a look at hint (the index
 * of the last hit), which the nodes of a graph, touching the root in
 * order or the same range again, hit most of the time. A small root has
 * one extent, the whole root (replica.c, WEFT__EXTENT_WHOLE).
 */
typedef struct weft__replica {
    weft__extent **extents; /* nextents of cap, by lo, disjoint */
    size_t nextents, cap;
    size_t hint; /* an index into extents, maybe stale */
    /*
     * The host copy registered with the device (atomic: a registering
     * thread may publish it, replica.c); reg_failed (atomic): failed once,
     * not retried. reg_busy: reg_thread was started (the root's lock; it
     * is joined when the replicas go).
     */
    weft__mem *reg;
    size_t host_moved; /* bytes copied between the host copy and device */
    unsigned reg_failed;
    unsigned reg_busy;
    pthread_t reg_thread;
    /*
     * The replica is the program's memory (weft_buffer_wrap_device): one
     * extent, the whole root, whose block is borrowed memory (blk.extent
     * NULL) from no pool and on no device list, so never evicted, not
     * counted against the device's limit, and released (never freed) with
     * the root.
     */
    unsigned wrapped;
} weft__replica;

struct weft_buffer {
    weft_runtime *rt;
    weft_buffer *root;   /* itself for a root */
    weft_buffer *parent; /* the buffer a view was made from; NULL for roots */
    size_t offset;       /* of the first byte in the root */
    size_t size;
    long views;  /* views made from this buffer and alive (root->lock) */
    long graphs; /* accesses of live graphs naming this handle (atomic) */
    long execs;  /* accesses of live executable graphs naming it (atomic) */

    /* The rest is used in roots only. */
    pthread_mutex_t lock;
    pthread_cond_t idle; /* signalled when inflight drops to 0 */
    const void *holder;  /* the thread holding lock, or NULL; atomic */
    unsigned long epoch; /* bumped at every lock (pins of the last holder
                            expire) */
    unsigned char *host; /* the host copy */
    unsigned owned;      /* host was allocated by weft */
    unsigned host_block; /* host lies in a weft_host_alloc block, held */
    unsigned exported;   /* some extent is exported (see weft__extent) */
    long ipc_exports;    /* weft_buffer_export's not released (root->lock) */
    long inflight;       /* launches queued or running that use the root */
    weft_buffer *mapped_by;
    void *map_ptr;
    size_t map_off, map_size; /* in the root */
    weft_access map_mode;
    /* When the graph that last ran a node on the root uses it next, in
     * rt->tick units (0: unknown); eviction keeps the nearest. */
    uint64_t next_use;
    weft__coherence coh;
    weft__replica *replicas; /* rt->ndevices entries */
    /*
     * Executable graphs naming this root, through any view (atomic); with
     * more than one, a node that leaves work in flight on the root records
     * fence (an event of its executor's, recorded after that work, under
     * root->lock) and fence_owner (the executor's weft__lanes): another
     * user waits for fence before touching the root. Cleared under the
     * lock by whoever waited for it, or by the owner when it goes.
     */
    long root_execs;
    weft__event *fence;
    const void *fence_owner;
    /*
     * Host nodes running on a host worker that write the host copy
     * (atomic; raised under the lock by the issuing thread, lowered by the
     * worker once the node's function has returned). While any does, a
     * read does not widen over bytes its node did not ask for (replica.c,
     * weft__ready): those may be the ones being written.
     */
    long host_writers;
};

/*
 * Ordering hooks of an asynchronous user of the lanes (the executor's
 * plan, src/sched/lanes.c), so that this layer never calls up: with hooks,
 * transfers are enqueued and not waited for, and the hooks order them.
 *
 * queue: a queue of role on device for work of the step in progress,
 *   already ordered after whatever the step must follow.
 * issued: work was enqueued on q; if root is not NULL, that work writes
 *   [off, off + len) of root's copy `where` (a device, or WEFT__HOST);
 *   with root NULL, len may give the bytes it moved to memory that is no
 *   copy of a buffer (a read node's destination).
 * after: work about to be enqueued on q (NULL: the calling thread) uses
 *   [off, off + len) of root's copy `where`: order it after the copies
 *   still on their way into that range, whoever they were made for (the
 *   tracker counts a copy as done once it is enqueued).
 * drain: wait for everything enqueued (before memory is freed or extents
 *   are rearranged, which must not race work in flight).
 */
typedef struct weft__lane_hooks {
    int (*queue)(void *set, unsigned device, weft__queue_role role,
                 weft__queue **q);
    int (*issued)(void *set, weft__queue *q, weft_buffer *root, unsigned where,
                  size_t off, size_t len);
    int (*after)(void *set, weft__queue *q, weft_buffer *root, unsigned where,
                 size_t off, size_t len);
    int (*drain)(void *set);
    /*
     * The transfers from now until the next call (root NULL) copy bytes of
     * root that the node in progress reads: their lanes need wait only
     * for the nodes that wrote those bytes, not for all its predecessors;
     * from_host: from root's host copy, whose bytes are complete but for
     * copies still on their way in (after) — no node need be waited for.
     * Optional (NULL: every transfer waits for all of them).
     */
    void (*source)(void *set, weft_buffer *root, int from_host);
    /*
     * The next issued copy moves bytes, fewer than the range it writes
     * (a block: its rows within their span), for the figures of that
     * copy (traces, per-node bytes). Optional.
     */
    void (*moved)(void *set, size_t bytes);
} weft__lane_hooks;

/*
 * Queues for the transfers of one thread and the thread's scratch lists
 * for the tracker. Without hooks (the synchronous helpers, which make one
 * per call): one queue per device, created when a transfer first needs
 * that device, and every transfer waited for before the call goes on.
 * With hooks (an executable graph's worker, its only user): the hooks'
 * lanes, and nothing waited for that need not be. Driver queues are not
 * shared between threads.
 *
 * submit: where the transfers' enqueues and waits go (submit.h), set by
 * the lanes' user for the span of a launch's issue; NULL (as init leaves
 * it): the driver entry points.
 */
typedef struct weft__lanes {
    weft_runtime *rt;
    /* What the launch that owns the lanes counts aside (NULL: nothing),
     * and the host-side work done through them (weft__lanes_host_effect). */
    weft__stat_sink *sink;
    unsigned long host_effects;
    weft__queue **queues; /* rt->ndevices entries, or NULL */
    weft__coherence_transfers tr;
    weft__coherence_ranges ranges;
    const weft__lane_hooks *hooks; /* NULL: synchronous */
    void *set;                     /* the hooks' own */
    const weft__submit *submit;
} weft__lanes;

void weft__lanes_init(weft__lanes *l, weft_runtime *rt);
/* Add n to a counter of rt->stats for work done through l. */
static inline void weft__lanes_stat(weft__lanes *l, uint64_t *counter,
                                    uint64_t n)
{
    weft__stat_add(l->sink, counter, n);
}
/*
 * Host-side work done or set off through l: bytes moved or filled in host
 * memory by the calling thread or by staging threads, a map or host task
 * run. A native graph holds device work only, so a launch that did any of
 * it is never replayed.
 */
static inline void weft__lanes_host_effect(weft__lanes *l)
{
    l->host_effects++;
}
int weft__lanes_queue(weft__lanes *l, unsigned device, weft__queue **q);
void weft__lanes_release(weft__lanes *l);
/*
 * queue_sync (through s) that, when it fails, still waits for the work (so
 * that no copy writes memory after its caller saw it fail).
 */
int weft__lanes_sync(const weft__submit *s, weft__queue *q);
/* The queue for a transfer of role on device (the hooks', or the one). */
int weft__lanes_get(weft__lanes *l, unsigned device, weft__queue_role role,
                    weft__queue **q);
/*
 * After enqueueing on q: synchronous lanes wait for it (and return its
 * status); asynchronous ones note it (root, where as in the hooks).
 */
int weft__lanes_issued(weft__lanes *l, weft__queue *q, weft_buffer *root,
                       unsigned where, size_t off, size_t len);
/* The bytes the next weft__lanes_issued copy moves (see hooks.moved). */
void weft__lanes_moved(weft__lanes *l, size_t bytes);
/* An enqueue on q failed: synchronous lanes still wait for what went before. */
void weft__lanes_settle(weft__lanes *l, weft__queue *q);
/* The hooks' after and drain; nothing for synchronous lanes. */
int weft__lanes_after(weft__lanes *l, weft__queue *q, weft_buffer *root,
                      unsigned where, size_t off, size_t len);
int weft__lanes_drain(weft__lanes *l);
/* See weft__lane_hooks.source. */
void weft__lanes_source(weft__lanes *l, weft_buffer *root, int from_host);
/*
 * Another graph's asynchronous work on root that is not known complete:
 * wait for its fence (root locked by the caller; see fence in weft_buffer)
 * and return 0, or return 1 if it left no fence (then only the end of its
 * launch says the work is over: weft__buffer_wait_owner, with no lock
 * held).
 */
int weft__lanes_fence_wait(weft__lanes *l, weft_buffer *root);
void weft__buffer_wait_owner(weft_buffer *root, const void *owner);

void weft__buffer_lock(weft_buffer *root);
void weft__buffer_unlock(weft_buffer *root);

/*
 * The functions below take a root, locked by the caller, and a range of
 * it; they are the whole interface of the copies.
 *
 * make_valid: after it, copy `where` holds the current bytes of the range,
 * moved from the cheapest copies that hold them (a peer device before the
 * host) for the bytes it lacked; on a device the range lies in one extent,
 * pinned until the root is unlocked. A tiny range of a small root, at the
 * root's first use on a device, brings along the rest of the root that is
 * best copied from the host copy (replica.c, weft__ready). prepare is the
 * same without moving any bytes, for a range that is about to be
 * overwritten whole.
 */
int weft__buffer_make_valid(weft_buffer *root, unsigned where, size_t off,
                            size_t size, weft__lanes *l);
int weft__buffer_prepare(weft_buffer *root, unsigned where, size_t off,
                         size_t size, weft__lanes *l);
/*
 * Room in the tracker for n later updates (written, discard) of ranges
 * that make_valid or prepare saw, so that those cannot fail.
 */
int weft__buffer_reserve(weft_buffer *root, unsigned n);
/*
 * The range was written in copy `where` (which make_valid or prepare
 * readied, and reserve made room for): the other copies of it are stale.
 */
void weft__buffer_written(weft_buffer *root, unsigned where, size_t off,
                          size_t size);
/*
 * Work on `where` that was meant to write the range failed part-way, so
 * that its bytes there are unknown: they stop being valid there, except
 * those it holds alone (then there is nothing better to keep).
 */
void weft__buffer_discard(weft_buffer *root, unsigned where, size_t off,
                          size_t size);
/*
 * Regions (base/bandmap.h: a range, or a 2-D block of rows): make_valid,
 * prepare, written and discard of every byte of r. On a device the whole
 * of [r->off, weft__region_end(r)) lies in one extent, so that the block
 * keeps the root's layout there (its rows r->p apart from the address of
 * r->off). written_region cannot fail for a region that make_valid_region
 * or prepare_region readied since the root's last hold. 3-D blocks are
 * their slices, one region each.
 */
int weft__buffer_make_valid_region(weft_buffer *root, unsigned where,
                                   const weft__region *r, weft__lanes *l);
int weft__buffer_prepare_region(weft_buffer *root, unsigned where,
                                const weft__region *r, weft__lanes *l);
void weft__buffer_written_region(weft_buffer *root, unsigned where,
                                 const weft__region *r);
void weft__buffer_discard_region(weft_buffer *root, unsigned where,
                                 const weft__region *r);
/*
 * Cut the tracker at r's edges (no state changes), so that a later
 * written_region or discard_region of r cannot fail: for work that marks
 * a region written without readying it first (the host-only fast path).
 */
int weft__buffer_cut_region(weft_buffer *root, const weft__region *r);
/* 1 if copy `where` holds the current bytes of every byte of r. */
int weft__buffer_is_valid_region(const weft_buffer *root, unsigned where,
                                 const weft__region *r);
/* 1 if copy `where` holds every byte of range r and no other copy any. */
int weft__buffer_held_alone_region(const weft_buffer *root, unsigned where,
                                   const weft__region *r);
/*
 * The device memory holding byte off of the root on device, which
 * make_valid or prepare readied: *mem and *moff for a kernel argument.
 */
void weft__buffer_device_ptr(weft_buffer *root, unsigned device, size_t off,
                             weft__mem **mem, size_t *moff);
/*
 * 1 if one extent of the root on device holds the whole range, with
 * *mem and *moff its address there (as device_ptr's); else 0.
 */
int weft__buffer_device_find(weft_buffer *root, unsigned device, size_t off,
                             size_t size, weft__mem **mem, size_t *moff);
/*
 * The extent of device holding the range (which make_valid readied) is
 * the program's to use (weft_buffer_device_address): eviction leaves it
 * until the next launch that uses the root (launch_begin).
 */
void weft__buffer_export(weft_buffer *root, unsigned device, size_t off,
                         size_t size);
/*
 * Exports for other processes (weft_buffer_export): the extent of device
 * holding [off, off + size) gains (delta 1) or loses (-1) one, and *mem,
 * *moff (may be NULL) say where the range's first byte is. WEFT_ESTATE
 * where no extent holds the range, or (delta -1) none of its exports.
 */
int weft__buffer_ipc_hold(weft_buffer *root, unsigned device, size_t off,
                          size_t size, int delta, weft__mem **mem,
                          size_t *moff);
/*
 * What a weft_ipc_handle holds: the driver's handle of the allocation, the
 * offset of the range's first byte in it and the range's size, and the
 * exporting process (weft_ipc_open refuses a handle of its own process,
 * which CUDA cannot map).
 */
#define WEFT__IPC_MAGIC 0x77667431u /* "wft1" */
typedef struct weft__ipc_wire {
    uint32_t magic;
    uint32_t pid;
    uint64_t offset, size;
    unsigned char drv[WEFT__IPC_DRV_SIZE];
} weft__ipc_wire;
_Static_assert(sizeof(weft__ipc_wire) <= WEFT_IPC_HANDLE_SIZE,
               "weft_ipc_handle holds weft__ipc_wire");
/* The host address of byte off of the root's host copy. */
void *weft__buffer_host(weft_buffer *root, size_t off);
/*
 * Evict every extent of device that this thread may, the pinned ones of
 * the roots it holds included: for a node whose ranges did not fit between
 * the blocks it had pinned, to try once more from an empty pool.
 */
int weft__buffer_evict_all(weft_runtime *rt, unsigned device, weft__lanes *l);

/* A range [off, off + size) of a root, as a node touches it. */
typedef struct weft__span {
    weft_buffer *root;
    size_t off, size;
} weft__span;

/*
 * Room on device d for every range of spans[0, n) (of roots this thread
 * holds), before make_valid or prepare of each: the extents that hold
 * them, made now (pinned). What a node needs is, for each root, the
 * union of its ranges there (ranges that overlap or touch count once),
 * each run of it widened as a new extent is (to multiples of 256 bytes,
 * or the whole of a small root) and then rounded to the pool's alignment,
 * summed over the roots. More than the device's limit (rounded down to
 * that alignment): WEFT_EDEVMEM saying the need, the union and the limit,
 * with nothing evicted. Otherwise, where the room left between the blocks
 * that stay pinned does not take the extents, every extent of the device
 * that may go leaves it (evict_all) and they are made again in one piece
 * of the pool. If what cannot go (the extents of other launches' work in
 * flight, of roots other threads hold or that are mapped) leaves too
 * little: WEFT__NO_ROOM, the detail string saying so; the caller may
 * wait for that work and try again. Sorts spans.
 */
int weft__buffer_hold(weft__span *spans, size_t n, unsigned d, weft__lanes *l);
/* hold's (and copy's) answer when the room is held by others. */
enum { WEFT__NO_ROOM = 2 };
/* Free every extent and registration of a root (destroy, locked). */
void weft__buffer_free_replicas(weft_buffer *root);
/* 1 if copy `where` holds the current bytes of the whole range. */
int weft__buffer_is_valid(const weft_buffer *root, unsigned where, size_t off,
                          size_t size);

/*
 * Write, read and fill a range. store and fill write every device copy
 * that holds the whole range, so that a small write does not invalidate a
 * device's copy, and the host copy where it holds the range too, unless
 * the range is large and a device holds it (or where no device does);
 * where prefer (a device, or WEFT__HOST for none) is one of those devices,
 * or holds none of the range while another device does, only prefer is
 * written and the other copies become stale (a graph's write node for a
 * kernel on prefer: the bytes go where they are read, once);
 * load brings the host copy of the range up to date and reads it. A
 * failure leaves the bytes as they were, or wholly new.
 */
int weft__buffer_store(weft_buffer *root, size_t off, const void *src,
                       size_t size, unsigned prefer, weft__lanes *l);
int weft__buffer_load(weft_buffer *root, size_t off, void *dst, size_t size,
                      weft__lanes *l);
/*
 * A read node's copy out to the caller's host memory dst straight from a
 * device, where the host copy lacks some of the range and one device holds
 * all of it: on that device's D2H lane, in place where dst is pinned, else
 * through the stager (with asynchronous lanes, without waiting for it).
 * The host copy and the tracker stay as they were (the host copy was not
 * written). 1 if it did: dst holds the bytes once the lane's work so far
 * has completed (the plan's drain, at the latest); 0 if the range does not
 * qualify and nothing was done: the caller goes through the host copy
 * (make_valid, then a copy out of it).
 */
int weft__buffer_load_direct(weft_buffer *root, size_t off, void *dst,
                             size_t size, weft__lanes *l);
int weft__buffer_fill_range(weft_buffer *root, size_t off, size_t size,
                            const void *pattern, size_t pattern_size,
                            unsigned prefer, weft__lanes *l);
/*
 * Copy size bytes from src at soff to dst at doff (roots, both locked,
 * ranges disjoint if the roots are the same) on `device`: the source range
 * is made valid there and the copy runs there; WEFT__HOST copies through
 * the host copies. WEFT__NO_ROOM as hold says.
 */
int weft__buffer_copy(weft_buffer *dst, size_t doff, weft_buffer *src,
                      size_t soff, size_t size, unsigned device,
                      weft__lanes *l);
/*
 * Blocks of a root for the block transfers (store.c): slices regions
 * slice_pitch apart, the first r (base/bandmap.h; slices 1: r alone).
 * Host memory on the other side has its own pitches (0 rows: r.w, 0
 * slices: r.h * row pitch).
 */
typedef struct weft__buffer_block {
    weft__region r;
    size_t slices, slice_pitch;
} weft__buffer_block;

/* One past the block's last byte. */
static inline size_t weft__buffer_block_end(const weft__buffer_block *b)
{
    return weft__region_end(&b->r) + (b->slices - 1) * b->slice_pitch;
}
/*
 * The lowest device whose one extent holds the block's bounding range and
 * where every byte of the block is valid, or WEFT__HOST if none.
 */
unsigned weft__buffer_block_holder(weft_buffer *root,
                                   const weft__buffer_block *b);
/*
 * The block from host memory src (pitches as said above) into copy
 * `device` of root (a device: through the driver's block copy on its H2D
 * lane, the other copies stale after it; WEFT__HOST: row by row into the
 * host copy, once the copies in flight there have landed, the caller
 * having waited for the node's predecessors). WEFT__NO_ROOM as hold says.
 */
int weft__buffer_store_block(weft_buffer *root, const weft__buffer_block *b,
                             const void *src, size_t row_pitch,
                             size_t slice_pitch, unsigned device,
                             weft__lanes *l);
/*
 * The block of root into host memory dst: from `device` (which
 * weft__buffer_block_holder named) through the driver's block copy on its
 * D2H lane, done once the lane's work is; WEFT__HOST: the host copy made
 * valid and copied out of row by row, the caller having waited for the
 * node's predecessors. The tracker changes only for the host copy made
 * valid.
 */
int weft__buffer_load_block(weft_buffer *root, const weft__buffer_block *b,
                            void *dst, size_t row_pitch, size_t slice_pitch,
                            unsigned device, weft__lanes *l);
/*
 * Block sb of src into block db of dst (same extent; disjoint if the roots
 * are the same) on `device`, through the driver's block copy, or row by
 * row through the host copies (WEFT__HOST, the caller having waited for
 * the node's predecessors). WEFT__NO_ROOM as hold says.
 */
int weft__buffer_copy_block(weft_buffer *dst, const weft__buffer_block *db,
                            weft_buffer *src, const weft__buffer_block *sb,
                            unsigned device, weft__lanes *l);
/* The lowest device holding the whole range, or WEFT__HOST if none. */
unsigned weft__buffer_device_holding(const weft_buffer *root, size_t off,
                                     size_t size);
/*
 * The root's tracker state as bytes, for telling whether it changed
 * between two moments: where each range is valid, each device's extents
 * and their memory, the host copy (not the fence: a root shared by two
 * executable graphs is never compared). Writes what fits in cap
 * bytes of out and returns the size of the whole. Under root's lock; it
 * settles the tracker first (weft__coherence_settle), so that equal
 * states compare equal.
 */
size_t weft__buffer_state(weft_buffer *root, unsigned char *out, size_t cap);

/*
 * A graph (src/graph/) names buf in one more or one fewer access: while
 * any does, weft_buffer_destroy of that handle is WEFT_EBUSY.
 */
void weft__buffer_graph_ref(weft_buffer *buf, long d);
/*
 * For the executor: an executable graph names buf (count it in or out);
 * a launch that uses root begins (WEFT_EBUSY if the root is mapped) and
 * ends. These take the lock themselves.
 */
void weft__buffer_exec_ref(weft_buffer *buf, long d);
/* An executable graph names root (once per graph; see root_execs). */
void weft__buffer_root_execs(weft_buffer *root, long d);
int weft__buffer_launch_begin(weft_buffer *root);
/* owner: the ending launch's weft__lanes, whose fences on root end. */
void weft__buffer_launch_end(weft_buffer *root, const void *owner);

/* 0 if a fill pattern fits the range, else WEFT_EINVAL saying why. */
int weft__fill_check(const void *pattern, size_t pattern_size, size_t offset,
                     size_t size, const char *fn);

/* "buffer of 4096 bytes" / "view [64, 128) of a 4096-byte buffer". */
void weft__buffer_describe(const weft_buffer *buf, char *out, size_t size);

/* The index of dev among rt's devices, else WEFT_EINVAL naming fn. */
int weft__device_index(const weft_runtime *rt, const weft_device *dev,
                       unsigned *d, const char *fn);

#endif /* WEFT_MEM_BUFFER_H */
