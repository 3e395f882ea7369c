/*
 * A fuzz target over weft's public API: the input's bytes choose a sequence
 * of calls, valid and invalid, over a small pool of runtimes (host and sim
 * devices), modules of host kernels (fuzz_kernels.c), buffers (created,
 * wrapped, views), graphs with every kind of node, and executable graphs.
 * Every result is checked against what include/weft.h promises:
 *   - a call that fails returns a WEFT_E* code and says why in
 *     weft_last_error(); a call that must succeed does;
 *   - a failed call changes nothing: a model of every buffer's bytes is
 *     kept (updated by the buffer helpers and, in order, by the nodes of
 *     each launch that was made) and compared wherever bytes come back
 *     (reads, maps, read and map nodes, host tasks, wrapped memory);
 *   - destroying what another object uses is WEFT_EBUSY (see fuzz.h for
 *     the parts not kept yet);
 *   - at the end everything is destroyed and every runtime with it.
 * A broken promise aborts, so that libFuzzer (or the replay driver) reports
 * the input.
 *
 * Input: byte 0 chooses the runtime (devices, policy); then each call is an
 * opcode byte followed by the bytes its arguments take. Reading past the
 * end gives zeros, so every input is a complete program. The inputs in
 * regress/ mean what they found only under this decoding: a change to it
 * (a new call, another argument byte) must keep each of them finding its
 * bug with the fix undone, or replace it (README, "Fuzzing").
 */
#include "fuzz.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- input ------------------------------------------------------------- */

typedef struct fz_in {
    const uint8_t *p;
    size_t n, i;
} fz_in;

static unsigned fz_u8(fz_in *in)
{
    return in->i < in->n ? in->p[in->i++] : 0;
}

static unsigned fz_u16(fz_in *in)
{
    unsigned lo = fz_u8(in);

    return lo | fz_u8(in) << 8;
}

static unsigned fz_pick(fz_in *in, unsigned n)
{
    return fz_u8(in) % n;
}

/* ---- checking ---------------------------------------------------------- */

static int fz_op_index;
static int fz_trace; /* FUZZ_TRACE set: every checked call is printed */

static void fz_fail(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "fuzz_api: broken promise at call %d: ", fz_op_index);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  weft_last_error: %s\n", weft_last_error());
    abort();
}

enum { FZ_OK, FZ_FAIL, FZ_ANY };

/* Check rc of call what against the expectation; returns rc. */
static int fz_check(int rc, int expect, const char *what)
{
    if (fz_trace)
        fprintf(stderr, "fuzz_api: %d: %s: %s\n", fz_op_index, what,
                rc ? weft_err_name(rc) : "0");
    if (rc > 0 || rc < WEFT_EINTERNAL)
        fz_fail("%s returned %d, not 0 or a WEFT_E* code", what, rc);
    if (rc == WEFT_EINTERNAL)
        fz_fail("%s: WEFT_EINTERNAL", what);
    if (rc == 0 && expect == FZ_FAIL)
        fz_fail("%s succeeded where it must fail", what);
    if (rc < 0 && expect == FZ_OK)
        fz_fail("%s failed (%s) where it must succeed", what,
                weft_err_name(rc));
    if (rc < 0) {
        const weft_error_detail *d = weft_last_error_detail();

        if (!weft_last_error()[0])
            fz_fail("%s failed (%s) with an empty weft_last_error()", what,
                    weft_err_name(rc));
        if (d->code != rc)
            fz_fail("%s returned %s, the detail says %s", what,
                    weft_err_name(rc), weft_err_name(d->code));
    }
    return rc;
}

/* Everything allocated for one input, freed at its end. */
typedef struct fz_block {
    struct fz_block *next;
    max_align_t align[];
} fz_block;
static fz_block *fz_blocks;

static void *fz_alloc(size_t size)
{
    fz_block *b = calloc(1, sizeof *b + size);

    if (!b)
        abort();
    b->next = fz_blocks;
    fz_blocks = b;
    return b->align;
}

/* ---- the pool of objects ----------------------------------------------- */

#define FZ_NB     8  /* buffers */
#define FZ_NM     3  /* modules */
#define FZ_NG     3  /* graphs */
#define FZ_NE     4  /* executable graphs */
#define FZ_NODES  40 /* nodes per graph */
#define FZ_MAXBUF 4096

/* Host memory that a node reads or writes, or what a node saw. */
typedef struct fz_hostmem {
    uint8_t *data;   /* read dst, write src, what a map or task saw */
    uint8_t *expect; /* what the last launch must have left in data */
    uint8_t *expdef; /* which bytes of expect are defined */
    size_t size;
    weft_access mode;
    uint8_t pattern; /* written by WEFT_WRITE maps and tasks */
    int checked;     /* expect holds an expectation not yet checked */
    unsigned owner;  /* the executable graph (fz_exec.id) that set it */
    int bad_size;    /* a callback saw another size than the range's */
} fz_hostmem;

typedef struct fz_task {
    unsigned n;
    fz_hostmem *acc[3];
} fz_task;

enum {
    FZ_KERNEL,
    FZ_WRITE,
    FZ_READ,
    FZ_COPY,
    FZ_FILL,
    FZ_MAP,
    FZ_HOST,
    FZ_EMPTY
};

typedef struct fz_node {
    int kind;
    int mod, kid;     /* kernel nodes */
    weft_arg args[4]; /* kernel nodes: the arguments as last set */
    uint8_t bytes[8]; /* the BYTES argument's value */
    unsigned nbuf;    /* buffer accesses, in the node's order */
    int buf[3];       /* buffer slots */
    size_t off[3];    /* absolute offsets in the root */
    size_t size[3];   /* resolved sizes */
    weft_access mode[3];
    fz_hostmem *hm[3];
    uint8_t pattern[4];
    size_t psize;
} fz_node;

typedef struct fz_buf {
    weft_buffer *b;
    int rt;               /* 0: the main runtime, 1: the other one */
    int root, parent;     /* slots; root == own slot for a root */
    size_t off, size;     /* the bytes in the root */
    int views;            /* live views of this handle */
    uint8_t *model, *def; /* roots: the bytes, and which are defined */
    uint8_t *wrap;        /* roots made by weft_buffer_wrap */
    int mapped;           /* roots: the slot that mapped it, or -1 */
    void *map_ptr;
    size_t map_off, map_size; /* absolute */
    weft_access map_mode;
} fz_buf;

typedef struct fz_module {
    weft_module *m;
    int rt;
    weft_kernel *k[FUZZ_NKERNELS];
} fz_module;

typedef struct fz_graph {
    weft_graph *g;
    fz_node *nodes;
    unsigned n;
    int bad;        /* holds a node that weft accepted but must refuse later */
    int unsure;     /* instantiate may fail for reasons the model lacks */
    unsigned edges; /* edge count when the graph was picked for a call */
} fz_graph;

typedef struct fz_exec {
    weft_exec *e;
    fz_node *nodes;
    unsigned n;
    int pending; /* launches since the last wait */
    unsigned id; /* unique in the input: whose expectations hostmem holds */
} fz_exec;

static struct fz {
    weft_runtime *rt[2];
    fz_buf b[FZ_NB];
    fz_module m[FZ_NM];
    fz_graph g[FZ_NG];
    fz_exec e[FZ_NE];
    FILE *null;
    unsigned next_id;  /* of executable graphs */
    unsigned applying; /* fz_exec.id of the launch fz_apply models */
} F;

/* A live slot chosen by the input, -1 for none (NULL). */
static int fz_pick_buf(fz_in *in)
{
    unsigned v = fz_u8(in);

    if (v == 255)
        return -1;
    for (unsigned i = 0; i < FZ_NB; i++)
        if (F.b[(v + i) % FZ_NB].b)
            return (int)((v + i) % FZ_NB);
    return -1;
}

static int fz_free_slot_buf(void)
{
    for (int i = 0; i < FZ_NB; i++)
        if (!F.b[i].b)
            return i;
    return -1;
}

static weft_buffer *fz_handle(int s)
{
    return s >= 0 ? F.b[s].b : NULL;
}

/*
 * A range of a buffer of hsize bytes: in range, to the end (WEFT_WHOLE),
 * empty, or out of range in one of several ways. *valid: 1 in range and
 * not empty, 0 out of range, -1 empty.
 */
static void fz_range(fz_in *in, size_t hsize, size_t *off, size_t *size,
                     int *valid)
{
    unsigned a = fz_u16(in), b = fz_u16(in);

    *valid = 0;
    switch (fz_pick(in, 10)) {
    case 0:
    case 1:
        *off = 0;
        *size = hsize;
        break;
    case 2:
        *off = 0;
        *size = WEFT_WHOLE;
        break;
    case 3:
    case 4:
    case 5:
        *off = hsize ? a % hsize : 0;
        *size = hsize - *off ? 1 + b % (hsize - *off) : 0;
        break;
    case 6:
        *off = hsize ? a % hsize : 0;
        *size = 0;
        break;
    case 7:
        *off = hsize + 1 + a % 8;
        *size = 1;
        break;
    case 8:
        *off = 1 + a % 4;
        *size = SIZE_MAX - b % 4;
        break;
    default:
        *off = hsize ? a % hsize : 0;
        *size = hsize - *off + 1 + b % 3;
        break;
    }
    if (*off <= hsize && *size == WEFT_WHOLE)
        *valid = hsize - *off ? 1 : -1;
    else if (*off <= hsize && *size <= hsize - *off)
        *valid = *size ? 1 : -1;
}

/* The size a range means: WEFT_WHOLE to the end. */
static size_t fz_resolve(size_t hsize, size_t off, size_t size)
{
    return size == WEFT_WHOLE ? hsize - off : size;
}

static fz_buf *fz_root(int s)
{
    return &F.b[F.b[s].root];
}

static int fz_mapped(int s)
{
    return s >= 0 && fz_root(s)->mapped >= 0;
}

/* Compare got with the model [off, off + size) of root where defined. */
static void fz_compare(const fz_buf *root, size_t off, const uint8_t *got,
                       size_t size, const char *what)
{
    for (size_t i = 0; i < size; i++)
        if (root->def[off + i] && got[i] != root->model[off + i])
            fz_fail("%s: byte %zu of the range at %zu is %u, the model "
                    "says %u",
                    what, i, off, got[i], root->model[off + i]);
}

/* ---- runtimes ---------------------------------------------------------- */

static weft_runtime *fz_runtime(int which)
{
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;

    if (which == 1 && !F.rt[1]) {
        o.devices = "host";
        o.host_threads = 1;
        fz_check(weft_runtime_create(&F.rt[1], &o), FZ_OK,
                 "weft_runtime_create (other)");
    }
    return F.rt[which];
}

static void fz_main_runtime(fz_in *in)
{
    static const char *const devices[] = {"host", "host", "sim", "sim",
                                          "host,sim"};
    static const char *const sims[] = {
        "devices=2,real_data=1", "devices=1,real_data=1,graphs=1,check=1",
        "devices=3,real_data=1,copy_engines=1,peer=0"};
    weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
    unsigned v = fz_u8(in);

    o.devices = devices[v % 5];
    o.host_devices = 1 + (v >> 3) % 2;
    o.host_threads = 1 + (v >> 4) % 2;
    o.sim_config = sims[(v >> 5) % 3];
    o.place_policy = (int)((v >> 3) % 5);
    /* Room for the largest node (two 4 KiB ranges): eviction, no failure. */
    if ((v >> 6) == 3)
        o.device_mem_limit = 2 * FZ_MAXBUF;
    fz_check(weft_runtime_create(&F.rt[0], &o), FZ_OK, "weft_runtime_create");
}

/* ---- model of graph nodes ---------------------------------------------- */

static void fz_hm_expect(fz_hostmem *hm, const fz_buf *root, size_t off)
{
    memcpy(hm->expect, root->model + off, hm->size);
    memcpy(hm->expdef, root->def + off, hm->size);
    hm->checked = 1;
    hm->owner = F.applying;
}

static void fz_hm_touch(fz_hostmem *hm, fz_buf *root, size_t off)
{
    uint8_t *m = root->model + off, *d = root->def + off;

    if (hm->mode & WEFT_READ)
        fz_hm_expect(hm, root, off);
    for (size_t i = 0; i < hm->size; i++) {
        if (hm->mode == WEFT_WRITE) {
            m[i] = hm->pattern;
            d[i] = 1;
        } else if (hm->mode == WEFT_READ_WRITE) {
            m[i] = (uint8_t)(m[i] + 7);
        }
    }
}

/* What a map node and a host task do with the bytes they get. */
static void fz_hm_run(fz_hostmem *hm, uint8_t *p, size_t size)
{
    if (size != hm->size) {
        hm->bad_size = 1;
        return;
    }
    if (hm->mode & WEFT_READ)
        memcpy(hm->data, p, size);
    for (size_t i = 0; i < size; i++) {
        if (hm->mode == WEFT_WRITE)
            p[i] = hm->pattern;
        else if (hm->mode == WEFT_READ_WRITE)
            p[i] = (uint8_t)(p[i] + 7);
    }
}

static void fz_map_fn(void *ptr, size_t size, void *user)
{
    fz_hm_run(user, ptr, size);
}

static void fz_task_fn(void *const *ptrs, void *user)
{
    fz_task *t = user;

    for (unsigned i = 0; i < t->n; i++)
        fz_hm_run(t->acc[i], ptrs[i], t->acc[i]->size);
}

/* One launch of nodes, on the model, in insertion order. */
static void fz_apply(const fz_node *nodes, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        const fz_node *nd = &nodes[i];
        fz_buf *r0 = nd->nbuf ? fz_root(nd->buf[0]) : NULL;
        uint8_t *bufs[3], *def[3];

        switch (nd->kind) {
        case FZ_KERNEL:
            for (unsigned j = 0; j < nd->nbuf; j++) {
                bufs[j] = fz_root(nd->buf[j])->model + nd->off[j];
                def[j] = fz_root(nd->buf[j])->def + nd->off[j];
            }
            fuzz_kernel_apply((unsigned)nd->kid, bufs, def, nd->args);
            break;
        case FZ_WRITE:
            memcpy(r0->model + nd->off[0], nd->hm[0]->data, nd->size[0]);
            memset(r0->def + nd->off[0], 1, nd->size[0]);
            break;
        case FZ_READ:
            fz_hm_expect(nd->hm[0], r0, nd->off[0]);
            break;
        case FZ_COPY: {
            fz_buf *r1 = fz_root(nd->buf[1]);

            memmove(r0->model + nd->off[0], r1->model + nd->off[1],
                    nd->size[0]);
            memmove(r0->def + nd->off[0], r1->def + nd->off[1], nd->size[0]);
            break;
        }
        case FZ_FILL:
            for (size_t j = 0; j < nd->size[0]; j++)
                r0->model[nd->off[0] + j] = nd->pattern[j % nd->psize];
            memset(r0->def + nd->off[0], 1, nd->size[0]);
            break;
        case FZ_MAP:
        case FZ_HOST:
            for (unsigned j = 0; j < nd->nbuf; j++)
                fz_hm_touch(nd->hm[j], fz_root(nd->buf[j]), nd->off[j]);
            break;
        }
    }
}

/* After a wait: what the nodes of the last launch left in host memory. */
static void fz_check_hostmem(const fz_exec *x)
{
    for (unsigned i = 0; i < x->n; i++) {
        for (unsigned j = 0; j < x->nodes[i].nbuf; j++) {
            fz_hostmem *hm = x->nodes[i].hm[j];

            if (!hm)
                continue;
            if (hm->bad_size)
                fz_fail("node %u: a callback saw another size than %zu", i,
                        hm->size);
            if (!hm->checked || hm->owner != x->id)
                continue; /* another graph's launch comes later */
            for (size_t k = 0; k < hm->size; k++)
                if (hm->expdef[k] && hm->data[k] != hm->expect[k])
                    fz_fail("node %u (kind %d): byte %zu is %u, the model "
                            "says %u",
                            i, x->nodes[i].kind, k, hm->data[k], hm->expect[k]);
            hm->checked = 0;
        }
    }
}

/* ---- which objects use which ------------------------------------------- */

static int fz_nodes_use_buf(const fz_node *nodes, unsigned n, int s)
{
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < nodes[i].nbuf; j++)
            if (nodes[i].buf[j] == s)
                return 1;
    return 0;
}

static int fz_nodes_use_root(const fz_node *nodes, unsigned n, int root)
{
    for (unsigned i = 0; i < n; i++)
        for (unsigned j = 0; j < nodes[i].nbuf; j++)
            if (F.b[nodes[i].buf[j]].root == root)
                return 1;
    return 0;
}

static int fz_nodes_use_mod(const fz_node *nodes, unsigned n, int m)
{
    for (unsigned i = 0; i < n; i++)
        if (nodes[i].kind == FZ_KERNEL && nodes[i].mod == m)
            return 1;
    return 0;
}

static int fz_graphs_use_buf(int s)
{
    for (int g = 0; g < FZ_NG; g++)
        if (F.g[g].g && fz_nodes_use_buf(F.g[g].nodes, F.g[g].n, s))
            return 1;
    return 0;
}

static int fz_execs_use_buf(int s)
{
    for (int e = 0; e < FZ_NE; e++)
        if (F.e[e].e && fz_nodes_use_buf(F.e[e].nodes, F.e[e].n, s))
            return 1;
    return 0;
}

static int fz_mod_in_use(int m)
{
    for (int g = 0; g < FZ_NG; g++)
        if (F.g[g].g && fz_nodes_use_mod(F.g[g].nodes, F.g[g].n, m))
            return 1;
    for (int e = 0; e < FZ_NE; e++)
        if (F.e[e].e && fz_nodes_use_mod(F.e[e].nodes, F.e[e].n, m))
            return 1;
    return 0;
}

/* Wait for the launches of e; check what they left. */
static void fz_exec_wait(int e)
{
    fz_exec *x = &F.e[e];

    fz_check(weft_exec_wait(x->e), FZ_OK, "weft_exec_wait");
    fz_check_hostmem(x);
    x->pending = 0;
}

/*
 * Wait for every executable graph with launches pending on a root that
 * root uses (all of them for root -1): launches of different executable
 * graphs are not ordered among themselves, so the model orders them.
 */
static void fz_quiesce_root(int root, int except)
{
    for (int e = 0; e < FZ_NE; e++)
        if (e != except && F.e[e].e && F.e[e].pending &&
            (root < 0 || fz_nodes_use_root(F.e[e].nodes, F.e[e].n, root)))
            fz_exec_wait(e);
}

/* ---- buffers ----------------------------------------------------------- */

static const size_t fz_sizes[] = {1, 3, 16, 64, 100, 256, 1000, FZ_MAXBUF};

static void fz_buf_new(int s, int rt, weft_buffer *b, size_t size,
                       uint8_t *wrap)
{
    fz_buf *x = &F.b[s];

    memset(x, 0, sizeof *x);
    x->b = b;
    x->rt = rt;
    x->root = x->parent = s;
    x->size = size;
    x->mapped = -1;
    x->model = fz_alloc(size);
    x->def = fz_alloc(size);
    x->wrap = wrap;
    if (wrap) {
        memcpy(x->model, wrap, size);
        memset(x->def, 1, size);
    }
}

static void op_buf_create(fz_in *in, int wrap)
{
    int s = fz_free_slot_buf(), rt = fz_pick(in, 8) == 0;
    unsigned v = fz_u8(in);
    size_t size = fz_sizes[v % 8];
    weft_buffer *b = NULL;
    uint8_t *mem = NULL;
    int rc;

    if (s < 0)
        return;
    if (v >= 248) { /* invalid: size 0, NULL runtime, NULL out-pointer */
        if (wrap) {
            uint8_t one;
            fz_check(weft_buffer_wrap(F.rt[0], &one, 0, &b), FZ_FAIL,
                     "weft_buffer_wrap size 0");
            fz_check(weft_buffer_wrap(F.rt[0], NULL, 16, &b), FZ_FAIL,
                     "weft_buffer_wrap NULL");
            fz_check(weft_buffer_wrap(NULL, &one, 1, &b), FZ_FAIL,
                     "weft_buffer_wrap NULL runtime");
            fz_check(weft_buffer_wrap(F.rt[0], &one, 1, NULL), FZ_FAIL,
                     "weft_buffer_wrap NULL out");
        } else {
            fz_check(weft_buffer_create(F.rt[0], 0, &b), FZ_FAIL,
                     "weft_buffer_create size 0");
            fz_check(weft_buffer_create(NULL, 16, &b), FZ_FAIL,
                     "weft_buffer_create NULL runtime");
            fz_check(weft_buffer_create(F.rt[0], 16, NULL), FZ_FAIL,
                     "weft_buffer_create NULL out");
            /* (no huge sizes: the sanitizers' allocator aborts on them) */
        }
        return;
    }
    if (wrap) {
        mem = fz_alloc(size);
        for (size_t i = 0; i < size; i++)
            mem[i] = (uint8_t)(v + i * 7);
        rc = weft_buffer_wrap(fz_runtime(rt), mem, size, &b);
    } else {
        rc = weft_buffer_create(fz_runtime(rt), size, &b);
    }
    if (fz_check(rc, FZ_OK, wrap ? "weft_buffer_wrap" : "weft_buffer_create") ==
        0)
        fz_buf_new(s, rt, b, size, mem);
}

static void op_buf_view(fz_in *in)
{
    int p = fz_pick_buf(in), s = fz_free_slot_buf(), valid;
    size_t off, size;
    weft_buffer *v = NULL;
    int rc;

    if (s < 0)
        return;
    if (p < 0) {
        fz_check(weft_buffer_view(NULL, 0, 1, &v), FZ_FAIL,
                 "weft_buffer_view NULL");
        return;
    }
    fz_range(in, F.b[p].size, &off, &size, &valid);
    rc = weft_buffer_view(F.b[p].b, off, size, &v);
    fz_check(rc,
             valid > 0   ? FZ_OK
             : valid < 0 ? FZ_ANY
                         : FZ_FAIL,
             "weft_buffer_view");
    if (rc == 0) {
        fz_buf *x = &F.b[s];

        memset(x, 0, sizeof *x);
        x->b = v;
        x->rt = F.b[p].rt;
        x->root = F.b[p].root;
        x->parent = p;
        x->off = F.b[p].off + off;
        x->size = fz_resolve(F.b[p].size, off, size);
        x->mapped = -1;
        F.b[p].views++;
    }
}

static void op_buf_destroy(fz_in *in)
{
    int s = fz_pick_buf(in), expect = FZ_OK, rc;
    fz_buf *x;

    if (s < 0) {
        fz_check(weft_buffer_destroy(NULL), FZ_OK, "weft_buffer_destroy NULL");
        return;
    }
    x = &F.b[s];
    if (x->views || fz_execs_use_buf(s) || fz_graphs_use_buf(s) ||
        fz_root(s)->mapped == s)
        expect = FZ_FAIL;
    if (x->root == s)
        fz_quiesce_root(s, -1);
    rc = fz_check(weft_buffer_destroy(x->b), expect, "weft_buffer_destroy");
    if (rc < 0) {
        if (rc != WEFT_EBUSY)
            fz_fail("weft_buffer_destroy of a buffer in use: %s, not "
                    "WEFT_EBUSY",
                    weft_err_name(rc));
        return;
    }
    if (x->root == s && x->wrap)
        fz_compare(x, 0, x->wrap, x->size,
                   "weft_buffer_destroy: the wrapped memory");
    if (x->parent != s)
        F.b[x->parent].views--;
    x->b = NULL;
}

static void op_buf_write(fz_in *in)
{
    int s = fz_pick_buf(in), valid;
    size_t off, size, n;
    uint8_t *src;
    unsigned seed = fz_u8(in);
    int rc;

    if (s < 0 || fz_mapped(s)) {
        fz_check(weft_buffer_write(NULL, 0, &seed, 1), FZ_FAIL,
                 "weft_buffer_write NULL");
        return;
    }
    fz_range(in, F.b[s].size, &off, &size, &valid);
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    src = fz_alloc(n + 1);
    for (size_t i = 0; i < n; i++)
        src[i] = (uint8_t)(seed + i * 13);
    if (valid > 0 && fz_pick(in, 16) == 0) {
        fz_check(weft_buffer_write(F.b[s].b, off, NULL, size), FZ_FAIL,
                 "weft_buffer_write NULL src");
        return;
    }
    rc = weft_buffer_write(F.b[s].b, off, src, size);
    fz_check(rc,
             valid > 0   ? FZ_OK
             : valid < 0 ? FZ_ANY
                         : FZ_FAIL,
             "weft_buffer_write");
    if (rc == 0 && n) {
        fz_buf *r = fz_root(s);

        memcpy(r->model + F.b[s].off + off, src, n);
        memset(r->def + F.b[s].off + off, 1, n);
    }
}

static void op_buf_read(fz_in *in)
{
    int s = fz_pick_buf(in), valid;
    size_t off, size, n;
    uint8_t *dst;
    int rc;

    if (s < 0 || fz_mapped(s)) {
        uint8_t one;
        fz_check(weft_buffer_read(NULL, 0, &one, 1), FZ_FAIL,
                 "weft_buffer_read NULL");
        return;
    }
    fz_range(in, F.b[s].size, &off, &size, &valid);
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    dst = fz_alloc(valid >= 0 ? n + 1 : 64);
    if (valid > 0 && fz_pick(in, 16) == 0) {
        fz_check(weft_buffer_read(F.b[s].b, off, NULL, size), FZ_FAIL,
                 "weft_buffer_read NULL dst");
        return;
    }
    /* An invalid range must fail before a byte is written to dst. */
    rc = weft_buffer_read(F.b[s].b, off, dst, size);
    fz_check(rc,
             valid > 0   ? FZ_OK
             : valid < 0 ? FZ_ANY
                         : FZ_FAIL,
             "weft_buffer_read");
    if (rc == 0 && n)
        fz_compare(fz_root(s), F.b[s].off + off, dst, n, "weft_buffer_read");
}

static void op_buf_fill(fz_in *in)
{
    static const size_t psizes[] = {1, 2, 4, 3, 0, 8};
    int s = fz_pick_buf(in), valid;
    size_t off, size, n, ps = psizes[fz_pick(in, 6)];
    uint8_t pat[8];
    int rc, expect;

    for (int i = 0; i < 8; i++)
        pat[i] = (uint8_t)fz_u8(in);
    if (s < 0 || fz_mapped(s)) {
        fz_check(weft_buffer_fill(NULL, 0, 1, pat, 1), FZ_FAIL,
                 "weft_buffer_fill NULL");
        return;
    }
    fz_range(in, F.b[s].size, &off, &size, &valid);
    if (fz_pick(in, 2) && ps && ps <= 4) { /* mostly aligned */
        off -= off % ps;
        if (size != WEFT_WHOLE)
            size -= size % ps;
        if (off <= F.b[s].size &&
            (size == WEFT_WHOLE ? 1 : size <= F.b[s].size - off))
            valid = fz_resolve(F.b[s].size, off, size) ? 1 : -1;
    }
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    expect = valid > 0 ? FZ_OK : valid < 0 ? FZ_ANY : FZ_FAIL;
    if (ps != 1 && ps != 2 && ps != 4)
        expect = FZ_FAIL;
    else if (off % ps || n % ps)
        expect = FZ_FAIL;
    rc = weft_buffer_fill(F.b[s].b, off, size, pat, ps);
    fz_check(rc, expect, "weft_buffer_fill");
    if (rc == 0 && n) {
        fz_buf *r = fz_root(s);

        for (size_t i = 0; i < n; i++)
            r->model[F.b[s].off + off + i] = pat[i % ps];
        memset(r->def + F.b[s].off + off, 1, n);
    }
}

static void op_buf_map(fz_in *in)
{
    int s = fz_pick_buf(in), valid, rc, expect;
    size_t off, size, n;
    weft_access mode = (weft_access)(1 + fz_pick(in, 4)); /* 4: invalid */
    void *ptr = NULL;
    fz_buf *r;

    if (s < 0) {
        fz_check(weft_buffer_map(NULL, 0, 1, WEFT_READ, &ptr), FZ_FAIL,
                 "weft_buffer_map NULL");
        return;
    }
    r = fz_root(s);
    fz_range(in, F.b[s].size, &off, &size, &valid);
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    expect = valid > 0 ? FZ_OK : valid < 0 ? FZ_ANY : FZ_FAIL;
    if (mode > WEFT_READ_WRITE || r->mapped >= 0)
        expect = FZ_FAIL;
    if (fz_pick(in, 16) == 0) {
        fz_check(weft_buffer_map(F.b[s].b, off, size, mode, NULL), FZ_FAIL,
                 "weft_buffer_map NULL ptr");
        return;
    }
    if (fz_trace)
        fprintf(stderr, "fuzz_api: map %d (root %d, at %zu) off %zu size %zu\n",
                s, F.b[s].root, F.b[s].off, off, size);
    rc = weft_buffer_map(F.b[s].b, off, size, mode, &ptr);
    fz_check(rc, expect, "weft_buffer_map");
    if (rc < 0)
        return;
    if (!ptr && n)
        fz_fail("weft_buffer_map: NULL pointer");
    r->mapped = s;
    F.b[s].map_ptr = ptr;
    F.b[s].map_off = F.b[s].off + off;
    F.b[s].map_size = n;
    F.b[s].map_mode = mode;
    if (mode & WEFT_READ)
        fz_compare(r, F.b[s].map_off, ptr, n, "weft_buffer_map");
    if (mode & WEFT_WRITE)
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)ptr)[i] = (uint8_t)(i * 5 + 1);
}

static void fz_unmap(int s)
{
    fz_buf *x = &F.b[s], *r = fz_root(s);

    fz_check(weft_buffer_unmap(x->b, x->map_ptr), FZ_OK, "weft_buffer_unmap");
    if (x->map_mode & WEFT_WRITE) {
        for (size_t i = 0; i < x->map_size; i++)
            r->model[x->map_off + i] = (uint8_t)(i * 5 + 1);
        memset(r->def + x->map_off, 1, x->map_size);
    }
    r->mapped = -1;
}

static void op_buf_unmap(fz_in *in)
{
    int s = fz_pick_buf(in);
    fz_buf *x, *r;
    unsigned how = fz_pick(in, 4);

    if (s < 0) {
        fz_check(weft_buffer_unmap(NULL, NULL), FZ_FAIL,
                 "weft_buffer_unmap NULL");
        return;
    }
    x = &F.b[s];
    r = fz_root(s);
    if (r->mapped != s) {
        uint8_t one;
        fz_check(weft_buffer_unmap(x->b, &one), FZ_FAIL,
                 "weft_buffer_unmap of a buffer not mapped");
        return;
    }
    if (how == 0) {
        uint8_t one;
        fz_check(weft_buffer_unmap(x->b, &one), FZ_FAIL,
                 "weft_buffer_unmap of another pointer");
        return;
    }
    fz_unmap(s);
}

static void op_buf_sync(fz_in *in)
{
    int s = fz_pick_buf(in), rc, valid;
    fz_buf *r;
    size_t off, size;

    if (s < 0) {
        fz_check(weft_buffer_sync_host(NULL), FZ_FAIL,
                 "weft_buffer_sync_host NULL");
        fz_check(weft_buffer_invalidate(NULL, 0, 1), FZ_FAIL,
                 "weft_buffer_invalidate NULL");
        return;
    }
    r = fz_root(s);
    if (fz_mapped(s))
        return;
    if (fz_pick(in, 2) == 0) {
        rc = weft_buffer_sync_host(F.b[s].b);
        fz_check(rc, r->wrap ? FZ_OK : FZ_ANY, "weft_buffer_sync_host");
        if (rc == 0 && r->wrap)
            fz_compare(r, F.b[s].off, r->wrap + F.b[s].off, F.b[s].size,
                       "weft_buffer_sync_host: the wrapped memory");
        return;
    }
    /* weft_buffer_invalidate after the user wrote the wrapped memory. */
    fz_range(in, F.b[s].size, &off, &size, &valid);
    if (!r->wrap || valid <= 0) {
        fz_check(weft_buffer_invalidate(F.b[s].b, off, size),
                 !r->wrap || valid == 0 ? FZ_FAIL : FZ_ANY,
                 "weft_buffer_invalidate");
        return;
    }
    fz_quiesce_root(F.b[s].root, -1);
    /* Keep what only a device holds: the user memory gets it first. */
    fz_check(weft_buffer_sync_host(F.b[s].b), FZ_OK, "weft_buffer_sync_host");
    size = fz_resolve(F.b[s].size, off, size);
    off += F.b[s].off;
    for (size_t i = 0; i < size; i++) {
        r->wrap[off + i] = (uint8_t)(r->wrap[off + i] ^ 0x3c);
        r->model[off + i] = r->wrap[off + i];
        r->def[off + i] = 1;
    }
    fz_check(weft_buffer_invalidate(F.b[s].b, off - F.b[s].off, size), FZ_OK,
             "weft_buffer_invalidate");
}

/* ---- modules ----------------------------------------------------------- */

static void op_module_create(fz_in *in)
{
    int s = -1, rt = fz_pick(in, 6) == 0;
    unsigned how = fz_pick(in, 8);
    weft_module *m = NULL;
    weft_module_source bad = fuzz_module_source;

    for (int i = 0; i < FZ_NM; i++)
        if (!F.m[i].m) {
            s = i;
            break;
        }
    switch (how) {
    case 0:
        fz_check(weft_module_create(F.rt[0], NULL, 1, &m), FZ_FAIL,
                 "weft_module_create NULL variants");
        fz_check(weft_module_create(F.rt[0], &bad, 0, &m), FZ_FAIL,
                 "weft_module_create 0 variants");
        fz_check(weft_module_create(NULL, &bad, 1, &m), FZ_FAIL,
                 "weft_module_create NULL runtime");
        fz_check(weft_module_create(F.rt[0], &bad, 1, NULL), FZ_FAIL,
                 "weft_module_create NULL out");
        return;
    case 2:
        /* refused by the translation, before any compiler runs */
        fz_check(weft_module_create_portable(
                     F.rt[0], "WEFT_KERNEL void k(long n[]) {}", NULL, &m),
                 FZ_FAIL, "weft_module_create_portable, array parameter");
        return;
    case 1:
        bad.size = 0;
        fz_check(weft_module_create(F.rt[0], &bad, 1, &m), FZ_FAIL,
                 "weft_module_create 0 kernels");
        bad.size = FUZZ_NKERNELS;
        bad.kind = (weft_source_kind)99;
        fz_check(weft_module_create(F.rt[0], &bad, 1, &m), FZ_FAIL,
                 "weft_module_create bad kind");
        return;
    default:
        break;
    }
    if (s < 0)
        return;
    fz_check(weft_module_create(fz_runtime(rt), &fuzz_module_source, 1, &m),
             FZ_OK, "weft_module_create");
    F.m[s].m = m;
    F.m[s].rt = rt;
    for (int k = 0; k < FUZZ_NKERNELS; k++)
        fz_check(weft_module_get_kernel(m, fuzz_kernels[k].name, &F.m[s].k[k]),
                 FZ_OK, "weft_module_get_kernel");
}

static void op_module_destroy(fz_in *in)
{
    int s = (int)fz_pick(in, FZ_NM + 1), expect = FZ_OK, rc;

    if (s == FZ_NM || !F.m[s].m) {
        fz_check(weft_module_destroy(NULL), FZ_OK, "weft_module_destroy NULL");
        return;
    }
    if (fz_mod_in_use(s))
        expect = FZ_FAIL;
    rc = fz_check(weft_module_destroy(F.m[s].m), expect, "weft_module_destroy");
    if (rc == 0)
        memset(&F.m[s], 0, sizeof F.m[s]);
    else if (rc != WEFT_EBUSY)
        fz_fail("weft_module_destroy of a module in use: %s",
                weft_err_name(rc));
}

/* ---- graphs ------------------------------------------------------------ */

static int fz_pick_graph(fz_in *in)
{
    unsigned v = fz_u8(in);

    for (unsigned i = 0; i < FZ_NG; i++) {
        fz_graph *x = &F.g[(v + i) % FZ_NG];

        if (x->g) {
            x->edges = weft_graph_edge_count(x->g);
            return (int)((v + i) % FZ_NG);
        }
    }
    return -1;
}

static void op_graph_create(fz_in *in)
{
    weft_graph *g;

    (void)in;
    for (int i = 0; i < FZ_NG; i++) {
        if (F.g[i].g)
            continue;
        fz_check(weft_graph_create(F.rt[0], &g), FZ_OK, "weft_graph_create");
        memset(&F.g[i], 0, sizeof F.g[i]);
        F.g[i].g = g;
        F.g[i].nodes = fz_alloc(FZ_NODES * sizeof(fz_node));
        return;
    }
    fz_check(weft_graph_create(NULL, &g), FZ_FAIL, "weft_graph_create NULL");
    fz_check(weft_graph_create(F.rt[0], NULL), FZ_FAIL,
             "weft_graph_create NULL out");
}

static void op_graph_destroy(fz_in *in)
{
    int g = fz_pick_graph(in);

    if (g < 0) {
        fz_check(weft_graph_destroy(NULL), FZ_OK, "weft_graph_destroy NULL");
        return;
    }
    fz_check(weft_graph_destroy(F.g[g].g), FZ_OK, "weft_graph_destroy");
    F.g[g].g = NULL;
}

/*
 * The outcome of an add: added (recorded), refused (the graph unchanged),
 * or accepted although it must fail at instantiate (valid == 0: the graph
 * is bad from then on).
 */
static int fz_added(int g, int rc, int valid, weft_node node, const char *what)
{
    fz_graph *x = &F.g[g];

    fz_check(rc, valid > 0 ? FZ_OK : FZ_ANY, what);
    if (weft_graph_node_count(x->g) != x->n + (rc == 0))
        fz_fail("%s: %u nodes after, %u before", what,
                weft_graph_node_count(x->g), x->n);
    if (rc < 0 && weft_graph_edge_count(x->g) != x->edges)
        fz_fail("%s failed and changed the edge count from %u to %u", what,
                x->edges, weft_graph_edge_count(x->g));
    if (rc < 0)
        return 0;
    if (node != x->n)
        fz_fail("%s: node index %u, expected %u", what, node, x->n);
    if (valid == 0)
        x->bad = 1;
    if (valid < 0)
        x->unsure = 1;
    x->n++;
    return 1;
}

/* A buffer range for a node: slot, range, validity; -1 if none. */
static int fz_node_buf(fz_in *in, int *s, size_t *off, size_t *size, int *valid)
{
    *s = fz_pick_buf(in);
    if (*s < 0)
        return -1;
    fz_range(in, F.b[*s].size, off, size, valid);
    if (F.b[*s].rt != 0)
        *valid = 0;
    return 0;
}

static void fz_record_buf(fz_node *nd, int s, size_t off, size_t size,
                          weft_access mode)
{
    unsigned j = nd->nbuf++;

    nd->buf[j] = s;
    nd->off[j] = F.b[s].off + off;
    nd->size[j] = fz_resolve(F.b[s].size, off, size);
    nd->mode[j] = mode;
}

static int fz_overlap(const fz_node *nd, unsigned a, unsigned b)
{
    return F.b[nd->buf[a]].root == F.b[nd->buf[b]].root &&
           nd->off[a] < nd->off[b] + nd->size[b] &&
           nd->off[b] < nd->off[a] + nd->size[a];
}

static void op_add_kernel(fz_in *in)
{
    int g = fz_pick_graph(in), m = (int)fz_pick(in, FZ_NM), valid = 1;
    unsigned kid = fz_pick(in, FUZZ_NKERNELS), how = fz_pick(in, 16);
    fz_node nd;
    const fuzz_kernel_info *ki = &fuzz_kernels[kid];
    weft_kernel *k;
    weft_dims dims;
    weft_node node = 0;
    unsigned nargs = ki->nparams, nbufp = kid == FUZZ_ADDCOPY ? 2 : 1;
    uint64_t n = 0;
    int rc;

    if (g < 0 || F.g[g].n >= FZ_NODES)
        return;
    memset(&nd, 0, sizeof nd);
    nd.kind = FZ_KERNEL;
    nd.mod = m;
    nd.kid = (int)kid;
    k = F.m[m].m ? F.m[m].k[kid] : NULL;
    if (!k)
        valid = 0;
    if (k && F.m[m].rt != 0)
        valid = 0;
    for (unsigned j = 0; j < nbufp; j++) {
        int s, v;
        size_t off, size;

        if (fz_node_buf(in, &s, &off, &size, &v) < 0)
            return;
        nd.args[j] = weft_arg_buffer(F.b[s].b, off, size, ki->modes[j]);
        fz_record_buf(&nd, s, off, size, ki->modes[j]);
        if (v <= 0)
            valid = valid ? (v < 0 ? -1 : 0) : 0;
        if (v <= 0)
            nd.size[j] = 0;
    }
    n = nd.size[0];
    if (valid == 0)
        n = 1; /* a range weft must refuse: the kernel would touch a byte */
    else if (valid < 0)
        n = 0;
    else if (nbufp == 2) {
        if (nd.size[1] < n)
            n = nd.size[1];
        if (valid > 0 && (fz_overlap(&nd, 0, 1) || nd.size[0] != n))
            return; /* aliasing or a WRITE range not written whole */
    }
    if (ki->modes[0] == WEFT_READ_WRITE && n && fz_pick(in, 4) == 0)
        n = fz_u8(in) % n;
    switch (kid) {
    case FUZZ_AFFINE:
        nd.args[1] = weft_arg_u32(fz_u8(in));
        break;
    case FUZZ_SETSEQ:
        nd.args[1] = weft_arg_i64((int8_t)fz_u8(in));
        break;
    case FUZZ_ADDCOPY:
        nd.args[2] = weft_arg_f32((float)(int8_t)fz_u8(in));
        break;
    case FUZZ_XORBYTES:
        nd.bytes[0] = (uint8_t)fz_u8(in);
        nd.args[1] = weft_arg_bytes(nd.bytes, 8);
        nd.args[2] = weft_arg_local(64);
        break;
    }
    nd.args[nargs - 1] = weft_arg_u64(n);
    dims = weft_dims1((uint32_t)n);
    {
        static const uint32_t groups[] = {0, 1, 7, 64, 0, 0, 0, 3};
        dims.group[0] = groups[fz_pick(in, 8)];
    }
    if (n == 0)
        valid = valid > 0 ? -1 : valid; /* an empty grid */
    /* Invalid variants: each must be refused. */
    switch (how) {
    case 1:
        nargs--;
        valid = 0;
        break;
    case 2:
        nd.args[nargs - 1] = weft_arg_u32((uint32_t)n); /* another size */
        valid = 0;
        break;
    case 3:
        nd.args[nargs - 1] = weft_arg_f64((double)n); /* same size */
        valid = 0;
        break;
    case 4:
        nd.args[0] = weft_arg_u64(0); /* a scalar for a buffer */
        valid = 0;
        break;
    case 5:
        nd.args[0].buffer = NULL;
        valid = 0;
        break;
    case 6:
        nd.args[0].access = (weft_access)0;
        valid = 0;
        break;
    case 7:
        k = NULL;
        valid = 0;
        break;
    case 8:
        dims.items[1] = 0;
        valid = 0;
        break;
    case 9:
        dims.group[0] = 1u << 20;
        valid = valid > 0 ? -1 : valid;
        break;
    case 10:
        nd.args[1].type = (weft_param_type)42;
        valid = 0;
        break;
    default:
        break;
    }
    if (how == 11) {
        rc = weft_graph_add_kernel(F.g[g].g, k, dims, NULL, nargs, &node);
        fz_added(g, rc, 0, node, "weft_graph_add_kernel NULL args");
        if (rc == 0)
            F.g[g].nodes[F.g[g].n - 1] = nd;
        return;
    }
    rc = weft_graph_add_kernel(F.g[g].g, k, dims, nd.args, nargs, &node);
    if (fz_added(g, rc, valid, node, "weft_graph_add_kernel")) {
        fz_node *kept = &F.g[g].nodes[F.g[g].n - 1];

        *kept = nd;
        if (kid == FUZZ_XORBYTES) /* weft copied the bytes; so does the model */
            kept->args[1].value.bytes = kept->bytes;
    }
}

static fz_hostmem *fz_hostmem_new(size_t size, weft_access mode,
                                  uint8_t pattern)
{
    fz_hostmem *hm = fz_alloc(sizeof *hm);

    hm->size = size;
    hm->data = fz_alloc(size + 1);
    hm->expect = fz_alloc(size + 1);
    hm->expdef = fz_alloc(size + 1);
    hm->mode = mode;
    hm->pattern = pattern;
    return hm;
}

static void op_add_transfer(fz_in *in, int kind)
{
    int g = fz_pick_graph(in), s, s2 = -1, valid, v2 = 1, rc = 0;
    size_t off, size, off2 = 0, n;
    fz_node nd;
    weft_node node = 0;
    unsigned how = fz_pick(in, 12);
    const char *what = "";

    if (g < 0 || F.g[g].n >= FZ_NODES ||
        fz_node_buf(in, &s, &off, &size, &valid) < 0)
        return;
    memset(&nd, 0, sizeof nd);
    nd.kind = kind;
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    if (kind == FZ_COPY) {
        size_t size2;
        if (fz_node_buf(in, &s2, &off2, &size2, &v2) < 0)
            return;
        /* the source range is [off2, off2 + the copy's size) */
        v2 = F.b[s2].rt == 0 && off2 <= F.b[s2].size &&
             (valid <= 0 || n <= F.b[s2].size - off2);
    }
    fz_record_buf(&nd, s, off, size, kind == FZ_READ ? WEFT_READ : WEFT_WRITE);
    nd.size[0] = n;
    if (kind == FZ_COPY) {
        fz_record_buf(&nd, s2, off2, n, WEFT_READ);
        nd.size[1] = n;
        if (size == WEFT_WHOLE)
            valid = valid > 0 ? 0 : valid; /* a copy needs a size */
        if (v2 == 0)
            valid = 0;
        if (valid > 0 && fz_overlap(&nd, 0, 1))
            valid = 0; /* source and destination overlap: refused */
    }
    if (how == 0)
        s = -1; /* a NULL buffer */
    switch (kind) {
    case FZ_READ:
        nd.hm[0] = fz_hostmem_new(n, WEFT_READ, 0);
        rc = weft_graph_add_read(F.g[g].g, fz_handle(s), off,
                                 how == 1 ? NULL : nd.hm[0]->data, size, &node);
        what = "weft_graph_add_read";
        break;
    case FZ_COPY:
        rc = weft_graph_add_copy(F.g[g].g, fz_handle(s), off, fz_handle(s2),
                                 off2, size, &node);
        what = "weft_graph_add_copy";
        break;
    default:
        break;
    }
    if (how == 0 || (how == 1 && kind != FZ_COPY && valid > 0))
        valid = 0; /* a NULL buffer; a NULL destination of bytes */
    if (fz_trace)
        fprintf(stderr,
                "fuzz_api: buffer %d [%zu] off %zu size %zu, %d off %zu: %d\n",
                s, s >= 0 ? F.b[s].size : 0, off, size, s2, off2, valid);
    if (fz_added(g, rc, valid, node, what))
        F.g[g].nodes[F.g[g].n - 1] = nd;
}

static void op_add_write(fz_in *in)
{
    int g = fz_pick_graph(in), s, valid, rc;
    size_t off, size, n;
    fz_node nd;
    weft_node node = 0;
    unsigned how = fz_pick(in, 12);
    uint8_t seed;

    if (g < 0 || F.g[g].n >= FZ_NODES ||
        fz_node_buf(in, &s, &off, &size, &valid) < 0)
        return;
    seed = (uint8_t)fz_u8(in);
    memset(&nd, 0, sizeof nd);
    nd.kind = FZ_WRITE;
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    fz_record_buf(&nd, s, off, size, WEFT_WRITE);
    nd.size[0] = n;
    /* The source lives until the end of the input; nothing to check. */
    nd.hm[0] = fz_hostmem_new(n, WEFT_WRITE, 0);
    for (size_t i = 0; i < n; i++)
        nd.hm[0]->data[i] = (uint8_t)(seed + 3 * i);
    if (how == 0 && valid > 0)
        valid = 0;
    rc = weft_graph_add_write(F.g[g].g, how == 1 ? NULL : F.b[s].b, off,
                              how == 0 ? NULL : nd.hm[0]->data, size, &node);
    if (how == 1)
        valid = 0;
    if (fz_added(g, rc, valid, node, "weft_graph_add_write"))
        F.g[g].nodes[F.g[g].n - 1] = nd;
}

static void op_add_fill(fz_in *in)
{
    static const size_t psizes[] = {1, 2, 4, 3, 0, 1, 2, 4};
    int g = fz_pick_graph(in), s, valid, rc;
    size_t off, size, n, ps = psizes[fz_pick(in, 8)];
    fz_node nd;
    weft_node node = 0;

    if (g < 0 || F.g[g].n >= FZ_NODES ||
        fz_node_buf(in, &s, &off, &size, &valid) < 0)
        return;
    memset(&nd, 0, sizeof nd);
    nd.kind = FZ_FILL;
    for (int i = 0; i < 4; i++)
        nd.pattern[i] = (uint8_t)fz_u8(in);
    nd.psize = ps;
    if (ps && ps <= 4 && fz_pick(in, 2)) {
        off -= off % ps;
        if (size != WEFT_WHOLE)
            size -= size % ps;
        if (F.b[s].rt == 0 && off <= F.b[s].size &&
            (size == WEFT_WHOLE || size <= F.b[s].size - off))
            valid = fz_resolve(F.b[s].size, off, size) ? 1 : -1;
    }
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    fz_record_buf(&nd, s, off, size, WEFT_WRITE);
    nd.size[0] = n;
    if (ps != 1 && ps != 2 && ps != 4)
        valid = 0;
    else if (valid > 0 && (off % ps || n % ps))
        valid = 0;
    rc = weft_graph_add_fill(F.g[g].g, F.b[s].b, off, size, nd.pattern, ps,
                             &node);
    if (fz_added(g, rc, valid, node, "weft_graph_add_fill"))
        F.g[g].nodes[F.g[g].n - 1] = nd;
}

static void op_add_map(fz_in *in)
{
    int g = fz_pick_graph(in), s, valid, rc;
    size_t off, size, n;
    fz_node nd;
    weft_node node = 0;
    weft_access mode = (weft_access)fz_pick(in, 5); /* 0, 4: invalid */
    unsigned how = fz_pick(in, 16);

    if (g < 0 || F.g[g].n >= FZ_NODES ||
        fz_node_buf(in, &s, &off, &size, &valid) < 0)
        return;
    memset(&nd, 0, sizeof nd);
    nd.kind = FZ_MAP;
    n = valid > 0 ? fz_resolve(F.b[s].size, off, size) : 0;
    fz_record_buf(&nd, s, off, size, mode);
    nd.size[0] = n;
    nd.hm[0] = fz_hostmem_new(n, mode, (uint8_t)fz_u8(in));
    if (mode == 0 || mode > WEFT_READ_WRITE || how == 0)
        valid = 0;
    rc = weft_graph_add_map(F.g[g].g, F.b[s].b, off, size, mode,
                            how == 0 ? NULL : fz_map_fn, nd.hm[0], &node);
    if (fz_added(g, rc, valid, node, "weft_graph_add_map"))
        F.g[g].nodes[F.g[g].n - 1] = nd;
}

static void op_add_host(fz_in *in)
{
    int g = fz_pick_graph(in), valid = 1, rc;
    unsigned nacc = fz_pick(in, 4), how = fz_pick(in, 16);
    weft_access_desc acc[3];
    fz_node nd;
    fz_task *t;
    weft_node node = 0;

    if (g < 0 || F.g[g].n >= FZ_NODES)
        return;
    memset(&nd, 0, sizeof nd);
    nd.kind = FZ_HOST;
    t = fz_alloc(sizeof *t);
    for (unsigned i = 0; i < nacc; i++) {
        int s, v;
        size_t off, size;
        weft_access mode = (weft_access)(1 + fz_pick(in, 3));

        if (fz_node_buf(in, &s, &off, &size, &v) < 0)
            return;
        acc[i] = weft_access_range(F.b[s].b, off, size, mode);
        fz_record_buf(&nd, s, off, size, mode);
        if (v <= 0) {
            nd.size[i] = 0;
            valid = valid > 0 ? v : valid;
            if (v < 0 && valid < 0)
                valid = -1;
        }
        nd.hm[i] = t->acc[i] =
            fz_hostmem_new(nd.size[i], mode, (uint8_t)fz_u8(in));
    }
    for (unsigned i = 0; i < nacc; i++)
        for (unsigned j = 0; j < i; j++)
            if (valid > 0 && fz_overlap(&nd, i, j))
                return; /* aliasing accesses: pointers may differ */
    t->n = nacc;
    if (how == 0 && nacc) {
        acc[0].mode = (weft_access)7;
        valid = 0;
    }
    if (how == 1 && nacc) {
        acc[nacc - 1].buffer = NULL;
        valid = 0;
    }
    rc = weft_graph_add_host(F.g[g].g, how == 2 ? NULL : fz_task_fn, t,
                             how == 3 && nacc ? NULL : acc, nacc, &node);
    if (how == 2 || (how == 3 && nacc))
        valid = 0;
    if (fz_added(g, rc, valid, node, "weft_graph_add_host"))
        F.g[g].nodes[F.g[g].n - 1] = nd;
}

static void op_add_empty(fz_in *in)
{
    int g = fz_pick_graph(in), rc;
    weft_node node = 0;
    fz_node nd;

    if (g < 0) {
        fz_check(weft_graph_add_empty(NULL, &node), FZ_FAIL,
                 "weft_graph_add_empty NULL");
        return;
    }
    if (F.g[g].n >= FZ_NODES)
        return;
    memset(&nd, 0, sizeof nd);
    nd.kind = FZ_EMPTY;
    rc = weft_graph_add_empty(F.g[g].g, fz_pick(in, 8) ? &node : NULL);
    if (rc == 0 && node == 0)
        node = F.g[g].n; /* NULL node pointer */
    if (fz_added(g, rc, 1, node, "weft_graph_add_empty"))
        F.g[g].nodes[F.g[g].n - 1] = nd;
}

static void op_add_edge(fz_in *in)
{
    int g = fz_pick_graph(in), rc;
    unsigned from = fz_u8(in), to = fz_u8(in), n, ne;
    int expect = FZ_ANY;

    if (g < 0) {
        fz_check(weft_graph_add_edge(NULL, 0, 1), FZ_FAIL,
                 "weft_graph_add_edge NULL");
        return;
    }
    n = F.g[g].n;
    if (n && from < 250) {
        from %= n;
        to %= n;
    }
    if (from >= n || to >= n || from == to)
        expect = FZ_FAIL;
    ne = weft_graph_edge_count(F.g[g].g);
    rc = fz_check(weft_graph_add_edge(F.g[g].g, from, to), expect,
                  "weft_graph_add_edge");
    if (rc < 0 && weft_graph_edge_count(F.g[g].g) != ne)
        fz_fail("weft_graph_add_edge failed and changed the edge count");
    if (weft_graph_node_count(F.g[g].g) != n)
        fz_fail("weft_graph_add_edge changed the node count");
}

static const weft_device *fz_pick_device(fz_in *in, int *foreign)
{
    unsigned v = fz_u8(in), nd = weft_runtime_device_count(F.rt[0]);

    *foreign = 0;
    if (v == 255)
        return NULL;
    if (v >= 240) { /* (devices of another runtime are refused already) */
        *foreign = 1;
        return weft_runtime_device(fz_runtime(1), 0);
    }
    if (v >= 200)
        return weft_runtime_device(F.rt[0], nd + v % 4); /* NULL */
    return weft_runtime_device(F.rt[0], v % nd);
}

static void op_set_device(fz_in *in)
{
    int g = fz_pick_graph(in), foreign, expect = FZ_ANY;
    unsigned node = fz_u8(in);
    const weft_device *dev = fz_pick_device(in, &foreign);

    if (g < 0)
        return;
    if (F.g[g].n && node < 200)
        node %= F.g[g].n;
    if (node >= F.g[g].n || !dev || foreign)
        expect = FZ_FAIL;
    if (fz_check(weft_graph_set_device(F.g[g].g, node, dev), expect,
                 "weft_graph_set_device") == 0 &&
        F.g[g].nodes[node].kind == FZ_KERNEL)
        F.g[g].unsure = 1; /* the kernel may not fit the device */
}

/* ---- executable graphs ------------------------------------------------- */

static int fz_pick_exec(fz_in *in)
{
    unsigned v = fz_u8(in);

    for (unsigned i = 0; i < FZ_NE; i++)
        if (F.e[(v + i) % FZ_NE].e)
            return (int)((v + i) % FZ_NE);
    return -1;
}

static void op_instantiate(fz_in *in)
{
    int g = fz_pick_graph(in), e = -1, foreign, rc, expect;
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    unsigned how = fz_pick(in, 8);
    weft_exec *x = NULL;

    for (int i = 0; i < FZ_NE; i++)
        if (!F.e[i].e) {
            e = i;
            break;
        }
    if (g < 0 || e < 0) {
        fz_check(weft_graph_instantiate(NULL, NULL, &x), FZ_FAIL,
                 "weft_graph_instantiate NULL");
        return;
    }
    expect = F.g[g].bad ? FZ_FAIL : F.g[g].unsure || !F.g[g].n ? FZ_ANY : FZ_OK;
    switch (how) {
    case 1:
        o.device = fz_pick_device(in, &foreign);
        if (foreign)
            expect = FZ_FAIL;
        else if (expect == FZ_OK)
            expect = FZ_ANY; /* kernels may not fit the device */
        break;
    case 2:
        o.policy = (weft_place_policy)fz_pick(in, 7);
        if (o.policy > WEFT_PLACE_HEFT)
            expect = FZ_FAIL;
        break;
    case 3:
        o.native_graphs = (weft_native_graphs)fz_pick(in, 4);
        o.place_scope = (weft_place_scope)fz_pick(in, 4);
        if (o.native_graphs > WEFT_NATIVE_GRAPHS_ON ||
            o.place_scope > WEFT_PLACE_SCOPE_ALL)
            expect = FZ_FAIL;
        break;
    case 4:
        o.size = 3;
        expect = FZ_FAIL;
        break;
    case 5:
        fz_check(weft_graph_instantiate(F.g[g].g, NULL, NULL), FZ_FAIL,
                 "weft_graph_instantiate NULL out");
        return;
    default:
        break;
    }
    rc = weft_graph_instantiate(F.g[g].g, how ? &o : NULL, &x);
    fz_check(rc, expect, "weft_graph_instantiate");
    if (rc < 0)
        return;
    F.e[e].e = x;
    F.e[e].n = F.g[g].n;
    F.e[e].pending = 0;
    F.e[e].id = ++F.next_id;
    F.e[e].nodes = fz_alloc((F.g[g].n + 1) * sizeof(fz_node));
    memcpy(F.e[e].nodes, F.g[g].nodes, F.g[g].n * sizeof(fz_node));
    for (unsigned i = 0; i < F.e[e].n; i++)
        if (F.e[e].nodes[i].kind == FZ_KERNEL &&
            F.e[e].nodes[i].kid == FUZZ_XORBYTES)
            F.e[e].nodes[i].args[1].value.bytes = F.e[e].nodes[i].bytes;
    if (weft_exec_node_device(x, F.e[e].n) != NULL)
        fz_fail("weft_exec_node_device past the last node is not NULL");
}

static void op_launch(fz_in *in)
{
    int e = fz_pick_exec(in);
    unsigned times = 1 + fz_pick(in, 3);

    if (e < 0) {
        fz_check(weft_exec_launch(NULL), FZ_FAIL, "weft_exec_launch NULL");
        return;
    }
    for (unsigned i = 0; i < F.e[e].n; i++)
        for (unsigned j = 0; j < F.e[e].nodes[i].nbuf; j++)
            if (fz_mapped(F.e[e].nodes[i].buf[j]))
                return;
    for (unsigned i = 0; i < F.e[e].n; i++)
        for (unsigned j = 0; j < F.e[e].nodes[i].nbuf; j++)
            fz_quiesce_root(F.b[F.e[e].nodes[i].buf[j]].root, e);
    for (unsigned i = 0; fz_trace && i < F.e[e].n; i++) {
        const fz_node *nd = &F.e[e].nodes[i];

        fprintf(stderr, "fuzz_api:   exec %d node %u kind %d kid %d:", e, i,
                nd->kind, nd->kid);
        for (unsigned j = 0; j < nd->nbuf; j++)
            fprintf(stderr, " [%d %zu+%zu mode %d]", nd->buf[j], nd->off[j],
                    nd->size[j], (int)nd->mode[j]);
        fprintf(stderr, "\n");
    }
    for (unsigned t = 0; t < times; t++) {
        fz_check(weft_exec_launch(F.e[e].e), FZ_OK, "weft_exec_launch");
        F.applying = F.e[e].id;
        fz_apply(F.e[e].nodes, F.e[e].n);
        F.e[e].pending++;
    }
}

static void op_wait(fz_in *in)
{
    int e = fz_pick_exec(in), rc;

    if (e < 0) {
        fz_check(weft_exec_wait(NULL), FZ_FAIL, "weft_exec_wait NULL");
        fz_check(weft_exec_status(NULL), FZ_FAIL, "weft_exec_status NULL");
        return;
    }
    if (fz_pick(in, 2)) {
        fz_exec_wait(e);
        return;
    }
    rc = weft_exec_status(F.e[e].e);
    if (rc != WEFT_ENOTREADY)
        fz_check(rc, FZ_OK, "weft_exec_status");
}

static void op_exec_destroy(fz_in *in)
{
    int e = fz_pick_exec(in);

    if (e < 0) {
        fz_check(weft_exec_destroy(NULL), FZ_OK, "weft_exec_destroy NULL");
        return;
    }
    fz_check(weft_exec_destroy(F.e[e].e), FZ_OK, "weft_exec_destroy");
    fz_check_hostmem(&F.e[e]);
    F.e[e].e = NULL;
}

static void op_set_arg(fz_in *in)
{
    int e = fz_pick_exec(in), expect = FZ_OK, rc;
    unsigned node = fz_u8(in), index = fz_pick(in, 6), how = fz_pick(in, 8);
    fz_node *nd;
    weft_arg arg;
    const fuzz_kernel_info *ki;
    uint8_t bytes[8] = {0};

    if (e < 0)
        return;
    if (F.e[e].n && node < 250)
        node %= F.e[e].n;
    if (node >= F.e[e].n || F.e[e].nodes[node].kind != FZ_KERNEL) {
        arg = weft_arg_u32(1);
        fz_check(weft_exec_set_arg(F.e[e].e, node, index, arg), FZ_FAIL,
                 "weft_exec_set_arg of no kernel node");
        return;
    }
    nd = &F.e[e].nodes[node];
    ki = &fuzz_kernels[nd->kid];
    if (index >= ki->nparams) {
        fz_check(weft_exec_set_arg(F.e[e].e, node, index, weft_arg_u32(1)),
                 FZ_FAIL, "weft_exec_set_arg index out of range");
        return;
    }
    arg = nd->args[index];
    switch (ki->params[index]) {
    case WEFT_PARAM_BUFFER:
    case WEFT_PARAM_LOCAL:
        expect = FZ_FAIL;
        break;
    case WEFT_PARAM_U32:
        arg.value.u32 = fz_u8(in);
        break;
    case WEFT_PARAM_I64:
        arg.value.i64 = (int8_t)fz_u8(in);
        break;
    case WEFT_PARAM_F32:
        arg.value.f32 = (float)(int8_t)fz_u8(in);
        break;
    case WEFT_PARAM_BYTES:
        bytes[0] = (uint8_t)fz_u8(in);
        arg.value.bytes = bytes;
        break;
    case WEFT_PARAM_U64: /* n: at most the range, the whole of a WRITE one */
        if (ki->modes[0] == WEFT_READ_WRITE && nd->size[0])
            arg.value.u64 = fz_u8(in) % (nd->size[0] + 1);
        break;
    default:
        break;
    }
    if (how == 1) {
        arg.type = ki->params[index] == WEFT_PARAM_F32 ? WEFT_PARAM_U32
                                                       : WEFT_PARAM_F32;
        arg.size = 4;
        expect = FZ_FAIL;
    } else if (how == 2) {
        arg.size = arg.size == 8 ? 4 : 8;
        expect = FZ_FAIL;
    }
    rc = weft_exec_set_arg(F.e[e].e, node, index, arg);
    fz_check(rc, expect, "weft_exec_set_arg");
    if (rc == 0) {
        /* The launches made before this one ran with the old value. */
        fz_exec_wait(e);
        if (ki->params[index] == WEFT_PARAM_BYTES)
            memcpy(nd->bytes, arg.value.bytes, 8);
        else
            nd->args[index] = arg;
        if (ki->params[index] == WEFT_PARAM_U64)
            nd->args[index].value.u64 = arg.value.u64;
    }
}

static void op_misc(fz_in *in)
{
    weft_stats st = {.size = sizeof st};
    weft_exec_stats es = {.size = sizeof es};
    weft_device_info info = {.size = sizeof info};
    weft_kernel *k = NULL;
    int e, g, can;

    switch (fz_pick(in, 10)) {
    case 0:
        fz_check(weft_runtime_get_stats(NULL, &st), FZ_FAIL,
                 "weft_runtime_get_stats NULL");
        fz_check(weft_runtime_get_stats(F.rt[0], NULL), FZ_FAIL,
                 "weft_runtime_get_stats NULL stats");
        fz_check(weft_runtime_get_stats(F.rt[0], &st), FZ_OK,
                 "weft_runtime_get_stats");
        break;
    case 1:
        if ((e = fz_pick_exec(in)) >= 0) {
            fz_check(weft_exec_get_stats(F.e[e].e, &es), FZ_OK,
                     "weft_exec_get_stats");
            fz_check(weft_exec_get_stats(F.e[e].e, NULL), FZ_FAIL,
                     "weft_exec_get_stats NULL");
            fz_check(weft_exec_write_dot(F.e[e].e, F.null), FZ_OK,
                     "weft_exec_write_dot");
        }
        fz_check(weft_exec_get_stats(NULL, &es), FZ_FAIL,
                 "weft_exec_get_stats NULL exec");
        break;
    case 2:
        if ((g = fz_pick_graph(in)) >= 0)
            fz_check(weft_graph_write_dot(F.g[g].g, F.null), FZ_OK,
                     "weft_graph_write_dot");
        fz_check(weft_graph_write_dot(NULL, F.null), FZ_FAIL,
                 "weft_graph_write_dot NULL");
        (void)weft_graph_node_count(NULL);
        (void)weft_graph_edge_count(NULL);
        break;
    case 3:
        for (int m = 0; m < FZ_NM; m++)
            if (F.m[m].m) {
                fz_check(weft_module_get_kernel(F.m[m].m, "nope", &k), FZ_FAIL,
                         "weft_module_get_kernel unknown");
                fz_check(weft_module_get_kernel(F.m[m].m, NULL, &k), FZ_FAIL,
                         "weft_module_get_kernel NULL name");
                fz_check(weft_module_get_kernel(F.m[m].m, "affine", NULL),
                         FZ_FAIL, "weft_module_get_kernel NULL out");
                (void)weft_kernel_supports(F.m[m].k[0],
                                           weft_runtime_device(F.rt[0], 0));
                (void)weft_kernel_supports(NULL, NULL);
                (void)weft_kernel_name(F.m[m].k[1]);
            }
        fz_check(weft_module_get_kernel(NULL, "affine", &k), FZ_FAIL,
                 "weft_module_get_kernel NULL module");
        break;
    case 4:
        fz_check(weft_device_get_info(weft_runtime_device(F.rt[0], 0), &info),
                 FZ_OK, "weft_device_get_info");
        fz_check(weft_device_get_info(NULL, &info), FZ_FAIL,
                 "weft_device_get_info NULL");
        fz_check(weft_device_can_access_peer(weft_runtime_device(F.rt[0], 0),
                                             weft_runtime_device(F.rt[0], 1),
                                             &can),
                 FZ_ANY, "weft_device_can_access_peer");
        (void)weft_runtime_device(F.rt[0], 1000);
        (void)weft_runtime_device(NULL, 0);
        (void)weft_runtime_device_count(NULL);
        break;
    case 5:
        /* Objects live: the runtime stays. */
        for (int s = 0; s < FZ_NB; s++)
            if (F.b[s].b && F.b[s].rt == 0) {
                fz_check(weft_runtime_destroy(F.rt[0]), FZ_FAIL,
                         "weft_runtime_destroy with live buffers");
                break;
            }
        break;
    case 7: {
        weft_runtime_options o = WEFT_RUNTIME_OPTIONS_INIT;
        weft_runtime *rt = NULL;
        const char *what = "weft_runtime_create with bad options";

        switch (fz_pick(in, 5)) {
        case 0:
            o.size = 1;
            break;
        case 1:
            o.devices = "host:7";
            break;
        case 2:
            o.devices = "nonsense";
            break;
        case 3:
            o.devices = "sim";
            o.sim_config = "devices=0";
            break;
        default:
            o.place_policy = 99;
            break;
        }
        fz_check(weft_runtime_create(&rt, &o), FZ_FAIL, what);
        fz_check(weft_runtime_create(NULL, NULL), FZ_FAIL,
                 "weft_runtime_create NULL");
        break;
    }
    case 6:
        if ((e = fz_pick_exec(in)) >= 0)
            for (unsigned i = 0; i < F.e[e].n + 2; i++)
                (void)weft_exec_node_device(F.e[e].e, i);
        (void)weft_exec_node_device(NULL, 0);
        break;
    default:
        break;
    }
}

/* ---- the target -------------------------------------------------------- */

static void fz_quiet(weft_log_level level, const char *subsystem,
                     const char *line, void *user)
{
    (void)level, (void)subsystem, (void)line, (void)user;
}

static void fz_init(void)
{
    static const char *const unset[] = {
        "WEFT_DEVICES",      "WEFT_SIM",   "WEFT_HOST_DEVICES",
        "WEFT_HOST_THREADS", "WEFT_PLACE", "WEFT_PLACE_SCOPE",
        "WEFT_TRACE",        "WEFT_STATS", "WEFT_DEVICE_MEM_LIMIT",
        "WEFT_NATIVE_GRAPHS"};

    for (size_t i = 0; i < sizeof unset / sizeof *unset; i++)
        unsetenv(unset[i]);
    setenv("WEFT_CACHE", "0", 0);
    fz_trace = getenv("FUZZ_TRACE") != NULL;
    if (!getenv("FUZZ_VERBOSE"))
        weft_log_set_sink(fz_quiet, NULL);
    F.null = fopen("/dev/null", "w");
    if (!F.null)
        abort();
}

/* Destroy everything, in an order the lifetime rules allow, and check. */
static void fz_teardown(void)
{
    for (int e = 0; e < FZ_NE; e++)
        if (F.e[e].e) {
            fz_check(weft_exec_destroy(F.e[e].e), FZ_OK, "weft_exec_destroy");
            fz_check_hostmem(&F.e[e]);
        }
    for (int g = 0; g < FZ_NG; g++)
        if (F.g[g].g)
            fz_check(weft_graph_destroy(F.g[g].g), FZ_OK, "weft_graph_destroy");
    for (int s = 0; s < FZ_NB; s++)
        if (F.b[s].b && fz_root(s)->mapped == s)
            fz_unmap(s);
    for (int pass = 0; pass < FZ_NB; pass++)
        for (int s = 0; s < FZ_NB; s++) {
            fz_buf *x = &F.b[s];

            if (!x->b || x->views)
                continue;
            if (x->root == s && x->wrap)
                fz_check(weft_buffer_sync_host(x->b), FZ_OK,
                         "weft_buffer_sync_host");
            fz_check(weft_buffer_destroy(x->b), FZ_OK, "weft_buffer_destroy");
            if (x->root == s && x->wrap)
                fz_compare(x, 0, x->wrap, x->size,
                           "weft_buffer_destroy: the wrapped memory");
            if (x->parent != s)
                F.b[x->parent].views--;
            x->b = NULL;
        }
    for (int m = 0; m < FZ_NM; m++)
        if (F.m[m].m)
            fz_check(weft_module_destroy(F.m[m].m), FZ_OK,
                     "weft_module_destroy");
    for (int r = 0; r < 2; r++)
        if (F.rt[r])
            fz_check(weft_runtime_destroy(F.rt[r]), FZ_OK,
                     "weft_runtime_destroy at the end");
    while (fz_blocks) {
        fz_block *b = fz_blocks;

        fz_blocks = b->next;
        free(b);
    }
    FILE *null = F.null;
    memset(&F, 0, sizeof F);
    F.null = null;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fz_in in = {data, size, 0};
    static int ready;

    if (!ready) {
        fz_init();
        ready = 1;
    }
    if (size > 4096)
        return 0; /* longer inputs say nothing more, slowly */
    fz_op_index = 0;
    fz_main_runtime(&in);
    while (in.i < in.n) {
        fz_op_index++;
        switch (fz_pick(&in, 32)) {
        case 0:
        case 1:
            op_buf_create(&in, 0);
            break;
        case 2:
            op_buf_create(&in, 1);
            break;
        case 3:
            op_buf_view(&in);
            break;
        case 4:
            op_buf_destroy(&in);
            break;
        case 5:
            op_buf_write(&in);
            break;
        case 6:
            op_buf_read(&in);
            break;
        case 7:
            op_buf_fill(&in);
            break;
        case 8:
            op_buf_map(&in);
            break;
        case 9:
            op_buf_unmap(&in);
            break;
        case 10:
            op_buf_sync(&in);
            break;
        case 11:
            op_module_create(&in);
            break;
        case 12:
            op_module_destroy(&in);
            break;
        case 13:
            op_graph_create(&in);
            break;
        case 14:
            op_graph_destroy(&in);
            break;
        case 15:
        case 16:
            op_add_kernel(&in);
            break;
        case 17:
            op_add_write(&in);
            break;
        case 18:
            op_add_transfer(&in, FZ_READ);
            break;
        case 19:
            op_add_transfer(&in, FZ_COPY);
            break;
        case 20:
            op_add_fill(&in);
            break;
        case 21:
            op_add_map(&in);
            break;
        case 22:
            op_add_host(&in);
            break;
        case 23:
            op_add_empty(&in);
            break;
        case 24:
            op_add_edge(&in);
            break;
        case 25:
            op_set_device(&in);
            break;
        case 26:
            op_instantiate(&in);
            break;
        case 27:
        case 28:
            op_launch(&in);
            break;
        case 29:
            op_wait(&in);
            break;
        case 30:
            switch (fz_pick(&in, 3)) {
            case 0:
                op_exec_destroy(&in);
                break;
            case 1:
                op_set_arg(&in);
                break;
            default:
                op_misc(&in);
                break;
            }
            break;
        default:
            op_misc(&in);
            break;
        }
    }
    fz_teardown();
    return 0;
}
