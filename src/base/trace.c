/* Traces: a lock-free slice log, its snapshot as a view, the JSON writer. */
#include "trace.h"

#include <errno.h>
#include <inttypes.h>
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
    if ((rc = weft__grow(&t->tracks, &t->cap_tracks, t->ntracks + 1,
                         sizeof *t->tracks)) < 0)
        return rc;
    if (p == t->nprocesses) {
        if ((rc = weft__grow(&t->processes, &t->cap_processes,
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

int weft__trace_slice_view_cmp(const void *a, const void *b)
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

int weft__trace_view_finish(weft__trace_view *v)
{
    size_t kept = 0;
    int rc;

    qsort(v->slices, v->nslices, sizeof *v->slices, weft__trace_slice_view_cmp);
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
    v->origin_ns = origin;
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
    if ((rc = weft__trace_view_finish(v)) < 0)
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

    fprintf(f,
            "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":"
            "\"weft\",\"origin_ns\":%" PRIu64 "},\"traceEvents\":[",
            v->origin_ns);
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
