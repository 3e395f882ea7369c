/*
 * Placement policies on synthetic DAGs and synthetic machines: identical
 * GPUs with PCIe to the host (55 GB/s, 2 us) and NVLink-like peer links
 * (390 GB/s, 2 us). Each expectation is derived by hand in its comment.
 */
#include "sched/place.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>
#include "wt_test.h"

#define MAXN 272
#define MAXE 72 /* accesses, and predecessors, of a node */
#define US   1000.0
#define MS   1000000.0

typedef struct machine {
    weft__links links;
    weft__ktime *ktime;
    unsigned n;
} machine;

static void machine_open(machine *m, unsigned n, int peer)
{
    m->n = n;
    assert_int_equal(weft__links_alloc(&m->links, n), 0);
    for (unsigned d = 0; d < n; d++) {
        m->links.h2d[d] = (weft__link){55e9, 2000};
        m->links.d2h[d] = (weft__link){55e9, 2000};
        m->links.d2d[d] = (weft__link){2e12, 3000};
        m->links.source[d] = WEFT__LINK_GIVEN;
        for (unsigned e = 0; peer && e < n; e++)
            if (e != d) {
                m->links.direct[d * n + e] = 1;
                m->links.peer[d * n + e] = (weft__link){390e9, 2000};
            }
    }
    assert_int_equal(weft__links_finish(&m->links), 0);
    assert_int_equal(weft__ktime_create(n, NULL, &m->ktime), 0);
}

/* kernel takes ns on every device, at the launch size the nodes use. */
static void machine_kernel(machine *m, const char *kernel, double ns)
{
    for (unsigned d = 0; d < m->n; d++)
        for (int i = 0; i < 3; i++)
            assert_int_equal(
                weft__ktime_record(m->ktime, kernel, d, 1 << 20, (uint64_t)ns),
                0);
}

static void machine_close(machine *m)
{
    weft__ktime_destroy(m->ktime);
    weft__links_free(&m->links);
}

/* A DAG under construction: nodes with their accesses and predecessors. */
typedef struct dag {
    weft__place_node node[MAXN];
    weft__place_access acc[MAXN][MAXE];
    unsigned pred[MAXN][MAXE];
    unsigned n, nbuffers;
} dag;

static unsigned dag_kernel(dag *g, const char *kernel)
{
    unsigned i = g->n++;

    assert_true(i < MAXN);
    memset(&g->node[i], 0, sizeof g->node[i]);
    g->node[i].kind = WEFT__PNODE_KERNEL;
    g->node[i].kernel = kernel;
    g->node[i].items = 1 << 20;
    g->node[i].device = -1;
    g->node[i].access = g->acc[i];
    g->node[i].preds = g->pred[i];
    return i;
}

static void dag_access(dag *g, unsigned i, unsigned buffer, uint64_t bytes,
                       unsigned mode)
{
    weft__place_node *n = &g->node[i];

    assert_true(n->naccess < MAXE);
    g->acc[i][n->naccess++] = (weft__place_access){buffer, bytes, mode};
    if (buffer >= g->nbuffers)
        g->nbuffers = buffer + 1;
}

static void dag_edge(dag *g, unsigned from, unsigned to)
{
    assert_true(g->node[to].npreds < MAXE);
    g->pred[to][g->node[to].npreds++] = from;
}

/*
 * With lanes compute lanes per device, each holding resident[d] items, the
 * nodes issued at issue_pos (NULL: in the order they are placed).
 */
static int place_issued(machine *m, dag *g, weft__place_policy policy,
                        const int *home, unsigned lanes,
                        const uint64_t *resident, const unsigned *issue_pos,
                        int *dev, weft__place_output *out)
{
    weft__place_input in = {g->node,   g->n,     m->n,  g->nbuffers, home,
                            &m->links, m->ktime, lanes, resident,    issue_pos};

    memset(out, 0, sizeof *out);
    out->device = dev;
    return weft__place(&in, policy, out);
}

static int place_lanes(machine *m, dag *g, weft__place_policy policy,
                       const int *home, unsigned lanes,
                       const uint64_t *resident, int *dev,
                       weft__place_output *out)
{
    return place_issued(m, g, policy, home, lanes, resident, NULL, dev, out);
}

/* One kernel at a time per device (compute_lanes 0). */
static int place(machine *m, dag *g, weft__place_policy policy, const int *home,
                 int *dev, weft__place_output *out)
{
    return place_lanes(m, g, policy, home, 0, NULL, dev, out);
}

static void test_round_robin(void **state)
{
    const unsigned char only1[2] = {0, 1};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 2, 1);
    /* Six independent kernels alternate 0, 1, 0, 1, 0, 1. */
    for (int i = 0; i < 6; i++)
        dag_kernel(&g, "k");
    assert_int_equal(place(&m, &g, WEFT__PLACE_ROUND_ROBIN, NULL, dev, &out),
                     0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(dev[i], i % 2);
    /*
     * a -> 0, b -> 1; c runs only on 1 so the turn (0) is skipped and c
     * goes to 1; the turn after c is 0, so d -> 0.
     */
    g.n = 0;
    dag_kernel(&g, "a");
    dag_kernel(&g, "b");
    g.node[dag_kernel(&g, "c")].capable = only1;
    dag_kernel(&g, "d");
    assert_int_equal(place(&m, &g, WEFT__PLACE_ROUND_ROBIN, NULL, dev, &out),
                     0);
    assert_int_equal(dev[0], 0);
    assert_int_equal(dev[1], 1);
    assert_int_equal(dev[2], 1);
    assert_int_equal(dev[3], 0);
    machine_close(&m);
}

static void make_chain(dag *g, unsigned len, uint64_t bytes)
{
    g->n = 0;
    g->nbuffers = 0;
    for (unsigned i = 0; i < len; i++) {
        dag_kernel(g, "k");
        dag_access(g, i, 0, bytes, WEFT__ACC_RW);
        if (i)
            dag_edge(g, i - 1, i);
    }
}

static void test_locality_chain(void **state)
{
    const int home1[1] = {1};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 2, 1);
    machine_kernel(&m, "k", 100 * US);
    /*
     * Five read-write kernels on one 1 MiB buffer, valid on the host: the
     * first needs 1 MiB anywhere (a tie, broken to device 0, both free);
     * then device 0 holds the only valid copy and needs 0 bytes, device 1
     * 1 MiB: all on 0, and only the first copy moves.
     */
    make_chain(&g, 5, 1 << 20);
    assert_int_equal(place(&m, &g, WEFT__PLACE_LOCALITY, NULL, dev, &out), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(dev[i], 0);
    assert_int_equal(out.bytes_moved, 1 << 20);
    /* With the buffer already on device 1, all go there and nothing moves. */
    assert_int_equal(place(&m, &g, WEFT__PLACE_LOCALITY, home1, dev, &out), 0);
    for (int i = 0; i < 5; i++)
        assert_int_equal(dev[i], 1);
    assert_int_equal(out.bytes_moved, 0);
    machine_close(&m);
}

static void test_heft_spread(void **state)
{
    unsigned per[8] = {0};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 8, 1);
    machine_kernel(&m, "k", 1 * MS);
    /*
     * 16 independent 1 ms kernels, each reading its own 4 KiB from the
     * host (2000 + 4096 / 55e9 s = 2074.5 ns). Equal ranks, so index
     * order: kernel i of the first 8 finds devices 0..i-1 busy until
     * 1 ms + 2074.5 ns and device i free, and takes it; kernels 8..15 find
     * all 8 free at the same time and take them in turn. Two per device,
     * makespan 2 ms + 2074.5 ns.
     */
    for (unsigned i = 0; i < 16; i++)
        dag_access(&g, dag_kernel(&g, "k"), i, 4096, WEFT__ACC_READ);
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out), 0);
    for (unsigned i = 0; i < 16; i++) {
        assert_true(dev[i] >= 0 && dev[i] < 8);
        per[dev[i]]++;
    }
    for (unsigned d = 0; d < 8; d++)
        assert_int_equal(per[d], 2);
    assert_true(fabs(out.makespan_ns - (2 * MS + 2074.47)) < 1);
    assert_int_equal(out.bytes_moved, 16 * 4096);
    /* Round-robin does the same here, and its estimate agrees. */
    assert_int_equal(place(&m, &g, WEFT__PLACE_ROUND_ROBIN, NULL, dev, &out),
                     0);
    assert_true(fabs(out.makespan_ns - (2 * MS + 2074.47)) < 1);
    machine_close(&m);
}

/*
 * Two GPUs whose host links were measured a little apart (55 and 50
 * GB/s), 32 independent tiles reading 16 MiB each from the host, with a
 * kernel (0.16 ms) shorter than its copy (0.31 / 0.34 ms): the copies run
 * concurrently in the model, so after the first tiles each device's next
 * finish is its kernel queue, and the tiles alternate: 16 and 16, give or
 * take the one or two that the faster link's head start buys.
 */
static void test_heft_near_links(void **state)
{
    unsigned per[2] = {0};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 2, 1);
    m.links.h2d[1] = (weft__link){50e9, 2000};
    assert_int_equal(weft__links_finish(&m.links), 0);
    machine_kernel(&m, "k", 0.16 * MS);
    for (unsigned i = 0; i < 32; i++)
        dag_access(&g, dag_kernel(&g, "k"), i, 16u << 20, WEFT__ACC_READ);
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out), 0);
    for (unsigned i = 0; i < 32; i++)
        per[dev[i]]++;
    print_message("near links: %u / %u\n", per[0], per[1]);
    assert_true(per[0] >= 14 && per[0] <= 18);
    machine_close(&m);
}

static void test_heft_chain(void **state)
{
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 8, 1);
    machine_kernel(&m, "k", 100 * US);
    /*
     * Six 100 us kernels in a chain on one 64 MiB buffer. The first goes
     * to device 0 (all equal). Each next one can start on device 0 when
     * its predecessor ends; elsewhere it would first wait for a peer copy
     * of 2000 + 64 MiB / 390e9 s = 174 us. So all on 0, only the first
     * host copy moves (2000 + 64 MiB / 55e9 s = 1222161 ns), and the
     * makespan is that copy plus 6 * 100 us.
     */
    make_chain(&g, 6, 64 << 20);
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out), 0);
    for (int i = 0; i < 6; i++)
        assert_int_equal(dev[i], 0);
    assert_int_equal(out.bytes_moved, 64 << 20);
    assert_true(fabs(out.makespan_ns - (1222161.16 + 600 * US)) < 1);
    machine_close(&m);
}

/*
 * source -> 8 workers -> join: the source writes x_i (bytes each), worker i
 * reads x_i and writes y_i (bytes), the join reads every y_i.
 */
static void make_fork_join(dag *g, uint64_t bytes)
{
    unsigned s, j, w[8];

    g->n = 0;
    g->nbuffers = 0;
    s = dag_kernel(g, "source");
    for (unsigned i = 0; i < 8; i++)
        dag_access(g, s, i, bytes, WEFT__ACC_WRITE);
    for (unsigned i = 0; i < 8; i++) {
        w[i] = dag_kernel(g, "work");
        dag_access(g, w[i], i, bytes, WEFT__ACC_READ);
        dag_access(g, w[i], 8 + i, bytes, WEFT__ACC_WRITE);
        dag_edge(g, s, w[i]);
    }
    j = dag_kernel(g, "join");
    for (unsigned i = 0; i < 8; i++) {
        dag_access(g, j, 8 + i, bytes, WEFT__ACC_READ);
        dag_edge(g, w[i], j);
    }
}

static void test_heft_fork_join_long_kernels(void **state)
{
    unsigned char used[8] = {0};
    weft__place_output out;
    unsigned distinct = 0;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 8, 1);
    machine_kernel(&m, "source", 10 * US);
    machine_kernel(&m, "work", 10 * MS);
    machine_kernel(&m, "join", 10 * US);
    /*
     * Workers of 10 ms, 4 KiB of data. The source runs on device 0 and
     * ends at 10 us. Worker 0 starts there at once; worker i (i > 0)
     * would wait for i * 10 ms on device 0 but only for one peer copy of
     * 4 KiB (2010.5 ns) on a free device, so the workers take the 8
     * devices. The join waits for the last worker (10 us + 2010.5 ns +
     * 10 ms) and for 7 peer copies of y (7 * 2010.5 ns), then runs 10 us:
     * about 10.036 ms, against 80 ms on one device.
     */
    make_fork_join(&g, 4096);
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out), 0);
    assert_int_equal(dev[0], 0);
    for (unsigned i = 1; i <= 8; i++)
        if (!used[dev[i]]++)
            distinct++;
    assert_int_equal(distinct, 8);
    assert_true(out.makespan_ns > 10 * MS + 20 * US);
    assert_true(out.makespan_ns < 10 * MS + 40 * US);
    machine_close(&m);
}

static void test_heft_fork_join_huge_data(void **state)
{
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 8, 1);
    machine_kernel(&m, "source", 10 * US);
    machine_kernel(&m, "work", 10 * US);
    machine_kernel(&m, "join", 10 * US);
    /*
     * The same shape with 10 us kernels and 1 GiB per buffer: moving one
     * x_i to another device takes 2000 + 2^30 / 390e9 s = 2.75 ms, while
     * the 8 workers one after the other on device 0 take 80 us. So every
     * node stays on device 0, no byte moves (the source only writes), and
     * the makespan is 10 kernels of 10 us.
     */
    make_fork_join(&g, (uint64_t)1 << 30);
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out), 0);
    for (unsigned i = 0; i < g.n; i++)
        assert_int_equal(dev[i], 0);
    assert_int_equal(out.bytes_moved, 0);
    assert_true(fabs(out.makespan_ns - 100 * US) < 1e-6);
    machine_close(&m);
}

/*
 * bench/multigpu's shape on two GPUs: per tile t a long kernel "work" (a
 * launch of 2^20 items) reading its 16 MiB input from the host and writing
 * 16 MiB of output, then a "tilesum" of one group (256 items) reading that
 * output and writing a 4 KiB block; a last tilesum reads every block.
 * Node indices: work t = 2t, sum t = 2t + 1, the reduce 2 tiles. Buffers:
 * input t = t, output t = tiles + t, block t = 2 tiles + t.
 */
static void make_tiles(dag *g, unsigned tiles)
{
    const uint64_t tile = 16u << 20, block = 4096;
    unsigned r;

    g->n = 0;
    g->nbuffers = 0;
    for (unsigned t = 0; t < tiles; t++) {
        unsigned w = dag_kernel(g, "work"), s = dag_kernel(g, "tilesum");

        g->node[s].items = 256;
        dag_access(g, w, t, tile, WEFT__ACC_READ);
        dag_access(g, w, tiles + t, tile, WEFT__ACC_WRITE);
        dag_access(g, s, tiles + t, tile, WEFT__ACC_READ);
        dag_access(g, s, 2 * tiles + t, block, WEFT__ACC_WRITE);
        dag_edge(g, w, s);
    }
    r = dag_kernel(g, "tilesum");
    g->node[r].items = 256;
    for (unsigned t = 0; t < tiles; t++) {
        dag_access(g, r, 2 * tiles + t, block, WEFT__ACC_READ);
        dag_edge(g, 2 * t + 1, r);
    }
}

static void test_heft_tile_sums_stay(void **state)
{
    /* An H200's 132 SMs of 2048 threads: "work" fills it, a sum does not. */
    const uint64_t tile = 16u << 20, block = 4096,
                   resident[2] = {270336, 270336};
    weft__place_output serial, lanes;
    unsigned moved_before = 0;
    int dev[MAXN];
    dag g = {0};

    (void)state;
    /*
     * Learned times as on two real GPUs, one a little faster than the
     * other: the tile kernel 2.05 and 2.06 ms, a sum 0.17 ms (longer than
     * the 45 us that moving a tile to the other GPU takes), the host link
     * of device 1 at 50 GB/s (device 0 55 GB/s). Serial devices run every
     * sum after every tile of the device, where the other device is as
     * good once the tile has moved: the sums alternate between the GPUs,
     * and with 16 tiles split 8 / 8 and device 1 the faster, 6 of them
     * went to the GPU that did not compute the tile. With two lanes each
     * sum starts on its tile's GPU when the tile is done, beside the next
     * tile, 45 us before it could on the other; the tiles, which fill a
     * GPU, still run one after another. Every variant: 15 to 17 tiles,
     * either GPU the faster.
     */
    for (unsigned tiles = 15; tiles <= 17; tiles++)
        for (unsigned fast = 0; fast < 2; fast++) {
            unsigned away = 0, per[2] = {0};
            machine m;

            machine_open(&m, 2, 1);
            m.links.h2d[1] = (weft__link){50e9, 2000};
            assert_int_equal(weft__links_finish(&m.links), 0);
            for (int i = 0; i < 3; i++)
                for (unsigned d = 0; d < 2; d++) {
                    assert_int_equal(
                        weft__ktime_record(m.ktime, "work", d, 1 << 20,
                                           d == fast ? 2050000 : 2060000),
                        0);
                    assert_int_equal(
                        weft__ktime_record(m.ktime, "tilesum", d, 256, 170000),
                        0);
                }
            make_tiles(&g, tiles);
            assert_int_equal(
                place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &serial), 0);
            for (unsigned t = 0; t < tiles; t++)
                moved_before += dev[2 * t + 1] != dev[2 * t];
            assert_int_equal(place_lanes(&m, &g, WEFT__PLACE_HEFT, NULL, 2,
                                         resident, dev, &lanes),
                             0);
            for (unsigned t = 0; t < tiles; t++) {
                away += dev[2 * t + 1] != dev[2 * t];
                per[dev[2 * t]]++;
            }
            print_message("%u tiles, device %u faster: one lane %.3f ms, "
                          "%llu bytes; two lanes %u / %u tiles, %u sums "
                          "away, %.3f ms, %llu bytes\n",
                          tiles, fast, serial.makespan_ns / MS,
                          (unsigned long long)serial.bytes_moved, per[0],
                          per[1], away, lanes.makespan_ns / MS,
                          (unsigned long long)lanes.bytes_moved);
            assert_int_equal(away, 0);
            assert_true(per[0] + 1 >= per[1] && per[1] + 1 >= per[0]);
            /* The inputs once, and the blocks away from the reduce. */
            assert_int_equal(lanes.bytes_moved,
                             tiles * tile + per[1 - dev[2 * tiles]] * block);
            assert_true(lanes.makespan_ns <= serial.makespan_ns);
            /* The tiles, one at a time per device, bound it from below. */
            assert_true(lanes.makespan_ns >=
                        WEFT__MAX(per[0], per[1]) * 2.05 * MS + 0.17 * MS);
            machine_close(&m);
        }
    /* The serial model did move tiles: the case is not vacuous. */
    assert_true(moved_before > 0);
}

/*
 * One device, two lanes, two independent kernels of 1 ms: two that leave
 * room (fewer items than the device holds) run at once, 1 ms in all; two
 * that fill the device run one after the other, 2 ms, as with one lane.
 */
static void test_lanes_overlap(void **state)
{
    const uint64_t small[1] = {(uint64_t)1 << 21}, full[1] = {1 << 20};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 1, 0);
    machine_kernel(&m, "k", 1 * MS);
    dag_kernel(&g, "k");
    dag_kernel(&g, "k");
    for (int p = WEFT__PLACE_EXPLICIT; p <= WEFT__PLACE_HEFT; p++) {
        assert_int_equal(place_lanes(&m, &g, (weft__place_policy)p, NULL, 2,
                                     small, dev, &out),
                         0);
        assert_int_equal(dev[0], 0);
        assert_int_equal(dev[1], 0);
        assert_true(fabs(out.makespan_ns - 1 * MS) < 1);
        assert_int_equal(place_lanes(&m, &g, (weft__place_policy)p, NULL, 2,
                                     full, dev, &out),
                         0);
        assert_true(fabs(out.makespan_ns - 2 * MS) < 1);
        assert_int_equal(place(&m, &g, (weft__place_policy)p, NULL, dev, &out),
                         0);
        assert_true(fabs(out.makespan_ns - 2 * MS) < 1);
    }
    machine_close(&m);
}

/*
 * bench/multigpu's graph, as placing.c describes it: per tile t, in
 * insertion order, a host write of its 16 MiB input (node 4t), the tile
 * kernel "work" (4t + 1, 2^20 items) writing its 16 MiB output, a
 * "tilesum" (4t + 2, 256 items) reading that output into a 4 KiB block,
 * and a host read of the output (4t + 3); then a tilesum of every block
 * (4 tiles) and a host read of its total (4 tiles + 1). Buffers: input t
 * = t, output t = tiles + t, block t = 2 tiles + t, the total 3 tiles.
 */
static void make_multigpu(dag *g, unsigned tiles)
{
    const uint64_t tile = 16u << 20, block = 4096;
    unsigned r, h;

    g->n = 0;
    g->nbuffers = 0;
    for (unsigned t = 0; t < tiles; t++) {
        unsigned w = dag_kernel(g, NULL), k = dag_kernel(g, "work"),
                 s = dag_kernel(g, "tilesum"), x = dag_kernel(g, NULL);

        g->node[w].kind = g->node[x].kind = WEFT__PNODE_HOST;
        g->node[s].items = 256;
        dag_access(g, w, t, tile, WEFT__ACC_WRITE);
        dag_access(g, k, tiles + t, tile, WEFT__ACC_WRITE);
        dag_access(g, k, t, tile, WEFT__ACC_READ);
        dag_access(g, s, 2 * tiles + t, block, WEFT__ACC_WRITE);
        dag_access(g, s, tiles + t, tile, WEFT__ACC_READ);
        dag_access(g, x, tiles + t, tile, WEFT__ACC_READ);
        dag_edge(g, w, k);
        dag_edge(g, k, s);
        dag_edge(g, k, x);
    }
    r = dag_kernel(g, "tilesum");
    g->node[r].items = 256;
    dag_access(g, r, 3 * tiles, block, WEFT__ACC_WRITE);
    for (unsigned t = 0; t < tiles; t++) {
        dag_access(g, r, 2 * tiles + t, block, WEFT__ACC_READ);
        dag_edge(g, 4 * t + 2, r);
    }
    h = dag_kernel(g, NULL);
    g->node[h].kind = WEFT__PNODE_HOST;
    dag_access(g, h, 3 * tiles, block, WEFT__ACC_READ);
    dag_edge(g, r, h);
}

/*
 * Issue positions of make_multigpu's nodes: insertion order, or (latest)
 * the order WEFT_EXEC_ORDER=latest gives: the last tile first, its write,
 * kernel, read, then sum.
 */
static void multigpu_order(unsigned *pos, unsigned tiles, int latest)
{
    unsigned k = 0;

    for (unsigned i = 0; i < 4 * tiles + 2; i++)
        pos[i] = i;
    for (unsigned t = tiles; latest && t-- > 0;) {
        pos[4 * t] = k++;
        pos[4 * t + 1] = k++;
        pos[4 * t + 3] = k++;
        pos[4 * t + 2] = k++;
    }
}

/*
 * Two H200s as the executor learns them (the tile kernel 2.05 ms, a sum
 * 0.17 ms, 394 GB/s between the GPUs, 55 GB/s to the host); "work" fills
 * a GPU (132 SMs of 2048 threads), a sum does not.
 */
static const uint64_t h200_resident[2] = {270336, 270336};

static void machine_multigpu(machine *m)
{
    machine_open(m, 2, 1);
    for (unsigned d = 0; d < 2; d++)
        for (unsigned e = 0; e < 2; e++)
            if (d != e)
                m->links.peer[d * 2 + e] = (weft__link){394e9, 2000};
    assert_int_equal(weft__links_finish(&m->links), 0);
    for (int i = 0; i < 3; i++)
        for (unsigned d = 0; d < 2; d++) {
            assert_int_equal(
                weft__ktime_record(m->ktime, "work", d, 1 << 20, 2050000), 0);
            assert_int_equal(
                weft__ktime_record(m->ktime, "tilesum", d, 256, 170000), 0);
        }
}

/*
 * The executor issues each tile's sum right after its kernel; its lane
 * (the tile's, by the lane rule) runs the sum as soon as the tile is
 * done, 45 us (16 MiB at 394 GB/s) before the other GPU could: every sum
 * stays, with one lane per GPU as with two; so too in the order that
 * WEFT_EXEC_ORDER=latest gives, where HEFT must not book a tile before
 * the tiles it is issued after (it would look free on either GPU). HEFT places
 * every tile before every sum (their rank is higher); the model booking lanes
 * in placement order made each sum of a one-lane GPU wait for all of its GPU's
 * tiles, and sent sums to whichever GPU ended first (57 of 63 on the sim).
 * Moved: every input in, every output out, the total out and the blocks
 * of the GPU that does not add them up.
 */
static void test_heft_issue_order_sums_stay(void **state)
{
    const uint64_t tile = 16u << 20, block = 4096;
    const unsigned counts[] = {15, 16, 17, 63, 64};
    unsigned pos[MAXN], moved_before = 0;
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_multigpu(&m);
    for (unsigned c = 0; c < WEFT__COUNTOF(counts); c++) {
        unsigned tiles = counts[c];

        make_multigpu(&g, tiles);
        for (unsigned order = 0; order < 2; order++)
            for (unsigned lanes = 1; lanes <= 2; lanes++) {
                unsigned away = 0, per[2] = {0}, reduce;

                multigpu_order(pos, tiles, order);
                assert_int_equal(place_issued(&m, &g, WEFT__PLACE_HEFT, NULL,
                                              lanes, h200_resident, pos, dev,
                                              &out),
                                 0);
                reduce = (unsigned)dev[4 * tiles];
                for (unsigned t = 0; t < tiles; t++) {
                    away += dev[4 * t + 2] != dev[4 * t + 1];
                    per[dev[4 * t + 1]]++;
                }
                print_message("%u tiles, %s order, %u lanes: %u / %u tiles, "
                              "%u sums away, %.3f ms, %llu bytes\n",
                              tiles, order ? "latest" : "insertion", lanes,
                              per[0], per[1], away, out.makespan_ns / MS,
                              (unsigned long long)out.bytes_moved);
                assert_int_equal(away, 0);
                assert_true(per[0] + 1 >= per[1] && per[1] + 1 >= per[0]);
                assert_int_equal(out.bytes_moved, 2 * tiles * tile +
                                                      per[1 - reduce] * block +
                                                      block);
                /*
                 * The tiles of a GPU run one after another; with one lane
                 * its sums too.
                 */
                for (unsigned d = 0; d < 2; d++)
                    assert_true(out.makespan_ns >=
                                per[d] * (2.05 + (lanes == 1 ? 0.17 : 0)) * MS);
                /* Booked in placement order, sums did move: not vacuous. */
                assert_int_equal(place_issued(&m, &g, WEFT__PLACE_HEFT, NULL,
                                              lanes, h200_resident, NULL, dev,
                                              &out),
                                 0);
                for (unsigned t = 0; t < tiles; t++)
                    moved_before += dev[4 * t + 2] != dev[4 * t + 1];
            }
    }
    assert_true(moved_before > 0);
    machine_close(&m);
}

/*
 * The same graph issued in another topological order: every write, then
 * every tile kernel, every sum, every read. Now a GPU's sums do wait for
 * its tiles: the executor would run them so, and the model says it. With
 * two lanes per GPU, issued tile by tile each sum ran beside the next
 * tile and only the last one added to the tiles' time. Issued after every
 * tile, a sum's tile is no longer the last kernel of its lane, so the sums
 * take the lanes in turn, after the tiles' 32 turns: 16 in a row on each
 * lane, from the lane of the last tile on, 15 sums (2.55 ms) longer, less
 * a block copy's 2 us that the reduce saves or not.
 */
static void test_heft_issue_order_tiles_first(void **state)
{
    unsigned pos[MAXN], tiles = 64, k = 0;
    weft__place_output tile_by_tile, tiles_first;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_multigpu(&m);
    make_multigpu(&g, tiles);
    multigpu_order(pos, tiles, 0);
    assert_int_equal(place_issued(&m, &g, WEFT__PLACE_HEFT, NULL, 2,
                                  h200_resident, pos, dev, &tile_by_tile),
                     0);
    for (unsigned step = 0; step < 4; step++)
        for (unsigned t = 0; t < tiles; t++)
            pos[4 * t + step] = k++;
    pos[4 * tiles] = k++;
    pos[4 * tiles + 1] = k++;
    assert_int_equal(place_issued(&m, &g, WEFT__PLACE_HEFT, NULL, 2,
                                  h200_resident, pos, dev, &tiles_first),
                     0);
    print_message("64 tiles, 2 lanes: tile by tile %.3f ms, tiles first "
                  "%.3f ms\n",
                  tile_by_tile.makespan_ns / MS, tiles_first.makespan_ns / MS);
    assert_true(tiles_first.makespan_ns >=
                tile_by_tile.makespan_ns + 15 * 0.17 * MS - 10 * US);
    machine_close(&m);
}

/*
 * Kernels a (2 ms) and b (1 ms) on device 0, c (1.5 ms, after a) on
 * device 1; the executor issues b, then a, then c. HEFT places a, c (the
 * higher ranks), then b; b, issued first, goes before a on the lane and
 * a moves back to [1, 3] ms, c, placed at [2, 3.5] ms, with it: 4.5 ms,
 * under every policy, with one lane or with two (kernels that fill the
 * device run one after another in issue order). Placed in the order they
 * are placed, b would run after a: 3.5 ms.
 */
static void test_issue_order_moves_back(void **state)
{
    const unsigned pos[3] = {1, 0, 2};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 2, 1);
    machine_kernel(&m, "a", 2 * MS);
    machine_kernel(&m, "b", 1 * MS);
    machine_kernel(&m, "c", 1.5 * MS);
    g.node[dag_kernel(&g, "a")].device = 0;
    g.node[dag_kernel(&g, "b")].device = 0;
    g.node[dag_kernel(&g, "c")].device = 1;
    dag_edge(&g, 0, 2);
    for (int p = WEFT__PLACE_EXPLICIT; p <= WEFT__PLACE_HEFT; p++)
        for (unsigned lanes = 1; lanes <= 2; lanes++) {
            assert_int_equal(place_issued(&m, &g, (weft__place_policy)p, NULL,
                                          lanes, NULL, pos, dev, &out),
                             0);
            assert_true(fabs(out.makespan_ns - 4.5 * MS) < 1);
        }
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out), 0);
    assert_true(fabs(out.makespan_ns - 3.5 * MS) < 1);
    machine_close(&m);
}

static void test_capability(void **state)
{
    const unsigned char only1[2] = {0, 1};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 2, 0);
    machine_kernel(&m, "k", 10 * US);
    /*
     * A kernel implemented only on device 1 goes there under every policy,
     * even with its data on device 0 (locality) and device 1 slower
     * (HEFT: device 0 is not a choice at all).
     */
    for (unsigned d = 0; d < 2; d++)
        assert_int_equal(
            weft__ktime_record(m.ktime, "only1", d, 1 << 20, d ? 1000000 : 10),
            0);
    g.node[dag_kernel(&g, "only1")].capable = only1;
    dag_access(&g, 0, 0, 1 << 20, WEFT__ACC_READ);
    for (int p = WEFT__PLACE_EXPLICIT; p <= WEFT__PLACE_HEFT; p++) {
        const int home0[1] = {0};

        assert_int_equal(place(&m, &g, (weft__place_policy)p, home0, dev, &out),
                         0);
        assert_int_equal(dev[0], 1);
    }
    /* The user's device stands under every policy. */
    g.node[0].capable = NULL;
    g.node[0].device = 1;
    for (int p = WEFT__PLACE_EXPLICIT; p <= WEFT__PLACE_HEFT; p++) {
        assert_int_equal(place(&m, &g, (weft__place_policy)p, NULL, dev, &out),
                         0);
        assert_int_equal(dev[0], 1);
    }
    /* Asking for a device without an implementation is refused. */
    g.node[0].capable = only1;
    g.node[0].device = 0;
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out),
                     WEFT_EINVAL);
    machine_close(&m);
}

static void test_bad_input(void **state)
{
    const unsigned char none[2] = {0, 0};
    weft__place_output out;
    int dev[MAXN];
    machine m;
    dag g = {0};

    (void)state;
    machine_open(&m, 2, 1);
    /* A cycle: 0 -> 1 -> 0. */
    dag_kernel(&g, "a");
    dag_kernel(&g, "b");
    dag_edge(&g, 0, 1);
    dag_edge(&g, 1, 0);
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out),
                     WEFT_EINVAL);
    /* No device can run it. */
    g = (dag){0};
    g.node[dag_kernel(&g, "a")].capable = none;
    assert_int_equal(place(&m, &g, WEFT__PLACE_LOCALITY, NULL, dev, &out),
                     WEFT_EINVAL);
    /* Host and empty nodes get no device and take data to the host. */
    g = (dag){0};
    dag_access(&g, dag_kernel(&g, "k"), 0, 1000, WEFT__ACC_WRITE);
    g.node[dag_kernel(&g, "host")].kind = WEFT__PNODE_HOST;
    dag_access(&g, 1, 0, 1000, WEFT__ACC_READ);
    dag_edge(&g, 0, 1);
    g.node[dag_kernel(&g, "join")].kind = WEFT__PNODE_EMPTY;
    dag_edge(&g, 1, 2);
    assert_int_equal(place(&m, &g, WEFT__PLACE_HEFT, NULL, dev, &out), 0);
    assert_int_equal(dev[0], 0);
    assert_int_equal(dev[1], -1);
    assert_int_equal(dev[2], -1);
    /* The kernel writes 1000 bytes on device 0; the host node reads them. */
    assert_int_equal(out.bytes_moved, 1000);
    machine_close(&m);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_robin),
        cmocka_unit_test(test_locality_chain),
        cmocka_unit_test(test_heft_spread),
        cmocka_unit_test(test_heft_near_links),
        cmocka_unit_test(test_heft_chain),
        cmocka_unit_test(test_heft_fork_join_long_kernels),
        cmocka_unit_test(test_heft_fork_join_huge_data),
        cmocka_unit_test(test_heft_tile_sums_stay),
        cmocka_unit_test(test_heft_issue_order_sums_stay),
        cmocka_unit_test(test_heft_issue_order_tiles_first),
        cmocka_unit_test(test_issue_order_moves_back),
        cmocka_unit_test(test_lanes_overlap),
        cmocka_unit_test(test_capability),
        cmocka_unit_test(test_bad_input),
    };

    return wt_run_group(argc, argv, tests, NULL, NULL);
}
