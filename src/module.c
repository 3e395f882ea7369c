/*
 * Modules: one or more variants of the same kernels, built on every device
 * that a variant fits, and kernels looked up by name across those builds.
 */
#include "drivers/kcache.h"
#include "graph/kernel.h"
#include "runtime.h"

#include <stdio.h>
#include <string.h>

struct weft_module {
    weft_runtime *rt;
    char *name;           /* the first variant's with one, or "module" */
    weft__module **impl;  /* per device; NULL where no variant fits */
    pthread_mutex_t lock; /* guards kernels */
    weft_kernel *kernels;
    /* A copy of the first portable variant a device was built from (the
     * parameter types its kernels declare); NULL where none. */
    char *portable;
};

static weft__source_kind weft__internal_kind(weft_source_kind k)
{
    switch (k) {
    case WEFT_SOURCE_OPENCL_C:
        return WEFT__SRC_OPENCL_C;
    case WEFT_SOURCE_SPIRV:
        return WEFT__SRC_SPIRV;
    case WEFT_SOURCE_CL_BINARY:
        return WEFT__SRC_CL_BINARY;
    case WEFT_SOURCE_CUDA_CXX:
        return WEFT__SRC_CUDA_CXX;
    case WEFT_SOURCE_PTX:
        return WEFT__SRC_PTX;
    case WEFT_SOURCE_CUBIN:
        return WEFT__SRC_CUBIN;
    case WEFT_SOURCE_FATBIN:
        return WEFT__SRC_FATBIN;
    case WEFT_SOURCE_HOST:
        return WEFT__SRC_HOST_TABLE;
    case WEFT_SOURCE_PORTABLE:
        break;
    }
    return 0;
}

/*
 * Build variant v on device i. WEFT_ENOTSUP means "this device does not
 * take it": the caller tries the next variant.
 */
static int weft__build_variant(weft_module *m, unsigned i,
                               const weft_module_source *v)
{
    weft__device *dev = m->rt->devices[i];
    weft__module_source src = {weft__internal_kind(v->kind), v->data, v->size,
                               v->options, v->name};
    weft__context *ctx;
    char *text = NULL;
    int rc;

    if (v->kind == WEFT_SOURCE_PORTABLE) {
        src.kind = dev->drv->portable_kind;
        if (!src.kind)
            return weft__error(WEFT_ENOTSUP, "%s takes no portable source",
                               dev->drv->name);
        rc = weft__portable_translate(v->data, src.kind, v->name, &text);
        if (rc < 0)
            return rc;
        src.data = text;
        src.size = 0;
    }
    rc = weft__runtime_context(m->rt, i, &ctx);
    if (rc == 0)
        rc = weft__drv_module_create(ctx, &src, &m->impl[i]);
    weft__free(text);
    return rc;
}

static void weft__module_free(weft_module *m)
{
    weft_kernel *k, *next;

    for (k = m->kernels; k; k = next) {
        next = k->next;
        weft__free(k->portable_params);
        weft__free(k->impl);
        weft__free(k->name);
        weft__free(k);
    }
    for (unsigned i = 0; i < m->rt->ndevices; i++)
        if (m->impl[i])
            weft__drv_module_destroy(m->impl[i]);
    pthread_mutex_destroy(&m->lock);
    weft__free(m->portable);
    weft__free(m->impl);
    weft__free(m->name);
    weft__free(m);
}

/*
 * A device was built from portable source src: keep a copy of the first
 * such source (the parameter types its kernels declare).
 */
static int weft__keep_portable(weft_module *m, const char *src)
{
    if (!m->portable && !(m->portable = weft__strdup(src)))
        return weft__error(WEFT_ENOMEM, "weft_module_create: out of memory");
    return 0;
}

static int weft__check_variant(const weft_module_source *v, unsigned j)
{
    if (v->kind < WEFT_SOURCE_PORTABLE || v->kind > WEFT_SOURCE_HOST)
        return weft__error(WEFT_EINVAL,
                           "weft_module_create: variant %u has unknown kind "
                           "%d",
                           j, (int)v->kind);
    if (!v->data)
        return weft__error(WEFT_EINVAL,
                           "weft_module_create: variant %u (%s) has no data", j,
                           v->name ? v->name : "unnamed");
    if (v->kind == WEFT_SOURCE_HOST && v->size == 0)
        return weft__error(WEFT_EINVAL,
                           "weft_module_create: variant %u: a host table "
                           "needs its length in size",
                           j);
    return 0;
}

int weft_module_create(weft_runtime *rt, const weft_module_source *variants,
                       unsigned nvariants, weft_module **out)
{
    weft_module *m;
    unsigned built = 0;
    char why[512] = "";
    int rc;

    if (!rt || !variants || !nvariants || !out)
        return weft__error(WEFT_EINVAL, "weft_module_create: %s",
                           !rt         ? "runtime is NULL"
                           : !out      ? "result is NULL"
                           : !variants ? "variants is NULL"
                                       : "nvariants is 0");
    for (unsigned j = 0; j < nvariants; j++)
        if ((rc = weft__check_variant(&variants[j], j)) < 0)
            return rc;
    m = weft__calloc(1, sizeof *m);
    if (!m)
        return weft__error(WEFT_ENOMEM, "weft_module_create: out of memory");
    m->rt = rt;
    m->impl = weft__calloc(rt->ndevices, sizeof *m->impl);
    {
        const char *name = "module";

        for (unsigned j = nvariants; j-- > 0;)
            if (variants[j].name && variants[j].name[0])
                name = variants[j].name;
        m->name = weft__strdup(name);
    }
    if (!m->impl || !m->name) {
        weft__free(m->impl);
        weft__free(m->name);
        weft__free(m);
        return weft__error(WEFT_ENOMEM, "weft_module_create: out of memory");
    }
    pthread_mutex_init(&m->lock, NULL);

    for (unsigned i = 0; i < rt->ndevices; i++) {
        const weft_source_kind *pref = rt->devices[i]->drv->source_kinds;

        for (; pref && *pref && !m->impl[i]; pref++)
            for (unsigned j = 0; j < nvariants && !m->impl[i]; j++) {
                if (variants[j].kind != *pref)
                    continue;
                rc = weft__build_variant(m, i, &variants[j]);
                if (rc == WEFT_ENOTSUP) {
                    /* The last reason a device declined, for ENODEV. */
                    snprintf(why, sizeof why, " (%s: %s)", rt->devices[i]->name,
                             weft_last_error());
                    weft__debug("module", "%s does not take %s: %s",
                                rt->devices[i]->name,
                                variants[j].name ? variants[j].name
                                                 : "a variant",
                                weft_last_error());
                    continue;
                }
                if (rc == 0 && variants[j].kind == WEFT_SOURCE_PORTABLE)
                    rc = weft__keep_portable(m, variants[j].data);
                if (rc < 0) {
                    weft__error_prefix(rc, "module %s on device %u (%s)",
                                       variants[j].name ? variants[j].name
                                                        : "(unnamed)",
                                       i, rt->devices[i]->name);
                    weft__module_free(m);
                    return rc;
                }
            }
        built += m->impl[i] != NULL;
    }
    if (!built) {
        weft__module_free(m);
        return weft__error(WEFT_ENODEV,
                           "weft_module_create: none of the %u variants fits "
                           "any of the %u devices%s",
                           nvariants, rt->ndevices, why);
    }
    weft__runtime_live(rt, 1);
    *out = m;
    return 0;
}

int weft_module_create_portable(weft_runtime *rt, const char *source,
                                const char *options, weft_module **mod)
{
    weft_module_source v = {WEFT_SOURCE_PORTABLE, source, 0, options,
                            "portable"};

    if (!source)
        return weft__error(WEFT_EINVAL,
                           "weft_module_create_portable: source is NULL");
    return weft_module_create(rt, &v, 1, mod);
}

int weft_module_destroy(weft_module *mod)
{
    weft_runtime *rt;

    if (!mod)
        return 0;
    rt = mod->rt;
    pthread_mutex_lock(&mod->lock);
    for (weft_kernel *k = mod->kernels; k; k = k->next) {
        long g = __atomic_load_n(&k->graph_nodes, __ATOMIC_ACQUIRE);
        long e = __atomic_load_n(&k->exec_nodes, __ATOMIC_ACQUIRE);

        if (g > 0 || e > 0) {
            pthread_mutex_unlock(&mod->lock);
            return weft__error(WEFT_EBUSY,
                               "weft_module_destroy: kernel %s is used by %ld "
                               "nodes of live graphs and %ld of live "
                               "executable graphs; destroy those first",
                               k->name, g, e);
        }
    }
    pthread_mutex_unlock(&mod->lock);
    weft__module_free(mod);
    weft__runtime_live(rt, -1);
    return 0;
}

int weft_module_get_kernel(weft_module *mod, const char *name,
                           weft_kernel **out)
{
    weft_runtime *rt;
    weft_kernel *k;
    unsigned found = 0;
    int rc = 0;

    if (!mod || !name || !out)
        return weft__error(WEFT_EINVAL, "weft_module_get_kernel: %s is NULL",
                           !mod    ? "module"
                           : !name ? "name"
                                   : "result");
    if (!*name)
        return weft__error(WEFT_EINVAL,
                           "weft_module_get_kernel: name is empty");
    rt = mod->rt;
    pthread_mutex_lock(&mod->lock);
    for (k = mod->kernels; k; k = k->next)
        if (strcmp(k->name, name) == 0)
            goto done;
    k = weft__calloc(1, sizeof *k);
    if (!k || !(k->name = weft__strdup(name)) ||
        !(k->impl = weft__calloc(rt->ndevices, sizeof *k->impl))) {
        rc = weft__error(WEFT_ENOMEM, "weft_module_get_kernel: out of memory");
        goto fail;
    }
    for (unsigned i = 0; i < rt->ndevices; i++) {
        if (!mod->impl[i])
            continue;
        rc = weft__drv_kernel_get(mod->impl[i], name, &k->impl[i]);
        if (rc == WEFT_ENOTFOUND) {
            k->impl[i] = NULL;
            rc = 0;
            continue;
        }
        if (rc < 0) {
            weft__error_prefix(rc, "kernel %s on device %u (%s)", name, i,
                               rt->devices[i]->name);
            goto fail;
        }
        found++;
    }
    if (!found) {
        rc = weft__error(WEFT_ENOTFOUND,
                         "weft_module_get_kernel: no kernel named '%s' in "
                         "the module",
                         name);
        goto fail;
    }
    if (mod->portable) {
        rc = weft__portable_params(mod->portable, name, &k->portable_params,
                                   &k->nportable);
        /* A list the host translation refuses, which another compiler
         * took, is unknown; a kernel it does not define (a macro, another
         * variant) too. */
        if (rc == WEFT_EBUILD)
            weft_clear_error();
        if (rc == WEFT_ENOTFOUND || rc == WEFT_EBUILD)
            rc = 0;
        if (rc < 0)
            goto fail;
    }
    k->mod = mod;
    k->rt = rt;
    k->next = mod->kernels;
    mod->kernels = k;
done:
    pthread_mutex_unlock(&mod->lock);
    *out = k;
    return 0;
fail:
    pthread_mutex_unlock(&mod->lock);
    if (k) {
        weft__free(k->portable_params);
        weft__free(k->impl);
        weft__free(k->name);
        weft__free(k);
    }
    return rc;
}

const char *weft_module_name(const weft_module *mod)
{
    if (!mod) {
        weft__error(WEFT_EINVAL, "weft_module_name: module is NULL");
        return NULL;
    }
    return mod->name;
}

int weft_module_build_log(const weft_module *mod, const weft_device *dev,
                          char *buf, size_t size, size_t *length)
{
    const weft__device *d = weft__device_of(dev);
    const weft__module *impl;
    const char *log;
    size_t n;

    if (!mod || !dev)
        return weft__error(WEFT_EINVAL, "weft_module_build_log: %s is NULL",
                           mod ? "device" : "module");
    if (!buf && size)
        return weft__error(WEFT_EINVAL,
                           "weft_module_build_log: buf is NULL with size %zu",
                           size);
    if (d->props.index >= mod->rt->ndevices ||
        mod->rt->devices[d->props.index] != d)
        return weft__error(WEFT_EINVAL,
                           "weft_module_build_log: device %s is not a "
                           "device of the module's runtime",
                           d->name);
    impl = mod->impl[d->props.index];
    if (!impl)
        return weft__error(WEFT_ENOTFOUND,
                           "weft_module_build_log: module %s has no build "
                           "on device %u (%s): none of its variants fits it",
                           mod->name, d->props.index, d->name);
    log = impl->build_log ? impl->build_log : "";
    n = strlen(log);
    if (length)
        *length = n;
    if (size) {
        size_t c = n < size - 1 ? n : size - 1;

        memcpy(buf, log, c);
        buf[c] = '\0';
    }
    return 0;
}

int weft_kernel_supports(const weft_kernel *k, const weft_device *dev)
{
    const weft__device *d = weft__device_of(dev);

    if (!k || !d || d->props.index >= k->mod->rt->ndevices ||
        k->mod->rt->devices[d->props.index] != d)
        return 0;
    return k->impl[d->props.index] != NULL;
}

/*
 * The number of parameters of k as its builds tell it (the first build
 * that knows it, else the portable signature); WEFT_ENOTSUP, set, where
 * nothing does.
 */
static int weft__param_count(const weft_kernel *k, const char *fn, unsigned *n)
{
    for (unsigned i = 0; i < k->rt->ndevices; i++) {
        const weft__kernel *impl = weft__kernel_impl(k, i);

        if (impl && (impl->params_known || impl->count_known)) {
            *n = impl->nparams;
            return 0;
        }
    }
    if (k->portable_params) {
        *n = k->nportable;
        return 0;
    }
    return weft__error(WEFT_ENOTSUP,
                       "%s: no build of kernel %s tells its parameters", fn,
                       k->name);
}

int weft_kernel_param_count(const weft_kernel *k, unsigned *count)
{
    if (!k || !count)
        return weft__error(WEFT_EINVAL, "weft_kernel_param_count: %s is NULL",
                           k ? "count" : "kernel");
    return weft__param_count(k, "weft_kernel_param_count", count);
}

/* The type of parameter index that implementation i tells, or UNKNOWN. */
static weft_param_type weft__impl_type(const weft_kernel *k, unsigned i,
                                       unsigned index)
{
    const weft__kernel *impl = weft__kernel_impl(k, i);

    if (impl->params_known && impl->params)
        return impl->params[index];
    if (impl->some_params)
        return impl->some_params[index];
    return WEFT_PARAM_UNKNOWN;
}

int weft_kernel_param_info(const weft_kernel *k, unsigned index,
                           weft_param_info *info)
{
    weft_param_info out = {WEFT_PARAM_UNKNOWN, 0};
    size_t told = 0; /* a size a build tells (CUDA) */
    unsigned n = 0;
    int rc;

    if (!k || !info)
        return weft__error(WEFT_EINVAL, "weft_kernel_param_info: %s is NULL",
                           k ? "info" : "kernel");
    if ((rc = weft__param_count(k, "weft_kernel_param_info", &n)) < 0)
        return rc;
    if (index >= n)
        return weft__error(WEFT_ERANGE,
                           "weft_kernel_param_info: index %u, kernel %s has "
                           "%u parameters",
                           index, k->name, n);
    /* The builds that agree on the number: a type, else a size. */
    for (unsigned i = 0; i < k->rt->ndevices; i++) {
        const weft__kernel *impl = weft__kernel_impl(k, i);
        weft_param_type t;

        if (!impl || !(impl->params_known || impl->count_known) ||
            impl->nparams != n)
            continue;
        if (impl->param_sizes && !told)
            told = impl->param_sizes[index];
        t = weft__impl_type(k, i, index);
        if (out.type == WEFT_PARAM_UNKNOWN && t != WEFT_PARAM_UNKNOWN) {
            out.type = t;
            if (t == WEFT_PARAM_BYTES && impl->param_sizes)
                out.size = impl->param_sizes[index];
        }
    }
    /* as the portable source declares it */
    if (out.type == WEFT_PARAM_UNKNOWN && k->portable_params &&
        k->nportable == n)
        out.type = k->portable_params[index];
    if (out.type == WEFT_PARAM_BYTES && !out.size)
        out.size = told;
    else if (out.type == WEFT_PARAM_UNKNOWN)
        out.size = told;
    else if (out.type != WEFT_PARAM_BYTES)
        out.size = weft_param_type_size(out.type);
    *info = out;
    return 0;
}
