/*
 * Link calibration: the figures of the link model (cost.h) measured with
 * real copies through the driver layer, cached on disk once per machine.
 *
 * Measuring. For every device: host-to-device and device-to-host copies
 * from and to pinned host memory, and copies within the device; for every
 * pair with direct peer access, peer copies. Each is timed at a small size
 * (the latency) and a large one (the bandwidth) with timing events where
 * the device has them, else with the host's clock around a synchronised
 * copy; a figure is the median of the repeats, after one untimed warm-up.
 * From the two medians t_s, t_l at sizes s < l: bw = (l - s) / (t_l - t_s)
 * and lat = t_s - s / bw.
 *
 * Sim devices are not measured in wall time: their copies run in virtual
 * time, whose durations are the configured figures (latency + bytes / bw,
 * rounded to the ns), so one timed copy of each size reads the
 * configuration back. They are never cached, since their figures follow
 * WEFT_SIM rather than the machine.
 *
 * The cache. Where the compiled-kernel cache is (WEFT_CACHE_DIR, else
 * $XDG_CACHE_HOME/weft, else ~/.cache/weft; WEFT_CACHE=off disables it),
 * one file per set of devices, links-<key>.txt, the key hashing the host
 * name and, for each device but sim ones, its driver, name, PCI bus id and
 * driver version. The text format, one record per line, fields separated by
 * one space, numbers as printf's %.17g:
 *
 *     weft-links 1
 *     key <32 hex digits>
 *     devices <m>                   the non-sim devices, in runtime order
 *     device <j> <h2d_bw> <h2d_lat_ns> <d2h_bw> <d2h_lat_ns> <d2d_bw> \
 *            <d2d_lat_ns>           one line, for each j < m
 *     peer <a> <b> <bw> <lat_ns>    each direct pair, a != b
 *     check <16 hex digits>         FNV-1a 64 of every byte before this line
 *
 * j, a and b count the non-sim devices only; bandwidths are bytes per
 * second. A file that does not read back exactly so (a bad check, a missing
 * or repeated line, a figure that is not positive and finite, another key,
 * peers that no longer match the runtime) is removed and measured again.
 * Writes go to a temporary file renamed into place.
 */
#ifndef WEFT_SCHED_CALIBRATE_H
#define WEFT_SCHED_CALIBRATE_H

#include "../mem/machine.h"
#include "cost.h"

/* Called before each step of a measurement: step done of total. */
typedef void weft__calibrate_progress_fn(void *user, unsigned done,
                                         unsigned total, const char *what);

typedef struct weft__calibrate_opts {
    unsigned quick;     /* fewer repeats and a smaller large size */
    unsigned repeats;   /* timed copies per size; 0: 7 (quick: 3) */
    size_t small_bytes; /* 0: 4 KiB */
    size_t large_bytes; /* 0: 64 MiB (quick: 16 MiB) */
    weft__calibrate_progress_fn *progress; /* NULL: none */
    void *user;
} weft__calibrate_opts;

/*
 * Measure every device's links into *l (allocated here; weft__links_free).
 * opts may be NULL (full measurement, no progress). Nothing is cached.
 */
int weft__links_measure(weft_runtime *rt, const weft__calibrate_opts *opts,
                        weft__links *l);
/*
 * The links of rt's devices: from the cache if it has a valid entry for
 * them, else measured (the quick version) and stored. Sim devices get their
 * configured figures. A cache that cannot be written is logged, not an
 * error.
 */
int weft__links_load(weft_runtime *rt, weft__links *l);
/* Write the non-sim figures of l to the cache. */
int weft__links_store(weft_runtime *rt, const weft__links *l);
/* The cache file of rt's devices into buf; WEFT_ENOTFOUND if disabled. */
int weft__links_cache_path(weft_runtime *rt, char *buf, size_t size);

/*
 * Free the device memory calibrations kept (rt->sched's cal_held; see
 * calibrate.c): at runtime destruction, before the contexts go.
 */
void weft__cal_free_held(weft_runtime *rt);

#endif /* WEFT_SCHED_CALIBRATE_H */
