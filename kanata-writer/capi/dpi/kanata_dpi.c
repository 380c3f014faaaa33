/*
 * kanata_dpi.c: the C side of kanata_dpi.sv, the SystemVerilog DPI-C package of
 * kanata-writer. It maps the package's integer writer handles to KwWriter pointers and turns
 * the SystemVerilog types of the DPI-C standard (IEEE 1800-2017, annex H) into the C API's:
 *
 *   SystemVerilog          C (this file)
 *   int                    int
 *   int unsigned           unsigned int
 *   longint unsigned       unsigned long long
 *   string (input)         const char *   (NUL-terminated; owned by the simulator)
 *   output T               T *
 *
 * Handles are small integers rather than chandles so that a stale or made-up handle is an
 * error with a message instead of a crash: handle 0 means "no writer" (every call is a no-op
 * that succeeds, as a NULL KwWriter* in C), handles 1, 2, ... are writers in the order they
 * were opened, and a handle is never reused, so a call after kanata_finish is reported.
 *
 * Every function returns a KwStatus. On a failure the message, prefixed with the name of the
 * SystemVerilog function, is kept for kanata_dpi_last_error(); a misused call writes nothing
 * (the C API refuses it before writing).
 *
 * Threads: one static error buffer and one handle table, as DPI imports that are not `pure`
 * are called one at a time (Verilator's default --threads-dpi; the event-driven simulators
 * are single-threaded). Compile with the simulator's C compiler as C99 or later.
 *
 * Build with -DKANATA_DPI_HEADER='"Vtop__Dpi.h"' (the header Verilator or a commercial
 * simulator generates from the imports) to have the compiler check that every definition
 * here matches its import.
 *
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kanata_writer.h"

#ifdef KANATA_DPI_HEADER
#include KANATA_DPI_HEADER
#endif

/* Verilator compiles this file as C++: keep the definitions' names unmangled. */
#ifdef __cplusplus
extern "C" {
#endif

typedef unsigned long long u64;

/* The flags of kanata_open; the same values as the package's KANATA_ parameters. */
enum {
  FLAG_BACKGROUND = 1,
  FLAG_COMPACT = 2,
  FLAG_FATAL = 4,
  FLAG_RETIRE_AT_END = 8,
  FLAG_FLUSH_AT_END = 16,
  FLAG_ALL = 31
};

typedef struct {
  KwWriter *writer; /* NULL once finished */
  int flags;
  int ended_by_fatal; /* finished by kanata_dpi_fatal: kanata_finish is a no-op */
  KwSummary summary;  /* what kanata_finish reported */
} Slot;

static Slot *slots = NULL;
static int slot_count = 0, slot_cap = 0;
static int any_fatal = 0;
static char last_error[1024] = "";

/* Keeps `fn: message` as the last error and returns `status`. */
static int fail_msg(int status, const char *fn, const char *message) {
  snprintf(last_error, sizeof last_error, "%s: %s", fn, message);
  return status;
}

/* A failed C API call: its message, with the function's name. */
static int fail(int status, const char *fn) {
  return fail_msg(status, fn, kw_last_error_message());
}

#define CALL(fn, expr)                     \
  do {                                     \
    KwStatus s_ = (expr);                  \
    return s_ == KW_STATUS_OK ? 0 : fail(s_, fn); \
  } while (0)

static int bad_handle(int h, const char *fn) {
  char message[256];
  if (h > 0 && h <= slot_count)
    snprintf(message, sizeof message,
             "writer handle %d was already finished (kanata_finish); nothing was written", h);
  else
    snprintf(message, sizeof message,
             "%d is not a writer handle (kanata_open gives them; 0 is no writer); nothing "
             "was written",
             h);
  return fail_msg(KW_STATUS_INVALID_ARGUMENT, fn, message);
}

static int cached_h = 0;          /* the handle looked up last ... */
static KwWriter *cached_w = NULL; /* ... and its writer (NULL for 0) */

/* The writer of handle `h` into *w: NULL for handle 0. False for a handle that is no live
 * writer. */
static inline int lookup(int h, KwWriter **w) {
  if (h == cached_h) {
    *w = cached_w;
    return 1;
  }
  if (h == 0) {
    *w = NULL;
    return 1;
  }
  if ((unsigned)(h - 1) < (unsigned)slot_count && slots[h - 1].writer != NULL) {
    cached_h = h;
    cached_w = slots[h - 1].writer;
    *w = cached_w;
    return 1;
  }
  return 0;
}

/* A writer is gone: the cache must not give it out again. */
static void forget(int h) {
  if (cached_h == h) {
    cached_h = 0;
    cached_w = NULL;
  }
}

#define WRITER(fn)                                   \
  KwWriter *w;                                       \
  if (!lookup(h, &w)) return bad_handle(h, fn)

const char *kanata_dpi_last_error(void) { return last_error; }

const char *kanata_dpi_status_name(int status) { return kw_status_name(status); }

const char *kanata_dpi_version(void) { return kw_version(); }

/* After a failed call on handle `h`: whether the package must call $fatal (the writer was
 * opened with KANATA_FATAL; for a handle that is no writer, whether any writer was). If so,
 * every open writer is finished first, so that each trace is complete even when the
 * simulator aborts on $fatal without running final blocks (Verilator does); the error message
 * is kept. */
int kanata_dpi_fatal(int h) {
  int fatal = h > 0 && h <= slot_count ? (slots[h - 1].flags & FLAG_FATAL) != 0 : any_fatal;
  if (fatal) {
    for (int i = 0; i < slot_count; i++) {
      if (slots[i].writer != NULL) {
        KwWriter *w = slots[i].writer;
        slots[i].writer = NULL;
        slots[i].ended_by_fatal = 1;
        forget(i + 1);
        (void)kw_finish(w, &slots[i].summary);
      }
    }
  }
  return fatal;
}

int kanata_dpi_open(const char *path, int flags, int *h_out) {
  *h_out = 0;
  if ((flags & FLAG_FATAL) != 0) any_fatal = 1;
  if (path == NULL || path[0] == '\0')
    return fail_msg(KW_STATUS_INVALID_ARGUMENT, "kanata_open", "the path is empty");
  if ((flags & ~FLAG_ALL) != 0 ||
      (flags & (FLAG_RETIRE_AT_END | FLAG_FLUSH_AT_END)) ==
          (FLAG_RETIRE_AT_END | FLAG_FLUSH_AT_END)) {
    char message[256];
    snprintf(message, sizeof message,
             "flags %d: not a combination of KANATA_BACKGROUND, KANATA_COMPACT, "
             "KANATA_FATAL and one of KANATA_RETIRE_AT_END, KANATA_FLUSH_AT_END",
             flags);
    return fail_msg(KW_STATUS_INVALID_ARGUMENT, "kanata_open", message);
  }
  if (slot_count == slot_cap) {
    int cap = slot_cap ? 2 * slot_cap : 4;
    Slot *grown = (Slot *)realloc(slots, (size_t)cap * sizeof *slots);
    if (grown == NULL)
      return fail_msg(KW_STATUS_IO, "kanata_open", "out of memory for the handle table");
    slots = grown;
    slot_cap = cap;
  }
  KwOptions opts;
  kw_options_default(&opts);
  opts.background = (flags & FLAG_BACKGROUND) != 0;
  opts.compact = (flags & FLAG_COMPACT) != 0;
  if (flags & FLAG_RETIRE_AT_END) opts.live_at_end = KW_LIVE_AT_END_RETIRE;
  if (flags & FLAG_FLUSH_AT_END) opts.live_at_end = KW_LIVE_AT_END_FLUSH;
  KwWriter *w = NULL;
  KwStatus s = kw_open_path(path, strlen(path), &opts, &w);
  if (s != KW_STATUS_OK) return fail(s, "kanata_open");
  Slot *slot = &slots[slot_count++];
  memset(slot, 0, sizeof *slot);
  slot->writer = w;
  slot->flags = flags;
  *h_out = slot_count;
  return 0;
}

int kanata_dpi_finish(int h) {
  if (h > 0 && h <= slot_count && slots[h - 1].ended_by_fatal) return 0;
  WRITER("kanata_finish");
  if (w == NULL) return 0;
  Slot *slot = &slots[h - 1];
  slot->writer = NULL; /* kw_finish frees it whatever the status */
  forget(h);
  KwStatus s = kw_finish(w, &slot->summary);
  return s == KW_STATUS_OK ? 0 : fail(s, "kanata_finish");
}

int kanata_dpi_summary(int h, u64 *instructions, u64 *retired, u64 *flushed) {
  KwSummary sum;
  memset(&sum, 0, sizeof sum);
  if (h > 0 && h <= slot_count && slots[h - 1].writer == NULL) {
    sum = slots[h - 1].summary;
  } else {
    KwWriter *w;
    if (!lookup(h, &w)) {
      *instructions = *retired = *flushed = 0;
      return bad_handle(h, "kanata_summary");
    }
    KwStatus s = kw_summary(w, &sum);
    if (s != KW_STATUS_OK) {
      *instructions = *retired = *flushed = 0;
      return fail(s, "kanata_summary");
    }
  }
  *instructions = sum.instructions;
  *retired = sum.retired;
  *flushed = sum.flushed;
  return 0;
}

int kanata_dpi_stage(int h, const char *name, unsigned int *stage) {
  *stage = KW_STAGE_NONE;
  WRITER("kanata_stage");
  KwStage out = KW_STAGE_NONE;
  KwStatus s = kw_stage(w, name, strlen(name), &out);
  *stage = out;
  return s == KW_STATUS_OK ? 0 : fail(s, "kanata_stage");
}

int kanata_dpi_begin(int h, u64 sim_id, unsigned int thread, u64 *insn) {
  *insn = KW_INSN_UNTRACED;
  WRITER("kanata_begin");
  KwInsn out = KW_INSN_UNTRACED;
  KwStatus s = kw_begin(w, sim_id, thread, &out);
  *insn = out;
  return s == KW_STATUS_OK ? 0 : fail(s, "kanata_begin");
}

int kanata_dpi_label(int h, u64 insn, int kind, const char *text) {
  WRITER("kanata_label");
  if (kind < 0) return fail_msg(KW_STATUS_INVALID_ARGUMENT, "kanata_label", "negative label kind");
  CALL("kanata_label", kw_label(w, insn, (KwLabelKind)kind, text, strlen(text)));
}

int kanata_dpi_enter(int h, u64 insn, unsigned int lane, unsigned int stage) {
  WRITER("kanata_enter");
  CALL("kanata_enter", kw_enter(w, insn, lane, stage));
}

int kanata_dpi_leave(int h, u64 insn, unsigned int lane) {
  WRITER("kanata_leave");
  CALL("kanata_leave", kw_leave(w, insn, lane));
}

int kanata_dpi_stall_begin(int h, u64 insn) {
  WRITER("kanata_stall_begin");
  CALL("kanata_stall_begin", kw_stall_begin(w, insn));
}

int kanata_dpi_stall_end(int h, u64 insn) {
  WRITER("kanata_stall_end");
  CALL("kanata_stall_end", kw_stall_end(w, insn));
}

int kanata_dpi_retire(int h, u64 insn, u64 *retire_id) {
  *retire_id = KW_RETIRE_ID_NONE;
  WRITER("kanata_retire");
  uint64_t out = KW_RETIRE_ID_NONE;
  KwStatus s = kw_retire(w, insn, &out);
  *retire_id = out;
  return s == KW_STATUS_OK ? 0 : fail(s, "kanata_retire");
}

int kanata_dpi_flush(int h, u64 insn) {
  WRITER("kanata_flush");
  CALL("kanata_flush", kw_flush(w, insn));
}

int kanata_dpi_depend(int h, u64 consumer, u64 producer, unsigned int kind) {
  WRITER("kanata_depend");
  CALL("kanata_depend", kw_depend(w, consumer, producer, kind));
}

int kanata_dpi_set_cycle(int h, u64 cycle) {
  WRITER("kanata_set_cycle");
  CALL("kanata_set_cycle", kw_set_cycle(w, cycle));
}

int kanata_dpi_advance(int h, u64 cycles) {
  WRITER("kanata_advance");
  CALL("kanata_advance", kw_advance(w, cycles));
}

int kanata_dpi_cycle(int h, u64 *cycle) {
  *cycle = 0;
  WRITER("kanata_cycle");
  int64_t out = 0;
  KwStatus s = kw_cycle(w, &out);
  *cycle = (u64)out;
  return s == KW_STATUS_OK ? 0 : fail(s, "kanata_cycle");
}

#ifdef __cplusplus
} /* extern "C" */
#endif
