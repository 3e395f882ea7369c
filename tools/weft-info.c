/*
 * weft-info: the drivers and devices weft finds, their properties, which
 * pairs can copy peer-to-peer, and where each sits on the machine.
 *
 *     weft-info [--json] [--devices LIST] [--calibrate]
 *     weft-info --options [--markdown]
 *
 * --calibrate measures the copy links of every device with real copies
 * (src/sched/calibrate.h), prints them and stores them in the cache that
 * placement reads. --options lists the WEFT_* variables from weft's table
 * (src/base/options.h) with their values here; --markdown gives the
 * README's table. (So weft-info links the static library and uses weft's
 * internal headers.)
 */
#include <weft.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/options.h"
#include "sched/calibrate.h"

static const char *type_name(weft_device_type t)
{
    switch (t) {
    case WEFT_DEVICE_GPU:
        return "GPU";
    case WEFT_DEVICE_CPU:
        return "CPU";
    case WEFT_DEVICE_ACCELERATOR:
        return "accelerator";
    case WEFT_DEVICE_SIMULATED:
        return "simulated GPU";
    }
    return "unknown";
}

static void human_bytes(char *buf, size_t n, unsigned long long b)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    unsigned u = 0;

    while (v >= 1024 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024;
        u++;
    }
    snprintf(buf, n, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

/* A JSON string literal of s (escapes quotes, backslashes, controls). */
static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; s && *s; s++) {
        unsigned char c = (unsigned char)*s;

        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

static int get_info(weft_runtime *rt, unsigned i, weft_device_info *info)
{
    memset(info, 0, sizeof *info);
    info->size = sizeof *info;
    return weft_device_get_info(weft_runtime_device(rt, i), info);
}

static int peer(weft_runtime *rt, unsigned a, unsigned b)
{
    int can = 0;

    if (weft_device_can_access_peer(weft_runtime_device(rt, a),
                                    weft_runtime_device(rt, b), &can) < 0)
        return 0;
    return can;
}

static void print_human(weft_runtime *rt)
{
    unsigned n = weft_runtime_device_count(rt);
    weft_device_info info;
    char b1[32], b2[32], b3[32];

    printf("weft %s\n\nDrivers:\n", weft_version());
    for (unsigned d = 0; d < weft_runtime_driver_count(rt); d++) {
        const char *name, *reason;
        unsigned nd;
        int status;

        weft_runtime_driver(rt, d, &name, &nd, &status, &reason);
        if (nd)
            printf("  %-7s %u device%s\n", name, nd, nd == 1 ? "" : "s");
        else
            printf("  %-7s none (%s)\n", name, reason);
    }
    printf("\nDevices:\n");
    for (unsigned i = 0; i < n; i++) {
        if (get_info(rt, i, &info) < 0)
            continue;
        human_bytes(b1, sizeof b1, info.global_mem);
        human_bytes(b2, sizeof b2, info.max_alloc);
        human_bytes(b3, sizeof b3, info.local_mem);
        printf("  [%u] %s:%u  %s\n", i, info.driver, info.driver_index,
               info.name);
        printf("      type %s, vendor %s, platform %s, driver %s\n",
               type_name(info.type), info.vendor, info.platform,
               info.driver_version);
        printf("      memory %s (largest allocation %s), local %s per group\n",
               b1, b2, b3);
        printf("      %u compute units, groups up to %u items, %u copy "
               "engine%s, argument offsets aligned to %u bytes\n",
               info.compute_units, info.max_group_size, info.copy_engines,
               info.copy_engines == 1 ? "" : "s",
               info.arg_offset_align ? info.arg_offset_align : 1);
        if (info.cc_major)
            printf("      compute capability %d.%d\n", info.cc_major,
                   info.cc_minor);
        printf("      capabilities:%s%s%s%s%s%s%s\n",
               info.concurrent_kernels ? " concurrent-kernels" : "",
               info.timing_events ? " timing-events" : "",
               info.pinned_host ? " pinned-host" : "",
               info.host_register ? " host-register" : "",
               info.unified_memory ? " unified-memory" : "",
               info.managed_memory ? " managed-memory" : "",
               info.svm ? " svm" : "");
        printf("      queue priorities %d..%d\n", info.queue_priority_low,
               info.queue_priority_high);
        printf("      topology: PCI %s, NUMA node %s%d, cores %s (%u)\n",
               info.pci_bus_id[0] ? info.pci_bus_id : "-",
               info.numa_node < 0 ? "unknown " : "",
               info.numa_node < 0 ? -1 : info.numa_node, info.cpuset,
               info.ncores);
    }
    if (n > 1) {
        printf("\nPeer access (P = direct copies between the pair; - = "
               "through the host):\n       ");
        for (unsigned j = 0; j < n; j++)
            printf(" %4u", j);
        printf("\n");
        for (unsigned i = 0; i < n; i++) {
            printf("  %4u ", i);
            for (unsigned j = 0; j < n; j++)
                printf(" %4s", i == j ? "X" : peer(rt, i, j) ? "P" : "-");
            printf("\n");
        }
    }
    if (n == 0)
        printf("  none\n");
}

static void print_json(weft_runtime *rt)
{
    unsigned n = weft_runtime_device_count(rt);
    weft_device_info info;

    printf("{\n  \"version\": ");
    json_str(stdout, weft_version());
    printf(",\n  \"drivers\": [");
    for (unsigned d = 0; d < weft_runtime_driver_count(rt); d++) {
        const char *name, *reason;
        unsigned nd;
        int status;

        weft_runtime_driver(rt, d, &name, &nd, &status, &reason);
        printf("%s\n    {\"name\": ", d ? "," : "");
        json_str(stdout, name);
        printf(", \"devices\": %u, \"status\": ", nd);
        json_str(stdout, nd ? "ok" : weft_err_name(status));
        printf(", \"reason\": ");
        json_str(stdout, nd ? "" : reason);
        printf("}");
    }
    printf("\n  ],\n  \"devices\": [");
    for (unsigned i = 0; i < n; i++) {
        if (get_info(rt, i, &info) < 0)
            continue;
        printf("%s\n    {\"index\": %u, \"driver\": ", i ? "," : "", i);
        json_str(stdout, info.driver);
        printf(", \"driver_index\": %u, \"name\": ", info.driver_index);
        json_str(stdout, info.name);
        printf(", \"type\": ");
        json_str(stdout, type_name(info.type));
        printf(", \"vendor\": ");
        json_str(stdout, info.vendor);
        printf(", \"platform\": ");
        json_str(stdout, info.platform);
        printf(", \"driver_version\": ");
        json_str(stdout, info.driver_version);
        printf(",\n     \"global_mem\": %llu, \"max_alloc\": %llu, "
               "\"local_mem\": %llu, \"compute_units\": %u, "
               "\"max_group_size\": %u, \"arg_offset_align\": %u, "
               "\"copy_engines\": %u,\n     "
               "\"concurrent_kernels\": %u, \"timing_events\": %u, "
               "\"pinned_host\": %u, \"host_register\": %u, "
               "\"unified_memory\": %u, \"managed_memory\": %u, \"svm\": %u,"
               "\n     \"queue_priority_low\": %d, \"queue_priority_high\": "
               "%d, \"cc\": \"%d.%d\", \"pci_bus_id\": ",
               (unsigned long long)info.global_mem,
               (unsigned long long)info.max_alloc,
               (unsigned long long)info.local_mem, info.compute_units,
               info.max_group_size,
               info.arg_offset_align ? info.arg_offset_align : 1,
               info.copy_engines, info.concurrent_kernels, info.timing_events,
               info.pinned_host, info.host_register, info.unified_memory,
               info.managed_memory, info.svm, info.queue_priority_low,
               info.queue_priority_high, info.cc_major, info.cc_minor);
        json_str(stdout, info.pci_bus_id);
        printf(", \"numa_node\": %d, \"cpuset\": ", info.numa_node);
        json_str(stdout, info.cpuset);
        printf(", \"ncores\": %u,\n     \"peers\": [", info.ncores);
        for (unsigned j = 0, first = 1; j < n; j++)
            if (j != i && peer(rt, i, j)) {
                printf("%s%u", first ? "" : ", ", j);
                first = 0;
            }
        printf("]}");
    }
    printf("\n  ]\n}\n");
}

/* One line rewritten in place; only called when stderr is a terminal. */
static void calibrate_progress(void *user, unsigned done, unsigned total,
                               const char *what)
{
    (void)user;
    fprintf(stderr, "\r\033[K  calibrating [%u/%u] %s", done, total, what);
    if (done == total)
        fputc('\n', stderr);
    fflush(stderr);
}

static void link_cell(const weft__link *k)
{
    printf("  %8.2f GB/s %7.2f us", k->bw / 1e9, k->lat_ns / 1e3);
}

static int calibrate(weft_runtime *rt)
{
    weft__calibrate_opts o = {0};
    weft__links l;
    char path[4200];
    int rc;

    if (isatty(fileno(stderr)) && isatty(fileno(stdout)))
        o.progress = calibrate_progress;
    rc = weft__links_measure(rt, &o, &l);
    if (rc < 0)
        return rc;
    printf("Copy links (bandwidth, latency; from the medians of repeated "
           "copies of 4 KiB and 64 MiB):\n");
    printf("  %-28s%26s%26s%26s\n", "device", "host to device",
           "device to host", "within device");
    for (unsigned d = 0; d < l.n; d++) {
        weft_device_info info = {.size = sizeof info};
        char name[29];

        if (weft_device_get_info(weft_runtime_device(rt, d), &info) < 0)
            info.name = "?";
        snprintf(name, sizeof name, "[%u] %s", d, info.name);
        printf("  %-28s", name);
        link_cell(&l.h2d[d]);
        link_cell(&l.d2h[d]);
        link_cell(&l.d2d[d]);
        printf("%s\n",
               l.source[d] == WEFT__LINK_SIM ? "  (sim: configured)" : "");
    }
    if (l.n > 1) {
        printf("\nBetween devices (GB/s; * through the host):\n      ");
        for (unsigned b = 0; b < l.n; b++)
            printf(" %8u", b);
        printf("\n");
        for (unsigned a = 0; a < l.n; a++) {
            printf("  %4u", a);
            for (unsigned b = 0; b < l.n; b++) {
                const weft__link *k = &l.peer[a * l.n + b];

                if (a == b)
                    printf(" %8s", "-");
                else
                    printf(" %7.1f%c", k->bw / 1e9,
                           l.direct[a * l.n + b] ? ' ' : '*');
            }
            printf("\n");
        }
    }
    rc = weft__links_store(rt, &l);
    if (rc == 0 && weft__links_cache_path(rt, path, sizeof path) == 0)
        printf("\nStored in %s\n", path);
    else
        printf("\nNot stored: %s\n", weft_last_error());
    weft__links_free(&l);
    return 0;
}

/* ---- the WEFT_* variables ---------------------------------------------- */

/* Every variable: its value here (checked), what it takes, its default. */
static int print_options(void)
{
    int bad = 0;

    (void)weft__options_load(); /* warns of unknown WEFT_* names */

    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        const weft__opt_info *o = weft__opt_info_of((weft__opt)i);
        const char *v = getenv(o->name);
        char accepted[512];

        weft__opt_accepted((weft__opt)i, accepted, sizeof accepted);
        if (!v)
            printf("%s (unset)\n", o->name);
        else
            printf("%s=%s\n", o->name, v);
        if (weft__opt_check((weft__opt)i, v) < 0) {
            printf("    BAD: %s\n", weft_last_error());
            bad = 1;
        }
        printf("    %s\n    accepts: %s%s\n", o->help,
               o->type == WEFT__OPT_ENUM ? "one of " : "", accepted);
        if (o->dflt)
            printf("    default: %s\n", o->dflt);
    }
    return bad;
}

/* The same as a Markdown table, without the values: the README's. */
static void print_options_markdown(void)
{
    printf("| variable | accepts | default | meaning |\n|---|---|---|---|\n");
    for (unsigned i = 0; i < WEFT__OPT_COUNT; i++) {
        const weft__opt_info *o = weft__opt_info_of((weft__opt)i);
        char accepted[512];

        weft__opt_accepted((weft__opt)i, accepted, sizeof accepted);
        printf("| `%s` | %s%s | %s%s%s | %s |\n", o->name,
               o->type == WEFT__OPT_ENUM ? "one of " : "", accepted,
               o->dflt ? "`" : "", o->dflt ? o->dflt : "see meaning",
               o->dflt ? "`" : "", o->help);
    }
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: weft-info [--json] [--devices LIST] [--calibrate]\n"
            "       weft-info --options [--markdown]\n"
            "  --json          machine-readable output\n"
            "  --calibrate     measure copy bandwidths and latencies, print\n"
            "                  them and cache them for placement\n"
            "  --devices LIST  which devices, e.g. all, sim, opencl:1,cuda:*\n"
            "                  (default: all; WEFT_DEVICES overrides)\n"
            "  --options       the WEFT_* environment variables: value here,\n"
            "                  what each accepts, default, meaning\n"
            "  --markdown      with --options: a Markdown table, no values\n");
}

int main(int argc, char **argv)
{
    weft_runtime_options opts = WEFT_RUNTIME_OPTIONS_INIT;
    weft_runtime *rt;
    int json = 0, cal = 0, options = 0, markdown = 0, rc;

    opts.devices = "all";
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--calibrate") == 0) {
            cal = 1;
        } else if (strcmp(argv[i], "--options") == 0) {
            options = 1;
        } else if (strcmp(argv[i], "--markdown") == 0) {
            markdown = 1;
        } else if (strcmp(argv[i], "--devices") == 0 && i + 1 < argc) {
            opts.devices = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    if (markdown && !options) {
        usage(stderr);
        return 2;
    }
    if (options) {
        if (markdown)
            print_options_markdown();
        return markdown ? 0 : print_options();
    }
    rc = weft_runtime_create(&rt, &opts);
    if (rc < 0) {
        fprintf(stderr, "weft-info: %s: %s\n", weft_strerror(rc),
                weft_last_error());
        return 1;
    }
    if (cal) {
        rc = calibrate(rt);
        if (rc < 0)
            fprintf(stderr, "weft-info: calibration: %s: %s\n",
                    weft_strerror(rc), weft_last_error());
        weft_runtime_destroy(rt);
        return rc < 0 ? 1 : 0;
    }
    if (json)
        print_json(rt);
    else
        print_human(rt);
    weft_runtime_destroy(rt);
    return 0;
}
