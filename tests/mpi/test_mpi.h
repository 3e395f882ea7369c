/*
 * What test_mpi's files share (test_mpi.c: the modes and main;
 * test_mpi_dev.c: the device modes).
 */
#ifndef WEFT_TEST_MPI_H
#define WEFT_TEST_MPI_H

#include <weft_mpi.h>

#include <stdio.h>

/* This rank and the number of ranks, in MPI_COMM_WORLD. */
extern int me, nranks;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s (%s / %s)\n",    \
                    me, __FILE__, __LINE__, #cond, weft_mpi_last_error(),      \
                    weft_last_error());                                        \
            fflush(stderr);                                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                      \
        }                                                                      \
    } while (0)
#define OK(call) CHECK((call) == 0)

enum { DN = 1 << 18 }; /* 1 MiB of uint32_t: the send takes a while */

/* What a checking task saw: launches, wrong elements, the base value. */
typedef struct dcheck {
    unsigned launch, bad, base;
} dcheck;

/* X[k] += *(const uint32_t *)user over DN elements (a host task). */
void d_add(void *const *ptrs, void *user);

/* test_mpi_dev.c: the modes ipc and aware. */
void dev_test(weft_runtime *rt, weft_mpi *mpi);
void aware_test(weft_runtime *rt, weft_mpi *mpi);

#endif
