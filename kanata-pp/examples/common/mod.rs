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
