//! Fast output primitives for `hwprof script`: integers without `fmt`, JSON strings,
//! hex, and a JSON object builder writing into one reusable byte buffer.

/// Appends the decimal digits of `v`.
#[inline]
pub fn dec(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `v` in lowercase hex without prefix.
#[inline]
pub fn hex(out: &mut Vec<u8>, mut v: u64) {
    const D: &[u8; 16] = b"0123456789abcdef";
    let mut buf = [0u8; 16];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = D[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Appends `v` in hex, left-padded with spaces to `width`.
pub fn hex_pad(out: &mut Vec<u8>, v: u64, width: usize) {
    let digits = if v == 0 {
        1
    } else {
        (64 - v.leading_zeros() as usize).div_ceil(4)
    };
    out.resize(out.len() + width.saturating_sub(digits), b' ');
    hex(out, v);
}

/// Appends `v` in decimal, right-aligned to `width`.
pub fn dec_pad(out: &mut Vec<u8>, v: u64, width: usize) {
    let mut tmp = Vec::with_capacity(20);
    dec(&mut tmp, v);
    out.resize(out.len() + width.saturating_sub(tmp.len()), b' ');
    out.extend_from_slice(&tmp);
}

/// Appends a pid or tid as perf prints it (`(u32)-1` is -1), right-aligned to `width`.
pub fn id_pad(out: &mut Vec<u8>, v: u32, width: usize) {
    let v = v as i32;
    let mut tmp = Vec::with_capacity(11);
    if v < 0 {
        tmp.push(b'-');
    }
    dec(&mut tmp, u64::from(v.unsigned_abs()));
    out.resize(out.len() + width.saturating_sub(tmp.len()), b' ');
    out.extend_from_slice(&tmp);
}

/// Appends bytes as lowercase hex pairs.
pub fn hex_bytes(out: &mut Vec<u8>, b: &[u8]) {
    const D: &[u8; 16] = b"0123456789abcdef";
    out.reserve(b.len() * 2);
    for &x in b {
        out.push(D[usize::from(x >> 4)]);
        out.push(D[usize::from(x & 15)]);
    }
}

/// Appends `s` as a JSON string (invalid UTF-8 replaced).
pub fn json_str(out: &mut Vec<u8>, s: &[u8]) {
    out.push(b'"');
    let text = String::from_utf8_lossy(s);
    for &c in text.as_bytes() {
        match c {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            c if c < 0x20 => {
                out.extend_from_slice(b"\\u00");
                out.push(b"0123456789abcdef"[usize::from(c >> 4)]);
                out.push(b"0123456789abcdef"[usize::from(c & 15)]);
            }
            c => out.push(c),
        }
    }
    out.push(b'"');
}

/// A JSON object being written; `end` closes it.
pub struct Obj<'o> {
    pub out: &'o mut Vec<u8>,
    first: bool,
}

impl<'o> Obj<'o> {
    /// Opens `{`.
    pub fn new(out: &'o mut Vec<u8>) -> Self {
        out.push(b'{');
        Obj { out, first: true }
    }

    /// Writes `"k":` (with a comma when needed) and returns the buffer for the value.
    pub fn key(&mut self, k: &str) -> &mut Vec<u8> {
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(k.as_bytes());
        self.out.extend_from_slice(b"\":");
        self.out
    }

    /// An unsigned number.
    pub fn u(&mut self, k: &str, v: u64) -> &mut Self {
        dec(self.key(k), v);
        self
    }

    /// A pid, tid or cpu as perf prints it: the kernel's "none" (`(u32)-1`, or
    /// `(u64)-1` where a record stores it in 64 bits) is -1, never 4294967295.
    pub fn id(&mut self, k: &str, v: u64) -> &mut Self {
        let signed = match u32::try_from(v) {
            Ok(v32) => i64::from(v32 as i32),
            Err(_) => v as i64,
        };
        let o = self.key(k);
        if signed < 0 {
            o.push(b'-');
        }
        dec(o, signed.unsigned_abs());
        self
    }

    /// An optional [`Obj::id`] (absent = no key).
    pub fn opt_id(&mut self, k: &str, v: Option<u32>) -> &mut Self {
        if let Some(v) = v {
            self.id(k, v.into());
        }
        self
    }

    /// An optional unsigned number (absent = no key).
    pub fn opt(&mut self, k: &str, v: Option<u64>) -> &mut Self {
        if let Some(v) = v {
            self.u(k, v);
        }
        self
    }

    /// A boolean.
    pub fn b(&mut self, k: &str, v: bool) -> &mut Self {
        let o = self.key(k);
        o.extend_from_slice(if v { b"true" } else { b"false" });
        self
    }

    /// A string.
    pub fn s(&mut self, k: &str, v: &[u8]) -> &mut Self {
        json_str(self.key(k), v);
        self
    }

    /// Bytes as a hex string.
    pub fn x(&mut self, k: &str, v: &[u8]) -> &mut Self {
        let o = self.key(k);
        o.push(b'"');
        hex_bytes(o, v);
        o.push(b'"');
        self
    }

    /// An array of unsigned numbers.
    pub fn arr(&mut self, k: &str, v: impl Iterator<Item = u64>) -> &mut Self {
        let o = self.key(k);
        o.push(b'[');
        for (i, x) in v.enumerate() {
            if i > 0 {
                o.push(b',');
            }
            dec(o, x);
        }
        o.push(b']');
        self
    }

    /// Closes `}`.
    pub fn end(self) {
        self.out.push(b'}');
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_and_strings() {
        let mut o = Vec::new();
        for v in [0, 7, 10, 1234567890, u64::MAX] {
            o.clear();
            dec(&mut o, v);
            assert_eq!(o, v.to_string().as_bytes());
            o.clear();
            hex(&mut o, v);
            assert_eq!(o, format!("{v:x}").as_bytes());
            o.clear();
            hex_pad(&mut o, v, 16);
            assert_eq!(o, format!("{v:>16x}").as_bytes());
        }
        o.clear();
        json_str(&mut o, b"a\"b\\c\n\x01\xff");
        let back: String = serde_json::from_slice(&o).unwrap();
        assert_eq!(back, "a\"b\\c\n\u{1}\u{fffd}");
        o.clear();
        let mut j = Obj::new(&mut o);
        j.u("a", 1)
            .s("b", b"x")
            .b("c", true)
            .arr("d", [1u64, 2].into_iter());
        j.x("e", &[0xab, 1]);
        j.id("pid", u32::MAX.into())
            .id("tid", 42)
            .id("cpu", u64::MAX);
        j.opt_id("none", None).opt_id("ptid", Some(u32::MAX));
        j.end();
        let v: serde_json::Value = serde_json::from_slice(&o).unwrap();
        assert_eq!(
            v,
            serde_json::json!({"a":1,"b":"x","c":true,"d":[1,2],"e":"ab01",
                "pid":-1,"tid":42,"cpu":-1,"ptid":-1})
        );
    }
}
