/* Allocation, strings and clocks. */
#include "base.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void *weft__malloc(size_t n)
{
    if (weft__fault("malloc"))
        return NULL;
    return malloc(n ? n : 1);
}

void *weft__calloc(size_t count, size_t n)
{
    if (weft__fault("malloc"))
        return NULL;
    return calloc(count ? count : 1, n ? n : 1);
}

void *weft__calloc_aligned(size_t count, size_t n, size_t align)
{
    size_t size;
    void *p;

    if (weft__fault("malloc"))
        return NULL;
    count = count ? count : 1;
    n = n ? n : 1;
    if (count > SIZE_MAX / n)
        return NULL;
    size = count * n;
    if (posix_memalign(&p, align, size) != 0)
        return NULL;
    memset(p, 0, size);
    return p;
}

void *weft__realloc(void *p, size_t n)
{
    if (weft__fault("malloc"))
        return NULL;
    return realloc(p, n ? n : 1);
}

char *weft__strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = weft__malloc(n);

    if (d)
        memcpy(d, s, n);
    return d;
}

void weft__free(void *p)
{
    free(p);
}

void weft__lists_reverse(uint32_t n, const uint32_t *first,
                         const uint32_t *items, uint32_t *out_first,
                         uint32_t *out_items, uint32_t *count)
{
    /* Count, sum, then place (count: what is placed per list so far). */
    for (uint32_t k = 0; k < first[n]; k++)
        out_first[items[k] + 1]++;
    for (uint32_t i = 0; i < n; i++)
        out_first[i + 1] += out_first[i];
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t k = first[i]; k < first[i + 1]; k++) {
            uint32_t j = items[k];

            out_items[out_first[j] + count[j]++] = i;
        }
}

int weft__grow_slow(void *arr, size_t *cap, size_t need, size_t elem)
{
    void **p = arr;
    size_t ncap;
    void *np;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap : 8;
    while (ncap < need && ncap <= SIZE_MAX / 2)
        ncap *= 2;
    if (ncap < need || (elem && ncap > SIZE_MAX / elem))
        return weft__error(WEFT_ENOMEM, "out of memory: %zu items of %zu bytes",
                           need, elem);
    np = weft__realloc(*p, ncap * elem);
    if (!np)
        return weft__error(WEFT_ENOMEM, "out of memory: %zu items of %zu bytes",
                           ncap, elem);
    *p = np;
    *cap = ncap;
    return 0;
}

void weft__strlcpy(char *dst, const char *src, size_t size)
{
    size_t n;

    if (!size)
        return;
    n = strlen(src);
    if (n >= size)
        n = size - 1;
    memcpy(dst, src, n);
    dst[n] = '\0';
}

static int weft__suffix_scale(const char *end, double base, double *scale)
{
    static const char suffixes[] = "kmgtp";
    const char *s;
    double f = 1;

    *scale = 1;
    if (*end == '\0')
        return 0;
    s = strchr(suffixes, end[0] | 0x20);
    if (!s || !*s)
        return -1;
    for (long i = 0; i <= s - suffixes; i++)
        f *= base;
    end++;
    /* accept "KiB", "KB", "K" and "k" */
    if (*end == 'i')
        end++;
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    *scale = f;
    return 0;
}

int weft__parse_size(const char *s, uint64_t *out)
{
    char *end;
    double v, scale;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || v < 0 || weft__suffix_scale(end, 1024, &scale))
        return -1;
    v *= scale;
    if (!(v < 18446744073709551616.0))
        return -1;
    *out = (uint64_t)v;
    return 0;
}

int weft__parse_double(const char *s, double *out)
{
    char *end;
    double v, scale;

    if (!s || !*s)
        return -1;
    errno = 0;
    v = strtod(s, &end);
    if (errno || end == s || !isfinite(v) ||
        weft__suffix_scale(end, 1000, &scale))
        return -1;
    *out = v * scale;
    return 0;
}

uint64_t weft__now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
