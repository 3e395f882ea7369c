/*
 * What an OpenCL implementation does with commands that wait on a user
 * event set to an error status, and whether they then block work on
 * another queue of the same context. weft never does this (its gates and
 * bridges complete with CL_COMPLETE and carry a failure in its own state,
 * as PoCL 3 aborts and PoCL 5 hangs on it); a program's own code might, so
 * this probe shows what the implementation on the GPU machine does with
 * it. Built and run by tests/gpu/ocl_probe.sh:
 *     cc -o probe tests/gpu/ocl_failed_event.c -lOpenCL
 *     ./probe [PLATFORM [CASE STATUS]]
 * Each step prints its result; a step that blocks for 10 s ends the probe
 * with "HUNG at ...".
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *step = "start";

static void on_alarm(int sig)
{
    char msg[256];
    int n = snprintf(msg, sizeof msg, "HUNG at %s\n", step);

    (void)sig;
    if (write(1, msg, (size_t)n) < 0)
        _exit(3);
    _exit(2);
}

#define CHECK(what, rc)                                                        \
    do {                                                                       \
        cl_int rc_ = (rc);                                                     \
        printf("  %-44s %d\n", what, (int)rc_);                                \
        fflush(stdout);                                                        \
    } while (0)

#define STEP(name) (step = (name), alarm(10))

/* One case: which: 0 = write, 1 = barrier only, 2 = marker + unmap on B */
static void run_case(cl_context ctx, cl_device_id dev, int which, cl_int bad)
{
    cl_int rc;
    cl_command_queue a =
        clCreateCommandQueueWithProperties(ctx, dev, NULL, &rc);
    cl_command_queue b =
        clCreateCommandQueueWithProperties(ctx, dev, NULL, &rc);
    size_t n = 1 << 20;
    cl_mem x = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, n,
                              NULL, &rc);
    char *host = malloc(n);
    void *map;
    cl_event u = clCreateUserEvent(ctx, &rc), marker = NULL;
    cl_int st = 0;

    printf("case %d (user event set to %d):\n", which, (int)bad);
    memset(host, 1, n);
    STEP("map on b");
    map = clEnqueueMapBuffer(b, x, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0,
                             NULL, NULL, &rc);
    CHECK("clEnqueueMapBuffer (b, blocking)", rc);
    STEP("enqueue on a");
    CHECK("clEnqueueBarrierWithWaitList (a, on user)",
          clEnqueueBarrierWithWaitList(a, 1, &u, NULL));
    if (which == 0)
        CHECK("clEnqueueWriteBuffer (a, x)",
              clEnqueueWriteBuffer(a, x, CL_FALSE, 0, n, host, 0, NULL, NULL));
    CHECK("clEnqueueMarkerWithWaitList (a)",
          clEnqueueMarkerWithWaitList(a, 0, NULL, &marker));
    CHECK("clFlush (a)", clFlush(a));
    STEP("set user event");
    CHECK("clSetUserEventStatus", clSetUserEventStatus(u, bad));
    STEP("clFinish (a)");
    CHECK("clFinish (a)", clFinish(a));
    clGetEventInfo(marker, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof st, &st,
                   NULL);
    CHECK("status of the marker after it", st);
    if (which == 2) {
        STEP("barrier on b waiting for a's marker");
        CHECK("clEnqueueBarrierWithWaitList (b, on marker)",
              clEnqueueBarrierWithWaitList(b, 1, &marker, NULL));
    }
    STEP("unmap on b");
    CHECK("clEnqueueUnmapMemObject (b)",
          clEnqueueUnmapMemObject(b, x, map, 0, NULL, NULL));
    STEP("clFinish (b)");
    CHECK("clFinish (b)", clFinish(b));
    STEP("release");
    clReleaseEvent(marker);
    clReleaseEvent(u);
    clReleaseMemObject(x);
    clReleaseCommandQueue(a);
    clReleaseCommandQueue(b);
    free(host);
    alarm(0);
}

int main(int argc, char **argv)
{
    cl_platform_id plats[8];
    cl_uint np = 0, pick = argc > 1 ? (cl_uint)atoi(argv[1]) : 0;
    cl_device_id dev;
    cl_context ctx;
    cl_int rc;
    char name[256] = "";

    signal(SIGALRM, on_alarm);
    if (clGetPlatformIDs(8, plats, &np) != CL_SUCCESS || pick >= np) {
        printf("no OpenCL platform %u\n", pick);
        return 1;
    }
    clGetPlatformInfo(plats[pick], CL_PLATFORM_NAME, sizeof name, name, NULL);
    printf("platform %u: %s\n", pick, name);
    if (clGetDeviceIDs(plats[pick], CL_DEVICE_TYPE_ALL, 1, &dev, NULL))
        return 1;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    if (argc > 3)
        run_case(ctx, dev, atoi(argv[2]), atoi(argv[3]));
    else
        for (int which = 0; which < 3; which++) {
            run_case(ctx, dev, which, CL_COMPLETE);
            run_case(ctx, dev, which, -5);
        }
    clReleaseContext(ctx);
    printf("done\n");
    return 0;
}
