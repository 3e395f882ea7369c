/* Error codes, their names and messages, and the per-thread detail. */
#include "base.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *weft_version(void)
{
#define WEFT__STR2(x) #x
#define WEFT__STR(x)  WEFT__STR2(x)
    return WEFT__STR(WEFT_VERSION_MAJOR) "." WEFT__STR(
        WEFT_VERSION_MINOR) "." WEFT__STR(WEFT_VERSION_PATCH);
}

const char *weft_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define WEFT__ERRNO_MSG(name, value, msg)                                      \
    case value:                                                                \
        return msg;
        WEFT_ERRNO_MAP(WEFT__ERRNO_MSG)
#undef WEFT__ERRNO_MSG
    }
    return "unknown error";
}

const char *weft_err_name(int err)
{
    switch (err) {
    case 0:
        return "WEFT_OK";
#define WEFT__ERRNO_NAME(name, value, msg)                                     \
    case value:                                                                \
        return "WEFT_" #name;
        WEFT_ERRNO_MAP(WEFT__ERRNO_NAME)
#undef WEFT__ERRNO_NAME
    }
    return "WEFT_EUNKNOWN";
}

/*
 * The detail lives in thread-local storage so that failing calls on
 * different threads do not overwrite each other. Fixed sizes: an error path
 * must not need to allocate.
 */
typedef struct weft__error_state {
    weft_error_detail detail;
    char driver[16];
    char driver_name[64];
    char message[2048];
} weft__error_state;

static _Thread_local weft__error_state weft__err;

static void weft__error_reset_fields(void)
{
    weft__err.detail.driver = NULL;
    weft__err.detail.driver_code = 0;
    weft__err.driver_name[0] = '\0';
    weft__err.detail.driver_name = weft__err.driver_name;
    weft__err.detail.message = weft__err.message;
}

int weft__error(int code, const char *fmt, ...)
{
    va_list ap;

    weft__error_reset_fields();
    weft__err.detail.code = code;
    va_start(ap, fmt);
    vsnprintf(weft__err.message, sizeof weft__err.message, fmt, ap);
    va_end(ap);
    weft__debug("error", "%s: %s", weft_err_name(code), weft__err.message);
    return code;
}

int weft__driver_error(int code, const char *driver, long driver_code,
                       const char *driver_name, const char *fmt, ...)
{
    va_list ap;
    size_t len;

    weft__error_reset_fields();
    weft__err.detail.code = code;
    weft__strlcpy(weft__err.driver, driver ? driver : "",
                  sizeof weft__err.driver);
    weft__err.detail.driver = driver ? weft__err.driver : NULL;
    weft__err.detail.driver_code = driver_code;
    weft__strlcpy(weft__err.driver_name, driver_name ? driver_name : "",
                  sizeof weft__err.driver_name);
    va_start(ap, fmt);
    vsnprintf(weft__err.message, sizeof weft__err.message, fmt, ap);
    va_end(ap);
    len = strlen(weft__err.message);
    if (len < sizeof weft__err.message - 1)
        snprintf(weft__err.message + len, sizeof weft__err.message - len,
                 " [%s %s %ld]", driver ? driver : "driver",
                 driver_name && *driver_name ? driver_name : "code",
                 driver_code);
    weft__debug("error", "%s: %s", weft_err_name(code), weft__err.message);
    return code;
}

int weft__error_prefix(int code, const char *fmt, ...)
{
    char prefix[512];
    char old[sizeof weft__err.message];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    size_t plen;

    memcpy(old, weft__err.message, sizeof old);
    weft__strlcpy(weft__err.message, prefix, sizeof weft__err.message);
    plen = strlen(weft__err.message);
    weft__strlcpy(weft__err.message + plen, ": ",
                  sizeof weft__err.message - plen);
    plen = strlen(weft__err.message);
    weft__strlcpy(weft__err.message + plen, old,
                  sizeof weft__err.message - plen);
    weft__err.detail.code = code;
    weft__err.detail.message = weft__err.message;
    return code;
}

const char *weft__errno_name(int err)
{
    const char *name = strerrorname_np(err);

    return name ? name : "errno";
}

const char *weft_last_error(void)
{
    return weft__err.message;
}

const weft_error_detail *weft_last_error_detail(void)
{
    weft__err.detail.message = weft__err.message;
    if (!weft__err.detail.driver_name)
        weft__err.detail.driver_name = weft__err.driver_name;
    return &weft__err.detail;
}

void weft_clear_error(void)
{
    weft__error_reset_fields();
    weft__err.detail.code = 0;
    weft__err.message[0] = '\0';
}

_Noreturn void weft__assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "weft: assertion failed: %s (%s:%d)\n", expr, file, line);
    fflush(stderr);
    abort();
}

_Noreturn void weft__client_crash(const char *fmt, ...)
{
    va_list ap;

    fputs("weft: API misuse: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    fflush(stderr);
    abort();
}
