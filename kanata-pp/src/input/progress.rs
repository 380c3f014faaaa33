//! A progress bar for long conversions: drawn only when stderr is a terminal (never in pipes
//! or CI logs) and the caller asked for it.

use std::io::IsTerminal;

use indicatif::{MultiProgress, ProgressBar, ProgressDrawTarget, ProgressStyle};

/// Whether progress may be drawn: stderr is a terminal, and this is not a CI job.
pub(crate) fn on_terminal() -> bool {
    std::io::stderr().is_terminal() && std::env::var_os("CI").is_none()
}

/// The bars of a batch: one per running file and one overall, or nothing off a terminal.
pub(crate) fn batch_group(wanted: bool, files: usize) -> Option<(MultiProgress, ProgressBar)> {
    if !wanted || !on_terminal() {
        return None;
    }
    let group = MultiProgress::with_draw_target(ProgressDrawTarget::stderr());
    let overall = group.add(ProgressBar::new(files as u64));
    overall.set_style(
        ProgressStyle::with_template("{prefix} {wide_bar} {pos}/{len} files ({elapsed})")
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    overall.set_prefix("all");
    Some((group, overall))
}

/// A progress bar over the raw input bytes, or nothing.
pub(crate) struct Progress {
    bar: Option<ProgressBar>,
    raw_read: Option<std::sync::Arc<std::sync::atomic::AtomicU64>>,
}

impl Progress {
    pub(crate) fn new(
        wanted: bool,
        len: Option<u64>,
        name: &str,
        group: Option<&MultiProgress>,
    ) -> Progress {
        if !wanted || !on_terminal() {
            return Progress {
                bar: None,
                raw_read: None,
            };
        }
        let bar = match len {
            Some(len) => ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::stderr()),
            None => ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr()),
        };
        let style = ProgressStyle::with_template(
            "{prefix} {wide_bar} {binary_bytes}/{binary_total_bytes} ({binary_bytes_per_sec}, {eta})",
        )
        .unwrap_or_else(|_| ProgressStyle::default_bar());
        bar.set_style(style);
        bar.set_prefix(name.to_owned());
        let bar = match group {
            Some(group) => group.add(bar),
            None => bar,
        };
        Progress {
            bar: Some(bar),
            raw_read: None,
        }
    }

    /// Follows `counter` (raw bytes read).
    pub(crate) fn follow(&mut self, counter: std::sync::Arc<std::sync::atomic::AtomicU64>) {
        self.raw_read = Some(counter);
    }

    pub(crate) fn update(&self) {
        if let (Some(bar), Some(read)) = (&self.bar, &self.raw_read) {
            bar.set_position(read.load(std::sync::atomic::Ordering::Relaxed));
        }
    }

    pub(crate) fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
