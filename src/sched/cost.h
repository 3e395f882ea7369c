/*
 * The scheduler's cost model: how long a copy between two memories takes
 * (the link model) and how long a kernel takes on a device (the kernel time
 * model). Placement (place.h) asks both; calibrate.h fills the link model
 * from measurements or the on-disk cache.
 *
 * Memories are named by device index in the runtime's order, and
 * WEFT__MEM_HOST (-1) for host memory.
 */
#ifndef WEFT_SCHED_COST_H
#define WEFT_SCHED_COST_H

#include "../base/base.h"

#define WEFT__MEM_HOST (-1)

/* One direction of copies: time(bytes) = lat_ns + bytes * 1e9 / bw. */
typedef struct weft__link {
    double bw;     /* bytes per second, > 0 */
    double lat_ns; /* fixed cost per copy, >= 0 */
} weft__link;

/*
 * The links of a machine of n devices. peer[a * n + b] is a copy from a to
 * b (a != b): direct where direct[a * n + b] is 1, else through host memory,
 * whose figures are the sum of the two legs (d2h of a, then h2d of b), which
 * weft__links_finish fills in.
 */
/* Where the figures of a device's links came from. */
typedef enum weft__link_source {
    WEFT__LINK_UNKNOWN = 0,
    WEFT__LINK_MEASURED = 1, /* real copies, just now */
    WEFT__LINK_CACHED = 2,   /* the on-disk cache of an earlier measurement */
    WEFT__LINK_SIM = 3,      /* the sim driver's configured figures */
    WEFT__LINK_GIVEN = 4,    /* set by the caller (tests, synthetic machines) */
} weft__link_source;

typedef struct weft__links {
    unsigned n;
    weft__link *h2d;       /* n */
    weft__link *d2h;       /* n */
    weft__link *d2d;       /* n: within one device */
    weft__link *peer;      /* n * n; the diagonal is d2d */
    unsigned char *direct; /* n * n */
    unsigned char *source; /* n: weft__link_source of each device */
} weft__links;

/* Room for n devices, every link unknown (bw 0); free with _free. */
int weft__links_alloc(weft__links *l, unsigned n);
void weft__links_free(weft__links *l);
/*
 * Complete a model whose h2d, d2h, d2d and direct peer links are set: fill
 * the through-host pairs and the diagonal. WEFT_EINVAL if a link that must
 * be known has no bandwidth.
 */
int weft__links_finish(weft__links *l);
/* Nanoseconds to copy bytes from memory src to memory dst (0 if equal). */
double weft__links_copy_ns(const weft__links *l, int src, int dst,
                           uint64_t bytes);

/*
 * The kernel time model: learned times per (kernel name, device, launch
 * size). Launch sizes are bucketed by powers of two of the items; each
 * bucket keeps the last WEFT__KTIME_RING samples and answers their median,
 * so that one slow launch (a page fault, a clock change) moves nothing.
 * Every function is thread-safe: one mutex guards the model, held only for
 * a table lookup (and its growth, when a kernel is new on a device) and a
 * sort of at most WEFT__KTIME_RING values.
 */
#define WEFT__KTIME_RING    15
#define WEFT__KTIME_BUCKETS 64

typedef struct weft__ktime weft__ktime;

/*
 * A model for ndevices devices. The prior for a kernel never seen on a
 * device is launch_ns + items * item_ns * 132 / compute_units[d]: the time of
 * a streaming kernel on a large GPU (132 compute units), scaled by the
 * device's compute units; compute_units may be NULL (132 each) and entries
 * of 0 count as 1.
 */
int weft__ktime_create(unsigned ndevices, const unsigned *compute_units,
                       weft__ktime **model);
void weft__ktime_destroy(weft__ktime *model);
/* Change the prior of device dev (the defaults are 5000 ns and 0.01 ns). */
void weft__ktime_set_prior(weft__ktime *model, unsigned dev, double launch_ns,
                           double item_ns);
/* One observed launch of kernel on dev over items items, ns long. */
int weft__ktime_record(weft__ktime *model, const char *kernel, unsigned dev,
                       uint64_t items, uint64_t ns);
/*
 * The expected ns of kernel on dev over items items: the median of its
 * bucket if it has samples; else interpolated between the nearest buckets
 * below and above that have, extrapolated in proportion to items from the
 * nearest one if only one side has; else, if another device has samples
 * of it, that device's estimate in the ratio of the two priors; else the
 * prior. *known (may be NULL) says which: 2 the bucket, 1 neighbours or
 * another device, 0 the prior.
 */
double weft__ktime_estimate(weft__ktime *model, const char *kernel,
                            unsigned dev, uint64_t items, int *known);

/*
 * The link model and the kernel time model of rt, made on first use
 * (placing.c; links NULL if they cannot be had: the caller uses a default).
 */
weft__links *weft__runtime_links(weft_runtime *rt);
weft__ktime *weft__runtime_ktime(weft_runtime *rt);

#endif /* WEFT_SCHED_COST_H */
