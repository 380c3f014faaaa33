// example.cpp: the trace of example.c, written through the C++ wrapper kanata_writer.hpp:
// a few instructions with stalls, a branch mispredict that flushes a younger instruction, and
// dependency arrows.
//
//   ./example_cpp             writes the trace to stdout (through a std::ostream)
//   ./example_cpp run.kanata  writes it to a file (run.kanata.zst: compressed)
//
// Build: see ../README.md. The trace is examples/example.kanata, byte for byte.
#include <cstdio>
#include <iostream>

#include "kanata_writer.hpp"

using kanata::LabelKind;
using kanata::Lane;

int main(int argc, char **argv) try {
  auto options = kanata::Options().live_at_end(kanata::LiveAtEnd::Flush);
  kanata::Writer w = argc > 1 ? kanata::Writer::open(argv[1], options)
                              : kanata::Writer::open(std::cout, options);

  const kanata::Stage f = w.stage("F"), d = w.stage("Dc"), x = w.stage("X"),
                      m = w.stage("Mem"), c = w.stage("Cm");

  // Cycle 1: a load and an add are fetched.
  w.advance(1);
  kanata::InsnId load = w.begin(0x1000, 0);
  w.label(load, LabelKind::Name, "0x80000000: lw a0, 0(sp)");
  w.enter(load, Lane::MAIN, f);
  kanata::InsnId add = w.begin(0x1001, 0);
  w.label(add, LabelKind::Name, "0x80000004: add a1, a0, a0");
  w.enter(add, Lane::MAIN, f);

  // Cycle 2: both decode; a branch is fetched.
  w.advance(1);
  w.enter(load, Lane::MAIN, d);
  w.enter(add, Lane::MAIN, d);
  kanata::InsnId branch = w.begin(0x1002, 0);
  w.label(branch, LabelKind::Name, "0x80000008: bne a1, zero, 0x80000100");
  w.enter(branch, Lane::MAIN, f);

  // Cycle 3: the load executes and misses; the add waits for it (a stall, and a wake-up arrow
  // from the load); the branch decodes; a wrong-path instruction is fetched.
  w.advance(1);
  w.enter(load, Lane::MAIN, x);
  w.label(load, LabelKind::Detail, "addr = 0x8001ffe0");
  w.stall_begin(add);
  w.depend(add, load);
  w.enter(branch, Lane::MAIN, d);
  kanata::InsnId wrong = w.begin(0x1003, 0);
  w.label(wrong, LabelKind::Name, "0x8000000c: sub a2, a2, a1");
  w.enter(wrong, Lane::MAIN, f);

  // Cycle 4: the load goes to memory; a note on that stage. The branch stalls too.
  w.advance(1);
  w.enter(load, Lane::MAIN, m);
  w.label(load, LabelKind::StageNote, "L1D miss");
  w.stall_begin(branch);

  // Cycle 7: the data is back; the load completes, the add and the branch execute.
  w.set_cycle(7);
  w.enter(load, Lane::MAIN, c);
  w.stall_end(add);
  w.enter(add, Lane::MAIN, x);
  w.stall_end(branch);
  w.enter(branch, Lane::MAIN, x);
  w.depend(branch, add, kanata::DepKind::WAKE_UP);

  // Cycle 8: the load retires; the branch resolves as mispredicted: the wrong-path
  // instruction is flushed.
  w.advance(1);
  w.retire(load);
  w.enter(add, Lane::MAIN, c);
  w.enter(branch, Lane::MAIN, c);
  w.label(branch, LabelKind::Detail, "mispredicted");
  w.flush(wrong);

  // Cycle 9: the add and the branch retire.
  w.advance(1);
  w.retire(add);
  std::optional<std::uint64_t> retire_id = w.retire(branch);

  // The destructor would finish the trace too; finish() reports errors and the summary.
  kanata::Summary s = w.finish();
  std::cout.flush();
  std::fprintf(stderr,
               "%llu instructions (%llu retired, %llu flushed), cycles %lld to %lld, %llu "
               "bytes; last retire id %llu\n",
               (unsigned long long)s.instructions, (unsigned long long)s.retired,
               (unsigned long long)s.flushed, (long long)s.first_cycle,
               (long long)s.last_cycle, (unsigned long long)s.text_bytes,
               (unsigned long long)retire_id.value_or(0));
  return 0;
} catch (const kanata::Error &e) {
  std::fprintf(stderr, "example.cpp: %s: %s\n", kanata::status_name(e.status()), e.what());
  return 1;
}
