/*
 * The cuda driver's library: libcuda, loaded at run time with dlopen, the
 * process-wide state that goes with it, and the translation of CUresult
 * into weft's errors.
 *
 * The library is loaded once and never unloaded: CUDA has no way to undo
 * cuInit, and its threads would outlive an unloaded library.
 */
#include "internal.h"

#include "../../base/options.h"
#include "../../base/os.h"

#include <stdio.h>
#include <string.h>

/* See internal.h; cuda_loaded is set last, with release order. */
pthread_mutex_t weft__cuda_lock = PTHREAD_MUTEX_INITIALIZER;
weft__cuda_api weft__cu;
static int cuda_loaded;
int weft__cuda_driver_version;
uint64_t weft__cuda_peer_done[CUDA_MAX_DEVICES];

/* ---- errors ------------------------------------------------------------ */

static int cuda_code(CUresult res)
{
    switch (res) {
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_HANDLE:
    case CUDA_ERROR_INVALID_CONTEXT:
    case CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES:
    case CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED:
    case CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED:
    case CUDA_ERROR_PEER_ACCESS_NOT_ENABLED:
        return WEFT_EINVAL;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return WEFT_EDEVMEM;
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_FILE_NOT_FOUND:
        return WEFT_ENOTFOUND;
    case CUDA_ERROR_NOT_READY:
        return WEFT_ENOTREADY;
    case CUDA_ERROR_TIMEOUT:
        return WEFT_ETIMEDOUT;
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_INVALID_DEVICE:
    case CUDA_ERROR_DEVICE_NOT_LICENSED:
        return WEFT_ENODEV;
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NO_BINARY_FOR_GPU:
    case CUDA_ERROR_INVALID_PTX:
    case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
    case CUDA_ERROR_INVALID_SOURCE:
    case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
    case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
        return WEFT_EBUILD;
    case CUDA_ERROR_STUB_LIBRARY:
    case CUDA_ERROR_INSUFFICIENT_DRIVER:
    case CUDA_ERROR_CALL_REQUIRES_NEWER_DRIVER:
    case CUDA_ERROR_PEER_ACCESS_UNSUPPORTED:
    case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
    case CUDA_ERROR_JIT_COMPILATION_DISABLED:
    case CUDA_ERROR_NOT_SUPPORTED:
    case CUDA_ERROR_NOT_PERMITTED:
    case CUDA_ERROR_SYSTEM_DRIVER_MISMATCH:
    case CUDA_ERROR_COMPAT_NOT_SUPPORTED_ON_DEVICE:
        return WEFT_ENOTSUP;
    /* Sticky errors: the context cannot be used any more. */
    case CUDA_ERROR_DEVICE_UNAVAILABLE:
    case CUDA_ERROR_ECC_UNCORRECTABLE:
    case CUDA_ERROR_NVLINK_UNCORRECTABLE:
    case CUDA_ERROR_CONTAINED:
    case CUDA_ERROR_ILLEGAL_ADDRESS:
    case CUDA_ERROR_LAUNCH_TIMEOUT:
    case CUDA_ERROR_CONTEXT_IS_DESTROYED:
    case CUDA_ERROR_ASSERT:
    case CUDA_ERROR_HARDWARE_STACK_ERROR:
    case CUDA_ERROR_ILLEGAL_INSTRUCTION:
    case CUDA_ERROR_MISALIGNED_ADDRESS:
    case CUDA_ERROR_INVALID_ADDRESS_SPACE:
    case CUDA_ERROR_INVALID_PC:
    case CUDA_ERROR_LAUNCH_FAILED:
        return WEFT_EDEVLOST;
    default:
        return WEFT_EDRIVER;
    }
}

int weft__cuda_fail(CUresult res, int code, const char *fmt, ...)
{
    char what[512];
    char fallback[32];
    const char *name = NULL, *msg = NULL;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (!weft__cu.GetErrorName ||
        weft__cu.GetErrorName(res, &name) != CUDA_SUCCESS || !name) {
        snprintf(fallback, sizeof fallback, "CUDA_ERROR_%d", (int)res);
        name = fallback;
    }
    if (!weft__cu.GetErrorString ||
        weft__cu.GetErrorString(res, &msg) != CUDA_SUCCESS || !msg)
        msg = "unknown CUDA error";
    return weft__driver_error(code ? code : cuda_code(res), "cuda", res, name,
                              "%s: %s", what, msg);
}

/* ---- the library ------------------------------------------------------- */

static int cuda_load_locked(void)
{
    const char *path = "libcuda.so.1";
    CUresult res;
    void *lib;
    int rc;

    weft__opt_str(WEFT__OPT_CUDA_LIBRARY, &path);
    if ((rc = weft__dl_open(path, "cuda.dlopen", &lib)) < 0)
        return weft__error_prefix(rc, "%s not found", path);
#define CUDA_RESOLVE(m, req, sym, alt)                                         \
    do {                                                                       \
        void *p = weft__dl_sym(lib, sym, "cuda.dlsym(" sym ")");               \
        if (!p && (alt))                                                       \
            p = weft__dl_sym(lib, (alt) ? (alt) : sym, NULL);                  \
        if (!p && (req)) {                                                     \
            rc = weft__error(WEFT_ENOTSUP,                                     \
                             "%s lacks %s: the CUDA driver is too old", path,  \
                             sym);                                             \
            goto fail;                                                         \
        }                                                                      \
        memcpy(&weft__cu.m, &p, sizeof p);                                     \
    } while (0);
    WEFT__CUDA_FUNCS(CUDA_RESOLVE)
#undef CUDA_RESOLVE

    res = weft__fault("cuda.cuInit") ? CUDA_ERROR_UNKNOWN : weft__cu.Init(0);
    if (res == CUDA_ERROR_NO_DEVICE) {
        rc = weft__driver_error(WEFT_ENOTSUP, "cuda", res,
                                "CUDA_ERROR_NO_DEVICE", "no CUDA device");
        goto fail;
    }
    if (res == CUDA_ERROR_STUB_LIBRARY) {
        /* The stub answers nothing else either, not even error names. */
        rc = weft__driver_error(WEFT_ENOTSUP, "cuda", res,
                                "CUDA_ERROR_STUB_LIBRARY",
                                "cuInit: %s is the stub library, not a "
                                "CUDA driver",
                                path);
        goto fail;
    }
    if (res != CUDA_SUCCESS) {
        rc = weft__cuda_fail(res, 0, "cuInit");
        goto fail;
    }
    res = weft__fault("cuda.cuDriverGetVersion")
              ? CUDA_ERROR_UNKNOWN
              : weft__cu.DriverGetVersion(&weft__cuda_driver_version);
    if (res != CUDA_SUCCESS) {
        rc = weft__cuda_fail(res, 0, "cuDriverGetVersion");
        goto fail;
    }
    weft__cu.lib = lib;
    __atomic_store_n(&cuda_loaded, 1, __ATOMIC_RELEASE);
    weft__debug("cuda", "%s loaded, CUDA %d.%d", path,
                weft__cuda_driver_version / 1000,
                weft__cuda_driver_version % 1000 / 10);
    return 0;
fail:
    memset(&weft__cu, 0, sizeof weft__cu);
    weft__dl_close(lib);
    return rc;
}

int weft__cuda_load(void)
{
    int rc = 0;

    if (__atomic_load_n(&cuda_loaded, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&weft__cuda_lock);
    if (!cuda_loaded)
        rc = cuda_load_locked();
    pthread_mutex_unlock(&weft__cuda_lock);
    return rc;
}
