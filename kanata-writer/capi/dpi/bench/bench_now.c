/* bench_now.c: a monotonic clock in nanoseconds for bench.sv (SystemVerilog has none). */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */
#include <time.h>

#ifdef KANATA_DPI_HEADER
#include KANATA_DPI_HEADER
#endif

#ifdef __cplusplus
extern "C" {
#endif

unsigned long long bench_now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (unsigned long long)t.tv_sec * 1000000000ull + (unsigned long long)t.tv_nsec;
}

#ifdef __cplusplus
}
#endif
