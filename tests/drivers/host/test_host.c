/*
 * The host driver: what is specific to it. The devices come from the
 * driver's own discovery (two devices of four threads each; the tests of
 * a launch's roots job open devices of their own thread counts), every
 * operation goes through the checked weft__drv_* entry points.
 *
 * Nothing here sleeps: where a test needs work to be held back, a host
 * function on the queue blocks on a gate that the test opens.
 */
#include "wt_test.h"

#include "drivers/driver.h"
#include "drivers/host/host_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NTHREADS 4

typedef struct fixture {
    weft__platform **platforms;
    unsigned nplatforms;
    weft__device *dev[2];
    weft__context *ctx[2];
} fixture;

#define OK(call) assert_int_equal((call), 0)

static int setup(void **state)
{
    static fixture f;
    weft__driver_config cfg = {NULL, 2, NTHREADS, 0};

    memset(&f, 0, sizeof f);
    if (weft__driver_host.platforms_open(&cfg, &f.platforms, &f.nplatforms))
        return -1;
    if (f.nplatforms != 1 || f.platforms[0]->ndevices != 2)
        return -1;
    for (int i = 0; i < 2; i++) {
        f.dev[i] = f.platforms[0]->devices[i];
        if (weft__drv_context_create(f.dev[i], &f.ctx[i]))
            return -1;
    }
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;

    weft__fault_disarm();
    for (int i = 0; i < 2; i++)
        if (f->ctx[i] && weft__drv_context_destroy(f->ctx[i]))
            return -1; /* a live object was left behind */
    weft__driver_host.platforms_close(f->platforms, f->nplatforms);
    return 0;
}

/* ---- a gate that holds a queue back until the test opens it ---------- */

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
} gate;

static void gate_init(gate *g)
{
    OK(pthread_mutex_init(&g->lock, NULL));
    OK(pthread_cond_init(&g->cond, NULL));
    g->open = 0;
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void gate_open_fn(void *user)
{
    gate_open(user);
}

static void gate_pass(void *user)
{
    gate *g = user;

    pthread_mutex_lock(&g->lock);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

static void gate_fini(gate *g)
{
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

static void flag_set(void *user)
{
    __atomic_store_n((int *)user, 1, __ATOMIC_RELEASE);
}

static int flag_get(int *flag)
{
    return __atomic_load_n(flag, __ATOMIC_ACQUIRE);
}

/* ---- kernels ------------------------------------------------------------ */

/* count(buffer out): out[global linear id] += 1 for every item. */
static void k_count(const weft_host_group *g, void *const *args)
{
    uint32_t *out = args[0];
    uint64_t w = (uint64_t)g->groups[0] * g->group_size[0];
    uint64_t h = (uint64_t)g->groups[1] * g->group_size[1];

    for (uint32_t z = 0; z < g->group_size[2]; z++)
        for (uint32_t y = 0; y < g->group_size[1]; y++)
            for (uint32_t x = 0; x < g->group_size[0]; x++) {
                uint64_t gx = (uint64_t)g->group[0] * g->group_size[0] + x;
                uint64_t gy = (uint64_t)g->group[1] * g->group_size[1] + y;
                uint64_t gz = (uint64_t)g->group[2] * g->group_size[2] + z;
                __atomic_add_fetch(&out[(gz * h + gy) * w + gx], 1,
                                   __ATOMIC_RELAXED);
            }
}

/*
 * group_sum(buffer out, local scratch, u32 add): each group writes its
 * items' global ids + add into scratch, then out[group] = their sum. A
 * scratch shared between threads would mix groups.
 */
static void k_group_sum(const weft_host_group *g, void *const *args)
{
    uint64_t *out = args[0];
    uint64_t *scratch = args[1];
    uint32_t add = *(const uint32_t *)args[2];
    uint64_t sum = 0;

    if ((uintptr_t)scratch % 64) {
        out[g->group[0]] = UINT64_MAX;
        return;
    }
    for (uint32_t i = 0; i < g->group_size[0]; i++)
        scratch[i] = (uint64_t)g->group[0] * g->group_size[0] + i + add;
    for (uint32_t i = 0; i < g->group_size[0]; i++)
        sum += scratch[i];
    out[g->group[0]] = sum;
}

/* advance(buffer x, u32 k, u64 n): x[i] = x[i] * 3 + k. */
static void k_advance(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t k = *(const uint32_t *)args[1];
    uint64_t n = *(const uint64_t *)args[2];

    for (uint32_t i = 0; i < g->group_size[0]; i++) {
        uint64_t id = (uint64_t)g->group[0] * g->group_size[0] + i;
        if (id < n)
            x[id] = x[id] * 3u + k;
    }
}

typedef struct triple {
    uint32_t a;
    uint16_t b;
    char tag[10];
} triple;

/* bytes(buffer out, bytes triple): out[0] = a + b + tag[9]. */
static void k_bytes(const weft_host_group *g, void *const *args)
{
    uint32_t *out = args[0];
    const triple *t = args[1];

    (void)g;
    out[0] = t->a + t->b + (uint32_t)t->tag[9];
}

/*
 * rendezvous(): every group waits until NTHREADS groups have arrived, so
 * the launch completes only if NTHREADS threads run it at once.
 */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned arrived;
} rv = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};

static void k_rendezvous(const weft_host_group *g, void *const *args)
{
    (void)g;
    (void)args;
    pthread_mutex_lock(&rv.lock);
    rv.arrived++;
    pthread_cond_broadcast(&rv.cond);
    while (rv.arrived % NTHREADS)
        pthread_cond_wait(&rv.cond, &rv.lock);
    pthread_mutex_unlock(&rv.lock);
}

/* wait_gate(u64 gate pointer): blocks on a gate (kernels that overlap). */
static void k_wait_gate(const weft_host_group *g, void *const *args)
{
    uint64_t address = *(const uint64_t *)args[0];

    (void)g;
    gate_pass((void *)(uintptr_t)address);
}

/* open_gate(u64 gate pointer): opens a gate that wait_gate blocks on. */
static void k_open_gate(const weft_host_group *g, void *const *args)
{
    uint64_t address = *(const uint64_t *)args[0];

    (void)g;
    gate_open((void *)(uintptr_t)address);
}

/* A cell that no kernel reads (cell's a and b). */
#define NO_CELL UINT32_MAX

/*
 * cell(buffer c, u32 dst, u32 a, u32 b): for each group i,
 * c[dst + i] += (a == NO_CELL ? 1 : c[a]) + (b == NO_CELL ? 0 : c[b]).
 * What it adds depends on whether the writers of a and b ran before it.
 */
static void k_cell(const weft_host_group *g, void *const *args)
{
    uint32_t *c = args[0];
    uint32_t dst = *(const uint32_t *)args[1] + g->group[0];
    uint32_t a = *(const uint32_t *)args[2];
    uint32_t b = *(const uint32_t *)args[3];

    c[dst] += (a == NO_CELL ? 1 : c[a]) + (b == NO_CELL ? 0 : c[b]);
}

/*
 * A meeting of want kernels: each waits until want have arrived, so a
 * launch with want of them completes only if want threads run them at
 * once. One that waits past a deadline far beyond any run's (a driver
 * that never runs them side by side) counts in late and goes on, so that
 * the test fails instead of hanging.
 */
typedef struct meeting {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    unsigned arrived, want, late;
} meeting;

/* meet(u64 meeting pointer). */
static void k_meet(const weft_host_group *g, void *const *args)
{
    meeting *m = (meeting *)(uintptr_t) * (const uint64_t *)args[0];
    struct timespec until;

    (void)g;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&m->lock);
    m->arrived++;
    pthread_cond_broadcast(&m->cond);
    while (m->arrived < m->want)
        if (pthread_cond_timedwait(&m->cond, &m->lock, &until) == ETIMEDOUT) {
            m->late++;
            break;
        }
    pthread_mutex_unlock(&m->lock);
}

static const weft_param_type p_buf[] = {WEFT_PARAM_BUFFER};
static const weft_param_type p_sum[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_LOCAL,
                                        WEFT_PARAM_U32};
static const weft_param_type p_adv[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_U32,
                                        WEFT_PARAM_U64};
static const weft_param_type p_bytes[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_BYTES};
static const size_t s_bytes[] = {0, sizeof(triple)};
static const weft_param_type p_u64[] = {WEFT_PARAM_U64};
static const weft_param_type p_cell[] = {WEFT_PARAM_BUFFER, WEFT_PARAM_U32,
                                         WEFT_PARAM_U32, WEFT_PARAM_U32};

static const weft_host_kernel kernels[] = {
    {"count", k_count, 1, p_buf, NULL, NULL, NULL},
    {"group_sum", k_group_sum, 3, p_sum, NULL, NULL, NULL},
    {"advance", k_advance, 3, p_adv, NULL, NULL, NULL},
    {"bytes", k_bytes, 2, p_bytes, s_bytes, NULL, NULL},
    {"rendezvous", k_rendezvous, 0, NULL, NULL, NULL, NULL},
    {"wait_gate", k_wait_gate, 1, p_u64, NULL, NULL, NULL},
    {"open_gate", k_open_gate, 1, p_u64, NULL, NULL, NULL},
    {"cell", k_cell, 4, p_cell, NULL, NULL, NULL},
    {"meet", k_meet, 1, p_u64, NULL, NULL, NULL},
};

static weft__module *module_load(weft__context *ctx)
{
    weft__module_source src = {WEFT__SRC_HOST_TABLE, kernels,
                               WEFT__COUNTOF(kernels), NULL, "test kernels"};
    weft__module *mod = NULL;

    OK(weft__drv_module_create(ctx, &src, &mod));
    return mod;
}

static weft__karg arg_buf(weft__mem *m, size_t off)
{
    weft__karg a = {WEFT_PARAM_BUFFER, 0, {.buf = {m, off}}, 0, 0, 0, 0, 0, 0};
    return a;
}

static weft__karg arg_val(weft_param_type t, const void *v, size_t size)
{
    weft__karg a = {t, size, {.value = v}, 0, 0, 0, 0, 0, 0};
    return a;
}

static weft__grid grid1(uint32_t groups, uint32_t size)
{
    weft__grid g = {{groups, 1, 1}, {size, 1, 1}, 0};
    return g;
}

/* ---- discovery ---------------------------------------------------------- */

static void discovery_reports_devices(void **state)
{
    fixture *f = *state;
    weft__platform *p = f->platforms[0];
    weft__platform **dflt;
    unsigned n;
    int can = 0;

    assert_string_equal(p->name, "weft host");
    assert_string_equal(p->vendor, "weft");
    for (unsigned i = 0; i < 2; i++) {
        const weft_device_info *info = &f->dev[i]->props;
        char prefix[32];

        snprintf(prefix, sizeof prefix, "host CPU %u (", i);
        assert_int_equal(strncmp(info->name, prefix, strlen(prefix)), 0);
        assert_int_equal(info->size, sizeof *info);
        assert_string_equal(info->driver, "host");
        assert_int_equal(info->driver_index, i);
        assert_int_equal(info->type, WEFT_DEVICE_CPU);
        assert_int_equal(info->compute_units, NTHREADS);
        assert_true(info->global_mem > 0);
        assert_int_equal(info->max_alloc, info->global_mem / 2);
        assert_int_equal(info->local_mem, 64 * 1024);
        assert_int_equal(info->max_group_size, 1024);
        assert_int_equal(info->copy_engines, 2);
        assert_int_equal(info->unified_memory, 0);
        assert_int_equal(info->timing_events, 1);
        assert_string_equal(info->pci_bus_id, "");
        assert_ptr_equal(f->dev[i]->platform, p);
    }
    OK(weft__driver_host.can_access_peer(f->dev[0], f->dev[1], &can));
    assert_int_equal(can, 1);

    /* Defaults: one device, one thread per online core. */
    OK(weft__driver_host.platforms_open(NULL, &dflt, &n));
    assert_int_equal(n, 1);
    assert_int_equal(dflt[0]->ndevices, 1);
    assert_int_equal(dflt[0]->devices[0]->props.compute_units,
                     (unsigned)sysconf(_SC_NPROCESSORS_ONLN));
    weft__driver_host.platforms_close(dflt, n);
}

/* ---- kernels ------------------------------------------------------------ */

static void grid_3d_runs_every_item_once(void **state)
{
    fixture *f = *state;
    weft__grid grid = {{3, 4, 5}, {2, 3, 2}, 0};
    size_t n = (size_t)weft__grid_items(&grid);
    uint32_t *host = calloc(n, sizeof *host);
    weft__module *mod = module_load(f->ctx[0]);
    weft__kernel *k;
    weft__queue *q;
    weft__mem *m;
    weft__karg a;
    uint32_t zero = 0;

    assert_non_null(host);
    OK(weft__drv_kernel_get(mod, "count", &k));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], n * 4, &m));
    OK(weft__drv_fill(q, m, 0, &zero, 4, n * 4));
    a = arg_buf(m, 0);
    for (int i = 0; i < 3; i++)
        OK(weft__drv_launch(q, k, &grid, &a, 1));
    OK(weft__drv_copy_d2h(q, host, m, 0, n * 4));
    OK(weft__drv_queue_sync(q));
    for (size_t i = 0; i < n; i++)
        assert_int_equal(host[i], 3);
    OK(weft__drv_mem_free(m));
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_module_destroy(mod));
    free(host);
}

static void local_scratch_is_per_thread_and_values_are_copied(void **state)
{
    fixture *f = *state;
    enum { GROUPS = 257, SIZE = 64 };
    weft__module *mod = module_load(f->ctx[0]);
    weft__grid grid = grid1(GROUPS, SIZE);
    uint64_t host[GROUPS];
    weft__kernel *k;
    weft__queue *q;
    weft__mem *m;
    gate g;
    uint32_t add = 7;
    weft__karg a[3];

    gate_init(&g);
    OK(weft__drv_kernel_get(mod, "group_sum", &k));
    assert_int_equal(k->params_known, 1);
    assert_int_equal(k->nparams, 3);
    assert_int_equal(k->param_sizes[2], 4);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof host, &m));
    /* Held back, so that the launch runs after add has changed. */
    OK(weft__drv_host_fn(q, gate_pass, &g));
    a[0] = arg_buf(m, 0);
    a[1] = (weft__karg){
        WEFT_PARAM_LOCAL, SIZE * 8, {.value = NULL}, 0, 0, 0, 0, 0, 0};
    a[2] = arg_val(WEFT_PARAM_U32, &add, 4);
    OK(weft__drv_launch(q, k, &grid, a, 3));
    add = 1000;
    gate_open(&g);
    OK(weft__drv_copy_d2h(q, host, m, 0, sizeof host));
    OK(weft__drv_queue_sync(q));
    for (uint64_t i = 0; i < GROUPS; i++) {
        uint64_t first = i * SIZE + 7;
        assert_int_equal(host[i], SIZE * first + SIZE * (SIZE - 1) / 2);
    }
    OK(weft__drv_mem_free(m));
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_module_destroy(mod));
    gate_fini(&g);
}

static void bytes_parameter_is_passed_by_value(void **state)
{
    fixture *f = *state;
    weft__module *mod = module_load(f->ctx[0]);
    weft__grid grid = grid1(1, 1);
    triple t = {40, 2, "abcdefghij"}; /* fills tag, no NUL */
    uint32_t out = 0;
    weft__kernel *k;
    weft__queue *q;
    weft__mem *m;
    weft__karg a[2];

    OK(weft__drv_kernel_get(mod, "bytes", &k));
    assert_int_equal(k->param_sizes[1], sizeof(triple));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], 4, &m));
    a[0] = arg_buf(m, 0);
    a[1] = arg_val(WEFT_PARAM_BYTES, &t, sizeof t);
    OK(weft__drv_launch(q, k, &grid, a, 2));
    memset(&t, 0, sizeof t);
    OK(weft__drv_copy_d2h(q, &out, m, 0, 4));
    OK(weft__drv_queue_sync(q));
    assert_int_equal(out, 42 + (uint32_t)'j');
    OK(weft__drv_mem_free(m));
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_module_destroy(mod));
}

static void launch_uses_every_thread_of_the_device(void **state)
{
    fixture *f = *state;
    weft__module *mod = module_load(f->ctx[0]);
    weft__grid grid = grid1(NTHREADS, 1);
    weft__kernel *k;
    weft__queue *q;

    OK(weft__drv_kernel_get(mod, "rendezvous", &k));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    /* Completes only if NTHREADS groups run at the same time. */
    for (int i = 0; i < 3; i++)
        OK(weft__drv_launch(q, k, &grid, NULL, 0));
    OK(weft__drv_queue_sync(q));
    assert_int_equal(rv.arrived, 3 * NTHREADS);
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_module_destroy(mod));
}

static void kernels_of_two_queues_overlap(void **state)
{
    fixture *f = *state;
    weft__module *mod = module_load(f->ctx[0]);
    weft__grid grid = grid1(1, 1);
    weft__kernel *k;
    weft__queue *q[2];
    gate g;
    uint64_t gp = (uint64_t)(uintptr_t)&g;
    weft__karg a = arg_val(WEFT_PARAM_U64, &gp, 8);
    int done = 0;

    gate_init(&g);
    OK(weft__drv_kernel_get(mod, "wait_gate", &k));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q[0]));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q[1]));
    /* q0's kernel blocks until q1's host function opens the gate. */
    OK(weft__drv_launch(q[0], k, &grid, &a, 1));
    OK(weft__drv_host_fn(q[0], flag_set, &done));
    OK(weft__drv_host_fn(q[1], gate_open_fn, &g));
    OK(weft__drv_queue_sync(q[0]));
    assert_int_equal(flag_get(&done), 1);
    OK(weft__drv_queue_destroy(q[0]));
    OK(weft__drv_queue_destroy(q[1]));
    OK(weft__drv_module_destroy(mod));
    gate_fini(&g);
}

static void module_errors(void **state)
{
    fixture *f = *state;
    weft__module_source cl = {WEFT__SRC_OPENCL_C, "kernel void f() {}", 0, NULL,
                              "f.cl"};
    static const weft_host_kernel twice[] = {
        {"a", k_count, 1, p_buf, NULL, NULL, NULL},
        {"a", k_count, 1, p_buf, NULL, NULL, NULL},
    };
    weft__module_source dup = {WEFT__SRC_HOST_TABLE, twice, 2, NULL, NULL};
    weft__module *mod = NULL;
    weft__kernel *k = NULL, *k2 = NULL;

    assert_int_equal(weft__drv_module_create(f->ctx[0], &cl, &mod),
                     WEFT_ENOTSUP);
    assert_non_null(strstr(weft_last_error(), "f.cl"));
    assert_int_equal(weft__drv_module_create(f->ctx[0], &dup, &mod),
                     WEFT_EINVAL);
    assert_null(mod);
    mod = module_load(f->ctx[0]);
    assert_int_equal(weft__drv_kernel_get(mod, "no_such_kernel", &k),
                     WEFT_ENOTFOUND);
    assert_non_null(strstr(weft_last_error(), "no_such_kernel"));
    OK(weft__drv_kernel_get(mod, "advance", &k));
    OK(weft__drv_kernel_get(mod, "advance", &k2));
    assert_ptr_equal(k, k2);
    assert_string_equal(k->name, "advance");
    OK(weft__drv_module_destroy(mod));
}

/* ---- memory ------------------------------------------------------------- */

static void two_devices_have_distinct_memories(void **state)
{
    fixture *f = *state;
    enum { N = 4096 };
    unsigned char a = 0xaa, b = 0x55, out[2][N];
    weft__queue *q[2];
    weft__mem *m[2];

    for (int i = 0; i < 2; i++) {
        OK(weft__drv_queue_create(f->ctx[i], NULL, &q[i]));
        OK(weft__drv_mem_alloc(f->ctx[i], N, &m[i]));
        assert_int_equal((uintptr_t)m[i]->host, 0);
    }
    OK(weft__drv_fill(q[0], m[0], 0, &a, 1, N));
    OK(weft__drv_fill(q[1], m[1], 0, &b, 1, N));
    OK(weft__drv_copy_d2h(q[0], out[0], m[0], 0, N));
    OK(weft__drv_copy_d2h(q[1], out[1], m[1], 0, N));
    OK(weft__drv_queue_sync(q[0]));
    OK(weft__drv_queue_sync(q[1]));
    for (int i = 0; i < N; i++) {
        assert_int_equal(out[0][i], 0xaa);
        assert_int_equal(out[1][i], 0x55);
    }
    /* A peer copy, on either device's queue. */
    OK(weft__drv_copy_peer(q[1], m[1], 16, m[0], 0, 32));
    OK(weft__drv_copy_peer(q[1], m[0], 100, m[1], 0, 8));
    OK(weft__drv_queue_sync(q[1]));
    OK(weft__drv_copy_d2h(q[1], out[1], m[1], 0, N));
    OK(weft__drv_copy_d2h(q[0], out[0], m[0], 0, N));
    OK(weft__drv_queue_sync(q[1]));
    OK(weft__drv_queue_sync(q[0]));
    for (int i = 0; i < N; i++) {
        assert_int_equal(out[1][i], i >= 16 && i < 48 ? 0xaa : 0x55);
        assert_int_equal(out[0][i], i >= 100 && i < 108 ? 0x55 : 0xaa);
    }
    for (int i = 0; i < 2; i++) {
        OK(weft__drv_mem_free(m[i]));
        OK(weft__drv_queue_destroy(q[i]));
    }
}

static void fill_patterns_and_host_memory(void **state)
{
    fixture *f = *state;
    uint16_t p2 = 0xbeef;
    uint32_t p4 = 0x01020304;
    uint32_t user[16];
    unsigned char out[64];
    weft__queue *q;
    weft__mem *m, *pinned, *reg;

    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], 64, &m));
    OK(weft__drv_host_alloc(f->ctx[0], 64, &pinned));
    assert_non_null(pinned->host);
    assert_int_equal((uintptr_t)pinned->host % 64, 0);
    OK(weft__drv_host_register(f->ctx[0], user, sizeof user, &reg));
    assert_ptr_equal(reg->host, user);

    memset(out, 0, sizeof out);
    OK(weft__drv_copy_h2d(q, m, 0, out, 64));
    OK(weft__drv_fill(q, m, 2, &p2, 2, 10));  /* [2, 12) */
    OK(weft__drv_fill(q, m, 16, &p4, 4, 36)); /* [16, 52) */
    /* Pinned memory as the host side of copies, at its own offsets. */
    OK(weft__drv_copy_d2h(q, pinned->host, m, 0, 64));
    OK(weft__drv_copy_h2d(q, m, 0, (char *)pinned->host + 16, 16));
    OK(weft__drv_copy_d2h(q, user, m, 0, 64));
    OK(weft__drv_queue_sync(q));
    memcpy(out, pinned->host, 64);
    for (int i = 0; i < 64; i++) {
        unsigned char want = 0;
        if (i >= 2 && i < 12)
            want = i % 2 ? 0xbe : 0xef;
        else if (i >= 16 && i < 52)
            want = (unsigned char)(4 - i % 4);
        assert_int_equal(out[i], want);
    }
    assert_memory_equal(user, out + 16, 16);
    assert_memory_equal((char *)user + 16, out + 16, 48);
    OK(weft__drv_mem_free(reg));
    OK(weft__drv_mem_free(pinned));
    OK(weft__drv_mem_free(m));
    OK(weft__drv_queue_destroy(q));
}

/* ---- queues and events -------------------------------------------------- */

static void wait_on_other_device_sees_its_writes(void **state)
{
    fixture *f = *state;
    enum { N = 1024 };
    static uint32_t src[N], out[N];
    weft__queue *q[2];
    weft__mem *m[2];
    weft__event *ev;
    gate g;
    int after_wait = 0;

    gate_init(&g);
    for (uint32_t i = 0; i < N; i++)
        src[i] = i * 2654435761u;
    for (int i = 0; i < 2; i++) {
        OK(weft__drv_queue_create(f->ctx[i], NULL, &q[i]));
        OK(weft__drv_mem_alloc(f->ctx[i], N * 4, &m[i]));
    }
    OK(weft__drv_event_create(f->ctx[0], 0, &ev));
    OK(weft__drv_host_fn(q[0], gate_pass, &g));
    OK(weft__drv_copy_h2d(q[0], m[0], 0, src, N * 4));
    OK(weft__drv_event_record(ev, q[0]));
    OK(weft__drv_queue_wait_event(q[1], ev));
    OK(weft__drv_host_fn(q[1], flag_set, &after_wait));
    OK(weft__drv_copy_peer(q[1], m[1], 0, m[0], 0, N * 4));
    OK(weft__drv_copy_d2h(q[1], out, m[1], 0, N * 4));

    /* The gate holds q0, so the event and all of q1 are held too. */
    assert_int_equal(weft__drv_event_query(ev), WEFT_ENOTREADY);
    assert_int_equal(flag_get(&after_wait), 0);
    gate_open(&g);
    OK(weft__drv_queue_sync(q[1]));
    assert_int_equal(weft__drv_event_query(ev), 0);
    assert_memory_equal(out, src, sizeof src);

    OK(weft__drv_event_destroy(ev));
    for (int i = 0; i < 2; i++) {
        OK(weft__drv_mem_free(m[i]));
        OK(weft__drv_queue_destroy(q[i]));
    }
    gate_fini(&g);
}

typedef struct trace {
    int seq[8];
    int n;
    const uint32_t *watch; /* host memory written by a copy before */
    uint32_t seen;
} trace;

static trace tr;

static void trace_a(void *user)
{
    tr.seen = *tr.watch;
    tr.seq[tr.n++] = (int)(intptr_t)user;
}

static void host_functions_run_in_order_after_prior_work(void **state)
{
    fixture *f = *state;
    uint32_t v = 0xdeadbeef, out = 0, again = 0;
    weft__queue *q;
    weft__mem *m;

    memset(&tr, 0, sizeof tr);
    tr.watch = &out;
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], 4, &m));
    OK(weft__drv_host_fn(q, trace_a, (void *)(intptr_t)1));
    OK(weft__drv_copy_h2d(q, m, 0, &v, 4));
    OK(weft__drv_copy_d2h(q, &out, m, 0, 4));
    OK(weft__drv_host_fn(q, trace_a, (void *)(intptr_t)2)); /* sees out */
    OK(weft__drv_host_fn(q, trace_a, (void *)(intptr_t)3));
    OK(weft__drv_copy_d2h(q, &again, m, 0, 4));
    OK(weft__drv_queue_sync(q));
    assert_int_equal(tr.n, 3);
    assert_int_equal(tr.seq[0], 1);
    assert_int_equal(tr.seq[1], 2);
    assert_int_equal(tr.seq[2], 3);
    assert_int_equal(tr.seen, 0xdeadbeef);
    assert_int_equal(again, 0xdeadbeef);
    OK(weft__drv_mem_free(m));
    OK(weft__drv_queue_destroy(q));
}

/*
 * Several threads enqueue on one queue at once, each syncing now and then:
 * every operation runs once, each thread's in the order it enqueued them,
 * and a sync returns only after the work its thread enqueued before it.
 */
enum { PRODUCERS = 4, PER_PRODUCER = 3000, SYNC_EVERY = 500 };

typedef struct producer {
    weft__queue *q;
    weft__mem *m; /* 4 bytes of device memory of this producer's */
    unsigned ran; /* host functions run so far; written by the worker */
    unsigned bad; /* one ran out of order */
    unsigned copied, seen;
    unsigned row; /* of producer_steps */
    int rc;
} producer;

typedef struct producer_step {
    producer *p;
    unsigned n;
} producer_step;

static producer_step producer_steps[PRODUCERS][PER_PRODUCER];

static void producer_fn(void *user)
{
    producer_step *st = user;
    unsigned ran = __atomic_load_n(&st->p->ran, __ATOMIC_RELAXED);

    if (ran != st->n)
        __atomic_store_n(&st->p->bad, 1, __ATOMIC_RELAXED);
    __atomic_store_n(&st->p->ran, ran + 1, __ATOMIC_RELAXED);
}

static void *producer_main(void *arg)
{
    producer *p = arg;
    int rc = 0;

    for (unsigned i = 0; i < PER_PRODUCER && rc == 0; i++) {
        producer_step *st = &producer_steps[p->row][i];

        st->p = p;
        st->n = i;
        rc = weft__drv_host_fn(p->q, producer_fn, st);
        if (rc == 0 && i % SYNC_EVERY == SYNC_EVERY - 1) {
            /* A copy through the producer's memory, then a sync: the
             * bytes are back once it returns. */
            p->copied = i;
            rc = weft__drv_copy_h2d(p->q, p->m, 0, &p->copied, 4);
            if (rc == 0)
                rc = weft__drv_copy_d2h(p->q, &p->seen, p->m, 0, 4);
            if (rc == 0)
                rc = weft__drv_queue_sync(p->q);
            if (rc == 0 &&
                (p->seen != i ||
                 __atomic_load_n(&p->ran, __ATOMIC_RELAXED) != i + 1))
                rc = -1;
        }
    }
    p->rc = rc;
    return NULL;
}

static void many_threads_enqueue_on_one_queue(void **state)
{
    fixture *f = *state;
    producer p[PRODUCERS];
    pthread_t t[PRODUCERS];
    weft__queue *q;

    memset(p, 0, sizeof p);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    for (int i = 0; i < PRODUCERS; i++) {
        p[i].q = q;
        p[i].row = (unsigned)i;
        OK(weft__drv_mem_alloc(f->ctx[0], 4, &p[i].m));
    }
    for (int i = 0; i < PRODUCERS; i++)
        OK(pthread_create(&t[i], NULL, producer_main, &p[i]));
    for (int i = 0; i < PRODUCERS; i++)
        OK(pthread_join(t[i], NULL));
    OK(weft__drv_queue_sync(q));
    for (int i = 0; i < PRODUCERS; i++) {
        assert_int_equal(p[i].rc, 0);
        assert_int_equal(p[i].bad, 0);
        assert_int_equal(p[i].ran, PER_PRODUCER);
        OK(weft__drv_mem_free(p[i].m));
    }
    OK(weft__drv_queue_destroy(q));
}

static void event_elapsed_is_ordered(void **state)
{
    fixture *f = *state;
    weft__event *e[3], *plain;
    weft__queue *q;
    weft__mem *m;
    gate g;
    uint64_t t01 = 0, t02 = 0, t12 = 0;
    unsigned char zero = 0;

    gate_init(&g);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], 1 << 20, &m));
    for (int i = 0; i < 3; i++)
        OK(weft__drv_event_create(f->ctx[0], WEFT__EVENT_TIMING, &e[i]));
    OK(weft__drv_event_create(f->ctx[0], 0, &plain));

    /* Never recorded: complete, but without a time. */
    OK(weft__drv_event_query(e[0]));
    OK(weft__drv_event_sync(e[0]));
    assert_int_equal(weft__drv_event_elapsed(e[0], e[1], &t01), WEFT_ESTATE);

    OK(weft__drv_host_fn(q, gate_pass, &g));
    OK(weft__drv_event_record(e[0], q));
    OK(weft__drv_fill(q, m, 0, &zero, 1, 1 << 20));
    OK(weft__drv_event_record(e[1], q));
    OK(weft__drv_fill(q, m, 0, &zero, 1, 1 << 20));
    OK(weft__drv_event_record(e[2], q));
    assert_int_equal(weft__drv_event_elapsed(e[0], e[2], &t02), WEFT_ENOTREADY);
    gate_open(&g);
    OK(weft__drv_event_sync(e[2]));
    OK(weft__drv_event_query(e[1])); /* captured earlier work: done too */
    OK(weft__drv_event_elapsed(e[0], e[1], &t01));
    OK(weft__drv_event_elapsed(e[1], e[2], &t12));
    OK(weft__drv_event_elapsed(e[0], e[2], &t02));
    assert_int_equal(t02, t01 + t12);
    assert_true(t01 > 0); /* a 1 MiB fill takes time */
    assert_int_equal(weft__drv_event_elapsed(e[2], e[0], &t01), WEFT_EINVAL);
    assert_int_equal(weft__drv_event_elapsed(e[0], plain, &t01), WEFT_EINVAL);

    for (int i = 0; i < 3; i++)
        OK(weft__drv_event_destroy(e[i]));
    OK(weft__drv_event_destroy(plain));
    OK(weft__drv_mem_free(m));
    OK(weft__drv_queue_destroy(q));
    gate_fini(&g);
}

static void destroy_event_while_a_wait_on_it_is_pending(void **state)
{
    fixture *f = *state;
    weft__queue *q[2];
    weft__event *ev;
    gate g;
    int done = 0;

    gate_init(&g);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q[0]));
    OK(weft__drv_queue_create(f->ctx[1], NULL, &q[1]));
    OK(weft__drv_event_create(f->ctx[0], 0, &ev));
    OK(weft__drv_host_fn(q[0], gate_pass, &g));
    OK(weft__drv_event_record(ev, q[0]));
    OK(weft__drv_queue_wait_event(q[1], ev));
    OK(weft__drv_host_fn(q[1], flag_set, &done));
    OK(weft__drv_event_destroy(ev));
    /* The wait still holds: the event's completion outlives the event. */
    assert_int_equal(flag_get(&done), 0);
    gate_open(&g);
    OK(weft__drv_queue_sync(q[1]));
    assert_int_equal(flag_get(&done), 1);
    OK(weft__drv_queue_destroy(q[0]));
    OK(weft__drv_queue_destroy(q[1]));
    gate_fini(&g);
}

static void events_outlive_their_queue(void **state)
{
    fixture *f = *state;
    weft__event *e[2];
    weft__queue *q, *q2;
    uint64_t ns = 1;

    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q2));
    for (int i = 0; i < 2; i++) {
        OK(weft__drv_event_create(f->ctx[0], WEFT__EVENT_TIMING, &e[i]));
        OK(weft__drv_event_record(e[i], q));
    }
    OK(weft__drv_queue_destroy(q)); /* drains q */
    assert_int_equal(weft__drv_queue_sync(q), WEFT_EDESTROYED);
    OK(weft__drv_event_query(e[1]));
    OK(weft__drv_event_sync(e[0]));
    OK(weft__drv_event_elapsed(e[0], e[1], &ns));
    OK(weft__drv_queue_wait_event(q2, e[1]));
    /* Re-recording on another queue re-targets the event. */
    OK(weft__drv_event_record(e[1], q2));
    OK(weft__drv_event_sync(e[1]));
    for (int i = 0; i < 2; i++)
        OK(weft__drv_event_destroy(e[i]));
    OK(weft__drv_queue_destroy(q2));
}

/*
 * Four queues, two per device, pass one array around R rounds: round r runs
 * on queue r % 4, waits for round r - 1, copies its array in (peer or
 * device copy), advances it with k = r and records. The result is that of
 * running the rounds one by one.
 */
static void stress_cross_waits_are_deterministic(void **state)
{
    fixture *f = *state;
    enum { N = 1000, R = 400, Q = 4 };
    static uint32_t init[N], want[N], out[N];
    weft__module *mod[2];
    weft__kernel *k[2];
    weft__queue *q[Q];
    weft__mem *m[Q];
    weft__event *ev[Q];
    uint64_t n = N;
    weft__grid grid = grid1((N + 63) / 64, 64);

    for (uint32_t i = 0; i < N; i++)
        want[i] = init[i] = i;
    for (uint32_t r = 0; r < R; r++)
        for (uint32_t i = 0; i < N; i++)
            want[i] = want[i] * 3u + r;
    for (int d = 0; d < 2; d++) {
        mod[d] = module_load(f->ctx[d]);
        OK(weft__drv_kernel_get(mod[d], "advance", &k[d]));
    }
    for (int i = 0; i < Q; i++) {
        weft__context *ctx = f->ctx[i % 2];
        OK(weft__drv_queue_create(ctx, NULL, &q[i]));
        OK(weft__drv_mem_alloc(ctx, N * 4, &m[i]));
        OK(weft__drv_event_create(ctx, 0, &ev[i]));
    }
    OK(weft__drv_copy_h2d(q[0], m[0], 0, init, sizeof init));
    for (uint32_t r = 0; r < R; r++) {
        int i = (int)(r % Q), prev = (int)((r + Q - 1) % Q);
        weft__karg a[3] = {arg_buf(m[i], 0), arg_val(WEFT_PARAM_U32, &r, 4),
                           arg_val(WEFT_PARAM_U64, &n, 8)};
        if (r > 0) {
            OK(weft__drv_queue_wait_event(q[i], ev[prev]));
            if (i % 2 == prev % 2)
                OK(weft__drv_copy_d2d(q[i], m[i], 0, m[prev], 0, N * 4));
            else
                OK(weft__drv_copy_peer(q[i], m[i], 0, m[prev], 0, N * 4));
        }
        OK(weft__drv_launch(q[i], k[i % 2], &grid, a, 3));
        OK(weft__drv_event_record(ev[i], q[i]));
    }
    int last = (R - 1) % Q;
    OK(weft__drv_copy_d2h(q[last], out, m[last], 0, sizeof out));
    OK(weft__drv_queue_sync(q[last]));
    assert_memory_equal(out, want, sizeof want);
    for (int i = 0; i < Q; i++) {
        OK(weft__drv_event_destroy(ev[i]));
        OK(weft__drv_mem_free(m[i]));
        OK(weft__drv_queue_destroy(q[i]));
    }
    for (int d = 0; d < 2; d++)
        OK(weft__drv_module_destroy(mod[d]));
}

/* ---- runners: queues share a bounded set of threads -------------------- */

/* A platform of its own: one device of two threads (two runners). */
typedef struct solo {
    weft__platform **platforms;
    unsigned nplatforms;
    weft__context *ctx;
} solo;

static void solo_open(solo *s)
{
    weft__driver_config cfg = {NULL, 1, 2, 0};

    OK(weft__driver_host.platforms_open(&cfg, &s->platforms, &s->nplatforms));
    OK(weft__drv_context_create(s->platforms[0]->devices[0], &s->ctx));
}

static void solo_close(solo *s)
{
    OK(weft__drv_context_destroy(s->ctx));
    weft__driver_host.platforms_close(s->platforms, s->nplatforms);
}

static unsigned max_threads_seen;

static void count_and_sample(void *user)
{
    unsigned n = wt_threads_now(), seen;

    __atomic_add_fetch((unsigned *)user, 1, __ATOMIC_RELAXED);
    seen = __atomic_load_n(&max_threads_seen, __ATOMIC_RELAXED);
    while (n > seen &&
           !__atomic_compare_exchange_n(&max_threads_seen, &seen, n, 1,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

/*
 * Many queues with work at once run on the platform's runners: the
 * process gains two threads (the runners of a two-thread device) however
 * many queues there are, and every queue's work runs, in order.
 */
static void threads_do_not_grow_with_queues(void **state)
{
    enum { NQ = 300, PER = 4 };
    static weft__queue *q[NQ];
    static unsigned ran[NQ];
    unsigned before;
    solo s;

    (void)state;
    memset(ran, 0, sizeof ran);
    max_threads_seen = 0;
    solo_open(&s);
    before = wt_threads_now();
    for (int i = 0; i < NQ; i++)
        OK(weft__drv_queue_create(s.ctx, NULL, &q[i]));
    for (int k = 0; k < PER; k++)
        for (int i = 0; i < NQ; i++)
            OK(weft__drv_host_fn(q[i], count_and_sample, &ran[i]));
    for (int i = 0; i < NQ; i++)
        OK(weft__drv_queue_sync(q[i]));
    print_message("# %d queues: threads %u before, at most %u while they "
                  "ran\n",
                  NQ, before, max_threads_seen);
    assert_true(max_threads_seen <= before + 2);
    assert_true(wt_threads_now() <= before + 2);
    for (int i = 0; i < NQ; i++) {
        assert_int_equal(ran[i], PER);
        OK(weft__drv_queue_destroy(q[i]));
    }
    solo_close(&s);
}

/* A host function that holds its runner: it says it started, then waits. */
typedef struct blocker {
    gate started, release;
} blocker;

static void blocker_run(void *user)
{
    blocker *b = user;

    gate_open(&b->started);
    gate_pass(&b->release);
}

typedef struct turn {
    unsigned *next;
    unsigned got;
} turn;

static void turn_take(void *user)
{
    turn *t = user;

    t->got = __atomic_fetch_add(t->next, 1, __ATOMIC_RELAXED);
}

/*
 * Queue priorities: with both runners of a two-thread device held, three
 * normal queues and then a high one (priority -1, the device's
 * queue_priority_high) get work; the first runner let go takes the high
 * queue before the normal ones that were waiting longer.
 */
static void high_queues_run_first(void **state)
{
    weft__queue_desc high = {WEFT__QUEUE_COMPUTE, -1, 0};
    weft__queue *qb[2], *qn[3], *qh;
    blocker b[2];
    turn tn[3], th;
    unsigned next = 0;
    solo s;

    (void)state;
    solo_open(&s);
    assert_int_equal(s.ctx->dev->props.queue_priority_high, -1);
    for (int i = 0; i < 2; i++) {
        gate_init(&b[i].started);
        gate_init(&b[i].release);
        OK(weft__drv_queue_create(s.ctx, NULL, &qb[i]));
        OK(weft__drv_host_fn(qb[i], blocker_run, &b[i]));
        gate_pass(&b[i].started);
    }
    for (int i = 0; i < 3; i++) {
        tn[i] = (turn){&next, 99};
        OK(weft__drv_queue_create(s.ctx, NULL, &qn[i]));
        OK(weft__drv_host_fn(qn[i], turn_take, &tn[i]));
    }
    th = (turn){&next, 99};
    OK(weft__drv_queue_create(s.ctx, &high, &qh));
    OK(weft__drv_host_fn(qh, turn_take, &th));
    gate_open(&b[0].release);
    OK(weft__drv_queue_sync(qh));
    for (int i = 0; i < 3; i++)
        OK(weft__drv_queue_sync(qn[i]));
    gate_open(&b[1].release);
    print_message("# high queue ran %u of 4\n", th.got + 1);
    assert_int_equal(th.got, 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(tn[i].got, (unsigned)i + 1);
    for (int i = 0; i < 3; i++)
        OK(weft__drv_queue_destroy(qn[i]));
    OK(weft__drv_queue_destroy(qh));
    for (int i = 0; i < 2; i++) {
        OK(weft__drv_queue_destroy(qb[i]));
        gate_fini(&b[i].started);
        gate_fini(&b[i].release);
    }
    solo_close(&s);
}

/*
 * More queues wait for an event than there are runners, and the record
 * they wait for comes after a gate that only a queue posted after all of
 * them opens: a wait parks its queue instead of holding a runner, so
 * that queue gets one and everything completes.
 */
static void waits_park_instead_of_holding_runners(void **state)
{
    fixture *f = *state;
    enum { NW = 12 }; /* three times the fixture's four runners */
    weft__queue *qr, *qx, *qw[NW];
    weft__event *ev;
    int done[NW];
    gate g;

    gate_init(&g);
    memset(done, 0, sizeof done);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &qr));
    OK(weft__drv_queue_create(f->ctx[1], NULL, &qx));
    OK(weft__drv_event_create(f->ctx[0], 0, &ev));
    OK(weft__drv_host_fn(qr, gate_pass, &g));
    OK(weft__drv_event_record(ev, qr));
    for (int i = 0; i < NW; i++) {
        OK(weft__drv_queue_create(f->ctx[i % 2], NULL, &qw[i]));
        OK(weft__drv_queue_wait_event(qw[i], ev));
        OK(weft__drv_host_fn(qw[i], flag_set, &done[i]));
    }
    OK(weft__drv_host_fn(qx, gate_open_fn, &g));
    for (int i = 0; i < NW; i++) {
        OK(weft__drv_queue_sync(qw[i]));
        assert_int_equal(flag_get(&done[i]), 1);
        OK(weft__drv_queue_destroy(qw[i]));
    }
    OK(weft__drv_event_query(ev));
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_queue_destroy(qr));
    OK(weft__drv_queue_destroy(qx));
    gate_fini(&g);
}

/*
 * The platform's first queue starts its runners: a runner that cannot
 * start fails that queue_create (those started stay), and the next
 * queue_create starts the rest.
 */
static void runner_start_failure_is_clean(void **state)
{
    weft__queue *q = NULL;
    unsigned before;
    int done = 0;
    solo s;

    (void)state;
    solo_open(&s);
    before = wt_threads_now();
    for (long n = 1; n <= 2; n++) {
        weft__fault_arm(n, "host.pthread_create");
        assert_int_equal(weft__drv_queue_create(s.ctx, NULL, &q), WEFT_ENOMEM);
        assert_true(weft__fault_fired());
        weft__fault_disarm();
        assert_null(q);
        assert_non_null(strstr(weft_last_error(), "runner"));
        assert_int_equal(wt_threads_now(), before + (unsigned)n - 1);
    }
    OK(weft__drv_queue_create(s.ctx, NULL, &q));
    assert_int_equal(wt_threads_now(), before + 2);
    OK(weft__drv_host_fn(q, flag_set, &done));
    OK(weft__drv_queue_sync(q));
    assert_int_equal(flag_get(&done), 1);
    OK(weft__drv_queue_destroy(q));
    solo_close(&s);
}

/* ---- failure injection ------------------------------------------------- */

/*
 * One run through every operation; on the first failure it undoes what it
 * made and returns the error. Returns 0 if nothing failed.
 */
static int scenario(weft__device *dev0, weft__device *dev1)
{
    weft__context *ctx = NULL, *ctx1 = NULL;
    weft__queue *q = NULL;
    weft__mem *m = NULL, *m1 = NULL, *pinned = NULL;
    weft__module *mod = NULL;
    weft__kernel *k;
    weft__event *ev = NULL;
    uint32_t host[8], sum_add = 1, zero = 0;
    uint64_t sums[4];
    weft__grid grid = grid1(4, 64);
    int rc;

    if ((rc = weft__drv_context_create(dev0, &ctx)) < 0)
        return rc;
    if ((rc = weft__drv_context_create(dev1, &ctx1)) < 0)
        goto out;
    if ((rc = weft__drv_queue_create(ctx, NULL, &q)) < 0 ||
        (rc = weft__drv_mem_alloc(ctx, sizeof sums, &m)) < 0 ||
        (rc = weft__drv_mem_alloc(ctx1, sizeof sums, &m1)) < 0 ||
        (rc = weft__drv_host_alloc(ctx, 64, &pinned)) < 0)
        goto out;
    {
        weft__module_source src = {WEFT__SRC_HOST_TABLE, kernels,
                                   WEFT__COUNTOF(kernels), NULL, NULL};
        if ((rc = weft__drv_module_create(ctx, &src, &mod)) < 0 ||
            (rc = weft__drv_kernel_get(mod, "group_sum", &k)) < 0)
            goto out;
    }
    weft__karg a[3] = {
        arg_buf(m, 0),
        {WEFT_PARAM_LOCAL, 64 * 8, {.value = NULL}, 0, 0, 0, 0, 0, 0},
        arg_val(WEFT_PARAM_U32, &sum_add, 4)};
    memset(host, 1, sizeof host);
    if ((rc = weft__drv_event_create(ctx, WEFT__EVENT_TIMING, &ev)) < 0 ||
        (rc = weft__drv_fill(q, m, 0, &zero, 4, sizeof sums)) < 0 ||
        (rc = weft__drv_copy_h2d(q, m, 0, host, sizeof sums)) < 0 ||
        (rc = weft__drv_launch(q, k, &grid, a, 3)) < 0 ||
        (rc = weft__drv_copy_peer(q, m1, 0, m, 0, sizeof sums)) < 0 ||
        (rc = weft__drv_copy_peer(q, m, 0, m1, 0, sizeof sums)) < 0 ||
        (rc = weft__drv_event_record(ev, q)) < 0 ||
        (rc = weft__drv_queue_wait_event(q, ev)) < 0 ||
        (rc = weft__drv_host_fn(q, flag_set, pinned->host)) < 0 ||
        (rc = weft__drv_copy_d2h(q, sums, m, 0, sizeof sums)) < 0 ||
        (rc = weft__drv_queue_sync(q)) < 0 ||
        (rc = weft__drv_event_sync(ev)) < 0)
        goto out;
    /* What succeeded must have taken effect. */
    assert_int_equal(sums[1], 64 * (64 + 1) + 64 * 63 / 2);
    assert_int_equal(*(int *)pinned->host, 1);
out:
    if (rc < 0 && getenv("WT_VERBOSE"))
        fprintf(stderr, "scenario: %s: %s\n", weft_err_name(rc),
                weft_last_error());
    /* Nothing in flight may use what goes (the fault has fired by now). */
    if (q && rc < 0)
        OK(weft__drv_queue_sync(q));
    if (ev)
        OK(weft__drv_event_destroy(ev));
    if (mod)
        OK(weft__drv_module_destroy(mod));
    if (pinned)
        OK(weft__drv_mem_free(pinned));
    if (m1)
        OK(weft__drv_mem_free(m1));
    if (m)
        OK(weft__drv_mem_free(m));
    if (q)
        OK(weft__drv_queue_destroy(q));
    if (ctx1)
        OK(weft__drv_context_destroy(ctx1));
    OK(weft__drv_context_destroy(ctx));
    return rc;
}

static void every_failure_is_clean(void **state)
{
    fixture *f = *state;
    long n;
    int host_sites = 0;

    /* Fail each check in turn (driver ops, allocations, thread starts). */
    for (n = 1;; n++) {
        weft__fault_arm(n, NULL);
        int rc = scenario(f->dev[0], f->dev[1]);
        int fired = weft__fault_fired();
        weft__fault_disarm();
        if (!fired) {
            assert_int_equal(rc, 0);
            break;
        }
        assert_true(rc < 0);
        assert_true(weft_last_error()[0] != '\0');
    }
    assert_true(n > 20);
    /* The driver's own sites, each once. */
    static const char *const sites[] = {"host.pthread_create",
                                        "host.posix_memalign"};
    for (size_t s = 0; s < WEFT__COUNTOF(sites); s++) {
        for (n = 1;; n++) {
            weft__fault_arm(n, sites[s]);
            int rc = scenario(f->dev[0], f->dev[1]);
            int fired = weft__fault_fired();
            weft__fault_disarm();
            if (!fired)
                break;
            host_sites++;
            assert_true(rc == WEFT_ENOMEM || rc == WEFT_EDEVMEM);
        }
    }
    /* 3 pool threads x 2 contexts (the platform's queue runners run
     * already); 3 allocations. */
    assert_int_equal(host_sites, 2 * (NTHREADS - 1) + 3);
}

static void bad_sizes_are_refused(void **state)
{
    fixture *f = *state;
    weft__mem *m = NULL;
    weft__driver_config many = {NULL, 100000, 0, 0};
    weft__platform **p = NULL;
    unsigned n = 0;

    assert_int_equal(weft__driver_host.mem_alloc(f->ctx[0], (size_t)-1 / 2, &m),
                     WEFT_EDEVMEM);
    assert_null(m);
    assert_int_equal(weft__driver_host.platforms_open(&many, &p, &n),
                     WEFT_EINVAL);
    assert_null(p);
}

/* ---- native graphs ------------------------------------------------------- */

enum { GN = 300 };

/* advance(x, k, GN) on q over GN items. */
static void launch_advance(weft__queue *q, weft__kernel *k, weft__mem *m,
                           uint32_t add)
{
    uint64_t n = GN;
    weft__karg a[3] = {arg_buf(m, 0), arg_val(WEFT_PARAM_U32, &add, 4),
                       arg_val(WEFT_PARAM_U64, &n, 8)};
    weft__grid grid = grid1((GN + 63) / 64, 64);

    OK(weft__drv_launch(q, k, &grid, a, 3));
}

static void fill_index(uint32_t *host, uint32_t base)
{
    for (uint32_t i = 0; i < GN; i++)
        host[i] = base + i;
}

/* x after r rounds of x = x * 3 + add, from base + i. */
static uint32_t advanced(uint32_t base, uint32_t i, uint32_t add, int r)
{
    uint32_t x = base + i;

    while (r-- > 0)
        x = x * 3u + add;
    return x;
}

/*
 * A capture over two queues (forked by an event, joined back) runs
 * nothing; its graph runs all of it at each launch, and a second launch
 * while the first is held back is refused.
 */
static void graph_captures_two_queues_and_replays(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__module *mod = module_load(f->ctx[0]);
    uint32_t hx[GN], hy[GN];
    weft__queue *q0, *q1;
    weft__event *fork, *join;
    weft__mem *x, *y;
    weft__kernel *k;
    void *g = NULL;
    int updated = -1;
    gate hold;

    OK(weft__drv_kernel_get(mod, "advance", &k));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q1));
    OK(weft__drv_event_create(f->ctx[0], 0, &fork));
    OK(weft__drv_event_create(f->ctx[0], 0, &join));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hx, &x));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hy, &y));
    fill_index(hx, 10);
    fill_index(hy, 5000);
    OK(weft__drv_copy_h2d(q0, x, 0, hx, sizeof hx));
    OK(weft__drv_copy_h2d(q0, y, 0, hy, sizeof hy));
    OK(weft__drv_event_record(fork, q0)); /* a record before the capture */
    OK(weft__drv_queue_sync(q0));

    assert_int_equal(drv->graph_end(q0, NULL, &g, NULL), WEFT_EINVAL);
    OK(drv->graph_begin(q0));
    assert_int_equal(drv->graph_begin(q0), WEFT_EINVAL); /* once */
    OK(weft__drv_event_record(fork, q0));
    /* A capture event: its earlier record is forgotten, and it can be
     * neither waited for by the host nor asked about. */
    assert_int_equal(weft__drv_event_query(fork), WEFT_EINVAL);
    assert_int_equal(weft__drv_event_sync(fork), WEFT_EINVAL);
    OK(weft__drv_queue_wait_event(q1, fork)); /* q1 joins */
    assert_int_equal(weft__drv_queue_sync(q1), WEFT_EINVAL);
    launch_advance(q0, k, x, 1);
    launch_advance(q1, k, y, 2);
    launch_advance(q0, k, x, 7);
    OK(weft__drv_copy_d2h(q1, hy, y, 0, sizeof hy));
    OK(weft__drv_event_record(join, q1));
    OK(weft__drv_queue_wait_event(q0, join));
    OK(weft__drv_copy_d2h(q0, hx, x, 0, sizeof hx));
    OK(drv->graph_end(q0, NULL, &g, &updated));
    assert_non_null(g);
    assert_int_equal(updated, 0);
    /* Nothing ran: the host copies are as they were. */
    for (uint32_t i = 0; i < GN; i++) {
        assert_int_equal(hx[i], 10 + i);
        assert_int_equal(hy[i], 5000 + i);
    }
    /* Once the capture has ended, its events read as never recorded. */
    OK(weft__drv_event_query(fork));
    OK(weft__drv_queue_sync(q1));

    for (int r = 1; r <= 3; r++) {
        OK(drv->graph_launch(g, q0));
        OK(weft__drv_queue_sync(q0));
        for (uint32_t i = 0; i < GN; i++) {
            /* x: +1 then +7 per launch. */
            uint32_t want = 10 + i;
            for (int j = 0; j < r; j++)
                want = (want * 3u + 1) * 3u + 7;
            assert_int_equal(hx[i], want);
            assert_int_equal(hy[i], advanced(5000, i, 2, r));
        }
    }
    /* One launch at a time: the second waits for none and is refused. */
    gate_init(&hold);
    OK(weft__drv_host_fn(q0, gate_pass, &hold));
    OK(drv->graph_launch(g, q0));
    assert_int_equal(drv->graph_launch(g, q0), WEFT_EBUSY);
    gate_open(&hold);
    OK(weft__drv_queue_sync(q0));
    assert_int_equal(hy[0], advanced(5000, 0, 2, 4));
    OK(drv->graph_launch(g, q0)); /* finished: launches again */
    OK(weft__drv_queue_sync(q0));
    assert_int_equal(hy[0], advanced(5000, 0, 2, 5));
    gate_fini(&hold);

    drv->graph_destroy(g);
    OK(weft__drv_event_destroy(fork));
    OK(weft__drv_event_destroy(join));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_mem_free(y));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_module_destroy(mod));
}

/*
 * A graph runs kernels that no edge orders side by side, as their queues
 * would: here one blocks until the other, captured after it on another
 * queue, has run (in capture order alone, the launch would never end). The
 * edges still hold: the copy after the join sees both kernels' work.
 */
static void graph_runs_unordered_kernels_side_by_side(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__module *mod = module_load(f->ctx[0]);
    weft__kernel *wait, *open, *adv;
    weft__queue *q0, *q1;
    weft__event *fork, *join;
    weft__mem *x, *y;
    uint32_t hx[GN], hy[GN];
    void *g = NULL;
    gate gt;
    uint64_t address = (uint64_t)(uintptr_t)&gt;
    weft__karg a = arg_val(WEFT_PARAM_U64, &address, sizeof address);
    weft__grid one = grid1(1, 1);

    OK(weft__drv_kernel_get(mod, "wait_gate", &wait));
    OK(weft__drv_kernel_get(mod, "open_gate", &open));
    OK(weft__drv_kernel_get(mod, "advance", &adv));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q1));
    OK(weft__drv_event_create(f->ctx[0], 0, &fork));
    OK(weft__drv_event_create(f->ctx[0], 0, &join));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hx, &x));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hy, &y));
    fill_index(hx, 10);
    fill_index(hy, 5000);
    OK(weft__drv_copy_h2d(q0, x, 0, hx, sizeof hx));
    OK(weft__drv_copy_h2d(q0, y, 0, hy, sizeof hy));
    OK(weft__drv_queue_sync(q0));

    OK(drv->graph_begin(q0));
    OK(weft__drv_event_record(fork, q0));
    OK(weft__drv_queue_wait_event(q1, fork));
    OK(weft__drv_launch(q0, wait, &one, &a, 1)); /* blocks ... */
    launch_advance(q0, adv, x, 3);               /* ... and holds this */
    OK(weft__drv_launch(q1, open, &one, &a, 1)); /* until this opens */
    launch_advance(q1, adv, y, 5);
    OK(weft__drv_event_record(join, q1));
    OK(weft__drv_queue_wait_event(q0, join));
    OK(weft__drv_copy_d2h(q0, hx, x, 0, sizeof hx));
    OK(weft__drv_copy_d2h(q0, hy, y, 0, sizeof hy));
    OK(drv->graph_end(q0, NULL, &g, NULL));

    for (int r = 1; r <= 20; r++) {
        gate_init(&gt);
        OK(drv->graph_launch(g, q0));
        OK(weft__drv_queue_sync(q0));
        gate_fini(&gt);
        /* The copies after the join saw both queues' work. */
        for (uint32_t i = 0; i < GN; i += 7) {
            assert_int_equal(hx[i], advanced(10, i, 3, r));
            assert_int_equal(hy[i], advanced(5000, i, 5, r));
        }
    }
    drv->graph_destroy(g);
    OK(weft__drv_event_destroy(fork));
    OK(weft__drv_event_destroy(join));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_mem_free(y));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_module_destroy(mod));
}

/*
 * What a pool thread makes ready while it runs on is taken by others: k0's
 * finish makes A (which blocks on a gate) and B (which opens it, then C
 * opens the gate the runner's kernel k1 waits on) ready at once. The
 * thread that finished k0 runs A next and keeps B in its own deque: only a
 * thread that steals B lets the launch end. (The runner holds k1, the last
 * root, so a helper runs k0.)
 */
static void graph_steals_what_a_thread_made_ready(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__module *mod = module_load(f->ctx[0]);
    weft__kernel *wait, *open, *adv;
    weft__queue *q[4];
    weft__event *fork, *after0, *join[3];
    weft__mem *x;
    uint32_t hx[GN];
    void *g = NULL;
    gate g1, g2;
    uint64_t a1 = (uint64_t)(uintptr_t)&g1, a2 = (uint64_t)(uintptr_t)&g2;
    weft__karg arg1 = arg_val(WEFT_PARAM_U64, &a1, sizeof a1);
    weft__karg arg2 = arg_val(WEFT_PARAM_U64, &a2, sizeof a2);
    weft__grid one = grid1(1, 1);

    OK(weft__drv_kernel_get(mod, "wait_gate", &wait));
    OK(weft__drv_kernel_get(mod, "open_gate", &open));
    OK(weft__drv_kernel_get(mod, "advance", &adv));
    for (int i = 0; i < 4; i++)
        OK(weft__drv_queue_create(f->ctx[0], NULL, &q[i]));
    OK(weft__drv_event_create(f->ctx[0], 0, &fork));
    OK(weft__drv_event_create(f->ctx[0], 0, &after0));
    for (int i = 0; i < 3; i++)
        OK(weft__drv_event_create(f->ctx[0], 0, &join[i]));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hx, &x));
    fill_index(hx, 10);
    OK(weft__drv_copy_h2d(q[0], x, 0, hx, sizeof hx));
    OK(weft__drv_queue_sync(q[0]));

    OK(drv->graph_begin(q[0]));
    OK(weft__drv_event_record(fork, q[0]));
    for (int i = 1; i < 4; i++)
        OK(weft__drv_queue_wait_event(q[i], fork));
    launch_advance(q[0], adv, x, 3); /* k0 */
    OK(weft__drv_event_record(after0, q[0]));
    OK(weft__drv_queue_wait_event(q[1], after0));
    OK(weft__drv_queue_wait_event(q[2], after0));
    OK(weft__drv_launch(q[1], wait, &one, &arg1, 1)); /* A */
    OK(weft__drv_launch(q[2], open, &one, &arg1, 1)); /* B */
    OK(weft__drv_launch(q[2], open, &one, &arg2, 1)); /* C */
    OK(weft__drv_launch(q[3], wait, &one, &arg2, 1)); /* k1 */
    for (int i = 0; i < 3; i++) {
        OK(weft__drv_event_record(join[i], q[i + 1]));
        OK(weft__drv_queue_wait_event(q[0], join[i]));
    }
    OK(weft__drv_copy_d2h(q[0], hx, x, 0, sizeof hx));
    OK(drv->graph_end(q[0], NULL, &g, NULL));

    for (int r = 1; r <= 20; r++) {
        gate_init(&g1);
        gate_init(&g2);
        OK(drv->graph_launch(g, q[0]));
        OK(weft__drv_queue_sync(q[0]));
        gate_fini(&g1);
        gate_fini(&g2);
        for (uint32_t i = 0; i < GN; i += 7)
            assert_int_equal(hx[i], advanced(10, i, 3, r));
    }
    drv->graph_destroy(g);
    OK(weft__drv_event_destroy(fork));
    OK(weft__drv_event_destroy(after0));
    for (int i = 0; i < 3; i++)
        OK(weft__drv_event_destroy(join[i]));
    OK(weft__drv_mem_free(x));
    for (int i = 0; i < 4; i++)
        OK(weft__drv_queue_destroy(q[i]));
    OK(weft__drv_module_destroy(mod));
}

/* A capture with an old graph updates it in place: same handle, new
 * arguments. */
static void graph_updates_in_place(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__module *mod = module_load(f->ctx[0]);
    uint32_t hx[GN];
    weft__queue *q;
    weft__mem *x;
    weft__kernel *k;
    void *g = NULL, *g2 = NULL;
    int updated = 0;

    OK(weft__drv_kernel_get(mod, "advance", &k));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hx, &x));
    fill_index(hx, 1);
    OK(weft__drv_copy_h2d(q, x, 0, hx, sizeof hx));
    OK(drv->graph_begin(q));
    launch_advance(q, k, x, 1);
    OK(weft__drv_copy_d2h(q, hx, x, 0, sizeof hx));
    OK(drv->graph_end(q, NULL, &g, NULL));
    OK(drv->graph_launch(g, q));
    OK(weft__drv_queue_sync(q));
    assert_int_equal(hx[GN - 1], advanced(1, GN - 1, 1, 1));

    OK(drv->graph_begin(q));
    launch_advance(q, k, x, 5);
    OK(weft__drv_copy_d2h(q, hx, x, 0, sizeof hx));
    OK(drv->graph_end(q, g, &g2, &updated));
    assert_int_equal(updated, 1);
    assert_ptr_equal(g2, g);
    OK(drv->graph_launch(g2, q));
    OK(weft__drv_queue_sync(q));
    assert_int_equal(hx[GN - 1], advanced(1, GN - 1, 1, 1) * 3u + 5);

    /* A capture ended without a graph (as after a failure) frees old. */
    OK(drv->graph_begin(q));
    launch_advance(q, k, x, 9);
    OK(drv->graph_end(q, g2, NULL, NULL));
    OK(weft__drv_queue_sync(q));
    assert_int_equal(hx[GN - 1], advanced(1, GN - 1, 1, 1) * 3u + 5);

    OK(weft__drv_mem_free(x));
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_module_destroy(mod));
}

/*
 * Graphs of two devices joined by external event nodes: the reading
 * graph, launched second, waits for the record its writer makes at its
 * launch, even while the writer is held back.
 */
static void graph_external_events_join_devices(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__module *mod = module_load(f->ctx[0]);
    uint32_t hx[GN], hy[GN];
    weft__queue *q0, *q1;
    weft__event *e;
    weft__mem *x, *y;
    weft__kernel *k;
    void *gr = NULL, *gw = NULL;
    gate hold;

    OK(weft__drv_kernel_get(mod, "advance", &k));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[1], NULL, &q1));
    OK(weft__drv_event_create(f->ctx[0], 0, &e));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hx, &x));
    OK(weft__drv_mem_alloc(f->ctx[1], sizeof hy, &y));
    fill_index(hx, 3);
    OK(weft__drv_copy_h2d(q0, x, 0, hx, sizeof hx));
    OK(weft__drv_queue_sync(q0));

    /* Outside a capture there is nothing to add them to. */
    assert_int_equal(drv->graph_record_external(e, q0), WEFT_EINVAL);
    assert_int_equal(drv->graph_wait_external(q1, e), WEFT_EINVAL);
    OK(drv->graph_begin(q0));
    /* An event is recorded on a queue of its own device. */
    OK(drv->graph_begin(q1));
    assert_int_equal(drv->graph_record_external(e, q1), WEFT_EINVAL);
    OK(drv->graph_end(q1, NULL, NULL, NULL));
    launch_advance(q0, k, x, 4);
    OK(drv->graph_record_external(e, q0));
    OK(drv->graph_end(q0, NULL, &gr, NULL));
    OK(drv->graph_begin(q1));
    OK(drv->graph_wait_external(q1, e));
    OK(weft__drv_copy_peer(q1, y, 0, x, 0, sizeof hx));
    OK(weft__drv_copy_d2h(q1, hy, y, 0, sizeof hy));
    OK(drv->graph_end(q1, NULL, &gw, NULL));
    /* A graph runs on a queue of its own device only. */
    assert_int_equal(drv->graph_launch(gw, q0), WEFT_EINVAL);

    /* Before any launch of gr, e was never recorded: gw waits for
     * nothing and copies x as it is. */
    OK(drv->graph_launch(gw, q1));
    OK(weft__drv_queue_sync(q1));
    for (uint32_t i = 0; i < GN; i++)
        assert_int_equal(hy[i], 3 + i);
    gate_init(&hold);
    for (int r = 1; r <= 3; r++) {
        pthread_mutex_lock(&hold.lock);
        hold.open = 0;
        pthread_mutex_unlock(&hold.lock);
        OK(weft__drv_host_fn(q0, gate_pass, &hold));
        OK(drv->graph_launch(gr, q0));
        OK(drv->graph_launch(gw, q1));
        gate_open(&hold);
        OK(weft__drv_queue_sync(q1));
        for (uint32_t i = 0; i < GN; i++)
            assert_int_equal(hy[i], advanced(3, i, 4, r));
        OK(weft__drv_queue_sync(q0));
    }
    gate_fini(&hold);
    drv->graph_destroy(gr);
    drv->graph_destroy(gw);
    OK(weft__drv_event_destroy(e));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_mem_free(y));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_module_destroy(mod));
}

/*
 * What a capture refuses: a wait for outside work not yet done, a queue of
 * another device, another capture's event; a capture whose joined queue
 * was destroyed ends without a graph, and one whose own queue was
 * destroyed is gone.
 */
static void graph_capture_refuses_what_crosses_it(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__queue *q0, *q1, *q2, *qo;
    weft__event *outside, *done, *ec, *ec2;
    void *g = NULL;
    gate hold;

    gate_init(&hold);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q1));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q2));
    OK(weft__drv_queue_create(f->ctx[1], NULL, &qo));
    OK(weft__drv_event_create(f->ctx[0], 0, &outside));
    OK(weft__drv_event_create(f->ctx[0], 0, &done));
    OK(weft__drv_event_create(f->ctx[0], 0, &ec));
    OK(weft__drv_event_create(f->ctx[0], 0, &ec2));
    OK(weft__drv_host_fn(q2, gate_pass, &hold));
    OK(weft__drv_event_record(outside, q2)); /* held back */
    OK(weft__drv_event_record(done, q1));
    OK(weft__drv_queue_sync(q1));

    OK(drv->graph_begin(q0));
    assert_int_equal(weft__drv_queue_wait_event(q0, outside), WEFT_EINVAL);
    OK(weft__drv_queue_wait_event(q0, done)); /* complete: passes */
    OK(weft__drv_event_record(ec, q0));
    assert_int_equal(weft__drv_queue_wait_event(qo, ec), WEFT_EINVAL);
    /* A second capture on q1 may not wait for the first's event. */
    OK(drv->graph_begin(q1));
    assert_int_equal(weft__drv_queue_wait_event(q1, ec), WEFT_EINVAL);
    OK(drv->graph_end(q1, NULL, NULL, NULL));
    OK(weft__drv_queue_wait_event(q1, ec)); /* joins */
    OK(weft__drv_event_record(ec2, q1));
    OK(weft__drv_queue_wait_event(q0, ec2));
    OK(drv->graph_end(q0, NULL, &g, NULL)); /* unjoined queues are fine */
    /* A graph is not launched into a capture. */
    OK(drv->graph_begin(q0));
    assert_int_equal(drv->graph_launch(g, q0), WEFT_EINVAL);
    OK(weft__drv_event_record(ec, q0));
    OK(weft__drv_queue_wait_event(q1, ec)); /* joins */
    OK(weft__drv_queue_destroy(q1));
    assert_int_equal(drv->graph_end(q0, NULL, &(void *){NULL}, NULL),
                     WEFT_EINVAL);
    /* The queue a capture began on, destroyed: the capture goes with it,
     * and its events read as never recorded. */
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q1));
    OK(drv->graph_begin(q1));
    OK(weft__drv_event_record(ec, q1));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_event_query(ec));
    /* An event destroyed during a capture leaves it. */
    OK(drv->graph_begin(q0));
    OK(weft__drv_event_record(ec2, q0));
    OK(weft__drv_event_destroy(ec2));
    OK(drv->graph_end(q0, NULL, NULL, NULL));
    /* Recorded outside its capture, an event is no longer of it. */
    OK(drv->graph_begin(q0));
    OK(weft__drv_event_record(ec, q0));
    gate_open(&hold);
    OK(weft__drv_event_record(ec, q2));
    OK(weft__drv_event_sync(ec));
    OK(drv->graph_end(q0, NULL, NULL, NULL));

    OK(weft__drv_queue_sync(q2));
    drv->graph_destroy(g);
    gate_fini(&hold);
    OK(weft__drv_event_destroy(outside));
    OK(weft__drv_event_destroy(done));
    OK(weft__drv_event_destroy(ec));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q2));
    OK(weft__drv_queue_destroy(qo));
}

/*
 * Another thread records and waits on a queue while captures take it in
 * and let it go, over and over. Its operations run at once or become
 * capture events, never graph nodes: a record in a graph would raise its
 * one-shot signal at every launch (a use after free under the sanitizers,
 * a hang or a crash elsewhere). Every launch succeeds and the other
 * thread's last record completes.
 */
typedef struct churn {
    weft__queue *q1, *q2;
    weft__event *ev, *ev2;
    int stop;
    unsigned long rounds;
} churn;

static void *churn_main(void *arg)
{
    churn *c = arg;

    while (!__atomic_load_n(&c->stop, __ATOMIC_ACQUIRE)) {
        /* Errors are expected while q1 is in a capture: a wait there for
         * q2's record, pending, would cross the capture's boundary. */
        (void)weft__drv_event_record(c->ev2, c->q2);
        (void)weft__drv_queue_wait_event(c->q1, c->ev2);
        if (weft__drv_event_record(c->ev, c->q1) < 0)
            fail_msg("record on q1: %s", weft_last_error());
        /* Now and then the queues catch up, so that they stay short where
         * the workers get little time (valgrind runs one thread at once);
         * a capture event cannot be waited for, which is fine here. */
        if (++c->rounds % 32 == 0) {
            (void)weft__drv_event_sync(c->ev);
            if (weft__drv_event_sync(c->ev2) < 0) /* q2 is in no capture */
                fail_msg("sync of q2's record: %s", weft_last_error());
        }
    }
    return NULL;
}

static void graph_capture_beside_another_thread(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__queue *q0;
    weft__event *fork, *join;
    churn c = {0};
    pthread_t t;

    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &c.q1));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &c.q2));
    OK(weft__drv_event_create(f->ctx[0], 0, &fork));
    OK(weft__drv_event_create(f->ctx[0], 0, &join));
    OK(weft__drv_event_create(f->ctx[0], 0, &c.ev));
    OK(weft__drv_event_create(f->ctx[0], 0, &c.ev2));
    OK(pthread_create(&t, NULL, churn_main, &c));
    for (int it = 0; it < 2000; it++) {
        void *g = NULL;

        OK(drv->graph_begin(q0));
        OK(weft__drv_event_record(fork, q0));
        OK(weft__drv_queue_wait_event(c.q1, fork));
        OK(weft__drv_event_record(join, c.q1));
        OK(weft__drv_queue_wait_event(q0, join));
        OK(drv->graph_end(q0, NULL, &g, NULL));
        for (int l = 0; l < 3; l++) {
            OK(drv->graph_launch(g, q0));
            OK(weft__drv_queue_sync(q0));
        }
        drv->graph_destroy(g);
    }
    __atomic_store_n(&c.stop, 1, __ATOMIC_RELEASE);
    OK(pthread_join(t, NULL));
    printf("# the other thread made %lu rounds\n", c.rounds);
    assert_true(c.rounds > 0);
    OK(weft__drv_event_record(c.ev, c.q1));
    OK(weft__drv_event_sync(c.ev));
    OK(weft__drv_queue_sync(c.q1));
    OK(weft__drv_queue_sync(c.q2));
    OK(weft__drv_event_destroy(fork));
    OK(weft__drv_event_destroy(join));
    OK(weft__drv_event_destroy(c.ev));
    OK(weft__drv_event_destroy(c.ev2));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(c.q1));
    OK(weft__drv_queue_destroy(c.q2));
}

/*
 * One writer graph (a kernel, an external record) and one reader graph (an
 * external wait, a copy out), made and launched with any allocation
 * failing: *ran counts the writer's launches that took.
 */
static int graph_scenario(weft__queue *q0, weft__queue *q1, weft__kernel *k,
                          weft__mem *x, weft__event *e, uint32_t *hx, int *ran)
{
    const weft__driver *drv = &weft__driver_host;
    uint64_t n = GN;
    uint32_t add = 1;
    weft__karg a[3] = {arg_buf(x, 0), arg_val(WEFT_PARAM_U32, &add, 4),
                       arg_val(WEFT_PARAM_U64, &n, 8)};
    weft__grid grid = grid1((GN + 63) / 64, 64);
    void *gw = NULL, *gr = NULL;
    int rc, erc;

    if ((rc = drv->graph_begin(q0)) < 0)
        return rc;
    if ((rc = weft__drv_launch(q0, k, &grid, a, 3)) == 0)
        rc = drv->graph_record_external(e, q0);
    erc = drv->graph_end(q0, NULL, rc == 0 ? &gw : NULL, NULL);
    if (rc == 0)
        rc = erc;
    if (rc == 0 && (rc = drv->graph_begin(q1)) == 0) {
        if ((rc = drv->graph_wait_external(q1, e)) == 0)
            rc = weft__drv_copy_d2h(q1, hx, x, 0, GN * sizeof *hx);
        erc = drv->graph_end(q1, NULL, rc == 0 ? &gr : NULL, NULL);
        if (rc == 0)
            rc = erc;
    }
    if (rc == 0 && (rc = drv->graph_launch(gw, q0)) == 0) {
        ++*ran;
        rc = drv->graph_launch(gr, q1);
    }
    OK(weft__drv_queue_sync(q0));
    OK(weft__drv_queue_sync(q1));
    drv->graph_destroy(gw);
    drv->graph_destroy(gr);
    return rc;
}

/*
 * Each allocation of the scenario above fails in turn: the call that met
 * it fails (the capture's end, where it was inside a capture), nothing is
 * left behind (the sanitizer build's leak check), and whatever ran did
 * exactly what it would have: x advanced once per writer launch, and the
 * reader, where it ran, copied x after it.
 */
static void graph_every_failure_is_clean(void **state)
{
    fixture *f = *state;
    weft__module *mod = module_load(f->ctx[0]);
    uint32_t hx[GN], now[GN];
    weft__queue *q0, *q1;
    weft__event *e;
    weft__mem *x;
    weft__kernel *k;
    int ran = 0, fired = 0, n;

    OK(weft__drv_kernel_get(mod, "advance", &k));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q1));
    OK(weft__drv_event_create(f->ctx[0], 0, &e));
    OK(weft__drv_mem_alloc(f->ctx[0], sizeof hx, &x));
    fill_index(now, 0);
    OK(weft__drv_copy_h2d(q0, x, 0, now, sizeof now));
    OK(weft__drv_queue_sync(q0));
    for (n = 1;; n++) {
        int rc, before = ran;

        memset(hx, 0xff, sizeof hx);
        weft__fault_arm(n, "malloc");
        rc = graph_scenario(q0, q1, k, x, e, hx, &ran);
        if (!weft__fault_fired()) {
            weft__fault_disarm();
            OK(rc);
            break;
        }
        weft__fault_disarm();
        fired++;
        assert_true(rc < 0);
        assert_true(weft_last_error()[0] != '\0');
        OK(weft__drv_copy_d2h(q0, now, x, 0, sizeof now));
        OK(weft__drv_queue_sync(q0));
        assert_int_equal(now[7], advanced(0, 7, 1, ran));
        if (ran > before && hx[0] != 0xffffffffu) /* the reader ran too */
            assert_int_equal(hx[7], now[7]);
    }
    printf("# %d allocations failed in turn, the writer ran %d times\n", fired,
           ran);
    assert_true(fired >= 4);
    assert_int_equal(hx[GN - 1], advanced(0, GN - 1, 1, ran));
    OK(weft__drv_event_destroy(e));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_module_destroy(mod));
}

/* ---- native calls -------------------------------------------------------- */

/* A native call: meet another at its gate, note where it ran, maybe fail. */
typedef struct native_step {
    gate *g;
    int meet;             /* 1: meet another call at g (a barrier of 2) */
    int fail;             /* returned, with a detail set where non-zero */
    const uint32_t *seen; /* read into saw */
    uint32_t saw;
    pthread_t thread;
} native_step;

static int native_step_fn(const weft__native_queue *nq, void *user)
{
    native_step *st = user;

    assert_null(nq->queue);
    st->thread = pthread_self();
    if (st->seen)
        st->saw = __atomic_load_n(st->seen, __ATOMIC_ACQUIRE);
    if (st->g && st->meet) {
        pthread_mutex_lock(&st->g->lock);
        st->g->open++;
        pthread_cond_broadcast(&st->g->cond);
        while (st->g->open < 2)
            pthread_cond_wait(&st->g->cond, &st->g->lock);
        pthread_mutex_unlock(&st->g->lock);
    }
    if (st->fail)
        return weft__error(st->fail, "native step failed on purpose");
    return 0;
}

/*
 * native_enqueue: the call runs on a runner, in its queue's order (after
 * a copy before it, before a copy after it), side by side with a call on
 * another queue (the two meet at a barrier); a failing call is the
 * queue's next sync's error, once, and the queue goes on.
 */
static void native_calls_run_on_runners_in_order(void **state)
{
    fixture *f = *state;
    weft__queue *q0, *q1;
    weft__mem *m;
    uint32_t v = 0xfeed, host = 0, out = 0;
    gate gt;
    native_step a = {&gt, 1, 0, &host, 0, 0}, b = {&gt, 1, 0, NULL, 0, 0};
    native_step bad = {NULL, 0, WEFT_EINVAL, NULL, 0, 0};

    gate_init(&gt);
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q1));
    OK(weft__drv_mem_alloc(f->ctx[0], 4, &m));
    OK(weft__drv_copy_h2d(q0, m, 0, &v, 4));
    OK(weft__drv_copy_d2h(q0, &host, m, 0, 4));
    OK(weft__drv_native_enqueue(q0, native_step_fn, &a)); /* meets b */
    OK(weft__drv_copy_d2h(q0, &out, m, 0, 4));
    OK(weft__drv_native_enqueue(q1, native_step_fn, &b));
    OK(weft__drv_queue_sync(q0));
    OK(weft__drv_queue_sync(q1));
    assert_int_equal(a.saw, 0xfeed);
    assert_int_equal(out, 0xfeed);
    assert_false(pthread_equal(a.thread, pthread_self()));
    assert_false(pthread_equal(a.thread, b.thread));
    OK(weft__drv_native_enqueue(q0, native_step_fn, &bad));
    OK(weft__drv_copy_d2h(q0, &out, m, 0, 4));
    assert_int_equal(weft__drv_queue_sync(q0), WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "on purpose"));
    OK(weft__drv_queue_sync(q0));
    OK(weft__drv_mem_free(m));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    gate_fini(&gt);
}

/*
 * Native calls in a graph: two with no edge between them run side by side
 * (they meet at a barrier) at every launch; two that fail at once
 * make one error, the launching queue's next sync's, and the next launch
 * with none failing syncs clean.
 */
static void graph_runs_native_calls_side_by_side(void **state)
{
    fixture *f = *state;
    const weft__driver *drv = &weft__driver_host;
    weft__queue *q0, *q1;
    weft__event *fork, *join;
    void *g = NULL;
    gate gt;
    native_step a = {&gt, 1, 0, NULL, 0, 0}, b = {&gt, 1, 0, NULL, 0, 0};
    native_step c = {NULL, 0, 0, NULL, 0, 0}, d = {NULL, 0, 0, NULL, 0, 0};

    OK(weft__drv_queue_create(f->ctx[0], NULL, &q0));
    OK(weft__drv_queue_create(f->ctx[0], NULL, &q1));
    OK(weft__drv_event_create(f->ctx[0], 0, &fork));
    OK(weft__drv_event_create(f->ctx[0], 0, &join));
    OK(drv->graph_begin(q0));
    OK(weft__drv_event_record(fork, q0));
    OK(weft__drv_queue_wait_event(q1, fork));
    OK(weft__drv_native_enqueue(q0, native_step_fn, &a)); /* meets b */
    OK(weft__drv_native_enqueue(q0, native_step_fn, &c));
    OK(weft__drv_native_enqueue(q1, native_step_fn, &b));
    OK(weft__drv_native_enqueue(q1, native_step_fn, &d));
    OK(weft__drv_event_record(join, q1));
    OK(weft__drv_queue_wait_event(q0, join));
    OK(drv->graph_end(q0, NULL, &g, NULL));
    for (int r = 0; r < 10; r++) {
        int fail = r % 2 ? WEFT_EIO : 0;

        gate_init(&gt);
        c.fail = d.fail = fail;
        OK(drv->graph_launch(g, q0));
        assert_int_equal(weft__drv_queue_sync(q0), fail);
        if (fail)
            assert_non_null(strstr(weft_last_error(), "on purpose"));
        assert_false(pthread_equal(a.thread, b.thread));
        gate_fini(&gt);
    }
    OK(weft__drv_queue_sync(q0));
    drv->graph_destroy(g);
    OK(weft__drv_event_destroy(fork));
    OK(weft__drv_event_destroy(join));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
}

/* ---- a launch's roots job ------------------------------------------------ */

/*
 * A host graph's nodes that wait for nothing and are jobs of one group
 * (kernels of one work-group, native calls): where there are more of
 * them than the device has threads, a launch posts them as one job of
 * the pool's that its threads claim a few at a time, each root run with
 * the chain of successors it makes ready (host_graph.c, roots_job); where
 * there are no more, the runner hands them out. These tests build such
 * graphs on devices of their own thread counts, naming each node's edges
 * with graph_order on one queue, and check every value the nodes write
 * at every launch against a model that runs the same nodes in capture
 * order (a topological order). (A record on a queue whose front holds
 * more than 16 nodes first adds a barrier node after them: test_host_capture
 * checks every edge.)
 */

/* A device of its own with threads threads (its runner included). */
typedef struct threads_device {
    weft__platform **platforms;
    unsigned nplatforms;
    weft__context *ctx;
    weft__module *mod;
    weft__kernel *cell, *meet;
} threads_device;

static void threads_open(threads_device *d, unsigned threads)
{
    weft__driver_config cfg = {NULL, 1, threads, 0};

    memset(d, 0, sizeof *d);
    OK(weft__driver_host.platforms_open(&cfg, &d->platforms, &d->nplatforms));
    assert_int_equal(d->nplatforms, 1);
    assert_int_equal(d->platforms[0]->devices[0]->props.compute_units, threads);
    OK(weft__drv_context_create(d->platforms[0]->devices[0], &d->ctx));
    d->mod = module_load(d->ctx);
    OK(weft__drv_kernel_get(d->mod, "cell", &d->cell));
    OK(weft__drv_kernel_get(d->mod, "meet", &d->meet));
}

static void threads_close(threads_device *d)
{
    OK(weft__drv_module_destroy(d->mod));
    OK(weft__drv_context_destroy(d->ctx));
    weft__driver_host.platforms_close(d->platforms, d->nplatforms);
}

/* A node that writes cells: cell's arguments, or (groups 0) c[dst] = 0. */
typedef struct cell_op {
    uint32_t dst, a, b, groups;
} cell_op;

/*
 * Cells (u32, zero at first) of a device, the nodes of a capture that
 * write them, and what they hold after each launch by the model. A cell
 * is read only by nodes that wait for its last writer, and written by no
 * node after one that reads it.
 */
typedef struct cells {
    weft__queue *q; /* the capture's, and reads the cells back */
    weft__kernel *k;
    weft__mem *m;
    uint32_t n, cap;  /* cells the capture writes; room */
    uint32_t *writer; /* per cell: the last node that writes it */
    cell_op *ops;     /* capture order; room for 2 * cap */
    size_t nops;
    uint32_t *want, *got;
} cells;

static void cells_init(cells *c, const threads_device *d, uint32_t cap)
{
    memset(c, 0, sizeof *c);
    c->k = d->cell;
    c->cap = cap;
    OK(weft__drv_queue_create(d->ctx, NULL, &c->q));
    OK(weft__drv_mem_alloc(d->ctx, (size_t)cap * 4, &c->m));
    assert_non_null(c->writer = calloc(cap, sizeof *c->writer));
    assert_non_null(c->ops = calloc(2 * (size_t)cap, sizeof *c->ops));
    assert_non_null(c->want = calloc(cap, sizeof *c->want));
    assert_non_null(c->got = calloc(cap, sizeof *c->got));
    OK(weft__drv_copy_h2d(c->q, c->m, 0, c->want, (size_t)cap * 4));
    OK(weft__drv_queue_sync(c->q));
}

static void cells_fini(cells *c)
{
    OK(weft__drv_mem_free(c->m));
    OK(weft__drv_queue_destroy(c->q));
    free(c->writer);
    free(c->ops);
    free(c->want);
    free(c->got);
}

/* q's next node (in a capture) waits for after[0..nafter) only; nafter <
 * 0: for q's nodes before it, in queue order. */
static void node_after(weft__queue *q, const uint32_t *after, int nafter)
{
    if (nafter >= 0)
        OK(weft__drv_graph_order(q, after, (unsigned)nafter));
}

static uint32_t node_last(weft__queue *q)
{
    uint32_t node = UINT32_MAX;

    OK(weft__drv_graph_node_last(q, &node));
    return node;
}

/*
 * A cell kernel of groups groups on q (in c's capture) after those nodes
 * (node_after): it adds into dst.. (NO_CELL: new cells) what k_cell says.
 * Returns dst. (after may point into c->writer.)
 */
static uint32_t cell_add(cells *c, weft__queue *q, const uint32_t *after,
                         int nafter, uint32_t dst, uint32_t a, uint32_t b,
                         uint32_t groups)
{
    weft__grid grid = grid1(groups, 1);
    weft__karg args[4];
    uint32_t node;

    if (dst == NO_CELL) {
        assert_true(c->n + groups <= c->cap);
        dst = c->n;
        c->n += groups;
    }
    args[0] = arg_buf(c->m, 0);
    args[1] = arg_val(WEFT_PARAM_U32, &dst, 4);
    args[2] = arg_val(WEFT_PARAM_U32, &a, 4);
    args[3] = arg_val(WEFT_PARAM_U32, &b, 4);
    node_after(q, after, nafter);
    OK(weft__drv_launch(q, c->k, &grid, args, 4));
    node = node_last(q);
    for (uint32_t i = 0; i < groups; i++)
        c->writer[dst + i] = node;
    assert_true(c->nops < 2 * (size_t)c->cap);
    c->ops[c->nops++] = (cell_op){dst, a, b, groups};
    return dst;
}

/* A fill of a new cell with 0 on c's queue, after those nodes. */
static uint32_t cell_zero(cells *c, const uint32_t *after, int nafter)
{
    uint32_t zero = 0, dst = c->n++;

    assert_true(c->n <= c->cap && c->nops < 2 * (size_t)c->cap);
    node_after(c->q, after, nafter);
    OK(weft__drv_fill(c->q, c->m, (size_t)dst * 4, &zero, 4, 4));
    c->writer[dst] = node_last(c->q);
    c->ops[c->nops++] = (cell_op){dst, NO_CELL, NO_CELL, 0};
    return dst;
}

/* After a launch has finished: the model runs it, and every cell holds
 * what it says. */
static void cells_check(cells *c)
{
    for (size_t i = 0; i < c->nops; i++) {
        const cell_op *o = &c->ops[i];

        if (!o->groups)
            c->want[o->dst] = 0;
        for (uint32_t g = 0; g < o->groups; g++)
            c->want[o->dst + g] += (o->a == NO_CELL ? 1 : c->want[o->a]) +
                                   (o->b == NO_CELL ? 0 : c->want[o->b]);
    }
    OK(weft__drv_copy_d2h(c->q, c->got, c->m, 0, (size_t)c->cap * 4));
    OK(weft__drv_queue_sync(c->q));
    for (uint32_t i = 0; i < c->cap; i++)
        if (c->got[i] != c->want[i])
            fail_msg("cell %u of %u holds %u, not %u", i, c->n, c->got[i],
                     c->want[i]);
}

/*
 * nroots kernels of one group that wait for nothing on c's queue (in its
 * capture); after every 7th a chain of two, and every 11th joined with
 * the one before it by a node that reads both.
 */
static void roots_capture(cells *c, uint32_t nroots)
{
    uint32_t prev = NO_CELL;

    for (uint32_t i = 0; i < nroots; i++) {
        uint32_t r = cell_add(c, c->q, NULL, 0, NO_CELL, NO_CELL, NO_CELL, 1);

        if (i % 7 == 3) {
            uint32_t x =
                cell_add(c, c->q, &c->writer[r], 1, NO_CELL, r, NO_CELL, 1);

            cell_add(c, c->q, &c->writer[x], 1, NO_CELL, x, NO_CELL, 1);
        }
        if (i % 11 == 5) {
            uint32_t after[2] = {c->writer[r], c->writer[prev]};

            cell_add(c, c->q, after, 2, NO_CELL, r, prev, 1);
        }
        prev = r;
    }
}

/* A graph of roots_capture's, old (if any) updated in place. */
static void *roots_graph(cells *c, uint32_t nroots, void *old)
{
    void *g = NULL;
    int updated = -1;

    c->n = 0;
    c->nops = 0;
    OK(weft__driver_host.graph_begin(c->q));
    roots_capture(c, nroots);
    OK(weft__driver_host.graph_end(c->q, old, &g, &updated));
    assert_non_null(g);
    assert_int_equal(updated, old != NULL);
    return g;
}

/*
 * Every root runs once per launch, and every chain and join after one
 * sees its writes: on 1, 2 and 5 threads, with roots past the job's
 * largest chunk (and not a multiple of it), just past the threads, at or
 * below them (the runner hands them out) and a few more, one graph
 * updated in place from each to the next and launched three times.
 */
static void graph_roots_job_runs_every_root_once(void **state)
{
    static const struct {
        unsigned threads;
        uint32_t nroots[4]; /* the largest first */
    } runs[] = {
        {1, {301, 2, 1, 40}},
        {2, {3001, 3, 2, 700}},
        {5, {1001, 6, 4, 5}},
    };

    (void)state;
    for (size_t r = 0; r < WEFT__COUNTOF(runs); r++) {
        threads_device d;
        cells c;
        void *g = NULL;

        threads_open(&d, runs[r].threads);
        cells_init(&c, &d, 2 * runs[r].nroots[0]);
        for (int s = 0; s < 4; s++) {
            uint32_t n = runs[r].nroots[s];

            g = roots_graph(&c, n, g);
            for (int l = 0; l < 3; l++) {
                uint64_t posted = weft__host_graph_roots_posted(g);

                OK(weft__driver_host.graph_launch(g, c.q));
                OK(weft__drv_queue_sync(c.q));
                cells_check(&c);
                /* The roots job holds every root (each waits for
                 * nothing: the capture's front, however large, adds no
                 * edge to a node graph_order gave its own) where they
                 * outnumber the threads, and none where they don't. */
                posted = weft__host_graph_roots_posted(g) - posted;
                if (n > runs[r].threads)
                    assert_int_equal(posted, n);
                else
                    assert_int_equal(posted, 0);
            }
        }
        weft__driver_host.graph_destroy(g);
        cells_fini(&c);
        threads_close(&d);
    }
}

static void host_count(void *user)
{
    ++*(unsigned *)user;
}

/*
 * One launch that starts nodes both ways: many roots of one group (the
 * roots job) beside roots that the runner starts (a fill, a host
 * function, a kernel of five groups, and a second queue's first kernel,
 * joined back by events), with successors of every kind made ready by
 * either: a kernel after the fill, a copy to the host after a root, a
 * kernel of three groups after two roots, a kernel after the host
 * function, one after a root and the second queue's chain.
 */
static void graph_roots_job_beside_the_runners_nodes(void **state)
{
    static const unsigned threads[] = {2, 3};

    (void)state;
    for (size_t t = 0; t < WEFT__COUNTOF(threads); t++) {
        threads_device d;
        cells c;
        weft__queue *q1;
        weft__event *fork, *join;
        unsigned hosted = 0;
        uint32_t seen0 = UINT32_MAX, f, x, y, h;
        void *g = NULL;

        threads_open(&d, threads[t]);
        cells_init(&c, &d, 1024);
        OK(weft__drv_queue_create(d.ctx, NULL, &q1));
        OK(weft__drv_event_create(d.ctx, 0, &fork));
        OK(weft__drv_event_create(d.ctx, 0, &join));

        OK(weft__driver_host.graph_begin(c.q));
        OK(weft__drv_event_record(fork, c.q)); /* before any node */
        OK(weft__drv_queue_wait_event(q1, fork));
        roots_capture(&c, 400);
        f = cell_zero(&c, NULL, 0);
        cell_add(&c, c.q, &c.writer[f], 1, f, NO_CELL, NO_CELL, 1);
        cell_add(&c, c.q, &c.writer[f], 1, NO_CELL, f, NO_CELL, 1);
        cell_add(&c, c.q, NULL, 0, NO_CELL, NO_CELL, NO_CELL, 5);
        node_after(c.q, NULL, 0);
        OK(weft__drv_host_fn(c.q, host_count, &hosted));
        h = node_last(c.q);
        cell_add(&c, c.q, &h, 1, NO_CELL, NO_CELL, NO_CELL, 1);
        node_after(c.q, &c.writer[0], 1); /* cell 0: the first root's */
        OK(weft__drv_copy_d2h(c.q, &seen0, c.m, 0, 4));
        {
            uint32_t after[2] = {c.writer[10], c.writer[11]};

            cell_add(&c, c.q, after, 2, NO_CELL, 10, 11, 3);
        }
        x = cell_add(&c, q1, NULL, -1, NO_CELL, NO_CELL, NO_CELL, 1);
        y = cell_add(&c, q1, NULL, -1, NO_CELL, x, NO_CELL, 1);
        OK(weft__drv_event_record(join, q1));
        OK(weft__drv_queue_wait_event(c.q, join));
        cell_add(&c, c.q, &c.writer[20], 1, NO_CELL, 20, y, 1);
        OK(weft__driver_host.graph_end(c.q, NULL, &g, NULL));

        for (unsigned l = 1; l <= 4; l++) {
            OK(weft__driver_host.graph_launch(g, c.q));
            OK(weft__drv_queue_sync(c.q));
            cells_check(&c);
            assert_int_equal(hosted, l);
            assert_int_equal(seen0, c.want[0]);
        }
        weft__driver_host.graph_destroy(g);
        OK(weft__drv_event_destroy(fork));
        OK(weft__drv_event_destroy(join));
        OK(weft__drv_queue_destroy(q1));
        cells_fini(&c);
        threads_close(&d);
    }
}

/*
 * The roots share the device's threads: with as many meeting kernels
 * among them as threads, each of which waits for all, a launch ends only
 * if every thread runs one at once; so both where the runner hands the
 * roots out (no more than threads) and in the roots job (one or a few
 * more: a chunk of one, so that no thread claims two meetings at once).
 */
static void graph_roots_job_runs_on_every_thread(void **state)
{
    static const unsigned threads[] = {2, 3};
    static const unsigned extra[] = {0, 1, 7};

    (void)state;
    for (size_t t = 0; t < WEFT__COUNTOF(threads); t++) {
        unsigned n = threads[t];
        meeting m = {PTHREAD_MUTEX_INITIALIZER, .want = n};
        pthread_condattr_t ca;
        uint64_t address = (uint64_t)(uintptr_t)&m;
        weft__karg arg = arg_val(WEFT_PARAM_U64, &address, sizeof address);
        weft__grid one = grid1(1, 1);
        threads_device d;
        cells c;
        void *g = NULL;

        /* The deadline on the monotonic clock: a step of the wall clock
         * does not make a meeting late. */
        OK(pthread_condattr_init(&ca));
        OK(pthread_condattr_setclock(&ca, CLOCK_MONOTONIC));
        OK(pthread_cond_init(&m.cond, &ca));
        OK(pthread_condattr_destroy(&ca));
        threads_open(&d, n);
        cells_init(&c, &d, 16);
        for (size_t e = 0; e < WEFT__COUNTOF(extra); e++) {
            c.n = 0;
            c.nops = 0;
            OK(weft__driver_host.graph_begin(c.q));
            for (unsigned i = 0; i < n; i++) {
                node_after(c.q, NULL, 0);
                OK(weft__drv_launch(c.q, d.meet, &one, &arg, 1));
            }
            for (unsigned i = 0; i < extra[e]; i++)
                cell_add(&c, c.q, NULL, 0, NO_CELL, NO_CELL, NO_CELL, 1);
            OK(weft__driver_host.graph_end(c.q, g, &g, NULL));
            for (int l = 0; l < 3; l++) {
                pthread_mutex_lock(&m.lock);
                m.arrived = 0;
                pthread_mutex_unlock(&m.lock);
                OK(weft__driver_host.graph_launch(g, c.q));
                OK(weft__drv_queue_sync(c.q));
                pthread_mutex_lock(&m.lock);
                assert_int_equal(m.arrived, n);
                assert_int_equal(m.late, 0);
                pthread_mutex_unlock(&m.lock);
                cells_check(&c);
            }
        }
        weft__driver_host.graph_destroy(g);
        cells_fini(&c);
        threads_close(&d);
        pthread_cond_destroy(&m.cond);
        pthread_mutex_destroy(&m.lock);
    }
}

/* A native call that counts its runs, notes another's count, may fail. */
typedef struct native_cell {
    unsigned count;
    int fail;             /* returned, with a detail set, where non-zero */
    const unsigned *seen; /* another's count, read into saw */
    unsigned saw;
} native_cell;

static int native_cell_fn(const weft__native_queue *nq, void *user)
{
    native_cell *nc = user;

    (void)nq;
    if (nc->seen)
        nc->saw = *nc->seen;
    nc->count++;
    if (nc->fail)
        return weft__error(nc->fail, "native root failed on purpose");
    return 0;
}

/*
 * Native calls are jobs of one group too: 200 of them as roots, every
 * fifth with a native successor that reads its count, kernels of one
 * group beside them. Where a root fails (one; two at once; one and its
 * successor), the launching queue's next sync fails once with its
 * detail, and every other node ran all the same; the next launch with
 * none failing syncs clean. The graph is launched on a queue other than
 * the one it was captured on, which never sees the failure.
 */
static void graph_roots_job_failure_is_the_launching_queues(void **state)
{
    enum { NROOTS = 200 };
    native_cell *nc = calloc(2 * NROOTS, sizeof *nc);
    size_t root[NROOTS], nn = 0;
    threads_device d;
    cells c;
    weft__queue *ql;
    void *g = NULL;

    (void)state;
    assert_non_null(nc);
    threads_open(&d, 2);
    cells_init(&c, &d, 64);
    OK(weft__drv_queue_create(d.ctx, NULL, &ql));
    OK(weft__driver_host.graph_begin(c.q));
    for (size_t i = 0; i < NROOTS; i++) {
        root[i] = nn++;
        node_after(c.q, NULL, 0);
        OK(weft__drv_native_enqueue(c.q, native_cell_fn, &nc[root[i]]));
        if (i % 5 == 2) {
            uint32_t node = node_last(c.q);

            nc[nn].seen = &nc[root[i]].count;
            node_after(c.q, &node, 1);
            OK(weft__drv_native_enqueue(c.q, native_cell_fn, &nc[nn++]));
        }
        if (i % 4 == 0)
            cell_add(&c, c.q, NULL, 0, NO_CELL, NO_CELL, NO_CELL, 1);
    }
    OK(weft__driver_host.graph_end(c.q, NULL, &g, NULL));

    for (unsigned l = 1; l <= 6; l++) {
        /* Odd launches fail. (root[7] has a successor: 7 % 5 == 2.) */
        static const int code[] = {WEFT_EIO, WEFT_EINVAL, WEFT_ENOMEM};
        int fail = l % 2 ? code[l / 2] : 0;

        if (l == 1)
            nc[root[50]].fail = fail;
        if (l == 3)
            nc[root[0]].fail = nc[root[NROOTS - 1]].fail = fail;
        if (l == 5)
            nc[root[7]].fail = nc[root[7] + 1].fail = fail;
        OK(weft__driver_host.graph_launch(g, ql));
        assert_int_equal(weft__drv_queue_sync(ql), fail);
        if (fail)
            assert_non_null(strstr(weft_last_error(), "on purpose"));
        OK(weft__drv_queue_sync(ql)); /* reported once */
        OK(weft__drv_queue_sync(c.q));
        for (size_t i = 0; i < nn; i++) {
            assert_int_equal(nc[i].count, l);
            if (nc[i].seen)
                assert_int_equal(nc[i].saw, l);
            nc[i].fail = 0;
        }
        cells_check(&c);
    }
    weft__driver_host.graph_destroy(g);
    OK(weft__drv_queue_destroy(ql));
    cells_fini(&c);
    threads_close(&d);
    free(nc);
}

/*
 * Two graphs of many roots launched at once on two queues of one device
 * (each relaunched as soon as its last launch is checked): a runner that
 * waits may work on the other graph's roots job, and each launch still
 * ends only once its own nodes have run.
 */
static void graph_roots_jobs_of_two_graphs_at_once(void **state)
{
    threads_device d;
    cells a, b;
    void *ga, *gb;

    (void)state;
    threads_open(&d, 2);
    cells_init(&a, &d, 2400);
    cells_init(&b, &d, 3000);
    ga = roots_graph(&a, 1200, NULL);
    gb = roots_graph(&b, 1500, NULL);
    OK(weft__driver_host.graph_launch(ga, a.q));
    OK(weft__driver_host.graph_launch(gb, b.q));
    for (int l = 0; l < 8; l++) {
        OK(weft__drv_queue_sync(a.q));
        cells_check(&a);
        OK(weft__driver_host.graph_launch(ga, a.q));
        OK(weft__drv_queue_sync(b.q));
        cells_check(&b);
        OK(weft__driver_host.graph_launch(gb, b.q));
    }
    OK(weft__drv_queue_sync(a.q));
    cells_check(&a);
    OK(weft__drv_queue_sync(b.q));
    cells_check(&b);
    weft__driver_host.graph_destroy(ga);
    weft__driver_host.graph_destroy(gb);
    cells_fini(&a);
    cells_fini(&b);
    threads_close(&d);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(discovery_reports_devices),
        cmocka_unit_test(grid_3d_runs_every_item_once),
        cmocka_unit_test(local_scratch_is_per_thread_and_values_are_copied),
        cmocka_unit_test(bytes_parameter_is_passed_by_value),
        cmocka_unit_test(launch_uses_every_thread_of_the_device),
        cmocka_unit_test(kernels_of_two_queues_overlap),
        cmocka_unit_test(module_errors),
        cmocka_unit_test(two_devices_have_distinct_memories),
        cmocka_unit_test(fill_patterns_and_host_memory),
        cmocka_unit_test(wait_on_other_device_sees_its_writes),
        cmocka_unit_test(host_functions_run_in_order_after_prior_work),
        cmocka_unit_test(many_threads_enqueue_on_one_queue),
        cmocka_unit_test(event_elapsed_is_ordered),
        cmocka_unit_test(destroy_event_while_a_wait_on_it_is_pending),
        cmocka_unit_test(events_outlive_their_queue),
        cmocka_unit_test(stress_cross_waits_are_deterministic),
        cmocka_unit_test(threads_do_not_grow_with_queues),
        cmocka_unit_test(waits_park_instead_of_holding_runners),
        cmocka_unit_test(high_queues_run_first),
        cmocka_unit_test(runner_start_failure_is_clean),
        cmocka_unit_test(every_failure_is_clean),
        cmocka_unit_test(bad_sizes_are_refused),
        cmocka_unit_test(graph_captures_two_queues_and_replays),
        cmocka_unit_test(graph_runs_unordered_kernels_side_by_side),
        cmocka_unit_test(graph_steals_what_a_thread_made_ready),
        cmocka_unit_test(graph_updates_in_place),
        cmocka_unit_test(graph_external_events_join_devices),
        cmocka_unit_test(graph_capture_refuses_what_crosses_it),
        cmocka_unit_test(graph_capture_beside_another_thread),
        cmocka_unit_test(graph_every_failure_is_clean),
        cmocka_unit_test(native_calls_run_on_runners_in_order),
        cmocka_unit_test(graph_runs_native_calls_side_by_side),
        cmocka_unit_test(graph_roots_job_runs_every_root_once),
        cmocka_unit_test(graph_roots_job_beside_the_runners_nodes),
        cmocka_unit_test(graph_roots_job_runs_on_every_thread),
        cmocka_unit_test(graph_roots_job_failure_is_the_launching_queues),
        cmocka_unit_test(graph_roots_jobs_of_two_graphs_at_once),
    };
    return wt_run_group_name(argc, argv, "host driver", tests, setup, teardown);
}
