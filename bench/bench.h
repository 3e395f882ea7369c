/*
 * What every benchmark shares: its options (--json and its own, from one
 * table), a monotonic clock, failing on a weft error, and its figures,
 * printed one a line ("name: value unit") or with --json as one object,
 * {"bench": NAME, ..., "figures": [{"name", "value", "unit"}, ...]}.
 * Progress goes to a terminal only.
 */
#ifndef WEFT_BENCH_H
#define WEFT_BENCH_H

#include <stddef.h>
#include <stdint.h>

/* Set by --json. */
extern int bench_json;

/* How an option's value is parsed and stored. */
typedef enum bench_kind {
    BENCH_INT,      /* int */
    BENCH_UNSIGNED, /* unsigned */
    BENCH_U32,      /* uint32_t */
    BENCH_LONG,     /* long */
    BENCH_MIB,      /* size_t: the value in MiB, stored in bytes */
    BENCH_DOUBLE,   /* double */
    BENCH_STRING,   /* const char *: the argument itself */
    BENCH_OFF,      /* int: set to 0; the option takes no value */
    BENCH_ON,       /* int: set to 1; the option takes no value */
} bench_kind;

typedef struct bench_option {
    const char *name; /* "--reps" */
    bench_kind kind;
    void *value;      /* where the value goes; its default stays if unset */
    const char *meta; /* the value in the usage line: "N", "cuda|host" */
} bench_option;

/*
 * Parses argv[1..argc): --json and opts[0..n). A name not in the table, a
 * missing value or one that does not parse prints the usage line, made
 * from the table, and exits 1. name prefixes every message.
 */
void bench_options(int argc, char **argv, const char *name,
                   const bench_option *opts, size_t n);
#define BENCH_OPTIONS(argc, argv, name, opts)                                  \
    bench_options((argc), (argv), (name), (opts),                              \
                  sizeof(opts) / sizeof((opts)[0]))
/* The usage line on stderr, then exit 1 (a value that parses but is bad). */
void bench_usage(void);

/* "NAME: ..." on stderr, then exit 1. */
_Noreturn void bench_die(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
/* A remark for people: "# ..." on stdout, left out of --json output. */
void bench_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A weft call that must succeed: the benchmark has no fallback. */
#define bench_check(call) bench_check_rc((call), #call)
void bench_check_rc(int rc, const char *call);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t bench_now_ns(void);

/*
 * With --json, opens the object: {"bench": NAME, then fields (printf's,
 * "\"key\": value, ..."; NULL for none), then "figures": [. Without, nothing.
 */
void bench_begin(const char *fields, ...) __attribute__((format(printf, 1, 2)));
/* One figure; in JSON mode an element of "figures" (commas handled). */
void bench_figure(const char *name, double value, const char *unit);
/* With --json, closes what bench_begin opened. */
void bench_end(void);

/* The median of v[0..n) (sorts v). */
double bench_median(double *v, int n);
/* "what..." on stderr if it is a terminal; "" clears the line. */
void bench_progress(const char *what);
/*
 * For benches whose simulated figures are virtual times only: the sim
 * runs timing only (real_data=0) unless WEFT_SIM names real_data itself,
 * through WEFT_SIM (set, or extended, here) so that every runtime of the
 * bench sees it.
 */
void bench_sim_timing_only(void);

#endif /* WEFT_BENCH_H */
