/*
 * weft_mpi: weft graphs across MPI ranks (libweft_mpi).
 *
 * The sequential task flow: every rank runs the same program and builds
 * the same graph through the weft_mpi_graph_* calls below, which mirror
 * weft's own graph calls. Every buffer the graph uses is registered with
 * an owner rank (a matrix: an owner per tile, weft_mpi_buffer_register_
 * tiles). A node runs on one rank: the one the program names, else the
 * owner of its first written access (kernel buffer arguments and host task
 * accesses in order; of a tiled buffer, the owner of the access's first
 * byte), else, for a node that writes no buffer, the owner of its first
 * read one, else rank 0. Each rank adds to its local weft graph only the
 * nodes it runs.
 *
 * Where a node on rank r reads a range whose current bytes another rank w
 * holds (the rank of its latest writer in graph order, or its owner where
 * the graph has not written it yet), weft_mpi adds a send on w (a host
 * task that reads the range) and a receive on r (a host task that writes
 * it), tagged by the transfer's index in the graph, which every rank
 * computes alike. Received bytes stay valid on r until the next write of
 * the range in graph order: a second reader on r receives nothing. At the
 * end of the graph every range whose current bytes lie on a rank other
 * than its owner goes back to the owner (weft_mpi_graph_instantiate adds
 * those transfers), so that between launches the owner holds every
 * registered buffer's bytes; a relaunch repeats the same transfers.
 *
 * Transfers are persistent requests (MPI_Ssend_init, MPI_Recv_init, made
 * once per executable graph on a communicator of its own) between the
 * ranks' host copies, with no packing: a range moves as its bytes, a 2-D
 * block as one element of an MPI hvector type of its rows. A send task
 * starts the send from the host copy and returns (weft_mpi_exec_wait
 * completes the sends); where a later node of the sending rank writes any
 * of its bytes, weft_mpi adds a completion task before it (waiting for the
 * send, MPI_Test, yielding), so the bytes stay as sent until MPI has them.
 * A send below 64 KiB is copied into staging by its task instead, and
 * needs no completion task. Where a transfer moves 256 KiB or more, a
 * thread of the executable graph calls MPI from each launch's start to its
 * end (MPI moves a large message only inside MPI calls of both ranks).
 * Every receive is started when the launch starts: a receive that no
 * earlier node of its rank touches and no node of its rank writes (the
 * bytes are nobody's there until it lands: a tile read on another rank)
 * goes straight into the host copy from the second launch on (the first
 * launch learns the host copy's address, which a host task is given and
 * which does not move); any other receive goes into staging memory of
 * weft_mpi's, which its task copies into the host copy. Its host task
 * waits for it (MPI_Test, yielding). A receive runs after the earlier
 * receive and every earlier send of its rank (explicit edges), so that
 * while it waits no send of any rank that it waits for is held up: the
 * earliest receive of the graph not yet done always completes, on any
 * number of host workers (exec.c gives the argument). Other work of its
 * rank runs beside a waiting receive, and the bytes move as soon as they
 * are sent, into the receive posted at launch. Nodes that the program adds
 * to a rank's local graph directly must not write bytes that weft_mpi
 * sends from that rank, and launches of the program's own weft graphs on
 * registered buffers must end (weft_exec_wait) before a weft_mpi launch
 * starts: an early receive writes the host copy from then on.
 *
 * Blocks (weft_access_block, weft_arg_block, weft_matrix_tile): a
 * transfer moves the block's bytes only, as one message. A block accessed
 * as a whole, the same block every time (a tile), is tracked as one piece
 * and moves as one message; a block that cuts across the pieces of
 * earlier accesses of other shapes is tracked, and moved, row by row. A
 * 3-D block is its slices.
 *
 * Device data crosses ranks through its host copy: weft makes a sent range
 * valid on the host before the send task runs, and a receive writes the
 * host copy, which weft then moves to the device that reads it. weft
 * copies between a device and pageable host memory through its pinned
 * stager, and directly where the host copy is pinned (a buffer that wraps
 * weft_host_alloc memory). Except between ranks with one CUDA device
 * each, by CUDA IPC or through a CUDA-aware MPI (below).
 *
 * Except between two ranks of one machine (MPI_COMM_TYPE_SHARED) whose
 * runtimes have exactly one CUDA device each (one GPU a rank; devices of
 * other drivers do not count), with WEFT_MPI_IPC on (the default): there
 * a transfer's two ends are a native
 * node on each rank's CUDA device beside the host task. The first launch
 * copies the bytes out of the sender's device into pinned staging, sends
 * them and copies them into the receiver's device, with no host copy
 * involved. At its end (weft_mpi_exec_wait, collective) each such receive
 * that no earlier node or transfer of its rank touches exports its range
 * on its device (weft_buffer_export) and its sender maps it
 * (weft_ipc_open): from then on the sender copies the bytes straight into
 * the receiver's device memory and sends a 4-byte message once the copy is
 * done, and every launch starts with a barrier of the ranks (a sender
 * writes another rank's device memory only once that rank's launch has
 * started). The exports hold the receivers' device extents in place until
 * the executable graph is destroyed, which releases them: a buffer with an
 * exported range cannot be destroyed before (WEFT_EBUSY).
 * weft_mpi_exec_ipc_transfers says how many of this rank's transfer ends
 * go that way.
 *
 * CUDA-aware MPI: between two ranks that are not such an IPC pair (other
 * machines, or WEFT_MPI_IPC=0) whose runtimes have exactly one CUDA device
 * each and whose MPI moves CUDA device memory itself, a transfer has the
 * same device endpoints and the same first launch (through pinned
 * staging). At its end (weft_mpi_exec_wait, collective) each such receive
 * that no earlier node or transfer of its rank touches holds its range on
 * its device (weft_buffer_export), as does its sender, and from then on
 * the persistent requests name the two device ranges (a block: an MPI
 * hvector type with the buffer's pitch): MPI moves the bytes from device
 * memory to device memory, with no host copy and no staging. The send
 * starts once the device work that wrote its bytes is done; a later node
 * of the sending rank that writes them waits for the send to complete.
 * A rank's MPI counts as CUDA-aware where WEFT_MPI_CUDA_AWARE says so (1,
 * on, yes, true; 0, off, no or false: never), else (auto, the default)
 * where the MPI library loaded says so at run time
 * (MPIX_Query_cuda_support(), declared in Open MPI's <mpi-ext.h>, or
 * looked up at run time where the header lacks it). The ranks learn each
 * other's at weft_mpi_create (weft_mpi_cuda_aware). The exports last
 * until the executable graph is destroyed, as IPC's do.
 * weft_mpi_exec_aware_transfers says how many of this rank's transfer
 * ends go that way.
 *
 * Failures: a host task added with weft_mpi_graph_add_host_status that
 * fails tells every other rank at once (a control message); a receive task
 * waiting on any rank then fails (WEFT_EIO) instead of waiting. Any other
 * failure (a kernel, a transfer, a node added to the local graph
 * directly) is told when the failing rank's launch ends, which it does:
 * a receive that needs (through other ranks) a send its rank did not make
 * follows that send, so it is canceled and does not wait. At the end of every
 * launch each rank sends every other rank one control message (its error, or
 * 0), makes the sends that its failed or canceled nodes did not make as empty
 * messages (a receive that gets one fails), and waits for all of them: nothing
 * is canceled and nothing is left in flight. weft_mpi_exec_wait then returns
 * the local error on a rank that failed and WEFT_EIO naming the lowest failed
 * rank on the others. An executable graph whose launch failed is not launched
 * again (WEFT_ESTATE): destroy it. weft_mpi never calls MPI_Abort: ending the
 * job is the program's choice.
 *
 * MPI: the program initialises MPI with MPI_THREAD_MULTIPLE (weft's
 * worker threads call MPI) before weft_mpi_create and finalises it after
 * weft_mpi_destroy. Calls marked collective are made by every rank of the
 * communicator, in the same order, with the same arguments (buffers: the
 * rank's own handle of the same registered buffer).
 *
 * Not in this version: views registered beside their parent, more than
 * one live executable graph per weft_mpi graph, map, copy, fill and block
 * transfer nodes; launches of one executable graph do not overlap (a
 * launch waits for the previous one).
 *
 * Errors are weft's codes (weft_strerror); the detail of the last failing
 * weft_mpi call on a thread is weft_mpi_last_error().
 */
#ifndef WEFT_MPI_H
#define WEFT_MPI_H

#include <mpi.h>
#include <weft.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The node runs where weft_mpi chooses (see above). */
#define WEFT_MPI_AUTO (-1)

typedef struct weft_mpi weft_mpi;
typedef struct weft_mpi_graph weft_mpi_graph;
typedef struct weft_mpi_exec weft_mpi_exec;

/*
 * The detail of the last failing weft_mpi call on this thread (never
 * NULL), weft's own detail included where weft failed.
 */
WEFT_API const char *weft_mpi_last_error(void);

/*
 * Collective. weft_mpi over the ranks of comm (duplicated), with rt the
 * rank's runtime. WEFT_ENOTSUP where MPI is not initialised or was
 * initialised below MPI_THREAD_MULTIPLE; WEFT_EINVAL for a NULL rt or mpi.
 */
WEFT_API int weft_mpi_create(weft_runtime *rt, MPI_Comm comm, weft_mpi **mpi);
/*
 * Destroy mpi; WEFT_EBUSY while a weft_mpi graph or a registered buffer
 * lives. NULL is ignored. Not collective.
 */
WEFT_API int weft_mpi_destroy(weft_mpi *mpi);
/* This rank, and the number of ranks, in mpi's communicator. */
WEFT_API int weft_mpi_rank(const weft_mpi *mpi);
WEFT_API int weft_mpi_size(const weft_mpi *mpi);
/*
 * 1 where rank's MPI moves CUDA device memory itself, as that rank
 * learnt at weft_mpi_create (WEFT_MPI_CUDA_AWARE, else the library's
 * MPIX_Query_cuda_support()), else 0; whether its transfers go device to
 * device through MPI depends on its devices too (see above). WEFT_EINVAL
 * for a NULL mpi, WEFT_ERANGE for a rank outside [0, size).
 */
WEFT_API int weft_mpi_cuda_aware(const weft_mpi *mpi, int rank);

/*
 * Collective. Register buf (a buffer of mpi's runtime, the same size on
 * every rank) with its owner rank. WEFT_EINVAL for a NULL or registered
 * buffer; WEFT_ERANGE for an owner outside [0, size).
 */
WEFT_API int weft_mpi_buffer_register(weft_mpi *mpi, weft_buffer *buf,
                                      int owner);
/* Forget buf; WEFT_EBUSY while a weft_mpi graph or exec names it. */
WEFT_API int weft_mpi_buffer_unregister(weft_mpi *mpi, weft_buffer *buf);
/* The owner of buf, or a negative error (WEFT_ENOTFOUND: not registered). */
WEFT_API int weft_mpi_buffer_owner(const weft_mpi *mpi, const weft_buffer *buf);
/*
 * Collective. Give buf a new owner: the old owner's bytes move to it
 * (blocking, through the host copies). WEFT_EBUSY while a weft_mpi graph
 * or exec names buf (graphs built later use the new owner); WEFT_ERANGE
 * for an owner outside [0, size).
 */
WEFT_API int weft_mpi_buffer_set_owner(weft_mpi *mpi, weft_buffer *buf,
                                       int owner);
/*
 * Collective. Register m.buffer (as weft_mpi_buffer_register) holding the
 * matrix m cut into tiles of tile_rows x tile_cols elements (as
 * weft_matrix_tile), tile (i, j) owned by weft_mpi_block_cyclic(i, j, p,
 * q), the bytes outside the matrix's tiles by rank 0
 * (weft_mpi_buffer_owner). A node's automatic rank is then the owner of
 * the first byte of its first written (else read) access. The tiles'
 * owners hold their bytes between launches. WEFT_EINVAL for a NULL mpi
 * or buffer, or a matrix or tile of no element (or ld below cols);
 * WEFT_ERANGE for a grid of more than size ranks, or a matrix past its
 * buffer. weft_mpi_buffer_set_owner refuses a tiled buffer
 * (WEFT_ENOTSUP).
 */
WEFT_API int weft_mpi_buffer_register_tiles(weft_mpi *mpi, weft_matrix m,
                                            size_t tile_rows, size_t tile_cols,
                                            int p, int q);
/*
 * The 2-D block-cyclic distribution: the owner of tile (i, j) on a p x q
 * grid of ranks, numbered row-major ((i mod p) * q + j mod q).
 */
static inline int weft_mpi_block_cyclic(size_t i, size_t j, int p, int q)
{
    return (int)(i % (size_t)p) * q + (int)(j % (size_t)q);
}

/*
 * Collective. An empty graph; its local part is a weft graph of mpi's
 * runtime. WEFT_EINVAL for NULL arguments.
 */
WEFT_API int weft_mpi_graph_create(weft_mpi *mpi, weft_mpi_graph **g);
/* WEFT_EBUSY while an exec made from g lives. NULL is ignored. */
WEFT_API int weft_mpi_graph_destroy(weft_mpi_graph *g);

/*
 * Collective: the weft_graph_add_* calls of the same names, plus the rank
 * that runs the node (WEFT_MPI_AUTO, or a rank). node (may be NULL)
 * receives the node's index in g (the nodes the program added, in order,
 * on every rank). Every buffer must be registered (WEFT_EINVAL); ranges
 * and blocks are checked alike on every rank (WEFT_EINVAL, WEFT_ERANGE,
 * as weft checks them). Where weft refuses the node on
 * the rank that runs it, after weft_mpi added its transfers, the call
 * returns weft's error there and g refuses further nodes (WEFT_ESTATE):
 * the ranks' graphs no longer agree.
 */
WEFT_API int weft_mpi_graph_add_kernel(weft_mpi_graph *g, weft_kernel *k,
                                       weft_dims dims, const weft_arg *args,
                                       unsigned nargs, int rank,
                                       uint32_t *node);
WEFT_API int weft_mpi_graph_add_host(weft_mpi_graph *g, weft_host_task_fn *fn,
                                     void *user, const weft_access_desc *acc,
                                     unsigned nacc, int rank, uint32_t *node);
/* A non-zero return fails the launch on every rank (see above). */
WEFT_API int weft_mpi_graph_add_host_status(weft_mpi_graph *g,
                                            weft_host_status_fn *fn, void *user,
                                            const weft_access_desc *acc,
                                            unsigned nacc, int rank,
                                            uint32_t *node);
/*
 * A native node (weft_graph_add_native) on the rank that runs it; its
 * accesses (ranges or blocks) count as those of a host task. WEFT_EINVAL
 * on every rank for what weft would refuse of impls: NULL, nimpls 0, a
 * NULL function, a driver name weft does not know.
 */
WEFT_API int
weft_mpi_graph_add_native(weft_mpi_graph *g, const weft_native_impl *impls,
                          unsigned nimpls, const weft_access_desc *acc,
                          unsigned nacc, void *user, int rank, uint32_t *node);
/* src and dst: host memory of the rank that runs the node. */
WEFT_API int weft_mpi_graph_add_write(weft_mpi_graph *g, weft_buffer *dst,
                                      size_t offset, const void *src,
                                      size_t size, int rank, uint32_t *node);
WEFT_API int weft_mpi_graph_add_read(weft_mpi_graph *g, weft_buffer *src,
                                     size_t offset, void *dst, size_t size,
                                     int rank, uint32_t *node);

/* The rank that runs node of g, or a negative error (WEFT_EINVAL). */
WEFT_API int weft_mpi_graph_node_rank(const weft_mpi_graph *g, uint32_t node);
/*
 * The node's index in this rank's weft graph (for weft_graph_set_device,
 * weft_graph_set_priority, weft_exec_node_device). WEFT_ENOTFOUND where
 * another rank runs it.
 */
WEFT_API int weft_mpi_graph_local_node(const weft_mpi_graph *g, uint32_t node,
                                       weft_node *local);
/* This rank's weft graph (nodes and transfers); owned by g. */
WEFT_API weft_graph *weft_mpi_graph_local(weft_mpi_graph *g);
/* The number of transfers (sends and receives of every rank) in g. */
WEFT_API unsigned weft_mpi_graph_transfer_count(const weft_mpi_graph *g);

/*
 * Collective. Close g (the transfers back to the owners) and instantiate
 * this rank's graph with opts (may be NULL), as weft_graph_instantiate.
 * One live exec per graph (WEFT_EBUSY); weft's errors otherwise.
 */
WEFT_API int weft_mpi_graph_instantiate(weft_mpi_graph *g,
                                        const weft_exec_options *opts,
                                        weft_mpi_exec **e);
/*
 * Collective. Launch e on every rank: waits for e's previous launch, if
 * any (as weft_mpi_exec_wait), and for the launch in flight of any other
 * executable graph of mpi that names one of e's buffers (receives write
 * host copies from the launch's start; that launch's result is kept for
 * its own weft_mpi_exec_wait), then starts. WEFT_ESTATE after a failed
 * launch.
 */
WEFT_API int weft_mpi_exec_launch(weft_mpi_exec *e);
/*
 * Collective. Wait for e's launch on this rank, complete its sends, and
 * agree with the other ranks: 0 when every rank's launch succeeded, else
 * the local error, or WEFT_EIO naming the lowest rank that failed.
 */
WEFT_API int weft_mpi_exec_wait(weft_mpi_exec *e);
/*
 * Write this rank's ends of e's transfers to path as JSON, for
 * tools/weft-mpi-trace (which merges the ranks' traces, drawing each
 * transfer as an arrow from its send to its receive):
 *
 *   {"rank":R,"size":N,"transfers":[{"tag":T,"dir":"send"|"recv",
 *    "peer":P,"node":LOCAL,"bytes":B,"early":true|false,
 *    "ipc":true|false,"aware":true|false},...]}
 *
 * node is the transfer's host task in this rank's weft graph (the "node"
 * of its slices in this rank's trace); early: a receive posted into the
 * host copy when a launch starts, from the second launch on; ipc: the
 * bytes move device to device by CUDA IPC; aware: device to device
 * through a CUDA-aware MPI (see above).
 * WEFT_EINVAL for NULL arguments; WEFT_EIO where the file cannot be
 * written.
 */
WEFT_API int weft_mpi_exec_write_transfers(const weft_mpi_exec *e,
                                           const char *path);
/*
 * This rank's ends of e's transfers that move device to device by CUDA
 * IPC (see above): 0 until the first launch that succeeded has ended
 * (its weft_mpi_exec_wait), and wherever IPC is off or cannot serve. 0
 * for a NULL e.
 */
WEFT_API unsigned weft_mpi_exec_ipc_transfers(const weft_mpi_exec *e);
/*
 * This rank's ends of e's transfers that move device to device through a
 * CUDA-aware MPI (see above): 0 until the first launch that succeeded has
 * ended, and wherever the pair's MPI is not CUDA-aware, IPC serves it, or
 * a rank lacks one CUDA device. 0 for a NULL e.
 */
WEFT_API unsigned weft_mpi_exec_aware_transfers(const weft_mpi_exec *e);
/* This rank's executable graph; owned by e. */
WEFT_API weft_exec *weft_mpi_exec_local(weft_mpi_exec *e);
/* Wait for e (collective where a launch is in flight), then destroy it. */
WEFT_API int weft_mpi_exec_destroy(weft_mpi_exec *e);

#ifdef __cplusplus
}
#endif
#endif /* WEFT_MPI_H */
