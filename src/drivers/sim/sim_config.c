/*
 * The sim driver's configuration: "key=value" pairs separated by commas
 * (weft_runtime_options.sim_config, or WEFT_SIM). Sizes take binary
 * suffixes (K M G T: 2^10...), rates and times take decimal ones
 * (k M G T: 10^3...). Keys:
 *
 *   devices=N        simulated GPUs, 1..1024 (default 2)
 *   name=TEXT        model name in device names (default H200)
 *   mem=SIZE         memory per device (default 141G)
 *   copy_engines=N   copy engines per device, 0..16 (default 3)
 *   h2d_bw=RATE      host-to-device bytes/s (default 55e9; 55G is the same)
 *   d2h_bw=RATE      device-to-host bytes/s (default 55e9)
 *   h2d_lat=NS       host-to-device latency per copy (default 2000)
 *   d2h_lat=NS       device-to-host latency per copy (default 2000)
 *   peer_bw=RATE     device-to-device bytes/s between GPUs (default 390e9)
 *   peer_lat=NS      latency per peer copy (default 2000)
 *   peer=0|1         1: devices can access their peers (default 1); with 0
 *                    copy_peer fails with WEFT_ENOTSUP and the layers above
 *                    must stage through host memory
 *   peer_group=N     with peer=1, only devices i, j with i/N == j/N are
 *                    peers (islands of N GPUs); 0 = all pairs (default 0)
 *   d2d_bw=RATE      bytes/s of copies and fills within one device
 *                    (default 2e12: HBM read plus write)
 *   launch_lat=NS    fixed cost of a kernel, a fill or a local copy
 *                    (default 3000)
 *   item_ns=NS       virtual ns per work item of a kernel without a cost
 *                    function; fractional (default 0.01: 1M items take 10 us,
 *                    about a streaming kernel on a large GPU)
 *   host_fn_ns=NS    virtual duration of a host function (default 2000)
 *   compute_units=N  reported compute units (default 132)
 *   real_data=0|1    1: device memory is real and copies, fills and kernels
 *                    run; 0: timing only (default: weft__driver_config.
 *                    sim_real_data, which a runtime sets to 1)
 *   check=0|1        with real_data=1: 1 checks that every two operations
 *                    touching the same bytes, one of them writing, are
 *                    ordered in virtual time (weft__sim_hazards; default 0)
 *   graphs=0|1       1: the devices make native graphs (graph_supported says
 *                    yes), so that the tape runs on the sim (default 0; see
 *                    "Native graphs" in sim_graph.c)
 */
#include "sim_internal.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum sim_key_type {
    SIM_KEY_UINT,   /* unsigned, within [min, max] */
    SIM_KEY_SIZE,   /* bytes with binary suffix, >= min */
    SIM_KEY_DOUBLE, /* double with SI suffix, >= min (> min if max < 0) */
    SIM_KEY_NAME,
} sim_key_type;

typedef struct sim_key {
    const char *key;
    sim_key_type type;
    size_t offset;
    double min, max;
} sim_key;

#define SIM_KEY(k, t, lo, hi)                                                  \
    {                                                                          \
#k, t, offsetof(sim_config, k), lo, hi                                 \
    }
/* max < 0 on a DOUBLE means "strictly greater than min". */
static const sim_key sim_keys[] = {
    SIM_KEY(devices, SIM_KEY_UINT, 1, 1024),
    SIM_KEY(name, SIM_KEY_NAME, 0, 0),
    SIM_KEY(mem, SIM_KEY_SIZE, 1, 0),
    SIM_KEY(copy_engines, SIM_KEY_UINT, 0, 16),
    SIM_KEY(h2d_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(d2h_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(h2d_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(d2h_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(peer_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(peer_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(peer, SIM_KEY_UINT, 0, 1),
    SIM_KEY(peer_group, SIM_KEY_UINT, 0, 1024),
    SIM_KEY(d2d_bw, SIM_KEY_DOUBLE, 0, -1),
    SIM_KEY(launch_lat, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(item_ns, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(host_fn_ns, SIM_KEY_DOUBLE, 0, 1e15),
    SIM_KEY(compute_units, SIM_KEY_UINT, 1, 65536),
    SIM_KEY(real_data, SIM_KEY_UINT, 0, 1),
    SIM_KEY(graphs, SIM_KEY_UINT, 0, 1),
    SIM_KEY(check, SIM_KEY_UINT, 0, 1),
};
#undef SIM_KEY

static void sim_config_default(sim_config *c, unsigned real_data)
{
    memset(c, 0, sizeof *c);
    c->devices = 2;
    weft__strlcpy(c->name, "H200", sizeof c->name);
    c->mem = (uint64_t)141 << 30;
    c->copy_engines = 3;
    c->h2d_bw = c->d2h_bw = 55e9;
    c->h2d_lat = c->d2h_lat = c->peer_lat = 2000;
    c->peer_bw = 390e9;
    c->peer = 1;
    c->d2d_bw = 2e12;
    c->launch_lat = 3000;
    c->item_ns = 0.01;
    c->host_fn_ns = 2000;
    c->compute_units = 132;
    c->real_data = real_data ? 1 : 0;
}

static char *sim_trim(char *s)
{
    char *e;

    while (*s == ' ' || *s == '\t')
        s++;
    e = s + strlen(s);
    while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
        *--e = '\0';
    return s;
}

static int sim_config_set(sim_config *c, const char *key, const char *value)
{
    const sim_key *k = NULL;
    char *field, *end;
    unsigned long u;
    uint64_t size;
    double d;

    for (size_t i = 0; i < WEFT__COUNTOF(sim_keys); i++)
        if (!strcmp(sim_keys[i].key, key))
            k = &sim_keys[i];
    if (!k)
        return weft__error(
            WEFT_EINVAL,
            "sim config: unknown key '%s' (known: devices, "
            "name, mem, copy_engines, h2d_bw, d2h_bw, "
            "h2d_lat, d2h_lat, peer_bw, peer_lat, peer, "
            "peer_group, d2d_bw, launch_lat, item_ns, "
            "host_fn_ns, compute_units, real_data, graphs, check)",
            key);
    field = (char *)c + k->offset;
    switch (k->type) {
    case SIM_KEY_UINT:
        errno = 0;
        u = strtoul(value, &end, 10);
        if (errno || end == value || *end || value[0] == '-' ||
            u < (unsigned long)k->min || u > (unsigned long)k->max)
            return weft__error(WEFT_EINVAL,
                               "sim config: %s=%s: expected an integer from "
                               "%.0f to %.0f",
                               key, value, k->min, k->max);
        *(unsigned *)(void *)field = (unsigned)u;
        return 0;
    case SIM_KEY_SIZE:
        if (weft__parse_size(value, &size) < 0 || (double)size < k->min)
            return weft__error(WEFT_EINVAL,
                               "sim config: %s=%s: expected a size of at "
                               "least %.0f byte (e.g. 80G)",
                               key, value, k->min);
        *(uint64_t *)(void *)field = size;
        return 0;
    case SIM_KEY_DOUBLE:
        if (weft__parse_double(value, &d) < 0 || d < k->min ||
            (k->max < 0 && d <= k->min) || (k->max >= 0 && d > k->max))
            return weft__error(WEFT_EINVAL,
                               "sim config: %s=%s: expected a number %s %g "
                               "(suffixes k M G T)",
                               key, value, k->max < 0 ? ">" : ">=", k->min);
        *(double *)(void *)field = d;
        return 0;
    case SIM_KEY_NAME:
        if (!*value || strlen(value) >= sizeof c->name)
            return weft__error(WEFT_EINVAL,
                               "sim config: name=%s: expected 1 to %zu "
                               "characters",
                               value, sizeof c->name - 1);
        weft__strlcpy(c->name, value, sizeof c->name);
        return 0;
    }
    return weft__error(WEFT_EINTERNAL, "sim config: key type %d", (int)k->type);
}

/*
 * Parse text into c over the defaults. Empty items are skipped, so that
 * "devices=4," is fine; a later key overrides an earlier one.
 */
int weft__sim_config_parse(const char *text, unsigned real_data, sim_config *c)
{
    char *copy, *item, *next, *eq;
    int rc = 0;

    sim_config_default(c, real_data);
    if (!text || !*text)
        return 0;
    copy = weft__strdup(text);
    if (!copy)
        return weft__error(WEFT_ENOMEM, "sim config: out of memory");
    for (item = copy; item && rc == 0; item = next) {
        next = strchr(item, ',');
        if (next)
            *next++ = '\0';
        item = sim_trim(item);
        if (!*item)
            continue;
        eq = strchr(item, '=');
        if (!eq) {
            rc = weft__error(WEFT_EINVAL, "sim config: '%s' is not key=value",
                             item);
            break;
        }
        *eq = '\0';
        rc = sim_config_set(c, sim_trim(item), sim_trim(eq + 1));
    }
    weft__free(copy);
    return rc;
}
