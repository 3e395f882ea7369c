/*
 * The portable kernel dialect. One source, written with the names below,
 * compiles as OpenCL C and as CUDA C++: weft puts a prelude of definitions
 * in front of it for the target and compiles the result.
 *
 *   WEFT_KERNEL            before a kernel: __kernel / extern "C" __global__
 *   WEFT_FUNC              before a helper function called by kernels
 *   WEFT_GLOBAL            qualifier of a pointer to buffer memory
 *   WEFT_LOCAL             qualifier of a group-local array declared in a
 *                          kernel (fixed size; __local / __shared__)
 *   WEFT_CONSTANT          qualifier of read-only constant data
 *   weft_global_id(d)      index of this item in the grid, dimension d
 *   weft_local_id(d)       index of this item in its group
 *   weft_group_id(d)       index of this group
 *   weft_local_size(d)     items per group
 *   weft_num_groups(d)     groups in the grid
 *   weft_global_size(d)    items in the grid
 *   weft_barrier()         all items of the group wait; local and global
 *                          memory written before it is visible after it
 *   weft_atomic_add_i32(p, v), weft_atomic_add_u32(p, v)
 *                          atomic add on WEFT_GLOBAL memory, returns the old
 *   weft_i32 weft_u32 weft_i64 weft_u64 weft_f32 weft_f64
 *                          fixed-size scalar types (also use int, long,
 *                          float: long is 64 bits on both targets)
 * The index functions return long. Dynamic group-local memory (sized at
 * launch) is not part of the dialect: declare fixed-size WEFT_LOCAL arrays.
 *
 * For host and sim devices the source becomes C (WEFT__SRC_HOST_C, see
 * weft__portable_host_c below), which hostcc.c compiles with the system C
 * compiler into a shared object.
 */
#include "hostcc.h"
#include "kcache.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

static const char weft__prelude_opencl[] =
    "#define WEFT_OPENCL 1\n"
    "#define WEFT_KERNEL __kernel\n"
    "#define WEFT_FUNC inline\n"
    "#define WEFT_GLOBAL __global\n"
    "#define WEFT_LOCAL __local\n"
    "#define WEFT_CONSTANT __constant\n"
    "#define weft_global_id(d) ((long)get_global_id(d))\n"
    "#define weft_local_id(d) ((long)get_local_id(d))\n"
    "#define weft_group_id(d) ((long)get_group_id(d))\n"
    "#define weft_local_size(d) ((long)get_local_size(d))\n"
    "#define weft_num_groups(d) ((long)get_num_groups(d))\n"
    "#define weft_global_size(d) ((long)get_global_size(d))\n"
    "#define weft_barrier() barrier(CLK_LOCAL_MEM_FENCE | "
    "CLK_GLOBAL_MEM_FENCE)\n"
    "#define weft_atomic_add_i32(p, v) atomic_add((p), (v))\n"
    "#define weft_atomic_add_u32(p, v) atomic_add((p), (v))\n"
    "typedef int weft_i32;\n"
    "typedef uint weft_u32;\n"
    "typedef long weft_i64;\n"
    "typedef ulong weft_u64;\n"
    "typedef float weft_f32;\n"
    "#ifdef cl_khr_fp64\n"
    "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    "typedef double weft_f64;\n"
    "#endif\n";

static const char weft__prelude_cuda[] =
    "#define WEFT_CUDA 1\n"
    "#define WEFT_KERNEL extern \"C\" __global__\n"
    "#define WEFT_FUNC __device__ inline\n"
    "#define WEFT_GLOBAL\n"
    "#define WEFT_LOCAL __shared__\n"
    "#define WEFT_CONSTANT const\n"
    "__device__ inline unsigned weft__dim3(dim3 v, int d)\n"
    "{ return d == 0 ? v.x : d == 1 ? v.y : d == 2 ? v.z : 0u; }\n"
    "__device__ inline unsigned weft__uint3(uint3 v, int d)\n"
    "{ return d == 0 ? v.x : d == 1 ? v.y : d == 2 ? v.z : 0u; }\n"
    "#define weft_local_id(d) ((long)weft__uint3(threadIdx, (d)))\n"
    "#define weft_group_id(d) ((long)weft__uint3(blockIdx, (d)))\n"
    "#define weft_local_size(d) ((long)weft__dim3(blockDim, (d)))\n"
    "#define weft_num_groups(d) ((long)weft__dim3(gridDim, (d)))\n"
    "#define weft_global_id(d) (weft_group_id(d) * weft_local_size(d) + "
    "weft_local_id(d))\n"
    "#define weft_global_size(d) (weft_num_groups(d) * "
    "weft_local_size(d))\n"
    "#define weft_barrier() __syncthreads()\n"
    "#define weft_atomic_add_i32(p, v) atomicAdd((int *)(p), (int)(v))\n"
    "#define weft_atomic_add_u32(p, v) atomicAdd((unsigned *)(p), "
    "(unsigned)(v))\n"
    "typedef int weft_i32;\n"
    "typedef unsigned int weft_u32;\n"
    "typedef long long weft_i64;\n"
    "typedef unsigned long long weft_u64;\n"
    "typedef float weft_f32;\n"
    "typedef double weft_f64;\n";

/*
 * Host C (WEFT__SRC_HOST_C). The prelude maps the dialect onto C11:
 * WEFT_KERNEL functions become static and the translator adds, for each, a
 * weft_host_kernel_fn-shaped wrapper (one call per work-group) and its
 * parameter list, collected in the table weft__cc_kernels that hostcc.c
 * reads from the compiled shared object.
 *
 * A group's items run on the calling thread. A kernel that cannot reach
 * weft_barrier() (no such word in its body nor anywhere outside kernel
 * bodies, where a helper or macro could hide one) runs its items one after
 * the other. One that can runs each item as a coroutine (ucontext) with a
 * stack of its own: weft_barrier() switches back to the group's scheduler,
 * which resumes the items round-robin, so that every item reaches the
 * barrier before any passes it; private variables live on each item's
 * stack. WEFT_LOCAL arrays are static thread-local: one instance per
 * thread, shared by the items of the group that thread runs, as a group
 * runs start to end on one thread. Atomics are the compiler's __atomic
 * builtins (groups run in parallel on the driver's threads).
 */
static const char weft__prelude_host[] =
    "#define WEFT_HOST 1\n"
    "#include <math.h>\n"
    "#include <stddef.h>\n"
    "#include <stdint.h>\n"
    "#include <stdio.h>\n"
    "#include <stdlib.h>\n"
    "#include <sys/mman.h>\n"
    "#include <sys/types.h>\n"
    "#include <ucontext.h>\n"
    "#define WEFT_KERNEL static\n"
    "#define WEFT_FUNC static inline\n"
    "#define WEFT_GLOBAL\n"
    "#define WEFT_LOCAL static _Thread_local\n"
    "#define WEFT_CONSTANT const\n"
    "typedef int weft_i32;\n"
    "typedef unsigned int weft_u32;\n"
    "typedef long weft_i64;\n"
    "typedef unsigned long weft_u64;\n"
    "typedef float weft_f32;\n"
    "typedef double weft_f64;\n"
    "typedef unsigned char uchar;\n"
    "typedef struct weft__cc_group {\n"
    "    uint32_t group[3], group_size[3], groups[3];\n"
    "} weft__cc_group;\n"
    "typedef struct weft__cc_kernel {\n"
    "    const char *name;\n"
    "    void (*fn)(const weft__cc_group *, void *const *);\n"
    "    unsigned nparams;\n"
    "    const int *params;\n"
    "    const unsigned long *sizes;\n"
    "} weft__cc_kernel;\n"
    "typedef struct weft__cc_item {\n"
    "    long lid[3], grp[3], lsz[3], ngr[3];\n"
    "    ucontext_t ctx;\n"
    "    int done;\n"
    "} weft__cc_item;\n"
    "static _Thread_local weft__cc_item *weft__cc_cur;\n"
    "static _Thread_local ucontext_t *weft__cc_sched;\n"
    "static _Thread_local void (*weft__cc_fn)(void *const *);\n"
    "static _Thread_local void *const *weft__cc_args;\n"
    "static inline long weft__cc_d(const long *v, unsigned d, long z)\n"
    "{ return d < 3 ? v[d] : z; }\n"
    "#define weft_local_id(d) weft__cc_d(weft__cc_cur->lid, (unsigned)(d), 0)\n"
    "#define weft_group_id(d) weft__cc_d(weft__cc_cur->grp, (unsigned)(d), 0)\n"
    "#define weft_local_size(d) "
    "weft__cc_d(weft__cc_cur->lsz, (unsigned)(d), 1)\n"
    "#define weft_num_groups(d) "
    "weft__cc_d(weft__cc_cur->ngr, (unsigned)(d), 1)\n"
    "#define weft_global_id(d) (weft_group_id(d) * weft_local_size(d) + "
    "weft_local_id(d))\n"
    "#define weft_global_size(d) (weft_num_groups(d) * "
    "weft_local_size(d))\n"
    "#define weft_atomic_add_i32(p, v) "
    "__atomic_fetch_add((int *)(p), (int)(v), __ATOMIC_SEQ_CST)\n"
    "#define weft_atomic_add_u32(p, v) "
    "__atomic_fetch_add((unsigned *)(p), (unsigned)(v), __ATOMIC_SEQ_CST)\n"
    "static inline void weft_barrier(void)\n"
    "{\n"
    "    weft__cc_item *me = weft__cc_cur;\n"
    "    if (weft__cc_sched)\n"
    "        swapcontext(&me->ctx, weft__cc_sched);\n"
    "}\n"
    "static void weft__cc_start(void)\n"
    "{\n"
    "    weft__cc_item *me = weft__cc_cur;\n"
    "    weft__cc_fn(weft__cc_args);\n"
    "    me->done = 1;\n"
    "}\n"
    "enum { WEFT__CC_STACK = 256 * 1024 };\n"
    "__attribute__((unused)) static void\n"
    "weft__cc_run(const weft__cc_group *g, void *const *a,\n"
    "             void (*fn)(void *const *), int coroutines)\n"
    "{\n"
    "    weft__cc_item it, *items;\n"
    "    ucontext_t sched;\n"
    "    size_t n = (size_t)g->group_size[0] * g->group_size[1] *\n"
    "               g->group_size[2], left;\n"
    "    char *stacks;\n"
    "    it.done = 0;\n"
    "    for (int d = 0; d < 3; d++) {\n"
    "        it.lid[d] = 0;\n"
    "        it.grp[d] = g->group[d];\n"
    "        it.lsz[d] = g->group_size[d];\n"
    "        it.ngr[d] = g->groups[d];\n"
    "    }\n"
    "    if (!coroutines || n == 1) {\n"
    "        weft__cc_cur = &it;\n"
    "        for (it.lid[2] = 0; it.lid[2] < it.lsz[2]; it.lid[2]++)\n"
    "            for (it.lid[1] = 0; it.lid[1] < it.lsz[1]; it.lid[1]++)\n"
    "                for (it.lid[0] = 0; it.lid[0] < it.lsz[0]; it.lid[0]++)\n"
    "                    fn(a);\n"
    "        weft__cc_cur = NULL;\n"
    "        return;\n"
    "    }\n"
    "    items = calloc(n, sizeof *items);\n"
    "    stacks = mmap(NULL, n * WEFT__CC_STACK, PROT_READ | PROT_WRITE,\n"
    "                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);\n"
    "    if (!items || stacks == MAP_FAILED) {\n"
    "        fprintf(stderr, \"weft: no memory for a work-group of %zu "
    "items\\n\", n);\n"
    "        abort();\n"
    "    }\n"
    "    for (size_t i = 0; i < n; i++) {\n"
    "        weft__cc_item *t = &items[i];\n"
    "        *t = it;\n"
    "        t->lid[0] = (long)(i % g->group_size[0]);\n"
    "        t->lid[1] = (long)(i / g->group_size[0] % g->group_size[1]);\n"
    "        t->lid[2] = (long)(i / g->group_size[0] / g->group_size[1]);\n"
    "        getcontext(&t->ctx);\n"
    "        t->ctx.uc_stack.ss_sp = stacks + i * WEFT__CC_STACK;\n"
    "        t->ctx.uc_stack.ss_size = WEFT__CC_STACK;\n"
    "        t->ctx.uc_link = &sched;\n"
    "        makecontext(&t->ctx, weft__cc_start, 0);\n"
    "    }\n"
    "    weft__cc_sched = &sched;\n"
    "    weft__cc_fn = fn;\n"
    "    weft__cc_args = a;\n"
    "    for (left = n; left;)\n"
    "        for (size_t i = 0; i < n; i++) {\n"
    "            if (items[i].done)\n"
    "                continue;\n"
    "            weft__cc_cur = &items[i];\n"
    "            swapcontext(&sched, &items[i].ctx);\n"
    "            left -= items[i].done;\n"
    "        }\n"
    "    weft__cc_sched = NULL;\n"
    "    weft__cc_cur = NULL;\n"
    "    munmap(stacks, n * WEFT__CC_STACK);\n"
    "    free(items);\n"
    "}\n";

/* A growing string; oom set once an allocation failed. */
typedef struct weft__sb {
    char *p;
    size_t n, cap;
    int oom;
} weft__sb;

static void weft__sb_put(weft__sb *b, const char *s, size_t n)
{
    if (b->oom)
        return;
    if (b->n + n + 1 > b->cap) {
        size_t cap = (b->n + n + 1) * 2;
        char *p = weft__realloc(b->p, cap);

        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void weft__sb_str(weft__sb *b, const char *s)
{
    weft__sb_put(b, s, strlen(s));
}

static int weft__is_ident(char c)
{
    return isalnum((unsigned char)c) || c == '_';
}

/*
 * A copy of src (n bytes) with comments and string and character literals
 * blanked, and with dirs also preprocessor lines; offsets and newlines are
 * kept, so that a position in the copy is the same in src.
 */
static char *weft__mask(const char *src, size_t n, int dirs)
{
    char *m = weft__malloc(n + 1);
    int bol = 1;

    if (!m)
        return NULL;
    memcpy(m, src, n + 1);
    for (size_t i = 0; i < n;) {
        char c = src[i];

        if (c == '/' && src[i + 1] == '*') {
            size_t j = i + 2;

            while (j < n && !(src[j] == '*' && src[j + 1] == '/'))
                j++;
            j = j < n ? j + 2 : n;
            for (; i < j; i++)
                if (m[i] != '\n')
                    m[i] = ' ';
        } else if (c == '/' && src[i + 1] == '/') {
            for (; i < n && src[i] != '\n'; i++)
                m[i] = ' ';
        } else if (c == '"' || c == '\'') {
            m[i++] = ' ';
            for (; i < n && src[i] != c && src[i] != '\n'; i++) {
                if (src[i] == '\\' && i + 1 < n && src[i + 1] != '\n')
                    m[i++] = ' ';
                m[i] = ' ';
            }
            if (i < n && src[i] == c)
                m[i++] = ' ';
        } else if (dirs && bol && c == '#') {
            for (; i < n && src[i] != '\n'; i++) {
                if (src[i] == '\\' && src[i + 1] == '\n')
                    m[i++] = ' ';
                else
                    m[i] = ' ';
            }
        } else {
            if (c == '\n')
                bol = 1;
            else if (!isspace((unsigned char)c))
                bol = 0;
            i++;
        }
    }
    return m;
}

enum { WEFT__NPOS = (size_t)-1 };

/* The first whole-word w in m[from, to), or WEFT__NPOS. */
static size_t weft__word(const char *m, size_t from, size_t to, const char *w)
{
    size_t lw = strlen(w);

    for (size_t i = from; i + lw <= to; i++)
        if (m[i] == w[0] && memcmp(m + i, w, lw) == 0 &&
            (i == 0 || !weft__is_ident(m[i - 1])) && !weft__is_ident(m[i + lw]))
            return i;
    return WEFT__NPOS;
}

/* The bracket closing the one at m[at], or WEFT__NPOS. */
static size_t weft__close(const char *m, size_t n, size_t at)
{
    int depth = 0;

    for (size_t i = at; i < n; i++) {
        if (m[i] == '(' || m[i] == '[' || m[i] == '{')
            depth++;
        else if ((m[i] == ')' || m[i] == ']' || m[i] == '}') && --depth == 0)
            return i;
    }
    return WEFT__NPOS;
}

static void weft__trim(const char *m, size_t *b, size_t *e)
{
    while (*b < *e && isspace((unsigned char)m[*b]))
        (*b)++;
    while (*e > *b && isspace((unsigned char)m[*e - 1]))
        (*e)--;
}

/* The scalar parameter type spelled by the words of m[b, e). */
static weft_param_type weft__scalar_type(const char *m, size_t b, size_t e)
{
    static const struct {
        const char *words;
        weft_param_type type;
    } known[] = {
        {"int", WEFT_PARAM_I32},
        {"signed", WEFT_PARAM_I32},
        {"signed int", WEFT_PARAM_I32},
        {"weft_i32", WEFT_PARAM_I32},
        {"int32_t", WEFT_PARAM_I32},
        {"unsigned", WEFT_PARAM_U32},
        {"unsigned int", WEFT_PARAM_U32},
        {"uint", WEFT_PARAM_U32},
        {"weft_u32", WEFT_PARAM_U32},
        {"uint32_t", WEFT_PARAM_U32},
        {"long", WEFT_PARAM_I64},
        {"long int", WEFT_PARAM_I64},
        {"long long", WEFT_PARAM_I64},
        {"weft_i64", WEFT_PARAM_I64},
        {"int64_t", WEFT_PARAM_I64},
        {"unsigned long", WEFT_PARAM_U64},
        {"unsigned long long", WEFT_PARAM_U64},
        {"ulong", WEFT_PARAM_U64},
        {"weft_u64", WEFT_PARAM_U64},
        {"uint64_t", WEFT_PARAM_U64},
        {"float", WEFT_PARAM_F32},
        {"weft_f32", WEFT_PARAM_F32},
        {"double", WEFT_PARAM_F64},
        {"weft_f64", WEFT_PARAM_F64},
    };
    char words[64];
    size_t k = 0;

    /* The words but qualifiers, one space apart. */
    for (size_t i = b; i < e;) {
        size_t j = i;

        if (!weft__is_ident(m[i])) {
            if (!isspace((unsigned char)m[i]))
                return WEFT_PARAM_BYTES;
            i++;
            continue;
        }
        while (j < e && weft__is_ident(m[j]))
            j++;
        if (!((j - i == 5 && !memcmp(m + i, "const", 5)) ||
              (j - i == 8 && !memcmp(m + i, "volatile", 8)) ||
              (j - i == 11 && !memcmp(m + i, "WEFT_GLOBAL", 11)))) {
            if (k + (j - i) + 2 > sizeof words)
                return WEFT_PARAM_BYTES;
            if (k)
                words[k++] = ' ';
            memcpy(words + k, m + i, j - i);
            k += j - i;
        }
        i = j;
    }
    words[k] = '\0';
    for (size_t i = 0; i < WEFT__COUNTOF(known); i++)
        if (!strcmp(words, known[i].words))
            return known[i].type;
    return WEFT_PARAM_BYTES;
}

/*
 * The parameter of the list whose ')' is m[rp] that starts at m[at] (of
 * kernel name, the np-th): [*pb, *pe) its type without its name, *end the
 * ',' or ')' after it, *t its type by the dialect's rules (a pointer is a
 * buffer, or with WEFT_LOCAL local scratch; a scalar of a weft type that
 * type; anything else bytes). 1 for a list that is "void"; WEFT_EBUILD
 * for one the dialect refuses.
 */
static int weft__param_at(const char *m, size_t at, size_t rp, const char *name,
                          unsigned np, size_t *pb, size_t *pe, size_t *end,
                          weft_param_type *t)
{
    size_t b = at, e, nb, ne, depth = 0, j;

    for (j = at; j < rp; j++) {
        if (m[j] == '(' || m[j] == '[')
            depth++;
        else if (m[j] == ')' || m[j] == ']')
            depth--;
        else if (m[j] == ',' && !depth)
            break;
    }
    *end = j;
    e = j;
    weft__trim(m, &b, &e);
    if (e - b == 4 && !memcmp(m + b, "void", 4) && !np && j == rp)
        return 1;
    if (memchr(m + b, '[', e - b))
        return weft__error(WEFT_EBUILD,
                           "portable: kernel %s: array parameters are not "
                           "part of the dialect (declare a pointer)",
                           name);
    ne = e;
    nb = ne;
    while (nb > b && weft__is_ident(m[nb - 1]))
        nb--;
    e = nb;
    weft__trim(m, &b, &e);
    if (nb == ne || b == e)
        return weft__error(WEFT_EBUILD,
                           "portable: kernel %s: parameter %u has no %s", name,
                           np, nb == ne ? "name" : "type");
    if (memchr(m + b, '*', e - b))
        *t = weft__word(m, b, e, "WEFT_LOCAL") != WEFT__NPOS
                 ? WEFT_PARAM_LOCAL
                 : WEFT_PARAM_BUFFER;
    else
        *t = weft__scalar_type(m, b, e);
    *pb = b;
    *pe = e;
    return 0;
}

typedef struct weft__hk {
    size_t name, name_end; /* the kernel's name */
    size_t lp, rp;         /* its parameter list's brackets */
    size_t lb, rb;         /* its body's braces */
    unsigned np;           /* its parameters */
} weft__hk;

/*
 * The wrapper of kernel k: its item function, its group function and its
 * parameter tables. Blanks WEFT_LOCAL in the parameter list of out (the
 * copy of the source that is compiled). barrier: run items as coroutines.
 */
static int weft__host_wrap(weft__sb *b, const char *m, char *out, weft__hk *k,
                           int barrier)
{
    char name[128], buf[1024];
    weft__sb call = {0}, types = {0}, sizes = {0};
    unsigned np = 0;
    size_t nl = k->name_end - k->name;
    int rc = 0;

    if (nl >= sizeof name)
        return weft__error(WEFT_EBUILD, "portable: kernel name too long");
    memcpy(name, m + k->name, nl);
    name[nl] = '\0';
    for (size_t at = k->lp + 1, end; at < k->rp; at = end + 1) {
        size_t pb, pe, loc;
        weft_param_type t;
        int ptr;

        rc = weft__param_at(m, at, k->rp, name, np, &pb, &pe, &end, &t);
        if (rc != 0) {
            rc = rc < 0 ? rc : 0;
            break;
        }
        ptr = t == WEFT_PARAM_BUFFER || t == WEFT_PARAM_LOCAL;
        loc = weft__word(m, pb, pe, "WEFT_LOCAL");
        for (size_t l = loc; l != WEFT__NPOS;
             l = weft__word(m, l + 10, pe, "WEFT_LOCAL"))
            memset(out + l, ' ', 10);
        /* the type as written, with WEFT_LOCAL blanked */
        {
            weft__sb ty = {0};

            weft__sb_put(&ty, out + pb, pe - pb);
            if (ty.oom) {
                rc = weft__error(WEFT_ENOMEM, "portable: out of memory");
                break;
            }
            if (np)
                weft__sb_str(&call, ", ");
            weft__sb_str(&call, ptr ? "(" : "*(");
            weft__sb_str(&call, ty.p);
            snprintf(buf, sizeof buf, ptr ? ")a[%u]" : " *)a[%u]", np);
            weft__sb_str(&call, buf);
            snprintf(buf, sizeof buf, "%s%d", np ? ", " : "", (int)t);
            weft__sb_str(&types, buf);
            weft__sb_str(&sizes, np ? ", " : "");
            if (t == WEFT_PARAM_BYTES) {
                weft__sb_str(&sizes, "sizeof(");
                weft__sb_str(&sizes, ty.p);
                weft__sb_str(&sizes, ")");
            } else {
                weft__sb_str(&sizes, "0");
            }
            weft__free(ty.p);
        }
        np++;
    }
    k->np = np;
    if (rc == 0) {
        snprintf(buf, sizeof buf,
                 "static void weft__i_%s(void *const *a)\n{\n    (void)a;\n"
                 "    %s(",
                 name, name);
        weft__sb_str(b, buf);
        weft__sb_str(b, call.p ? call.p : "");
        snprintf(buf, sizeof buf,
                 ");\n}\nstatic void weft__g_%s(const weft__cc_group *g, "
                 "void *const *a)\n{\n    weft__cc_run(g, a, weft__i_%s, "
                 "%d);\n}\nstatic const int weft__p_%s[] = {",
                 name, name, barrier, name);
        weft__sb_str(b, buf);
        weft__sb_str(b, types.p ? types.p : "0");
        snprintf(buf, sizeof buf,
                 "};\nstatic const unsigned long weft__s_%s[] = {", name);
        weft__sb_str(b, buf);
        weft__sb_str(b, sizes.p ? sizes.p : "0");
        weft__sb_str(b, "};\n");
        if (call.oom || types.oom || sizes.oom)
            rc = weft__error(WEFT_ENOMEM, "portable: out of memory");
    }
    weft__free(call.p);
    weft__free(types.p);
    weft__free(sizes.p);
    return rc;
}

/* Portable source to host C: see weft__prelude_host. line: the #line. */
static int weft__portable_host_c(const char *src, const char *line, char **out)
{
    size_t n = strlen(src), nk = 0, cap = 0, pos = 0;
    char *m1 = weft__mask(src, n, 0), *m2 = weft__mask(src, n, 1);
    char *copy = weft__strdup(src), buf[1024];
    weft__hk *ks = NULL;
    weft__sb b = {0}, tail = {0};
    int rc = 0, outside;

    if (!m1 || !m2 || !copy) {
        rc = weft__error(WEFT_ENOMEM, "portable: out of memory");
        goto done;
    }
    for (size_t at;
         (at = weft__word(m2, pos, n, "WEFT_KERNEL")) != WEFT__NPOS;) {
        weft__hk k;
        const char *lp = memchr(m2 + at, '(', n - at);
        size_t after;

        if (!lp)
            break;
        k.lp = (size_t)(lp - m2);
        k.name_end = k.lp;
        while (k.name_end > at && isspace((unsigned char)m2[k.name_end - 1]))
            k.name_end--;
        k.name = k.name_end;
        while (k.name > at && weft__is_ident(m2[k.name - 1]))
            k.name--;
        k.rp = weft__close(m2, n, k.lp);
        if (k.name == k.name_end || k.rp == WEFT__NPOS) {
            rc = weft__error(WEFT_EBUILD,
                             "portable: a WEFT_KERNEL without a name or "
                             "closing ')'");
            goto done;
        }
        for (after = k.rp + 1; after < n && isspace((unsigned char)m2[after]);)
            after++;
        pos = after + 1;
        if (after >= n || m2[after] != '{')
            continue; /* a declaration */
        k.lb = after;
        k.rb = weft__close(m2, n, k.lb);
        if (k.rb == WEFT__NPOS) {
            rc = weft__error(WEFT_EBUILD,
                             "portable: kernel body without its closing '}'");
            goto done;
        }
        pos = k.rb + 1;
        if (nk == cap) {
            weft__hk *p = weft__realloc(ks, (cap = cap * 2 + 8) * sizeof *p);

            if (!p) {
                rc = weft__error(WEFT_ENOMEM, "portable: out of memory");
                goto done;
            }
            ks = p;
        }
        ks[nk++] = k;
    }
    /* A barrier outside kernel bodies: in a helper or a macro. */
    {
        size_t from = 0;

        outside = 0;
        for (size_t i = 0; i <= nk && !outside; i++) {
            size_t to = i < nk ? ks[i].lb : n;

            outside = weft__word(m1, from, to, "weft_barrier") != WEFT__NPOS;
            from = i < nk ? ks[i].rb : n;
        }
    }
    weft__sb_str(&tail, "\n#line 1 \"weft-host-wrappers\"\n");
    for (size_t i = 0; i < nk && rc == 0; i++)
        rc = weft__host_wrap(&tail, m2, copy, &ks[i],
                             outside ||
                                 weft__word(m1, ks[i].lb, ks[i].rb,
                                            "weft_barrier") != WEFT__NPOS);
    if (rc < 0)
        goto done;
    weft__sb_str(&tail, "const weft__cc_kernel weft__cc_kernels[] = {\n");
    for (size_t i = 0; i < nk; i++) {
        char name[128];
        size_t nl = ks[i].name_end - ks[i].name;

        memcpy(name, m2 + ks[i].name, nl); /* < 128: weft__host_wrap */
        name[nl] = '\0';
        snprintf(buf, sizeof buf,
                 "    {\"%s\", weft__g_%s, %u, weft__p_%s, weft__s_%s},\n",
                 name, name, ks[i].np, name, name);
        weft__sb_str(&tail, buf);
    }
    if (!nk)
        weft__sb_str(&tail, "    {0, 0, 0, 0, 0},\n");
    snprintf(buf, sizeof buf,
             "};\nconst unsigned weft__cc_nkernels = %zu;\n"
             "const unsigned weft__cc_abi = %d;\n",
             nk, WEFT__HOSTCC_ABI);
    weft__sb_str(&tail, buf);
    weft__sb_str(&b, weft__prelude_host);
    weft__sb_str(&b, line);
    weft__sb_str(&b, copy);
    weft__sb_put(&b, tail.p ? tail.p : "", tail.n);
    if (b.oom || tail.oom) {
        rc = weft__error(WEFT_ENOMEM, "portable: out of memory");
        goto done;
    }
    *out = b.p;
    b.p = NULL;
done:
    weft__free(b.p);
    weft__free(tail.p);
    weft__free(ks);
    weft__free(m1);
    weft__free(m2);
    weft__free(copy);
    return rc;
}

int weft__portable_params(const char *src, const char *name,
                          weft_param_type **types, unsigned *count)
{
    size_t n, nl = strlen(name), pos = 0;
    char *m;
    int rc = WEFT_ENOTFOUND;

    *types = NULL;
    *count = 0;
    if (!src)
        return WEFT_ENOTFOUND;
    n = strlen(src);
    if (!(m = weft__mask(src, n, 1)))
        return weft__error(WEFT_ENOMEM, "portable: out of memory");
    for (size_t at;
         rc == WEFT_ENOTFOUND &&
         (at = weft__word(m, pos, n, "WEFT_KERNEL")) != WEFT__NPOS;) {
        const char *lp = memchr(m + at, '(', n - at);
        size_t l, ne, nb, rp, after;
        weft_param_type *t = NULL;
        unsigned np = 0;

        if (!lp)
            break;
        l = (size_t)(lp - m);
        for (ne = l; ne > at && isspace((unsigned char)m[ne - 1]);)
            ne--;
        for (nb = ne; nb > at && weft__is_ident(m[nb - 1]);)
            nb--;
        rp = weft__close(m, n, l);
        if (rp == WEFT__NPOS)
            break;
        for (after = rp + 1; after < n && isspace((unsigned char)m[after]);)
            after++;
        pos = rp + 1;
        if (after >= n || m[after] != '{' || ne - nb != nl ||
            memcmp(m + nb, name, nl) != 0)
            continue; /* a declaration, or another kernel */
        if (!(t = weft__calloc(rp - l + 1, sizeof *t))) {
            rc = weft__error(WEFT_ENOMEM, "portable: out of memory");
            break;
        }
        rc = 0;
        for (size_t a = l + 1, end; a < rp; a = end + 1) {
            size_t pb, pe;
            int r = weft__param_at(m, a, rp, name, np, &pb, &pe, &end, &t[np]);

            if (r != 0) {
                rc = r < 0 ? r : 0;
                break;
            }
            np++;
        }
        if (rc < 0) {
            weft__free(t);
            break;
        }
        *types = t;
        *count = np;
    }
    weft__free(m);
    return rc;
}

int weft__portable_translate(const char *src, weft__source_kind target,
                             const char *name, char **out)
{
    char line[160];
    const char *prelude;
    size_t np, ns, nl;
    char *s;

    /* The name as the compilers' messages give the file: a C string. */
    {
        size_t k = 0;

        if (!name || !name[0])
            name = "portable";
        k = (size_t)snprintf(line, sizeof line, "#line 1 \"");
        for (; *name && k < sizeof line - 4; name++)
            line[k++] =
                *name == '"' || *name == '\\' || (unsigned char)*name < ' '
                    ? '_'
                    : *name;
        memcpy(line + k, "\"\n", 3);
        nl = k + 2;
    }
    if (!src || !out)
        return weft__error(WEFT_EINVAL, "portable source is NULL");
    if (target == WEFT__SRC_HOST_C)
        return weft__portable_host_c(src, line, out);
    if (target == WEFT__SRC_OPENCL_C)
        prelude = weft__prelude_opencl;
    else if (target == WEFT__SRC_CUDA_CXX)
        prelude = weft__prelude_cuda;
    else
        return weft__error(WEFT_EINVAL,
                           "portable kernels compile to OpenCL C, CUDA "
                           "C++ or host C only (asked for source kind %d)",
                           (int)target);
    np = strlen(prelude);
    ns = strlen(src);
    s = weft__malloc(np + nl + ns + 1);
    if (!s)
        return weft__error(WEFT_ENOMEM, "portable kernel: out of memory");
    memcpy(s, prelude, np);
    memcpy(s + np, line, nl);
    memcpy(s + np + nl, src, ns + 1);
    *out = s;
    return 0;
}
