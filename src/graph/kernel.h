/*
 * A kernel as graphs and the scheduler see it (src/graph/): its name and
 * its implementation on each device of the runtime. Modules (src/module.c)
 * make kernels and own them; a kernel lives until its module is destroyed,
 * which is refused (WEFT_EBUSY) while a graph or an executable graph has a
 * node of one of its kernels: the counts below.
 */
#ifndef WEFT_GRAPH_KERNEL_H
#define WEFT_GRAPH_KERNEL_H

#include "../mem/machine.h"

struct weft_kernel {
    weft_module *mod;
    weft_runtime *rt;
    char *name;
    weft__kernel **impl; /* per device of rt; NULL: not there */
    weft_kernel *next;   /* the module's list (its lock) */
    long graph_nodes;    /* kernel nodes of live graphs (atomic) */
    long exec_nodes;     /* kernel nodes of live executable graphs (atomic) */
    /* The types the module's portable source declares (module.c), for
     * the builds made from it; NULL where it has none. */
    weft_param_type *portable_params;
    unsigned nportable;
};

/* Count a node of k in or out (d = 1 or -1). */
static inline void weft__kernel_ref(long *count, long d)
{
    __atomic_add_fetch(count, d, __ATOMIC_ACQ_REL);
}

/* The implementation of kernel k on device index, NULL if none. */
static inline weft__kernel *weft__kernel_impl(const weft_kernel *k,
                                              unsigned index)
{
    return index < k->rt->ndevices ? k->impl[index] : NULL;
}

#endif /* WEFT_GRAPH_KERNEL_H */
