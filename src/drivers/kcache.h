/*
 * The compiled-kernel cache: device binaries on disk, keyed by everything
 * that decides what the compiler produces (source, options, device, driver
 * version, weft version), so that a second run of a program loads instead
 * of compiling. Entries carry a checksum; a corrupt, truncated or foreign
 * file is removed and reported as a miss, never trusted.
 *
 * Where: WEFT_CACHE_DIR, else $XDG_CACHE_HOME/weft, else ~/.cache/weft.
 * WEFT_CACHE=off turns it off. Writes go to a temporary file renamed into
 * place, so that concurrent processes never see half an entry.
 */
#ifndef WEFT_KCACHE_H
#define WEFT_KCACHE_H

#include "driver.h"

typedef struct weft__kcache_key {
    uint64_t h[2];
    char hex[33];
} weft__kcache_key;

/* Hash n byte strings (lens[i] == (size_t)-1: NUL-terminated) into k. */
void weft__kcache_key_make(weft__kcache_key *k, const void *const *parts,
                           const size_t *lens, unsigned n);

/*
 * 0 and a weft__malloc'd copy of the entry (with the source kind it was
 * stored as) on a hit, and, where log is not NULL, a weft__malloc'd copy
 * of the build log stored with it (NUL-terminated; NULL where it was
 * empty); WEFT_ENOTFOUND on a miss, a corrupt entry (which is removed) or
 * a disabled cache.
 */
int weft__kcache_load(const weft__kcache_key *k, void **bytes, size_t *size,
                      weft__source_kind *kind, char **log);
/*
 * Store an entry and the log of the build that made it (NULL or "": none);
 * failures are logged and returned, never fatal.
 */
int weft__kcache_store(const weft__kcache_key *k, const void *bytes,
                       size_t size, weft__source_kind kind, const char *log);
/* Remove an entry (e.g. one the driver refused to load). */
void weft__kcache_remove(const weft__kcache_key *k);

typedef struct weft__kcache_stats {
    long hits, misses, stores, corrupt, rejected;
} weft__kcache_stats;
/* Counters since the process started. */
void weft__kcache_get_stats(weft__kcache_stats *s);

/*
 * The portable kernel dialect: source written with WEFT_KERNEL,
 * WEFT_GLOBAL, weft_global_id(d)... turned into OpenCL C or CUDA C++
 * (target WEFT__SRC_OPENCL_C or WEFT__SRC_CUDA_CXX). *out is weft__malloc'd.
 * name (NULL: "portable") is the file name its compiler's messages give.
 */
int weft__portable_translate(const char *src, weft__source_kind target,
                             const char *name, char **out);
/*
 * The parameter types of kernel name as portable source src declares it
 * (the rules of the host translation: a pointer is a buffer, or with
 * WEFT_LOCAL local scratch; a scalar of a weft type that type; anything
 * else bytes): *types (weft__malloc'd, the caller frees; NULL for none)
 * and *count. WEFT_ENOTFOUND where src defines no such kernel (no error
 * set), WEFT_EBUILD for a list the dialect refuses, WEFT_ENOMEM.
 */
int weft__portable_params(const char *src, const char *name,
                          weft_param_type **types, unsigned *count);

#endif /* WEFT_KCACHE_H */
