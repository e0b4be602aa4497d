// Plain JSON documents parsed straight to jq's values.
//
// Why by hand: jq 1.6's parser (jv_parse.c) takes a document a byte at a time through a
// state machine, copies every token into a buffer, and converts every number with its
// own dtoa; it was a third of jq's work in a profile of a derivation's catch-up, which
// parses every input event. Most events are plain ASCII JSON, and a recursive descent over
// those builds the same values with jq's own constructors 1.8-2.2x faster (0.40 against
// 0.88 us for {"t":1764570000000,"v":123456}, from C: tools/plain_json_cost.c). No listed
// package builds jq's values. Anything it does not take (escapes, non-ASCII, control
// characters, exponents, deep nesting, any error) goes to jq's parser, so what jq accepts,
// refuses and says about a document stays jq's.
//
// Equal to jv_parse_sized on what it takes:
// - strings of printable ASCII without escapes are their bytes (jv_string_sized);
// - numbers: jq converts with a correctly rounded strtod (David Gay's), as glibc's is;
//   integers of up to 15 digits are exact in a double and converted here directly;
// - an object's repeated key keeps its last value at its first place (jv_object_set);
// - jq's parser nests at most 256 deep; this one takes at most 64 and leaves the rest.
#include "plain_json.h"

#include <stdlib.h>
#include <string.h>

enum { MAX_NUMBER = 63 };

typedef struct {
    const char *at;
    const char *end;
    int depth;
} cursor;

static int parse_value(cursor *c, jv *out);

static void skip_space(cursor *c) {
    while (c->at < c->end && (*c->at == ' ' || *c->at == '\n' || *c->at == '\t' || *c->at == '\r')) c->at++;
}

static int next_is(cursor *c, char byte) {
    return c->at < c->end && *c->at == byte;
}

static int parse_string(cursor *c, jv *out) {
    const char *start = ++c->at;  // past the opening quote
    while (c->at < c->end) {
        unsigned char byte = (unsigned char)*c->at;
        if (byte == '"') {
            *out = jv_string_sized(start, (int)(c->at - start));
            c->at++;
            return 1;
        }
        if (byte < 0x20 || byte > 0x7e || byte == '\\') return 0;
        c->at++;
    }
    return 0;
}

static int parse_digits(cursor *c) {
    const char *start = c->at;
    while (c->at < c->end && *c->at >= '0' && *c->at <= '9') c->at++;
    return c->at > start;
}

static int parse_number(cursor *c, jv *out) {
    const char *start = c->at;
    int negative = next_is(c, '-');
    if (negative) c->at++;
    if (next_is(c, '0')) {
        c->at++;
    } else if (c->at >= c->end || *c->at < '1' || *c->at > '9' || !parse_digits(c)) {
        return 0;
    }
    int fraction = next_is(c, '.');
    if (fraction) {
        c->at++;
        if (!parse_digits(c)) return 0;
    }
    if (next_is(c, 'e') || next_is(c, 'E')) return 0;
    size_t length = (size_t)(c->at - start);
    if (!fraction && length - (size_t)negative <= 15) {
        long long magnitude = 0;
        for (const char *digit = start + negative; digit < c->at; digit++) magnitude = magnitude * 10 + (*digit - '0');
        *out = jv_number(negative ? -(double)magnitude : (double)magnitude);
        return 1;
    }
    if (length > MAX_NUMBER) return 0;
    char text[MAX_NUMBER + 1];
    memcpy(text, start, length);
    text[length] = 0;
    *out = jv_number(strtod(text, NULL));
    return 1;
}

static int parse_word(cursor *c, const char *word, size_t length, jv made, jv *out) {
    if ((size_t)(c->end - c->at) < length || memcmp(c->at, word, length) != 0) return 0;
    c->at += length;
    *out = made;
    return 1;
}

static int parse_object(cursor *c, jv *out) {
    c->at++;
    jv object = jv_object();
    skip_space(c);
    if (next_is(c, '}')) {
        c->at++;
        *out = object;
        return 1;
    }
    for (;;) {
        jv key, field;
        skip_space(c);
        if (!next_is(c, '"') || !parse_string(c, &key)) break;
        skip_space(c);
        if (!next_is(c, ':')) {
            jv_free(key);
            break;
        }
        c->at++;
        skip_space(c);
        if (!parse_value(c, &field)) {
            jv_free(key);
            break;
        }
        object = jv_object_set(object, key, field);
        skip_space(c);
        if (next_is(c, ',')) {
            c->at++;
            continue;
        }
        if (!next_is(c, '}')) break;
        c->at++;
        *out = object;
        return 1;
    }
    jv_free(object);
    return 0;
}

static int parse_array(cursor *c, jv *out) {
    c->at++;
    jv array = jv_array();
    skip_space(c);
    if (next_is(c, ']')) {
        c->at++;
        *out = array;
        return 1;
    }
    for (;;) {
        jv element;
        skip_space(c);
        if (!parse_value(c, &element)) break;
        array = jv_array_append(array, element);
        skip_space(c);
        if (next_is(c, ',')) {
            c->at++;
            continue;
        }
        if (!next_is(c, ']')) break;
        c->at++;
        *out = array;
        return 1;
    }
    jv_free(array);
    return 0;
}

static int parse_value(cursor *c, jv *out) {
    if (c->at >= c->end) return 0;
    switch (*c->at) {
    case '{':
    case '[': {
        if (c->depth == REPLAY_PLAIN_JSON_MAX_DEPTH) return 0;
        c->depth++;
        int parsed = *c->at == '{' ? parse_object(c, out) : parse_array(c, out);
        c->depth--;
        return parsed;
    }
    case '"': return parse_string(c, out);
    case 't': return parse_word(c, "true", 4, jv_true(), out);
    case 'f': return parse_word(c, "false", 5, jv_false(), out);
    case 'n': return parse_word(c, "null", 4, jv_null(), out);
    default: return parse_number(c, out);
    }
}

jv replay_plain_json_parse(const char *text, int length) {
    cursor c = {text, text + (length > 0 ? length : 0), 0};
    jv value;
    skip_space(&c);
    if (!parse_value(&c, &value)) return jv_invalid();
    skip_space(&c);
    if (c.at != c.end) {
        jv_free(value);
        return jv_invalid();
    }
    return value;
}
