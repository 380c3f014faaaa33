/*
 * api_test.c: the C API as a C compiler sees it: the header's types and inline helpers,
 * statuses and messages, the NULL writer, and the bytes written through a callback. Built
 * and run by tests/c_examples.rs; prints "N passed, 0 failed" on success.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kanata_writer.h"

static int passed, failed;

#define EXPECT(cond)                                                  \
  do {                                                                \
    if (cond) {                                                       \
      passed++;                                                       \
    } else {                                                          \
      failed++;                                                       \
      fprintf(stderr, "api_test.c:%d: failed: %s (last error: %s)\n", \
              __LINE__, #cond, kw_last_error_message());              \
    }                                                                 \
  } while (0)

typedef struct {
  char *data;
  size_t len, cap;
} Buffer;

static int32_t append(void *user_data, const uint8_t *data, size_t len) {
  Buffer *b = (Buffer *)user_data;
  if (b->len + len > b->cap) {
    size_t cap = b->cap ? b->cap * 2 : 4096;
    while (cap < b->len + len) cap *= 2;
    char *grown = (char *)realloc(b->data, cap);
    if (grown == NULL) return 1;
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, data, len);
  b->len += len;
  return 0;
}

int main(void) {
  /* The header's layout, as the library expects it. */
  EXPECT(sizeof(KwOptions) == 8 * 2 + 4 * 6 + 8 * 5 || sizeof(size_t) != 8);
  EXPECT(sizeof(KwSummary) == 9 * 8);
  EXPECT(sizeof(KwStatus) == 4);

  KwOptions opts;
  memset(&opts, 0xAB, sizeof opts);
  EXPECT(kw_options_default(&opts) == KW_STATUS_OK);
  EXPECT(opts.size == sizeof(KwOptions));
  EXPECT(opts.level == KW_LEVEL_DEFAULT);
  EXPECT(opts.late_labels == KW_LATE_LABELS_OFF);
  EXPECT(opts.window_retired_limit == KW_NO_LIMIT);
  EXPECT(strcmp(kw_version(), "") != 0);

  /* A NULL writer: every call succeeds and does nothing. */
  KwWriter *none = NULL;
  KwInsn i = 0;
  KwStage s = 7;
  EXPECT(kw_begin(none, 1, 0, &i) == KW_STATUS_OK && i == KW_INSN_UNTRACED);
  EXPECT(kw_stage(none, "F", 1, &s) == KW_STATUS_OK && s == KW_STAGE_NONE);
  EXPECT(kw_label(none, i, KW_LABEL_NAME, "x", 1) == KW_STATUS_OK);
  EXPECT(kw_enter(none, i, KW_LANE_MAIN, s) == KW_STATUS_OK);
  EXPECT(kw_advance(none, 1) == KW_STATUS_OK);
  EXPECT(kw_retire(none, i, NULL) == KW_STATUS_OK);
  EXPECT(!kw_is_tracing(none));
  EXPECT(kw_finish(none, NULL) == KW_STATUS_OK);
  kw_free(none);

  /* A writer into memory. */
  Buffer out = {NULL, 0, 0};
  KwWriter *w = NULL;
  opts.start_cycle = 100;
  EXPECT(kw_open_callback(append, &out, &opts, &w) == KW_STATUS_OK && w != NULL);
  KwStage f = 0;
  EXPECT(kw_stage(w, "F", 1, &f) == KW_STATUS_OK && f != KW_STAGE_NONE);
  EXPECT(kw_stage(w, " F", 2, &s) == KW_STATUS_INVALID_STAGE_NAME);
  EXPECT(strstr(kw_last_error_message(), "white space") != NULL);
  const char *name = NULL;
  size_t name_len = 0;
  EXPECT(kw_stage_name(w, KW_STAGE_STALL, &name, &name_len) == KW_STATUS_OK &&
         name_len == 3 && memcmp(name, "stl", 3) == 0);
  EXPECT(kw_begin(w, 42, 1, &i) == KW_STATUS_OK && i == 0);
  EXPECT(kw_label(w, i, KW_LABEL_NAME, "nop\tx\n", 6) == KW_STATUS_OK);
  EXPECT(kw_label(w, i, KW_LABEL_STAGE_NOTE, "n", 1) == KW_STATUS_NOTE_BEFORE_STAGE);
  EXPECT(kw_enter(w, i, KW_LANE_MAIN, f) == KW_STATUS_OK);
  KwStage open = 0;
  EXPECT(kw_open_stage(w, i, KW_LANE_MAIN, &open) == KW_STATUS_OK && open == f);
  EXPECT(kw_set_cycle(w, 103) == KW_STATUS_OK);
  EXPECT(kw_set_cycle(w, 102) == KW_STATUS_TIME_WENT_BACK);
  EXPECT(strcmp(kw_last_error_message(), "time went back from cycle 103 to cycle 102") == 0);
  EXPECT(strcmp(kw_status_name(KW_STATUS_TIME_WENT_BACK), "KW_STATUS_TIME_WENT_BACK") == 0);
  uint64_t retire_id = 9;
  EXPECT(kw_retire(w, i, &retire_id) == KW_STATUS_OK && retire_id == 0);
  EXPECT(kw_retire(w, i, &retire_id) == KW_STATUS_NOT_LIVE);
  EXPECT(!kw_is_live(w, i));
  KwSummary summary;
  EXPECT(kw_summary(w, &summary) == KW_STATUS_OK && summary.instructions == 1);
  EXPECT(kw_finish(w, &summary) == KW_STATUS_OK);
  EXPECT(summary.retired == 1 && summary.first_cycle == 100 && summary.last_cycle == 103);
  EXPECT(summary.text_bytes == out.len);
  const char *expected =
      "Kanata\t0004\nC=\t100\nI\t0\t42\t1\nL\t0\t0\tnop x\\n\nS\t0\t0\tF\nC\t3\nE\t0\t0\tF\n"
      "R\t0\t0\t0\n";
  EXPECT(out.len == strlen(expected) && memcmp(out.data, expected, out.len) == 0);
  if (out.len != strlen(expected)) fwrite(out.data, 1, out.len, stderr);
  free(out.data);

  /* Errors at open leave the handle NULL. */
  opts.compression = KW_COMPRESSION_GZIP;
  opts.level = 42;
  w = (KwWriter *)&opts;
  EXPECT(kw_open_callback(append, &out, &opts, &w) == KW_STATUS_INVALID_OPTION && w == NULL);
  EXPECT(kw_open_path("", 0, NULL, &w) == KW_STATUS_INVALID_ARGUMENT && w == NULL);

  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
