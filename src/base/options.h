/*
 * The environment: every WEFT_* variable weft reads, declared once.
 *
 * A snapshot of the environment is read and validated by
 * weft__options_load (weft_runtime_create calls it: a bad value fails the
 * creation with WEFT_EINVAL naming the variable, its value and what is
 * accepted) or, where a getter is called before any load, by the getter
 * itself (a bad value is then logged as an error and the variable reads
 * as unset). The getters read the current snapshot: the last one loaded
 * without error. An empty value is a bad value for every variable: unset
 * a variable to get its default.
 */
#ifndef WEFT_BASE_OPTIONS_H
#define WEFT_BASE_OPTIONS_H

#include "base.h"

/*
 * X(ID, TYPE, LO, HI, ACCEPT, DEFAULT, HELP): the variable WEFT_<ID>.
 *   TYPE     BOOL (1 0 on off yes no true false), UINT (a whole number from
 *            LO to HI), SIZE (bytes, weft__parse_size), ENUM (one of the
 *            words of ACCEPT, separated by '|'), TEXT (checked by its
 *            reader; ACCEPT says what it takes), PATH (a file name).
 *   DEFAULT  the value when unset, written as the variable would be; NULL
 *            where it depends on the machine or on weft_runtime_options
 *            (HELP says what).
 * Enum words are matched without regard to case, as are bool words. The
 * words of PLACE, PLACE_SCOPE and LOG are in the order of weft_place_policy
 * (from WEFT_PLACE_SINGLE), weft_place_scope (from WEFT_PLACE_SCOPE_DRIVER)
 * and weft_log_level: their readers add the index to the first.
 */
#define WEFT__OPTIONS(X)                                                       \
    X(DEVICES, TEXT, 0, 0,                                                     \
      "a comma-separated list of DRIVER, DRIVER:N or DRIVER:* (DRIVER: "       \
      "cuda, opencl, host or sim), or all",                                    \
      "cuda,opencl,host",                                                      \
      "the devices the runtime opens (weft_runtime_options.devices)")          \
    X(SIM, TEXT, 0, 0,                                                         \
      "key=value pairs separated by commas (README.md, \"The sim driver\")",   \
      NULL,                                                                    \
      "the simulated machine (weft_runtime_options.sim_config); default: "     \
      "2 simulated H200s")                                                     \
    X(HOST_DEVICES, UINT, 1, 256, NULL, "1",                                   \
      "host-driver devices, each with its own memory")                         \
    X(HOST_THREADS, UINT, 1, 4096, NULL, NULL,                                 \
      "threads per host device; default: the machine's cores")                 \
    X(HOST_WORKERS, UINT, 0, 64, NULL, NULL,                                   \
      "threads that run map nodes and host tasks, near their device; 0: "      \
      "the issuing thread runs them; default: the cores, at most 64")          \
    X(DEVICE_MEM_LIMIT, SIZE, 0, 0, NULL, "0",                                 \
      "most device memory held per device for buffer replicas, in 256-byte "   \
      "granules (see Eviction); 0: the device's memory")                       \
    X(PLACE, ENUM, 0, 0, "single|round-robin|locality|heft", "heft",           \
      "how kernel nodes that name no device are placed")                       \
    X(PLACE_SCOPE, ENUM, 0, 0, "driver|all", "driver",                         \
      "the devices placement chooses among: the default device's driver, "     \
      "or every driver")                                                       \
    X(NATIVE_GRAPHS, BOOL, 0, 0, NULL, NULL,                                   \
      "relaunches as native graphs: 0 never, 1 also on CPU devices; "          \
      "default: on devices that gain from them")                               \
    X(CHECK_GRAPHS, BOOL, 0, 0, NULL, "0",                                     \
      "check every host native graph made with named edges: each edge "        \
      "between two kernels of the plan must be a path in it, else abort "      \
      "(slow; for tests)")                                                     \
    X(EXEC_ORDER, ENUM, 0, 0, "earliest|latest", "earliest",                   \
      "which ready node is issued first: the earliest added, or the latest "   \
      "(tests: any order the edges allow gives the same result)")              \
    X(CACHE, BOOL, 0, 0, NULL, "1",                                            \
      "the on-disk cache of compiled kernels and measured links")              \
    X(CACHE_DIR, PATH, 0, 0, "a directory", NULL,                              \
      "where the cache lives; default: $XDG_CACHE_HOME/weft, else "            \
      "$HOME/.cache/weft")                                                     \
    X(CUDA_LIBRARY, PATH, 0, 0, "a library name or path for dlopen",           \
      "libcuda.so.1", "the CUDA driver library")                               \
    X(OPENCL_LIBRARY, PATH, 0, 0, "a library name or path for dlopen",         \
      "libOpenCL.so.1", "the OpenCL ICD loader")                               \
    X(OPENCL_POCL5, BOOL, 0, 0, NULL, "0",                                     \
      "1: use PoCL 5's devices also where another OpenCL platform has "        \
      "devices (PoCL 5 was seen to abort the process there; by default they "  \
      "are left out)")                                                         \
    X(OPENCL_SVM, BOOL, 0, 0, NULL, NULL,                                      \
      "device memory of OpenCL devices as SVM, kernel arguments at offsets "   \
      "as SVM pointers instead of sub-buffers: 0 never, 1 wherever the "       \
      "device has coarse-grained SVM; default: on NVIDIA's OpenCL only")       \
    X(ENGINE_THREADS, UINT, 1, 1024, NULL, NULL,                               \
      "threads that run launches, shared by every executable graph; "          \
      "default: max(4, cores, 2 x devices)")                                   \
    X(MPI_IPC, BOOL, 0, 0, NULL, "1",                                          \
      "libweft_mpi: a transfer between two ranks of one machine whose data "   \
      "is on CUDA GPUs moves device to device (CUDA IPC); 0: through host "    \
      "memory and MPI")                                                        \
    X(MPI_CUDA_AWARE, ENUM, 0, 0, "auto|1|0|on|off|yes|no|true|false", "auto", \
      "libweft_mpi: whether MPI moves bytes to and from CUDA device memory "   \
      "itself; auto: what MPI says (MPIX_Query_cuda_support); a transfer "     \
      "between two ranks that both are, each with one CUDA device and not "    \
      "moving by CUDA IPC, goes device to device through MPI")                 \
    X(TRACE, PATH, 0, 0, "a file name", NULL,                                  \
      "write a Chrome trace / Perfetto JSON of what ran to this file when "    \
      "the runtime is destroyed (weft_runtime_options.trace_file)")            \
    X(STATS, BOOL, 0, 0, NULL, "0",                                            \
      "print what moved where when the runtime is destroyed")                  \
    X(LOG, ENUM, 0, 0, "trace|debug|info|warn|error|off", "warn",              \
      "the least severe message logged")

typedef enum weft__opt {
#define WEFT__OPT_ENUM(id, type, lo, hi, accept, dflt, help) WEFT__OPT_##id,
    WEFT__OPTIONS(WEFT__OPT_ENUM)
#undef WEFT__OPT_ENUM
        WEFT__OPT_COUNT
} weft__opt;

typedef enum weft__opt_type {
    WEFT__OPT_BOOL,
    WEFT__OPT_UINT,
    WEFT__OPT_SIZE,
    WEFT__OPT_ENUM,
    WEFT__OPT_TEXT,
    WEFT__OPT_PATH,
} weft__opt_type;

/*
 * Read every WEFT_* variable now and make the result current. A bad value
 * returns WEFT_EINVAL with a detail naming each bad variable ("WEFT_HOST_
 * DEVICES=abc: expected a whole number from 1 to 256"); the current
 * snapshot is then left as it was. A WEFT_* variable that names no option
 * is logged as a warning (once per name) naming the closest one. Applies
 * WEFT_LOG to the log level (unless weft_log_set_level was called).
 * Thread-safe.
 */
int weft__options_load(void);

/*
 * The getters: true if the variable is set in the current snapshot, and
 * *out its value; false if unset, and *out the table's DEFAULT, or left
 * as it was where DEFAULT is NULL. Where weft_runtime_options has a say,
 * the environment wins, then the option:
 *     if (!weft__opt_uint(WEFT__OPT_HOST_DEVICES, &n)) n = o.host_devices;
 * The type must be the variable's (an assertion). Strings stay valid until
 * the process exits. Thread-safe and cheap (one atomic load).
 */
bool weft__opt_bool(weft__opt id, bool *out);
bool weft__opt_uint(weft__opt id, unsigned *out);
bool weft__opt_size(weft__opt id, uint64_t *out);
/* The index of the word in ACCEPT. */
bool weft__opt_enum(weft__opt id, unsigned *out);
/* TEXT and PATH. */
bool weft__opt_str(weft__opt id, const char **out);

/* ---- the table, for weft-info --options and tests ------------------- */
typedef struct weft__opt_info {
    const char *name; /* "WEFT_DEVICES" */
    weft__opt_type type;
    unsigned lo, hi;    /* UINT */
    const char *accept; /* see WEFT__OPTIONS */
    const char *dflt;   /* NULL: see help */
    const char *help;
} weft__opt_info;

const weft__opt_info *weft__opt_info_of(weft__opt id);
/* What a variable accepts, in words ("a whole number from 1 to 256"). */
void weft__opt_accepted(weft__opt id, char *buf, size_t size);
/* The raw value in the current snapshot; NULL if unset. */
const char *weft__opt_raw(weft__opt id);
/*
 * Check one value for one variable as a load would: 0, or WEFT_EINVAL
 * with the detail a load gives. value NULL: unset (always good).
 */
int weft__opt_check(weft__opt id, const char *value);
/* The known variable nearest to name (edit distance), e.g. for a typo. */
weft__opt weft__opt_closest(const char *name);

#endif /* WEFT_BASE_OPTIONS_H */
