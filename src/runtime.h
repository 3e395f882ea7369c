/* The runtime object: drivers, devices and the machine's topology. */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include "drivers/driver.h"

#include <hwloc.h>
#include <pthread.h>

/* The drivers weft knows, in discovery order. */
enum { WEFT__NDRIVERS = 4 };

typedef struct weft__runtime_driver {
    const weft__driver *drv;
    unsigned wanted;  /* selected by the device list */
    unsigned opened;  /* platforms_open succeeded */
    int status;       /* 0, or why it has no devices */
    char reason[256]; /* the detail of status */
    weft__platform **platforms;
    unsigned nplatforms;
    unsigned ndevices; /* devices found, before selection */
    unsigned all;      /* DRIVER or DRIVER:* was given */
    uint64_t indices;  /* DRIVER:N entries, as a bit set (N < 64) */
} weft__runtime_driver;

struct weft_runtime {
    weft__driver_config cfg;
    weft__runtime_driver drivers[WEFT__NDRIVERS];
    weft__device **devices; /* the selected devices, in order */
    unsigned ndevices;
    hwloc_topology_t topology;
    /*
     * One context per device, created on first use (weft__runtime_context)
     * under lock; destroyed with the runtime.
     */
    pthread_mutex_t lock;
    weft__context **contexts;
    long live; /* modules (and later buffers, graphs) alive; atomic */
};

/* The context of device index, created on first use. */
int weft__runtime_context(weft_runtime *rt, unsigned index,
                          weft__context **ctx);
/* Count an object of rt in (+1) or out (-1). */
void weft__runtime_live(weft_runtime *rt, long d);

/* The index-th selected device (NULL if out of range). */
weft__device *weft__runtime_device(const weft_runtime *rt, unsigned index);
/* The internal device behind a public handle. */
static inline weft__device *weft__device_of(const weft_device *dev)
{
    return (weft__device *)(void *)dev;
}

/* The implementation of kernel k on device index, NULL if none. */
weft__kernel *weft__kernel_impl(const weft_kernel *k, unsigned index);

/* Read WEFT_LOG once (log.c). */
void weft__log_setup(void);

#endif /* WEFT_RUNTIME_H */
