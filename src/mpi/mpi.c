/*
 * weft_mpi's context: the communicator, the registered buffers and their
 * owners, and the error detail.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static _Thread_local char wm_detail[512];

const char *weft_mpi_last_error(void)
{
    return wm_detail;
}

int wm_error(int err, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(wm_detail, sizeof wm_detail, fmt, ap);
    va_end(ap);
    return err;
}

int wm_weft_error(int err, const char *fn)
{
    return wm_error(err, "%s: %s", fn, weft_last_error());
}

int weft_mpi_create(weft_runtime *rt, MPI_Comm comm, weft_mpi **mpi)
{
    int inited = 0, finalized = 0, level = 0;
    weft_mpi *m;

    if (!rt || !mpi)
        return wm_error(WEFT_EINVAL, "weft_mpi_create: %s is NULL",
                        !rt ? "rt" : "mpi");
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    if (!inited || finalized)
        return wm_error(WEFT_ENOTSUP,
                        "weft_mpi_create: MPI is not initialised (call "
                        "MPI_Init_thread with MPI_THREAD_MULTIPLE first)");
    MPI_Query_thread(&level);
    if (level < MPI_THREAD_MULTIPLE)
        return wm_error(WEFT_ENOTSUP,
                        "weft_mpi_create: MPI provides thread level %d, "
                        "below MPI_THREAD_MULTIPLE (%d): weft's threads call "
                        "MPI",
                        level, MPI_THREAD_MULTIPLE);
    m = calloc(1, sizeof *m);
    if (!m)
        return wm_error(WEFT_ENOMEM, "weft_mpi_create: out of memory");
    if (MPI_Comm_dup(comm, &m->comm) != MPI_SUCCESS) {
        free(m);
        return wm_error(WEFT_EIO, "weft_mpi_create: MPI_Comm_dup failed");
    }
    MPI_Comm_rank(m->comm, &m->rank);
    MPI_Comm_size(m->comm, &m->size);
    m->rt = rt;
    if (wm_ipc_init(m) < 0) {
        wm_ipc_fini(m);
        MPI_Comm_free(&m->comm);
        free(m);
        return wm_error(WEFT_ENOMEM, "weft_mpi_create: out of memory");
    }
    *mpi = m;
    return 0;
}

int weft_mpi_destroy(weft_mpi *mpi)
{
    if (!mpi)
        return 0;
    if (mpi->graphs || mpi->nregs)
        return wm_error(WEFT_EBUSY,
                        "weft_mpi_destroy: %u weft_mpi graph(s) and %u "
                        "registered buffer(s) live",
                        mpi->graphs, mpi->nregs);
    MPI_Comm_free(&mpi->comm);
    wm_ipc_fini(mpi);
    free(mpi->regs);
    free(mpi->execs);
    free(mpi);
    return 0;
}

int weft_mpi_rank(const weft_mpi *mpi)
{
    return mpi ? mpi->rank : WEFT_EINVAL;
}

int weft_mpi_size(const weft_mpi *mpi)
{
    return mpi ? mpi->size : WEFT_EINVAL;
}

wm_reg *wm_find(const weft_mpi *mpi, const weft_buffer *buf)
{
    for (unsigned i = 0; i < mpi->nregs; i++)
        if (mpi->regs[i]->buf == buf)
            return mpi->regs[i];
    return NULL;
}

int weft_mpi_buffer_register(weft_mpi *mpi, weft_buffer *buf, int owner)
{
    wm_reg *r;

    if (!mpi || !buf)
        return wm_error(WEFT_EINVAL, "weft_mpi_buffer_register: %s is NULL",
                        !mpi ? "mpi" : "buf");
    if (wm_find(mpi, buf))
        return wm_error(WEFT_EINVAL,
                        "weft_mpi_buffer_register: buf is registered already");
    if (owner < 0 || owner >= mpi->size)
        return wm_error(WEFT_ERANGE,
                        "weft_mpi_buffer_register: owner %d is not a rank "
                        "(0 to %d)",
                        owner, mpi->size - 1);
    if (mpi->nregs == mpi->cap) {
        unsigned cap = mpi->cap ? 2 * mpi->cap : 16;
        wm_reg **regs = realloc(mpi->regs, cap * sizeof *regs);

        if (!regs)
            return wm_error(WEFT_ENOMEM,
                            "weft_mpi_buffer_register: out of memory");
        mpi->regs = regs;
        mpi->cap = cap;
    }
    r = calloc(1, sizeof *r);
    if (!r)
        return wm_error(WEFT_ENOMEM, "weft_mpi_buffer_register: out of memory");
    r->buf = buf;
    r->size = weft_buffer_size(buf);
    r->owner = owner;
    mpi->regs[mpi->nregs++] = r;
    return 0;
}

int weft_mpi_buffer_unregister(weft_mpi *mpi, weft_buffer *buf)
{
    if (!mpi || !buf)
        return wm_error(WEFT_EINVAL, "weft_mpi_buffer_unregister: %s is NULL",
                        !mpi ? "mpi" : "buf");
    for (unsigned i = 0; i < mpi->nregs; i++) {
        wm_reg *r = mpi->regs[i];

        if (r->buf != buf)
            continue;
        if (r->users)
            return wm_error(WEFT_EBUSY,
                            "weft_mpi_buffer_unregister: %u weft_mpi graph(s) "
                            "or exec(s) name buf",
                            r->users);
        mpi->regs[i] = mpi->regs[--mpi->nregs];
        free(r);
        return 0;
    }
    return wm_error(WEFT_ENOTFOUND,
                    "weft_mpi_buffer_unregister: buf is not registered");
}

int weft_mpi_buffer_owner(const weft_mpi *mpi, const weft_buffer *buf)
{
    wm_reg *r;

    if (!mpi || !buf)
        return wm_error(WEFT_EINVAL, "weft_mpi_buffer_owner: %s is NULL",
                        !mpi ? "mpi" : "buf");
    r = wm_find(mpi, buf);
    if (!r)
        return wm_error(WEFT_ENOTFOUND,
                        "weft_mpi_buffer_owner: buf is not registered");
    return r->owner;
}

int weft_mpi_buffer_register_tiles(weft_mpi *mpi, weft_matrix m,
                                   size_t tile_rows, size_t tile_cols, int p,
                                   int q)
{
    static const char fn[] = "weft_mpi_buffer_register_tiles";
    size_t size;
    wm_reg *r;
    int rc;

    if (!mpi || !m.buffer)
        return wm_error(WEFT_EINVAL, "%s: %s is NULL", fn,
                        !mpi ? "mpi" : "m.buffer");
    if (!m.elem_size || !m.rows || !m.cols || m.ld < m.cols || !tile_rows ||
        !tile_cols)
        return wm_error(WEFT_EINVAL,
                        "%s: not a tiled matrix (elem_size %zu, %zu x %zu, ld "
                        "%zu, tiles %zu x %zu)",
                        fn, m.elem_size, m.rows, m.cols, m.ld, tile_rows,
                        tile_cols);
    if (p < 1 || q < 1 || (long)p * q > mpi->size)
        return wm_error(WEFT_ERANGE,
                        "%s: a %d x %d grid of ranks does not fit %d rank(s)",
                        fn, p, q, mpi->size);
    size = weft_buffer_size(m.buffer);
    if (m.offset > size ||
        ((m.rows - 1) * m.ld + m.cols) * m.elem_size > size - m.offset)
        return wm_error(WEFT_ERANGE,
                        "%s: the matrix runs past the buffer's %zu bytes", fn,
                        size);
    if ((rc = weft_mpi_buffer_register(mpi, m.buffer, 0)) < 0)
        return wm_error(rc, "%s: %s", fn, weft_mpi_last_error());
    r = wm_find(mpi, m.buffer);
    r->tiled = 1;
    r->m = m;
    r->tr = tile_rows;
    r->tc = tile_cols;
    r->p = p;
    r->q = q;
    return 0;
}

int wm_owner_at(const wm_reg *reg, size_t offset)
{
    const weft_matrix *m = &reg->m;
    size_t row, col, pitch;

    if (!reg->tiled || offset < m->offset)
        return reg->owner;
    pitch = m->ld * m->elem_size;
    row = (offset - m->offset) / pitch;
    col = (offset - m->offset) % pitch / m->elem_size;
    if (row >= m->rows || col >= m->cols)
        return reg->owner;
    return weft_mpi_block_cyclic(row / reg->tr, col / reg->tc, reg->p, reg->q);
}

/* Move size bytes at p between ranks, in pieces MPI's int counts hold. */
static int move_bytes(weft_mpi *mpi, void *p, size_t size, int from, int to)
{
    const size_t piece = (size_t)1 << 30;

    for (size_t off = 0; off < size; off += piece) {
        int n = (int)(size - off < piece ? size - off : piece);
        int rc = mpi->rank == from
                     ? MPI_Send((char *)p + off, n, MPI_BYTE, to, 0, mpi->comm)
                     : MPI_Recv((char *)p + off, n, MPI_BYTE, from, 0,
                                mpi->comm, MPI_STATUS_IGNORE);

        if (rc != MPI_SUCCESS)
            return WEFT_EIO;
    }
    return 0;
}

int weft_mpi_buffer_set_owner(weft_mpi *mpi, weft_buffer *buf, int owner)
{
    wm_reg *r;
    void *p;
    int rc, old;

    if (!mpi || !buf)
        return wm_error(WEFT_EINVAL, "weft_mpi_buffer_set_owner: %s is NULL",
                        !mpi ? "mpi" : "buf");
    r = wm_find(mpi, buf);
    if (!r)
        return wm_error(WEFT_ENOTFOUND,
                        "weft_mpi_buffer_set_owner: buf is not registered");
    if (owner < 0 || owner >= mpi->size)
        return wm_error(WEFT_ERANGE,
                        "weft_mpi_buffer_set_owner: owner %d is not a rank "
                        "(0 to %d)",
                        owner, mpi->size - 1);
    if (r->tiled)
        return wm_error(WEFT_ENOTSUP,
                        "weft_mpi_buffer_set_owner: buf is tiled: its tiles "
                        "have their own owners");
    if (r->users)
        return wm_error(WEFT_EBUSY,
                        "weft_mpi_buffer_set_owner: %u weft_mpi graph(s) or "
                        "exec(s) name buf",
                        r->users);
    old = r->owner;
    if (owner == old)
        return 0;
    if (mpi->rank == old || mpi->rank == owner) {
        weft_access mode = mpi->rank == old ? WEFT_READ : WEFT_WRITE;

        rc = weft_buffer_map(buf, 0, r->size, mode, &p);
        if (rc < 0)
            return wm_weft_error(rc, "weft_mpi_buffer_set_owner");
        rc = move_bytes(mpi, p, r->size, old, owner);
        weft_buffer_unmap(buf, p);
        if (rc < 0)
            return wm_error(rc, "weft_mpi_buffer_set_owner: MPI failed to "
                                "move the bytes");
    }
    r->owner = owner;
    return 0;
}
