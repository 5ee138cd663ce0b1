//! A bounds-checked little-endian reader over one record's bytes.

use crate::error::{Error, Result};

/// Reads little-endian integers and byte runs from a slice; every read is checked and a
/// short read becomes [`Error::Malformed`] naming the absolute byte offset.
#[derive(Clone, Debug)]
pub(crate) struct Cursor<'a> {
    buf: &'a [u8],
    pos: usize,
    /// Absolute offset of `buf[0]` (for error messages).
    base: u64,
    what: &'static str,
}

impl<'a> Cursor<'a> {
    /// A cursor over `buf`, which starts at absolute offset `base`.
    pub(crate) fn new(buf: &'a [u8], base: u64, what: &'static str) -> Self {
        Cursor {
            buf,
            pos: 0,
            base,
            what,
        }
    }

    /// Absolute offset of the next byte.
    pub(crate) fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Bytes left.
    pub(crate) fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// An error at the current position.
    pub(crate) fn err(&self, msg: impl Into<String>) -> Error {
        Error::malformed(self.what, self.offset(), msg)
    }

    /// The next `n` bytes.
    #[inline]
    pub(crate) fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        match end.and_then(|e| self.buf.get(self.pos..e)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.err(format!(
                "need {n} bytes, {} left in the record",
                self.remaining()
            ))),
        }
    }

    /// Everything left.
    pub(crate) fn rest(&mut self) -> &'a [u8] {
        let s = self.buf.get(self.pos..).unwrap_or(&[]);
        self.pos = self.buf.len();
        s
    }

    /// A `u64`.
    #[inline]
    pub(crate) fn u64(&mut self) -> Result<u64> {
        let b = self.bytes(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(u64::from_le_bytes(a))
    }

    /// A `u32`.
    #[inline]
    pub(crate) fn u32(&mut self) -> Result<u32> {
        let b = self.bytes(4)?;
        let mut a = [0u8; 4];
        a.copy_from_slice(b);
        Ok(u32::from_le_bytes(a))
    }

    /// A `u16`.
    pub(crate) fn u16(&mut self) -> Result<u16> {
        let b = self.bytes(2)?;
        Ok(u16::from_le_bytes([b[0], b[1]]))
    }

    /// A `u8`.
    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    /// `n` u64s, borrowed.
    pub(crate) fn u64s(&mut self, n: u64) -> Result<U64s<'a>> {
        let len = usize::try_from(n)
            .ok()
            .and_then(|n| n.checked_mul(8))
            .filter(|&l| l <= self.remaining())
            .ok_or_else(|| {
                self.err(format!(
                    "{n} u64s do not fit in the {} bytes left",
                    self.remaining()
                ))
            })?;
        Ok(U64s(self.bytes(len)?))
    }

    /// The rest as a NUL-terminated string (padding after the NUL dropped).
    pub(crate) fn cstr_rest(&mut self) -> &'a [u8] {
        cstr(self.rest())
    }
}

/// `b` up to its first NUL.
pub(crate) fn cstr(b: &[u8]) -> &[u8] {
    match b.iter().position(|&c| c == 0) {
        Some(n) => &b[..n],
        None => b,
    }
}

/// A borrowed run of little-endian `u64`s (callchains, register values, ids).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct U64s<'a>(&'a [u8]);

impl<'a> U64s<'a> {
    /// Wraps bytes whose length is a multiple of 8 (a trailing partial word is ignored).
    pub fn new(bytes: &'a [u8]) -> Self {
        U64s(bytes)
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.0.len() / 8
    }

    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The values.
    pub fn iter(&self) -> impl ExactSizeIterator<Item = u64> + Clone + 'a {
        self.0.chunks_exact(8).map(|c| {
            let mut a = [0u8; 8];
            a.copy_from_slice(c);
            u64::from_le_bytes(a)
        })
    }

    /// Value `i`, if present.
    pub fn get(&self, i: usize) -> Option<u64> {
        let c = self
            .0
            .get(i.checked_mul(8)?..i.checked_mul(8)?.checked_add(8)?)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        Some(u64::from_le_bytes(a))
    }

    /// The values as a vector.
    pub fn to_vec(&self) -> Vec<u64> {
        self.iter().collect()
    }

    /// The raw bytes.
    pub fn as_bytes(&self) -> &'a [u8] {
        self.0
    }
}
