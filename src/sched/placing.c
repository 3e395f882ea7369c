/*
 * Placement of an executable graph's kernel nodes: placing.h.
 */
#include "placing.h"

#include "../graph/graph.h"
#include "calibrate.h"
#include "place.h"
#include "plan.h"

#include <string.h>

static const char *const weft__policy_names[] = {
    "default", "single", "round-robin", "locality", "heft",
};

const char *weft_place_policy_name(weft_place_policy policy)
{
    if ((unsigned)policy >= WEFT__COUNTOF(weft__policy_names))
        return NULL;
    return weft__policy_names[policy];
}

int weft__place_policy_parse(const char *env, int opt, int *out)
{
    if (env) {
        for (unsigned i = 1; i < WEFT__COUNTOF(weft__policy_names); i++)
            if (strcmp(env, weft__policy_names[i]) == 0) {
                *out = (int)i;
                return 0;
            }
        return weft__error(WEFT_EINVAL,
                           "WEFT_PLACE=\"%s\" is not a placement policy "
                           "(single, round-robin, locality, heft)",
                           env);
    }
    if (opt < 0 || (unsigned)opt >= WEFT__COUNTOF(weft__policy_names))
        return weft__error(WEFT_EINVAL,
                           "placement policy %d is not a "
                           "weft_place_policy",
                           opt);
    *out = opt == WEFT_PLACE_DEFAULT ? WEFT_PLACE_HEFT : opt;
    return 0;
}

int weft__place_scope_parse(const char *env, int opt, int *out)
{
    if (env) {
        if (strcmp(env, "driver") == 0) {
            *out = WEFT_PLACE_SCOPE_DRIVER;
        } else if (strcmp(env, "all") == 0) {
            *out = WEFT_PLACE_SCOPE_ALL;
        } else {
            return weft__error(WEFT_EINVAL,
                               "WEFT_PLACE_SCOPE=\"%s\" is not a placement "
                               "scope (driver, all)",
                               env);
        }
        return 0;
    }
    if (opt != WEFT_PLACE_SCOPE_DEFAULT && opt != WEFT_PLACE_SCOPE_DRIVER &&
        opt != WEFT_PLACE_SCOPE_ALL)
        return weft__error(WEFT_EINVAL,
                           "placement scope %d is not a weft_place_scope", opt);
    *out = opt == WEFT_PLACE_SCOPE_DEFAULT ? WEFT_PLACE_SCOPE_DRIVER : opt;
    return 0;
}

/* ---- the runtime's models ---------------------------------------------- */

/* Through the host at 25 GB/s and 10 us each way: a PCIe guess. */
static int weft__links_default(weft_runtime *rt, weft__links *l)
{
    int rc = weft__links_alloc(l, rt->ndevices);

    for (unsigned d = 0; rc == 0 && d < rt->ndevices; d++) {
        l->h2d[d] = (weft__link){25e9, 10e3};
        l->d2h[d] = (weft__link){25e9, 10e3};
        l->d2d[d] = (weft__link){500e9, 5e3};
        l->source[d] = WEFT__LINK_GIVEN;
    }
    if (rc == 0 && (rc = weft__links_finish(l)) < 0)
        weft__links_free(l);
    return rc;
}

/*
 * Not rt->sched->lock: measuring the links may take long. One lock for
 * every runtime's models: they are loaded once each.
 */
static pthread_mutex_t weft__models_lock = PTHREAD_MUTEX_INITIALIZER;

weft__links *weft__runtime_links(weft_runtime *rt)
{
    weft__links *l;

    pthread_mutex_lock(&weft__models_lock);
    if (rt->sched->links_state == 0) {
        l = weft__calloc(1, sizeof *l);
        if (l && weft__links_load(rt, l) < 0) {
            weft__warn("sched",
                       "placement: the links could not be measured (%s); "
                       "using a default model",
                       weft_last_error());
            if (weft__links_default(rt, l) < 0) {
                weft__free(l);
                l = NULL;
            }
        }
        rt->sched->links = l;
        rt->sched->links_state = l ? 1 : -1;
        weft_clear_error();
    }
    l = rt->sched->links;
    pthread_mutex_unlock(&weft__models_lock);
    return l;
}

weft__ktime *weft__runtime_ktime(weft_runtime *rt)
{
    weft__ktime *m;

    pthread_mutex_lock(&weft__models_lock);
    if (!rt->sched->ktime) {
        unsigned *cu = weft__calloc((size_t)rt->ndevices + 1, sizeof *cu);

        for (unsigned d = 0; cu && d < rt->ndevices; d++)
            cu[d] = rt->devices[d]->props.compute_units;
        if (cu && weft__ktime_create(rt->ndevices, cu, &rt->sched->ktime) < 0)
            weft_clear_error();
        weft__free(cu);
    }
    m = rt->sched->ktime;
    pthread_mutex_unlock(&weft__models_lock);
    return m;
}

/* ---- describing the graph ---------------------------------------------- */

/*
 * Work items a compute unit holds at once: 2048 threads on an SM of
 * NVIDIA's recent GPUs (1536 on some), 2560 on a CU of AMD's. Only the
 * order of magnitude counts: it tells a kernel that fills the device from
 * one that leaves room beside it (place.h).
 */
enum { WEFT__PLACE_ITEMS_PER_CU = 2048 };

typedef struct weft__range_key {
    uint32_t root;
    size_t lo, hi;
} weft__range_key;

/* The "buffer" of a (root, range), added if new (a linear search per root
 * would be quadratic). keys holds room for every access, index as many. */
typedef struct weft__range_table {
    weft__range_key *keys;
    uint32_t n;
    weft__map index; /* key -> its place in keys */
} weft__range_table;

static bool weft__range_is(uintptr_t i, const void *key, const void *table)
{
    const weft__range_key *a = &((const weft__range_table *)table)->keys[i];
    const weft__range_key *b = key;

    return a->root == b->root && a->lo == b->lo && a->hi == b->hi;
}

static unsigned weft__range_index(weft__range_table *t,
                                  const weft__range_key *k)
{
    uint64_t h = weft__hash_mix(weft__hash_mix(k->root, k->lo), k->hi);
    uintptr_t *at = NULL;
    /* Room was reserved for every access: this cannot fail. */
    int added = weft__map_put(&t->index, h, k, t->n, weft__range_is, t, &at);

    weft__assert(added >= 0 && at);
    if (added)
        t->keys[t->n++] = *k;
    return (unsigned)*at;
}

static uint64_t weft__node_items(const weft__node *nd)
{
    return (uint64_t)nd->u.kernel.dims.items[0] *
           (nd->u.kernel.dims.items[1] ? nd->u.kernel.dims.items[1] : 1) *
           (nd->u.kernel.dims.items[2] ? nd->u.kernel.dims.items[2] : 1);
}

/*
 * Whether kernel node x can launch on dev as the graph gave it: its group
 * size and the offsets of its buffer arguments (instantiate checks the
 * same for the device it picks, and fails on an explicit one).
 */
static int weft__fits(const weft__place_src *g, const weft__node *x,
                      const weft__device *dev)
{
    const weft_device_info *p = &dev->props;
    const weft_arg *args = &g->args[x->u.kernel.arg_first];
    uint64_t group = 1;

    for (int d = 0; d < 3; d++)
        group *= x->u.kernel.dims.group[d] ? x->u.kernel.dims.group[d] : 1;
    if (p->max_group_size && group > p->max_group_size)
        return 0;
    for (uint32_t a = 0; a < x->u.kernel.nargs; a++)
        if (args[a].type == WEFT_PARAM_BUFFER && p->arg_offset_align > 1 &&
            (args[a].buffer->offset + args[a].offset) % p->arg_offset_align)
            return 0;
    return 1;
}

/* Whether a and b, of two drivers, are one piece of hardware. */
static int weft__same_hardware(const weft__device *a, const weft__device *b)
{
    if (a->props.type == WEFT_DEVICE_CPU && b->props.type == WEFT_DEVICE_CPU)
        return 1; /* the host's cores, whichever driver runs them */
    return a->props.pci_bus_id && b->props.pci_bus_id &&
           a->props.pci_bus_id[0] &&
           strcmp(a->props.pci_bus_id, b->props.pci_bus_id) == 0;
}

/*
 * Scope "all": of the devices cap marks, those that are the hardware of a
 * marked device of another driver that comes first (the default device's
 * driver, then runtime order) are unmarked. was: room for nd.
 */
static void weft__one_per_hardware(const weft_runtime *rt, unsigned dflt,
                                   unsigned char *cap, unsigned char *was)
{
    const weft__driver *first = rt->devices[dflt]->drv;
    unsigned nd = rt->ndevices;

    memcpy(was, cap, nd);
    for (unsigned d = 0; d < nd; d++) {
        const weft__device *x = rt->devices[d];

        for (unsigned o = 0; o < nd && cap[d]; o++) {
            const weft__device *y = rt->devices[o];
            int before =
                y->drv == first ? x->drv != first : x->drv != first && o < d;

            if (was[o] && y->drv != x->drv && before &&
                weft__same_hardware(x, y))
                cap[d] = 0;
        }
    }
}

/*
 * Mark in cand (nd entries) the devices placement may choose from: every
 * device for scope "all", else those of dflt's driver and type. Returns
 * how many it marked.
 */
static unsigned weft__place_candidates(const weft_runtime *rt, int scope,
                                       unsigned dflt, unsigned char *cand)
{
    const weft__driver *drv = rt->devices[dflt]->drv;
    unsigned ncand = 0;

    for (unsigned d = 0; d < rt->ndevices; d++)
        if (scope == WEFT_PLACE_SCOPE_ALL ||
            (rt->devices[d]->drv == drv &&
             rt->devices[d]->props.type == rt->devices[dflt]->props.type)) {
            cand[d] = 1;
            ncand++;
        }
    return ncand;
}

/*
 * The kind of node x into p and, for a kernel, its row cap of the devices
 * that can run it (the one the graph gave it, else the candidates that
 * have its kernel and fit it). was: room for nd (scratch).
 */
static void weft__place_node_kind(const weft__place_src *g, int scope,
                                  unsigned dflt, const unsigned char *cand,
                                  const weft__node *x, weft__place_node *p,
                                  unsigned char *cap, unsigned char *was)
{
    weft_runtime *rt = g->rt;
    unsigned nd = rt->ndevices;

    switch (x->kind) {
    case WEFT__NODE_KERNEL:
    case WEFT__NODE_NATIVE:
        p->kind = WEFT__PNODE_KERNEL;
        /* A native node is costed as a one-item kernel named "native". */
        p->kernel = x->kind == WEFT__NODE_KERNEL
                        ? weft_kernel_name(x->u.kernel.k)
                        : "native";
        p->items = x->kind == WEFT__NODE_KERNEL ? weft__node_items(x) : 1;
        p->capable = cap;
        if (x->device >= 0) {
            p->device = x->device;
            cap[x->device] = 1;
            break;
        }
        for (unsigned d = 0; d < nd; d++)
            cap[d] = cand[d] &&
                     weft__node_runs_on(x, g->args, g->bytes, rt, d) &&
                     (x->kind != WEFT__NODE_KERNEL ||
                      weft__fits(g, x, rt->devices[d]));
        if (scope == WEFT_PLACE_SCOPE_ALL)
            weft__one_per_hardware(rt, dflt, cap, was);
        break;
    case WEFT__NODE_EMPTY:
        p->kind = WEFT__PNODE_EMPTY;
        break;
    default:
        p->kind = WEFT__PNODE_HOST;
        break;
    }
}

/*
 * Where each of the nkeys ranges is now, into a new array *home (the
 * caller frees it): a device index, or WEFT__MEM_HOST. Data already on a
 * device stays a reason to run there (locality, heft).
 */
static int weft__place_homes(const weft__place_src *g,
                             const weft__range_key *keys, uint32_t nkeys,
                             int **home_out)
{
    unsigned nd = g->rt->ndevices;
    int *home = weft__malloc(((size_t)nkeys + 1) * sizeof *home);

    *home_out = home;
    if (!home)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    for (uint32_t b = 0; b < nkeys; b++) {
        weft_buffer *root = g->roots[keys[b].root];
        unsigned at;

        weft__buffer_lock(root);
        at = weft__buffer_device_holding(root, keys[b].lo,
                                         keys[b].hi - keys[b].lo);
        weft__buffer_unlock(root);
        home[b] = at == WEFT__HOST || at >= nd ? WEFT__MEM_HOST : (int)at;
    }
    return 0;
}

/*
 * The model's compute lanes and resident items per device into in; the
 * latter in a new array *resident_out (the caller frees it).
 */
static int weft__place_lanes(const weft_runtime *rt, const unsigned char *cand,
                             weft__place_input *in, uint64_t **resident_out)
{
    unsigned nd = rt->ndevices;
    uint64_t *resident = weft__calloc((size_t)nd + 1, sizeof *resident);

    *resident_out = resident;
    if (!resident)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    /*
     * The model gives each device a GPU's compute lanes; their kernels
     * overlap only where the device runs kernels of several queues at
     * once (not the sim, which has one compute engine).
     */
    in->compute_lanes = WEFT__GPU_COMPUTE_LANES;
    for (unsigned d = 0; d < nd; d++) {
        if (cand[d] && !rt->devices[d]->props.concurrent_kernels)
            in->compute_lanes = 1;
        resident[d] = (uint64_t)rt->devices[d]->props.compute_units *
                      WEFT__PLACE_ITEMS_PER_CU;
    }
    in->resident_items = resident;
    return 0;
}

/*
 * The cost model into in where *policy needs one (locality, heft); where
 * there is none, *policy becomes round-robin. Returns the model's policy.
 */
static weft__place_policy weft__place_model(weft_runtime *rt, int *policy,
                                            weft__place_input *in)
{
    if (*policy == WEFT_PLACE_LOCALITY || *policy == WEFT_PLACE_HEFT) {
        in->links = weft__runtime_links(rt);
        in->ktime = weft__runtime_ktime(rt);
    }
    if ((*policy == WEFT_PLACE_LOCALITY || *policy == WEFT_PLACE_HEFT) &&
        (!in->links || !in->ktime)) {
        weft__warn("sched", "placement: no cost model; round-robin instead");
        *policy = WEFT_PLACE_ROUND_ROBIN;
    }
    return *policy == WEFT_PLACE_ROUND_ROBIN ? WEFT__PLACE_ROUND_ROBIN
           : *policy == WEFT_PLACE_LOCALITY  ? WEFT__PLACE_LOCALITY
                                             : WEFT__PLACE_HEFT;
}

/*
 * The devices out chose for the unplaced kernel nodes into node_dev;
 * returns how many distinct devices the kernel nodes got. seen: room for
 * nd, zeroed.
 */
static unsigned weft__place_take(const weft__place_src *g,
                                 const weft__place_output *out,
                                 unsigned *node_dev, unsigned char *seen)
{
    unsigned used = 0;

    for (uint32_t i = 0; i < g->nnodes; i++) {
        if (!weft__node_placed(&g->nodes[i]) || out->device[i] < 0)
            continue;
        if (g->nodes[i].device < 0)
            node_dev[i] = (unsigned)out->device[i];
        if (!seen[out->device[i]]) {
            seen[out->device[i]] = 1;
            used++;
        }
    }
    return used;
}

int weft__place_node_candidates(const weft__place_src *g, int policy, int scope,
                                unsigned dflt, uint32_t i, unsigned char *cap)
{
    weft_runtime *rt = g->rt;
    unsigned nd = rt->ndevices, n = 0;
    const weft__node *x = &g->nodes[i];
    unsigned char *cand, *was;
    weft__place_node p;

    memset(cap, 0, nd);
    if (!weft__node_placed(x))
        return 0;
    if (x->device >= 0) {
        cap[x->device] = 1;
        return 1;
    }
    cand = weft__calloc((size_t)nd + 1, 1);
    was = weft__calloc((size_t)nd + 1, 1);
    if (!cand || !was) {
        weft__free(cand);
        weft__free(was);
        return weft__error(WEFT_ENOMEM, "placement: out of memory");
    }
    if (policy == WEFT_PLACE_SINGLE ||
        weft__place_candidates(rt, scope, dflt, cand) < 2) {
        cap[dflt] = 1;
        n = 1;
    } else {
        memset(&p, 0, sizeof p);
        weft__place_node_kind(g, scope, dflt, cand, x, &p, cap, was);
        for (unsigned d = 0; d < nd; d++)
            n += cap[d];
    }
    weft__free(cand);
    weft__free(was);
    return (int)n;
}

int weft__place_graph(const weft__place_src *g, int policy, int scope,
                      unsigned dflt, const uint32_t *order,
                      const uint32_t *pred_first, const uint32_t *preds,
                      unsigned *node_dev, unsigned *ndev_used)
{
    weft_runtime *rt = g->rt;
    unsigned nd = rt->ndevices, ncand, used;
    unsigned char *cand = NULL, *capable = NULL, *seen = NULL, *was = NULL;
    weft__place_node *pn = NULL;
    weft__place_access *pa = NULL;
    weft__range_table rt_ = {0};
    weft__place_input in = {0};
    weft__place_output out = {0};
    weft__place_policy pol;
    uint64_t *resident = NULL;
    unsigned *issue_pos = NULL;
    int *home = NULL;
    uint32_t n = g->nnodes, unplaced = 0;
    int rc = 0;

    *ndev_used = 0;
    if (policy == WEFT_PLACE_SINGLE)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        unplaced += weft__node_placed(&g->nodes[i]) && g->nodes[i].device < 0;
    cand = weft__calloc((size_t)nd + 1, 1);
    if (!cand)
        return weft__error(WEFT_ENOMEM, "instantiate: out of memory");
    ncand = weft__place_candidates(rt, scope, dflt, cand);
    if (ncand < 2 || unplaced == 0)
        goto out;
    pn = weft__calloc((size_t)n + 1, sizeof *pn);
    pa = weft__calloc((size_t)g->nacc + 1, sizeof *pa);
    capable = weft__calloc((size_t)n * nd + 1, 1);
    seen = weft__calloc((size_t)nd + 1, 1);
    was = weft__calloc((size_t)nd + 1, 1);
    rt_.keys = weft__malloc(((size_t)g->nacc + 1) * sizeof *rt_.keys);
    out.device = weft__malloc(((size_t)n + 1) * sizeof *out.device);
    issue_pos = weft__malloc(((size_t)n + 1) * sizeof *issue_pos);
    if (!pn || !pa || !capable || !seen || !was || !rt_.keys ||
        weft__map_reserve(&rt_.index, g->nacc) < 0 || !out.device ||
        !issue_pos) {
        rc = weft__error(WEFT_ENOMEM, "instantiate: out of memory");
        goto out;
    }
    for (uint32_t i = 0; i < n; i++) {
        const weft__node *x = &g->nodes[i];
        weft__place_node *p = &pn[i];
        unsigned char *cap = &capable[(size_t)i * nd];

        p->device = -1;
        p->access = &pa[x->acc_first];
        p->naccess = x->nacc;
        p->preds = &preds[pred_first[i]];
        p->npreds = pred_first[i + 1] - pred_first[i];
        for (uint32_t a = 0; a < x->nacc; a++) {
            const weft__access *ac = &g->acc[x->acc_first + a];
            weft__range_key k;

            k.root = ac->root;
            weft__access_root_range(ac, &k.lo, &k.hi);
            pa[x->acc_first + a].buffer = weft__range_index(&rt_, &k);
            /* A block: its own bytes, under its bounding range's key. */
            pa[x->acc_first + a].bytes =
                WEFT__MIN(weft__access_bytes(ac), (uint64_t)(k.hi - k.lo));
            pa[x->acc_first + a].mode =
                ((ac->mode & WEFT_READ) ? WEFT__ACC_READ : 0) |
                ((ac->mode & WEFT_WRITE) ? WEFT__ACC_WRITE : 0);
        }
        weft__place_node_kind(g, scope, dflt, cand, x, p, cap, was);
    }
    /*
     * A kernel no candidate can run: placed as on one device, where the
     * check of kernels says why (no implementation, the group size, an
     * argument's offset: WEFT_ENODEV, WEFT_EINVAL, WEFT_EARGS).
     */
    for (uint32_t i = 0; i < n; i++) {
        unsigned any = pn[i].kind != WEFT__PNODE_KERNEL || pn[i].device >= 0;

        for (unsigned d = 0; d < nd && !any; d++)
            any = capable[(size_t)i * nd + d];
        if (!any)
            goto out;
    }
    if ((rc = weft__place_homes(g, rt_.keys, rt_.n, &home)) < 0)
        goto out;
    in.buffer_home = home;
    /* The model books each lane in the order the executor will issue. */
    for (uint32_t k = 0; k < n; k++)
        issue_pos[order[k]] = k;
    in.issue_pos = issue_pos;
    in.nodes = pn;
    in.nnodes = n;
    in.ndevices = nd;
    in.nbuffers = rt_.n;
    if ((rc = weft__place_lanes(rt, cand, &in, &resident)) < 0)
        goto out;
    pol = weft__place_model(rt, &policy, &in);
    if ((rc = weft__place(&in, pol, &out)) < 0) {
        weft__error_prefix(rc, "instantiate: placement (%s)",
                           weft_place_policy_name(policy));
        goto out;
    }
    used = weft__place_take(g, &out, node_dev, seen);
    *ndev_used = used;
    weft__debug("sched",
                "placement %s: %u nodes over %u devices (%u compute lanes "
                "each), estimated %.3f ms, %llu bytes moved",
                weft_place_policy_name(policy), n, used, in.compute_lanes,
                out.makespan_ns / 1e6, (unsigned long long)out.bytes_moved);
out:
    weft__free(resident);
    weft__free(home);
    weft__free(cand);
    weft__free(capable);
    weft__free(seen);
    weft__free(was);
    weft__free(pn);
    weft__free(pa);
    weft__free(rt_.keys);
    weft__map_fini(&rt_.index);
    weft__free(out.device);
    weft__free(issue_pos);
    return rc;
}
