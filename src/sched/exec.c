/*
 * Instantiate (validation, the device, a topological order, the copies an
 * executable graph keeps) and the first executor's worker. exec.h has the
 * launch protocol.
 */
#include "exec.h"

#include "../base/options.h"
#include "../base/trace.h"
#include "hostwork.h"
#include "placing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    WEFT__NODE_PENDING = 0,
    WEFT__NODE_DONE,
    WEFT__NODE_FAILED,
    WEFT__NODE_CANCELED,
    WEFT__NODE_INFLIGHT, /* a host node on a host worker */
};

/* run_node: the node went to a host worker. */
enum { WEFT__HANDED_OVER = 1 };

/*
 * A map or host node handed to a host worker: the task first (the pool's
 * link). Set by the exec's worker before the hand-over, read by the host
 * worker; rc and msg set by the host worker, read after `finished`.
 */
typedef struct weft__host_job {
    weft__host_task task;
    weft_exec *e;
    uint32_t node;
    int rc;
    weft__plan_ticket ticket;
    void **ptrs;     /* the node's accesses in the host copy */
    uint64_t t0, t1; /* the host clock around the function */
    int worker;      /* the worker that ran it */
    struct weft__host_job *next;
    char msg[256];
} weft__host_job;

/* ---- validation -------------------------------------------------------- */

/* A min-heap of node indices, so that Kahn's order stays near insertion. */
static void weft__heap_push(uint32_t *h, uint32_t *n, uint32_t v)
{
    uint32_t i = (*n)++;

    while (i && h[(i - 1) / 2] > v) {
        h[i] = h[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h[i] = v;
}

static uint32_t weft__heap_pop(uint32_t *h, uint32_t *n)
{
    uint32_t top = h[0], v = h[--*n], i = 0;

    for (;;) {
        uint32_t c = 2 * i + 1;

        if (c >= *n)
            break;
        if (c + 1 < *n && h[c + 1] < h[c])
            c++;
        if (h[c] >= v)
            break;
        h[i] = h[c];
        i = c;
    }
    if (*n)
        h[i] = v;
    return top;
}

/*
 * Predecessors of every node (inferred and explicit) as CSR arrays. The
 * caller frees *first and *preds.
 */
static int weft__build_preds(const weft_graph *g, uint32_t **first,
                             uint32_t **preds)
{
    uint32_t n = g->nnodes, *f, *p, k = 0;

    f = weft__malloc(((size_t)n + 1) * sizeof *f);
    p = weft__malloc(((size_t)g->nedges + g->nxedges + 1) * sizeof *p);
    if (!f || !p) {
        weft__free(f);
        weft__free(p);
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    }
    for (uint32_t i = 0; i < n; i++) {
        const weft__node *nd = &g->nodes[i];

        f[i] = k;
        for (uint32_t e = 0; e < nd->nin; e++)
            p[k++] = g->edges[nd->in_first + e].from;
        for (uint32_t e = nd->xin; e != WEFT__NONE; e = g->xedges[e].next)
            p[k++] = g->xedges[e].from;
    }
    f[n] = k;
    *first = f;
    *preds = p;
    return 0;
}

/* The first predecessor of v that Kahn's order left out. */
static uint32_t weft__left_pred(const uint32_t *first, const uint32_t *preds,
                                const uint32_t *indeg, uint32_t v)
{
    for (uint32_t e = first[v]; e < first[v + 1]; e++)
        if (indeg[preds[e]])
            return preds[e];
    return WEFT__NONE;
}

/*
 * Every node left out (indeg > 0) has a predecessor left out, so walking
 * back n steps from one lands on a cycle; walking on until coming back
 * traces it.
 */
static int weft__cycle_error(const weft_graph *g, const uint32_t *first,
                             const uint32_t *preds, const uint32_t *indeg)
{
    uint32_t v = 0, cyc[16], nc = 0, w;
    char path[256];
    size_t len = 0;

    while (!indeg[v])
        v++;
    for (uint32_t i = 0; i < g->nnodes; i++)
        v = weft__left_pred(first, preds, indeg, v);
    w = v;
    do {
        if (nc < WEFT__COUNTOF(cyc))
            cyc[nc++] = w;
        w = weft__left_pred(first, preds, indeg, w);
    } while (w != v);
    /* cyc[] runs against the edges; print it along them, from v to v. */
    len = (size_t)snprintf(path, sizeof path, "%u", v);
    for (uint32_t i = nc; i-- > 1 && len < sizeof path;)
        len +=
            (size_t)snprintf(path + len, sizeof path - len, " -> %u", cyc[i]);
    if (len < sizeof path)
        snprintf(path + len, sizeof path - len, "%s -> %u",
                 nc == WEFT__COUNTOF(cyc) ? " -> ..." : "", v);
    return weft__node_error(WEFT_ECYCLE, g->nodes, v,
                            "dependency cycle through explicit edges: %s",
                            path);
}

static int weft__exec_order_latest(void)
{
    unsigned order = 0; /* WEFT_EXEC_ORDER: earliest|latest */

    weft__opt_enum(WEFT__OPT_EXEC_ORDER, &order);
    return order == 1;
}

/*
 * A topological order into order[]. Inferred edges point forwards, so
 * without a backward explicit edge insertion order is one.
 */
static int weft__topo_order(const weft_graph *g, const uint32_t *first,
                            const uint32_t *preds, uint32_t *order)
{
    uint32_t n = g->nnodes, m = first[n], nheap = 0, k = 0;
    uint32_t *indeg, *sfirst, *cur, *succ, *heap;
    int backward = 0, rc = 0;

    /*
     * WEFT_EXEC_ORDER=latest runs, among the nodes whose predecessors are
     * done, the one added last: as far from insertion order as the edges
     * allow. Any such order must give the sequential result, so tests (the
     * oracle) use it to catch a dependency the graph failed to infer.
     */
    int latest = weft__exec_order_latest();

    for (uint32_t i = 0; i < g->nxedges; i++)
        backward |= g->xedges[i].from > g->xedges[i].to;
    if (!backward && !latest) {
        for (uint32_t i = 0; i < n; i++)
            order[i] = i;
        return 0;
    }
    indeg = weft__malloc(((size_t)n + 1) * sizeof *indeg);
    sfirst = weft__calloc((size_t)n + 1, sizeof *sfirst);
    cur = weft__malloc(((size_t)n + 1) * sizeof *cur);
    succ = weft__malloc(((size_t)m + 1) * sizeof *succ);
    heap = weft__malloc(((size_t)n + 1) * sizeof *heap);
    if (!indeg || !sfirst || !cur || !succ || !heap) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto out;
    }
    /* Successor lists from the predecessor lists (a counting sort). */
    for (uint32_t e = 0; e < m; e++)
        sfirst[preds[e] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        sfirst[i + 1] += sfirst[i];
    memcpy(cur, sfirst, (size_t)n * sizeof *cur);
    for (uint32_t v = 0; v < n; v++) {
        indeg[v] = first[v + 1] - first[v];
        for (uint32_t e = first[v]; e < first[v + 1]; e++)
            succ[cur[preds[e]]++] = v;
        if (!indeg[v])
            weft__heap_push(heap, &nheap, latest ? n - 1 - v : v);
    }
    while (nheap) {
        uint32_t v = weft__heap_pop(heap, &nheap);

        if (latest)
            v = n - 1 - v; /* the min-heap holds mirrored indices */
        order[k++] = v;
        for (uint32_t e = sfirst[v]; e < sfirst[v + 1]; e++)
            if (--indeg[succ[e]] == 0)
                weft__heap_push(heap, &nheap,
                                latest ? n - 1 - succ[e] : succ[e]);
    }
    if (k < n)
        rc = weft__cycle_error(g, first, preds, indeg);
out:
    weft__free(indeg);
    weft__free(sfirst);
    weft__free(cur);
    weft__free(succ);
    weft__free(heap);
    return rc;
}

/* Ranges and host pointers: what does not depend on the device. */
static int weft__check_nodes(const weft_graph *g)
{
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const weft__node *nd = &g->nodes[i];

        for (uint32_t a = 0; a < nd->nacc; a++) {
            const weft__access *ac = &g->acc[nd->acc_first + a];
            char what[96];

            if (ac->offset <= ac->buf->size &&
                ac->size <= ac->buf->size - ac->offset)
                continue;
            weft__buffer_describe(ac->buf, what, sizeof what);
            if (ac->size == WEFT_WHOLE)
                return weft__node_error(WEFT_ERANGE, g->nodes, i,
                                        "access %u at offset %zu is outside "
                                        "%s",
                                        a, ac->offset, what);
            return weft__node_error(WEFT_ERANGE, g->nodes, i,
                                    "access %u [%zu, %zu + %zu) is outside %s",
                                    a, ac->offset, ac->offset, ac->size, what);
        }
        if (nd->kind == WEFT__NODE_WRITE && !nd->u.write_src &&
            g->acc[nd->acc_first].size)
            return weft__node_error(WEFT_EINVAL, g->nodes, i,
                                    "the host source pointer is NULL");
        if (nd->kind == WEFT__NODE_READ && !nd->u.read_dst &&
            g->acc[nd->acc_first].size)
            return weft__node_error(WEFT_EINVAL, g->nodes, i,
                                    "the host destination pointer is NULL");
    }
    return 0;
}

static int weft__has_all_kernels(const weft_graph *g, unsigned d)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (g->nodes[i].kind == WEFT__NODE_KERNEL && g->nodes[i].device < 0 &&
            !weft__kernel_impl(g->nodes[i].u.kernel.k, d))
            return 0;
    return 1;
}

/*
 * The default device, for the nodes the user did not place: the caller's,
 * else the first device in runtime order with every unplaced kernel, else
 * (no unplaced kernels) the first placed node's device, else the host
 * driver's first device.
 */
static int weft__choose_device(const weft_graph *g, const weft_exec_options *o,
                               unsigned *out)
{
    weft_runtime *rt = g->rt;
    uint32_t nk = 0, placed = WEFT__NONE;

    if (rt->ndevices == 0)
        return weft__error(WEFT_ENODEV, "instantiate: the runtime has no "
                                        "devices");
    if (o->device) {
        const weft__device *d = weft__device_of(o->device);

        if (d->props.index >= rt->ndevices || rt->devices[d->props.index] != d)
            return weft__error(WEFT_EINVAL, "instantiate: the device is not "
                                            "one of the graph's runtime");
        *out = d->props.index;
        return 0;
    }
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const weft__node *nd = &g->nodes[i];

        if (nd->kind != WEFT__NODE_KERNEL)
            continue;
        if (nd->device >= 0) {
            if (placed == WEFT__NONE)
                placed = i;
            continue;
        }
        nk++;
    }
    if (nk == 0) {
        if (placed != WEFT__NONE) {
            *out = (unsigned)g->nodes[placed].device;
            return 0;
        }
        *out = 0;
        for (unsigned d = rt->ndevices; d-- > 0;)
            if (rt->devices[d]->drv == &weft__driver_host)
                *out = d;
        return 0;
    }
    for (unsigned d = 0; d < rt->ndevices; d++)
        if (weft__has_all_kernels(g, d)) {
            *out = d;
            return 0;
        }
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const weft__node *nd = &g->nodes[i];
        unsigned d;

        if (nd->kind != WEFT__NODE_KERNEL || nd->device >= 0)
            continue;
        for (d = 0; d < rt->ndevices; d++)
            if (weft__kernel_impl(nd->u.kernel.k, d))
                break;
        if (d == rt->ndevices)
            return weft__node_error(WEFT_ENODEV, g->nodes, i,
                                    "no device of the runtime has an "
                                    "implementation of the kernel");
    }
    return weft__error(WEFT_ENODEV,
                       "instantiate: no single device has every kernel of the "
                       "graph that is not placed; place them with "
                       "weft_graph_set_device");
}

/*
 * Where each node runs (the caller's device overrides every placement),
 * and kernel nodes against the implementation there.
 */
static int weft__check_kernels(const weft_graph *g, const weft_exec_options *o,
                               unsigned dflt, unsigned *node_dev)
{
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const weft__node *nd = &g->nodes[i];
        /* node_dev holds placement's choice for an unplaced kernel. */
        unsigned dev = o->device || nd->kind != WEFT__NODE_KERNEL ? dflt
                       : nd->device >= 0 ? (unsigned)nd->device
                                         : node_dev[i];
        const weft_device_info *p = &g->rt->devices[dev]->props;
        const weft_arg *args;
        uint64_t group = 1;
        int rc;

        node_dev[i] = dev;
        if (nd->kind != WEFT__NODE_KERNEL)
            continue;
        if (!weft__kernel_impl(nd->u.kernel.k, dev))
            return weft__node_error(WEFT_ENODEV, g->nodes, i,
                                    "the kernel has no implementation on "
                                    "device %u (%s)",
                                    dev, g->rt->devices[dev]->name);
        args = &g->args[nd->u.kernel.arg_first];
        rc = weft__args_match(nd->u.kernel.k,
                              weft__kernel_impl(nd->u.kernel.k, dev), args,
                              nd->u.kernel.nargs);
        if (rc < 0)
            return weft__error_prefix(rc, "node %u (kernel %s)", i,
                                      weft_kernel_name(nd->u.kernel.k));
        for (int d = 0; d < 3; d++)
            group *=
                nd->u.kernel.dims.group[d] ? nd->u.kernel.dims.group[d] : 1;
        if (p->max_group_size && group > p->max_group_size)
            return weft__node_error(WEFT_EINVAL, g->nodes, i,
                                    "a group of %llu items exceeds the "
                                    "maximum of %u on device %u (%s)",
                                    (unsigned long long)group,
                                    p->max_group_size, dev,
                                    g->rt->devices[dev]->name);
        for (uint32_t a = 0; a < nd->u.kernel.nargs; a++) {
            size_t off;

            if (args[a].type != WEFT_PARAM_BUFFER)
                continue;
            off = args[a].buffer->offset + args[a].offset;
            if (p->arg_offset_align > 1 && off % p->arg_offset_align)
                return weft__node_error(
                    WEFT_EARGS, g->nodes, i,
                    "buffer argument %u starts at byte %zu of its buffer, "
                    "not a multiple of the %u bytes that device %u (%s) "
                    "needs",
                    a, off, p->arg_offset_align, dev,
                    g->rt->devices[dev]->name);
        }
    }
    return 0;
}

/* ---- the executable graph ---------------------------------------------- */

/*
 * e->write_dev from node_dev: a write or fill node stores into the device
 * of the first kernel that follows it (by an edge), so that bytes a kernel
 * will read there are not also written to where an earlier launch left a
 * copy (weft__buffer_store's prefer).
 */
static void weft__build_write_dev(weft_exec *e, const unsigned *node_dev)
{
    for (uint32_t i = 0; i < e->nnodes; i++)
        e->write_dev[i] = WEFT__HOST;
    for (uint32_t j = 0; j < e->nnodes; j++) {
        if (e->nodes[j].kind != WEFT__NODE_KERNEL)
            continue;
        for (uint32_t p = e->pred_first[j]; p < e->pred_first[j + 1]; p++) {
            uint32_t w = e->preds[p];

            if ((e->nodes[w].kind == WEFT__NODE_WRITE ||
                 e->nodes[w].kind == WEFT__NODE_FILL) &&
                e->write_dev[w] == WEFT__HOST)
                e->write_dev[w] = node_dev[j];
        }
    }
}

/* The host jobs (their tickets are sized for the plan). */
static void weft__free_jobs(weft_exec *e)
{
    for (uint32_t i = 0; e->jobs && i < e->nnodes; i++)
        if (e->jobs[i]) {
            weft__plan_ticket_fini(&e->jobs[i]->ticket);
            weft__free(e->jobs[i]->ptrs);
            weft__free(e->jobs[i]);
            e->jobs[i] = NULL;
        }
}

static void weft__exec_free(weft_exec *e)
{
    weft__free_jobs(e);
    weft__free(e->jobs);
    weft__plan_destroy(e->plan);
    for (size_t i = 0; e->fences && i < (size_t)e->nroots * e->rt->ndevices;
         i++)
        if (e->fences[i])
            weft__drv_event_destroy(e->fences[i]);
    weft__free(e->fences);
    weft__free(e->copies);
    weft__lanes_release(&e->lanes);
    weft__free(e->nodes);
    weft__free(e->acc);
    weft__free(e->args);
    weft__free(e->bytes);
    weft__free(e->raws);
    weft__free(e->order);
    weft__free(e->pred_first);
    weft__free(e->preds);
    weft__free(e->lock_first);
    weft__free(e->locks);
    weft__free(e->lock_next);
    weft__free(e->root_first);
    weft__free(e->node_dev);
    weft__free(e->roots);
    weft__free(e->kargs);
    weft__free(e->ptrs);
    weft__free(e->state);
    weft__free(e->write_dev);
    weft__free(e->snap);
    weft__free(e->steady);
    weft__free(e);
}

static void *weft__dup(const void *p, size_t n)
{
    void *q = weft__malloc(n ? n : 1);

    if (q && n)
        memcpy(q, p, n);
    return q;
}

/* Each node's roots, distinct and in address order (the lock order). */
static int weft__build_locks(weft_exec *e)
{
    uint32_t k = 0;

    e->lock_first =
        weft__malloc(((size_t)e->nnodes + 1) * sizeof *e->lock_first);
    e->locks = weft__malloc(((size_t)e->nacc + 1) * sizeof *e->locks);
    if (!e->lock_first || !e->locks)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const weft__node *nd = &e->nodes[i];
        uint32_t start = k;

        e->lock_first[i] = k;
        for (uint32_t a = 0; a < nd->nacc; a++) {
            uint32_t r = e->acc[nd->acc_first + a].root, j;

            for (j = start; j < k && e->locks[j] != r; j++)
                ;
            if (j < k)
                continue;
            /* Insertion sort by address: a node has few roots. */
            for (j = k++; j > start && (uintptr_t)e->roots[e->locks[j - 1]] >
                                           (uintptr_t)e->roots[r];
                 j--)
                e->locks[j] = e->locks[j - 1];
            e->locks[j] = r;
        }
    }
    e->lock_first[e->nnodes] = k;
    return 0;
}

/*
 * For each (node, root) of the locks, how far in the order the root is
 * used next: walking the order backwards twice, so that a root's last use
 * in a launch sees its first use in the next one.
 */
static int weft__build_next_use(weft_exec *e)
{
    uint32_t n = e->nnodes, *seen;

    e->lock_next =
        weft__malloc(((size_t)e->lock_first[n] + 1) * sizeof *e->lock_next);
    e->root_first = weft__calloc((size_t)e->nroots + 1, sizeof *e->root_first);
    seen = weft__malloc(((size_t)e->nroots + 1) * sizeof *seen);
    if (!e->lock_next || !e->root_first || !seen) {
        weft__free(seen);
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    }
    for (uint32_t r = 0; r < e->nroots; r++)
        seen[r] = UINT32_MAX;
    for (uint32_t k = 2 * n; k-- > 0;) {
        uint32_t i = e->order[k % n];

        for (uint32_t l = e->lock_first[i]; l < e->lock_first[i + 1]; l++) {
            uint32_t r = e->locks[l];

            if (k < n)
                e->lock_next[l] = seen[r] - k;
            seen[r] = k;
        }
    }
    for (uint32_t r = 0; r < e->nroots; r++)
        e->root_first[r] = seen[r] == UINT32_MAX ? 0 : seen[r];
    weft__free(seen);
    return 0;
}

static void *weft__worker_main(void *arg);

int weft_graph_instantiate(weft_graph *g, const weft_exec_options *opts,
                           weft_exec **out)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    uint32_t maxargs = 1, maxacc = 1;
    weft__queue *q = NULL;
    weft_exec *e;
    unsigned dev = 0;
    int rc;

    if (!g || !out)
        return weft__error(WEFT_EINVAL, "weft_graph_instantiate: %s is NULL",
                           g ? "result" : "graph");
    if (opts) {
        if (opts->size < sizeof(size_t) || opts->size > sizeof o)
            return weft__error(WEFT_EINVAL,
                               "weft_graph_instantiate: options size %zu is "
                               "not that of weft_exec_options (%zu); start "
                               "from WEFT_EXEC_OPTIONS_INIT",
                               opts->size, sizeof o);
        memcpy(&o, opts, opts->size);
    }
    if (o.native_graphs != WEFT_NATIVE_GRAPHS_DEFAULT &&
        o.native_graphs != WEFT_NATIVE_GRAPHS_OFF &&
        o.native_graphs != WEFT_NATIVE_GRAPHS_ON)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_instantiate: native_graphs %d is none "
                           "of weft_native_graphs",
                           (int)o.native_graphs);
    e = weft__calloc(1, sizeof *e);
    if (!e)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    weft__lanes_init(&e->lanes, g->rt);
    e->rt = g->rt;
    e->native = (int)o.native_graphs;
    e->nnodes = g->nnodes;
    e->nacc = g->nacc;
    e->nroots = g->nroots;
    if ((rc = weft__build_preds(g, &e->pred_first, &e->preds)) < 0)
        goto fail;
    e->order = weft__malloc(((size_t)g->nnodes + 1) * sizeof *e->order);
    if (!e->order) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto fail;
    }
    if ((rc = weft__topo_order(g, e->pred_first, e->preds, e->order)) < 0 ||
        (rc = weft__check_nodes(g)) < 0 ||
        (rc = weft__choose_device(g, &o, &dev)) < 0)
        goto fail;
    e->node_dev = weft__malloc(((size_t)g->nnodes + 1) * sizeof *e->node_dev);
    if (!e->node_dev) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < g->nnodes; i++)
        e->node_dev[i] = dev;
    e->roots = weft__malloc(((size_t)g->nroots + 1) * sizeof *e->roots);
    if (!e->roots) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < g->nroots; i++)
        e->roots[i] = g->roots[i].buf;
    if (!o.device) {
        weft__place_src src = {g->rt,   g->nodes, g->nnodes, g->acc,
                               g->nacc, g->args,  e->roots};
        int policy = e->rt->place_policy, scope = e->rt->place_scope;

        if (o.policy != WEFT_PLACE_DEFAULT &&
            (rc = weft__place_policy_parse(NULL, o.policy, &policy)) < 0)
            goto fail;
        if (o.place_scope != WEFT_PLACE_SCOPE_DEFAULT &&
            (rc = weft__place_scope_parse(NULL, o.place_scope, &scope)) < 0)
            goto fail;
        if ((rc = weft__place_graph(&src, policy, scope, dev, e->order,
                                    e->pred_first, e->preds, e->node_dev,
                                    &e->devices_used)) < 0)
            goto fail;
        e->policy = policy;
        e->scope = scope;
    }
    if ((rc = weft__check_kernels(g, &o, dev, e->node_dev)) < 0)
        goto fail;
    e->device = dev;
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const weft__node *nd = &g->nodes[i];

        if (nd->kind == WEFT__NODE_KERNEL)
            maxargs = WEFT__MAX(maxargs, nd->u.kernel.nargs);
        maxacc = WEFT__MAX(maxacc, nd->nacc);
    }
    e->nodes = weft__dup(g->nodes, (size_t)g->nnodes * sizeof *g->nodes);
    e->acc = weft__dup(g->acc, (size_t)g->nacc * sizeof *g->acc);
    e->args = weft__dup(g->args, (size_t)g->nargs * sizeof *g->args);
    e->bytes = weft__dup(g->bytes, g->nbytes);
    e->raws = weft__dup(g->raws, (size_t)g->nraws * sizeof *g->raws);
    e->kargs = weft__malloc(maxargs * sizeof *e->kargs);
    e->ptrs = weft__malloc(maxacc * sizeof *e->ptrs);
    e->state = weft__malloc((size_t)g->nnodes + 1);
    e->write_dev = weft__malloc(((size_t)g->nnodes + 1) * sizeof *e->write_dev);
    e->jobs = weft__calloc((size_t)g->nnodes + 1, sizeof *e->jobs);
    e->copies = weft__calloc((size_t)g->nnodes + 1, sizeof *e->copies);
    e->fences = weft__calloc((size_t)g->nroots * g->rt->ndevices + 1,
                             sizeof *e->fences);
    if (!e->nodes || !e->acc || !e->args || !e->bytes || !e->raws ||
        !e->kargs || !e->ptrs || !e->state || !e->write_dev || !e->jobs ||
        !e->copies || !e->fences) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto fail;
    }
    if ((rc = weft__build_locks(e)) < 0 || (rc = weft__build_next_use(e)) < 0)
        goto fail;
    weft__build_write_dev(e, e->node_dev);
    if ((rc = weft__plan_create(e->rt, e->nodes, e->nnodes, e->node_dev,
                                e->order, e->pred_first, e->preds, e->raws,
                                e->roots, e->native, &e->plan)) < 0)
        goto fail;
    e->lanes.hooks = &weft__plan_hooks;
    e->lanes.set = e->plan;
    /* Kernel times for the cost model, where a model placed the nodes. */
    if (e->devices_used &&
        (e->policy == WEFT_PLACE_HEFT || e->policy == WEFT_PLACE_LOCALITY)) {
        weft__plan_set_learn(e->plan, 2);
        e->replace = 1;
    }
    /* The device's first lane now, so that a device that cannot make one
     * fails here rather than at the first launch. */
    if ((rc = weft__plan_lane_queue(e->plan, dev, 0, &q)) < 0) {
        weft__error_prefix(rc, "instantiate");
        goto fail;
    }
    pthread_mutex_init(&e->lock, NULL);
    pthread_cond_init(&e->wake, NULL);
    pthread_cond_init(&e->done, NULL);
    pthread_mutex_init(&e->host_lock, NULL);
    pthread_cond_init(&e->host_done, NULL);
    for (uint32_t i = 0; i < e->nacc; i++)
        weft__buffer_exec_ref(e->acc[i].buf, 1);
    for (uint32_t r = 0; r < e->nroots; r++)
        weft__buffer_root_execs(e->roots[r], 1);
    weft__runtime_live(e->rt, 1);
    weft__debug("exec", "%u nodes on device %u (%s)", e->nnodes, dev,
                e->rt->devices[dev]->name);
    *out = e;
    return 0;
fail:
    weft__exec_free(e);
    return rc;
}

/* ---- running nodes ----------------------------------------------------- */

/* A buffer argument's bytes, WEFT_WHOLE resolved. */
static size_t weft__arg_size(const weft_arg *ar)
{
    return ar->size == WEFT_WHOLE ? ar->buffer->size - ar->offset : ar->size;
}

static int weft__run_kernel(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft_arg *args = &e->args[nd->u.kernel.arg_first];
    uint32_t nargs = nd->u.kernel.nargs;
    unsigned dev = e->node_dev[i];
    weft__kernel *impl = weft__kernel_impl(nd->u.kernel.k, dev);
    const weft_device_info *p = &e->rt->devices[dev]->props;
    weft__grid grid;
    weft__queue *q = NULL;
    int rc;

    /* Every range first, then the addresses: readying one range may
     * merge extents that an earlier argument's address pointed into. */
    for (uint32_t a = 0; a < nargs; a++) {
        const weft_arg *ar = &args[a];

        if (ar->type != WEFT_PARAM_BUFFER)
            continue;
        rc = (ar->access & WEFT_READ ? weft__buffer_make_valid
                                     : weft__buffer_prepare)(
            ar->buffer->root, dev, ar->buffer->offset + ar->offset,
            weft__arg_size(ar), &e->lanes);
        if (rc < 0)
            return rc;
    }
    /* The compute lane, after the step's copies and any other copies
     * still on their way into the ranges (made for other nodes). */
    if ((rc = weft__lanes_get(&e->lanes, dev, WEFT__QUEUE_COMPUTE, &q)) < 0)
        return rc;
    for (uint32_t a = 0; a < nargs && rc == 0; a++)
        if (args[a].type == WEFT_PARAM_BUFFER)
            rc = weft__lanes_after(&e->lanes, q, args[a].buffer->root, dev,
                                   args[a].buffer->offset + args[a].offset,
                                   weft__arg_size(&args[a]));
    if (rc < 0)
        return rc;
    for (uint32_t a = 0; a < nargs; a++) {
        const weft_arg *ar = &args[a];
        weft__karg *k = &e->kargs[a];

        k->type = ar->type;
        k->size = ar->size;
        k->access = 0;
        switch (ar->type) {
        case WEFT_PARAM_BUFFER:
            k->size = weft__arg_size(ar);
            k->access = ar->access;
            weft__buffer_device_ptr(ar->buffer->root, dev,
                                    ar->buffer->offset + ar->offset,
                                    &k->u.buf.mem, &k->u.buf.offset);
            break;
        case WEFT_PARAM_BYTES:
            k->u.value = e->bytes + ar->value.u64;
            break;
        case WEFT_PARAM_LOCAL:
            k->u.value = NULL;
            break;
        default:
            k->u.value = &ar->value;
            break;
        }
    }
    for (int d = 0; d < 3; d++) {
        uint32_t items = nd->u.kernel.dims.items[d];
        uint32_t gs = nd->u.kernel.dims.group[d];

        if (!gs)
            gs = d == 0 ? WEFT__MIN(64u,
                                    p->max_group_size ? p->max_group_size : 64u)
                        : 1;
        grid.group_size[d] = gs;
        grid.groups[d] = items / gs + (items % gs != 0);
    }
    grid.shared_bytes = 0;
    /* A launch that fails to enqueue has no effect: the bytes stay. */
    if ((rc = weft__drv_launch(q, impl, &grid, e->kargs, nargs)) < 0)
        return rc;
    rc = weft__lanes_issued(&e->lanes, q, NULL, 0, 0, 0);
    for (uint32_t a = 0; a < nargs; a++) {
        const weft_arg *ar = &args[a];

        if (ar->type != WEFT_PARAM_BUFFER || !(ar->access & WEFT_WRITE))
            continue;
        if (rc == 0)
            weft__buffer_written(ar->buffer->root, dev,
                                 ar->buffer->offset + ar->offset,
                                 weft__arg_size(ar));
        else
            weft__buffer_discard(ar->buffer->root, dev,
                                 ar->buffer->offset + ar->offset,
                                 weft__arg_size(ar));
    }
    return rc;
}

/* Host access to every range of a map or host node. */
static int weft__run_host(weft_exec *e, const weft__node *nd)
{
    const weft__access *acc = &e->acc[nd->acc_first];
    int rc;

    if ((rc = weft__plan_host_wait(e->plan)) < 0)
        return rc;
    for (uint32_t a = 0; a < nd->nacc; a++) {
        weft_buffer *root = acc[a].buf->root;
        size_t off = acc[a].buf->offset + acc[a].offset;

        /* Bytes that will be overwritten whole need not come over. */
        if (acc[a].mode & WEFT_READ) {
            rc = weft__buffer_make_valid(root, WEFT__HOST, off, acc[a].size,
                                         &e->lanes);
            if (rc < 0)
                return rc;
        }
        /* Copies still on their way into (or out of) these host bytes. */
        rc = weft__lanes_after(&e->lanes, NULL, root, WEFT__HOST, off,
                               acc[a].size);
        if (rc < 0)
            return rc;
        e->ptrs[a] = weft__buffer_host(root, off);
    }
    weft__host_effect();
    if (nd->kind == WEFT__NODE_MAP)
        nd->u.map.fn(e->ptrs[0], acc[0].size, nd->u.map.user);
    else
        nd->u.host.fn(e->ptrs, nd->u.host.user);
    for (uint32_t a = 0; a < nd->nacc; a++)
        if (acc[a].mode & WEFT_WRITE)
            weft__buffer_written(acc[a].buf->root, WEFT__HOST,
                                 acc[a].buf->offset + acc[a].offset,
                                 acc[a].size);
    return 0;
}

static int weft__node_trace_kind(const weft__node *nd)
{
    return nd->kind == WEFT__NODE_MAP ? WEFT__TRACE_MAP : WEFT__TRACE_HOST;
}

/* On a host worker: wait for the ticket's events, run, report. */
static void weft__host_job_run(weft__host_task *task)
{
    weft__host_job *j = (weft__host_job *)task;
    weft_exec *e = j->e;
    const weft__node *nd = &e->nodes[j->node];
    const weft__access *acc = &e->acc[nd->acc_first];
    int rc = 0;

    for (unsigned k = 0; k < j->ticket.nev && rc == 0; k++)
        rc = weft__drv_event_sync(j->ticket.ev[k]);
    j->worker = weft__hostwork_self;
    j->t0 = weft__now_ns();
    if (rc < 0) {
        weft__strlcpy(j->msg, weft_last_error(), sizeof j->msg);
        weft_clear_error();
    } else if (nd->kind == WEFT__NODE_MAP) {
        nd->u.map.fn(j->ptrs[0], acc[0].size, nd->u.map.user);
    } else {
        nd->u.host.fn(j->ptrs, nd->u.host.user);
    }
    j->t1 = weft__now_ns();
    j->rc = rc;
    /* Release: the bytes written above, for whoever reads the count. */
    for (uint32_t a = 0; a < nd->nacc; a++)
        if (acc[a].mode & WEFT_WRITE)
            __atomic_sub_fetch(&acc[a].buf->root->host_writers, 1,
                               __ATOMIC_RELEASE);
    pthread_mutex_lock(&e->host_lock);
    j->next = e->finished;
    __atomic_store_n(&e->finished, j, __ATOMIC_RELAXED);
    pthread_cond_signal(&e->host_done);
    pthread_mutex_unlock(&e->host_lock);
}

/*
 * Whether map or host node i goes to a host worker: not on a root that
 * other graphs name (their nodes wait for this one's fence, and a host
 * node has none), and only where there are workers. In a timed launch a
 * handed-over node's function is timed on its worker's own track.
 */
static int weft__host_handover(weft_exec *e, uint32_t i)
{
    for (uint32_t l = e->lock_first[i]; l < e->lock_first[i + 1]; l++)
        if (__atomic_load_n(&e->roots[e->locks[l]]->root_execs,
                            __ATOMIC_ACQUIRE) > 1)
            return 0;
    return weft__hostwork_get(e->rt) != NULL;
}

/* The job of node i, made on first use; NULL if it cannot be. */
static weft__host_job *weft__host_job_of(weft_exec *e, uint32_t i)
{
    weft__host_job *j = e->jobs[i];

    if (j)
        return j;
    j = weft__calloc(1, sizeof *j);
    if (!j)
        return NULL;
    j->ptrs = weft__calloc(e->nodes[i].nacc + 1, sizeof *j->ptrs);
    if (!j->ptrs || weft__plan_ticket_init(e->plan, &j->ticket) < 0) {
        weft__free(j->ptrs);
        weft__free(j);
        weft_clear_error();
        return NULL;
    }
    j->task.run = weft__host_job_run;
    j->e = e;
    j->node = i;
    e->jobs[i] = j;
    return j;
}

/*
 * weft__run_host up to the wait, with the roots locked: the host copy
 * readied, what the node writes marked written there, and the node handed
 * to a host worker near the device its bytes come from, with the ticket
 * of what it must wait for. WEFT__HANDED_OVER, 0 if it must run here
 * after all (no memory for its job), or an error (nothing handed over).
 */
static int weft__host_hand_over(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *acc = &e->acc[nd->acc_first];
    weft__host_job *j = weft__host_job_of(e, i);
    unsigned near = WEFT__HOST;
    int rc;

    if (!j)
        return 0;
    if (nd->nacc)
        near = weft__buffer_device_holding(
            acc[0].buf->root, acc[0].buf->offset + acc[0].offset, acc[0].size);
    if (near == WEFT__HOST)
        near = e->node_dev[i];
    weft__plan_host_begin(e->plan, &j->ticket);
    rc = weft__plan_host_wait(e->plan);
    for (uint32_t a = 0; a < nd->nacc && rc == 0; a++) {
        weft_buffer *root = acc[a].buf->root;
        size_t off = acc[a].buf->offset + acc[a].offset;

        if (acc[a].mode & WEFT_READ)
            rc = weft__buffer_make_valid(root, WEFT__HOST, off, acc[a].size,
                                         &e->lanes);
        if (rc == 0)
            rc = weft__lanes_after(&e->lanes, NULL, root, WEFT__HOST, off,
                                   acc[a].size);
        j->ptrs[a] = weft__buffer_host(root, off);
    }
    if ((rc = weft__plan_host_end(e->plan, rc)) < 0)
        return rc;
    /*
     * Written now, not when the function returns: from here the host copy
     * alone holds these bytes, so that no write-back from a device lands
     * in them while the function writes them. Nothing reads them meanwhile
     * but the nodes after this one, which wait for it, and reads that
     * widen, which host_writers stops.
     */
    for (uint32_t a = 0; a < nd->nacc; a++)
        if (acc[a].mode & WEFT_WRITE) {
            weft_buffer *root = acc[a].buf->root;

            weft__buffer_written(root, WEFT__HOST,
                                 acc[a].buf->offset + acc[a].offset,
                                 acc[a].size);
            __atomic_add_fetch(&root->host_writers, 1, __ATOMIC_RELAXED);
        }
    j->rc = 0;
    e->host_out++;
    weft__host_effect();
    weft__hostwork_submit(weft__hostwork_get(e->rt), (int)near, &j->task);
    return WEFT__HANDED_OVER;
}

/*
 * Host nodes that finished (waiting for one if wait): done, or failed
 * (the first failure's detail into msg, as run_once does), so that their
 * successors may go.
 */
static void weft__host_finished(weft_exec *e, int wait, int *first, char *msg,
                                size_t size)
{
    weft__host_job *j;

    if (!e->host_out ||
        (!wait && !__atomic_load_n(&e->finished, __ATOMIC_RELAXED)))
        return;
    pthread_mutex_lock(&e->host_lock);
    while (wait && !e->finished)
        pthread_cond_wait(&e->host_done, &e->host_lock);
    j = e->finished;
    __atomic_store_n(&e->finished, NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&e->host_lock);
    for (; j; j = j->next) {
        char label[128];

        weft__plan_host_done(e->plan, j->node, &j->ticket, j->rc == 0);
        if (j->rc == 0 && weft__plan_timed(e->plan)) {
            const weft__node *nd = &e->nodes[j->node];

            weft__plan_time_worker(e->plan, j->node, j->worker,
                                   weft__node_trace_kind(nd), j->t0, j->t1,
                                   nd->nacc ? e->acc[nd->acc_first].size : 0);
        }
        e->state[j->node] = j->rc == 0 ? WEFT__NODE_DONE : WEFT__NODE_FAILED;
        e->host_out--;
        if (j->rc < 0 && !*first) {
            *first = j->rc;
            weft__error(j->rc, "%s", j->msg);
            weft__error_prefix(
                j->rc, "node %u (%s)", j->node,
                weft__node_label(&e->nodes[j->node], label, sizeof label));
            weft__strlcpy(msg, weft_last_error(), size);
        }
    }
}

/*
 * A copy runs where the source range is already whole, else on the node's
 * device, which the source is brought to.
 */
static int weft__run_copy(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *src = &e->acc[nd->acc_first];
    const weft__access *dst = src + 1;
    weft_buffer *sr = src->buf->root, *dr = dst->buf->root;
    size_t so = src->buf->offset + src->offset;
    size_t dof = dst->buf->offset + dst->offset;
    unsigned dev = weft__buffer_device_holding(sr, so, src->size);
    int rc;

    /* Through the host copies (a host device node): the host waits. */
    if (dev == WEFT__HOST && e->node_dev[i] == WEFT__HOST &&
        (rc = weft__plan_host_wait(e->plan)) < 0)
        return rc;
    return weft__buffer_copy(dr, dof, sr, so, src->size,
                             dev != WEFT__HOST ? dev : e->node_dev[i],
                             &e->lanes);
}

/*
 * Lock roots [l0, l1) of the locks, in order, once no other graph has work
 * in flight on them that this one cannot wait for by an event: such work
 * (left before the root was shared) ends with its launch, which is waited
 * for with no lock held, since that launch may need these.
 */
static int weft__lock_roots(weft_exec *e, uint32_t l0, uint32_t l1)
{
    for (;;) {
        weft_buffer *busy = NULL;
        const void *owner = NULL;
        uint32_t l;
        int rc = 0;

        for (l = l0; l < l1; l++)
            weft__buffer_lock(e->roots[e->locks[l]]);
        for (l = l0; l < l1 && !busy && rc == 0; l++) {
            weft_buffer *root = e->roots[e->locks[l]];

            rc = weft__lanes_fence_wait(&e->lanes, root);
            if (rc > 0) {
                busy = root;
                owner = root->fence_owner;
                rc = 0;
            }
        }
        if (!busy && rc == 0)
            return 0;
        for (l = l1; l-- > l0;)
            weft__buffer_unlock(e->roots[e->locks[l]]);
        if (rc < 0)
            return rc;
        weft__buffer_wait_owner(busy, owner);
    }
}

/*
 * A read node: straight from the device that holds the range into the
 * caller's memory, on its D2H lane, where the host copy lacks the bytes
 * (the host copy is not made valid: no copy of it is needed); else the
 * host copy is made valid and copied out of, on a lane after the copies
 * into it if any are in flight. Either way the node is complete when its
 * lane's work is, and the launch's drain waits for that.
 */
static int weft__run_read(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *a = &e->acc[nd->acc_first];
    weft_buffer *root = a->buf->root;
    size_t off = a->buf->offset + a->offset;
    int rc;

    rc =
        weft__buffer_load_direct(root, off, nd->u.read_dst, a->size, &e->lanes);
    if (rc != 0)
        return rc < 0 ? rc : 0;
    rc = weft__buffer_make_valid(root, WEFT__HOST, off, a->size, &e->lanes);
    if (rc == 0)
        rc = weft__plan_host_copy(e->plan, root, off, nd->u.read_dst, a->size,
                                  &e->copies[i]);
    return rc;
}

/* Nodes whose work the issuing thread does itself (timed on the host). */
static int weft__node_on_host(const weft__node *nd)
{
    return nd->kind == WEFT__NODE_MAP || nd->kind == WEFT__NODE_HOST ||
           nd->kind == WEFT__NODE_WRITE || nd->kind == WEFT__NODE_READ ||
           nd->kind == WEFT__NODE_FILL;
}

static int weft__run_node(weft_exec *e, uint32_t i)
{
    const weft__node *nd = &e->nodes[i];
    const weft__access *a = &e->acc[nd->acc_first];
    uint32_t l0 = e->lock_first[i], l1 = e->lock_first[i + 1];
    uint64_t tick = __atomic_add_fetch(&e->rt->tick, 1, __ATOMIC_RELAXED);
    uint64_t t0 = weft__plan_timed(e->plan) ? weft__now_ns() : 0;
    int rc = 0;

    weft__plan_step_begin(e->plan, i);
    if ((rc = weft__lock_roots(e, l0, l1)) < 0) {
        weft__plan_step_end_failed(e->plan);
        return rc;
    }
    /* Room for the tracker updates after the work, which cannot fail. */
    for (uint32_t l = l0; l < l1 && rc == 0; l++)
        rc = weft__buffer_reserve(e->roots[e->locks[l]], nd->nacc);
    switch (rc < 0 ? WEFT__NODE_EMPTY : nd->kind) {
    case WEFT__NODE_KERNEL:
        rc = weft__run_kernel(e, i);
        /*
         * Out of device memory before the launch: the free space may only
         * be cut up between the blocks the node pinned. Once more from an
         * empty device, where the node's ranges pack.
         */
        if (rc == WEFT_EDEVMEM &&
            weft__buffer_evict_all(e->rt, e->node_dev[i], &e->lanes) == 0)
            rc = weft__run_kernel(e, i);
        break;
    case WEFT__NODE_WRITE:
        rc = weft__plan_host_wait(e->plan);
        if (rc == 0)
            rc = weft__buffer_store(a->buf->root, a->buf->offset + a->offset,
                                    nd->u.write_src, a->size, e->write_dev[i],
                                    &e->lanes);
        break;
    case WEFT__NODE_READ:
        rc = weft__run_read(e, i);
        break;
    case WEFT__NODE_FILL:
        rc = weft__plan_host_wait(e->plan);
        if (rc == 0)
            rc = weft__buffer_fill_range(a->buf->root,
                                         a->buf->offset + a->offset, a->size,
                                         nd->u.fill.pattern, nd->u.fill.size,
                                         e->write_dev[i], &e->lanes);
        break;
    case WEFT__NODE_COPY:
        rc = weft__run_copy(e, i);
        if (rc == WEFT_EDEVMEM &&
            weft__buffer_evict_all(e->rt, e->node_dev[i], &e->lanes) == 0)
            rc = weft__run_copy(e, i);
        break;
    case WEFT__NODE_MAP:
    case WEFT__NODE_HOST:
        rc = weft__host_handover(e, i) ? weft__host_hand_over(e, i) : 0;
        if (rc == 0)
            rc = weft__run_host(e, nd);
        break;
    case WEFT__NODE_EMPTY:
        /* A join: on a lane, so that it needs no host wait. */
        if (rc == 0 && e->pred_first[i + 1] > e->pred_first[i]) {
            weft__queue *q;

            rc = weft__lanes_get(&e->lanes, e->node_dev[i], WEFT__QUEUE_COMPUTE,
                                 &q);
        }
        break;
    }
    if (rc == 0)
        rc = weft__plan_step_end(e->plan);
    else if (rc < 0)
        weft__plan_step_end_failed(e->plan);
    if (weft__plan_timed(e->plan) && rc == 0 && weft__node_on_host(nd))
        weft__plan_time_host(e->plan, weft__node_trace_kind(nd), t0,
                             weft__now_ns(), nd->nacc ? a->size : 0);
    for (uint32_t l = l1; l-- > l0;) {
        weft_buffer *root = e->roots[e->locks[l]];
        int shared = __atomic_load_n(&root->root_execs, __ATOMIC_ACQUIRE) > 1;
        int frc = 0;

        root->next_use = tick + e->lock_next[l];
        if (rc == WEFT__HANDED_OVER) {
            /* No fence says when a host worker is done: the launch's end
             * does (for a graph that came to share the root meanwhile). */
            root->fence = NULL;
            root->fence_owner = &e->lanes;
            weft__buffer_unlock(root);
            continue;
        }
        /* Other graphs sharing the root wait for this step's work. */
        if (shared && rc == 0)
            frc = weft__plan_fence(
                e->plan, root,
                &e->fences[(size_t)e->locks[l] * e->rt->ndevices], &e->lanes);
        if (shared && (rc < 0 || frc < 0)) {
            /* No fence says when the work ends (a failed step may still
             * have copies in flight): it ends here. */
            char keep[WEFT__EXEC_MSG];

            weft__strlcpy(keep, weft_last_error(), sizeof keep);
            frc = weft__plan_drain(e->plan);
            root->fence = NULL;
            root->fence_owner = NULL;
            if (rc == 0)
                rc = frc;
            else
                weft__error(rc, "%s", keep);
        } else {
            /* Unshared: an older fence of ours would say too little. */
            if (!shared && root->fence_owner == (const void *)&e->lanes)
                root->fence = NULL;
            /*
             * Shared, plan_fence set both if the step left work in flight;
             * an owner with no fence there would make others wait for the
             * launch's end, and two launches could wait for each other.
             */
            if (!shared && !root->fence_owner)
                root->fence_owner = &e->lanes;
        }
        weft__buffer_unlock(root);
    }
    return rc;
}

/* Nodes whose issue makes the worker wait for their predecessors. */
static int weft__waits_on_host(const weft_exec *e, uint32_t i)
{
    switch (e->nodes[i].kind) {
    case WEFT__NODE_MAP:
    case WEFT__NODE_HOST:
    case WEFT__NODE_WRITE:
    case WEFT__NODE_FILL:
        return 1;
    case WEFT__NODE_COPY:
        return e->node_dev[i] == WEFT__HOST;
    default:
        return 0;
    }
}

enum { WEFT__LOOKAHEAD = 256 };

/*
 * The position in the order of the node to issue next, from next (the
 * first not issued). A node that would make the worker wait for device
 * work not finished yet (a map, a host task, a write into host memory)
 * lets the nodes after it go first, within WEFT__LOOKAHEAD of the order,
 * as long as they do not depend on it: so that device work for later
 * chunks is queued while a host node waits. Any topological order gives
 * the same result (the oracle's WEFT_EXEC_ORDER=latest checks that); when
 * every candidate would wait, the first one in the order goes. A node
 * after a host node in flight (on a host worker) is no candidate:
 * WEFT__NONE when there is none (then one is in flight: next, the first
 * not issued, has every predecessor issued).
 */
static uint32_t weft__pick(weft_exec *e, uint32_t next)
{
    uint32_t seen = 0, ready = WEFT__NONE;

    for (uint32_t k = next; k < e->nnodes && seen < WEFT__LOOKAHEAD; k++) {
        uint32_t i = e->order[k], p;

        if (e->state[i] != WEFT__NODE_PENDING)
            continue;
        seen++;
        for (p = e->pred_first[i]; p < e->pred_first[i + 1]; p++)
            if (e->state[e->preds[p]] == WEFT__NODE_PENDING ||
                e->state[e->preds[p]] == WEFT__NODE_INFLIGHT)
                break;
        if (p < e->pred_first[i + 1])
            continue; /* after a node not issued, or not finished, yet */
        if (!weft__waits_on_host(e, i) || weft__plan_preds_done(e->plan, i))
            return k;
        if (ready == WEFT__NONE)
            ready = k;
    }
    return ready;
}

_Thread_local weft__stat_sink *weft__stat_sink_cur;
_Thread_local unsigned long weft__host_effects;

/*
 * Placement again, once the first (timed) launches have taught the kernel
 * time model what the graph's kernels cost: a cost model placing with its
 * prior guesses (a kernel's time from its size and the device's compute
 * units) can put the weight on the wrong side, copies against compute.
 * Where the devices change, the plan is lowered anew, between launches
 * (nothing in flight). A graph sharing a root with another is left alone
 * (the other may wait on this plan's fences), as is one whose new devices
 * would not take a kernel's arguments.
 */
static void weft__replace(weft_exec *e)
{
    weft__place_src src = {e->rt,   e->nodes, e->nnodes, e->acc,
                           e->nacc, e->args,  e->roots};
    unsigned *dev, used = 0, moved = 0;
    weft__plan *plan;
    int rc;

    for (uint32_t r = 0; r < e->nroots; r++)
        if (__atomic_load_n(&e->roots[r]->root_execs, __ATOMIC_ACQUIRE) > 1)
            return;
    dev = weft__malloc(((size_t)e->nnodes + 1) * sizeof *dev);
    if (!dev)
        goto fail;
    memcpy(dev, e->node_dev, (size_t)e->nnodes * sizeof *dev);
    if (weft__place_graph(&src, e->policy, e->scope, e->device, e->order,
                          e->pred_first, e->preds, dev, &used) < 0)
        goto fail;
    for (uint32_t i = 0; i < e->nnodes; i++) {
        const weft__node *nd = &e->nodes[i];

        if (dev[i] == e->node_dev[i])
            continue;
        if (nd->kind != WEFT__NODE_KERNEL ||
            weft__args_match(
                nd->u.kernel.k, weft__kernel_impl(nd->u.kernel.k, dev[i]),
                &e->args[nd->u.kernel.arg_first], nd->u.kernel.nargs) < 0)
            goto fail;
        moved++;
    }
    if (!moved) {
        weft__free(dev);
        return;
    }
    rc = weft__plan_create(e->rt, e->nodes, e->nnodes, dev, e->order,
                           e->pred_first, e->preds, e->raws, e->roots,
                           e->native, &plan);
    if (rc < 0)
        goto fail;
    weft__free_jobs(e); /* made again for the new plan */
    {
        weft__plan *old = e->plan;
        unsigned *old_dev = e->node_dev;

        /* Readers of node_dev and the plan (stats, DOT) take the lock. */
        pthread_mutex_lock(&e->lock);
        e->plan = plan;
        e->lanes.set = plan;
        e->node_dev = dev;
        e->devices_used = used;
        e->steady_ok = 0;
        pthread_mutex_unlock(&e->lock);
        weft__build_write_dev(e, dev);
        weft__plan_destroy(old);
        weft__free(old_dev);
    }
    weft__debug("exec",
                "placed again with the learned kernel times: %u kernel "
                "nodes moved, %u devices used",
                moved, used);
    return;
fail:
    weft__debug("exec", "placement kept: %s",
                dev ? weft_last_error() : "out of memory");
    weft_clear_error();
    weft__free(dev);
}

/* Every root's tracker state into *buf (see weft_exec.snap). */
static int weft__exec_snapshot(weft_exec *e, unsigned char **buf, size_t *cap,
                               size_t *len)
{
    size_t pos = 0;

    for (uint32_t r = 0; r < e->nroots; r++) {
        weft_buffer *root = e->roots[r];
        size_t need;

        weft__buffer_lock(root);
        need = weft__buffer_state(root, *buf ? *buf + pos : NULL,
                                  *buf ? *cap - pos : 0);
        if (pos + need > *cap) {
            size_t c = WEFT__MAX(2 * *cap, pos + need + 256);
            unsigned char *p = weft__realloc(*buf, c);

            if (!p) {
                weft__buffer_unlock(root);
                return weft__error(WEFT_ENOMEM, "launch: out of memory");
            }
            *buf = p;
            *cap = c;
            need = weft__buffer_state(root, *buf + pos, *cap - pos);
        }
        weft__buffer_unlock(root);
        pos += need;
    }
    *len = pos;
    return 0;
}

/* Whether the roots' state now (snap) is the steady one. */
static int weft__snap_is_steady(const weft_exec *e)
{
    return e->snap_len == e->steady_len &&
           memcmp(e->snap, e->steady, e->snap_len) == 0;
}

/*
 * After an issued launch: steady if it ran as the native graph unchanged,
 * did no host-side work (which the graph does not hold: host_work) and
 * the roots end as they began (e->snap, taken before the issue).
 */
static void weft__note_steady(weft_exec *e, int have_snap, int host_work)
{
    e->steady_ok = 0;
    if (!have_snap || host_work || !weft__plan_native_matched(e->plan) ||
        weft__exec_snapshot(e, &e->steady, &e->steady_cap, &e->steady_len) <
            0) {
        weft_clear_error();
        return;
    }
    e->steady_ok = weft__snap_is_steady(e);
    if (!e->steady_ok) {
        size_t at = 0;

        while (at < e->snap_len && at < e->steady_len &&
               e->snap[at] == e->steady[at])
            at++;
        weft__debug("exec",
                    "no replay next: the launch changed the buffers' state "
                    "(%zu bytes before, %zu after, first difference at %zu)",
                    e->snap_len, e->steady_len, at);
    }
}

/*
 * One launch: every node in a topological order (weft__pick); a node
 * whose predecessor failed or was canceled is canceled. The first
 * failure's detail goes to msg.
 */
static int weft__run_once(weft_exec *e, char *msg, size_t size)
{
    weft__plan_lane_count lc[WEFT__COUNTOF(e->lane_counts)];
    uint64_t t0 = weft__now_ns();
    weft__plan_counts c;
    unsigned nlc;
    int timed, shared = 0, have_snap;
    int first = 0, drc;
    weft__stat_sink sink;
    unsigned long effects0;

    if (e->replace && !weft__plan_learning(e->plan)) {
        e->replace = 0;
        weft__replace(e);
    }
    weft__plan_launch_begin(e->plan);
    timed = weft__plan_timed(e->plan);
    for (uint32_t r = 0; r < e->nroots && !shared; r++)
        shared =
            __atomic_load_n(&e->roots[r]->root_execs, __ATOMIC_ACQUIRE) > 1;
    /*
     * A replay: the last launch ran the native graph unchanged and every
     * root is in the state that left it in, which was also the state it
     * began in; so an issue would make the same decisions, operation for
     * operation, and the graph is run again without one.
     */
    have_snap =
        !timed && !shared && weft__plan_native_possible(e->plan) &&
        weft__exec_snapshot(e, &e->snap, &e->snap_cap, &e->snap_len) == 0;
    weft_clear_error();
    if (have_snap && e->steady_ok && weft__plan_native_matched(e->plan) &&
        weft__snap_is_steady(e)) {
        /* The same decisions as the last launch: its graph, no issue.
         * Its roots are this launch's while it runs, as a step makes
         * them (eviction by another graph passes them by). */
        const uint64_t *add = (const uint64_t *)&e->replay_stats;
        uint64_t *to = (uint64_t *)&e->rt->stats;

        /* Counters the issue would have added (the fields after size). */
        for (size_t f = 1; f < sizeof e->replay_stats / sizeof *add; f++)
            if (add[f])
                weft__stat_add(&to[f], add[f]);
        uint64_t tick =
            __atomic_add_fetch(&e->rt->tick, e->nnodes, __ATOMIC_RELAXED);

        /* Eviction's bookkeeping, as the last steps leave it: the
         * root is next used at its first node of the next launch, and its
         * copies were used now. */
        for (uint32_t r = 0; r < e->nroots; r++) {
            weft_buffer *root = e->roots[r];

            weft__buffer_lock(root);
            if (!root->fence_owner)
                root->fence_owner = &e->lanes;
            root->next_use = tick + e->root_first[r];
            for (unsigned d = 0; root->replicas && d < e->rt->ndevices; d++)
                for (size_t x = 0; x < root->replicas[d].nextents; x++)
                    root->replicas[d].extents[x]->last_use = tick;
            weft__buffer_unlock(root);
        }
        if ((first = weft__plan_native_replay(e->plan)) < 0) {
            e->steady_ok = 0;
            weft__error_prefix(first, "launch (native graph)");
            weft__strlcpy(msg, weft_last_error(), size);
        }
        weft__plan_launch_end(e->plan);
        pthread_mutex_lock(&e->lock);
        e->launches++;
        e->replays++;
        e->last_ns = weft__now_ns() - t0;
        e->native_launches = weft__plan_native_launches(e->plan);
        e->timed = 0;
        pthread_mutex_unlock(&e->lock);
        return first;
    }
    memset(&sink, 0, sizeof sink);
    sink.of = &e->rt->stats;
    weft__stat_sink_cur = &sink;
    effects0 = weft__host_effects;
    weft__plan_native_begin(e->plan, !shared);
    memset(e->state, WEFT__NODE_PENDING, e->nnodes);
    for (uint32_t next = 0, k; next < e->nnodes;) {
        uint32_t i;
        unsigned char st = WEFT__NODE_DONE;
        char label[128];
        int rc;

        weft__host_finished(e, 0, &first, msg, size);
        k = weft__pick(e, next);
        if (k == WEFT__NONE) {
            weft__assert(e->host_out > 0);
            weft__host_finished(e, 1, &first, msg, size);
            continue;
        }
        i = e->order[k];
        if (k == next)
            while (++next < e->nnodes &&
                   e->state[e->order[next]] != WEFT__NODE_PENDING)
                ;

        for (uint32_t p = e->pred_first[i]; p < e->pred_first[i + 1]; p++)
            if (e->state[e->preds[p]] != WEFT__NODE_DONE)
                st = WEFT__NODE_CANCELED;
        rc = st == WEFT__NODE_DONE ? weft__run_node(e, i) : 0;
        if (rc == WEFT__HANDED_OVER) {
            st = WEFT__NODE_INFLIGHT;
        } else if (rc < 0) {
            st = WEFT__NODE_FAILED;
            if (!first) {
                first = rc;
                weft__error_prefix(
                    rc, "node %u (%s)", i,
                    weft__node_label(&e->nodes[i], label, sizeof label));
                weft__strlcpy(msg, weft_last_error(), size);
            }
        }
        e->state[i] = st;
    }
    while (e->host_out)
        weft__host_finished(e, 1, &first, msg, size);
    /* Deferred work goes to the device now (a native graph, or op by op). */
    if ((drc = weft__plan_native_end(e->plan)) < 0 && !first) {
        first = drc;
        weft__error_prefix(drc, "launch");
        weft__strlcpy(msg, weft_last_error(), size);
    }
    /*
     * The launch is over once its work is: a failure seen only here (work
     * that failed on the device) belongs to no node in particular.
     */
    if ((drc = weft__plan_drain(e->plan)) < 0 && !first) {
        first = drc;
        weft__error_prefix(drc, "launch");
        weft__strlcpy(msg, weft_last_error(), size);
    }
    weft__plan_launch_end(e->plan);
    if (!first)
        weft__note_steady(e, have_snap, weft__host_effects != effects0);
    else
        e->steady_ok = 0;
    weft__plan_counts_get(e->plan, &c);
    nlc = weft__plan_lane_counts(e->plan, lc, WEFT__COUNTOF(lc));
    weft__stat_add(&e->rt->stats.plan_events, c.events);
    weft__stat_add(&e->rt->stats.plan_waits, c.waits);
    weft__stat_sink_cur = NULL;
    if (e->steady_ok)
        e->replay_stats = sink.add;
    pthread_mutex_lock(&e->lock);
    e->counts = c;
    memcpy(e->lane_counts, lc, nlc * sizeof *lc);
    e->nlane_counts = nlc;
    e->launches++;
    e->last_ns = weft__now_ns() - t0;
    e->native_launches = weft__plan_native_launches(e->plan);
    e->native_updates = weft__plan_native_updates(e->plan);
    e->native_graphs = weft__plan_native_graphs(e->plan);
    e->timed = (unsigned)timed;
    pthread_mutex_unlock(&e->lock);
    return first;
}

void weft__exec_plan_counts(weft_exec *e, weft__plan_counts *c)
{
    pthread_mutex_lock(&e->lock);
    *c = e->counts;
    pthread_mutex_unlock(&e->lock);
}

static void *weft__worker_main(void *arg)
{
    weft_exec *e = arg;
    char msg[WEFT__EXEC_MSG];

    pthread_mutex_lock(&e->lock);
    for (;;) {
        int rc;

        while (!e->pending && !e->stop)
            pthread_cond_wait(&e->wake, &e->lock);
        if (!e->pending)
            break;
        pthread_mutex_unlock(&e->lock);
        msg[0] = '\0';
        rc = weft__run_once(e, msg, sizeof msg);
        for (uint32_t r = 0; r < e->nroots; r++)
            weft__buffer_launch_end(e->roots[r], &e->lanes);
        pthread_mutex_lock(&e->lock);
        e->last_err = rc;
        weft__strlcpy(e->last_msg, msg, sizeof e->last_msg);
        if (rc < 0 && !e->first_err) {
            e->first_err = rc;
            weft__strlcpy(e->first_msg, msg, sizeof e->first_msg);
        }
        e->pending--;
        pthread_cond_broadcast(&e->done);
    }
    pthread_mutex_unlock(&e->lock);
    return NULL;
}

/* ---- the public calls -------------------------------------------------- */

int weft_exec_launch(weft_exec *e)
{
    uint32_t r;
    int rc = 0;

    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_launch: exec is NULL");
    pthread_mutex_lock(&e->lock);
    if (!e->started) {
        int err = weft__fault("exec.pthread_create")
                      ? EAGAIN
                      : pthread_create(&e->worker, NULL, weft__worker_main, e);

        if (err) {
            pthread_mutex_unlock(&e->lock);
            return weft__error(WEFT_ENOMEM,
                               "weft_exec_launch: cannot start the worker "
                               "thread (error %d)",
                               err);
        }
        e->started = 1;
    }
    for (r = 0; r < e->nroots && rc == 0; r++)
        rc = weft__buffer_launch_begin(e->roots[r]);
    if (rc < 0) {
        /* The one that failed did not begin; undo the others. */
        for (uint32_t u = 0; u + 1 < r; u++)
            weft__buffer_launch_end(e->roots[u], NULL);
        pthread_mutex_unlock(&e->lock);
        return weft__error_prefix(rc, "weft_exec_launch");
    }
    e->pending++;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->lock);
    return 0;
}

int weft_exec_wait(weft_exec *e)
{
    char msg[WEFT__EXEC_MSG];
    int rc;

    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_wait: exec is NULL");
    pthread_mutex_lock(&e->lock);
    while (e->pending)
        pthread_cond_wait(&e->done, &e->lock);
    /* Reported once: a later wait speaks of later launches only. */
    rc = e->first_err;
    weft__strlcpy(msg, e->first_msg, sizeof msg);
    e->first_err = 0;
    pthread_mutex_unlock(&e->lock);
    return rc < 0 ? weft__error(rc, "%s", msg) : 0;
}

int weft_exec_status(weft_exec *e)
{
    char msg[WEFT__EXEC_MSG];
    int rc;

    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_status: exec is NULL");
    pthread_mutex_lock(&e->lock);
    rc = e->pending ? WEFT_ENOTREADY : e->last_err;
    weft__strlcpy(msg, e->last_msg, sizeof msg);
    pthread_mutex_unlock(&e->lock);
    if (rc == WEFT_ENOTREADY)
        return weft__error(rc, "weft_exec_status: launches in flight");
    return rc < 0 ? weft__error(rc, "%s", msg) : 0;
}

int weft_exec_destroy(weft_exec *e)
{
    weft_runtime *rt;

    if (!e)
        return 0;
    pthread_mutex_lock(&e->lock);
    while (e->pending)
        pthread_cond_wait(&e->done, &e->lock);
    e->stop = 1;
    pthread_cond_signal(&e->wake);
    pthread_mutex_unlock(&e->lock);
    if (e->started)
        pthread_join(e->worker, NULL);
    for (uint32_t i = 0; i < e->nacc; i++)
        weft__buffer_exec_ref(e->acc[i].buf, -1);
    for (uint32_t r = 0; r < e->nroots; r++)
        weft__buffer_root_execs(e->roots[r], -1);
    pthread_cond_destroy(&e->done);
    pthread_cond_destroy(&e->wake);
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->host_done);
    pthread_mutex_destroy(&e->host_lock);
    rt = e->rt;
    weft__exec_free(e);
    weft__runtime_live(rt, -1);
    return 0;
}

int weft_exec_set_arg(weft_exec *e, unsigned node, unsigned index, weft_arg arg)
{
    weft_arg *old;
    const weft__node *nd;

    if (!e)
        return weft__error(WEFT_EINVAL, "weft_exec_set_arg: exec is NULL");
    if (node >= e->nnodes || e->nodes[node].kind != WEFT__NODE_KERNEL)
        return weft__error(WEFT_EINVAL,
                           "weft_exec_set_arg: node %u is not a kernel node "
                           "(of %u nodes)",
                           node, e->nnodes);
    nd = &e->nodes[node];
    if (index >= nd->u.kernel.nargs)
        return weft__error(WEFT_EARGS,
                           "weft_exec_set_arg: node %u has %u arguments, not "
                           "%u",
                           node, nd->u.kernel.nargs, index + 1);
    old = &e->args[nd->u.kernel.arg_first + index];
    if (old->type == WEFT_PARAM_BUFFER || old->type == WEFT_PARAM_LOCAL)
        return weft__error(WEFT_EARGS,
                           "weft_exec_set_arg: node %u argument %u is a %s: "
                           "only values can change (the graph's dependencies "
                           "were inferred from its buffers)",
                           node, index,
                           old->type == WEFT_PARAM_BUFFER ? "buffer"
                                                          : "local array");
    if (arg.type != old->type || arg.size != old->size ||
        (arg.type == WEFT_PARAM_BYTES && !arg.value.bytes))
        return weft__error(WEFT_EARGS,
                           "weft_exec_set_arg: node %u argument %u: a value "
                           "of type %d and %zu bytes replaces one of type %d "
                           "and %zu bytes",
                           node, index, (int)arg.type, arg.size, (int)old->type,
                           old->size);
    /* Launches already made run with the old value. */
    pthread_mutex_lock(&e->lock);
    while (e->pending)
        pthread_cond_wait(&e->done, &e->lock);
    if (arg.type == WEFT_PARAM_BYTES)
        memcpy(e->bytes + old->value.u64, arg.value.bytes, arg.size);
    else
        old->value = arg.value;
    e->steady_ok = 0;
    pthread_mutex_unlock(&e->lock);
    return 0;
}

const weft_device *weft_exec_node_device(const weft_exec *e, unsigned node)
{
    unsigned d;

    if (!e || node >= e->nnodes) {
        weft__error(WEFT_EINVAL, "weft_exec_node_device: %s",
                    e ? "no such node" : "exec is NULL");
        return NULL;
    }
    /* The lock: placement again (weft__replace) swaps node_dev. */
    pthread_mutex_lock((pthread_mutex_t *)&e->lock);
    d = e->node_dev[node];
    pthread_mutex_unlock((pthread_mutex_t *)&e->lock);
    return weft_runtime_device(e->rt, d);
}

int weft_exec_get_stats(weft_exec *e, weft_exec_stats *stats)
{
    weft_exec_stats st;
    unsigned char *seen;

    if (!e || !stats)
        return weft__error(WEFT_EINVAL, "weft_exec_get_stats: %s is NULL",
                           e ? "stats" : "exec");
    if (stats->size < sizeof(size_t) || stats->size > sizeof st)
        return weft__error(WEFT_EINVAL,
                           "weft_exec_get_stats: stats->size %zu; set it to "
                           "sizeof(weft_exec_stats) (%zu)",
                           stats->size, sizeof st);
    seen = weft__calloc((size_t)e->rt->ndevices + 1, 1);
    if (!seen)
        return weft__error(WEFT_ENOMEM, "weft_exec_get_stats: out of memory");
    memset(&st, 0, sizeof st);
    pthread_mutex_lock(&e->lock);
    for (uint32_t i = 0; i < e->nnodes; i++)
        if (e->nodes[i].kind == WEFT__NODE_KERNEL && !seen[e->node_dev[i]]) {
            seen[e->node_dev[i]] = 1;
            st.devices_used++;
        }
    weft__free(seen);
    st.launches = e->launches;
    st.nodes = e->counts.steps;
    st.events = e->counts.events;
    st.waits = e->counts.waits;
    st.host_syncs = e->counts.host_syncs;
    st.last_ns = e->last_ns;
    st.native_launches = e->native_launches;
    st.native_replays = e->replays;
    st.native_updates = e->native_updates;
    st.native_graphs = e->native_graphs;
    st.timed = e->timed;
    for (unsigned i = 0;
         i < e->nlane_counts && st.nlanes < WEFT__COUNTOF(st.lanes); i++) {
        const weft__plan_lane_count *c = &e->lane_counts[i];
        weft_lane_stats *l = &st.lanes[st.nlanes++];

        l->device = weft_runtime_device(e->rt, c->device);
        l->role = weft__plan_slot_name(c->slot);
        l->ops = c->ops;
        l->nodes = c->nodes;
        l->busy_ns = c->busy_ns;
        l->span_ns = c->last_ns > c->first_ns ? c->last_ns - c->first_ns : 0;
    }
    pthread_mutex_unlock(&e->lock);
    st.size = stats->size;
    memcpy(stats, &st, stats->size);
    return 0;
}
