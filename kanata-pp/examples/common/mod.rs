//! What the example generators share.

/// A small deterministic generator (xorshift64*), so the same arguments give the same output.
pub struct Rng(pub u64);

// Each generator uses some of these.
#[allow(dead_code)]
impl Rng {
    /// The next 64 bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `0..bound`, from the next value's high bits.
    pub fn below(&mut self, bound: u64) -> u64 {
        (self.next() >> 33) % bound
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }
}

/// A writer that counts the bytes that go through it, so that a generator stops at its size.
// Not every generator sizes its output this way.
#[allow(dead_code)]
pub struct Counting<W> {
    /// Where the bytes go.
    pub inner: W,
    /// How many went there.
    pub written: u64,
}

impl<W: std::io::Write> std::io::Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// What a generator sized in megabytes is asked for: `--mb N` (150 by default) and
/// `-o PATH`.
// Not every generator takes these arguments.
#[allow(dead_code)]
pub struct SizedOutput {
    /// How many bytes to write, about.
    pub limit: u64,
    /// The output path, as given.
    pub path: String,
    /// The output file, counting the bytes written.
    pub out: Counting<std::io::BufWriter<std::fs::File>>,
}

#[allow(dead_code)]
impl SizedOutput {
    /// Reads the command line and creates the output file.
    pub fn from_args() -> Result<SizedOutput, Box<dyn std::error::Error>> {
        let mut megabytes = 150u64;
        let mut path = None;
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--mb" => megabytes = args.next().ok_or("--mb needs a number")?.parse()?,
                "-o" => path = Some(args.next().ok_or("-o needs a path")?),
                other => return Err(format!("unknown argument {other:?}").into()),
            }
        }
        let path = path.ok_or("give the output with -o")?;
        let file = std::fs::File::create(&path)?;
        Ok(SizedOutput {
            limit: megabytes * 1_000_000,
            out: Counting {
                inner: std::io::BufWriter::with_capacity(1 << 20, file),
                written: 0,
            },
            path,
        })
    }
}
