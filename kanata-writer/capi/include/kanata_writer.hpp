// kanata_writer.hpp: a header-only C++17 wrapper over kanata_writer.h, the C API of
// kanata-writer, which writes Kanata pipeline traces (the format the Konata viewer draws).
//
//   kanata::Writer w = kanata::Writer::open("run.kanata.zst");
//   kanata::Stage fetch = w.stage("F");
//   kanata::InsnId i = w.begin(0x80000000, 0);
//   w.label(i, kanata::LabelKind::Name, "0x80000000: lw a0, 0(sp)");
//   w.enter(i, kanata::Lane::MAIN, fetch);
//   w.advance(1);
//   w.retire(i);
//   // the destructor finishes the trace; call w.finish() to see errors and the summary
//
// - kanata::Writer throws kanata::Error on any failure; kanata::WriterNoThrow returns a
//   kanata::Status (or a kanata::Result<T> for calls with a value) instead.
// - A default-constructed writer has no trace: every call is a cheap no-op that succeeds, so a
//   simulator can call unconditionally with tracing off.
// - Labels and names are std::string_view: no NUL needed; invalid UTF-8 becomes U+FFFD.
// - A writer is used from one thread at a time; it may move between threads.
//
// Link: libkanata_writer.a (with -lpthread -ldl -lm) or libkanata_writer.so.
// SPDX-License-Identifier: MIT OR Apache-2.0

#ifndef KANATA_WRITER_HPP
#define KANATA_WRITER_HPP

#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "kanata_writer.h"

namespace kanata {

// What a call did; the values of KwStatus.
enum class Status : std::int32_t {
  Ok = KW_STATUS_OK,
  TimeWentBack = KW_STATUS_TIME_WENT_BACK,
  CycleOverflow = KW_STATUS_CYCLE_OVERFLOW,
  NotLive = KW_STATUS_NOT_LIVE,
  UnknownInsn = KW_STATUS_UNKNOWN_INSN,
  NoOpenStage = KW_STATUS_NO_OPEN_STAGE,
  NoteBeforeStage = KW_STATUS_NOTE_BEFORE_STAGE,
  ProducerNotOlder = KW_STATUS_PRODUCER_NOT_OLDER,
  InvalidStageName = KW_STATUS_INVALID_STAGE_NAME,
  UnknownStage = KW_STATUS_UNKNOWN_STAGE,
  InvalidOption = KW_STATUS_INVALID_OPTION,
  InvalidArgument = KW_STATUS_INVALID_ARGUMENT,
  Io = KW_STATUS_IO,
  Poisoned = KW_STATUS_POISONED,
  Panic = KW_STATUS_PANIC,
  Other = KW_STATUS_OTHER,
};

// The name of a status, such as "KW_STATUS_NOT_LIVE".
inline const char *status_name(Status status) noexcept {
  return kw_status_name(static_cast<std::int32_t>(status));
}

// Whether a status is misuse: the call was rejected before anything was written, and the
// writer can go on. Other failures (Io, Poisoned, Panic) leave the writer unusable.
inline bool is_misuse(Status status) noexcept {
  auto code = static_cast<std::int32_t>(status);
  return code >= 1 && code <= 19;
}

// The message of the last failure on the calling thread ("" if none).
inline std::string_view last_error_message() noexcept { return kw_last_error_message(); }

// A failure, as kanata::Writer throws it: what() is the library's message.
class Error : public std::runtime_error {
 public:
  Error(Status status, const std::string &message)
      : std::runtime_error(message), status_(status) {}

  Status status() const noexcept { return status_; }
  bool is_misuse() const noexcept { return kanata::is_misuse(status_); }

 private:
  Status status_;
};

// An instruction, as begin() returns it. A default-constructed InsnId is untraced: every call
// on it is accepted and writes nothing.
class InsnId {
 public:
  constexpr InsnId() noexcept = default;
  constexpr explicit InsnId(KwInsn raw) noexcept : raw_(raw) {}

  // The C handle.
  constexpr KwInsn raw() const noexcept { return raw_; }
  // Whether the instruction is written to the trace (it began inside the window).
  constexpr bool is_traced() const noexcept { return raw_ != KW_INSN_UNTRACED; }
  // The id written in the file, or nothing for an untraced instruction.
  std::optional<std::uint64_t> file_id() const noexcept {
    if (is_traced()) return raw_;
    return std::nullopt;
  }

  friend constexpr bool operator==(InsnId a, InsnId b) noexcept { return a.raw_ == b.raw_; }
  friend constexpr bool operator!=(InsnId a, InsnId b) noexcept { return a.raw_ != b.raw_; }
  friend constexpr bool operator<(InsnId a, InsnId b) noexcept { return a.raw_ < b.raw_; }

 private:
  KwInsn raw_ = KW_INSN_UNTRACED;
};

// A stage name interned by Writer::stage(); belongs to the writer that made it. A
// default-constructed Stage is no stage.
class Stage {
 public:
  constexpr Stage() noexcept = default;
  constexpr explicit Stage(KwStage raw) noexcept : raw_(raw) {}

  // `stl`, the stall stage of lane 1, in every writer.
  static const Stage STALL;

  constexpr KwStage raw() const noexcept { return raw_; }
  constexpr bool is_none() const noexcept { return raw_ == KW_STAGE_NONE; }

  friend constexpr bool operator==(Stage a, Stage b) noexcept { return a.raw_ == b.raw_; }
  friend constexpr bool operator!=(Stage a, Stage b) noexcept { return a.raw_ != b.raw_; }

 private:
  KwStage raw_ = KW_STAGE_NONE;
};

inline constexpr Stage Stage::STALL{KW_STAGE_STALL};

// A track of stages over one instruction's row: lane 0 holds the pipeline stages, lane 1 the
// stalls.
class Lane {
 public:
  constexpr explicit Lane(std::uint32_t n) noexcept : n_(n) {}

  static const Lane MAIN;
  static const Lane STALL;

  constexpr std::uint32_t get() const noexcept { return n_; }

  friend constexpr bool operator==(Lane a, Lane b) noexcept { return a.n_ == b.n_; }
  friend constexpr bool operator!=(Lane a, Lane b) noexcept { return a.n_ != b.n_; }

 private:
  std::uint32_t n_;
};

inline constexpr Lane Lane::MAIN{KW_LANE_MAIN};
inline constexpr Lane Lane::STALL{KW_LANE_STALL};

// Which label text an `L` command appends to.
enum class LabelKind : KwLabelKind {
  // The text in Konata's left pane (PC and disassembly).
  Name = KW_LABEL_NAME,
  // The detail Konata shows on mouse-over.
  Detail = KW_LABEL_DETAIL,
  // A note on the stage the instruction entered most recently.
  StageNote = KW_LABEL_STAGE_NOTE,
};

// The kind of a dependency arrow; Konata draws WAKE_UP.
class DepKind {
 public:
  constexpr explicit DepKind(std::uint32_t n) noexcept : n_(n) {}

  static const DepKind WAKE_UP;

  constexpr std::uint32_t get() const noexcept { return n_; }

 private:
  std::uint32_t n_;
};

inline constexpr DepKind DepKind::WAKE_UP{KW_DEP_WAKE_UP};

// How the trace is compressed; Auto picks it from the file name (`.gz`, `.zst`).
enum class Compression : KwCompression {
  Auto = KW_COMPRESSION_AUTO,
  None = KW_COMPRESSION_NONE,
  Gzip = KW_COMPRESSION_GZIP,
  Zstd = KW_COMPRESSION_ZSTD,
};

// What finish() does with instructions still live.
enum class LiveAtEnd : KwLiveAtEnd {
  LeaveOpen = KW_LIVE_AT_END_LEAVE_OPEN,
  Flush = KW_LIVE_AT_END_FLUSH,
  Retire = KW_LIVE_AT_END_RETIRE,
};

// What a trace holds (see KwSummary).
using Summary = KwSummary;

// How a writer is opened; every setter returns *this, and the defaults are the C API's.
class Options {
 public:
  Options() noexcept { kw_options_default(&raw_); }

  // The cycle the trace starts at, written as `C=`.
  Options &start_cycle(std::int64_t cycle) noexcept { raw_.start_cycle = cycle; return *this; }
  // Compression of the output (default: from the file name, or none).
  Options &compression(Compression c) noexcept {
    raw_.compression = static_cast<KwCompression>(c);
    return *this;
  }
  // gzip 0 to 9, zstd 1 to 22 or negative fast levels.
  Options &level(std::int32_t level) noexcept { raw_.level = level; return *this; }
  // Compress and write on a background thread.
  Options &background(bool yes) noexcept { raw_.background = yes; return *this; }
  // Leave out the `E` lines Konata implies.
  Options &compact(bool yes) noexcept { raw_.compact = yes; return *this; }
  // What finish() does with instructions still live.
  Options &live_at_end(LiveAtEnd policy) noexcept {
    raw_.live_at_end = static_cast<KwLiveAtEnd>(policy);
    return *this;
  }
  // Bytes formatted before they go to the output.
  Options &buffer_size(std::uint32_t bytes) noexcept { raw_.buffer_size = bytes; return *this; }
  // Accept labels up to `cycles` cycles after their instruction ended.
  Options &late_labels(std::int64_t cycles) noexcept { raw_.late_labels = cycles; return *this; }
  // Window: open only after `n` instructions have retired.
  Options &skip_retired(std::uint64_t n) noexcept { raw_.window_skip_retired = n; return *this; }
  // Window: close after `n` traced instructions have retired.
  Options &retired_limit(std::uint64_t n) noexcept {
    raw_.window_retired_limit = n;
    return *this;
  }
  // Window: trace only instructions that begin at a cycle in [begin, end).
  Options &cycles(std::uint64_t begin, std::uint64_t end) noexcept {
    raw_.window_cycle_start = begin;
    raw_.window_cycle_end = end;
    return *this;
  }

  const KwOptions &raw() const noexcept { return raw_; }
  KwOptions &raw() noexcept { return raw_; }

 private:
  KwOptions raw_;
};

// Error policies of BasicWriter: Throw (kanata::Error) or NoThrow (statuses and Results).
struct Throw {};
struct NoThrow {};

// A value and the status of the call that made it, as WriterNoThrow returns them. On a
// failure the value is the "nothing" value (an untraced InsnId, no Stage, ...).
template <class T>
class [[nodiscard]] Result {
 public:
  Result(Status status, T value) : status_(status), value_(std::move(value)) {}

  bool ok() const noexcept { return status_ == Status::Ok; }
  explicit operator bool() const noexcept { return ok(); }
  Status status() const noexcept { return status_; }
  T &value() & noexcept { return value_; }
  const T &value() const & noexcept { return value_; }
  T &&value() && noexcept { return std::move(value_); }

 private:
  Status status_;
  T value_;
};

template <class Policy = Throw>
class BasicWriter {
  static_assert(std::is_same_v<Policy, Throw> || std::is_same_v<Policy, NoThrow>,
                "the policy is kanata::Throw or kanata::NoThrow");
  static constexpr bool kThrows = std::is_same_v<Policy, Throw>;

 public:
  // What a call with a value returns: the value, or a Result for NoThrow.
  template <class T>
  using Returns = std::conditional_t<kThrows, T, Result<T>>;
  // What a call without a value returns: nothing, or a Status for NoThrow.
  using Done = std::conditional_t<kThrows, void, Status>;

  // No trace: every call is a no-op that succeeds.
  BasicWriter() noexcept = default;
  // Takes ownership of a handle from kw_open_* (NULL: no trace).
  explicit BasicWriter(KwWriter *raw) noexcept : raw_(raw) {}

  BasicWriter(const BasicWriter &) = delete;
  BasicWriter &operator=(const BasicWriter &) = delete;
  BasicWriter(BasicWriter &&other) noexcept : raw_(std::exchange(other.raw_, nullptr)) {}
  BasicWriter &operator=(BasicWriter &&other) noexcept {
    if (this != &other) {
      close();
      raw_ = std::exchange(other.raw_, nullptr);
    }
    return *this;
  }

  // Finishes the trace, ignoring errors: call finish() to see them.
  ~BasicWriter() { close(); }

  // A writer into a new file at `path`, compressed as its extension says unless the options
  // say otherwise.
  static Returns<BasicWriter> open(std::string_view path, const Options &options = Options()) {
    KwWriter *raw = nullptr;
    KwStatus s = kw_open_path(path.data(), path.size(), &options.raw(), &raw);
    return done(s, BasicWriter(raw));
  }

  // A writer into a std::ostream, which must outlive the writer. With background(true) the
  // stream is written from the compression thread.
  static Returns<BasicWriter> open(std::ostream &out, const Options &options = Options()) {
    return open_callback(&write_ostream, &out, options);
  }

  // A writer whose output goes to a C callback (see KwWriteFn).
  static Returns<BasicWriter> open_callback(KwWriteFn write, void *user_data,
                                            const Options &options = Options()) {
    KwWriter *raw = nullptr;
    KwStatus s = kw_open_callback(write, user_data, &options.raw(), &raw);
    return done(s, BasicWriter(raw));
  }

  // Whether there is a trace (false for a default-constructed or finished writer).
  explicit operator bool() const noexcept { return raw_ != nullptr; }
  // The C handle, still owned by this writer.
  KwWriter *get() const noexcept { return raw_; }
  // Gives up the C handle: the caller must kw_finish or kw_free it.
  KwWriter *release() noexcept { return std::exchange(raw_, nullptr); }

  // ----- time -----

  // Moves time to the absolute `cycle`.
  Done set_cycle(std::uint64_t cycle) { return done(kw_set_cycle(raw_, cycle)); }
  // Moves time forward by `cycles`.
  Done advance(std::uint64_t cycles) { return done(kw_advance(raw_, cycles)); }
  // The current cycle.
  std::int64_t cycle() const noexcept {
    std::int64_t c = 0;
    (void)kw_cycle(raw_, &c);
    return c;
  }

  // ----- stages -----

  // Checks and interns a stage name; the same name gives the same Stage.
  Returns<Stage> stage(std::string_view name) {
    KwStage s = KW_STAGE_NONE;
    KwStatus status = kw_stage(raw_, name.data(), name.size(), &s);
    return done(status, Stage(s));
  }
  // The name of a stage of this writer ("" for another writer's).
  std::string_view stage_name(Stage stage) const noexcept {
    const char *name = nullptr;
    std::size_t len = 0;
    if (kw_stage_name(raw_, stage.raw(), &name, &len) != KW_STATUS_OK) return {};
    return std::string_view(name, len);
  }

  // ----- instructions -----

  // Begins an instruction (`I`) with the simulator's id and a thread id.
  Returns<InsnId> begin(std::uint64_t sim_id, std::uint32_t thread = 0) {
    KwInsn insn = KW_INSN_UNTRACED;
    KwStatus s = kw_begin(raw_, sim_id, thread, &insn);
    return done(s, InsnId(insn));
  }
  // Like begin(), with ids that may be negative.
  Returns<InsnId> begin_signed(std::int64_t sim_id, std::int64_t thread) {
    KwInsn insn = KW_INSN_UNTRACED;
    KwStatus s = kw_begin_signed(raw_, sim_id, thread, &insn);
    return done(s, InsnId(insn));
  }
  // Appends text to one of the instruction's labels (`L`).
  Done label(InsnId insn, LabelKind kind, std::string_view text) {
    return done(kw_label(raw_, insn.raw(), static_cast<KwLabelKind>(kind), text.data(),
                         text.size()));
  }
  // The instruction enters `stage` in `lane` (`S`), closing the stage open there.
  Done enter(InsnId insn, Lane lane, Stage stage) {
    return done(kw_enter(raw_, insn.raw(), lane.get(), stage.raw()));
  }
  // The instruction leaves the stage open in `lane` (`E`).
  Done leave(InsnId insn, Lane lane) { return done(kw_leave(raw_, insn.raw(), lane.get())); }
  // The instruction starts stalling (`stl` in lane 1).
  Done stall_begin(InsnId insn) { return done(kw_stall_begin(raw_, insn.raw())); }
  // The instruction stops stalling.
  Done stall_end(InsnId insn) { return done(kw_stall_end(raw_, insn.raw())); }
  // The instruction retires (`R … 0`); its retire id, or nothing if untraced.
  Returns<std::optional<std::uint64_t>> retire(InsnId insn) {
    std::uint64_t id = KW_RETIRE_ID_NONE;
    KwStatus s = kw_retire(raw_, insn.raw(), &id);
    std::optional<std::uint64_t> retire_id;
    if (id != KW_RETIRE_ID_NONE) retire_id = id;
    return done(s, retire_id);
  }
  // The instruction is flushed (`R … 1`).
  Done flush(InsnId insn) { return done(kw_flush(raw_, insn.raw())); }
  // retire() with the retire id given.
  Done retire_as(InsnId insn, std::int64_t retire_id) {
    return done(kw_retire_as(raw_, insn.raw(), retire_id));
  }
  // flush() with the retire id given.
  Done flush_as(InsnId insn, std::int64_t retire_id) {
    return done(kw_flush_as(raw_, insn.raw(), retire_id));
  }
  // A dependency arrow from an older producer to a consumer (`W`).
  Done depend(InsnId consumer, InsnId producer, DepKind kind = DepKind::WAKE_UP) {
    return done(kw_depend(raw_, consumer.raw(), producer.raw(), kind.get()));
  }

  // ----- state -----

  // Whether instructions that begin now are traced (false without a trace).
  bool is_tracing() const noexcept { return kw_is_tracing(raw_); }
  // Whether the instruction is traced, begun and not yet ended.
  bool is_live(InsnId insn) const noexcept { return kw_is_live(raw_, insn.raw()); }
  // The stage the instruction has open in `lane` (none if nothing).
  Stage open_stage(InsnId insn, Lane lane) const noexcept {
    KwStage s = KW_STAGE_NONE;
    (void)kw_open_stage(raw_, insn.raw(), lane.get(), &s);
    return Stage(s);
  }
  // What has been written so far.
  Summary summary() const noexcept {
    Summary s{};
    (void)kw_summary(raw_, &s);
    return s;
  }

  // Ends the trace and returns what it holds; the writer then has no trace. Without a trace,
  // an all-zero summary.
  Returns<Summary> finish() {
    Summary s{};
    KwStatus status = kw_finish(std::exchange(raw_, nullptr), &s);
    return done(status, s);
  }

 private:
  void close() noexcept {
    if (raw_ != nullptr) (void)kw_finish(std::exchange(raw_, nullptr), nullptr);
  }

  [[noreturn]] static void raise(KwStatus s) {
    throw Error(static_cast<Status>(s), std::string(kw_last_error_message()));
  }

  static Done done(KwStatus s) {
    if constexpr (kThrows) {
      if (s != KW_STATUS_OK) raise(s);
    } else {
      return static_cast<Status>(s);
    }
  }

  template <class T>
  static Returns<T> done(KwStatus s, T value) {
    if constexpr (kThrows) {
      if (s != KW_STATUS_OK) raise(s);
      return value;
    } else {
      return Result<T>(static_cast<Status>(s), std::move(value));
    }
  }

  static std::int32_t write_ostream(void *user_data, const std::uint8_t *data,
                                    std::size_t len) noexcept {
    try {
      auto *out = static_cast<std::ostream *>(user_data);
      out->write(reinterpret_cast<const char *>(data), static_cast<std::streamsize>(len));
      return out->good() ? 0 : 1;
    } catch (...) {
      return 1;
    }
  }

  KwWriter *raw_ = nullptr;
};

// The writer that throws kanata::Error.
using Writer = BasicWriter<Throw>;
// The writer that returns kanata::Status and kanata::Result<T>.
using WriterNoThrow = BasicWriter<NoThrow>;

}  // namespace kanata

#endif  // KANATA_WRITER_HPP
