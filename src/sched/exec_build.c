/*
 * Instantiate: validation (graph/validate.c), the default device and
 * placement, the kernels against their devices, and the copies an
 * executable graph keeps. exec.h has the launch protocol.
 */
#include "exec.h"

#include "../base/options.h"
#include "../base/trace.h"
#include "hostwork.h"
#include "placing.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether device d can run every unplaced kernel and native node. */
static int weft__has_all_kernels(const weft_graph *g, unsigned d)
{
    for (uint32_t i = 0; i < g->nnodes; i++)
        if (weft__node_placed(&g->nodes[i]) && g->nodes[i].device < 0 &&
            !weft__node_runs_on(&g->nodes[i], g->args, g->bytes, g->rt, d))
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
            return weft__error(WEFT_EINVAL,
                               "weft_graph_instantiate: opts->device is not "
                               "one of the graph's runtime");
        *out = d->props.index;
        return 0;
    }
    for (uint32_t i = 0; i < g->nnodes; i++) {
        const weft__node *nd = &g->nodes[i];

        if (!weft__node_placed(nd))
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
        /* No kernel: the first device whose memory is host memory moves
         * nothing; else device 0. */
        *out = 0;
        for (unsigned d = rt->ndevices; d-- > 0;)
            if (rt->devices[d]->drv->memory_is_host)
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

        if (!weft__node_placed(nd) || nd->device >= 0)
            continue;
        for (d = 0; d < rt->ndevices; d++)
            if (weft__node_runs_on(nd, g->args, g->bytes, rt, d))
                break;
        if (d == rt->ndevices)
            return weft__node_error(WEFT_ENODEV, g->nodes, i,
                                    "no device of the runtime has an "
                                    "implementation of the %s",
                                    nd->kind == WEFT__NODE_KERNEL
                                        ? "kernel"
                                        : "native node (the drivers it "
                                          "names have no device here, or "
                                          "no native nodes)");
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
        unsigned dev = o->device || !weft__node_placed(nd) ? dflt
                       : nd->device >= 0 ? (unsigned)nd->device
                                         : node_dev[i];
        const weft_device_info *p = &g->rt->devices[dev]->props;
        const weft_arg *args;
        uint64_t group = 1;
        int rc;

        node_dev[i] = dev;
        if (nd->kind == WEFT__NODE_NATIVE &&
            !weft__node_runs_on(nd, g->args, g->bytes, g->rt, dev))
            return weft__node_error(WEFT_ENODEV, g->nodes, i,
                                    "the native node has no implementation "
                                    "for device %u (%s, driver %s)",
                                    dev, g->rt->devices[dev]->name,
                                    g->rt->devices[dev]->drv->name);
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

/*
 * WEFT_EXEC_ORDER=latest issues the nodes in an order as far from
 * insertion order as the edges allow (weft__graph_order): any such order
 * must give the sequential result, so the oracle uses it to catch a
 * dependency the graph failed to infer.
 */
static int weft__exec_order_latest(void)
{
    unsigned order = 0; /* WEFT_EXEC_ORDER: earliest|latest */

    weft__opt_enum(WEFT__OPT_EXEC_ORDER, &order);
    return order == 1;
}

/* ---- the executable graph ---------------------------------------------- */

/*
 * e->write_dev from node_dev: a write or fill node stores into the device
 * of the first kernel that follows it (by an edge), so that bytes a kernel
 * will read there are not also written to where an earlier launch left a
 * copy (weft__buffer_store's prefer).
 */
void weft__exec_build_write_dev(weft_exec *e, const unsigned *node_dev)
{
    for (uint32_t i = 0; i < e->nnodes; i++)
        e->write_dev[i] = WEFT__HOST;
    for (uint32_t j = 0; j < e->nnodes; j++) {
        if (!weft__node_placed(&e->nodes[j]))
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
void weft__exec_free_jobs(weft_exec *e)
{
    for (uint32_t i = 0; e->jobs && i < e->nnodes; i++)
        if (e->jobs[i]) {
            weft__plan_ticket_fini(&e->jobs[i]->ticket);
            weft__free(e->jobs[i]->ptrs);
            weft__free(e->jobs[i]->seen);
            weft__free(e->jobs[i]->call);
            weft__free(e->jobs[i]);
            e->jobs[i] = NULL;
        }
}

void weft__exec_free(weft_exec *e)
{
    weft__exec_free_jobs(e);
    weft__free(e->fast_tasks);
    weft__free(e->fast_ptrs);
    weft__free(e->fast_roots);
    weft__free(e->fast_runners);
    weft__exec_fast_free_claims(e);
    weft__free(e->jobs);
    weft__plan_destroy(e->plan);
    for (size_t i = 0; e->fences && i < (size_t)e->nroots * e->rt->ndevices;
         i++)
        if (e->fences[i])
            weft__drv_event_destroy(e->fences[i]);
    weft__free(e->fences);
    weft__free(e->copies);
    weft__free(e->run.seen);
    weft__free(e->launch_seen);
    weft__free(e->node_times);
    weft__lanes_release(&e->lanes);
    if (e->share) {
        weft__graph_share_drop(e->share);
    } else {
        weft__free((void *)e->nodes);
        weft__free((void *)e->acc);
        weft__free((void *)e->raws);
        weft__free((void *)e->runs);
    }
    weft__free(e->args);
    weft__free(e->bytes);
    weft__free(e->ncall);
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
    weft__free(e->arg_at);
    weft__free(e->spans);
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

int weft__exec_issue_state(weft_exec *e)
{
    int rc;

    if (e->issue_state)
        return 0;
    if ((rc = weft__build_locks(e)) < 0 || (rc = weft__build_next_use(e)) < 0)
        return rc;
    weft__exec_build_write_dev(e, e->node_dev);
    e->issue_state = 1;
    return 0;
}

/* The caller's options over the defaults, checked. */
static int weft__exec_options(const weft_exec_options *opts,
                              weft_exec_options *o)
{
    if (opts) {
        if (opts->size < sizeof(size_t) || opts->size > sizeof *o)
            return weft__error(WEFT_EINVAL,
                               "weft_graph_instantiate: options size %zu is "
                               "not that of weft_exec_options (%zu); start "
                               "from WEFT_EXEC_OPTIONS_INIT",
                               opts->size, sizeof *o);
        memcpy(o, opts, opts->size);
    }
    if (o->native_graphs != WEFT_NATIVE_GRAPHS_DEFAULT &&
        o->native_graphs != WEFT_NATIVE_GRAPHS_OFF &&
        o->native_graphs != WEFT_NATIVE_GRAPHS_ON)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_instantiate: opts->native_graphs %d "
                           "is none of weft_native_graphs",
                           (int)o->native_graphs);
    /* Checked here too, so that a device given does not hide them. */
    if (o->policy < WEFT_PLACE_DEFAULT || o->policy > WEFT_PLACE_HEFT)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_instantiate: opts->policy %d is none "
                           "of weft_place_policy",
                           (int)o->policy);
    if (o->place_scope < WEFT_PLACE_SCOPE_DEFAULT ||
        o->place_scope > WEFT_PLACE_SCOPE_ALL)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_instantiate: opts->place_scope %d is "
                           "none of weft_place_scope",
                           (int)o->place_scope);
    if (o->priority != WEFT_PRIORITY_DEFAULT &&
        o->priority != WEFT_PRIORITY_HIGH)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_instantiate: opts->priority %d is none "
                           "of weft_priority",
                           (int)o->priority);
    return 0;
}

/*
 * Where the nodes run: the default device dev for all, then placement of
 * the kernels the user did not place (unless o names a device). Sets
 * e->node_dev, e->policy, e->scope and e->devices_used.
 */
/* The policy and scope of o over the runtime's (its options and env). */
static int weft__exec_policy(weft_runtime *rt, const weft_exec_options *o,
                             int *policy, int *scope)
{
    int rc;

    *policy = rt->sched->place_policy;
    *scope = rt->sched->place_scope;
    if (o->policy != WEFT_PLACE_DEFAULT &&
        (rc = weft__place_policy_parse(NULL, o->policy, policy)) < 0)
        return rc;
    if (o->place_scope != WEFT_PLACE_SCOPE_DEFAULT &&
        (rc = weft__place_scope_parse(NULL, o->place_scope, scope)) < 0)
        return rc;
    return 0;
}

static int weft__exec_place(weft_exec *e, const weft_graph *g,
                            const weft_exec_options *o, unsigned dev)
{
    weft__place_src src = {g->rt,   g->nodes, g->nnodes, g->acc,
                           g->nacc, g->args,  g->bytes,  e->roots};
    int policy, scope;
    int rc;

    for (uint32_t i = 0; i < g->nnodes; i++)
        e->node_dev[i] = dev;
    if (o->device)
        return 0;
    if ((rc = weft__exec_policy(e->rt, o, &policy, &scope)) < 0)
        return rc;
    if ((rc = weft__place_graph(&src, policy, scope, dev, e->order,
                                e->pred_first, e->preds, e->node_dev,
                                &e->devices_used)) < 0)
        return rc;
    e->policy = policy;
    e->scope = scope;
    return 0;
}

/*
 * What an executable graph keeps of the graph (its nodes and accesses
 * shared, not copied, where the graph has both), and its scratch.
 */
static int weft__exec_copy(weft_exec *e, weft_graph *g)
{
    uint32_t maxargs = WEFT__MAX(1u, g->max_node_args);
    uint32_t maxacc = WEFT__MAX(1u, g->max_node_acc);

    if (g->nodes && g->acc && (e->share = weft__graph_share_take(g))) {
        e->nodes = e->share->nodes;
        e->acc = e->share->acc;
        e->raws = e->share->raws;
        e->runs = e->share->runs;
    } else {
        e->nodes = weft__dup(g->nodes, (size_t)g->nnodes * sizeof *g->nodes);
        e->acc = weft__dup(g->acc, (size_t)g->nacc * sizeof *g->acc);
        e->raws = weft__dup(g->raws, (size_t)g->nraws * sizeof *g->raws);
        e->runs = weft__dup(g->runs, (size_t)g->nruns * sizeof *g->runs);
    }
    e->args = weft__dup(g->args, (size_t)g->nargs * sizeof *g->args);
    e->bytes = weft__dup(g->bytes, g->nbytes);
    e->nruns = g->nruns;
    e->kargs = weft__malloc(maxargs * sizeof *e->kargs);
    e->arg_at = weft__calloc((size_t)g->nargs + 1, sizeof *e->arg_at);
    e->spans = weft__malloc(WEFT__MAX(maxargs, maxacc) * sizeof *e->spans);
    e->ncall = weft__malloc(sizeof *e->ncall + maxacc * sizeof *e->ncall->mem);
    e->ptrs = weft__malloc(maxacc * sizeof *e->ptrs);
    e->state = weft__malloc((size_t)g->nnodes + 1);
    e->write_dev = weft__malloc(((size_t)g->nnodes + 1) * sizeof *e->write_dev);
    e->jobs = weft__calloc((size_t)g->nnodes + 1, sizeof *e->jobs);
    e->run.seen =
        weft__calloc((size_t)g->rt->ndevices + 1, sizeof *e->run.seen);
    e->launch_seen =
        weft__calloc((size_t)g->rt->ndevices + 1, sizeof *e->launch_seen);
    e->copies = weft__calloc((size_t)g->nnodes + 1, sizeof *e->copies);
    e->fences = weft__calloc((size_t)g->nroots * g->rt->ndevices + 1,
                             sizeof *e->fences);
    if (!e->nodes || !e->acc || !e->args || !e->bytes ||
        (!e->share && (!e->raws || !e->runs)) || !e->kargs || !e->arg_at ||
        !e->spans || !e->ncall || !e->ptrs || !e->state || !e->write_dev ||
        !e->jobs || !e->copies || !e->fences || !e->run.seen || !e->launch_seen)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    return 0;
}

int weft_graph_instantiate(weft_graph *g, const weft_exec_options *opts,
                           weft_exec **out)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft__queue *q = NULL;
    weft_exec *e;
    unsigned dev = 0;
    int rc;

    if (!g || !out)
        return weft__error(WEFT_EINVAL, "weft_graph_instantiate: %s is NULL",
                           g ? "result" : "graph");
    if ((rc = weft__exec_options(opts, &o)) < 0)
        return rc;
    e = weft__calloc_aligned(1, sizeof *e, WEFT__CACHE_LINE);
    if (!e)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    weft__lanes_init(&e->lanes, g->rt);
    e->rt = g->rt;
    e->native = (int)o.native_graphs;
    e->priority = (int)o.priority;
    e->nnodes = g->nnodes;
    e->nacc = g->nacc;
    e->nroots = g->nroots;
    if ((rc = weft__graph_preds(g, &e->pred_first, &e->preds)) < 0)
        goto fail;
    e->order = weft__malloc(((size_t)g->nnodes + 1) * sizeof *e->order);
    if (!e->order) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto fail;
    }
    if ((rc = weft__graph_order(g, e->pred_first, e->preds,
                                weft__exec_order_latest(), e->order)) < 0 ||
        (rc = weft__graph_check(g)) < 0 ||
        (rc = weft__choose_device(g, &o, &dev)) < 0)
        goto fail;
    e->node_dev = weft__malloc(((size_t)g->nnodes + 1) * sizeof *e->node_dev);
    if (!e->node_dev) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto fail;
    }
    e->roots = weft__malloc(((size_t)g->nroots + 1) * sizeof *e->roots);
    if (!e->roots) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto fail;
    }
    for (uint32_t i = 0; i < g->nroots; i++)
        e->roots[i] = g->roots[i].buf;
    if ((rc = weft__exec_place(e, g, &o, dev)) < 0)
        goto fail;
    if ((rc = weft__check_kernels(g, &o, dev, e->node_dev)) < 0)
        goto fail;
    e->device = dev;
    if ((rc = weft__exec_copy(e, g)) < 0)
        goto fail;
    e->host_only = g->nissued == 0;
    for (uint32_t i = 0; i < e->nnodes && !e->host_tasks; i++)
        e->host_tasks = e->nodes[i].kind == WEFT__NODE_HOST ||
                        e->nodes[i].kind == WEFT__NODE_MAP;
    if (!e->host_only && (rc = weft__exec_issue_state(e)) < 0)
        goto fail;
    if ((rc = weft__plan_create(e->rt, e->nodes, e->nnodes, e->node_dev,
                                e->order, e->pred_first, e->preds, e->raws,
                                e->roots, e->native, &e->plan)) < 0)
        goto fail;
    weft__plan_set_priority(e->plan, e->priority);
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
    pthread_cond_init(&e->done, NULL);
    pthread_mutex_init(&e->host_lock, NULL);
    pthread_cond_init(&e->host_done, NULL);
    for (uint32_t i = 0; i < e->nnodes; i++)
        if (e->nodes[i].kind == WEFT__NODE_KERNEL)
            weft__kernel_ref(&e->nodes[i].u.kernel.k->exec_nodes, 1);
    weft__exec_acc_refs(e, 1);
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
int weft_graph_candidate_devices(weft_graph *g, weft_node node,
                                 const weft_exec_options *opts,
                                 const weft_device **devs, unsigned max,
                                 unsigned *count)
{
    weft_exec_options o = WEFT_EXEC_OPTIONS_INIT;
    weft__place_src src;
    unsigned char *cap;
    unsigned dev, k = 0;
    int policy, scope, rc;

    if (!g || !count)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_candidate_devices: %s is NULL",
                           g ? "count" : "graph");
    if (!devs && max)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_candidate_devices: devs is NULL with "
                           "max %u",
                           max);
    if (node >= g->nnodes)
        return weft__error(WEFT_EINVAL,
                           "weft_graph_candidate_devices: node %u of %u "
                           "nodes",
                           node, g->nnodes);
    if ((rc = weft__exec_options(opts, &o)) < 0 ||
        (rc = weft__choose_device(g, &o, &dev)) < 0 ||
        (o.device == NULL &&
         (rc = weft__exec_policy(g->rt, &o, &policy, &scope)) < 0))
        return weft__error_prefix(rc, "weft_graph_candidate_devices");
    cap = weft__calloc((size_t)g->rt->ndevices + 1, 1);
    if (!cap)
        return weft__error(WEFT_ENOMEM,
                           "weft_graph_candidate_devices: out of memory");
    if (o.device) {
        /* Every node on that device (as instantiate does). */
        cap[dev] = weft__node_placed(&g->nodes[node]) != 0;
    } else {
        src = (weft__place_src){g->rt,   g->nodes, g->nnodes, g->acc,
                                g->nacc, g->args,  g->bytes,  NULL};
        rc = weft__place_node_candidates(&src, policy, scope, dev, node, cap);
        if (rc < 0) {
            weft__free(cap);
            return weft__error_prefix(rc, "weft_graph_candidate_devices");
        }
    }
    for (unsigned d = 0; d < g->rt->ndevices; d++)
        if (cap[d]) {
            if (k < max)
                devs[k] = weft_runtime_device(g->rt, d);
            k++;
        }
    weft__free(cap);
    *count = k;
    return 0;
}
