/* Device selection for tests, from the environment. */
#include "wt_devices.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void wt_devices_reasons(const wt_devices *d, char *buf, size_t size)
{
    size_t used = 0;

    buf[0] = '\0';
    for (unsigned i = 0; i < weft_runtime_driver_count(d->rt); i++) {
        const char *name, *reason;
        unsigned ndev;
        int status;

        if (weft_runtime_driver(d->rt, i, &name, &ndev, &status, &reason) < 0)
            continue;
        /* Drivers left out of the selection say nothing about it. */
        if (!reason || !reason[0] || strncmp(reason, "not selected", 12) == 0)
            continue;
        used += (size_t)snprintf(buf + used, used < size ? size - used : 0,
                                 "%s%s: %s", used ? "; " : "", name, reason);
        if (used >= size)
            break;
    }
    if (!buf[0])
        snprintf(buf, size, "the drivers found none");
}

void wt_devices_open(wt_devices *d)
{
    weft_runtime_options opts = WEFT_RUNTIME_OPTIONS_INIT;
    char why[1024];
    int rc;

    memset(d, 0, sizeof *d);
    d->selection = getenv("WEFT_DEVICES");
    if (!d->selection || !d->selection[0])
        d->selection = "cuda,opencl,host";
    rc = weft_runtime_create(&d->rt, &opts);
    if (rc < 0) {
        fprintf(stderr, "weft_runtime_create(\"%s\"): %s: %s\n", d->selection,
                weft_err_name(rc), weft_last_error());
        exit(1);
    }
    d->n = weft_runtime_device_count(d->rt);
    if (d->n == 0) {
        wt_devices_reasons(d, why, sizeof why);
        printf("skipped: no %s device (%s)\n", d->selection, why);
        weft_runtime_destroy(d->rt);
        exit(WT_SKIP);
    }
}

void wt_devices_need(wt_devices *d, const char *driver, unsigned n,
                     const char *why)
{
    if (d->n >= n &&
        (!driver || strcmp(wt_device(d, 0)->drv->name, driver) == 0))
        return;
    printf("skipped: %s\n", why);
    wt_devices_close(d);
    exit(WT_SKIP);
}

void wt_devices_close(wt_devices *d)
{
    weft_runtime_destroy(d->rt);
    memset(d, 0, sizeof *d);
}

weft__device *wt_device(const wt_devices *d, unsigned i)
{
    return weft__runtime_device(d->rt, i);
}

weft__device *wt_device_sibling(const wt_devices *d, const weft__device *dev)
{
    for (unsigned i = 0; i < d->n; i++) {
        weft__device *o = wt_device(d, i);

        if (o != dev && o->drv == dev->drv)
            return o;
    }
    return NULL;
}
