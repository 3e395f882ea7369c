/*
 * test_mpi's device modes (test_mpi.c lists every mode):
 *
 *   ipc     a tile and a range read on another rank, four launches, right
 *           every launch; where the ranks have one CUDA device each, their
 *           transfer ends move device to device from the second launch:
 *           by CUDA IPC (WEFT_MPI_IPC on), else through MPI where both
 *           ranks' MPI is CUDA-aware; elsewhere the same graph through
 *           host memory. With tests/mpi/cuda_aware_shim.c loaded, the
 *           messages it saw on device memory are exactly those.
 *   aware   the CUDA-aware flags that weft_mpi_create exchanges:
 *           WEFT_MPI_CUDA_AWARE set differently on each rank, then auto
 *           (what MPI says); then the ipc mode on the program's mpi
 */
#include "test_mpi.h"

#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#if defined(__has_include)
#if __has_include(<mpi-ext.h>)
#include <mpi-ext.h>
#endif
#endif

/* ---- device to device between ranks ------------------------------------- */

enum { IN = 256, IT = 64 }; /* a matrix of IN x IN uint32, tiles IT x IT */

/* Tile (0, 0) += 1 (a block: rows IN elements apart). */
static void i_add(void *const *ptrs, void *user)
{
    uint32_t *t = ptrs[0];

    (void)user;
    for (unsigned r = 0; r < IT; r++)
        for (unsigned c = 0; c < IT; c++)
            t[r * IN + c]++;
}

/* After launch l, tile (0, 0) holds r * IN + c + l. */
static void i_check(void *const *ptrs, void *user)
{
    const uint32_t *t = ptrs[0];
    dcheck *ck = user;

    ck->launch++;
    for (unsigned r = 0; r < IT; r++)
        for (unsigned c = 0; c < IT; c++)
            if (t[r * IN + c] != r * IN + c + ck->launch)
                ck->bad++;
}

/* Y after launch l: k + 1001 l (Y += 1 and Y += 1000 on rank 0). */
static void i_check_range(void *const *ptrs, void *user)
{
    const uint32_t *y = ptrs[0];
    dcheck *ck = user;

    ck->launch++;
    for (unsigned k = 0; k < DN; k++)
        if (y[k] != k + 1001u * (ck->launch - 1) + 1)
            ck->bad++;
}

/* 1 if rt has one CUDA device (weft_mpi's condition for IPC). */
static int has_cuda(weft_runtime *rt)
{
    unsigned n = 0;

    for (unsigned i = 0; i < weft_runtime_device_count(rt); i++) {
        weft_device_info info = {.size = sizeof info};

        if (weft_device_get_info(weft_runtime_device(rt, i), &info) == 0 &&
            strcmp(info.driver, "cuda") == 0)
            n++;
    }
    return n == 1;
}

/*
 * The shim's count of messages started on device memory on this rank
 * (cuda_aware_shim.c), or -1 where the shim is not loaded.
 */
static long shim_messages(void)
{
    long (*count)(void);

    *(void **)&count = dlsym(RTLD_DEFAULT, "weft_shim_device_messages");
    return count ? count() : -1;
}

/*
 * Ranks of one machine with a CUDA device each (WEFT_DEVICES=cuda): rank 0
 * adds 1 to tile (0, 0) of A (a block) and to Y (a range, then 1000 more
 * after the send), the last rank checks both, four launches. Both
 * transfers move through staging at the first launch and device to device
 * from the second (from the first launch's wait on): by IPC
 * (weft_mpi_exec_ipc_transfers), or with WEFT_MPI_IPC=0 through MPI where
 * both ranks' MPI is CUDA-aware (weft_mpi_exec_aware_transfers); without
 * one CUDA device a rank, neither.
 */
void dev_test(weft_runtime *rt, weft_mpi *mpi)
{
    static uint32_t a0[IN * IN], y0[DN];
    const uint32_t one = 1, many = 1000;
    const char *env = getenv("WEFT_MPI_IPC");
    int last = nranks - 1,
        off = env && (!strcmp(env, "0") || !strcasecmp(env, "off"));
    weft_buffer *a, *y;
    weft_mpi_graph *g;
    weft_mpi_exec *e;
    weft_access_desc acc;
    dcheck ca = {0, 0, 0}, cy = {0, 0, 0};
    int pair = has_cuda(rt) && nranks > 1 && (me == 0 || me == last);
    int aware =
        weft_mpi_cuda_aware(mpi, 0) == 1 && weft_mpi_cuda_aware(mpi, last) == 1;
    unsigned want_ipc = pair && !off ? 2u : 0u;
    unsigned want_aware = pair && off && aware ? 2u : 0u;
    long shim0 = shim_messages();

    for (unsigned k = 0; k < IN * IN; k++)
        a0[k] = k;
    for (unsigned k = 0; k < DN; k++)
        y0[k] = k;
    OK(weft_buffer_create(rt, sizeof a0, &a));
    OK(weft_buffer_create(rt, sizeof y0, &y));
    OK(weft_buffer_write(a, 0, a0, sizeof a0));
    OK(weft_buffer_write(y, 0, y0, sizeof y0));
    OK(weft_mpi_buffer_register(mpi, a, 0));
    OK(weft_mpi_buffer_register(mpi, y, 0));
    OK(weft_mpi_graph_create(mpi, &g));
    acc = weft_access_block(a, weft_block2(0, IT * 4, IT, IN * 4),
                            WEFT_READ_WRITE);
    OK(weft_mpi_graph_add_host(g, i_add, NULL, &acc, 1, 0, NULL));
    acc.mode = WEFT_READ;
    OK(weft_mpi_graph_add_host(g, i_check, &ca, &acc, 1, last, NULL));
    acc = weft_access_range(y, 0, WEFT_WHOLE, WEFT_READ_WRITE);
    /* a named constant: the task reads it at every launch (a compound
     * literal inside OK() would end with the macro's block) */
    OK(weft_mpi_graph_add_host(g, d_add, (void *)&one, &acc, 1, 0, NULL));
    acc.mode = WEFT_READ;
    OK(weft_mpi_graph_add_host(g, i_check_range, &cy, &acc, 1, last, NULL));
    /* (where Y moves through MPI from device memory, this write waits for
     * the send to complete) */
    acc.mode = WEFT_READ_WRITE;
    OK(weft_mpi_graph_add_host(g, d_add, (void *)&many, &acc, 1, 0, NULL));
    OK(weft_mpi_graph_instantiate(g, NULL, &e));
    for (int l = 0; l < 4; l++) {
        OK(weft_mpi_exec_launch(e));
        OK(weft_mpi_exec_wait(e));
        /* from the first launch's wait on */
        CHECK(weft_mpi_exec_ipc_transfers(e) == want_ipc);
        CHECK(weft_mpi_exec_aware_transfers(e) == want_aware);
    }
    /* the shim saw each such end's message at launches 2 to 4, no other */
    if (shim0 >= 0)
        CHECK(shim_messages() - shim0 == 3 * (long)want_aware);
    if (me == last) {
        CHECK(ca.launch == 4 && ca.bad == 0);
        CHECK(cy.launch == 4 && cy.bad == 0);
    }
    OK(weft_mpi_exec_destroy(e));
    OK(weft_mpi_graph_destroy(g));
    if (me == 0) {
        static uint32_t got[IN * IN];

        OK(weft_buffer_read(a, 0, got, sizeof got));
        for (unsigned k = 0; k < IN * IN; k++)
            CHECK(got[k] == k + (k % IN < IT && k / IN < IT ? 4u : 0u));
    }
    OK(weft_mpi_buffer_unregister(mpi, a));
    OK(weft_mpi_buffer_unregister(mpi, y));
    OK(weft_buffer_destroy(a)); /* the exec released its exports */
    OK(weft_buffer_destroy(y));
    if (me == 0)
        printf("device ends on rank 0: %u by IPC, %u through CUDA-aware MPI "
               "(shim: %s)\n",
               want_ipc, want_aware, shim0 >= 0 ? "loaded" : "absent");
}

/* ---- the CUDA-aware flags ------------------------------------------------ */

/* What this rank's MPI library says, asked as weft_mpi asks it. */
static int library_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT)
    return MPIX_Query_cuda_support() == 1;
#else
    int (*query)(void);

    *(void **)&query = dlsym(RTLD_DEFAULT, "MPIX_Query_cuda_support");
    return query && query() == 1;
#endif
}

/*
 * weft_mpi_create with WEFT_MPI_CUDA_AWARE=value on this rank: every rank
 * then sees want[r] for rank r.
 */
static void flags_seen(weft_runtime *rt, const char *value, const int *want)
{
    weft_mpi *m;

    if (value)
        setenv("WEFT_MPI_CUDA_AWARE", value, 1);
    else
        unsetenv("WEFT_MPI_CUDA_AWARE");
    OK(weft_mpi_create(rt, MPI_COMM_WORLD, &m));
    for (int r = 0; r < nranks; r++)
        CHECK(weft_mpi_cuda_aware(m, r) == want[r]);
    OK(weft_mpi_destroy(m));
}

/*
 * The flags weft_mpi_create exchanges: set on odd ranks only (each rank
 * its own word), every rank sees which; unset or auto, each rank's is
 * what its MPI library says (here the library's answer, gathered). The
 * program's variable is put back after. Then the ipc mode on mpi, made
 * with the program's environment: on host or sim devices no transfer
 * moves device to device, whatever the flags say.
 */
void aware_test(weft_runtime *rt, weft_mpi *mpi)
{
    static const char *const on[] = {"1", "on", "YES", "true"};
    static const char *const off[] = {"0", "OFF", "no", "false"};
    const char *was = getenv("WEFT_MPI_CUDA_AWARE");
    char *saved = was ? strdup(was) : NULL;
    int *want = calloc((size_t)nranks, sizeof *want), lib = library_aware();

    CHECK(want != NULL && (saved || !was));
    /* the shim loaded says what a CUDA-aware MPI says */
    CHECK(shim_messages() < 0 || lib == 1);
    for (int r = 0; r < nranks; r++)
        want[r] = r % 2;
    for (unsigned w = 0; w < 4; w++)
        flags_seen(rt, me % 2 ? on[w] : off[w], want);
    for (int r = 0; r < nranks; r++)
        want[r] = 1 - r % 2;
    flags_seen(rt, me % 2 ? "0" : "1", want);
    MPI_Allgather(&lib, 1, MPI_INT, want, 1, MPI_INT, MPI_COMM_WORLD);
    flags_seen(rt, NULL, want);
    flags_seen(rt, "auto", want);
    flags_seen(rt, "AUTO", want);
    if (saved)
        setenv("WEFT_MPI_CUDA_AWARE", saved, 1);
    else
        unsetenv("WEFT_MPI_CUDA_AWARE");
    free(saved);
    free(want);
    if (me == 0)
        printf("aware: flags exchanged; rank 0's MPI library says %s\n",
               lib ? "CUDA-aware" : "not CUDA-aware");
    dev_test(rt, mpi);
}
