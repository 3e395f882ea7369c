/* Options, clock, figures, medians and progress of the benchmarks (bench.h). */
#include "bench.h"

#include <weft.h>

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int bench_json;
static int bench_nfig;
static const char *bench_name = "bench";
static const bench_option *bench_opts;
static size_t bench_nopts;

_Noreturn void bench_die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "%s: ", bench_name);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void bench_note(const char *fmt, ...)
{
    va_list ap;

    if (bench_json)
        return;
    fputs("# ", stdout);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
}

void bench_usage(void)
{
    fprintf(stderr, "%s: usage: %s [--json]", bench_name, bench_name);
    for (size_t i = 0; i < bench_nopts; i++)
        if (bench_opts[i].kind == BENCH_OFF || bench_opts[i].kind == BENCH_ON)
            fprintf(stderr, " [%s]", bench_opts[i].name);
        else
            fprintf(stderr, " [%s %s]", bench_opts[i].name, bench_opts[i].meta);
    fputc('\n', stderr);
    exit(1);
}

/* One option's value into its place; -1 if it does not parse. */
static int bench_parse(const bench_option *o, const char *v)
{
    char *end;
    unsigned long long u = 0;
    long long l = 0;
    double d = 0;

    errno = 0;
    switch (o->kind) {
    case BENCH_INT:
    case BENCH_LONG:
        l = strtoll(v, &end, 10);
        break;
    case BENCH_UNSIGNED:
    case BENCH_U32:
    case BENCH_MIB:
        if (v[0] == '-')
            return -1;
        u = strtoull(v, &end, 10);
        break;
    case BENCH_DOUBLE:
        d = strtod(v, &end);
        break;
    case BENCH_STRING:
        *(const char **)o->value = v;
        return 0;
    default:
        return -1;
    }
    if (errno || end == v || *end)
        return -1;
    switch (o->kind) {
    case BENCH_INT:
        *(int *)o->value = (int)l;
        return l == (int)l ? 0 : -1;
    case BENCH_LONG:
        *(long *)o->value = (long)l;
        return 0;
    case BENCH_UNSIGNED:
        *(unsigned *)o->value = (unsigned)u;
        return u == (unsigned)u ? 0 : -1;
    case BENCH_U32:
        *(uint32_t *)o->value = (uint32_t)u;
        return u == (uint32_t)u ? 0 : -1;
    case BENCH_MIB:
        *(size_t *)o->value = (size_t)u << 20;
        return u < ((size_t)1 << 40) ? 0 : -1;
    default:
        *(double *)o->value = d;
        return 0;
    }
}

void bench_options(int argc, char **argv, const char *name,
                   const bench_option *opts, size_t n)
{
    bench_name = name;
    bench_opts = opts;
    bench_nopts = n;
    for (int i = 1; i < argc; i++) {
        const bench_option *o = NULL;

        if (strcmp(argv[i], "--json") == 0) {
            bench_json = 1;
            continue;
        }
        for (size_t k = 0; k < n && !o; k++)
            if (strcmp(argv[i], opts[k].name) == 0)
                o = &opts[k];
        if (!o)
            bench_usage();
        if (o->kind == BENCH_OFF || o->kind == BENCH_ON) {
            *(int *)o->value = o->kind == BENCH_ON;
            continue;
        }
        if (i + 1 >= argc || bench_parse(o, argv[++i]) < 0)
            bench_usage();
    }
}

void bench_check_rc(int rc, const char *call)
{
    if (rc < 0)
        bench_die("%s: %s: %s", call, weft_err_name(rc), weft_last_error());
}

uint64_t bench_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void bench_begin(const char *fields, ...)
{
    va_list ap;

    if (!bench_json)
        return;
    printf("{\"bench\": \"%s\", ", bench_name);
    if (fields) {
        va_start(ap, fields);
        vprintf(fields, ap);
        va_end(ap);
        printf(", ");
    }
    printf("\"figures\": [");
}

void bench_end(void)
{
    if (bench_json)
        printf("\n]}\n");
}

void bench_figure(const char *name, double value, const char *unit)
{
    if (bench_json)
        printf("%s\n  {\"name\": \"%s\", \"value\": %.4f, \"unit\": \"%s\"}",
               bench_nfig ? "," : "", name, value, unit);
    else
        printf("%s: %.3f%s%s\n", name, value, unit[0] ? " " : "", unit);
    fflush(stdout);
    bench_nfig++;
}

static int bench_cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

double bench_median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, bench_cmp);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

void bench_progress(const char *what)
{
    static int tty = -1;

    if (tty < 0)
        tty = isatty(2);
    if (tty)
        fprintf(stderr, "\r\033[K%s%s", what, what[0] ? "..." : "");
}

void bench_sim_timing_only(void)
{
    const char *cur = getenv("WEFT_SIM");
    char buf[1024];

    if (cur && strstr(cur, "real_data"))
        return;
    snprintf(buf, sizeof buf, "%s%sreal_data=0", cur ? cur : "",
             cur && *cur ? "," : "");
    setenv("WEFT_SIM", buf, 1);
}
