/*
 * Runs the fuzz target (fuzz_api.c) on files, as libFuzzer would run one
 * input: replay FILE|DIR... (a directory: each of its files, in name
 * order). Built with every compiler, so that CTest fuzz_replay runs the
 * seed corpus and the regression inputs in every build.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    uint8_t *data;
    long size;

    if (!f || fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 ||
        fseek(f, 0, SEEK_SET) != 0) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    data = malloc((size_t)size + 1);
    if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
        fprintf(stderr, "replay: cannot read %s\n", path);
        fclose(f);
        free(data);
        return -1;
    }
    fclose(f);
    fprintf(stderr, "replay: %s (%ld bytes)\n", path, size);
    LLVMFuzzerTestOneInput(data, (size_t)size);
    free(data);
    return 0;
}

static int replay_by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_dir(const char *dir, unsigned *count)
{
    DIR *d = opendir(dir);
    struct dirent *ent;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    if (!d) {
        fprintf(stderr, "replay: cannot open %s\n", dir);
        return -1;
    }
    while ((ent = readdir(d)) != NULL) {
        if (ent->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **more =
                realloc(names, (cap = cap ? 2 * cap : 64) * sizeof *names);
            if (!more)
                abort();
            names = more;
        }
        if (!(names[n] = malloc(strlen(dir) + strlen(ent->d_name) + 2)))
            abort();
        sprintf(names[n++], "%s/%s", dir, ent->d_name);
    }
    closedir(d);
    qsort(names, n, sizeof *names, replay_by_name);
    for (size_t i = 0; i < n; i++) {
        if (rc == 0 && replay_file(names[i]) < 0)
            rc = -1;
        else
            ++*count;
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    unsigned count = 0;

    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    for (int i = 1; i < argc; i++) {
        struct stat st;

        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "replay: no such file: %s\n", argv[i]);
            return 1;
        }
        if (S_ISDIR(st.st_mode) ? replay_dir(argv[i], &count) < 0
                                : replay_file(argv[i]) < 0)
            return 1;
        if (!S_ISDIR(st.st_mode))
            count++;
    }
    printf("replay: %u inputs, no broken promise\n", count);
    return 0;
}
