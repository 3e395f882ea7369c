/* Logging: levels from WEFT_LOG, a replaceable sink. */
#include "base.h"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

/*
 * The level is read on every log call without a lock: a stale read only
 * means one message more or less around the moment the level changes.
 * WEFT_LOG_WARN until the environment has been read (see weft__log_init).
 */
int weft__log_level = WEFT_LOG_WARN;

static pthread_once_t weft__log_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t weft__log_lock = PTHREAD_MUTEX_INITIALIZER;
static weft_log_fn *weft__log_sink;
static void *weft__log_sink_user;
static int weft__log_level_set; /* set by weft_log_set_level */

static const char *const weft__level_names[] = {"trace", "debug", "info",
                                                "warn",  "error", "off"};

static void weft__log_init(void)
{
    const char *env = weft__env("WEFT_LOG");
    unsigned i;

    if (!env || __atomic_load_n(&weft__log_level_set, __ATOMIC_RELAXED))
        return;
    for (i = 0; i < WEFT__COUNTOF(weft__level_names); i++) {
        if (strcasecmp(env, weft__level_names[i]) == 0) {
            __atomic_store_n(&weft__log_level, (int)i, __ATOMIC_RELAXED);
            return;
        }
    }
    fprintf(stderr,
            "weft[warn] log: WEFT_LOG=%s is not one of trace, debug, "
            "info, warn, error, off\n",
            env);
}

/* Called once from every entry point that creates a runtime. */
void weft__log_setup(void);
void weft__log_setup(void)
{
    pthread_once(&weft__log_once, weft__log_init);
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
    pthread_once(&weft__log_once, weft__log_init);
    __atomic_store_n(&weft__log_level_set, 1, __ATOMIC_RELAXED);
    if ((int)level < WEFT_LOG_TRACE || level > WEFT_LOG_OFF)
        level = WEFT_LOG_WARN;
    __atomic_store_n(&weft__log_level, (int)level, __ATOMIC_RELAXED);
}

weft_log_level weft_log_get_level(void)
{
    pthread_once(&weft__log_once, weft__log_init);
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
