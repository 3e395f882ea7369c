/*
 * cuda_aware_shim.c on the host, two ranks, over fake_cuda.c's device
 * memory (inaccessible outside the fake's copies, so that a byte MPI
 * touched there directly would crash the rank): the shim says it is
 * CUDA-aware; persistent requests on device memory move the right bytes,
 * launch after launch, for a range (MPI_BYTE), a block of rows (an
 * hvector, as weft_mpi's tiles) and a vector of ints, leaving the bytes
 * between the rows on the receiver as they were; requests on host memory
 * are the real MPI's; and the shim counts exactly the device messages.
 *
 *   mpiexec -np 2 env LD_PRELOAD=libweft_cuda_aware_shim.so \
 *       WEFT_CUDA_LIBRARY=libweft_fake_cuda.so test_shim
 */
#include "drivers/cuda/cuda_api.h"

#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int me;

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            fprintf(stderr, "rank %d: %s:%d: check failed: %s\n", me,          \
                    __FILE__, __LINE__, #cond);                                \
            fflush(stderr);                                                    \
            MPI_Abort(MPI_COMM_WORLD, 1);                                      \
        }                                                                      \
    } while (0)

int MPIX_Query_cuda_support(void);

static void *(*dev_alloc)(size_t size);
static int (*copy2d)(const CUDA_MEMCPY2D *p);
static long (*shim_messages)(void);

/* size bytes between device memory and host memory (to_device: h -> d). */
static void dev_copy(void *d, void *h, size_t size, int to_device)
{
    CUDA_MEMCPY2D p;

    memset(&p, 0, sizeof p);
    p.WidthInBytes = p.srcPitch = p.dstPitch = size;
    p.Height = 1;
    p.srcMemoryType = to_device ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
    p.dstMemoryType = to_device ? CU_MEMORYTYPE_DEVICE : CU_MEMORYTYPE_HOST;
    p.srcHost = h;
    p.dstHost = h;
    p.srcDevice = p.dstDevice = (uint64_t)(uintptr_t)d;
    CHECK(copy2d(&p) == 0);
}

enum { SIZE = 1 << 16, ROWS = 24, ROW = 200, PITCH = 512, LAUNCHES = 3 };

/*
 * One case: rank 0 sends count elements of type from its device memory
 * (byte k of the buffer: k * 7 + launch), rank 1 receives them into its
 * (prefilled with 0xee), both persistent, LAUNCHES times; rank 1 checks
 * that the bytes the type covers (is_data) came and the others stayed.
 */
static void one_case(const char *name, int count, MPI_Datatype type,
                     int (*is_data)(size_t k))
{
    static unsigned char host[SIZE], got[SIZE];
    void *dev = dev_alloc(SIZE);
    MPI_Request req;
    long before = shim_messages();

    CHECK(dev != NULL);
    if (me == 0)
        CHECK(MPI_Ssend_init(dev, count, type, 1, 5, MPI_COMM_WORLD, &req) ==
              MPI_SUCCESS);
    else
        CHECK(MPI_Recv_init(dev, count, type, 0, 5, MPI_COMM_WORLD, &req) ==
              MPI_SUCCESS);
    for (int l = 0; l < LAUNCHES; l++) {
        int flag = 0;

        for (size_t k = 0; k < SIZE; k++)
            host[k] = me == 0 ? (unsigned char)(k * 7 + (size_t)l) : 0xee;
        dev_copy(dev, host, SIZE, 1);
        CHECK(MPI_Start(&req) == MPI_SUCCESS);
        if (me == 0) {
            CHECK(MPI_Wait(&req, MPI_STATUS_IGNORE) == MPI_SUCCESS);
        } else {
            while (!flag)
                CHECK(MPI_Test(&req, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS);
            dev_copy(dev, got, SIZE, 0);
            for (size_t k = 0; k < SIZE; k++)
                CHECK(got[k] ==
                      (is_data(k) ? (unsigned char)(k * 7 + (size_t)l) : 0xee));
        }
    }
    CHECK(MPI_Request_free(&req) == MPI_SUCCESS);
    CHECK(shim_messages() - before == LAUNCHES);
    MPI_Barrier(MPI_COMM_WORLD);
    if (me == 1)
        printf("%s: %d launches right\n", name, LAUNCHES);
}

static int in_range(size_t k)
{
    return k < 5000;
}

static int in_rows(size_t k)
{
    return k / PITCH < ROWS && k % PITCH < ROW;
}

/* 2 elements of a vector of 3 blocks of 4 ints, 10 ints apart. */
static int in_ints(size_t k)
{
    const size_t extent = (2 * 10 + 4) * 4;

    return k < 2 * extent && (k % extent) / 4 % 10 < 4;
}

int main(int argc, char **argv)
{
    const char *lib = getenv("WEFT_CUDA_LIBRARY");
    void *fake = lib ? dlopen(lib, RTLD_NOW | RTLD_LOCAL) : NULL;
    MPI_Datatype rows, ints;
    MPI_Request hreq;
    int nranks, provided, value = 0;
    long before;

    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    CHECK(nranks == 2);
    CHECK(fake != NULL);
    *(void **)&dev_alloc = dlsym(fake, "fake_device_alloc");
    *(void **)&copy2d = dlsym(fake, "cuMemcpy2D_v2");
    *(void **)&shim_messages = dlsym(RTLD_DEFAULT, "weft_shim_device_messages");
    CHECK(dev_alloc && copy2d && shim_messages);
    CHECK(MPIX_Query_cuda_support() == 1);

    one_case("range", 5000, MPI_BYTE, in_range);
    MPI_Type_create_hvector(ROWS, ROW, PITCH, MPI_BYTE, &rows);
    MPI_Type_commit(&rows);
    one_case("rows", 1, rows, in_rows);
    MPI_Type_vector(3, 4, 10, MPI_INT, &ints);
    MPI_Type_commit(&ints);
    one_case("ints", 2, ints, in_ints);
    MPI_Type_free(&rows);
    MPI_Type_free(&ints);

    /* host memory: the real MPI's, not counted */
    before = shim_messages();
    value = me == 0 ? 42 : 0;
    if (me == 0)
        MPI_Send_init(&value, 1, MPI_INT, 1, 6, MPI_COMM_WORLD, &hreq);
    else
        MPI_Recv_init(&value, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, &hreq);
    MPI_Start(&hreq);
    MPI_Wait(&hreq, MPI_STATUS_IGNORE);
    MPI_Request_free(&hreq);
    CHECK(value == 42);
    CHECK(shim_messages() == before);
    printf("rank %d: ok\n", me);
    MPI_Finalize();
    return 0;
}
