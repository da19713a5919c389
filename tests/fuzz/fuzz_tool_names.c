/* SPDX-License-Identifier: MIT */
/*
 * fuzz_tool_names: the names tools are shown to a model under (tools/names.c). The input, up to
 * its first NUL, is a tool name; tools_model_name() of it must:
 *   - match ^[a-zA-Z0-9_-]{1,64}$;
 *   - be the same when computed again;
 *   - for a name that reads one way (letters, digits, '_', '-', '.', no "__", "_." or "._", not
 *     empty, at most 64 bytes once each '.' is "__"): give the name back when each "__" is
 *     read as '.';
 *   - otherwise: be the mapped name cut to at most 55 bytes, then '_' and 8 lowercase hex digits.
 * Pure: no I/O.
 */
#include "../../src/tools/tools.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                   \
    do {                                                                                           \
        if (!(c)) {                                                                                \
            fprintf(stderr, "fuzz_tool_names: check failed at line %d: %s\n", __LINE__, #c);       \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static bool model_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
}

/* Whether 'name' is shown as it is, each '.' as "__"; '*mapped' gets that form's length. */
static bool reads_one_way(const char *name, size_t *mapped)
{
    size_t len = strlen(name);
    bool one = len > 0;

    *mapped = 0;
    for (size_t i = 0; i < len; i++) {
        char c = name[i], next = name[i + 1];
        if (c != '.' && !model_char(c))
            one = false;
        if ((c == '_' && (next == '_' || next == '.')) || (c == '.' && next == '_'))
            one = false;
        *mapped += c == '.' ? 2 : 1;
    }
    return one && *mapped <= TOOLS_MODEL_NAME_MAX;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *name = malloc(size + 1);
    char out[TOOLS_MODEL_NAME_MAX + 1], again[TOOLS_MODEL_NAME_MAX + 1];
    size_t n, mapped;

    CHECK(name != NULL);
    memcpy(name, data, size);
    name[size] = '\0';
    tools_model_name(name, out);
    n = strlen(out);
    CHECK(n >= 1 && n <= TOOLS_MODEL_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        CHECK(model_char(out[i]));
    tools_model_name(name, again);
    CHECK(strcmp(out, again) == 0);
    if (reads_one_way(name, &mapped)) {
        size_t j = 0;
        CHECK(n == mapped);
        for (size_t i = 0; i < n; i++, j++) {
            if (out[i] == '_' && out[i + 1] == '_') {
                CHECK(name[j] == '.');
                i++;
            } else {
                CHECK(name[j] == out[i]);
            }
        }
        CHECK(name[j] == '\0');
    } else {
        CHECK(n == (mapped < 55 ? mapped : 55) + 9);
        CHECK(out[n - 9] == '_');
        for (size_t i = n - 8; i < n; i++)
            CHECK((out[i] >= '0' && out[i] <= '9') || (out[i] >= 'a' && out[i] <= 'f'));
    }
    free(name);
    return 0;
}
