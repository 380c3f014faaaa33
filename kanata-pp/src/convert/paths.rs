//! Where a conversion's output goes on disk: the default output name, the temporary file
//! beside the target that is renamed into place at the end, and whether two paths name the
//! same file.

use std::fs;
use std::path::{Path, PathBuf};

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

/// A temporary file in the folder of `path`, and the path it is renamed to at the end: `path`
/// itself, or the file it names when it is a symbolic link (the link stays).
pub(crate) fn temp_beside(path: &Path) -> Result<(tempfile::NamedTempFile, PathBuf), Error> {
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
    let temp = temp.tempfile_in(dir).map_err(|err| {
        Error::new(
            ErrorKind::Io,
            format!("cannot create a file in {}: {err}", dir.display()),
        )
    })?;
    Ok((temp, target))
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
