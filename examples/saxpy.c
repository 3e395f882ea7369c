/*
 * saxpy: the smallest complete weft program.
 *
 * y = a * x + y over n floats, as a graph of one kernel node: open the
 * runtime, build the kernel for every device, wrap the two arrays as
 * buffers, add the node, instantiate, launch, wait, check.
 */
#include <weft.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* The kernel for GPUs: weft compiles it as CUDA C++ or OpenCL C. */
static const char saxpy_source[] =
    "WEFT_KERNEL void saxpy(WEFT_GLOBAL float *y, WEFT_GLOBAL const float *x,\n"
    "                       float a, unsigned n)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < n) y[i] = a * x[i] + y[i];\n"
    "}\n";

/* The same kernel for the CPU. It is called once per work-group. */
static void saxpy_host(const weft_host_group *g, void *const *args)
{
    float *y = args[0];
    const float *x = args[1];
    float a = *(const float *)args[2];
    uint32_t n = *(const uint32_t *)args[3];
    uint32_t first = g->group[0] * g->group_size[0];

    for (uint32_t i = first; i < first + g->group_size[0] && i < n; i++)
        y[i] = a * x[i] + y[i];
}

static const weft_param_type saxpy_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_F32, WEFT_PARAM_U32};
static const weft_host_kernel host_kernels[] = {
    {"saxpy", saxpy_host, 4, saxpy_params, NULL, NULL, NULL},
};

/* On failure: remember what failed and go clean up. */
#define TRY(call)                                                              \
    do {                                                                       \
        rc = (call);                                                           \
        if (rc < 0) {                                                          \
            what = #call;                                                      \
            goto out;                                                          \
        }                                                                      \
    } while (0)

int main(void)
{
    enum { N = 1 << 20 };
    const float a = 2.0f;
    const weft_module_source variants[] = {
        {WEFT_SOURCE_PORTABLE, saxpy_source, 0, NULL, "saxpy"},
        {WEFT_SOURCE_HOST, host_kernels, 1, NULL, "saxpy (C)"},
    };
    weft_runtime *rt = NULL;
    weft_module *mod = NULL;
    weft_kernel *saxpy;
    weft_buffer *xb = NULL, *yb = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_device_info info = {.size = sizeof info};
    float *x = malloc(N * sizeof *x), *y = malloc(N * sizeof *y);
    const char *what = NULL;
    long wrong = 0;
    int rc = 0;

    if (!x || !y) {
        fprintf(stderr, "saxpy: out of memory\n");
        return 1;
    }
    for (uint32_t i = 0; i < N; i++) {
        x[i] = (float)i;
        y[i] = 1.0f;
    }

    /* Every device of every driver, in the order CUDA, OpenCL, host. */
    TRY(weft_runtime_create(&rt, NULL));
    eo.device = weft_runtime_device(rt, 0);
    TRY(weft_device_get_info(eo.device, &info));
    printf("saxpy: on %s (%s)\n", info.name, info.driver);

    /* Each device builds the first variant it can take. */
    TRY(weft_module_create(rt, variants, 2, &mod));
    TRY(weft_module_get_kernel(mod, "saxpy", &saxpy));

    /* The arrays become buffers; weft copies them where they are needed. */
    TRY(weft_buffer_wrap(rt, x, N * sizeof *x, &xb));
    TRY(weft_buffer_wrap(rt, y, N * sizeof *y, &yb));

    weft_arg args[] = {
        weft_arg_buffer(yb, 0, N * sizeof *y, WEFT_READ_WRITE),
        weft_arg_buffer(xb, 0, N * sizeof *x, WEFT_READ),
        weft_arg_f32(a),
        weft_arg_u32(N),
    };
    TRY(weft_graph_create(rt, &g));
    TRY(weft_graph_add_kernel(g, saxpy, weft_dims1(N), args, 4, NULL));
    /* eo.device pins the graph; leave it NULL to let weft place the work */
    TRY(weft_graph_instantiate(g, &eo, &e));
    TRY(weft_exec_launch(e));
    TRY(weft_exec_wait(e));
    /* y[] is the buffer's host copy: bring the result back into it */
    TRY(weft_buffer_sync_host(yb));

    for (uint32_t i = 0; i < N; i++)
        if (y[i] != a * (float)i + 1.0f && wrong++ < 5)
            fprintf(stderr, "saxpy: y[%u] = %g, expected %g\n", i, (double)y[i],
                    (double)(a * (float)i + 1.0f));
    printf("saxpy: %d elements, %s\n", N, wrong ? "WRONG" : "correct");

out:
    if (rc < 0)
        fprintf(stderr, "saxpy: %s: %s\n  %s\n", what, weft_strerror(rc),
                weft_last_error());
    /* Children before parents; each destroy accepts NULL. */
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    weft_buffer_destroy(yb);
    weft_buffer_destroy(xb);
    weft_module_destroy(mod);
    weft_runtime_destroy(rt);
    free(x);
    free(y);
    return rc < 0 || wrong ? 1 : 0;
}
