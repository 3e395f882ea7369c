/* The summary of a trace view: busy time per lane, copy/kernel overlap per
 * device and in total, bytes per link. */
#include "tracefile_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
            if ((rc = weft__grow(&s->links, &cap_links, s->nlinks + 1,
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
