/*
 * Graphviz export of an executable graph's lowered plan, as its last
 * launch ran it: one cluster per device, one per lane inside it (the
 * host's steps in a cluster of their own), each node with the copies weft
 * put on copy lanes for it, and every dependency drawn as it was kept: in
 * lane order (thin, grey), by a device-side event wait (bold, blue,
 * "event"), or by the host waiting (dashed, red, "host wait"). Before any
 * launch, nodes are shown on the lanes lowering gave them.
 */
#include "exec.h"

#include <stdio.h>

static void weft__dot_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static const char *weft__mib(char *buf, size_t n, uint64_t b)
{
    if (b >= (1u << 20))
        snprintf(buf, n, "%.1f MiB", (double)b / (1 << 20));
    else if (b >= 1024)
        snprintf(buf, n, "%.1f KiB", (double)b / 1024);
    else
        snprintf(buf, n, "%llu B", (unsigned long long)b);
    return buf;
}

/* The lane node i sits on: the last launch's, else the lowered one. */
static uint32_t weft__dot_lane(const weft_exec *e, uint32_t i, int ran)
{
    uint32_t l = ran ? weft__plan_node_final(e->plan, i)
                     : weft__plan_node_lane(e->plan, i);

    if (l == UINT32_MAX && !ran)
        l = e->rt->ndevices * WEFT__LANE_SLOTS; /* the host */
    return l;
}

static void weft__dot_nodes(const weft_exec *e, FILE *f, uint32_t lane, int ran)
{
    static const char *const kinds[3] = {"h2d", "d2h", "peer"};
    char label[160], text[400], a[32];

    for (uint32_t i = 0; i < e->nnodes; i++) {
        uint64_t bytes[3];
        uint32_t copies[3];
        size_t len;

        if (weft__dot_lane(e, i, ran) != lane)
            continue;
        len = (size_t)snprintf(
            text, sizeof text, "%u: %s", i,
            weft__node_label(&e->nodes[i], label, sizeof label));
        weft__plan_node_copies(e->plan, i, bytes, copies);
        for (int k = 0; k < 3 && len < sizeof text; k++)
            if (copies[k])
                len += (size_t)snprintf(
                    text + len, sizeof text - len, "\\n+%s %s in %u", kinds[k],
                    weft__mib(a, sizeof a, bytes[k]), copies[k]);
        fprintf(f, "      n%u [label=", i);
        weft__dot_str(f, text);
        if (e->nodes[i].kind == WEFT__NODE_KERNEL)
            fprintf(f, ", style=filled, fillcolor=\"#cfe2f3\"");
        else if (e->nodes[i].kind == WEFT__NODE_NATIVE)
            fprintf(f, ", style=filled, fillcolor=\"#d9ead3\"");
        fprintf(f, "];\n");
    }
}

int weft_exec_write_dot(weft_exec *e, FILE *f)
{
    unsigned nd, host;
    int ran;

    if (!e || !f)
        return weft__error(WEFT_EINVAL, "weft_exec_write_dot: %s is NULL",
                           e ? "file" : "exec");
    nd = e->rt->ndevices;
    host = nd * WEFT__LANE_SLOTS;
    /* The worker touches the plan only during a launch, which cannot
     * start while e->lock is held. */
    pthread_mutex_lock(&e->lock);
    while (e->pending)
        pthread_cond_wait(&e->done, &e->lock);
    ran = e->launches > 0;
    fprintf(f,
            "digraph weft_plan {\n  compound=true;\n  node [shape=box];\n"
            "  label=\"plan of %u nodes (%s)\";\n",
            e->nnodes, ran ? "lanes of the last launch" : "lowered lanes");
    for (unsigned d = 0; d <= nd; d++) {
        int any = 0;

        for (uint32_t i = 0; i < e->nnodes && !any; i++) {
            uint32_t l = weft__dot_lane(e, i, ran);

            any = d < nd ? l / WEFT__LANE_SLOTS == d && l < host : l == host;
        }
        if (!any)
            continue;
        if (d == nd) {
            fprintf(f, "  subgraph cluster_host {\n    label=\"host\";\n"
                       "    subgraph cluster_host_steps {\n"
                       "      label=\"host steps\";\n");
            weft__dot_nodes(e, f, host, ran);
            fprintf(f, "    }\n  }\n");
            continue;
        }
        fprintf(f, "  subgraph cluster_d%u {\n    label=", d);
        {
            char name[300];

            snprintf(name, sizeof name, "device %u: %s", d,
                     e->rt->devices[d]->name);
            weft__dot_str(f, name);
        }
        fprintf(f, ";\n");
        for (unsigned s = 0; s < WEFT__LANE_SLOTS; s++) {
            uint32_t lane = d * WEFT__LANE_SLOTS + s;
            int has = 0;

            for (uint32_t i = 0; i < e->nnodes && !has; i++)
                has = weft__dot_lane(e, i, ran) == lane;
            if (!has)
                continue;
            fprintf(f, "    subgraph cluster_d%u_%s {\n      label=\"%s\";\n",
                    d, weft__plan_slot_name(s), weft__plan_slot_name(s));
            weft__dot_nodes(e, f, lane, ran);
            fprintf(f, "    }\n");
        }
        fprintf(f, "  }\n");
    }
    for (uint32_t i = 0; i < e->nnodes; i++) {
        if (ran && weft__dot_lane(e, i, ran) == UINT32_MAX)
            fprintf(f, "  n%u [label=\"%u (not run)\", style=dotted];\n", i, i);
        for (uint32_t k = e->pred_first[i]; k < e->pred_first[i + 1]; k++) {
            unsigned kind = ran ? weft__plan_edge_kind(e->plan, k) : 0;

            fprintf(f, "  n%u -> n%u%s;\n", e->preds[k], i,
                    kind == 1   ? " [label=\"event\", color=blue, "
                                  "penwidth=2]"
                    : kind == 2 ? " [label=\"host wait\", color=red, "
                                  "style=dashed]"
                                : " [color=gray50]");
        }
    }
    fprintf(f, "}\n");
    pthread_mutex_unlock(&e->lock);
    if (fflush(f) != 0 || ferror(f))
        return weft__error(WEFT_EIO, "weft_exec_write_dot: write failed");
    return 0;
}
