/* Trace files read back: Chrome trace JSON events to a weft__trace_view. */
#include "tracefile_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

weft__trace_kind weft__trace_kind_parse(const char *name)
{
    for (unsigned k = 0; name && k < WEFT__TRACE_KIND_COUNT; k++)
        if (strcmp(name, weft__trace_kind_name((weft__trace_kind)k)) == 0)
            return (weft__trace_kind)k;
    return WEFT__TRACE_OTHER;
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

/* ---- events to a view ------------------------------------------------- */
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
    if ((rc = weft__grow(&r->procs, &r->cap_procs, r->nprocs + 1,
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
    if ((rc = weft__grow(&r->tracks, &r->cap_tracks, r->ntracks + 1,
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
    if ((rc = weft__grow(&r->slices, &r->cap_slices, r->nslices + 1,
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
    if ((rc = weft__set_name(&s->name, weft__json_str(e, "name")
                                           ? weft__json_str(e, "name")
                                           : "")) < 0 ||
        (rc = weft__set_name(&s->kernel, weft__json_str(args, "kernel"))) < 0 ||
        (rc = weft__set_name(&s->cause, weft__json_str(args, "cause"))) < 0 ||
        (rc = weft__set_name(&s->link, weft__json_str(args, "link"))) < 0)
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
    if ((rc = weft__grow(&r->flows, &r->cap_flows, r->nflows + 1,
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
    qsort(r->slices, r->nslices, sizeof *r->slices, weft__trace_slice_view_cmp);
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
    return weft__trace_view_finish(v);
}

int weft__trace_view_parse(const char *json, size_t len, weft__trace_view **out)
{
    weft__json root = {0};
    const weft__json *events;
    weft__reader r = {0};
    weft__trace_view *v = NULL;
    int rc;

    if (!json || !out)
        return weft__error(WEFT_EINVAL, "trace: NULL argument");
    if ((rc = weft__json_parse(json, len, &root)) < 0)
        goto done;
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
        if ((rc = weft__grow(&buf, &cap, len + 65536, 1)) < 0)
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

/* ---- windows ---------------------------------------------------------- */
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
    return weft__trace_view_finish(v);
}
