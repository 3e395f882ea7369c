/*
 * The sim driver: configuration, the virtual time model and the record.
 * Each test opens its own simulated machine from a configuration string
 * (no runtime) and asserts on the record of what the machine did. Every
 * operation goes through the checked weft__drv_* entry points.
 *
 * Nothing here sleeps: where work must be held back, a host function on a
 * queue blocks on a gate that the test opens.
 */
#include "wt_test.h"

#include "drivers/driver.h"
#include "drivers/sim/sim.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define OK(call) assert_int_equal((call), 0)
#define MAXDEV   64

/* ---- a machine ----------------------------------------------------------- */

typedef struct machine {
    weft__platform **platforms;
    unsigned nplatforms;
    unsigned ndev;
    weft__device *dev[MAXDEV];
    weft__context *ctx[MAXDEV];
} machine;

static int machine_try_open(machine *m, const char *config, unsigned real)
{
    weft__driver_config cfg = {config, 0, 0, real};
    int rc;

    memset(m, 0, sizeof *m);
    rc = weft__driver_sim.platforms_open(&cfg, &m->platforms, &m->nplatforms);
    if (rc < 0)
        return rc;
    assert_int_equal(m->nplatforms, 1);
    m->ndev = m->platforms[0]->ndevices;
    assert_true(m->ndev <= MAXDEV);
    for (unsigned i = 0; i < m->ndev; i++) {
        m->dev[i] = m->platforms[0]->devices[i];
        rc = weft__drv_context_create(m->dev[i], &m->ctx[i]);
        if (rc < 0) {
            while (i--)
                OK(weft__drv_context_destroy(m->ctx[i]));
            weft__driver_sim.platforms_close(m->platforms, m->nplatforms);
            return rc;
        }
    }
    return 0;
}

static void machine_open(machine *m, const char *config, unsigned real)
{
    int rc = machine_try_open(m, config, real);

    if (rc < 0)
        fail_msg("open '%s': %s", config ? config : "(default)",
                 weft_last_error());
}

static void machine_close(machine *m)
{
    for (unsigned i = 0; i < m->ndev; i++)
        OK(weft__drv_context_destroy(m->ctx[i])); /* EBUSY: a leak */
    weft__driver_sim.platforms_close(m->platforms, m->nplatforms);
}

static weft__queue *queue(machine *m, unsigned dev, weft__queue_role role)
{
    weft__queue_desc desc = {role, 0, 1};
    weft__queue *q;

    OK(weft__drv_queue_create(m->ctx[dev], &desc, &q));
    return q;
}

static weft__mem *devmem(machine *m, unsigned dev, size_t size)
{
    weft__mem *mem;

    OK(weft__drv_mem_alloc(m->ctx[dev], size, &mem));
    return mem;
}

static const weft__sim_op *record(machine *m, size_t *n)
{
    return weft__sim_record(m->dev[0], n);
}

/* The i-th recorded operation, which must exist and be of kind. */
static const weft__sim_op *op_at(machine *m, size_t i, weft__sim_op_kind kind)
{
    size_t n;
    const weft__sim_op *r = record(m, &n);

    assert_true(i < n);
    assert_string_equal(weft__sim_op_name(r[i].kind), weft__sim_op_name(kind));
    return &r[i];
}

static int overlap(const weft__sim_op *a, const weft__sim_op *b)
{
    return a->start_ns < b->end_ns && b->start_ns < a->end_ns;
}

/* ---- kernels ------------------------------------------------------------- */

/* scale(buffer x, u32 a, u64 n): x[i] *= a for u32 elements. */
static void k_scale(const weft_host_group *g, void *const *args)
{
    uint32_t *x = args[0];
    uint32_t a = *(const uint32_t *)args[1];
    uint64_t n = *(const uint64_t *)args[2];
    uint64_t base = (uint64_t)g->group[0] * g->group_size[0];

    for (uint32_t j = 0; j < g->group_size[0]; j++)
        if (base + j < n)
            x[base + j] *= a;
}

/*
 * claim(buffer x, u32 a, u64 n): says it reads and writes x (its argument's
 * access) and touches nothing, for the unordered pair of test_check_hazards:
 * the sim runs real effects on its threads, and a kernel that truly wrote x
 * beside a copy that reads it would be a true data race.
 */
static void k_claim(const weft_host_group *g, void *const *args)
{
    (void)g;
    (void)args;
}

/* Cost: 7 ns per item plus the u32 argument (to see that args arrive). */
static uint64_t scale_cost(uint64_t items, void *const *args, void *user)
{
    (void)user;
    return items * 7 + *(const uint32_t *)args[1];
}

static const weft_param_type scale_params[] = {WEFT_PARAM_BUFFER,
                                               WEFT_PARAM_U32, WEFT_PARAM_U64};

static const weft_host_kernel kernels[] = {
    {"scale", k_scale, 3, scale_params, NULL, NULL, NULL},
    {"costly", k_scale, 3, scale_params, NULL, scale_cost, NULL},
    {"claim", k_claim, 3, scale_params, NULL, NULL, NULL},
};

static weft__kernel *kernel(machine *m, unsigned dev, const char *name,
                            weft__module **mod)
{
    weft__module_source src = {WEFT__SRC_HOST_TABLE, kernels,
                               WEFT__COUNTOF(kernels), NULL, "test"};
    weft__kernel *k;

    OK(weft__drv_module_create(m->ctx[dev], &src, mod));
    OK(weft__drv_kernel_get(*mod, name, &k));
    return k;
}

/* Launch k over n items (groups of 64) on q with x, a, n. */
static void launch(weft__queue *q, weft__kernel *k, weft__mem *x, uint32_t a,
                   uint64_t n)
{
    weft__grid grid = {{(uint32_t)((n + 63) / 64), 1, 1}, {64, 1, 1}, 0};
    weft__karg args[3];

    memset(args, 0, sizeof args); /* access 0: read and written */
    args[0].type = WEFT_PARAM_BUFFER;
    args[0].size = 0;
    args[0].u.buf.mem = x;
    args[0].u.buf.offset = 0;
    args[1].type = WEFT_PARAM_U32;
    args[1].size = 4;
    args[1].u.value = &a;
    args[2].type = WEFT_PARAM_U64;
    args[2].size = 8;
    args[2].u.value = &n;
    OK(weft__drv_launch(q, k, &grid, args, 3));
}

/* ---- a gate that holds the worker back ---------------------------------- */

typedef struct gate {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    int open;
    int entered;
} gate;

static void gate_init(gate *g)
{
    OK(pthread_mutex_init(&g->lock, NULL));
    OK(pthread_cond_init(&g->cond, NULL));
    g->open = 0;
    g->entered = 0;
}

static void gate_wait(void *user)
{
    gate *g = user;

    pthread_mutex_lock(&g->lock);
    g->entered = 1;
    pthread_cond_broadcast(&g->cond);
    while (!g->open)
        pthread_cond_wait(&g->cond, &g->lock);
    pthread_mutex_unlock(&g->lock);
}

static void gate_open(gate *g)
{
    pthread_mutex_lock(&g->lock);
    g->open = 1;
    pthread_cond_broadcast(&g->cond);
    pthread_mutex_unlock(&g->lock);
}

static void gate_destroy(gate *g)
{
    pthread_cond_destroy(&g->cond);
    pthread_mutex_destroy(&g->lock);
}

/* ---- configuration ------------------------------------------------------- */

static void test_config_defaults(void **state)
{
    machine m;
    const weft_device_info *p;
    int can;

    (void)state;
    machine_open(&m, NULL, 0);
    assert_int_equal(m.ndev, 2);
    assert_string_equal(m.platforms[0]->name, "weft sim");
    p = &m.dev[1]->props;
    assert_string_equal(p->name, "sim H200 #1");
    assert_string_equal(p->driver, "sim");
    assert_int_equal(p->type, WEFT_DEVICE_SIMULATED);
    assert_int_equal(p->driver_index, 1);
    assert_true(p->global_mem == (uint64_t)141 << 30);
    assert_int_equal(p->copy_engines, 3);
    assert_int_equal(p->compute_units, 132);
    assert_int_equal(p->timing_events, 1);
    OK(weft__driver_sim.can_access_peer(m.dev[0], m.dev[1], &can));
    assert_int_equal(can, 1);
    machine_close(&m);
}

static void test_config_keys(void **state)
{
    machine m;
    const weft_device_info *p;
    int can;

    (void)state;
    machine_open(&m,
                 " devices = 8, name=B200,mem=80G,copy_engines=2,"
                 "compute_units=148,peer_group=4,h2d_bw=25G,",
                 0);
    assert_int_equal(m.ndev, 8);
    p = &m.dev[7]->props;
    assert_string_equal(p->name, "sim B200 #7");
    assert_true(p->global_mem == (uint64_t)80 << 30);
    assert_true(p->max_alloc == (uint64_t)80 << 30);
    assert_int_equal(p->copy_engines, 2);
    assert_int_equal(p->compute_units, 148);
    /* islands of 4 */
    OK(weft__driver_sim.can_access_peer(m.dev[0], m.dev[3], &can));
    assert_int_equal(can, 1);
    OK(weft__driver_sim.can_access_peer(m.dev[3], m.dev[4], &can));
    assert_int_equal(can, 0);
    machine_close(&m);

    machine_open(&m, "peer=0", 0);
    OK(weft__driver_sim.can_access_peer(m.dev[0], m.dev[1], &can));
    assert_int_equal(can, 0);
    machine_close(&m);
}

static void test_config_errors(void **state)
{
    static const struct {
        const char *config;
        const char *mention;
    } bad[] = {
        {"devices=0", "devices=0"},
        {"devices=abc", "devices=abc"},
        {"devices=-1", "devices=-1"},
        {"devices=1025", "devices"},
        {"colour=blue", "colour"},
        {"mem=12Q", "mem=12Q"},
        {"mem=0", "mem=0"},
        {"h2d_bw=0", "h2d_bw=0"},
        {"d2h_bw=-5G", "d2h_bw"},
        {"peer_bw=fast", "peer_bw=fast"},
        {"copy_engines=17", "copy_engines"},
        {"peer=2", "peer=2"},
        {"real_data=yes", "real_data"},
        {"graphs=2", "graphs=2"},
        {"item_ns=-1", "item_ns"},
        {"launch_lat=1e20", "launch_lat"},
        {"name=", "name"},
        {"devices=2,noequals", "noequals"},
    };
    machine m;

    (void)state;
    for (size_t i = 0; i < WEFT__COUNTOF(bad); i++) {
        int rc = machine_try_open(&m, bad[i].config, 0);

        if (rc != WEFT_EINVAL)
            fail_msg("'%s' gave %d", bad[i].config, rc);
        if (!strstr(weft_last_error(), bad[i].mention))
            fail_msg("'%s': detail '%s' does not name '%s'", bad[i].config,
                     weft_last_error(), bad[i].mention);
    }
}

/* ---- the time model ------------------------------------------------------ */

/* Two H2D copies on two queues of one device share the only copy engine. */
static void test_one_engine_serialises(void **state)
{
    machine m;
    weft__queue *q0, *q1;
    weft__mem *a;
    static char host[1 << 16];
    const weft__sim_op *c0, *c1;

    (void)state;
    machine_open(&m, "copy_engines=1,h2d_bw=1G,h2d_lat=100", 0);
    q0 = queue(&m, 0, WEFT__QUEUE_H2D);
    q1 = queue(&m, 0, WEFT__QUEUE_H2D);
    a = devmem(&m, 0, sizeof host);
    OK(weft__drv_copy_h2d(q0, a, 0, host, 1000));
    OK(weft__drv_copy_h2d(q1, a, 1000, host, 1000));
    c0 = op_at(&m, 0, WEFT__SIM_H2D);
    c1 = op_at(&m, 1, WEFT__SIM_H2D);
    assert_int_equal(c0->engine, 1);
    assert_int_equal(c1->engine, 1);
    assert_int_equal(c0->start_ns, 0);
    assert_int_equal(c0->end_ns, 100 + 1000);
    assert_int_equal(c1->ready_ns, 0); /* its queue let it go at once */
    assert_int_equal(c1->start_ns, c0->end_ns);
    assert_int_equal(c1->end_ns, 2 * 1100);
    assert_true(c0->queue != c1->queue);
    /* a D2H copy, too, waits for the engine when there is only one */
    OK(weft__drv_copy_d2h(q1, host, a, 0, 1000));
    assert_int_equal(op_at(&m, 2, WEFT__SIM_D2H)->engine, 1);
    assert_int_equal(op_at(&m, 2, WEFT__SIM_D2H)->start_ns, 2 * 1100);
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_mem_free(a));
    machine_close(&m);
}

/* With 2+ engines H2D and D2H run at once; with 0 they share compute. */
static void test_h2d_d2h_overlap(void **state)
{
    static const char *configs[] = {"copy_engines=2", "copy_engines=3",
                                    "copy_engines=0"};
    static char host[4096];

    (void)state;
    for (int c = 0; c < 3; c++) {
        machine m;
        weft__queue *qh, *qd;
        weft__mem *a;
        const weft__sim_op *h, *d;

        machine_open(&m, configs[c], 0);
        qh = queue(&m, 0, WEFT__QUEUE_H2D);
        qd = queue(&m, 0, WEFT__QUEUE_D2H);
        a = devmem(&m, 0, 8192);
        OK(weft__drv_copy_h2d(qh, a, 0, host, sizeof host));
        OK(weft__drv_copy_d2h(qd, host, a, 4096, sizeof host));
        h = op_at(&m, 0, WEFT__SIM_H2D);
        d = op_at(&m, 1, WEFT__SIM_D2H);
        if (c < 2) {
            assert_int_equal(h->engine, 1);
            assert_int_equal(d->engine, 2);
            assert_int_equal(d->start_ns, 0);
            assert_true(overlap(h, d));
        } else {
            assert_int_equal(h->engine, WEFT__SIM_ENGINE_COMPUTE);
            assert_int_equal(d->engine, WEFT__SIM_ENGINE_COMPUTE);
            assert_int_equal(d->start_ns, h->end_ns);
        }
        assert_int_equal(h->src_device, WEFT__SIM_HOST);
        assert_int_equal(h->dst_device, 0);
        assert_int_equal(d->src_device, 0);
        assert_int_equal(d->dst_device, WEFT__SIM_HOST);
        OK(weft__drv_queue_destroy(qh));
        OK(weft__drv_queue_destroy(qd));
        OK(weft__drv_mem_free(a));
        machine_close(&m);
    }
}

/* A kernel and a copy on different queues overlap; on one queue they don't. */
static void test_kernel_copy_overlap(void **state)
{
    machine m;
    weft__queue *qc, *qh;
    weft__module *mod;
    weft__kernel *k;
    weft__mem *x;
    static char host[1 << 20];
    const weft__sim_op *kop, *cop;

    (void)state;
    machine_open(&m, "launch_lat=1000,item_ns=1", 0);
    qc = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    qh = queue(&m, 0, WEFT__QUEUE_H2D);
    k = kernel(&m, 0, "scale", &mod);
    x = devmem(&m, 0, sizeof host);
    launch(qc, k, x, 2, 1 << 16);
    OK(weft__drv_copy_h2d(qh, x, 0, host, sizeof host));
    kop = op_at(&m, 0, WEFT__SIM_KERNEL);
    cop = op_at(&m, 1, WEFT__SIM_H2D);
    assert_string_equal(kop->kernel, "scale");
    assert_int_equal(kop->items, 1 << 16);
    assert_int_equal(kop->engine, WEFT__SIM_ENGINE_COMPUTE);
    assert_int_equal(kop->start_ns, 0);
    assert_int_equal(kop->end_ns, 1000 + (1 << 16));
    assert_int_equal(cop->start_ns, 0);
    assert_true(overlap(kop, cop));

    /* the same pair on one queue runs one after the other */
    weft__sim_record_clear(m.dev[0]);
    OK(weft__drv_copy_h2d(qc, x, 0, host, sizeof host));
    launch(qc, k, x, 2, 1 << 16);
    cop = op_at(&m, 0, WEFT__SIM_H2D);
    kop = op_at(&m, 1, WEFT__SIM_KERNEL);
    assert_int_equal(kop->ready_ns, cop->end_ns);
    assert_true(kop->start_ns >= cop->end_ns);
    OK(weft__drv_queue_destroy(qc));
    OK(weft__drv_queue_destroy(qh));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

/* queue_wait_event delays the queue to the event's time, across devices. */
static void test_wait_event(void **state)
{
    machine m;
    weft__queue *q0, *q1;
    weft__event *ev, *never;
    weft__module *mod;
    weft__kernel *k;
    weft__mem *x, *y;
    static char host[4096];
    const weft__sim_op *kop, *rec, *wait, *cop;
    size_t n;

    (void)state;
    machine_open(&m, "launch_lat=500,item_ns=2", 0);
    q0 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    q1 = queue(&m, 1, WEFT__QUEUE_H2D);
    k = kernel(&m, 0, "scale", &mod);
    x = devmem(&m, 0, 4096);
    y = devmem(&m, 1, 4096);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    OK(weft__drv_event_create(m.ctx[1], 0, &never));
    launch(q0, k, x, 3, 1024);
    OK(weft__drv_event_record(ev, q0));
    OK(weft__drv_queue_wait_event(q1, never)); /* never recorded: no-op */
    OK(weft__drv_queue_wait_event(q1, ev));
    OK(weft__drv_copy_h2d(q1, y, 0, host, sizeof host));
    kop = op_at(&m, 0, WEFT__SIM_KERNEL);
    rec = op_at(&m, 1, WEFT__SIM_EVENT_RECORD);
    assert_int_equal(kop->end_ns, 500 + 2048);
    assert_int_equal(rec->start_ns, kop->end_ns);
    assert_int_equal(rec->end_ns, kop->end_ns);
    wait = op_at(&m, 2, WEFT__SIM_EVENT_WAIT);
    assert_int_equal(wait->end_ns, wait->start_ns);
    wait = op_at(&m, 3, WEFT__SIM_EVENT_WAIT);
    assert_int_equal(wait->event, rec->event);
    assert_int_equal(wait->event_device, 0);
    assert_int_equal(wait->device, 1);
    assert_int_equal(wait->start_ns, 0);
    assert_int_equal(wait->end_ns, kop->end_ns);
    cop = op_at(&m, 4, WEFT__SIM_H2D);
    assert_int_equal(cop->ready_ns, kop->end_ns);
    assert_int_equal(cop->start_ns, kop->end_ns);
    record(&m, &n);
    assert_int_equal(n, 5);
    assert_int_equal(weft__sim_now(m.dev[1]), cop->end_ns);
    OK(weft__drv_event_sync(ev));
    OK(weft__drv_event_query(ev));
    OK(weft__drv_event_query(never));
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_event_destroy(never));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_mem_free(y));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

/*
 * check=1: a kernel writes x on one queue; a copy reads x on another queue
 * of the same device. Without a wait between them the copy starts while
 * the kernel runs (both on different engines): one hazard. With the wait,
 * none; two readers of x at once are no hazard either.
 */
static void test_check_hazards(void **state)
{
    machine m;
    weft__queue *qk, *qc, *qr;
    weft__event *ev;
    weft__module *mod, *mod_claim;
    weft__kernel *k, *claim;
    weft__mem *x;
    static char host[4096], other[4096];

    (void)state;
    machine_open(&m, "devices=1,launch_lat=500,item_ns=2,check=1", 1);
    qk = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    qc = queue(&m, 0, WEFT__QUEUE_D2H);
    qr = queue(&m, 0, WEFT__QUEUE_H2D);
    k = kernel(&m, 0, "scale", &mod);
    claim = kernel(&m, 0, "claim", &mod_claim);
    x = devmem(&m, 0, 4096);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    launch(qk, claim, x, 3, 1024);
    OK(weft__drv_copy_d2h(qc, host, x, 0, sizeof host)); /* not ordered */
    assert_int_equal(weft__sim_hazards(m.dev[0]), 1);
    OK(weft__drv_queue_sync(qc));
    launch(qk, k, x, 3, 1024);
    OK(weft__drv_event_record(ev, qk));
    OK(weft__drv_queue_wait_event(qc, ev));
    OK(weft__drv_copy_d2h(qc, host, x, 0, sizeof host)); /* ordered */
    /* Two reads of x at once (the copy above, and one more). */
    OK(weft__drv_queue_wait_event(qr, ev));
    OK(weft__drv_copy_d2h(qr, other, x, 0, sizeof other));
    assert_int_equal(weft__sim_hazards(m.dev[0]), 1);
    OK(weft__drv_queue_sync(qc));
    OK(weft__drv_queue_sync(qr));
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_queue_destroy(qk));
    OK(weft__drv_queue_destroy(qc));
    OK(weft__drv_queue_destroy(qr));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_module_destroy(mod));
    OK(weft__drv_module_destroy(mod_claim));
    machine_close(&m);
}

/* A queue blocked on a late event leaves its engine's gap to others. */
static void test_backfill(void **state)
{
    machine m;
    weft__queue *qa, *qb, *qe;
    weft__event *ev;
    weft__module *mod;
    weft__kernel *k;
    weft__mem *x;
    static char host[1000];
    const weft__sim_op *late, *early;

    (void)state;
    machine_open(&m, "launch_lat=100,item_ns=1,h2d_bw=1G,h2d_lat=0", 0);
    qa = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    qb = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    qe = queue(&m, 0, WEFT__QUEUE_H2D);
    k = kernel(&m, 0, "scale", &mod);
    x = devmem(&m, 0, 4096);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    OK(weft__drv_copy_h2d(qe, x, 0, host, sizeof host)); /* ends at 1000 */
    OK(weft__drv_event_record(ev, qe));
    OK(weft__drv_queue_wait_event(qa, ev));
    launch(qa, k, x, 1, 64);  /* 1000 .. 1164 */
    launch(qb, k, x, 1, 128); /* fits before: 0 .. 228 */
    launch(qb, k, x, 1, 800); /* 832 items, 932 ns: no gap fits */
    late = op_at(&m, 3, WEFT__SIM_KERNEL);
    assert_int_equal(late->start_ns, 1000);
    assert_int_equal(late->end_ns, 1164);
    early = op_at(&m, 4, WEFT__SIM_KERNEL);
    assert_int_equal(early->start_ns, 0);
    assert_int_equal(early->end_ns, 228);
    assert_false(overlap(late, early));
    early = op_at(&m, 5, WEFT__SIM_KERNEL);
    assert_int_equal(early->ready_ns, 228);
    assert_int_equal(early->start_ns, 1164);
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_queue_destroy(qa));
    OK(weft__drv_queue_destroy(qb));
    OK(weft__drv_queue_destroy(qe));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

static void nothing(void *user)
{
    (void)user;
}

/* Durations are latency + bytes / bandwidth, exactly. */
static void test_durations(void **state)
{
    machine m;
    weft__queue *q;
    weft__mem *a, *b;
    weft__module *mod;
    weft__kernel *k;
    static char host[64];
    uint32_t pattern = 7;

    (void)state;
    /* defaults: 55 GB/s and 2 us each way */
    machine_open(&m,
                 "mem=1T,d2h_bw=11G,d2h_lat=300,d2d_bw=1T,launch_lat=50,"
                 "host_fn_ns=1234",
                 0);
    q = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    a = devmem(&m, 0, (size_t)55e6);
    b = devmem(&m, 0, (size_t)55e6);
    k = kernel(&m, 0, "costly", &mod);
    OK(weft__drv_copy_h2d(q, a, 0, host, (size_t)55e6)); /* host is fake */
    OK(weft__drv_copy_d2h(q, host, a, 0, (size_t)22e6));
    OK(weft__drv_copy_d2d(q, b, 0, a, 0, (size_t)1e6));
    OK(weft__drv_fill(q, b, 0, &pattern, 4, (size_t)2e6));
    launch(q, k, a, 9, 1000);
    OK(weft__drv_host_fn(q, nothing, NULL));
    {
        const weft__sim_op *o;
        uint64_t t = 0;
        static const uint64_t dur[] = {2000 + 1000000,
                                       300 + 2000000,
                                       50 + 1000,
                                       50 + 2000,
                                       50 + 1024 * 7 +
                                           9, /* 16 groups of 64 items */
                                       1234};
        static const weft__sim_op_kind kind[] = {
            WEFT__SIM_H2D,  WEFT__SIM_D2H,    WEFT__SIM_D2D,
            WEFT__SIM_FILL, WEFT__SIM_KERNEL, WEFT__SIM_HOST_FN};

        for (size_t i = 0; i < WEFT__COUNTOF(dur); i++) {
            o = op_at(&m, i, kind[i]);
            assert_int_equal(o->start_ns, t);
            assert_int_equal(o->end_ns - o->start_ns, dur[i]);
            t = o->end_ns;
        }
        assert_int_equal(op_at(&m, 0, WEFT__SIM_H2D)->bytes, 55000000);
        assert_int_equal(op_at(&m, 3, WEFT__SIM_FILL)->dst_device, 0);
        assert_int_equal(op_at(&m, 5, WEFT__SIM_HOST_FN)->engine,
                         WEFT__SIM_ENGINE_NONE);
        OK(weft__drv_queue_sync(q));
        assert_int_equal(weft__sim_now(m.dev[0]), t);
    }
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_mem_free(a));
    OK(weft__drv_mem_free(b));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

/* Peer copies use peer_bw and the peer engines of the queue's device. */
static void test_peer(void **state)
{
    machine m;
    weft__queue *q, *q2;
    weft__mem *a, *b;
    const weft__sim_op *p0, *p1;

    (void)state;
    machine_open(&m, "devices=3,peer_bw=390G,peer_lat=1000,copy_engines=4", 0);
    q = queue(&m, 0, WEFT__QUEUE_PEER);
    q2 = queue(&m, 0, WEFT__QUEUE_PEER);
    a = devmem(&m, 0, (size_t)390e6);
    b = devmem(&m, 1, (size_t)390e6);
    OK(weft__drv_copy_peer(q, b, 0, a, 0, (size_t)390e6));  /* push */
    OK(weft__drv_copy_peer(q2, a, 0, b, 0, (size_t)390e6)); /* pull */
    p0 = op_at(&m, 0, WEFT__SIM_PEER);
    p1 = op_at(&m, 1, WEFT__SIM_PEER);
    assert_int_equal(p0->end_ns - p0->start_ns, 1000 + 1000000);
    assert_int_equal(p0->src_device, 0);
    assert_int_equal(p0->dst_device, 1);
    assert_int_equal(p1->src_device, 1);
    assert_int_equal(p1->dst_device, 0);
    /* engines 3 and 4 are both for peer copies: the two run at once */
    assert_int_equal(p0->engine, 3);
    assert_int_equal(p1->engine, 4);
    assert_true(overlap(p0, p1));
    assert_int_equal(weft__sim_bytes(m.dev[2], WEFT__SIM_PEER, 0, 1),
                     390000000);
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_queue_destroy(q2));
    OK(weft__drv_mem_free(a));
    OK(weft__drv_mem_free(b));
    machine_close(&m);

    /* without peer access the copy is refused and nothing is recorded */
    machine_open(&m, "peer=0", 0);
    q = queue(&m, 0, WEFT__QUEUE_PEER);
    a = devmem(&m, 0, 64);
    b = devmem(&m, 1, 64);
    assert_int_equal(weft__drv_copy_peer(q, b, 0, a, 0, 64), WEFT_ENOTSUP);
    {
        size_t n;

        record(&m, &n);
        assert_int_equal(n, 0);
    }
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_mem_free(a));
    OK(weft__drv_mem_free(b));
    machine_close(&m);
}

/* Counted memory: no host allocation, but the device fills up. */
static void test_counted_memory(void **state)
{
    machine m;
    weft__mem *a, *b, *c;

    (void)state;
    machine_open(&m, NULL, 0);
    /* 100 GiB on each of two devices: only counted */
    a = devmem(&m, 0, (size_t)100 << 30);
    b = devmem(&m, 1, (size_t)100 << 30);
    assert_int_equal(weft__drv_mem_alloc(m.ctx[0], (size_t)42 << 30, &c),
                     WEFT_EDEVMEM);
    assert_non_null(strstr(weft_last_error(), "sim H200 #0"));
    c = devmem(&m, 0, (size_t)41 << 30); /* exactly full */
    assert_int_equal(weft__drv_mem_alloc(m.ctx[0], 1, &c) == WEFT_EDEVMEM, 1);
    OK(weft__drv_mem_free(a));
    a = devmem(&m, 0, (size_t)100 << 30);
    OK(weft__drv_mem_free(a));
    OK(weft__drv_mem_free(b));
    OK(weft__drv_mem_free(c));
    machine_close(&m);

    machine_open(&m, "mem=1M", 0);
    a = devmem(&m, 0, 1 << 19);
    b = devmem(&m, 0, 1 << 19);
    assert_int_equal(weft__drv_mem_alloc(m.ctx[0], 1, &c), WEFT_EDEVMEM);
    c = devmem(&m, 1, 1 << 20); /* the other device has its own */
    /* pinned memory is real and not counted */
    {
        weft__mem *h;

        OK(weft__drv_host_alloc(m.ctx[0], 1 << 20, &h));
        assert_non_null(h->host);
        memset(h->host, 1, 1 << 20);
        OK(weft__drv_mem_free(h));
    }
    OK(weft__drv_mem_free(a));
    OK(weft__drv_mem_free(b));
    OK(weft__drv_mem_free(c));
    machine_close(&m);
}

/*
 * Eight devices: each gets its slice from the host, computes, and passes it
 * to its neighbour over the peer links. Every device works at once.
 */
static void test_eight_devices(void **state)
{
    machine m;
    weft__queue *qh[8], *qc[8], *qp[8];
    weft__event *ev[8];
    weft__mem *x[8], *y[8];
    weft__module *mod[8];
    weft__kernel *k[8];
    static char host[1 << 20];
    size_t n;
    const weft__sim_op *r;
    const uint64_t h2d = 2000 + 1048576ull / 64;

    (void)state;
    machine_open(&m,
                 "devices=8,h2d_bw=64G,peer_bw=400G,launch_lat=0,"
                 "item_ns=0.5",
                 0);
    assert_int_equal(m.ndev, 8);
    for (int d = 0; d < 8; d++) {
        qh[d] = queue(&m, d, WEFT__QUEUE_H2D);
        qc[d] = queue(&m, d, WEFT__QUEUE_COMPUTE);
        qp[d] = queue(&m, d, WEFT__QUEUE_PEER);
        x[d] = devmem(&m, d, sizeof host);
        y[d] = devmem(&m, d, sizeof host);
        k[d] = kernel(&m, d, "scale", &mod[d]);
        OK(weft__drv_event_create(m.ctx[d], 0, &ev[d]));
    }
    for (int d = 0; d < 8; d++) {
        OK(weft__drv_copy_h2d(qc[d], x[d], 0, host, sizeof host));
        launch(qc[d], k[d], x[d], 2, 1 << 18);
        OK(weft__drv_event_record(ev[d], qc[d]));
        OK(weft__drv_queue_wait_event(qp[d], ev[d]));
        OK(weft__drv_copy_peer(qp[d], y[(d + 1) % 8], 0, x[d], 0, sizeof host));
    }
    r = record(&m, &n);
    assert_int_equal(n, 8 * 5);
    for (int d = 0; d < 8; d++) {
        const weft__sim_op *o = &r[d * 5];

        assert_int_equal(o[0].device, d);
        assert_int_equal(o[0].start_ns, 0); /* every device loads at once */
        assert_int_equal(o[0].end_ns, h2d);
        assert_int_equal(o[1].start_ns, h2d);
        assert_int_equal(o[1].end_ns, h2d + (1 << 17));
        assert_int_equal(o[4].kind, WEFT__SIM_PEER);
        assert_int_equal(o[4].start_ns, o[1].end_ns);
        assert_int_equal(o[4].src_device, d);
        assert_int_equal(o[4].dst_device, (d + 1) % 8);
        assert_int_equal(
            weft__sim_bytes(m.dev[0], WEFT__SIM_PEER, d, (d + 1) % 8),
            sizeof host);
    }
    assert_int_equal(
        weft__sim_bytes(m.dev[0], WEFT__SIM_H2D, WEFT__SIM_HOST, 5),
        sizeof host);
    assert_int_equal(weft__sim_now(m.dev[3]),
                     h2d + (1 << 17) + 2000 + 1048576ull / 400 /* 2621.44 */);
    for (int d = 0; d < 8; d++) {
        OK(weft__drv_queue_sync(qp[d]));
        OK(weft__drv_event_destroy(ev[d]));
        OK(weft__drv_queue_destroy(qh[d]));
        OK(weft__drv_queue_destroy(qc[d]));
        OK(weft__drv_queue_destroy(qp[d]));
        OK(weft__drv_mem_free(x[d]));
        OK(weft__drv_mem_free(y[d]));
        OK(weft__drv_module_destroy(mod[d]));
    }
    machine_close(&m);
}

/* The same submissions give the same record, on a machine of 64. */
static void run_pattern(machine *m, weft__sim_op *out, size_t *nout)
{
    weft__queue *q[64][2];
    weft__mem *x[64];
    weft__event *ev[64];
    static char host[4096];
    const weft__sim_op *r;

    for (int d = 0; d < 64; d++) {
        q[d][0] = queue(m, d, WEFT__QUEUE_H2D);
        q[d][1] = queue(m, d, WEFT__QUEUE_PEER);
        x[d] = devmem(m, d, 1 << 20);
        OK(weft__drv_event_create(m->ctx[d], 0, &ev[d]));
    }
    for (int i = 0; i < 8; i++)
        for (int d = 0; d < 64; d++) {
            OK(weft__drv_copy_h2d(q[d][0], x[d], 4096 * i, host,
                                  1000 + 100 * d));
            OK(weft__drv_event_record(ev[d], q[d][0]));
            OK(weft__drv_queue_wait_event(q[(d + 7) % 64][1], ev[d]));
            OK(weft__drv_copy_peer(q[(d + 7) % 64][1], x[(d + 7) % 64],
                                   65536 + 4096 * i, x[d], 4096 * i, 4096));
        }
    r = record(m, nout);
    memcpy(out, r, *nout * sizeof *r);
    for (int d = 0; d < 64; d++) {
        OK(weft__drv_event_destroy(ev[d]));
        OK(weft__drv_queue_destroy(q[d][0]));
        OK(weft__drv_queue_destroy(q[d][1]));
        OK(weft__drv_mem_free(x[d]));
    }
}

static void test_deterministic(void **state)
{
    static weft__sim_op a[64 * 8 * 4], b[64 * 8 * 4];
    size_t na, nb;
    machine m;

    (void)state;
    machine_open(&m, "devices=64,copy_engines=2", 0);
    run_pattern(&m, a, &na);
    machine_close(&m);
    machine_open(&m, "devices=64,copy_engines=2", 0);
    run_pattern(&m, b, &nb);
    machine_close(&m);
    assert_int_equal(na, 64 * 8 * 4);
    assert_int_equal(na, nb);
    for (size_t i = 0; i < na; i++) {
        assert_int_equal(a[i].start_ns, b[i].start_ns);
        assert_int_equal(a[i].end_ns, b[i].end_ns);
        assert_int_equal(a[i].engine, b[i].engine);
        assert_int_equal(a[i].kind, b[i].kind);
    }
    /* and the model did serialise the peer copies on engine 2 */
    assert_int_equal(a[3].engine, 2);
}

/* ---- real data ----------------------------------------------------------- */

typedef struct order_log {
    int n;
    int seen[8];
} order_log;

static void log_a(void *user)
{
    order_log *l = user;

    l->seen[l->n++] = 'a';
}

static void log_b(void *user)
{
    order_log *l = user;

    l->seen[l->n++] = 'b';
}

static void test_real_data(void **state)
{
    machine m;
    weft__queue *q0, *q1;
    weft__mem *x, *y, *z;
    weft__module *mod;
    weft__kernel *k;
    weft__event *ev;
    uint32_t in[1000], out[1000], fill = 0xabcd1234u;
    order_log log = {0, {0}};

    (void)state;
    for (uint32_t i = 0; i < 1000; i++)
        in[i] = i;
    machine_open(&m, "devices=2", 1);
    q0 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    q1 = queue(&m, 1, WEFT__QUEUE_COMPUTE);
    x = devmem(&m, 0, sizeof in);
    y = devmem(&m, 0, sizeof in);
    z = devmem(&m, 1, sizeof in);
    k = kernel(&m, 0, "scale", &mod);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    OK(weft__drv_copy_h2d(q0, x, 0, in, sizeof in));
    launch(q0, k, x, 3, 1000);                         /* x = 3i */
    OK(weft__drv_copy_d2d(q0, y, 0, x, 0, sizeof in)); /* y = x */
    OK(weft__drv_fill(q0, y, 0, &fill, 4, 40));        /* y[0..9] */
    OK(weft__drv_host_fn(q0, log_a, &log));
    OK(weft__drv_event_record(ev, q0));
    OK(weft__drv_queue_wait_event(q1, ev));
    OK(weft__drv_copy_peer(q1, z, 0, y, 0, sizeof in)); /* z = y */
    OK(weft__drv_host_fn(q1, log_b, &log));
    OK(weft__drv_copy_d2h(q1, out, z, 0, sizeof out));
    OK(weft__drv_queue_sync(q1));
    for (uint32_t i = 0; i < 1000; i++)
        assert_int_equal(out[i], i < 10 ? fill : 3 * i);
    assert_int_equal(log.n, 2);
    assert_int_equal(log.seen[0], 'a');
    assert_int_equal(log.seen[1], 'b');
    assert_int_equal(in[999], 999); /* the source is untouched */
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_mem_free(y));
    OK(weft__drv_mem_free(z));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

/* ---- asynchrony and the host's clock ---------------------------------------
 */

static void test_async_and_host_clock(void **state)
{
    machine m;
    weft__queue *q, *q2;
    weft__event *ev, *t0, *t1;
    weft__mem *x;
    static char host[4096];
    gate g;
    uint64_t ns;
    const weft__sim_op *o;
    size_t n;

    (void)state;
    gate_init(&g);
    machine_open(&m, "host_fn_ns=500,h2d_lat=0,h2d_bw=1G", 0);
    q = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    x = devmem(&m, 0, 4096);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    OK(weft__drv_event_create(m.ctx[0], WEFT__EVENT_TIMING, &t0));
    OK(weft__drv_event_create(m.ctx[0], WEFT__EVENT_TIMING, &t1));
    OK(weft__drv_event_record(t0, q));
    OK(weft__drv_host_fn(q, gate_wait, &g));
    OK(weft__drv_copy_h2d(q, x, 0, host, 1000));
    OK(weft__drv_event_record(ev, q));
    OK(weft__drv_event_record(t1, q));
    /* the worker is held in the gate: nothing after it has completed */
    assert_int_equal(weft__drv_event_query(ev), WEFT_ENOTREADY);
    assert_int_equal(weft__drv_event_elapsed(t0, t1, &ns), WEFT_ENOTREADY);
    OK(weft__drv_event_query(t0)); /* recorded before the host fn */
    gate_open(&g);
    OK(weft__drv_event_sync(ev));
    OK(weft__drv_event_query(ev));
    OK(weft__drv_event_elapsed(t0, t1, &ns));
    assert_int_equal(ns, 500 + 1000);
    assert_int_equal(weft__drv_event_elapsed(t1, t0, &ns), WEFT_ERANGE);

    /* this thread has seen 1500 ns pass: a new queue cannot start earlier */
    weft__sim_record_clear(m.dev[0]);
    q2 = queue(&m, 0, WEFT__QUEUE_H2D);
    OK(weft__drv_copy_h2d(q2, x, 0, host, 100));
    o = record(&m, &n);
    assert_int_equal(n, 1);
    assert_int_equal(o->ready_ns, 1500);
    assert_int_equal(o->start_ns, 1500);
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_event_destroy(t0));
    OK(weft__drv_event_destroy(t1));
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_queue_destroy(q2));
    OK(weft__drv_mem_free(x));
    machine_close(&m);
    gate_destroy(&g);
}

static void flag_set(void *user)
{
    __atomic_store_n((int *)user, 1, __ATOMIC_RELEASE);
}

/*
 * A queue held in a host function holds back only what depends on it: an
 * independent queue runs on (its data moves, its events complete), while a
 * queue that waits on the held one's event does not pass the wait.
 */
static void test_queues_independent(void **state)
{
    machine m;
    weft__queue *held, *free_q, *waiter;
    weft__event *before, *idle, *after;
    weft__mem *x;
    uint32_t in[64], out[64];
    int waiter_ran = 0;
    gate g;

    (void)state;
    for (int i = 0; i < 64; i++)
        in[i] = (uint32_t)i * 5;
    memset(out, 0, sizeof out);
    gate_init(&g);
    machine_open(&m, NULL, 1);
    held = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    free_q = queue(&m, 0, WEFT__QUEUE_H2D);
    waiter = queue(&m, 1, WEFT__QUEUE_COMPUTE);
    x = devmem(&m, 0, sizeof in);
    OK(weft__drv_event_create(m.ctx[0], 0, &before));
    OK(weft__drv_event_create(m.ctx[0], 0, &idle));
    OK(weft__drv_event_create(m.ctx[0], 0, &after));
    OK(weft__drv_event_record(before, held));
    OK(weft__drv_host_fn(held, gate_wait, &g));
    OK(weft__drv_event_record(after, held));
    OK(weft__drv_queue_wait_event(waiter, after));
    OK(weft__drv_host_fn(waiter, flag_set, &waiter_ran));
    /* the independent queue works while the held one is blocked */
    OK(weft__drv_copy_h2d(free_q, x, 0, in, sizeof in));
    OK(weft__drv_copy_d2h(free_q, out, x, 0, sizeof out));
    OK(weft__drv_event_record(idle, free_q));
    OK(weft__drv_event_sync(idle));
    assert_memory_equal(out, in, sizeof in);
    OK(weft__drv_event_query(before));
    assert_int_equal(weft__drv_event_query(after), WEFT_ENOTREADY);
    /* the waiter has not passed its wait: the gate is still shut */
    assert_int_equal(__atomic_load_n(&waiter_ran, __ATOMIC_ACQUIRE), 0);
    assert_int_equal(weft__drv_queue_sync(free_q), 0);
    assert_int_equal(__atomic_load_n(&waiter_ran, __ATOMIC_ACQUIRE), 0);
    gate_open(&g);
    OK(weft__drv_queue_sync(waiter));
    assert_int_equal(waiter_ran, 1);
    OK(weft__drv_event_query(after));
    OK(weft__drv_event_destroy(before));
    OK(weft__drv_event_destroy(idle));
    OK(weft__drv_event_destroy(after));
    OK(weft__drv_queue_destroy(held));
    OK(weft__drv_queue_destroy(free_q));
    OK(weft__drv_queue_destroy(waiter));
    OK(weft__drv_mem_free(x));
    machine_close(&m);
    gate_destroy(&g);
}

/* An event destroyed while a queue still waits on it: the wait holds on. */
static void test_event_destroyed_while_waited(void **state)
{
    machine m;
    weft__queue *held, *waiter;
    weft__event *ev;
    int ran = 0;
    gate g;

    (void)state;
    gate_init(&g);
    machine_open(&m, NULL, 0);
    held = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    waiter = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    OK(weft__drv_host_fn(held, gate_wait, &g));
    OK(weft__drv_event_record(ev, held));
    OK(weft__drv_queue_wait_event(waiter, ev));
    OK(weft__drv_host_fn(waiter, flag_set, &ran));
    OK(weft__drv_event_record(ev, waiter)); /* re-targeted */
    OK(weft__drv_event_destroy(ev));
    gate_open(&g);
    OK(weft__drv_queue_sync(waiter));
    assert_int_equal(ran, 1);
    OK(weft__drv_queue_destroy(held));
    OK(weft__drv_queue_destroy(waiter));
    machine_close(&m);
    gate_destroy(&g);
}

static void *sync_queue(void *arg)
{
    OK(weft__drv_queue_sync(arg));
    return NULL;
}

/* A wait on another thread does not hold this thread's submissions back. */
static void test_host_clock_per_thread(void **state)
{
    machine m;
    weft__queue *q, *q2, *q3;
    weft__mem *x;
    pthread_t t;
    static char host[100];
    const weft__sim_op *o;
    size_t n;

    (void)state;
    machine_open(&m, "host_fn_ns=500", 0);
    q = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    x = devmem(&m, 0, 4096);
    OK(weft__drv_host_fn(q, nothing, NULL));
    OK(pthread_create(&t, NULL, sync_queue, q));
    OK(pthread_join(t, NULL));
    q2 = queue(&m, 0, WEFT__QUEUE_H2D);
    OK(weft__drv_copy_h2d(q2, x, 0, host, sizeof host));
    o = record(&m, &n);
    assert_int_equal(n, 2);
    assert_int_equal(o[0].end_ns, 500);
    assert_int_equal(o[1].ready_ns, 0);
    assert_int_equal(o[1].start_ns, 0);
    /* the same wait on this thread does */
    OK(weft__drv_queue_sync(q));
    q3 = queue(&m, 0, WEFT__QUEUE_D2H);
    OK(weft__drv_copy_d2h(q3, host, x, 0, sizeof host));
    o = record(&m, &n);
    assert_int_equal(n, 3);
    assert_int_equal(o[2].ready_ns, 500);
    assert_int_equal(o[2].start_ns, 500);
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_queue_destroy(q2));
    OK(weft__drv_queue_destroy(q3));
    OK(weft__drv_mem_free(x));
    machine_close(&m);
}

/*
 * Many gaps on one engine: the oldest are forgotten (nothing may start
 * before them any more), recent ones are still backfilled, and no two
 * operations ever overlap on the engine.
 */
static void test_many_gaps(void **state)
{
    machine m;
    weft__queue *qa, *qb;
    weft__mem *x;
    static char host[100];
    const weft__sim_op *r, *late;
    size_t n, copies = 0;

    (void)state;
    machine_open(&m, "h2d_lat=0,h2d_bw=1G,host_fn_ns=50,copy_engines=1", 0);
    qa = queue(&m, 0, WEFT__QUEUE_H2D);
    qb = queue(&m, 0, WEFT__QUEUE_H2D);
    x = devmem(&m, 0, 4096);
    for (int i = 0; i < 300; i++) {
        OK(weft__drv_copy_h2d(qa, x, 0, host, 100)); /* [150i, 150i+100) */
        OK(weft__drv_host_fn(qa, nothing, NULL));    /* a 50 ns gap */
    }
    OK(weft__drv_copy_h2d(qb, x, 0, host, 40));
    r = record(&m, &n);
    assert_int_equal(n, 601);
    late = &r[600];
    assert_int_equal(late->ready_ns, 0);
    assert_true(late->start_ns > 150 * 63);      /* old gaps are closed */
    assert_true(late->end_ns < 150 * 299 + 100); /* a recent one is used */
    assert_int_equal(late->start_ns % 150, 100); /* it starts in a gap */
    for (size_t i = 0; i < n; i++) {
        if (r[i].engine != 1)
            continue;
        copies++;
        for (size_t j = i + 1; j < n; j++)
            if (r[j].engine == 1)
                assert_false(overlap(&r[i], &r[j]));
    }
    assert_int_equal(copies, 301);
    OK(weft__drv_queue_destroy(qa));
    OK(weft__drv_queue_destroy(qb));
    OK(weft__drv_mem_free(x));
    machine_close(&m);
}

/* ---- modules ------------------------------------------------------------- */

static void test_modules(void **state)
{
    machine m;
    weft__module *mod;
    weft__kernel *k;
    weft__module_source cl = {WEFT__SRC_OPENCL_C, "kernel void f() {}", 0, NULL,
                              "f.cl"};
    weft_host_kernel unnamed = {NULL, k_scale, 0, NULL, NULL, NULL, NULL};
    weft__module_source bad = {WEFT__SRC_HOST_TABLE, &unnamed, 1, NULL, NULL};
    weft__grid grid = {{1, 1, 1}, {1, 1, 1}, 0};
    weft__queue *q;

    (void)state;
    machine_open(&m, NULL, 0);
    assert_int_equal(weft__drv_module_create(m.ctx[0], &cl, &mod),
                     WEFT_ENOTSUP);
    assert_int_equal(weft__drv_module_create(m.ctx[0], &bad, &mod),
                     WEFT_EINVAL);
    k = kernel(&m, 0, "costly", &mod);
    assert_string_equal(k->name, "costly");
    assert_int_equal(k->params_known, 1);
    assert_int_equal(k->nparams, 3);
    assert_int_equal(k->param_sizes[2], 8);
    assert_int_equal(weft__drv_kernel_get(mod, "nope", &k), WEFT_ENOTFOUND);
    assert_non_null(strstr(weft_last_error(), "nope"));
    /* dispatch checks launches against the copied parameter list */
    OK(weft__drv_kernel_get(mod, "scale", &k));
    q = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    assert_int_equal(weft__drv_launch(q, k, &grid, NULL, 0), WEFT_EARGS);
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

/* ---- native graphs --------------------------------------------------------
 */

static const weft__driver *const sim = &weft__driver_sim;

/* The entries of the record from index from on: how many of kind on dev. */
static size_t count_ops(machine *m, size_t from, weft__sim_op_kind kind,
                        int dev)
{
    size_t n, count = 0;
    const weft__sim_op *r = record(m, &n);

    for (size_t i = from; i < n; i++)
        count += r[i].kind == kind && r[i].device == dev;
    return count;
}

/* The first entry from index from on of kind on dev (which must exist). */
static const weft__sim_op *find_op(machine *m, size_t from,
                                   weft__sim_op_kind kind, int dev)
{
    size_t n;
    const weft__sim_op *r = record(m, &n);

    for (size_t i = from; i < n; i++)
        if (r[i].kind == kind && r[i].device == dev)
            return &r[i];
    fail_msg("no %s on device %d in the record from entry %zu",
             weft__sim_op_name(kind), dev, from);
    return NULL;
}

static size_t record_len(machine *m)
{
    size_t n;

    record(m, &n);
    return n;
}

static void test_graph_supported(void **state)
{
    machine m;
    weft__queue *q;
    void *g = NULL;

    (void)state;
    machine_open(&m, NULL, 0);
    assert_int_equal(sim->graph_supported(m.dev[0]), 0);
    q = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    assert_int_equal(sim->graph_begin(q), WEFT_ENOTSUP);
    assert_non_null(strstr(weft_last_error(), "graphs=1"));
    /* Nothing began: there is nothing to end. */
    assert_int_equal(sim->graph_end(q, NULL, &g, NULL), WEFT_EINVAL);
    assert_null(g);
    OK(weft__drv_queue_destroy(q));
    machine_close(&m);
    machine_open(&m, "devices=3,graphs=1", 0);
    for (unsigned i = 0; i < m.ndev; i++)
        assert_int_equal(sim->graph_supported(m.dev[i]), 1);
    machine_close(&m);
}

/*
 * A capture over two queues of one device: an upload and a fill on q0, a
 * kernel on q1 (forked off q0 by an event and joined back), a host
 * function and a download on q0. The capture runs nothing and records
 * nothing; each launch runs it all with the values of the capture, in the
 * capture's order, and shows in the record.
 */
static void test_graph_two_queues(void **state)
{
    enum { N = 256 };
    machine m;
    weft__queue *q0, *q1;
    weft__mem *x, *h;
    weft__module *mod;
    weft__kernel *k;
    weft__event *fork, *join;
    uint32_t *in, out[N], pattern = 7;
    order_log log = {0, {0}};
    void *g = NULL;
    int updated = -1;
    size_t before;

    (void)state;
    machine_open(&m, "devices=1,graphs=1", 1);
    q0 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    q1 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    x = devmem(&m, 0, N * 4);
    OK(weft__drv_host_alloc(m.ctx[0], N * 4, &h));
    in = h->host;
    k = kernel(&m, 0, "scale", &mod);
    OK(weft__drv_event_create(m.ctx[0], 0, &fork));
    OK(weft__drv_event_create(m.ctx[0], 0, &join));
    for (uint32_t i = 0; i < N; i++)
        in[i] = 1000; /* the capture must not copy these */
    memset(out, 0, sizeof out);
    before = record_len(&m);
    OK(sim->graph_begin(q0));
    assert_int_equal(sim->graph_begin(q0), WEFT_EINVAL); /* once */
    OK(weft__drv_copy_h2d(q0, x, 0, in, N * 4));
    OK(weft__drv_fill(q0, x, 0, &pattern, 4, 8)); /* x[0], x[1] = 7 */
    OK(weft__drv_event_record(fork, q0));
    OK(weft__drv_queue_wait_event(q1, fork)); /* q1 joins */
    launch(q1, k, x, 3, N);                   /* x *= 3 */
    OK(weft__drv_event_record(join, q1));
    OK(weft__drv_queue_wait_event(q0, join));
    OK(weft__drv_host_fn(q0, log_a, &log));
    OK(weft__drv_copy_d2h(q0, out, x, 0, N * 4));
    /* A wait by the host on the capture fails and changes nothing. */
    assert_int_equal(weft__drv_queue_sync(q0), WEFT_EINVAL);
    assert_int_equal(weft__drv_queue_sync(q1), WEFT_EINVAL);
    assert_int_equal(weft__drv_event_query(fork), WEFT_EINVAL);
    assert_int_equal(weft__drv_event_sync(join), WEFT_EINVAL);
    OK(sim->graph_end(q0, NULL, &g, &updated));
    assert_non_null(g);
    assert_int_equal(updated, 0);
    assert_int_equal(record_len(&m), before); /* nothing ran */
    assert_int_equal(log.n, 0);
    assert_int_equal(out[5], 0);
    pattern = 9; /* the graph has its own copy of the pattern */
    for (int launch_no = 1; launch_no <= 2; launch_no++) {
        const weft__sim_op *up, *fill, *kern, *down, *fn;

        for (uint32_t i = 0; i < N; i++)
            in[i] = i * (uint32_t)launch_no;
        before = record_len(&m);
        OK(sim->graph_launch(g, q0));
        OK(weft__drv_queue_sync(q0)); /* the whole graph */
        for (uint32_t i = 0; i < N; i++)
            assert_int_equal(out[i], 3 * (i < 2 ? 7 : i * launch_no));
        assert_int_equal(log.n, launch_no);
        assert_int_equal(count_ops(&m, before, WEFT__SIM_KERNEL, 0), 1);
        assert_int_equal(count_ops(&m, before, WEFT__SIM_H2D, 0), 1);
        assert_int_equal(count_ops(&m, before, WEFT__SIM_D2H, 0), 1);
        up = find_op(&m, before, WEFT__SIM_H2D, 0);
        fill = find_op(&m, before, WEFT__SIM_FILL, 0);
        kern = find_op(&m, before, WEFT__SIM_KERNEL, 0);
        fn = find_op(&m, before, WEFT__SIM_HOST_FN, 0);
        down = find_op(&m, before, WEFT__SIM_D2H, 0);
        assert_string_equal(kern->kernel, "scale");
        assert_int_equal(kern->items, N);
        assert_int_equal(fill->bytes, 8);
        /* On their own queues, in the capture's order in virtual time. */
        assert_int_equal(up->queue, fill->queue);
        assert_int_not_equal(kern->queue, up->queue);
        assert_int_equal(down->queue, up->queue);
        assert_true(fill->start_ns >= up->end_ns);
        assert_true(kern->start_ns >= fill->end_ns);
        assert_true(fn->start_ns >= kern->end_ns);
        assert_true(down->start_ns >= fn->end_ns);
    }
    assert_int_equal(pattern, 9);
    sim->graph_destroy(g);
    /* The queues work as usual after the capture. */
    launch(q1, k, x, 2, N);
    OK(weft__drv_copy_d2h(q1, out, x, 0, N * 4));
    OK(weft__drv_queue_sync(q1));
    assert_int_equal(out[10], 2 * 3 * 10 * 2);
    OK(weft__drv_event_query(fork)); /* its capture is over */
    OK(weft__drv_event_destroy(fork));
    OK(weft__drv_event_destroy(join));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_mem_free(h));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

/*
 * A capture over queues of two devices: a kernel on device 0 writes x0;
 * after an event, a queue of device 1 copies it into x1 (peer), scales it
 * and downloads it; device 0's queue waits for that and copies x1 back
 * into x0 (peer, on device 0's queue).
 */
static void test_graph_two_devices(void **state)
{
    enum { N = 1000 };
    machine m;
    weft__queue *q0, *q1;
    weft__mem *x0, *x1;
    weft__module *mod0, *mod1;
    weft__kernel *k0, *k1;
    weft__event *e0, *e1;
    uint32_t in[N], out[N], back[N];
    void *g = NULL;
    size_t before;

    (void)state;
    machine_open(&m, "devices=2,graphs=1", 1);
    q0 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    q1 = queue(&m, 1, WEFT__QUEUE_COMPUTE);
    x0 = devmem(&m, 0, sizeof in);
    x1 = devmem(&m, 1, sizeof in);
    k0 = kernel(&m, 0, "scale", &mod0);
    k1 = kernel(&m, 1, "scale", &mod1);
    OK(weft__drv_event_create(m.ctx[0], 0, &e0));
    OK(weft__drv_event_create(m.ctx[1], 0, &e1));
    OK(sim->graph_begin(q0));
    OK(weft__drv_copy_h2d(q0, x0, 0, in, sizeof in));
    launch(q0, k0, x0, 2, N); /* x0 = 2 in */
    OK(weft__drv_event_record(e0, q0));
    OK(weft__drv_queue_wait_event(q1, e0)); /* device 1 joins */
    OK(weft__drv_copy_peer(q1, x1, 0, x0, 0, sizeof in));
    launch(q1, k1, x1, 5, N); /* x1 = 10 in */
    OK(weft__drv_copy_d2h(q1, out, x1, 0, sizeof out));
    OK(weft__drv_event_record(e1, q1));
    OK(weft__drv_queue_wait_event(q0, e1)); /* joined back */
    OK(weft__drv_copy_peer(q0, x0, 0, x1, 0, sizeof in));
    OK(weft__drv_copy_d2h(q0, back, x0, 0, sizeof back));
    OK(sim->graph_end(q0, NULL, &g, NULL));
    for (uint32_t launch_no = 1; launch_no <= 2; launch_no++) {
        const weft__sim_op *k0op, *peer1, *k1op, *d2h1, *peer0;

        for (uint32_t i = 0; i < N; i++)
            in[i] = i + launch_no;
        memset(out, 0, sizeof out);
        memset(back, 0, sizeof back);
        before = record_len(&m);
        OK(sim->graph_launch(g, q0));
        OK(weft__drv_queue_sync(q0));
        for (uint32_t i = 0; i < N; i++) {
            assert_int_equal(out[i], 10 * (i + launch_no));
            assert_int_equal(back[i], 10 * (i + launch_no));
        }
        k0op = find_op(&m, before, WEFT__SIM_KERNEL, 0);
        peer1 = find_op(&m, before, WEFT__SIM_PEER, 1);
        k1op = find_op(&m, before, WEFT__SIM_KERNEL, 1);
        d2h1 = find_op(&m, before, WEFT__SIM_D2H, 1);
        peer0 = find_op(&m, before, WEFT__SIM_PEER, 0);
        assert_int_equal(peer1->src_device, 0);
        assert_int_equal(peer1->dst_device, 1);
        assert_int_equal(peer0->src_device, 1);
        assert_int_equal(peer0->dst_device, 0);
        assert_int_equal(d2h1->src_device, 1);
        assert_true(peer1->start_ns >= k0op->end_ns);
        assert_true(k1op->start_ns >= peer1->end_ns);
        assert_true(peer0->start_ns >= d2h1->end_ns);
        assert_int_equal(count_ops(&m, before, WEFT__SIM_KERNEL, 0), 1);
        assert_int_equal(count_ops(&m, before, WEFT__SIM_KERNEL, 1), 1);
        /* The host's clock after the sync is past all of it. */
        assert_true(weft__sim_now(m.dev[0]) >= peer0->end_ns);
    }
    sim->graph_destroy(g);
    OK(weft__drv_event_destroy(e0));
    OK(weft__drv_event_destroy(e1));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_mem_free(x0));
    OK(weft__drv_mem_free(x1));
    OK(weft__drv_module_destroy(mod0));
    OK(weft__drv_module_destroy(mod1));
    machine_close(&m);
}

/*
 * Graphs of two devices joined by external event nodes, as weft's tape
 * joins CUDA graphs: R (device 0) uploads x0, scales it and records e0 as
 * a node; W (device 1) waits for e0 as a node and copies x0 into x1
 * (peer). A wait node waits for the record of e0 that is latest when its
 * graph is launched (as CUDA's, tests/gpu/event_nodes.cu): R launched
 * first, W's copy follows this launch's kernel; W launched first, it
 * waits for the record of the launch before. That last round launches
 * R2, which records e0 too but writes x2, not the x0 that W reads: real
 * bytes are copied by the sim's threads, and R writing x0 while W reads
 * it would be a true data race (ThreadSanitizer reports it).
 */
static void test_graph_external_events(void **state)
{
    enum { N = 1000 };
    machine m;
    weft__queue *q0, *q1;
    weft__mem *x0, *x1, *x2;
    weft__module *mod0;
    weft__kernel *k0;
    weft__event *e0;
    uint32_t in[N], in2[N], out[N];
    void *gr = NULL, *gr2 = NULL, *gw = NULL;

    (void)state;
    machine_open(&m, "devices=2,graphs=1", 1);
    q0 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    q1 = queue(&m, 1, WEFT__QUEUE_COMPUTE);
    x0 = devmem(&m, 0, sizeof in);
    x1 = devmem(&m, 1, sizeof in);
    x2 = devmem(&m, 0, sizeof in);
    k0 = kernel(&m, 0, "scale", &mod0);
    for (uint32_t i = 0; i < N; i++)
        in2[i] = 7;
    OK(weft__drv_event_create(m.ctx[0], 0, &e0));
    /* Outside a capture, and from the wrong device: refused. */
    assert_int_equal(sim->graph_record_external(e0, q0), WEFT_EINVAL);
    assert_int_equal(sim->graph_wait_external(q1, e0), WEFT_EINVAL);
    OK(sim->graph_begin(q0));
    OK(weft__drv_copy_h2d(q0, x0, 0, in, sizeof in));
    launch(q0, k0, x0, 2, N);
    OK(sim->graph_record_external(e0, q0));
    OK(sim->graph_end(q0, NULL, &gr, NULL));
    OK(sim->graph_begin(q0));
    OK(weft__drv_copy_h2d(q0, x2, 0, in2, sizeof in2));
    launch(q0, k0, x2, 2, N);
    OK(sim->graph_record_external(e0, q0));
    OK(sim->graph_end(q0, NULL, &gr2, NULL));
    OK(sim->graph_begin(q1));
    OK(sim->graph_wait_external(q1, e0));
    OK(weft__drv_copy_peer(q1, x1, 0, x0, 0, sizeof in));
    OK(weft__drv_copy_d2h(q1, out, x1, 0, sizeof out));
    OK(sim->graph_end(q1, NULL, &gw, NULL));
    for (uint32_t round = 1; round <= 3; round++) {
        int record_first = round != 3;
        const weft__sim_op *k, *peer;
        size_t before = record_len(&m);

        for (uint32_t i = 0; i < N; i++)
            in[i] = i + round;
        if (record_first) {
            OK(sim->graph_launch(gr, q0));
            OK(sim->graph_launch(gw, q1));
        } else {
            OK(sim->graph_launch(gw, q1));
            OK(sim->graph_launch(gr2, q0));
        }
        OK(weft__drv_queue_sync(q1));
        OK(weft__drv_queue_sync(q0));
        k = find_op(&m, before, WEFT__SIM_KERNEL, 0);
        peer = find_op(&m, before, WEFT__SIM_PEER, 1);
        if (record_first) {
            assert_true(peer->start_ns >= k->end_ns);
            for (uint32_t i = 0; i < N; i++)
                assert_int_equal(out[i], 2 * (i + round));
        } else {
            /* The launch before's record: long done, no wait for k;
             * W copies what round 2 left in x0. */
            assert_true(peer->start_ns < k->end_ns);
            for (uint32_t i = 0; i < N; i++)
                assert_int_equal(out[i], 2 * (i + 2));
        }
    }
    sim->graph_destroy(gr);
    sim->graph_destroy(gr2);
    sim->graph_destroy(gw);
    OK(weft__drv_event_destroy(e0));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_mem_free(x0));
    OK(weft__drv_mem_free(x1));
    OK(weft__drv_mem_free(x2));
    OK(weft__drv_module_destroy(mod0));
    machine_close(&m);
}

/*
 * A queue that joined and was not joined back: graph_end fails with
 * WEFT_EINVAL like CUDA's "unjoined" error, discards the capture, and
 * every queue works as usual afterwards. Waits across captures and on
 * unfinished work outside the capture fail cleanly.
 */
static void test_graph_unjoined(void **state)
{
    machine m;
    weft__queue *q0, *q1, *q2;
    weft__mem *x;
    weft__module *mod;
    weft__kernel *k;
    weft__event *ev, *other;
    uint32_t data[64], out[64];
    order_log log = {0, {0}};
    gate gt;
    void *g = NULL;
    size_t before;

    (void)state;
    for (uint32_t i = 0; i < 64; i++)
        data[i] = i;
    gate_init(&gt);
    machine_open(&m, "devices=2,graphs=1", 1);
    q0 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    q1 = queue(&m, 1, WEFT__QUEUE_COMPUTE);
    q2 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    x = devmem(&m, 0, sizeof data);
    k = kernel(&m, 0, "scale", &mod);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    OK(weft__drv_event_create(m.ctx[0], 0, &other));
    /* Unfinished work outside the capture: q2 holds at a gate. */
    OK(weft__drv_host_fn(q2, gate_wait, &gt));
    OK(weft__drv_event_record(other, q2));
    before = record_len(&m);
    OK(sim->graph_begin(q0));
    launch(q0, k, x, 2, 64);
    OK(weft__drv_event_record(ev, q0));
    OK(weft__drv_queue_wait_event(q1, ev)); /* q1 joins ... */
    OK(weft__drv_host_fn(q1, log_a, &log));
    assert_int_equal(weft__drv_queue_wait_event(q0, other), WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "boundary"));
    /* ... and nothing joins it back */
    assert_int_equal(sim->graph_end(q0, NULL, &g, NULL), WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "unjoined"));
    assert_null(g);
    assert_int_equal(record_len(&m), before);
    assert_int_equal(log.n, 0);
    assert_int_equal(sim->graph_end(q0, NULL, &g, NULL), WEFT_EINVAL);
    /* Two captures at once: a wait across them is refused. */
    OK(sim->graph_begin(q0));
    OK(weft__drv_event_record(ev, q0));
    OK(sim->graph_begin(q1));
    assert_int_equal(weft__drv_queue_wait_event(q1, ev), WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "another capture"));
    OK(sim->graph_end(q1, NULL, NULL, NULL)); /* discard: end only */
    OK(sim->graph_end(q0, NULL, NULL, NULL));
    /* The queues are usable: the work runs and is recorded. */
    OK(weft__drv_copy_h2d(q0, x, 0, data, sizeof data));
    launch(q0, k, x, 3, 64);
    OK(weft__drv_event_record(ev, q0));
    OK(weft__drv_queue_wait_event(q1, ev));
    OK(weft__drv_queue_sync(q1));
    OK(weft__drv_copy_d2h(q0, out, x, 0, sizeof out));
    OK(weft__drv_queue_sync(q0));
    for (uint32_t i = 0; i < 64; i++)
        assert_int_equal(out[i], 3 * i);
    assert_int_equal(count_ops(&m, before, WEFT__SIM_KERNEL, 0), 1);
    assert_int_equal(count_ops(&m, before, WEFT__SIM_EVENT_WAIT, 1), 1);
    gate_open(&gt);
    OK(weft__drv_queue_sync(q2));
    /* Now complete: a capture may wait for it (and records nothing). */
    OK(sim->graph_begin(q0));
    OK(weft__drv_queue_wait_event(q0, other));
    launch(q0, k, x, 1, 64);
    OK(sim->graph_end(q0, NULL, &g, NULL));
    before = record_len(&m);
    OK(sim->graph_launch(g, q2)); /* on another queue than the capture's */
    OK(weft__drv_queue_sync(q2));
    assert_int_equal(count_ops(&m, before, WEFT__SIM_KERNEL, 0), 1);
    assert_int_equal(count_ops(&m, before, WEFT__SIM_EVENT_WAIT, 0), 2);
    sim->graph_destroy(g);
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_event_destroy(other));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_queue_destroy(q2));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
    gate_destroy(&gt);
}

/*
 * graph_end with old: old takes the new capture (another scalar, another
 * buffer) and comes back with *updated = 1. A queue destroyed during a
 * capture fails it; the capture's own queue destroyed discards it.
 */
static void test_graph_update(void **state)
{
    machine m;
    weft__queue *q0, *q1;
    weft__mem *x, *y;
    weft__module *mod;
    weft__kernel *k;
    weft__event *ev;
    uint32_t data[64], out[64];
    void *g = NULL, *g2 = NULL;
    int updated = 0;

    (void)state;
    for (uint32_t i = 0; i < 64; i++)
        data[i] = i + 1;
    machine_open(&m, "devices=1,graphs=1", 1);
    q0 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    x = devmem(&m, 0, sizeof data);
    y = devmem(&m, 0, sizeof data);
    k = kernel(&m, 0, "scale", &mod);
    OK(weft__drv_event_create(m.ctx[0], 0, &ev));
    OK(weft__drv_copy_h2d(q0, x, 0, data, sizeof data));
    OK(weft__drv_copy_h2d(q0, y, 0, data, sizeof data));
    OK(weft__drv_queue_sync(q0));
    OK(sim->graph_begin(q0));
    launch(q0, k, x, 2, 64);
    OK(sim->graph_end(q0, NULL, &g, &updated));
    assert_int_equal(updated, 0);
    OK(sim->graph_begin(q0));
    launch(q0, k, y, 7, 64);
    OK(sim->graph_end(q0, g, &g2, &updated));
    assert_ptr_equal(g2, g);
    assert_int_equal(updated, 1);
    OK(sim->graph_launch(g2, q0));
    OK(weft__drv_copy_d2h(q0, out, y, 0, sizeof out));
    OK(weft__drv_queue_sync(q0));
    for (uint32_t i = 0; i < 64; i++)
        assert_int_equal(out[i], 7 * (i + 1));
    OK(weft__drv_copy_d2h(q0, out, x, 0, sizeof out));
    OK(weft__drv_queue_sync(q0));
    assert_int_equal(out[3], 4); /* x untouched: the old capture is gone */
    /* A queue that joined is destroyed: the capture fails, old is freed. */
    q1 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    OK(sim->graph_begin(q0));
    OK(weft__drv_event_record(ev, q0));
    OK(weft__drv_queue_wait_event(q1, ev));
    OK(weft__drv_queue_destroy(q1));
    g2 = NULL;
    assert_int_equal(sim->graph_end(q0, g, &g2, &updated), WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "destroyed"));
    assert_null(g2);
    /* The capture's own queue destroyed: the capture goes with it. */
    q1 = queue(&m, 0, WEFT__QUEUE_COMPUTE);
    OK(sim->graph_begin(q1));
    launch(q1, k, x, 2, 64);
    OK(weft__drv_queue_destroy(q1));
    OK(weft__drv_event_destroy(ev));
    OK(weft__drv_queue_destroy(q0));
    OK(weft__drv_mem_free(x));
    OK(weft__drv_mem_free(y));
    OK(weft__drv_module_destroy(mod));
    machine_close(&m);
}

/* ---- failure injection ------------------------------------------------------
 */

/*
 * One session of every kind of operation. Returns 0 or the first error;
 * on error everything made so far is released (so that a leak shows).
 */
static int session(const char *config, unsigned real)
{
    machine m;
    weft__queue *q = NULL;
    weft__mem *x = NULL, *y = NULL, *h = NULL;
    weft__module *mod = NULL;
    weft__kernel *k;
    weft__event *ev = NULL;
    weft__grid grid = {{2, 1, 1}, {4, 1, 1}, 0};
    uint32_t a = 2, data[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    uint64_t n = 8;
    weft__karg args[3];
    weft__module_source src = {WEFT__SRC_HOST_TABLE, kernels,
                               WEFT__COUNTOF(kernels), NULL, "test"};
    order_log log = {0, {0}};
    int rc;

    memset(args, 0, sizeof args);
    rc = machine_try_open(&m, config, real);
    if (rc < 0)
        return rc;
    if ((rc = weft__drv_queue_create(m.ctx[0], NULL, &q)) < 0 ||
        (rc = weft__drv_mem_alloc(m.ctx[0], sizeof data, &x)) < 0 ||
        (rc = weft__drv_mem_alloc(m.ctx[1], sizeof data, &y)) < 0 ||
        (rc = weft__drv_host_alloc(m.ctx[0], sizeof data, &h)) < 0 ||
        (rc = weft__drv_module_create(m.ctx[0], &src, &mod)) < 0 ||
        (rc = weft__drv_kernel_get(mod, "scale", &k)) < 0 ||
        (rc = weft__drv_event_create(m.ctx[0], 0, &ev)) < 0)
        goto out;
    args[0].type = WEFT_PARAM_BUFFER;
    args[0].u.buf.mem = x;
    args[0].u.buf.offset = 0;
    args[1].type = WEFT_PARAM_U32;
    args[1].size = 4;
    args[1].u.value = &a;
    args[2].type = WEFT_PARAM_U64;
    args[2].size = 8;
    args[2].u.value = &n;
    if ((rc = weft__drv_copy_h2d(q, x, 0, data, sizeof data)) < 0 ||
        (rc = weft__drv_launch(q, k, &grid, args, 3)) < 0 ||
        (rc = weft__drv_fill(q, x, 0, &a, 4, 4)) < 0 ||
        (rc = weft__drv_event_record(ev, q)) < 0 ||
        (rc = weft__drv_queue_wait_event(q, ev)) < 0 ||
        (rc = weft__drv_copy_peer(q, y, 0, x, 0, sizeof data)) < 0 ||
        (rc = weft__drv_host_fn(q, log_a, &log)) < 0 ||
        (rc = weft__drv_copy_d2h(q, h->host, x, 0, sizeof data)) < 0 ||
        (rc = weft__drv_queue_sync(q)) < 0)
        goto out;
    assert_int_equal(log.n, 1);
    if (real) {
        const uint32_t *res = h->host;

        assert_int_equal(res[0], 2);
        for (int i = 1; i < 8; i++)
            assert_int_equal(res[i], 2 * (i + 1));
    }
out:
    if (q)
        OK(weft__drv_queue_destroy(q)); /* waits for what was queued */
    if (ev)
        OK(weft__drv_event_destroy(ev));
    if (mod)
        OK(weft__drv_module_destroy(mod));
    if (h)
        OK(weft__drv_mem_free(h));
    if (y)
        OK(weft__drv_mem_free(y));
    if (x)
        OK(weft__drv_mem_free(x));
    machine_close(&m);
    return rc;
}

/* The arguments of scale(x, a, n) for the graph session. */
static void scale_args(weft__karg *args, weft__mem *x, const uint32_t *a,
                       const uint64_t *n)
{
    memset(args, 0, 3 * sizeof *args);
    args[0].type = WEFT_PARAM_BUFFER;
    args[0].u.buf.mem = x;
    args[1].type = WEFT_PARAM_U32;
    args[1].size = 4;
    args[1].u.value = a;
    args[2].type = WEFT_PARAM_U64;
    args[2].size = 8;
    args[2].u.value = n;
}

/*
 * A session of native graphs over two devices: a capture of every kind
 * of operation, its launch, and a second capture that updates the first
 * graph in place (another scalar). Returns 0 or the first error; on error
 * everything made so far is released.
 */
static int graph_session(const char *config, unsigned real)
{
    machine m;
    weft__queue *q0 = NULL, *q1 = NULL;
    weft__mem *x0 = NULL, *x1 = NULL, *h = NULL;
    weft__module *mod0 = NULL, *mod1 = NULL;
    weft__kernel *k0, *k1;
    weft__event *e0 = NULL, *e1 = NULL;
    weft__grid grid = {{2, 1, 1}, {4, 1, 1}, 0};
    weft__module_source src = {WEFT__SRC_HOST_TABLE, kernels,
                               WEFT__COUNTOF(kernels), NULL, "test"};
    uint32_t a, five = 5, zero = 0;
    uint64_t n = 8;
    weft__karg args0[3], args1[3];
    order_log log = {0, {0}};
    void *g = NULL, *old;
    int rc, updated;

    rc = machine_try_open(&m, config, real);
    if (rc < 0)
        return rc;
    if ((rc = weft__drv_queue_create(m.ctx[0], NULL, &q0)) < 0 ||
        (rc = weft__drv_queue_create(m.ctx[1], NULL, &q1)) < 0 ||
        (rc = weft__drv_mem_alloc(m.ctx[0], 32, &x0)) < 0 ||
        (rc = weft__drv_mem_alloc(m.ctx[1], 32, &x1)) < 0 ||
        (rc = weft__drv_host_alloc(m.ctx[0], 64, &h)) < 0 ||
        (rc = weft__drv_module_create(m.ctx[0], &src, &mod0)) < 0 ||
        (rc = weft__drv_module_create(m.ctx[1], &src, &mod1)) < 0 ||
        (rc = weft__drv_kernel_get(mod0, "scale", &k0)) < 0 ||
        (rc = weft__drv_kernel_get(mod1, "scale", &k1)) < 0 ||
        (rc = weft__drv_event_create(m.ctx[0], 0, &e0)) < 0 ||
        (rc = weft__drv_event_create(m.ctx[1], 0, &e1)) < 0)
        goto out;
    for (uint32_t i = 0; i < 8; i++)
        ((uint32_t *)h->host)[i] = i + 1;
    scale_args(args0, x0, &a, &n);
    scale_args(args1, x1, &five, &n);
    for (a = 2; a <= 3; a++) {
        if ((rc = sim->graph_begin(q0)) < 0)
            goto out;
        if ((rc = weft__drv_copy_h2d(q0, x0, 0, h->host, 32)) < 0 ||
            (rc = weft__drv_launch(q0, k0, &grid, args0, 3)) < 0 ||
            (rc = weft__drv_event_record(e0, q0)) < 0 ||
            (rc = weft__drv_queue_wait_event(q1, e0)) < 0 ||
            (rc = weft__drv_copy_peer(q1, x1, 0, x0, 0, 32)) < 0 ||
            (rc = weft__drv_launch(q1, k1, &grid, args1, 3)) < 0 ||
            (rc = weft__drv_copy_d2h(q1, (uint32_t *)h->host + 8, x1, 0, 32)) <
                0 ||
            (rc = weft__drv_host_fn(q1, log_a, &log)) < 0 ||
            (rc = weft__drv_event_record(e1, q1)) < 0 ||
            (rc = weft__drv_queue_wait_event(q0, e1)) < 0 ||
            (rc = weft__drv_fill(q0, x0, 0, &zero, 4, 32)) < 0) {
            sim->graph_end(q0, NULL, NULL, NULL); /* end it, keep old */
            goto out;
        }
        old = g;
        g = NULL; /* the driver's now: given back or freed */
        if ((rc = sim->graph_end(q0, old, &g, &updated)) < 0)
            goto out;
        assert_int_equal(updated, old != NULL);
        if ((rc = sim->graph_launch(g, q0)) < 0 ||
            (rc = weft__drv_queue_sync(q0)) < 0)
            goto out;
        assert_int_equal(log.n, (int)a - 1);
        for (uint32_t i = 0; i < 8 && real; i++)
            assert_int_equal(((uint32_t *)h->host)[8 + i], (i + 1) * a * 5);
    }
out:
    if (g)
        sim->graph_destroy(g);
    if (q0)
        OK(weft__drv_queue_destroy(q0));
    if (q1)
        OK(weft__drv_queue_destroy(q1));
    if (e0)
        OK(weft__drv_event_destroy(e0));
    if (e1)
        OK(weft__drv_event_destroy(e1));
    if (mod0)
        OK(weft__drv_module_destroy(mod0));
    if (mod1)
        OK(weft__drv_module_destroy(mod1));
    if (h)
        OK(weft__drv_mem_free(h));
    if (x1)
        OK(weft__drv_mem_free(x1));
    if (x0)
        OK(weft__drv_mem_free(x0));
    machine_close(&m);
    return rc;
}

static void inject_each_in(int (*run)(const char *, unsigned),
                           const char *config, const char *filter,
                           unsigned real)
{
    int failures = 0;

    OK(run(config, real));
    for (long n = 1;; n++) {
        int rc;

        weft__fault_arm(n, filter);
        rc = run(config, real);
        if (!weft__fault_fired()) {
            weft__fault_disarm();
            OK(rc);
            break;
        }
        weft__fault_disarm();
        assert_true(rc < 0);
        failures++;
    }
    assert_true(failures > 5);
    OK(run(config, real)); /* nothing left in a bad state */
}

static void inject_each(const char *filter, unsigned real)
{
    inject_each_in(session, "devices=2", filter, real);
    inject_each_in(graph_session, "devices=2,graphs=1", filter, real);
}

static void test_inject_sim(void **state)
{
    (void)state;
    inject_each("sim.", 0);
    inject_each("sim.", 1);
}

static void test_inject_malloc(void **state)
{
    (void)state;
    inject_each("malloc", 0);
    inject_each("malloc", 1);
}

/* ---- threads ------------------------------------------------------------- */

typedef struct submitter {
    machine *m;
    unsigned dev;
    int count;
} submitter;

static void count_up(void *user)
{
    submitter *s = user;

    s->count++; /* only the worker runs host functions, in order */
}

static void *submit_many(void *arg)
{
    submitter *s = arg;
    weft__queue *q = queue(s->m, s->dev, WEFT__QUEUE_COMPUTE);
    weft__mem *x = devmem(s->m, s->dev, 1 << 16);
    uint32_t buf[256];

    memset(buf, 0, sizeof buf);
    for (int i = 0; i < 200; i++) {
        OK(weft__drv_copy_h2d(q, x, 0, buf, sizeof buf));
        OK(weft__drv_host_fn(q, count_up, s));
        OK(weft__drv_copy_d2h(q, buf, x, 0, sizeof buf));
    }
    OK(weft__drv_queue_sync(q));
    assert_int_equal(s->count, 200);
    OK(weft__drv_queue_destroy(q));
    OK(weft__drv_mem_free(x));
    return NULL;
}

static void test_threads(void **state)
{
    machine m;
    pthread_t t[4];
    submitter s[4];
    size_t n;

    (void)state;
    machine_open(&m, "devices=4", 1);
    for (unsigned i = 0; i < 4; i++) {
        s[i].m = &m;
        s[i].dev = i;
        s[i].count = 0;
        OK(pthread_create(&t[i], NULL, submit_many, &s[i]));
    }
    for (unsigned i = 0; i < 4; i++)
        OK(pthread_join(t[i], NULL));
    record(&m, &n);
    assert_int_equal(n, 4 * 200 * 3);
    machine_close(&m);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config_defaults),
        cmocka_unit_test(test_config_keys),
        cmocka_unit_test(test_config_errors),
        cmocka_unit_test(test_one_engine_serialises),
        cmocka_unit_test(test_h2d_d2h_overlap),
        cmocka_unit_test(test_kernel_copy_overlap),
        cmocka_unit_test(test_wait_event),
        cmocka_unit_test(test_check_hazards),
        cmocka_unit_test(test_backfill),
        cmocka_unit_test(test_durations),
        cmocka_unit_test(test_peer),
        cmocka_unit_test(test_counted_memory),
        cmocka_unit_test(test_eight_devices),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_real_data),
        cmocka_unit_test(test_async_and_host_clock),
        cmocka_unit_test(test_host_clock_per_thread),
        cmocka_unit_test(test_queues_independent),
        cmocka_unit_test(test_event_destroyed_while_waited),
        cmocka_unit_test(test_many_gaps),
        cmocka_unit_test(test_modules),
        cmocka_unit_test(test_graph_supported),
        cmocka_unit_test(test_graph_two_queues),
        cmocka_unit_test(test_graph_two_devices),
        cmocka_unit_test(test_graph_external_events),
        cmocka_unit_test(test_graph_unjoined),
        cmocka_unit_test(test_graph_update),
        cmocka_unit_test(test_inject_sim),
        cmocka_unit_test(test_inject_malloc),
        cmocka_unit_test(test_threads),
    };

    return wt_run_group(argc, argv, tests, NULL, NULL);
}
