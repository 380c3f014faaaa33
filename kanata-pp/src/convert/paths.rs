//! Where a conversion's output goes on disk: the default output name, the temporary file
//! beside the target that is renamed into place at the end (and the registry of those files
//! that an interrupted run removes), and whether two paths name the same file.

use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

use kanata_writer::Compression;

use crate::error::{Error, ErrorKind};

/// The output name used when none is given: the input's name with its compression suffix and
/// its format suffix replaced by `.kanata` (plus the compression's own suffix).
///
/// ```
/// use kanata_pp::convert::default_output;
/// use kanata_writer::Compression;
/// use std::path::Path;
/// assert_eq!(default_output(Path::new("runs/a.log.gz"), Compression::None).unwrap(),
///            Path::new("runs/a.kanata"));
/// assert_eq!(default_output(Path::new("trace.out"), Compression::Zstd).unwrap(),
///            Path::new("trace.kanata.zst"));
/// assert!(default_output(Path::new("x.kanata"), Compression::None).is_err());
/// ```
pub fn default_output(input: &Path, compression: Compression) -> Result<PathBuf, Error> {
    let stem = output_stem(input)
        .filter(|_| input.as_os_str() != "-")
        .ok_or_else(|| Error::new(ErrorKind::Usage, "give the output with -o"))?;
    let suffix = match compression {
        Compression::None => "",
        Compression::Gzip => ".gz",
        Compression::Zstd => ".zst",
    };
    let output = input.with_file_name(format!("{stem}.kanata{suffix}"));
    if output == input {
        return Err(Error::new(
            ErrorKind::Usage,
            format!(
                "the default output name would overwrite the input {}: give the output with -o",
                input.display()
            ),
        ));
    }
    Ok(output)
}

/// The input's file name without its compression suffix (`.gz`, `.zst`) and its format
/// suffix (`.log`, `.out`, …): the name its output gets.
pub fn output_stem(input: &Path) -> Option<&str> {
    let mut stem = input.file_name()?.to_str()?;
    for suffix in [".gz", ".zst"] {
        stem = stem.strip_suffix(suffix).unwrap_or(stem);
    }
    if let Some(dot) = stem.rfind('.').filter(|&at| at > 0) {
        stem = &stem[..dot];
    }
    Some(stem)
}

/// The temporary outputs of the conversions in progress, for [`abandon_outputs`]. A file is
/// made and entered here, and renamed into place or deleted and taken out, under the lock, so
/// the two never disagree.
struct Live {
    /// Set by [`abandon_outputs`]: no temporary file is made or renamed into place any more.
    abandoned: bool,
    /// The next id of a [`TempOutput`].
    next: u64,
    /// The id and path of every temporary file that exists.
    paths: Vec<(u64, PathBuf)>,
}

static LIVE: Mutex<Live> = Mutex::new(Live {
    abandoned: false,
    next: 0,
    paths: Vec::new(),
});

fn live() -> MutexGuard<'static, Live> {
    // The lock is held only around file creation, renames and deletions, which do not panic;
    // a poisoned lock still holds a consistent list.
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// What [`abandon_outputs`] returns: while it lives, no temporary output is made or renamed
/// into place, so the process can exit leaving nothing behind. It is meant never to be
/// dropped: the caller exits the process holding it.
#[must_use = "the outputs stay abandoned only while this lives: exit the process holding it"]
pub struct Abandoned {
    _live: MutexGuard<'static, Live>,
}

/// Deletes the temporary file of every conversion in progress in this process and keeps
/// conversions from making new ones or renaming theirs into place while the returned guard
/// lives: what a signal handler's thread calls before it exits the process (the `kanata-pp`
/// binary does on SIGINT, SIGTERM and SIGHUP; the library installs no handler).
///
/// It waits for a rename or a deletion in progress to end: an output renamed into place
/// before the call is complete, and every other output path is as it was before the run.
/// A conversion that tries to make or rename a temporary file afterwards waits (and, were
/// the guard dropped, fails).
pub fn abandon_outputs() -> Abandoned {
    let mut live = live();
    live.abandoned = true;
    for (_, path) in live.paths.drain(..) {
        let _ = fs::remove_file(path);
    }
    Abandoned { _live: live }
}

/// A temporary output file beside its target, registered for [`abandon_outputs`] from its
/// creation until it is renamed into place or deleted (when dropped).
pub(crate) struct TempOutput {
    file: Option<tempfile::NamedTempFile>,
    id: u64,
}

/// Why [`TempOutput::persist`] failed; the temporary file is deleted.
#[derive(Debug)]
pub(crate) struct PersistError {
    /// The error of the rename.
    pub(crate) error: io::Error,
}

impl TempOutput {
    fn file(&self) -> &tempfile::NamedTempFile {
        self.file
            .as_ref()
            .expect("a temporary output lives until persisted or dropped")
    }

    /// The file, opened again for writing (see [`tempfile::NamedTempFile::reopen`]).
    pub(crate) fn reopen(&self) -> io::Result<File> {
        self.file().reopen()
    }

    /// The file as it was created.
    pub(crate) fn as_file(&self) -> &File {
        self.file().as_file()
    }

    /// Renames the file to `target`, replacing what is there, unless the outputs were
    /// abandoned: then the file is already deleted and `target` stays as it was.
    pub(crate) fn persist(mut self, target: &Path) -> Result<(), PersistError> {
        let mut live = live();
        let file = self.file.take().expect("persisted once");
        live.paths.retain(|&(id, _)| id != self.id);
        if live.abandoned {
            // Deleted by `abandon_outputs` already; dropping it is harmless.
            drop(file);
            return Err(PersistError {
                error: io::Error::new(io::ErrorKind::Interrupted, "interrupted"),
            });
        }
        match file.persist(target) {
            Ok(_) => Ok(()),
            // The error holds the temporary file, which is deleted as it is dropped here,
            // still under the lock.
            Err(err) => Err(PersistError { error: err.error }),
        }
    }
}

impl Drop for TempOutput {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            let mut live = live();
            // Deleted under the lock, so `abandon_outputs` never sees a path that is gone
            // nor misses one that is still there.
            drop(file);
            live.paths.retain(|&(id, _)| id != self.id);
        }
    }
}

/// A temporary file in the folder of `path`, and the path it is renamed to at the end: `path`
/// itself, or the file it names when it is a symbolic link (the link stays). Its name is
/// `.kanata-pp-XXXXXX.tmp` with random letters, so runs at once never share one and a run
/// never takes up a file an earlier, killed run left.
pub(crate) fn temp_beside(path: &Path) -> Result<(TempOutput, PathBuf), Error> {
    let target = match fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_symlink() => {
            fs::canonicalize(path).unwrap_or_else(|_| path.to_owned())
        }
        _ => path.to_owned(),
    };
    let dir = match target.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    let mut temp = tempfile::Builder::new();
    temp.prefix(".kanata-pp-").suffix(".tmp");
    // A temporary file is private (0600) by default; the output should get the permissions
    // any new file gets (0666 less the umask).
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        temp.permissions(std::fs::Permissions::from_mode(0o666));
    }
    // Made and registered under the lock: a file made while the outputs are being abandoned
    // is either removed with the others or never made.
    let mut live = live();
    if live.abandoned {
        return Err(Error::new(ErrorKind::Io, "interrupted"));
    }
    let file = temp.tempfile_in(dir).map_err(|err| {
        Error::new(
            ErrorKind::Io,
            format!("cannot create a file in {}: {err}", dir.display()),
        )
    })?;
    let id = live.next;
    live.next += 1;
    // Absolute, so that it names the same file whatever the working directory is then.
    let registered = std::path::absolute(file.path()).unwrap_or_else(|_| file.path().to_owned());
    live.paths.push((id, registered));
    Ok((
        TempOutput {
            file: Some(file),
            id,
        },
        target,
    ))
}

/// Whether `path` exists and is not a regular file (a device, a FIFO, a socket).
pub(crate) fn is_special_file(path: &Path) -> bool {
    fs::metadata(path).is_ok_and(|meta| !meta.is_file() && !meta.is_dir())
}

/// Whether two paths name the same file, even through folders not made yet
/// (`new/../x.log` is `x.log`).
pub(crate) fn is_same_file(a: &Path, b: &Path) -> bool {
    a == b || matches!((resolve(a), resolve(b)), (Some(a), Some(b)) if a == b)
}

/// `path` made absolute: its longest existing prefix resolved by the file system (links
/// included), the rest, which cannot hold links yet, resolved by hand.
fn resolve(path: &Path) -> Option<PathBuf> {
    let mut existing = std::path::absolute(path).ok()?;
    // The components after `existing`, last first.
    let mut rest = Vec::new();
    let mut resolved = loop {
        if let Ok(resolved) = std::fs::canonicalize(&existing) {
            break resolved;
        }
        rest.push(existing.components().next_back()?.as_os_str().to_owned());
        if !existing.pop() {
            return None;
        }
    };
    for part in rest.iter().rev() {
        if part == ".." {
            resolved.pop();
        } else if part != "." {
            resolved.push(part);
        }
    }
    Some(resolved)
}

/// Writes `bytes` to `path` whole or not at all: into a temporary file beside it, renamed
/// into place at the end (what every output of kanata-pp does; for outputs made in memory,
/// such as pictures).
pub(crate) fn write_output(path: &Path, bytes: &[u8]) -> Result<(), Error> {
    use std::io::Write;
    let (temp, target) = temp_beside(path)?;
    let written = temp.reopen().and_then(|mut file| {
        file.write_all(bytes)?;
        file.flush()
    });
    written.map_err(|err| {
        Error::new(
            crate::error::ErrorKind::Io,
            format!("cannot write {}: {err}", path.display()),
        )
    })?;
    temp.persist(&target).map_err(|err| {
        Error::new(
            crate::error::ErrorKind::Io,
            format!("cannot write {}: {}", target.display(), err.error),
        )
    })
}
