/* SPDX-License-Identifier: MIT */
/*
 * replay.c: a main() for the fuzz targets that needs no libFuzzer (jansson's standaloneengine,
 * h2o fuzz/). Each argument is a corpus directory (every regular file in it, in name order, is
 * one input) or a single input file. Each input is read into a buffer of exactly its size, so
 * ASan sees any read past the end, and handed to LLVMFuzzerTestOneInput(). A target that finds
 * a bug aborts; otherwise one TAP line per argument:
 *
 *     ok 1 - fuzz_cursor tests/fuzz/corpus/cursor (23 inputs)
 *
 * REPLAY_VERBOSE=1 in the environment names each input on stderr before it runs.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *current_input; /* for the crash note */

/* Name the input that was running when a signal (abort(), assert(), SEGV) arrived. */
static void on_fatal(int sig)
{
    static const char pre[] = "# replay: crashed on input ";
    const char *p = current_input ? current_input : "(none)";
    ssize_t ignored;

    ignored = write(2, pre, sizeof(pre) - 1);
    ignored = write(2, p, strlen(p));
    ignored = write(2, "\n", 1);
    (void)ignored;
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Read the whole file 'path' into a new buffer of exactly its size (1 byte for empty files). */
static int read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf;
    long n;

    if (!f)
        return -1;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return -1;
    }
    buf = malloc(n ? (size_t)n : 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        free(buf);
        fclose(f);
        return -1;
    }
    fclose(f);
    *out = buf;
    *len = (size_t)n;
    return 0;
}

/* Run the target on the file 'path'. 0, or -1 when it cannot be read. */
static int run_file(const char *path)
{
    uint8_t *data;
    size_t len;

    if (read_file(path, &data, &len) != 0)
        return -1;
    if (getenv("REPLAY_VERBOSE"))
        fprintf(stderr, "# %s (%zu bytes)\n", path, len);
    current_input = path;
    LLVMFuzzerTestOneInput(data, len);
    current_input = NULL;
    free(data);
    return 0;
}

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Run the target on every regular, non-hidden file of 'dir'; '*count' gets how many ran. */
static int run_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;

    *count = 0;
    if (!d)
        return -1;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            char **nn;
            cap = cap ? cap * 2 : 64;
            nn = realloc(names, cap * sizeof(*names));
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        names[n] = strdup(de->d_name);
        if (!names[n]) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (n > 1)
        qsort(names, n, sizeof(*names), cmp_names);
    for (size_t i = 0; i < n && rc == 0; i++) {
        size_t plen = strlen(dir) + strlen(names[i]) + 2;
        char *path = malloc(plen);
        struct stat st;
        if (!path) {
            rc = -1;
            break;
        }
        snprintf(path, plen, "%s/%s", dir, names[i]);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) {
            if (run_file(path) != 0)
                rc = -1;
            else
                (*count)++;
        }
        free(path);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    const char *target = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    int failed = 0;

    if (argc < 2) {
        fprintf(stderr,
                "usage: %s CORPUS_DIR|INPUT_FILE...\n"
                "Runs LLVMFuzzerTestOneInput on every file of each directory (or on each file)\n"
                "and prints one TAP line per argument. REPLAY_VERBOSE=1 names each input.\n",
                target);
        return 2;
    }
    signal(SIGABRT, on_fatal);
    signal(SIGSEGV, on_fatal);
    signal(SIGBUS, on_fatal);
    signal(SIGFPE, on_fatal);
    signal(SIGILL, on_fatal);
    printf("1..%d\n", argc - 1);
    for (int i = 1; i < argc; i++) {
        struct stat st;
        size_t count = 0;
        int rc;

        if (stat(argv[i], &st) != 0) {
            printf("not ok %d - %s %s (%s)\n", i, target, argv[i], strerror(errno));
            failed = 1;
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            rc = run_dir(argv[i], &count);
        } else {
            rc = run_file(argv[i]);
            count = rc == 0 ? 1 : 0;
        }
        if (rc != 0) {
            printf("not ok %d - %s %s (cannot read an input after %zu)\n", i, target, argv[i],
                   count);
            failed = 1;
        } else {
            printf("ok %d - %s %s (%zu inputs)\n", i, target, argv[i], count);
        }
        fflush(stdout);
    }
    return failed;
}
