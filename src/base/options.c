/* The WEFT_* variables: options.h. */
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

extern char **environ;

static const weft__opt_info weft__opt_table[WEFT__OPT_COUNT] = {
#define WEFT__OPT_INFO(id, type, lo, hi, accept, dflt, help)                   \
    {"WEFT_" #id, WEFT__OPT_##type, lo, hi, accept, dflt, help},
    WEFT__OPTIONS(WEFT__OPT_INFO)
#undef WEFT__OPT_INFO
};

/* Read by weft's tests, not by the library: no warning for these. */
static const char *const weft__opt_foreign[] = {"WEFT_KEEP_TEST_FILES"};

static const char weft__bool_words[] = "1|0|on|off|yes|no|true|false";

/*
 * One variable in a snapshot. set: it was in the environment (and good);
 * str: its text, else the table's default (NULL if none); num: str parsed
 * (BOOL 0/1, UINT, SIZE, ENUM the word's index).
 */
typedef struct weft__opt_value {
    bool set;
    const char *str;
    uint64_t num;
} weft__opt_value;

/*
 * Snapshots are immutable once published and never freed (getters hand
 * out their strings); a load that finds the environment unchanged keeps
 * the current one, so there are as many as distinct environments loaded.
 */
typedef struct weft__opt_snapshot {
    struct weft__opt_snapshot *older;
    weft__opt_value v[WEFT__OPT_COUNT];
    char text[]; /* the set values, one after the other */
} weft__opt_snapshot;

/* Every variable at its default: before any load, or if one cannot allocate. */
static weft__opt_snapshot weft__opt_defaults;
static int weft__opt_defaults_ready; /* under weft__opt_lock */
/* Published with release order; NULL until the first load. */
static weft__opt_snapshot *weft__opt_current;
/* Serialises loads (and the warned list); getters never take it. */
static pthread_mutex_t weft__opt_lock = PTHREAD_MUTEX_INITIALIZER;
/* Unknown names already warned about. */
static char weft__opt_warned[16][64];
static unsigned weft__opt_nwarned;

const weft__opt_info *weft__opt_info_of(weft__opt id)
{
    weft__assert((unsigned)id < WEFT__OPT_COUNT);
    return &weft__opt_table[id];
}

/* The n-th word of a '|'-separated list into buf; false past the end. */
static bool weft__opt_word(const char *words, unsigned n, char *buf,
                           size_t size)
{
    const char *p = words;

    for (unsigned i = 0; i < n; i++) {
        p = strchr(p, '|');
        if (!p)
            return false;
        p++;
    }
    size_t len = strcspn(p, "|");
    if (len >= size)
        len = size - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return true;
}

/* "a, b or c" from "a|b|c". */
static void weft__opt_list(const char *words, char *buf, size_t size)
{
    char w[64];
    size_t len = 0;
    unsigned n = 0;

    while (weft__opt_word(words, n, w, sizeof w))
        n++;
    buf[0] = '\0';
    for (unsigned i = 0; i < n && len < size; i++) {
        weft__opt_word(words, i, w, sizeof w);
        len += (size_t)snprintf(buf + len, size - len, "%s%s",
                                i == 0       ? ""
                                : i + 1 == n ? " or "
                                             : ", ",
                                w);
    }
}

void weft__opt_accepted(weft__opt id, char *buf, size_t size)
{
    const weft__opt_info *o = weft__opt_info_of(id);
    char list[256];

    switch (o->type) {
    case WEFT__OPT_BOOL:
        weft__opt_list(weft__bool_words, list, sizeof list);
        snprintf(buf, size, "%s", list);
        break;
    case WEFT__OPT_UINT:
        snprintf(buf, size, "a whole number from %u to %u", o->lo, o->hi);
        break;
    case WEFT__OPT_SIZE:
        snprintf(buf, size,
                 "a size in bytes, with an optional K, M, G or T suffix "
                 "(powers of 1024), e.g. 64M");
        break;
    case WEFT__OPT_ENUM:
        weft__opt_list(o->accept, list, sizeof list);
        snprintf(buf, size, "%s", list);
        break;
    case WEFT__OPT_TEXT:
    case WEFT__OPT_PATH:
        snprintf(buf, size, "%s", o->accept);
        break;
    }
}

/* The index of s among words, or -1. */
static int weft__opt_match(const char *words, const char *s)
{
    char w[64];

    for (unsigned i = 0; weft__opt_word(words, i, w, sizeof w); i++)
        if (strcasecmp(w, s) == 0)
            return (int)i;
    return -1;
}

/*
 * Parse s (not NULL) as variable id: 0 and *num, or -1 with why (the
 * whole message, naming the variable) filled in.
 */
static int weft__opt_parse(weft__opt id, const char *s, uint64_t *num,
                           char *why, size_t size)
{
    const weft__opt_info *o = weft__opt_info_of(id);
    char accepted[384];
    int i;

    if (!*s) {
        weft__opt_accepted(id, accepted, sizeof accepted);
        snprintf(why, size,
                 "%s is set but empty: expected %s; unset it for "
                 "the default%s%s%s",
                 o->name, accepted, o->dflt ? " (" : "", o->dflt ? o->dflt : "",
                 o->dflt ? ")" : "");
        return -1;
    }
    switch (o->type) {
    case WEFT__OPT_BOOL:
        /* on/off pairs: an even index is true */
        if ((i = weft__opt_match(weft__bool_words, s)) >= 0) {
            *num = i % 2 == 0;
            return 0;
        }
        break;
    case WEFT__OPT_UINT: {
        unsigned long long v = 0;
        const char *p = s;

        for (; *p >= '0' && *p <= '9' && v <= o->hi; p++)
            v = v * 10 + (unsigned)(*p - '0');
        if (!*p && v >= o->lo && v <= o->hi) {
            *num = v;
            return 0;
        }
        break;
    }
    case WEFT__OPT_SIZE:
        if (isdigit((unsigned char)*s) && weft__parse_size(s, num) == 0)
            return 0;
        break;
    case WEFT__OPT_ENUM:
        if ((i = weft__opt_match(o->accept, s)) >= 0) {
            *num = (uint64_t)i;
            return 0;
        }
        break;
    case WEFT__OPT_TEXT:
    case WEFT__OPT_PATH:
        *num = 0;
        return 0;
    }
    weft__opt_accepted(id, accepted, sizeof accepted);
    snprintf(why, size, "%s=%s: expected %s%s", o->name, s,
             o->type == WEFT__OPT_ENUM ? "one of " : "", accepted);
    return -1;
}

int weft__opt_check(weft__opt id, const char *value)
{
    char why[512];
    uint64_t num;

    if (!value || weft__opt_parse(id, value, &num, why, sizeof why) == 0)
        return 0;
    return weft__error(WEFT_EINVAL, "%s", why);
}

/* ---- the closest name ------------------------------------------------- */

static unsigned weft__opt_distance(const char *a, const char *b)
{
    unsigned row[72], la = (unsigned)strlen(a), lb = (unsigned)strlen(b);

    if (la >= WEFT__COUNTOF(row) || lb >= WEFT__COUNTOF(row))
        return ~0u;
    for (unsigned j = 0; j <= lb; j++)
        row[j] = j;
    for (unsigned i = 1; i <= la; i++) {
        unsigned diag = row[0];

        row[0] = i;
        for (unsigned j = 1; j <= lb; j++) {
            unsigned up = row[j];
            unsigned sub = diag + (toupper((unsigned char)a[i - 1]) !=
                                   toupper((unsigned char)b[j - 1]));

            row[j] = WEFT__MIN(sub, WEFT__MIN(up, row[j - 1]) + 1);
            diag = up;
        }
    }
    return row[lb];
}

weft__opt weft__opt_closest(const char *name)
{
    unsigned best = ~0u;
    weft__opt id = 0;

    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        unsigned d = weft__opt_distance(name, weft__opt_table[i].name);

        if (d < best) {
            best = d;
            id = (weft__opt)i;
        }
    }
    return id;
}

/* ---- loading ---------------------------------------------------------- */

/* Defaults parsed; a default the table cannot parse is a bug in it. */
static void weft__opt_defaults_init(void)
{
    char why[512];

    if (weft__opt_defaults_ready)
        return;
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        weft__opt_value *v = &weft__opt_defaults.v[i];

        v->set = false;
        v->str = weft__opt_table[i].dflt;
        v->num = 0;
        if (v->str &&
            weft__opt_parse((weft__opt)i, v->str, &v->num, why, sizeof why) < 0)
            weft__client_crash("weft: the options table: default of %s", why);
    }
    weft__opt_defaults_ready = 1;
}

static weft__opt_snapshot *weft__opt_snapshot_get(void)
{
    return __atomic_load_n(&weft__opt_current, __ATOMIC_ACQUIRE);
}

/* The same environment as s: every variable set alike, to the same text. */
static bool weft__opt_same(const weft__opt_snapshot *s, const char **raw)
{
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        if (s->v[i].set != (raw[i] != NULL))
            return false;
        if (raw[i] && strcmp(s->v[i].str, raw[i]) != 0)
            return false;
    }
    return true;
}

/* A new snapshot of raw[] (values already checked); NULL if out of memory. */
static weft__opt_snapshot *weft__opt_snapshot_make(const char **raw,
                                                   const uint64_t *num)
{
    size_t len = 0;
    weft__opt_snapshot *s;
    char *p;

    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++)
        if (raw[i])
            len += strlen(raw[i]) + 1;
    s = weft__malloc(sizeof *s + len);
    if (!s)
        return NULL;
    *s = weft__opt_defaults;
    p = s->text;
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        if (!raw[i])
            continue;
        len = strlen(raw[i]) + 1;
        memcpy(p, raw[i], len);
        s->v[i].set = true;
        s->v[i].str = p;
        s->v[i].num = num[i];
        p += len;
    }
    return s;
}

static void weft__opt_publish(weft__opt_snapshot *s)
{
    s->older = weft__opt_current;
    __atomic_store_n(&weft__opt_current, s, __ATOMIC_RELEASE);
}

/* Messages found under the lock, logged after it (a sink may call weft). */
typedef struct weft__opt_report {
    char unknown[8][160];
    unsigned nunknown;
    char bad[WEFT__OPT_COUNT][512];
    unsigned nbad;
} weft__opt_report;

static bool weft__opt_known(const char *name, size_t len)
{
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++)
        if (strlen(weft__opt_table[i].name) == len &&
            strncmp(weft__opt_table[i].name, name, len) == 0)
            return true;
    for (unsigned i = 0; i < WEFT__COUNTOF(weft__opt_foreign); i++)
        if (strlen(weft__opt_foreign[i]) == len &&
            strncmp(weft__opt_foreign[i], name, len) == 0)
            return true;
    return false;
}

/* WEFT_* names in the environment that are no option, each once. */
static void weft__opt_scan_unknown(weft__opt_report *r)
{
    for (char **e = environ; e && *e; e++) {
        size_t len = strcspn(*e, "=");
        char name[64];
        bool seen = false;

        if (strncmp(*e, "WEFT_", 5) != 0 || weft__opt_known(*e, len))
            continue;
        if (len >= sizeof name)
            len = sizeof name - 1;
        memcpy(name, *e, len);
        name[len] = '\0';
        for (unsigned i = 0; i < weft__opt_nwarned && !seen; i++)
            seen = strcmp(weft__opt_warned[i], name) == 0;
        if (seen || r->nunknown == WEFT__COUNTOF(r->unknown))
            continue;
        if (weft__opt_nwarned < WEFT__COUNTOF(weft__opt_warned))
            memcpy(weft__opt_warned[weft__opt_nwarned++], name, len + 1);
        snprintf(r->unknown[r->nunknown++], sizeof r->unknown[0],
                 "%s is not a weft variable (did you mean %s?)", name,
                 weft__opt_table[weft__opt_closest(name)].name);
    }
}

/*
 * Read the environment under the lock. strict: a bad value fails the load
 * (returns WEFT_EINVAL, nothing published); else it reads as unset and is
 * reported. 0 with *out the current snapshot (new or kept).
 */
static int weft__opt_read_locked(bool strict, weft__opt_report *r,
                                 weft__opt_snapshot **out)
{
    const char *raw[WEFT__OPT_COUNT];
    uint64_t num[WEFT__OPT_COUNT];
    weft__opt_snapshot *cur = weft__opt_current, *s;

    weft__opt_defaults_init();
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        raw[i] = getenv(weft__opt_table[i].name);
        if (raw[i] && weft__opt_parse((weft__opt)i, raw[i], &num[i],
                                      r->bad[r->nbad], sizeof r->bad[0]) < 0) {
            r->nbad++;
            raw[i] = NULL;
        }
    }
    weft__opt_scan_unknown(r);
    if (strict && r->nbad)
        return WEFT_EINVAL;
    if (cur && weft__opt_same(cur, raw)) {
        *out = cur;
        return 0;
    }
    if (!(s = weft__opt_snapshot_make(raw, num)))
        return WEFT_ENOMEM;
    weft__opt_publish(s);
    *out = s;
    return 0;
}

static void weft__opt_apply_log(const weft__opt_snapshot *s)
{
    weft__log_env_level((int)s->v[WEFT__OPT_LOG].num);
}

static void weft__opt_report_unknown(const weft__opt_report *r)
{
    for (unsigned i = 0; i < r->nunknown; i++)
        weft__warn("options", "%s", r->unknown[i]);
}

int weft__options_load(void)
{
    weft__opt_report r;
    weft__opt_snapshot *s = NULL;
    int rc;

    r.nunknown = r.nbad = 0;
    pthread_mutex_lock(&weft__opt_lock);
    rc = weft__opt_read_locked(true, &r, &s);
    pthread_mutex_unlock(&weft__opt_lock);
    if (s)
        weft__opt_apply_log(s);
    weft__opt_report_unknown(&r);
    if (rc == WEFT_ENOMEM)
        return weft__error(rc, "reading the WEFT_* variables: out of memory");
    if (rc < 0) {
        char msg[1024];
        size_t len = 0;

        msg[0] = '\0';
        for (unsigned i = 0; i < r.nbad && len < sizeof msg; i++)
            len += (size_t)snprintf(msg + len, sizeof msg - len, "%s%s",
                                    i ? "; " : "", r.bad[i]);
        return weft__error(rc, "%s", msg);
    }
    return 0;
}

/*
 * The current snapshot; the first call with none loads one leniently
 * (a bad value is logged as an error and reads as unset).
 */
static const weft__opt_snapshot *weft__opt_snapshot_now(void)
{
    weft__opt_snapshot *s = weft__opt_snapshot_get();
    const weft__opt_snapshot *use;
    weft__opt_report r;
    int rc;

    if (WEFT__LIKELY(s != NULL))
        return s;
    r.nunknown = r.nbad = 0;
    pthread_mutex_lock(&weft__opt_lock);
    if ((s = weft__opt_current)) {
        pthread_mutex_unlock(&weft__opt_lock);
        return s;
    }
    rc = weft__opt_read_locked(false, &r, &s);
    use = rc == 0 ? s : &weft__opt_defaults;
    pthread_mutex_unlock(&weft__opt_lock);
    weft__opt_apply_log(use);
    weft__opt_report_unknown(&r);
    for (unsigned i = 0; i < r.nbad; i++)
        weft__log(WEFT_LOG_ERROR, "options", "%s; using the default", r.bad[i]);
    return use;
}

static const weft__opt_value *weft__opt_get(weft__opt id, weft__opt_type t)
{
    weft__assert((unsigned)id < WEFT__OPT_COUNT);
    weft__assert_internal(
        weft__opt_table[id].type == t ||
        (t == WEFT__OPT_TEXT && weft__opt_table[id].type == WEFT__OPT_PATH));
    (void)t;
    return &weft__opt_snapshot_now()->v[id];
}

bool weft__opt_bool(weft__opt id, bool *out)
{
    const weft__opt_value *v = weft__opt_get(id, WEFT__OPT_BOOL);

    if (v->str)
        *out = v->num != 0;
    return v->set;
}

bool weft__opt_uint(weft__opt id, unsigned *out)
{
    const weft__opt_value *v = weft__opt_get(id, WEFT__OPT_UINT);

    if (v->str)
        *out = (unsigned)v->num;
    return v->set;
}

bool weft__opt_size(weft__opt id, uint64_t *out)
{
    const weft__opt_value *v = weft__opt_get(id, WEFT__OPT_SIZE);

    if (v->str)
        *out = v->num;
    return v->set;
}

bool weft__opt_enum(weft__opt id, unsigned *out)
{
    const weft__opt_value *v = weft__opt_get(id, WEFT__OPT_ENUM);

    if (v->str)
        *out = (unsigned)v->num;
    return v->set;
}

bool weft__opt_str(weft__opt id, const char **out)
{
    const weft__opt_value *v = weft__opt_get(id, WEFT__OPT_TEXT);

    if (v->str)
        *out = v->str;
    return v->set;
}

const char *weft__opt_raw(weft__opt id)
{
    const weft__opt_value *v;

    weft__assert((unsigned)id < WEFT__OPT_COUNT);
    v = &weft__opt_snapshot_now()->v[id];
    return v->set ? v->str : NULL;
}
