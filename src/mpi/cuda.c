/*
 * Tiles between two ranks, device to device: by CUDA IPC between ranks of
 * one machine, else through a CUDA-aware MPI.
 *
 * weft_mpi_create learns each rank's machine (MPI_Comm_split_type,
 * MPI_COMM_TYPE_SHARED) and whether the rank can take part: WEFT_MPI_IPC
 * on, one CUDA device in its runtime, and libcuda's cuMemcpy2DAsync, which
 * weft_mpi calls from its native nodes (it knows weft only as a program
 * does, and such a program calls CUDA itself). A transfer between two
 * such ranks of one machine has device endpoints (graph.c): a native node
 * on each rank's GPU beside the host task.
 *
 * The first launch moves the bytes through pinned staging: the sender's
 * node copies the device's bytes out, its task sends them; the
 * receiver's task receives them, its node copies them in. That launch
 * leaves the receiver's device extents as the graph uses them. At its end
 * (wm_ipc_setup, from the collective weft_mpi_exec_wait), every
 * receive that no earlier touch of its rank shares a byte with exports
 * its range on its GPU (weft_buffer_export: the extent stays put until
 * released) and offers the handle; the sender opens it (weft_ipc_open)
 * and both agree. From then on the sender's node copies straight into the
 * receiver's device memory (NVLink, or PCIe peer to peer), its task then
 * sends one int, and the receiver's task waits for that int while its
 * node enqueues nothing: weft counts the bytes valid on the receiver's
 * GPU, where they are. Every launch from then on starts with a barrier
 * (exec.c), so that the copy lands only once the receiver's launch has
 * started: from then on nothing of its rank touches the range before the
 * receive's task (the export's condition), and the previous launch and
 * whatever the program did between launches are over. An exec's exports
 * and mappings last until it is destroyed.
 *
 * Between two ranks that are no IPC pair (other machines, or WEFT_MPI_IPC
 * off) whose MPI is CUDA-aware (WEFT_MPI_CUDA_AWARE, else what the
 * library says at run time) and that have one CUDA device each
 * (wm_aware_pair), a transfer has the same device endpoints and the same
 * first launch. At wm_ipc_setup the receiver, where it could export for
 * IPC, holds its range on its GPU (an export, WEFT_WRITE) and learns its
 * address (weft_buffer_device_address), the sender does the same with
 * WEFT_READ, and both re-make their persistent requests on the device
 * addresses (a block: the same hvector type, its pitch the buffer's), so
 * that MPI moves the bytes device to device: the native nodes enqueue
 * nothing, the sender's task starts the send once its native node's
 * queue work is done (weft waits for it before a host task that follows
 * it), and MPI has written the receiver's device memory when the
 * receive's request completes. No barrier: a receive is posted when its
 * rank's launch starts, and MPI writes nothing before.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

/*
 * Open MPI declares MPIX_Query_cuda_support in <mpi-ext.h> and defines
 * MPIX_CUDA_AWARE_SUPPORT there (0 or 1: how it was built; the library
 * loaded at run time has the last word). Elsewhere (MPICH, an Open MPI
 * without the extension) the function is looked up at run time.
 */
#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

/* cuMemcpy2DAsync's argument, as the CUDA Driver API lays it out. */
typedef struct wm_memcpy2d {
    size_t src_x, src_y;
    int src_type;
    const void *src_host;
    uint64_t src_device;
    void *src_array;
    size_t src_pitch;
    size_t dst_x, dst_y;
    int dst_type;
    void *dst_host;
    uint64_t dst_device;
    void *dst_array;
    size_t dst_pitch;
    size_t width, height;
} wm_memcpy2d;
typedef int wm_memcpy2d_fn(const wm_memcpy2d *p, void *stream);
enum { WM_MEMORY_HOST = 1, WM_MEMORY_DEVICE = 2 };

/* WEFT_MPI_IPC (weft's options table; weft_runtime_create checked it). */
static int ipc_wanted(void)
{
    static const char *const off[] = {"0", "off", "no", "false"};
    const char *v = getenv("WEFT_MPI_IPC");

    for (unsigned i = 0; v && i < sizeof off / sizeof *off; i++)
        if (!strcasecmp(v, off[i]))
            return 0;
    return 1;
}

/*
 * WEFT_MPI_CUDA_AWARE (weft's options table; weft_runtime_create checked
 * it): 1 or 0 where set to a word that says so, -1 for auto (unset, or a
 * value weft refused: it reads as unset there too).
 */
static int aware_wanted(void)
{
    static const char *const on[] = {"1", "on", "yes", "true"};
    static const char *const off[] = {"0", "off", "no", "false"};
    const char *v = getenv("WEFT_MPI_CUDA_AWARE");

    for (unsigned i = 0; v && i < sizeof on / sizeof *on; i++) {
        if (!strcasecmp(v, on[i]))
            return 1;
        if (!strcasecmp(v, off[i]))
            return 0;
    }
    return -1;
}

/* Whether the MPI library loaded says it moves CUDA device memory. */
static int mpi_says_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    return MPIX_Query_cuda_support() == 1;
#else
    int (*query)(void);

    *(void **)&query = dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support");
    return query && query() == 1;
#endif
}

/*
 * The runtime's CUDA device, where it has exactly one, and libcuda's copy:
 * 1, else 0. One: every node of the rank on a CUDA device then runs
 * there, launch after launch, so that the ranges the first launch used
 * are those of the next ones, inside the extents it left, and none needs
 * an exported extent widened (weft_buffer_export).
 */
static int cuda_find(weft_mpi *mpi)
{
    const char *lib = getenv("WEFT_CUDA_LIBRARY");
    unsigned n = 0;

    for (unsigned i = 0; i < weft_runtime_device_count(mpi->rt); i++) {
        const weft_device *d = weft_runtime_device(mpi->rt, i);
        weft_device_info info = {.size = sizeof info};

        if (weft_device_get_info(d, &info) == 0 &&
            !strcmp(info.driver, "cuda") && n++ == 0)
            mpi->gpu = d;
    }
    if (n != 1)
        mpi->gpu = NULL;
    if (!mpi->gpu)
        return 0;
    mpi->cuda = dlopen(lib ? lib : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (mpi->cuda)
        mpi->memcpy2d = dlsym(mpi->cuda, "cuMemcpy2DAsync_v2");
    return mpi->memcpy2d != NULL;
}

int wm_ipc_init(weft_mpi *mpi)
{
    int mine[3] = {mpi->rank, 0, 0}, *all, gpu, wanted = aware_wanted();
    MPI_Comm node;

    mpi->machine = calloc((size_t)mpi->size, sizeof *mpi->machine);
    mpi->ipc_ok = calloc((size_t)mpi->size, 1);
    mpi->aware = calloc((size_t)mpi->size, 1);
    all = calloc(3 * (size_t)mpi->size, sizeof *all);
    if (!mpi->machine || !mpi->ipc_ok || !mpi->aware || !all) {
        free(all);
        return WEFT_ENOMEM;
    }
    if (MPI_Comm_split_type(mpi->comm, MPI_COMM_TYPE_SHARED, mpi->rank,
                            MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Allreduce(&mpi->rank, &mine[0], 1, MPI_INT, MPI_MIN, node);
        MPI_Comm_free(&node);
    }
    gpu = cuda_find(mpi);
    mine[1] = ipc_wanted() && gpu;
    mine[2] = ((wanted < 0 ? mpi_says_aware() : wanted) ? WM_AWARE_MPI : 0) |
              (gpu ? WM_AWARE_GPU : 0);
    if (MPI_Allgather(mine, 3, MPI_INT, all, 3, MPI_INT, mpi->comm) !=
        MPI_SUCCESS) {
        free(all);
        return WEFT_EIO;
    }
    for (int r = 0; r < mpi->size; r++) {
        mpi->machine[r] = all[3 * r];
        mpi->ipc_ok[r] = (unsigned char)all[3 * r + 1];
        mpi->aware[r] = (unsigned char)all[3 * r + 2];
    }
    /* all[m]: the ranks that may pair on machine m (its lowest rank) */
    memset(all, 0, (size_t)mpi->size * sizeof *all);
    for (int r = 0; r < mpi->size; r++)
        if (mpi->ipc_ok[r] && ++all[mpi->machine[r]] == 2)
            mpi->ipc_pairs = 1;
    free(all);
    for (int a = 0; a < mpi->size && !mpi->aware_pairs; a++)
        for (int b = a + 1; b < mpi->size && !mpi->aware_pairs; b++)
            mpi->aware_pairs = wm_aware_pair(mpi, a, b);
    return 0;
}

void wm_ipc_fini(weft_mpi *mpi)
{
    if (mpi->cuda)
        dlclose(mpi->cuda);
    free(mpi->machine);
    free(mpi->ipc_ok);
    free(mpi->aware);
}

int wm_ipc_pair(const weft_mpi *mpi, int a, int b)
{
    return a != b && mpi->ipc_ok && mpi->ipc_ok[a] && mpi->ipc_ok[b] &&
           mpi->machine[a] == mpi->machine[b];
}

int wm_aware_pair(const weft_mpi *mpi, int a, int b)
{
    const unsigned both = WM_AWARE_MPI | WM_AWARE_GPU;

    return a != b && mpi->aware && (mpi->aware[a] & both) == both &&
           (mpi->aware[b] & both) == both && !wm_ipc_pair(mpi, a, b);
}

int weft_mpi_cuda_aware(const weft_mpi *mpi, int rank)
{
    if (!mpi)
        return wm_error(WEFT_EINVAL, "weft_mpi_cuda_aware: mpi is NULL");
    if (rank < 0 || rank >= mpi->size)
        return wm_error(WEFT_ERANGE,
                        "weft_mpi_cuda_aware: rank %d is not a rank (0 to %d)",
                        rank, mpi->size - 1);
    return (mpi->aware[rank] & WM_AWARE_MPI) != 0;
}

size_t wm_span(const wm_region *at)
{
    return (at->rows - 1) * at->pitch + at->row_bytes;
}

static int copy2d(const wm_endpoint *ep, wm_memcpy2d *p, void *stream)
{
    wm_memcpy2d_fn *fn = (wm_memcpy2d_fn *)ep->g->mpi->memcpy2d;

    p->width = ep->at.row_bytes;
    p->height = ep->at.rows;
    return fn(p, stream) != 0; /* a CUresult: non-zero fails the node */
}

int wm_copy_out(const weft_native_ctx *ctx, void *user)
{
    wm_endpoint *ep = user;
    wm_memcpy2d p = {0};

    /* MPI reads the range at dev_addr, held there since wm_ipc_setup */
    if (ep->cuda_mpi)
        return weft_native_address(ctx, 0) != ep->dev_addr;
    p.src_type = WM_MEMORY_DEVICE;
    p.src_device = weft_native_address(ctx, 0);
    p.src_pitch = ep->at.pitch;
    if (ep->ipc) {
        p.dst_type = WM_MEMORY_DEVICE;
        p.dst_device = ep->peer_addr;
        p.dst_pitch = ep->at.pitch;
    } else {
        p.dst_type = WM_MEMORY_HOST;
        p.dst_host = ep->staging;
        p.dst_pitch = ep->at.row_bytes;
    }
    return copy2d(ep, &p, weft_native_queue(ctx));
}

int wm_copy_in(const weft_native_ctx *ctx, void *user)
{
    wm_endpoint *ep = user;
    wm_memcpy2d p = {0};

    if (ep->ipc) /* the sender wrote the bytes here */
        return 0;
    if (ep->cuda_mpi) /* MPI wrote them at dev_addr before the task ended */
        return weft_native_address(ctx, 0) != ep->dev_addr;
    p.src_type = WM_MEMORY_HOST;
    p.src_host = ep->staging;
    p.src_pitch = ep->at.row_bytes;
    p.dst_type = WM_MEMORY_DEVICE;
    p.dst_device = weft_native_address(ctx, 0);
    p.dst_pitch = ep->at.pitch;
    return copy2d(ep, &p, weft_native_queue(ctx));
}

/* What a receiver offers its sender, then (ok alone) the sender's answer. */
struct wm_offer {
    int ok;
    weft_ipc_handle h;
};

int wm_ipc_alloc(weft_mpi_exec *e)
{
    unsigned n = 0;

    for (unsigned i = 0; i < e->g->neps; i++)
        n += e->g->eps[i]->dev;
    e->ipc_offer = calloc(n ? n : 1, sizeof *e->ipc_offer);
    e->ipc_req = calloc(n ? n : 1, sizeof *e->ipc_req);
    return e->ipc_offer && e->ipc_req ? 0 : WEFT_ENOMEM;
}

/*
 * Export at, held in device memory of this rank's GPU: for a writer (the
 * receiver's end), or (WEFT_READ) for a reader, made valid there first
 * (the sender's end of a CUDA-aware pair).
 */
static int export(wm_endpoint *ep, weft_access mode, weft_ipc_handle *h)
{
    return weft_buffer_export(ep->reg->buf, ep->g->mpi->gpu, ep->at.origin,
                              wm_span(&ep->at), mode, h);
}

static void unexport(wm_endpoint *ep)
{
    weft_buffer_export_release(ep->reg->buf, ep->g->mpi->gpu, ep->at.origin,
                               wm_span(&ep->at));
}

static weft_access end_mode(const wm_endpoint *ep)
{
    return ep->send ? WEFT_READ : WEFT_WRITE;
}

/*
 * An end of a CUDA-aware pair: its range held on the GPU (the export
 * keeps the extent where it is until released, so the address stays what
 * weft_buffer_device_address says now), at dev_addr. 0, or -1 with
 * nothing held.
 */
static int pin(wm_endpoint *ep)
{
    weft_device_address a;
    weft_ipc_handle h;

    if (export(ep, end_mode(ep), &h) < 0)
        return -1;
    if (weft_buffer_device_address(ep->reg->buf, ep->g->mpi->gpu, ep->at.origin,
                                   wm_span(&ep->at), &a) < 0 ||
        a.address == 0) {
        unexport(ep);
        return -1;
    }
    ep->dev_addr = a.address;
    ep->exported = 1;
    return 0;
}

/* ep's req re-made for what moves from now on (ipc_msg, or dev_addr). */
static int remake(weft_mpi_exec *e, wm_endpoint *ep)
{
    void *at = ep->ipc ? (void *)&ep->ipc_msg : (void *)(uintptr_t)ep->dev_addr;
    int count = ep->ipc ? (int)sizeof ep->ipc_msg : ep->count;
    MPI_Datatype type = ep->ipc ? MPI_BYTE : ep->type;
    int rc;

    MPI_Request_free(&ep->req);
    rc = ep->send ? MPI_Ssend_init(at, count, type, ep->peer, ep->tag, e->comm,
                                   &ep->req)
                  : MPI_Recv_init(at, count, type, ep->peer, ep->tag, e->comm,
                                  &ep->req);
    if (rc == MPI_SUCCESS)
        return 0;
    ep->req = MPI_REQUEST_NULL;
    return wm_error(WEFT_EIO, "weft_mpi_exec_wait: MPI could not make a "
                              "request");
}

int wm_ipc_setup(weft_mpi_exec *e)
{
    weft_mpi_graph *g = e->g;
    weft_mpi *mpi = g->mpi;
    struct wm_offer *offer = e->ipc_offer;
    MPI_Request *req = e->ipc_req;
    unsigned n = 0, k;
    int mine[2], all[2], rc = 0;

    e->ipc_setup = 1;
    for (unsigned i = 0; i < g->neps; i++)
        n += g->eps[i]->dev;
    /*
     * Room for every span first, each export released at once: a span
     * that needs an extent widened gets it now, so that the exports below
     * find each span inside one extent (an export holds its extent where
     * it is: a later one that needed it widened would fail).
     */
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];
        weft_ipc_handle h;

        if (ep->dev && (ep->send ? ep->aware : ep->ipc_first) &&
            export(ep, end_mode(ep), &h) == 0)
            unexport(ep);
    }
    /*
     * Receivers offer (an export where they may: a handle for IPC, their
     * range held for a CUDA-aware MPI), senders hear
     */
    k = 0;
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (!ep->dev)
            continue;
        if (!ep->send) {
            if (ep->aware)
                offer[k].ok = ep->ipc_first && pin(ep) == 0;
            else
                offer[k].ok =
                    ep->ipc_first && export(ep, WEFT_WRITE, &offer[k].h) == 0;
            ep->exported = offer[k].ok;
            MPI_Isend(&offer[k], (int)sizeof *offer, MPI_BYTE, ep->peer,
                      ep->tag, e->comm, &req[k]);
        } else {
            MPI_Irecv(&offer[k], (int)sizeof *offer, MPI_BYTE, ep->peer,
                      ep->tag, e->comm, &req[k]);
        }
        k++;
    }
    MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE);
    /* senders open what they were offered (or hold their range) and answer */
    k = 0;
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (!ep->dev)
            continue;
        if (ep->send && ep->aware) {
            offer[k].ok = offer[k].ok && pin(ep) == 0;
        } else if (ep->send) {
            offer[k].ok =
                offer[k].ok && weft_ipc_open(mpi->rt, mpi->gpu, &offer[k].h,
                                             &ep->peer_addr) == 0;
        }
        if (ep->send)
            MPI_Isend(&offer[k].ok, 1, MPI_INT, ep->peer, ep->tag, e->comm,
                      &req[k]);
        else
            MPI_Irecv(&offer[k].ok, 1, MPI_INT, ep->peer, ep->tag, e->comm,
                      &req[k]);
        k++;
    }
    MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE);
    /*
     * Agreed: an IPC endpoint's req carries the int that says it is done,
     * a CUDA-aware one's the bytes, from device memory to device memory
     */
    k = 0;
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (!ep->dev)
            continue;
        if (!offer[k++].ok) {
            if (ep->exported)
                unexport(ep);
            ep->exported = 0;
            ep->dev_addr = 0;
            continue;
        }
        if (ep->aware) {
            ep->cuda_mpi = 1;
            e->naware++;
        } else {
            ep->ipc = 1;
            e->nipc++;
        }
        if (remake(e, ep) < 0)
            rc = WEFT_EIO;
    }
    /* every device endpoint of this rank moves so: staging is not needed */
    if (rc == 0 && e->pinned && e->nipc + e->naware == n) {
        weft_host_free(mpi->rt, e->pinned);
        e->pinned = NULL;
        for (unsigned i = 0; i < g->neps; i++)
            if (g->eps[i]->dev)
                g->eps[i]->staging = NULL;
    }
    /* (a CUDA-aware MPI needs MPI's progress as any other transfer) */
    e->ipc_small = 1;
    for (unsigned i = 0; i < g->neps; i++)
        if (g->eps[i]->size >= WM_PROGRESS_MIN && !g->eps[i]->ipc)
            e->ipc_small = 0;
    /* whether any rank moves by IPC, and whether any failed */
    mine[0] = e->nipc > 0;
    mine[1] = rc < 0;
    MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MAX, e->comm);
    e->ipc_any = all[0];
    if (all[1] && rc == 0)
        rc = wm_error(WEFT_EIO,
                      "weft_mpi_exec_wait: another rank failed to set up "
                      "device to device transfers for the next launches");
    if (rc < 0)
        e->failed = rc;
    return rc;
}

void wm_ipc_release(weft_mpi_exec *e)
{
    weft_mpi_graph *g = e->g;
    weft_mpi *mpi = g->mpi;

    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (ep->exported)
            weft_buffer_export_release(ep->reg->buf, mpi->gpu, ep->at.origin,
                                       wm_span(&ep->at));
        if (ep->peer_addr)
            weft_ipc_close(mpi->rt, mpi->gpu, ep->peer_addr);
        ep->exported = ep->ipc = ep->cuda_mpi = 0;
        ep->peer_addr = ep->dev_addr = 0;
    }
    e->nipc = e->naware = 0;
}
