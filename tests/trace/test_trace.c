/*
 * Traces: the writer's JSON read back by the reader, concurrent writers,
 * the summary of a synthetic pipeline, weft-trace's pictures, and (where
 * chromium is installed) the picture rendered as a person would see it.
 *
 *     test_trace WEFT_TRACE_TOOL          the unit tests and the tool tests
 *     test_trace WEFT_TRACE_TOOL render   the rendering check (77: no chromium)
 */
#include "wt_test.h"

#include "base/trace.h"
#include "tracefile.h"

#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef WT_HAVE_ZLIB
#include <zlib.h>
#endif

static const char *tool_path;
static char tmpdir[256];

#define US 1000ull /* nanoseconds */

/* ---- helpers ----------------------------------------------------------- */
static void path_in_tmp(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", tmpdir, name);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;
    long n;

    assert_non_null(f);
    assert_int_equal(fseek(f, 0, SEEK_END), 0);
    n = ftell(f);
    assert_true(n >= 0);
    assert_int_equal(fseek(f, 0, SEEK_SET), 0);
    buf = malloc((size_t)n + 1);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    buf[n] = '\0';
    fclose(f);
    if (len)
        *len = (size_t)n;
    return buf;
}

static size_t count_of(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = strstr(hay, needle); p; p = strstr(p + 1, needle))
        n++;
    return n;
}

/* Run argv with stdout and stderr to files; the exit status, or -1. */
static int run_cmd(char *const argv[], const char *out, const char *err)
{
    pid_t pid = fork();
    int status;

    assert_true(pid >= 0);
    if (pid == 0) {
        int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        int e = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644);

        if (o < 0 || e < 0 || dup2(o, 1) < 0 || dup2(e, 2) < 0)
            _exit(126);
        execv(argv[0], argv);
        _exit(127);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* What every trace must satisfy, whatever made it. */
static void check_view_invariants(const weft__trace_view *v)
{
    for (size_t i = 0; i < v->ntracks; i++)
        assert_true(v->tracks[i].process < v->nprocesses);
    for (size_t i = 0; i < v->nslices; i++) {
        const weft__trace_slice_view *s = &v->slices[i];

        assert_true(s->track < v->ntracks);
        assert_true(s->end_ns >= s->start_ns);
        assert_non_null(s->name);
        /* ordered per lane, and every id once */
        if (i > 0 && v->slices[i - 1].track == s->track)
            assert_true(v->slices[i - 1].start_ns <= s->start_ns);
        if (i > 0)
            assert_true(v->slices[i - 1].track <= s->track);
        assert_ptr_equal(weft__trace_view_find(v, s->id), s);
    }
    for (size_t i = 0; i < v->nflows; i++) {
        assert_non_null(weft__trace_view_find(v, v->flows[i].from));
        assert_non_null(weft__trace_view_find(v, v->flows[i].to));
    }
}

static void assert_str_or_null(const char *a, const char *b)
{
    if (!a || !b)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* ---- the writer and the reader ----------------------------------------- */
static void roundtrip_keeps_everything(void **state)
{
    static const char tricky[] = "say \"hi\"\n\tback\\slash \x01 / \xc2\xb5s";
    weft__trace *t;
    weft__trace_view *live, *read;
    uint32_t compute, h2d, worker, again;
    uint64_t k, c, h, bad;
    uint64_t t0 = weft__now_ns();
    char path[512];
    (void)state;

    assert_int_equal(weft__trace_create(&t), 0);
    /* registered out of display order: the view groups them by process */
    assert_int_equal(weft__trace_track(t, "GPU0", "GPU0 compute 0", &compute),
                     0);
    assert_int_equal(weft__trace_track(t, "host", "host worker 0", &worker), 0);
    assert_int_equal(weft__trace_track(t, "GPU0", "GPU0 H2D", &h2d), 0);
    assert_int_equal(weft__trace_track(t, "GPU0", "GPU0 H2D", &again), 0);
    assert_int_equal(again, h2d);

    weft__trace_slice copy = {.track = h2d,
                              .kind = WEFT__TRACE_H2D,
                              .name = "copy x[0:4096]",
                              .start_ns = t0 + 1 * US,
                              .end_ns = t0 + 3 * US,
                              .bytes = 4096,
                              .node = -1,
                              .cause = "read by kernel \"scale\" on GPU0,\n"
                                       "valid only on host"};
    weft__trace_slice kern = {.track = compute,
                              .kind = WEFT__TRACE_KERNEL,
                              .name = tricky,
                              .start_ns = t0 + 3 * US + 1,
                              .end_ns = t0 + 10 * US + 999,
                              .node = 7,
                              .kernel = "scale"};
    weft__trace_slice host = {.track = worker,
                              .kind = WEFT__TRACE_HOST,
                              .name = "check \xff byte",
                              .start_ns = t0 + 11 * US,
                              .end_ns = t0 + 11 * US,
                              .node = 8,
                              .link = "not a copy"};
    assert_int_equal(weft__trace_add_slice(t, &copy, &c), 0);
    assert_int_equal(weft__trace_add_slice(t, &kern, &k), 0);
    assert_int_equal(weft__trace_add_slice(t, &host, &h), 0);
    assert_int_equal(weft__trace_add_flow(t, c, k), 0);
    assert_int_equal(weft__trace_add_flow(t, k, h), 0);

    /* misuse fails and records nothing */
    copy.track = 99;
    assert_int_equal(weft__trace_add_slice(t, &copy, &bad), WEFT_EINVAL);
    copy.track = h2d;
    copy.end_ns = copy.start_ns - 1;
    assert_int_equal(weft__trace_add_slice(t, &copy, &bad), WEFT_EINVAL);
    assert_int_equal(weft__trace_add_flow(t, c, 1000), WEFT_EINVAL);
    assert_int_equal(weft__trace_add_flow(t, c, c), WEFT_EINVAL);

    path_in_tmp(path, sizeof path, "roundtrip.json");
    assert_int_equal(weft__trace_write_file(t, path), 0);
    assert_int_equal(weft__trace_view_of(t, &live), 0);
    assert_int_equal(weft__trace_view_load(path, &read), 0);
    check_view_invariants(live);
    check_view_invariants(read);

    assert_int_equal(read->nprocesses, 2);
    assert_string_equal(read->processes[0], "GPU0");
    assert_string_equal(read->processes[1], "host");
    assert_int_equal(read->ntracks, 3);
    assert_string_equal(read->tracks[0].name, "GPU0 compute 0");
    assert_string_equal(read->tracks[1].name, "GPU0 H2D");
    assert_string_equal(read->tracks[2].name, "host worker 0");
    assert_int_equal(read->tracks[2].process, 1);
    assert_int_equal(read->nslices, 3);
    assert_int_equal(read->nflows, 2);

    /* what was written is what was recorded, to the nanosecond */
    assert_int_equal(live->nslices, read->nslices);
    for (size_t i = 0; i < read->nslices; i++) {
        const weft__trace_slice_view *a = &live->slices[i], *b;

        b = weft__trace_view_find(read, a->id);
        assert_non_null(b);
        assert_int_equal(a->track, b->track);
        assert_int_equal(a->kind, b->kind);
        assert_int_equal(a->start_ns, b->start_ns);
        assert_int_equal(a->end_ns, b->end_ns);
        assert_int_equal(a->bytes, b->bytes);
        assert_int_equal(a->node, b->node);
        assert_str_or_null(a->kernel, b->kernel);
        assert_str_or_null(a->cause, b->cause);
        assert_str_or_null(a->link, b->link);
        if (a->id != h)
            assert_string_equal(a->name, b->name);
    }
    /* a byte that is not UTF-8 becomes U+FFFD, so the file stays JSON */
    assert_string_equal(weft__trace_view_find(read, h)->name,
                        "check \xef\xbf\xbd byte");
    assert_string_equal(weft__trace_view_find(read, k)->name, tricky);
    assert_int_equal(weft__trace_view_find(read, k)->end_ns -
                         weft__trace_view_find(read, c)->start_ns,
                     10 * US - 1 * US + 999);
    assert_int_equal(read->flows[0].from, c);
    assert_int_equal(read->flows[0].to, k);
    assert_int_equal(read->flows[1].from, k);
    assert_int_equal(read->flows[1].to, h);

    weft__trace_view_destroy(live);
    weft__trace_view_destroy(read);
    weft__trace_destroy(t);
}

static void json_text_is_escaped(void **state)
{
    weft__trace *t;
    uint32_t track;
    char path[512], *text;
    weft__trace_slice s = {.kind = WEFT__TRACE_MAP,
                           .name = "a\"b\nc\\d\re",
                           .node = -1,
                           .cause = "\x1f"};
    (void)state;

    assert_int_equal(weft__trace_create(&t), 0);
    assert_int_equal(weft__trace_track(t, "dev \"q\"", "lane\n1", &track), 0);
    s.track = track;
    s.start_ns = s.end_ns = weft__now_ns();
    assert_int_equal(weft__trace_add_slice(t, &s, NULL), 0);
    path_in_tmp(path, sizeof path, "escape.json");
    assert_int_equal(weft__trace_write_file(t, path), 0);
    text = read_all(path, NULL);
    assert_non_null(strstr(text, "\"a\\\"b\\nc\\\\d\\u000de\""));
    assert_non_null(strstr(text, "\"\\u001f\""));
    assert_non_null(strstr(text, "\"dev \\\"q\\\"\""));
    assert_non_null(strstr(text, "\"lane\\n1\""));
    /* no raw control character anywhere but the line breaks between events */
    for (const char *p = text; *p; p++)
        assert_true((unsigned char)*p >= 0x20 || *p == '\n');
    free(text);
    weft__trace_destroy(t);
}

static void reader_rejects_bad_input(void **state)
{
    static const char *const bad[] = {
        "",
        "{",
        "{\"traceEvents\":[",
        "{\"traceEvents\":[{\"ph\":\"X\",}]}",
        "{\"traceEvents\":[]} trailing",
        "{\"traceEvents\":[{\"name\":\"a\nb\"}]}",
        "{\"traceEvents\":[{\"name\":\"\\q\"}]}",
        "{\"traceEvents\":[tru]}",
        "{\"traceEvents\":{}}",
        "{\"events\":[]}",
        "42",
    };
    weft__trace_view *v = NULL;
    char deep[300];
    (void)state;

    for (size_t i = 0; i < WEFT__COUNTOF(bad); i++) {
        assert_int_equal(weft__trace_view_parse(bad[i], strlen(bad[i]), &v),
                         WEFT_EINVAL);
        assert_null(v);
        assert_true(strlen(weft_last_error()) > 0);
    }
    {
        static const char two_lines[] = "{\n\"traceEvents\": [,]}";

        assert_int_equal(
            weft__trace_view_parse(two_lines, strlen(two_lines), &v),
            WEFT_EINVAL);
    }
    assert_non_null(strstr(weft_last_error(), "line 2"));
    /* nesting deep enough to exhaust a recursive parser is refused */
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    assert_int_equal(weft__trace_view_parse(deep, strlen(deep), &v),
                     WEFT_EINVAL);
    assert_non_null(strstr(weft_last_error(), "deep"));

    assert_int_equal(weft__trace_view_load("/nonexistent/trace.json", &v),
                     WEFT_EIO);
    assert_non_null(strstr(weft_last_error(), "/nonexistent/trace.json"));
}

/* A trace from another writer: a bare array, no ids, flows bound by time. */
static void reader_takes_foreign_traces(void **state)
{
    static const char json[] =
        "[{\"ph\":\"X\",\"pid\":5,\"tid\":2,\"ts\":10,\"dur\":5,\"name\":\"b\","
        "\"cat\":\"kernel\"},"
        "{\"ph\":\"X\",\"pid\":5,\"tid\":1,\"ts\":0,\"dur\":10,\"name\":\"a\","
        "\"cat\":\"h2d\",\"args\":{\"bytes\":1e6}},"
        "{\"ph\":\"B\",\"pid\":5,\"tid\":1,\"ts\":0,\"name\":\"ignored\"},"
        "{\"ph\":\"s\",\"id\":\"x\",\"pid\":5,\"tid\":1,\"ts\":2},"
        "{\"ph\":\"f\",\"bp\":\"e\",\"id\":\"x\",\"pid\":5,\"tid\":2,"
        "\"ts\":10},"
        "{\"ph\":\"M\",\"pid\":5,\"tid\":2,\"name\":\"thread_name\","
        "\"args\":{\"name\":\"K \\u00b5 \\ud83d\\ude00\"}}]";
    weft__trace_view *v;
    (void)state;

    assert_int_equal(weft__trace_view_parse(json, strlen(json), &v), 0);
    check_view_invariants(v);
    assert_int_equal(v->nprocesses, 1);
    assert_string_equal(v->processes[0], "process 5");
    assert_int_equal(v->ntracks, 2);
    /* first seen first: tid 2 came before tid 1 */
    assert_string_equal(v->tracks[0].name, "K \xc2\xb5 \xf0\x9f\x98\x80");
    assert_string_equal(v->tracks[1].name, "thread 5/1");
    assert_int_equal(v->nslices, 2);
    assert_string_equal(v->slices[1].name, "a");
    assert_int_equal(v->slices[1].kind, WEFT__TRACE_H2D);
    assert_int_equal(v->slices[1].bytes, 1000000);
    assert_int_equal(v->slices[0].start_ns, 10 * US);
    assert_int_equal(v->slices[0].end_ns, 15 * US);
    assert_int_equal(v->nflows, 1);
    assert_string_equal(weft__trace_view_find(v, v->flows[0].from)->name, "a");
    assert_string_equal(weft__trace_view_find(v, v->flows[0].to)->name, "b");
    weft__trace_view_destroy(v);
}

/* Every allocation failure leaves a usable trace and no leak. */
static void allocation_failures_are_clean(void **state)
{
    char path[512];
    (void)state;

    path_in_tmp(path, sizeof path, "oom.json");
    for (long n = 1;; n++) {
        weft__trace *t = NULL;
        weft__trace_view *v = NULL, *back = NULL;
        uint32_t track = 0;
        uint64_t a = 0, b = 0;
        int rc;
        weft__trace_slice s = {.kind = WEFT__TRACE_KERNEL,
                               .name = "k",
                               .node = -1,
                               .cause = "because"};

        weft__fault_arm(n, "malloc");
        rc = weft__trace_create(&t);
        if (rc == 0)
            rc = weft__trace_track(t, "GPU0", "GPU0 compute 0", &track);
        s.track = track;
        s.start_ns = s.end_ns = weft__now_ns();
        if (rc == 0)
            rc = weft__trace_add_slice(t, &s, &a);
        if (rc == 0)
            rc = weft__trace_add_slice(t, &s, &b);
        if (rc == 0)
            rc = weft__trace_add_flow(t, a, b);
        if (rc == 0)
            rc = weft__trace_view_of(t, &v);
        if (rc == 0)
            rc = weft__trace_write_file(t, path);
        if (rc == 0)
            rc = weft__trace_view_load(path, &back);
        weft__fault_disarm();
        if (rc == 0) {
            assert_int_equal(back->nslices, 2);
            assert_int_equal(back->nflows, 1);
        } else {
            assert_int_equal(rc, WEFT_ENOMEM);
        }
        weft__trace_view_destroy(v);
        weft__trace_view_destroy(back);
        weft__trace_destroy(t);
        if (rc == 0 && !weft__fault_fired())
            break;
        assert_true(n < 10000);
    }
}

/* ---- concurrency ------------------------------------------------------- */
#define WRITERS        4
#define SLICES_PER_ONE 20000

typedef struct writer_arg {
    weft__trace *t;
    uint32_t track;
    int index;
    int failures;
} writer_arg;

static void *writer(void *p)
{
    writer_arg *w = p;
    uint64_t prev = 0, id;

    for (int i = 0; i < SLICES_PER_ONE; i++) {
        uint64_t now = weft__now_ns();
        weft__trace_slice s = {.track = w->track,
                               .kind = WEFT__TRACE_HOST,
                               .name = "task",
                               .start_ns = now,
                               .end_ns = now + 1,
                               .node = (long)w->index * SLICES_PER_ONE + i};

        if (weft__trace_add_slice(w->t, &s, &id) != 0 ||
            (prev && weft__trace_add_flow(w->t, prev, id) != 0))
            w->failures++;
        prev = id;
    }
    return NULL;
}

static void concurrent_writers_lose_nothing(void **state)
{
    weft__trace *t;
    weft__trace_view *v, *back;
    pthread_t threads[WRITERS];
    writer_arg args[WRITERS];
    unsigned char *seen;
    char path[512];
    (void)state;

    assert_int_equal(weft__trace_create(&t), 0);
    for (int i = 0; i < WRITERS; i++) {
        char name[32];

        snprintf(name, sizeof name, "host worker %d", i);
        args[i] = (writer_arg){t, 0, i, 0};
        assert_int_equal(weft__trace_track(t, "host", name, &args[i].track), 0);
    }
    for (int i = 0; i < WRITERS; i++)
        assert_int_equal(pthread_create(&threads[i], NULL, writer, &args[i]),
                         0);
    for (int i = 0; i < WRITERS; i++) {
        assert_int_equal(pthread_join(threads[i], NULL), 0);
        assert_int_equal(args[i].failures, 0);
    }
    path_in_tmp(path, sizeof path, "threads.json");
    assert_int_equal(weft__trace_write_file(t, path), 0);
    assert_int_equal(weft__trace_view_of(t, &v), 0);
    assert_int_equal(weft__trace_view_load(path, &back), 0);
    check_view_invariants(back);
    assert_int_equal(back->nslices, WRITERS * SLICES_PER_ONE);
    assert_int_equal(back->nflows, WRITERS * (SLICES_PER_ONE - 1));
    seen = calloc(WRITERS * SLICES_PER_ONE, 1);
    assert_non_null(seen);
    for (size_t i = 0; i < back->nslices; i++) {
        long node = back->slices[i].node;

        assert_true(node >= 0 && node < WRITERS * SLICES_PER_ONE);
        assert_int_equal(seen[node], 0);
        seen[node] = 1;
        /* each writer's slices stay on its own lane */
        assert_int_equal(back->slices[i].track, node / SLICES_PER_ONE);
    }
    /* flows join consecutive slices of one writer */
    for (size_t i = 0; i < back->nflows; i++) {
        const weft__trace_slice_view *a, *b;

        a = weft__trace_view_find(back, back->flows[i].from);
        b = weft__trace_view_find(back, back->flows[i].to);
        assert_int_equal(a->node + 1, b->node);
        assert_int_equal(a->track, b->track);
    }
    free(seen);
    weft__trace_view_destroy(v);
    weft__trace_view_destroy(back);
    weft__trace_destroy(t);
}

/* ---- a synthetic pipeline and its summary ------------------------------ */
/*
 * 16 chunks over 2 GPUs (chunk c on GPU c%2, the k-th there with k = c/2):
 * copy-in 10 us, kernel 20 us, copy-out 10 us, each on its own lane. The
 * compute lane is the bottleneck, so on GPU d (started d*5 us late):
 *     in_k  = [10k, 10k+10]         (back to back on H2D)
 *     ker_k = [10+20k, 30+20k]      (back to back on compute: [10, 170])
 *     out_k = [30+20k, 40+20k]
 * Copies cover [0,80] (the ins) plus the outs [90,100] ... [170,180]; the
 * kernels cover [10,170]. Overlap per GPU: [10,80] = 70, plus the outs at
 * 90, 110, 130, 150 = 4 * 10; out_7 starts when the kernels end. 110 us.
 * Machine-wide, GPU1 shifted by 5: copies cover [0,85] [90,105] [110,125]
 * [130,145] [150,165] [170,185], kernels [10,175]: 75+15+15+15+15+5 = 140.
 */
#define CHUNK_BYTES (1u << 20)

static weft__trace *synthetic_pipeline(void)
{
    weft__trace *t;
    uint32_t lanes[2][3];
    static const char *const lane_names[3] = {"compute 0", "H2D", "D2H"};
    uint64_t t0 = weft__now_ns();

    assert_int_equal(weft__trace_create(&t), 0);
    for (int d = 0; d < 2; d++) {
        for (int l = 0; l < 3; l++) {
            char dev[16], name[48];

            snprintf(dev, sizeof dev, "GPU%d", d);
            snprintf(name, sizeof name, "GPU%d %s", d, lane_names[l]);
            assert_int_equal(weft__trace_track(t, dev, name, &lanes[d][l]), 0);
        }
    }
    for (int c = 0; c < 16; c++) {
        int d = c % 2, k = c / 2;
        uint64_t base = t0 + (uint64_t)d * 5 * US, in, ker, out;
        char name[64], cause[128];
        weft__trace_slice s = {0};

        snprintf(name, sizeof name, "x[%d] to GPU%d", c, d);
        snprintf(cause, sizeof cause,
                 "read by kernel scale on GPU%d, valid only on host", d);
        s = (weft__trace_slice){lanes[d][1],
                                WEFT__TRACE_H2D,
                                name,
                                base + (uint64_t)(10 * k) * US,
                                base + (uint64_t)(10 * k + 10) * US,
                                CHUNK_BYTES,
                                -1,
                                NULL,
                                cause,
                                NULL};
        assert_int_equal(weft__trace_add_slice(t, &s, &in), 0);
        snprintf(name, sizeof name, "scale chunk %d", c);
        s = (weft__trace_slice){lanes[d][0],
                                WEFT__TRACE_KERNEL,
                                name,
                                base + (uint64_t)(10 + 20 * k) * US,
                                base + (uint64_t)(30 + 20 * k) * US,
                                0,
                                c,
                                "scale",
                                NULL,
                                NULL};
        assert_int_equal(weft__trace_add_slice(t, &s, &ker), 0);
        snprintf(name, sizeof name, "x[%d] to host", c);
        s = (weft__trace_slice){lanes[d][2],
                                WEFT__TRACE_D2H,
                                name,
                                base + (uint64_t)(30 + 20 * k) * US,
                                base + (uint64_t)(40 + 20 * k) * US,
                                CHUNK_BYTES,
                                -1,
                                NULL,
                                "write-back for map",
                                NULL};
        assert_int_equal(weft__trace_add_slice(t, &s, &out), 0);
        assert_int_equal(weft__trace_add_flow(t, in, ker), 0);
        assert_int_equal(weft__trace_add_flow(t, ker, out), 0);
    }
    return t;
}

static void summary_matches_the_hand_count(void **state)
{
    weft__trace *t = synthetic_pipeline();
    weft__trace_view *v;
    weft__trace_summary *s;
    (void)state;

    assert_int_equal(weft__trace_view_of(t, &v), 0);
    assert_int_equal(weft__trace_summarize(v, &s), 0);
    assert_int_equal(s->end_ns - s->start_ns, 185 * US);
    for (int d = 0; d < 2; d++) {
        assert_int_equal(s->processes[d].overlap_ns, 110 * US);
        assert_int_equal(s->processes[d].kernel_ns, 160 * US);
        /* the ins [0,80], then the 5 outs that start after 80 */
        assert_int_equal(s->processes[d].copy_ns, 130 * US);
        assert_int_equal(s->lanes[3 * d + 0].busy_ns, 160 * US);
        assert_int_equal(s->lanes[3 * d + 1].busy_ns, 80 * US);
        assert_int_equal(s->lanes[3 * d + 2].busy_ns, 80 * US);
        assert_int_equal(s->lanes[3 * d + 1].nslices, 8);
    }
    assert_int_equal(s->overlap_ns, 140 * US);
    assert_int_equal(s->nlinks, 4);
    assert_string_equal(s->links[0].link, "GPU0->host");
    assert_string_equal(s->links[2].link, "host->GPU0");
    for (size_t i = 0; i < s->nlinks; i++) {
        assert_int_equal(s->links[i].bytes, 8ull * CHUNK_BYTES);
        assert_int_equal(s->links[i].ncopies, 8);
        assert_int_equal(s->links[i].busy_ns, 80 * US);
    }
    weft__trace_summary_destroy(s);
    weft__trace_view_destroy(v);
    weft__trace_destroy(t);
}

/* ---- weft-trace -------------------------------------------------------- */
static void write_synthetic(const char *path)
{
    weft__trace *t = synthetic_pipeline();

    assert_int_equal(weft__trace_write_file(t, path), 0);
    weft__trace_destroy(t);
}

static void tool_draws_every_lane_and_slice(void **state)
{
    char json[512], svg[512], html[512], out[512], err[512];
    char *text, *stdout_text;
    (void)state;

    if (!tool_path) {
        print_message("skipped: weft-trace was not built\n");
        skip();
    }
    path_in_tmp(json, sizeof json, "pipeline.json");
    path_in_tmp(svg, sizeof svg, "pipeline.svg");
    path_in_tmp(html, sizeof html, "pipeline.html");
    path_in_tmp(out, sizeof out, "tool.out");
    path_in_tmp(err, sizeof err, "tool.err");
    write_synthetic(json);

    assert_int_equal(
        run_cmd((char *const[]){(char *)tool_path, json, "-o", svg, NULL}, out,
                err),
        0);
    text = read_all(svg, NULL);
    assert_true(strncmp(text, "<?xml", 5) == 0);
    assert_non_null(strstr(text, "</svg>"));
    assert_int_equal(count_of(text, "<g class=\"lane\">"), 6);
    assert_int_equal(count_of(text, "<rect class=\"slice "), 48);
    assert_int_equal(count_of(text, "<rect class=\"slice kernel\""), 16);
    assert_int_equal(count_of(text, "<rect class=\"slice h2d\""), 16);
    assert_int_equal(count_of(text, "<line class=\"flow\""), 32);
    assert_int_equal(count_of(text, "class=\"device\""), 2);
    assert_non_null(strstr(text, ">GPU1 D2H</text>"));
    assert_true(count_of(text, "class=\"tick\"") >= 5);
    /* the legend names the three kinds present */
    assert_non_null(strstr(text, ">kernel</text>"));
    assert_non_null(strstr(text, ">d2h</text>"));
    free(text);

    /* the summary on stdout: the hand-counted overlap, bytes per link */
    stdout_text = read_all(out, NULL);
    assert_non_null(strstr(stdout_text, "span 185.000 us"));
    assert_int_equal(count_of(stdout_text, " 110.000 us  ("), 2);
    assert_non_null(strstr(stdout_text, "all devices"));
    assert_non_null(strstr(stdout_text, " 140.000 us  ("));
    assert_non_null(strstr(stdout_text, "host->GPU1"));
    assert_non_null(strstr(stdout_text, "8.0 MiB in 8 copies"));
    assert_non_null(strstr(stdout_text, "GPU0 compute 0"));
    free(stdout_text);

    assert_int_equal(run_cmd((char *const[]){(char *)tool_path, json, "-o",
                                             html, "-q", NULL},
                             out, err),
                     0);
    text = read_all(html, NULL);
    assert_true(strncmp(text, "<!DOCTYPE html>", 15) == 0);
    assert_int_equal(count_of(text, "<rect class=\"slice "), 48);
    assert_non_null(strstr(text, "<td>all devices</td><td>140.000 us</td>"));
    assert_non_null(strstr(text, "</html>"));
    free(text);
    stdout_text = read_all(out, NULL);
    assert_string_equal(stdout_text, ""); /* -q */
    free(stdout_text);
}

static void tool_explains_bad_input(void **state)
{
    char missing[512], bad[512], out[512], err[512], svg[512];
    char *text;
    FILE *f;
    (void)state;

    if (!tool_path) {
        print_message("skipped: weft-trace was not built\n");
        skip();
    }
    path_in_tmp(missing, sizeof missing, "missing.json");
    path_in_tmp(bad, sizeof bad, "bad.json");
    path_in_tmp(out, sizeof out, "bad.out");
    path_in_tmp(err, sizeof err, "bad.err");
    path_in_tmp(svg, sizeof svg, "bad.svg");

    assert_int_equal(
        run_cmd((char *const[]){(char *)tool_path, missing, NULL}, out, err),
        1);
    text = read_all(err, NULL);
    assert_non_null(strstr(text, "missing.json"));
    assert_non_null(strstr(text, "No such file"));
    free(text);

    f = fopen(bad, "w");
    assert_non_null(f);
    fputs("{\"traceEvents\": [\n{\"ph\": \"X\",\n}]}", f);
    assert_int_equal(fclose(f), 0);
    assert_int_equal(
        run_cmd((char *const[]){(char *)tool_path, bad, "-o", svg, NULL}, out,
                err),
        1);
    text = read_all(err, NULL);
    assert_non_null(strstr(text, "bad.json"));
    assert_non_null(strstr(text, "line 3"));
    free(text);
    assert_int_equal(access(svg, F_OK), -1); /* nothing half-written */

    write_synthetic(bad);
    assert_int_equal(run_cmd((char *const[]){(char *)tool_path, bad, "-o",
                                             "timeline.png", NULL},
                             out, err),
                     1);
    assert_int_equal(
        run_cmd((char *const[]){(char *)tool_path, NULL}, out, err), 2);
}

/* ---- the picture, as chromium renders it ------------------------------- */
static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 |
           p[3];
}

typedef struct png_info {
    uint32_t width, height;
    unsigned depth, color;
    unsigned char *idat; /* the concatenated IDAT chunks */
    size_t idat_len;
} png_info;

static void png_read(const char *path, png_info *png)
{
    static const unsigned char magic[8] = {0x89, 'P',  'N',  'G',
                                           '\r', '\n', 0x1a, '\n'};
    size_t len, at = 8;
    unsigned char *data = (unsigned char *)read_all(path, &len);

    memset(png, 0, sizeof *png);
    assert_true(len > 33);
    assert_memory_equal(data, magic, 8);
    assert_memory_equal(data + 12, "IHDR", 4);
    png->width = be32(data + 16);
    png->height = be32(data + 20);
    png->depth = data[24];
    png->color = data[25];
    png->idat = malloc(len);
    assert_non_null(png->idat);
    while (at + 12 <= len) {
        uint32_t n = be32(data + at);

        assert_true(at + 12 + n <= len);
        if (memcmp(data + at + 4, "IDAT", 4) == 0) {
            memcpy(png->idat + png->idat_len, data + at + 8, n);
            png->idat_len += n;
        }
        at += 12 + n;
    }
    free(data);
}

#ifdef WT_HAVE_ZLIB
static int paeth(int a, int b, int c)
{
    int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);

    return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/* Inflate and unfilter an 8-bit RGB or RGBA PNG into rows of pixels. */
static unsigned char *png_pixels(const png_info *png, unsigned *bpp)
{
    size_t stride, raw_len;
    unsigned char *raw, *px;
    uLongf got;

    assert_int_equal(png->depth, 8);
    assert_true(png->color == 2 || png->color == 6);
    *bpp = png->color == 6 ? 4 : 3;
    stride = (size_t)png->width * *bpp;
    raw_len = (stride + 1) * png->height;
    raw = malloc(raw_len);
    px = malloc(stride * png->height);
    assert_true(raw && px);
    got = raw_len;
    assert_int_equal(uncompress(raw, &got, png->idat, png->idat_len), Z_OK);
    assert_int_equal(got, raw_len);
    for (size_t y = 0; y < png->height; y++) {
        const unsigned char *in = raw + y * (stride + 1) + 1;
        unsigned char *row = px + y * stride;
        const unsigned char *up = y ? row - stride : NULL;

        for (size_t x = 0; x < stride; x++) {
            int a = x >= *bpp ? row[x - *bpp] : 0, b = up ? up[x] : 0;
            int c = up && x >= *bpp ? up[x - *bpp] : 0, v = in[x];

            switch (in[-1]) {
            case 0:
                break;
            case 1:
                v += a;
                break;
            case 2:
                v += b;
                break;
            case 3:
                v += (a + b) / 2;
                break;
            case 4:
                v += paeth(a, b, c);
                break;
            default:
                fail_msg("PNG filter %d", in[-1]);
            }
            row[x] = (unsigned char)v;
        }
    }
    free(raw);
    return px;
}

static int near(const unsigned char *p, unsigned rgb)
{
    return abs(p[0] - (int)(rgb >> 16)) <= 3 &&
           abs(p[1] - (int)(rgb >> 8 & 0xff)) <= 3 &&
           abs(p[2] - (int)(rgb & 0xff)) <= 3;
}

/*
 * The lanes as a person sees them: pixels of each kind's colour, and the
 * number of separate bands of rows where the kernel colour appears (the
 * two compute lanes and the legend).
 */
static void check_pixels(const png_info *png)
{
    unsigned bpp;
    unsigned char *px = png_pixels(png, &bpp);
    size_t kernel = 0, h2d = 0, d2h = 0, other = 0, bands = 0;
    int in_band = 0;

    for (size_t y = 0; y < png->height; y++) {
        int row_has_kernel = 0;

        for (size_t x = 0; x < png->width; x++) {
            const unsigned char *p = px + (y * png->width + x) * bpp;

            if (near(p, 0x4c72b0))
                kernel++, row_has_kernel = 1;
            else if (near(p, 0x55a868))
                h2d++;
            else if (near(p, 0xc44e52))
                d2h++;
            else if (!near(p, 0xffffff))
                other++;
        }
        if (row_has_kernel && !in_band)
            bands++;
        in_band = row_has_kernel;
    }
    print_message("pixels: kernel %zu, h2d %zu, d2h %zu, other non-white "
                  "%zu; kernel bands %zu\n",
                  kernel, h2d, d2h, other, bands);
    /* 16 kernels of 20 us over a 185 us axis ~1140 px wide, 16 px high */
    assert_true(kernel > 2 * 1000 * 16 / 2);
    assert_true(h2d > 1000 * 16 / 2);
    assert_true(d2h > 1000 * 16 / 2);
    assert_true(other > 1000); /* text, stripes, axis */
    assert_int_equal(bands, 3);
    free(px);
}
#endif

static int render(const char *url, const char *png, const char *profile)
{
    char shot[600], profile_arg[600], out[512], err[512];

    snprintf(shot, sizeof shot, "--screenshot=%s", png);
    snprintf(profile_arg, sizeof profile_arg, "--user-data-dir=%s", profile);
    path_in_tmp(out, sizeof out, "chromium.out");
    path_in_tmp(err, sizeof err, "chromium.err");
    return run_cmd(
        (char *const[]){"/usr/bin/chromium", "--headless", "--no-sandbox",
                        "--disable-gpu", "--disable-quic", "--no-first-run",
                        "--disable-background-networking",
                        "--disable-component-update", "--disable-sync",
                        "--hide-scrollbars", profile_arg, shot,
                        "--window-size=1400,900", (char *)url, NULL},
        out, err);
}

static void chromium_shows_the_lanes(void **state)
{
    char json[512], html[512], png[512], url[600], profile[512], blank[512];
    char out[512], err[512];
    png_info info;
    struct stat st, st_blank;
    (void)state;

    path_in_tmp(json, sizeof json, "render.json");
    path_in_tmp(html, sizeof html, "render.html");
    path_in_tmp(png, sizeof png, "render.png");
    path_in_tmp(blank, sizeof blank, "blank.png");
    path_in_tmp(profile, sizeof profile, "chromium-profile");
    path_in_tmp(out, sizeof out, "render.out");
    path_in_tmp(err, sizeof err, "render.err");
    write_synthetic(json);
    assert_int_equal(run_cmd((char *const[]){(char *)tool_path, json, "-o",
                                             html, "-q", NULL},
                             out, err),
                     0);
    snprintf(url, sizeof url, "file://%s", html);
    assert_int_equal(render(url, png, profile), 0);
    assert_int_equal(stat(png, &st), 0);
    png_read(png, &info);
    assert_int_equal(info.width, 1400);
    assert_int_equal(info.height, 900);
    /* a blank page of the same size compresses to far less */
    assert_int_equal(render("about:blank", blank, profile), 0);
    assert_int_equal(stat(blank, &st_blank), 0);
    print_message("render.png %lld bytes, blank %lld bytes\n",
                  (long long)st.st_size, (long long)st_blank.st_size);
    assert_true(st.st_size > 4 * st_blank.st_size);
#ifdef WT_HAVE_ZLIB
    check_pixels(&info);
#endif
    free(info.idat);
}

/* ---- main -------------------------------------------------------------- */
static int remove_entry(const char *path, const struct stat *st, int flag,
                        struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest unit[] = {
        cmocka_unit_test(roundtrip_keeps_everything),
        cmocka_unit_test(json_text_is_escaped),
        cmocka_unit_test(reader_rejects_bad_input),
        cmocka_unit_test(reader_takes_foreign_traces),
        cmocka_unit_test(allocation_failures_are_clean),
        cmocka_unit_test(concurrent_writers_lose_nothing),
        cmocka_unit_test(summary_matches_the_hand_count),
        cmocka_unit_test(tool_draws_every_lane_and_slice),
        cmocka_unit_test(tool_explains_bad_input),
    };
    const struct CMUnitTest rendering[] = {
        cmocka_unit_test(chromium_shows_the_lanes),
    };
    const char *base = getenv("TMPDIR");
    int render_mode = argc > 2 && strcmp(argv[2], "render") == 0;
    int own = argc < 3 ? argc - 1 : 2; /* TOOL MODE, then the case glob */
    int rc;

    tool_path = argc > 1 && access(argv[1], X_OK) == 0 ? argv[1] : NULL;
    if (render_mode && !tool_path) {
        printf("skipped: weft-trace was not built\n");
        return 77;
    }
    if (render_mode && access("/usr/bin/chromium", X_OK) != 0) {
        printf("skipped: no chromium\n");
        return 77;
    }
    snprintf(tmpdir, sizeof tmpdir, "%s/weft-trace-test-XXXXXX",
             base && *base ? base : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 1;
    }
    rc = render_mode
             ? wt_run_group(argc - own, argv + own, rendering, NULL, NULL)
             : wt_run_group(argc - own, argv + own, unit, NULL, NULL);
    /* our own directory, made above by mkdtemp; kept when a test failed */
    if (rc == 0 && !getenv("WEFT_KEEP_TEST_FILES")) {
        if (nftw(tmpdir, remove_entry, 16, FTW_DEPTH | FTW_PHYS) != 0)
            fprintf(stderr, "could not remove %s\n", tmpdir);
    } else {
        fprintf(stderr, "files kept in %s\n", tmpdir);
    }
    return rc;
}
