//! What the `kanata-pp` command does when it is interrupted: on SIGINT, SIGTERM or SIGHUP it
//! removes the temporary file of every conversion in progress, says so in one line on stderr
//! (`kanata-pp: interrupted (SIGINT)`) and exits with 128 plus the signal's number (130, 143,
//! 129), printing nothing else. The output paths keep what they had before the run: an
//! output is only ever renamed into place whole, at the end of its conversion.
//!
//! Only the binary calls [`install`]; the library installs no handler. The handler is
//! signal-hook's [`Signals`](signal_hook::iterator::Signals), whose iterator runs on a thread
//! of its own, so the work done on a signal is ordinary code: it calls
//! [`abandon_outputs`](crate::convert::abandon_outputs), which takes the lock of the registry
//! of temporary files (a file is made, renamed or deleted only under it), deletes them all,
//! and keeps the lock until the process has exited, so that no conversion makes a new one or
//! renames its own into place meanwhile.
//!
//! A signal that was ignored when the process started (`nohup`, a shell's `trap '' INT`, a
//! background job of a non-interactive shell) stays ignored: on Linux the ignored set is read
//! from `/proc/self/status`.

use std::sync::atomic::{AtomicBool, Ordering};

/// Set first thing when a signal is handled: nothing is reported any more.
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Whether a signal is being handled: the process is about to exit with its status.
pub fn is_interrupted() -> bool {
    INTERRUPTED.load(Ordering::SeqCst)
}

/// Waits for the exit when a signal is being handled, so that a report or an exit code of
/// the interrupted run never follows the line that says it was interrupted; returns at once
/// otherwise.
pub fn stop_if_interrupted() {
    while is_interrupted() {
        // The signal's thread exits the process.
        std::thread::park();
    }
}

/// Handles SIGINT, SIGTERM and SIGHUP (those not ignored at start) from now on, on a thread
/// of its own. Without it (or where it could not start, or off Unix) a signal ends the
/// process the default way, which leaves the temporary file of a conversion behind.
pub fn install() {
    #[cfg(unix)]
    unix::install();
}

#[cfg(unix)]
mod unix {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    use signal_hook::iterator::Signals;
    use std::io::Write;
    use std::sync::atomic::Ordering;

    pub(super) fn install() {
        let ignored = ignored_at_start();
        let wanted: Vec<i32> = [SIGINT, SIGTERM, SIGHUP]
            .into_iter()
            .filter(|&signal| !ignored(signal))
            .collect();
        if wanted.is_empty() {
            return;
        }
        let Ok(mut signals) = Signals::new(&wanted) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("signals".into())
            .spawn(move || {
                if let Some(signal) = signals.forever().next() {
                    interrupted(signal);
                }
            });
    }

    /// Removes the temporary files, says which signal came and exits; never returns.
    fn interrupted(signal: i32) {
        super::INTERRUPTED.store(true, Ordering::SeqCst);
        // Held until the process is gone: no output is renamed into place after this.
        let _outputs = crate::convert::abandon_outputs();
        let name = signal_hook::low_level::signal_name(signal).unwrap_or("a signal");
        let _ = writeln!(std::io::stderr(), "kanata-pp: interrupted ({name})");
        std::process::exit(128 + signal);
    }

    /// Which signals the process was started with ignored (Linux; none elsewhere).
    fn ignored_at_start() -> impl Fn(i32) -> bool {
        let mask = std::fs::read_to_string("/proc/self/status")
            .ok()
            .and_then(|status| {
                let line = status.lines().find_map(|l| l.strip_prefix("SigIgn:"))?;
                u64::from_str_radix(line.trim(), 16).ok()
            })
            .unwrap_or(0);
        move |signal| (1..=64).contains(&signal) && mask & (1 << (signal - 1)) != 0
    }
}
