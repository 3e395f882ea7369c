/* Traces: a lock-free slice log, the Chrome trace JSON writer and reader. */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ---- kinds ------------------------------------------------------------- */
static const char *const weft__trace_kind_names[WEFT__TRACE_KIND_COUNT] = {
    "kernel", "h2d", "d2h", "peer", "fill", "host", "map", "other"};

const char *weft__trace_kind_name(weft__trace_kind kind)
{
    if ((unsigned)kind >= WEFT__TRACE_KIND_COUNT)
        return "other";
    return weft__trace_kind_names[kind];
}

weft__trace_kind weft__trace_kind_parse(const char *name)
{
    for (unsigned k = 0; name && k < WEFT__TRACE_KIND_COUNT; k++)
        if (strcmp(name, weft__trace_kind_names[k]) == 0)
            return (weft__trace_kind)k;
    return WEFT__TRACE_OTHER;
}

int weft__trace_kind_is_copy(weft__trace_kind kind)
{
    return kind == WEFT__TRACE_H2D || kind == WEFT__TRACE_D2H ||
           kind == WEFT__TRACE_PEER;
}

/* ---- the log: claim a slot with one atomic add ------------------------- */
/*
 * Records live in chunks of WEFT__LOG_CHUNK that are never moved, so a
 * claimed slot stays put while other threads claim theirs. The chunk
 * directory is fixed; whoever first needs a chunk allocates it and installs
 * it with a CAS (a loser frees its own). A record's published word is
 * stored with release once the record is filled, and read with acquire by
 * the snapshot: 0 = claimed but not (or never successfully) filled.
 */
#define WEFT__LOG_CHUNK_SHIFT 10
#define WEFT__LOG_CHUNK       ((size_t)1 << WEFT__LOG_CHUNK_SHIFT)
#define WEFT__LOG_CHUNKS      16384 /* 16 Mi records per log */

typedef struct weft__trace_log {
    size_t elem;   /* record size */
    uint64_t next; /* next slot to claim (atomic); may pass the capacity */
    void *chunks[WEFT__LOG_CHUNKS];
} weft__trace_log;

static void *weft__log_claim(weft__trace_log *log, uint64_t *slot)
{
    uint64_t i = __atomic_fetch_add(&log->next, 1, __ATOMIC_RELAXED);
    size_t c = (size_t)(i >> WEFT__LOG_CHUNK_SHIFT);
    void *chunk, *expected = NULL;

    if (i >= (uint64_t)WEFT__LOG_CHUNKS * WEFT__LOG_CHUNK)
        return NULL;
    chunk = __atomic_load_n(&log->chunks[c], __ATOMIC_ACQUIRE);
    if (!chunk) {
        void *fresh = weft__calloc(WEFT__LOG_CHUNK, log->elem);

        if (!fresh)
            return NULL;
        if (__atomic_compare_exchange_n(&log->chunks[c], &expected, fresh,
                                        false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE)) {
            chunk = fresh;
        } else {
            weft__free(fresh);
            chunk = expected;
        }
    }
    *slot = i;
    return (char *)chunk + (i & (WEFT__LOG_CHUNK - 1)) * log->elem;
}

/* The record at slot i, or NULL if its chunk was never allocated. */
static void *weft__log_at(const weft__trace_log *log, uint64_t i)
{
    void *chunk = __atomic_load_n(&log->chunks[i >> WEFT__LOG_CHUNK_SHIFT],
                                  __ATOMIC_ACQUIRE);

    return chunk ? (char *)chunk + (i & (WEFT__LOG_CHUNK - 1)) * log->elem
                 : NULL;
}

static uint64_t weft__log_count(const weft__trace_log *log)
{
    uint64_t n = __atomic_load_n(&log->next, __ATOMIC_ACQUIRE);

    return WEFT__MIN(n, (uint64_t)WEFT__LOG_CHUNKS * WEFT__LOG_CHUNK);
}

static void weft__log_free(weft__trace_log *log)
{
    for (size_t c = 0; c < WEFT__LOG_CHUNKS; c++)
        weft__free(log->chunks[c]);
}

typedef struct weft__slice_rec {
    uint32_t published; /* see the log's comment */
    uint32_t track;
    weft__trace_kind kind;
    long node;
    uint64_t start_ns, end_ns, bytes;
    /* One allocation holds every string; the others point into it. */
    char *name, *kernel, *cause, *link;
} weft__slice_rec;

typedef struct weft__flow_rec {
    uint32_t published;
    uint64_t from, to;
} weft__flow_rec;

typedef struct weft__track_rec {
    uint32_t process;
    char *name;
} weft__track_rec;

struct weft__trace {
    uint64_t origin_ns;
    pthread_mutex_t lock; /* guards processes and tracks */
    size_t nprocesses, ntracks, cap_processes, cap_tracks;
    char **processes;
    weft__track_rec *tracks;
    uint32_t ntracks_published; /* read by adders without the lock */
    weft__trace_log slices, flows;
};

int weft__trace_create(weft__trace **out)
{
    weft__trace *t = weft__calloc(1, sizeof *t);
    int err;

    if (!t)
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    err = pthread_mutex_init(&t->lock, NULL);
    if (err) {
        weft__free(t);
        return weft__error(WEFT_ENOMEM, "trace: mutex: %s",
                           weft__errno_name(err));
    }
    t->slices.elem = sizeof(weft__slice_rec);
    t->flows.elem = sizeof(weft__flow_rec);
    t->origin_ns = weft__now_ns();
    *out = t;
    return 0;
}

void weft__trace_destroy(weft__trace *t)
{
    uint64_t n;

    if (!t)
        return;
    n = weft__log_count(&t->slices);
    for (uint64_t i = 0; i < n; i++) {
        weft__slice_rec *r = weft__log_at(&t->slices, i);

        if (r)
            weft__free(r->name);
    }
    weft__log_free(&t->slices);
    weft__log_free(&t->flows);
    for (size_t i = 0; i < t->nprocesses; i++)
        weft__free(t->processes[i]);
    for (size_t i = 0; i < t->ntracks; i++)
        weft__free(t->tracks[i].name);
    weft__free(t->processes);
    weft__free(t->tracks);
    pthread_mutex_destroy(&t->lock);
    weft__free(t);
}

static int weft__grow(void **array, size_t *cap, size_t need, size_t elem)
{
    size_t ncap;
    void *p;

    if (need <= *cap)
        return 0;
    ncap = *cap ? *cap * 2 : 8;
    while (ncap < need)
        ncap *= 2;
    p = weft__realloc(*array, ncap * elem);
    if (!p)
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    *array = p;
    *cap = ncap;
    return 0;
}

static int weft__trace_track_locked(weft__trace *t, const char *process,
                                    const char *name, uint32_t *track)
{
    size_t p, i;
    char *copy;
    int rc;

    for (p = 0; p < t->nprocesses; p++)
        if (strcmp(t->processes[p], process) == 0)
            break;
    for (i = 0; p < t->nprocesses && i < t->ntracks; i++) {
        if (t->tracks[i].process == p && strcmp(t->tracks[i].name, name) == 0) {
            *track = (uint32_t)i;
            return 0;
        }
    }
    if (t->ntracks >= UINT32_MAX - 1)
        return weft__error(WEFT_ENOMEM, "trace: too many tracks");
    if ((rc = weft__grow((void **)&t->tracks, &t->cap_tracks, t->ntracks + 1,
                         sizeof *t->tracks)) < 0)
        return rc;
    if (p == t->nprocesses) {
        if ((rc = weft__grow((void **)&t->processes, &t->cap_processes,
                             t->nprocesses + 1, sizeof *t->processes)) < 0)
            return rc;
        if (!(t->processes[p] = weft__strdup(process)))
            return weft__error(WEFT_ENOMEM, "trace: no memory");
        t->nprocesses++;
    }
    if (!(copy = weft__strdup(name)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    t->tracks[t->ntracks].process = (uint32_t)p;
    t->tracks[t->ntracks].name = copy;
    *track = (uint32_t)t->ntracks++;
    /* Adders check a slice's track against this count without the lock. */
    __atomic_store_n(&t->ntracks_published, (uint32_t)t->ntracks,
                     __ATOMIC_RELEASE);
    return 0;
}

int weft__trace_track(weft__trace *t, const char *process, const char *name,
                      uint32_t *track)
{
    int rc;

    if (!t || !process || !name || !track)
        return weft__error(WEFT_EINVAL, "trace: NULL track argument");
    pthread_mutex_lock(&t->lock);
    rc = weft__trace_track_locked(t, process, name, track);
    pthread_mutex_unlock(&t->lock);
    return rc;
}

int weft__trace_add_slice(weft__trace *t, const weft__trace_slice *s,
                          uint64_t *id)
{
    const char *parts[4];
    size_t len[4], total = 0;
    weft__slice_rec *r;
    uint64_t slot;
    char *block, **dst[4];

    if (!t || !s || !s->name)
        return weft__error(WEFT_EINVAL, "trace: slice without a name");
    if (s->track >= __atomic_load_n(&t->ntracks_published, __ATOMIC_ACQUIRE))
        return weft__error(WEFT_EINVAL, "trace: slice %s on unknown track %u",
                           s->name, s->track);
    if (s->end_ns < s->start_ns)
        return weft__error(WEFT_EINVAL, "trace: slice %s ends before it starts",
                           s->name);
    parts[0] = s->name;
    parts[1] = s->kernel;
    parts[2] = s->cause;
    parts[3] = s->link;
    for (int i = 0; i < 4; i++) {
        len[i] = parts[i] ? strlen(parts[i]) + 1 : 0;
        total += len[i];
    }
    if (!(block = weft__malloc(total)))
        return weft__error(WEFT_ENOMEM, "trace: no memory for slice %s",
                           s->name);
    if (!(r = weft__log_claim(&t->slices, &slot))) {
        weft__free(block);
        return weft__error(WEFT_ENOMEM, "trace: full, slice %s dropped",
                           s->name);
    }
    dst[0] = &r->name;
    dst[1] = &r->kernel;
    dst[2] = &r->cause;
    dst[3] = &r->link;
    for (int i = 0; i < 4; i++) {
        *dst[i] = len[i] ? memcpy(block, parts[i], len[i]) : NULL;
        block += len[i];
    }
    r->track = s->track;
    r->kind = s->kind;
    r->node = s->node;
    r->start_ns = s->start_ns;
    r->end_ns = s->end_ns;
    r->bytes = s->bytes;
    __atomic_store_n(&r->published, 1, __ATOMIC_RELEASE);
    if (id)
        *id = slot + 1;
    return 0;
}

int weft__trace_add_flow(weft__trace *t, uint64_t from, uint64_t to)
{
    uint64_t n, slot;
    weft__flow_rec *r;

    if (!t)
        return weft__error(WEFT_EINVAL, "trace: NULL trace");
    n = weft__log_count(&t->slices);
    if (from == 0 || to == 0 || from > n || to > n || from == to)
        return weft__error(WEFT_EINVAL,
                           "trace: flow %" PRIu64 " -> %" PRIu64
                           " between unknown slices",
                           from, to);
    if (!(r = weft__log_claim(&t->flows, &slot)))
        return weft__error(WEFT_ENOMEM, "trace: full, flow dropped");
    r->from = from;
    r->to = to;
    __atomic_store_n(&r->published, 1, __ATOMIC_RELEASE);
    return 0;
}

/* ---- views ------------------------------------------------------------- */
void weft__trace_view_destroy(weft__trace_view *v)
{
    if (!v)
        return;
    for (size_t i = 0; i < v->nprocesses; i++)
        weft__free(v->processes[i]);
    for (size_t i = 0; i < v->ntracks; i++)
        weft__free(v->tracks[i].name);
    for (size_t i = 0; i < v->nslices; i++) {
        weft__free(v->slices[i].name);
        weft__free(v->slices[i].kernel);
        weft__free(v->slices[i].cause);
        weft__free(v->slices[i].link);
    }
    weft__free(v->processes);
    weft__free(v->tracks);
    weft__free(v->slices);
    weft__free(v->flows);
    weft__free(v->by_id);
    weft__free(v);
}

static int weft__slice_view_cmp(const void *a, const void *b)
{
    const weft__trace_slice_view *x = a, *y = b;

    if (x->track != y->track)
        return x->track < y->track ? -1 : 1;
    if (x->start_ns != y->start_ns)
        return x->start_ns < y->start_ns ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static int weft__dup_opt(char **dst, const char *src)
{
    *dst = NULL;
    if (src && !(*dst = weft__strdup(src)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    return 0;
}

/*
 * Index the slices by id. qsort has no user pointer, so the sort runs on
 * (id, index) pairs, which then become the index.
 */
typedef struct weft__id_entry {
    uint64_t id;
    size_t index;
} weft__id_entry;

static int weft__id_cmp(const void *a, const void *b)
{
    const weft__id_entry *x = a, *y = b;

    return x->id < y->id ? -1 : x->id > y->id;
}

static int weft__view_index(weft__trace_view *v)
{
    size_t n = v->nslices ? v->nslices : 1;
    weft__id_entry *pairs = weft__malloc(n * sizeof *pairs);

    weft__free(v->by_id);
    v->by_id = weft__malloc(n * sizeof *v->by_id);
    if (!pairs || !v->by_id) {
        weft__free(pairs);
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    }
    for (size_t i = 0; i < v->nslices; i++) {
        pairs[i].id = v->slices[i].id;
        pairs[i].index = i;
    }
    qsort(pairs, v->nslices, sizeof *pairs, weft__id_cmp);
    for (size_t i = 0; i < v->nslices; i++)
        v->by_id[i] = pairs[i].index;
    weft__free(pairs);
    return 0;
}

const weft__trace_slice_view *weft__trace_view_find(const weft__trace_view *v,
                                                    uint64_t id)
{
    size_t lo = 0, hi = v->by_id ? v->nslices : 0;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const weft__trace_slice_view *s = &v->slices[v->by_id[mid]];

        if (s->id == id)
            return s;
        if (s->id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static int weft__view_finish(weft__trace_view *v);

int weft__trace_view_window(weft__trace_view *v, uint64_t from_ns,
                            uint64_t to_ns)
{
    size_t kept = 0;

    for (size_t i = 0; i < v->nslices; i++) {
        weft__trace_slice_view *sl = &v->slices[i];

        if (sl->start_ns >= from_ns && sl->end_ns <= to_ns) {
            v->slices[kept++] = *sl;
            continue;
        }
        weft__free(sl->name);
        weft__free(sl->kernel);
        weft__free(sl->cause);
        weft__free(sl->link);
    }
    v->nslices = kept;
    return weft__view_finish(v);
}

/*
 * Index the slices, then keep only the flows whose two ends exist (a slice
 * whose recording failed, a foreign file); flows stay in their order.
 */
static int weft__view_finish(weft__trace_view *v)
{
    size_t kept = 0;
    int rc;

    qsort(v->slices, v->nslices, sizeof *v->slices, weft__slice_view_cmp);
    if ((rc = weft__view_index(v)) < 0)
        return rc;
    for (size_t i = 0; i < v->nflows; i++) {
        weft__trace_flow_view f = v->flows[i];

        if (weft__trace_view_find(v, f.from) && weft__trace_view_find(v, f.to))
            v->flows[kept++] = f;
    }
    v->nflows = kept;
    return 0;
}

int weft__trace_view_of(weft__trace *t, weft__trace_view **out)
{
    weft__trace_view *v;
    uint32_t *order = NULL; /* live track number -> view track number */
    uint64_t nslices, nflows, origin;
    int rc = WEFT_ENOMEM;

    if (!t || !out)
        return weft__error(WEFT_EINVAL, "trace: NULL argument");
    if (!(v = weft__calloc(1, sizeof *v)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    pthread_mutex_lock(&t->lock);
    v->processes = weft__calloc(t->nprocesses, sizeof *v->processes);
    v->tracks = weft__calloc(t->ntracks, sizeof *v->tracks);
    order = weft__calloc(t->ntracks, sizeof *order);
    if (!v->processes || !v->tracks || !order) {
        pthread_mutex_unlock(&t->lock);
        goto fail;
    }
    for (size_t p = 0; p < t->nprocesses; p++) {
        if (!(v->processes[p] = weft__strdup(t->processes[p]))) {
            pthread_mutex_unlock(&t->lock);
            goto fail;
        }
        v->nprocesses++;
    }
    /* Rows grouped by process, in registration order within each. */
    for (size_t p = 0; p < t->nprocesses; p++) {
        for (size_t i = 0; i < t->ntracks; i++) {
            if (t->tracks[i].process != p)
                continue;
            order[i] = (uint32_t)v->ntracks;
            v->tracks[v->ntracks].process = (uint32_t)p;
            if (!(v->tracks[v->ntracks].name =
                      weft__strdup(t->tracks[i].name))) {
                pthread_mutex_unlock(&t->lock);
                goto fail;
            }
            v->ntracks++;
        }
    }
    pthread_mutex_unlock(&t->lock);

    nslices = weft__log_count(&t->slices);
    nflows = weft__log_count(&t->flows);
    v->slices = weft__calloc((size_t)nslices, sizeof *v->slices);
    v->flows = weft__calloc((size_t)nflows, sizeof *v->flows);
    if (!v->slices || !v->flows)
        goto fail;
    origin = t->origin_ns;
    for (uint64_t i = 0; i < nslices; i++) {
        const weft__slice_rec *r = weft__log_at(&t->slices, i);

        if (r && __atomic_load_n(&r->published, __ATOMIC_ACQUIRE) &&
            r->start_ns < origin)
            origin = r->start_ns;
    }
    for (uint64_t i = 0; i < nslices; i++) {
        const weft__slice_rec *r = weft__log_at(&t->slices, i);
        weft__trace_slice_view *s = &v->slices[v->nslices];

        if (!r || !__atomic_load_n(&r->published, __ATOMIC_ACQUIRE))
            continue;
        s->id = i + 1;
        s->track = order[r->track];
        s->kind = r->kind;
        s->start_ns = r->start_ns - origin;
        s->end_ns = r->end_ns - origin;
        s->bytes = r->bytes;
        s->node = r->node;
        v->nslices++;
        if ((rc = weft__dup_opt(&s->name, r->name)) < 0 ||
            (rc = weft__dup_opt(&s->kernel, r->kernel)) < 0 ||
            (rc = weft__dup_opt(&s->cause, r->cause)) < 0 ||
            (rc = weft__dup_opt(&s->link, r->link)) < 0)
            goto fail;
    }
    for (uint64_t i = 0; i < nflows; i++) {
        const weft__flow_rec *r = weft__log_at(&t->flows, i);

        if (r && __atomic_load_n(&r->published, __ATOMIC_ACQUIRE)) {
            v->flows[v->nflows].from = r->from;
            v->flows[v->nflows].to = r->to;
            v->nflows++;
        }
    }
    if ((rc = weft__view_finish(v)) < 0)
        goto fail;
    weft__free(order);
    *out = v;
    return 0;
fail:
    weft__free(order);
    weft__trace_view_destroy(v);
    return rc == WEFT_ENOMEM ? weft__error(WEFT_ENOMEM, "trace: no memory")
                             : rc;
}

/* ---- writing ----------------------------------------------------------- */
/* Length of the valid UTF-8 sequence at s, or 0 if it is not one. */
static size_t weft__utf8_len(const unsigned char *s)
{
    size_t n;
    uint32_t cp;

    if (s[0] < 0x80)
        return 1;
    if ((s[0] & 0xe0) == 0xc0)
        n = 2, cp = s[0] & 0x1f;
    else if ((s[0] & 0xf0) == 0xe0)
        n = 3, cp = s[0] & 0x0f;
    else if ((s[0] & 0xf8) == 0xf0)
        n = 4, cp = s[0] & 0x07;
    else
        return 0;
    for (size_t i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    /* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
    if ((n == 2 && cp < 0x80) || (n == 3 && cp < 0x800) ||
        (n == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return n;
}

void weft__json_string(FILE *f, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");

    fputc('"', f);
    while (*s) {
        size_t n = weft__utf8_len(s);

        if (*s == '"' || *s == '\\') {
            fputc('\\', f);
            fputc(*s, f);
        } else if (*s == '\n') {
            fputs("\\n", f);
        } else if (*s == '\t') {
            fputs("\\t", f);
        } else if (*s < 0x20 || *s == 0x7f) {
            fprintf(f, "\\u%04x", *s);
        } else if (n == 0) {
            /* a file that is not UTF-8 is not JSON: replace the byte */
            fputs("\\ufffd", f);
            n = 1;
        } else {
            fwrite(s, 1, n, f);
        }
        s += n ? n : 1;
    }
    fputc('"', f);
}

/* Nanoseconds as microseconds with three decimals: exact, and a float. */
static void weft__json_us(FILE *f, uint64_t ns)
{
    fprintf(f, "%" PRIu64 ".%03u", ns / 1000, (unsigned)(ns % 1000));
}

static int weft__view_write(const weft__trace_view *v, FILE *f)
{
    const char *sep = "\n";

    fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"weft\"},"
          "\"traceEvents\":[",
          f);
    /* Metadata first: pid = process + 1, tid = track + 1 (unique). */
    for (size_t p = 0; p < v->nprocesses; p++) {
        fprintf(f,
                "%s{\"ph\":\"M\",\"pid\":%zu,\"tid\":0,"
                "\"name\":\"process_name\",\"args\":{\"name\":",
                sep, p + 1);
        weft__json_string(f, v->processes[p]);
        fprintf(f,
                "}},\n{\"ph\":\"M\",\"pid\":%zu,\"tid\":0,"
                "\"name\":\"process_sort_index\",\"args\":{\"sort_index\":"
                "%zu}}",
                p + 1, p);
        sep = ",\n";
    }
    for (size_t i = 0; i < v->ntracks; i++) {
        fprintf(f,
                "%s{\"ph\":\"M\",\"pid\":%u,\"tid\":%zu,"
                "\"name\":\"thread_name\",\"args\":{\"name\":",
                sep, v->tracks[i].process + 1, i + 1);
        weft__json_string(f, v->tracks[i].name);
        fprintf(f,
                "}},\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%zu,"
                "\"name\":\"thread_sort_index\",\"args\":{\"sort_index\":"
                "%zu}}",
                v->tracks[i].process + 1, i + 1, i);
        sep = ",\n";
    }
    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *s = &v->slices[i];

        fprintf(f, "%s{\"ph\":\"X\",\"pid\":%u,\"tid\":%u,\"ts\":", sep,
                v->tracks[s->track].process + 1, s->track + 1);
        weft__json_us(f, s->start_ns);
        fputs(",\"dur\":", f);
        weft__json_us(f, s->end_ns - s->start_ns);
        fputs(",\"name\":", f);
        weft__json_string(f, s->name);
        fprintf(f, ",\"cat\":\"%s\",\"args\":{\"id\":%" PRIu64,
                weft__trace_kind_name(s->kind), s->id);
        if (s->bytes)
            fprintf(f, ",\"bytes\":%" PRIu64, s->bytes);
        if (s->node >= 0)
            fprintf(f, ",\"node\":%ld", s->node);
        if (s->kernel) {
            fputs(",\"kernel\":", f);
            weft__json_string(f, s->kernel);
        }
        if (s->cause) {
            fputs(",\"cause\":", f);
            weft__json_string(f, s->cause);
        }
        if (s->link) {
            fputs(",\"link\":", f);
            weft__json_string(f, s->link);
        }
        fputs("}}", f);
        sep = ",\n";
    }
    /*
     * A flow starts inside its source slice (at its start, where "s" binds
     * to the enclosing slice) and ends at the start of its destination
     * ("bp":"e" binds to the enclosing slice, not the next one).
     */
    for (size_t i = 0; i < v->nflows; i++) {
        const weft__trace_slice_view *a, *b;

        a = weft__trace_view_find(v, v->flows[i].from);
        b = weft__trace_view_find(v, v->flows[i].to);
        if (!a || !b)
            continue;
        fprintf(f,
                "%s{\"ph\":\"s\",\"id\":%zu,\"pid\":%u,\"tid\":%u,\"ts\":", sep,
                i + 1, v->tracks[a->track].process + 1, a->track + 1);
        weft__json_us(f, a->start_ns);
        fprintf(f,
                ",\"name\":\"dependency\",\"cat\":\"flow\",\"args\":{"
                "\"from\":%" PRIu64 ",\"to\":%" PRIu64 "}},\n",
                a->id, b->id);
        fprintf(f,
                "{\"ph\":\"f\",\"bp\":\"e\",\"id\":%zu,\"pid\":%u,"
                "\"tid\":%u,\"ts\":",
                i + 1, v->tracks[b->track].process + 1, b->track + 1);
        weft__json_us(f, b->start_ns);
        fputs(",\"name\":\"dependency\",\"cat\":\"flow\"}", f);
    }
    fputs("\n]}\n", f);
    if (ferror(f))
        return weft__error(WEFT_EIO, "trace: write failed");
    return 0;
}

int weft__trace_write(weft__trace *t, FILE *f)
{
    weft__trace_view *v;
    int rc;

    if (!f)
        return weft__error(WEFT_EINVAL, "trace: NULL file");
    if ((rc = weft__trace_view_of(t, &v)) < 0)
        return rc;
    rc = weft__view_write(v, f);
    weft__trace_view_destroy(v);
    return rc;
}

int weft__trace_write_file(weft__trace *t, const char *path)
{
    FILE *f;
    int rc, err;

    if (!path)
        return weft__error(WEFT_EINVAL, "trace: NULL path");
    if (!(f = fopen(path, "w")))
        return weft__error(WEFT_EIO, "trace: cannot create %s: %s", path,
                           strerror(errno));
    rc = weft__trace_write(t, f);
    err = fclose(f);
    if (rc == 0 && err != 0)
        rc = weft__error(WEFT_EIO, "trace: writing %s: %s", path,
                         strerror(errno));
    else if (rc < 0)
        weft__error_prefix(rc, "%s", path);
    return rc;
}

/* ---- reading: just enough JSON ----------------------------------------- */
typedef enum weft__json_type {
    WEFT__JSON_NULL,
    WEFT__JSON_BOOL,
    WEFT__JSON_NUMBER,
    WEFT__JSON_STRING,
    WEFT__JSON_ARRAY,
    WEFT__JSON_OBJECT
} weft__json_type;

typedef struct weft__json {
    weft__json_type type;
    double number; /* also the value of a bool */
    char *string;  /* STRING */
    size_t n, cap; /* ARRAY and OBJECT */
    struct weft__json *items;
    char **keys; /* OBJECT: keys[i] names items[i] */
} weft__json;

typedef struct weft__json_parser {
    const char *p, *start, *end;
    int depth;
} weft__json_parser;

#define WEFT__JSON_MAX_DEPTH 64

static void weft__json_free(weft__json *j)
{
    for (size_t i = 0; i < j->n; i++) {
        weft__json_free(&j->items[i]);
        if (j->keys)
            weft__free(j->keys[i]);
    }
    weft__free(j->items);
    weft__free(j->keys);
    weft__free(j->string);
}

static int weft__json_fail(const weft__json_parser *ps, const char *what)
{
    int line = 1, col = 1;

    for (const char *c = ps->start; c < ps->p; c++, col++)
        if (*c == '\n')
            line++, col = 0;
    return weft__error(WEFT_EINVAL, "invalid JSON at line %d, column %d: %s",
                       line, col, what);
}

static void weft__json_space(weft__json_parser *ps)
{
    while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t' ||
                               *ps->p == '\n' || *ps->p == '\r'))
        ps->p++;
}

static int weft__json_hex4(weft__json_parser *ps, uint32_t *out)
{
    uint32_t v = 0;

    if (ps->end - ps->p < 4)
        return weft__json_fail(ps, "short \\u escape");
    for (int i = 0; i < 4; i++) {
        char c = *ps->p++;

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
            v |= (uint32_t)((c | 0x20) - 'a' + 10);
        else
            return weft__json_fail(ps, "bad \\u escape");
    }
    *out = v;
    return 0;
}

static size_t weft__utf8_put(char *d, uint32_t cp)
{
    if (cp < 0x80) {
        d[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (char)(0xc0 | cp >> 6);
        d[1] = (char)(0x80 | (cp & 0x3f));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (char)(0xe0 | cp >> 12);
        d[1] = (char)(0x80 | (cp >> 6 & 0x3f));
        d[2] = (char)(0x80 | (cp & 0x3f));
        return 3;
    }
    d[0] = (char)(0xf0 | cp >> 18);
    d[1] = (char)(0x80 | (cp >> 12 & 0x3f));
    d[2] = (char)(0x80 | (cp >> 6 & 0x3f));
    d[3] = (char)(0x80 | (cp & 0x3f));
    return 4;
}

/* A string; ps->p is on the opening quote. Escapes never grow the text. */
static int weft__json_string_parse(weft__json_parser *ps, char **out)
{
    const char *q = ++ps->p;
    char *d, *buf;
    int rc;

    while (q < ps->end && *q != '"')
        q += (*q == '\\') ? 2 : 1;
    if (q >= ps->end)
        return weft__json_fail(ps, "unterminated string");
    if (!(buf = weft__malloc((size_t)(q - ps->p) + 1)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    d = buf;
    while (*ps->p != '"') {
        unsigned char c = (unsigned char)*ps->p++;
        uint32_t cp = 0, lo = 0;

        if (c < 0x20) {
            ps->p--;
            weft__free(buf);
            return weft__json_fail(ps, "control character in string");
        }
        if (c != '\\') {
            *d++ = (char)c;
            continue;
        }
        switch (*ps->p++) {
        case '"':
            *d++ = '"';
            break;
        case '\\':
            *d++ = '\\';
            break;
        case '/':
            *d++ = '/';
            break;
        case 'b':
            *d++ = '\b';
            break;
        case 'f':
            *d++ = '\f';
            break;
        case 'n':
            *d++ = '\n';
            break;
        case 'r':
            *d++ = '\r';
            break;
        case 't':
            *d++ = '\t';
            break;
        case 'u':
            if ((rc = weft__json_hex4(ps, &cp)) < 0) {
                weft__free(buf);
                return rc;
            }
            /* a surrogate pair is one code point in 12 bytes of escape */
            if (cp >= 0xd800 && cp < 0xdc00 && ps->end - ps->p >= 6 &&
                ps->p[0] == '\\' && ps->p[1] == 'u') {
                ps->p += 2;
                if ((rc = weft__json_hex4(ps, &lo)) < 0) {
                    weft__free(buf);
                    return rc;
                }
                if (lo >= 0xdc00 && lo < 0xe000)
                    cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else
                    cp = 0xfffd, ps->p -= 6;
            } else if (cp >= 0xd800 && cp < 0xe000) {
                cp = 0xfffd;
            }
            if (cp == 0)
                cp = 0xfffd; /* C strings end at NUL */
            d += weft__utf8_put(d, cp);
            break;
        default:
            ps->p--;
            weft__free(buf);
            return weft__json_fail(ps, "bad escape");
        }
    }
    ps->p++;
    *d = '\0';
    *out = buf;
    return 0;
}

static int weft__json_value(weft__json_parser *ps, weft__json *j);

static int weft__json_push(weft__json *j, weft__json **slot)
{
    int rc;

    if (j->n == j->cap) {
        size_t cap = j->cap;

        if ((rc = weft__grow((void **)&j->items, &cap, j->n + 1,
                             sizeof *j->items)) < 0)
            return rc;
        if (j->type == WEFT__JSON_OBJECT) {
            size_t kcap = j->cap;

            if ((rc = weft__grow((void **)&j->keys, &kcap, j->n + 1,
                                 sizeof *j->keys)) < 0)
                return rc;
        }
        j->cap = cap;
    }
    *slot = &j->items[j->n];
    memset(*slot, 0, sizeof **slot);
    return 0;
}

static int weft__json_container(weft__json_parser *ps, weft__json *j)
{
    char close = *ps->p == '[' ? ']' : '}';
    int rc;

    j->type = close == ']' ? WEFT__JSON_ARRAY : WEFT__JSON_OBJECT;
    if (++ps->depth > WEFT__JSON_MAX_DEPTH)
        return weft__json_fail(ps, "nested too deeply");
    ps->p++;
    weft__json_space(ps);
    if (ps->p < ps->end && *ps->p == close) {
        ps->p++;
        ps->depth--;
        return 0;
    }
    for (;;) {
        weft__json *item;
        char *key = NULL;

        weft__json_space(ps);
        if (j->type == WEFT__JSON_OBJECT) {
            if (ps->p >= ps->end || *ps->p != '"')
                return weft__json_fail(ps, "expected a key");
            if ((rc = weft__json_string_parse(ps, &key)) < 0)
                return rc;
            weft__json_space(ps);
            if (ps->p >= ps->end || *ps->p != ':') {
                weft__free(key);
                return weft__json_fail(ps, "expected ':'");
            }
            ps->p++;
        }
        if ((rc = weft__json_push(j, &item)) < 0) {
            weft__free(key);
            return rc;
        }
        if (j->keys)
            j->keys[j->n] = key;
        j->n++; /* counted now so that a failure below frees it */
        if ((rc = weft__json_value(ps, item)) < 0)
            return rc;
        weft__json_space(ps);
        if (ps->p < ps->end && *ps->p == ',') {
            ps->p++;
            continue;
        }
        if (ps->p < ps->end && *ps->p == close) {
            ps->p++;
            ps->depth--;
            return 0;
        }
        return weft__json_fail(ps, close == ']' ? "expected ',' or ']'"
                                                : "expected ',' or '}'");
    }
}

static int weft__json_number(weft__json_parser *ps, weft__json *j)
{
    const char *q = ps->p;
    char buf[64];
    char *endp;

    /* the JSON grammar, checked loosely; strtod does the conversion */
    if (q < ps->end && *q == '-')
        q++;
    if (q >= ps->end || *q < '0' || *q > '9')
        return weft__json_fail(ps, "unexpected character");
    while (q < ps->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' ||
                           *q == 'E' || *q == '+' || *q == '-'))
        q++;
    if ((size_t)(q - ps->p) >= sizeof buf)
        return weft__json_fail(ps, "number too long");
    memcpy(buf, ps->p, (size_t)(q - ps->p));
    buf[q - ps->p] = '\0';
    j->number = strtod(buf, &endp);
    if (*endp != '\0')
        return weft__json_fail(ps, "bad number");
    j->type = WEFT__JSON_NUMBER;
    ps->p = q;
    return 0;
}

static int weft__json_word(weft__json_parser *ps, const char *word)
{
    size_t n = strlen(word);

    if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
        return weft__json_fail(ps, "unexpected word");
    ps->p += n;
    return 0;
}

static int weft__json_value(weft__json_parser *ps, weft__json *j)
{
    weft__json_space(ps);
    if (ps->p >= ps->end)
        return weft__json_fail(ps, "unexpected end of input");
    switch (*ps->p) {
    case '{':
    case '[':
        return weft__json_container(ps, j);
    case '"':
        j->type = WEFT__JSON_STRING;
        return weft__json_string_parse(ps, &j->string);
    case 't':
        j->type = WEFT__JSON_BOOL;
        j->number = 1;
        return weft__json_word(ps, "true");
    case 'f':
        j->type = WEFT__JSON_BOOL;
        return weft__json_word(ps, "false");
    case 'n':
        return weft__json_word(ps, "null");
    default:
        return weft__json_number(ps, j);
    }
}

static const weft__json *weft__json_get(const weft__json *j, const char *key)
{
    if (!j || j->type != WEFT__JSON_OBJECT)
        return NULL;
    for (size_t i = 0; i < j->n; i++)
        if (strcmp(j->keys[i], key) == 0)
            return &j->items[i];
    return NULL;
}

static const char *weft__json_str(const weft__json *j, const char *key)
{
    const weft__json *v = weft__json_get(j, key);

    return v && v->type == WEFT__JSON_STRING ? v->string : NULL;
}

/* A number member, or dflt when absent or not a number. */
static double weft__json_num(const weft__json *j, const char *key, double dflt)
{
    const weft__json *v = weft__json_get(j, key);

    return v && v->type == WEFT__JSON_NUMBER ? v->number : dflt;
}

/* A count from a JSON number: negative or NaN is 0, huge values clamp. */
static uint64_t weft__to_u64(double d)
{
    if (!(d > 0))
        return 0;
    if (d > 9e18)
        return (uint64_t)9e18;
    return (uint64_t)llround(d);
}

static uint64_t weft__us_to_ns(double us)
{
    return weft__to_u64(us * 1000.0);
}

/* ---- reading: events to a view ----------------------------------------- */
typedef struct weft__raw_process {
    double pid;
    char *name;
    double sort;
    size_t first;  /* index of the first event that named it */
    uint32_t rank; /* its place in the view */
} weft__raw_process;

typedef struct weft__raw_track {
    double pid, tid;
    char *name;
    double sort;
    size_t first;
    size_t process;        /* index into the raw processes */
    uint32_t process_rank; /* set before the tracks are sorted */
    uint32_t rank;
} weft__raw_track;

/*
 * One end of a flow ("s" or "f"). Ends are paired after the whole file is
 * read: sorted by id, then by position in the file, each start takes the
 * finish that follows it (an id may be reused once its flow is complete).
 */
typedef struct weft__raw_flow {
    uint64_t key;      /* the id: a number, or a hash of a string id */
    size_t event;      /* position in the file */
    int start;         /* "s" (else "f") */
    uint64_t from, to; /* from the "s" event's args, 0 if none */
    size_t track;      /* raw track */
    uint64_t ts;
} weft__raw_flow;

typedef struct weft__reader {
    weft__raw_process *procs;
    size_t nprocs, cap_procs;
    weft__raw_track *tracks;
    size_t ntracks, cap_tracks;
    weft__raw_flow *flows;
    size_t nflows, cap_flows;
    weft__trace_slice_view *slices; /* track = raw track until the end */
    size_t nslices, cap_slices;
} weft__reader;

static int weft__reader_process(weft__reader *r, double pid, size_t event,
                                size_t *out)
{
    weft__raw_process *p;
    int rc;

    for (size_t i = 0; i < r->nprocs; i++) {
        if (r->procs[i].pid == pid) {
            *out = i;
            return 0;
        }
    }
    if ((rc = weft__grow((void **)&r->procs, &r->cap_procs, r->nprocs + 1,
                         sizeof *r->procs)) < 0)
        return rc;
    p = &r->procs[r->nprocs];
    memset(p, 0, sizeof *p);
    p->pid = pid;
    p->sort = HUGE_VAL;
    p->first = event;
    *out = r->nprocs++;
    return 0;
}

static int weft__reader_track(weft__reader *r, double pid, double tid,
                              size_t event, size_t *out)
{
    weft__raw_track *t;
    size_t proc;
    int rc;

    for (size_t i = 0; i < r->ntracks; i++) {
        if (r->tracks[i].pid == pid && r->tracks[i].tid == tid) {
            *out = i;
            return 0;
        }
    }
    if ((rc = weft__reader_process(r, pid, event, &proc)) < 0)
        return rc;
    if ((rc = weft__grow((void **)&r->tracks, &r->cap_tracks, r->ntracks + 1,
                         sizeof *r->tracks)) < 0)
        return rc;
    t = &r->tracks[r->ntracks];
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->tid = tid;
    t->sort = HUGE_VAL;
    t->first = event;
    t->process = proc;
    *out = r->ntracks++;
    return 0;
}

static int weft__set_name(char **dst, const char *name)
{
    char *copy;

    if (!name)
        return 0;
    if (!(copy = weft__strdup(name)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    weft__free(*dst);
    *dst = copy;
    return 0;
}

static int weft__reader_metadata(weft__reader *r, const weft__json *e,
                                 size_t event)
{
    const char *what = weft__json_str(e, "name");
    const weft__json *args = weft__json_get(e, "args");
    double pid = weft__json_num(e, "pid", 0), tid = weft__json_num(e, "tid", 0);
    size_t i;
    int rc;

    if (!what)
        return 0;
    if (strcmp(what, "process_name") == 0 ||
        strcmp(what, "process_sort_index") == 0) {
        if ((rc = weft__reader_process(r, pid, event, &i)) < 0)
            return rc;
        if (what[8] == 'n')
            return weft__set_name(&r->procs[i].name,
                                  weft__json_str(args, "name"));
        r->procs[i].sort = weft__json_num(args, "sort_index", HUGE_VAL);
    } else if (strcmp(what, "thread_name") == 0 ||
               strcmp(what, "thread_sort_index") == 0) {
        if ((rc = weft__reader_track(r, pid, tid, event, &i)) < 0)
            return rc;
        if (what[7] == 'n')
            return weft__set_name(&r->tracks[i].name,
                                  weft__json_str(args, "name"));
        r->tracks[i].sort = weft__json_num(args, "sort_index", HUGE_VAL);
    }
    return 0;
}

static int weft__reader_complete(weft__reader *r, const weft__json *e,
                                 size_t event)
{
    const weft__json *args = weft__json_get(e, "args");
    weft__trace_slice_view *s;
    size_t track;
    double id, node;
    int rc;

    if ((rc = weft__reader_track(r, weft__json_num(e, "pid", 0),
                                 weft__json_num(e, "tid", 0), event, &track)) <
        0)
        return rc;
    if ((rc = weft__grow((void **)&r->slices, &r->cap_slices, r->nslices + 1,
                         sizeof *r->slices)) < 0)
        return rc;
    s = &r->slices[r->nslices];
    memset(s, 0, sizeof *s);
    r->nslices++; /* counted now so that a failure below frees it */
    s->track = (uint32_t)track;
    s->kind = weft__trace_kind_parse(weft__json_str(e, "cat"));
    s->start_ns = weft__us_to_ns(weft__json_num(e, "ts", 0));
    s->end_ns = s->start_ns + weft__us_to_ns(weft__json_num(e, "dur", 0));
    id = weft__json_num(args, "id", 0);
    s->id = id >= 1 && id < 9e15 ? (uint64_t)id : 0; /* 0: give it one */
    s->bytes = weft__to_u64(weft__json_num(args, "bytes", 0));
    node = weft__json_num(args, "node", -1);
    s->node = node >= 0 && node < 2e9 ? (long)node : -1;
    if ((rc = weft__dup_opt(&s->name, weft__json_str(e, "name")
                                          ? weft__json_str(e, "name")
                                          : "")) < 0 ||
        (rc = weft__dup_opt(&s->kernel, weft__json_str(args, "kernel"))) < 0 ||
        (rc = weft__dup_opt(&s->cause, weft__json_str(args, "cause"))) < 0 ||
        (rc = weft__dup_opt(&s->link, weft__json_str(args, "link"))) < 0)
        return rc;
    return 0;
}

static uint64_t weft__flow_key(const weft__json *id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */

    if (!id)
        return 0;
    if (id->type == WEFT__JSON_NUMBER)
        return (uint64_t)(int64_t)llround(id->number) << 1;
    if (id->type != WEFT__JSON_STRING)
        return 0;
    for (const char *c = id->string; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h | 1; /* never equal to a number's key */
}

static int weft__reader_flow(weft__reader *r, const weft__json *e, int start,
                             size_t event)
{
    const weft__json *args = weft__json_get(e, "args");
    weft__raw_flow *f;
    size_t track;
    int rc;

    if ((rc = weft__reader_track(r, weft__json_num(e, "pid", 0),
                                 weft__json_num(e, "tid", 0), event, &track)) <
        0)
        return rc;
    if ((rc = weft__grow((void **)&r->flows, &r->cap_flows, r->nflows + 1,
                         sizeof *r->flows)) < 0)
        return rc;
    f = &r->flows[r->nflows++];
    memset(f, 0, sizeof *f);
    f->key = weft__flow_key(weft__json_get(e, "id"));
    f->event = event;
    f->start = start;
    f->track = track;
    f->ts = weft__us_to_ns(weft__json_num(e, "ts", 0));
    if (start) {
        double from = weft__json_num(args, "from", 0);
        double to = weft__json_num(args, "to", 0);

        if (from >= 1 && to >= 1 && from < 9e15 && to < 9e15) {
            f->from = (uint64_t)from;
            f->to = (uint64_t)to;
        }
    }
    return 0;
}

static int weft__raw_flow_cmp(const void *a, const void *b)
{
    const weft__raw_flow *x = a, *y = b;

    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->event < y->event ? -1 : x->event > y->event;
}

/*
 * The slice on a raw track that a flow end at ts binds to: one that starts
 * at ts, else the one running at ts. Slices are sorted by raw track here.
 */
static uint64_t weft__reader_bind(const weft__reader *r, size_t track,
                                  uint64_t ts)
{
    size_t lo = 0, hi = r->nslices;
    uint64_t at_ts = 0;

    /* the first slice past (track, ts); candidates are before it */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const weft__trace_slice_view *s = &r->slices[mid];

        if (s->track < track || (s->track == track && s->start_ns <= ts))
            lo = mid + 1;
        else
            hi = mid;
    }
    while (lo-- > 0 && r->slices[lo].track == track) {
        const weft__trace_slice_view *s = &r->slices[lo];

        if (s->start_ns == ts) {
            at_ts = s->id; /* going back: ends on the lowest id */
            continue;
        }
        /* the latest slice to start before ts, if it is still running */
        return at_ts ? at_ts : s->end_ns >= ts ? s->id : 0;
    }
    return at_ts;
}

static int weft__raw_process_cmp(const void *a, const void *b)
{
    const weft__raw_process *x = *(weft__raw_process *const *)a;
    const weft__raw_process *y = *(weft__raw_process *const *)b;

    if (x->sort != y->sort)
        return x->sort < y->sort ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static int weft__raw_track_cmp(const void *a, const void *b)
{
    const weft__raw_track *x = *(weft__raw_track *const *)a;
    const weft__raw_track *y = *(weft__raw_track *const *)b;
    uint32_t px = x->process_rank, py = y->process_rank;

    if (px != py)
        return px < py ? -1 : 1;
    if (x->sort != y->sort)
        return x->sort < y->sort ? -1 : 1;
    return x->first < y->first ? -1 : x->first > y->first;
}

static void weft__reader_free(weft__reader *r)
{
    for (size_t i = 0; i < r->nprocs; i++)
        weft__free(r->procs[i].name);
    for (size_t i = 0; i < r->ntracks; i++)
        weft__free(r->tracks[i].name);
    for (size_t i = 0; i < r->nslices; i++) {
        weft__free(r->slices[i].name);
        weft__free(r->slices[i].kernel);
        weft__free(r->slices[i].cause);
        weft__free(r->slices[i].link);
    }
    weft__free(r->procs);
    weft__free(r->tracks);
    weft__free(r->flows);
    weft__free(r->slices);
}

static char *weft__default_name(const char *what, double a, double b)
{
    char buf[96];

    if (b < 0)
        snprintf(buf, sizeof buf, "%s %.0f", what, a);
    else
        snprintf(buf, sizeof buf, "%s %.0f/%.0f", what, a, b);
    return weft__strdup(buf);
}

/* Order processes and tracks, and move everything into a view. */
static int weft__reader_finish(weft__reader *r, weft__trace_view *v)
{
    void **order;
    uint64_t next_id = 1;
    size_t n = WEFT__MAX(r->nprocs, r->ntracks);

    if (!(order = weft__malloc((n ? n : 1) * sizeof *order)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    v->processes = weft__calloc(r->nprocs, sizeof *v->processes);
    v->tracks = weft__calloc(r->ntracks, sizeof *v->tracks);
    v->flows = weft__calloc(r->nflows, sizeof *v->flows);
    if (!v->processes || !v->tracks || !v->flows) {
        weft__free(order);
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    }
    for (size_t i = 0; i < r->nprocs; i++)
        order[i] = &r->procs[i];
    qsort(order, r->nprocs, sizeof *order, weft__raw_process_cmp);
    for (size_t i = 0; i < r->nprocs; i++) {
        weft__raw_process *p = order[i];

        p->rank = (uint32_t)i;
        v->processes[i] =
            p->name ? p->name : weft__default_name("process", p->pid, -1);
        p->name = NULL;
        v->nprocesses++;
        if (!v->processes[i]) {
            weft__free(order);
            return weft__error(WEFT_ENOMEM, "trace: no memory");
        }
    }
    for (size_t i = 0; i < r->ntracks; i++) {
        r->tracks[i].process_rank = r->procs[r->tracks[i].process].rank;
        order[i] = &r->tracks[i];
    }
    qsort(order, r->ntracks, sizeof *order, weft__raw_track_cmp);
    for (size_t i = 0; i < r->ntracks; i++) {
        weft__raw_track *t = order[i];

        t->rank = (uint32_t)i;
        v->tracks[i].process = r->procs[t->process].rank;
        v->tracks[i].name =
            t->name ? t->name : weft__default_name("thread", t->pid, t->tid);
        t->name = NULL;
        v->ntracks++;
        if (!v->tracks[i].name) {
            weft__free(order);
            return weft__error(WEFT_ENOMEM, "trace: no memory");
        }
    }
    weft__free(order);

    /* Slices without an id (foreign traces) get ones past the largest. */
    for (size_t i = 0; i < r->nslices; i++)
        next_id = WEFT__MAX(next_id, r->slices[i].id + 1);
    for (size_t i = 0; i < r->nslices; i++)
        if (!r->slices[i].id)
            r->slices[i].id = next_id++;
    /* bind flow ends by time on the raw tracks (for files without args) */
    qsort(r->slices, r->nslices, sizeof *r->slices, weft__slice_view_cmp);
    qsort(r->flows, r->nflows, sizeof *r->flows, weft__raw_flow_cmp);
    for (size_t i = 0; i + 1 < r->nflows; i++) {
        const weft__raw_flow *a = &r->flows[i], *b = &r->flows[i + 1];
        weft__trace_flow_view fv = {a->from, a->to};

        if (!a->start || b->start || a->key != b->key)
            continue;
        if (!fv.from || !fv.to) {
            fv.from = weft__reader_bind(r, a->track, a->ts);
            fv.to = weft__reader_bind(r, b->track, b->ts);
        }
        if (fv.from && fv.to && fv.from != fv.to)
            v->flows[v->nflows++] = fv;
        i++;
    }
    for (size_t i = 0; i < r->nslices; i++)
        r->slices[i].track = r->tracks[r->slices[i].track].rank;
    v->slices = r->slices;
    v->nslices = r->nslices;
    r->slices = NULL;
    r->nslices = 0;
    return weft__view_finish(v);
}

int weft__trace_view_parse(const char *json, size_t len, weft__trace_view **out)
{
    weft__json_parser ps = {json, json, json + len, 0};
    weft__json root = {0};
    const weft__json *events;
    weft__reader r = {0};
    weft__trace_view *v = NULL;
    int rc;

    if (!json || !out)
        return weft__error(WEFT_EINVAL, "trace: NULL argument");
    if ((rc = weft__json_value(&ps, &root)) < 0)
        goto done;
    weft__json_space(&ps);
    if (ps.p != ps.end) {
        rc = weft__json_fail(&ps, "text after the JSON value");
        goto done;
    }
    /* Chrome accepts a bare array of events as well as the object form. */
    events = root.type == WEFT__JSON_ARRAY
                 ? &root
                 : weft__json_get(&root, "traceEvents");
    if (!events || events->type != WEFT__JSON_ARRAY) {
        rc = weft__error(WEFT_EINVAL, "not a trace: no traceEvents array");
        goto done;
    }
    for (size_t i = 0; i < events->n && rc == 0; i++) {
        const weft__json *e = &events->items[i];
        const char *ph = weft__json_str(e, "ph");

        if (!ph)
            continue; /* events weft does not know are skipped, not errors */
        if (strcmp(ph, "M") == 0)
            rc = weft__reader_metadata(&r, e, i);
        else if (strcmp(ph, "X") == 0)
            rc = weft__reader_complete(&r, e, i);
        else if (strcmp(ph, "s") == 0 || strcmp(ph, "f") == 0)
            rc = weft__reader_flow(&r, e, ph[0] == 's', i);
    }
    if (rc < 0)
        goto done;
    if (!(v = weft__calloc(1, sizeof *v))) {
        rc = weft__error(WEFT_ENOMEM, "trace: no memory");
        goto done;
    }
    rc = weft__reader_finish(&r, v);
done:
    weft__reader_free(&r);
    weft__json_free(&root);
    if (rc < 0) {
        weft__trace_view_destroy(v);
        return rc;
    }
    *out = v;
    return 0;
}

int weft__trace_view_load(const char *path, weft__trace_view **out)
{
    FILE *f;
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    int rc = 0;

    if (!path || !out)
        return weft__error(WEFT_EINVAL, "trace: NULL argument");
    if (!(f = fopen(path, "rb")))
        return weft__error(WEFT_EIO, "%s: %s", path, strerror(errno));
    do {
        if ((rc = weft__grow((void **)&buf, &cap, len + 65536, 1)) < 0)
            break;
        got = fread(buf + len, 1, cap - len, f);
        len += got;
    } while (got > 0);
    if (rc == 0 && ferror(f))
        rc =
            weft__error(WEFT_EIO, "%s: read failed: %s", path, strerror(errno));
    fclose(f);
    if (rc == 0)
        rc = weft__trace_view_parse(buf, len, out);
    weft__free(buf);
    if (rc < 0)
        return weft__error_prefix(rc, "%s", path);
    return 0;
}

/* ---- summary ----------------------------------------------------------- */
typedef struct weft__interval {
    uint64_t start, end;
} weft__interval;

static int weft__interval_cmp(const void *a, const void *b)
{
    const weft__interval *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Merge a[] in place into its disjoint union; returns the union's length. */
static uint64_t weft__interval_union(weft__interval *a, size_t *n)
{
    size_t out = 0;
    uint64_t total = 0;

    qsort(a, *n, sizeof *a, weft__interval_cmp);
    for (size_t i = 0; i < *n; i++) {
        if (out && a[i].start <= a[out - 1].end)
            a[out - 1].end = WEFT__MAX(a[out - 1].end, a[i].end);
        else
            a[out++] = a[i];
    }
    for (size_t i = 0; i < out; i++)
        total += a[i].end - a[i].start;
    *n = out;
    return total;
}

/* Length of the intersection of two disjoint sorted unions. */
static uint64_t weft__interval_common(const weft__interval *a, size_t na,
                                      const weft__interval *b, size_t nb)
{
    size_t i = 0, j = 0;
    uint64_t total = 0;

    while (i < na && j < nb) {
        uint64_t lo = WEFT__MAX(a[i].start, b[j].start);
        uint64_t hi = WEFT__MIN(a[i].end, b[j].end);

        if (lo < hi)
            total += hi - lo;
        if (a[i].end < b[j].end)
            i++;
        else
            j++;
    }
    return total;
}

/*
 * Kernel and copy time of the slices on process p (or all processes when
 * p is SIZE_MAX), and the time both ran at once.
 */
static void weft__overlap(const weft__trace_view *v, size_t p,
                          weft__interval *kern, weft__interval *copy,
                          uint64_t *kernel_ns, uint64_t *copy_ns,
                          uint64_t *overlap_ns)
{
    size_t nk = 0, nc = 0;

    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *s = &v->slices[i];
        weft__interval iv = {s->start_ns, s->end_ns};

        if (p != SIZE_MAX && v->tracks[s->track].process != p)
            continue;
        if (s->kind == WEFT__TRACE_KERNEL)
            kern[nk++] = iv;
        else if (weft__trace_kind_is_copy(s->kind))
            copy[nc++] = iv;
    }
    *kernel_ns = weft__interval_union(kern, &nk);
    *copy_ns = weft__interval_union(copy, &nc);
    *overlap_ns = weft__interval_common(kern, nk, copy, nc);
}

static int weft__link_cmp(const void *a, const void *b)
{
    const weft__trace_link_summary *x = a, *y = b;

    return strcmp(x->link, y->link);
}

/* The link a copy used: its own, or one named after its kind and device. */
static int weft__link_name(const weft__trace_view *v,
                           const weft__trace_slice_view *s, char *buf,
                           size_t size)
{
    const char *dev = v->processes[v->tracks[s->track].process];

    if (s->link)
        weft__strlcpy(buf, s->link, size);
    else if (s->kind == WEFT__TRACE_H2D)
        snprintf(buf, size, "host->%s", dev);
    else if (s->kind == WEFT__TRACE_D2H)
        snprintf(buf, size, "%s->host", dev);
    else
        snprintf(buf, size, "%s peer", dev);
    return 0;
}

void weft__trace_summary_destroy(weft__trace_summary *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->nlinks; i++)
        weft__free(s->links[i].link);
    weft__free(s->links);
    weft__free(s->lanes);
    weft__free(s->processes);
    weft__free(s);
}

int weft__trace_summarize(const weft__trace_view *v, weft__trace_summary **out)
{
    weft__trace_summary *s;
    weft__interval *kern = NULL, *copy = NULL;
    size_t cap_links = 0;
    int rc = 0;

    if (!v || !out)
        return weft__error(WEFT_EINVAL, "trace: NULL argument");
    if (!(s = weft__calloc(1, sizeof *s)))
        return weft__error(WEFT_ENOMEM, "trace: no memory");
    s->lanes = weft__calloc(v->ntracks, sizeof *s->lanes);
    s->processes = weft__calloc(v->nprocesses, sizeof *s->processes);
    kern = weft__malloc((v->nslices ? v->nslices : 1) * sizeof *kern);
    copy = weft__malloc((v->nslices ? v->nslices : 1) * sizeof *copy);
    if (!s->lanes || !s->processes || !kern || !copy) {
        rc = weft__error(WEFT_ENOMEM, "trace: no memory");
        goto done;
    }
    s->start_ns = v->nslices ? UINT64_MAX : 0;
    /* Slices are sorted by track, so each lane is one run of them. */
    for (size_t i = 0, j; i < v->nslices; i = j) {
        size_t n;

        for (j = i; j < v->nslices && v->slices[j].track == v->slices[i].track;
             j++) {
            kern[j - i].start = v->slices[j].start_ns;
            kern[j - i].end = v->slices[j].end_ns;
            s->start_ns = WEFT__MIN(s->start_ns, v->slices[j].start_ns);
            s->end_ns = WEFT__MAX(s->end_ns, v->slices[j].end_ns);
        }
        n = j - i;
        s->lanes[v->slices[i].track].nslices = n;
        s->lanes[v->slices[i].track].busy_ns = weft__interval_union(kern, &n);
    }
    for (size_t p = 0; p < v->nprocesses; p++)
        weft__overlap(v, p, kern, copy, &s->processes[p].kernel_ns,
                      &s->processes[p].copy_ns, &s->processes[p].overlap_ns);
    weft__overlap(v, SIZE_MAX, kern, copy, &s->kernel_ns, &s->copy_ns,
                  &s->overlap_ns);

    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *sl = &v->slices[i];
        weft__trace_link_summary *l = NULL;
        char name[256];

        if (!weft__trace_kind_is_copy(sl->kind))
            continue;
        weft__link_name(v, sl, name, sizeof name);
        for (size_t k = 0; k < s->nlinks && !l; k++)
            if (strcmp(s->links[k].link, name) == 0)
                l = &s->links[k];
        if (!l) {
            if ((rc = weft__grow((void **)&s->links, &cap_links, s->nlinks + 1,
                                 sizeof *s->links)) < 0)
                goto done;
            l = &s->links[s->nlinks];
            memset(l, 0, sizeof *l);
            if (!(l->link = weft__strdup(name))) {
                rc = weft__error(WEFT_ENOMEM, "trace: no memory");
                goto done;
            }
            s->nlinks++;
        }
        l->bytes += sl->bytes;
        l->busy_ns += sl->end_ns - sl->start_ns;
        l->ncopies++;
    }
    qsort(s->links, s->nlinks, sizeof *s->links, weft__link_cmp);
done:
    weft__free(kern);
    weft__free(copy);
    if (rc < 0) {
        weft__trace_summary_destroy(s);
        return rc;
    }
    *out = s;
    return 0;
}
