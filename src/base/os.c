/* The OS layer: os.h. */
#include "os.h"

#include "options.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- threads ----------------------------------------------------------- */

int weft__thread_start(pthread_t *thread, const char *name, const char *site,
                       void *(*fn)(void *), void *arg)
{
    char shown[16]; /* Linux keeps 15 characters and the terminator */
    int err;

    if (weft__fault(site))
        return EAGAIN;
    err = pthread_create(thread, NULL, fn, arg);
    if (err == 0 && name) {
        weft__strlcpy(shown, name, sizeof shown);
        (void)pthread_setname_np(*thread, shown); /* a name is for people */
    }
    return err;
}

/* ---- CPU sets ---------------------------------------------------------- */

hwloc_bitmap_t weft__cpuset_near(hwloc_topology_t topo, const char *cpuset)
{
    hwloc_const_cpuset_t all;
    hwloc_bitmap_t set;

    if (!topo || !cpuset || !*cpuset)
        return NULL;
    all = hwloc_topology_get_topology_cpuset(topo);
    if (hwloc_bitmap_weight(all) <= 2 || !(set = hwloc_bitmap_alloc()))
        return NULL;
    /* Binding to the whole machine gains nothing and costs a system call. */
    if (hwloc_bitmap_list_sscanf(set, cpuset) < 0 || hwloc_bitmap_iszero(set) ||
        hwloc_bitmap_isequal(set, all)) {
        hwloc_bitmap_free(set);
        return NULL;
    }
    return set;
}

unsigned weft__cpuset_count(hwloc_topology_t topo, hwloc_const_bitmap_t set)
{
    long n = -1;

    if (topo)
        n = hwloc_bitmap_weight(set ? set
                                    : hwloc_topology_get_topology_cpuset(topo));
    if (n <= 0 && !set)
        n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 0;
}

void weft__thread_bind(hwloc_topology_t topo, hwloc_const_bitmap_t set)
{
    if (topo && set)
        (void)hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
}

hwloc_bitmap_t weft__thread_bind_save(hwloc_topology_t topo,
                                      hwloc_const_bitmap_t set)
{
    hwloc_bitmap_t old;

    if (!topo || !set || !(old = hwloc_bitmap_alloc()))
        return NULL;
    if (hwloc_get_cpubind(topo, old, HWLOC_CPUBIND_THREAD) < 0) {
        hwloc_bitmap_free(old);
        return NULL;
    }
    (void)hwloc_set_cpubind(topo, set, HWLOC_CPUBIND_THREAD);
    return old;
}

void weft__thread_rebind(hwloc_topology_t topo, hwloc_bitmap_t old)
{
    if (!old)
        return;
    (void)hwloc_set_cpubind(topo, old, HWLOC_CPUBIND_THREAD);
    hwloc_bitmap_free(old);
}

/* ---- dynamic libraries ------------------------------------------------- */

int weft__dl_open(const char *path, const char *site, void **lib)
{
    const char *e;

    *lib = NULL;
    if (weft__fault(site))
        return weft__error(WEFT_ENOTSUP, "injected failure");
    if ((*lib = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return 0;
    e = dlerror();
    return weft__error(WEFT_ENOTSUP, "%s", e ? e : "dlopen failed");
}

void *weft__dl_sym(void *lib, const char *sym, const char *site)
{
    if (site && weft__fault(site))
        return NULL;
    return dlsym(lib, sym);
}

void weft__dl_close(void *lib)
{
    if (lib)
        dlclose(lib);
}

/* ---- directories ------------------------------------------------------- */

int weft__dir_make(const char *path)
{
    char tmp[4096];

    if (strlen(path) >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    weft__strlcpy(tmp, path, sizeof tmp);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, 0700) < 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(tmp, 0700) < 0 && errno != EEXIST ? -1 : 0;
}

int weft__cache_dir(char *buf, size_t size)
{
    bool on = true;
    const char *d;
    int w;

    weft__opt_bool(WEFT__OPT_CACHE, &on);
    if (!on)
        return WEFT_ENOTFOUND;
    if (weft__opt_str(WEFT__OPT_CACHE_DIR, &d))
        w = snprintf(buf, size, "%s", d);
    else if ((d = getenv("XDG_CACHE_HOME")) && *d)
        w = snprintf(buf, size, "%s/weft", d);
    else if ((d = getenv("HOME")) && *d)
        w = snprintf(buf, size, "%s/.cache/weft", d);
    else
        return WEFT_ENOTFOUND;
    return w > 0 && (size_t)w < size ? 0 : WEFT_ENOTFOUND;
}

unsigned weft__os_pid(void)
{
    return (unsigned)getpid();
}
