/*
 * bench.c: the throughput benchmark's event stream replayed through the C API.
 *
 *   bench EVENTS_FILE [ROUNDS]
 *
 * EVENTS_FILE is written by the Rust side (benches/abi.rs, `cargo bench -p
 * kanata-writer-capi`), which also times the same stream through the Rust API: the stream of
 * kanata-writer/benches/common/mod.rs (a model out-of-order core: begin, labels, six stages,
 * stalls, dependencies, retire and flush). Every event is one kw_ call, as a simulator written
 * in C would make it. The output goes through a callback into a growing buffer, reused from
 * round to round as the Rust side reuses its Vec; its length and FNV-1a hash must match the
 * Rust API's output, which the file carries.
 *
 * Prints one line per variant:
 *   <name> replay=<ns/event> total=<ns/event> rounds=<n>
 * (medians): "replay" times the loop of calls, "total" also the open and the finish.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kanata_writer.h"

enum { ADVANCE, BEGIN, LABEL, ENTER, LEAVE, STALL_BEGIN, STALL_END, RETIRE, FLUSH, DEPEND };

/* One event: 12 bytes in the file, little-endian. */
typedef struct {
  uint8_t tag;
  uint8_t small; /* label kind, or stage index */
  uint16_t text; /* label text index */
  uint32_t a;    /* instruction index, sim id, or cycles */
  uint32_t b;    /* producer index */
} Event;

typedef struct {
  char *data;
  size_t len;
} Str;

typedef struct {
  uint8_t *data;
  size_t len, cap;
} Buffer;

static uint64_t u64le(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
  return v;
}

static uint32_t u32le(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void die(const char *what) {
  fprintf(stderr, "bench: %s\n", what);
  exit(1);
}

static int32_t append(void *user_data, const uint8_t *data, size_t len) {
  Buffer *b = (Buffer *)user_data;
  if (b->len + len > b->cap) {
    size_t cap = b->cap ? b->cap : 1 << 20;
    while (cap < b->len + len) cap *= 2;
    uint8_t *grown = (uint8_t *)realloc(b->data, cap);
    if (grown == NULL) return 1;
    b->data = grown;
    b->cap = cap;
  }
  memcpy(b->data + b->len, data, len);
  b->len += len;
  return 0;
}

static double now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int compare(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, compare);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

#define CHECK(call)                                                              \
  do {                                                                           \
    KwStatus s_ = (call);                                                        \
    if (s_ != KW_STATUS_OK) {                                                    \
      fprintf(stderr, "bench: %s: %s\n", kw_status_name(s_), kw_last_error_message()); \
      exit(1);                                                                   \
    }                                                                            \
  } while (0)

/* The replay: one kw_ call per event, exactly the Rust side's calls. */
static void replay(KwWriter *w, const Event *events, size_t n, const Str *texts,
                   const KwStage *stages, KwInsn *ids) {
  static const KwLabelKind kinds[3] = {KW_LABEL_NAME, KW_LABEL_DETAIL, KW_LABEL_STAGE_NOTE};
  size_t next = 0;
  for (size_t i = 0; i < n; i++) {
    const Event *e = &events[i];
    switch (e->tag) {
      case ADVANCE: CHECK(kw_advance(w, e->a)); break;
      case BEGIN: CHECK(kw_begin(w, e->a, 0, &ids[next++])); break;
      case LABEL: {
        const Str *t = &texts[e->text];
        CHECK(kw_label(w, ids[e->a], kinds[e->small], t->data, t->len));
        break;
      }
      case ENTER: CHECK(kw_enter(w, ids[e->a], KW_LANE_MAIN, stages[e->small])); break;
      case LEAVE: CHECK(kw_leave(w, ids[e->a], KW_LANE_MAIN)); break;
      case STALL_BEGIN: CHECK(kw_stall_begin(w, ids[e->a])); break;
      case STALL_END: CHECK(kw_stall_end(w, ids[e->a])); break;
      case RETIRE: CHECK(kw_retire(w, ids[e->a], NULL)); break;
      case FLUSH: CHECK(kw_flush(w, ids[e->a])); break;
      case DEPEND: CHECK(kw_depend(w, ids[e->a], ids[e->b], KW_DEP_WAKE_UP)); break;
      default: die("bad event");
    }
  }
}

static uint64_t fnv1a(const uint8_t *p, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}

int main(int argc, char **argv) {
  if (argc < 2) die("usage: bench EVENTS_FILE [ROUNDS]");
  int rounds = argc > 2 ? atoi(argv[2]) : 9;
  if (rounds < 1) rounds = 1;

  /* The file: "KWEVENTS", counts, texts, stage names, events, expected output. */
  FILE *f = fopen(argv[1], "rb");
  if (f == NULL) die("cannot open the events file");
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *raw = (uint8_t *)malloc((size_t)size);
  if (raw == NULL || fread(raw, 1, (size_t)size, f) != (size_t)size) die("cannot read it");
  fclose(f);
  if (size < 8 || memcmp(raw, "KWEVENTS", 8) != 0) die("not an events file");
  const uint8_t *p = raw + 8;
  uint32_t ntexts = u32le(p), nstages = u32le(p + 4);
  p += 8;
  Str *texts = (Str *)calloc(ntexts, sizeof *texts);
  for (uint32_t i = 0; i < ntexts; i++) {
    texts[i].len = u32le(p);
    texts[i].data = (char *)p + 4;
    p += 4 + texts[i].len;
  }
  Str stage_names[16];
  if (nstages > 16) die("too many stages");
  for (uint32_t i = 0; i < nstages; i++) {
    stage_names[i].len = u32le(p);
    stage_names[i].data = (char *)p + 4;
    p += 4 + stage_names[i].len;
  }
  size_t nevents = (size_t)u64le(p), ninsns = (size_t)u64le(p + 8);
  uint64_t want_len = u64le(p + 16), want_hash = u64le(p + 24);
  p += 32;
  Event *events = (Event *)malloc(nevents * sizeof *events);
  for (size_t i = 0; i < nevents; i++, p += 12) {
    events[i].tag = p[0];
    events[i].small = p[1];
    events[i].text = (uint16_t)(p[2] | p[3] << 8);
    events[i].a = u32le(p + 4);
    events[i].b = u32le(p + 8);
  }
  if (p != raw + size) die("events file has the wrong length");
  KwInsn *ids = (KwInsn *)malloc(ninsns * sizeof *ids);

  Buffer out = {NULL, 0, 0};
  double *replay_ns = (double *)malloc((size_t)rounds * sizeof(double));
  double *total_ns = (double *)malloc((size_t)rounds * sizeof(double));

  /* Through the C API into memory; one round more as a warm-up (buffer sized, pages in). */
  for (int r = -1; r < rounds; r++) {
    out.len = 0;
    double t0 = now_ns();
    KwWriter *w = NULL;
    CHECK(kw_open_callback(append, &out, NULL, &w));
    KwStage stages[16];
    for (uint32_t i = 0; i < nstages; i++)
      CHECK(kw_stage(w, stage_names[i].data, stage_names[i].len, &stages[i]));
    double t1 = now_ns();
    replay(w, events, nevents, texts, stages, ids);
    double t2 = now_ns();
    CHECK(kw_finish(w, NULL));
    double t3 = now_ns();
    if (r >= 0) {
      replay_ns[r] = (t2 - t1) / (double)nevents;
      total_ns[r] = (t3 - t0) / (double)nevents;
    }
  }
  if (out.len != want_len || fnv1a(out.data, out.len) != want_hash) {
    fprintf(stderr, "bench: the C API wrote %zu bytes, the Rust API %" PRIu64 "\n", out.len,
            want_len);
    die("outputs differ");
  }
  printf("c_abi/memory replay=%.3f total=%.3f rounds=%d\n", median(replay_ns, rounds),
         median(total_ns, rounds), rounds);

  /* Tracing off: the same calls on a NULL writer. */
  for (int r = 0; r < rounds; r++) {
    KwStage stages[16] = {0};
    double t1 = now_ns();
    replay(NULL, events, nevents, texts, stages, ids);
    replay_ns[r] = (now_ns() - t1) / (double)nevents;
  }
  printf("c_abi/null_writer replay=%.3f total=%.3f rounds=%d\n", median(replay_ns, rounds),
         median(replay_ns, rounds), rounds);

  free(out.data);
  free(ids);
  free(events);
  free(texts);
  free(raw);
  free(replay_ns);
  free(total_ns);
  return 0;
}
