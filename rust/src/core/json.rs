//! The strict JSON parser: RFC 8259 plus the I-JSON rules (RFC 7493).
//!
//! One left-to-right pass with an explicit stack (no recursion), generic over
//! a [`Builder`] so the core knows nothing of Python: the binding builds
//! Python objects directly, the tests build `serde_json::Value`s. Errors are a
//! [`Code`] and a character offset; the message and hint are rendered by
//! `decisions._json_errors`, which both backends share. The rules (the order
//! of the checks and the position each code reports) are written down in the
//! docstring of `python/decisions/_pure/json.py`, the twin of this file.

use crate::core::errors::Code;
use crate::core::limits::Limits;
use serde_json::{Map, Number, Value};

/// What the parser calls to build values. `Value` is one finished value.
pub trait Builder {
    type Value;
    type Error;
    fn null(&mut self) -> Result<Self::Value, Self::Error>;
    fn boolean(&mut self, value: bool) -> Result<Self::Value, Self::Error>;
    fn int(&mut self, value: i64) -> Result<Self::Value, Self::Error>;
    fn uint(&mut self, value: u64) -> Result<Self::Value, Self::Error>;
    fn float(&mut self, value: f64) -> Result<Self::Value, Self::Error>;
    /// A string value; `ascii` is true when every byte is below 0x80.
    fn string(&mut self, value: &str, ascii: bool) -> Result<Self::Value, Self::Error>;
    /// An object key (may be cached by the builder).
    fn key(&mut self, value: &str, ascii: bool) -> Result<Self::Value, Self::Error>;
    /// An array holding `items`, in order.
    fn array(
        &mut self,
        items: std::vec::Drain<'_, Self::Value>,
    ) -> Result<Self::Value, Self::Error>;
    /// An object from its complete `members`: key, value, key, value, ... in
    /// document order (so the builder can size it once).
    fn object(
        &mut self,
        members: std::vec::Drain<'_, Self::Value>,
    ) -> Result<Object<Self::Value>, Self::Error>;
}

/// What [`Builder::object`] made of an object's members.
pub enum Object<V> {
    Built(V),
    /// The key of this member (counted from 0) repeats an earlier key.
    DuplicateKey(usize),
}

/// A parse failure: the code and the character offset it applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JsonError {
    pub code: Code,
    pub pos: usize,
}

/// Why parsing stopped: a parse error, or the builder failed (out of memory).
#[derive(Debug)]
pub enum Failure<E> {
    Parse(JsonError),
    Build(E),
}

impl<E> From<JsonError> for Failure<E> {
    fn from(e: JsonError) -> Self {
        Failure::Parse(e)
    }
}

/// Checks that come before parsing, on the raw bytes: size, UTF-16/32, BOM.
/// `Err` holds the code (its position is always 0).
pub fn precheck(data: &[u8], limits: &Limits) -> Result<(), Code> {
    if data.len() > limits.max_document_bytes {
        return Err(Code::DOCUMENT_TOO_LARGE);
    }
    match data {
        [0xFE, 0xFF, ..] | [0xFF, 0xFE, ..] | [0, _, ..] | [_, 0, ..] => Err(Code::UTF16_INPUT),
        [0xEF, 0xBB, 0xBF, ..] => Err(Code::BOM),
        _ => Ok(()),
    }
}

/// Parse bytes: the prechecks, UTF-8 validation, then the document.
pub fn parse_bytes<B: Builder>(
    data: &[u8],
    limits: &Limits,
    builder: &mut B,
) -> Result<B::Value, Failure<B::Error>> {
    parse_bytes_in(data, limits, builder, &mut Buffers::default())
}

/// Parse text already known to be UTF-8 (a Python `str`): the prechecks, then the document.
pub fn parse_str<B: Builder>(
    text: &str,
    limits: &Limits,
    builder: &mut B,
) -> Result<B::Value, Failure<B::Error>> {
    parse_str_in(text, limits, builder, &mut Buffers::default())
}

/// [`parse_bytes`] with working memory kept by the caller between calls.
pub fn parse_bytes_in<B: Builder>(
    data: &[u8],
    limits: &Limits,
    builder: &mut B,
    buffers: &mut Buffers<B::Value>,
) -> Result<B::Value, Failure<B::Error>> {
    precheck(data, limits).map_err(|code| JsonError { code, pos: 0 })?;
    // The fast check says only whether; the standard one says where.
    if simdutf8::basic::from_utf8(data).is_err() {
        if let Err(e) = std::str::from_utf8(data) {
            let prefix = data.get(..e.valid_up_to()).unwrap_or_default();
            return Err(JsonError {
                code: Code::INVALID_UTF8,
                pos: char_count(prefix),
            }
            .into());
        }
    }
    parse_valid(data, limits, builder, buffers)
}

/// [`parse_str`] with working memory kept by the caller between calls.
pub fn parse_str_in<B: Builder>(
    text: &str,
    limits: &Limits,
    builder: &mut B,
    buffers: &mut Buffers<B::Value>,
) -> Result<B::Value, Failure<B::Error>> {
    precheck(text.as_bytes(), limits).map_err(|code| JsonError { code, pos: 0 })?;
    parse_valid(text.as_bytes(), limits, builder, buffers)
}

/// The parser's working memory: the container stack, the items and members
/// of open containers, the offsets of their keys and the buffer of strings
/// with escapes. A caller that parses often keeps one to skip the
/// allocations; it is empty between parses.
pub struct Buffers<V> {
    stack: Vec<Frame>,
    items: Vec<V>,
    key_offsets: Vec<usize>,
    scratch: Vec<u8>,
}

impl<V> Default for Buffers<V> {
    fn default() -> Self {
        Buffers::new()
    }
}

impl<V> Buffers<V> {
    pub const fn new() -> Self {
        Buffers {
            stack: Vec::new(),
            items: Vec::new(),
            key_offsets: Vec::new(),
            scratch: Vec::new(),
        }
    }

    /// Buffers sized for about `values` open items and `depth` open
    /// containers, so that a parse of a small document does not grow them.
    pub fn with_capacity(values: usize, depth: usize) -> Self {
        Buffers {
            stack: Vec::with_capacity(depth),
            items: Vec::with_capacity(values),
            key_offsets: Vec::with_capacity(values),
            scratch: Vec::new(),
        }
    }

    /// Drop what a failed parse left behind, and memory beyond a small reserve.
    /// The scratch buffer keeps its (initialized) bytes: see
    /// [`Parser::string_bytes`].
    fn reset(&mut self) {
        const KEEP: usize = 64 * 1024;
        self.stack.clear();
        self.items.clear();
        self.key_offsets.clear();
        if self.scratch.capacity() > KEEP {
            self.scratch = Vec::new();
        }
        if self.items.capacity() * std::mem::size_of::<V>() > KEEP {
            self.items = Vec::new();
        }
        if self.key_offsets.capacity() * std::mem::size_of::<usize>() > KEEP {
            self.key_offsets = Vec::new();
        }
        if self.stack.capacity() * std::mem::size_of::<Frame>() > KEEP {
            self.stack = Vec::new();
        }
    }
}

/// Characters in valid UTF-8 `bytes` (bytes that are not continuation bytes).
pub fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}

/// `text` must be valid UTF-8 (the string scanner relies on it).
fn parse_valid<B: Builder>(
    text: &[u8],
    limits: &Limits,
    builder: &mut B,
    buffers: &mut Buffers<B::Value>,
) -> Result<B::Value, Failure<B::Error>> {
    // The stacks are taken out of `buffers` for the parse and put back
    // after: as locals, their pointers and lengths need no load through it.
    let mut stack = std::mem::take(&mut buffers.stack);
    let mut items = std::mem::take(&mut buffers.items);
    let mut key_offsets = std::mem::take(&mut buffers.key_offsets);
    let mut parser = Parser {
        text,
        pos: 0,
        values_left: limits.max_values,
        member_items: limits.max_object_members.saturating_mul(2),
        limits,
        scratch: &mut buffers.scratch,
    };
    let result = parser.run(builder, &mut stack, &mut items, &mut key_offsets);
    buffers.stack = stack;
    buffers.items = items;
    buffers.key_offsets = key_offsets;
    buffers.reset();
    result.map_err(|f| match f {
        Failure::Parse(JsonError { code, pos }) => Failure::Parse(JsonError {
            code,
            pos: char_count(text.get(..pos).unwrap_or(text)),
        }),
        other => other,
    })
}

/// An open array or object, in one word: the index of its first item (or
/// key) on the value stack, shifted left by one, and 1 for an object. Its
/// items (an object's keys and values, in turn) wait on the value stack
/// until it closes, so their count is the stack's length less that index;
/// an object's key offsets wait on the key stack, one per member. (The
/// shift cannot overflow: every item takes at least one byte of the text,
/// whose length is at most `isize::MAX`.)
#[derive(Clone, Copy)]
struct Frame(usize);

impl Frame {
    #[inline(always)]
    fn new(start: usize, object: bool) -> Frame {
        Frame(start << 1 | usize::from(object))
    }

    #[inline(always)]
    fn is_object(self) -> bool {
        self.0 & 1 != 0
    }

    /// Index of the first item or key on the value stack.
    #[inline(always)]
    fn start(self) -> usize {
        self.0 >> 1
    }
}

struct Parser<'a, 'b> {
    text: &'a [u8],
    /// Byte offset (converted to characters only when an error is reported).
    pos: usize,
    /// Values the document may still hold (counts down from `max_values`).
    values_left: usize,
    /// Items an open object may hold before a new member is refused: a key
    /// and a value for each of `max_object_members`.
    member_items: usize,
    limits: &'a Limits,
    scratch: &'b mut Vec<u8>,
}

#[inline]
fn fail<T, E>(code: Code, pos: usize) -> Result<T, Failure<E>> {
    Err(Failure::Parse(JsonError { code, pos }))
}

#[inline]
fn is_digit(b: u8) -> bool {
    b.is_ascii_digit()
}

fn hex_value(b: u8) -> Option<u32> {
    match b {
        b'0'..=b'9' => Some(u32::from(b - b'0')),
        b'a'..=b'f' => Some(u32::from(b - b'a' + 10)),
        b'A'..=b'F' => Some(u32::from(b - b'A' + 10)),
        _ => None,
    }
}

/// What the character after a backslash stands for: the byte of a simple
/// escape, `u` for `\u` (four hex digits follow), 0 for an invalid escape.
// Evaluated at compile time: an index out of range would be a build error, not a panic.
#[allow(clippy::indexing_slicing)]
static ESCAPES: [u8; 256] = {
    let mut table = [0u8; 256];
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'/' as usize] = b'/';
    table[b'b' as usize] = 8;
    table[b'f' as usize] = 12;
    table[b'n' as usize] = b'\n';
    table[b'r' as usize] = b'\r';
    table[b't' as usize] = b'\t';
    table[b'u' as usize] = b'u';
    table
};

/// `vec.push(value)`, inlined: a capacity check and a write, the growth out
/// of line (the standard `push` is not always inlined into the parse loop).
#[inline(always)]
fn push<T>(vec: &mut Vec<T>, value: T) {
    if vec.len() == vec.capacity() {
        *vec = grow(std::mem::take(vec));
    }
    let len = vec.len();
    if let Some(slot) = vec.spare_capacity_mut().first_mut() {
        slot.write(value);
        // SAFETY: the slot at `len` was just written.
        unsafe { vec.set_len(len + 1) };
    }
}

#[cold]
#[inline(never)]
fn grow<T>(mut vec: Vec<T>) -> Vec<T> {
    // By value: a `&mut` would take the address of the caller's vector.
    vec.reserve(1);
    vec
}

/// Powers of ten that are exact doubles.
const EXACT_POWERS_OF_TEN: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A number read by [`Parser::short_number`].
enum Short {
    Uint(u64),
    Int(i64),
    Float(f64),
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Mask with the high bit set in the first byte of `word` that is `"`, `\` or
/// below 0x20 (bits above the first hit may be spurious; only the lowest is used).
#[inline]
fn special_mask(word: u64) -> u64 {
    let quote = word ^ (ONES * u64::from(b'"'));
    let backslash = word ^ (ONES * u64::from(b'\\'));
    let zero_quote = quote.wrapping_sub(ONES) & !quote;
    let zero_backslash = backslash.wrapping_sub(ONES) & !backslash;
    let control = word.wrapping_sub(ONES * 0x20) & !word;
    (zero_quote | zero_backslash | control) & HIGHS
}

/// For 16 bytes: a bit per `"`, `\` or control byte, and a bit per byte at
/// or above 0x80 (SSE2, which every x86_64 has).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn special16(chunk: &[u8]) -> (u32, u32) {
    use std::arch::x86_64::*;
    debug_assert!(chunk.len() >= 16);
    #[allow(unused_unsafe)]
    // SAFETY: callers pass at least 16 readable bytes; the load is unaligned.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let quote = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8));
        let backslash = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8));
        // b < 0x20 (unsigned) exactly when min(b, 0x1F) == b.
        let control = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
        let hits = _mm_or_si128(_mm_or_si128(quote, backslash), control);
        (_mm_movemask_epi8(hits) as u32, _mm_movemask_epi8(v) as u32)
    }
}

/// Grow the scratch buffer (zero-filled) to at least 32 bytes past `o`.
#[cold]
#[inline(never)]
fn grow_scratch(out: &mut Vec<u8>, o: usize) {
    let len = (o + 32).max(out.len() * 2).max(256);
    out.resize(len, 0);
}

/// The sixteen bytes of `text` from `i`, padded with quotes past its end
/// (so a scan that reaches the end stops there, at a quote that is not in
/// the text).
#[inline(always)]
fn chunk16(text: &[u8], i: usize) -> [u8; 16] {
    if let Some(chunk) = text.get(i..).and_then(|rest| rest.first_chunk::<16>()) {
        return *chunk;
    }
    let mut padded = [b'"'; 16];
    let rest = text.get(i..).unwrap_or_default();
    if let Some(slot) = padded.get_mut(..rest.len()) {
        slot.copy_from_slice(rest);
    }
    padded
}

/// [`special16`] of a 16-byte array, on any target.
#[inline(always)]
fn special16_of(chunk: &[u8; 16]) -> (u32, u32) {
    #[cfg(target_arch = "x86_64")]
    {
        special16(chunk)
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let (mut mask, mut high) = (0u32, 0u32);
        for (k, &b) in chunk.iter().enumerate() {
            mask |= u32::from(b == b'"' || b == b'\\' || b < 0x20) << k;
            high |= u32::from(b >= 0x80) << k;
        }
        (mask, high)
    }
}

/// The string whose opening quote is at `quote`, with escapes (or breaking a
/// rule): `first` is its first quote, backslash or control byte, `ascii`
/// whether the bytes before it are ASCII. Decodes it into `out` and returns
/// the decoded length, the offset after the closing quote and whether the
/// text is ASCII.
///
/// One pass: at each step sixteen bytes are copied to the end of the output
/// whatever they hold, and the output then advances only to the first
/// special byte among them (the bytes past it are overwritten by what
/// follows). So `out` keeps 32 bytes of room past the output; its bytes are
/// initialized once and kept between strings (it is never truncated).
#[inline(never)]
fn decode_escaped(
    text: &[u8],
    quote: usize,
    first: usize,
    mut ascii: bool,
    limits: &Limits,
    out: &mut Vec<u8>,
) -> Result<(usize, usize, bool), JsonError> {
    let max = limits.max_string_bytes;
    let too_long = JsonError {
        code: Code::STRING_TOO_LONG,
        pos: quote,
    };
    let run = text.get(quote + 1..first).unwrap_or_default();
    // The output so far: its length is the decoded byte count.
    let mut o = run.len();
    if o > max {
        return Err(too_long);
    }
    if out.len() < o + 32 {
        grow_scratch(out, o);
    }
    if let Some(slot) = out.get_mut(..o) {
        slot.copy_from_slice(run);
    }
    let mut cur = first;
    loop {
        // The byte at `cur` is special; the output has 32 bytes of room.
        let here = text.get(cur).copied();
        if o > max {
            return Err(too_long);
        }
        if here != Some(b'\\') {
            return match here {
                Some(b'"') => Ok((o, cur + 1, ascii)),
                None => Err(JsonError {
                    code: Code::UNEXPECTED_END,
                    pos: text.len(),
                }),
                Some(_) => Err(JsonError {
                    code: Code::CONTROL_CHARACTER,
                    pos: cur,
                }),
            };
        }
        let Some(&e) = text.get(cur + 1) else {
            return Err(JsonError {
                code: Code::UNEXPECTED_END,
                pos: text.len(),
            });
        };
        // A table, not a match: mixed escapes would mispredict a jump table.
        match ESCAPES.get(usize::from(e)).copied().unwrap_or(0) {
            0 => {
                return Err(JsonError {
                    code: Code::INVALID_ESCAPE,
                    pos: cur,
                })
            }
            b'u' => {
                let (ch, next) = unicode_escape(text, cur)?;
                let mut buf = [0u8; 4];
                let width = ch.encode_utf8(&mut buf).len();
                ascii &= width == 1;
                if let Some(slot) = out.get_mut(o..o + 4) {
                    slot.copy_from_slice(&buf);
                }
                o += width;
                cur = next;
            }
            byte => {
                if let Some(slot) = out.get_mut(o) {
                    *slot = byte;
                }
                o += 1;
                cur += 2;
            }
        }
        // The run up to the next special byte, sixteen bytes a step.
        loop {
            let room = out.get_mut(o..).and_then(|rest| rest.get_mut(..32));
            let Some(slot) = room.and_then(|r| r.first_chunk_mut::<16>()) else {
                // Past the limit the string fails at its next special byte
                // whatever that is: it may as well fail here, before growing.
                if o > max {
                    return Err(too_long);
                }
                grow_scratch(out, o);
                continue;
            };
            let chunk = chunk16(text, cur);
            *slot = chunk;
            let (mask, high) = special16_of(&chunk);
            if mask == 0 {
                ascii &= high == 0;
                cur += 16;
                o += 16;
                continue;
            }
            let k = mask.trailing_zeros();
            ascii &= high & ((1u32 << k) - 1) == 0;
            cur += k as usize;
            o += k as usize;
            break;
        }
    }
}

/// The character of the `\u` escape whose backslash is at `j` (two escapes
/// for a surrogate pair), and the offset after it.
#[inline]
fn unicode_escape(text: &[u8], j: usize) -> Result<(char, usize), JsonError> {
    let end = JsonError {
        code: Code::UNEXPECTED_END,
        pos: text.len(),
    };
    let lone = JsonError {
        code: Code::LONE_SURROGATE,
        pos: j,
    };
    let first = hex4(text, j)?;
    let (code, next) = match first {
        0xD800..=0xDBFF => {
            let m = j + 6;
            match (text.get(m), text.get(m + 1)) {
                (None, _) | (Some(b'\\'), None) => return Err(end),
                (Some(b'\\'), Some(b'u')) => {}
                _ => return Err(lone),
            }
            let second = hex4(text, m)?;
            if !(0xDC00..=0xDFFF).contains(&second) {
                return Err(lone);
            }
            (
                0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00),
                m + 6,
            )
        }
        0xDC00..=0xDFFF => return Err(lone),
        cp => (cp, j + 6),
    };
    char::from_u32(code).map(|ch| (ch, next)).ok_or(lone)
}

/// The four hex digits of the `\u` escape whose backslash is at `j`.
fn hex4(text: &[u8], j: usize) -> Result<u32, JsonError> {
    if let Some(&[a, b, c, d]) = text.get(j + 2..j + 6) {
        if let (Some(a), Some(b), Some(c), Some(d)) =
            (hex_value(a), hex_value(b), hex_value(c), hex_value(d))
        {
            return Ok((a << 12) | (b << 8) | (c << 4) | d);
        }
    }
    let mut value = 0u32;
    for k in 0..4 {
        let Some(&byte) = text.get(j + 2 + k) else {
            return Err(JsonError {
                code: Code::UNEXPECTED_END,
                pos: text.len(),
            });
        };
        let Some(digit) = hex_value(byte) else {
            return Err(JsonError {
                code: Code::INVALID_UNICODE_ESCAPE,
                pos: j,
            });
        };
        value = value * 16 + digit;
    }
    Ok(value)
}

/// Index of the first byte at or after `i` that is not JSON whitespace (or the end).
#[inline(never)]
fn skip_ws_run(text: &[u8], mut i: usize) -> usize {
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = text.get(i..i + 16) {
        let other = not_ws16(chunk);
        if other != 0 {
            return i + other.trailing_zeros() as usize;
        }
        i += 16;
    }
    while let Some(b' ' | b'\n' | b'\r' | b'\t') = text.get(i) {
        i += 1;
    }
    i
}

/// For 16 bytes: a bit per byte that is not a space, tab, CR or LF (SSE2).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn not_ws16(chunk: &[u8]) -> u32 {
    use std::arch::x86_64::*;
    debug_assert!(chunk.len() >= 16);
    #[allow(unused_unsafe)]
    // SAFETY: callers pass at least 16 readable bytes; the load is unaligned.
    unsafe {
        let v = _mm_loadu_si128(chunk.as_ptr().cast());
        let space = _mm_cmpeq_epi8(v, _mm_set1_epi8(b' ' as i8));
        let newline = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\n' as i8));
        let tab = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\t' as i8));
        let cr = _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\r' as i8));
        let ws = _mm_or_si128(_mm_or_si128(space, newline), _mm_or_si128(tab, cr));
        !(_mm_movemask_epi8(ws) as u32) & 0xFFFF
    }
}

/// The first hit of a 16-byte step that starts at `i` (bit k of `mask`: byte
/// `i + k` is special, of `high`: it is not ASCII), with the non-ASCII bytes
/// before it noted in `ascii`; `None` when no byte is special.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn first_hit(i: usize, mask: u32, high: u32, ascii: &mut bool) -> Option<usize> {
    let before = if mask == 0 {
        u32::MAX
    } else {
        (1u32 << mask.trailing_zeros()) - 1
    };
    if high & before != 0 {
        *ascii = false;
    }
    (mask != 0).then(|| i + mask.trailing_zeros() as usize)
}

/// The code for a character that cannot stand at `i` of `text`: comments,
/// fences and single quotes get their own codes, anything else `default`.
/// (A free function: a method would take the parser's address, which keeps
/// its position out of registers in the parse loop.)
fn classify(text: &[u8], i: usize, default: Code) -> Code {
    match text.get(i) {
        Some(b'/') if matches!(text.get(i + 1), Some(b'/' | b'*')) => Code::COMMENT,
        Some(b'`') if text.get(i..).is_some_and(|rest| rest.starts_with(b"```")) => {
            Code::MARKDOWN_FENCE
        }
        Some(b'\'') => Code::SINGLE_QUOTES,
        _ => default,
    }
}

/// Index of the first `"`, `\` or control byte of `text` at or after `i`, or the end.
#[inline]
fn find_special(text: &[u8], mut i: usize, ascii: &mut bool) -> usize {
    #[cfg(target_arch = "x86_64")]
    {
        while let Some(chunk) = text.get(i..i + 16) {
            let (mask, high) = special16(chunk);
            if let Some(at) = first_hit(i, mask, high, ascii) {
                return at;
            }
            i += 16;
        }
        // Fewer than 16 bytes left: the text's last 16, less those before `i`.
        if let Some(chunk) = text
            .len()
            .checked_sub(16)
            .and_then(|start| text.get(start..))
        {
            let skip = i + 16 - text.len();
            let (mask, high) = special16(chunk);
            return first_hit(i, mask >> skip, high >> skip, ascii).unwrap_or(text.len());
        }
    }
    while let Some(chunk) = text.get(i..i + 8) {
        let mut word_bytes = [0u8; 8];
        word_bytes.copy_from_slice(chunk);
        let word = u64::from_le_bytes(word_bytes);
        let mask = special_mask(word);
        if mask != 0 {
            let k = (mask.trailing_zeros() / 8) as usize;
            if *ascii && chunk.iter().take(k).any(|&b| b >= 0x80) {
                *ascii = false;
            }
            return i + k;
        }
        if word & HIGHS != 0 {
            *ascii = false;
        }
        i += 8;
    }
    while let Some(&byte) = text.get(i) {
        if byte == b'"' || byte == b'\\' || byte < 0x20 {
            return i;
        }
        if byte >= 0x80 {
            *ascii = false;
        }
        i += 1;
    }
    i
}

impl Parser<'_, '_> {
    #[inline]
    fn peek(&self) -> Option<u8> {
        self.text.get(self.pos).copied()
    }

    #[inline]
    fn at(&self, i: usize) -> Option<u8> {
        self.text.get(i).copied()
    }

    /// Skip whitespace. Most places have none, or one space (after a colon
    /// or comma); indented text has a newline and a run of spaces, which
    /// [`skip_ws_run`] takes sixteen bytes at a time.
    #[inline(always)]
    fn skip_ws(&mut self) {
        if let Some(b' ' | b'\n' | b'\r' | b'\t') = self.peek() {
            let next = self.pos + 1;
            self.pos = match self.at(next) {
                Some(b' ' | b'\n' | b'\r' | b'\t') => skip_ws_run(self.text, next + 1),
                _ => next,
            };
        }
    }

    fn starts_with(&self, i: usize, lit: &[u8]) -> bool {
        self.text.get(i..).is_some_and(|rest| rest.starts_with(lit))
    }

    fn end_error<T, E>(&self) -> Result<T, Failure<E>> {
        fail(Code::UNEXPECTED_END, self.text.len())
    }

    fn run<B: Builder>(
        &mut self,
        b: &mut B,
        stack: &mut Vec<Frame>,
        items: &mut Vec<B::Value>,
        key_offsets: &mut Vec<usize>,
    ) -> Result<B::Value, Failure<B::Error>> {
        self.skip_ws();
        if self.pos >= self.text.len() {
            return fail(Code::EMPTY_INPUT, self.pos);
        }
        'value: loop {
            // A value starts at self.pos (whitespace skipped).
            let start = self.pos;
            let Some(c) = self.peek() else {
                return self.end_error();
            };
            // One dispatch on the first character: each kind of value is
            // counted against the limits (`admit`), then read.
            let mut value = match c {
                b'{' => {
                    self.admit(stack, items.len(), start, true)?;
                    self.pos += 1;
                    self.skip_ws();
                    match self.peek() {
                        Some(b'}') => {
                            self.pos += 1;
                            self.close_object(b, items, key_offsets, items.len())?
                        }
                        Some(b'"') => {
                            push(stack, Frame::new(items.len(), true));
                            self.member(b, stack, items, key_offsets)?;
                            continue 'value;
                        }
                        None => return self.end_error(),
                        Some(_) => {
                            return fail(
                                classify(self.text, self.pos, Code::KEY_NOT_STRING),
                                self.pos,
                            )
                        }
                    }
                }
                b'[' => {
                    self.admit(stack, items.len(), start, true)?;
                    self.pos += 1;
                    self.skip_ws();
                    match self.peek() {
                        Some(b']') => {
                            self.pos += 1;
                            b.array(items.drain(items.len()..))
                                .map_err(Failure::Build)?
                        }
                        None => return self.end_error(),
                        Some(_) => {
                            push(stack, Frame::new(items.len(), false));
                            continue 'value;
                        }
                    }
                }
                b'"' => {
                    self.admit(stack, items.len(), start, false)?;
                    let (s, ascii) = self.string(start)?;
                    b.string(s, ascii).map_err(Failure::Build)?
                }
                b't' => {
                    self.admit(stack, items.len(), start, false)?;
                    self.literal(b"true")?;
                    b.boolean(true).map_err(Failure::Build)?
                }
                b'f' => {
                    self.admit(stack, items.len(), start, false)?;
                    self.literal(b"false")?;
                    b.boolean(false).map_err(Failure::Build)?
                }
                b'n' => {
                    self.admit(stack, items.len(), start, false)?;
                    self.literal(b"null")?;
                    b.null().map_err(Failure::Build)?
                }
                b'-' | b'0'..=b'9' => {
                    self.admit(stack, items.len(), start, false)?;
                    self.number(b)?
                }
                b'N' if self.starts_with(start, b"NaN") => {
                    return fail(Code::NAN_OR_INFINITY, start)
                }
                b'I' if self.starts_with(start, b"Infinity") => {
                    return fail(Code::NAN_OR_INFINITY, start)
                }
                b'+' | b'.' => return fail(Code::INVALID_NUMBER, start),
                _ => {
                    return fail(
                        classify(self.text, start, Code::UNEXPECTED_CHARACTER),
                        start,
                    )
                }
            };
            // A value is complete: attach it, closing containers as they end.
            loop {
                let Some(&top) = stack.last() else {
                    self.skip_ws();
                    if self.pos < self.text.len() {
                        return fail(
                            classify(self.text, self.pos, Code::TRAILING_CONTENT),
                            self.pos,
                        );
                    }
                    return Ok(value);
                };
                push(items, value);
                if top.is_object() {
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => {
                            let comma = self.pos;
                            self.pos += 1;
                            self.skip_ws();
                            match self.peek() {
                                Some(b'"') => {
                                    self.member(b, stack, items, key_offsets)?;
                                    continue 'value;
                                }
                                Some(b'}') => return fail(Code::TRAILING_COMMA, comma),
                                None => return self.end_error(),
                                Some(_) => {
                                    return fail(
                                        classify(self.text, self.pos, Code::KEY_NOT_STRING),
                                        self.pos,
                                    )
                                }
                            }
                        }
                        Some(b'}') => {
                            self.pos += 1;
                            stack.pop();
                            value = self.close_object(b, items, key_offsets, top.start())?;
                        }
                        None => return self.end_error(),
                        Some(_) => {
                            return fail(
                                classify(self.text, self.pos, Code::UNEXPECTED_CHARACTER),
                                self.pos,
                            )
                        }
                    }
                } else {
                    self.skip_ws();
                    match self.peek() {
                        Some(b',') => {
                            let comma = self.pos;
                            self.pos += 1;
                            self.skip_ws();
                            match self.peek() {
                                Some(b']') => return fail(Code::TRAILING_COMMA, comma),
                                None => return self.end_error(),
                                Some(_) => continue 'value,
                            }
                        }
                        Some(b']') => {
                            self.pos += 1;
                            stack.pop();
                            value = b
                                .array(items.drain(top.start()..))
                                .map_err(Failure::Build)?;
                        }
                        None => return self.end_error(),
                        Some(_) => {
                            return fail(
                                classify(self.text, self.pos, Code::UNEXPECTED_CHARACTER),
                                self.pos,
                            )
                        }
                    }
                }
            }
        }
    }

    /// Count the value that starts at `start` against the limits: as an item
    /// of the open array (whose items so far are on the value stack, of
    /// length `items`), as a value of the document and, for a container,
    /// as a level of nesting.
    #[inline(always)]
    fn admit<E>(
        &mut self,
        stack: &[Frame],
        items: usize,
        start: usize,
        container: bool,
    ) -> Result<(), Failure<E>> {
        if let Some(&top) = stack.last() {
            if !top.is_object() && items - top.start() >= self.limits.max_array_items {
                return fail(Code::TOO_MANY_ITEMS, start);
            }
        }
        if self.values_left == 0 {
            return fail(Code::TOO_MANY_VALUES, start);
        }
        self.values_left -= 1;
        if container && stack.len() >= self.limits.max_depth {
            return fail(Code::DEPTH_EXCEEDED, start);
        }
        Ok(())
    }

    /// The object whose members start at `start` on the value stack (their
    /// key offsets are the last of the key stack, one per member); a key that
    /// repeats an earlier one is `DUPLICATE_KEY` at its opening quote.
    #[inline(always)]
    fn close_object<B: Builder>(
        &self,
        b: &mut B,
        items: &mut Vec<B::Value>,
        key_offsets: &mut Vec<usize>,
        start: usize,
    ) -> Result<B::Value, Failure<B::Error>> {
        let keys = key_offsets.len() - (items.len() - start) / 2;
        match b.object(items.drain(start..)).map_err(Failure::Build)? {
            Object::Built(object) => {
                key_offsets.truncate(keys);
                Ok(object)
            }
            Object::DuplicateKey(i) => fail(
                Code::DUPLICATE_KEY,
                key_offsets.get(keys + i).copied().unwrap_or(self.pos),
            ),
        }
    }

    /// An object member from its key's opening quote (at self.pos) through
    /// the colon and the whitespace after it; leaves self.pos at the value.
    #[inline(always)]
    fn member<B: Builder>(
        &mut self,
        b: &mut B,
        stack: &[Frame],
        items: &mut Vec<B::Value>,
        key_offsets: &mut Vec<usize>,
    ) -> Result<(), Failure<B::Error>> {
        let key_pos = self.pos;
        let Some(&top) = stack.last() else {
            return self.end_error();
        };
        // The members so far: a key and a value each on the value stack (a
        // limit past half of `usize` saturates, and no object reaches it).
        if items.len() - top.start() >= self.member_items {
            return fail(Code::TOO_MANY_MEMBERS, key_pos);
        }
        let (s, ascii) = self.string(key_pos)?;
        push(items, b.key(s, ascii).map_err(Failure::Build)?);
        push(key_offsets, key_pos);
        self.skip_ws();
        match self.peek() {
            Some(b':') => self.pos += 1,
            None => return self.end_error(),
            Some(_) => {
                return fail(
                    classify(self.text, self.pos, Code::UNEXPECTED_CHARACTER),
                    self.pos,
                )
            }
        }
        self.skip_ws();
        if self.pos >= self.text.len() {
            return self.end_error();
        }
        Ok(())
    }

    fn literal<E>(&mut self, lit: &[u8]) -> Result<(), Failure<E>> {
        for (k, &expected) in lit.iter().enumerate() {
            match self.at(self.pos + k) {
                None => return self.end_error(),
                Some(got) if got != expected => {
                    return fail(Code::UNEXPECTED_CHARACTER, self.pos + k)
                }
                Some(_) => {}
            }
        }
        self.pos += lit.len();
        Ok(())
    }

    /// [`Self::find_special`] with its first sixteen bytes inlined: most
    /// strings (keys above all) end within them.
    #[inline(always)]
    fn find_special_first(&self, i: usize, ascii: &mut bool) -> usize {
        #[cfg(target_arch = "x86_64")]
        if let Some(chunk) = self.text.get(i..i + 16) {
            let (mask, high) = special16(chunk);
            return match first_hit(i, mask, high, ascii) {
                Some(at) => at,
                None => find_special(self.text, i + 16, ascii),
            };
        }
        find_special(self.text, i, ascii)
    }

    /// The string whose opening quote is at `quote`: its decoded text
    /// (borrowed from the input when it has no escapes) and whether it is ASCII.
    /// Most strings have no escape: they are the run up to the next quote,
    /// found here; the rest go to [`Self::string_bytes`].
    #[inline(always)]
    fn string<E>(&mut self, quote: usize) -> Result<(&str, bool), Failure<E>> {
        let mut ascii = true;
        let end = self.find_special_first(quote + 1, &mut ascii);
        let bytes = if self.at(end) == Some(b'"') && end - quote - 1 <= self.limits.max_string_bytes
        {
            self.pos = end + 1;
            self.text.get(quote + 1..end).unwrap_or_default()
        } else {
            let (bytes, all_ascii) = self.string_bytes(quote, end, ascii)?;
            ascii = all_ascii;
            bytes
        };
        // SAFETY: the input is valid UTF-8 and the slices taken from it start
        // and end at ASCII bytes (quotes, backslashes, escape ends); escapes
        // add whole characters encoded by `char::encode_utf8`.
        Ok((unsafe { std::str::from_utf8_unchecked(bytes) }, ascii))
    }

    /// A string with escapes, or one that breaks a rule; `first` is the first
    /// quote, backslash or control byte after the opening quote, and `ascii`
    /// whether the bytes before it are ASCII. Decoded by [`decode_escaped`]
    /// into the scratch buffer, taken out of the parser meanwhile so that
    /// the compiler keeps the buffer's pointer and length in registers.
    #[inline(always)]
    fn string_bytes<E>(
        &mut self,
        quote: usize,
        first: usize,
        ascii: bool,
    ) -> Result<(&[u8], bool), Failure<E>> {
        let mut out = std::mem::take(self.scratch);
        let decoded = decode_escaped(self.text, quote, first, ascii, self.limits, &mut out);
        *self.scratch = out;
        let (len, end, ascii) = decoded?;
        self.pos = end;
        Ok((self.scratch.get(..len).unwrap_or_default(), ascii))
    }

    fn digits(&mut self) {
        while let Some(b) = self.peek() {
            if !is_digit(b) {
                break;
            }
            self.pos += 1;
        }
    }

    /// One or more digits where the grammar requires them.
    fn required_digits<E>(&mut self, start: usize) -> Result<(), Failure<E>> {
        match self.peek() {
            None => self.end_error(),
            Some(b) if is_digit(b) => {
                self.digits();
                Ok(())
            }
            Some(_) => fail(Code::INVALID_NUMBER, start),
        }
    }

    /// The common numbers in one pass, and where they end: an integer of at
    /// most 18 digits, or a decimal without exponent whose at most 18 digits,
    /// read as an integer, stay below 2^53, which is then exact with one
    /// rounding (Clinger's fast path: the quotient of two exact doubles, which
    /// IEEE division rounds correctly). `None`: anything else, or anything
    /// wrong, which the general reading judges.
    #[inline(always)]
    fn short_number(&self, start: usize) -> Option<(Short, usize)> {
        let negative = self.at(start) == Some(b'-');
        let mut end = start + usize::from(negative);
        let mut mantissa = 0u64;
        let mut digits = 0;
        match self.at(end)? {
            b'0' => end += 1,
            b'1'..=b'9' => end = self.short_digits(end, &mut mantissa, &mut digits)?,
            _ => return None,
        }
        let mut fraction = None;
        if self.at(end) == Some(b'.') {
            let first = end + 1;
            end = self.short_digits(first, &mut mantissa, &mut digits)?;
            fraction = Some(end - first).filter(|&n| n > 0);
            fraction?;
        }
        if matches!(self.at(end), Some(b'0'..=b'9' | b'.' | b'e' | b'E'))
            || end - start > self.limits.max_number_length
        {
            return None;
        }
        let value = match fraction {
            None if negative => Short::Int((mantissa as i64).wrapping_neg()),
            None => Short::Uint(mantissa),
            Some(n) if mantissa < 1 << 53 => {
                let magnitude = mantissa as f64 / EXACT_POWERS_OF_TEN.get(n).copied()?;
                Short::Float(if negative { -magnitude } else { magnitude })
            }
            Some(_) => return None,
        };
        Some((value, end))
    }

    /// The digits from `at` on, added to `mantissa` and counted in `digits`:
    /// where they end, or `None` once a short number's 18 digits are passed
    /// (so `mantissa` cannot overflow).
    #[inline(always)]
    fn short_digits(&self, mut at: usize, mantissa: &mut u64, digits: &mut usize) -> Option<usize> {
        while let Some(digit @ b'0'..=b'9') = self.at(at) {
            *mantissa = *mantissa * 10 + u64::from(digit - b'0');
            at += 1;
            *digits += 1;
            if *digits > 18 {
                return None;
            }
        }
        Some(at)
    }

    fn number<B: Builder>(&mut self, b: &mut B) -> Result<B::Value, Failure<B::Error>> {
        let start = self.pos;
        if let Some((value, end)) = self.short_number(start) {
            self.pos = end;
            return match value {
                Short::Uint(v) => b.uint(v),
                Short::Int(v) => b.int(v),
                Short::Float(v) => b.float(v),
            }
            .map_err(Failure::Build);
        }
        let negative = self.peek() == Some(b'-');
        if negative {
            self.pos += 1;
            if self.starts_with(self.pos, b"Infinity") || self.starts_with(self.pos, b"NaN") {
                return fail(Code::NAN_OR_INFINITY, start);
            }
        }
        match self.peek() {
            None => return self.end_error(),
            Some(b'0') => {
                self.pos += 1;
                if self.peek().is_some_and(is_digit) {
                    return fail(Code::LEADING_ZERO, start);
                }
            }
            Some(b'1'..=b'9') => self.digits(),
            Some(_) => return fail(Code::INVALID_NUMBER, start),
        }
        let int_end = self.pos;
        let mut is_float = false;
        if self.peek() == Some(b'.') {
            is_float = true;
            self.pos += 1;
            self.required_digits(start)?;
        }
        if let Some(b'e' | b'E') = self.peek() {
            is_float = true;
            self.pos += 1;
            if let Some(b'+' | b'-') = self.peek() {
                self.pos += 1;
            }
            self.required_digits(start)?;
        }
        if self.pos - start > self.limits.max_number_length {
            return fail(Code::NUMBER_TOO_LONG, start);
        }
        let text = self.text.get(start..self.pos).unwrap_or_default();
        if is_float {
            let parsed = std::str::from_utf8(text)
                .ok()
                .and_then(|s| s.parse::<f64>().ok());
            return match parsed {
                Some(f) if f.is_finite() => b.float(f).map_err(Failure::Build),
                _ => fail(Code::NUMBER_OUT_OF_RANGE, start),
            };
        }
        let digits = self
            .text
            .get(start + usize::from(negative)..int_end)
            .unwrap_or_default();
        let mut magnitude: u64 = 0;
        for &d in digits {
            magnitude = match magnitude
                .checked_mul(10)
                .and_then(|m| m.checked_add(u64::from(d - b'0')))
            {
                Some(m) => m,
                None => return fail(Code::NUMBER_OUT_OF_RANGE, start),
            };
        }
        if !negative {
            return b.uint(magnitude).map_err(Failure::Build);
        }
        if magnitude <= 1u64 << 63 {
            // -(2^63) wraps to i64::MIN, which is exactly the value.
            return b
                .int((magnitude as i64).wrapping_neg())
                .map_err(Failure::Build);
        }
        fail(Code::NUMBER_OUT_OF_RANGE, start)
    }
}

/// Builds `serde_json::Value`s (`-0` the integer 0, as every builder reads it).
pub struct ValueBuilder;

impl Builder for ValueBuilder {
    type Value = Value;
    type Error = ();
    fn null(&mut self) -> Result<Value, ()> {
        Ok(Value::Null)
    }
    fn boolean(&mut self, v: bool) -> Result<Value, ()> {
        Ok(Value::Bool(v))
    }
    fn int(&mut self, v: i64) -> Result<Value, ()> {
        Ok(Value::Number(v.into()))
    }
    fn uint(&mut self, v: u64) -> Result<Value, ()> {
        Ok(Value::Number(v.into()))
    }
    fn float(&mut self, v: f64) -> Result<Value, ()> {
        Number::from_f64(v).map(Value::Number).ok_or(())
    }
    fn string(&mut self, v: &str, _ascii: bool) -> Result<Value, ()> {
        Ok(Value::String(v.to_owned()))
    }
    fn key(&mut self, v: &str, _ascii: bool) -> Result<Value, ()> {
        Ok(Value::String(v.to_owned()))
    }
    fn array(&mut self, items: std::vec::Drain<'_, Value>) -> Result<Value, ()> {
        Ok(Value::Array(items.collect()))
    }
    fn object(&mut self, mut members: std::vec::Drain<'_, Value>) -> Result<Object<Value>, ()> {
        let mut map = Map::new();
        while let Some(key) = members.next() {
            let (Value::String(key), Some(value)) = (key, members.next()) else {
                return Err(());
            };
            if map.contains_key(&key) {
                return Ok(Object::DuplicateKey(map.len()));
            }
            map.insert(key, value);
        }
        Ok(Object::Built(Value::Object(map)))
    }
}

/// No bound at all: for text that already passed the envelope rule under
/// the caller's limits.
const UNBOUNDED: Limits = Limits {
    max_document_bytes: usize::MAX,
    max_depth: usize::MAX,
    max_string_bytes: usize::MAX,
    max_array_items: usize::MAX,
    max_object_members: usize::MAX,
    max_values: usize::MAX,
    max_number_length: usize::MAX,
    max_call_argument_bytes: usize::MAX,
    max_calls_per_response: usize::MAX,
    max_items_per_response: usize::MAX,
    max_response_bytes: usize::MAX,
    max_sse_line_bytes: usize::MAX,
    max_sse_event_bytes: usize::MAX,
    max_stream_events: usize::MAX,
    max_stream_bytes: usize::MAX,
    max_bytes_without_data: usize::MAX,
};

/// `text` (already checked by the envelope rule) as a `serde_json::Value`
/// read by this parser: numbers as the pure twin reads them (`-0` is the
/// integer 0, where serde_json makes it the float -0.0).
pub fn parse_value(text: &str) -> Result<Value, JsonError> {
    match parse_str(text, &UNBOUNDED, &mut ValueBuilder) {
        Ok(value) => Ok(value),
        Err(Failure::Parse(error)) => Err(error),
        Err(Failure::Build(())) => Err(JsonError {
            code: Code::NUMBER_OUT_OF_RANGE,
            pos: 0,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn parse_with(text: &[u8], limits: &Limits) -> Result<Value, JsonError> {
        match parse_bytes(text, limits, &mut ValueBuilder) {
            Ok(v) => Ok(v),
            Err(Failure::Parse(e)) => Err(e),
            Err(Failure::Build(())) => panic!("builder failed"),
        }
    }

    fn parse(text: &str) -> Result<Value, JsonError> {
        parse_with(text.as_bytes(), &Limits::default())
    }

    fn err(text: &str) -> (Code, usize) {
        let e = parse(text).expect_err(text);
        (e.code, e.pos)
    }

    #[test]
    fn accepts_and_matches_serde_json() {
        let docs = [
            "0",
            "-0.0",
            "1.5e3",
            "1E-2",
            "123456789",
            "-9223372036854775808",
            "18446744073709551615",
            "true",
            "false",
            "null",
            r#""""#,
            r#""a\"b\\c\/d\b\f\n\r\t""#,
            r#""\u00e9\u20ac\ud83d\ude00""#,
            "\"h\u{e9}llo \u{1F600}\"",
            "[]",
            "{}",
            " [1, 2.5, \"x\", null, true, {\"k\": []}] ",
            r#"{"a": {"b": {"c": [1, [2, [3]]]}}, "d": "e"}"#,
            "1e-400",
            "0.1",
            "2.2250738585072014e-308",
            r#"["12345678", "abcdefghijklmnop", "quote\"in the middle of a long run"]"#,
        ];
        for doc in docs {
            let ours = parse(doc).unwrap_or_else(|e| panic!("{doc}: {e:?}"));
            let theirs: Value = serde_json::from_str(doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
            assert_eq!(ours, theirs, "{doc}");
        }
    }

    /// Strings whose escapes are dense, sparse or anywhere in between (the
    /// scanner takes different paths for short and long runs), with and
    /// without non-ASCII text, against serde_json.
    #[test]
    fn escaped_strings_match_serde_json() {
        let escapes = [
            "\\n",
            "\\t",
            "\\\"",
            "\\\\",
            "\\/",
            "\\u00e9",
            "\\u2014",
            "\\ud83d\\ude00",
            "\\u0000",
        ];
        let fillers = ["a", "\u{e9}", "\u{6e21}", "\u{1F600}", " "];
        let mut count = 0;
        for run in 0..40usize {
            for (k, filler) in fillers.iter().enumerate() {
                let mut body = String::new();
                for i in 0..12 {
                    body.push_str(&filler.repeat(run));
                    body.push_str(escapes[(i + k + run) % escapes.len()]);
                }
                body.push_str(&"z".repeat(run % 17));
                let doc = format!("[\"{body}\", {{\"{body}\": 1}}]");
                let ours = parse(&doc).unwrap_or_else(|e| panic!("{doc}: {e:?}"));
                let theirs: Value =
                    serde_json::from_str(&doc).unwrap_or_else(|e| panic!("{doc}: {e}"));
                assert_eq!(ours, theirs, "{doc}");
                count += 1;
            }
        }
        assert_eq!(count, 200);
    }

    #[test]
    fn numbers_keep_their_kind() {
        assert_eq!(parse("-0").ok(), Some(Value::Number(0i64.into())));
        assert!(parse("-0.0")
            .ok()
            .and_then(|v| v.as_f64())
            .is_some_and(|f| f == 0.0 && f.is_sign_negative()));
        assert_eq!(
            parse("-9223372036854775808").ok().and_then(|v| v.as_i64()),
            Some(i64::MIN)
        );
        assert_eq!(
            parse("18446744073709551615").ok().and_then(|v| v.as_u64()),
            Some(u64::MAX)
        );
    }

    #[test]
    fn error_codes_and_positions() {
        use Code::*;
        let cases: &[(&str, Code, usize)] = &[
            ("", EMPTY_INPUT, 0),
            ("  \n", EMPTY_INPUT, 3),
            ("[1,", UNEXPECTED_END, 3),
            ("{\"a\":", UNEXPECTED_END, 5),
            ("\"abc", UNEXPECTED_END, 4),
            ("tru", UNEXPECTED_END, 3),
            ("trUe", UNEXPECTED_CHARACTER, 2),
            ("[1 2]", UNEXPECTED_CHARACTER, 3),
            ("{} {}", TRAILING_CONTENT, 3),
            ("```json\n{}\n```", MARKDOWN_FENCE, 0),
            ("{} ```", MARKDOWN_FENCE, 3),
            ("[1, // x\n 2]", COMMENT, 4),
            ("/* x */ 1", COMMENT, 0),
            ("{'a': 1}", SINGLE_QUOTES, 1),
            ("['a']", SINGLE_QUOTES, 1),
            ("[1, 2,]", TRAILING_COMMA, 5),
            ("{\"a\": 1 ,  }", TRAILING_COMMA, 8),
            ("{a: 1}", KEY_NOT_STRING, 1),
            ("{\"a\": 1, 2: 3}", KEY_NOT_STRING, 9),
            ("{\"a\": 1, \"a\": 2}", DUPLICATE_KEY, 9),
            ("{\"é\": 1, \"é\": 2}", DUPLICATE_KEY, 9),
            (
                "{\"x\": {\"a\": 1}, \"y\": {\"b\": 1, \"b\": 2}}",
                DUPLICATE_KEY,
                30,
            ),
            ("{\"a\": {\"a\": 1}, \"a\": 2}", DUPLICATE_KEY, 16),
            (
                "[{\"a\": 1}, {\"b\": [{}], \"c\": 2, \"b\": 3}]",
                DUPLICATE_KEY,
                31,
            ),
            ("-", UNEXPECTED_END, 1),
            ("[-x]", INVALID_NUMBER, 1),
            ("[1.]", INVALID_NUMBER, 1),
            ("[1.5e]", INVALID_NUMBER, 1),
            (".5", INVALID_NUMBER, 0),
            ("+1", INVALID_NUMBER, 0),
            ("[01]", LEADING_ZERO, 1),
            ("-012", LEADING_ZERO, 0),
            ("NaN", NAN_OR_INFINITY, 0),
            ("[Infinity]", NAN_OR_INFINITY, 1),
            ("[-Infinity]", NAN_OR_INFINITY, 1),
            ("18446744073709551616", NUMBER_OUT_OF_RANGE, 0),
            ("-9223372036854775809", NUMBER_OUT_OF_RANGE, 0),
            ("[1e400]", NUMBER_OUT_OF_RANGE, 1),
            ("\"a\\d\"", INVALID_ESCAPE, 2),
            ("\"\\u12G4\"", INVALID_UNICODE_ESCAPE, 1),
            ("\"\\ud800\"", LONE_SURROGATE, 1),
            ("\"\\udc00\\ud800\"", LONE_SURROGATE, 1),
            ("\"\\ud800\\u0041\"", LONE_SURROGATE, 1),
            ("\"\\ud800\\n\"", LONE_SURROGATE, 1),
            ("\"\\ud800", UNEXPECTED_END, 7),
            ("\"a\tb\"", CONTROL_CHARACTER, 2),
            ("é", UNEXPECTED_CHARACTER, 0),
            ("[\"é\", x]", UNEXPECTED_CHARACTER, 6),
        ];
        for &(doc, code, pos) in cases {
            assert_eq!(err(doc), (code, pos), "{doc:?}");
        }
    }

    #[test]
    fn byte_level_errors() {
        let limits = Limits::default();
        let e = |b: &[u8]| parse_with(b, &limits).expect_err("must fail");
        assert_eq!(
            e(b"\xEF\xBB\xBF{}"),
            JsonError {
                code: Code::BOM,
                pos: 0
            }
        );
        assert_eq!(
            e(b"\xFF\xFE{\x00}\x00"),
            JsonError {
                code: Code::UTF16_INPUT,
                pos: 0
            }
        );
        assert_eq!(
            e(b"{\x00}\x00"),
            JsonError {
                code: Code::UTF16_INPUT,
                pos: 0
            }
        );
        assert_eq!(
            e(b"[\"\xC3\xA9\xC3\x28\"]"),
            JsonError {
                code: Code::INVALID_UTF8,
                pos: 3
            }
        );
        assert_eq!(
            e(b"\"\xC0\xAF\""),
            JsonError {
                code: Code::INVALID_UTF8,
                pos: 1
            }
        );
    }

    #[test]
    fn limits_just_under_and_just_over() {
        let base = Limits::default();
        let check = |limits: Limits, ok: &str, bad: &str, code: Code, pos: usize| {
            assert!(parse_with(ok.as_bytes(), &limits).is_ok(), "{ok}");
            assert_eq!(
                parse_with(bad.as_bytes(), &limits),
                Err(JsonError { code, pos }),
                "{bad}"
            );
        };
        check(
            Limits {
                max_document_bytes: 4,
                ..base
            },
            "[12]",
            "[123]",
            Code::DOCUMENT_TOO_LARGE,
            0,
        );
        check(
            Limits {
                max_depth: 2,
                ..base
            },
            "[[1]]",
            "[[[1]]]",
            Code::DEPTH_EXCEEDED,
            2,
        );
        check(
            Limits {
                max_string_bytes: 3,
                ..base
            },
            "[\"ab\\n\"]",
            "[\"a\u{e9}x\"]",
            Code::STRING_TOO_LONG,
            1,
        );
        check(
            Limits {
                max_array_items: 2,
                ..base
            },
            "[1,2]",
            "[1,2,3]",
            Code::TOO_MANY_ITEMS,
            5,
        );
        check(
            Limits {
                max_object_members: 1,
                ..base
            },
            "{\"a\":1}",
            "{\"a\":1,\"b\":2}",
            Code::TOO_MANY_MEMBERS,
            7,
        );
        // An open array or object counts only its own items, each nested
        // container once, however many items that container holds.
        check(
            Limits {
                max_array_items: 2,
                ..base
            },
            "[[1,2],{\"a\":[3,4],\"b\":5}]",
            "[[1,2],[[3,4]],6]",
            Code::TOO_MANY_ITEMS,
            15,
        );
        check(
            Limits {
                max_object_members: 2,
                ..base
            },
            "{\"a\":{\"x\":1,\"y\":[2,3]},\"b\":[{\"z\":4,\"w\":5}]}",
            "{\"a\":{\"x\":1,\"y\":2},\"b\":[],\"c\":3}",
            Code::TOO_MANY_MEMBERS,
            26,
        );
        check(
            Limits {
                max_values: 3,
                ..base
            },
            "[1,2]",
            "[1,[2]]",
            Code::TOO_MANY_VALUES,
            4,
        );
        check(
            Limits {
                max_number_length: 3,
                ..base
            },
            "1.5",
            "-1.5",
            Code::NUMBER_TOO_LONG,
            0,
        );
    }

    #[test]
    fn deep_nesting_is_an_error_not_a_crash() {
        for depth in [100_000usize, 1_000_000] {
            let doc = "[".repeat(depth);
            assert_eq!(err(&doc), (Code::DEPTH_EXCEEDED, 64));
            let doc = "{\"a\":".repeat(depth);
            assert_eq!(err(&doc), (Code::DEPTH_EXCEEDED, 64 * 5));
        }
        let limits = Limits {
            max_depth: 1_000,
            ..Limits::default()
        };
        let doc = format!("{}{}", "[".repeat(1_000), "]".repeat(1_000));
        assert!(parse_with(doc.as_bytes(), &limits).is_ok());
    }

    fn without_negative_zero(v: Value) -> Value {
        match v {
            Value::Number(n) if n.as_f64() == Some(0.0) => Value::Number(0i64.into()),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(without_negative_zero).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (k, without_negative_zero(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// Small deterministic generator of JSON-ish text: whatever both parsers
    /// accept must give the same value, and serde_json must reject what we
    /// reject unless it is one of the documented differences.
    #[test]
    fn differential_against_serde_json() {
        let pieces = [
            "{",
            "}",
            "[",
            "]",
            ",",
            ":",
            "\"k\"",
            "\"v\\n\"",
            "1",
            "-0",
            "2.5e3",
            "true",
            "null",
            " ",
            "\"\\u00e9\"",
            "\"\\ud83d\\ude00\"",
            "0",
            "\"a\"",
            "\"b\"",
            "18446744073709551615",
            "-9223372036854775808",
        ];
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut agreed = 0;
        for _ in 0..20_000 {
            let mut doc = String::new();
            let n = 1 + (state % 12) as usize;
            for _ in 0..n {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                doc.push_str(pieces[(state % pieces.len() as u64) as usize]);
            }
            let ours = parse(&doc);
            let theirs = serde_json::from_str::<Value>(&doc);
            match (ours, theirs) {
                (Ok(a), Ok(b)) => {
                    // serde_json reads `-0` as the float -0.0; here it is the integer 0.
                    assert_eq!(without_negative_zero(a), without_negative_zero(b), "{doc}");
                    agreed += 1;
                }
                (Err(_), Err(_)) => {}
                (Ok(a), Err(e)) => panic!("{doc}: we accept {a:?}, serde_json says {e}"),
                // Documented differences: serde_json keeps the last duplicate key
                // and turns integers beyond 64 bits into floats.
                (Err(e), Ok(_)) => {
                    assert!(
                        matches!(e.code, Code::DUPLICATE_KEY | Code::NUMBER_OUT_OF_RANGE),
                        "{doc}: {e:?}"
                    )
                }
            }
        }
        assert!(agreed > 100);
    }
}
