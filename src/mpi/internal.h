/*
 * weft_mpi's private header. weft_mpi sits above the public API: it
 * includes weft.h and weft_mpi.h, never a header of src/ outside src/mpi/
 * (tools/check-layers).
 */
#ifndef WEFT_MPI_INTERNAL_H
#define WEFT_MPI_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include <weft_mpi.h>

/*
 * A registered buffer. Heap-allocated, so that graphs keep its address.
 * A tiled one (weft_mpi_buffer_register_tiles) holds the matrix m cut
 * into tiles of tr x tc elements, tile (i, j) owned by
 * weft_mpi_block_cyclic(i, j, p, q); owner owns the bytes outside tiles.
 */
typedef struct wm_reg {
    weft_buffer *buf;
    size_t size;
    int owner;
    unsigned users; /* live graphs and execs that name it */
    int tiled;
    weft_matrix m;
    size_t tr, tc;
    int p, q;
} wm_reg;

struct weft_mpi {
    weft_runtime *rt;
    MPI_Comm comm; /* a duplicate of the program's */
    int rank, size;
    wm_reg **regs;
    unsigned nregs, cap;
    unsigned graphs;       /* live weft_mpi graphs */
    weft_mpi_exec **execs; /* the live executable graphs */
    unsigned nexecs, xcap;
    /*
     * Device to device between ranks of one machine (cuda.c): per rank,
     * its machine (the lowest rank of comm on it) and whether it moves
     * tiles by CUDA IPC (WEFT_MPI_IPC on, exactly one CUDA device,
     * libcuda's copy loaded), alike on every rank (made at
     * weft_mpi_create). gpu: this rank's CUDA device, where its ends of
     * such transfers run; cuda: libcuda, opened by weft_mpi (NULL: none).
     */
    int *machine;
    unsigned char *ipc_ok;
    int ipc_pairs; /* some two ranks are a pair (wm_ipc_pair) */
    /*
     * CUDA-aware MPI (cuda.c), per rank, alike on every rank: WM_AWARE_MPI,
     * its MPI moves bytes to and from CUDA device memory itself
     * (WEFT_MPI_CUDA_AWARE, else MPIX_Query_cuda_support); WM_AWARE_GPU,
     * it has gpu and libcuda's copy (the condition of IPC's too).
     * aware_pairs: some two ranks are a pair (wm_aware_pair).
     */
    unsigned char *aware;
    int aware_pairs;
    const weft_device *gpu;
    void *cuda;
    void *memcpy2d; /* cuMemcpy2DAsync_v2 */
};

/*
 * A 2-D region of a buffer: rows runs of row_bytes bytes, pitch apart,
 * the first at origin (rows 1: the range [origin, + row_bytes); pitch is
 * then row_bytes).
 */
typedef struct wm_region {
    size_t origin, row_bytes, rows, pitch;
} wm_region;

/*
 * Bytes of a buffer in the graph being built: the rank holding their
 * current bytes, the ranks holding a valid copy (a bitmap of words(mpi)
 * words), and home, the rank that owns them (where they go back at the
 * end of the graph).
 */
typedef struct wm_piece {
    wm_region at;
    int holder, home;
    uint64_t *valid;
} wm_piece;

/*
 * What the graph knows of one buffer: disjoint pieces sorted by origin.
 * Bytes in no piece are held by owner alone (owner's home). A tiled
 * buffer starts with one piece per tile (its home the tile's owner).
 */
typedef struct wm_track {
    wm_reg *reg;
    int owner; /* the owner when the graph first named it */
    wm_piece *p;
    unsigned n, cap;
    size_t maxspan; /* at least every piece's end - origin */
} wm_track;

/*
 * One end of a transfer on this rank: the send or the receive host task's
 * user data. Its requests and staging belong to the graph's live exec.
 * Heap-allocated: the local graph holds its address.
 *
 * The bytes move between the host copies, with no packing: one element of
 * type (count 1: a 2-D block as an hvector of its rows; count size of
 * MPI_BYTE: a range), at host, the host copy's address of the region's
 * first byte, which a host task is given and which stays the same for the
 * buffer's life (weft.h, host tasks). host is learnt when the endpoint's
 * task first runs, and direct (a persistent request on host) made then.
 *
 * A send's task starts direct and returns; the bytes stay read until the
 * send completes: before a later node of this rank writes any of them, a
 * completion task (waiting for direct) is added (graph.c, settle_open),
 * and every send completes at the end of the launch. A send below
 * WM_DIRECT_MIN bytes (packed) is copied into staging instead, sent from
 * there (req), and needs no completion task.
 *
 * A receive is started when the launch starts: directly into the host copy
 * where early (no earlier node of this rank in the graph touches its bytes,
 * and none writes them, so nothing reads or writes them until its task
 * runs: graph.c, wm_graph_close) and host is known (the second launch on),
 * else into staging, which its task copies into the host copy.
 */
typedef struct wm_endpoint {
    weft_mpi_graph *g;
    wm_reg *reg;
    int send; /* 1: a send to peer, 0: a receive from peer */
    int peer, tag;
    weft_node node; /* its host task in the local graph */
    wm_region at;   /* the bytes moved */
    size_t size;    /* at.rows * at.row_bytes */
    unsigned seq;   /* its place among this rank's touches (graph.c) */
    int early;      /* a receive that may be posted into the host copy */
    int packed;     /* a send below WM_DIRECT_MIN: copied into staging */
    int count;
    MPI_Datatype type;
    void *host;         /* NULL until learnt */
    MPI_Request direct; /* on host: MPI_REQUEST_NULL until made */
    void *staging;      /* receives and packed sends */
    MPI_Request req;    /* on staging */
    MPI_Request fill;   /* an empty message in place of a send not made */
    int posted_direct;  /* this launch: the receive is direct */
    int done; /* this launch: the send started, the receive's bytes came */
    /*
     * A transfer between two ranks of one machine that move tiles by CUDA
     * IPC (wm_ipc_pair): both ends are a native node on the rank's GPU
     * (copy_node) beside the host task (node). A send: the native node
     * copies the bytes out (into staging, or into the receiver's device
     * memory where ipc), then the task starts req. A receive: the task
     * waits for req, then the native node copies staging into the device
     * (or, where ipc, does nothing: the bytes are there). Until the first
     * launch has ended, and for good where the receiver cannot export its
     * device memory, staging is pinned memory (weft_host_alloc) and req
     * moves the bytes; from the second launch on (wm_ipc_setup) an ipc
     * endpoint's req moves one int (ipc_msg) saying that the copy is done.
     * ipc_first: a receive that no earlier touch of its rank shares a byte
     * with (so nothing of its rank reads or writes its bytes between a
     * launch's start and its task), the condition to export it.
     */
    int dev;
    int ipc_first;
    int ipc;      /* from wm_ipc_setup on: the bytes move by IPC */
    int exported; /* its device range is exported (held in place) */
    /*
     * A device endpoint of a CUDA-aware pair (wm_aware_pair; aware): the
     * same native nodes and the same first launch. At wm_ipc_setup, where
     * the receive is ipc_first, both ends hold their range on their GPU
     * (weft_buffer_export: the sender's READ, the receiver's WRITE) at
     * dev_addr, and req is re-made there (cuda_mpi): MPI reads and writes
     * the device memory, and the native nodes enqueue nothing (they check
     * that weft gives them dev_addr). The send is open as a host send is
     * (graph.c): MPI reads the device range until the send completes, so
     * a later write of it on this rank follows a completion task.
     */
    int aware;
    int cuda_mpi;
    /*
     * A device send's completion task (settle_open), made for the first
     * later writer of its bytes and followed by every later one: it reads
     * nothing weft sees, so weft orders no writer after it by itself.
     */
    weft_node settled;
    int has_settled;
    uint64_t dev_addr;
    uint64_t peer_addr;  /* a send: the receiver's first byte, mapped */
    weft_node copy_node; /* the native node */
    int ipc_msg;
} wm_endpoint;

/*
 * Bytes a node or transfer of this rank touches (graph.c), in the order
 * they were added (seq), for the receives' early test at close.
 */
typedef struct wm_touch {
    wm_reg *reg;
    wm_region at;
    unsigned seq;
    int wrote; /* a node's write (not a receive's) */
} wm_touch;

/* A status host task of the program's, wrapped to broadcast its failure. */
typedef struct wm_wrap {
    weft_mpi_graph *g;
    weft_host_status_fn *fn;
    void *user;
} wm_wrap;

struct weft_mpi_graph {
    weft_mpi *mpi;
    weft_graph *local;
    int broken; /* the ranks' graphs disagree: weft refused a node here */
    wm_track *tracks;
    unsigned ntracks, tcap;
    wm_endpoint **eps; /* this rank's ends of transfers, in graph order */
    unsigned neps, ecap;
    unsigned ntransfers;   /* of every rank: the tag of the next is 1 + it */
    int *node_rank;        /* per program node */
    weft_node *node_local; /* per program node: UINT32_MAX where not here */
    unsigned nnodes, ncap;
    wm_wrap **wraps;
    unsigned nwraps, wcap;
    /*
     * A receive runs after the earlier receive and every earlier send of
     * this rank (edges from the last receive and from the sends added
     * since, in since), so that a receive task waiting holds up no send
     * that the receives it waits for need (see exec.c).
     */
    int have_recv;
    weft_node last_recv;
    weft_node *since;
    unsigned nsince, scap;
    /*
     * This rank's touches, and its sends whose bytes no completion task
     * guards yet (open): a later write of them here waits for the send.
     */
    wm_touch *touch;
    unsigned ntouch, thcap, seq;
    wm_endpoint **open;
    unsigned nopen, ocap;
    /*
     * Completion tasks of device sends (aware) made for the node being
     * added (settle_open): they have no access (the bytes are on the
     * device), so the node gets an edge from each (follow_pending).
     */
    weft_node *pending;
    unsigned npending, pcap;
    weft_mpi_exec *exec; /* the live exec, or NULL */
};

/*
 * An executable graph. Every launch, each rank sends every other rank one
 * control message (tag 0 on comm): its error code as soon as it fails,
 * else 0 when its launch ends; ctrl_recv[r] receives rank r's (persistent,
 * started with the launch), tested by whichever thread holds ctrl_lock.
 * aborted (atomic): 0, or 1 once a failure here or a non-zero code from
 * another rank was seen: receive tasks then give up. ctrl_sent (atomic):
 * this rank sent its control messages, with code my_code.
 */
struct weft_mpi_exec {
    weft_mpi_graph *g;
    weft_exec *local;
    MPI_Comm comm;
    void *staging; /* one block for every endpoint */
    pthread_mutex_t ctrl_lock;
    MPI_Request *ctrl_recv, *ctrl_send; /* one per rank */
    int *ctrl_msg;
    unsigned char *ctrl_done; /* per rank: its message arrived */
    int my_code;
    atomic_int aborted;
    atomic_int ctrl_sent;
    int in_flight;
    int failed; /* a launch failed: the error it returned */
    /*
     * The progress thread, where a transfer moves WM_PROGRESS_MIN bytes or
     * more (MPI moves bytes only inside MPI calls, and a large message
     * needs both ranks' calls, fragment after fragment): from a launch's
     * start to its end it calls MPI_Iprobe on comm for probe_tag (a tag no
     * message has), yielding between calls, so that transfers move while
     * this rank's threads do other work. pstate, under plock: 0 idle, 1
     * polling, 2 quit.
     */
    pthread_t progress;
    int has_progress, probe_tag;
    /*
     * Held around every MPI call of this exec that may move a message's
     * bytes (tests, waits by testing, starts, the progress thread's
     * probes): MPI writes or reads a message's memory inside whichever
     * thread's call makes progress, and a thread that sees a request
     * complete then takes this lock after that call released it, so what
     * MPI did happens before what the thread does next (ThreadSanitizer
     * sees it too). Taken inside ctrl_lock; nothing is taken under it.
     */
    pthread_mutex_t mpi_lock;
    pthread_mutex_t plock;
    pthread_cond_t pcond;
    int pstate;
    /*
     * CUDA IPC (cuda.c): pinned, the staging of the device endpoints
     * (weft_host_alloc; freed where all of them move by IPC or
     * through a CUDA-aware MPI); ipc_setup,
     * whether wm_ipc_setup ran (once, at the end of the first launch that
     * succeeded), with its messages and requests (ipc_offer, ipc_req: one
     * per device endpoint, made at instantiate); nipc, this rank's
     * endpoints moving by IPC; ipc_any, whether any rank has one (then
     * each launch starts with a barrier, so that no rank writes another's
     * device memory before that rank's launch has started).
     */
    void *pinned;
    int ipc_setup;
    struct wm_offer *ipc_offer;
    MPI_Request *ipc_req;
    unsigned nipc;
    unsigned naware; /* this rank's endpoints moving through CUDA-aware MPI */
    int ipc_any;
    int ipc_small; /* every message of WM_PROGRESS_MIN or more went IPC */
};

/*
 * Sends below this size are copied into staging by their task and sent
 * from there (req): a copy that costs less than the completion task that a
 * later write of the bytes would need.
 */
#define WM_DIRECT_MIN ((size_t)64 << 10)

/* weft_mpi.aware's bits. */
enum { WM_AWARE_MPI = 1, WM_AWARE_GPU = 2 };

/* The size from which a transfer gets the progress thread (exec.c). */
#define WM_PROGRESS_MIN ((size_t)256 << 10)

/* Record the detail of an error and return err. */
int wm_error(int err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Record weft's own detail of err, prefixed by the function's name. */
int wm_weft_error(int err, const char *fn);
/* Close g: the bytes of every track go back to their owners. */
int wm_graph_close(weft_mpi_graph *g);
wm_reg *wm_find(const weft_mpi *mpi, const weft_buffer *buf);
/* The rank owning the byte at offset of reg. */
int wm_owner_at(const wm_reg *reg, size_t offset);

/* track.c: where bytes are, per buffer of a graph (every rank alike). */
/* The track of reg in g, made if new. */
int wm_track_of(weft_mpi_graph *g, wm_reg *reg, wm_track **out);
/* Rank r reads at: a transfer for each piece of it that r lacks. */
int wm_track_read(weft_mpi_graph *g, wm_track *t, wm_region at, int r);
/* Rank r writes at: r holds it alone. */
int wm_track_write(weft_mpi_graph *g, wm_track *t, wm_region at, int r);
/* Every piece goes back to its home rank. */
int wm_track_close(weft_mpi_graph *g, wm_track *t);
void wm_track_free(wm_track *t);
/* graph.c: one end of the transfer of at (from -> to), where this rank is one.
 */
int wm_add_transfer(weft_mpi_graph *g, wm_reg *reg, wm_region at, int from,
                    int to);
/* Send this rank's control messages (once per launch): code, an error. */
void wm_abort(weft_mpi_exec *e, int code);
/* What the transfer tasks return when they fail the node. */
enum { WM_TASK_FAILED = -1 };
/*
 * The transfer tasks (user: the endpoint). The send is a status task; the
 * receive and the completion of a send (waiting for it: wm_sent_task) are
 * poll tasks (weft_graph_add_host_poll), which hold no worker while their
 * message is on its way.
 */
int wm_recv_task(void *const *ptrs, void *user);
int wm_send_task(void *const *ptrs, void *user);
int wm_sent_task(void *const *ptrs, void *user);
/* cuda.c: device to device between ranks of one machine. */
/* Learn the machines of the ranks and which move tiles by IPC (collective). */
int wm_ipc_init(weft_mpi *mpi);
void wm_ipc_fini(weft_mpi *mpi);
/* Whether a transfer from rank a to rank b has device endpoints. */
int wm_ipc_pair(const weft_mpi *mpi, int a, int b);
/*
 * Whether a transfer from rank a to rank b has device endpoints that move
 * through a CUDA-aware MPI: both ranks' MPI is CUDA-aware and each has
 * one CUDA device, and they are not an IPC pair (IPC is preferred).
 */
int wm_aware_pair(const weft_mpi *mpi, int a, int b);
/* The native nodes' functions (user: the endpoint). */
int wm_copy_out(const weft_native_ctx *ctx, void *user);
int wm_copy_in(const weft_native_ctx *ctx, void *user);
/* ipc_offer and ipc_req for e's device endpoints (exec_setup). */
int wm_ipc_alloc(weft_mpi_exec *e);
/*
 * Collective, between launches: receivers export, senders open, both
 * agree endpoint by endpoint; then ipc endpoints' req carry ipc_msg. A
 * failure on any rank is every rank's (it fails e).
 */
int wm_ipc_setup(weft_mpi_exec *e);
/* Release what wm_ipc_setup took (exports, mappings). */
void wm_ipc_release(weft_mpi_exec *e);
/* The bytes from at's first byte to one past its last. */
size_t wm_span(const wm_region *at);
/* Whether a and b share a byte (track.c). */
int wm_overlap(const wm_region *a, const wm_region *b);

#endif
