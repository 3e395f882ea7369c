/*
 * Placement of an executable graph's kernel nodes (src/sched/): the glue
 * between the graph (src/graph/), the runtime's models (the link model of
 * calibrate.h and the kernel times of cost.h) and the policies of place.h.
 *
 * At instantiate, when no exec device is given and the policy is not
 * "single", every kernel node the user did not place gets a device among
 * the candidates: the devices of the default device's driver and type
 * (scope "driver"), or of every driver, one per piece of hardware (scope
 * "all", weft_place_scope), that have an implementation of it and where
 * its group size and buffer offsets fit. With fewer than two candidates nothing
 * is asked of the models. The graph is described to place.h with one "buffer"
 * per distinct (root, range) that nodes access, so that the chunks of one large
 * buffer are placed as the separate data they are; transfer, map and host nodes
 * run on the host, joins take no time. Each device has the executor's
 * WEFT__COMPUTE_LANES compute lanes in the model where its kernels of several
 * queues overlap (concurrent_kernels), else one; a kernel fills it at compute
 * units x 2048 items. The model books the lanes in the executor's issue order
 * (its lane rule included), not in the order a policy places the nodes.
 *
 * The link model is loaded once per runtime (the calibration cache, else a
 * quick measurement, see calibrate.h); if that fails, a default of 25 GB/s
 * and 10 us each way through the host is used and a warning says so.
 * Kernel times are learned from timed launches (plan.c records them while
 * a launch is timed: traced, or among an executable graph's first ones).
 * A time learned on one device stands for the others (in the ratio of
 * their priors) until they have their own. Once an executable graph's
 * first launches have been timed, it is placed again with what they taught
 * (exec.c, weft__replace), and lowered anew if any kernel moves: the
 * prior alone can take a long kernel for a short one and let the copies
 * decide.
 */
#ifndef WEFT_SCHED_PLACING_H
#define WEFT_SCHED_PLACING_H

#include "sched.h"

struct weft_graph;
struct weft__node;
struct weft__access;

/* What placement reads of a graph (an instantiated one keeps copies). */
typedef struct weft__place_src {
    weft_runtime *rt;
    const struct weft__node *nodes;
    uint32_t nnodes;
    const struct weft__access *acc;
    uint32_t nacc;
    const weft_arg *args;
    const unsigned char *bytes; /* of BYTES arguments (native nodes') */
    weft_buffer *const *roots;  /* as weft__access.root indexes them */
} weft__place_src;

/*
 * The policy from WEFT_PLACE (env, may be NULL) else opt (a
 * weft_place_policy; DEFAULT means heft) into *out (never DEFAULT).
 * WEFT_EINVAL names a bad value.
 */
int weft__place_policy_parse(const char *env, int opt, int *out);
/* The same for a weft_place_scope: WEFT_PLACE_SCOPE ("driver", "all"),
 * else opt (DEFAULT means DRIVER). */
int weft__place_scope_parse(const char *env, int opt, int *out);

/*
 * Devices for the unplaced kernel nodes of src under policy (a
 * weft_place_policy, not DEFAULT), dflt being the default device: their
 * entries of node_dev are set, the others left alone. order: the
 * topological order the executor lowers and issues the nodes in (the
 * model books its lanes in that order); preds in CSR form. *ndev_used
 * receives the number of distinct devices chosen (0 if the graph was left
 * to dflt).
 */
int weft__place_graph(const weft__place_src *src, int policy, int scope,
                      unsigned dflt, const uint32_t *order,
                      const uint32_t *pred_first, const uint32_t *preds,
                      unsigned *node_dev, unsigned *ndev_used);

/*
 * The devices weft__place_graph may give node i of src (under the same
 * policy, scope and dflt), marked in cap (ndevices entries): none for a
 * node that placement does not place (transfers, maps, host tasks, empty
 * nodes); the device the graph gave it; dflt alone where the policy is
 * "single" or the scope has fewer than two devices; else the candidates
 * of the scope that have an implementation and fit it (one per piece of
 * hardware for scope "all"). Returns how many it marked, or a weft error.
 */
int weft__place_node_candidates(const weft__place_src *src, int policy,
                                int scope, unsigned dflt, uint32_t i,
                                unsigned char *cap);

#endif /* WEFT_SCHED_PLACING_H */
