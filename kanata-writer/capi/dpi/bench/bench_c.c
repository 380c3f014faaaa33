/*
 * bench_c.c: the C side of the DPI micro-benchmark: bench.sv's calls, made through the C
 * API directly (kanata_writer.h), as a simulator written in C makes them.
 *
 *   bench_c N ROUNDS [OUT [null] [nolabel]]
 *
 * Opens OUT (default /dev/null) with kw_open_path, as kanata_open does, and prints
 * "c replay=<ns per call> calls=<n> rounds=<r>", the median over the rounds after one
 * warm-up round. "null" makes the same calls on a NULL writer; "nolabel" leaves the label
 * out, as bench.sv's +nolabel.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kanata_writer.h"

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* As KANATA_FATAL: the first error ends the run. */
#define CHECK(call)                                                                     \
  do {                                                                                  \
    KwStatus s_ = (call);                                                               \
    if (s_ != KW_STATUS_OK) {                                                           \
      fprintf(stderr, "bench_c: %s: %s\n", kw_status_name(s_), kw_last_error_message()); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

int main(int argc, char **argv) {
  int n = argc > 1 ? atoi(argv[1]) : 200000;
  int rounds = argc > 2 ? atoi(argv[2]) : 5;
  const char *out = argc > 3 ? argv[3] : "/dev/null";
  int null_writer = 0, no_label = 0;
  for (int a = 4; a < argc; a++) {
    if (strcmp(argv[a], "null") == 0)
      null_writer = 1;
    else if (strcmp(argv[a], "nolabel") == 0)
      no_label = 1;
    else
      n = 0; /* usage */
  }
  if (n < 1 || rounds < 1) {
    fprintf(stderr, "usage: bench_c N ROUNDS [OUT [null] [nolabel]]\n");
    return 2;
  }
  /* Kept as NUL-terminated strings, as the simulator keeps SystemVerilog strings, and
   * measured with strlen in the loop, as kanata_dpi.c does. */
  char names[16][64];
  for (int k = 0; k < 16; k++)
    snprintf(names[k], sizeof names[k], "%08x: addi r%d, r%d, %d", k * 4, k, k, k);
  double *ns = (double *)malloc((size_t)rounds * sizeof *ns);
  unsigned long long calls = 0;

  for (int r = -1; r < rounds; r++) {
    KwWriter *w = NULL;
    KwStage f, d, x, m, wb;
    KwInsn insn, prev = KW_INSN_UNTRACED;
    uint64_t rid = 0;
    calls = 0;
    if (!null_writer) CHECK(kw_open_path(out, strlen(out), NULL, &w));
    CHECK(kw_stage(w, "F", 1, &f));
    CHECK(kw_stage(w, "D", 1, &d));
    CHECK(kw_stage(w, "X", 1, &x));
    CHECK(kw_stage(w, "M", 1, &m));
    CHECK(kw_stage(w, "W", 1, &wb));
    double t0 = now_ns();
    for (int i = 0; i < n; i++) {
      CHECK(kw_begin(w, (uint64_t)i, 0, &insn));
      if (!no_label) {
        const char *name = names[i % 16];
        CHECK(kw_label(w, insn, KW_LABEL_NAME, name, strlen(name)));
        calls++;
      }
      CHECK(kw_enter(w, insn, KW_LANE_MAIN, f));
      CHECK(kw_enter(w, insn, KW_LANE_MAIN, d));
      if (i % 8 == 7) {
        CHECK(kw_stall_begin(w, insn));
        CHECK(kw_stall_end(w, insn));
        calls += 2;
      }
      CHECK(kw_enter(w, insn, KW_LANE_MAIN, x));
      if (i > 0) {
        CHECK(kw_depend(w, insn, prev, KW_DEP_WAKE_UP));
        calls++;
      }
      CHECK(kw_enter(w, insn, KW_LANE_MAIN, m));
      CHECK(kw_enter(w, insn, KW_LANE_MAIN, wb));
      if (i % 16 == 15)
        CHECK(kw_flush(w, insn));
      else
        CHECK(kw_retire(w, insn, &rid));
      CHECK(kw_advance(w, 1));
      calls += 8;
      prev = insn;
    }
    double t1 = now_ns();
    /* The last retirement's id: one less than the instructions retired (none on NULL). */
    if (rid != (null_writer ? KW_RETIRE_ID_NONE : (uint64_t)(n - n / 16 - 1))) {
      fprintf(stderr, "bench_c: last retire id %llu\n", (unsigned long long)rid);
      return 1;
    }
    CHECK(kw_finish(w, NULL));
    if (r >= 0) ns[r] = (t1 - t0) / (double)calls;
  }
  qsort(ns, (size_t)rounds, sizeof *ns, compare);
  printf("c%s%s replay=%.2f calls=%llu rounds=%d\n", null_writer ? "_null" : "",
         no_label ? "_nolabel" : "", ns[rounds / 2], calls, rounds);
  free(ns);
  return 0;
}
