/* The compiled-kernel cache (see kcache.h). */
#include "kcache.h"

#include "../base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/*
 * Entry layout, all little-endian as written by this machine (an entry made
 * elsewhere fails the magic or checksum check and is rebuilt):
 *   magic "WEFTKC02" | key h[0] h[1] | kind (u64) | size (u64) | checksum
 *   (u64) | log length (u64) | size bytes | the build log (no NUL)
 * The checksum covers the bytes and then the log.
 */
static const char weft__kc_magic[8] = {'W', 'E', 'F', 'T', 'K', 'C', '0', '2'};
enum { WEFT__KC_HEADER = 8 + 6 * 8 };

static long weft__kc_counters[5]; /* hits misses stores corrupt rejected */

static void weft__kc_count(int i)
{
    __atomic_add_fetch(&weft__kc_counters[i], 1, __ATOMIC_RELAXED);
}

void weft__kcache_get_stats(weft__kcache_stats *s)
{
    s->hits = __atomic_load_n(&weft__kc_counters[0], __ATOMIC_RELAXED);
    s->misses = __atomic_load_n(&weft__kc_counters[1], __ATOMIC_RELAXED);
    s->stores = __atomic_load_n(&weft__kc_counters[2], __ATOMIC_RELAXED);
    s->corrupt = __atomic_load_n(&weft__kc_counters[3], __ATOMIC_RELAXED);
    s->rejected = __atomic_load_n(&weft__kc_counters[4], __ATOMIC_RELAXED);
}

/* FNV-1a over bytes, continued from h. */
static uint64_t weft__fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++) {
        h ^= b[i];
        h *= 0x100000001b3ull;
    }
    return h;
}

/* A final mix so that nearby inputs spread over all bits. */
static uint64_t weft__mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    x ^= x >> 33;
    return x;
}

void weft__kcache_key_make(weft__kcache_key *k, const void *const *parts,
                           const size_t *lens, unsigned n)
{
    uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;

    for (unsigned i = 0; i < n; i++) {
        size_t len = lens[i] == (size_t)-1 ? strlen(parts[i]) : lens[i];
        uint64_t l = len;

        /* the length keeps ("ab","c") and ("a","bc") apart */
        a = weft__fnv(a, &l, sizeof l);
        b = weft__fnv(b, &l, sizeof l);
        a = weft__fnv(a, parts[i], len);
        b = weft__fnv(b ^ 0x9e3779b97f4a7c15ull, parts[i], len);
    }
    k->h[0] = weft__mix(a);
    k->h[1] = weft__mix(b ^ a);
    snprintf(k->hex, sizeof k->hex, "%016llx%016llx",
             (unsigned long long)k->h[0], (unsigned long long)k->h[1]);
}

static int weft__kc_path(const weft__kcache_key *k, char *buf, size_t n)
{
    char dir[4096];

    if (weft__cache_dir(dir, sizeof dir) < 0)
        return -1;
    return snprintf(buf, n, "%s/%s.bin", dir, k->hex) < (int)n ? 0 : -1;
}

static uint64_t weft__kc_get64(const unsigned char *p)
{
    uint64_t v;

    memcpy(&v, p, sizeof v);
    return v;
}

int weft__kcache_load(const weft__kcache_key *k, void **bytes, size_t *size,
                      weft__source_kind *kind, char **log)
{
    char path[4200];
    unsigned char hdr[WEFT__KC_HEADER];
    struct stat st;
    uint64_t len, sum, knd, loglen;
    unsigned char *data = NULL;
    char *text = NULL;
    FILE *f;

    if (weft__kc_path(k, path, sizeof path) < 0)
        return WEFT_ENOTFOUND;
    f = fopen(path, "rb");
    if (!f) {
        weft__kc_count(1);
        return WEFT_ENOTFOUND;
    }
    if (fstat(fileno(f), &st) < 0 || st.st_size < WEFT__KC_HEADER ||
        fread(hdr, 1, sizeof hdr, f) != sizeof hdr)
        goto corrupt;
    len = weft__kc_get64(hdr + 32);
    knd = weft__kc_get64(hdr + 24);
    sum = weft__kc_get64(hdr + 40);
    loglen = weft__kc_get64(hdr + 48);
    if (memcmp(hdr, weft__kc_magic, 8) != 0 ||
        weft__kc_get64(hdr + 8) != k->h[0] ||
        weft__kc_get64(hdr + 16) != k->h[1] ||
        len > (uint64_t)st.st_size - WEFT__KC_HEADER ||
        loglen != (uint64_t)st.st_size - WEFT__KC_HEADER - len ||
        knd < WEFT__SRC_HOST_TABLE || knd > WEFT__SRC_HOST_SO)
        goto corrupt;
    data = weft__malloc(len + 1);
    text = loglen && log ? weft__malloc(loglen + 1) : NULL;
    if (!data || (loglen && log && !text)) {
        fclose(f);
        weft__free(data);
        weft__free(text);
        weft__kc_count(1);
        return WEFT_ENOTFOUND;
    }
    if (fread(data, 1, len, f) != len)
        goto corrupt;
    {
        uint64_t h = weft__fnv(0xcbf29ce484222325ull, data, len);
        unsigned char chunk[4096];

        /* The log, into text where it is wanted, else only summed. */
        for (uint64_t at = 0; at < loglen;) {
            size_t n = (size_t)WEFT__MIN(loglen - at, (uint64_t)sizeof chunk);
            unsigned char *to = text ? (unsigned char *)text + at : chunk;

            if (fread(to, 1, n, f) != n)
                goto corrupt;
            h = weft__fnv(h, to, n);
            at += n;
        }
        if (weft__mix(h) != sum)
            goto corrupt;
    }
    data[len] = '\0'; /* text kinds (PTX) may be read as strings */
    if (text)
        text[loglen] = '\0';
    fclose(f);
    weft__kc_count(0);
    weft__debug("kcache", "hit %s (%llu bytes, %llu of log)", k->hex,
                (unsigned long long)len, (unsigned long long)loglen);
    *bytes = data;
    *size = len;
    *kind = (weft__source_kind)knd;
    if (log)
        *log = text;
    return 0;

corrupt:
    fclose(f);
    weft__free(data);
    weft__free(text);
    weft__kc_count(3);
    weft__warn("kcache", "corrupt cache entry %s removed; rebuilding", path);
    unlink(path);
    return WEFT_ENOTFOUND;
}

int weft__kcache_store(const weft__kcache_key *k, const void *bytes,
                       size_t size, weft__source_kind kind, const char *log)
{
    char path[4200], tmp[4300], dir[4096];
    unsigned char hdr[WEFT__KC_HEADER];
    size_t loglen = log ? strlen(log) : 0;
    uint64_t v[6];
    int fd, ok;
    FILE *f;

    if (weft__kc_path(k, path, sizeof path) < 0)
        return 0;
    if (weft__cache_dir(dir, sizeof dir) < 0 || weft__dir_make(dir) < 0) {
        weft__warn("kcache", "cannot create %s: %s", dir, strerror(errno));
        return WEFT_EIO;
    }
    snprintf(tmp, sizeof tmp, "%s.%ld.XXXXXX", path, (long)getpid());
    fd = mkstemp(tmp);
    if (fd < 0 || !(f = fdopen(fd, "wb"))) {
        weft__warn("kcache", "cannot write %s: %s", tmp, strerror(errno));
        if (fd >= 0)
            close(fd);
        return WEFT_EIO;
    }
    v[0] = k->h[0];
    v[1] = k->h[1];
    v[2] = (uint64_t)kind;
    v[3] = size;
    v[4] = weft__mix(
        weft__fnv(weft__fnv(0xcbf29ce484222325ull, bytes, size), log, loglen));
    v[5] = loglen;
    memcpy(hdr, weft__kc_magic, 8);
    memcpy(hdr + 8, v, sizeof v);
    ok = fwrite(hdr, 1, sizeof hdr, f) == sizeof hdr &&
         fwrite(bytes, 1, size, f) == size &&
         (!loglen || fwrite(log, 1, loglen, f) == loglen);
    ok = (fclose(f) == 0) && ok;
    if (!ok || rename(tmp, path) < 0) {
        weft__warn("kcache", "cannot write %s: %s", path, strerror(errno));
        unlink(tmp);
        return WEFT_EIO;
    }
    weft__kc_count(2);
    weft__debug("kcache", "stored %s (%zu bytes, %zu of log)", k->hex, size,
                loglen);
    return 0;
}

void weft__kcache_remove(const weft__kcache_key *k)
{
    char path[4200];

    if (weft__kc_path(k, path, sizeof path) == 0 && unlink(path) == 0)
        weft__kc_count(4);
}
