/*
 * weft-trace: a trace file (Chrome trace JSON, as weft writes it) as a
 * picture that needs no viewer, and a summary of what overlapped.
 *
 *     weft-trace TRACE.json [-o TIMELINE.svg | -o TIMELINE.html] [-q]
 *
 * The summary (busy time per lane, copy/kernel overlap per device and in
 * total, bytes per link) goes to stdout; -o also draws the timeline: one row
 * per lane grouped by device, one rectangle per slice coloured by kind.
 */
#include "tracefile.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Geometry of the picture, in SVG user units (CSS pixels). */
#define SVG_WIDTH    1360
#define LABEL_WIDTH  190
#define RIGHT_MARGIN 24
#define AXIS_Y       56
#define FIRST_ROW_Y  72
#define GROUP_HEIGHT 20
#define ROW_HEIGHT   22
#define SLICE_HEIGHT 16
#define LINE_HEIGHT  16
#define MAX_FLOWS    4000 /* more arrows than this only hide the slices */

static const char *const kind_colors[WEFT__TRACE_KIND_COUNT] = {
    [WEFT__TRACE_KERNEL] = "#4c72b0", [WEFT__TRACE_H2D] = "#55a868",
    [WEFT__TRACE_D2H] = "#c44e52",    [WEFT__TRACE_PEER] = "#8172b2",
    [WEFT__TRACE_FILL] = "#ccb974",   [WEFT__TRACE_HOST] = "#64b5cd",
    [WEFT__TRACE_MAP] = "#dd8452",    [WEFT__TRACE_OTHER] = "#8c8c8c",
};

static void usage(FILE *f)
{
    fprintf(f, "usage: weft-trace TRACE.json [-o OUT.svg|OUT.html] "
               "[--last MS | --window FROM:TO] [-q]\n"
               "  Prints busy time per lane, copy/kernel overlap and bytes "
               "per link;\n"
               "  -o draws the timeline as SVG, or HTML (the SVG and the "
               "summary);\n"
               "  --last MS keeps only what ran in the trace's last MS "
               "milliseconds\n"
               "    (e.g. the last launch of a benchmark);\n"
               "  --window FROM:TO keeps what ran between FROM and TO ms "
               "after the trace's start;\n"
               "  -q prints nothing unless something fails.\n");
}

/* A duration for people: "850 ns", "12.500 us", "3.200 ms", "1.250 s". */
static const char *fmt_time(char *buf, size_t n, uint64_t ns)
{
    if (ns < 1000)
        snprintf(buf, n, "%" PRIu64 " ns", ns);
    else if (ns < 1000000)
        snprintf(buf, n, "%.3f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
    else
        snprintf(buf, n, "%.3f s", (double)ns / 1e9);
    return buf;
}

static const char *fmt_bytes(char *buf, size_t n, uint64_t b)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    unsigned u = 0;

    while (v >= 1024 && u + 1 < WEFT__COUNTOF(units)) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

static double percent(uint64_t part, uint64_t whole)
{
    return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

/* Text as XML character data or attribute value. */
static void xml_text(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;

        switch (c) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&#39;", f);
            break;
        default:
            /* XML 1.0 has no other control characters, not even escaped */
            fputc(c < 0x20 && c != '\t' ? ' ' : c, f);
        }
    }
}

/* ---- summary ----------------------------------------------------------- */
/* The lines of the summary, for stdout and the SVG alike. */
typedef struct report {
    char **lines;
    size_t n, cap;
} report;

static int report_add(report *r, const char *fmt, ...) WEFT__PRINTF(2, 3);

static int report_add(report *r, const char *fmt, ...)
{
    char buf[512], *copy;
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 32;
        char **lines = weft__realloc(r->lines, cap * sizeof *lines);

        if (!lines)
            return -1;
        r->lines = lines;
        r->cap = cap;
    }
    if (!(copy = weft__strdup(buf)))
        return -1;
    r->lines[r->n++] = copy;
    return 0;
}

static void report_free(report *r)
{
    for (size_t i = 0; i < r->n; i++)
        weft__free(r->lines[i]);
    weft__free(r->lines);
}

static int make_report(const weft__trace_view *v, const weft__trace_summary *s,
                       report *r)
{
    uint64_t span = s->end_ns - s->start_ns;
    char a[32], b[32], c[32];
    int rc = 0;

    rc |= report_add(r,
                     "span %s: %zu slices on %zu lanes of %zu devices, "
                     "%zu dependency arrows",
                     fmt_time(a, sizeof a, span), v->nslices, v->ntracks,
                     v->nprocesses, v->nflows);
    rc |= report_add(r, "busy time per lane:");
    for (size_t i = 0; i < v->ntracks; i++)
        rc |=
            report_add(r, "  %-24s %12s %5.1f%% %6zu slices", v->tracks[i].name,
                       fmt_time(a, sizeof a, s->lanes[i].busy_ns),
                       percent(s->lanes[i].busy_ns, span), s->lanes[i].nslices);
    rc |= report_add(r, "copies overlapping kernels:");
    for (size_t p = 0; p < v->nprocesses; p++) {
        const weft__trace_process_summary *ps = &s->processes[p];

        if (!ps->kernel_ns && !ps->copy_ns)
            continue;
        rc |= report_add(r,
                         "  %-24s %12s  (%.1f%% of %s of copies, "
                         "kernels %s)",
                         v->processes[p], fmt_time(a, sizeof a, ps->overlap_ns),
                         percent(ps->overlap_ns, ps->copy_ns),
                         fmt_time(b, sizeof b, ps->copy_ns),
                         fmt_time(c, sizeof c, ps->kernel_ns));
    }
    rc |= report_add(r, "  %-24s %12s  (%.1f%% of %s of copies, kernels %s)",
                     "all devices", fmt_time(a, sizeof a, s->overlap_ns),
                     percent(s->overlap_ns, s->copy_ns),
                     fmt_time(b, sizeof b, s->copy_ns),
                     fmt_time(c, sizeof c, s->kernel_ns));
    rc |= report_add(r, "bytes per link:");
    if (!s->nlinks)
        rc |= report_add(r, "  (no copies)");
    for (size_t i = 0; i < s->nlinks; i++) {
        const weft__trace_link_summary *l = &s->links[i];
        double gbs = l->busy_ns ? (double)l->bytes / (double)l->busy_ns : 0;

        rc |= report_add(r, "  %-24s %12s in %zu copies, %s busy, %.2f GB/s",
                         l->link, fmt_bytes(a, sizeof a, l->bytes), l->ncopies,
                         fmt_time(b, sizeof b, l->busy_ns), gbs);
    }
    return rc ? weft__error(WEFT_ENOMEM, "no memory for the summary") : 0;
}

/* ---- the picture ------------------------------------------------------- */
/* A tick step of 1, 2 or 5 times a power of ten, about ten per span. */
static double tick_step(double span_ns)
{
    double raw = span_ns / 10, p = pow(10, floor(log10(raw)));

    if (raw / p >= 5)
        return 5 * p;
    if (raw / p >= 2)
        return 2 * p;
    return p;
}

static void tick_label(char *buf, size_t n, double ns, double step)
{
    if (step >= 1e8)
        snprintf(buf, n, "%g s", ns / 1e9);
    else if (step >= 1e5)
        snprintf(buf, n, "%g ms", ns / 1e6);
    else if (step >= 1e2)
        snprintf(buf, n, "%g us", ns / 1e3);
    else
        snprintf(buf, n, "%g ns", ns);
}

/* The y of each lane's row; groups (devices) take a header row each. */
static double *row_positions(const weft__trace_view *v, double *bottom)
{
    double *y = weft__calloc(v->ntracks, sizeof *y), at;

    if (!y)
        return NULL;
    at = FIRST_ROW_Y;
    for (size_t i = 0; i < v->ntracks; i++) {
        if (i == 0 || v->tracks[i].process != v->tracks[i - 1].process)
            at += GROUP_HEIGHT;
        y[i] = at;
        at += ROW_HEIGHT;
    }
    *bottom = at;
    return y;
}

static void svg_slice_title(FILE *f, const weft__trace_slice_view *s)
{
    char a[32], b[32];

    fputs("<title>", f);
    xml_text(f, s->name);
    fprintf(f, " [%s] at %s for %s", weft__trace_kind_name(s->kind),
            fmt_time(a, sizeof a, s->start_ns),
            fmt_time(b, sizeof b, s->end_ns - s->start_ns));
    if (s->bytes)
        fprintf(f, ", %s", fmt_bytes(a, sizeof a, s->bytes));
    if (s->node >= 0)
        fprintf(f, ", node %ld", s->node);
    if (s->kernel) {
        fputs(", kernel ", f);
        xml_text(f, s->kernel);
    }
    if (s->cause) {
        fputs(": ", f);
        xml_text(f, s->cause);
    }
    fputs("</title>", f);
}

/* The picture's geometry, shared by the parts of write_svg. */
typedef struct svg_frame {
    double x0, x1, scale, bottom;
    uint64_t start_ns;
    const double *y; /* per track: the top of its row */
} svg_frame;

/* The axis: ticks from the first start, labelled from 0. */
static void svg_axis(FILE *f, const svg_frame *fr, double span)
{
    double step = tick_step(span);
    char label[64];

    fprintf(f,
            "<g class=\"axis\" stroke=\"#999999\">\n"
            "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>\n",
            fr->x0, AXIS_Y, fr->x1, AXIS_Y);
    for (double t = 0; t <= span * 1.0001; t += step) {
        double x = fr->x0 + t * fr->scale;

        tick_label(label, sizeof label, t, step);
        fprintf(f,
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.0f\" "
                "stroke=\"#e4e4e4\"/>"
                "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\"/>"
                "<text class=\"tick\" x=\"%.1f\" y=\"%d\" stroke=\"none\" "
                "fill=\"#444444\" text-anchor=\"middle\">%s</text>\n",
                x, AXIS_Y, x, fr->bottom, x, AXIS_Y - 4, x, AXIS_Y, x,
                AXIS_Y - 8, label);
    }
    fputs("</g>\n", f);
}

/* One header per device, one row per lane. */
static void svg_lanes(FILE *f, const svg_frame *fr, const weft__trace_view *v)
{
    for (size_t i = 0; i < v->ntracks; i++) {
        if (i == 0 || v->tracks[i].process != v->tracks[i - 1].process) {
            fprintf(f,
                    "<text class=\"device\" x=\"8\" y=\"%.0f\" "
                    "font-weight=\"bold\">",
                    fr->y[i] - 6);
            xml_text(f, v->processes[v->tracks[i].process]);
            fputs("</text>\n", f);
        }
        fprintf(f,
                "<g class=\"lane\"><rect x=\"%.1f\" y=\"%.0f\" "
                "width=\"%.1f\" height=\"%d\" fill=\"%s\"/>"
                "<text x=\"20\" y=\"%.0f\">",
                fr->x0, fr->y[i], fr->x1 - fr->x0, ROW_HEIGHT,
                i % 2 ? "#f7f7f7" : "#efefef", fr->y[i] + 15);
        xml_text(f, v->tracks[i].name);
        fputs("</text></g>\n", f);
    }
}

/* Slices, never thinner than half a pixel so that none vanishes; then the
 * dependency arrows, faint: they explain, the slices are the point. */
static void svg_slices(FILE *f, const svg_frame *fr, const weft__trace_view *v)
{
    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *sl = &v->slices[i];
        double x = fr->x0 + (double)(sl->start_ns - fr->start_ns) * fr->scale;
        double w = (double)(sl->end_ns - sl->start_ns) * fr->scale;

        fprintf(f,
                "<rect class=\"slice %s\" x=\"%.2f\" y=\"%.0f\" "
                "width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                "stroke=\"#ffffff\" stroke-width=\"0.5\">",
                weft__trace_kind_name(sl->kind), x,
                fr->y[sl->track] + (ROW_HEIGHT - SLICE_HEIGHT) / 2.0,
                w < 0.5 ? 0.5 : w, SLICE_HEIGHT, kind_colors[sl->kind]);
        svg_slice_title(f, sl);
        fputs("</rect>\n", f);
    }
    if (!v->nflows || v->nflows > MAX_FLOWS)
        return;
    fputs("<g class=\"flows\" stroke=\"#333333\" stroke-opacity=\"0.35\" "
          "fill=\"none\">\n",
          f);
    for (size_t i = 0; i < v->nflows; i++) {
        const weft__trace_slice_view *a =
            weft__trace_view_find(v, v->flows[i].from);
        const weft__trace_slice_view *b =
            weft__trace_view_find(v, v->flows[i].to);

        if (!a || !b)
            continue;
        fprintf(f,
                "<line class=\"flow\" x1=\"%.2f\" y1=\"%.0f\" "
                "x2=\"%.2f\" y2=\"%.0f\"/>\n",
                fr->x0 + (double)(a->end_ns - fr->start_ns) * fr->scale,
                fr->y[a->track] + ROW_HEIGHT / 2.0,
                fr->x0 + (double)(b->start_ns - fr->start_ns) * fr->scale,
                fr->y[b->track] + ROW_HEIGHT / 2.0);
    }
    fputs("</g>\n", f);
}

/* The legend (the kinds present), then the summary's lines if asked. */
static void svg_legend(FILE *f, const svg_frame *fr, unsigned present,
                       const report *r, int with_summary)
{
    double lx = fr->x0;

    fputs("<g class=\"legend\">\n", f);
    for (unsigned k = 0; k < WEFT__TRACE_KIND_COUNT; k++) {
        if (!(present & 1u << k))
            continue;
        fprintf(f,
                "<rect x=\"%.0f\" y=\"%.0f\" width=\"12\" "
                "height=\"12\" fill=\"%s\"/><text x=\"%.0f\" "
                "y=\"%.0f\">%s</text>\n",
                lx, fr->bottom + 14, kind_colors[k], lx + 16, fr->bottom + 24,
                weft__trace_kind_name((weft__trace_kind)k));
        lx += 90;
    }
    if (!present)
        fprintf(f, "<text x=\"%.0f\" y=\"%.0f\">no slices</text>\n", lx,
                fr->bottom + 24);
    fputs("</g>\n", f);
    if (!with_summary)
        return;
    fputs("<g class=\"summary\" font-family=\"DejaVu Sans Mono, "
          "monospace\" font-size=\"12\" xml:space=\"preserve\">\n",
          f);
    for (size_t i = 0; i < r->n; i++) {
        fprintf(f, "<text x=\"12\" y=\"%.0f\">",
                fr->bottom + 56 + (double)i * LINE_HEIGHT);
        xml_text(f, r->lines[i]);
        fputs("</text>\n", f);
    }
    fputs("</g>\n", f);
}

static int write_svg(FILE *f, const char *title, const weft__trace_view *v,
                     const weft__trace_summary *s, const report *r,
                     int with_summary)
{
    double span = (double)(s->end_ns - s->start_ns), height;
    svg_frame fr = {.x0 = LABEL_WIDTH,
                    .x1 = SVG_WIDTH - RIGHT_MARGIN,
                    .start_ns = s->start_ns};
    double *y = row_positions(v, &fr.bottom);
    unsigned present = 0;

    if (!y)
        return weft__error(WEFT_ENOMEM, "no memory for the picture");
    fr.y = y;
    if (span <= 0)
        span = 1000; /* an empty or instantaneous trace: 1 us of axis */
    fr.scale = (fr.x1 - fr.x0) / span;
    for (size_t i = 0; i < v->nslices; i++)
        present |= 1u << v->slices[i].kind;
    height =
        fr.bottom + 40 + (with_summary ? (double)r->n * LINE_HEIGHT + 8 : 0);

    fprintf(f,
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%.0f\" viewBox=\"0 0 %d %.0f\" "
            "font-family=\"DejaVu Sans, Arial, sans-serif\" "
            "font-size=\"12\">\n",
            SVG_WIDTH, height, SVG_WIDTH, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"#ffffff\"/>\n");
    fputs("<text x=\"12\" y=\"24\" font-size=\"16\" font-weight=\"bold\">", f);
    xml_text(f, title);
    fputs("</text>\n", f);
    svg_axis(f, &fr, span);
    svg_lanes(f, &fr, v);
    svg_slices(f, &fr, v);
    svg_legend(f, &fr, present, r, with_summary);
    fputs("</svg>\n", f);
    weft__free(y);
    return 0;
}

static void html_row(FILE *f, const char *tag, const char *const *cells,
                     size_t n)
{
    fputs("<tr>", f);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "<%s>", tag);
        xml_text(f, cells[i]);
        fprintf(f, "</%s>", tag);
    }
    fputs("</tr>\n", f);
}

static int write_html(FILE *f, const char *title, const weft__trace_view *v,
                      const weft__trace_summary *s, const report *r)
{
    uint64_t span = s->end_ns - s->start_ns;
    char a[32], b[32], c[32], d[32];
    int rc;

    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n"
          "<meta charset=\"utf-8\">\n<title>",
          f);
    xml_text(f, title);
    fputs("</title>\n<style>\n"
          "body { font-family: 'DejaVu Sans', Arial, sans-serif; margin: 12px; "
          "background: #fff; }\n"
          "table { border-collapse: collapse; margin: 4px 0 16px 0; }\n"
          "th, td { padding: 2px 10px; text-align: right; "
          "border-bottom: 1px solid #ddd; }\n"
          "th:first-child, td:first-child { text-align: left; }\n"
          "h2 { font-size: 15px; margin: 12px 0 2px 0; }\n"
          "</style>\n</head>\n<body>\n",
          f);
    if ((rc = write_svg(f, title, v, s, r, 0)) < 0)
        return rc;

    fputs("<h2>Busy time per lane</h2>\n<table>\n", f);
    html_row(f, "th", (const char *const[]){"lane", "busy", "share", "slices"},
             4);
    for (size_t i = 0; i < v->ntracks; i++) {
        snprintf(b, sizeof b, "%.1f%%", percent(s->lanes[i].busy_ns, span));
        snprintf(c, sizeof c, "%zu", s->lanes[i].nslices);
        html_row(f, "td",
                 (const char *const[]){
                     v->tracks[i].name,
                     fmt_time(a, sizeof a, s->lanes[i].busy_ns), b, c},
                 4);
    }
    fputs("</table>\n<h2>Copies overlapping kernels</h2>\n<table>\n", f);
    html_row(f, "th",
             (const char *const[]){"device", "overlap", "of copy time",
                                   "copies", "kernels"},
             5);
    for (size_t p = 0; p <= v->nprocesses; p++) {
        const weft__trace_process_summary all = {s->kernel_ns, s->copy_ns,
                                                 s->overlap_ns};
        const weft__trace_process_summary *ps =
            p < v->nprocesses ? &s->processes[p] : &all;
        char share[32];

        if (p < v->nprocesses && !ps->kernel_ns && !ps->copy_ns)
            continue;
        snprintf(share, sizeof share, "%.1f%%",
                 percent(ps->overlap_ns, ps->copy_ns));
        html_row(f, "td",
                 (const char *const[]){
                     p < v->nprocesses ? v->processes[p] : "all devices",
                     fmt_time(a, sizeof a, ps->overlap_ns), share,
                     fmt_time(c, sizeof c, ps->copy_ns),
                     fmt_time(d, sizeof d, ps->kernel_ns)},
                 5);
    }
    fputs("</table>\n<h2>Bytes per link</h2>\n<table>\n", f);
    html_row(f, "th",
             (const char *const[]){"link", "bytes", "copies", "busy", "GB/s"},
             5);
    for (size_t i = 0; i < s->nlinks; i++) {
        const weft__trace_link_summary *l = &s->links[i];
        char n[32], gbs[32];

        snprintf(n, sizeof n, "%zu", l->ncopies);
        snprintf(gbs, sizeof gbs, "%.2f",
                 l->busy_ns ? (double)l->bytes / (double)l->busy_ns : 0.0);
        html_row(f, "td",
                 (const char *const[]){l->link,
                                       fmt_bytes(a, sizeof a, l->bytes), n,
                                       fmt_time(b, sizeof b, l->busy_ns), gbs},
                 5);
    }
    fprintf(f, "</table>\n<p>");
    xml_text(f, r->n ? r->lines[0] : "");
    fputs("</p>\n</body>\n</html>\n", f);
    return 0;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);

    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int write_picture(const char *path, const char *title,
                         const weft__trace_view *v,
                         const weft__trace_summary *s, const report *r)
{
    int html = ends_with(path, ".html") || ends_with(path, ".htm");
    FILE *f;
    int rc;

    if (!html && !ends_with(path, ".svg"))
        return weft__error(WEFT_EINVAL,
                           "%s: the output must end in .svg or "
                           ".html",
                           path);
    if (!(f = fopen(path, "w")))
        return weft__error(WEFT_EIO, "%s: %s", path, strerror(errno));
    if (!html)
        fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", f);
    rc = html ? write_html(f, title, v, s, r) : write_svg(f, title, v, s, r, 1);
    if (rc == 0 && ferror(f))
        rc = weft__error(WEFT_EIO, "%s: write failed", path);
    if (fclose(f) != 0 && rc == 0)
        rc = weft__error(WEFT_EIO, "%s: %s", path, strerror(errno));
    return rc;
}

int main(int argc, char **argv)
{
    const char *in = NULL, *out = NULL, *base;
    weft__trace_view *v = NULL;
    weft__trace_summary *s = NULL;
    report r = {0};
    char title[512];
    int quiet = 0, rc;
    double last_ms = 0, win_from = 0, win_to = -1;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "-h") == 0 || strcmp(argv[i], "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            out = argv[++i];
        } else if (strcmp(argv[i], "--last") == 0 && i + 1 < argc) {
            char *end;

            last_ms = strtod(argv[++i], &end);
            if (*end || !(last_ms > 0)) {
                fprintf(stderr,
                        "weft-trace: --last %s: not a positive "
                        "number of milliseconds\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "--window") == 0 && i + 1 < argc) {
            char *end;

            win_from = strtod(argv[++i], &end);
            if (*end == ':')
                win_to = strtod(end + 1, &end);
            if (*end || !(win_from >= 0) || !(win_to > win_from)) {
                fprintf(stderr,
                        "weft-trace: --window %s: want FROM:TO in "
                        "milliseconds, FROM < TO\n",
                        argv[i]);
                return 2;
            }
        } else if (strcmp(argv[i], "-q") == 0) {
            quiet = 1;
        } else if (argv[i][0] == '-' || in) {
            usage(stderr);
            return 2;
        } else {
            in = argv[i];
        }
    }
    if (!in) {
        usage(stderr);
        return 2;
    }
    if ((rc = weft__trace_view_load(in, &v)) < 0)
        goto done;
    if (win_to > win_from) {
        uint64_t start = UINT64_MAX;

        for (size_t i = 0; i < v->nslices; i++)
            start =
                v->slices[i].start_ns < start ? v->slices[i].start_ns : start;
        if (start == UINT64_MAX)
            start = 0;
        if ((rc = weft__trace_view_window(v, start + (uint64_t)(win_from * 1e6),
                                          start + (uint64_t)(win_to * 1e6))) <
            0)
            goto done;
    } else if (last_ms > 0) {
        uint64_t end = 0, span = (uint64_t)(last_ms * 1e6);

        for (size_t i = 0; i < v->nslices; i++)
            end = v->slices[i].end_ns > end ? v->slices[i].end_ns : end;
        if ((rc = weft__trace_view_window(v, end > span ? end - span : 0,
                                          end)) < 0)
            goto done;
    }
    if ((rc = weft__trace_summarize(v, &s)) < 0 ||
        (rc = make_report(v, s, &r)) < 0)
        goto done;
    base = strrchr(in, '/') ? strrchr(in, '/') + 1 : in;
    snprintf(title, sizeof title, "weft trace: %s", base);
    if (out && (rc = write_picture(out, title, v, s, &r)) < 0)
        goto done;
    if (!quiet) {
        printf("trace %s\n", in);
        for (size_t i = 0; i < r.n; i++)
            printf("%s\n", r.lines[i]);
        if (out)
            printf("timeline written to %s\n", out);
    }
done:
    if (rc < 0)
        fprintf(stderr, "weft-trace: %s\n", weft_last_error());
    report_free(&r);
    weft__trace_summary_destroy(s);
    weft__trace_view_destroy(v);
    return rc < 0 ? 1 : 0;
}
