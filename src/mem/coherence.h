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
 * State. A band map (base/bandmap.h) holds, for every byte, its valid
 * mask: bit m set: memory m holds the current bytes. Never 0: some memory
 * always holds the current bytes. The host copy is stale (dirty) where bit
 * 0 is clear. In the terms of DESIGN.md a byte is, for memory m: invalid
 * if bit m is clear; modified on m if valid is exactly bit m (m holds the
 * only up-to-date copy, which eviction of m must write back first);
 * shared otherwise (valid on m and at least one other memory).
 *
 * Regions. Every operation takes a region: a range, or a 2-D block of
 * rows (base/bandmap.h); the _region forms take one, the others a range.
 * A matrix whose tiles are moved and written tile by tile is held as one
 * cell per tile (not a segment per row), and a read asks for one block
 * transfer per tile that lacks its bytes, so that the caller can move it
 * with a 2-D copy.
 *
 * Merging. A mutation cuts the map where the region's edges fall and
 * changes the values inside; it does not join equal neighbours. So once
 * an operation on a region succeeded, later mutations of that region (a
 * node's write after its read) need no memory and cannot fail, however
 * other regions changed in between. weft__coherence_settle joins equal
 * neighbours; the owner calls it where no such later mutation is pending
 * (before a node's first read of its ranges). A mutation that changes no
 * value (a node writing again where it wrote at the last launch) cuts
 * nothing either.
 *
 * Invariants (weft__coherence_check): the band map's, and every mask
 * non-zero and within the nmem memories.
 *
 * Failure. A mutation that fails (out of memory, bad region, a refused
 * drop) changes no byte's state.
 *
 * Threads. None of this locks: the owner (the buffer) serializes every
 * call on one tracker, under the root's lock.
 */
#ifndef WEFT_MEM_COHERENCE_H
#define WEFT_MEM_COHERENCE_H

#include "../base/bandmap.h"

#define WEFT__COH_MAX_MEMS 64u
#define WEFT__COH_HOST     0u

typedef struct weft__coherence {
    size_t size;       /* bytes tracked, > 0 */
    unsigned nmem;     /* 1..64 */
    weft__bandmap map; /* each byte's valid mask */
} weft__coherence;

/*
 * One copy that a read needs, from memory src to dst: rows runs of len
 * bytes, pitch apart, the first at off ([off, off + len) when rows is 1).
 */
typedef struct weft__coherence_transfer {
    unsigned src, dst;
    size_t off, len;
    size_t rows, pitch;
} weft__coherence_transfer;

/* A list the caller owns and reuses; start from WEFT__COH_LIST_INIT. */
typedef struct weft__coherence_transfers {
    weft__coherence_transfer *items;
    size_t count, cap;
} weft__coherence_transfers;

/* rows runs of len bytes, pitch apart, from off (rows 1: a range). */
typedef struct weft__coherence_range {
    size_t off, len;
    size_t rows, pitch;
} weft__coherence_range;

static inline weft__region
weft__coherence_range_region(const weft__coherence_range *r)
{
    weft__region g = {r->off, r->len, r->rows, r->rows > 1 ? r->pitch : 0};
    return g;
}

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
 * cost, NULL for all equal) is the same memory, in increasing offset (a
 * block of rows where the bytes lie in cells of a band). The list is
 * replaced (count 0 if nothing is missing); on failure its count is 0.
 * The tracker does not change: call weft__coherence_mark_valid for each
 * transfer (or for the whole range) once the copies completed.
 * WEFT_EINVAL for a bad memory, WEFT_ERANGE for a range past the
 * end, WEFT_ENOMEM.
 */
int weft__coherence_read(const weft__coherence *c, unsigned m, size_t off,
                         size_t len, weft__coherence_cost_fn *cost, void *user,
                         weft__coherence_transfers *out);
/* The same for a region: each transfer lies inside it. */
int weft__coherence_read_region(const weft__coherence *c, unsigned m,
                                const weft__region *r,
                                weft__coherence_cost_fn *cost, void *user,
                                weft__coherence_transfers *out);
int weft__coherence_mark_valid_region(weft__coherence *c, unsigned m,
                                      const weft__region *r);
int weft__coherence_write_region(weft__coherence *c, unsigned m,
                                 const weft__region *r);
int weft__coherence_drop_region(weft__coherence *c, unsigned m,
                                const weft__region *r);
/*
 * m's copy of the region's bytes that another memory holds too goes away;
 * the bytes m holds alone stay (a write on m that failed part-way: what
 * m holds alone is the best there is).
 */
int weft__coherence_drop_shared(weft__coherence *c, unsigned m,
                                const weft__region *r);
/* The region's pieces m holds alone, as weft__coherence_sole_ranges. */
int weft__coherence_sole_regions(const weft__coherence *c, unsigned m,
                                 const weft__region *r,
                                 weft__coherence_ranges *out);
/* 1 if every byte of the region is valid on m. */
int weft__coherence_is_valid_region(const weft__coherence *c, unsigned m,
                                    const weft__region *r);
/*
 * Cut the map at r's edges, changing no byte's state, so that later
 * updates of exactly r need no memory and cannot fail (see Merging).
 */
int weft__coherence_cut(weft__coherence *c, const weft__region *r);
/* Join equal neighbours among the entries meeting [off, off + len). */
void weft__coherence_settle(weft__coherence *c, size_t off, size_t len);
/* Entries the map holds (for tests and statistics). */
size_t weft__coherence_entries(const weft__coherence *c);

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
 * 1 if m holds every byte of [off, off + len) and no other memory any: 0
 * for a bad range, or len 0.
 */
int weft__coherence_held_alone(const weft__coherence *c, unsigned m, size_t off,
                               size_t len);

/*
 * The ranges of [off, off + len) for which m holds the only valid copy:
 * what evicting m would have to write back. Adjacent ranges are merged;
 * runs in cells of a band come as blocks (rows > 1). The list is
 * replaced; on failure its count is 0.
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
 * Make room for extra more entries. An update of a range that an earlier
 * operation cut the map for needs none (see Merging); this keeps room
 * for the first cut of a range (two entries where the range lies in
 * uniform entries).
 */
int weft__coherence_reserve(weft__coherence *c, size_t extra);

#endif /* WEFT_MEM_COHERENCE_H */
