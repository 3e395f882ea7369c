/*
 * Device memory of other processes (weft_ipc_open, weft_ipc_close): the
 * runtime lists its open mappings, each counted as a live object, so that
 * a close names a mapping of its own and the runtime is not destroyed
 * under one. The export side is in buffer.c (weft_buffer_export).
 *
 * Locking: rt->ipc_maps and every entry's fields are guarded by rt->lock,
 * a leaf; the driver is called without it (an entry being closed is
 * marked, so that no other close takes it meanwhile).
 */
#include "../base/os.h"
#include "buffer.h"

#include <string.h>

struct weft__ipc_map {
    struct weft__ipc_map *next;
    unsigned device;
    uint64_t address; /* what weft_ipc_open returned */
    uint64_t base;    /* what the driver mapped (the allocation's start) */
    int closing;      /* a weft_ipc_close is unmapping it */
};

int weft_ipc_open(weft_runtime *rt, const weft_device *dev,
                  const weft_ipc_handle *h, uint64_t *address)
{
    static const char fn[] = "weft_ipc_open";
    struct weft__ipc_map *m;
    weft__context *ctx;
    weft__ipc_wire w;
    uint64_t base = 0;
    unsigned d;
    int rc;

    if (!rt || !h || !address)
        return weft__error(WEFT_EINVAL, "%s: %s is NULL", fn,
                           !rt  ? "runtime"
                           : !h ? "handle"
                                : "address");
    if ((rc = weft__device_index(rt, dev, &d, fn)) < 0)
        return rc;
    if (!weft__drv_has_ipc(rt->devices[d]))
        return weft__error(WEFT_ENOTSUP,
                           "%s: %s (the %s driver) shares no memory between "
                           "processes",
                           fn, rt->devices[d]->name, rt->devices[d]->drv->name);
    memcpy(&w, h->bytes, sizeof w);
    if (w.magic != WEFT__IPC_MAGIC || w.size == 0)
        return weft__error(WEFT_EINVAL,
                           "%s: the handle is not one of weft_buffer_export's",
                           fn);
    if (w.pid == weft__os_pid())
        return weft__error(WEFT_EINVAL,
                           "%s: the handle was exported by this process, "
                           "which uses the buffer itself",
                           fn);
    if ((rc = weft__runtime_context(rt, d, &ctx)) < 0)
        return weft__error_prefix(rc, "%s: %s", fn, rt->devices[d]->name);
    m = weft__calloc(1, sizeof *m);
    if (!m)
        return weft__error(WEFT_ENOMEM, "%s: out of memory", fn);
    if ((rc = weft__drv_ipc_open(ctx, w.drv, &base)) < 0) {
        weft__free(m);
        return weft__error_prefix(rc, "%s: %s", fn, rt->devices[d]->name);
    }
    m->device = d;
    m->base = base;
    m->address = base + w.offset;
    pthread_mutex_lock(&rt->lock);
    m->next = rt->ipc_maps;
    rt->ipc_maps = m;
    pthread_mutex_unlock(&rt->lock);
    weft__runtime_live(rt, 1);
    *address = m->address;
    return 0;
}

int weft_ipc_close(weft_runtime *rt, const weft_device *dev, uint64_t address)
{
    static const char fn[] = "weft_ipc_close";
    struct weft__ipc_map **at, *m;
    weft__context *ctx;
    unsigned d;
    int rc;

    if (!rt)
        return weft__error(WEFT_EINVAL, "%s: runtime is NULL", fn);
    if ((rc = weft__device_index(rt, dev, &d, fn)) < 0)
        return rc;
    pthread_mutex_lock(&rt->lock);
    for (m = rt->ipc_maps; m; m = m->next)
        if (m->device == d && m->address == address && !m->closing)
            break;
    if (m)
        m->closing = 1;
    pthread_mutex_unlock(&rt->lock);
    if (!m)
        return weft__error(WEFT_EINVAL,
                           "%s: %#llx is no address that weft_ipc_open "
                           "returned for %s (or it was closed)",
                           fn, (unsigned long long)address,
                           rt->devices[d]->name);
    rc = weft__runtime_context(rt, d, &ctx);
    if (rc == 0)
        rc = weft__drv_ipc_close(ctx, m->base);
    pthread_mutex_lock(&rt->lock);
    if (rc < 0) {
        m->closing = 0;
    } else {
        for (at = &rt->ipc_maps; *at != m; at = &(*at)->next)
            ;
        *at = m->next;
    }
    pthread_mutex_unlock(&rt->lock);
    if (rc < 0)
        return weft__error_prefix(rc, "%s: %s", fn, rt->devices[d]->name);
    weft__free(m);
    weft__runtime_live(rt, -1);
    return 0;
}
