/*
 * What every layer of weft uses: errors, logging, failure injection,
 * allocation, clocks, assertions. Internal names are weft__. The WEFT_*
 * variables: options.h; threads, CPU sets, dlopen, directories: os.h.
 */
#ifndef WEFT_BASE_H
#define WEFT_BASE_H

#include "weft.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__GNUC__)
#define WEFT__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define WEFT__LIKELY(x)    __builtin_expect(!!(x), 1)
#define WEFT__UNLIKELY(x)  __builtin_expect(!!(x), 0)
#else
#define WEFT__PRINTF(f, a)
#define WEFT__LIKELY(x)   (x)
#define WEFT__UNLIKELY(x) (x)
#endif

#define WEFT__COUNTOF(a) (sizeof(a) / sizeof((a)[0]))
#define WEFT__MIN(a, b)  ((a) < (b) ? (a) : (b))
#define WEFT__MAX(a, b)  ((a) > (b) ? (a) : (b))
/* The struct of type T whose member m is at pointer p. */
#define WEFT__CONTAINER(p, T, m) ((T *)(void *)((char *)(p)-offsetof(T, m)))

/* ---- assertions, three levels (see STYLE.md) --------------------------- */
/*
 * weft__assert: always on; a broken invariant that would corrupt data.
 * weft__assert_internal: debug builds (WEFT_DEBUG >= 1).
 * weft__assert_expensive: WEFT_DEBUG >= 2 (validators over whole structures).
 */
#ifndef WEFT_DEBUG
#define WEFT_DEBUG 0
#endif
_Noreturn void weft__assert_fail(const char *expr, const char *file, int line);
/* Misuse that can only be a bug in the caller: abort with a message. */
_Noreturn void weft__client_crash(const char *fmt, ...) WEFT__PRINTF(1, 2);
#define weft__assert(e)                                                        \
    (WEFT__LIKELY(e) ? (void)0 : weft__assert_fail(#e, __FILE__, __LINE__))
#if WEFT_DEBUG >= 1
#define weft__assert_internal(e) weft__assert(e)
#else
#define weft__assert_internal(e) ((void)0)
#endif
#if WEFT_DEBUG >= 2
#define weft__assert_expensive(e) weft__assert(e)
#else
#define weft__assert_expensive(e) ((void)0)
#endif

/* ---- errors ------------------------------------------------------------ */
/*
 * Set this thread's detail and return code, so that a failure reads
 *     return weft__error(WEFT_EINVAL, "size 0 for buffer");
 */
int weft__error(int code, const char *fmt, ...) WEFT__PRINTF(2, 3);
/*
 * The same for a failure reported by a driver: its own numeric code and the
 * name of that code ("CUDA_ERROR_OUT_OF_MEMORY", "CL_OUT_OF_RESOURCES").
 */
int weft__driver_error(int code, const char *driver, long driver_code,
                       const char *driver_name, const char *fmt, ...)
    WEFT__PRINTF(5, 6);
/* The name of an errno value ("ENOMEM"), for weft__driver_error. */
const char *weft__errno_name(int err);
/* Add context in front of the current detail: "launch of saxpy: <detail>". */
int weft__error_prefix(int code, const char *fmt, ...) WEFT__PRINTF(2, 3);

/* ---- logging ----------------------------------------------------------- */
/* Read and written with relaxed atomics, without a lock: a hint. */
extern int weft__log_level;
void weft__log_impl(weft_log_level level, const char *subsystem,
                    const char *fmt, ...) WEFT__PRINTF(3, 4);
#define weft__log(level, subsystem, ...)                                       \
    do {                                                                       \
        if ((int)(level) >=                                                    \
            __atomic_load_n(&weft__log_level, __ATOMIC_RELAXED))               \
            weft__log_impl((level), (subsystem), __VA_ARGS__);                 \
    } while (0)
#define weft__debug(sub, ...) weft__log(WEFT_LOG_DEBUG, sub, __VA_ARGS__)
#define weft__info(sub, ...)  weft__log(WEFT_LOG_INFO, sub, __VA_ARGS__)
#define weft__warn(sub, ...)  weft__log(WEFT_LOG_WARN, sub, __VA_ARGS__)
/* The level WEFT_LOG gives (options.c); ignored after weft_log_set_level. */
void weft__log_env_level(int level);

/* ---- failure injection ------------------------------------------------- */
/*
 * Every place where weft calls something that can fail (a driver call, an
 * allocation, a thread start) asks weft__fault(site) first; when it answers
 * true the caller behaves exactly as if that call had failed. Tests arm it
 * with weft__fault_arm(n, filter): the n-th check from now (1 = the next)
 * whose site contains filter (NULL = any) fails, once. Disarmed, the check
 * is one relaxed atomic load. A site whose name starts with '!' is not a
 * call but a completion that a test may make fail (an OpenCL command's
 * status): only a filter that starts with '!' too sees it.
 */
bool weft__fault_check(const char *site);
extern int weft__fault_armed;
#define weft__fault(site)                                                      \
    (WEFT__UNLIKELY(__atomic_load_n(&weft__fault_armed, __ATOMIC_RELAXED)) &&  \
     weft__fault_check(site))
void weft__fault_arm(long n, const char *filter);
void weft__fault_disarm(void);
/* Number of checks seen since arming (whether or not they matched). */
long weft__fault_seen(void);
/* 1 if the armed failure has fired since it was armed. */
int weft__fault_fired(void);

/* ---- allocation -------------------------------------------------------- */
/* malloc/calloc/realloc that honour failure injection ("malloc"). */
void *weft__malloc(size_t n);
void *weft__calloc(size_t count, size_t n);
void *weft__realloc(void *p, size_t n);
char *weft__strdup(const char *s);
void weft__free(void *p);
/* The line size that data written by different threads is kept apart by. */
#define WEFT__CACHE_LINE 64
/*
 * count x n zeroed bytes aligned to align (a power of two, at least
 * sizeof(void *)), freed by weft__free; failure injection as calloc's.
 */
void *weft__calloc_aligned(size_t count, size_t n, size_t align);
/*
 * A growing array: make room for need elements of elem bytes in *arr
 * (a pointer to the array's pointer), whose capacity is *cap elements,
 * doubling from 8. 0, or WEFT_ENOMEM with *arr and *cap unchanged.
 */
int weft__grow_slow(void *arr, size_t *cap, size_t need, size_t elem);
static inline int weft__grow(void *arr, size_t *cap, size_t need, size_t elem)
{
    /* (the common case, room already, without a call) */
    return need <= *cap ? 0 : weft__grow_slow(arr, cap, need, elem);
}
/*
 * The reverse of n lists of indices below n kept as one array: list i is
 * items[first[i] .. first[i + 1]). Fills out_first (n + 1 entries, zeroed
 * by the caller) and out_items (first[n] entries) so that list j of the
 * result holds every i whose list held j, in increasing i. count: n
 * entries of scratch, zeroed by the caller. (Predecessors to successors.)
 */
void weft__lists_reverse(uint32_t n, const uint32_t *first,
                         const uint32_t *items, uint32_t *out_first,
                         uint32_t *out_items, uint32_t *count);

/* ---- strings ----------------------------------------------------------- */
/* snprintf into a fixed array, always terminated, truncating. */
void weft__strlcpy(char *dst, const char *src, size_t size);
/* Parse "64M", "1.5G", "4096" (binary suffixes K M G T). -1 if invalid. */
int weft__parse_size(const char *s, uint64_t *out);
/* Parse a double with optional SI suffix (k M G T); -1 if invalid. */
int weft__parse_double(const char *s, double *out);

/* ---- clocks ------------------------------------------------------------ */
/* Monotonic nanoseconds. */
uint64_t weft__now_ns(void);

#endif /* WEFT_BASE_H */
