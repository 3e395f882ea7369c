/*
 * What every benchmark prints the same way: one line per figure
 * ("name: value unit"), or with --json one object per figure, medians, and
 * progress on a terminal only.
 */
#ifndef WEFT_BENCH_FIGURES_H
#define WEFT_BENCH_FIGURES_H

/* Set by a benchmark's --json; the benchmark prints the enclosing object. */
extern int bench_json;

/* One figure; in JSON mode an array element (commas handled). */
void bench_figure(const char *name, double value, const char *unit);
/* The median of v[0..n) (sorts v). */
double bench_median(double *v, int n);
/* "what..." on stderr if it is a terminal; "" clears the line. */
void bench_progress(const char *what);

#endif /* WEFT_BENCH_FIGURES_H */
