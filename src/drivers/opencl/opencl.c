/*
 * The OpenCL driver: discovery (platforms, devices and what they can do)
 * and the driver table. Contexts, queues, events and host functions are in
 * opencl_queue.c, memory and copies in opencl_mem.c, modules and launches
 * in opencl_kernel.c, native graphs in opencl_graph.c, the ICD loader and
 * error translation in opencl_lib.c.
 */
#include "opencl_internal.h"

#include "../../base/options.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* NVIDIA's device attribute query (cl_nv_device_attribute_query). */
#ifndef CL_DEVICE_PCI_BUS_ID_NV
#define CL_DEVICE_PCI_BUS_ID_NV 0x4008
#endif
#ifndef CL_DEVICE_PCI_SLOT_ID_NV
#define CL_DEVICE_PCI_SLOT_ID_NV 0x4009
#endif
#ifndef CL_DEVICE_PCI_DOMAIN_ID_NV
#define CL_DEVICE_PCI_DOMAIN_ID_NV 0x400A
#endif

/* ---- discovery --------------------------------------------------------- */

void weft__ocl_trim(char *s)
{
    size_t n = strlen(s);

    while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
        s[--n] = 0;
}

/* A string property of a device, allocated; NULL with *rc on failure. */
static char *ocl_device_string(cl_device_id d, cl_device_info what, cl_int *rc)
{
    size_t n = 0;
    char *s;

    *rc = OCL("clGetDeviceInfo", weft__cl.GetDeviceInfo(d, what, 0, NULL, &n));
    if (*rc != CL_SUCCESS)
        return NULL;
    if (!(s = weft__malloc(n + 1))) {
        *rc = CL_OUT_OF_HOST_MEMORY;
        return NULL;
    }
    *rc = OCL("clGetDeviceInfo", weft__cl.GetDeviceInfo(d, what, n, s, NULL));
    if (*rc != CL_SUCCESS) {
        weft__free(s);
        return NULL;
    }
    s[n] = 0;
    weft__ocl_trim(s);
    return s;
}

static cl_int ocl_device_text(cl_device_id d, cl_device_info what, char *dst,
                              size_t cap)
{
    cl_int rc;
    char *s = ocl_device_string(d, what, &rc);

    if (s) {
        weft__strlcpy(dst, s, cap);
        weft__free(s);
    }
    return rc;
}

static cl_int ocl_platform_text(cl_platform_id p, cl_platform_info what,
                                char *dst, size_t cap)
{
    size_t n = 0;
    char *s;
    cl_int rc;

    rc = OCL("clGetPlatformInfo",
             weft__cl.GetPlatformInfo(p, what, 0, NULL, &n));
    if (rc != CL_SUCCESS)
        return rc;
    if (!(s = weft__malloc(n + 1)))
        return CL_OUT_OF_HOST_MEMORY;
    rc =
        OCL("clGetPlatformInfo", weft__cl.GetPlatformInfo(p, what, n, s, NULL));
    if (rc == CL_SUCCESS) {
        s[n] = 0;
        weft__ocl_trim(s);
        weft__strlcpy(dst, s, cap);
    }
    weft__free(s);
    return rc;
}

static cl_int ocl_device_get(cl_device_id d, cl_device_info what, size_t size,
                             void *out)
{
    return OCL("clGetDeviceInfo",
               weft__cl.GetDeviceInfo(d, what, size, out, NULL));
}

static cl_int ocl_device_get_size(cl_device_id d, cl_device_info what,
                                  size_t *size)
{
    return OCL("clGetDeviceInfo",
               weft__cl.GetDeviceInfo(d, what, 0, NULL, size));
}

/* "OpenCL 3.0 ..." -> 300; 0 if unreadable. */
static unsigned ocl_parse_version(const char *s)
{
    unsigned major = 0, minor = 0;

    if (sscanf(s, "OpenCL %u.%u", &major, &minor) != 2)
        return 0;
    return major * 100 + minor;
}

/* Whether the space-separated list exts names ext. */
static int ocl_has_ext(const char *exts, const char *ext)
{
    size_t n = strlen(ext);

    for (const char *p = exts; (p = strstr(p, ext)) != NULL; p += n)
        if ((p == exts || p[-1] == ' ') && (p[n] == ' ' || p[n] == 0))
            return 1;
    return 0;
}

/*
 * The PCI address, where an extension tells it: cl_khr_pci_bus_info, or
 * NVIDIA's attribute query, whose slot id packs device << 3 | function.
 * Optional: a failure leaves it empty.
 */
static void ocl_pci_bus_id(ocl_device *d, const char *exts)
{
    if (ocl_has_ext(exts, "cl_khr_pci_bus_info")) {
        cl_device_pci_bus_info_khr info;

        if (ocl_device_get(d->id, CL_DEVICE_PCI_BUS_INFO_KHR, sizeof info,
                           &info) == CL_SUCCESS) {
            snprintf(d->base.pci_bus_id, sizeof d->base.pci_bus_id,
                     "%04x:%02x:%02x.%x", info.pci_domain, info.pci_bus,
                     info.pci_device, info.pci_function);
            return;
        }
    }
    if (ocl_has_ext(exts, "cl_nv_device_attribute_query")) {
        cl_uint bus, slot, domain = 0;

        if (ocl_device_get(d->id, CL_DEVICE_PCI_BUS_ID_NV, sizeof bus, &bus) ==
                CL_SUCCESS &&
            ocl_device_get(d->id, CL_DEVICE_PCI_SLOT_ID_NV, sizeof slot,
                           &slot) == CL_SUCCESS) {
            if (ocl_device_get(d->id, CL_DEVICE_PCI_DOMAIN_ID_NV, sizeof domain,
                               &domain) != CL_SUCCESS)
                domain = 0;
            snprintf(d->base.pci_bus_id, sizeof d->base.pci_bus_id,
                     "%04x:%02x:%02x.%x", domain & 0xffff, bus & 0xff,
                     (slot >> 3) & 0x1f, slot & 7);
        }
    }
}

/* The platform's command-buffer entry points, looked up on first need. */
static const ocl_cmdbuf_api *ocl_cmdbuf_resolve(ocl_platform *p)
{
    ocl_cmdbuf_api *a = &p->cmdbuf;

    if (a->resolved)
        return a->ok ? a : NULL;
    a->resolved = 1;
#define OCL_RESOLVE(field, type, name)                                         \
    a->field =                                                                 \
        (type)weft__cl.GetExtensionFunctionAddressForPlatform(p->id, name)
    OCL_RESOLVE(create, clCreateCommandBufferKHR_fn,
                "clCreateCommandBufferKHR");
    OCL_RESOLVE(finalize, clFinalizeCommandBufferKHR_fn,
                "clFinalizeCommandBufferKHR");
    OCL_RESOLVE(release, clReleaseCommandBufferKHR_fn,
                "clReleaseCommandBufferKHR");
    OCL_RESOLVE(enqueue, clEnqueueCommandBufferKHR_fn,
                "clEnqueueCommandBufferKHR");
    OCL_RESOLVE(ndrange, clCommandNDRangeKernelKHR_fn,
                "clCommandNDRangeKernelKHR");
    OCL_RESOLVE(copy, ocl_any_fn, "clCommandCopyBufferKHR");
    OCL_RESOLVE(fill, ocl_any_fn, "clCommandFillBufferKHR");
    OCL_RESOLVE(barrier, ocl_any_fn, "clCommandBarrierWithWaitListKHR");
#undef OCL_RESOLVE
    a->ok = a->create && a->finalize && a->release && a->enqueue &&
            a->ndrange && a->copy && a->fill && a->barrier;
    if (!a->ok)
        weft__info("opencl",
                   "%s lists cl_khr_command_buffer but not all of its entry "
                   "points: no native graphs",
                   p->base.name);
    return a->ok ? a : NULL;
}

/*
 * Native graphs need cl_khr_command_buffer at a version whose ABI weft
 * knows (0.9.x: it is provisional, and 0.9.5 changed it), the entry points,
 * and command buffers that take weft's queues as they are (in order,
 * profiling where the device can). Optional: anything missing or
 * unreadable leaves d->cmdbuf NULL.
 */
static void ocl_cmdbuf_probe(ocl_platform *p, ocl_device *d, const char *exts)
{
    cl_command_queue_properties ours =
        d->profiling ? CL_QUEUE_PROFILING_ENABLE : 0;
    cl_command_queue_properties required = 0, supported = 0;
    cl_device_command_buffer_capabilities_khr caps = 0;
    cl_name_version *list = NULL;
    cl_version version = 0;
    const ocl_cmdbuf_api *api;
    size_t n = 0;

    if (!ocl_has_ext(exts, "cl_khr_command_buffer"))
        return;
    /* Only OpenCL 3.0 devices say which version of it they have. */
    if (d->version < 300 || p->version < 300 ||
        ocl_device_get_size(d->id, CL_DEVICE_EXTENSIONS_WITH_VERSION, &n) !=
            CL_SUCCESS ||
        !(list = weft__malloc(n ? n : 1))) {
        weft_clear_error();
        return;
    }
    if (ocl_device_get(d->id, CL_DEVICE_EXTENSIONS_WITH_VERSION, n, list) ==
        CL_SUCCESS)
        for (size_t i = 0; i < n / sizeof *list; i++)
            if (!strcmp(list[i].name, "cl_khr_command_buffer"))
                version = list[i].version;
    weft__free(list);
    if (CL_VERSION_MAJOR(version) != 0 || CL_VERSION_MINOR(version) != 9) {
        weft__info("opencl",
                   "%s: cl_khr_command_buffer %u.%u.%u is a version weft "
                   "does not know: no native graphs",
                   d->base.name, (unsigned)CL_VERSION_MAJOR(version),
                   (unsigned)CL_VERSION_MINOR(version),
                   (unsigned)CL_VERSION_PATCH(version));
        return;
    }
    if (ocl_device_get(d->id,
                       CL_DEVICE_COMMAND_BUFFER_REQUIRED_QUEUE_PROPERTIES_KHR,
                       sizeof required, &required) != CL_SUCCESS ||
        ocl_device_get(d->id, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR,
                       sizeof caps, &caps) != CL_SUCCESS ||
        (required & ~ours))
        return;
    /* 0.9.5 also says which queue properties command buffers take. */
    if (CL_VERSION_PATCH(version) >= 5 &&
        ocl_device_get(d->id, 0x129A /* ..._SUPPORTED_QUEUE_PROPERTIES_KHR */,
                       sizeof supported, &supported) == CL_SUCCESS &&
        (ours & ~supported))
        return;
    if (!(api = ocl_cmdbuf_resolve(p)))
        return;
    d->cmdbuf = api;
    d->cmdbuf_v5 = CL_VERSION_PATCH(version) >= 5;
    d->cmdbuf_simultaneous =
        (caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR) != 0;
}

/*
 * What only some devices tell (extensions, later versions): optional, a
 * failure leaves the feature off.
 */
static void ocl_device_optional(ocl_platform *p, ocl_device *d,
                                const char *exts)
{
    weft_device_info *pr = &d->base.props;
    cl_bool unified = CL_FALSE;

    /* Deprecated since 2.0 but still answered. */
    if (ocl_device_get(d->id, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified,
                       &unified) == CL_SUCCESS)
        pr->unified_memory = unified == CL_TRUE;
    if (d->version >= 200) {
        cl_device_svm_capabilities svm = 0;

        if (ocl_device_get(d->id, CL_DEVICE_SVM_CAPABILITIES, sizeof svm,
                           &svm) == CL_SUCCESS)
            pr->svm = (svm & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER) != 0;
    }
    if (d->version >= 201 && p->version >= 201 &&
        weft__cl.CreateProgramWithIL) {
        cl_int irc;
        char *il = ocl_device_string(d->id, CL_DEVICE_IL_VERSION, &irc);

        d->il_core = il && strstr(il, "SPIR-V") != NULL;
        weft__free(il);
    }
    if (!d->il_core && ocl_has_ext(exts, "cl_khr_il_program"))
        d->il_khr = (ocl_il_fn)weft__cl.GetExtensionFunctionAddressForPlatform(
            p->id, "clCreateProgramWithILKHR");
    if (ocl_has_ext(exts, "cl_nv_device_attribute_query")) {
        cl_uint major, minor;

        if (ocl_device_get(d->id, CL_DEVICE_COMPUTE_CAPABILITY_MAJOR_NV,
                           sizeof major, &major) == CL_SUCCESS &&
            ocl_device_get(d->id, CL_DEVICE_COMPUTE_CAPABILITY_MINOR_NV,
                           sizeof minor, &minor) == CL_SUCCESS) {
            pr->cc_major = (int)major;
            pr->cc_minor = (int)minor;
        }
    }
    ocl_pci_bus_id(d, exts);
    ocl_cmdbuf_probe(p, d, exts);
}

/* d->svm: see ocl_device in opencl_internal.h. */
static void ocl_svm_probe(ocl_platform *p, ocl_device *d)
{
    cl_device_svm_capabilities caps = 0;
    bool want = false, set;

    set = weft__opt_bool(WEFT__OPT_OPENCL_SVM, &want);
    if (!set)
        want = strstr(p->base.name, "NVIDIA") != NULL;
    if (!want || d->version < 200 || !weft__cl.SVMAlloc || !weft__cl.SVMFree ||
        !weft__cl.SetKernelArgSVMPointer ||
        ocl_device_get(d->id, CL_DEVICE_SVM_CAPABILITIES, sizeof caps, &caps) !=
            CL_SUCCESS ||
        !(caps & CL_DEVICE_SVM_COARSE_GRAIN_BUFFER)) {
        if (set && want)
            weft__info("opencl",
                       "%s: no coarse-grained SVM; kernel arguments at "
                       "offsets stay sub-buffers",
                       d->base.name);
        return;
    }
    d->svm = 1;
    weft__debug("opencl", "%s: device memory as SVM", d->base.name);
}

/*
 * Fill what the device tells about itself. The queries every conformant
 * device answers are required (a failure fails discovery); the extension
 * and version-dependent ones are optional and only ever asked of a device
 * that claims them, so that older implementations (OpenCL 1.2) work.
 */
static int ocl_device_fill(ocl_platform *p, ocl_device *d)
{
    weft_device_info *pr = &d->base.props;
    char version[128];
    char *exts = NULL;
    cl_device_type type;
    cl_ulong global_mem, max_alloc, local_mem;
    cl_uint units, align_bits;
    size_t group;
    cl_command_queue_properties qprops;
    cl_int rc;

    if ((rc = ocl_device_text(d->id, CL_DEVICE_NAME, d->base.name,
                              sizeof d->base.name)) != CL_SUCCESS ||
        (rc = ocl_device_text(d->id, CL_DEVICE_VENDOR, d->base.vendor,
                              sizeof d->base.vendor)) != CL_SUCCESS ||
        (rc = ocl_device_text(d->id, CL_DRIVER_VERSION, d->base.driver_version,
                              sizeof d->base.driver_version)) != CL_SUCCESS ||
        (rc = ocl_device_text(d->id, CL_DEVICE_VERSION, version,
                              sizeof version)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_TYPE, sizeof type, &type)) !=
            CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_GLOBAL_MEM_SIZE,
                             sizeof global_mem, &global_mem)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MAX_MEM_ALLOC_SIZE,
                             sizeof max_alloc, &max_alloc)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_LOCAL_MEM_SIZE, sizeof local_mem,
                             &local_mem)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof units,
                             &units)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof group,
                             &group)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_MEM_BASE_ADDR_ALIGN,
                             sizeof align_bits, &align_bits)) != CL_SUCCESS ||
        (rc = ocl_device_get(d->id, CL_DEVICE_QUEUE_PROPERTIES, sizeof qprops,
                             &qprops)) != CL_SUCCESS ||
        !(exts = ocl_device_string(d->id, CL_DEVICE_EXTENSIONS, &rc)))
        return weft__ocl_fail(rc,
                              "clGetDeviceInfo: properties of device %u of "
                              "platform %s",
                              d->base.driver_index, p->base.name);

    d->version = ocl_parse_version(version);
    d->new_queues = d->version >= 200 && p->version >= 200 &&
                    weft__cl.CreateCommandQueueWithProperties;
    d->align = align_bits >= 8 ? align_bits / 8 : 1;
    pr->arg_offset_align = d->align;
    d->profiling = (qprops & CL_QUEUE_PROFILING_ENABLE) != 0;
    d->priorities = d->new_queues && ocl_has_ext(exts, "cl_khr_priority_hints");
    weft__strlcpy(d->platform_name, p->base.name, sizeof d->platform_name);
    ocl_svm_probe(p, d);
    /* SVM pointers at any offset are kernel arguments: no sub-buffer, so
     * none of its base address alignment. */
    if (d->svm)
        pr->arg_offset_align = 1;

    pr->size = sizeof *pr;
    pr->driver = "opencl";
    pr->driver_index = d->base.driver_index;
    pr->type = type & CL_DEVICE_TYPE_GPU   ? WEFT_DEVICE_GPU
               : type & CL_DEVICE_TYPE_CPU ? WEFT_DEVICE_CPU
                                           : WEFT_DEVICE_ACCELERATOR;
    pr->name = d->base.name;
    pr->vendor = d->base.vendor;
    pr->platform = d->platform_name;
    pr->driver_version = d->base.driver_version;
    pr->global_mem = global_mem;
    pr->max_alloc = max_alloc;
    pr->local_mem = local_mem;
    pr->compute_units = units;
    pr->max_group_size = group > UINT32_MAX ? UINT32_MAX : (unsigned)group;
    /*
     * OpenCL has no query for the number of copy engines, so one, whatever
     * the hardware has. Kernels of independent queues may run at once on
     * every implementation weft knows, so concurrent_kernels is 1.
     */
    pr->copy_engines = 1;
    pr->concurrent_kernels = 1;
    pr->timing_events = d->profiling;
    pr->pinned_host = 1;   /* CL_MEM_ALLOC_HOST_PTR, persistently mapped */
    pr->host_register = 1; /* CL_MEM_USE_HOST_PTR */
    pr->managed_memory = 0;
    pr->queue_priority_low = 0;
    pr->queue_priority_high = d->priorities ? -1 : 0;
    pr->numa_node = -1;
    pr->pci_bus_id = d->base.pci_bus_id;
    pr->cpuset = d->base.cpuset;

    ocl_device_optional(p, d, exts);
    weft__free(exts);
    return 0;
}

static void ocl_platform_free(weft__platform *p)
{
    for (unsigned j = 0; j < p->ndevices; j++)
        weft__free(p->devices[j]);
    weft__free(p->devices);
    weft__free(p);
}

static void ocl_platforms_free(weft__platform **platforms, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (platforms[i])
            ocl_platform_free(platforms[i]);
    weft__free(platforms);
}

/*
 * PoCL 5's CPU devices can abort the process while kernels run
 * (pocl_release_dlhandle_cache: Assertion 'found->ref_count > 0'): weft's
 * oracle did in about half its runs beside NVIDIA's OpenCL and about one
 * in eight with PoCL alone (bench/RESULTS.md). PoCL 5 keeps one loaded
 * work-group function per kernel, local size, grid width, offset and
 * specialisation, but looks the entry up by kernel and local size alone
 * when it releases it, which is the likely cause. PoCL 3 does not do it.
 * Said once per process.
 */
static void ocl_platform_known_bugs(const char *version)
{
    static int said;

    if (strstr(version, "PoCL 5.") &&
        !__atomic_exchange_n(&said, 1, __ATOMIC_RELAXED))
        weft__warn("opencl",
                   "%s: this PoCL can abort the process while kernels run "
                   "(pocl_release_dlhandle_cache: Assertion "
                   "'found->ref_count > 0'), more often beside another "
                   "OpenCL platform (where it is left out unless "
                   "WEFT_OPENCL_POCL5=1); PoCL 3 does not",
                   version);
}

/* One platform with its devices; *out = NULL if it has no device. */
static int ocl_platform_open(cl_platform_id id, unsigned *next_index,
                             ocl_platform **out)
{
    ocl_platform *p;
    cl_device_id *ids = NULL;
    cl_uint nd = 0;
    char version[128];
    cl_int rc;
    int err;

    *out = NULL;
    rc = OCL("clGetDeviceIDs",
             weft__cl.GetDeviceIDs(id, CL_DEVICE_TYPE_ALL, 0, NULL, &nd));
    if (rc == CL_DEVICE_NOT_FOUND || (rc == CL_SUCCESS && nd == 0))
        return 0;
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetDeviceIDs: counting devices");
    if (!(p = weft__calloc(1, sizeof *p)))
        return weft__error(WEFT_ENOMEM, "opencl: platform");
    p->base.drv = &weft__driver_opencl;
    p->id = id;
    if ((rc = ocl_platform_text(id, CL_PLATFORM_NAME, p->base.name,
                                sizeof p->base.name)) != CL_SUCCESS ||
        (rc = ocl_platform_text(id, CL_PLATFORM_VENDOR, p->base.vendor,
                                sizeof p->base.vendor)) != CL_SUCCESS ||
        (rc = ocl_platform_text(id, CL_PLATFORM_VERSION, version,
                                sizeof version)) != CL_SUCCESS) {
        err =
            weft__ocl_fail(rc, "clGetPlatformInfo: platform name and version");
        goto fail;
    }
    weft__strlcpy(p->base.version, version, sizeof p->base.version);
    p->version = ocl_parse_version(version);
    ocl_platform_known_bugs(version);
    if (!(ids = weft__calloc(nd, sizeof *ids)) ||
        !(p->base.devices = weft__calloc(nd, sizeof *p->base.devices))) {
        err = weft__error(WEFT_ENOMEM, "opencl: %u devices", nd);
        goto fail;
    }
    rc = OCL("clGetDeviceIDs",
             weft__cl.GetDeviceIDs(id, CL_DEVICE_TYPE_ALL, nd, ids, &nd));
    if (rc != CL_SUCCESS) {
        err = weft__ocl_fail(rc, "clGetDeviceIDs: devices of platform %s",
                             p->base.name);
        goto fail;
    }
    for (cl_uint i = 0; i < nd; i++) {
        ocl_device *d = weft__calloc(1, sizeof *d);

        if (!d) {
            err = weft__error(WEFT_ENOMEM, "opencl: device");
            goto fail;
        }
        p->base.devices[p->base.ndevices++] = &d->base;
        d->base.drv = &weft__driver_opencl;
        d->base.platform = &p->base;
        d->base.driver_index = (*next_index)++;
        d->id = ids[i];
        if ((err = ocl_device_fill(p, d)) < 0)
            goto fail;
    }
    weft__free(ids);
    *out = p;
    return 0;
fail:
    weft__free(ids);
    ocl_platform_free(&p->base);
    return err;
}

/*
 * PoCL 5 beside another platform with devices aborted the process in about
 * half of weft's oracle runs (ocl_platform_known_bugs), also when weft only
 * listed its devices and never ran anything there. Its platforms are left
 * out there before they are opened, saying so, unless WEFT_OPENCL_POCL5=1.
 * Returns the platform ids kept, compacted in place.
 */
static cl_uint ocl_platforms_without_pocl5(cl_platform_id *ids, cl_uint n)
{
    char version[128];
    bool keep = true, *pocl5, other = false;
    cl_uint kept = 0, nd;

    (void)weft__opt_bool(WEFT__OPT_OPENCL_POCL5, &keep); /* or the default */
    if (n < 2 || keep || !(pocl5 = weft__calloc(n, sizeof *pocl5)))
        return n;
    for (cl_uint i = 0; i < n; i++) {
        pocl5[i] = ocl_platform_text(ids[i], CL_PLATFORM_VERSION, version,
                                     sizeof version) == CL_SUCCESS &&
                   strstr(version, "PoCL 5.");
        if (!pocl5[i] &&
            weft__cl.GetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd) ==
                CL_SUCCESS &&
            nd > 0)
            other = true;
    }
    for (cl_uint i = 0; i < n; i++) {
        if (!other || !pocl5[i]) {
            ids[kept++] = ids[i];
            continue;
        }
        ocl_platform_text(ids[i], CL_PLATFORM_VERSION, version, sizeof version);
        weft__warn("opencl",
                   "%s: left out beside another OpenCL platform with "
                   "devices, where this PoCL was seen to abort the process "
                   "(WEFT_OPENCL_POCL5=1 keeps it)",
                   version);
    }
    weft__free(pocl5);
    return kept;
}

/* Every platform with a device, of the loader loaded. */
static int ocl_platforms_list(weft__platform ***platforms, unsigned *n)
{
    cl_platform_id *ids = NULL;
    weft__platform **out = NULL;
    cl_uint np = 0;
    unsigned nout = 0, index = 0;
    cl_int rc;
    int err;

    rc = OCL("clGetPlatformIDs", weft__cl.GetPlatformIDs(0, NULL, &np));
    if (rc == CL_PLATFORM_NOT_FOUND_KHR || (rc == CL_SUCCESS && np == 0))
        return weft__driver_error(WEFT_ENOTSUP, "opencl", rc,
                                  rc ? "CL_PLATFORM_NOT_FOUND_KHR" : "",
                                  "no OpenCL platform");
    if (rc != CL_SUCCESS)
        return weft__ocl_fail(rc, "clGetPlatformIDs: counting platforms");
    if (!(ids = weft__calloc(np, sizeof *ids)) ||
        !(out = weft__calloc(np, sizeof *out))) {
        err = weft__error(WEFT_ENOMEM, "opencl: %u platforms", np);
        goto fail;
    }
    rc = OCL("clGetPlatformIDs", weft__cl.GetPlatformIDs(np, ids, &np));
    if (rc != CL_SUCCESS) {
        err = weft__ocl_fail(rc, "clGetPlatformIDs: listing platforms");
        goto fail;
    }
    np = ocl_platforms_without_pocl5(ids, np);
    for (cl_uint i = 0; i < np; i++) {
        ocl_platform *p;

        if ((err = ocl_platform_open(ids[i], &index, &p)) < 0)
            goto fail;
        if (p)
            out[nout++] = &p->base;
    }
    weft__free(ids);
    if (nout == 0) {
        weft__free(out);
        return weft__error(WEFT_ENOTSUP,
                           "no OpenCL device on %u OpenCL platform(s)", np);
    }
    *platforms = out;
    *n = nout;
    return 0;
fail:
    weft__free(ids);
    if (out)
        ocl_platforms_free(out, nout);
    return err;
}

/*
 * An OpenCL implementation may discover the CPU with hwloc as it lists its
 * devices (PoCL's CPU devices do, once per process), and hwloc's default
 * x86 component binds the thread to each CPU in turn: on small VMs such a
 * binding was seen to stall for seconds. While weft lists the platforms,
 * HWLOC_COMPONENTS is "-x86" unless the user has set it; it is unset again
 * afterwards, so the program's own hwloc sees its own environment.
 */
static pthread_mutex_t ocl_env_lock = PTHREAD_MUTEX_INITIALIZER;

static int ocl_platforms_list_unbound(weft__platform ***platforms, unsigned *n)
{
    int set, err;

    pthread_mutex_lock(&ocl_env_lock);
    set = !getenv("HWLOC_COMPONENTS") &&
          setenv("HWLOC_COMPONENTS", "-x86", 0) == 0;
    err = ocl_platforms_list(platforms, n);
    if (set)
        unsetenv("HWLOC_COMPONENTS");
    pthread_mutex_unlock(&ocl_env_lock);
    return err;
}

/* Each successful open holds a load of the ICD loader until its close. */
static int ocl_platforms_open(const weft__driver_config *cfg,
                              weft__platform ***platforms, unsigned *n)
{
    int err;

    (void)cfg;
    *platforms = NULL;
    *n = 0;
    if ((err = weft__ocl_load()) < 0)
        return err;
    if ((err = ocl_platforms_list_unbound(platforms, n)) < 0)
        weft__ocl_unload();
    return err;
}

static void ocl_platforms_close(weft__platform **platforms, unsigned n)
{
    ocl_platforms_free(platforms, n);
    weft__ocl_unload();
}

/*
 * OpenCL has no peer access: memory of one context is not usable from
 * another. copy_peer stages through the host instead.
 */
static int ocl_can_access_peer(weft__device *a, weft__device *b, int *can)
{
    (void)a;
    (void)b;
    *can = 0;
    return 0;
}

/* The table's module_binary: a device binary for the kernel cache. */
static int ocl_module_binary(weft__module *mod, void **bytes, size_t *size,
                             weft__source_kind *kind)
{
    int rc = weft__opencl_module_binary(mod, bytes, size);

    if (rc == 0)
        *kind = WEFT__SRC_CL_BINARY;
    return rc;
}

const weft__driver weft__driver_opencl = {
    .name = "opencl",
    .source_kinds =
        (const weft_source_kind[]){WEFT_SOURCE_CL_BINARY, WEFT_SOURCE_SPIRV,
                                   WEFT_SOURCE_OPENCL_C, WEFT_SOURCE_PORTABLE,
                                   0},
    .portable_kind = WEFT__SRC_OPENCL_C,
    .platforms_open = ocl_platforms_open,
    .platforms_close = ocl_platforms_close,
    .can_access_peer = ocl_can_access_peer,
    .context_create = weft__ocl_context_create,
    .context_destroy = weft__ocl_context_destroy,
    .queue_create = weft__ocl_queue_create,
    .queue_sync = weft__ocl_queue_sync,
    .queue_release = weft__ocl_queue_release,
    .mem_alloc = weft__ocl_mem_alloc,
    .host_alloc = weft__ocl_host_alloc,
    .host_register = weft__ocl_host_register,
    .mem_free = weft__ocl_mem_free,
    .mem_wrap = weft__ocl_mem_wrap,
    .copy_h2d = weft__ocl_copy_h2d,
    .copy_d2h = weft__ocl_copy_d2h,
    .copy_d2d = weft__ocl_copy_d2d,
    .copy_peer = weft__ocl_copy_peer,
    .fill = weft__ocl_fill,
    .copy_h2d_rect = weft__ocl_copy_h2d_rect,
    .copy_d2h_rect = weft__ocl_copy_d2h_rect,
    .copy_d2d_rect = weft__ocl_copy_d2d_rect,
    .copy_peer_rect = weft__ocl_copy_peer_rect,
    .module_create = weft__ocl_module_create,
    .module_destroy = weft__ocl_module_destroy,
    .module_binary = ocl_module_binary,
    .kernel_get = weft__ocl_kernel_get,
    .launch = weft__ocl_launch,
    .event_create = weft__ocl_event_create,
    .event_record = weft__ocl_event_record,
    .queue_wait_event = weft__ocl_queue_wait_event,
    .event_query = weft__ocl_event_query,
    .event_sync = weft__ocl_event_sync,
    .event_elapsed = weft__ocl_event_elapsed,
    .event_destroy = weft__ocl_event_destroy,
    .host_fn = weft__ocl_host_fn,
    .native_call = weft__ocl_native_call,
    .native_context = weft__ocl_native_context,
    .native_mem = weft__ocl_native_mem,
    .external_wait = weft__ocl_external_wait,
    .external_record = weft__ocl_external_record,
    .external_mark = weft__ocl_external_mark,
    .external_mark_end = weft__ocl_external_mark_end,
    .graph_supported = weft__ocl_graph_supported,
    .graph_begin = weft__ocl_graph_begin,
    .graph_end = weft__ocl_graph_end,
    .graph_launch = weft__ocl_graph_launch,
    .graph_destroy = weft__ocl_graph_destroy,
};
