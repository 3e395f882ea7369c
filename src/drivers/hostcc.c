/* Portable kernels compiled for host and sim devices (see hostcc.h). */
#include "hostcc.h"

#include "../base/os.h"

#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

/* The table entry the translator emits (portable.c, weft__prelude_host). */
typedef struct weft__cc_kernel {
    const char *name;
    void (*fn)(const weft_host_group *, void *const *);
    unsigned nparams;
    const int *params;
    const unsigned long *sizes;
} weft__cc_kernel;

struct weft__hostcc_lib {
    void *dl;
    void *so; /* the shared object's bytes, for the cache */
    size_t so_size;
    size_t n;
    weft_host_kernel *table;
    weft_param_type *types; /* every kernel's, one after the other */
    size_t *sizes;
};

static long weft__hostcc_runs;

long weft__hostcc_compiles(void)
{
    return __atomic_load_n(&weft__hostcc_runs, __ATOMIC_RELAXED);
}

/* $CC split at blanks into words (at most max - 1, NULL-terminated). */
static int weft__cc_words(char *cmd, size_t size, char **words, unsigned max)
{
    const char *cc = getenv("CC");
    unsigned n = 0;

    snprintf(cmd, size, "%s", cc && *cc ? cc : "cc");
    for (char *p = cmd; *p && n + 1 < max;) {
        while (*p == ' ' || *p == '\t')
            *p++ = '\0';
        if (!*p)
            break;
        words[n++] = p;
        while (*p && *p != ' ' && *p != '\t')
            p++;
    }
    words[n] = NULL;
    return (int)n;
}

/* The executable file that name runs (PATH searched if it has no '/'). */
static int weft__cc_resolve(const char *name, char *path, size_t size)
{
    const char *dirs = getenv("PATH");

    if (strchr(name, '/')) {
        snprintf(path, size, "%s", name);
        return access(path, X_OK) == 0 ? 0 : -1;
    }
    for (const char *d = dirs ? dirs : "/usr/bin:/bin"; d;) {
        const char *colon = strchr(d, ':');
        int len = colon ? (int)(colon - d) : (int)strlen(d);

        if (snprintf(path, size, "%.*s/%s", len, len ? d : ".", name) <
                (int)size &&
            access(path, X_OK) == 0)
            return 0;
        d = colon ? colon + 1 : NULL;
    }
    return -1;
}

/* The compiler's words and file; WEFT_ENOTSUP naming what was tried. */
static int weft__cc_find(char *cmd, size_t size, char **words, unsigned max,
                         char *path, size_t psize)
{
    if (weft__cc_words(cmd, size, words, max) < 1)
        return weft__error(WEFT_ENOTSUP,
                           "host: no C compiler for portable kernels: CC is "
                           "blank (set CC to a C compiler)");
    if (weft__cc_resolve(words[0], path, psize) < 0)
        return weft__error(
            WEFT_ENOTSUP,
            "host: no C compiler for portable kernels: %s%s %s (set CC to a "
            "C compiler)",
            getenv("CC") && *getenv("CC") ? "CC=" : "cc (CC is not set)",
            getenv("CC") && *getenv("CC") ? words[0] : "",
            strchr(words[0], '/') ? "is not an executable file"
                                  : "is no command on PATH");
    return 0;
}

int weft__hostcc_identity(char *buf, size_t size)
{
    char cmd[1024], path[4096], *words[64];
    struct stat st;
    int rc;

    if ((rc = weft__cc_find(cmd, sizeof cmd, words, 64, path, sizeof path)) < 0)
        return rc;
    if (stat(path, &st) < 0)
        return weft__error(WEFT_ENOTSUP, "host: cannot stat the C compiler %s",
                           path);
    snprintf(buf, size, "%s|%s|%lld|%lld.%09ld|",
             getenv("CC") ? getenv("CC") : "cc", path, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec);
    return 0;
}

static const char *weft__tmpdir(void)
{
    const char *t = getenv("TMPDIR");

    return t && *t ? t : "/tmp";
}

/* Read a whole file into a weft__malloc'd buffer (NUL-terminated). */
static int weft__read_file(const char *path, char **bytes, size_t *size)
{
    FILE *f = fopen(path, "rb");
    char *p = NULL;
    long n;

    if (!f)
        return -1;
    if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 &&
        fseek(f, 0, SEEK_SET) == 0 && (p = weft__malloc((size_t)n + 1)) &&
        fread(p, 1, (size_t)n, f) == (size_t)n) {
        fclose(f);
        p[n] = '\0';
        *bytes = p;
        *size = (size_t)n;
        return 0;
    }
    fclose(f);
    weft__free(p);
    return -1;
}

static int weft__write_file(const char *path, const void *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    int ok;

    if (!f)
        return -1;
    ok = fwrite(bytes, 1, size, f) == size;
    ok = fclose(f) == 0 && ok;
    return ok ? 0 : -1;
}

/*
 * Compile C text into a shared object: *so its bytes, *log the compiler's
 * output (NULL if none). In a private temporary directory, removed after.
 */
static int weft__cc_compile(const char *text, const char *options,
                            const char *name, void **so, size_t *size,
                            char **log)
{
    enum { MAXW = 96 };
    char cmd[1024], path[4096], *words[MAXW], dir[4096], src[4200], out[4200],
        logf[4200], opts[2048], *argv[MAXW + 16];
    posix_spawn_file_actions_t fa;
    char *logtext = NULL, *bytes = NULL;
    size_t loglen = 0, n;
    unsigned argc = 0;
    int nw, rc, status = 0;
    pid_t pid;

    *log = NULL;
    if ((rc = weft__cc_find(cmd, sizeof cmd, words, MAXW, path, sizeof path)) <
        0)
        return rc;
    nw = 0;
    while (words[nw])
        nw++;
    snprintf(dir, sizeof dir, "%s/weft-cc-XXXXXX", weft__tmpdir());
    if (!mkdtemp(dir))
        return weft__error(WEFT_EIO, "host: cannot make a directory in %s: %s",
                           weft__tmpdir(), strerror(errno));
    snprintf(src, sizeof src, "%s/kernels.c", dir);
    snprintf(out, sizeof out, "%s/kernels.so", dir);
    snprintf(logf, sizeof logf, "%s/log", dir);
    if (weft__write_file(src, text, strlen(text)) < 0) {
        rc = weft__error(WEFT_EIO, "host: cannot write %s", src);
        goto done;
    }
    argv[argc++] = path;
    for (int i = 1; i < nw; i++)
        argv[argc++] = words[i];
    argv[argc++] = "-std=gnu11";
    argv[argc++] = "-O2";
    argv[argc++] = "-fPIC";
    argv[argc++] = "-shared";
    argv[argc++] = "-o";
    argv[argc++] = out;
    argv[argc++] = src;
    /* -D, -U and -I words of the options; OpenCL's own do not apply. */
    snprintf(opts, sizeof opts, "%s", options ? options : "");
    for (char *save = NULL, *w = strtok_r(opts, " \t", &save);
         w && argc < MAXW + 14; w = strtok_r(NULL, " \t", &save))
        if (!strncmp(w, "-D", 2) || !strncmp(w, "-U", 2) ||
            !strncmp(w, "-I", 2))
            argv[argc++] = w;
    argv[argc++] = "-lm";
    argv[argc] = NULL;
    if (posix_spawn_file_actions_init(&fa) != 0) {
        rc = weft__error(WEFT_ENOMEM, "host: cannot run the C compiler");
        goto done;
    }
    posix_spawn_file_actions_addopen(&fa, 1, logf, O_WRONLY | O_CREAT | O_TRUNC,
                                     0600);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
    __atomic_add_fetch(&weft__hostcc_runs, 1, __ATOMIC_RELAXED);
    weft__debug("hostcc", "compiling %s with %s", name, path);
    rc = posix_spawn(&pid, path, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) {
        rc = weft__error(WEFT_ENOTSUP, "host: cannot run the C compiler %s: %s",
                         path, strerror(rc));
        goto done;
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (weft__read_file(logf, &logtext, &loglen) == 0 && loglen == 0) {
        weft__free(logtext);
        logtext = NULL;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
        weft__read_file(out, &bytes, &n) < 0) {
        rc = weft__error(WEFT_EBUILD, "host: %s failed to compile %s:\n%s",
                         path, name, logtext ? logtext : "(no output)");
        weft__free(logtext);
        goto done;
    }
    *so = bytes;
    *size = n;
    *log = logtext;
    rc = 0;
done:
    unlink(src);
    unlink(out);
    unlink(logf);
    rmdir(dir);
    return rc;
}

void weft__hostcc_close(weft__hostcc_lib *lib)
{
    if (!lib)
        return;
    weft__dl_close(lib->dl);
    weft__free(lib->so);
    weft__free(lib->table);
    weft__free(lib->types);
    weft__free(lib->sizes);
    weft__free(lib);
}

/* dlopen the bytes of lib->so through a temporary file; read its table. */
static int weft__cc_load(weft__hostcc_lib *lib, const char *name)
{
    char path[4200];
    const weft__cc_kernel *ks;
    const unsigned *nk, *abi;
    size_t total = 0, at = 0;
    int fd, rc;

    snprintf(path, sizeof path, "%s/weft-so-XXXXXX", weft__tmpdir());
    fd = mkstemp(path);
    if (fd < 0)
        return weft__error(WEFT_EIO, "host: cannot make a file in %s: %s",
                           weft__tmpdir(), strerror(errno));
    close(fd);
    if (weft__write_file(path, lib->so, lib->so_size) < 0) {
        unlink(path);
        return weft__error(WEFT_EIO, "host: cannot write %s", path);
    }
    rc = weft__dl_open(path, "hostcc.dlopen", &lib->dl);
    unlink(path); /* the mapping stays */
    if (rc < 0)
        return weft__error_prefix(WEFT_EBUILD, "host: cannot load %s", name);
    ks = weft__dl_sym(lib->dl, "weft__cc_kernels", NULL);
    nk = weft__dl_sym(lib->dl, "weft__cc_nkernels", NULL);
    abi = weft__dl_sym(lib->dl, "weft__cc_abi", NULL);
    if (!ks || !nk || !abi || *abi != WEFT__HOSTCC_ABI)
        return weft__error(WEFT_EBUILD,
                           "host: %s is not a portable module of this weft",
                           name);
    lib->n = *nk;
    for (size_t i = 0; i < lib->n; i++)
        total += ks[i].nparams;
    lib->table = weft__calloc(lib->n ? lib->n : 1, sizeof *lib->table);
    lib->types = weft__calloc(total ? total : 1, sizeof *lib->types);
    lib->sizes = weft__calloc(total ? total : 1, sizeof *lib->sizes);
    if (!lib->table || !lib->types || !lib->sizes)
        return weft__error(WEFT_ENOMEM, "host: no memory for module %s", name);
    for (size_t i = 0; i < lib->n; i++) {
        weft_host_kernel *t = &lib->table[i];

        t->name = ks[i].name;
        t->fn = ks[i].fn;
        t->nparams = ks[i].nparams;
        t->params = lib->types + at;
        t->param_sizes = lib->sizes + at;
        for (unsigned p = 0; p < ks[i].nparams; p++, at++) {
            lib->types[at] = (weft_param_type)ks[i].params[p];
            lib->sizes[at] = ks[i].sizes[p];
        }
    }
    return 0;
}

int weft__hostcc_open(const weft__module_source *src, weft__hostcc_lib **out,
                      char **log)
{
    const char *name = src->name ? src->name : "portable";
    weft__hostcc_lib *lib;
    int rc;

    *log = NULL;
    lib = weft__calloc(1, sizeof *lib);
    if (!lib)
        return weft__error(WEFT_ENOMEM, "host: no memory for module %s", name);
    if (src->kind == WEFT__SRC_HOST_C) {
        rc = weft__cc_compile(src->data, src->options, name, &lib->so,
                              &lib->so_size, log);
    } else if (src->kind == WEFT__SRC_HOST_SO) {
        lib->so = weft__malloc(src->size ? src->size : 1);
        lib->so_size = src->size;
        rc = lib->so ? 0
                     : weft__error(WEFT_ENOMEM, "host: no memory for module %s",
                                   name);
        if (lib->so)
            memcpy(lib->so, src->data, src->size);
    } else {
        rc = weft__error(WEFT_ENOTSUP, "host: source kind %d is not C",
                         (int)src->kind);
    }
    if (rc == 0)
        rc = weft__cc_load(lib, name);
    if (rc < 0) {
        weft__free(*log);
        *log = NULL;
        weft__hostcc_close(lib);
        return rc;
    }
    *out = lib;
    return 0;
}

const weft_host_kernel *weft__hostcc_table(const weft__hostcc_lib *lib,
                                           size_t *n)
{
    *n = lib->n;
    return lib->table;
}

int weft__hostcc_binary(const weft__hostcc_lib *lib, void **bytes, size_t *size)
{
    void *p = weft__malloc(lib->so_size ? lib->so_size : 1);

    if (!p)
        return weft__error(WEFT_ENOMEM, "host: no memory for a binary");
    memcpy(p, lib->so, lib->so_size);
    *bytes = p;
    *size = lib->so_size;
    return 0;
}
