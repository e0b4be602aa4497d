// OpenSSL's libcrypto (Debian's libssl-dev): SHA-256 for the hash chains.
//
// Its low-level SHA256_Init/Update/Final work on a context on the caller's stack: no
// allocation per hash. swift-crypto allocates (and zeroes) a context per hash, and
// OpenSSL's EVP interface, even with one context reused, allocates a provider context at
// every EVP_DigestInit_ex2 (3.0: one per hash, tools/sha256_cost.c): either would be one
// allocation per event on the writer and on every read from the store. OpenSSL 3 marks
// the low-level functions deprecated in favour of EVP; they are still built and exported,
// and this is the one place that uses them.
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/sha.h>
