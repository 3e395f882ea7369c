/*
 * Modules (PTX, cubin, fatbin, or CUDA C++ through NVRTC), kernels and
 * launches of the cuda driver.
 */
#include "internal.h"

#include <string.h>

/* Arguments of a launch that need no allocation. */
#define CUDA_LAUNCH_ARGS 32
/* Bytes of each of the JIT's info and error logs. */
#define CUDA_JIT_LOG 4096

typedef struct cuda_kernel {
    weft__kernel base;
    CUfunction fn;
    struct cuda_kernel *next;
    /* followed by param_sizes[nparams] and the name */
} cuda_kernel;

typedef struct cuda_module {
    weft__module base;
    CUmodule cu;
    /* what NVRTC made of CUDA C++ source, kept for the kernel cache */
    weft__cuda_image image;
    /* guards kernels: kernel_get may run on several threads */
    pthread_mutex_t lock;
    cuda_kernel *kernels;
} cuda_module;

/* ---- modules and kernels ----------------------------------------------- */

/*
 * Load PTX text with the JIT's logs: the error log goes into the detail on
 * failure; on success *info gets a weft__malloc'd copy of the info log
 * (NULL where it is empty, or where no memory was left for the copy).
 */
static int cuda_load_ptx(cuda_context *c, const char *ptx, const char *name,
                         CUmodule *mod, char **info)
{
    char *logs = weft__malloc(2 * CUDA_JIT_LOG);
    int opts[4] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                   CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[4];
    CUresult res;
    int rc = 0;

    *info = NULL;
    if (!logs)
        return weft__error(WEFT_ENOMEM, "JIT logs for %s", name);
    logs[0] = logs[CUDA_JIT_LOG] = '\0';
    values[0] = logs;
    values[1] = (void *)(uintptr_t)CUDA_JIT_LOG;
    values[2] = logs + CUDA_JIT_LOG;
    values[3] = (void *)(uintptr_t)CUDA_JIT_LOG;
    res = weft__fault("cuda.cuModuleLoadDataEx")
              ? CUDA_ERROR_INVALID_PTX
              : weft__cu.ModuleLoadDataEx(mod, ptx, 4, opts, values);
    if (res != CUDA_SUCCESS) {
        logs[2 * CUDA_JIT_LOG - 1] = '\0';
        rc = weft__cuda_fail(res, 0, "cuModuleLoadDataEx: PTX %s on GPU %d: %s",
                             name, c->ordinal,
                             logs[CUDA_JIT_LOG] ? logs + CUDA_JIT_LOG
                                                : "(no JIT log)");
    } else if (logs[0]) {
        logs[CUDA_JIT_LOG - 1] = '\0';
        weft__debug("cuda", "JIT of %s: %s", name, logs);
        *info = weft__strdup(logs);
    }
    weft__free(logs);
    return rc;
}

/*
 * The module's build log: NVRTC's (nvrtc, may be NULL) then the JIT's
 * (jit, may be NULL), a line apart; both are consumed. NULL if neither.
 */
static char *cuda_log_join(char *nvrtc, char *jit)
{
    size_t a, b;
    char *both;

    if (!nvrtc || !*nvrtc || !jit || !*jit) {
        char *one = nvrtc && *nvrtc ? nvrtc : jit && *jit ? jit : NULL;

        if (one != nvrtc)
            weft__free(nvrtc);
        if (one != jit)
            weft__free(jit);
        return one;
    }
    a = strlen(nvrtc);
    b = strlen(jit);
    both = weft__malloc(a + b + 2);
    if (both) {
        memcpy(both, nvrtc, a);
        both[a] = '\n';
        memcpy(both + a + 1, jit, b + 1);
    }
    weft__free(jit);
    if (!both) {
        weft_clear_error(); /* the JIT's part is lost, NVRTC's kept */
        return nvrtc;
    }
    weft__free(nvrtc);
    return both;
}

static int cuda_load_binary(cuda_context *c, const void *image, size_t size,
                            const char *what, const char *name, CUmodule *mod)
{
    void *copy = NULL;
    CUresult res;

    /* The driver reads the ELF and fatbin headers in place, aligned. */
    if (((uintptr_t)image & 7) != 0) {
        if (!size)
            return weft__error(WEFT_EINVAL, "%s %s: unaligned and no size",
                               what, name);
        if (!(copy = weft__malloc(size)))
            return weft__error(WEFT_ENOMEM, "copy of %s %s", what, name);
        memcpy(copy, image, size);
        image = copy;
    }
    res = weft__fault("cuda.cuModuleLoadData")
              ? CUDA_ERROR_INVALID_IMAGE
              : weft__cu.ModuleLoadData(mod, image);
    weft__free(copy);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0, "cuModuleLoadData: %s %s on GPU %d",
                               what, name, c->ordinal);
    return 0;
}

int weft__cuda_module_create(weft__context *ctx, const weft__module_source *src,
                             weft__module **out)
{
    cuda_context *c = cuda_ctx(ctx);
    const weft_device_info *p = &ctx->dev->props;
    const char *name = src->name ? src->name : "(unnamed)";
    weft__cuda_image img = {0};
    cuda_module *m;
    char *text = NULL, *jit = NULL;
    int rc;

    if (src->kind != WEFT__SRC_PTX && src->kind != WEFT__SRC_CUBIN &&
        src->kind != WEFT__SRC_FATBIN && src->kind != WEFT__SRC_CUDA_CXX)
        return weft__error(WEFT_ENOTSUP,
                           "the cuda driver takes PTX, cubin, fatbin or CUDA "
                           "C++ modules, not source kind %d (%s)",
                           (int)src->kind, name);
    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "cuda module");
    if (pthread_mutex_init(&m->lock, NULL) != 0) {
        weft__free(m);
        return weft__error(WEFT_ENOMEM, "cuda module lock");
    }
    if (src->kind == WEFT__SRC_CUDA_CXX &&
        (rc = weft__cuda_nvrtc_compile(src->data, src->size, src->name,
                                       src->options, p->cc_major, p->cc_minor,
                                       &img)) < 0)
        goto fail;
    if ((rc = weft__cuda_enter(ctx)) < 0)
        goto fail;
    switch (src->kind) {
    case WEFT__SRC_PTX:
        if (src->size && memchr(src->data, '\0', src->size) == NULL) {
            /* Sized text without its NUL: the JIT wants one. */
            if (!(text = weft__malloc(src->size + 1))) {
                rc = weft__error(WEFT_ENOMEM, "copy of PTX %s", name);
                goto fail;
            }
            memcpy(text, src->data, src->size);
            text[src->size] = '\0';
        }
        rc = cuda_load_ptx(c, text ? text : src->data, name, &m->cu, &jit);
        break;
    case WEFT__SRC_CUBIN:
    case WEFT__SRC_FATBIN:
        rc = cuda_load_binary(c, src->data, src->size,
                              src->kind == WEFT__SRC_CUBIN ? "cubin" : "fatbin",
                              name, &m->cu);
        break;
    default:
        rc = img.is_cubin ? cuda_load_binary(c, img.data, img.size, "cubin",
                                             name, &m->cu)
                          : cuda_load_ptx(c, img.data, name, &m->cu, &jit);
        break;
    }
    if (rc < 0)
        goto fail;
    weft__free(text);
    m->base.build_log = cuda_log_join(img.log, jit);
    img.log = NULL; /* in build_log now */
    m->image = img; /* owned by the module from here (NULL unless NVRTC) */
    m->base.drv = &weft__driver_cuda;
    m->base.ctx = ctx;
    m->base.kind = src->kind;
    *out = &m->base;
    return 0;
fail:
    weft__free(text);
    weft__free(jit);
    weft__cuda_image_free(&img);
    pthread_mutex_destroy(&m->lock);
    weft__free(m);
    return rc;
}

void weft__cuda_module_destroy(weft__module *mod)
{
    cuda_module *m = (cuda_module *)mod;
    CUresult res;

    if (weft__cuda_enter(mod->ctx) < 0)
        weft__warn("cuda", "module release: %s", weft_last_error());
    res = weft__cu.ModuleUnload(m->cu);
    if (res != CUDA_SUCCESS)
        weft__warn("cuda", "cuModuleUnload: error %d", (int)res);
    for (cuda_kernel *k = m->kernels, *next; k; k = next) {
        next = k->next;
        weft__free(k);
    }
    weft__cuda_image_free(&m->image);
    weft__free(m->base.build_log);
    pthread_mutex_destroy(&m->lock);
    weft__free(m);
}

/* The cubin or PTX that NVRTC produced, for the compiled-kernel cache. */
int weft__cuda_module_binary(weft__module *mod, void **bytes, size_t *size,
                             weft__source_kind *kind)
{
    cuda_module *m = (cuda_module *)mod;
    void *copy;

    if (!m->image.data)
        return weft__error(WEFT_ENOTSUP, "module was not built from source");
    if (!(copy = weft__malloc(m->image.size)))
        return weft__error(WEFT_ENOMEM, "copy of a module binary");
    memcpy(copy, m->image.data, m->image.size);
    *bytes = copy;
    *size = m->image.size;
    *kind = m->image.is_cubin ? WEFT__SRC_CUBIN : WEFT__SRC_PTX;
    return 0;
}

/*
 * Number of parameters of fn, or -1 if the driver cannot tell. The driver
 * answers CUDA_ERROR_INVALID_VALUE for the first index past the end.
 */
static long cuda_param_count(CUfunction fn)
{
    size_t off, size;
    long n;

    if (!weft__cu.FuncGetParamInfo || weft__fault("cuda.cuFuncGetParamInfo"))
        return -1;
    for (n = 0; n < 32768; n++) {
        CUresult res = weft__cu.FuncGetParamInfo(fn, (size_t)n, &off, &size);

        if (res == CUDA_ERROR_INVALID_VALUE)
            return n;
        if (res != CUDA_SUCCESS)
            return -1;
    }
    return -1;
}

int weft__cuda_kernel_get(weft__module *mod, const char *name,
                          weft__kernel **out)
{
    cuda_module *m = (cuda_module *)mod;
    cuda_kernel *k;
    CUfunction fn = NULL;
    size_t len = strlen(name);
    size_t *sizes;
    long n;
    CUresult res;
    int rc = 0;

    pthread_mutex_lock(&m->lock);
    for (k = m->kernels; k; k = k->next)
        if (strcmp(k->base.name, name) == 0)
            goto found;
    if ((rc = weft__cuda_enter(mod->ctx)) < 0)
        goto out;
    res = weft__fault("cuda.cuModuleGetFunction")
              ? CUDA_ERROR_NOT_FOUND
              : weft__cu.ModuleGetFunction(&fn, m->cu, name);
    if (res != CUDA_SUCCESS) {
        rc = weft__cuda_fail(
            res, 0,
            "cuModuleGetFunction: no kernel \"%s\" in the module "
            "on GPU %d (a C++ kernel needs extern \"C\")",
            name, cuda_ctx(mod->ctx)->ordinal);
        goto out;
    }
    n = cuda_param_count(fn);
    k = weft__calloc(1, sizeof *k + (n > 0 ? (size_t)n : 0) * sizeof *sizes +
                            len + 1);
    if (!k) {
        rc = weft__error(WEFT_ENOMEM, "kernel %s", name);
        goto out;
    }
    sizes = (size_t *)(k + 1);
    for (long i = 0; i < n; i++) {
        size_t off;

        if (weft__cu.FuncGetParamInfo(fn, (size_t)i, &off, &sizes[i]) !=
            CUDA_SUCCESS) {
            n = -1;
            break;
        }
    }
    memcpy((char *)(sizes + (n > 0 ? n : 0)), name, len + 1);
    k->base.drv = &weft__driver_cuda;
    k->base.module = mod;
    k->base.name = (char *)(sizes + (n > 0 ? n : 0));
    k->base.params_known = n >= 0;
    k->base.nparams = n > 0 ? (unsigned)n : 0;
    k->base.params = NULL; /* CUDA tells sizes, not types */
    k->base.param_sizes = n > 0 ? sizes : NULL;
    k->fn = fn;
    k->next = m->kernels;
    m->kernels = k;
found:
    *out = &k->base;
out:
    pthread_mutex_unlock(&m->lock);
    return rc;
}

int weft__cuda_launch(weft__queue *q, weft__kernel *k, const weft__grid *grid,
                      const weft__karg *args, unsigned nargs)
{
    void *params_fixed[CUDA_LAUNCH_ARGS];
    CUdeviceptr ptrs_fixed[CUDA_LAUNCH_ARGS];
    void **params = params_fixed;
    CUdeviceptr *ptrs = ptrs_fixed;
    void *block = NULL;
    CUresult res;
    int rc;

    if (nargs > CUDA_LAUNCH_ARGS) {
        block = weft__malloc(nargs * (sizeof *params + sizeof *ptrs));
        if (!block)
            return weft__error(WEFT_ENOMEM, "arguments of %s", k->name);
        ptrs = block;
        params = (void **)(ptrs + nargs);
    }
    for (unsigned i = 0; i < nargs; i++) {
        switch (args[i].type) {
        case WEFT_PARAM_BUFFER:
            ptrs[i] = cuda_mm(args[i].u.buf.mem)->ptr + args[i].u.buf.offset;
            params[i] = &ptrs[i];
            break;
        case WEFT_PARAM_LOCAL:
            weft__free(block);
            return weft__error(WEFT_EARGS,
                               "argument %u of %s is LOCAL: CUDA kernels get "
                               "dynamic shared memory from the grid's "
                               "shared_bytes",
                               i, k->name);
        default:
            params[i] = (void *)(uintptr_t)args[i].u.value;
            break;
        }
    }
    if ((rc = weft__cuda_enter(q->ctx)) < 0) {
        weft__free(block);
        return rc;
    }
    res = weft__fault("cuda.cuLaunchKernel")
              ? CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES
              : weft__cu.LaunchKernel(
                    ((cuda_kernel *)k)->fn, grid->groups[0], grid->groups[1],
                    grid->groups[2], grid->group_size[0], grid->group_size[1],
                    grid->group_size[2], grid->shared_bytes, cuda_stream(q),
                    nargs ? params : NULL, NULL);
    weft__free(block);
    if (res != CUDA_SUCCESS)
        return weft__cuda_fail(res, 0,
                               "cuLaunchKernel: %s with %ux%ux%u groups of "
                               "%ux%ux%u, %u shared bytes, on GPU %d",
                               k->name, grid->groups[0], grid->groups[1],
                               grid->groups[2], grid->group_size[0],
                               grid->group_size[1], grid->group_size[2],
                               grid->shared_bytes, cuda_ctx(q->ctx)->ordinal);
    return 0;
}
