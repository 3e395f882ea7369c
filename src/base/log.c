/* Logging: levels from WEFT_LOG, a replaceable sink. */
#include "base.h"
#include "options.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>

/*
 * The level is read on every log call without a lock: a stale read only
 * means one message more or less around the moment the level changes.
 * WEFT_LOG_WARN until the options are first read (options.c applies
 * WEFT_LOG at every load through weft__log_env_level).
 */
int weft__log_level = WEFT_LOG_WARN;

static pthread_mutex_t weft__log_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_log_fn *weft__log_sink;
static void *weft__log_sink_user;
static int weft__log_level_set; /* set by weft_log_set_level (atomic) */

static const char *const weft__level_names[] = {"trace", "debug", "info",
                                                "warn",  "error", "off"};

void weft__log_env_level(int level)
{
    if (__atomic_load_n(&weft__log_level_set, __ATOMIC_RELAXED) ||
        level < WEFT_LOG_TRACE || level > WEFT_LOG_OFF)
        return;
    __atomic_store_n(&weft__log_level, level, __ATOMIC_RELAXED);
}

void weft_log_set_sink(weft_log_fn *fn, void *user)
{
    pthread_mutex_lock(&weft__log_lock);
    weft__log_sink = fn;
    weft__log_sink_user = user;
    pthread_mutex_unlock(&weft__log_lock);
}

void weft_log_set_level(weft_log_level level)
{
    __atomic_store_n(&weft__log_level_set, 1, __ATOMIC_RELAXED);
    if ((int)level < WEFT_LOG_TRACE || level > WEFT_LOG_OFF)
        level = WEFT_LOG_WARN;
    __atomic_store_n(&weft__log_level, (int)level, __ATOMIC_RELAXED);
}

weft_log_level weft_log_get_level(void)
{
    unsigned env = WEFT_LOG_WARN;

    /* The first read of the options applies WEFT_LOG. */
    weft__opt_enum(WEFT__OPT_LOG, &env);
    return (weft_log_level)__atomic_load_n(&weft__log_level, __ATOMIC_RELAXED);
}

void weft__log_impl(weft_log_level level, const char *subsystem,
                    const char *fmt, ...)
{
    char line[1024];
    va_list ap;

    if (level >= WEFT_LOG_OFF)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    /*
     * The lock makes a sink replacement safe against a concurrent call and
     * keeps lines from interleaving on stderr.
     */
    pthread_mutex_lock(&weft__log_lock);
    if (weft__log_sink)
        weft__log_sink(level, subsystem, line, weft__log_sink_user);
    else
        fprintf(stderr, "weft[%s] %s: %s\n", weft__level_names[level],
                subsystem, line);
    pthread_mutex_unlock(&weft__log_lock);
}
