/* The fuzz target's host kernels and their effect on the model (fuzz.h). */
#include "fuzz.h"

#include <string.h>

static uint64_t fuzz_first(const weft_host_group *g)
{
    return (uint64_t)g->group[0] * g->group_size[0];
}

static uint64_t fuzz_end(const weft_host_group *g, uint64_t n)
{
    uint64_t end = fuzz_first(g) + g->group_size[0];

    return end < n ? end : n;
}

/* Only groups of row 0 and layer 0 work, so that each item is done once. */
static int fuzz_idle(const weft_host_group *g)
{
    return g->group[1] != 0 || g->group[2] != 0;
}

static int fuzz_float_add(float a)
{
    return a > -1000.0f && a < 1000.0f ? (int)a : 0;
}

static void fuzz_affine(const weft_host_group *g, void *const *args)
{
    uint8_t *x = args[0];
    uint32_t k = *(const uint32_t *)args[1];
    uint64_t n = *(const uint64_t *)args[2];

    if (fuzz_idle(g))
        return;
    for (uint64_t i = fuzz_first(g); i < fuzz_end(g, n); i++)
        x[i] = (uint8_t)(x[i] * 3u + k);
}

static void fuzz_setseq(const weft_host_group *g, void *const *args)
{
    uint8_t *x = args[0];
    int64_t v = *(const int64_t *)args[1];
    uint64_t n = *(const uint64_t *)args[2];

    if (fuzz_idle(g))
        return;
    for (uint64_t i = fuzz_first(g); i < fuzz_end(g, n); i++)
        x[i] = (uint8_t)((uint64_t)v + i);
}

static void fuzz_addcopy(const weft_host_group *g, void *const *args)
{
    uint8_t *y = args[0];
    const uint8_t *x = args[1];
    int a = fuzz_float_add(*(const float *)args[2]);
    uint64_t n = *(const uint64_t *)args[3];

    if (fuzz_idle(g))
        return;
    for (uint64_t i = fuzz_first(g); i < fuzz_end(g, n); i++)
        y[i] = (uint8_t)(x[i] + a);
}

static void fuzz_xorbytes(const weft_host_group *g, void *const *args)
{
    uint8_t *x = args[0];
    uint32_t m;
    uint8_t *local = args[2];
    uint64_t n = *(const uint64_t *)args[3];

    memcpy(&m, args[1], sizeof m);
    if (fuzz_idle(g))
        return;
    local[0] = (uint8_t)m; /* the scratch is writable */
    for (uint64_t i = fuzz_first(g); i < fuzz_end(g, n); i++)
        x[i] ^= local[0];
}

static const weft_param_type fuzz_affine_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_U64};
static const weft_param_type fuzz_setseq_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_I64, WEFT_PARAM_U64};
static const weft_param_type fuzz_addcopy_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_F32, WEFT_PARAM_U64};
static const weft_param_type fuzz_xorbytes_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BYTES, WEFT_PARAM_LOCAL, WEFT_PARAM_U64};
static const size_t fuzz_xorbytes_sizes[] = {0, 8, 0, 0};

static const weft_access fuzz_rw[] = {WEFT_READ_WRITE};
static const weft_access fuzz_w[] = {WEFT_WRITE};
static const weft_access fuzz_wr[] = {WEFT_WRITE, WEFT_READ};

const fuzz_kernel_info fuzz_kernels[FUZZ_NKERNELS] = {
    {"affine", 3, fuzz_affine_params, fuzz_rw},
    {"setseq", 3, fuzz_setseq_params, fuzz_w},
    {"addcopy", 4, fuzz_addcopy_params, fuzz_wr},
    {"xorbytes", 4, fuzz_xorbytes_params, fuzz_rw},
};

static const weft_host_kernel fuzz_host_table[FUZZ_NKERNELS] = {
    {"affine", fuzz_affine, 3, fuzz_affine_params, NULL, NULL, NULL},
    {"setseq", fuzz_setseq, 3, fuzz_setseq_params, NULL, NULL, NULL},
    {"addcopy", fuzz_addcopy, 4, fuzz_addcopy_params, NULL, NULL, NULL},
    {"xorbytes", fuzz_xorbytes, 4, fuzz_xorbytes_params, fuzz_xorbytes_sizes,
     NULL, NULL},
};

const weft_module_source fuzz_module_source = {
    WEFT_SOURCE_HOST, fuzz_host_table, FUZZ_NKERNELS, NULL, "fuzz_kernels"};

void fuzz_kernel_apply(unsigned kid, uint8_t *const *bufs, uint8_t *const *def,
                       const weft_arg *args)
{
    uint64_t n = args[fuzz_kernels[kid].nparams - 1].value.u64;
    uint32_t m;

    for (uint64_t i = 0; i < n; i++) {
        switch (kid) {
        case FUZZ_AFFINE:
            bufs[0][i] = (uint8_t)(bufs[0][i] * 3u + args[1].value.u32);
            break;
        case FUZZ_SETSEQ:
            bufs[0][i] = (uint8_t)((uint64_t)args[1].value.i64 + i);
            def[0][i] = 1;
            break;
        case FUZZ_ADDCOPY:
            bufs[0][i] =
                (uint8_t)(bufs[1][i] + fuzz_float_add(args[2].value.f32));
            def[0][i] = def[1][i];
            break;
        case FUZZ_XORBYTES:
            memcpy(&m, args[1].value.bytes, sizeof m);
            bufs[0][i] ^= (uint8_t)m;
            break;
        }
    }
}
