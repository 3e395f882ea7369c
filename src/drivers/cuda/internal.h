/*
 * What the files of the cuda driver share. Nothing outside
 * src/drivers/cuda/ includes this, except the driver's own tests.
 */
#ifndef WEFT_CUDA_INTERNAL_H
#define WEFT_CUDA_INTERNAL_H

#include "../driver.h"
#include "cuda_api.h"

/*
 * A program image ready for the driver: cubin bytes, or PTX text (then
 * data is NUL-terminated and size counts the NUL). data comes from
 * weft__malloc.
 */
typedef struct weft__cuda_image {
    void *data;
    size_t size;
    unsigned is_cubin;
    int arch; /* the sm_XY / compute_XY it was built for, as XY */
} weft__cuda_image;

/*
 * Compile CUDA C++ (len bytes of src, or up to its NUL if len is 0) with
 * NVRTC for a device of compute capability cc_major.cc_minor. The image is
 * a cubin for that exact architecture where NVRTC knows it, else PTX for
 * the newest architecture NVRTC knows below it, which the driver then
 * compiles. options are extra compiler flags separated by blanks (NULL for
 * none); if they name an architecture, weft adds none. name is used in
 * messages and #line directives.
 *
 * WEFT_ENOTSUP if NVRTC cannot be loaded or cannot target the device,
 * WEFT_EBUILD with the compiler log in the detail if compilation fails.
 * Thread-safe; needs no GPU.
 */
int weft__cuda_nvrtc_compile(const char *src, size_t len, const char *name,
                             const char *options, int cc_major, int cc_minor,
                             weft__cuda_image *out);
void weft__cuda_image_free(weft__cuda_image *img);

/* The library names tried, in order, by the NVRTC loader. */
extern const char *const weft__cuda_nvrtc_names[];

#endif /* WEFT_CUDA_INTERNAL_H */
