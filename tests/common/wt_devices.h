/*
 * Device selection for tests that run on whatever devices the runtime
 * finds: the runtime is opened with the environment's WEFT_DEVICES (and
 * WEFT_SIM, WEFT_HOST_DEVICES, ...), so that one test binary serves every
 * driver and the CTest case picks the driver.
 */
#ifndef WT_DEVICES_H
#define WT_DEVICES_H

#include "runtime.h"

/* What a test exits with when the machine lacks what it needs. */
#define WT_SKIP 77

typedef struct wt_devices {
    weft_runtime *rt;
    unsigned n;
    const char *selection; /* the device list the runtime was given */
} wt_devices;

/*
 * Open the runtime from the environment. A failing weft_runtime_create is
 * reported and the process exits 1; a runtime with no device prints
 * "skipped: no <selection> device (<reasons>)" and the process exits 77.
 */
void wt_devices_open(wt_devices *d);
void wt_devices_close(wt_devices *d);
/*
 * Unless the runtime has at least n devices and device 0 is of the driver
 * named (NULL: any), print "skipped: <why>", close d and exit 77.
 */
void wt_devices_need(wt_devices *d, const char *driver, unsigned n,
                     const char *why);

weft__device *wt_device(const wt_devices *d, unsigned i);
/* Another device of dev's driver, or NULL if there is none. */
weft__device *wt_device_sibling(const wt_devices *d, const weft__device *dev);

/* Why the selected drivers found no (or few) devices, as one line. */
void wt_devices_reasons(const wt_devices *d, char *buf, size_t size);

#endif /* WT_DEVICES_H */
