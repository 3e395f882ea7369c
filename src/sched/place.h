/*
 * Placement: which device runs each node of a DAG, by policy, with an
 * estimate of the makespan from the cost model (cost.h).
 *
 * The DAG is described in a simplified form that the executor builds from
 * src/graph/: per node its kind, kernel, launch size, the devices that have
 * an implementation, what it reads and writes as (buffer, bytes, mode), and
 * its predecessors. A buffer's valid copy is tracked whole: a node that
 * reads it on a memory where it is not valid moves its bytes there (from the
 * cheapest memory that holds it); a read leaves it valid in both places; a
 * write leaves it valid only where the node ran.
 *
 * Time model: a device has compute_lanes lanes, each running one kernel at
 * a time, in the order the executor issues them (issue_pos), whatever the
 * order a policy places them in. A kernel starts once its inputs have
 * arrived (its predecessors finished, then the copies it needs, one after
 * the other) and the kernels issued before it on its lane are done. A
 * kernel that fills its device (a launch of at least resident_items[d]
 * items) also holds the whole device while it runs: such kernels run one
 * after another, in issue order, and only smaller ones beside them, on the
 * other lanes. So a short reduction of a tile issued right after the tile
 * starts on the tile's device as soon as the tile is done, while the
 * device goes on with the next tile, as the executor's lanes let it; one
 * issued after every tile waits for the tiles of its lane. Copies do not
 * contend with each other or with kernels: the model decides where, not
 * the exact timeline.
 *
 * Lanes. With issue_pos, a kernel takes its lane by the executor's rule
 * (plan.h): the lane of its latest predecessor on the device (by issue
 * position) where that one is still the last kernel issued there, else the
 * next lane in turn. Without, the nodes are issued in the order they are
 * placed and a kernel takes a lane free when its inputs are there.
 */
#ifndef WEFT_SCHED_PLACE_H
#define WEFT_SCHED_PLACE_H

#include "cost.h"

typedef enum weft__place_policy {
    WEFT__PLACE_EXPLICIT = 0,    /* the node's device, else its first capable */
    WEFT__PLACE_ROUND_ROBIN = 1, /* the next capable device, in turn */
    WEFT__PLACE_LOCALITY = 2,    /* the fewest bytes to move */
    WEFT__PLACE_HEFT = 3,        /* earliest finish, critical path first */
} weft__place_policy;

typedef enum weft__place_kind {
    WEFT__PNODE_KERNEL = 0, /* placed on a device */
    WEFT__PNODE_HOST = 1,   /* runs on the host: host task, map, transfer */
    WEFT__PNODE_EMPTY = 2,  /* a join: no time, no data */
} weft__place_kind;

enum { WEFT__ACC_READ = 1, WEFT__ACC_WRITE = 2, WEFT__ACC_RW = 3 };

typedef struct weft__place_access {
    unsigned buffer; /* < input.nbuffers */
    uint64_t bytes;  /* what moves if the buffer is not valid where needed */
    unsigned mode;   /* WEFT__ACC_* */
} weft__place_access;

typedef struct weft__place_node {
    weft__place_kind kind;
    const char *kernel; /* kernels: the name the time model knows */
    uint64_t items;     /* kernels: launch size */
    int device;         /* the user's device, or -1 */
    /* ndevices flags, 1 where the kernel has an implementation; NULL: all */
    const unsigned char *capable;
    const weft__place_access *access;
    unsigned naccess;
    const unsigned *preds; /* indices of nodes this one waits for */
    unsigned npreds;
} weft__place_node;

typedef struct weft__place_input {
    const weft__place_node *nodes;
    unsigned nnodes;
    unsigned ndevices;
    unsigned nbuffers;
    /* Where each buffer is valid before the first node (device or
     * WEFT__MEM_HOST); NULL: every buffer on the host. */
    const int *buffer_home;
    const weft__links *links; /* links->n == ndevices */
    weft__ktime *ktime;       /* ndevices devices */
    /* Kernels a device runs at once (its compute lanes); 0 is 1. */
    unsigned compute_lanes;
    /* ndevices: the work items device d holds at once, below which a
     * kernel leaves room for others; NULL: every kernel fills its device. */
    const uint64_t *resident_items;
    /* nnodes: the position of each node in the order the executor issues
     * them, a topological order; NULL: the order the policy places them. */
    const unsigned *issue_pos;
} weft__place_input;

typedef struct weft__place_output {
    int *device; /* nnodes entries, the caller's: a device or -1 (host/empty) */
    double makespan_ns;   /* estimated finish of the last node */
    uint64_t bytes_moved; /* estimated bytes copied between memories */
} weft__place_output;

/*
 * Place every node of in by policy into out->device and estimate the
 * makespan. A node's explicit device is kept under every policy.
 * WEFT_EINVAL for a cycle, an index out of range, a kernel no device can
 * run, an explicit device that has no implementation, or issue positions
 * that are not a topological order; WEFT_ENOMEM.
 * Reentrant; the time model is only read.
 */
int weft__place(const weft__place_input *in, weft__place_policy policy,
                weft__place_output *out);

/* "explicit", "round-robin", "locality", "heft". */
const char *weft__place_policy_name(weft__place_policy policy);

#endif /* WEFT_SCHED_PLACE_H */
