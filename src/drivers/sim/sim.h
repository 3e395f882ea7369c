/*
 * The sim driver's record: what tests and tools read to see what the
 * simulated machine did. Every operation enqueued on a sim queue appends one
 * entry, at enqueue time and in submission order, with its virtual start
 * and end; sim.c describes the time model, sim_config.c the configuration
 * keys. An operation enqueued on a queue that takes part in a capture
 * (graphs=1) appends nothing: each launch of the native graph appends its
 * operations, with the records and waits that order them (sim_graph.c).
 */
#ifndef WEFT_SIM_H
#define WEFT_SIM_H

#include "../driver.h"

typedef enum weft__sim_op_kind {
    WEFT__SIM_H2D = 1,
    WEFT__SIM_D2H,
    WEFT__SIM_D2D,
    WEFT__SIM_PEER,
    WEFT__SIM_FILL,
    WEFT__SIM_KERNEL,
    WEFT__SIM_HOST_FN,
    WEFT__SIM_EVENT_RECORD,
    WEFT__SIM_EVENT_WAIT,
} weft__sim_op_kind;

/* src_device / dst_device of the host side of a copy; unused fields. */
#define WEFT__SIM_HOST (-1)
/* engine of operations that occupy no engine (events, waits, host fns). */
#define WEFT__SIM_ENGINE_NONE (-1)
/* Engine 0 of a device computes; engines 1..copy_engines copy. */
#define WEFT__SIM_ENGINE_COMPUTE 0

typedef struct weft__sim_op {
    uint64_t seq; /* submission order in the platform, from 1 */
    weft__sim_op_kind kind;
    int device;            /* driver_index of the queue's device */
    unsigned queue;        /* the queue's id in the platform, from 1 */
    weft__queue_role role; /* the queue's role */
    int priority;          /* the queue's: 0, or -1 (high) */
    int engine;            /* on the queue's device, or ENGINE_NONE */
    uint64_t bytes;        /* copies and fills */
    int src_device;        /* copies: where the bytes come from, or HOST */
    int dst_device;        /* copies, fills: where they go, or HOST */
    uint64_t items;        /* kernels: work items */
    char kernel[64];       /* kernels: the name (truncated), else "" */
    unsigned event;        /* record and wait: the event's id, from 1 */
    int event_device;      /* wait: the device the event was recorded on */
    /*
     * Virtual nanoseconds. ready_ns: when the queue let the operation
     * start (after earlier work and waits); start_ns - ready_ns is time spent
     * waiting for the engine. A wait runs from the queue's ready time to the
     * event's time (0 long if the event was already reached or never
     * recorded).
     */
    uint64_t ready_ns;
    uint64_t start_ns;
    uint64_t end_ns;
} weft__sim_op;

/*
 * The record of the platform of dev (any sim device of it), count entries.
 * The pointer stays valid until the next operation on that platform or
 * weft__sim_record_clear(): read it while no other thread enqueues.
 */
const weft__sim_op *weft__sim_record(weft__device *dev, size_t *count);
/*
 * With check=1 (and real_data=1): how many times an operation touched
 * bytes that an earlier one also touched, one of them writing, while that
 * one was still running in virtual time, with nothing ordering the two.
 * 0 for a correct schedule.
 */
uint64_t weft__sim_hazards(weft__device *dev);
/* Forget the record (virtual time goes on from where it is). */
void weft__sim_record_clear(weft__device *dev);
/* The latest virtual end of any operation of dev's platform so far. */
uint64_t weft__sim_now(weft__device *dev);
/* "h2d", "kernel", "wait", ... */
const char *weft__sim_op_name(weft__sim_op_kind kind);
/* Bytes of the recorded operations of kind from src to dst (-1: host). */
uint64_t weft__sim_bytes(weft__device *dev, weft__sim_op_kind kind, int src,
                         int dst);

#endif /* WEFT_SIM_H */
