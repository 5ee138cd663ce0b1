//! Fast output primitives for `hwprof script`: integers without `fmt`, JSON strings,
//! hex, and a JSON object builder writing into one reusable byte buffer.
//!
//! A number is formatted where it goes, without allocating and without a call to
//! `memcpy` per number: a decimal of up to 16 characters in registers
//! ([`eight_digits`]) stored as one word, others written over a fixed run of padding
//! (see [`FIXED`]); either is appended whole, then cut to its length.

/// The most bytes a number (its padding included) is written with at once: a run of
/// this many bytes of padding is appended (a copy of a length the compiler knows is a
/// few stores, where one of a number's own length is a call to `memcpy`), the digits
/// are written over it in place and the rest is cut. Nothing is formatted elsewhere
/// and copied: a copy would read back bytes just stored one by one, which the CPU
/// cannot forward to a wide load and waits for. Wider fields pad apart.
const FIXED: usize = 32;

/// The two decimal digits of 0 to 99, in order.
const PAIRS: [u8; 200] = {
    let mut t = [0u8; 200];
    let mut i = 0;
    while i < 100 {
        t[2 * i] = b'0' + (i / 10) as u8;
        t[2 * i + 1] = b'0' + (i % 10) as u8;
        i += 1;
    }
    t
};

/// How many decimal digits `v` has.
#[inline]
fn dec_len(v: u64) -> usize {
    v.checked_ilog10().map_or(1, |l| l as usize + 1)
}

/// How many hex digits `v` has.
#[inline]
fn hex_len(v: u64) -> usize {
    (64 - v.leading_zeros() as usize).div_ceil(4).max(1)
}

/// Writes the decimal digits of `v` into `buf`, the last one before `end` (which
/// leaves room for them: `end >= dec_len(v)`).
#[inline]
fn put_dec(buf: &mut [u8; FIXED], mut end: usize, mut v: u64) {
    while v >= 100 {
        let r = (v % 100) as usize * 2;
        v /= 100;
        end -= 2;
        buf[end] = PAIRS[r];
        buf[end + 1] = PAIRS[r + 1];
    }
    if v >= 10 {
        let r = v as usize * 2;
        buf[end - 2] = PAIRS[r];
        buf[end - 1] = PAIRS[r + 1];
    } else {
        buf[end - 1] = b'0' + v as u8;
    }
}

/// Writes the hex digits of `v` into `buf`, the last one before `end` (which leaves
/// room for them: `end >= hex_len(v)`).
#[inline]
fn put_hex(buf: &mut [u8; FIXED], mut end: usize, mut v: u64) {
    const D: &[u8; 16] = b"0123456789abcdef";
    loop {
        end -= 1;
        buf[end] = D[(v & 15) as usize];
        v >>= 4;
        if v == 0 {
            break;
        }
    }
}

/// How a number is laid out in its field.
#[derive(Clone, Copy)]
struct Layout {
    /// The field's width (a longer number takes what it needs).
    width: usize,
    /// What pads it.
    fill: u8,
    /// Padding after the number (`%-5d`), else before it.
    left: bool,
}

impl Layout {
    /// Right-aligned to `width`, padded with `fill` (`%5d`, `%05d`).
    const fn right(width: usize, fill: u8) -> Layout {
        Layout {
            width,
            fill,
            left: false,
        }
    }
}

/// Appends a number of `len` characters (a `-` first when `neg`) laid out as `l`
/// says, its digits written by `put` (ending at the index it is given).
#[inline]
fn number(
    out: &mut Vec<u8>,
    len: usize,
    neg: bool,
    l: Layout,
    put: impl Fn(&mut [u8; FIXED], usize),
) {
    let total = len.max(l.width);
    if total <= FIXED {
        let start = if l.left { 0 } else { total - len };
        in_place(out, total, start, len, neg, l.fill, put);
        return;
    }
    // A field wider than the buffer: the padding apart.
    let pad = total - len;
    if !l.left {
        out.resize(out.len() + pad, l.fill);
    }
    in_place(out, len, 0, len, neg, l.fill, put);
    if l.left {
        out.resize(out.len() + pad, l.fill);
    }
}

/// Appends `total` bytes (at most [`FIXED`]) of `fill` with a number of `len`
/// characters from `start` (a `-` first when `neg`, then the digits `put` writes).
#[inline]
fn in_place(
    out: &mut Vec<u8>,
    total: usize,
    start: usize,
    len: usize,
    neg: bool,
    fill: u8,
    put: impl Fn(&mut [u8; FIXED], usize),
) {
    let at = out.len();
    out.extend_from_slice(&[fill; FIXED]);
    if let Some(buf) = out[at..].first_chunk_mut::<FIXED>() {
        if neg {
            buf[start] = b'-';
        }
        put(buf, start + len);
    }
    out.truncate(at + total);
}

/// The eight decimal digits of `v` (below 10^8, leading zeros included) as ASCII, the
/// first in the lowest byte: all eight at once in one word's lanes (SWAR), halves
/// then quarters then digits, by multiplying by reciprocals.
#[inline]
fn eight_digits(v: u32) -> u64 {
    let v = u64::from(v);
    // Two lanes of 32 bits: abcd, efgh.
    let x = (v / 10_000) | ((v % 10_000) << 32);
    // Lanes of 16 bits: ab, cd, ef, gh (`* 10486 >> 20` is `/ 100` below 43699).
    let hundreds = ((x * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = hundreds | ((x - hundreds * 100) << 16);
    // Lanes of 8 bits: a, b, ..., h (`* 103 >> 10` is `/ 10` below 179).
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    let digits = tens | ((pairs - tens * 10) << 8);
    digits | 0x3030_3030_3030_3030
}

/// A mask of the low `n` bytes (`n <= 16`) of a word.
#[inline]
fn low_bytes(n: usize) -> u128 {
    if n >= 16 {
        u128::MAX
    } else {
        (1u128 << (8 * n)) - 1
    }
}

/// Appends a number below 10^16 (a `-` first when `neg`) laid out as `l` in a field
/// of at most 16 bytes, formatted in a register ([`eight_digits`]) and stored whole;
/// false (nothing appended) for any other.
#[inline]
fn dec_word(out: &mut Vec<u8>, neg: bool, v: u64, l: Layout) -> bool {
    const E8: u64 = 100_000_000;
    if v >= E8 * E8 {
        return false;
    }
    let digits = dec_len(v);
    let len = digits + usize::from(neg);
    let total = len.max(l.width);
    if total > 16 {
        return false;
    }
    // The 16 digits of `v`, the first in the lowest byte.
    let zeros = u128::from(eight_digits(0));
    let high = if v >= E8 {
        u128::from(eight_digits((v / E8) as u32))
    } else {
        zeros
    };
    let all = high | (u128::from(eight_digits((v % E8) as u32)) << 64);
    let fill = u128::from_ne_bytes([l.fill; 16]);
    let minus = u128::from(b'-');
    let word = if l.left {
        // The number in the low bytes, the fill after it.
        let mut w = all >> (8 * (16 - digits));
        if neg {
            w = (w << 8) | minus;
        }
        let keep = low_bytes(len);
        (w & keep) | (fill & !keep)
    } else {
        // Right-aligned in 16 bytes, then the field's last `total` of them.
        let lead = 16 - len;
        let pad = low_bytes(lead);
        let mut w = (all & !pad) | (fill & pad);
        if neg {
            w = (w & !(0xff << (8 * lead))) | (minus << (8 * lead));
        }
        w >> (8 * (16 - total))
    };
    let at = out.len();
    out.extend_from_slice(&word.to_le_bytes());
    out.truncate(at + total);
    true
}

/// Appends `v` in decimal laid out as `l`.
#[inline]
fn dec_in(out: &mut Vec<u8>, v: u64, l: Layout) {
    if !dec_word(out, false, v, l) {
        number(out, dec_len(v), false, l, |b, end| put_dec(b, end, v));
    }
}

/// Appends a pid or tid as perf prints it (`(u32)-1` is -1) laid out as `l`.
#[inline]
fn id_in(out: &mut Vec<u8>, v: u32, l: Layout) {
    let v = v as i32;
    let neg = v < 0;
    let abs = u64::from(v.unsigned_abs());
    if !dec_word(out, neg, abs, l) {
        number(out, dec_len(abs) + usize::from(neg), neg, l, |b, end| {
            put_dec(b, end, abs)
        });
    }
}

/// Appends the decimal digits of `v`.
#[inline]
pub fn dec(out: &mut Vec<u8>, v: u64) {
    dec_in(out, v, Layout::right(0, b' '));
}

/// Appends `v` in lowercase hex without prefix.
#[inline]
pub fn hex(out: &mut Vec<u8>, v: u64) {
    hex_pad(out, v, 0);
}

/// Appends `v` in hex, left-padded with spaces to `width`.
#[inline]
pub fn hex_pad(out: &mut Vec<u8>, v: u64, width: usize) {
    let l = Layout::right(width, b' ');
    number(out, hex_len(v), false, l, |b, end| put_hex(b, end, v));
}

/// Appends `v` in decimal, right-aligned to `width`.
#[inline]
pub fn dec_pad(out: &mut Vec<u8>, v: u64, width: usize) {
    dec_in(out, v, Layout::right(width, b' '));
}

/// Appends `v` in decimal, zero-padded to `width` digits (`%0*lu`).
#[inline]
pub fn dec_zero(out: &mut Vec<u8>, v: u64, width: usize) {
    // The common case (a time's microseconds): exactly `width` digits, at most 8,
    // which [`eight_digits`] gives with its zeros.
    if (1..=8).contains(&width) && v < 10u64.pow(width as u32) {
        let digits = eight_digits(v as u32) >> (8 * (8 - width));
        let at = out.len();
        out.extend_from_slice(&digits.to_le_bytes());
        out.truncate(at + width);
        return;
    }
    dec_in(out, v, Layout::right(width, b'0'));
}

/// Appends a pid or tid as perf prints it (`(u32)-1` is -1), right-aligned to `width`.
#[inline]
pub fn id_pad(out: &mut Vec<u8>, v: u32, width: usize) {
    id_in(out, v, Layout::right(width, b' '));
}

/// Appends a pid or tid as perf prints it (`(u32)-1` is -1), left-aligned to `width`
/// (`%-5d`).
#[inline]
pub fn id_left(out: &mut Vec<u8>, v: u32, width: usize) {
    id_in(
        out,
        v,
        Layout {
            width,
            fill: b' ',
            left: true,
        },
    );
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
        let e8 = 100_000_000u64;
        for v in [
            0,
            5,
            99,
            100,
            12345,
            e8 - 1,
            e8,
            e8 + 7,
            123_456_789_012_345,
            e8 * e8 - 1,
            e8 * e8,
            10u64.pow(19),
            u64::MAX,
        ] {
            for w in [0, 1, 3, 6, 8, 9, 10, 15, 16, 17, 40] {
                o.clear();
                o.push(b'<');
                dec_pad(&mut o, v, w);
                dec_zero(&mut o, v, w);
                hex_pad(&mut o, v, w);
                assert_eq!(o, format!("<{v:>w$}{v:0w$}{v:>w$x}").as_bytes());
            }
        }
        for v in [
            0u32,
            7,
            30516,
            i32::MAX as u32,
            u32::MAX,
            u32::MAX - 41,
            1 << 31,
        ] {
            for w in [0, 5, 10, 11, 12, 16, 17, 40] {
                o.clear();
                id_pad(&mut o, v, w);
                o.push(b'/');
                id_left(&mut o, v, w);
                let s = v as i32;
                assert_eq!(o, format!("{s:>w$}/{s:<w$}").as_bytes());
            }
        }
        for v in (0..100_000_000u32).step_by(9_973).chain([99_999_999]) {
            assert_eq!(eight_digits(v).to_le_bytes(), *format!("{v:08}").as_bytes());
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
