/*
 * Portable kernels on host and sim devices: the C that
 * weft__portable_translate makes for WEFT__SRC_HOST_C is compiled with the
 * system C compiler into a shared object (WEFT__SRC_HOST_SO), which is
 * loaded with dlopen and whose table of kernels becomes a weft_host_kernel
 * table. dispatch.c caches the shared object in the compiled-kernel cache,
 * keyed on the source, the options and weft__hostcc_identity.
 *
 * The compiler: $CC (split at blanks: "ccache gcc" works), else cc, looked
 * up on PATH when it is run. Absent, every entry point here is WEFT_ENOTSUP
 * naming what was tried.
 */
#ifndef WEFT_HOSTCC_H
#define WEFT_HOSTCC_H

#include "driver.h"

/* The version of the table layout the translator emits (weft__cc_abi). */
#define WEFT__HOSTCC_ABI 1

/*
 * What identifies the compiler: the command, the file it resolves to, its
 * size and modification time (so that an upgrade rebuilds), into buf.
 * WEFT_ENOTSUP if there is none.
 */
int weft__hostcc_identity(char *buf, size_t size);

/* A loaded shared object and its kernels. */
typedef struct weft__hostcc_lib weft__hostcc_lib;

/*
 * src of kind WEFT__SRC_HOST_C (compiled first; WEFT_EBUILD with the
 * compiler's output in the detail if it fails) or WEFT__SRC_HOST_SO. Only
 * -D, -U and -I words of src->options reach the compiler. *log: what the
 * compiler said (weft__malloc'd, NULL if nothing or loaded).
 */
int weft__hostcc_open(const weft__module_source *src, weft__hostcc_lib **lib,
                      char **log);
/* Its kernels: a table valid until weft__hostcc_close. */
const weft_host_kernel *weft__hostcc_table(const weft__hostcc_lib *lib,
                                           size_t *n);
/* A weft__malloc'd copy of the shared object, for the cache. */
int weft__hostcc_binary(const weft__hostcc_lib *lib, void **bytes,
                        size_t *size);
/* NULL is ignored. No kernel of it may run any more. */
void weft__hostcc_close(weft__hostcc_lib *lib);

/* How many times the compiler has run in this process. */
long weft__hostcc_compiles(void);

#endif /* WEFT_HOSTCC_H */
