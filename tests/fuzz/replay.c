/*
 * replay.c -- runs a libFuzzer harness over files without libFuzzer, so the
 * seed corpora are exercised by every ordinary (gcc) build as meson tests.
 *
 *   replay-NAME DIR_OR_FILE...
 *
 * Each file is read whole and passed once to LLVMFuzzerTestOneInput.  Ends
 * with "N passed, N failed" (a file fails only if it cannot be read; a
 * crash fails the test by itself).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int passed, failed;

static void
run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        failed++;
        return;
    }
    size_t cap = 4096, n = 0, got;
    uint8_t *buf = malloc(cap);
    while (buf != NULL && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            uint8_t *nb = realloc(buf, cap *= 2);
            if (nb == NULL)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (buf == NULL) {
        fprintf(stderr, "%s: out of memory\n", path);
        failed++;
        return;
    }
    LLVMFuzzerTestOneInput(buf, n);
    free(buf);
    passed++;
}

static int
cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int
main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            perror(argv[i]);
            failed++;
            continue;
        }
        if (!S_ISDIR(st.st_mode)) {
            run_file(argv[i]);
            continue;
        }
        DIR *d = opendir(argv[i]);
        if (d == NULL) {
            perror(argv[i]);
            failed++;
            continue;
        }
        char **names = NULL;
        size_t nn = 0;
        struct dirent *e;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.')
                continue;
            char **nb = realloc(names, (nn + 1) * sizeof(char *));
            if (nb == NULL)
                break;
            names = nb;
            size_t len = strlen(argv[i]) + strlen(e->d_name) + 2;
            names[nn] = malloc(len);
            if (names[nn] == NULL)
                break;
            snprintf(names[nn++], len, "%s/%s", argv[i], e->d_name);
        }
        closedir(d);
        qsort(names, nn, sizeof(char *), cmp_name);
        for (size_t k = 0; k < nn; k++) {
            run_file(names[k]);
            free(names[k]);
        }
        free(names);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed > 0;
}
