/*
 * What an external event wait in a captured CUDA graph waits for, when the
 * event is recorded by another graph (on another stream or GPU).
 *
 * weft lowers a plan that spans GPUs to one graph per GPU, joined by event
 * record and wait nodes; that is correct only if the order in which the
 * graphs are launched does not matter, or if weft launches them in an
 * order that makes it so. This program checks which, on the machine:
 *
 *     nvcc -O2 -o event_nodes tests/gpu/event_nodes.cu && ./event_nodes
 *
 * Graph R: a kernel that spins for --ms, then increments x; an external
 * record of event e. Graph W: an external wait on e; a kernel that copies
 * x into y. Each round launches both (R first, or W first), waits for both
 * and compares y with x: equal means W waited for this round's R.
 * Printed per order: rounds where W saw this round's x.
 *
 * Then, with two GPUs, which ways of copying between them a capture on
 * GPU 1 takes in (cudaMemcpyPeerAsync is cuMemcpyPeerAsync, cudaMemcpyAsync
 * with cudaMemcpyDefault is cuMemcpyAsync under unified addressing).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(x)                                                               \
    do {                                                                       \
        cudaError_t e_ = (x);                                                  \
        if (e_ != cudaSuccess) {                                               \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,         \
                    cudaGetErrorString(e_));                                   \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

__global__ void spin_then_bump(unsigned long long ns, int *x)
{
    unsigned long long t0, t;

    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    while (t - t0 < ns);
    atomicAdd(x, 1);
}

__global__ void copy_one(const int *x, int *y)
{
    *y = *(volatile const int *)x;
}

int main(int argc, char **argv)
{
    int ndev = 0, dw, rounds = 5;
    double ms = 20;
    int *x, *y, hx, hy;
    cudaStream_t sr, sw;
    cudaEvent_t e;
    cudaGraph_t gr, gw;
    cudaGraphExec_t xr, xw;

    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--ms") && i + 1 < argc)
            ms = atof(argv[++i]);
    CHECK(cudaGetDeviceCount(&ndev));
    dw = ndev > 1 ? 1 : 0;
    printf("# GPUs: %d; R on GPU 0, W on GPU %d\n", ndev, dw);
    CHECK(cudaSetDevice(0));
    CHECK(cudaMalloc(&x, sizeof *x));
    CHECK(cudaMemset(x, 0, sizeof *x));
    CHECK(cudaStreamCreateWithFlags(&sr, cudaStreamNonBlocking));
    CHECK(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    if (dw) {
        int can = 0;

        CHECK(cudaDeviceCanAccessPeer(&can, 1, 0));
        CHECK(cudaSetDevice(1));
        if (can)
            CHECK(cudaDeviceEnablePeerAccess(0, 0));
        printf("# peer access 1 -> 0: %d\n", can);
    }
    CHECK(cudaSetDevice(dw));
    CHECK(cudaMalloc(&y, sizeof *y));
    CHECK(cudaStreamCreateWithFlags(&sw, cudaStreamNonBlocking));

    /* R: captured on GPU 0. */
    CHECK(cudaSetDevice(0));
    CHECK(cudaStreamBeginCapture(sr, cudaStreamCaptureModeThreadLocal));
    spin_then_bump<<<1, 1, 0, sr>>>((unsigned long long)(ms * 1e6), x);
    CHECK(cudaEventRecordWithFlags(e, sr, cudaEventRecordExternal));
    CHECK(cudaStreamEndCapture(sr, &gr));
    CHECK(cudaGraphInstantiate(&xr, gr, 0));
    /* W: captured on GPU dw. */
    CHECK(cudaSetDevice(dw));
    CHECK(cudaStreamBeginCapture(sw, cudaStreamCaptureModeThreadLocal));
    CHECK(cudaStreamWaitEvent(sw, e, cudaEventWaitExternal));
    copy_one<<<1, 1, 0, sw>>>(x, y);
    CHECK(cudaStreamEndCapture(sw, &gw));
    CHECK(cudaGraphInstantiate(&xw, gw, 0));

    for (int order = 0; order < 2; order++) {
        int saw = 0;

        for (int r = 0; r < rounds; r++) {
            if (order == 0) {
                CHECK(cudaGraphLaunch(xr, sr));
                CHECK(cudaGraphLaunch(xw, sw));
            } else {
                CHECK(cudaGraphLaunch(xw, sw));
                CHECK(cudaGraphLaunch(xr, sr));
            }
            CHECK(cudaStreamSynchronize(sw));
            CHECK(cudaStreamSynchronize(sr));
            CHECK(cudaMemcpy(&hx, x, sizeof hx, cudaMemcpyDeviceToHost));
            CHECK(cudaMemcpy(&hy, y, sizeof hy, cudaMemcpyDeviceToHost));
            saw += hx == hy;
        }
        printf("%s: W saw this round's x in %d of %d rounds\n",
               order == 0 ? "record launched first" : "wait launched first",
               saw, rounds);
    }
    if (dw) {
        for (int way = 0; way < 2; way++) {
            cudaStreamCaptureStatus st;
            cudaError_t e1, e2;
            cudaGraph_t gp = NULL;

            CHECK(cudaSetDevice(1));
            CHECK(cudaStreamBeginCapture(sw, cudaStreamCaptureModeRelaxed));
            e1 = way == 0
                     ? cudaMemcpyPeerAsync(y, 1, x, 0, sizeof *x, sw)
                     : cudaMemcpyAsync(y, x, sizeof *x, cudaMemcpyDefault, sw);
            CHECK(cudaStreamIsCapturing(sw, &st));
            e2 = cudaStreamEndCapture(sw, &gp);
            printf("%s in a capture: call %s, capture %s, end %s\n",
                   way == 0 ? "cudaMemcpyPeerAsync" : "cudaMemcpyAsync (UVA)",
                   cudaGetErrorName(e1),
                   st == cudaStreamCaptureStatusActive        ? "active"
                   : st == cudaStreamCaptureStatusInvalidated ? "invalidated"
                                                              : "none",
                   cudaGetErrorName(e2));
            (void)cudaGetLastError();
            if (gp)
                CHECK(cudaGraphDestroy(gp));
        }
    }
    CHECK(cudaGraphExecDestroy(xr));
    CHECK(cudaGraphExecDestroy(xw));
    CHECK(cudaGraphDestroy(gr));
    CHECK(cudaGraphDestroy(gw));
    return 0;
}
