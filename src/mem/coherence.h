/*
 * The coherence tracker: for one root buffer, which memories hold valid
 * bytes of which range.
 *
 * Memories are numbered 0..nmem-1 (at most 64): 0 is the host copy, 1.. the
 * device replicas, in whatever order the owner chooses. The tracker knows
 * nothing of allocations or queues; it answers "what must be copied" and
 * records what the owner did, so it can be tested byte by byte against a
 * plain model.
 *
 * State. The bytes [0, size) are cut into segments; each has one state
 * word pair (see weft__coherence_seg) that holds for every byte in it:
 *   valid  bit m set: memory m holds the current bytes of the segment.
 *          Never 0: some memory always holds the current bytes.
 *   flags  WEFT__COH_DIRTY: the host copy is stale, i.e. bit 0 of valid is
 *          clear. It says nothing valid does not; it is kept so that the
 *          state a range is in reads directly, and the validator checks
 *          that the two agree.
 * In the terms of DESIGN.md a segment is, for memory m: invalid if bit m is
 * clear; modified on m if valid is exactly bit m (m holds the only
 * up-to-date copy, which eviction of m must write back first); shared
 * otherwise (valid on m and at least one other memory).
 *
 * Invariants (weft__coherence_check): segments sorted by offset, starting
 * at 0, non-empty, covering [0, size); no two adjacent segments with the
 * same state (they are merged); valid non-zero and within the nmem
 * memories; DIRTY exactly when bit 0 is clear.
 *
 * Cost. The segments are a sorted array: a lookup is a binary search; an
 * update touching k segments makes O(k) comparisons and at most one
 * memmove of the tail of the array (splitting adds at most two segments,
 * merging removes some), and one that changes nothing within a segment
 * (a node writing again where it wrote at the last launch) only the
 * search. A buffer is cut into as many segments as the
 * distinct ranges its nodes touch, tens in practice.
 *
 * Failure. A mutation that fails (out of memory, bad range, a refused drop)
 * changes nothing. Room for the two segments a split may add is reserved
 * before anything is touched.
 *
 * Threads. None of this locks: the owner (the buffer) serializes every
 * call on one tracker, under the root's lock.
 */
#ifndef WEFT_MEM_COHERENCE_H
#define WEFT_MEM_COHERENCE_H

#include "../base/base.h"

#define WEFT__COH_MAX_MEMS 64u
#define WEFT__COH_HOST     0u

enum {
    WEFT__COH_DIRTY = 1u, /* the host copy of the segment is stale */
};

typedef struct weft__coherence_seg {
    size_t off;     /* first byte; the segment ends where the next begins */
    uint64_t valid; /* bit m: memory m holds the current bytes */
    unsigned flags; /* WEFT__COH_* */
} weft__coherence_seg;

typedef struct weft__coherence {
    size_t size;   /* bytes tracked, > 0 */
    unsigned nmem; /* 1..64 */
    size_t nsegs, cap;
    weft__coherence_seg *segs;
} weft__coherence;

/* One copy that a read needs: [off, off + len) from memory src to dst. */
typedef struct weft__coherence_transfer {
    unsigned src, dst;
    size_t off, len;
} weft__coherence_transfer;

/* A list the caller owns and reuses; start from WEFT__COH_LIST_INIT. */
typedef struct weft__coherence_transfers {
    weft__coherence_transfer *items;
    size_t count, cap;
} weft__coherence_transfers;

typedef struct weft__coherence_range {
    size_t off, len;
} weft__coherence_range;

typedef struct weft__coherence_ranges {
    weft__coherence_range *items;
    size_t count, cap;
} weft__coherence_ranges;

#define WEFT__COH_LIST_INIT                                                    \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

void weft__coherence_transfers_fini(weft__coherence_transfers *t);
void weft__coherence_ranges_fini(weft__coherence_ranges *r);

/*
 * What copying one byte from src to dst costs, relative to the other
 * pairs (seconds per byte, say). A smaller cost wins; equal costs go to the
 * lowest src. NaN counts as more than any number.
 */
typedef double weft__coherence_cost_fn(unsigned src, unsigned dst, void *user);

/*
 * Track size bytes over nmem memories, valid at first on the memories of
 * initial_valid (a non-zero subset of the nmem). WEFT_EINVAL for bad
 * arguments, WEFT_ENOMEM; on failure c is left unusable and holds nothing.
 */
int weft__coherence_init(weft__coherence *c, size_t size, unsigned nmem,
                         uint64_t initial_valid);
/* Free what c holds. c may be zeroed or failed to init. */
void weft__coherence_fini(weft__coherence *c);

/*
 * The copies that make [off, off + len) valid on m: one transfer per
 * maximal run of bytes not valid on m whose cheapest valid source (by
 * cost, NULL for all equal) is the same memory, in increasing offset. The
 * list is replaced (count 0 if nothing is missing); on failure it is left
 * as it was. The tracker does not change: call weft__coherence_mark_valid
 * for each transfer (or for the whole range) once the copies completed.
 * WEFT_EINVAL for a bad memory, WEFT_ERANGE for a range past the
 * end, WEFT_ENOMEM.
 */
int weft__coherence_read(const weft__coherence *c, unsigned m, size_t off,
                         size_t len, weft__coherence_cost_fn *cost, void *user,
                         weft__coherence_transfers *out);

/*
 * m now holds the current bytes of [off, off + len): the copies that
 * weft__coherence_read asked for completed. The caller guarantees that no
 * write of the range came in between (the graph orders it).
 */
int weft__coherence_mark_valid(weft__coherence *c, unsigned m, size_t off,
                               size_t len);

/* m wrote [off, off + len): valid there on m alone (modified). */
int weft__coherence_write(weft__coherence *c, unsigned m, size_t off,
                          size_t len);

/*
 * m's copy of [off, off + len) goes away (eviction). WEFT_EBUSY, with the
 * first such range in the detail and nothing changed, if m holds the only
 * valid copy of any byte of it: write those bytes back first
 * (weft__coherence_sole_ranges, then a read on another memory).
 */
int weft__coherence_drop(weft__coherence *c, unsigned m, size_t off,
                         size_t len);

/* 1 if every byte of [off, off + len) is valid on m (len 0: 1). */
int weft__coherence_is_valid(const weft__coherence *c, unsigned m, size_t off,
                             size_t len);

/*
 * The memories that hold the whole of [off, off + len) (bit m set): 0 for
 * a bad range or if no one memory holds all of it, every memory for len 0.
 */
uint64_t weft__coherence_holders(const weft__coherence *c, size_t off,
                                 size_t len);

/*
 * The ranges of [off, off + len) for which m holds the only valid copy:
 * what evicting m would have to write back. Adjacent ranges are merged.
 * The list is replaced; on failure it is left as it was.
 */
int weft__coherence_sole_ranges(const weft__coherence *c, unsigned m,
                                size_t off, size_t len,
                                weft__coherence_ranges *out);

/*
 * The first broken invariant of c, as a sentence (in a thread-local
 * buffer, valid until the next call on this thread), or NULL if c is
 * sound. For tests and the validator.
 */
const char *weft__coherence_check(const weft__coherence *c);
/* weft__coherence_check(c) == NULL; for weft__assert_expensive. */
bool weft__coherence_validate(const weft__coherence *c);

/*
 * Make room for extra more segments, so that the updates that follow (at
 * most two new segments each) cannot fail for want of memory: a caller
 * that must record work already done reserves before doing it.
 */
int weft__coherence_reserve(weft__coherence *c, size_t extra);

#endif /* WEFT_MEM_COHERENCE_H */
