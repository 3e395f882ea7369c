/* Failure injection: make the n-th failure point from now fail, once. */
#include "base.h"

#include <string.h>

/*
 * weft__fault_armed is the only word the fast path reads. The rest is
 * touched only while armed, under weft__fault_lock (a spin on an atomic
 * flag: contention happens only in tests).
 */
int weft__fault_armed;
static int weft__fault_lock;
static long weft__fault_countdown;
static long weft__fault_seen_count;
static int weft__fault_did_fire;
static char weft__fault_filter[128];

static void weft__fault_acquire(void)
{
    while (__atomic_exchange_n(&weft__fault_lock, 1, __ATOMIC_ACQUIRE))
        ;
}

static void weft__fault_release(void)
{
    __atomic_store_n(&weft__fault_lock, 0, __ATOMIC_RELEASE);
}

void weft__fault_arm(long n, const char *filter)
{
    weft__fault_acquire();
    weft__fault_countdown = n;
    weft__fault_seen_count = 0;
    weft__fault_did_fire = 0;
    weft__strlcpy(weft__fault_filter, filter ? filter : "",
                  sizeof weft__fault_filter);
    weft__fault_release();
    __atomic_store_n(&weft__fault_armed, n > 0, __ATOMIC_RELEASE);
}

void weft__fault_disarm(void)
{
    __atomic_store_n(&weft__fault_armed, 0, __ATOMIC_RELEASE);
}

long weft__fault_seen(void)
{
    long n;

    weft__fault_acquire();
    n = weft__fault_seen_count;
    weft__fault_release();
    return n;
}

int weft__fault_fired(void)
{
    int f;

    weft__fault_acquire();
    f = weft__fault_did_fire;
    weft__fault_release();
    return f;
}

bool weft__fault_check(const char *site)
{
    bool fire = false;

    weft__fault_acquire();
    if (__atomic_load_n(&weft__fault_armed, __ATOMIC_RELAXED) &&
        !weft__fault_did_fire &&
        (site[0] != '!' || weft__fault_filter[0] == '!') &&
        (!weft__fault_filter[0] || strstr(site, weft__fault_filter))) {
        weft__fault_seen_count++;
        if (--weft__fault_countdown == 0) {
            fire = true;
            weft__fault_did_fire = 1;
        }
    }
    weft__fault_release();
    if (fire)
        weft__debug("fault", "injected failure at %s", site);
    return fire;
}
