/*
 * stencil: an iterative computation that launches one graph many times.
 *
 * A 1-D heat equation by Jacobi steps: each step computes a new array from
 * the old one. The graph is two steps, a -> b then b -> a, so that after
 * each launch the current state is back in a; launching it again runs the
 * next two steps on what the last launch left. Both arrays stay on the
 * device between launches: only the final result comes home.
 */
#include <weft.h>

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* dst[i] = the average of src[i] and its neighbours; the ends stay fixed */
static const char jacobi_source[] =
    "WEFT_KERNEL void jacobi(WEFT_GLOBAL float *dst,\n"
    "                        WEFT_GLOBAL const float *src, unsigned n)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i == 0 || i == (long)n - 1)\n"
    "        dst[i] = src[i];\n"
    "    else if (i < n)\n"
    "        dst[i] = 0.5f * src[i] + 0.25f * (src[i - 1] + src[i + 1]);\n"
    "}\n";

static void jacobi_range(float *dst, const float *src, uint32_t first,
                         uint32_t end, uint32_t n)
{
    for (uint32_t i = first; i < end && i < n; i++)
        dst[i] = i == 0 || i == n - 1
                     ? src[i]
                     : 0.5f * src[i] + 0.25f * (src[i - 1] + src[i + 1]);
}

static void jacobi_host(const weft_host_group *g, void *const *args)
{
    uint32_t n = *(const uint32_t *)args[2];
    uint32_t first = g->group[0] * g->group_size[0];

    jacobi_range(args[0], args[1], first, first + g->group_size[0], n);
}

static const weft_param_type jacobi_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_U32};
static const weft_host_kernel host_kernels[] = {
    {"jacobi", jacobi_host, 3, jacobi_params, NULL, NULL, NULL},
};

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
    enum { N = 1 << 16, LAUNCHES = 200 }; /* 400 steps */
    const size_t bytes = N * sizeof(float);
    const weft_module_source variants[] = {
        {WEFT_SOURCE_PORTABLE, jacobi_source, 0, NULL, "jacobi"},
        {WEFT_SOURCE_HOST, host_kernels, 1, NULL, "jacobi (C)"},
    };
    weft_runtime *rt = NULL;
    weft_module *mod = NULL;
    weft_kernel *jacobi;
    weft_buffer *ab = NULL, *bb = NULL;
    weft_graph *g = NULL;
    weft_exec *e = NULL;
    weft_exec_options eo = WEFT_EXEC_OPTIONS_INIT;
    weft_device_info info = {.size = sizeof info};
    float *a = malloc(bytes), *b = malloc(bytes);
    float *ref = malloc(bytes), *tmp = malloc(bytes);
    const char *what = NULL;
    double worst = 0;
    int rc = 0;

    if (!a || !b || !ref || !tmp) {
        fprintf(stderr, "stencil: out of memory\n");
        return 1;
    }
    /* hot left end, a hot spot in the middle, cold elsewhere */
    for (uint32_t i = 0; i < N; i++)
        a[i] = i == 0 ? 1.0f : i > N / 2 - 64 && i < N / 2 + 64 ? 0.75f : 0.0f;
    memcpy(ref, a, bytes);
    memcpy(b, a, bytes);

    TRY(weft_runtime_create(&rt, NULL));
    eo.device = weft_runtime_device(rt, 0);
    TRY(weft_device_get_info(eo.device, &info));
    TRY(weft_module_create(rt, variants, 2, &mod));
    TRY(weft_module_get_kernel(mod, "jacobi", &jacobi));
    TRY(weft_buffer_wrap(rt, a, bytes, &ab));
    TRY(weft_buffer_wrap(rt, b, bytes, &bb));

    weft_arg a_to_b[] = {
        weft_arg_buffer(bb, 0, bytes, WEFT_WRITE),
        weft_arg_buffer(ab, 0, bytes, WEFT_READ),
        weft_arg_u32(N),
    };
    weft_arg b_to_a[] = {
        weft_arg_buffer(ab, 0, bytes, WEFT_WRITE),
        weft_arg_buffer(bb, 0, bytes, WEFT_READ),
        weft_arg_u32(N),
    };
    TRY(weft_graph_create(rt, &g));
    TRY(weft_graph_add_kernel(g, jacobi, weft_dims1(N), a_to_b, 3, NULL));
    TRY(weft_graph_add_kernel(g, jacobi, weft_dims1(N), b_to_a, 3, NULL));
    TRY(weft_graph_instantiate(g, &eo, &e));
    /* Launches queue up: each runs after the one before, on its result. */
    for (int l = 0; l < LAUNCHES; l++)
        TRY(weft_exec_launch(e));
    TRY(weft_exec_wait(e));
    TRY(weft_buffer_sync_host(ab));

    /* The same steps on the host. */
    for (int s = 0; s < LAUNCHES; s++) {
        jacobi_range(tmp, ref, 0, N, N);
        jacobi_range(ref, tmp, 0, N, N);
    }
    /* A GPU may fuse a multiply and an add, which rounds differently:
     * allow a little. (Written so that a NaN counts as the worst.) */
    for (uint32_t i = 0; i < N; i++) {
        double d = fabs((double)a[i] - (double)ref[i]);

        if (!(d <= worst))
            worst = d;
    }
    printf("stencil: on %s (%s): %d points, %d launches of 2 steps; "
           "a[1] = %.6f, a[N/2] = %.6f; largest difference from the host: "
           "%.2g: %s\n",
           info.name, info.driver, N, LAUNCHES, (double)a[1], (double)a[N / 2],
           worst, worst <= 1e-5 ? "correct" : "WRONG");

out:
    if (rc < 0)
        fprintf(stderr, "stencil: %s: %s\n  %s\n", what, weft_strerror(rc),
                weft_last_error());
    weft_exec_destroy(e);
    weft_graph_destroy(g);
    weft_buffer_destroy(bb);
    weft_buffer_destroy(ab);
    weft_module_destroy(mod);
    weft_runtime_destroy(rt);
    free(a);
    free(b);
    free(ref);
    free(tmp);
    return rc < 0 || worst > 1e-5 ? 1 : 0;
}
