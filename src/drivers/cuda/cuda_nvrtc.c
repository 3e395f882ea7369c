/*
 * CUDA C++ to cubin or PTX with NVRTC, loaded at run time like libcuda.
 * Kept apart from the driver proper so that it can be used, and tested,
 * on a machine with NVRTC but no GPU.
 */
#include "internal.h"

#include "../../base/os.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Newest first: an older NVRTC may not know the device's architecture. */
const char *const weft__cuda_nvrtc_names[] = {
    "libnvrtc.so.13", "libnvrtc.so.12", "libnvrtc.so.11.2", "libnvrtc.so", NULL,
};

/*
 * Loaded once and kept for the life of the process: NVRTC holds no device
 * state, and unloading it while another thread compiles would need a
 * reference count on every compile for no gain. nvrtc_lock guards loading
 * only; nvrtc.lib is written once, under the lock, before nvrtc_loaded is
 * set with release order, so readers that see nvrtc_loaded see the table.
 */
static pthread_mutex_t nvrtc_lock = PTHREAD_MUTEX_INITIALIZER;
static weft__nvrtc_api nvrtc;
static int nvrtc_loaded;

static int nvrtc_load_locked(void)
{
    char tried[512] = "";
    void *lib = NULL;
    weft__nvrtc_api api;

    for (unsigned i = 0; weft__cuda_nvrtc_names[i] && !lib; i++)
        if (weft__dl_open(weft__cuda_nvrtc_names[i], "cuda.dlopen(libnvrtc)",
                          &lib) < 0 &&
            !tried[0])
            weft__strlcpy(tried, weft_last_error(), sizeof tried);
    if (!lib)
        return weft__error(WEFT_ENOTSUP,
                           "NVRTC not found (libnvrtc.so.13/.12/.11.2/.so): %s",
                           tried);

    memset(&api, 0, sizeof api);
    api.lib = lib;
#define NVRTC_RESOLVE(m, type, req, sym)                                       \
    do {                                                                       \
        void *p = weft__dl_sym(lib, sym, "cuda.dlsym(" sym ")");               \
        if (!p && (req)) {                                                     \
            weft__dl_close(lib);                                               \
            return weft__error(WEFT_ENOTSUP, "NVRTC lacks %s", sym);           \
        }                                                                      \
        memcpy(&api.m, &p, sizeof p);                                          \
    } while (0);
    WEFT__NVRTC_FUNCS(NVRTC_RESOLVE)
#undef NVRTC_RESOLVE
    if (api.Version(&api.major, &api.minor) != NVRTC_SUCCESS) {
        weft__dl_close(lib);
        return weft__error(WEFT_ENOTSUP, "nvrtcVersion failed");
    }
    nvrtc = api;
    __atomic_store_n(&nvrtc_loaded, 1, __ATOMIC_RELEASE);
    weft__debug("cuda", "NVRTC %d.%d loaded", api.major, api.minor);
    return 0;
}

static int nvrtc_load(void)
{
    int rc = 0;

    if (__atomic_load_n(&nvrtc_loaded, __ATOMIC_ACQUIRE))
        return 0;
    pthread_mutex_lock(&nvrtc_lock);
    if (!nvrtc_loaded)
        rc = nvrtc_load_locked();
    pthread_mutex_unlock(&nvrtc_lock);
    return rc;
}

static int nvrtc_fail(nvrtcResult res, const char *what)
{
    const char *msg = nvrtc.GetErrorString ? nvrtc.GetErrorString(res) : NULL;
    int code = res == NVRTC_ERROR_OUT_OF_MEMORY ? WEFT_ENOMEM : WEFT_EBUILD;

    return weft__driver_error(code, "cuda", res, msg ? msg : "NVRTC_ERROR",
                              "%s failed", what);
}

/*
 * Pick the architecture: the device's own (cubin) if NVRTC knows it, else
 * the newest one below it (PTX, which the driver compiles forward).
 * *arch is XY; *cubin 1 for sm_XY.
 */
static int nvrtc_pick_arch(int want, int *arch, unsigned *cubin)
{
    int archs[256];
    int n = 0, best = 0;

    *arch = want;
    *cubin = nvrtc.GetCUBINSize != NULL;
    if (!nvrtc.GetNumSupportedArchs || !nvrtc.GetSupportedArchs ||
        nvrtc.GetNumSupportedArchs(&n) != NVRTC_SUCCESS || n <= 0 ||
        n > (int)WEFT__COUNTOF(archs) ||
        nvrtc.GetSupportedArchs(archs) != NVRTC_SUCCESS)
        return 0; /* cannot ask: try the device's own */
    for (int i = 0; i < n; i++) {
        if (archs[i] == want)
            return 0;
        if (archs[i] < want && archs[i] > best)
            best = archs[i];
    }
    if (!best)
        return weft__error(WEFT_ENOTSUP,
                           "NVRTC %d.%d cannot compile for sm_%d (the oldest "
                           "architecture it knows is sm_%d)",
                           nvrtc.major, nvrtc.minor, want, archs[0]);
    *arch = best;
    *cubin = 0;
    return 0;
}

/*
 * Split options at blanks into argv, which points into one allocation
 * (*block) that also holds the copy of the text. No quoting: NVRTC flags
 * take their values after '=' without blanks.
 */
static int nvrtc_split_options(const char *options, const char *arch_flag,
                               const char ***argv, int *argc, void **block)
{
    size_t len = options ? strlen(options) : 0;
    size_t nmax = len / 2 + 2; /* tokens + arch flag */
    const char **v;
    char *text;
    int n = 0;

    *block = weft__malloc(nmax * sizeof *v + len + 1);
    if (!*block)
        return weft__error(WEFT_ENOMEM, "NVRTC options");
    v = *block;
    text = (char *)(v + nmax);
    memcpy(text, options ? options : "", len + 1);
    for (char *p = text; *p;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            *p++ = '\0';
        if (!*p)
            break;
        v[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
    }
    if (arch_flag)
        v[n++] = arch_flag;
    *argv = v;
    *argc = n;
    return 0;
}

static int options_name_arch(const char *options)
{
    return options &&
           (strstr(options, "-arch") || strstr(options, "--gpu-architecture"));
}

/* The program's log, weft__malloc'd, trailing blank lines cut; NULL if
 * there is none or it cannot be had. */
static char *nvrtc_log(nvrtcProgram prog)
{
    size_t size = 0;
    char *log = NULL;

    if (!weft__fault("cuda.nvrtcGetProgramLogSize") &&
        nvrtc.GetProgramLogSize(prog, &size) == NVRTC_SUCCESS && size > 0 &&
        (log = weft__malloc(size + 1)) != NULL) {
        if (weft__fault("cuda.nvrtcGetProgramLog") ||
            nvrtc.GetProgramLog(prog, log) != NVRTC_SUCCESS)
            log[0] = '\0';
        log[size] = '\0';
        /* The log ends in blank lines; the detail goes on after it. */
        for (size_t n = strlen(log);
             n > 0 && (log[n - 1] == '\n' || log[n - 1] == ' '); n--)
            log[n - 1] = '\0';
    }
    weft_clear_error();
    return log;
}

/* Copy the program's log into the detail of a WEFT_EBUILD. */
static int nvrtc_build_error(nvrtcProgram prog, nvrtcResult res,
                             const char *name, const char *arch_flag)
{
    char *log = nvrtc_log(prog);
    const char *msg = nvrtc.GetErrorString(res);

    weft__driver_error(
        WEFT_EBUILD, "cuda", res, msg ? msg : "NVRTC_ERROR_COMPILATION",
        "NVRTC %d.%d could not compile %s (%s):\n%s", nvrtc.major, nvrtc.minor,
        name, arch_flag ? arch_flag : "arch from options",
        log && log[0] ? log : "(no log)");
    weft__free(log);
    return WEFT_EBUILD;
}

int weft__cuda_nvrtc_compile(const char *src, size_t len, const char *name,
                             const char *options, int cc_major, int cc_minor,
                             weft__cuda_image *out)
{
    char arch_flag[64];
    char *text = NULL;
    const char **argv = NULL;
    void *block = NULL;
    nvrtcProgram prog = NULL;
    nvrtcResult res;
    size_t size = 0;
    unsigned cubin;
    int argc = 0, arch, rc;
    int own_arch = !options_name_arch(options);

    memset(out, 0, sizeof *out);
    if (!name)
        name = "weft.cu";
    if ((rc = nvrtc_load()) < 0)
        return rc;
    arch = 0;
    cubin = 0;
    if (own_arch &&
        (rc = nvrtc_pick_arch(cc_major * 10 + cc_minor, &arch, &cubin)) < 0)
        return rc;
    snprintf(arch_flag, sizeof arch_flag, "--gpu-architecture=%s_%d",
             cubin ? "sm" : "compute", arch);
    if (len) {
        /* NVRTC wants a NUL-terminated text. */
        if (!(text = weft__malloc(len + 1)))
            return weft__error(WEFT_ENOMEM, "copy of %s", name);
        memcpy(text, src, len);
        text[len] = '\0';
        src = text;
    }
    if ((rc = nvrtc_split_options(options, own_arch ? arch_flag : NULL, &argv,
                                  &argc, &block)) < 0)
        goto done;

    res = weft__fault("cuda.nvrtcCreateProgram")
              ? NVRTC_ERROR_OUT_OF_MEMORY
              : nvrtc.CreateProgram(&prog, src, name, 0, NULL, NULL);
    if (res != NVRTC_SUCCESS) {
        prog = NULL;
        rc = nvrtc_fail(res, "nvrtcCreateProgram");
        goto done;
    }
    res = weft__fault("cuda.nvrtcCompileProgram")
              ? NVRTC_ERROR_COMPILATION
              : nvrtc.CompileProgram(prog, argc, argv);
    if (res != NVRTC_SUCCESS) {
        rc = nvrtc_build_error(prog, res, name, own_arch ? arch_flag : NULL);
        goto done;
    }

    /*
     * With an architecture from the options weft cannot tell which output
     * exists: a cubin if there is one, else PTX.
     */
    if (!own_arch)
        cubin = nvrtc.GetCUBINSize &&
                nvrtc.GetCUBINSize(prog, &size) == NVRTC_SUCCESS && size > 0;
    res = weft__fault("cuda.nvrtcGetSize") ? NVRTC_ERROR_OUT_OF_MEMORY
          : cubin                          ? nvrtc.GetCUBINSize(prog, &size)
                                           : nvrtc.GetPTXSize(prog, &size);
    if (res != NVRTC_SUCCESS || size == 0) {
        rc = res != NVRTC_SUCCESS
                 ? nvrtc_fail(res,
                              cubin ? "nvrtcGetCUBINSize" : "nvrtcGetPTXSize")
                 : weft__error(WEFT_EBUILD, "NVRTC produced nothing for %s",
                               name);
        goto done;
    }
    if (!(out->data = weft__malloc(size + 1))) {
        rc = weft__error(WEFT_ENOMEM, "image of %s (%zu bytes)", name, size);
        goto done;
    }
    res = weft__fault("cuda.nvrtcGetBytes")
              ? NVRTC_ERROR_OUT_OF_MEMORY
              : (cubin ? nvrtc.GetCUBIN : nvrtc.GetPTX)(prog, out->data);
    if (res != NVRTC_SUCCESS) {
        weft__free(out->data);
        out->data = NULL;
        rc = nvrtc_fail(res, cubin ? "nvrtcGetCUBIN" : "nvrtcGetPTX");
        goto done;
    }
    ((char *)out->data)[size] = '\0';
    out->size = size;
    out->is_cubin = cubin;
    out->arch = own_arch ? arch : 0;
    out->log = nvrtc_log(prog); /* warnings; none is no error */
    rc = 0;
done:
    if (prog)
        nvrtc.DestroyProgram(&prog);
    weft__free(block);
    weft__free(text);
    return rc;
}

void weft__cuda_image_free(weft__cuda_image *img)
{
    weft__free(img->log);
    weft__free(img->data);
    memset(img, 0, sizeof *img);
}
