/*
 * A hash map from the caller's keys to uintptr_t values, for tables whose
 * keys live elsewhere: the value is an index into the caller's array (which
 * may move as it grows) or a pointer to an entry. The caller hashes a key
 * and says, through eq, whether a stored value is that key's; the map keeps
 * the hash beside the value, so that it grows without asking again.
 *
 * Open addressing with linear probing, at most half full; removal shifts
 * the following entries back (no tombstones). Not thread-safe: the caller
 * locks. Memory comes from weft__malloc, so failure injection ("malloc")
 * reaches it; a call that fails changes nothing.
 */
#ifndef WEFT_BASE_MAP_H
#define WEFT_BASE_MAP_H

#include "base.h"

/* hash 0: the slot is empty (stored hashes are never 0). */
typedef struct weft__map_slot {
    uint64_t hash;
    uintptr_t value;
} weft__map_slot;

typedef struct weft__map {
    weft__map_slot *slots;
    size_t cap; /* 0, or a power of two >= 16 */
    size_t n;
} weft__map;

/* A zeroed map is empty and holds no memory. */
#define WEFT__MAP_INIT                                                         \
    {                                                                          \
        NULL, 0, 0                                                             \
    }

/* Whether value (stored) belongs to key (the caller's). */
typedef bool weft__map_eq_fn(uintptr_t value, const void *key,
                             const void *user);

void weft__map_fini(weft__map *m);
/* Empty, keeping the memory. */
void weft__map_clear(weft__map *m);
/* Room for n entries in all: the puts that follow, up to n, cannot fail. */
int weft__map_reserve(weft__map *m, size_t n);
/* Remove key; 1 if it was there, 0 if not. */
int weft__map_remove(weft__map *m, uint64_t hash, const void *key,
                     weft__map_eq_fn *eq, const void *user);

static inline uint64_t weft__map_stored(uint64_t hash)
{
    return hash ? hash : 1;
}

/* The stored value of key, or NULL. Valid until the next put or remove. */
static inline uintptr_t *weft__map_find(const weft__map *m, uint64_t hash,
                                        const void *key, weft__map_eq_fn *eq,
                                        const void *user)
{
    size_t mask = m->cap - 1, i;

    if (!m->n)
        return NULL;
    hash = weft__map_stored(hash);
    for (i = hash & mask; m->slots[i].hash; i = (i + 1) & mask)
        if (m->slots[i].hash == hash && eq(m->slots[i].value, key, user))
            return &m->slots[i].value;
    return NULL;
}

/* ---- hashes ------------------------------------------------------------ */

/* Mix x into h (a seed or an earlier hash): every bit of both counts. */
static inline uint64_t weft__hash_mix(uint64_t h, uint64_t x)
{
    h ^= x + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
    h ^= h >> 33; /* murmur3's finalizer: the low bits, which pick the */
    h *= 0xff51afd7ed558ccdull; /* slot, depend on every bit */
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
}

static inline uint64_t weft__hash_ptr(const void *p)
{
    return weft__hash_mix(0, (uint64_t)(uintptr_t)p);
}

/* FNV-1a of a string, mixed into h. */
static inline uint64_t weft__hash_str(uint64_t h, const char *s)
{
    uint64_t f = 1469598103934665603ull;

    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        f = (f ^ *p) * 1099511628211ull;
    return weft__hash_mix(h, f);
}

/*
 * The value slot of key, which is put there with value if absent. 1 if
 * added, 0 if found (*slot, when slot is not NULL, points at the stored
 * value either way), or WEFT_ENOMEM with nothing changed.
 */
static inline int weft__map_put(weft__map *m, uint64_t hash, const void *key,
                                uintptr_t value, weft__map_eq_fn *eq,
                                const void *user, uintptr_t **slot)
{
    uintptr_t *found = weft__map_find(m, hash, key, eq, user);
    size_t i;
    int rc;

    if (found) {
        if (slot)
            *slot = found;
        return 0;
    }
    if (m->n + 1 > m->cap / 2 && (rc = weft__map_reserve(m, m->n + 1)) < 0)
        return rc;
    hash = weft__map_stored(hash);
    for (i = hash & (m->cap - 1); m->slots[i].hash; i = (i + 1) & (m->cap - 1))
        ;
    m->slots[i].hash = hash;
    m->slots[i].value = value;
    m->n++;
    if (slot)
        *slot = &m->slots[i].value;
    return 1;
}

#endif /* WEFT_BASE_MAP_H */
