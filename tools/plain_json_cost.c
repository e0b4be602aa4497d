/*
 * What parsing an event and printing it cost jq's own parser and printer (jv_parse_sized,
 * jv_dump_string; jq 1.6) and replay's plain ones (Sources/CJQPlainJSON), per document,
 * from C; and that the two give the same value and the same text. The figures of
 * Sources/CJQPlainJSON's comments and of docs/PERFORMANCE.md ("Derived streams").
 *
 *   cc -O2 -I Sources/CJQPlainJSON/include -o /tmp/plain_json_cost tools/plain_json_cost.c \
 *       Sources/CJQPlainJSON/plain_json_parse.c Sources/CJQPlainJSON/plain_json_print.c -ljq
 *   /tmp/plain_json_cost [--count 1000000]
 */
#include <jq.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plain_json.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int count = 1000000;
    if (argc == 3 && strcmp(argv[1], "--count") == 0) count = atoi(argv[2]);
    const char *documents[] = {
        "{\"t\":1764570000000,\"v\":123456}",
        "{\"t\":0,\"v\":42,\"k\":\"k917\"}",
        "{\"key\":\"k917\",\"state\":123456789}",
        "{\"id\":12,\"amount\":99,\"customer\":\"acme\",\"items\":[{\"sku\":\"a1\",\"qty\":2},{\"sku\":\"b2\",\"qty\":1}],"
        "\"ok\":true,\"note\":null}",
    };
    char printed[4096];
    for (size_t d = 0; d < sizeof documents / sizeof *documents; d++) {
        const char *document = documents[d];
        int length = (int)strlen(document);
        jv theirs = jv_parse_sized(document, length), ours = replay_plain_json_parse(document, length);
        jv text = jv_dump_string(jv_copy(theirs), 0);
        int written = replay_plain_json_print(theirs, printed, (int)sizeof printed);
        if (!jv_is_valid(ours) || !jv_equal(jv_copy(theirs), ours) || written < 0 || written != jv_string_length_bytes(jv_copy(text)) ||
            memcmp(printed, jv_string_value(text), (size_t)written) != 0) {
            fprintf(stderr, "not the same value or text: %s\n", document);
            return 1;
        }
        jv_free(text);
        double started = now();
        for (int i = 0; i < count; i++) jv_free(jv_parse_sized(document, length));
        double parsed = now();
        for (int i = 0; i < count; i++) jv_free(replay_plain_json_parse(document, length));
        double parsedPlainly = now();
        for (int i = 0; i < count; i++) jv_free(jv_dump_string(jv_copy(theirs), 0));
        double dumped = now();
        for (int i = 0; i < count; i++) replay_plain_json_print(theirs, printed, (int)sizeof printed);
        double printedPlainly = now();
        jv_free(theirs);
        double parse = (parsed - started) * 1e6 / count, plainParse = (parsedPlainly - parsed) * 1e6 / count;
        double print = (dumped - parsedPlainly) * 1e6 / count, plainPrint = (printedPlainly - dumped) * 1e6 / count;
        printf("%3d bytes: parse %.3f us, plainly %.3f (%.2fx); print %.3f us, plainly %.3f (%.2fx)  %s\n", length, parse, plainParse,
            parse / plainParse, print, plainPrint, print / plainPrint, document);
    }
    return 0;
}
