/*
 * What the OpenCL driver offers beyond the driver table.
 */
#ifndef WEFT_DRIVERS_OPENCL_H
#define WEFT_DRIVERS_OPENCL_H

#include "../driver.h"

/*
 * The device binary of a module built by the OpenCL driver, for a kernel
 * cache: *bytes (allocated with weft__malloc, freed by the caller with
 * weft__free) and *size can be given back to module_create as
 * WEFT__SRC_CL_BINARY on the same kind of device. WEFT_EINVAL if m is not
 * an OpenCL module; WEFT_ENOTSUP if the implementation keeps no binary.
 */
int weft__opencl_module_binary(weft__module *m, void **bytes, size_t *size);

#endif /* WEFT_DRIVERS_OPENCL_H */
