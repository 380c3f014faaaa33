/*
 * example.c: a few instructions written through kanata-writer's C API, with stalls, a
 * branch mispredict that flushes a younger instruction, and a dependency arrow.
 *
 *   ./example             writes the trace to stdout (through a callback)
 *   ./example run.kanata  writes it to a file (run.kanata.zst: compressed)
 *
 * Build: see ../README.md. The trace is examples/example.kanata, byte for byte.
 */
#include <stdio.h>
#include <string.h>

#include "kanata_writer.h"

/* Stops at the first failure, with the library's message. */
#define CHECK(call)                                                                   \
  do {                                                                                \
    KwStatus status_ = (call);                                                        \
    if (status_ != KW_STATUS_OK) {                                                    \
      fprintf(stderr, "example.c:%d: %s: %s\n", __LINE__, kw_status_name(status_), \
              kw_last_error_message());                                               \
      kw_free(w);                                                                     \
      return 1;                                                                       \
    }                                                                                 \
  } while (0)

/* The output callback: the trace goes to the FILE* given as user data. */
static int32_t write_file(void *user_data, const uint8_t *data, size_t len) {
  return fwrite(data, 1, len, (FILE *)user_data) == len ? 0 : 1;
}

/* Strings are pointer and length; these two helpers take C strings. */
static KwStatus stage(KwWriter *w, const char *name, KwStage *out) {
  return kw_stage(w, name, strlen(name), out);
}

static KwStatus label(KwWriter *w, KwInsn insn, KwLabelKind kind, const char *text) {
  return kw_label(w, insn, kind, text, strlen(text));
}

int main(int argc, char **argv) {
  KwWriter *w = NULL;
  KwOptions opts;
  kw_options_default(&opts);
  opts.live_at_end = KW_LIVE_AT_END_FLUSH;
  if (argc > 1) {
    CHECK(kw_open_path(argv[1], strlen(argv[1]), &opts, &w));
  } else {
    CHECK(kw_open_callback(write_file, stdout, &opts, &w));
  }

  KwStage f, d, x, m, c;
  CHECK(stage(w, "F", &f));
  CHECK(stage(w, "Dc", &d));
  CHECK(stage(w, "X", &x));
  CHECK(stage(w, "Mem", &m));
  CHECK(stage(w, "Cm", &c));

  /* Cycle 1: a load and an add are fetched. */
  KwInsn load, add, branch, wrong;
  CHECK(kw_advance(w, 1));
  CHECK(kw_begin(w, 0x1000, 0, &load));
  CHECK(label(w, load, KW_LABEL_NAME, "0x80000000: lw a0, 0(sp)"));
  CHECK(kw_enter(w, load, KW_LANE_MAIN, f));
  CHECK(kw_begin(w, 0x1001, 0, &add));
  CHECK(label(w, add, KW_LABEL_NAME, "0x80000004: add a1, a0, a0"));
  CHECK(kw_enter(w, add, KW_LANE_MAIN, f));

  /* Cycle 2: both decode; a branch is fetched. */
  CHECK(kw_advance(w, 1));
  CHECK(kw_enter(w, load, KW_LANE_MAIN, d));
  CHECK(kw_enter(w, add, KW_LANE_MAIN, d));
  CHECK(kw_begin(w, 0x1002, 0, &branch));
  CHECK(label(w, branch, KW_LABEL_NAME, "0x80000008: bne a1, zero, 0x80000100"));
  CHECK(kw_enter(w, branch, KW_LANE_MAIN, f));

  /* Cycle 3: the load executes and misses; the add waits for it (a stall, and a wake-up
   * arrow from the load); the branch decodes; a wrong-path instruction is fetched. */
  CHECK(kw_advance(w, 1));
  CHECK(kw_enter(w, load, KW_LANE_MAIN, x));
  CHECK(label(w, load, KW_LABEL_DETAIL, "addr = 0x8001ffe0"));
  CHECK(kw_stall_begin(w, add));
  CHECK(kw_depend(w, add, load, KW_DEP_WAKE_UP));
  CHECK(kw_enter(w, branch, KW_LANE_MAIN, d));
  CHECK(kw_begin(w, 0x1003, 0, &wrong));
  CHECK(label(w, wrong, KW_LABEL_NAME, "0x8000000c: sub a2, a2, a1"));
  CHECK(kw_enter(w, wrong, KW_LANE_MAIN, f));

  /* Cycle 4: the load goes to memory; a note on that stage. The branch stalls too. */
  CHECK(kw_advance(w, 1));
  CHECK(kw_enter(w, load, KW_LANE_MAIN, m));
  CHECK(label(w, load, KW_LABEL_STAGE_NOTE, "L1D miss"));
  CHECK(kw_stall_begin(w, branch));

  /* Cycle 7: the data is back; the load completes, the add and the branch execute. */
  CHECK(kw_set_cycle(w, 7));
  CHECK(kw_enter(w, load, KW_LANE_MAIN, c));
  CHECK(kw_stall_end(w, add));
  CHECK(kw_enter(w, add, KW_LANE_MAIN, x));
  CHECK(kw_stall_end(w, branch));
  CHECK(kw_enter(w, branch, KW_LANE_MAIN, x));
  CHECK(kw_depend(w, branch, add, KW_DEP_WAKE_UP));

  /* Cycle 8: the load retires; the branch resolves as mispredicted: the wrong-path
   * instruction is flushed. */
  CHECK(kw_advance(w, 1));
  uint64_t retire_id = 0;
  CHECK(kw_retire(w, load, &retire_id));
  CHECK(kw_enter(w, add, KW_LANE_MAIN, c));
  CHECK(kw_enter(w, branch, KW_LANE_MAIN, c));
  CHECK(label(w, branch, KW_LABEL_DETAIL, "mispredicted"));
  CHECK(kw_flush(w, wrong));

  /* Cycle 9: the add and the branch retire. */
  CHECK(kw_advance(w, 1));
  CHECK(kw_retire(w, add, NULL));
  CHECK(kw_retire(w, branch, &retire_id));

  KwSummary summary;
  KwStatus status = kw_finish(w, &summary);
  w = NULL; /* kw_finish freed it, whatever the status */
  CHECK(status);
  fprintf(stderr,
          "%llu instructions (%llu retired, %llu flushed), cycles %lld to %lld, %llu bytes; "
          "last retire id %llu\n",
          (unsigned long long)summary.instructions, (unsigned long long)summary.retired,
          (unsigned long long)summary.flushed, (long long)summary.first_cycle,
          (long long)summary.last_cycle, (unsigned long long)summary.text_bytes,
          (unsigned long long)retire_id);
  return 0;
}
