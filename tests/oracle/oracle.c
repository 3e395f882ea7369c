/*
 * oracle: random graphs through weft and through a sequential interpreter,
 * compared byte for byte.
 *
 * weft.h defines the result of a graph as the result of running its nodes
 * one by one in insertion order on the host. The interpreter here does
 * exactly that on plain arrays; weft runs the same case with whatever
 * placement, lanes and copies it chooses. Every root buffer, every host
 * region that a read node filled and every checksum that a map or host
 * node took must come out equal. The generator (oracle_gen.c) aims at
 * hazards: a dependency that weft drops or gets backwards changes bytes.
 *
 *     oracle [--seed S] [--graphs N] [--prefix K] [--max-fail N] [--dump]
 *            [--dot FILE] [--no-shrink] [--quiet] [--self-check]
 *
 * Graph i of a run has seed S + i; a failure prints the seed, and
 * "oracle --seed SEED --graphs 1" replays it under the same WEFT_DEVICES,
 * WEFT_SIM and POCL_DEVICES. --prefix K keeps only the first K nodes of
 * each case (a failure reports the shortest prefix that still fails).
 * The devices come from the environment, as for every weft program.
 *
 * --native-nodes PERCENT makes that share of the nodes native nodes, and
 * --capture-native PERCENT marks that share of those capturable
 * (weft_graph_set_native_capture), so that native graphs replay them.
 * --device-only makes kernel and empty nodes only; --kernels-host kernel,
 * host task and empty nodes (native graphs with host steps between their
 * parts, where a lane's order is carried through other lanes' records).
 *
 * --blocks makes most accesses 2-D and 3-D blocks (some 3-D) of the root
 * buffers seen as matrices with random pitches: disjoint tiles of one
 * matrix, blocks that overlap others or interleave their rows, through
 * views; block kernels (block arguments), block write, read, copy and fill
 * nodes, host tasks with block accesses. The interpreter applies each node
 * to the block's bytes alone, run by run. --range-kernels keeps the
 * kernels' arguments ranges.
 *
 * --self-check runs no weft at all: it measures how often
 * the oracle notices a schedule that drops one kind of dependency.
 */
#include "drivers/sim/sim.h"
#include "oracle.h"
#include "wt_devices.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static struct {
    uint64_t seed;
    unsigned graphs;
    unsigned prefix;   /* 0: whole cases */
    unsigned max_fail; /* stop after this many failures */
    int dump, shrink, quiet, self_check;
    const char *dot;
    unsigned relaunch;   /* launches added to every case, unchanged */
    unsigned min_native; /* fail unless this many launched native graphs */
} opt = {1, 500, 0, 20, 0, 1, 0, 0, NULL, 0, 0};

static weft_runtime *rt;
static weft_module *module;
static weft_kernel *kernels[OR_K_COUNT];
static or_limits limits;

/* Why the current case failed, for the report. */
static char why[2048];

static void failf(const char *fmt, ...)
{
    va_list ap;

    if (why[0]) /* keep the first reason: later ones tend to follow from it */
        return;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
}

/* Call a weft function; on failure say which, with the detail, and stop. */
#define WEFT_CHECK(call)                                                       \
    do {                                                                       \
        int rc_ = (call);                                                      \
        if (rc_ < 0) {                                                         \
            failf("%s: %s: %s", #call, weft_err_name(rc_), weft_last_error()); \
            goto out;                                                          \
        }                                                                      \
    } while (0)

/* ---- what a run produced ------------------------------------------------ */

typedef struct outcome {
    uint8_t *roots[OR_MAX_HANDLES]; /* final bytes of each root */
    uint8_t *dst;                   /* what the read nodes wrote */
    uint32_t *obs;                  /* what the map and host nodes saw */
    /*
     * Interpreter only: who last wrote each byte of each root, as
     * launch << 24 | (node + 1); 0 = the initial bytes, node 0xffffff =
     * a weft_buffer_write between launches.
     */
    uint32_t *writer[OR_MAX_HANDLES];
} outcome;

static void outcome_free(outcome *o)
{
    for (unsigned r = 0; r < OR_MAX_HANDLES; r++) {
        free(o->roots[r]);
        free(o->writer[r]);
    }
    free(o->dst);
    free(o->obs);
    memset(o, 0, sizeof *o);
}

static int outcome_alloc(outcome *o, const or_case *c, int track)
{
    memset(o, 0, sizeof *o);
    for (unsigned r = 0; r < c->nroots; r++) {
        o->roots[r] = malloc(c->handles[r].size);
        if (!o->roots[r])
            return -1;
        memcpy(o->roots[r], c->init[r], c->handles[r].size);
        if (track) {
            o->writer[r] = calloc(c->handles[r].size, sizeof(uint32_t));
            if (!o->writer[r])
                return -1;
        }
    }
    /* never 0 bytes, so that a failed malloc is always NULL */
    o->dst = calloc(c->dst_size + 1, 1);
    o->obs = calloc(c->nnodes + 1, sizeof(uint32_t));
    return o->dst && o->obs ? 0 : -1;
}

/* ---- the interpreter ---------------------------------------------------- */

static uint8_t *at(outcome *o, const or_case *c, const or_access *a)
{
    return o->roots[c->handles[a->handle].root] + a->off;
}

static void mark(outcome *o, const or_case *c, const or_access *a, uint32_t who)
{
    uint32_t *w = o->writer[c->handles[a->handle].root];

    if (!w) /* not tracked in this outcome */
        return;
    for (size_t k = 0; k < or_acc_runs(a); k++)
        for (size_t j = 0; j < a->size; j++)
            w[or_acc_run(a, k) + j] = who;
}

/* A block's shape in uint32s for the block kernels (a range: one row). */
typedef struct shape3 {
    uint32_t w, h, d, p, s;
} shape3;

static shape3 shape_of(const or_access *a)
{
    shape3 s;

    s.w = (uint32_t)(a->size / 4);
    s.h = a->rows ? (uint32_t)a->rows : 1;
    s.d = a->rows ? (uint32_t)a->slices : 1;
    s.p = a->rows ? (uint32_t)(a->pitch / 4) : s.w;
    s.s = a->rows && a->slices > 1 ? (uint32_t)(a->spitch / 4) : s.p * s.h;
    return s;
}

/* Host memory's run k of a block write or read node. */
static size_t host_run(const or_node *n, size_t k)
{
    const or_access *a = &n->acc[0];
    size_t hp = n->hpitch ? n->hpitch : a->size;
    size_t hs = n->hspitch ? n->hspitch : a->rows * hp;

    return n->host_off + k / a->rows * hs + k % a->rows * hp;
}

static void interp_kernel(outcome *o, const or_case *c, const or_node *n)
{
    uint32_t *x = (uint32_t *)(void *)at(o, c, &n->acc[0]);
    uint32_t items = (uint32_t)(n->acc[0].size / 4);

    switch (n->kernel) {
    case OR_K_AFFINE:
        for (uint32_t i = 0; i < items; i++)
            x[i] = or_affine(x[i], n->mul, n->key, i);
        break;
    case OR_K_GATHER: {
        const uint32_t *s = (const uint32_t *)(void *)at(o, c, &n->acc[1]);
        uint32_t m = (uint32_t)(n->acc[1].size / 4);

        for (uint32_t i = 0; i < items; i++)
            x[i] = or_gather(x[i], s, m, n->key, i);
        break;
    }
    case OR_K_MIX: {
        const uint32_t *a = (const uint32_t *)(void *)at(o, c, &n->acc[1]);
        const uint32_t *b = (const uint32_t *)(void *)at(o, c, &n->acc[2]);
        uint32_t m = (uint32_t)(n->acc[2].size / 4);

        for (uint32_t i = 0; i < items; i++)
            x[i] = or_mix(a[i], b, m, n->key, i);
        break;
    }
    case OR_K_SET:
        for (uint32_t i = 0; i < items; i++)
            x[i] = or_set(n->key, i);
        break;
    default: { /* the block kernels */
        shape3 y = shape_of(&n->acc[0]);
        uint32_t count = y.w * y.h * y.d;

        for (uint32_t i = 0; i < count; i++) {
            uint32_t *e = &x[or_at3(i, y.w, y.h, y.p, y.s)];

            if (n->kernel == OR_K_BAFFINE) {
                *e = or_affine(*e, n->mul, n->key, i);
            } else if (n->kernel == OR_K_BSET) {
                *e = or_set(n->key, i);
            } else {
                const uint32_t *s =
                    (const uint32_t *)(void *)at(o, c, &n->acc[1]);
                shape3 xs = shape_of(&n->acc[1]);
                uint32_t j = (i * 7u + n->key) % (xs.w * xs.h * xs.d);

                *e = *e * 3u + s[or_at3(j, xs.w, xs.h, xs.p, xs.s)];
            }
        }
        break;
    }
    }
}

static void interp_node(outcome *o, const or_case *c, unsigned i,
                        unsigned launch)
{
    const or_node *n = &c->nodes[i];
    void *ptrs[OR_MAX_ACC];

    switch (n->kind) {
    case OR_KERNEL:
        interp_kernel(o, c, n);
        break;
    case OR_WRITE:
        if (!n->acc[0].rows)
            memcpy(at(o, c, &n->acc[0]), c->src + n->host_off, n->acc[0].size);
        for (size_t k = 0; n->acc[0].rows && k < or_acc_runs(&n->acc[0]); k++)
            memcpy(o->roots[c->handles[n->acc[0].handle].root] +
                       or_acc_run(&n->acc[0], k),
                   c->src + host_run(n, k), n->acc[0].size);
        break;
    case OR_READ:
        if (!n->acc[0].rows)
            memcpy(o->dst + n->host_off, at(o, c, &n->acc[0]), n->acc[0].size);
        for (size_t k = 0; n->acc[0].rows && k < or_acc_runs(&n->acc[0]); k++)
            memcpy(o->dst + host_run(n, k),
                   o->roots[c->handles[n->acc[0].handle].root] +
                       or_acc_run(&n->acc[0], k),
                   n->acc[0].size);
        break;
    case OR_COPY: /* the generator keeps source and destination apart */
        for (size_t k = 0; k < or_acc_runs(&n->acc[0]); k++)
            memcpy(o->roots[c->handles[n->acc[0].handle].root] +
                       or_acc_run(&n->acc[0], k),
                   o->roots[c->handles[n->acc[1].handle].root] +
                       or_acc_run(&n->acc[1], k),
                   n->acc[0].size);
        break;
    case OR_FILL: /* each run from the pattern's start (see gen_fill_block) */
        for (size_t k = 0; k < or_acc_runs(&n->acc[0]); k++) {
            uint8_t *p = o->roots[c->handles[n->acc[0].handle].root] +
                         or_acc_run(&n->acc[0], k);

            for (size_t j = 0; j < n->acc[0].size; j++)
                p[j] = n->pattern[j % n->pattern_size];
        }
        break;
    case OR_MAP:
    case OR_HOST:
        for (unsigned a = 0; a < n->nacc; a++)
            ptrs[a] = at(o, c, &n->acc[a]);
        or_host_body(n, ptrs, &o->obs[i]);
        break;
    case OR_EMPTY:
        break;
    case OR_NATIVE: /* the generator keeps the three ranges apart */
        memcpy(at(o, c, &n->acc[0]), at(o, c, &n->acc[1]), n->acc[0].size);
        if (n->nacc == 3)
            memset(at(o, c, &n->acc[2]), (int)(n->key & 0xff), n->acc[2].size);
        break;
    }
    for (unsigned a = 0; a < n->nacc; a++)
        if (n->acc[a].mode & WEFT_WRITE)
            mark(o, c, &n->acc[a], launch << 24 | (i + 1));
}

/* Run c's launches, the nodes of each in the given order (NULL: as added). */
static void interpret(outcome *o, const or_case *c, const unsigned *order)
{
    for (unsigned l = 0; l < c->launches; l++) {
        for (unsigned i = 0; i < c->nnodes; i++)
            interp_node(o, c, order ? order[i] : i, l);
        if (l + 1 < c->launches && c->between[l].write) {
            const or_between *b = &c->between[l];
            or_access a = {b->handle, b->off, b->size, WEFT_WRITE, 0, 0, 0, 0};

            memcpy(at(o, c, &a), c->src + b->src_off, b->size);
            mark(o, c, &a, l << 24 | 0xffffffu);
        }
    }
}

/* ---- the same case through weft ------------------------------------------ */

typedef struct callback {
    const or_node *node;
    uint32_t *obs;
    size_t got_size; /* what weft passed to a map callback */
} callback;

static void map_cb(void *ptr, size_t size, void *user)
{
    callback *cb = user;

    cb->got_size = size;
    if (size == cb->node->acc[0].size)
        or_host_body(cb->node, &ptr, cb->obs);
}

static void host_cb(void *const *ptrs, void *user)
{
    callback *cb = user;

    or_host_body(cb->node, ptrs, cb->obs);
}

/* Offset of an access relative to the handle it goes through. */
static size_t rel(const or_case *c, const or_access *a)
{
    return a->off - c->handles[a->handle].off;
}

/* Do two accesses touch a common byte? */
static int overlaps_acc(const or_case *c, const or_access *a,
                        const or_access *b)
{
    return or_acc_overlap(c->handles[a->handle].root, a,
                          c->handles[b->handle].root, b);
}

/* An access as weft takes it: its block, origin relative to its handle. */
static weft_block block_of(const or_case *c, const or_access *a)
{
    return weft_block3(rel(c, a), a->size, a->rows, a->slices, a->pitch,
                       a->slices > 1 ? a->spitch : 0);
}

static weft_access_desc desc_of(const or_case *c, weft_buffer *const *buf,
                                const or_access *a)
{
    return a->rows
               ? weft_access_block(buf[a->handle], block_of(c, a), a->mode)
               : weft_access_range(buf[a->handle], rel(c, a), a->size, a->mode);
}

static int add_node(const or_case *c, weft_graph *g, weft_buffer *const *buf,
                    outcome *o, callback *cb, unsigned i)
{
    const or_node *n = &c->nodes[i];
    const or_access *a = n->acc;
    weft_node id = UINT32_MAX;
    int rc = 0;

    switch (n->kind) {
    case OR_KERNEL: {
        weft_arg args[13];
        unsigned na = 0;
        uint32_t items = (uint32_t)(a[0].size / 4);
        weft_dims dims = weft_dims1(items);

        if (n->kernel >= OR_K_BAFFINE) { /* blocks (or ranges) of uint32s */
            unsigned nb = or_kernel_nbufs[n->kernel];
            shape3 y = shape_of(&a[0]), x = shape_of(&a[nb - 1]);

            for (unsigned b = 0; b < nb; b++)
                args[na++] =
                    a[b].rows ? weft_arg_block(buf[a[b].handle],
                                               block_of(c, &a[b]), a[b].mode)
                              : weft_arg_buffer(buf[a[b].handle], rel(c, &a[b]),
                                                a[b].size, a[b].mode);
            items = y.w * y.h * y.d;
            dims = weft_dims1(items);
            args[na++] = weft_arg_u32(items);
            args[na++] = weft_arg_u32(y.w);
            args[na++] = weft_arg_u32(y.h);
            args[na++] = weft_arg_u32(y.p);
            args[na++] = weft_arg_u32(y.s);
            if (n->kernel == OR_K_BAFFINE)
                args[na++] = weft_arg_u32(n->mul);
            if (n->kernel == OR_K_BGATHER) {
                args[na++] = weft_arg_u32(x.w);
                args[na++] = weft_arg_u32(x.h);
                args[na++] = weft_arg_u32(x.p);
                args[na++] = weft_arg_u32(x.s);
                args[na++] = weft_arg_u32(x.w * x.h * x.d);
            }
            args[na++] = weft_arg_u32(n->key);
            goto add;
        }
        for (unsigned b = 0; b < n->nacc; b++)
            args[na++] = weft_arg_buffer(buf[a[b].handle], rel(c, &a[b]),
                                         a[b].size, a[b].mode);
        args[na++] = weft_arg_u32(items);
        if (n->kernel == OR_K_AFFINE)
            args[na++] = weft_arg_u32(n->mul);
        else if (n->kernel != OR_K_SET)
            args[na++] = weft_arg_u32((uint32_t)(a[n->nacc - 1].size / 4));
        args[na++] = weft_arg_u32(n->key);
    add:
        dims.group[0] = n->group;
        rc = weft_graph_add_kernel(g, kernels[n->kernel], dims, args, na, &id);
        if (rc == 0 && n->device >= 0) {
            rc = weft_graph_set_device(
                g, id, weft_runtime_device(rt, (unsigned)n->device));
            if (rc == WEFT_ENOTSUP)
                return 1;
        }
        break;
    }
    case OR_WRITE:
        if (a->rows) {
            weft_block b = block_of(c, a);

            rc = weft_graph_add_write_block(g, buf[a->handle], &b,
                                            c->src + n->host_off, n->hpitch,
                                            n->hspitch, &id);
            break;
        }
        rc = weft_graph_add_write(g, buf[a->handle], rel(c, a),
                                  c->src + n->host_off, a->size, &id);
        break;
    case OR_READ:
        if (a->rows) {
            weft_block b = block_of(c, a);

            rc = weft_graph_add_read_block(g, buf[a->handle], &b,
                                           o->dst + n->host_off, n->hpitch,
                                           n->hspitch, &id);
            break;
        }
        rc = weft_graph_add_read(g, buf[a->handle], rel(c, a),
                                 o->dst + n->host_off, a->size, &id);
        break;
    case OR_COPY:
        if (a[0].rows) {
            weft_block db = block_of(c, &a[0]), sb = block_of(c, &a[1]);

            rc = weft_graph_add_copy_block(g, buf[a[0].handle], &db,
                                           buf[a[1].handle], &sb, &id);
            break;
        }
        rc = weft_graph_add_copy(g, buf[a[0].handle], rel(c, &a[0]),
                                 buf[a[1].handle], rel(c, &a[1]), a[0].size,
                                 &id);
        break;
    case OR_FILL:
        if (a->rows) {
            weft_block b = block_of(c, a);

            rc = weft_graph_add_fill_block(g, buf[a->handle], &b, n->pattern,
                                           n->pattern_size, &id);
            break;
        }
        rc = weft_graph_add_fill(g, buf[a->handle], rel(c, a), a->size,
                                 n->pattern, n->pattern_size, &id);
        break;
    case OR_MAP:
        rc = weft_graph_add_map(g, buf[a->handle], rel(c, a), a->size, a->mode,
                                map_cb, &cb[i], &id);
        break;
    case OR_HOST: {
        weft_access_desc d[OR_MAX_ACC];

        for (unsigned b = 0; b < n->nacc; b++)
            d[b] = desc_of(c, buf, &a[b]);
        rc = weft_graph_add_host(g, host_cb, &cb[i], d, n->nacc, &id);
        break;
    }
    case OR_EMPTY:
        rc = weft_graph_add_empty(g, &id);
        break;
    case OR_NATIVE: {
        weft_access_desc d[OR_MAX_ACC];

        for (unsigned b = 0; b < n->nacc; b++)
            d[b] = desc_of(c, buf, &a[b]);
        rc = weft_graph_add_native(g, or_native_impls, or_native_nimpls, d,
                                   n->nacc, (void *)n, &id);
        if (rc == 0 && n->capture)
            rc = weft_graph_set_native_capture(g, id, 1);
        break;
    }
    }
    if (rc < 0) {
        failf("adding node %u (%s): %s: %s", i, or_kind_name(n->kind),
              weft_err_name(rc), weft_last_error());
        return rc;
    }
    if (id != i) {
        failf("node %u (%s) got index %u", i, or_kind_name(n->kind), id);
        return -1;
    }
    return 0;
}

/* Stats over the whole run. */
typedef struct run_stats {
    unsigned long long nodes, node_runs, edges, launches;
    unsigned long long native;   /* launches that ran a native graph */
    unsigned long long replays;  /* ... of them with no issue */
    unsigned long long unplaced; /* placement refused with WEFT_ENOTSUP */
    unsigned long long kinds[OR_NATIVE + 1];
    unsigned long long blocks, blocks3; /* block accesses; of them 3-D */
} run_stats;
static run_stats stats;

/* Does c place kernel nodes on devices one by one? */
static int placed(const or_case *c)
{
    for (unsigned i = 0; i < c->nnodes; i++)
        if (c->nodes[i].device >= 0)
            return 1;
    return 0;
}

/*
 * Run c through weft into o. 0 on success; -1 with why[] set when a call
 * failed or weft's own views of the result disagree with each other; 1 if
 * weft said WEFT_ENOTSUP to the case's placement of nodes on devices.
 */
static int run_weft(const or_case *c, outcome *o)
{
    weft_buffer *buf[OR_MAX_HANDLES] = {0};
    uint8_t *user[OR_MAX_HANDLES] = {0};
    uint8_t *tmp = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    callback *cb = NULL;
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    size_t largest = 1;
    int ok = -1, rc;

    for (unsigned r = 0; r < c->nroots; r++)
        if (c->handles[r].size > largest)
            largest = c->handles[r].size;
    cb = calloc(c->nnodes + 1, sizeof *cb);
    tmp = malloc(largest);
    if (!cb || !tmp) {
        failf("out of memory");
        goto out;
    }
    for (unsigned i = 0; i < c->nnodes; i++) {
        cb[i].node = &c->nodes[i];
        cb[i].obs = &o->obs[i];
    }
    for (unsigned h = 0; h < c->nhandles; h++) {
        const or_handle *hd = &c->handles[h];

        if (hd->parent >= 0) {
            const or_handle *p = &c->handles[hd->parent];

            WEFT_CHECK(weft_buffer_view(buf[hd->parent], hd->off - p->off,
                                        hd->size, &buf[h]));
        } else if (hd->wrapped) {
            user[h] = malloc(hd->size);
            if (!user[h]) {
                failf("out of memory");
                goto out;
            }
            memcpy(user[h], c->init[h], hd->size);
            WEFT_CHECK(weft_buffer_wrap(rt, user[h], hd->size, &buf[h]));
        } else {
            WEFT_CHECK(weft_buffer_create(rt, hd->size, &buf[h]));
            WEFT_CHECK(weft_buffer_write(buf[h], 0, c->init[h], hd->size));
        }
        if (weft_buffer_size(buf[h]) != hd->size) {
            failf("buffer %u: weft_buffer_size says %zu, not %zu", h,
                  weft_buffer_size(buf[h]), hd->size);
            goto out;
        }
    }

    WEFT_CHECK(weft_graph_create(rt, &g));
    for (unsigned i = 0; i < c->nnodes; i++) {
        int added = add_node(c, g, buf, o, cb, i);

        if (added < 0)
            goto out;
        if (added > 0) { /* placement by node: not supported (yet) */
            ok = 1;
            goto out;
        }
    }
    for (unsigned j = 0; j < c->nedges; j++)
        WEFT_CHECK(weft_graph_add_edge(g, c->edges[j].from, c->edges[j].to));
    /* About one node in five of high priority (issued earlier, on a lane
     * of its own): the result must not change. */
    for (unsigned i = 0; i < c->nnodes; i++) {
        uint64_t h = (c->seed + i + 1) * 0x9e3779b97f4a7c15ull;

        if ((h >> 59) % 6 == 0)
            WEFT_CHECK(weft_graph_set_priority(g, i, WEFT_PRIORITY_HIGH));
    }
    if (weft_graph_node_count(g) != c->nnodes) {
        failf("weft_graph_node_count: %u, not %u", weft_graph_node_count(g),
              c->nnodes);
        goto out;
    }
    stats.edges += weft_graph_edge_count(g);
    if (opt.dot) {
        FILE *f = fopen(opt.dot, "w");

        if (!f) {
            failf("cannot write %s", opt.dot);
            goto out;
        }
        rc = weft_graph_write_dot(g, f);
        fclose(f);
        WEFT_CHECK(rc);
    }
    if (c->exec_device >= 0)
        eo.device = weft_runtime_device(rt, (unsigned)c->exec_device);
    rc = weft_graph_instantiate(g, &eo, &e);
    if (rc == WEFT_ENOTSUP && placed(c)) {
        ok = 1;
        goto out;
    }
    WEFT_CHECK(rc);
    if (c->destroy_graph) { /* the executable graph must not need it */
        WEFT_CHECK(weft_graph_destroy(g));
        g = NULL;
    }

    for (unsigned l = 0; l < c->launches; l++) {
        const or_between *b = &c->between[l];

        WEFT_CHECK(weft_exec_launch(e));
        stats.launches++;
        if (l + 1 == c->launches)
            break;
        if (b->wait_first)
            WEFT_CHECK(weft_exec_wait(e));
        /* without the wait, the write itself must wait for the launch */
        if (b->write)
            WEFT_CHECK(weft_buffer_write(buf[b->handle],
                                         b->off - c->handles[b->handle].off,
                                         c->src + b->src_off, b->size));
    }
    WEFT_CHECK(weft_exec_wait(e));
    WEFT_CHECK(weft_exec_status(e));
    for (unsigned i = 0; i < c->nnodes; i++)
        if (c->nodes[i].kind == OR_MAP &&
            cb[i].got_size != c->nodes[i].acc[0].size) {
            failf("map node %u: the callback got %zu bytes, not %zu", i,
                  cb[i].got_size, c->nodes[i].acc[0].size);
            goto out;
        }

    /* the result, and weft's other ways of showing it, which must agree */
    for (unsigned r = 0; r < c->nroots; r++)
        WEFT_CHECK(
            weft_buffer_read(buf[r], 0, o->roots[r], c->handles[r].size));
    for (unsigned h = c->nroots; h < c->nhandles; h++) {
        const or_handle *hd = &c->handles[h];

        WEFT_CHECK(weft_buffer_read(buf[h], 0, tmp, hd->size));
        if (memcmp(tmp, o->roots[hd->root] + hd->off, hd->size)) {
            failf("view %u reads other bytes than its root %u", h, hd->root);
            goto out;
        }
    }
    {
        weft_exec_stats st = {.size = sizeof st};

        WEFT_CHECK(weft_exec_get_stats(e, &st));
        stats.native += st.native_launches;
        stats.replays += st.native_replays;
    }
    for (unsigned r = 0; r < c->nroots; r++) {
        if (!user[r])
            continue;
        WEFT_CHECK(weft_buffer_sync_host(buf[r]));
        if (memcmp(user[r], o->roots[r], c->handles[r].size)) {
            failf("root %u: user memory after weft_buffer_sync_host differs "
                  "from weft_buffer_read",
                  r);
            goto out;
        }
    }
    WEFT_CHECK(weft_exec_destroy(e));
    e = NULL;
    if (g)
        WEFT_CHECK(weft_graph_destroy(g));
    g = NULL;
    for (unsigned h = c->nhandles; h-- > 0;) {
        WEFT_CHECK(weft_buffer_destroy(buf[h]));
        buf[h] = NULL;
        if (user[h] && memcmp(user[h], o->roots[h], c->handles[h].size)) {
            failf("root %u: user memory after weft_buffer_destroy differs "
                  "from weft_buffer_read",
                  h);
            goto out;
        }
    }
    ok = 0;
out:
    /* after a failure: take down what is left, keeping the first reason */
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    for (unsigned h = c->nhandles; h-- > 0;)
        weft_buffer_destroy(buf[h]);
    for (unsigned h = 0; h < c->nhandles; h++)
        free(user[h]);
    free(cb);
    free(tmp);
    return ok;
}

/* ---- comparing ----------------------------------------------------------- */

static void describe_writer(char *s, size_t n, uint32_t w, const or_case *c)
{
    unsigned node = w & 0xffffffu, launch = w >> 24;

    if (w == 0)
        snprintf(s, n, "the initial bytes");
    else if (node == 0xffffffu)
        snprintf(s, n, "weft_buffer_write after launch %u", launch);
    else
        snprintf(s, n, "node %u (%s) in launch %u", node - 1,
                 or_kind_name(c->nodes[node - 1].kind), launch);
}

static size_t first_diff(const uint8_t *a, const uint8_t *b, size_t n,
                         size_t *count)
{
    size_t first = n;

    *count = 0;
    for (size_t j = 0; j < n; j++)
        if (a[j] != b[j]) {
            if (first == n)
                first = j;
            (*count)++;
        }
    return first;
}

static int compare(const or_case *c, const outcome *got, const outcome *want)
{
    size_t j, count;
    char who[128];

    for (unsigned r = 0; r < c->nroots; r++) {
        j = first_diff(got->roots[r], want->roots[r], c->handles[r].size,
                       &count);
        if (j < c->handles[r].size) {
            describe_writer(who, sizeof who, want->writer[r][j], c);
            failf("root %u byte %zu: weft 0x%02x, expected 0x%02x (%zu bytes "
                  "differ; the expected byte is from %s)",
                  r, j, got->roots[r][j], want->roots[r][j], count, who);
            return -1;
        }
    }
    j = first_diff(got->dst, want->dst, c->dst_size, &count);
    if (j < c->dst_size) {
        unsigned i = 0;

        for (; i < c->nnodes; i++)
            if (c->nodes[i].kind == OR_READ && c->nodes[i].host_off <= j &&
                j < c->nodes[i].host_off + (c->nodes[i].acc[0].rows
                                                ? c->nodes[i].hspan
                                                : c->nodes[i].acc[0].size))
                break;
        failf("read node %u: host byte %zu: weft 0x%02x, expected 0x%02x "
              "(%zu bytes differ)",
              i, j - c->nodes[i].host_off, got->dst[j], want->dst[j], count);
        return -1;
    }
    for (unsigned i = 0; i < c->nnodes; i++)
        if (got->obs[i] != want->obs[i]) {
            failf("%s node %u saw other bytes (checksum 0x%08" PRIx32
                  ", expected 0x%08" PRIx32 ")",
                  or_kind_name(c->nodes[i].kind), i, got->obs[i], want->obs[i]);
            return -1;
        }
    return 0;
}

/* ---- checking the oracle itself ------------------------------------------ */

enum { HAZ_RAW = 1, HAZ_WAR = 2, HAZ_WAW = 4, HAZ_ALL = 7 };

/* Does b, added after a, depend on a through one of the hazards in mask? */
static int hazard(const or_case *c, const or_node *a, const or_node *b,
                  unsigned mask)
{
    for (unsigned x = 0; x < a->nacc; x++)
        for (unsigned y = 0; y < b->nacc; y++) {
            weft_access ma = a->acc[x].mode, mb = b->acc[y].mode;

            if (!overlaps_acc(c, &a->acc[x], &b->acc[y]))
                continue;
            if (((mask & HAZ_RAW) && (ma & WEFT_WRITE) && (mb & WEFT_READ)) ||
                ((mask & HAZ_WAW) && (ma & WEFT_WRITE) && (mb & WEFT_WRITE)) ||
                ((mask & HAZ_WAR) && (ma & WEFT_READ) && (mb & WEFT_WRITE)))
                return 1;
        }
    return 0;
}

/*
 * An order of c's nodes that keeps the explicit edges and the hazards in
 * mask, and otherwise runs late nodes as early as it can: the schedule a
 * scheduler that knew only those dependencies could pick at worst.
 */
static int reorder(const or_case *c, unsigned mask, unsigned *order)
{
    unsigned n = c->nnodes;
    uint8_t *dep = calloc((size_t)n * n + 1, 1);
    unsigned *indeg = calloc(n + 1, sizeof *indeg);
    uint8_t *done = calloc(n + 1, 1);

    if (!dep || !indeg || !done) {
        free(dep);
        free(indeg);
        free(done);
        return -1;
    }
    for (unsigned e = 0; e < c->nedges; e++)
        dep[(size_t)c->edges[e].from * n + c->edges[e].to] = 1;
    for (unsigned j = 0; j < n; j++)
        for (unsigned i = j + 1; i < n; i++)
            if (!dep[(size_t)j * n + i] &&
                hazard(c, &c->nodes[j], &c->nodes[i], mask))
                dep[(size_t)j * n + i] = 1;
    for (unsigned j = 0; j < n; j++)
        for (unsigned i = j + 1; i < n; i++)
            indeg[i] += dep[(size_t)j * n + i];
    for (unsigned step = 0; step < n; step++) {
        unsigned pick = n;

        for (unsigned i = n; i-- > 0;)
            if (!done[i] && indeg[i] == 0) {
                pick = i;
                break;
            }
        /* edges only go forward, so some node is always ready */
        order[step] = pick;
        done[pick] = 1;
        for (unsigned i = pick + 1; i < n; i++)
            indeg[i] -= dep[(size_t)pick * n + i];
    }
    free(dep);
    free(indeg);
    free(done);
    return 0;
}

/*
 * or_acc_overlap against the bytes themselves, for the accesses of nearby
 * nodes among the first 40 of c: 0 if it agrees everywhere.
 */
static int check_overlap(const or_case *c)
{
    size_t largest = 1;
    uint32_t *stamp;
    uint32_t now = 0;
    int bad = 0;

    for (unsigned r = 0; r < c->nroots; r++)
        if (c->handles[r].size > largest)
            largest = c->handles[r].size;
    stamp = calloc(largest, sizeof *stamp);
    if (!stamp)
        return -1;
    for (unsigned i = 0; i < c->nnodes && i < 40; i++)
        for (unsigned j = i; j < c->nnodes && j < i + 8; j++)
            for (unsigned x = 0; x < c->nodes[i].nacc; x++)
                for (unsigned y = 0; y < c->nodes[j].nacc; y++) {
                    const or_access *a = &c->nodes[i].acc[x];
                    const or_access *b = &c->nodes[j].acc[y];
                    int meet = 0;

                    now++;
                    for (size_t k = 0; k < or_acc_runs(a); k++)
                        for (size_t z = 0; z < a->size; z++)
                            stamp[or_acc_run(a, k) + z] = now;
                    if (c->handles[a->handle].root ==
                        c->handles[b->handle].root)
                        for (size_t k = 0; k < or_acc_runs(b) && !meet; k++)
                            for (size_t z = 0; z < b->size; z++)
                                meet |= stamp[or_acc_run(b, k) + z] == now;
                    if (meet != overlaps_acc(c, a, b)) {
                        printf("FAIL seed %" PRIu64 ": nodes %u and %u: "
                               "or_acc_overlap says %d\n",
                               c->seed, i, j, !meet);
                        bad = 1;
                    }
                    /* stamps stay below any later value: no clearing */
                }
    free(stamp);
    return bad;
}

/*
 * --self-check: no weft at all. For each case, a legal reordering must
 * give the sequential result (else the generator made nodes that interact
 * without an access saying so), and an order that drops the WAR (or RAW,
 * or WAW) dependencies must change the result of most cases: that is how
 * likely the oracle is to catch a scheduler that drops them.
 */
static int self_check(void)
{
    static const struct {
        unsigned drop;
        const char *name;
    } kinds[] = {{HAZ_WAR, "WAR"}, {HAZ_RAW, "RAW"}, {HAZ_WAW, "WAW"}};
    unsigned caught[3] = {0}, bad = 0;

    limits.align = 128; /* the strictest device the generator meets */
    limits.max_group = 1024;
    limits.ndevices = 2;
    for (unsigned gi = 0; gi < opt.graphs; gi++) {
        or_case c;
        outcome seq, re;
        unsigned *order;

        if (or_case_generate(&c, opt.seed + gi, &limits) < 0)
            return 1;
        if (opt.dump)
            or_case_dump(&c, stdout);
        if (limits.blocks && check_overlap(&c) != 0)
            bad++;
        order = calloc(c.nnodes + 1, sizeof *order);
        if (!order || outcome_alloc(&seq, &c, 1) < 0)
            return 1;
        interpret(&seq, &c, NULL);
        for (int k = -1; k < 3; k++) {
            unsigned mask = k < 0 ? HAZ_ALL : HAZ_ALL & ~kinds[k].drop;
            int differs;

            if (reorder(&c, mask, order) < 0 || outcome_alloc(&re, &c, 0) < 0)
                return 1;
            interpret(&re, &c, order);
            why[0] = '\0';
            differs = compare(&c, &re, &seq) < 0;
            outcome_free(&re);
            if (k < 0 && differs) {
                printf("FAIL seed %" PRIu64 ": a legal order differs: %s\n",
                       c.seed, why);
                bad++;
            } else if (k >= 0) {
                caught[k] += differs;
            }
        }
        outcome_free(&seq);
        free(order);
        or_case_free(&c);
    }
    printf("oracle --self-check: %u graphs; a legal reordering changed %u; ",
           opt.graphs, bad);
    for (unsigned k = 0; k < 3; k++) {
        unsigned pct = opt.graphs ? caught[k] * 100 / opt.graphs : 0;

        printf("%s%s dropped: %u%% caught", k ? ", " : "", kinds[k].name, pct);
        /* far below what the generator achieves, far above chance */
        if (pct < 75)
            bad++;
    }
    printf("\n");
    return bad ? 1 : 0;
}

/* ---- driving ------------------------------------------------------------- */

/* Keep the first k nodes of c and the edges among them. */
static void truncate_case(or_case *c, unsigned k)
{
    unsigned ne = 0;

    if (k >= c->nnodes)
        return;
    c->nnodes = k;
    for (unsigned e = 0; e < c->nedges; e++)
        if (c->edges[e].to < k)
            c->edges[ne++] = c->edges[e];
    c->nedges = ne;
}

/*
 * 1 if c fails (why[] says how), 0 if it passes, -1 out of memory. A case
 * whose placement of nodes weft does not support runs again without it:
 * placement changes where nodes run, never what they compute.
 */
static int check_case(or_case *c)
{
    outcome got, want;
    int rc;

    why[0] = '\0';
    if (outcome_alloc(&got, c, 0) < 0 || outcome_alloc(&want, c, 1) < 0) {
        rc = -1;
        goto out;
    }
    interpret(&want, c, NULL);
    rc = run_weft(c, &got);
    if (rc == 1) {
        stats.unplaced++;
        for (unsigned i = 0; i < c->nnodes; i++)
            c->nodes[i].device = -1;
        outcome_free(&got);
        if (outcome_alloc(&got, c, 0) < 0) {
            rc = -1;
            goto out;
        }
        rc = run_weft(c, &got);
    }
    rc = rc < 0 || compare(c, &got, &want) < 0;
out:
    outcome_free(&got);
    outcome_free(&want);
    return rc;
}

/*
 * The shortest prefix of c that still fails, by bisection: a failure that
 * needs node k shows up in every prefix that contains k and what k
 * depends on, which is usually all of them. Each probe runs twice, since
 * a race need not strike every time.
 */
/*
 * opt.relaunch launches more that repeat the last one (no write between, a
 * wait before every other one): what native graphs replay, once the first
 * (timed) launches are over.
 */
static void add_relaunches(or_case *c)
{
    for (unsigned r = 0; r < opt.relaunch; r++) {
        or_between *b = &c->between[c->launches - 1];

        memset(b, 0, sizeof *b);
        b->wait_first = r % 2 == 0;
        c->launches++;
    }
}

static unsigned shrink(const or_case *whole, uint64_t seed)
{
    unsigned lo = 0, hi = whole->nnodes;

    while (hi - lo > 1) {
        unsigned mid = lo + (hi - lo) / 2;
        int fails = 0;

        for (int t = 0; t < 2 && !fails; t++) {
            or_case c;

            if (or_case_generate(&c, seed, &limits) < 0)
                return hi;
            truncate_case(&c, mid);
            add_relaunches(&c);
            fails = check_case(&c) == 1;
            or_case_free(&c);
        }
        if (fails)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}

static void usage(void)
{
    fprintf(stderr, "usage: oracle [--seed S] [--graphs N] [--prefix K] "
                    "[--max-fail N] [--dump] [--self-check] [--dot FILE] "
                    "[--no-shrink] [--quiet] [--relaunch N] "
                    "[--min-native N] [--native-nodes PERCENT] "
                    "[--capture-native PERCENT] [--device-only] "
                    "[--kernels-host] "
                    "[--portable-only] [--blocks] [--range-kernels]\n");
    exit(2);
}

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v ? v : "";
}

/* portable_only: the portable source alone (host and sim compile it). */
static int portable_only;

static int open_kernels(void)
{
    const weft_module_source variants[] = {
        {WEFT_SOURCE_HOST, or_host_kernels, OR_K_COUNT, NULL, "oracle (C)"},
        {WEFT_SOURCE_PORTABLE, or_portable_source, 0, NULL,
         "oracle (portable)"},
    };
    int rc = portable_only ? weft_module_create(rt, &variants[1], 1, &module)
                           : weft_module_create(rt, variants, 2, &module);

    for (unsigned k = 0; rc == 0 && k < OR_K_COUNT; k++)
        rc = weft_module_get_kernel(module, or_kernel_names[k], &kernels[k]);
    if (rc < 0) {
        fprintf(stderr, "oracle: kernels: %s: %s\n", weft_err_name(rc),
                weft_last_error());
        return -1;
    }
    return 0;
}

static int open_limits(void)
{
    limits.align = 4;
    limits.max_group = 1024;
    limits.ndevices = weft_runtime_device_count(rt);
    for (unsigned i = 0; i < limits.ndevices; i++) {
        weft_device_info info;
        int rc;

        memset(&info, 0, sizeof info);
        info.size = sizeof info;
        rc = weft_device_get_info(weft_runtime_device(rt, i), &info);

        if (rc < 0) {
            fprintf(stderr, "oracle: device %u: %s: %s\n", i, weft_err_name(rc),
                    weft_last_error());
            return -1;
        }
        if (info.arg_offset_align > limits.align)
            limits.align = info.arg_offset_align;
        if (info.max_group_size && info.max_group_size < limits.max_group)
            limits.max_group = info.max_group_size;
        if (!opt.quiet)
            printf("# device %u: %s %s, kernel offsets aligned to %u\n", i,
                   info.driver, info.name, info.arg_offset_align);
    }
    return 0;
}

int main(int argc, char **argv)
{
    wt_devices d;
    unsigned failed = 0, ran = 0;
    struct timespec t0, t1;

    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            opt.seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--graphs") && i + 1 < argc)
            opt.graphs = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--prefix") && i + 1 < argc)
            opt.prefix = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--max-fail") && i + 1 < argc)
            opt.max_fail = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--dot") && i + 1 < argc)
            opt.dot = argv[++i];
        else if (!strcmp(argv[i], "--relaunch") && i + 1 < argc)
            opt.relaunch = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--min-native") && i + 1 < argc)
            opt.min_native = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--native-nodes") && i + 1 < argc)
            limits.native = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--capture-native") && i + 1 < argc)
            limits.capture = (unsigned)strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--device-only"))
            limits.device_only = 1;
        else if (!strcmp(argv[i], "--kernels-host"))
            limits.kernels_host = 1;
        else if (!strcmp(argv[i], "--portable-only"))
            portable_only = 1;
        else if (!strcmp(argv[i], "--blocks"))
            limits.blocks = 1;
        else if (!strcmp(argv[i], "--range-kernels"))
            limits.range_kernels = 1;
        else if (!strcmp(argv[i], "--dump"))
            opt.dump = 1;
        else if (!strcmp(argv[i], "--no-shrink"))
            opt.shrink = 0;
        else if (!strcmp(argv[i], "--quiet"))
            opt.quiet = 1;
        else if (!strcmp(argv[i], "--self-check"))
            opt.self_check = 1;
        else
            usage();
    }

    /*
     * WT_ORACLE_SCALE (the thread-sanitizer build sets 0.25, the
     * address-sanitizer build 0.5): that share of the graphs, and of the
     * native launches required, so that the slow builds keep to their time.
     */
    if (getenv("WT_ORACLE_SCALE")) {
        double k = strtod(getenv("WT_ORACLE_SCALE"), NULL);

        if (k > 0 && k < 1) {
            opt.graphs = opt.graphs * k >= 1 ? (unsigned)(opt.graphs * k) : 1;
            opt.min_native = (unsigned)(opt.min_native * k);
        }
    }
    if (opt.relaunch > OR_MAX_LAUNCHES - OR_GEN_LAUNCHES) {
        fprintf(stderr, "oracle: --relaunch takes at most %d\n",
                OR_MAX_LAUNCHES - OR_GEN_LAUNCHES);
        return 2;
    }
    if (opt.self_check)
        return self_check();
    wt_devices_open(&d); /* exits 77 when the selection has no device */
    rt = d.rt;
    if (open_limits() < 0 || open_kernels() < 0)
        return 1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned gi = 0; gi < opt.graphs; gi++) {
        uint64_t seed = opt.seed + gi;
        or_case c;
        int rc;

        if (or_case_generate(&c, seed, &limits) < 0) {
            fprintf(stderr, "oracle: out of memory\n");
            return 1;
        }
        if (opt.prefix)
            truncate_case(&c, opt.prefix);
        add_relaunches(&c);
        if (opt.dump)
            or_case_dump(&c, stdout);
        rc = check_case(&c);
        ran++;
        stats.nodes += c.nnodes;
        stats.node_runs += (unsigned long long)c.nnodes * c.launches;
        for (unsigned i = 0; i < c.nnodes; i++) {
            stats.kinds[c.nodes[i].kind]++;
            for (unsigned a = 0; a < c.nodes[i].nacc; a++) {
                stats.blocks += c.nodes[i].acc[a].rows > 0;
                stats.blocks3 +=
                    c.nodes[i].acc[a].rows > 0 && c.nodes[i].acc[a].slices > 1;
            }
        }
        if (rc < 0) {
            fprintf(stderr, "oracle: out of memory\n");
            return 1;
        }
        if (rc) {
            char first[sizeof why];

            failed++;
            memcpy(first, why, sizeof why);
            printf("FAIL seed %" PRIu64 " (%u nodes, %u launches): %s\n"
                   "  replay: WEFT_DEVICES='%s' WEFT_SIM='%s' "
                   "POCL_DEVICES='%s' oracle --seed %" PRIu64
                   " --graphs 1 --relaunch %u --native-nodes %u "
                   "--capture-native %u%s%s%s%s%s --dump\n",
                   seed, c.nnodes, c.launches, first, env("WEFT_DEVICES"),
                   env("WEFT_SIM"), env("POCL_DEVICES"), seed, opt.relaunch,
                   limits.native, limits.capture,
                   limits.device_only ? " --device-only" : "",
                   limits.kernels_host ? " --kernels-host" : "",
                   portable_only ? " --portable-only" : "",
                   limits.blocks ? " --blocks" : "",
                   limits.range_kernels ? " --range-kernels" : "");
            if (opt.shrink && failed <= 3 && !opt.prefix) {
                run_stats before = stats; /* probes don't count */
                unsigned k = shrink(&c, seed);

                stats = before;
                printf("  the first %u nodes fail too: add --prefix %u\n", k,
                       k);
            }
            fflush(stdout);
        }
        or_case_free(&c);
        if (failed >= opt.max_fail) {
            printf("oracle: stopping after %u failures\n", failed);
            break;
        }
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("oracle: %u graphs, %llu nodes (%llu kernel, %llu write, %llu "
           "read, %llu copy, %llu fill, %llu map, %llu host, %llu empty, "
           "%llu native), %llu block accesses (%llu 3-D), "
           "%llu edges kept, %llu launches, %llu node runs on %u device(s) "
           "[%s] in %.2f s (%llu cases without their per-node placement: "
           "WEFT_ENOTSUP), %llu native graph launches (%llu replays): %u "
           "failed\n",
           ran, stats.nodes, stats.kinds[OR_KERNEL], stats.kinds[OR_WRITE],
           stats.kinds[OR_READ], stats.kinds[OR_COPY], stats.kinds[OR_FILL],
           stats.kinds[OR_MAP], stats.kinds[OR_HOST], stats.kinds[OR_EMPTY],
           stats.kinds[OR_NATIVE], stats.blocks, stats.blocks3, stats.edges,
           stats.launches, stats.node_runs, limits.ndevices, d.selection,
           (double)(t1.tv_sec - t0.tv_sec) +
               (double)(t1.tv_nsec - t0.tv_nsec) / 1e9,
           stats.unplaced, stats.native, stats.replays, failed);
    if (weft_module_destroy(module) < 0) {
        fprintf(stderr, "oracle: weft_module_destroy: %s\n", weft_last_error());
        return 1;
    }
    /* The sim's check (WEFT_SIM=check=1): work on the same bytes that
     * nothing ordered, whatever the bytes came out as. */
    {
        weft_device_info info = {.size = sizeof info};
        uint64_t hazards = 0;

        for (unsigned i = 0; i < d.n; i++)
            if (weft_device_get_info(weft_runtime_device(d.rt, i), &info) ==
                    0 &&
                info.type == WEFT_DEVICE_SIMULATED) {
                hazards = weft__sim_hazards(wt_device(&d, i));
                break; /* one platform: its count */
            }
        if (hazards) {
            printf("oracle: the sim saw %llu hazards (operations on the "
                   "same bytes that nothing ordered)\n",
                   (unsigned long long)hazards);
            failed++;
        }
    }
    wt_devices_close(&d);
    if (!failed && stats.native < opt.min_native) {
        printf("oracle: %llu native graph launches, fewer than the %u "
               "asked for (--min-native)\n",
               stats.native, opt.min_native);
        return 1;
    }
    return failed ? 1 : 0;
}
