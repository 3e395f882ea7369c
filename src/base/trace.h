/*
 * Traces: what ran where and when, written as a Chrome trace / Perfetto JSON
 * file. Reading a file back, and its summary, are not part of libweft: they
 * are the library weft_tracefile (tools/tracefile/) of weft-trace and tests.
 *
 * A trace has tracks (one per lane of each device, one per host worker),
 * grouped by process (one per device, "host" for the workers). Slices sit on
 * tracks; flows join two slices whose dependency crossed lanes.
 *
 * Cost when off: whoever may trace holds a weft__trace pointer that is NULL
 * when tracing is off, and guards every hook with weft__trace_on(t): one
 * predictable branch, no call, no argument evaluated.
 *
 * Threads: weft__trace_add_slice and weft__trace_add_flow may be called from
 * any number of threads at once and take no lock (a slot is claimed with one
 * atomic add). weft__trace_track takes a mutex; register tracks before the
 * work starts so that their order (which is the order of the rows in a
 * viewer) does not depend on thread timing. weft__trace_write and
 * weft__trace_view_of must not run while slices are still being added.
 */
#ifndef WEFT_BASE_TRACE_H
#define WEFT_BASE_TRACE_H

#include "base.h"

#include <stdint.h>
#include <stdio.h>

#define weft__trace_on(t) WEFT__UNLIKELY((t) != NULL)

typedef enum weft__trace_kind {
    WEFT__TRACE_KERNEL,
    WEFT__TRACE_H2D,
    WEFT__TRACE_D2H,
    WEFT__TRACE_PEER,
    WEFT__TRACE_FILL,
    WEFT__TRACE_HOST,
    WEFT__TRACE_MAP,
    WEFT__TRACE_OTHER, /* a category weft does not write (foreign traces) */
    WEFT__TRACE_KIND_COUNT
} weft__trace_kind;

/* "kernel", "h2d", ...: the "cat" of the JSON events. Never NULL. */
const char *weft__trace_kind_name(weft__trace_kind kind);
/* Whether the kind moves bytes over a link (h2d, d2h, peer). */
int weft__trace_kind_is_copy(weft__trace_kind kind);

typedef struct weft__trace weft__trace;

int weft__trace_create(weft__trace **out);
void weft__trace_destroy(weft__trace *t);

/*
 * The track named name ("GPU0 H2D") in the process named process ("GPU0",
 * "host"), created on first use; *track receives its number. Tracks and
 * processes are written in the order they were first registered.
 */
int weft__trace_track(weft__trace *t, const char *process, const char *name,
                      uint32_t *track);

/* One slice. Strings are copied; NULL (or 0, -1) means "not known". */
typedef struct weft__trace_slice {
    uint32_t track;
    weft__trace_kind kind;
    const char *name;   /* what a viewer shows on the slice; required */
    uint64_t start_ns;  /* host clock (weft__now_ns) */
    uint64_t end_ns;    /* >= start_ns */
    uint64_t bytes;     /* bytes moved or touched; 0 if none */
    long node;          /* index of the graph node, or -1 */
    const char *kernel; /* kernel name */
    /* Why a copy happened: "read by kernel K on GPU1, valid only on GPU0". */
    const char *cause;
    /* The link a copy used ("host->GPU0"); NULL: derived from the track. */
    const char *link;
} weft__trace_slice;

/*
 * Record a slice; *id (if not NULL) receives its id for weft__trace_add_flow.
 * Lock-free. Fails with WEFT_ENOMEM (trace full, or no memory for the
 * strings), WEFT_EINVAL (unknown track, end before start); a slice that
 * failed is not written.
 */
int weft__trace_add_slice(weft__trace *t, const weft__trace_slice *slice,
                          uint64_t *id);
/* An arrow from slice from to slice to (ids from weft__trace_add_slice). */
int weft__trace_add_flow(weft__trace *t, uint64_t from, uint64_t to);

/* Write the trace as Chrome trace JSON to f / to the file at path. */
int weft__trace_write(weft__trace *t, FILE *f);
int weft__trace_write_file(weft__trace *t, const char *path);

/* ---- views ------------------------------------------------------------- */
/*
 * A trace as plain arrays: what weft__trace_view_of snapshots from a live
 * trace (and writes), and what weft_tracefile reads from a file. Times are
 * nanoseconds since the trace's origin (the earliest of its creation and its
 * slices), so that a snapshot and the file written from it compare equal.
 */
typedef struct weft__trace_track_view {
    uint32_t process; /* index into processes */
    char *name;
} weft__trace_track_view;

typedef struct weft__trace_slice_view {
    uint64_t id; /* unique within the trace */
    uint32_t track;
    weft__trace_kind kind;
    char *name;
    uint64_t start_ns, end_ns;
    uint64_t bytes;
    long node;
    char *kernel, *cause, *link; /* NULL when absent */
} weft__trace_slice_view;

typedef struct weft__trace_flow_view {
    uint64_t from, to; /* slice ids */
} weft__trace_flow_view;

typedef struct weft__trace_view {
    size_t nprocesses, ntracks, nslices, nflows;
    char **processes;               /* names, in display order */
    weft__trace_track_view *tracks; /* grouped by process, display order */
    weft__trace_slice_view *slices; /* by track, then start, then id */
    weft__trace_flow_view *flows;
    size_t *by_id; /* slice indices sorted by id (weft__trace_view_find) */
    /* CLOCK_MONOTONIC (ns) of the view's time 0 (written as otherData's
     * origin_ns, so that traces of processes of one host line up); 0 where
     * read from a file */
    uint64_t origin_ns;
} weft__trace_view;

int weft__trace_view_of(weft__trace *t, weft__trace_view **out);
void weft__trace_view_destroy(weft__trace_view *v);
/* The slice with that id, or NULL. O(log n). */
const weft__trace_slice_view *weft__trace_view_find(const weft__trace_view *v,
                                                    uint64_t id);
/*
 * For whoever fills a view (the snapshot, a reader): sort the slices in the
 * view's order, index them by id, then keep only the flows whose two ends
 * exist (a slice whose recording failed, a foreign file); flows stay in
 * their order.
 */
int weft__trace_view_finish(weft__trace_view *v);
/* The view's slice order (track, then start, then id), for qsort. */
int weft__trace_slice_view_cmp(const void *a, const void *b);

/* s as a JSON string literal, quotes included. */
void weft__json_string(FILE *f, const char *s);

#endif /* WEFT_BASE_TRACE_H */
