/*
 * What one link of a hash chain costs from C: SHA-256 of a 100-byte event's 165 hashed
 * bytes (docs/INTEGRITY.md), with OpenSSL's low-level SHA256_Init/Update/Final on a
 * context on the stack (what replay's HashChain does) and through EVP with one context
 * reused. With tools/malloc_count.c preloaded it also prints the allocations each makes.
 *
 *   cc -O2 -o /tmp/sha256_cost tools/sha256_cost.c -lcrypto
 *   cc -O2 -shared -fPIC -o /tmp/malloc_count.so tools/malloc_count.c
 *   MALLOC_COUNT=/tmp/count LD_PRELOAD=/tmp/malloc_count.so /tmp/sha256_cost
 */
#define OPENSSL_SUPPRESS_DEPRECATED
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
  struct timespec time;
  clock_gettime(CLOCK_MONOTONIC, &time);
  return (double)time.tv_sec + (double)time.tv_nsec / 1e9;
}

static long counted(void) {
  // malloc_count.c writes its running total to $MALLOC_COUNT on SIGUSR2.
  const char *path = getenv("MALLOC_COUNT");
  if (path == NULL) return 0;
  raise(SIGUSR2);
  FILE *file = fopen(path, "r");
  long total = 0;
  if (file != NULL && fscanf(file, "%ld", &total) != 1) total = 0;
  if (file != NULL) fclose(file);
  return total;
}

int main(void) {
  enum { count = 1000000 };
  unsigned char data[165], digest[32];
  unsigned int length;
  memset(data, 3, sizeof data);
  EVP_MD *sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
  EVP_MD_CTX *context = EVP_MD_CTX_new();

  long before = counted();
  double start = now();
  for (int i = 0; i < count; i++) {
    SHA256_CTX stack;
    SHA256_Init(&stack);
    SHA256_Update(&stack, data, 100);
    SHA256_Update(&stack, data + 100, 65);
    SHA256_Final(digest, &stack);
    data[0] = digest[0];
  }
  double elapsed = now() - start;
  printf("SHA256_Init/Update/Final: %.0f ns per link, %.2f allocations\n", elapsed / count * 1e9, (double)(counted() - before) / count);

  before = counted();
  start = now();
  for (int i = 0; i < count; i++) {
    EVP_DigestInit_ex2(context, sha256, NULL);
    EVP_DigestUpdate(context, data, 100);
    EVP_DigestUpdate(context, data + 100, 65);
    EVP_DigestFinal_ex(context, digest, &length);
    data[0] = digest[0];
  }
  elapsed = now() - start;
  printf("EVP, one context reused: %.0f ns per link, %.2f allocations\n", elapsed / count * 1e9, (double)(counted() - before) / count);
  EVP_MD_CTX_free(context);
  EVP_MD_free(sha256);
  return 0;
}
