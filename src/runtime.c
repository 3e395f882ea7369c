/*
 * Device discovery: open every selected driver, list its devices, keep the
 * selected ones, and place each on the machine's topology (hwloc).
 */
#include "runtime.h"

#include "base/options.h"
#include "base/trace.h"
#include "mem/pool.h"
#include "sched/placing.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const weft__driver *const weft__all_drivers[WEFT__NDRIVERS] = {
    &weft__driver_cuda,
    &weft__driver_opencl,
    &weft__driver_host,
    &weft__driver_sim,
};

/* The API's runtime around a handle (the handle is its first member). */
static weft__runtime_api *weft__api(const weft_runtime *rt)
{
    return (weft__runtime_api *)(void *)rt;
}

/*
 * Parse "cuda,opencl:1,host:*" into the drivers' wanted/all/indices.
 * "all" selects every driver, sim included.
 */
static int weft__parse_devices(weft__runtime_api *a, const char *spec)
{
    char buf[512], *save = NULL, *tok;

    if (strlen(spec) >= sizeof buf)
        return weft__error(WEFT_EINVAL, "device list too long: %s", spec);
    memcpy(buf, spec, strlen(spec) + 1);
    for (tok = strtok_r(buf, ", ", &save); tok;
         tok = strtok_r(NULL, ", ", &save)) {
        char *colon = strchr(tok, ':');
        unsigned d;
        int found = 0;

        if (colon)
            *colon++ = '\0';
        if (strcmp(tok, "all") == 0 || strcmp(tok, "*") == 0) {
            if (colon)
                return weft__error(WEFT_EINVAL,
                                   "device list: 'all' takes no index");
            for (d = 0; d < WEFT__NDRIVERS; d++)
                a->drivers[d].wanted = a->drivers[d].all = 1;
            continue;
        }
        for (d = 0; d < WEFT__NDRIVERS; d++) {
            weft__runtime_driver *rd = &a->drivers[d];
            char *end;
            unsigned long idx;

            if (strcmp(tok, rd->drv->name) != 0)
                continue;
            found = 1;
            rd->wanted = 1;
            if (!colon || strcmp(colon, "*") == 0) {
                rd->all = 1;
                break;
            }
            idx = strtoul(colon, &end, 10);
            if (end == colon || *end || idx >= 64)
                return weft__error(WEFT_EINVAL,
                                   "device list: '%s:%s' is not DRIVER, "
                                   "DRIVER:* or DRIVER:N (N < 64)",
                                   tok, colon);
            rd->indices |= (uint64_t)1 << idx;
            break;
        }
        if (!found)
            return weft__error(WEFT_EINVAL,
                               "device list: unknown driver '%s' (cuda, "
                               "opencl, host, sim or all)",
                               tok);
    }
    return 0;
}

static void weft__close_drivers(weft__runtime_api *a)
{
    for (unsigned d = 0; d < WEFT__NDRIVERS; d++) {
        weft__runtime_driver *rd = &a->drivers[d];

        if (rd->opened)
            rd->drv->platforms_close(rd->platforms, rd->nplatforms);
        rd->opened = 0;
        rd->platforms = NULL;
        rd->nplatforms = 0;
    }
}

/* Open one driver; a driver that finds nothing is not an error here. */
static void weft__open_driver(weft__runtime_api *a, weft__runtime_driver *rd)
{
    int rc;

    rc = rd->drv->platforms_open(&a->cfg, &rd->platforms, &rd->nplatforms);
    if (rc < 0) {
        rd->status = rc;
        weft__strlcpy(rd->reason, weft_last_error(), sizeof rd->reason);
        rd->platforms = NULL;
        rd->nplatforms = 0;
        /*
         * A missing library or platform is normal; anything else means
         * devices that exist were lost, which the user should hear of.
         */
        if (rc == WEFT_ENOTSUP || rc == WEFT_ENODEV)
            weft__info("runtime", "driver %s: no devices: %s", rd->drv->name,
                       rd->reason);
        else
            weft__warn("runtime",
                       "driver %s failed, its devices are left "
                       "out: %s: %s",
                       rd->drv->name, weft_err_name(rc), rd->reason);
        return;
    }
    rd->opened = 1;
    for (unsigned p = 0; p < rd->nplatforms; p++)
        rd->ndevices += rd->platforms[p]->ndevices;
    if (rd->ndevices == 0) {
        rd->status = WEFT_ENODEV;
        snprintf(rd->reason, sizeof rd->reason, "%s: no devices",
                 rd->drv->name);
    }
}

static int weft__selected(const weft__runtime_driver *rd, unsigned index)
{
    return rd->all || (index < 64 && (rd->indices >> index & 1));
}

static int weft__topology_open(weft_runtime *rt)
{
    int need_io = 0;

    for (unsigned i = 0; i < rt->ndevices; i++)
        if (rt->devices[i]->pci_bus_id[0])
            need_io = 1;
    if (weft__fault("hwloc.topology_init") ||
        hwloc_topology_init(&rt->topology) < 0) {
        rt->topology = NULL;
        return weft__error(WEFT_ENOMEM, "hwloc: topology_init failed");
    }
    /*
     * The x86 component reads CPUID on each CPU in turn, binding the
     * thread to it: on small VMs such a binding was seen to stall runtime
     * creation for seconds, and what it adds (caches, CPU models) weft does
     * not read; the OS's own component gives the cores and NUMA nodes.
     */
    hwloc_topology_set_components(
        rt->topology, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST, "x86");
    /*
     * PCI devices only when a device has a bus id: reading them costs. The
     * PCI tree is all weft reads (locality by bus id): hwloc's GPU plugins
     * would load and initialise libcuda, the OpenCL ICD loader and the
     * vendors' libraries themselves, then unload them with what they
     * allocated still held.
     */
    if (need_io) {
        static const char *const gpu_plugins[] = {"cuda", "opencl",    "nvml",
                                                  "rsmi", "levelzero", "gl"};

        hwloc_topology_set_io_types_filter(rt->topology,
                                           HWLOC_TYPE_FILTER_KEEP_IMPORTANT);
        for (size_t i = 0; i < WEFT__COUNTOF(gpu_plugins); i++)
            hwloc_topology_set_components(
                rt->topology, HWLOC_TOPOLOGY_COMPONENTS_FLAG_BLACKLIST,
                gpu_plugins[i]);
    }
    if (weft__fault("hwloc.topology_load") ||
        hwloc_topology_load(rt->topology) < 0) {
        hwloc_topology_destroy(rt->topology);
        rt->topology = NULL;
        return weft__error(WEFT_EIO, "hwloc: topology_load failed");
    }
    return 0;
}

/* numa_node, cpuset and ncores of one device. */
static void weft__place_device(weft_runtime *rt, weft__device *dev)
{
    hwloc_topology_t topo = rt->topology;
    hwloc_const_cpuset_t set = hwloc_topology_get_topology_cpuset(topo);
    hwloc_const_nodeset_t nodes = hwloc_topology_get_topology_nodeset(topo);
    hwloc_obj_t obj;
    int n;

    dev->props.numa_node = -1;
    if (dev->pci_bus_id[0]) {
        obj = hwloc_get_pcidev_by_busidstring(topo, dev->pci_bus_id);
        if (obj) {
            obj = hwloc_get_non_io_ancestor_obj(topo, obj);
            if (obj && obj->cpuset) {
                set = obj->cpuset;
                nodes = obj->nodeset;
            }
        } else {
            weft__info("runtime", "hwloc does not know PCI device %s of %s",
                       dev->pci_bus_id, dev->name);
        }
    }
    /* A device near exactly one NUMA node has that node; else unknown. */
    if (nodes && hwloc_bitmap_weight(nodes) == 1)
        dev->props.numa_node = hwloc_bitmap_first(nodes);
    hwloc_bitmap_list_snprintf(dev->cpuset, sizeof dev->cpuset, set);
    n = hwloc_get_nbobjs_inside_cpuset_by_type(topo, set, HWLOC_OBJ_CORE);
    dev->props.ncores = n > 0 ? (unsigned)n : 0;
    dev->props.cpuset = dev->cpuset;
}

static void weft__finish_props(weft__device *dev, unsigned index)
{
    weft_device_info *p = &dev->props;

    p->size = sizeof *p;
    p->driver = dev->drv->name;
    p->index = index;
    p->driver_index = dev->driver_index;
    p->name = dev->name;
    p->vendor = dev->vendor;
    p->platform = dev->platform ? dev->platform->name : "";
    p->driver_version = dev->driver_version;
    p->pci_bus_id = dev->pci_bus_id;
    p->cpuset = dev->cpuset;
    if (!p->arg_offset_align)
        p->arg_offset_align = 1;
}

/*
 * The options o and the environment (which wins: base/options.h) into a's
 * driver configuration and rt's settings; creates the scheduler and the
 * trace. *spec: the device list (WEFT_DEVICES, else o's, else the
 * table's default). On failure the caller destroys what was made.
 */
static int weft__runtime_configure(weft__runtime_api *a,
                                   weft_runtime_options *o, const char **spec)
{
    weft_runtime *rt = &a->rt;
    const char *env;
    unsigned host_workers, word;
    int rc, policy, scope;

    if (!weft__opt_str(WEFT__OPT_DEVICES, spec) && o->devices)
        *spec = o->devices;
    if (!weft__opt_str(WEFT__OPT_SIM, &a->cfg.sim_config))
        a->cfg.sim_config = o->sim_config;
    /* A program's sim computes unless its configuration says real_data=0. */
    a->cfg.sim_real_data = 1;
    if (!weft__opt_uint(WEFT__OPT_HOST_DEVICES, &a->cfg.host_devices))
        a->cfg.host_devices = o->host_devices;
    if (!weft__opt_uint(WEFT__OPT_HOST_THREADS, &a->cfg.host_threads))
        a->cfg.host_threads = o->host_threads;
    if (!weft__opt_size(WEFT__OPT_DEVICE_MEM_LIMIT, &rt->device_mem_limit))
        rt->device_mem_limit = o->device_mem_limit;
    if (!weft__opt_uint(WEFT__OPT_HOST_WORKERS, &host_workers))
        host_workers = UINT_MAX; /* the machine decides */
    /* The words of WEFT_PLACE and WEFT_PLACE_SCOPE are in enum order. */
    if (weft__opt_enum(WEFT__OPT_PLACE, &word))
        o->place_policy = WEFT_PLACE_SINGLE + (int)word;
    word = 0;
    weft__opt_enum(WEFT__OPT_PLACE_SCOPE, &word);
    if ((rc = weft__place_policy_parse(NULL, o->place_policy, &policy)) < 0 ||
        (rc = weft__place_scope_parse(NULL, WEFT_PLACE_SCOPE_DRIVER + (int)word,
                                      &scope)) < 0 ||
        (rc = weft__sched_create(rt, policy, scope, host_workers)) < 0)
        return rc;
    if (!weft__opt_str(WEFT__OPT_TRACE, &env))
        env = o->trace_file;
    if (env) {
        if (!(a->trace_file = weft__strdup(env)) ||
            (rc = weft__trace_create(&rt->trace)) < 0)
            return weft__error(WEFT_ENOMEM, "weft_runtime_create: out of "
                                            "memory for the trace");
    }
    return 0;
}

/*
 * Open every driver that the device list spec wanted; *n: how many of
 * their devices it selects. Fails where spec names a device that does not
 * exist, or a driver failed for want of memory or on a bad configuration.
 */
static int weft__open_drivers(weft__runtime_api *a, const char *spec,
                              unsigned *n)
{
    *n = 0;
    for (unsigned d = 0; d < WEFT__NDRIVERS; d++) {
        weft__runtime_driver *rd = &a->drivers[d];

        if (!rd->wanted) {
            rd->status = WEFT_ENODEV;
            snprintf(rd->reason, sizeof rd->reason,
                     "not selected (device list \"%s\")", spec);
            continue;
        }
        weft__open_driver(a, rd);
        /* An explicit index must exist; "cuda" alone may find none. */
        for (unsigned i = 0; i < 64; i++)
            if ((rd->indices >> i & 1) && i >= rd->ndevices)
                return weft__error(WEFT_ENODEV,
                                   "device list \"%s\": %s:%u does not exist "
                                   "(%u %s devices%s%s)",
                                   spec, rd->drv->name, i, rd->ndevices,
                                   rd->drv->name, rd->reason[0] ? ": " : "",
                                   rd->reason);
        /*
         * A configuration error (e.g. WEFT_SIM) is the user's to fix; out
         * of host memory, nothing else would work either.
         */
        if (rd->status == WEFT_EINVAL || rd->status == WEFT_ENOMEM)
            return weft__error(rd->status, "%s", rd->reason);
        for (unsigned p = 0; p < rd->nplatforms; p++)
            for (unsigned i = 0; i < rd->platforms[p]->ndevices; i++)
                if (weft__selected(rd,
                                   rd->platforms[p]->devices[i]->driver_index))
                    ++*n;
    }
    return 0;
}

/* The selected devices of the open drivers into rt->devices, in driver
 * order (room made by weft__machine_init), their properties finished. */
static void weft__collect_devices(weft__runtime_api *a)
{
    weft_runtime *rt = &a->rt;

    for (unsigned d = 0; d < WEFT__NDRIVERS; d++) {
        weft__runtime_driver *rd = &a->drivers[d];

        for (unsigned p = 0; p < rd->nplatforms; p++)
            for (unsigned i = 0; i < rd->platforms[p]->ndevices; i++) {
                weft__device *dev = rd->platforms[p]->devices[i];

                if (!weft__selected(rd, dev->driver_index))
                    continue;
                weft__finish_props(dev, rt->ndevices);
                rt->devices[rt->ndevices++] = dev;
            }
    }
}

/*
 * Who copies to whom directly into rt->peer, asked once: the tracker's
 * cost function consults it for every transfer. Cannot fail.
 */
static void weft__find_peers(weft_runtime *rt)
{
    for (unsigned x = 0; x < rt->ndevices; x++)
        for (unsigned y = 0; y < rt->ndevices; y++) {
            int can = 0;

            if (x != y && weft_device_can_access_peer(
                              weft_runtime_device(rt, x),
                              weft_runtime_device(rt, y), &can) < 0)
                can = 0;
            rt->peer[x * rt->ndevices + y] = can != 0;
        }
}

int weft_runtime_create(weft_runtime **out, const weft_runtime_options *opts)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    weft__runtime_api *a;
    weft_runtime *rt;
    const char *spec;
    unsigned d, n = 0;
    int rc;

    if (!out)
        return weft__error(WEFT_EINVAL, "weft_runtime_create: result is NULL");
    if ((rc = weft__options_load()) < 0)
        return rc;
    if (opts) {
        if (opts->size < sizeof(size_t) || opts->size > sizeof o)
            return weft__error(WEFT_EINVAL,
                               "weft_runtime_create: options size %zu is not "
                               "that of weft_runtime_options (%zu); start "
                               "from WEFT_RUNTIME_OPTIONS_INIT",
                               opts->size, sizeof o);
        memcpy(&o, opts, opts->size);
    }
    a = weft__calloc(1, sizeof *a);
    if (!a)
        return weft__error(WEFT_ENOMEM, "weft_runtime_create: out of memory");
    rt = &a->rt;
    for (d = 0; d < WEFT__NDRIVERS; d++)
        a->drivers[d].drv = weft__all_drivers[d];

    if ((rc = weft__runtime_configure(a, &o, &spec)) < 0)
        goto fail;
    if ((rc = weft__parse_devices(a, spec)) < 0) {
        if (weft__opt_raw(WEFT__OPT_DEVICES))
            weft__error_prefix(rc, "WEFT_DEVICES=%s", spec);
        goto fail;
    }
    if ((rc = weft__open_drivers(a, spec, &n)) < 0 ||
        (rc = weft__machine_init(rt, n)) < 0)
        goto fail;
    weft__collect_devices(a);
    if ((rc = weft__topology_open(rt)) < 0)
        goto fail;
    for (unsigned i = 0; i < rt->ndevices; i++)
        weft__place_device(rt, rt->devices[i]);
    weft__find_peers(rt);
    weft_clear_error();
    weft__info("runtime", "%u devices", rt->ndevices);
    *out = rt;
    return 0;

fail:
    weft__machine_fini(rt);
    weft__close_drivers(a);
    weft__sched_destroy(rt);
    weft__trace_destroy(rt->trace);
    weft__free(a->trace_file);
    weft__free(a);
    return rc;
}

/* Bytes as "12.3 MiB". */
static const char *weft__human(char *buf, size_t n, uint64_t b)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    unsigned u = 0;

    while (v >= 1024 && u + 1 < WEFT__COUNTOF(units)) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

/*
 * WEFT_STATS=1: a short account of what moved where, on stderr, when the
 * runtime goes. It reads the same counters as weft_runtime_get_stats.
 */
static void weft__print_stats(const weft_runtime *rt)
{
    weft_stats s = {.size = sizeof s};
    char a[32], b[32], c[32], d[32], e[32], f[32], g[32];

    if (weft_runtime_get_stats(rt, &s) < 0)
        return;
    fprintf(stderr,
            "weft stats: %u devices\n"
            "  moved: host->device %s in %llu copies, device->host %s in "
            "%llu, peer %s in %llu\n"
            "  why: read on a device %s, host access %s, eviction "
            "write-back %s\n"
            "  cached: %s found valid where needed (not moved)\n",
            rt->ndevices, weft__human(a, sizeof a, s.h2d_bytes),
            (unsigned long long)s.h2d_copies,
            weft__human(b, sizeof b, s.d2h_bytes),
            (unsigned long long)s.d2h_copies,
            weft__human(c, sizeof c, s.peer_bytes),
            (unsigned long long)s.peer_copies,
            weft__human(d, sizeof d, s.read_bytes),
            weft__human(e, sizeof e, s.host_bytes),
            weft__human(f, sizeof f, s.evict_bytes),
            weft__human(g, sizeof g, s.cached_bytes));
    fprintf(stderr,
            "  evictions %llu in %llu rounds (written back first: %llu); pool "
            "hits %llu, "
            "misses %llu, held %s\n"
            "  host side: %s staged through pinned buffers, %s direct from "
            "pinned or registered memory; %llu buffers registered (%s)\n",
            (unsigned long long)s.evictions, (unsigned long long)s.evict_rounds,
            (unsigned long long)s.writebacks, (unsigned long long)s.pool_hits,
            (unsigned long long)s.pool_misses,
            weft__human(a, sizeof a, s.pool_bytes),
            weft__human(b, sizeof b, s.staged_bytes),
            weft__human(c, sizeof c, s.pinned_bytes),
            (unsigned long long)s.registered_buffers,
            weft__human(d, sizeof d, s.registered_bytes));
}

int weft_runtime_destroy(weft_runtime *rt)
{
    weft__runtime_api *a = weft__api(rt);
    bool stats = false;
    long live;

    if (!rt)
        return 0;
    live = __atomic_load_n(&rt->live, __ATOMIC_ACQUIRE);
    if (live > 0)
        return weft__error(WEFT_EBUSY,
                           "weft_runtime_destroy: %ld objects made from the "
                           "runtime (modules, buffers, graphs, executable "
                           "graphs, weft_host_alloc memory) are still live",
                           live);
    if (weft__opt_bool(WEFT__OPT_STATS, &stats) && stats)
        weft__print_stats(rt);
    if (rt->trace) {
        if (weft__trace_write_file(rt->trace, a->trace_file) < 0)
            weft__warn("runtime", "trace: %s", weft_last_error());
        else
            weft__info("runtime", "trace written to %s", a->trace_file);
    }
    /* No graph is left, so no launch and no host node is queued or
     * running. */
    weft__sched_destroy(rt);
    weft__trace_destroy(rt->trace);
    weft__free(a->trace_file);
    /* Every buffer is gone, so the pools hold no block. */
    weft__machine_fini(rt);
    weft__close_drivers(a);
    if (rt->topology)
        hwloc_topology_destroy(rt->topology);
    weft__free(a);
    return 0;
}

int weft_runtime_get_stats(const weft_runtime *rt, weft_stats *stats)
{
    weft_stats st;
    const uint64_t *from;
    uint64_t *to = &st.h2d_bytes;
    size_t n, size;

    if (!rt || !stats)
        return weft__error(WEFT_EINVAL, "weft_runtime_get_stats: %s is NULL",
                           rt ? "stats" : "runtime");
    from = (const uint64_t *)(const void *)&rt->stats.h2d_bytes;
    size = stats->size;
    if (size < sizeof(size_t) || size > sizeof st)
        return weft__error(WEFT_EINVAL,
                           "weft_runtime_get_stats: stats->size %zu; set it "
                           "to sizeof(weft_stats)",
                           size);
    /* Every field after size is a uint64_t counter. */
    n = (sizeof st - offsetof(weft_stats, h2d_bytes)) / sizeof(uint64_t);
    for (size_t i = 0; i < n; i++)
        to[i] = __atomic_load_n(&from[i], __ATOMIC_RELAXED);
    st.pool_hits = st.pool_misses = st.pool_bytes = 0;
    for (unsigned i = 0; i < rt->ndevices; i++) {
        weft__devmem *dm = &rt->devmem[i];
        weft__pool_stats ps;

        pthread_mutex_lock(&dm->lock);
        if (dm->pool) {
            weft__pool_get_stats(dm->pool, &ps);
            st.pool_hits += ps.hits;
            st.pool_misses += ps.misses;
            st.pool_bytes += ps.driver_bytes;
        }
        pthread_mutex_unlock(&dm->lock);
    }
    st.size = size;
    memcpy(stats, &st, size);
    return 0;
}

unsigned weft_runtime_driver_count(const weft_runtime *rt)
{
    return rt ? WEFT__NDRIVERS : 0;
}

int weft_runtime_driver(const weft_runtime *rt, unsigned index,
                        const char **name, unsigned *ndevices, int *status,
                        const char **reason)
{
    const weft__runtime_driver *rd;
    unsigned n = 0;

    if (!rt || index >= WEFT__NDRIVERS)
        return weft__error(WEFT_EINVAL, "weft_runtime_driver: %s",
                           rt ? "index out of range" : "runtime is NULL");
    rd = &weft__api(rt)->drivers[index];
    for (unsigned i = 0; i < rt->ndevices; i++)
        if (rt->devices[i]->drv == rd->drv)
            n++;
    if (name)
        *name = rd->drv->name;
    if (ndevices)
        *ndevices = n;
    if (status)
        *status = rd->status;
    if (reason)
        *reason = rd->reason;
    return 0;
}

unsigned weft_runtime_device_count(const weft_runtime *rt)
{
    return rt ? rt->ndevices : 0;
}

int weft_device_get_info(const weft_device *dev, weft_device_info *info)
{
    const weft__device *d = weft__device_of(dev);
    size_t size;

    if (!dev || !info)
        return weft__error(WEFT_EINVAL, "weft_device_get_info: %s is NULL",
                           dev ? "info" : "device");
    size = info->size;
    if (size < sizeof(size_t) || size > sizeof *info)
        return weft__error(WEFT_EINVAL,
                           "weft_device_get_info: info->size %zu; set it to "
                           "sizeof(weft_device_info)",
                           size);
    memcpy(info, &d->props, size);
    info->size = size;
    return 0;
}

int weft_device_can_access_peer(const weft_device *dev, const weft_device *peer,
                                int *can)
{
    weft__device *a = weft__device_of(dev), *b = weft__device_of(peer);

    if (!a || !b || !can)
        return weft__error(WEFT_EINVAL,
                           "weft_device_can_access_peer: %s is NULL",
                           !a   ? "dev"
                           : !b ? "peer"
                                : "can");
    *can = 0;
    if (a == b || a->drv != b->drv || !a->drv->can_access_peer)
        return 0;
    return a->drv->can_access_peer(a, b, can);
}
