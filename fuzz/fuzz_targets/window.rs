//! The window filter (`--cycles`, `--sim-cycles`, `--insns`, `--threads`) with a window from
//! the first bytes: on arbitrary bytes it never panics; on canonical text (written through
//! kanata-writer by calls decoded from the rest) its output is canonical.
#![no_main]

use kanata_pp::output::window::{Bounds, Window, WindowFilter};
use libfuzzer_sys::arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;

fn bounds<T: for<'a> Arbitrary<'a> + Copy + PartialOrd>(
    u: &mut Unstructured<'_>,
) -> Result<Bounds<T>> {
    let mut bounds = Bounds::all();
    bounds.start = Option::<T>::arbitrary(u)?;
    bounds.end = Option::<T>::arbitrary(u)?;
    Ok(bounds)
}

fn window(u: &mut Unstructured<'_>) -> Result<Window> {
    let mut window = Window::all();
    let which = u8::arbitrary(u)?;
    if which & 1 != 0 {
        // Small numbers most of the time: the traces are short.
        let mut b = Bounds::all();
        b.start = Option::<u8>::arbitrary(u)?.map(u64::from);
        b.end = Option::<u8>::arbitrary(u)?.map(u64::from);
        window.cycles = b;
    }
    if which & 2 != 0 {
        window.sim_cycles = bounds::<i64>(u)?;
    }
    if which & 4 != 0 {
        let mut b = Bounds::all();
        b.start = Option::<u8>::arbitrary(u)?.map(u64::from);
        b.end = Option::<u8>::arbitrary(u)?.map(u64::from);
        window.insns = b;
    }
    if which & 8 != 0 {
        window.cycles = bounds::<u64>(u)?;
    }
    if which & 16 != 0 {
        let mut threads: Vec<i64> = (0..u8::arbitrary(u)? % 4)
            .map(|_| i64::from(i8::arbitrary(u).unwrap_or(0)))
            .collect();
        threads.sort_unstable();
        threads.dedup();
        window.threads = Some(threads);
    }
    Ok(window)
}

/// Pushes `text` through a filter of `window` in pieces of the sizes `u` chooses.
fn filter(
    window: Window,
    text: &[u8],
    trusted: bool,
    u: &mut Unstructured<'_>,
) -> std::result::Result<Vec<u8>, kanata_pp::Error> {
    let mut filter = WindowFilter::new(Vec::new(), window, 5);
    if trusted {
        filter = filter.trusted();
    }
    let mut rest = text;
    while !rest.is_empty() {
        let n = usize::from(u8::arbitrary(u).unwrap_or(255))
            .max(1)
            .min(rest.len());
        let (piece, tail) = rest.split_at(n);
        filter.push(piece)?;
        rest = tail;
        if filter.is_done() {
            break;
        }
    }
    Ok(filter.finish()?.output)
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(mode) = u8::arbitrary(&mut u) else {
        return;
    };
    let Ok(window) = window(&mut u) else {
        return;
    };
    if mode & 1 == 0 {
        // Arbitrary bytes: any result, no panic.
        let text = u.take_rest().to_vec();
        let mut pieces = Unstructured::new(&text);
        let _ = filter(window, &text, false, &mut pieces);
        return;
    }
    let Ok(Ok(trace)) = kanata_fuzz::write_trace(&mut u) else {
        return;
    };
    let text = trace.output;
    kanata_fuzz::assert_canonical(&text);
    // The writer's text is canonical: the checked and the trusted filter both cut it.
    let mut pieces = Unstructured::new(data);
    let checked = filter(window.clone(), &text, false, &mut pieces);
    let mut pieces = Unstructured::new(data);
    let trusted = filter(window, &text, true, &mut pieces);
    let checked = checked.unwrap_or_else(|err| panic!("canonical input refused: {err}"));
    let trusted = trusted.unwrap_or_else(|err| panic!("canonical input refused: {err}"));
    assert!(checked == trusted, "the trusted filter cuts differently");
    kanata_fuzz::assert_canonical(&checked);
});
