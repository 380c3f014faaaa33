//! What the fuzz targets share: the options taken from the first bytes, the check that
//! text is canonical, and a trace written through the writer API from arbitrary calls.

use std::io::Read;

use kanata_pp::output::canonical::{CanonicalReader, Instructions};
use kanata_pp::{CloseOpen, Destination, Format, Options};
use kanata_writer::{
    Compression, DepKind, InsnId, LabelKind, Lane, LiveAtEnd, Stage, Summary, Writer, WriterBuilder,
};
use libfuzzer_sys::arbitrary::{Arbitrary, Result as ArbResult, Unstructured};

/// The conversion options one byte of flags chooses: the clean-ups (renumber_retire,
/// close_open, dedupe, stretch_zero, compact), `strict`, and gem5's `deps` or RSD's
/// older disassembler syntax.
pub fn options_from(flags: u8, from: Format) -> Options {
    let mut options = Options::new(Destination::Check);
    options.from = Some(from);
    options.repairs.renumber_retire = flags & 1 != 0;
    options.repairs.close_open = match (flags >> 1) & 3 {
        1 => Some(CloseOpen::Flush),
        2 => Some(CloseOpen::Retire),
        _ => None,
    };
    options.repairs.dedupe = flags & 8 != 0;
    options.repairs.stretch_zero = flags & 16 != 0;
    options.repairs.compact = flags & 32 != 0;
    options.strict = flags & 64 != 0;
    // The last bit means one option of each format's reader.
    if flags & 128 != 0 {
        options.gem5.deps = true;
        options.rsd.disasm = kanata_pp::rsd::disasm::Syntax::Before2023;
    }
    options
}

/// What a successful read of canonical text found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Counts {
    /// Instructions.
    pub instructions: u64,
    /// With an `R` of type 1.
    pub flushed: u64,
    /// With another `R`.
    pub retired: u64,
    /// Without `R`.
    pub open: u64,
}

/// Panics unless `text` is canonical Kanata: the line reader and the instruction reader
/// accept all of it.
pub fn assert_canonical(text: &[u8]) -> Counts {
    let mut reader = CanonicalReader::new(text);
    loop {
        match reader.next_command() {
            Ok(Some(_)) => {}
            Ok(None) => break,
            Err(err) => panic!("not canonical ({err}):\n{}", String::from_utf8_lossy(text)),
        }
    }
    let mut counts = Counts::default();
    for insn in Instructions::new(text) {
        let insn = match insn {
            Ok(insn) => insn,
            Err(err) => panic!("not canonical ({err}):\n{}", String::from_utf8_lossy(text)),
        };
        counts.instructions += 1;
        match insn.retire {
            Some(r) if r.flushed => counts.flushed += 1,
            Some(_) => counts.retired += 1,
            None => counts.open += 1,
        }
    }
    counts
}

/// Converts `input` as the flags in its first byte say with the format forced to `from`:
/// success is canonical text, the same twice; failure an error with a message.
pub fn check_conversion(data: &[u8], from: Format) {
    let Some((&flags, input)) = data.split_first() else {
        return;
    };
    let options = options_from(flags, from);
    let first = kanata_pp::fuzzing::convert_bytes(input, &options);
    let second = kanata_pp::fuzzing::convert_bytes(input, &options);
    match (first, second) {
        (Ok((text, format, _)), Ok((again, _, _))) => {
            assert_eq!(format, from);
            assert!(text == again, "two conversions differ");
            assert_canonical(&text);
        }
        (Err(a), Err(b)) => {
            assert!(!a.to_string().is_empty(), "an error without a message");
            assert_eq!(
                a.to_string(),
                b.to_string(),
                "two conversions fail differently"
            );
        }
        (a, b) => panic!(
            "one conversion succeeds, the other not: {:?} / {:?}",
            a.err(),
            b.err()
        ),
    }
}

/// A finished trace: its text (decompressed) and the writer's summary.
pub struct Trace {
    /// The canonical text.
    pub output: Vec<u8>,
    /// What `finish` said the trace holds.
    pub summary: Summary,
}

/// Calls made on the writer, at most this many per input.
const MAX_CALLS: usize = 4096;

/// A trace written through [`WriterBuilder`] and [`Writer`] by calls decoded from `u`:
/// the builder's settings, then calls on arbitrary handles and texts (each may fail). Gives
/// the result of `finish` with the output decompressed, and what was asked of the builder.
pub fn write_trace(u: &mut Unstructured<'_>) -> ArbResult<Result<Trace, String>> {
    let mut builder = WriterBuilder::new();
    let settings = u8::arbitrary(u)?;
    let compression = match settings & 3 {
        1 => Compression::Gzip,
        2 => Compression::Zstd,
        _ => Compression::None,
    };
    builder.compression(compression);
    if compression != Compression::None {
        builder.level(1);
    }
    builder.background(settings & 4 != 0);
    builder.compact(settings & 8 != 0);
    builder.live_at_end(match (settings >> 4) & 3 {
        1 => LiveAtEnd::Flush,
        2 => LiveAtEnd::Retire,
        _ => LiveAtEnd::LeaveOpen,
    });
    if settings & 64 != 0 {
        // Negative too: the writer's steps may then add up past i64::MAX (docs/testing.md).
        builder.start_cycle(i64::arbitrary(u)?);
    }
    if settings & 128 != 0 {
        let mut window = kanata_writer::Window::default();
        let which = u8::arbitrary(u)?;
        if which & 1 != 0 {
            window = window.skip_retired(u64::from(u8::arbitrary(u)?));
        }
        if which & 2 != 0 {
            window = window.retired_limit(u64::from(u8::arbitrary(u)?));
        }
        if which & 4 != 0 {
            let a = u64::from(u16::arbitrary(u)?);
            let b = u64::from(u16::arbitrary(u)?);
            window = window.cycles(a..b);
        }
        builder.window(window);
    }
    let more = u8::arbitrary(u)?;
    if more & 1 != 0 {
        builder.late_labels(u64::from(u8::arbitrary(u)?));
    }
    if more & 2 != 0 {
        builder.buffer_size(usize::from(u16::arbitrary(u)?));
    }
    let mut writer = match builder.from_writer(Vec::new()) {
        Ok(writer) => writer,
        Err(err) => return Ok(Err(err.to_string())),
    };
    let mut insns: Vec<InsnId> = Vec::new();
    let mut stages: Vec<Stage> = vec![Stage::STALL];
    for _ in 0..MAX_CALLS {
        if u.is_empty() {
            break;
        }
        let _ = call(u, &mut writer, &mut insns, &mut stages)?;
    }
    let finished = match writer.finish() {
        Ok(finished) => finished,
        Err(err) => return Ok(Err(err.to_string())),
    };
    let output = match compression {
        Compression::None => finished.output,
        Compression::Gzip => decompress(flate2::read::GzDecoder::new(&finished.output[..])),
        Compression::Zstd => decompress(
            zstd::stream::read::Decoder::new(&finished.output[..]).expect("a zstd decoder"),
        ),
    };
    Ok(Ok(Trace {
        summary: finished.summary,
        output,
    }))
}

fn decompress(mut reader: impl Read) -> Vec<u8> {
    let mut text = Vec::new();
    reader
        .read_to_end(&mut text)
        .expect("the writer's compressed output decompresses");
    text
}

fn insn(u: &mut Unstructured<'_>, insns: &[InsnId]) -> ArbResult<InsnId> {
    let pick = u8::arbitrary(u)?;
    Ok(match pick {
        // A handle the writer never gave, or the untraced one.
        250..=254 => InsnId::from_raw(u64::arbitrary(u)?),
        255 => InsnId::UNTRACED,
        _ if insns.is_empty() => InsnId::from_raw(u64::from(pick)),
        _ => insns[usize::from(pick) % insns.len()],
    })
}

fn stage(u: &mut Unstructured<'_>, stages: &[Stage]) -> ArbResult<Stage> {
    let pick = usize::from(u8::arbitrary(u)?);
    Ok(stages[pick % stages.len()])
}

fn lane(u: &mut Unstructured<'_>) -> ArbResult<Lane> {
    let n = u8::arbitrary(u)?;
    Ok(match n {
        255 => Lane::new(u32::arbitrary(u)?),
        _ => Lane::new(u32::from(n % 4)),
    })
}

/// One call on the writer; its own result is ignored (an error is allowed).
fn call(
    u: &mut Unstructured<'_>,
    w: &mut Writer<Vec<u8>>,
    insns: &mut Vec<InsnId>,
    stages: &mut Vec<Stage>,
) -> ArbResult<kanata_writer::Result<()>> {
    let op = u8::arbitrary(u)? % 16;
    Ok(match op {
        0 => {
            let name = <&str>::arbitrary(u)?;
            w.stage(name).map(|s| stages.push(s))
        }
        1 | 2 => {
            let sim_id = u64::from(u16::arbitrary(u)?);
            let thread = u32::from(u8::arbitrary(u)? % 4);
            w.begin(sim_id, thread).map(|id| insns.push(id))
        }
        3 => {
            // Any i128: the writer refuses ids outside i64::MIN..=u64::MAX (Q1), and the
            // canonical reader reads every id it takes.
            let sim_id = i128::arbitrary(u)?;
            let thread = i64::arbitrary(u)?;
            w.begin_signed(sim_id, thread).map(|id| insns.push(id))
        }
        4 => {
            let id = insn(u, insns)?;
            let kind = match u8::arbitrary(u)? % 3 {
                0 => LabelKind::Name,
                1 => LabelKind::Detail,
                _ => LabelKind::StageNote,
            };
            let text = <&str>::arbitrary(u)?;
            w.label(id, kind, text)
        }
        5 | 6 => {
            let id = insn(u, insns)?;
            let lane = lane(u)?;
            let stage = stage(u, stages)?;
            w.enter(id, lane, stage)
        }
        7 => {
            let id = insn(u, insns)?;
            let lane = lane(u)?;
            w.leave(id, lane)
        }
        8 => {
            let id = insn(u, insns)?;
            w.retire(id).map(|_| ())
        }
        9 => {
            let id = insn(u, insns)?;
            w.flush(id)
        }
        10 => {
            let id = insn(u, insns)?;
            let retire_id = i64::arbitrary(u)?;
            match bool::arbitrary(u)? {
                true => w.retire_as(id, retire_id),
                false => w.flush_as(id, retire_id),
            }
        }
        11 => {
            let consumer = insn(u, insns)?;
            let producer = insn(u, insns)?;
            let kind = DepKind::new(u32::from(u8::arbitrary(u)?));
            w.depend(consumer, producer, kind)
        }
        12 | 13 => {
            let n = u8::arbitrary(u)?;
            let cycles = match n {
                255 => u64::arbitrary(u)?,
                _ => u64::from(n % 8),
            };
            w.advance(cycles)
        }
        14 => {
            let cycle = u64::from(u16::arbitrary(u)?);
            w.set_cycle(cycle)
        }
        _ => {
            let id = insn(u, insns)?;
            match bool::arbitrary(u)? {
                true => w.stall_begin(id),
                false => w.stall_end(id),
            }
        }
    })
}
