/*
 * Native graphs of the cuda driver: a stream capture, instantiated (or
 * updated in place) and launched as a CUDA graph.
 */
#include "internal.h"

#include <string.h>

/* ---- native graphs (stream capture) ------------------------------------ */

typedef struct cuda_graph {
    CUgraph graph;
    CUgraphExec exec;
    int ordinal;
} cuda_graph;

int weft__cuda_graph_supported(const weft__device *dev)
{
    (void)dev;
    return weft__cu.StreamBeginCapture && weft__cu.StreamEndCapture &&
           weft__cu.GraphInstantiateWithFlags && weft__cu.GraphLaunch &&
           weft__cu.GraphExecDestroy && weft__cu.GraphDestroy;
}

int weft__cuda_graph_begin(weft__queue *q)
{
    CUresult res;
    int rc;

    if (!weft__cu.StreamBeginCapture || !weft__cu.StreamEndCapture ||
        !weft__cu.GraphInstantiateWithFlags || !weft__cu.GraphLaunch ||
        !weft__cu.GraphExecDestroy || !weft__cu.GraphDestroy)
        return weft__error(WEFT_ENOTSUP, "cuda: the driver has no graphs");
    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuStreamBeginCapture")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.StreamBeginCapture(cuda_stream(q),
                                            CU_STREAM_CAPTURE_MODE_RELAXED);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuStreamBeginCapture: GPU %d",
                               cuda_ctx(q->ctx)->ordinal);
    return 0;
}

/*
 * In a capture: an event record node (for graphs of other GPUs to wait
 * for), and an event wait node (driver.h: the record waited for is the
 * latest when the graph is launched).
 */
int weft__cuda_graph_record_external(weft__event *ev, weft__queue *q)
{
    CUresult res;
    int rc;

    if (!weft__cu.EventRecordWithFlags)
        return weft__error(WEFT_ENOTSUP,
                           "cuda: the driver has no cuEventRecordWithFlags");
    if (ev->ctx->dev != q->ctx->dev)
        return weft__error(
            WEFT_EINVAL, "event of GPU %d recorded on a queue of GPU %d",
            cuda_ctx(ev->ctx)->ordinal, cuda_ctx(q->ctx)->ordinal);
    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuEventRecordWithFlags")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.EventRecordWithFlags(cuda_ev(ev), cuda_stream(q),
                                              CU_EVENT_RECORD_EXTERNAL);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0,
                               "cuEventRecordWithFlags (external): GPU %d",
                               cuda_ctx(q->ctx)->ordinal);
    return 0;
}

int weft__cuda_graph_wait_external(weft__queue *q, weft__event *ev)
{
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuStreamWaitEvent")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.StreamWaitEvent(cuda_stream(q), cuda_ev(ev),
                                         CU_EVENT_WAIT_EXTERNAL);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(
            res, 0,
            "cuStreamWaitEvent (external): queue of GPU %d on an "
            "event of GPU %d",
            cuda_ctx(q->ctx)->ordinal, cuda_ctx(ev->ctx)->ordinal);
    return 0;
}

/*
 * The capture becomes old's graph if old's executable graph can take it
 * (cuGraphExecUpdate: same topology, other parameters), else a new one.
 */
int weft__cuda_graph_end(weft__queue *q, void *old, void **out, int *updated)
{
    cuda_graph *g = old;
    CUgraph graph = NULL;
    CUgraphExec exec = NULL;
    CUresult res;
    int rc;

    if (updated)
        *updated = 0;
    if ((rc = weft__cuda_enter(q->ctx)) < 0) {
        if (out)
            weft__cuda_graph_destroy(g); /* ours, as driver.h says */
        return rc;
    }
    res = weft__cu.StreamEndCapture(cuda_stream(q), &graph);
    if (res != CUDA_SUCCESS || !out) {
        if (graph && weft__cu.GraphDestroy(graph) != CUDA_SUCCESS)
            weft__warn("cuda",
                       "a captured graph of GPU %d was not freed "
                       "cleanly",
                       cuda_ctx(q->ctx)->ordinal);
        if (out)
            weft__cuda_graph_destroy(g);
        return res != CUDA_SUCCESS
                   ? weft__cuda_fail(res, 0, "cuStreamEndCapture: GPU %d",
                                     cuda_ctx(q->ctx)->ordinal)
                   : 0;
    }
    if (g && weft__cu.GraphExecUpdate) {
        CUgraphExecUpdateResultInfo info;

        memset(&info, 0, sizeof info);
        res = weft__fault("cuda.cuGraphExecUpdate")
                  ? CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
                  : weft__cu.GraphExecUpdate(g->exec, graph, &info);
        if (res == CUDA_SUCCESS) {
            /* The executable graph keeps what it needs of the new one. */
            if (weft__cu.GraphDestroy(g->graph) != CUDA_SUCCESS)
                weft__warn("cuda", "a graph of GPU %d was not freed cleanly",
                           g->ordinal);
            g->graph = graph;
            if (updated)
                *updated = 1;
            *out = g;
            return 0;
        }
        weft__debug("cuda",
                    "cuGraphExecUpdate: GPU %d: error %d (result %d): a new "
                    "graph",
                    g->ordinal, (int)res, (int)info.result);
    }
    weft__cuda_graph_destroy(g);
    g = NULL;
    res = weft__fault("cuda.cuGraphInstantiateWithFlags")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.GraphInstantiateWithFlags(&exec, graph, 0);
    if (res != CUDA_SUCCESS) {
        weft__cu.GraphDestroy(graph);
        return weft__cuda_fail(res, 0, "cuGraphInstantiateWithFlags: GPU %d",
                               cuda_ctx(q->ctx)->ordinal);
    }
    if (!(g = weft__calloc(1, sizeof *g))) {
        weft__cu.GraphExecDestroy(exec);
        weft__cu.GraphDestroy(graph);
        return weft__error(WEFT_ENOMEM, "cuda: out of memory for a graph");
    }
    g->graph = graph;
    g->exec = exec;
    g->ordinal = cuda_ctx(q->ctx)->ordinal;
    *out = g;
    return 0;
}

int weft__cuda_graph_launch(void *graph, weft__queue *q)
{
    cuda_graph *g = graph;
    CUresult res;
    int rc;

    if ((rc = weft__cuda_enter(q->ctx)) < 0)
        return rc;
    res = weft__fault("cuda.cuGraphLaunch")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.GraphLaunch(g->exec, cuda_stream(q));
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuGraphLaunch: GPU %d", g->ordinal);
    return 0;
}

void weft__cuda_graph_destroy(void *graph)
{
    cuda_graph *g = graph;

    if (!g)
        return;
    if (weft__cu.GraphExecDestroy(g->exec) != CUDA_SUCCESS ||
        weft__cu.GraphDestroy(g->graph) != CUDA_SUCCESS)
        weft__warn("cuda", "a graph of GPU %d was not freed cleanly",
                   g->ordinal);
    weft__free(g);
}
