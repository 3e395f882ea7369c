/*
 * The conformance kernels as a host table, OpenCL C and PTX; the graph
 * kernels as one module; f32 host kernels (wt_kernels.h).
 */
#include "wt_kernels.h"

#include <stdio.h>
#include <string.h>

/* ---- host table (host and sim drivers) --------------------------------- */

/*
 * A host kernel is called once per work-group; these loop over the items of
 * the group in dimension 0 (and 1 for iota2d).
 */
static uint64_t wt_first_item(const weft_host_group *g, unsigned dim)
{
    return (uint64_t)g->group[dim] * g->group_size[dim];
}

static void wt_host_iota(const weft_host_group *g, void *const *args)
{
    uint32_t *out = args[0];
    uint32_t add = *(const uint32_t *)args[1];
    uint64_t n = *(const uint64_t *)args[2];
    uint64_t first = wt_first_item(g, 0);

    for (uint64_t i = first; i < first + g->group_size[0] && i < n; i++)
        out[i] = (uint32_t)i + add;
}

static void wt_host_axpy(const weft_host_group *g, void *const *args)
{
    float *y = args[0];
    const float *x = args[1];
    float a = *(const float *)args[2];
    uint64_t n = *(const uint64_t *)args[3];
    uint64_t first = wt_first_item(g, 0);

    for (uint64_t i = first; i < first + g->group_size[0] && i < n; i++)
        y[i] = a * x[i] + y[i];
}

static void wt_host_iota2d(const weft_host_group *g, void *const *args)
{
    uint32_t *out = args[0];
    uint32_t width = *(const uint32_t *)args[1];
    uint32_t height = *(const uint32_t *)args[2];
    uint64_t x0 = wt_first_item(g, 0), y0 = wt_first_item(g, 1);

    for (uint64_t y = y0; y < y0 + g->group_size[1] && y < height; y++)
        for (uint64_t x = x0; x < x0 + g->group_size[0] && x < width; x++)
            out[y * width + x] = wt_iota2d_value((uint32_t)x, (uint32_t)y);
}

static void wt_host_advance(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t k = *(const uint32_t *)args[1];
    uint64_t n = *(const uint64_t *)args[2];
    uint64_t first = wt_first_item(g, 0);

    for (uint64_t i = first; i < first + g->group_size[0] && i < n; i++)
        x[i] = wt_advance_value(x[i], k);
}

static const weft_param_type wt_iota_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_U64};
static const weft_param_type wt_axpy_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_F32, WEFT_PARAM_U64};
static const weft_param_type wt_iota2d_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_U32};

static const weft_host_kernel wt_host_kernels[] = {
    {"iota", wt_host_iota, 3, wt_iota_params, NULL, NULL, NULL},
    {"axpy", wt_host_axpy, 4, wt_axpy_params, NULL, NULL, NULL},
    {"iota2d", wt_host_iota2d, 3, wt_iota2d_params, NULL, NULL, NULL},
    /* advance takes the same parameters as iota */
    {"advance", wt_host_advance, 3, wt_iota_params, NULL, NULL, NULL},
};

/* ---- OpenCL C ---------------------------------------------------------- */

static const char wt_opencl_source[] =
    "__kernel void iota(__global uint *out, uint add, ulong n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        out[i] = (uint)i + add;\n"
    "}\n"
    "\n"
    "__kernel void axpy(__global float *y, __global const float *x, float a,\n"
    "                   ulong n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        y[i] = a * x[i] + y[i];\n"
    "}\n"
    "\n"
    "__kernel void iota2d(__global uint *out, uint width, uint height)\n"
    "{\n"
    "    uint x = (uint)get_global_id(0), y = (uint)get_global_id(1);\n"
    "    if (x < width && y < height)\n"
    "        out[y * width + x] = (y << 16) | x;\n"
    "}\n"
    "\n"
    "__kernel void advance(__global uint *x, uint k, ulong n)\n"
    "{\n"
    "    size_t i = get_global_id(0);\n"
    "    if (i < n)\n"
    "        x[i] = x[i] * 3u + k;\n"
    "}\n";

static const char wt_opencl_broken[] =
    "__kernel void broken(__global uint *out)\n"
    "{\n"
    "    out[0] = no_such_identifier;\n"
    "}\n";

/* ---- PTX (cuda) -------------------------------------------------------- */

/*
 * Hand-written for the oldest target and ISA that every supported GPU can
 * JIT, so that the suite needs no NVRTC and no compiler at build time. The
 * global index is computed in 64 bits (ctaid * ntid + tid).
 */
static const char wt_ptx_source[] = ".version 7.0\n"
                                    ".target sm_52\n"
                                    ".address_size 64\n"
                                    "\n"
                                    ".visible .entry iota(\n"
                                    "    .param .u64 iota_out,\n"
                                    "    .param .u32 iota_add,\n"
                                    "    .param .u64 iota_n\n"
                                    ")\n"
                                    "{\n"
                                    "    .reg .pred %p<2>;\n"
                                    "    .reg .b32 %r<8>;\n"
                                    "    .reg .b64 %rd<8>;\n"
                                    "\n"
                                    "    ld.param.u64 %rd1, [iota_out];\n"
                                    "    ld.param.u32 %r1, [iota_add];\n"
                                    "    ld.param.u64 %rd2, [iota_n];\n"
                                    "    mov.u32 %r2, %ctaid.x;\n"
                                    "    mov.u32 %r3, %ntid.x;\n"
                                    "    mov.u32 %r4, %tid.x;\n"
                                    "    mul.wide.u32 %rd3, %r2, %r3;\n"
                                    "    cvt.u64.u32 %rd4, %r4;\n"
                                    "    add.s64 %rd3, %rd3, %rd4;\n"
                                    "    setp.ge.u64 %p1, %rd3, %rd2;\n"
                                    "    @%p1 bra IOTA_DONE;\n"
                                    "    cvta.to.global.u64 %rd5, %rd1;\n"
                                    "    shl.b64 %rd6, %rd3, 2;\n"
                                    "    add.s64 %rd7, %rd5, %rd6;\n"
                                    "    cvt.u32.u64 %r5, %rd3;\n"
                                    "    add.s32 %r6, %r5, %r1;\n"
                                    "    st.global.u32 [%rd7], %r6;\n"
                                    "IOTA_DONE:\n"
                                    "    ret;\n"
                                    "}\n"
                                    "\n"
                                    ".visible .entry axpy(\n"
                                    "    .param .u64 axpy_y,\n"
                                    "    .param .u64 axpy_x,\n"
                                    "    .param .f32 axpy_a,\n"
                                    "    .param .u64 axpy_n\n"
                                    ")\n"
                                    "{\n"
                                    "    .reg .pred %p<2>;\n"
                                    "    .reg .b32 %r<4>;\n"
                                    "    .reg .f32 %f<5>;\n"
                                    "    .reg .b64 %rd<8>;\n"
                                    "\n"
                                    "    ld.param.u64 %rd1, [axpy_y];\n"
                                    "    ld.param.u64 %rd2, [axpy_x];\n"
                                    "    ld.param.f32 %f1, [axpy_a];\n"
                                    "    ld.param.u64 %rd3, [axpy_n];\n"
                                    "    mov.u32 %r1, %ctaid.x;\n"
                                    "    mov.u32 %r2, %ntid.x;\n"
                                    "    mov.u32 %r3, %tid.x;\n"
                                    "    mul.wide.u32 %rd4, %r1, %r2;\n"
                                    "    cvt.u64.u32 %rd5, %r3;\n"
                                    "    add.s64 %rd4, %rd4, %rd5;\n"
                                    "    setp.ge.u64 %p1, %rd4, %rd3;\n"
                                    "    @%p1 bra AXPY_DONE;\n"
                                    "    shl.b64 %rd5, %rd4, 2;\n"
                                    "    cvta.to.global.u64 %rd6, %rd1;\n"
                                    "    add.s64 %rd6, %rd6, %rd5;\n"
                                    "    cvta.to.global.u64 %rd7, %rd2;\n"
                                    "    add.s64 %rd7, %rd7, %rd5;\n"
                                    "    ld.global.f32 %f2, [%rd7];\n"
                                    "    ld.global.f32 %f3, [%rd6];\n"
                                    "    fma.rn.f32 %f4, %f1, %f2, %f3;\n"
                                    "    st.global.f32 [%rd6], %f4;\n"
                                    "AXPY_DONE:\n"
                                    "    ret;\n"
                                    "}\n"
                                    "\n"
                                    ".visible .entry iota2d(\n"
                                    "    .param .u64 iota2d_out,\n"
                                    "    .param .u32 iota2d_width,\n"
                                    "    .param .u32 iota2d_height\n"
                                    ")\n"
                                    "{\n"
                                    "    .reg .pred %p<4>;\n"
                                    "    .reg .b32 %r<12>;\n"
                                    "    .reg .b64 %rd<5>;\n"
                                    "\n"
                                    "    ld.param.u64 %rd1, [iota2d_out];\n"
                                    "    ld.param.u32 %r1, [iota2d_width];\n"
                                    "    ld.param.u32 %r2, [iota2d_height];\n"
                                    "    mov.u32 %r3, %ctaid.x;\n"
                                    "    mov.u32 %r4, %ntid.x;\n"
                                    "    mov.u32 %r5, %tid.x;\n"
                                    "    mad.lo.s32 %r6, %r3, %r4, %r5;\n"
                                    "    mov.u32 %r3, %ctaid.y;\n"
                                    "    mov.u32 %r4, %ntid.y;\n"
                                    "    mov.u32 %r5, %tid.y;\n"
                                    "    mad.lo.s32 %r7, %r3, %r4, %r5;\n"
                                    "    setp.ge.u32 %p1, %r6, %r1;\n"
                                    "    setp.ge.u32 %p2, %r7, %r2;\n"
                                    "    or.pred %p3, %p1, %p2;\n"
                                    "    @%p3 bra IOTA2D_DONE;\n"
                                    "    mad.lo.s32 %r8, %r7, %r1, %r6;\n"
                                    "    shl.b32 %r9, %r7, 16;\n"
                                    "    or.b32 %r10, %r9, %r6;\n"
                                    "    cvta.to.global.u64 %rd2, %rd1;\n"
                                    "    mul.wide.u32 %rd3, %r8, 4;\n"
                                    "    add.s64 %rd4, %rd2, %rd3;\n"
                                    "    st.global.u32 [%rd4], %r10;\n"
                                    "IOTA2D_DONE:\n"
                                    "    ret;\n"
                                    "}\n"
                                    "\n"
                                    ".visible .entry advance(\n"
                                    "    .param .u64 advance_x,\n"
                                    "    .param .u32 advance_k,\n"
                                    "    .param .u64 advance_n\n"
                                    ")\n"
                                    "{\n"
                                    "    .reg .pred %p<2>;\n"
                                    "    .reg .b32 %r<8>;\n"
                                    "    .reg .b64 %rd<8>;\n"
                                    "\n"
                                    "    ld.param.u64 %rd1, [advance_x];\n"
                                    "    ld.param.u32 %r1, [advance_k];\n"
                                    "    ld.param.u64 %rd2, [advance_n];\n"
                                    "    mov.u32 %r2, %ctaid.x;\n"
                                    "    mov.u32 %r3, %ntid.x;\n"
                                    "    mov.u32 %r4, %tid.x;\n"
                                    "    mul.wide.u32 %rd3, %r2, %r3;\n"
                                    "    cvt.u64.u32 %rd4, %r4;\n"
                                    "    add.s64 %rd3, %rd3, %rd4;\n"
                                    "    setp.ge.u64 %p1, %rd3, %rd2;\n"
                                    "    @%p1 bra ADVANCE_DONE;\n"
                                    "    cvta.to.global.u64 %rd5, %rd1;\n"
                                    "    shl.b64 %rd6, %rd3, 2;\n"
                                    "    add.s64 %rd7, %rd5, %rd6;\n"
                                    "    ld.global.u32 %r5, [%rd7];\n"
                                    "    mad.lo.s32 %r6, %r5, 3, %r1;\n"
                                    "    st.global.u32 [%rd7], %r6;\n"
                                    "ADVANCE_DONE:\n"
                                    "    ret;\n"
                                    "}\n";

static const char wt_ptx_broken[] = ".version 7.0\n"
                                    ".target sm_52\n"
                                    ".address_size 64\n"
                                    "\n"
                                    ".visible .entry broken()\n"
                                    "{\n"
                                    "    no.such.instruction %r1;\n"
                                    "    ret;\n"
                                    "}\n";

/* ---- choosing by driver ------------------------------------------------ */

static int wt_is(const char *driver, const char *name)
{
    return driver && strcmp(driver, name) == 0;
}

static void wt_text(weft__module_source *src, weft__source_kind kind,
                    const char *text, const char *name)
{
    memset(src, 0, sizeof *src);
    src->kind = kind;
    src->data = text;
    src->size = 0;
    src->name = name;
}

int wt_kernels_source(const char *driver, weft__module_source *src)
{
    if (wt_is(driver, "host") || wt_is(driver, "sim")) {
        memset(src, 0, sizeof *src);
        src->kind = WEFT__SRC_HOST_TABLE;
        src->data = wt_host_kernels;
        src->size = WEFT__COUNTOF(wt_host_kernels);
        src->name = "conformance (host table)";
        return 0;
    }
    if (wt_is(driver, "opencl")) {
        wt_text(src, WEFT__SRC_OPENCL_C, wt_opencl_source, "conformance.cl");
        return 0;
    }
    if (wt_is(driver, "cuda")) {
        wt_text(src, WEFT__SRC_PTX, wt_ptx_source, "conformance.ptx");
        return 0;
    }
    return WEFT_ENOTSUP;
}

int wt_kernels_foreign_source(const char *driver, weft__module_source *src)
{
    if (wt_is(driver, "cuda")) {
        memset(src, 0, sizeof *src);
        src->kind = WEFT__SRC_HOST_TABLE;
        src->data = wt_host_kernels;
        src->size = WEFT__COUNTOF(wt_host_kernels);
        src->name = "conformance (host table)";
        return 0;
    }
    /* No driver but cuda takes PTX. */
    wt_text(src, WEFT__SRC_PTX, wt_ptx_source, "conformance.ptx");
    return 0;
}

int wt_kernels_broken_source(const char *driver, weft__module_source *src)
{
    if (wt_is(driver, "opencl")) {
        wt_text(src, WEFT__SRC_OPENCL_C, wt_opencl_broken, "broken.cl");
        return 0;
    }
    if (wt_is(driver, "cuda")) {
        wt_text(src, WEFT__SRC_PTX, wt_ptx_broken, "broken.ptx");
        return 0;
    }
    return WEFT_ENOTSUP;
}

/* ---- the graph kernels (public API) ------------------------------------ */

/* The item index of item l of this group in dimension 0. */
static int64_t wt_item(const weft_host_group *g, uint32_t l)
{
    return (int64_t)g->group[0] * g->group_size[0] + l;
}

static void wt_graph_scale(const weft_host_group *g, void *const *args)
{
    float *x = args[0];
    float a = *(const float *)args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            x[wt_item(g, l)] *= a;
}

static void wt_graph_advance(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t k = *(const uint32_t *)args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            x[wt_item(g, l)] = wt_advance_value(x[wt_item(g, l)], k);
}

static void wt_graph_addone(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    int64_t n = *(const int64_t *)args[1];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            x[wt_item(g, l)] += 1;
}

static void wt_graph_twice(const weft_host_group *g, void *const *args)
{
    uint32_t *dst = args[0];
    const uint32_t *src = args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            dst[wt_item(g, l)] = 2 * src[wt_item(g, l)];
}

static const weft_param_type wt_graph_params_scale[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_F32, WEFT_PARAM_I64};
static const weft_param_type wt_graph_params_advance[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_I64};
static const weft_param_type wt_graph_params_addone[] = {WEFT_PARAM_BUFFER,
                                                         WEFT_PARAM_I64};
static const weft_param_type wt_graph_params_twice[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_I64};

static const weft_host_kernel wt_graph_kernels[] = {
    {"scale", wt_graph_scale, 3, wt_graph_params_scale, NULL, NULL, NULL},
    {"advance", wt_graph_advance, 3, wt_graph_params_advance, NULL, NULL, NULL},
    {"addone", wt_graph_addone, 2, wt_graph_params_addone, NULL, NULL, NULL},
    {"twice", wt_graph_twice, 3, wt_graph_params_twice, NULL, NULL, NULL},
};

/* The same kernels in the portable dialect (CUDA and OpenCL devices). */
static const char wt_graph_portable[] =
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

int wt_kernels_module(weft_runtime *rt, weft_module **mod)
{
    const weft_module_source v[] = {
        {WEFT_SOURCE_HOST, wt_graph_kernels,
         sizeof wt_graph_kernels / sizeof wt_graph_kernels[0], NULL,
         "wt_kernels"},
        {WEFT_SOURCE_PORTABLE, wt_graph_portable, 0, NULL, "wt_kernels"},
    };

    return weft_module_create(rt, v, 2, mod);
}

/* ---- f32 host kernels for tests' own tables ------------------------------ */

void wt_host_fill(const weft_host_group *g, void *const *args)
{
    float *y = args[0];
    float v = *(const float *)args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            y[wt_item(g, l)] = v;
}

void wt_host_affine(const weft_host_group *g, void *const *args)
{
    float *y = args[0];
    const float *x = args[1];
    int64_t n = *(const int64_t *)args[2];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            y[wt_item(g, l)] = 2 * x[wt_item(g, l)] + 1;
}

void wt_host_sum(const weft_host_group *g, void *const *args)
{
    float *w = args[0];
    const float *y = args[1], *z = args[2];
    int64_t n = *(const int64_t *)args[3];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            w[wt_item(g, l)] = y[wt_item(g, l)] + z[wt_item(g, l)];
}

void wt_host_addone(const weft_host_group *g, void *const *args)
{
    float *x = args[0];
    int64_t n = *(const int64_t *)args[1];

    for (uint32_t l = 0; l < g->group_size[0]; l++)
        if (wt_item(g, l) < n)
            x[wt_item(g, l)] += 1;
}

const weft_param_type wt_fill_params[3] = {WEFT_PARAM_BUFFER, WEFT_PARAM_F32,
                                           WEFT_PARAM_I64};
const weft_param_type wt_affine_params[3] = {WEFT_PARAM_BUFFER,
                                             WEFT_PARAM_BUFFER, WEFT_PARAM_I64};
const weft_param_type wt_sum_params[4] = {WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER,
                                          WEFT_PARAM_BUFFER, WEFT_PARAM_I64};
const weft_param_type wt_addone_params[2] = {WEFT_PARAM_BUFFER, WEFT_PARAM_I64};

int wt_kernels_setup(wt_devices *devs, weft_module **mod, const char *name,
                     weft_kernel **k)
{
    wt_devices_open(devs);
    if (wt_kernels_module(devs->rt, mod) < 0 ||
        weft_module_get_kernel(*mod, name, k) < 0) {
        fprintf(stderr, "setup: %s\n", weft_last_error());
        return -1;
    }
    printf("# device 0: %s (%s), %u devices\n", wt_device(devs, 0)->name,
           wt_device(devs, 0)->drv->name, devs->n);
    return 0;
}

int wt_kernels_teardown(wt_devices *devs, weft_module *mod)
{
    weft_module_destroy(mod);
    return weft_runtime_destroy(devs->rt);
}
