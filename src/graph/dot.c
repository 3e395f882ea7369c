/* Graphviz export of a graph: nodes with kind and kernel, edges with why. */
#include "graph.h"

#include <stdio.h>

/* Kernel names come from users; keep the DOT string well-formed. */
static void weft__dot_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

int weft_graph_write_dot(const weft_graph *g, FILE *f)
{
    char label[160], text[192];

    if (!g || !f)
        return weft__error(WEFT_EINVAL, "weft_graph_write_dot: %s is NULL",
                           g ? "file" : "graph");
    fprintf(f, "digraph weft {\n  node [shape=box];\n");
    for (uint32_t i = 0; i < g->nnodes; i++) {
        snprintf(text, sizeof text, "%u: %s", i,
                 weft__node_label(&g->nodes[i], label, sizeof label));
        fprintf(f, "  n%u [label=", i);
        weft__dot_string(f, text);
        fprintf(f, "];\n");
    }
    /* The buffers are named by the order the graph first used them. */
    for (uint32_t i = 0; i < g->nedges; i++) {
        const weft__edge *e = &g->edges[i];

        fprintf(f, "  n%u -> n%u [label=\"%s buf%u[%zu,%zu)\"];\n", e->from,
                e->to, weft__hazard_name(e->hazard), e->root, e->lo, e->hi);
    }
    for (uint32_t i = 0; i < g->nxedges; i++)
        fprintf(f, "  n%u -> n%u [label=\"explicit\", style=dashed];\n",
                g->xedges[i].from, g->xedges[i].to);
    fprintf(f, "}\n");
    if (fflush(f) != 0 || ferror(f))
        return weft__error(WEFT_EIO, "weft_graph_write_dot: write failed");
    return 0;
}
