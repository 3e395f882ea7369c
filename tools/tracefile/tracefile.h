/*
 * Trace files read back: a Chrome trace / Perfetto JSON file (weft's, or
 * any with complete slices) as a weft__trace_view, and a summary of a view.
 *
 * This is the static library weft_tracefile, for weft-trace and the tests;
 * it is not part of libweft. The view itself, and the writer that makes the
 * files, are in src/base/trace.h.
 *
 * Threads: no shared state; a view or a summary belongs to its caller.
 */
#ifndef WEFT_TRACEFILE_H
#define WEFT_TRACEFILE_H

#include "base/trace.h"

/* The kind of a category name ("kernel", "h2d", ...); WEFT__TRACE_OTHER if
 * unknown or NULL. */
weft__trace_kind weft__trace_kind_parse(const char *name);

/* ---- reading ----------------------------------------------------------- */
/* Read a JSON trace; errors name the file and, for bad JSON, the line. */
int weft__trace_view_load(const char *path, weft__trace_view **out);
int weft__trace_view_parse(const char *json, size_t len,
                           weft__trace_view **out);
/* Keep only the slices within [from_ns, to_ns] (times as in the view),
 * and the flows between them. */
int weft__trace_view_window(weft__trace_view *v, uint64_t from_ns,
                            uint64_t to_ns);

/* ---- summary ----------------------------------------------------------- */
typedef struct weft__trace_lane_summary {
    uint64_t busy_ns; /* time covered by at least one slice of the lane */
    size_t nslices;
} weft__trace_lane_summary;

typedef struct weft__trace_process_summary {
    uint64_t kernel_ns;  /* time during which a kernel ran on it */
    uint64_t copy_ns;    /* ... during which a copy (h2d/d2h/peer) ran */
    uint64_t overlap_ns; /* ... during which both did */
} weft__trace_process_summary;

typedef struct weft__trace_link_summary {
    char *link;
    uint64_t bytes;
    uint64_t busy_ns; /* sum of the copies' durations */
    size_t ncopies;
} weft__trace_link_summary;

typedef struct weft__trace_summary {
    uint64_t start_ns, end_ns;              /* first start, last end */
    weft__trace_lane_summary *lanes;        /* one per track */
    weft__trace_process_summary *processes; /* one per process */
    /* Machine-wide: time during which some copy and some kernel ran. */
    uint64_t overlap_ns, kernel_ns, copy_ns;
    size_t nlinks;
    weft__trace_link_summary *links; /* sorted by name */
} weft__trace_summary;

int weft__trace_summarize(const weft__trace_view *v, weft__trace_summary **out);
void weft__trace_summary_destroy(weft__trace_summary *s);

#endif /* WEFT_TRACEFILE_H */
