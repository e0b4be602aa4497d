// Plain jq values printed as compact JSON, as jq prints them.
//
// Why by hand: jq 1.6's printer (jv_print.c) writes through a growing jq string, decodes
// every string's UTF-8 to escape it, and formats every number with its dtoa, integers
// included; printing outputs was a fifth of a keyed scan's runner in a profile of a
// catch-up. For a plain value it writes the same bytes 2.3-2.6x faster
// (tools/plain_json_cost.c). Anything else (a string needing escapes or beyond ASCII, a
// number that is not an integer under 10^16) is left to jq's printer, whole.
//
// Equal to jv_dump_string(value, 0) on what it takes:
// - a string of printable ASCII but '"' and '\' is its bytes, quoted (jq escapes only those
//   two, control characters and DEL);
// - jq prints a number with the shortest digits that read back to it, without an
//   exponent while its point is at most 15 places past its last digit: an integer of
//   magnitude under 10^16 is its integer digits, -0 is "-0";
// - an object's fields in its own order (jq's iteration; sorting is a flag not given).
#include "plain_json.h"

#include <math.h>
#include <string.h>

typedef struct {
    char *at;
    char *end;
} output;

static int put(output *out, const char *bytes, size_t length) {
    if ((size_t)(out->end - out->at) < length) return 0;
    memcpy(out->at, bytes, length);
    out->at += length;
    return 1;
}

static int put_number(output *out, double number) {
    if (!(number > -1e16 && number < 1e16) || number != floor(number)) return 0;
    if (number == 0) return signbit(number) ? put(out, "-0", 2) : put(out, "0", 1);
    char digits[20];
    int count = 0;
    unsigned long long magnitude = (unsigned long long)fabs(number);
    while (magnitude > 0) {
        digits[count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    }
    char text[21];
    int length = 0;
    if (number < 0) text[length++] = '-';
    while (count > 0) text[length++] = digits[--count];
    return put(out, text, (size_t)length);
}

static int put_string(output *out, jv string) {
    const char *bytes = jv_string_value(string);
    int length = jv_string_length_bytes(jv_copy(string));
    for (int index = 0; index < length; index++) {
        unsigned char byte = (unsigned char)bytes[index];
        if (byte < 0x20 || byte > 0x7e || byte == '"' || byte == '\\') return 0;
    }
    return put(out, "\"", 1) && put(out, bytes, (size_t)length) && put(out, "\"", 1);
}

static int put_value(output *out, jv value, int depth);

static int put_array(output *out, jv array, int depth) {
    if (!put(out, "[", 1)) return 0;
    int length = jv_array_length(jv_copy(array));
    for (int index = 0; index < length; index++) {
        if (index > 0 && !put(out, ",", 1)) return 0;
        jv element = jv_array_get(jv_copy(array), index);
        int printed = put_value(out, element, depth);
        jv_free(element);
        if (!printed) return 0;
    }
    return put(out, "]", 1);
}

static int put_object(output *out, jv object, int depth) {
    if (!put(out, "{", 1)) return 0;
    int first = 1;
    for (int slot = jv_object_iter(object); jv_object_iter_valid(object, slot); slot = jv_object_iter_next(object, slot)) {
        if (!first && !put(out, ",", 1)) return 0;
        first = 0;
        jv key = jv_object_iter_key(object, slot);
        jv field = jv_object_iter_value(object, slot);
        int printed = put_string(out, key) && put(out, ":", 1) && put_value(out, field, depth);
        jv_free(key);
        jv_free(field);
        if (!printed) return 0;
    }
    return put(out, "}", 1);
}

static int put_value(output *out, jv value, int depth) {
    switch (jv_get_kind(value)) {
    case JV_KIND_NULL: return put(out, "null", 4);
    case JV_KIND_TRUE: return put(out, "true", 4);
    case JV_KIND_FALSE: return put(out, "false", 5);
    case JV_KIND_NUMBER: return put_number(out, jv_number_value(value));
    case JV_KIND_STRING: return put_string(out, value);
    case JV_KIND_ARRAY: return depth < REPLAY_PLAIN_JSON_MAX_DEPTH && put_array(out, value, depth + 1);
    case JV_KIND_OBJECT: return depth < REPLAY_PLAIN_JSON_MAX_DEPTH && put_object(out, value, depth + 1);
    default: return 0;
    }
}

int replay_plain_json_print(jv value, char *buffer, int capacity) {
    output out = {buffer, buffer + (capacity > 0 ? capacity : 0)};
    return put_value(&out, value, 0) ? (int)(out.at - buffer) : -1;
}
