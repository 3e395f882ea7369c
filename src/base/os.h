/*
 * The OS layer: threads, CPU sets, dynamic libraries, directories. The
 * rest of weft calls these instead of pthread_create, hwloc's binding
 * calls, dlopen and mkdir.
 */
#ifndef WEFT_BASE_OS_H
#define WEFT_BASE_OS_H

#include "base.h"

#include <hwloc.h>
#include <pthread.h>

/* ---- threads ----------------------------------------------------------- */
/*
 * Start fn(arg) on a new thread called name (what ps and gdb show; at
 * most 15 characters are kept), unless weft__fault(site) injects a
 * failure. Returns 0, or an errno value as pthread_create does (EAGAIN
 * for an injected failure); no detail is set, the caller reports.
 */
int weft__thread_start(pthread_t *thread, const char *name, const char *site,
                       void *(*fn)(void *), void *arg);

/* ---- CPU sets (hwloc) -------------------------------------------------- */
/*
 * The cores to bind a helper thread of a device to (staging copies, host
 * nodes), from the device's cpuset string (weft_device_info.cpuset): a
 * new bitmap, or NULL where binding would not help or might hurt: no
 * topology, no locality (the set is the whole machine), or a machine of 2
 * cores or fewer (CI VMs, where a PoCL process was seen to stall in
 * binding). The caller frees it with hwloc_bitmap_free.
 */
hwloc_bitmap_t weft__cpuset_near(hwloc_topology_t topo, const char *cpuset);
/*
 * Processing units in set, or in the whole machine where set is NULL
 * (without a topology: the online processors); 0 if unknown.
 */
unsigned weft__cpuset_count(hwloc_topology_t topo, hwloc_const_bitmap_t set);
/*
 * Bind the calling thread to set (nothing if topo or set is NULL). A
 * binding that fails leaves the thread where it was: binding is a hint.
 */
void weft__thread_bind(hwloc_topology_t topo, hwloc_const_bitmap_t set);
/*
 * The same, returning the binding to put back with weft__thread_rebind
 * (NULL if the thread was not moved).
 */
hwloc_bitmap_t weft__thread_bind_save(hwloc_topology_t topo,
                                      hwloc_const_bitmap_t set);
/* Put back a binding from weft__thread_bind_save and free it. */
void weft__thread_rebind(hwloc_topology_t topo, hwloc_bitmap_t old);

/* ---- dynamic libraries ------------------------------------------------- */
/*
 * dlopen(path, RTLD_NOW | RTLD_LOCAL), unless weft__fault(site): 0 and
 * *lib, or WEFT_ENOTSUP with dlerror()'s text (or "injected failure") as
 * the detail.
 */
int weft__dl_open(const char *path, const char *site, void **lib);
/*
 * The address of sym in lib; NULL if lib lacks it, or if site is not NULL
 * and weft__fault(site) injects a failure. No detail is set.
 */
void *weft__dl_sym(void *lib, const char *sym, const char *site);
void weft__dl_close(void *lib);

/* ---- directories ------------------------------------------------------- */
/*
 * mkdir -p: path and every missing parent, mode 0700. 0, or -1 with errno
 * set (EEXIST is success).
 */
int weft__dir_make(const char *path);
/*
 * weft's cache directory (compiled kernels, measured links) into buf:
 * WEFT_CACHE_DIR, else $XDG_CACHE_HOME/weft, else $HOME/.cache/weft (an
 * empty XDG_CACHE_HOME or HOME counts as unset). 0, or WEFT_ENOTFOUND
 * where the cache is off (WEFT_CACHE=0), no directory is known or the path
 * does not fit; no detail is set (a missing cache is not a failure).
 */
int weft__cache_dir(char *buf, size_t size);

/* This process's id. */
unsigned weft__os_pid(void);

/* A hint to the core that the caller spins (waits for another thread). */
static inline void weft__cpu_pause(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

#endif /* WEFT_BASE_OS_H */
