/*
 * The graph object: its lifetime and counts, the names of its nodes in
 * messages, kernel arguments, nodes of ranges (kernels, transfers, fills,
 * maps, empty nodes), explicit edges and node settings. Inference is in
 * infer.c, block transfers, host tasks and native nodes in nodes.c.
 */
#include "graph_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

const char *weft__hazard_name(weft__hazard h)
{
    switch (h) {
    case WEFT__RAW:
        return "RAW";
    case WEFT__WAR:
        return "WAR";
    case WEFT__WAW:
        return "WAW";
    case WEFT__EXPLICIT:
        break;
    }
    return "explicit";
}

/* Here, not in module.c: graphs and the scheduler name kernels. */
const char *weft_kernel_name(const weft_kernel *k)
{
    return k ? k->name : NULL;
}

const char *weft__node_label(const weft__node *n, char *buf, size_t size)
{
    static const char *const names[] = {
        "?",    "kernel", "write", "read",  "copy",
        "fill", "map",    "host",  "empty", "native",
    };

    if (n->kind == WEFT__NODE_KERNEL)
        snprintf(buf, size, "kernel %s", weft_kernel_name(n->u.kernel.k));
    else if (n->kind == WEFT__NODE_NATIVE && n->u.native.what)
        snprintf(buf, size, "event %s",
                 n->u.native.what == WEFT__NATIVE_WAIT ? "wait" : "record");
    else
        snprintf(buf, size, "%s", names[n->kind]);
    return buf;
}

int weft__node_error(int code, const weft__node *nodes, uint32_t i,
                     const char *fmt, ...)
{
    char label[128], msg[768];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return weft__error(code, "node %u (%s): %s", i,
                       weft__node_label(&nodes[i], label, sizeof label), msg);
}

/* ---- create / destroy / counts ----------------------------------------- */

int weft_graph_create(weft_runtime *rt, weft_graph **out)
{
    weft_graph *g;

    if (!rt || !out)
        return weft__error(WEFT_EINVAL, "weft_graph_create: %s is NULL",
                           rt ? "result" : "runtime");
    g = weft__calloc(1, sizeof *g);
    if (!g)
        return weft__error(WEFT_ENOMEM, "weft_graph_create: out of memory");
    g->rt = rt;
    weft__runtime_live(rt, 1);
    *out = g;
    return 0;
}

/* (Instantiates of one graph may run at once: the share is made once.) */
weft__graph_share *weft__graph_share_take(weft_graph *g)
{
    weft__graph_share *s = __atomic_load_n(&g->share, __ATOMIC_ACQUIRE);

    if (!s) {
        weft__graph_share *none = NULL;

        if (!(s = weft__malloc(sizeof *s)))
            return NULL;
        s->refs = 1; /* the graph's */
        s->nodes = g->nodes;
        s->acc = g->acc;
        s->raws = g->raws;
        s->runs = g->runs;
        if (!__atomic_compare_exchange_n(&g->share, &none, s, 0,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            weft__free(s);
            s = none;
        }
    }
    __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
    return s;
}

void weft__graph_share_drop(weft__graph_share *s)
{
    if (!s || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL))
        return;
    weft__free(s->nodes);
    weft__free(s->acc);
    weft__free(s->raws);
    weft__free(s->runs);
    weft__free(s);
}

int weft__graph_unshare(weft_graph *g)
{
    weft__node *nodes;
    weft__access *acc;
    weft__raw *raws;
    weft__acc_run *runs;

    if (!g->share)
        return 0;
    /* No executable graph holds them any more: they are the graph's. */
    if (__atomic_load_n(&g->share->refs, __ATOMIC_ACQUIRE) == 1) {
        weft__free(g->share);
        g->share = NULL;
        return 0;
    }
    nodes = weft__malloc((g->cap_nodes ? g->cap_nodes : 1) * sizeof *nodes);
    acc = weft__malloc((g->cap_acc ? g->cap_acc : 1) * sizeof *acc);
    raws = weft__malloc((g->cap_raws ? g->cap_raws : 1) * sizeof *raws);
    runs = weft__malloc((g->cap_runs ? g->cap_runs : 1) * sizeof *runs);
    if (!nodes || !acc || !raws || !runs) {
        weft__free(nodes);
        weft__free(acc);
        weft__free(raws);
        weft__free(runs);
        return weft__error(WEFT_ENOMEM, "graph: out of memory");
    }
    if (g->nnodes)
        memcpy(nodes, g->nodes, (size_t)g->nnodes * sizeof *nodes);
    if (g->nacc)
        memcpy(acc, g->acc, (size_t)g->nacc * sizeof *acc);
    if (g->nraws)
        memcpy(raws, g->raws, (size_t)g->nraws * sizeof *raws);
    if (g->nruns)
        memcpy(runs, g->runs, (size_t)g->nruns * sizeof *runs);
    g->nodes = nodes;
    g->acc = acc;
    g->raws = raws;
    g->runs = runs;
    weft__graph_share_drop(g->share);
    g->share = NULL;
    return 0;
}

int weft_graph_destroy(weft_graph *g)
{
    if (!g)
        return 0;
    /* What the graph names may be destroyed once it has gone. */
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].kind == WEFT__NODE_KERNEL)
            weft__kernel_ref(&g->nodes[i].u.kernel.k->graph_nodes, -1);
    for (uint32_t i = 0; i < g->nruns; i++)
        weft__buffer_graph_ref(g->runs[i].buf, -(long)g->runs[i].n);
    for (uint32_t i = 0; i < g->nroots; i++)
        weft__bandmap_fini(&g->roots[i].deps);
    if (g->share) {
        weft__graph_share_drop(g->share); /* executable graphs read them */
    } else {
        weft__free(g->nodes);
        weft__free(g->acc);
        weft__free(g->raws);
        weft__free(g->runs);
    }
    weft__free(g->marks);
    weft__free(g->args);
    weft__free(g->bytes);
    weft__free(g->edges);
    weft__free(g->edge_from);
    weft__free(g->in_first);
    weft__free(g->xedges);
    weft__free(g->roots);
    weft__map_fini(&g->root_index);
    weft__free(g->readers);
    weft__free(g->cands);
    weft__free(g->rawtmp);
    weft__free(g->stack);
    weft__runtime_live(g->rt, -1);
    weft__free(g);
    return 0;
}

unsigned weft_graph_node_count(const weft_graph *g)
{
    return g ? g->nnodes : 0;
}

unsigned weft_graph_edge_count(const weft_graph *g)
{
    return g ? g->nedges + g->nxedges : 0;
}

/* ---- arguments --------------------------------------------------------- */

/* What every argument must be, whatever the kernel (the add-time check). */
static int weft__args_basic(const weft_arg *args, unsigned nargs,
                            size_t *nbytes, unsigned *nbuffers)
{
    *nbytes = 0;
    *nbuffers = 0;
    for (unsigned i = 0; i < nargs; i++) {
        const weft_arg *a = &args[i];
        size_t want;

        switch (a->type) {
        case WEFT_PARAM_BUFFER:
            if (!a->buffer)
                return weft__error(WEFT_EINVAL, "argument %u: buffer is NULL",
                                   i);
            if (a->access < WEFT_READ || a->access > WEFT_READ_WRITE)
                return weft__error(WEFT_EINVAL,
                                   "argument %u: unknown access mode %d", i,
                                   (int)a->access);
            ++*nbuffers;
            break;
        case WEFT_PARAM_LOCAL:
            if (a->size == 0)
                return weft__error(WEFT_EARGS,
                                   "argument %u: local scratch of 0 bytes", i);
            break;
        case WEFT_PARAM_BYTES:
            if (a->size == 0)
                return weft__error(WEFT_EARGS, "argument %u: bytes of size 0",
                                   i);
            if (!a->value.bytes)
                return weft__error(WEFT_EINVAL,
                                   "argument %u: bytes pointer is NULL", i);
            if (a->size > SIZE_MAX / 4 - *nbytes)
                return weft__error(WEFT_EARGS, "argument %u: %zu bytes", i,
                                   a->size);
            *nbytes += a->size;
            break;
        case WEFT_PARAM_I32:
        case WEFT_PARAM_U32:
        case WEFT_PARAM_I64:
        case WEFT_PARAM_U64:
        case WEFT_PARAM_F32:
        case WEFT_PARAM_F64:
            want = weft_param_type_size(a->type);
            if (a->size != want)
                return weft__error(WEFT_EARGS,
                                   "argument %u is %s but has %zu bytes", i,
                                   weft_param_type_name(a->type), a->size);
            break;
        default:
            return weft__error(WEFT_EARGS, "argument %u has unknown type %d", i,
                               (int)a->type);
        }
    }
    return 0;
}

/* The bytes and buffers of arguments that weft__args_basic accepted. */
static void weft__args_count(const weft_arg *args, unsigned nargs,
                             size_t *nbytes, unsigned *nbuffers)
{
    *nbytes = 0;
    *nbuffers = 0;
    for (unsigned i = 0; i < nargs; i++)
        if (args[i].type == WEFT_PARAM_BUFFER)
            ++*nbuffers;
        else if (args[i].type == WEFT_PARAM_BYTES)
            *nbytes += args[i].size;
}

/*
 * The arguments against an implementation's parameter list, by the rules
 * of the driver layer's launch check: buffer-ness, local-ness, sizes, and
 * where the parameter types are known a scalar parameter takes an argument
 * of its own type only (an f32 is not a u32, whatever their sizes).
 */
int weft__args_match(const weft_kernel *k, const weft__kernel *impl,
                     const weft_arg *args, unsigned nargs)
{
    const char *name = weft_kernel_name(k);

    if (!impl || (!impl->params_known && !impl->count_known))
        return 0;
    if (nargs != impl->nparams)
        return weft__error(WEFT_EARGS, "%u arguments given, kernel %s takes %u",
                           nargs, name, impl->nparams);
    if (!impl->params_known)
        return 0;
    for (unsigned i = 0; i < nargs; i++) {
        const weft_arg *a = &args[i];
        size_t want;

        if (impl->params) {
            weft_param_type p = impl->params[i];

            if ((p == WEFT_PARAM_BUFFER) != (a->type == WEFT_PARAM_BUFFER) ||
                (p == WEFT_PARAM_LOCAL) != (a->type == WEFT_PARAM_LOCAL))
                return weft__error(WEFT_EARGS,
                                   "argument %u is a %s, parameter %u of %s a "
                                   "%s",
                                   i, weft_param_type_name(a->type), i, name,
                                   weft_param_type_name(p));
            if (p == WEFT_PARAM_BUFFER || p == WEFT_PARAM_LOCAL)
                continue;
            if (p != WEFT_PARAM_BYTES && a->type != p)
                return weft__error(WEFT_EARGS,
                                   "argument %u is %s, parameter %u of %s "
                                   "takes %s",
                                   i, weft_param_type_name(a->type), i, name,
                                   weft_param_type_name(p));
            want = p == WEFT_PARAM_BYTES && impl->param_sizes
                       ? impl->param_sizes[i]
                       : weft_param_type_size(p);
            if (want && a->size != want)
                return weft__error(WEFT_EARGS,
                                   "argument %u has %zu bytes, parameter %u "
                                   "of %s (%s) %zu",
                                   i, a->size, i, name, weft_param_type_name(p),
                                   want);
        } else if (impl->param_sizes) {
            want = impl->param_sizes[i];
            if (a->type == WEFT_PARAM_LOCAL)
                continue;
            if ((a->type == WEFT_PARAM_BUFFER ? sizeof(uint64_t) : a->size) !=
                want)
                return weft__error(WEFT_EARGS,
                                   "argument %u (%s) does not fit parameter %u "
                                   "of %s (%zu bytes)",
                                   i, weft_param_type_name(a->type), i, name,
                                   want);
        }
    }
    return 0;
}

/* The first implementation of k whose parameters are known, or NULL. */
static const weft__kernel *weft__known_impl(const weft_graph *g,
                                            const weft_kernel *k)
{
    for (unsigned i = 0; i < g->rt->ndevices; i++) {
        const weft__kernel *impl = weft__kernel_impl(k, i);

        if (impl && impl->params_known)
            return impl;
    }
    return NULL;
}

/* ---- adding nodes ------------------------------------------------------ */

int weft__check_graph(const weft_graph *g, const char *fn)
{
    if (!g)
        return weft__error(WEFT_EINVAL, "%s: graph is NULL", fn);
    return 0;
}

/*
 * The prefix of every add error past the graph check: the function and the
 * node it would have been, by kind only (no node of that index exists).
 */
int weft__add_error(const char *fn, weft__node_kind kind, const weft_kernel *k,
                    int rc)
{
    weft__node n;
    char label[128];

    memset(&n, 0, sizeof n);
    n.kind = kind;
    n.u.kernel.k = (weft_kernel *)k;
    return weft__error_prefix(rc, "%s: the node being added (%s)", fn,
                              weft__node_label(&n, label, sizeof label));
}

/*
 * Buffer b as an access of a node of g, called what in messages: not NULL,
 * of g's runtime, and [off, off + size) inside it (WEFT_WHOLE: from off to
 * its end, off at most its size). WEFT_EINVAL or WEFT_ERANGE.
 */
int weft__buffer_arg(const weft_graph *g, const weft_buffer *b, size_t off,
                     size_t size, const char *what)
{
    char desc[96];

    if (weft__buffer_arg_ok(g, b, off, size))
        return 0;
    if (!b)
        return weft__error(WEFT_EINVAL, "%s: buffer is NULL", what);
    if (b->rt != g->rt)
        return weft__error(WEFT_EINVAL,
                           "%s: the buffer belongs to another runtime than "
                           "the graph",
                           what);
    weft__buffer_describe(b, desc, sizeof desc);
    if (off > b->size)
        return weft__error(WEFT_ERANGE, "%s: offset %zu is past the end of %s",
                           what, off, desc);
    return weft__error(WEFT_ERANGE, "%s: range [%zu, %zu + %zu) is outside %s",
                       what, off, off, size, desc);
}

static weft__access weft__access_make(weft_buffer *b, size_t off, size_t size,
                                      weft_access mode)
{
    weft__access a = {b, off, size, 0, mode, 1, 1, 0, 0};

    if (size == WEFT_WHOLE && off <= b->size)
        a.size = b->size - off;
    return a;
}

/*
 * A block as an access (checked by weft__block_arg); rows 0 or one row of
 * one slice: the range [origin, + row_bytes).
 */
weft__access weft__access_block_make(weft_buffer *b, size_t origin,
                                     size_t row_bytes, size_t rows,
                                     size_t slices, size_t row_pitch,
                                     size_t slice_pitch, weft_access mode)
{
    weft__access a = weft__access_make(b, origin, row_bytes, mode);

    if (rows == 0 || (rows == 1 && slices == 1))
        return a;
    a.rows = rows;
    a.slices = slices;
    a.row_pitch = row_pitch;
    a.slice_pitch = slices > 1 ? slice_pitch : 0;
    return a;
}

/*
 * The block (origin, row_bytes, rows, slices, row_pitch, slice_pitch) of
 * b, named what in messages, by weft_block's rules: b as for
 * weft__buffer_arg, then WEFT_EINVAL naming the field and its value, or
 * WEFT_ERANGE where its last byte is past b's end. One row of one slice is
 * the range [origin, + row_bytes), its pitches not looked at.
 */
int weft__block_arg(const weft_graph *g, const weft_buffer *b, size_t origin,
                    size_t row_bytes, size_t rows, size_t slices,
                    size_t row_pitch, size_t slice_pitch, const char *what)
{
    size_t a = 0, c = 0, end = 0;
    char desc[96];
    int rc;

    if ((rc = weft__buffer_arg(g, b, 0, 0, what)) < 0)
        return rc;
    if (row_bytes == 0)
        return weft__error(WEFT_EINVAL,
                           "%s: row_bytes is 0 (a block's rows "
                           "have at least one byte)",
                           what);
    if (rows == 0)
        return weft__error(WEFT_EINVAL, "%s: rows is 0", what);
    if (slices == 0)
        return weft__error(WEFT_EINVAL, "%s: slices is 0", what);
    if (rows == 1 && slices == 1)
        return weft__buffer_arg(g, b, origin, row_bytes, what);
    if (row_pitch < row_bytes)
        return weft__error(WEFT_EINVAL,
                           "%s: row_pitch %zu is below row_bytes %zu (rows "
                           "would overlap)",
                           what, row_pitch, row_bytes);
    if (slices > 1 && slice_pitch % row_pitch)
        return weft__error(WEFT_EINVAL,
                           "%s: slice_pitch %zu is no multiple of row_pitch "
                           "%zu",
                           what, slice_pitch, row_pitch);
    if (slices > 1 && slice_pitch / row_pitch < rows)
        return weft__error(WEFT_EINVAL,
                           "%s: slice_pitch %zu is below rows * row_pitch "
                           "(%zu x %zu: slices would overlap)",
                           what, slice_pitch, rows, row_pitch);
    if (!__builtin_mul_overflow(slices - 1, slices > 1 ? slice_pitch : 0, &a) &&
        !__builtin_mul_overflow(rows - 1, row_pitch, &c) &&
        !__builtin_add_overflow(a, c, &end) &&
        !__builtin_add_overflow(end, row_bytes, &end) &&
        !__builtin_add_overflow(end, origin, &end) && end <= b->size)
        return 0;
    weft__buffer_describe(b, desc, sizeof desc);
    return weft__error(WEFT_ERANGE,
                       "%s: block at origin %zu (%zu rows of %zu bytes, "
                       "%zu apart, x %zu slices %zu apart) ends past the end "
                       "of %s",
                       what, origin, rows, row_bytes, row_pitch, slices,
                       slice_pitch, desc);
}

/* The kernel and its arguments, for weft_graph_add_kernel. */
static int weft__kernel_check(const weft_graph *g, const weft_kernel *k,
                              weft_dims dims, const weft_arg *args,
                              unsigned nargs, size_t *nbytes, unsigned *nbuf)
{
    char what[32];
    int rc;

    if (k->rt != g->rt)
        return weft__error(WEFT_EINVAL, "the kernel belongs to another "
                                        "runtime than the graph");
    if (nargs && !args)
        return weft__error(WEFT_EINVAL, "%u arguments but the array is NULL",
                           nargs);
    if (!dims.items[0] || !dims.items[1] || !dims.items[2])
        return weft__error(WEFT_EINVAL, "dims: empty grid of %ux%ux%u items",
                           dims.items[0], dims.items[1], dims.items[2]);
    if ((rc = weft__args_basic(args, nargs, nbytes, nbuf)) < 0)
        return rc;
    for (unsigned i = 0; i < nargs; i++) {
        const weft_buffer *b = args[i].buffer;
        size_t off = args[i].offset, size = args[i].size;

        if (args[i].type != WEFT_PARAM_BUFFER)
            continue;
        /* A valid range needs no message (weft__buffer_arg's checks). */
        if (args[i].rows == 0 && b && b->rt == g->rt && off <= b->size &&
            (size == WEFT_WHOLE || size <= b->size - off))
            continue;
        snprintf(what, sizeof what, "argument %u", i);
        if (args[i].rows == 0)
            rc = weft__buffer_arg(g, args[i].buffer, args[i].offset,
                                  args[i].size, what);
        else
            rc = weft__block_arg(g, args[i].buffer, args[i].offset,
                                 args[i].size, args[i].rows, args[i].slices,
                                 args[i].row_pitch, args[i].slice_pitch, what);
        if (rc < 0)
            return rc;
    }
    return weft__args_match(k, weft__known_impl(g, k), args, nargs);
}

/*
 * Add the kernel node of k (checked by weft__kernel_check, which counted
 * nbytes and nbuf); the errors of weft__add_node (WEFT_ENOMEM).
 */
static int weft__kernel_add(weft_graph *g, weft_kernel *k, weft_dims dims,
                            const weft_arg *args, unsigned nargs, size_t nbytes,
                            unsigned nbuf, weft_node *node)
{
    weft__access stack_acc[WEFT__STACK_ACC], *acc = stack_acc;
    weft__node proto;
    unsigned j = 0;
    int rc;

    if (nbuf > WEFT__STACK_ACC && !(acc = weft__malloc(nbuf * sizeof *acc)))
        return weft__error(WEFT_ENOMEM, "out of memory");
    for (unsigned i = 0; i < nargs; i++)
        if (args[i].type == WEFT_PARAM_BUFFER)
            acc[j++] = weft__access_block_make(
                args[i].buffer, args[i].offset, args[i].size, args[i].rows,
                args[i].slices, args[i].row_pitch, args[i].slice_pitch,
                args[i].access);
    memset(&proto, 0, sizeof proto);
    proto.kind = WEFT__NODE_KERNEL;
    proto.u.kernel.k = k;
    proto.u.kernel.dims = dims;
    rc =
        weft__add_node(g, &proto, j ? acc : NULL, j, args, nargs, nbytes, node);
    if (acc != stack_acc)
        weft__free(acc);
    return rc;
}

int weft_graph_add_kernel(weft_graph *g, weft_kernel *k, weft_dims dims,
                          const weft_arg *args, unsigned nargs, weft_node *node)
{
    static const char fn[] = "weft_graph_add_kernel";
    unsigned nbuf = 0;
    size_t nbytes = 0;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if (!k)
        return weft__error(WEFT_EINVAL, "%s: kernel is NULL", fn);
    rc = weft__kernel_check(g, k, dims, args, nargs, &nbytes, &nbuf);
    if (rc == 0)
        rc = weft__kernel_add(g, k, dims, args, nargs, nbytes, nbuf, node);
    return rc < 0 ? weft__add_error(fn, WEFT__NODE_KERNEL, k, rc) : 0;
}

int weft_graph_add_kernels(weft_graph *g, const weft_kernel_node *nodes,
                           unsigned n, size_t stride, unsigned *added)
{
    static const char fn[] = "weft_graph_add_kernels";
    const weft_kernel_node *d = nodes;
    char where[64];
    unsigned nbuf = 0, i, at = 0;
    size_t nbytes = 0;
    int rc = 0;

    if (added)
        *added = 0;
    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if (n && !nodes)
        return weft__error(WEFT_EINVAL, "%s: %u nodes but the array is NULL",
                           fn, n);
    if (stride == 0)
        stride = sizeof *nodes;
    if (stride < sizeof *nodes || stride % _Alignof(weft_kernel_node))
        return weft__error(WEFT_EINVAL,
                           "%s: stride %zu is below the %zu bytes of a "
                           "weft_kernel_node or no multiple of its alignment "
                           "%zu",
                           fn, stride, sizeof *nodes,
                           (size_t) _Alignof(weft_kernel_node));
#define NODE(i) ((const weft_kernel_node *)((const char *)nodes + (i)*stride))
    /* Every node checked first: a refused one leaves the graph as it was. */
    for (i = 0; i < n && rc == 0; i++) {
        d = NODE(i);
        at = i;
        if (!d->kernel)
            return weft__error(WEFT_EINVAL, "%s: nodes[%u]: kernel is NULL", fn,
                               i);
        rc = weft__kernel_check(g, d->kernel, d->dims, d->args, d->nargs,
                                &nbytes, &nbuf);
    }
    /* Then added in order; only WEFT_ENOMEM stops that part-way. */
    for (i = 0; i < n && rc == 0; i++) {
        d = NODE(i);
        at = i;
        weft__args_count(d->args, d->nargs, &nbytes, &nbuf);
        rc = weft__kernel_add(g, d->kernel, d->dims, d->args, d->nargs, nbytes,
                              nbuf, NULL);
        if (rc == 0 && added)
            *added = i + 1;
    }
#undef NODE
    if (rc == 0)
        return 0;
    snprintf(where, sizeof where, "%s: nodes[%u]", fn, at);
    return weft__add_error(where, WEFT__NODE_KERNEL, d->kernel, rc);
}

/* A node with one buffer access (called what) and no arguments. */
static int weft__add_simple(weft_graph *g, const char *fn, weft__node *proto,
                            weft_buffer *b, const char *what, size_t off,
                            size_t size, weft_access mode, weft_node *node)
{
    weft__access a;
    int rc;

    if ((rc = weft__buffer_arg(g, b, off, size, what)) < 0)
        return weft__add_error(fn, proto->kind, NULL, rc);
    a = weft__access_make(b, off, size, mode);
    rc = weft__add_node(g, proto, &a, 1, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, proto->kind, NULL, rc) : 0;
}

weft__node weft__proto(weft__node_kind kind)
{
    weft__node n;

    memset(&n, 0, sizeof n);
    n.kind = kind;
    return n;
}

int weft_graph_add_write(weft_graph *g, weft_buffer *dst, size_t offset,
                         const void *src, size_t size, weft_node *node)
{
    static const char fn[] = "weft_graph_add_write";
    weft__node p = weft__proto(WEFT__NODE_WRITE);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    p.u.write.src = src; /* NULL is reported by instantiate */
    return weft__add_simple(g, fn, &p, dst, "dst", offset, size, WEFT_WRITE,
                            node);
}

int weft_graph_add_read(weft_graph *g, weft_buffer *src, size_t offset,
                        void *dst, size_t size, weft_node *node)
{
    static const char fn[] = "weft_graph_add_read";
    weft__node p = weft__proto(WEFT__NODE_READ);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    p.u.read.dst = dst;
    return weft__add_simple(g, fn, &p, src, "src", offset, size, WEFT_READ,
                            node);
}

int weft_graph_add_copy(weft_graph *g, weft_buffer *dst, size_t dst_offset,
                        weft_buffer *src, size_t src_offset, size_t size,
                        weft_node *node)
{
    static const char fn[] = "weft_graph_add_copy";
    weft__node p = weft__proto(WEFT__NODE_COPY);
    weft__access a[2];
    size_t slo, shi, dlo, dhi;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if (size == WEFT_WHOLE)
        rc = weft__error(WEFT_EINVAL, "size: a copy needs an explicit size, "
                                      "not WEFT_WHOLE");
    else if ((rc = weft__buffer_arg(g, dst, dst_offset, size, "dst")) == 0)
        rc = weft__buffer_arg(g, src, src_offset, size, "src");
    if (rc < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    /* Accesses: [0] the source, [1] the destination (exec.c relies on it). */
    a[0] = weft__access_make(src, src_offset, size, WEFT_READ);
    a[1] = weft__access_make(dst, dst_offset, size, WEFT_WRITE);
    weft__access_root_range(&a[0], &slo, &shi);
    weft__access_root_range(&a[1], &dlo, &dhi);
    if (src->root == dst->root && slo < dhi && dlo < shi)
        return weft__add_error(
            fn, p.kind, NULL,
            weft__error(WEFT_EINVAL,
                        "source [%zu, %zu) and destination [%zu, %zu) "
                        "overlap in the same buffer",
                        slo, shi, dlo, dhi));
    rc = weft__add_node(g, &p, a, 2, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

int weft_graph_add_fill(weft_graph *g, weft_buffer *dst, size_t offset,
                        size_t size, const void *pattern, size_t pattern_size,
                        weft_node *node)
{
    static const char fn[] = "weft_graph_add_fill";
    weft__node p = weft__proto(WEFT__NODE_FILL);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if ((rc = weft__buffer_arg(g, dst, offset, size, "dst")) < 0)
        return weft__add_error(fn, p.kind, NULL, rc);
    if (size == WEFT_WHOLE)
        size = dst->size - offset;
    if ((rc = weft__fill_check(pattern, pattern_size, offset, size, "fill")) <
        0)
        return weft__add_error(fn, p.kind, NULL, rc);
    memcpy(p.u.fill.pattern, pattern, pattern_size);
    p.u.fill.size = (unsigned)pattern_size;
    return weft__add_simple(g, fn, &p, dst, "dst", offset, size, WEFT_WRITE,
                            node);
}

int weft_graph_add_map(weft_graph *g, weft_buffer *buf, size_t offset,
                       size_t size, weft_access mode, weft_map_fn *fn,
                       void *user, weft_node *node)
{
    static const char name[] = "weft_graph_add_map";
    weft__node p = weft__proto(WEFT__NODE_MAP);
    int rc;

    if ((rc = weft__check_graph(g, name)) < 0)
        return rc;
    if (!fn)
        return weft__add_error(name, p.kind, NULL,
                               weft__error(WEFT_EINVAL, "fn is NULL"));
    if (mode < WEFT_READ || mode > WEFT_READ_WRITE)
        return weft__add_error(name, p.kind, NULL,
                               weft__error(WEFT_EINVAL,
                                           "mode: unknown access mode %d",
                                           (int)mode));
    p.u.map.fn = fn;
    p.u.map.user = user;
    return weft__add_simple(g, name, &p, buf, "buf", offset, size, mode, node);
}

int weft_graph_add_empty(weft_graph *g, weft_node *node)
{
    static const char fn[] = "weft_graph_add_empty";
    weft__node p = weft__proto(WEFT__NODE_EMPTY);
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    rc = weft__add_node(g, &p, NULL, 0, NULL, 0, 0, node);
    return rc < 0 ? weft__add_error(fn, p.kind, NULL, rc) : 0;
}

/* ---- explicit edges and node settings ---------------------------------- */

/*
 * Whether node `to` already runs before node `from` (a path of inferred or
 * explicit edges leads from `to` to `from`): then an edge from -> to would
 * close a cycle. A search back from `from` over the in-edges; *path_to is
 * the node through which it reached `to` (the predecessor of `from` on the
 * path, or `from` itself for a direct edge). WEFT_ENOMEM changes nothing.
 */
static int weft__runs_before(weft_graph *g, uint32_t to, uint32_t from,
                             uint32_t *via)
{
    size_t sp = 0;
    int rc;

    if ((rc = weft__grow(&g->stack, &g->cap_stack, (size_t)g->nnodes + 1,
                         sizeof *g->stack)) < 0)
        return rc;
    g->epoch++;
    g->marks[from].seen_epoch = g->epoch;
    g->stack[sp++] = from;
    while (sp) {
        uint32_t v = g->stack[--sp];
        const weft__node *nd = &g->nodes[v];
        uint32_t e = 0, x = nd->xin;

        /* Inferred in-edges, then explicit ones. */
        for (;;) {
            uint32_t u;

            if (e < nd->nin)
                u = g->edges[nd->in_first + e++].from;
            else if (x != WEFT__NONE) {
                u = g->xedges[x].from;
                x = g->xedges[x].next;
            } else
                break;
            if (u == to) {
                *via = v;
                return 1;
            }
            if (g->marks[u].seen_epoch == g->epoch)
                continue;
            g->marks[u].seen_epoch = g->epoch;
            g->stack[sp++] = u;
        }
    }
    return 0;
}

int weft_graph_add_edge(weft_graph *g, weft_node from, weft_node to)
{
    uint32_t via = WEFT__NONE;
    const weft__node *t;
    int rc;

    if ((rc = weft__check_graph(g, "weft_graph_add_edge")) < 0)
        return rc;
    if (from >= g->nnodes || to >= g->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_add_edge: node %u does not exist (%u "
                           "nodes)",
                           from >= g->nnodes ? from : to, g->nnodes);
    if (from == to)
        return weft__node_error(WEFT_ECYCLE, g->nodes, from,
                                "an edge from the node to itself");
    t = &g->nodes[to];
    /* An edge that is there already adds nothing. */
    for (uint32_t e = 0; e < t->nin; e++)
        if (g->edges[t->in_first + e].from == from)
            return 0;
    for (uint32_t e = t->xin; e != WEFT__NONE; e = g->xedges[e].next)
        if (g->xedges[e].from == from)
            return 0;
    /* Refused here, the graph unchanged, rather than at instantiate. */
    if ((rc = weft__runs_before(g, to, from, &via)) < 0)
        return rc;
    if (rc && via == from)
        return weft__error(WEFT_ECYCLE,
                           "weft_graph_add_edge: an edge from node %u to "
                           "node %u would close a cycle: node %u already "
                           "runs before node %u (an edge %u -> %u)",
                           from, to, to, from, to, from);
    if (rc)
        return weft__error(WEFT_ECYCLE,
                           "weft_graph_add_edge: an edge from node %u to "
                           "node %u would close a cycle: node %u already "
                           "runs before node %u (through node %u)",
                           from, to, to, from, via);
    if ((rc = weft__grow(&g->xedges, &g->cap_xedges, g->nxedges + 1,
                         sizeof *g->xedges)) < 0 ||
        (rc = weft__graph_unshare(g)) < 0)
        return rc;
    /* (t may have gone with the shared arrays: g->nodes from here) */
    g->xedges[g->nxedges] = (weft__edge){
        from, to, WEFT__EXPLICIT, WEFT__NONE, g->nodes[to].xin, 0, 0};
    g->nodes[to].xin = g->nxedges++;
    return 0;
}

int weft_graph_set_native_capture(weft_graph *g, weft_node node, int on)
{
    static const char fn[] = "weft_graph_set_native_capture";
    const weft__node *n;
    int rc;

    if ((rc = weft__check_graph(g, fn)) < 0)
        return rc;
    if (node >= g->nnodes)
        return weft__error(WEFT_EINVAL, "%s: node %u does not exist (%u nodes)",
                           fn, node, g->nnodes);
    n = &g->nodes[node];
    if (n->kind != WEFT__NODE_NATIVE || n->u.native.what != WEFT__NATIVE_FN)
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "%s: only nodes of weft_graph_add_native are "
                                "captured",
                                fn);
    if (on != 0 && on != 1)
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "%s: on is %d (0 or 1)", fn, on);
    if ((rc = weft__graph_unshare(g)) < 0)
        return rc;
    g->nodes[node].u.native.capture = (uint32_t)on;
    return 0;
}

int weft_graph_set_priority(weft_graph *g, weft_node node,
                            weft_priority priority)
{
    int rc;

    if ((rc = weft__check_graph(g, "weft_graph_set_priority")) < 0)
        return rc;
    if (node >= g->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_set_priority: node %u does not exist "
                           "(%u nodes)",
                           node, g->nnodes);
    if (priority != WEFT_PRIORITY_DEFAULT && priority != WEFT_PRIORITY_HIGH)
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "priority %d is none of weft_priority",
                                (int)priority);
    if ((rc = weft__graph_unshare(g)) < 0)
        return rc;
    g->nodes[node].priority = (uint32_t)priority;
    return 0;
}

int weft_graph_set_device(weft_graph *g, weft_node node, const weft_device *dev)
{
    const weft__device *d = weft__device_of(dev);
    const weft__node *n;
    int rc;

    if ((rc = weft__check_graph(g, "weft_graph_set_device")) < 0)
        return rc;
    if (node >= g->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_set_device: node %u does not exist (%u "
                           "nodes)",
                           node, g->nnodes);
    n = &g->nodes[node];
    if (!d || d->props.index >= g->rt->ndevices ||
        g->rt->devices[d->props.index] != d)
        return weft__node_error(WEFT_EINVAL, g->nodes, node, "the device is %s",
                                d ? "not one of the graph's runtime" : "NULL");
    if (!weft__node_placed(n))
        return weft__node_error(WEFT_EINVAL, g->nodes, node,
                                "only kernel and native nodes are placed on "
                                "devices");
    if (!weft__node_runs_on(n, g->args, g->bytes, g->rt, d->props.index))
        return weft__node_error(WEFT_ENODEV, g->nodes, node,
                                "the %s has no implementation on device "
                                "%u (%s)",
                                n->kind == WEFT__NODE_KERNEL ? "kernel"
                                                             : "native node",
                                d->props.index, d->name);
    if ((rc = weft__graph_unshare(g)) < 0)
        return rc;
    g->nodes[node].device = (int32_t)d->props.index;
    return 0;
}
