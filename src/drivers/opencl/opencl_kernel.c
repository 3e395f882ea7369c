/*
 * Modules and kernels of the OpenCL driver: programs built from OpenCL C,
 * SPIR-V or a device binary, kernels with their parameter types, launches.
 */
#include "opencl_internal.h"

#include <stdio.h>
#include <string.h>

/* The build log of prog on d, allocated; NULL if there is none. */
static char *ocl_build_log(cl_program prog, cl_device_id d)
{
    size_t n = 0;
    char *log;

    if (OCL("clGetProgramBuildInfo",
            weft__cl.GetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, 0, NULL,
                                         &n)) != CL_SUCCESS ||
        n == 0 || !(log = weft__malloc(n + 1)))
        return NULL;
    if (OCL("clGetProgramBuildInfo",
            weft__cl.GetProgramBuildInfo(prog, d, CL_PROGRAM_BUILD_LOG, n, log,
                                         NULL)) != CL_SUCCESS) {
        weft__free(log);
        return NULL;
    }
    log[n] = 0;
    weft__ocl_trim(log);
    return log;
}

int weft__ocl_module_create(weft__context *ctx, const weft__module_source *src,
                            weft__module **out)
{
    ocl_context *c = ocl_ctx(ctx);
    ocl_device *d = ocl_ctx_dev(ctx);
    const char *name = src->name ? src->name : "module";
    /* argument info lets kernel_get report the parameter types */
    static const char arg_info[] = "-cl-kernel-arg-info";
    ocl_module *m;
    char *opts = NULL;
    size_t optlen;
    cl_int rc, bstatus;
    int err;

    if (src->kind != WEFT__SRC_OPENCL_C && src->kind != WEFT__SRC_SPIRV &&
        src->kind != WEFT__SRC_CL_BINARY)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: %s: source kind %d cannot be loaded by "
                           "the OpenCL driver",
                           name, (int)src->kind);
    if (src->kind == WEFT__SRC_SPIRV && !d->il_core && !d->il_khr)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: %s: device %s takes no SPIR-V (no IL "
                           "support)",
                           name, d->base.name);
    if (src->kind != WEFT__SRC_OPENCL_C && src->size == 0)
        return weft__error(WEFT_EINVAL, "opencl: %s: binary of size 0", name);
    if (!(m = weft__calloc(1, sizeof *m)))
        return weft__error(WEFT_ENOMEM, "opencl: module");
    if (!(m->name = weft__strdup(name))) {
        weft__free(m);
        return weft__error(WEFT_ENOMEM, "opencl: module");
    }
    if ((err = weft__ocl_mutex_init(&m->lock)) < 0) {
        weft__free(m->name);
        weft__free(m);
        return err;
    }
    optlen = sizeof arg_info + 1 + (src->options ? strlen(src->options) : 0);
    if (!(opts = weft__malloc(optlen))) {
        err = weft__error(WEFT_ENOMEM, "opencl: build options");
        goto fail;
    }
    snprintf(opts, optlen, "%s %s", arg_info, src->options ? src->options : "");

    switch (src->kind) {
    case WEFT__SRC_OPENCL_C: {
        const char *text = src->data;
        size_t len = src->size ? src->size : strlen(text);

        m->prog = OCL_NEW(
            "clCreateProgramWithSource", rc,
            weft__cl.CreateProgramWithSource(c->cl, 1, &text, &len, &rc));
        break;
    }
    case WEFT__SRC_SPIRV:
        if (d->il_core)
            m->prog = OCL_NEW(
                "clCreateProgramWithIL", rc,
                weft__cl.CreateProgramWithIL(c->cl, src->data, src->size, &rc));
        else
            m->prog = OCL_NEW("clCreateProgramWithILKHR", rc,
                              d->il_khr(c->cl, src->data, src->size, &rc));
        break;
    default: {
        const unsigned char *bytes = src->data;

        m->prog =
            OCL_NEW("clCreateProgramWithBinary", rc,
                    weft__cl.CreateProgramWithBinary(
                        c->cl, 1, &d->id, &src->size, &bytes, &bstatus, &rc));
        if (m->prog && bstatus != CL_SUCCESS) {
            ocl_release_program(m->prog);
            m->prog = NULL;
            rc = bstatus;
        }
        break;
    }
    }
    if (!m->prog) {
        err =
            weft__ocl_fail(rc, "creating program %s on %s", name, d->base.name);
        goto fail;
    }
    rc = OCL("clBuildProgram",
             weft__cl.BuildProgram(m->prog, 1, &d->id, opts, NULL, NULL));
    if (rc != CL_SUCCESS) {
        char *log = ocl_build_log(m->prog, d->id);

        if (log)
            weft__info("opencl", "build log of %s on %s:\n%s", name,
                       d->base.name, log);
        err =
            weft__ocl_fail(rc, "clBuildProgram: %s on %s: %s", name,
                           d->base.name, log && *log ? log : "(no build log)");
        weft__free(log);
        goto fail;
    }
    /* Warnings too; no log is no error. */
    m->base.build_log = ocl_build_log(m->prog, d->id);
    weft_clear_error();
    weft__free(opts);
    *out = &m->base;
    return 0;
fail:
    weft__free(opts);
    if (m->prog)
        ocl_release_program(m->prog);
    pthread_mutex_destroy(&m->lock);
    weft__free(m->name);
    weft__free(m);
    return err;
}

static void ocl_kernel_free(ocl_kernel *k)
{
    if (k->cl)
        ocl_release_kernel(k->cl);
    pthread_mutex_destroy(&k->lock);
    weft__free(k->params);
    weft__free(k->sizes);
    weft__free(k->name);
    weft__free(k);
}

void weft__ocl_module_destroy(weft__module *mod)
{
    ocl_module *m = (ocl_module *)mod;
    ocl_kernel *k = m->kernels;

    while (k) {
        ocl_kernel *next = k->next;

        ocl_kernel_free(k);
        k = next;
    }
    ocl_release_program(m->prog);
    pthread_mutex_destroy(&m->lock);
    weft__free(m->base.build_log);
    weft__free(m->name);
    weft__free(m);
}

/*
 * The weft type of a by-value OpenCL C parameter type, by its name as the
 * argument info gives it (a typedef's own name: the portable dialect's
 * weft_* types); 0 if none fits.
 */
static weft_param_type ocl_scalar_type(const char *t)
{
    static const struct {
        const char *name;
        weft_param_type type;
    } map[] = {
        {"int", WEFT_PARAM_I32},          {"uint", WEFT_PARAM_U32},
        {"unsigned int", WEFT_PARAM_U32}, {"long", WEFT_PARAM_I64},
        {"ulong", WEFT_PARAM_U64},        {"unsigned long", WEFT_PARAM_U64},
        {"float", WEFT_PARAM_F32},        {"double", WEFT_PARAM_F64},
        {"weft_i32", WEFT_PARAM_I32},     {"weft_u32", WEFT_PARAM_U32},
        {"weft_i64", WEFT_PARAM_I64},     {"weft_u64", WEFT_PARAM_U64},
        {"weft_f32", WEFT_PARAM_F32},     {"weft_f64", WEFT_PARAM_F64},
    };

    for (size_t i = 0; i < WEFT__COUNTOF(map); i++)
        if (strcmp(t, map[i].name) == 0)
            return map[i].type;
    return (weft_param_type)0;
}

/*
 * Parameter types from the argument info, where the implementation keeps
 * it (programs built from source with -cl-kernel-arg-info) and every type
 * maps onto a weft type; otherwise the count, and in some_params the
 * types that map (0 for the others).
 */
static int ocl_kernel_params(ocl_kernel *k, const char *devname)
{
    unsigned known = 0;
    cl_uint n;
    cl_int rc;

    rc =
        OCL("clGetKernelInfo", weft__cl.GetKernelInfo(k->cl, CL_KERNEL_NUM_ARGS,
                                                      sizeof n, &n, NULL));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetKernelInfo: arguments of %s on %s",
                              k->name, devname);
    k->base.nparams = n;
    k->base.count_known = 1;
    k->base.params_known = 0;
    if (n == 0) {
        k->base.params_known = 1;
        return 0;
    }
    if (!(k->params = weft__calloc(n, sizeof *k->params)) ||
        !(k->sizes = weft__calloc(n, sizeof *k->sizes)))
        return weft__error(WEFT_ENOMEM, "opencl: parameters of %s", k->name);
    for (cl_uint i = 0; i < n; i++) {
        cl_kernel_arg_address_qualifier aq;
        char type[64];
        weft_param_type t;

        if (OCL("clGetKernelArgInfo",
                weft__cl.GetKernelArgInfo(
                    k->cl, i, CL_KERNEL_ARG_ADDRESS_QUALIFIER, sizeof aq, &aq,
                    NULL)) != CL_SUCCESS ||
            OCL("clGetKernelArgInfo",
                weft__cl.GetKernelArgInfo(k->cl, i, CL_KERNEL_ARG_TYPE_NAME,
                                          sizeof type, type, NULL)) !=
                CL_SUCCESS)
            break; /* the build kept no argument info */
        type[sizeof type - 1] = 0;
        weft__ocl_trim(type);
        if (aq == CL_KERNEL_ARG_ADDRESS_GLOBAL ||
            aq == CL_KERNEL_ARG_ADDRESS_CONSTANT) {
            k->params[i] = WEFT_PARAM_BUFFER;
            k->sizes[i] = sizeof(uint64_t);
        } else if (aq == CL_KERNEL_ARG_ADDRESS_LOCAL) {
            k->params[i] = WEFT_PARAM_LOCAL;
            k->sizes[i] = 0;
        } else if ((t = ocl_scalar_type(type)) != 0) {
            k->params[i] = t;
            k->sizes[i] = weft_param_type_size(t);
        } else {
            continue;
        }
        known++;
    }
    if (known == n) {
        k->base.params = k->params;
        k->base.param_sizes = k->sizes;
        k->base.params_known = 1;
    } else if (known) {
        k->base.some_params = k->params;
    }
    return 0;
}

int weft__ocl_kernel_get(weft__module *mod, const char *name,
                         weft__kernel **out)
{
    ocl_module *m = (ocl_module *)mod;
    const char *devname = mod->ctx->dev->name;
    ocl_kernel *k;
    cl_int rc;
    int err;

    pthread_mutex_lock(&m->lock);
    for (k = m->kernels; k; k = k->next)
        if (strcmp(k->name, name) == 0)
            goto found;
    if (!(k = weft__calloc(1, sizeof *k))) {
        err = weft__error(WEFT_ENOMEM, "opencl: kernel %s", name);
        goto fail;
    }
    if ((err = weft__ocl_mutex_init(&k->lock)) < 0) {
        weft__free(k);
        goto fail;
    }
    if (!(k->name = weft__strdup(name))) {
        err = weft__error(WEFT_ENOMEM, "opencl: kernel %s", name);
        ocl_kernel_free(k);
        goto fail;
    }
    k->base.name = k->name;
    k->cl = OCL_NEW("clCreateKernel", rc,
                    weft__cl.CreateKernel(m->prog, name, &rc));
    if (!k->cl) {
        err = rc == CL_INVALID_KERNEL_NAME
                  ? weft__driver_error(WEFT_ENOTFOUND, "opencl", rc,
                                       "CL_INVALID_KERNEL_NAME",
                                       "clCreateKernel: no kernel %s in %s "
                                       "on %s",
                                       name, m->name, devname)
                  : weft__ocl_fail(rc, "clCreateKernel: %s in %s on %s", name,
                                   m->name, devname);
        ocl_kernel_free(k);
        goto fail;
    }
    if ((err = ocl_kernel_params(k, devname)) < 0) {
        ocl_kernel_free(k);
        goto fail;
    }
    k->next = m->kernels;
    m->kernels = k;
found:
    pthread_mutex_unlock(&m->lock);
    *out = &k->base;
    return 0;
fail:
    pthread_mutex_unlock(&m->lock);
    return err;
}

/*
 * Arguments are kernel state in OpenCL, so setting them and enqueueing is
 * one critical section per kernel: two threads launching the same kernel
 * cannot mix their arguments.
 */
int weft__ocl_launch(weft__queue *q, weft__kernel *kernel,
                     const weft__grid *grid, const weft__karg *args,
                     unsigned nargs)
{
    ocl_kernel *k = (ocl_kernel *)kernel;
    ocl_queue *oq = (ocl_queue *)q;
    size_t gws[3], lws[3];
    cl_uint dims = 1;
    cl_mem *oneoff = NULL;
    unsigned noneoff = 0;
    cl_kernel kcl = k->cl;
    cl_int rc = CL_SUCCESS;
    int err = 0;

    if (grid->shared_bytes)
        return weft__error(WEFT_ENOTSUP,
                           "launch of %s: OpenCL takes group-local memory as "
                           "a LOCAL argument, not as %u dynamic bytes",
                           k->name, grid->shared_bytes);
    for (unsigned i = 0; i < 3; i++) {
        lws[i] = grid->group_size[i];
        gws[i] = (size_t)grid->groups[i] * grid->group_size[i];
        if (i > 0 && gws[i] > 1)
            dims = i + 1;
    }
    if (oq->cap && (err = weft__ocl_capture_kernel(oq, k, &kcl)) < 0)
        return err;
    pthread_mutex_lock(&k->lock);
    for (unsigned i = 0; i < nargs && rc == CL_SUCCESS; i++) {
        const weft__karg *a = &args[i];

        switch (a->type) {
        case WEFT_PARAM_BUFFER: {
            ocl_mem *m = (ocl_mem *)a->u.buf.mem;
            cl_mem arg = m ? m->cl : NULL;
            int one = 0;

            if (m && m->svm) {
                rc = OCL("clSetKernelArgSVMPointer",
                         weft__cl.SetKernelArgSVMPointer(
                             kcl, i, (char *)m->svm + a->u.buf.offset));
                break;
            }
            if (m && a->u.buf.offset) {
                if (!oneoff &&
                    !(oneoff = weft__calloc(nargs, sizeof *oneoff))) {
                    err = weft__error(WEFT_ENOMEM, "opencl: launch of %s",
                                      k->name);
                    goto out;
                }
                err = weft__ocl_sub_buffer(q, m, a->u.buf.offset, k->name, i,
                                           &arg, &one);
                if (err < 0)
                    goto out;
                if (one)
                    oneoff[noneoff++] = arg;
            }
            rc = OCL("clSetKernelArg",
                     weft__cl.SetKernelArg(kcl, i, sizeof arg, &arg));
            break;
        }
        case WEFT_PARAM_LOCAL:
            rc = OCL("clSetKernelArg",
                     weft__cl.SetKernelArg(kcl, i, a->size, NULL));
            break;
        default:
            rc = OCL("clSetKernelArg",
                     weft__cl.SetKernelArg(kcl, i, a->size, a->u.value));
            break;
        }
        if (rc != CL_SUCCESS) {
            err = weft__ocl_fail(rc,
                                 "clSetKernelArg: launch of %s, argument %u "
                                 "on %s",
                                 k->name, i, ocl_qname(q));
            goto out;
        }
    }
    if (oq->cap) {
        err = weft__ocl_capture_launch(oq, k, kcl, dims, gws, lws, oneoff,
                                       &noneoff);
        goto out;
    }
    rc = OCL("clEnqueueNDRangeKernel",
             weft__cl.EnqueueNDRangeKernel(ocl_q(q), k->cl, dims, NULL, gws,
                                           lws, 0, NULL, NULL));
    if (rc != CL_SUCCESS)
        err = weft__ocl_fail(rc, "clEnqueueNDRangeKernel: %s on %s", k->name,
                             ocl_qname(q));
out:
    pthread_mutex_unlock(&k->lock);
    /* the queued launch keeps them alive until it completes */
    for (unsigned i = 0; i < noneoff; i++)
        ocl_release_memobject(oneoff[i]);
    weft__free(oneoff);
    return err;
}

int weft__opencl_module_binary(weft__module *mod, void **bytes, size_t *size)
{
    ocl_module *m = (ocl_module *)mod;
    unsigned char *buf;
    size_t n = 0;
    cl_int rc;

    if (!mod || !bytes || !size || mod->drv != &weft__driver_opencl)
        return weft__error(WEFT_EINVAL, "opencl: module_binary: %s",
                           !mod || mod->drv == &weft__driver_opencl
                               ? "NULL argument"
                               : "not an OpenCL module");
    rc = OCL("clGetProgramInfo",
             weft__cl.GetProgramInfo(m->prog, CL_PROGRAM_BINARY_SIZES, sizeof n,
                                     &n, NULL));
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetProgramInfo: binary size of %s",
                              m->name);
    if (n == 0)
        return weft__error(WEFT_ENOTSUP,
                           "opencl: module %s has no device binary", m->name);
    if (!(buf = weft__malloc(n)))
        return weft__error(WEFT_ENOMEM, "opencl: %zu-byte binary", n);
    rc = OCL("clGetProgramInfo",
             weft__cl.GetProgramInfo(m->prog, CL_PROGRAM_BINARIES, sizeof buf,
                                     &buf, NULL));
    if (rc != CL_SUCCESS) {
        weft__free(buf);
        return weft__ocl_fail(rc, "clGetProgramInfo: binary of %s", m->name);
    }
    *bytes = buf;
    *size = n;
    return 0;
}
