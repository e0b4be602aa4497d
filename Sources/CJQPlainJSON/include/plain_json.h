// Plain JSON documents parsed straight to jq's values, and plain values printed, faster
// than jq's own parser and printer; everything else is left to jq's.
#ifndef REPLAY_PLAIN_JSON_H
#define REPLAY_PLAIN_JSON_H

#include <jv.h>

/// How deep a plain document or value nests, at most.
#define REPLAY_PLAIN_JSON_MAX_DEPTH 64

/// The value of `text` (`length` bytes), exactly as `jv_parse_sized` gives it, if the
/// document is plain: its strings printable ASCII without escapes, its numbers without
/// exponents, nested at most `REPLAY_PLAIN_JSON_MAX_DEPTH` deep, and nothing after its one
/// value but whitespace. Otherwise an invalid value without a message (`jv_invalid()`):
/// parse it with `jv_parse_sized`, whose value or error is then the document's.
jv replay_plain_json_parse(const char *text, int length);

/// Writes `value` (borrowed) into `buffer` exactly as `jv_dump_string(value, 0)` prints it,
/// if the value is plain: its strings printable ASCII with nothing to escape, its numbers
/// integers of magnitude under 10^16, nested at most `REPLAY_PLAIN_JSON_MAX_DEPTH` deep.
/// Returns the bytes written; -1 if the value is not plain or does not fit `capacity`
/// (then print it with `jv_dump_string`).
int replay_plain_json_print(jv value, char *buffer, int capacity);

#endif
