/*
 * What an OpenCL implementation survives with sub-buffers, one case per
 * process (a crash ends only its case). weft passes kernel arguments at
 * offsets as sub-buffers; this probe finds which uses crash NVIDIA's
 * OpenCL on the GPU machine:
 *     cc -O1 -o subbuf tests/gpu/ocl_subbuf.c -lOpenCL -pthread
 *     OCL_ICD_VENDORS=/nonexistent OCL_ICD_FILENAMES=libnvidia-opencl.so.1 \
 *         ./subbuf 0 REPS [NCASES]   (NVIDIA's alone; the first cases)
 *     ./subbuf PLATFORM        (every case, each in a child process)
 * Cases:
 *   inflight   release each sub-buffer right after enqueueing a kernel on
 *              it (the spec allows it: the command keeps it alive)
 *   finished   256 sub-buffers, a kernel on each, clFinish, then release
 *              them (and the kernel, then the parent)
 *   kernelfirst  as finished, but the kernel is released first
 *   parentcopy as finished, with copies into the parent on a second queue
 *              while the kernels run (disjoint ranges)
 *   overlap    sub-buffers from each offset to the end (they overlap),
 *              kernels on two queues, then as finished
 *   argreset   as inflight, but each kernel's argument is set to another
 *              sub-buffer before the release
 *   twoargs    kernels whose two arguments are overlapping sub-buffers of
 *              the same parent (disjoint in what they touch)
 *   parentarg  kernels whose arguments are the parent and a sub-buffer
 *   fillparent fills of the parent on a second queue while kernels run on
 *              sub-buffers (disjoint ranges)
 *   userevent  kernels on sub-buffers queued behind a barrier on a user
 *              event that another thread completes while this one makes,
 *              uses and releases more sub-buffers on a second queue
 *   userevent_locked  the same, the completion and this thread's calls
 *              under one lock
 *   userevent_cached  the same, no lock, each sub-buffer made once and
 *              released at the end
 *   userevent_nosub  the same, no lock, the parent instead of sub-buffers
 *   userevent_svm  the same with SVM: kernels take pointers at offsets,
 *              copies go to a cl_mem made on the SVM memory
 */
#define CL_TARGET_OPENCL_VERSION 300
#include <CL/cl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MIB ((size_t)1 << 20)
#define CK(x)                                                                  \
    do {                                                                       \
        cl_int rc_ = (x);                                                      \
        if (rc_ != CL_SUCCESS) {                                               \
            printf("  %s: error %d\n", #x, (int)rc_);                          \
            exit(1);                                                           \
        }                                                                      \
    } while (0)

static const char *src =
    "kernel void k(global int *p) { p[get_global_id(0)] += 1; }\n"
    "kernel void k2(global int *a, global const int *b)\n"
    "{ a[get_global_id(0)] += b[get_global_id(0)]; }\n";

static cl_context ctx;
static cl_device_id dev;
static cl_command_queue q1, q2;
static cl_kernel kern, kern2;
static cl_program prog;
static cl_mem parent;
static size_t align = 4096;

static void setup(int plat)
{
    cl_platform_id ps[8];
    cl_uint np = 0;
    cl_int rc;
    cl_uint bits = 0;

    CK(clGetPlatformIDs(8, ps, &np));
    if ((cl_uint)plat >= np) {
        printf("no platform %d\n", plat);
        exit(1);
    }
    CK(clGetDeviceIDs(ps[plat], CL_DEVICE_TYPE_ALL, 1, &dev, NULL));
    CK(clGetDeviceInfo(dev, CL_DEVICE_MEM_BASE_ADDR_ALIGN, sizeof bits, &bits,
                       NULL));
    align = bits / 8 > 4096 ? bits / 8 : 4096;
    ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &rc);
    CK(rc);
    q1 = clCreateCommandQueueWithProperties(ctx, dev, NULL, &rc);
    CK(rc);
    q2 = clCreateCommandQueueWithProperties(ctx, dev, NULL, &rc);
    CK(rc);
    prog = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    CK(rc);
    CK(clBuildProgram(prog, 1, &dev, "", NULL, NULL));
    kern = clCreateKernel(prog, "k", &rc);
    CK(rc);
    kern2 = clCreateKernel(prog, "k2", &rc);
    CK(rc);
    parent = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 64 * MIB, NULL, &rc);
    CK(rc);
}

static int nosub; /* userevent_nosub: the parent stands for every sub */

static cl_mem sub(size_t off, size_t size)
{
    cl_buffer_region r = {off, size};
    cl_int rc;
    cl_mem m;

    if (nosub) {
        CK(clRetainMemObject(parent));
        return parent;
    }
    m = clCreateSubBuffer(parent, 0, CL_BUFFER_CREATE_TYPE_REGION, &r, &rc);

    CK(rc);
    return m;
}

static void run_on(cl_command_queue q, cl_mem m, size_t n)
{
    CK(clSetKernelArg(kern, 0, sizeof m, &m));
    CK(clEnqueueNDRangeKernel(q, kern, 1, NULL, &n, NULL, 0, NULL, NULL));
}

static void teardown(int kernel_first)
{
    if (kernel_first)
        CK(clReleaseKernel(kern));
    CK(clReleaseMemObject(parent));
    if (!kernel_first)
        CK(clReleaseKernel(kern));
    CK(clReleaseKernel(kern2));
    CK(clReleaseProgram(prog));
    CK(clReleaseCommandQueue(q1));
    CK(clReleaseCommandQueue(q2));
    CK(clReleaseContext(ctx));
}

/* userevent_locked: the completion and the sub-buffer calls under one lock */
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static int locked;

static void lk(void)
{
    if (locked)
        pthread_mutex_lock(&big);
}

static void ulk(void)
{
    if (locked)
        pthread_mutex_unlock(&big);
}

static void *complete_later(void *arg)
{
    usleep((useconds_t)(rand() % 200));
    lk();
    clSetUserEventStatus((cl_event)arg, CL_COMPLETE);
    ulk();
    return NULL;
}

static void case_run(const char *c)
{
    enum { N = 256 };
    static cl_mem subs[N];
    size_t slot = 64 * MIB / N; /* 256 KiB, a multiple of align */
    size_t n = slot / 4;

    if (!strcmp(c, "inflight") || !strcmp(c, "argreset")) {
        cl_mem keep = sub(0, slot);

        for (int i = 0; i < 4000; i++) {
            cl_mem m = sub((size_t)(i % N) * slot, slot);

            run_on(q1, m, n);
            if (!strcmp(c, "argreset"))
                CK(clSetKernelArg(kern, 0, sizeof keep, &keep));
            CK(clReleaseMemObject(m));
        }
        CK(clFinish(q1));
        CK(clReleaseMemObject(keep));
        teardown(0);
        return;
    }
    if (!strcmp(c, "userevent_svm")) {
        /* SVM: kernels take pointers at offsets; copies go through a
         * cl_mem made on the same memory (CL_MEM_USE_HOST_PTR) */
        cl_int rc;
        char *svm = clSVMAlloc(ctx, CL_MEM_READ_WRITE, 64 * MIB, 0);
        cl_mem alias;

        if (!svm) {
            printf("  clSVMAlloc failed\n");
            exit(1);
        }
        alias = clCreateBuffer(ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR,
                               64 * MIB, svm, &rc);
        CK(rc);
        for (int round = 0; round < 300; round++) {
            cl_event u = clCreateUserEvent(ctx, &rc);
            pthread_t t;
            static int zeros[1024];

            CK(rc);
            CK(clEnqueueBarrierWithWaitList(q1, 1, &u, NULL));
            for (int i = 0; i < 16; i++) {
                size_t k = (size_t)((round * 16 + i) % N);

                CK(clSetKernelArgSVMPointer(kern, 0, svm + k * slot));
                CK(clEnqueueNDRangeKernel(q1, kern, 1, NULL, &n, NULL, 0, NULL,
                                          NULL));
                CK(clEnqueueWriteBuffer(q1, alias, CL_FALSE,
                                        ((k + 1) % N) * slot, sizeof zeros,
                                        zeros, 0, NULL, NULL));
            }
            CK(clFlush(q1));
            pthread_create(&t, NULL, complete_later, u);
            for (int i = 0; i < 16; i++) {
                size_t k = (size_t)((round * 7 + i) % N);

                CK(clSetKernelArgSVMPointer(kern, 0, svm + k * slot));
                CK(clEnqueueNDRangeKernel(q2, kern, 1, NULL, &n, NULL, 0, NULL,
                                          NULL));
            }
            pthread_join(t, NULL);
            CK(clReleaseEvent(u));
        }
        CK(clFinish(q1));
        CK(clFinish(q2));
        CK(clReleaseMemObject(alias));
        clSVMFree(ctx, svm);
        teardown(0);
        return;
    }
    if (!strcmp(c, "userevent") || !strcmp(c, "userevent_locked") ||
        !strcmp(c, "userevent_cached") || !strcmp(c, "userevent_nosub")) {
        static cl_mem cache[N];
        int cached = !strcmp(c, "userevent_cached");

        locked = !strcmp(c, "userevent_locked");
        nosub = !strcmp(c, "userevent_nosub");
        for (int round = 0; round < 300; round++) {
            cl_int rc;
            cl_event u = clCreateUserEvent(ctx, &rc);
            pthread_t t;

            CK(rc);
            CK(clEnqueueBarrierWithWaitList(q1, 1, &u, NULL));
            for (int i = 0; i < 16; i++) {
                size_t k = (size_t)((round * 16 + i) % N);
                cl_mem m;

                if (cached && !cache[k])
                    cache[k] = sub(k * slot, 64 * MIB - k * slot);
                m = cached ? cache[k] : sub(k * slot, 64 * MIB - k * slot);
                run_on(q1, m, n);
                if (!cached)
                    CK(clReleaseMemObject(m));
            }
            CK(clFlush(q1));
            pthread_create(&t, NULL, complete_later, u);
            for (int i = 0; i < 16; i++) {
                size_t k = (size_t)((round * 7 + i) % N);
                cl_mem m;

                lk();
                if (cached && !cache[k])
                    cache[k] = sub(k * slot, 64 * MIB - k * slot);
                m = cached ? cache[k] : sub(k * slot, slot);
                run_on(q2, m, n);
                if (!cached)
                    CK(clReleaseMemObject(m));
                ulk();
            }
            pthread_join(t, NULL);
            CK(clReleaseEvent(u));
        }
        CK(clFinish(q1));
        CK(clFinish(q2));
        for (int k = 0; k < N; k++)
            if (cache[k])
                CK(clReleaseMemObject(cache[k]));
        teardown(0);
        return;
    }
    if (!strcmp(c, "twoargs") || !strcmp(c, "parentarg") ||
        !strcmp(c, "fillparent")) {
        for (int round = 0; round < 20; round++) {
            for (int i = 0; i < N; i++)
                subs[i] = sub((size_t)i * slot, 64 * MIB - (size_t)i * slot);
            for (int i = 0; i + 1 < N; i += 2) {
                cl_mem a = subs[i], b = subs[i + 1];
                size_t gn = n;

                if (!strcmp(c, "parentarg") && i == 0)
                    a = parent;
                if (!strcmp(c, "fillparent")) {
                    int zero = 0;

                    run_on(q1, a, n);
                    CK(clEnqueueFillBuffer(q2, parent, &zero, sizeof zero,
                                           (size_t)(i + 1) * slot, slot, 0,
                                           NULL, NULL));
                    continue;
                }
                CK(clSetKernelArg(kern2, 0, sizeof a, &a));
                CK(clSetKernelArg(kern2, 1, sizeof b, &b));
                CK(clEnqueueNDRangeKernel((i & 2) ? q2 : q1, kern2, 1, NULL,
                                          &gn, NULL, 0, NULL, NULL));
            }
            CK(clFinish(q1));
            CK(clFinish(q2));
            for (int i = 0; i < N; i++)
                CK(clReleaseMemObject(subs[i]));
        }
        teardown(0);
        return;
    }
    for (int round = 0; round < 20; round++) {
        int ov = !strcmp(c, "overlap");

        for (int i = 0; i < N; i++)
            subs[i] = ov ? sub((size_t)i * slot, 64 * MIB - (size_t)i * slot)
                         : sub((size_t)i * slot, slot);
        for (int i = 0; i < N; i++) {
            run_on(ov && (i & 1) ? q2 : q1, subs[i], n);
            if (!strcmp(c, "parentcopy")) {
                static int zeros[1024];

                CK(clEnqueueWriteBuffer(q2, parent, CL_FALSE,
                                        (size_t)((i + N / 2) % N) * slot,
                                        sizeof zeros, zeros, 0, NULL, NULL));
            }
        }
        CK(clFinish(q1));
        CK(clFinish(q2));
        for (int i = 0; i < N; i++)
            CK(clReleaseMemObject(subs[i]));
    }
    teardown(!strcmp(c, "kernelfirst"));
}

int main(int argc, char **argv)
{
    static const char *cases[] = {
        "userevent_svm",    "userevent_nosub", "userevent_locked",
        "userevent_cached", "userevent",       "twoargs",
        "parentarg",        "fillparent",      "finished",
        "kernelfirst",      "parentcopy",      "overlap",
        "inflight",         "argreset"};
    int plat = argc > 1 ? atoi(argv[1]) : 0;
    int reps = argc > 2 ? atoi(argv[2]) : 5;

    setvbuf(stdout, NULL, _IONBF, 0);
    /* No OpenCL in this process: NVIDIA's does not survive a fork. */
    if (fork() == 0) {
        cl_platform_id ps[8];
        cl_device_id d;
        cl_uint np = 0;
        cl_bitfield svm = 0;
        char name[128] = "";

        if (clGetPlatformIDs(8, ps, &np) == CL_SUCCESS && (cl_uint)plat < np &&
            clGetDeviceIDs(ps[plat], CL_DEVICE_TYPE_ALL, 1, &d, NULL) ==
                CL_SUCCESS) {
            clGetDeviceInfo(d, CL_DEVICE_NAME, sizeof name, name, NULL);
            clGetDeviceInfo(d, CL_DEVICE_SVM_CAPABILITIES, sizeof svm, &svm,
                            NULL);
            printf("%s: SVM capabilities 0x%llx\n", name,
                   (unsigned long long)svm);
        }
        _exit(0);
    }
    wait(NULL);
    unsigned ncases = sizeof cases / sizeof *cases;

    if (argc > 3 && (unsigned)atoi(argv[3]) < ncases)
        ncases = (unsigned)atoi(argv[3]); /* the first ones only */
    for (unsigned c = 0; c < ncases; c++) {
        int died = 0, failed = 0, hung = 0;

        for (int r = 0; r < reps; r++) {
            pid_t pid = fork();
            int st = 0;

            if (pid == 0) {
                alarm(20); /* a hang counts as a death by SIGALRM */
                setup(plat);
                case_run(cases[c]);
                _exit(0);
            }
            waitpid(pid, &st, 0);
            if (WIFSIGNALED(st) && WTERMSIG(st) == SIGALRM)
                hung++;
            else if (WIFSIGNALED(st))
                died++;
            else if (WEXITSTATUS(st))
                failed++;
        }
        printf("%-12s %d of %d runs died of a signal, %d hung (20 s), %d "
               "failed\n",
               cases[c], died, reps, hung, failed);
    }
    return 0;
}
