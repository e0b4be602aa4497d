// jq's C library (Debian's libjq-dev, jq 1.6): the interpreter derived streams and
// read-time filters run their programs in.
#include <jv.h>
#include <jq.h>
