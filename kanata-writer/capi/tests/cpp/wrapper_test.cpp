// wrapper_test.cpp: the C++ wrapper's behaviour: RAII finishing, exceptions or statuses,
// value types, a writer without a trace. Built and run by tests/c_examples.rs; prints
// "N passed, 0 failed" on success.
#include <cstdio>
#include <sstream>
#include <string>
#include <utility>

#include "kanata_writer.hpp"

static int passed, failed;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (cond) {                                                                \
      passed++;                                                                \
    } else {                                                                   \
      failed++;                                                                \
      std::fprintf(stderr, "wrapper_test.cpp:%d: failed: %s\n", __LINE__, #cond); \
    }                                                                          \
  } while (0)

using kanata::InsnId;
using kanata::LabelKind;
using kanata::Lane;
using kanata::Stage;
using kanata::Status;

static void raii_finishes_the_trace() {
  std::ostringstream out;
  {
    kanata::Writer w = kanata::Writer::open(out);
    InsnId i = w.begin(7);
    w.enter(i, Lane::MAIN, w.stage("F"));
    w.advance(2);
  }  // the destructor finishes: the last C line keeps cycle 2
  EXPECT(out.str() == "Kanata\t0004\nC=\t0\nI\t0\t7\t0\nS\t0\t0\tF\nC\t2\n");
}

static void errors_are_exceptions() {
  std::ostringstream out;
  kanata::Writer w = kanata::Writer::open(out);
  InsnId i = w.begin(1);
  EXPECT(w.retire(i) == std::optional<std::uint64_t>(0));
  try {
    w.label(i, LabelKind::Name, "late");
    EXPECT(false);
  } catch (const kanata::Error &e) {
    EXPECT(e.status() == Status::NotLive);
    EXPECT(e.is_misuse());
    EXPECT(std::string(e.what()) == "instruction 0 was already retired or flushed");
  }
  try {
    w.stage("a // b");
    EXPECT(false);
  } catch (const kanata::Error &e) {
    EXPECT(e.status() == Status::InvalidStageName);
  }
  // The writer goes on after misuse.
  w.advance(1);
  kanata::Summary s = w.finish();
  EXPECT(s.instructions == 1 && s.retired == 1 && s.last_cycle == 1);
  EXPECT(!w);
  EXPECT(w.finish().instructions == 0);  // no trace any more: a no-op
}

static void no_throw_returns_statuses() {
  std::ostringstream out;
  auto opened = kanata::WriterNoThrow::open(out, kanata::Options().compact(true));
  EXPECT(opened.ok());
  kanata::WriterNoThrow w = std::move(opened).value();
  auto f = w.stage("F");
  EXPECT(f.ok() && f.value() != Stage::STALL && !f.value().is_none());
  auto i = w.begin(3);
  EXPECT(i.ok() && i.value().file_id() == std::optional<std::uint64_t>(0));
  EXPECT(w.enter(i.value(), Lane::MAIN, f.value()) == Status::Ok);
  EXPECT(w.open_stage(i.value(), Lane::MAIN) == f.value());
  EXPECT(w.stage_name(f.value()) == "F");
  EXPECT(w.leave(i.value(), Lane::STALL) == Status::NoOpenStage);
  EXPECT(kanata::last_error_message() == "instruction 0 has no open stage in lane 1");
  EXPECT(w.set_cycle(5) == Status::Ok);
  EXPECT(w.set_cycle(4) == Status::TimeWentBack);
  EXPECT(w.cycle() == 5);
  EXPECT(w.flush(i.value()) == Status::Ok);
  auto bad = kanata::WriterNoThrow::open(
      out, kanata::Options().compression(kanata::Compression::Zstd).level(99));
  EXPECT(!bad.ok() && bad.status() == Status::InvalidOption && !bad.value());
  auto s = w.finish();
  EXPECT(s.ok() && s.value().flushed == 1);
  EXPECT(out.str() == "Kanata\t0004\nC=\t0\nI\t0\t3\t0\nS\t0\t0\tF\nC\t5\nR\t0\t0\t1\n");
}

static void without_a_trace_every_call_is_a_no_op() {
  kanata::Writer w;
  EXPECT(!w && !w.is_tracing());
  InsnId i = w.begin(1);
  EXPECT(!i.is_traced() && i == InsnId());
  w.label(i, LabelKind::Name, "x");
  w.enter(i, Lane::MAIN, w.stage("F"));
  w.stall_begin(i);
  w.depend(i, i);
  EXPECT(!w.retire(i).has_value());
  EXPECT(w.finish().instructions == 0);
}

static void a_failing_stream_is_an_io_error() {
  std::ostringstream out;
  out.setstate(std::ios::badbit);
  kanata::Writer w = kanata::Writer::open(out);
  w.begin(1);
  try {
    w.finish();
    EXPECT(false);
  } catch (const kanata::Error &e) {
    EXPECT(e.status() == Status::Io && !e.is_misuse());
  }
}

static void moves_transfer_the_trace() {
  std::ostringstream out;
  kanata::Writer a = kanata::Writer::open(out);
  kanata::Writer b;
  b = std::move(a);
  EXPECT(!a && b);
  b.begin(9);
  KwWriter *raw = b.release();
  EXPECT(!b && raw != nullptr);
  kanata::Writer c(raw);
  EXPECT(c.finish().instructions == 1);
}

int main() {
  raii_finishes_the_trace();
  errors_are_exceptions();
  no_throw_returns_statuses();
  without_a_trace_every_call_is_a_no_op();
  a_failing_stream_is_an_io_error();
  moves_transfer_the_trace();
  std::printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
