/*
 * The translation of OpenCL's error codes into weft's, and helpers every
 * file of the driver uses.
 */
#include "opencl_internal.h"

#include <stdio.h>
#include <string.h>

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
