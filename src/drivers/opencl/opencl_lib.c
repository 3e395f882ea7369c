/*
 * The OpenCL ICD loader, loaded at run time, and the translation of
 * OpenCL's error codes into weft's.
 */
#include "opencl_internal.h"

#include "../../base/options.h"

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* ---- the ICD loader ---------------------------------------------------- */

/*
 * Loads are counted; the first fills weft__cl, the last unload clears it
 * and closes the handle. The library itself stays mapped (RTLD_NODELETE):
 * ICD loaders keep their list of vendor drivers in allocations they never
 * free and never unload those drivers, so unmapping the loader would leak
 * that list at every reload (ocl-icd does, as LeakSanitizer shows).
 */
weft__ocl_api weft__cl;

static pthread_mutex_t ocl_lib_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long ocl_lib_users; /* loads held; guarded by ocl_lib_lock */

/* The loader of WEFT_OPENCL_LIBRARY, else of the usual names; NULL. */
static void *ocl_lib_open(const char **path)
{
    static const char *const names[] = {"libOpenCL.so.1", "libOpenCL.so"};
    const char *env = NULL;
    char why[512] = "";
    void *lib = NULL;

    if (!weft__opt_str(WEFT__OPT_OPENCL_LIBRARY, &env))
        env = NULL; /* unset: the usual names */
    *path = env ? env : names[0];
    if (weft__fault("opencl.dlopen")) {
        weft__error(WEFT_ENOTSUP, "opencl: cannot load %s: injected failure",
                    *path);
        return NULL;
    }
    for (size_t i = 0; !lib && i < (env ? 1 : WEFT__COUNTOF(names)); i++) {
        const char *name = env ? env : names[i];
        const char *e;

        if ((lib = dlopen(name, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE)))
            *path = name;
        else if (i == 0 && (e = dlerror()))
            weft__strlcpy(why, e, sizeof why);
    }
    if (!lib && env)
        weft__error(WEFT_ENOTSUP,
                    "opencl: cannot load %s (WEFT_OPENCL_LIBRARY): %s", env,
                    why);
    else if (!lib)
        weft__error(WEFT_ENOTSUP,
                    "opencl: no OpenCL ICD loader: cannot load %s (nor %s): "
                    "%s",
                    names[0], names[1], why);
    return lib;
}

static int ocl_load_locked(void)
{
    const char *path;
    void *lib = ocl_lib_open(&path);
    int rc;

    if (!lib)
        return WEFT_ENOTSUP;
#define OCL_RESOLVE(name, required)                                            \
    do {                                                                       \
        void *p_ = weft__fault("opencl.dlsym(cl" #name ")")                    \
                       ? NULL                                                  \
                       : dlsym(lib, "cl" #name);                               \
        if (!p_ && (required)) {                                               \
            rc = weft__error(WEFT_ENOTSUP,                                     \
                             "opencl: %s lacks cl" #name                       \
                             ": not an OpenCL 1.2 ICD loader",                 \
                             path);                                            \
            goto fail;                                                         \
        }                                                                      \
        memcpy(&weft__cl.name, &p_, sizeof p_);                                \
    } while (0);
    WEFT__OCL_FUNCS(OCL_RESOLVE)
#undef OCL_RESOLVE
    weft__cl.lib = lib;
    weft__debug("opencl", "%s loaded", path);
    return 0;
fail:
    memset(&weft__cl, 0, sizeof weft__cl);
    dlclose(lib);
    return rc;
}

int weft__ocl_load(void)
{
    int rc = 0;

    pthread_mutex_lock(&ocl_lib_lock);
    if (ocl_lib_users == 0)
        rc = ocl_load_locked();
    if (rc == 0)
        ocl_lib_users++;
    pthread_mutex_unlock(&ocl_lib_lock);
    return rc;
}

void weft__ocl_unload(void)
{
    pthread_mutex_lock(&ocl_lib_lock);
    weft__assert(ocl_lib_users > 0);
    if (--ocl_lib_users == 0) {
        if (dlclose(weft__cl.lib) != 0)
            weft__warn("opencl", "dlclose: %s", dlerror());
        memset(&weft__cl, 0, sizeof weft__cl);
    }
    pthread_mutex_unlock(&ocl_lib_lock);
}

/* ---- error translation ------------------------------------------------- */

#define OCL_CODES(X)                                                           \
    X(CL_DEVICE_NOT_FOUND, WEFT_ENODEV)                                        \
    X(CL_DEVICE_NOT_AVAILABLE, WEFT_ENODEV)                                    \
    X(CL_COMPILER_NOT_AVAILABLE, WEFT_ENOTSUP)                                 \
    X(CL_MEM_OBJECT_ALLOCATION_FAILURE, WEFT_EDEVMEM)                          \
    X(CL_OUT_OF_RESOURCES, WEFT_EDEVMEM)                                       \
    X(CL_OUT_OF_HOST_MEMORY, WEFT_ENOMEM)                                      \
    X(CL_PROFILING_INFO_NOT_AVAILABLE, WEFT_ENOTSUP)                           \
    X(CL_MEM_COPY_OVERLAP, WEFT_EINVAL)                                        \
    X(CL_IMAGE_FORMAT_MISMATCH, WEFT_EINVAL)                                   \
    X(CL_IMAGE_FORMAT_NOT_SUPPORTED, WEFT_ENOTSUP)                             \
    X(CL_BUILD_PROGRAM_FAILURE, WEFT_EBUILD)                                   \
    X(CL_MAP_FAILURE, WEFT_EDRIVER)                                            \
    X(CL_MISALIGNED_SUB_BUFFER_OFFSET, WEFT_EINVAL)                            \
    X(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, WEFT_ECANCELED)            \
    X(CL_COMPILE_PROGRAM_FAILURE, WEFT_EBUILD)                                 \
    X(CL_LINKER_NOT_AVAILABLE, WEFT_ENOTSUP)                                   \
    X(CL_LINK_PROGRAM_FAILURE, WEFT_EBUILD)                                    \
    X(CL_DEVICE_PARTITION_FAILED, WEFT_EDRIVER)                                \
    X(CL_KERNEL_ARG_INFO_NOT_AVAILABLE, WEFT_ENOTSUP)                          \
    X(CL_INVALID_VALUE, WEFT_EINVAL)                                           \
    X(CL_INVALID_DEVICE_TYPE, WEFT_EINVAL)                                     \
    X(CL_INVALID_PLATFORM, WEFT_ENODEV)                                        \
    X(CL_INVALID_DEVICE, WEFT_ENODEV)                                          \
    X(CL_INVALID_CONTEXT, WEFT_EINVAL)                                         \
    X(CL_INVALID_QUEUE_PROPERTIES, WEFT_ENOTSUP)                               \
    X(CL_INVALID_COMMAND_QUEUE, WEFT_EINVAL)                                   \
    X(CL_INVALID_HOST_PTR, WEFT_EINVAL)                                        \
    X(CL_INVALID_MEM_OBJECT, WEFT_EINVAL)                                      \
    X(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, WEFT_EINVAL)                         \
    X(CL_INVALID_IMAGE_SIZE, WEFT_EINVAL)                                      \
    X(CL_INVALID_SAMPLER, WEFT_EINVAL)                                         \
    X(CL_INVALID_BINARY, WEFT_EBUILD)                                          \
    X(CL_INVALID_BUILD_OPTIONS, WEFT_EBUILD)                                   \
    X(CL_INVALID_PROGRAM, WEFT_EINVAL)                                         \
    X(CL_INVALID_PROGRAM_EXECUTABLE, WEFT_EBUILD)                              \
    X(CL_INVALID_KERNEL_NAME, WEFT_ENOTFOUND)                                  \
    X(CL_INVALID_KERNEL_DEFINITION, WEFT_EBUILD)                               \
    X(CL_INVALID_KERNEL, WEFT_EINVAL)                                          \
    X(CL_INVALID_ARG_INDEX, WEFT_EARGS)                                        \
    X(CL_INVALID_ARG_VALUE, WEFT_EARGS)                                        \
    X(CL_INVALID_ARG_SIZE, WEFT_EARGS)                                         \
    X(CL_INVALID_KERNEL_ARGS, WEFT_EARGS)                                      \
    X(CL_INVALID_WORK_DIMENSION, WEFT_EINVAL)                                  \
    X(CL_INVALID_WORK_GROUP_SIZE, WEFT_EINVAL)                                 \
    X(CL_INVALID_WORK_ITEM_SIZE, WEFT_EINVAL)                                  \
    X(CL_INVALID_GLOBAL_OFFSET, WEFT_EINVAL)                                   \
    X(CL_INVALID_EVENT_WAIT_LIST, WEFT_EINVAL)                                 \
    X(CL_INVALID_EVENT, WEFT_EINVAL)                                           \
    X(CL_INVALID_OPERATION, WEFT_ENOTSUP)                                      \
    X(CL_INVALID_GL_OBJECT, WEFT_EINVAL)                                       \
    X(CL_INVALID_BUFFER_SIZE, WEFT_EINVAL)                                     \
    X(CL_INVALID_MIP_LEVEL, WEFT_EINVAL)                                       \
    X(CL_INVALID_GLOBAL_WORK_SIZE, WEFT_EINVAL)                                \
    X(CL_INVALID_PROPERTY, WEFT_EINVAL)                                        \
    X(CL_INVALID_IMAGE_DESCRIPTOR, WEFT_EINVAL)                                \
    X(CL_INVALID_COMPILER_OPTIONS, WEFT_EBUILD)                                \
    X(CL_INVALID_LINKER_OPTIONS, WEFT_EBUILD)                                  \
    X(CL_INVALID_DEVICE_PARTITION_COUNT, WEFT_EINVAL)                          \
    X(CL_INVALID_PIPE_SIZE, WEFT_EINVAL)                                       \
    X(CL_INVALID_DEVICE_QUEUE, WEFT_EINVAL)                                    \
    X(CL_INVALID_SPEC_ID, WEFT_EINVAL)                                         \
    X(CL_MAX_SIZE_RESTRICTION_EXCEEDED, WEFT_EINVAL)                           \
    X(CL_PLATFORM_NOT_FOUND_KHR, WEFT_ENOTSUP)                                 \
    X(CL_INVALID_COMMAND_BUFFER_KHR, WEFT_EINVAL)                              \
    X(CL_INVALID_SYNC_POINT_WAIT_LIST_KHR, WEFT_EINVAL)                        \
    X(CL_INCOMPATIBLE_COMMAND_QUEUE_KHR, WEFT_ENOTSUP)

typedef struct ocl_code {
    cl_int code;
    int weft;
    const char *name;
} ocl_code;

static const ocl_code ocl_codes[] = {
#define OCL_CODE_ENTRY(name, weft) {name, weft, #name},
    OCL_CODES(OCL_CODE_ENTRY)
#undef OCL_CODE_ENTRY
};

static const ocl_code *ocl_code_of(cl_int rc)
{
    for (size_t i = 0; i < WEFT__COUNTOF(ocl_codes); i++)
        if (ocl_codes[i].code == rc)
            return &ocl_codes[i];
    return NULL;
}

int weft__ocl_fail(cl_int rc, const char *fmt, ...)
{
    const ocl_code *c = ocl_code_of(rc);
    char msg[1800];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return weft__driver_error(c ? c->weft : WEFT_EDRIVER, "opencl", rc,
                              c ? c->name : "CL_UNKNOWN_ERROR", "%s", msg);
}

/* ---- helpers ---------------------------------------------------------- */

int weft__ocl_mutex_init(pthread_mutex_t *m)
{
    int rc = weft__fault("opencl.pthread_mutex_init")
                 ? 12
                 : pthread_mutex_init(m, NULL);

    if (rc)
        return weft__error(WEFT_ENOMEM, "opencl: pthread_mutex_init: %s",
                           strerror(rc));
    return 0;
}
