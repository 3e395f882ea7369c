/*
 * A stand-in for a CUDA-aware MPI, for tests: loaded into every rank
 * (LD_PRELOAD) in front of an MPI that is not CUDA-aware, it says it is
 * (MPIX_Query_cuda_support returns 1) and takes CUDA device memory where
 * a CUDA-aware MPI does, in the calls weft_mpi makes on it: persistent
 * requests (MPI_Send_init, MPI_Ssend_init, MPI_Recv_init) started with
 * MPI_Start or MPI_Startall and completed with MPI_Test, MPI_Testall,
 * MPI_Wait or MPI_Waitall, and freed with MPI_Request_free (the profiling
 * interface, PMPI_*, is the real MPI). Such a request is made by the real
 * MPI on host memory of the shim's (a shadow, laid out as the device
 * range: the same datatype and count); a send copies the datatype's bytes
 * from the device into the shadow before it starts, and a receive copies
 * them from the shadow into the device once it completes, before the
 * test or wait that saw it complete returns. So what weft sees is what a
 * CUDA-aware MPI does: it passes device pointers and nothing else.
 *
 * Datatypes: named types and what contiguous, vector, hvector, dup and
 * resized build from them, walked with MPI_Type_get_envelope and
 * MPI_Type_get_contents; a layout of equal runs at one stride (a block
 * of rows) is copied as one 2-D copy.
 *
 * It counts the messages started on device memory (weft_shim_device_
 * messages, for a test that looks it up) and prints the counts at
 * MPI_Finalize ("cuda-aware shim: rank R: N device messages ..."). A
 * device pointer given to a call it does not stage (MPI_Isend, MPI_Send,
 * ...; MPI_Waitany, ...) aborts the job, saying so: a CUDA-aware MPI
 * would take it, this shim cannot, and a test must not pass by luck.
 *
 * libcuda is opened at run time (WEFT_CUDA_LIBRARY, else libcuda.so.1),
 * as weft does: without it no pointer is device memory.
 */
#include "drivers/cuda/cuda_api.h"

#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- libcuda ------------------------------------------------------------ */

static struct {
    int (*init)(unsigned flags);
    int (*attribute)(void *data, int attribute, uint64_t ptr);
    int (*push)(void *ctx);
    int (*pop)(void **ctx);
    int (*copy2d)(const CUDA_MEMCPY2D *p);
    int (*sync)(void *stream);
    int ok;
} cu;
static pthread_once_t cu_once = PTHREAD_ONCE_INIT;

static void cu_load(void)
{
    const char *name = getenv("WEFT_CUDA_LIBRARY");
    void *lib = dlopen(name ? name : "libcuda.so.1", RTLD_NOW | RTLD_LOCAL);

    if (!lib)
        return;
    *(void **)&cu.init = dlsym(lib, "cuInit");
    *(void **)&cu.attribute = dlsym(lib, "cuPointerGetAttribute");
    *(void **)&cu.push = dlsym(lib, "cuCtxPushCurrent_v2");
    *(void **)&cu.pop = dlsym(lib, "cuCtxPopCurrent_v2");
    *(void **)&cu.copy2d = dlsym(lib, "cuMemcpy2D_v2");
    *(void **)&cu.sync = dlsym(lib, "cuStreamSynchronize");
    cu.ok = cu.init && cu.attribute && cu.push && cu.pop && cu.copy2d &&
            cu.sync && cu.init(0) == 0;
}

static void die(const char *what)
{
    int rank = -1;

    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    fprintf(stderr, "cuda-aware shim: rank %d: %s\n", rank, what);
    fflush(stderr);
    PMPI_Abort(MPI_COMM_WORLD, 3);
}

/* Whether p is CUDA device memory (memory CUDA does not know is not). */
static int on_device(const void *p)
{
    unsigned type = 0;

    pthread_once(&cu_once, cu_load);
    return p && cu.ok &&
           cu.attribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE,
                        (uint64_t)(uintptr_t)p) == 0 &&
           type == CU_MEMORYTYPE_DEVICE;
}

/* ---- datatypes as runs of bytes ----------------------------------------- */

typedef struct shim_run {
    MPI_Aint off;
    size_t len;
} shim_run;

typedef struct shim_layout {
    shim_run *run;
    size_t n, cap;
} shim_layout;

static void add_run(shim_layout *l, MPI_Aint off, size_t len)
{
    if (len == 0)
        return;
    if (l->n && l->run[l->n - 1].off + (MPI_Aint)l->run[l->n - 1].len == off) {
        l->run[l->n - 1].len += len;
        return;
    }
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        shim_run *r = realloc(l->run, cap * sizeof *r);

        if (!r)
            die("out of memory");
        l->run = r;
        l->cap = cap;
    }
    l->run[l->n++] = (shim_run){off, len};
}

static int is_named(MPI_Datatype t)
{
    int ni, na, nd, comb;

    if (PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb) != MPI_SUCCESS)
        die("MPI_Type_get_envelope failed");
    return comb == MPI_COMBINER_NAMED;
}

static void walk(shim_layout *l, MPI_Datatype t, MPI_Aint base);

/* count elements of t, extent apart, from base. */
static void walk_n(shim_layout *l, MPI_Datatype t, MPI_Aint base, long count)
{
    MPI_Aint lb, extent;
    int size;

    if (PMPI_Type_get_extent(t, &lb, &extent) != MPI_SUCCESS ||
        PMPI_Type_size(t, &size) != MPI_SUCCESS)
        die("MPI_Type_get_extent failed");
    if (is_named(t)) { /* contiguous: one run */
        add_run(l, base, (size_t)count * (size_t)size);
        return;
    }
    for (long i = 0; i < count; i++)
        walk(l, t, base + i * extent);
}

/* One element of t at base. */
static void walk(shim_layout *l, MPI_Datatype t, MPI_Aint base)
{
    int ni, na, nd, comb, *ints;
    MPI_Aint *aints, lb, extent;
    MPI_Datatype *types;

    PMPI_Type_get_envelope(t, &ni, &na, &nd, &comb);
    if (comb == MPI_COMBINER_NAMED) {
        walk_n(l, t, base, 1);
        return;
    }
    ints = malloc((size_t)(ni + 1) * sizeof *ints);
    aints = malloc((size_t)(na + 1) * sizeof *aints);
    types = malloc((size_t)(nd + 1) * sizeof *types);
    if (!ints || !aints || !types)
        die("out of memory");
    if (PMPI_Type_get_contents(t, ni, na, nd, ints, aints, types) !=
            MPI_SUCCESS ||
        nd < 1 || PMPI_Type_get_extent(types[0], &lb, &extent) != MPI_SUCCESS)
        die("MPI_Type_get_contents failed");
    switch (comb) {
    case MPI_COMBINER_DUP:
    case MPI_COMBINER_RESIZED: /* (its extent spaces the caller's count) */
        walk(l, types[0], base);
        break;
    case MPI_COMBINER_CONTIGUOUS:
        walk_n(l, types[0], base, ints[0]);
        break;
    case MPI_COMBINER_VECTOR:
    case MPI_COMBINER_HVECTOR: {
        MPI_Aint stride =
            comb == MPI_COMBINER_VECTOR ? (MPI_Aint)ints[2] * extent : aints[0];

        for (int i = 0; i < ints[0]; i++)
            walk_n(l, types[0], base + i * stride, ints[1]);
        break;
    }
    default:
        die("a datatype this shim does not walk (only contiguous, vector, "
            "hvector, dup and resized of named types)");
    }
    if (!is_named(types[0]))
        PMPI_Type_free(&types[0]);
    free(ints);
    free(aints);
    free(types);
}

/* ---- requests on device memory ------------------------------------------ */

typedef struct shim_req {
    MPI_Request req; /* the real request, on the shadow */
    int send, active;
    uint64_t device; /* the device pointer weft gave */
    char *mem;       /* the shadow: the bytes from lo to hi of the layout */
    MPI_Aint lo, hi;
    shim_layout layout;
    size_t bytes;
} shim_req;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static shim_req **reqs;
static size_t nreqs, reqcap;
static long sends, receives;
static unsigned long long moved;

/* The record of the real request r, or NULL: lock held. */
static shim_req *find(MPI_Request r)
{
    for (size_t i = 0; r != MPI_REQUEST_NULL && i < nreqs; i++)
        if (reqs[i]->req == r)
            return reqs[i];
    return NULL;
}

static shim_req *find_locked(MPI_Request r)
{
    shim_req *s;

    pthread_mutex_lock(&lock);
    s = find(r);
    pthread_mutex_unlock(&lock);
    return s;
}

/* Copy the layout's bytes between the device and the shadow. */
static void copy(shim_req *s, int to_device)
{
    const shim_layout *l = &s->layout;
    size_t stride = l->n > 1 ? (size_t)(l->run[1].off - l->run[0].off) : 0;
    int uniform = 1;
    void *ctx = NULL, *old;

    for (size_t i = 1; i < l->n && uniform; i++)
        uniform = l->run[i].len == l->run[0].len &&
                  (size_t)(l->run[i].off - l->run[i - 1].off) == stride &&
                  stride >= l->run[0].len;
    if (cu.attribute(&ctx, CU_POINTER_ATTRIBUTE_CONTEXT, s->device) != 0 ||
        cu.push(ctx) != 0)
        die("cannot make the device memory's context current");
    for (size_t i = 0; i < l->n; i += uniform ? l->n : 1) {
        CUDA_MEMCPY2D p;
        char *host = s->mem + (l->run[i].off - s->lo);
        uint64_t dev = s->device + (uint64_t)l->run[i].off;

        memset(&p, 0, sizeof p);
        p.WidthInBytes = l->run[i].len;
        p.Height = uniform ? l->n : 1;
        p.srcPitch = p.dstPitch = uniform && stride ? stride : p.WidthInBytes;
        if (to_device) {
            p.srcMemoryType = CU_MEMORYTYPE_HOST;
            p.srcHost = host;
            p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
            p.dstDevice = dev;
        } else {
            p.srcMemoryType = CU_MEMORYTYPE_DEVICE;
            p.srcDevice = dev;
            p.dstMemoryType = CU_MEMORYTYPE_HOST;
            p.dstHost = host;
        }
        if (cu.copy2d(&p) != 0)
            die(to_device ? "cuMemcpy2D into the device failed"
                          : "cuMemcpy2D out of the device failed");
    }
    /*
     * A copy from pageable host memory into the device returns once the
     * bytes are staged, before they land (CUDA's synchronous copies): a
     * CUDA-aware MPI completes a receive only once the device holds them,
     * so wait for the copies' stream (the context's NULL stream).
     */
    if (to_device && cu.sync(NULL) != 0)
        die("cuStreamSynchronize after the copy into the device failed");
    cu.pop(&old);
}

/* A persistent request on device memory: the record and its shadow. */
static shim_req *shadow(const void *buf, int count, MPI_Datatype type, int send)
{
    shim_req *s = calloc(1, sizeof *s);

    if (!s)
        die("out of memory");
    walk_n(&s->layout, type, 0, count);
    s->send = send;
    s->device = (uint64_t)(uintptr_t)buf;
    for (size_t i = 0; i < s->layout.n; i++) {
        const shim_run *r = &s->layout.run[i];

        if (i == 0 || r->off < s->lo)
            s->lo = r->off;
        if (i == 0 || r->off + (MPI_Aint)r->len > s->hi)
            s->hi = r->off + (MPI_Aint)r->len;
        s->bytes += r->len;
    }
    s->mem = malloc(s->hi > s->lo ? (size_t)(s->hi - s->lo) : 1);
    if (!s->mem)
        die("out of memory");
    return s;
}

static void keep(shim_req *s)
{
    pthread_mutex_lock(&lock);
    if (nreqs == reqcap) {
        size_t cap = reqcap ? 2 * reqcap : 64;
        shim_req **r = realloc(reqs, cap * sizeof *r);

        if (!r)
            die("out of memory");
        reqs = r;
        reqcap = cap;
    }
    reqs[nreqs++] = s;
    pthread_mutex_unlock(&lock);
}

static void drop(shim_req *s)
{
    free(s->layout.run);
    free(s->mem);
    free(s);
}

/* The shadow's address that stands for the device pointer's. */
static void *stand_in(const shim_req *s)
{
    return s->mem - s->lo;
}

typedef int init_fn(const void *buf, int count, MPI_Datatype type, int peer,
                    int tag, MPI_Comm comm, MPI_Request *req);

static int send_init(init_fn *real, const void *buf, int count,
                     MPI_Datatype type, int dest, int tag, MPI_Comm comm,
                     MPI_Request *req)
{
    shim_req *s;
    int rc;

    if (!on_device(buf))
        return real(buf, count, type, dest, tag, comm, req);
    s = shadow(buf, count, type, 1);
    rc = real(stand_in(s), count, type, dest, tag, comm, req);
    if (rc != MPI_SUCCESS) {
        drop(s);
        return rc;
    }
    s->req = *req;
    keep(s);
    return rc;
}

int MPI_Send_init(const void *buf, int count, MPI_Datatype type, int dest,
                  int tag, MPI_Comm comm, MPI_Request *req)
{
    return send_init(PMPI_Send_init, buf, count, type, dest, tag, comm, req);
}

int MPI_Ssend_init(const void *buf, int count, MPI_Datatype type, int dest,
                   int tag, MPI_Comm comm, MPI_Request *req)
{
    return send_init(PMPI_Ssend_init, buf, count, type, dest, tag, comm, req);
}

int MPI_Recv_init(void *buf, int count, MPI_Datatype type, int source, int tag,
                  MPI_Comm comm, MPI_Request *req)
{
    shim_req *s;
    int rc;

    if (!on_device(buf))
        return PMPI_Recv_init(buf, count, type, source, tag, comm, req);
    s = shadow(buf, count, type, 0);
    rc = PMPI_Recv_init(stand_in(s), count, type, source, tag, comm, req);
    if (rc != MPI_SUCCESS) {
        drop(s);
        return rc;
    }
    s->req = *req;
    keep(s);
    return rc;
}

/* Before the real start: a send's bytes into the shadow; counted. */
static void starting(shim_req *s)
{
    if (!s)
        return;
    if (s->active)
        die("MPI_Start of an active request");
    if (s->send)
        copy(s, 0);
    s->active = 1;
    pthread_mutex_lock(&lock);
    if (s->send)
        sends++;
    else
        receives++;
    moved += s->bytes;
    pthread_mutex_unlock(&lock);
}

/* After the real request completed: a receive's bytes into the device. */
static void completed(shim_req *s)
{
    if (!s || !s->active)
        return;
    s->active = 0;
    if (!s->send)
        copy(s, 1);
}

int MPI_Start(MPI_Request *req)
{
    starting(find_locked(*req));
    return PMPI_Start(req);
}

int MPI_Startall(int count, MPI_Request reqv[])
{
    for (int i = 0; i < count; i++)
        starting(find_locked(reqv[i]));
    return PMPI_Startall(count, reqv);
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *status)
{
    shim_req *s = find_locked(*req);
    int rc = PMPI_Test(req, flag, status);

    if (rc == MPI_SUCCESS && *flag)
        completed(s);
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *status)
{
    shim_req *s = find_locked(*req);
    int rc = PMPI_Wait(req, status);

    if (rc == MPI_SUCCESS)
        completed(s);
    return rc;
}

/* The records of count requests (NULL where none), or NULL if none has. */
static shim_req **find_all(int count, const MPI_Request reqv[])
{
    shim_req **s = NULL;

    for (int i = 0; i < count; i++) {
        shim_req *one = find_locked(reqv[i]);

        if (one && !s && !(s = calloc((size_t)count, sizeof *s)))
            die("out of memory");
        if (one)
            s[i] = one;
    }
    return s;
}

int MPI_Waitall(int count, MPI_Request reqv[], MPI_Status statuses[])
{
    shim_req **s = find_all(count, reqv);
    int rc = PMPI_Waitall(count, reqv, statuses);

    for (int i = 0; s && rc == MPI_SUCCESS && i < count; i++)
        completed(s[i]);
    free(s);
    return rc;
}

int MPI_Testall(int count, MPI_Request reqv[], int *flag, MPI_Status statuses[])
{
    shim_req **s = find_all(count, reqv);
    int rc = PMPI_Testall(count, reqv, flag, statuses);

    for (int i = 0; s && rc == MPI_SUCCESS && *flag && i < count; i++)
        completed(s[i]);
    free(s);
    return rc;
}

static void no_device_requests(int count, const MPI_Request reqv[],
                               const char *call)
{
    shim_req **s = find_all(count, reqv);
    char what[128];

    if (!s)
        return;
    snprintf(what, sizeof what, "%s on a device request: not staged here",
             call);
    die(what);
}

int MPI_Waitany(int count, MPI_Request reqv[], int *index, MPI_Status *status)
{
    no_device_requests(count, reqv, "MPI_Waitany");
    return PMPI_Waitany(count, reqv, index, status);
}

int MPI_Testany(int count, MPI_Request reqv[], int *index, int *flag,
                MPI_Status *status)
{
    no_device_requests(count, reqv, "MPI_Testany");
    return PMPI_Testany(count, reqv, index, flag, status);
}

int MPI_Waitsome(int incount, MPI_Request reqv[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    no_device_requests(incount, reqv, "MPI_Waitsome");
    return PMPI_Waitsome(incount, reqv, outcount, indices, statuses);
}

int MPI_Testsome(int incount, MPI_Request reqv[], int *outcount, int indices[],
                 MPI_Status statuses[])
{
    no_device_requests(incount, reqv, "MPI_Testsome");
    return PMPI_Testsome(incount, reqv, outcount, indices, statuses);
}

int MPI_Request_free(MPI_Request *req)
{
    shim_req *s = NULL;

    pthread_mutex_lock(&lock);
    for (size_t i = 0; *req != MPI_REQUEST_NULL && i < nreqs; i++)
        if (reqs[i]->req == *req) {
            s = reqs[i];
            reqs[i] = reqs[--nreqs];
            break;
        }
    pthread_mutex_unlock(&lock);
    if (s && s->active)
        die("MPI_Request_free of an active device request: its bytes would "
            "never reach the device");
    if (s)
        drop(s);
    return PMPI_Request_free(req);
}

/* Calls that would take device memory in a CUDA-aware MPI: refused. */
static void host_only(const void *buf, const char *call)
{
    char what[128];

    if (!on_device(buf))
        return;
    snprintf(what, sizeof what, "device memory given to %s: not staged here",
             call);
    die(what);
}

int MPI_Send(const void *buf, int count, MPI_Datatype type, int dest, int tag,
             MPI_Comm comm)
{
    host_only(buf, "MPI_Send");
    return PMPI_Send(buf, count, type, dest, tag, comm);
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
              MPI_Comm comm)
{
    host_only(buf, "MPI_Ssend");
    return PMPI_Ssend(buf, count, type, dest, tag, comm);
}

int MPI_Recv(void *buf, int count, MPI_Datatype type, int source, int tag,
             MPI_Comm comm, MPI_Status *status)
{
    host_only(buf, "MPI_Recv");
    return PMPI_Recv(buf, count, type, source, tag, comm, status);
}

int MPI_Isend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    host_only(buf, "MPI_Isend");
    return PMPI_Isend(buf, count, type, dest, tag, comm, req);
}

int MPI_Issend(const void *buf, int count, MPI_Datatype type, int dest, int tag,
               MPI_Comm comm, MPI_Request *req)
{
    host_only(buf, "MPI_Issend");
    return PMPI_Issend(buf, count, type, dest, tag, comm, req);
}

int MPI_Irecv(void *buf, int count, MPI_Datatype type, int source, int tag,
              MPI_Comm comm, MPI_Request *req)
{
    host_only(buf, "MPI_Irecv");
    return PMPI_Irecv(buf, count, type, source, tag, comm, req);
}

/* ---- what the shim says ------------------------------------------------- */

/* (Open MPI declares it in <mpi-ext.h>; this file needs no such header.) */
int MPIX_Query_cuda_support(void);
long weft_shim_device_messages(void);

int MPIX_Query_cuda_support(void)
{
    return 1;
}

/* Device messages started on this rank so far (sends and receives). */
long weft_shim_device_messages(void)
{
    long n;

    pthread_mutex_lock(&lock);
    n = sends + receives;
    pthread_mutex_unlock(&lock);
    return n;
}

int MPI_Finalize(void)
{
    int rank = -1;

    PMPI_Comm_rank(MPI_COMM_WORLD, &rank);
    pthread_once(&cu_once, cu_load);
    printf("cuda-aware shim: rank %d: %ld device messages (%ld sends, %ld "
           "receives, %llu bytes; libcuda %s)\n",
           rank, sends + receives, sends, receives, moved,
           cu.ok ? "loaded" : "absent");
    fflush(stdout);
    return PMPI_Finalize();
}
