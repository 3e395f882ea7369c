/*
 * python_helper: the C side of bench/python_overhead.py. A shared object
 * linked with the shared libweft, so that the handles the script made
 * through the weft Python package are valid here: it times, in C, the same
 * graph building and the same relaunches that the script times in Python.
 */
#include <weft.h>

#include <stdint.h>
#include <time.h>

#define PYBENCH_API __attribute__((visibility("default")))

PYBENCH_API double weft_pybench_build(weft_graph *g, weft_kernel *k,
                                      weft_buffer *b, unsigned n, size_t stride,
                                      uint32_t items, uint32_t value);
PYBENCH_API double weft_pybench_relaunch(weft_exec *e, unsigned reps);
PYBENCH_API int weft_pybench_nop(void *e);

static uint64_t now_ns(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/*
 * Add n kernel nodes k(range i of b, value) over items items to g, range
 * i being [i * stride, + stride): nanoseconds per node, or a weft error
 * code.
 */
double weft_pybench_build(weft_graph *g, weft_kernel *k, weft_buffer *b,
                          unsigned n, size_t stride, uint32_t items,
                          uint32_t value)
{
    uint64_t t0 = now_ns();

    for (unsigned i = 0; i < n; i++) {
        weft_arg args[] = {
            weft_arg_buffer(b, i * stride, stride, WEFT_READ_WRITE),
            weft_arg_u32(value),
        };
        int rc = weft_graph_add_kernel(g, k, weft_dims1(items), args, 2, NULL);

        if (rc < 0)
            return rc;
    }
    return n ? (double)(now_ns() - t0) / n : 0;
}

/* Launch and wait for e reps times: nanoseconds per relaunch, or an error. */
double weft_pybench_relaunch(weft_exec *e, unsigned reps)
{
    uint64_t t0 = now_ns();

    for (unsigned i = 0; i < reps; i++) {
        int rc = weft_exec_launch(e);

        if (rc == 0)
            rc = weft_exec_wait(e);
        if (rc < 0)
            return rc;
    }
    return reps ? (double)(now_ns() - t0) / reps : 0;
}

/*
 * Nothing, in the place of weft_exec_launch and weft_exec_wait: the script
 * times its own launch() and wait() around it, which is what Python adds to
 * a relaunch whatever weft's work costs.
 */
int weft_pybench_nop(void *e)
{
    (void)e;
    return 0;
}
