/*
 * The runtime object as the public API holds it: the drivers, their
 * discovery, and the layers' state. The handle weft_runtime is the memory
 * layer's part (src/mem/machine.h); the scheduler's hangs from it
 * (src/sched/sched.h); the API's own (below) wraps it.
 */
#ifndef WEFT_RUNTIME_H
#define WEFT_RUNTIME_H

#include "graph/kernel.h"
#include "mem/machine.h"
#include "sched/cost.h"
#include "sched/sched.h"

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

/*
 * The API's runtime: the handle first (a weft_runtime * is a pointer to
 * rt), then what only runtime.c reads.
 */
typedef struct weft__runtime_api {
    weft_runtime rt;
    weft__driver_config cfg;
    weft__runtime_driver drivers[WEFT__NDRIVERS];
    char *trace_file; /* where the trace goes at destroy */
} weft__runtime_api;

#endif /* WEFT_RUNTIME_H */
