/*
 * Tiles between two ranks of one machine, device to device (CUDA IPC).
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
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

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
    int mine[2] = {mpi->rank, 0}, *all;
    MPI_Comm node;

    mpi->machine = calloc((size_t)mpi->size, sizeof *mpi->machine);
    mpi->ipc_ok = calloc((size_t)mpi->size, 1);
    all = calloc(2 * (size_t)mpi->size, sizeof *all);
    if (!mpi->machine || !mpi->ipc_ok || !all) {
        free(all);
        return WEFT_ENOMEM;
    }
    if (MPI_Comm_split_type(mpi->comm, MPI_COMM_TYPE_SHARED, mpi->rank,
                            MPI_INFO_NULL, &node) == MPI_SUCCESS) {
        MPI_Allreduce(&mpi->rank, &mine[0], 1, MPI_INT, MPI_MIN, node);
        MPI_Comm_free(&node);
    }
    mine[1] = ipc_wanted() && cuda_find(mpi);
    if (MPI_Allgather(mine, 2, MPI_INT, all, 2, MPI_INT, mpi->comm) !=
        MPI_SUCCESS) {
        free(all);
        return WEFT_EIO;
    }
    for (int r = 0; r < mpi->size; r++) {
        mpi->machine[r] = all[2 * r];
        mpi->ipc_ok[r] = (unsigned char)all[2 * r + 1];
    }
    /* all[m]: the ranks that may pair on machine m (its lowest rank) */
    memset(all, 0, (size_t)mpi->size * sizeof *all);
    for (int r = 0; r < mpi->size; r++)
        if (mpi->ipc_ok[r] && ++all[mpi->machine[r]] == 2)
            mpi->ipc_pairs = 1;
    free(all);
    return 0;
}

void wm_ipc_fini(weft_mpi *mpi)
{
    if (mpi->cuda)
        dlclose(mpi->cuda);
    free(mpi->machine);
    free(mpi->ipc_ok);
}

int wm_ipc_pair(const weft_mpi *mpi, int a, int b)
{
    return a != b && mpi->ipc_ok && mpi->ipc_ok[a] && mpi->ipc_ok[b] &&
           mpi->machine[a] == mpi->machine[b];
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

/* Export at, held in device memory of this rank's GPU, for a writer. */
static int export(wm_endpoint *ep, weft_ipc_handle *h)
{
    return weft_buffer_export(ep->reg->buf, ep->g->mpi->gpu, ep->at.origin,
                              wm_span(&ep->at), WEFT_WRITE, h);
}

static void unexport(wm_endpoint *ep)
{
    weft_buffer_export_release(ep->reg->buf, ep->g->mpi->gpu, ep->at.origin,
                               wm_span(&ep->at));
}

int wm_ipc_setup(weft_mpi_exec *e)
{
    static const char fn[] = "weft_mpi_exec_wait";
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

        if (ep->dev && !ep->send && ep->ipc_first && export(ep, &h) == 0)
            unexport(ep);
    }
    /* receivers offer (an export where they may), senders hear */
    k = 0;
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (!ep->dev)
            continue;
        if (!ep->send) {
            offer[k].ok = ep->ipc_first && export(ep, &offer[k].h) == 0;
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
    /* senders open what they were offered and answer */
    k = 0;
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (!ep->dev)
            continue;
        if (ep->send) {
            offer[k].ok =
                offer[k].ok && weft_ipc_open(mpi->rt, mpi->gpu, &offer[k].h,
                                             &ep->peer_addr) == 0;
            MPI_Isend(&offer[k].ok, 1, MPI_INT, ep->peer, ep->tag, e->comm,
                      &req[k]);
        } else {
            MPI_Irecv(&offer[k].ok, 1, MPI_INT, ep->peer, ep->tag, e->comm,
                      &req[k]);
        }
        k++;
    }
    MPI_Waitall((int)n, req, MPI_STATUSES_IGNORE);
    /* agreed: an IPC endpoint's req carries the int that says it is done */
    k = 0;
    for (unsigned i = 0; i < g->neps; i++) {
        wm_endpoint *ep = g->eps[i];

        if (!ep->dev)
            continue;
        ep->ipc = offer[k++].ok;
        if (!ep->ipc && ep->exported) {
            unexport(ep);
            ep->exported = 0;
        }
        if (!ep->ipc)
            continue;
        e->nipc++;
        MPI_Request_free(&ep->req);
        if ((ep->send
                 ? MPI_Send_init(&ep->ipc_msg, (int)sizeof ep->ipc_msg,
                                 MPI_BYTE, ep->peer, ep->tag, e->comm, &ep->req)
                 : MPI_Recv_init(&ep->ipc_msg, (int)sizeof ep->ipc_msg,
                                 MPI_BYTE, ep->peer, ep->tag, e->comm,
                                 &ep->req)) != MPI_SUCCESS) {
            ep->req = MPI_REQUEST_NULL;
            rc = wm_error(WEFT_EIO, "%s: MPI could not make a request", fn);
        }
    }
    /* every device endpoint of this rank by IPC: staging is not needed */
    if (rc == 0 && e->pinned && e->nipc == n) {
        weft_host_free(mpi->rt, e->pinned);
        e->pinned = NULL;
        for (unsigned i = 0; i < g->neps; i++)
            if (g->eps[i]->dev)
                g->eps[i]->staging = NULL;
    }
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
                      "%s: another rank failed to set up CUDA IPC for the "
                      "next launches",
                      fn);
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
        ep->exported = ep->ipc = 0;
        ep->peer_addr = 0;
    }
    e->nipc = 0;
}
