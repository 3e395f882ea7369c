/*
 * The oracle: random graphs run through weft and through a sequential
 * interpreter of the same node list, compared byte for byte.
 *
 * A case is a plain description (buffers, views, nodes, edges, launches)
 * that both sides read. Offsets in it are absolute within the root buffer,
 * so that the interpreter works on plain arrays; the weft side turns them
 * into offsets relative to the handle (root or view) a node goes through.
 */
#ifndef ORACLE_H
#define ORACLE_H

#include <weft.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the kernels ------------------------------------------------------- */

enum or_kernel_id {
    OR_K_AFFINE, /* x[i] = x[i] * a + k + i              (x: read-write) */
    OR_K_GATHER, /* y[i] = y[i] * 3 + x[(i * 7 + k) % m] (y: rw, x: read) */
    OR_K_MIX,    /* o[i] = (a[i] ^ k) * C + b[(i * 13 + k) % m]         */
    OR_K_SET,    /* o[i] = ((k + i) * C2) ^ k             (o: write)     */
    /*
     * The same on blocks (--blocks): item i of a block of w x h x d
     * uint32s is element i % w of row (i / w) % h of slice i / (w * h),
     * and the formulas above apply to the items in that order (gather's
     * x[j] is item j of its own block).
     */
    OR_K_BAFFINE,
    OR_K_BGATHER,
    OR_K_BSET,
    OR_K_COUNT
};

/*
 * One element of each kernel. The host kernels and the interpreter both
 * call these, and the portable source spells the same formulas, so all
 * three agree bit for bit (uint32 arithmetic wraps the same everywhere).
 */
static inline uint32_t or_affine(uint32_t x, uint32_t a, uint32_t k, uint32_t i)
{
    return x * a + k + i;
}
static inline uint32_t or_gather(uint32_t y, const uint32_t *x, uint32_t m,
                                 uint32_t k, uint32_t i)
{
    return y * 3u + x[(i * 7u + k) % m];
}
static inline uint32_t or_mix(uint32_t a, const uint32_t *b, uint32_t m,
                              uint32_t k, uint32_t i)
{
    return (a ^ k) * 2654435761u + b[(i * 13u + k) % m];
}
static inline uint32_t or_set(uint32_t k, uint32_t i)
{
    return ((k + i) * 2246822519u) ^ k;
}

/* Element i of a block of w x h uint32s a slice, pitches p and s. */
static inline uint32_t or_at3(uint32_t i, uint32_t w, uint32_t h, uint32_t p,
                              uint32_t s)
{
    return i / (w * h) * s + i / w % h * p + i % w;
}

/* The module's variants: C functions for host and sim, portable for GPUs. */
extern const weft_host_kernel or_host_kernels[OR_K_COUNT];
extern const char or_portable_source[];
extern const char *const or_kernel_names[OR_K_COUNT];
/* Number of buffer arguments of each kernel (they come first). */
extern const unsigned or_kernel_nbufs[OR_K_COUNT];

/* ---- a case ------------------------------------------------------------ */

typedef enum or_kind {
    OR_KERNEL,
    OR_WRITE,
    OR_READ,
    OR_COPY,
    OR_FILL,
    OR_MAP,
    OR_HOST,
    OR_EMPTY,
    /*
     * A native node (weft_graph_add_native): acc[0] (written) = acc[1]
     * (read, apart from it), then acc[2] (written, apart from both, when
     * there are 3) filled with the byte key & 0xff, by the driver's own
     * copy and fill on the node's queue (oracle_native.c), whose work
     * native graphs can capture (or_node.capture).
     */
    OR_NATIVE,
} or_kind;

enum { OR_MAX_ACC = 3 };

/*
 * One buffer access: a byte range of a root, or a block of it (rows above
 * 0: rows x slices runs of size bytes, the run of row r of slice s at off
 * + s * spitch + r * pitch), reached through a handle.
 */
typedef struct or_access {
    unsigned handle;  /* index in or_case.handles */
    size_t off, size; /* absolute in the handle's root; blocks: bytes a row */
    weft_access mode;
    size_t rows, slices, pitch, spitch; /* blocks; rows 0: a range */
} or_access;

/* The runs of an access (1 for a range), and where run k starts. */
static inline size_t or_acc_runs(const or_access *a)
{
    return a->rows ? a->rows * a->slices : 1;
}
static inline size_t or_acc_run(const or_access *a, size_t k)
{
    return a->rows ? a->off + k / a->rows * a->spitch + k % a->rows * a->pitch
                   : a->off;
}
/* Bytes of the access, and the end of its last run. */
static inline size_t or_acc_bytes(const or_access *a)
{
    return a->size * or_acc_runs(a);
}
static inline size_t or_acc_end(const or_access *a)
{
    return or_acc_run(a, or_acc_runs(a) - 1) + a->size;
}
/* Do a (of root ra) and b (of root rb) share a byte? Exact for blocks. */
int or_acc_overlap(unsigned ra, const or_access *a, unsigned rb,
                   const or_access *b);

typedef struct or_node {
    or_kind kind;
    unsigned kernel; /* OR_KERNEL: an or_kernel_id */
    uint32_t key;    /* constant mixed into the result */
    uint32_t mul;    /* affine's multiplier (odd) */
    uint32_t group;  /* kernel: items per group, 0 = weft's choice */
    int device;      /* kernel: weft_graph_set_device target, or -1 */
    unsigned nacc;
    /* kernel: buffer args in order; copy: dst, src; others: their ranges */
    or_access acc[OR_MAX_ACC];
    size_t host_off; /* write: source in or_case.src; read: in dst arena */
    /* block write and read: the host side's pitches as given to weft (0:
     * packed), and the bytes from its first to its last */
    size_t hpitch, hspitch, hspan;
    uint8_t pattern[4];
    unsigned pattern_size;
    int capture; /* native: weft_graph_set_native_capture(1) */
} or_node;

/* A root buffer (handle.parent < 0) or a view of another handle. */
typedef struct or_handle {
    int parent;    /* handle index, or -1 for a root */
    unsigned root; /* the root buffer it belongs to */
    size_t off;    /* absolute offset in the root */
    size_t size;
    int wrapped; /* roots: over user memory (weft_buffer_wrap) */
} or_handle;

typedef struct or_edge {
    unsigned from, to;
} or_edge;

/* A synchronous weft_buffer_write between two launches. */
typedef struct or_between {
    int write;        /* 0: nothing */
    int wait_first;   /* weft_exec_wait before it */
    unsigned handle;  /* where (absolute range as in or_access) */
    size_t off, size; /* absolute */
    size_t src_off;   /* bytes from or_case.src */
} or_between;

/* Cases have 1 to 3 launches; oracle --relaunch adds up to 5 more. */
enum { OR_MAX_HANDLES = 12, OR_MAX_LAUNCHES = 8, OR_GEN_LAUNCHES = 3 };

typedef struct or_case {
    uint64_t seed;
    unsigned nroots;
    unsigned nhandles; /* the roots come first: handles[r] is root r */
    or_handle handles[OR_MAX_HANDLES];
    uint8_t *init[OR_MAX_HANDLES]; /* each root's bytes before the graph */
    unsigned nnodes;
    or_node *nodes;
    unsigned nedges;
    or_edge *edges;
    uint8_t *src; /* bytes that write nodes and between-writes take */
    size_t src_size;
    size_t dst_size; /* bytes of host memory that read nodes fill */
    unsigned launches;
    or_between between[OR_MAX_LAUNCHES]; /* [i]: after launch i */
    int exec_device;                     /* weft_exec_options.device, or -1 */
    int destroy_graph; /* destroy the graph right after instantiating */
} or_case;

/* What the generator may use on this runtime. */
typedef struct or_limits {
    size_t align;       /* kernel buffer offsets: every device's alignment */
    unsigned max_group; /* smallest max_group_size of the devices */
    unsigned ndevices;
    unsigned max_nodes;
    unsigned native; /* percent of nodes made native nodes (0: none) */
    /* percent of native nodes made capturable (--capture-native), chosen
     * by their key (no draw: seeds keep their cases) */
    unsigned capture;
    int device_only; /* kernel and empty nodes only (--device-only) */
    /* kernel, host task and empty nodes only (--kernels-host): what a
     * native graph takes in beside the host steps between its parts */
    int kernels_host;
    /* accesses are mostly 2-D and 3-D blocks of roots seen as matrices
     * (--blocks): block kernels, transfers and host tasks */
    int blocks;
    int range_kernels; /* --blocks with kernels on ranges (--range-kernels) */
} or_limits;

/* Make the case of seed. Fails only for lack of memory. */
int or_case_generate(or_case *c, uint64_t seed, const or_limits *lim);
void or_case_free(or_case *c);
/* The nodes as text, one per line, for a failure report. */
void or_case_dump(const or_case *c, FILE *f);
const char *or_kind_name(or_kind k);

/*
 * The body of map and host nodes: a checksum of the bytes read (in access
 * order, a block's runs in order), then every written range or block
 * transformed or overwritten. ptrs[a] is the address of access a's first
 * byte, its runs at their pitches from there. *obs gets the checksum so
 * that what the node saw is compared too.
 */
void or_host_body(const or_node *n, void *const *ptrs, uint32_t *obs);

/* The native nodes' implementations, one per driver; user is the or_node. */
extern const weft_native_impl or_native_impls[];
extern const unsigned or_native_nimpls;

#endif /* ORACLE_H */
