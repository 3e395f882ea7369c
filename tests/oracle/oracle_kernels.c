/*
 * The oracle's kernels in two variants (C functions for host and sim
 * devices, the portable dialect for OpenCL and CUDA devices) and the body
 * of its map and host nodes. Every result depends on the order of the
 * nodes that touch the same bytes: a kernel that runs before a node it
 * depends on, or after a node that depends on it, changes the bytes.
 */
#include "oracle.h"

#include <string.h>

/* Prefixed: "mix" alone is an OpenCL C built-in. */
const char *const or_kernel_names[OR_K_COUNT] = {
    "k_affine",  "k_gather",  "k_mix", "k_set",
    "k_baffine", "k_bgather", "k_bset"};
const unsigned or_kernel_nbufs[OR_K_COUNT] = {1, 2, 3, 1, 1, 2, 1};

const char or_portable_source[] =
    "WEFT_KERNEL void k_affine(WEFT_GLOBAL weft_u32 *x, weft_u32 n,\n"
    "                        weft_u32 a, weft_u32 k)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n) x[i] = x[i] * a + k + (weft_u32)i;\n"
    "}\n"
    "WEFT_KERNEL void k_gather(WEFT_GLOBAL weft_u32 *y,\n"
    "                        WEFT_GLOBAL const weft_u32 *x, weft_u32 n,\n"
    "                        weft_u32 m, weft_u32 k)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n)\n"
    "        y[i] = y[i] * 3u + x[((weft_u32)i * 7u + k) % m];\n"
    "}\n"
    "WEFT_KERNEL void k_mix(WEFT_GLOBAL weft_u32 *o,\n"
    "                     WEFT_GLOBAL const weft_u32 *a,\n"
    "                     WEFT_GLOBAL const weft_u32 *b, weft_u32 n,\n"
    "                     weft_u32 m, weft_u32 k)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n)\n"
    "        o[i] = (a[i] ^ k) * 2654435761u + b[((weft_u32)i * 13u + k) % "
    "m];\n"
    "}\n"
    "WEFT_KERNEL void k_set(WEFT_GLOBAL weft_u32 *o, weft_u32 n, weft_u32 k)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n) o[i] = ((k + (weft_u32)i) * 2246822519u) ^ k;\n"
    "}\n"
    /* blocks: element (i % w, i / w % h, i / (w * h)) at pitches p, s */
    "WEFT_FUNC weft_u32 at3(weft_u32 i, weft_u32 w, weft_u32 h, weft_u32 p,\n"
    "                       weft_u32 s)\n"
    "{\n"
    "    return i / (w * h) * s + i / w % h * p + i % w;\n"
    "}\n"
    "WEFT_KERNEL void k_baffine(WEFT_GLOBAL weft_u32 *x, weft_u32 n,\n"
    "                         weft_u32 w, weft_u32 h, weft_u32 p,\n"
    "                         weft_u32 s, weft_u32 a, weft_u32 k)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n) {\n"
    "        weft_u32 e = at3((weft_u32)i, w, h, p, s);\n"
    "        x[e] = x[e] * a + k + (weft_u32)i;\n"
    "    }\n"
    "}\n"
    "WEFT_KERNEL void k_bgather(WEFT_GLOBAL weft_u32 *y,\n"
    "                         WEFT_GLOBAL const weft_u32 *x, weft_u32 n,\n"
    "                         weft_u32 yw, weft_u32 yh, weft_u32 yp,\n"
    "                         weft_u32 ys, weft_u32 xw, weft_u32 xh,\n"
    "                         weft_u32 xp, weft_u32 xs, weft_u32 m,\n"
    "                         weft_u32 k)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n) {\n"
    "        weft_u32 e = at3((weft_u32)i, yw, yh, yp, ys);\n"
    "        weft_u32 j = ((weft_u32)i * 7u + k) % m;\n"
    "        y[e] = y[e] * 3u + x[at3(j, xw, xh, xp, xs)];\n"
    "    }\n"
    "}\n"
    "WEFT_KERNEL void k_bset(WEFT_GLOBAL weft_u32 *o, weft_u32 n, weft_u32 w,\n"
    "                      weft_u32 h, weft_u32 p, weft_u32 s, weft_u32 k)\n"
    "{\n"
    "    long i = weft_global_id(0);\n"
    "    if (i < (long)n)\n"
    "        o[at3((weft_u32)i, w, h, p, s)] =\n"
    "            ((k + (weft_u32)i) * 2246822519u) ^ k;\n"
    "}\n";

/* The items of one work-group: [*first, *end), clipped to n. */
static void group_items(const weft_host_group *g, uint32_t n, uint32_t *first,
                        uint32_t *end)
{
    uint64_t f = (uint64_t)g->group[0] * g->group_size[0];
    uint64_t e = f + g->group_size[0];

    *first = f < n ? (uint32_t)f : n;
    *end = e < n ? (uint32_t)e : n;
}

static uint32_t u32_arg(void *const *args, unsigned i)
{
    uint32_t v;

    memcpy(&v, args[i], sizeof v);
    return v;
}

static void host_affine(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t n = u32_arg(args, 1), a = u32_arg(args, 2), k = u32_arg(args, 3);
    uint32_t i, end;

    for (group_items(g, n, &i, &end); i < end; i++)
        x[i] = or_affine(x[i], a, k, i);
}

static void host_gather(const weft_host_group *g, void *const *args)
{
    uint32_t *y = args[0];
    const uint32_t *x = args[1];
    uint32_t n = u32_arg(args, 2), m = u32_arg(args, 3), k = u32_arg(args, 4);
    uint32_t i, end;

    for (group_items(g, n, &i, &end); i < end; i++)
        y[i] = or_gather(y[i], x, m, k, i);
}

static void host_mix(const weft_host_group *g, void *const *args)
{
    uint32_t *o = args[0];
    const uint32_t *a = args[1], *b = args[2];
    uint32_t n = u32_arg(args, 3), m = u32_arg(args, 4), k = u32_arg(args, 5);
    uint32_t i, end;

    for (group_items(g, n, &i, &end); i < end; i++)
        o[i] = or_mix(a[i], b, m, k, i);
}

static void host_set(const weft_host_group *g, void *const *args)
{
    uint32_t *o = args[0];
    uint32_t n = u32_arg(args, 1), k = u32_arg(args, 2);
    uint32_t i, end;

    for (group_items(g, n, &i, &end); i < end; i++)
        o[i] = or_set(k, i);
}

static void host_baffine(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t n = u32_arg(args, 1), w = u32_arg(args, 2), h = u32_arg(args, 3);
    uint32_t p = u32_arg(args, 4), s = u32_arg(args, 5), a = u32_arg(args, 6);
    uint32_t k = u32_arg(args, 7), i, end;

    for (group_items(g, n, &i, &end); i < end; i++) {
        uint32_t e = or_at3(i, w, h, p, s);

        x[e] = or_affine(x[e], a, k, i);
    }
}

static void host_bgather(const weft_host_group *g, void *const *args)
{
    uint32_t *y = args[0];
    const uint32_t *x = args[1];
    uint32_t v[11], i, end;

    for (unsigned j = 0; j < 11; j++)
        v[j] = u32_arg(args, 2 + j);
    for (group_items(g, v[0], &i, &end); i < end; i++) {
        uint32_t e = or_at3(i, v[1], v[2], v[3], v[4]);
        uint32_t j = (i * 7u + v[10]) % v[9];

        y[e] = y[e] * 3u + x[or_at3(j, v[5], v[6], v[7], v[8])];
    }
}

static void host_bset(const weft_host_group *g, void *const *args)
{
    uint32_t *o = args[0];
    uint32_t n = u32_arg(args, 1), w = u32_arg(args, 2), h = u32_arg(args, 3);
    uint32_t p = u32_arg(args, 4), s = u32_arg(args, 5), k = u32_arg(args, 6);
    uint32_t i, end;

    for (group_items(g, n, &i, &end); i < end; i++)
        o[or_at3(i, w, h, p, s)] = or_set(k, i);
}

static const weft_param_type affine_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_U32, WEFT_PARAM_U32};
static const weft_param_type gather_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_U32, WEFT_PARAM_U32,
    WEFT_PARAM_U32};
static const weft_param_type mix_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER,
    WEFT_PARAM_U32,    WEFT_PARAM_U32,    WEFT_PARAM_U32};
static const weft_param_type set_params[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_U32,
                                             WEFT_PARAM_U32};
#define U WEFT_PARAM_U32
static const weft_param_type baffine_params[] = {
    WEFT_PARAM_BUFFER, U, U, U, U, U, U, U};
static const weft_param_type bgather_params[] = {
    WEFT_PARAM_BUFFER, WEFT_PARAM_BUFFER, U, U, U, U, U, U, U, U, U, U, U};
static const weft_param_type bset_params[] = {
    WEFT_PARAM_BUFFER, U, U, U, U, U, U};
#undef U

const weft_host_kernel or_host_kernels[OR_K_COUNT] = {
    {"k_affine", host_affine, 4, affine_params, NULL, NULL, NULL},
    {"k_gather", host_gather, 5, gather_params, NULL, NULL, NULL},
    {"k_mix", host_mix, 6, mix_params, NULL, NULL, NULL},
    {"k_set", host_set, 3, set_params, NULL, NULL, NULL},
    {"k_baffine", host_baffine, 8, baffine_params, NULL, NULL, NULL},
    {"k_bgather", host_bgather, 13, bgather_params, NULL, NULL, NULL},
    {"k_bset", host_bset, 7, bset_params, NULL, NULL, NULL},
};

static uint32_t fnv(uint32_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

void or_host_body(const or_node *n, void *const *ptrs, uint32_t *obs)
{
    uint32_t h = 2166136261u ^ n->key;

    /* Reads first: what the node saw, before it changes anything. */
    for (unsigned a = 0; a < n->nacc; a++)
        if (n->acc[a].mode & WEFT_READ)
            for (size_t r = 0; r < or_acc_runs(&n->acc[a]); r++)
                h = fnv(h,
                        (const uint8_t *)ptrs[a] + or_acc_run(&n->acc[a], r) -
                            n->acc[a].off,
                        n->acc[a].size);
    for (unsigned a = 0; a < n->nacc; a++) {
        const or_access *acc = &n->acc[a];

        /* j counts the access's bytes, run after run */
        for (size_t r = 0, j = 0; r < or_acc_runs(acc); r++) {
            uint8_t *p = (uint8_t *)ptrs[a] + or_acc_run(acc, r) - acc->off;

            if (acc->mode == WEFT_WRITE)
                for (size_t b = 0; b < acc->size; b++, j++)
                    p[b] = (uint8_t)((h >> (8 * (j % 4))) + j);
            else if (acc->mode == WEFT_READ_WRITE)
                for (size_t b = 0; b < acc->size; b++, j++)
                    p[b] = (uint8_t)(p[b] * 3u + h + j);
        }
    }
    *obs = h;
}
