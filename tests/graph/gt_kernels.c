/* The test kernels in both forms (gt_kernels.h). */
#include "gt_kernels.h"

/* The item index of item l of this group in dimension 0. */
static int64_t gt_item(const weft_host_group *g, uint32_t l)
{
    return (int64_t)g->group[0] * g->group_size[0] + l;
}

static void gt_scale(const weft_host_group *g, void *const *args)
{
    float *x = args[0];
    float a = *(const float *)args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (gt_item(g, l) < n)
            x[gt_item(g, l)] *= a;
}

static void gt_advance_fn(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t k = *(const uint32_t *)args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (gt_item(g, l) < n)
            x[gt_item(g, l)] = gt_advance(x[gt_item(g, l)], k);
}

static void gt_addone(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    int64_t n = *(const int64_t *)args[1];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (gt_item(g, l) < n)
            x[gt_item(g, l)] += 1;
}

static void gt_twice(const weft_host_group *g, void *const *args)
{
    uint32_t *dst = args[0];
    const uint32_t *src = args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (gt_item(g, l) < n)
            dst[gt_item(g, l)] = 2 * src[gt_item(g, l)];
}

static const weft_param_type gt_p_scale[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_F32,
                                             WEFT_PARAM_I64};
static const weft_param_type gt_p_advance[] = {WEFT_PARAM_BUFFER,
                                               WEFT_PARAM_U32, WEFT_PARAM_I64};
static const weft_param_type gt_p_addone[] = {WEFT_PARAM_BUFFER,
                                              WEFT_PARAM_I64};
static const weft_param_type gt_p_twice[] = {WEFT_PARAM_BUFFER,
                                             WEFT_PARAM_BUFFER, WEFT_PARAM_I64};

static const weft_host_kernel gt_table[] = {
    {"scale", gt_scale, 3, gt_p_scale, NULL, NULL, NULL},
    {"advance", gt_advance_fn, 3, gt_p_advance, NULL, NULL, NULL},
    {"addone", gt_addone, 2, gt_p_addone, NULL, NULL, NULL},
    {"twice", gt_twice, 3, gt_p_twice, NULL, NULL, NULL},
};

/* The same kernels in the portable dialect (CUDA and OpenCL devices). */
static const char gt_portable[] =
    "WEFT_KERNEL void scale(WEFT_GLOBAL float *x, float a, long n)\n"
    "{ long i = weft_global_id(0); if (i < n) x[i] *= a; }\n"
    "WEFT_KERNEL void advance(WEFT_GLOBAL unsigned int *x, unsigned int k,\n"
    "                         long n)\n"
    "{ long i = weft_global_id(0); if (i < n) x[i] = x[i] * 3u + k; }\n"
    "WEFT_KERNEL void addone(WEFT_GLOBAL unsigned int *x, long n)\n"
    "{ long i = weft_global_id(0); if (i < n) x[i] += 1u; }\n"
    "WEFT_KERNEL void twice(WEFT_GLOBAL unsigned int *d,\n"
    "                       WEFT_GLOBAL const unsigned int *s, long n)\n"
    "{ long i = weft_global_id(0); if (i < n) d[i] = 2u * s[i]; }\n";

int gt_module(weft_runtime *rt, weft_module **mod)
{
    const weft_module_source v[] = {
        {WEFT_SOURCE_HOST, gt_table, sizeof gt_table / sizeof gt_table[0], NULL,
         "gt_kernels"},
        {WEFT_SOURCE_PORTABLE, gt_portable, 0, NULL, "gt_kernels"},
    };

    return weft_module_create(rt, v, 2, mod);
}
