/* Figures, medians and progress for the benchmarks (figures.h). */
#include "figures.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int bench_json;
static int bench_nfig;

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
