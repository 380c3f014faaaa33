//! Many inputs in one run: output names decided (and checked for clashes) before any work,
//! conversions run in parallel, results kept in input order so that reports and output bytes
//! never depend on `-j` or on scheduling.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use kanata_writer::Compression;

use crate::convert::{convert, is_same_file, output_stem, Destination, Options, Report};
use crate::error::{Error, ErrorKind};

/// One conversion of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// The input path.
    pub input: PathBuf,
    /// Where its output goes.
    pub destination: Destination,
}

/// Plans `OUTDIR/<name>.kanata[.gz|.zst]` for each input, `<name>` being the input's file name
/// without its compression and format suffixes. Two inputs that would write the same output
/// are a usage error, found before any work starts.
///
/// ```
/// use kanata_pp::cli::batch::plan;
/// use kanata_writer::Compression;
/// use std::path::{Path, PathBuf};
/// let jobs = plan(&[PathBuf::from("a/run1.log.gz"), PathBuf::from("b/run2.out")],
///                 Some(Path::new("out")), Compression::Zstd).unwrap();
/// assert_eq!(jobs[0].destination,
///            kanata_pp::Destination::Path(PathBuf::from("out/run1.kanata.zst")));
/// assert!(plan(&[PathBuf::from("a/x.log"), PathBuf::from("b/x.log.gz")],
///              Some(Path::new("out")), Compression::None).is_err());
/// ```
pub fn plan(
    inputs: &[PathBuf],
    out_dir: Option<&Path>,
    compression: Compression,
) -> Result<Vec<Job>, Error> {
    let Some(out_dir) = out_dir else {
        return Ok(inputs
            .iter()
            .map(|input| Job {
                input: input.clone(),
                destination: Destination::Check,
            })
            .collect());
    };
    let suffix = match compression {
        Compression::None => "",
        Compression::Gzip => ".gz",
        Compression::Zstd => ".zst",
    };
    let mut seen: HashMap<PathBuf, &Path> = HashMap::new();
    let mut jobs = Vec::with_capacity(inputs.len());
    for input in inputs {
        let stem = output_stem(input).ok_or_else(|| {
            Error::new(
                ErrorKind::Usage,
                format!("{}: cannot name an output for this input", input.display()),
            )
        })?;
        let output = out_dir.join(format!("{stem}.kanata{suffix}"));
        if is_same_file(&output, input) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{} would be overwritten by its own output: choose another -d",
                    input.display()
                ),
            ));
        }
        if let Some(other) = seen.insert(output.clone(), input) {
            return Err(Error::new(
                ErrorKind::Usage,
                format!(
                    "{} and {} would both be written to {}",
                    other.display(),
                    input.display(),
                    output.display()
                ),
            ));
        }
        jobs.push(Job {
            input: input.clone(),
            destination: Destination::Path(output),
        });
    }
    Ok(jobs)
}

/// Runs `jobs` on `threads` threads; `done(index, result)` is called for each job in input
/// order, as soon as it and every job before it have finished. One failure does not stop
/// the others.
pub fn run(
    jobs: &[Job],
    options: &Options,
    threads: usize,
    done: &mut (dyn FnMut(usize, &Result<Report, Error>) + Send),
) -> Vec<Result<Report, Error>> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Report, Error>>>> =
        Mutex::new((0..jobs.len()).map(|_| None).collect());
    let reported = Mutex::new((0usize, done));
    let threads = threads.clamp(1, jobs.len().max(1));
    let bars = crate::input::progress::batch_group(options.progress, jobs.len());
    let mut options = options.clone();
    options.progress_group = bars.as_ref().map(|(group, _)| group.clone());
    let options = &options;
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(index) else {
                    break;
                };
                let mut job_options = options.clone();
                job_options.destination = job.destination.clone();
                let result = convert(&job.input, &job_options);
                let mut results = results.lock().unwrap_or_else(|e| e.into_inner());
                results[index] = Some(result);
                // Report every finished job whose predecessors have all been reported.
                let mut reported = reported.lock().unwrap_or_else(|e| e.into_inner());
                while let Some(Some(result)) = results.get(reported.0) {
                    let at = reported.0;
                    if let Some((group, _)) = &bars {
                        // Messages go above the bars rather than through them.
                        group.suspend(|| (reported.1)(at, result));
                    } else {
                        (reported.1)(at, result);
                    }
                    reported.0 += 1;
                }
                if let Some((_, overall)) = &bars {
                    overall.inc(1);
                }
            });
        }
    });
    if let Some((_, overall)) = &bars {
        overall.finish_and_clear();
    }
    results
        .into_inner()
        .unwrap_or_else(|e| e.into_inner())
        .into_iter()
        .map(|r| r.unwrap_or_else(|| Err(Error::new(ErrorKind::Io, "not run"))))
        .collect()
}
