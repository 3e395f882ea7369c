/* The hash map of map.h. */
#include "map.h"

#include <string.h>

void weft__map_fini(weft__map *m)
{
    weft__free(m->slots);
    *m = (weft__map)WEFT__MAP_INIT;
}

void weft__map_clear(weft__map *m)
{
    if (m->n)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->n = 0;
}

/* Into slots of ncap (a power of two), the entries of m: hashes only. */
static void weft__map_move(weft__map *m, weft__map_slot *slots, size_t ncap)
{
    for (size_t j = 0; j < m->cap; j++) {
        size_t i;

        if (!m->slots[j].hash)
            continue;
        for (i = m->slots[j].hash & (ncap - 1); slots[i].hash;
             i = (i + 1) & (ncap - 1))
            ;
        slots[i] = m->slots[j];
    }
}

int weft__map_reserve(weft__map *m, size_t n)
{
    weft__map_slot *slots;
    size_t ncap = m->cap ? m->cap : 16;

    while (ncap / 2 < n) {
        if (ncap > SIZE_MAX / 4 / sizeof *slots)
            return weft__error(WEFT_ENOMEM, "map: %zu entries", n);
        ncap *= 2;
    }
    if (ncap == m->cap)
        return 0;
    slots = weft__calloc(ncap, sizeof *slots);
    if (!slots)
        return weft__error(WEFT_ENOMEM, "map: out of memory");
    weft__map_move(m, slots, ncap);
    weft__free(m->slots);
    m->slots = slots;
    m->cap = ncap;
    return 0;
}

int weft__map_remove(weft__map *m, uint64_t hash, const void *key,
                     weft__map_eq_fn *eq, const void *user)
{
    uintptr_t *found = weft__map_find(m, hash, key, eq, user);
    size_t mask = m->cap - 1, hole, i;

    if (!found)
        return 0;
    hole = (size_t)(WEFT__CONTAINER(found, weft__map_slot, value) - m->slots);
    /* Shift back each following entry whose home is not between the hole
     * and itself (cyclically), so that every probe still finds its key. */
    for (i = (hole + 1) & mask; m->slots[i].hash; i = (i + 1) & mask) {
        size_t home = m->slots[i].hash & mask;

        if (((i - home) & mask) >= ((i - hole) & mask)) {
            m->slots[hole] = m->slots[i];
            hole = i;
        }
    }
    m->slots[hole] = (weft__map_slot){0, 0};
    m->n--;
    return 1;
}
