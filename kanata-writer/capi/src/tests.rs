//! The C API called from Rust, as C would call it: statuses, messages, NULL handles, options
//! versions, invalid UTF-8, and the bytes written.

use std::ffi::CStr;
use std::ptr::{null, null_mut};

use super::*;

/// A callback sink: appends to the `Vec<u8>` behind `user_data`.
unsafe extern "C" fn collect(user_data: *mut c_void, data: *const u8, len: usize) -> i32 {
    // SAFETY: the tests pass a `&mut Vec<u8>` that outlives the writer, and the writer passes
    // `len` readable bytes at `data`.
    unsafe {
        let out = &mut *user_data.cast::<Vec<u8>>();
        out.extend_from_slice(std::slice::from_raw_parts(data, len));
    }
    0
}

/// A callback sink that always fails.
unsafe extern "C" fn refuse(_: *mut c_void, _: *const u8, _: usize) -> i32 {
    7
}

fn last_error() -> String {
    // SAFETY: `kw_last_error_message` returns a NUL-terminated string that stays valid until
    // the next failing call on this thread.
    unsafe { CStr::from_ptr(kw_last_error_message()) }
        .to_string_lossy()
        .into_owned()
}

fn defaults() -> KwOptions {
    let mut opts = std::mem::MaybeUninit::<KwOptions>::uninit();
    // SAFETY: `opts` has room for a `KwOptions`, which `kw_options_init` fills entirely.
    unsafe {
        assert_eq!(
            kw_options_init(opts.as_mut_ptr(), size_of::<KwOptions>()),
            KwStatus::Ok
        );
        opts.assume_init()
    }
}

/// Opens a callback writer into `out` with `opts`.
fn open(out: &mut Vec<u8>, opts: &KwOptions) -> *mut KwWriter {
    let mut w = null_mut();
    // SAFETY: `collect` appends to `out`, which the tests keep alive until the writer ends.
    let status =
        unsafe { kw_open_callback(Some(collect), (out as *mut Vec<u8>).cast(), opts, &mut w) };
    assert_eq!(status, KwStatus::Ok, "{}", last_error());
    w
}

fn finish(w: *mut KwWriter) -> KwSummary {
    let mut summary = KwSummary::default();
    // SAFETY: `w` is a live handle, given up here.
    let status = unsafe { kw_finish_sized(w, &mut summary, size_of::<KwSummary>()) };
    assert_eq!(status, KwStatus::Ok, "{}", last_error());
    summary
}

fn stage(w: *mut KwWriter, name: &str) -> KwStage {
    let mut stage = KW_STAGE_NONE;
    // SAFETY: `name` is `name.len()` readable bytes.
    let status = unsafe { kw_stage(w, name.as_ptr().cast(), name.len(), &mut stage) };
    assert_eq!(status, KwStatus::Ok, "{}", last_error());
    stage
}

fn begin(w: *mut KwWriter, sim_id: u64) -> KwInsn {
    let mut insn = 0;
    // SAFETY: `w` is a live handle or NULL.
    assert_eq!(unsafe { kw_begin(w, sim_id, 0, &mut insn) }, KwStatus::Ok);
    insn
}

fn label(w: *mut KwWriter, insn: KwInsn, kind: KwLabelKind, text: &[u8]) -> KwStatus {
    // SAFETY: `text` is `text.len()` readable bytes.
    unsafe { kw_label(w, insn, kind, text.as_ptr().cast(), text.len()) }
}

#[test]
fn writes_what_the_rust_api_writes() {
    let mut out = Vec::new();
    let w = open(&mut out, &defaults());
    let (f, x) = (stage(w, "F"), stage(w, "X"));
    assert_eq!(stage(w, "F"), f, "interned once");
    // SAFETY: `w` is a live handle for every call below.
    unsafe {
        let load = begin(w, 100);
        assert_eq!(label(w, load, KW_LABEL_NAME, b"lw a0, 0(sp)"), KwStatus::Ok);
        assert_eq!(kw_enter(w, load, KW_LANE_MAIN, f), KwStatus::Ok);
        assert_eq!(kw_advance(w, 1), KwStatus::Ok);
        let add = begin(w, 101);
        assert_eq!(kw_enter(w, add, KW_LANE_MAIN, f), KwStatus::Ok);
        assert_eq!(kw_enter(w, load, KW_LANE_MAIN, x), KwStatus::Ok);
        assert_eq!(kw_advance(w, 1), KwStatus::Ok);
        assert_eq!(kw_stall_begin(w, add), KwStatus::Ok);
        assert_eq!(kw_depend(w, add, load, KW_DEP_WAKE_UP), KwStatus::Ok);
        let mut retire_id = 99;
        assert_eq!(kw_retire(w, load, &mut retire_id), KwStatus::Ok);
        assert_eq!(retire_id, 0);
        assert_eq!(kw_set_cycle(w, 3), KwStatus::Ok);
        assert_eq!(kw_stall_end(w, add), KwStatus::Ok);
        assert_eq!(kw_enter(w, add, KW_LANE_MAIN, x), KwStatus::Ok);
        let mut open_stage = 0;
        assert_eq!(
            kw_open_stage(w, add, KW_LANE_MAIN, &mut open_stage),
            KwStatus::Ok
        );
        assert_eq!(open_stage, x);
        assert!(kw_is_live(w, add));
        assert!(!kw_is_live(w, load));
        assert!(kw_is_tracing(w));
        let mut cycle = 0;
        assert_eq!(kw_cycle(w, &mut cycle), KwStatus::Ok);
        assert_eq!(cycle, 3);
        assert_eq!(kw_advance(w, 1), KwStatus::Ok);
        assert_eq!(kw_flush(w, add), KwStatus::Ok);
    }
    let summary = finish(w);

    // The same calls through the Rust API.
    let mut rust = kw::Writer::new(Vec::new());
    let (f, x) = (rust.stage("F").unwrap(), rust.stage("X").unwrap());
    let load = rust.begin(100, 0).unwrap();
    rust.label(load, LabelKind::Name, "lw a0, 0(sp)").unwrap();
    rust.enter(load, Lane::MAIN, f).unwrap();
    rust.advance(1).unwrap();
    let add = rust.begin(101, 0).unwrap();
    rust.enter(add, Lane::MAIN, f).unwrap();
    rust.enter(load, Lane::MAIN, x).unwrap();
    rust.advance(1).unwrap();
    rust.stall_begin(add).unwrap();
    rust.depend(add, load, DepKind::WAKE_UP).unwrap();
    rust.retire(load).unwrap();
    rust.set_cycle(3).unwrap();
    rust.stall_end(add).unwrap();
    rust.enter(add, Lane::MAIN, x).unwrap();
    rust.advance(1).unwrap();
    rust.flush(add).unwrap();
    let expected = rust.finish().unwrap();
    assert_eq!(
        String::from_utf8(out).unwrap(),
        String::from_utf8(expected.output).unwrap()
    );
    assert_eq!(summary, KwSummary::from(expected.summary));
    assert_eq!(
        (summary.instructions, summary.retired, summary.flushed),
        (2, 1, 1)
    );
}

#[test]
fn misuse_is_a_status_and_a_message_and_writes_nothing() {
    let mut out = Vec::new();
    let w = open(&mut out, &defaults());
    // SAFETY: `w` is a live handle for every call below.
    unsafe {
        let i = begin(w, 1);
        assert_eq!(kw_set_cycle(w, 5), KwStatus::Ok);
        assert_eq!(kw_set_cycle(w, 4), KwStatus::TimeWentBack);
        assert_eq!(last_error(), "time went back from cycle 5 to cycle 4");
        assert_eq!(kw_leave(w, i, 0), KwStatus::NoOpenStage);
        assert_eq!(
            label(w, i, KW_LABEL_STAGE_NOTE, b"x"),
            KwStatus::NoteBeforeStage
        );
        assert_eq!(label(w, i, 3, b"x"), KwStatus::InvalidArgument);
        assert_eq!(last_error(), "unknown label kind 3");
        assert_eq!(kw_enter(w, i, 0, 0), KwStatus::UnknownStage);
        assert_eq!(kw_enter(w, i, 0, 77), KwStatus::UnknownStage);
        let mut s = 5;
        let bad = "a\tb";
        assert_eq!(
            kw_stage(w, bad.as_ptr().cast(), bad.len(), &mut s),
            KwStatus::InvalidStageName
        );
        assert_eq!(s, KW_STAGE_NONE);
        assert!(last_error().contains("TAB"), "{}", last_error());
        let j = begin(w, 2);
        assert_eq!(kw_depend(w, i, j, 0), KwStatus::ProducerNotOlder);
        assert_eq!(kw_retire(w, i, null_mut()), KwStatus::Ok);
        assert_eq!(kw_flush(w, i), KwStatus::NotLive);
        assert_eq!(kw_stall_begin(w, 12345), KwStatus::UnknownInsn);
        assert_eq!(kw_advance(w, u64::MAX), KwStatus::CycleOverflow);
        // NULL pointers where the API needs one.
        assert_eq!(kw_begin(w, 3, 0, null_mut()), KwStatus::InvalidArgument);
        assert_eq!(kw_label(w, j, 0, null(), 4), KwStatus::InvalidArgument);
        assert_eq!(last_error(), "label text is NULL but its length is 4");
        assert_eq!(kw_label(w, j, 0, null(), 0), KwStatus::Ok, "empty text");
        assert_eq!(kw_cycle(w, null_mut()), KwStatus::InvalidArgument);
        let name = CStr::from_ptr(kw_status_name(KwStatus::NotLive as i32));
        assert_eq!(name.to_str().unwrap(), "KW_STATUS_NOT_LIVE");
        let name = CStr::from_ptr(kw_status_name(1000));
        assert_eq!(name.to_str().unwrap(), "KW_STATUS_UNKNOWN");
    }
    let summary = finish(w);
    assert_eq!((summary.instructions, summary.retired), (2, 1));
    let text = String::from_utf8(out).unwrap();
    assert_eq!(
        text,
        "Kanata\t0004\nC=\t0\nI\t0\t1\t0\nC\t5\nI\t1\t2\t0\nR\t0\t0\t0\n"
    );
}

#[test]
fn a_null_writer_is_a_no_op() {
    let w = null_mut();
    // SAFETY: NULL is a valid handle for every call.
    unsafe {
        let mut insn = 0;
        assert_eq!(kw_begin(w, 1, 0, &mut insn), KwStatus::Ok);
        assert_eq!(insn, KW_INSN_UNTRACED);
        let mut s = 9;
        assert_eq!(kw_stage(w, c"F".as_ptr(), 1, &mut s), KwStatus::Ok);
        assert_eq!(s, KW_STAGE_NONE);
        assert_eq!(label(w, insn, 0, b"x"), KwStatus::Ok);
        assert_eq!(kw_enter(w, insn, 0, s), KwStatus::Ok);
        assert_eq!(kw_leave(w, insn, 0), KwStatus::Ok);
        assert_eq!(kw_set_cycle(w, 10), KwStatus::Ok);
        assert_eq!(kw_advance(w, 1), KwStatus::Ok);
        let mut retire_id = 0;
        assert_eq!(kw_retire(w, insn, &mut retire_id), KwStatus::Ok);
        assert_eq!(retire_id, KW_RETIRE_ID_NONE);
        assert_eq!(kw_flush(w, insn), KwStatus::Ok);
        assert_eq!(kw_depend(w, insn, insn, 0), KwStatus::Ok);
        assert!(!kw_is_tracing(w));
        let mut summary = KwSummary {
            instructions: 5,
            ..KwSummary::default()
        };
        assert_eq!(
            kw_summary_sized(w, &mut summary, size_of::<KwSummary>()),
            KwStatus::Ok
        );
        assert_eq!(summary, KwSummary::default());
        assert_eq!(
            kw_finish_sized(w, &mut summary, size_of::<KwSummary>()),
            KwStatus::Ok
        );
        kw_free(w);
    }
}

#[test]
fn untraced_instructions_outside_the_window() {
    let mut out = Vec::new();
    let opts = KwOptions {
        window_skip_retired: 1,
        ..defaults()
    };
    let w = open(&mut out, &opts);
    // SAFETY: `w` is a live handle.
    unsafe {
        assert!(!kw_is_tracing(w));
        let early = begin(w, 1);
        assert_eq!(early, KW_INSN_UNTRACED);
        assert_eq!(label(w, early, 0, b"not written"), KwStatus::Ok);
        let mut retire_id = 0;
        assert_eq!(kw_retire(w, early, &mut retire_id), KwStatus::Ok);
        assert_eq!(retire_id, KW_RETIRE_ID_NONE);
        assert!(kw_is_tracing(w));
        let traced = begin(w, 2);
        assert_eq!(traced, 0);
        // The handle round-trips through the C API's `u64`.
        assert_eq!(raw_insn(insn(traced)), traced);
        assert_eq!(raw_insn(insn(early)), early);
        assert!(!insn(KW_INSN_UNTRACED).is_traced());
    }
    let summary = finish(w);
    assert_eq!((summary.instructions, summary.left_open), (1, 1));
    assert_eq!(out, b"Kanata\t0004\nC=\t0\nI\t0\t2\t0\n");
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    let mut out = Vec::new();
    let w = open(&mut out, &defaults());
    let f = stage(w, "F\u{e9}");
    let mut g = 0;
    // SAFETY: `w` is a live handle, and the texts are their lengths long.
    unsafe {
        assert_eq!(
            kw_stage(w, b"G\xff".as_ptr().cast(), 2, &mut g),
            KwStatus::Ok
        );
        let i = begin(w, 1);
        assert_eq!(label(w, i, 0, b"a\xc3(b\0c"), KwStatus::Ok);
        assert_eq!(kw_enter(w, i, 0, f), KwStatus::Ok);
        assert_eq!(kw_enter(w, i, 0, g), KwStatus::Ok);
        let (mut name, mut len) = (null(), 0);
        assert_eq!(kw_stage_name(w, g, &mut name, &mut len), KwStatus::Ok);
        let name = std::slice::from_raw_parts(name.cast::<u8>(), len);
        assert_eq!(name, "G\u{FFFD}".as_bytes());
        assert_eq!(
            kw_stage_name(w, 42, &mut null(), &mut len),
            KwStatus::UnknownStage
        );
    }
    finish(w);
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.contains("L\t0\t0\ta\u{FFFD}(b\0c\n"),
        "a NUL is text like any other: {text:?}"
    );
    assert!(text.contains("S\t0\t0\tF\u{e9}\nE\t0\t0\tF\u{e9}\nS\t0\t0\tG\u{FFFD}\n"));
}

#[test]
fn options_are_read_as_far_as_their_size_says() {
    // A caller from an older header: only `size` and `start_cycle`.
    let mut old = defaults();
    old.size = std::mem::offset_of!(KwOptions, compression);
    old.start_cycle = 7;
    old.compression = 999; // past `size`: never read
    let mut out = Vec::new();
    let w = open(&mut out, &old);
    finish(w);
    assert_eq!(out, b"Kanata\t0004\nC=\t7\n");

    // A caller from a newer header: unknown fields must be zero.
    #[repr(C)]
    struct Newer {
        known: KwOptions,
        unknown: u64,
    }
    let mut newer = std::mem::MaybeUninit::<Newer>::uninit();
    // SAFETY: `newer` has room for `size_of::<Newer>()` bytes.
    let mut newer = unsafe {
        assert_eq!(
            kw_options_init(newer.as_mut_ptr().cast(), size_of::<Newer>()),
            KwStatus::Ok
        );
        newer.assume_init()
    };
    assert_eq!(newer.known.size, size_of::<Newer>());
    assert_eq!(newer.unknown, 0);
    let mut out = Vec::new();
    let w = open(&mut out, &newer.known);
    finish(w);
    newer.unknown = 1;
    let mut w = null_mut();
    // SAFETY: `newer` is `newer.known.size` bytes long.
    let status = unsafe {
        kw_open_callback(
            Some(collect),
            (&mut out as *mut Vec<u8>).cast(),
            &newer.known,
            &mut w,
        )
    };
    assert_eq!(status, KwStatus::InvalidArgument);
    assert!(w.is_null());
    assert!(
        last_error().contains("older than the header"),
        "{}",
        last_error()
    );

    // Not filled at all.
    let zero = KwOptions {
        size: 0,
        ..defaults()
    };
    // SAFETY: `zero` is a whole `KwOptions`.
    let status = unsafe { kw_open_callback(Some(collect), null_mut(), &zero, &mut w) };
    assert_eq!(status, KwStatus::InvalidArgument);
    // SAFETY: NULL options are the defaults.
    let status = unsafe { kw_options_init(null_mut(), 80) };
    assert_eq!(status, KwStatus::InvalidArgument);
}

#[test]
fn bad_options_are_refused() {
    let mut w = null_mut();
    for (opts, status) in [
        (
            KwOptions {
                compression: 9,
                ..defaults()
            },
            KwStatus::InvalidArgument,
        ),
        (
            KwOptions {
                live_at_end: 3,
                ..defaults()
            },
            KwStatus::InvalidArgument,
        ),
        (
            KwOptions {
                compression: KW_COMPRESSION_GZIP,
                level: 10,
                ..defaults()
            },
            KwStatus::InvalidOption,
        ),
    ] {
        // SAFETY: `opts` is a whole `KwOptions`; `collect` is never called.
        let got = unsafe { kw_open_callback(Some(collect), null_mut(), &opts, &mut w) };
        assert_eq!(got, status, "{opts:?}");
        assert!(w.is_null());
    }
    // SAFETY: NULL callback and NULL out pointer are refused before anything else.
    unsafe {
        assert_eq!(
            kw_open_callback(None, null_mut(), null(), &mut w),
            KwStatus::InvalidArgument
        );
        assert_eq!(
            kw_open_callback(Some(collect), null_mut(), null(), null_mut()),
            KwStatus::InvalidArgument
        );
    }
}

#[test]
fn options_reach_the_writer() {
    let opts = KwOptions {
        start_cycle: 10,
        compact: 1,
        live_at_end: KW_LIVE_AT_END_RETIRE,
        late_labels: 4,
        buffer_size: 1,
        ..defaults()
    };
    let mut out = Vec::new();
    let w = open(&mut out, &opts);
    let f = stage(w, "F");
    // SAFETY: `w` is a live handle.
    unsafe {
        let a = begin(w, 1);
        let b = begin(w, 2);
        assert_eq!(kw_enter(w, a, 0, f), KwStatus::Ok);
        assert_eq!(kw_enter(w, b, 0, f), KwStatus::Ok);
        assert_eq!(kw_retire(w, a, null_mut()), KwStatus::Ok);
        assert_eq!(kw_advance(w, 2), KwStatus::Ok);
        assert_eq!(label(w, a, 0, b"late"), KwStatus::Ok, "{}", last_error());
    }
    let summary = finish(w);
    assert_eq!(summary.ended_at_finish, 1);
    assert_eq!(summary.first_cycle, 10);
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "Kanata\t0004\nC=\t10\nI\t0\t1\t0\nI\t1\t2\t0\nS\t0\t0\tF\nS\t1\t0\tF\n\
         L\t0\t0\tlate\nR\t0\t0\t0\nC\t2\nR\t1\t1\t0\n"
    );

    // Compression and the cycle window.
    let opts = KwOptions {
        compression: KW_COMPRESSION_ZSTD,
        level: 1,
        background: 1,
        window_cycle_start: 5,
        window_cycle_end: 6,
        ..defaults()
    };
    let mut out = Vec::new();
    let w = open(&mut out, &opts);
    // SAFETY: `w` is a live handle.
    unsafe {
        for cycle in 0..10 {
            assert_eq!(kw_set_cycle(w, cycle), KwStatus::Ok);
            let i = begin(w, cycle);
            assert_eq!(kw_retire(w, i, null_mut()), KwStatus::Ok);
        }
    }
    let summary = finish(w);
    assert_eq!(summary.instructions, 1);
    assert_eq!(&out[..4], &[0x28, 0xb5, 0x2f, 0xfd], "zstd magic");
}

#[test]
fn open_path_compresses_by_extension() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.kanata.gz");
    let path_bytes = path.to_str().unwrap().as_bytes();
    let mut w = null_mut();
    // SAFETY: `path_bytes` is its length long; NULL options are the defaults.
    let status =
        unsafe { kw_open_path(path_bytes.as_ptr().cast(), path_bytes.len(), null(), &mut w) };
    assert_eq!(status, KwStatus::Ok, "{}", last_error());
    begin(w, 1);
    finish(w);
    let bytes = std::fs::read(&path).unwrap();
    assert_eq!(&bytes[..2], &[0x1f, 0x8b], "gzip magic");

    let missing = dir.path().join("no/such/dir/t.kanata");
    let missing = missing.to_str().unwrap().as_bytes();
    // SAFETY: as above.
    let status = unsafe { kw_open_path(missing.as_ptr().cast(), missing.len(), null(), &mut w) };
    assert_eq!(status, KwStatus::Io);
    assert!(w.is_null());
    assert!(
        last_error().starts_with("cannot write the trace: cannot create"),
        "{}",
        last_error()
    );
}

#[test]
fn io_errors_poison_the_writer() {
    let opts = KwOptions {
        buffer_size: 1024,
        ..defaults()
    };
    let mut w = null_mut();
    // SAFETY: `refuse` ignores its arguments.
    let status = unsafe { kw_open_callback(Some(refuse), null_mut(), &opts, &mut w) };
    assert_eq!(status, KwStatus::Ok);
    let mut status = KwStatus::Ok;
    for n in 0..1000 {
        let i = begin(w, n);
        status = label(w, i, 0, &[b'x'; 100]);
        if status != KwStatus::Ok {
            break;
        }
    }
    assert_eq!(status, KwStatus::Io);
    assert_eq!(
        last_error(),
        "cannot write the trace: the write callback returned 7"
    );
    assert_eq!(label(w, 0, 0, b"x"), KwStatus::Poisoned);
    let mut summary = KwSummary::default();
    // SAFETY: `w` is a live handle, given up here.
    let status = unsafe { kw_finish_sized(w, &mut summary, size_of::<KwSummary>()) };
    assert_eq!(status, KwStatus::Poisoned);
}

#[test]
fn a_panic_is_a_status_and_the_writer_is_not_used_again() {
    let mut out = Vec::new();
    let w = open(&mut out, &defaults());
    // SAFETY: `w` is a live handle.
    let status = unsafe {
        with_writer(w, |_| {
            // Stands in for a bug inside the writer.
            std::panic::panic_any("boom")
        })
    };
    assert_eq!(status, KwStatus::Panic);
    assert!(last_error().ends_with("boom"), "{}", last_error());
    assert_eq!(begin_status(w), KwStatus::Poisoned);
    // SAFETY: `w` is a live handle, given up here.
    let status = unsafe { kw_finish_sized(w, null_mut(), 0) };
    assert_eq!(status, KwStatus::Poisoned);
}

fn begin_status(w: *mut KwWriter) -> KwStatus {
    let mut insn = 0;
    // SAFETY: `w` is a live handle.
    unsafe { kw_begin(w, 0, 0, &mut insn) }
}

#[test]
fn summary_is_written_as_far_as_its_size_says() {
    let mut out = Vec::new();
    let w = open(&mut out, &defaults());
    begin(w, 1);
    let mut parts = [u64::MAX; 3];
    // SAFETY: `w` is a live handle; `parts` has room for 16 bytes.
    unsafe {
        assert_eq!(
            kw_summary_sized(w, parts.as_mut_ptr().cast(), 16),
            KwStatus::Ok
        );
    }
    assert_eq!(parts, [1, 0, u64::MAX], "instructions, retired, untouched");
    finish(w);
}

#[test]
fn version_and_empty_last_error() {
    // SAFETY: static NUL-terminated strings.
    let version = unsafe { CStr::from_ptr(kw_version()) };
    assert_eq!(version.to_str().unwrap(), env!("CARGO_PKG_VERSION"));
    std::thread::spawn(|| assert_eq!(last_error(), ""))
        .join()
        .unwrap();
}
