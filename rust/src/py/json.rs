//! `decisions._native.loads`: the core parser building Python objects directly
//! (no intermediate value tree), with raw FFI on the hot path.
//!
//! In a large document, lists and dicts are kept out of the cyclic garbage
//! collector while the document is parsed and handed to it together once the
//! document is complete. Such a document allocates enough containers to set
//! off many collections; without this, each would traverse the half-built
//! tree again (it cannot hold a cycle), and the older generations would be
//! collected over it as it is promoted. The first `TRACKED_AS_MADE`
//! containers are tracked as they are made: a document with no more than
//! these sets off at most one collection, which costs less than holding them
//! back. The finished tree is tracked as the `json` module's would be: every
//! list, and each dict that holds a list or a dict.

use std::cell::{Cell, UnsafeCell};
use std::ptr::NonNull;

use pyo3::exceptions::PyTypeError;
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::GILOnceCell;

use crate::core::json::{
    parse_bytes_in, parse_str_in, Buffers, Builder, Failure, JsonError, Object,
};
use crate::core::limits::Limits;

use super::common::limits_from;

/// An owned reference to a Python object (decremented on drop).
pub(crate) struct Obj(NonNull<ffi::PyObject>);

/// A call of the builder failed (out of memory): the interpreter's error
/// indicator holds why, and is fetched once parsing has stopped. A unit, so
/// every value the parser passes around stays one pointer wide.
pub(crate) struct Failed;

impl Obj {
    /// Take ownership of a new reference; `Failed` when the call that was to
    /// make it failed (its error stays set).
    #[inline]
    fn made(ptr: *mut ffi::PyObject) -> Result<Obj, Failed> {
        NonNull::new(ptr).map(Obj).ok_or(Failed)
    }

    #[inline]
    fn into_ptr(self) -> *mut ffi::PyObject {
        let ptr = self.0.as_ptr();
        std::mem::forget(self);
        ptr
    }
}

impl Drop for Obj {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: we own one reference and hold the GIL (the builder only
        // lives inside `loads`, which runs with the GIL held).
        unsafe { ffi::Py_DECREF(self.0.as_ptr()) }
    }
}

/// ASCII keys of at most this many bytes are cached.
const KEY_CACHE_MAX_LEN: usize = 32;
/// Keys of at most this many bytes are told by their tag alone (see [`short_tag`]).
const SHORT_KEY_MAX_LEN: usize = 8;
/// The key cache has `1 << KEY_CACHE_SET_BITS` sets; each holds two keys
/// (the most recent first), so two keys landing in one set do not evict
/// each other on every document.
const KEY_CACHE_SET_BITS: u32 = 11;
const KEY_CACHE_SETS: usize = 1 << KEY_CACHE_SET_BITS;
/// Set in the tag of every key longer than `SHORT_KEY_MAX_LEN`: the high
/// bits of its two lowest bytes, which no short key's tag has both of.
const LONG_TAG: u64 = 0x8080;

/// One cached key: its tag (checked first, so a miss touches nothing
/// else) and the str itself. A short key's tag is the key; a longer key's
/// is a hash, and the str's own bytes confirm a hit.
#[derive(Clone, Copy)]
struct Slot {
    tag: u64,
    obj: Option<NonNull<ffi::PyObject>>,
}

/// Two slots in one 32-byte aligned block (one cache line, never two).
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct KeySet([Slot; 2]);

const EMPTY_SET: KeySet = KeySet([Slot { tag: 0, obj: None }; 2]);

/// What `loads` keeps between calls: a set-associative cache of short ASCII
/// object keys (immortal for the process: at most `2 * KEY_CACHE_SETS` small
/// strings), so repeated keys are neither decoded nor hashed again; the last
/// `Limits` object passed and its values (a `Limits` is frozen, so a caller
/// that passes the same one each time has it read once); and the parser's
/// working memory (empty between calls).
struct State {
    keys: Vec<KeySet>,
    limits: Option<(Obj, Limits)>,
    buffers: Buffers<Obj>,
    untracked: Vec<NonNull<ffi::PyObject>>,
}

/// The one `State`, taken by a call of `loads` for its duration. The
/// interpreter lock orders the calls (the module runs with it, and `loads`
/// never releases it), so a flag is enough to tell whether the state is
/// taken: it is only by a call under way further up the same thread's stack
/// (a finalizer that the garbage collector runs during a parse may call
/// `loads`). No atomic operation, which a `Mutex` would cost twice a call.
struct Shared {
    taken: Cell<bool>,
    state: UnsafeCell<State>,
}

// SAFETY: `taken` and `state` are only used by `take_state`, which requires
// the interpreter lock (a `Python` token), and by the `Taken` it returns,
// which `loads` drops before it returns, lock still held: one thread at a time.
unsafe impl Sync for Shared {}

static STATE: Shared = Shared {
    taken: Cell::new(false),
    state: UnsafeCell::new(State {
        keys: Vec::new(),
        limits: None,
        buffers: Buffers::new(),
        untracked: Vec::new(),
    }),
};

/// The state, held until dropped; gives it back.
struct Taken(&'static mut State);

impl Drop for Taken {
    fn drop(&mut self) {
        STATE.taken.set(false);
    }
}

/// The state, unless a call under way holds it.
fn take_state(_py: Python<'_>) -> Option<Taken> {
    if STATE.taken.replace(true) {
        return None;
    }
    // SAFETY: the interpreter lock (`_py`) keeps other threads out, and
    // `taken` was false: no other reference to the state exists until this
    // `Taken` is dropped, which clears the flag again.
    Some(Taken(unsafe { &mut *STATE.state.get() }))
}

#[inline(always)]
fn u64_at(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 8)
        .and_then(|b| b.try_into().ok())
        .map_or(0, u64::from_le_bytes)
}

#[inline(always)]
fn u32_at(bytes: &[u8], at: usize) -> u64 {
    bytes
        .get(at..at + 4)
        .and_then(|b| b.try_into().ok())
        .map_or(0, |b| u64::from(u32::from_le_bytes(b)))
}

/// A 64-bit hash of a key of at most `KEY_CACHE_MAX_LEN` bytes, from a few
/// fixed-size (overlapping) loads: no loop, no copy.
#[inline(always)]
fn key_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let n = bytes.len();
    let (a, b) = if n >= 16 {
        (
            u64_at(bytes, 0) ^ u64_at(bytes, n - 8).rotate_left(32),
            u64_at(bytes, 8) ^ u64_at(bytes, n - 16),
        )
    } else if n >= 8 {
        (u64_at(bytes, 0), u64_at(bytes, n - 8))
    } else if n >= 4 {
        (u32_at(bytes, 0), u32_at(bytes, n - 4))
    } else {
        let byte = |i: usize| u64::from(bytes.get(i).copied().unwrap_or(0));
        (byte(0) | byte(n / 2) << 8, byte(n.wrapping_sub(1)))
    };
    let h =
        (a ^ (n as u64)).wrapping_mul(K) ^ b.rotate_left(29).wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    (h ^ (h >> 31)).wrapping_mul(K)
}

/// The tag of an ASCII key of 1 to `SHORT_KEY_MAX_LEN` bytes: its bytes
/// packed little-endian into a word (by overlapping loads), with the high
/// bit of its last byte set. ASCII leaves every other high bit clear, so
/// the tag is the key and its length: two keys with the same tag are the
/// same key. (No tag of a longer key has a single high bit set.)
#[inline(always)]
fn short_tag(bytes: &[u8]) -> u64 {
    // Shifts of at most 63 for the lengths taken (wrapping: never a panic).
    let last = bytes.len().saturating_sub(1) as u32;
    let packed = if last >= 3 {
        // The two loads overlap on equal bytes in equal places.
        u32_at(bytes, 0) | u32_at(bytes, last as usize - 3).wrapping_shl(8 * (last - 3))
    } else {
        // Up to three bytes: the first, second and last cover them all.
        let byte = |i: u32| u64::from(bytes.get(i as usize).copied().unwrap_or(0));
        let second = last.min(1);
        byte(0) | byte(second).wrapping_shl(8 * second) | byte(last).wrapping_shl(8 * last)
    };
    packed | 1u64.wrapping_shl(8 * last + 7)
}

/// The set of the key cache a short key's tag belongs to (its bits mixed,
/// the top ones taken).
#[inline(always)]
fn key_set(tag: u64) -> usize {
    (tag.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - KEY_CACHE_SET_BITS)) as usize
}

/// Whether `a` and `b` (at most `KEY_CACHE_MAX_LEN` bytes each) are equal,
/// by fixed-size overlapping loads.
#[inline(always)]
fn same_key(a: &[u8], b: &[u8]) -> bool {
    let n = b.len();
    if a.len() != n {
        return false;
    }
    if n >= 8 {
        let ends = u64_at(a, 0) == u64_at(b, 0) && u64_at(a, n - 8) == u64_at(b, n - 8);
        return ends
            && (n <= 16
                || (u64_at(a, 8) == u64_at(b, 8) && u64_at(a, n - 16) == u64_at(b, n - 16)));
    }
    if n >= 4 {
        return u32_at(a, 0) == u32_at(b, 0) && u32_at(a, n - 4) == u32_at(b, n - 4);
    }
    // Up to three bytes: the first, middle and last cover them all.
    [0, n / 2, n.wrapping_sub(1)]
        .iter()
        .all(|&i| a.get(i) == b.get(i))
}

/// The UTF-8 bytes of a cached key (an ASCII str).
///
/// # Safety
/// `obj` must be a live str; the slice must not outlive it.
#[inline(always)]
unsafe fn cached_bytes<'a>(obj: NonNull<ffi::PyObject>) -> &'a [u8] {
    let ptr = obj.as_ptr();
    #[cfg(not(feature = "abi3"))]
    {
        // A compact ASCII str keeps its characters right after the header.
        let len = (*ptr.cast::<ffi::PyASCIIObject>()).length as usize;
        std::slice::from_raw_parts(ffi::PyUnicode_DATA(ptr).cast::<u8>(), len)
    }
    #[cfg(feature = "abi3")]
    {
        let mut len: ffi::Py_ssize_t = 0;
        let data = ffi::PyUnicode_AsUTF8AndSize(ptr, &mut len);
        if data.is_null() {
            ffi::PyErr_Clear();
            return &[];
        }
        std::slice::from_raw_parts(data.cast::<u8>(), len as usize)
    }
}

/// Containers of a document tracked by the collector as they are made (see the module docs).
const TRACKED_AS_MADE: usize = 256;

struct PyBuilder<'c> {
    cache: Option<&'c mut Vec<KeySet>>,
    /// Containers made so far, up to `TRACKED_AS_MADE`.
    containers: usize,
    /// The containers made after those, that the collector is to track once
    /// the document is complete.
    untracked: &'c mut Vec<NonNull<ffi::PyObject>>,
}

impl PyBuilder<'_> {
    /// Count a container just made; whether to hold it back (the document
    /// has already made `TRACKED_AS_MADE`).
    #[inline]
    fn should_hold_back(&mut self) -> bool {
        let hold = self.containers >= TRACKED_AS_MADE;
        self.containers += usize::from(!hold);
        hold
    }

    /// Keep `container`, just made (and tracked), out of the collector until
    /// the document is complete.
    ///
    /// # Safety
    /// `container` is a live list or dict that no other code has seen yet.
    #[inline]
    unsafe fn hold_back(&mut self, container: NonNull<ffi::PyObject>) {
        ffi::PyObject_GC_UnTrack(container.as_ptr().cast());
        self.untracked.push(container);
    }

    /// The outcome of a parse. On success every container held back is in
    /// the returned tree, alive: the collector tracks them now. On failure
    /// they are gone with the values that were dropped.
    #[inline]
    fn finish(&mut self, result: Result<Obj, Failure<Failed>>) -> Result<Obj, Failure<Failed>> {
        let held_back = self.untracked.drain(..);
        if result.is_ok() {
            for container in held_back {
                // SAFETY: part of the tree we own (see above), GIL held.
                // Nothing tracks them meanwhile; the check is there
                // because tracking an object twice aborts the interpreter.
                unsafe {
                    if ffi::PyObject_GC_IsTracked(container.as_ptr()) == 0 {
                        ffi::PyObject_GC_Track(container.as_ptr().cast());
                    }
                }
            }
        }
        result
    }
}

/// `value` as a Python str, made in its final compact form (see [`new_str`]).
pub(crate) fn py_str<'py>(py: Python<'py>, value: &str) -> PyResult<Bound<'py, PyAny>> {
    match new_str(value, value.is_ascii()) {
        // SAFETY: a new reference, handed over.
        Ok(obj) => Ok(unsafe { Bound::from_owned_ptr(py, obj.into_ptr()) }),
        Err(Failed) => Err(PyErr::fetch(py)),
    }
}

#[inline]
fn new_str(value: &str, ascii: bool) -> Result<Obj, Failed> {
    #[cfg(not(feature = "abi3"))]
    {
        if ascii && value.len() == 1 {
            // One ASCII character: the interpreter's shared str for it, no allocation.
            // SAFETY: `value` is one byte of valid UTF-8.
            return Obj::made(unsafe {
                ffi::PyUnicode_FromStringAndSize(value.as_ptr().cast(), 1)
            });
        }
        if ascii {
            // SAFETY: a fresh compact ASCII string of `len` characters has room
            // for exactly `len` bytes at PyUnicode_DATA; we fill all of them.
            unsafe {
                let obj = Obj::made(ffi::PyUnicode_New(value.len() as ffi::Py_ssize_t, 127))?;
                std::ptr::copy_nonoverlapping(
                    value.as_ptr(),
                    ffi::PyUnicode_DATA(obj.0.as_ptr()).cast::<u8>(),
                    value.len(),
                );
                return Ok(obj);
            }
        }
        new_wide_str(value)
    }
    #[cfg(feature = "abi3")]
    {
        let _ = ascii;
        // SAFETY: `value` is valid UTF-8.
        Obj::made(unsafe {
            ffi::PyUnicode_FromStringAndSize(value.as_ptr().cast(), value.len() as ffi::Py_ssize_t)
        })
    }
}

/// A str of text that is not all ASCII, made at once in its final compact
/// form (no decoder, no widening, no resize). The widest byte of the UTF-8
/// tells the kind: lead bytes below 0xC4 encode at most U+00FF (one byte per
/// character), below 0xF0 at most U+FFFF (two), else four; and the text does
/// hold a character that needs that width, as the compact form requires.
#[cfg(not(feature = "abi3"))]
fn new_wide_str(value: &str) -> Result<Obj, Failed> {
    let bytes = value.as_bytes();
    let (length, widest) = utf8_shape(bytes);
    let max_char: ffi::Py_UCS4 = match widest {
        0..=0xC3 => 0xFF,
        0xC4..=0xEF => 0xFFFF,
        _ => 0x10_FFFF,
    };
    // SAFETY: a fresh compact string of `length` characters of the kind
    // `max_char` gives, whose `length` slots `decode_into` fills.
    unsafe {
        let obj = Obj::made(ffi::PyUnicode_New(length as ffi::Py_ssize_t, max_char))?;
        let data = ffi::PyUnicode_DATA(obj.0.as_ptr());
        match max_char {
            0xFF => decode_into(
                std::slice::from_raw_parts_mut(data.cast::<u8>(), length),
                bytes,
                |c| c as u8,
                |out, run| *out = *run,
            ),
            0xFFFF => decode_into(
                std::slice::from_raw_parts_mut(data.cast::<u16>(), length),
                bytes,
                |c| c as u16,
                widen_u16,
            ),
            _ => decode_into(
                std::slice::from_raw_parts_mut(data.cast::<u32>(), length),
                bytes,
                |c| c,
                |out, run| {
                    for (slot, &b) in out.iter_mut().zip(run) {
                        *slot = u32::from(b);
                    }
                },
            ),
        }
        Ok(obj)
    }
}

/// The characters in valid UTF-8 `bytes` and its greatest byte, in one pass
/// (sixteen bytes a step with SSE2 on x86_64).
#[cfg(not(feature = "abi3"))]
#[inline]
fn utf8_shape(bytes: &[u8]) -> (usize, u8) {
    let mut continuations = 0usize;
    let mut widest = 0u8;
    let mut chunks = bytes.chunks_exact(16);
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::*;
        // SAFETY: each chunk holds 16 readable bytes (unaligned loads), and
        // `top` is 16 bytes; SSE2 is part of x86_64.
        unsafe {
            let mut max = _mm_setzero_si128();
            for chunk in &mut chunks {
                let v = _mm_loadu_si128(chunk.as_ptr().cast());
                // Continuation bytes (0x80..=0xBF) are below -64 as signed bytes.
                let cont = _mm_cmplt_epi8(v, _mm_set1_epi8(-64));
                continuations += (_mm_movemask_epi8(cont) as u32).count_ones() as usize;
                max = _mm_max_epu8(max, v);
            }
            let mut top = [0u8; 16];
            _mm_storeu_si128(top.as_mut_ptr().cast(), max);
            widest = top.iter().fold(widest, |a, &b| a.max(b));
        }
    }
    for &b in chunks.remainder().iter().chain(chunks.by_ref().flatten()) {
        continuations += usize::from(b & 0xC0 == 0x80);
        widest = widest.max(b);
    }
    (bytes.len() - continuations, widest)
}

/// Sixteen ASCII bytes into sixteen two-byte slots (SSE2 on x86_64).
#[cfg(not(feature = "abi3"))]
#[inline(always)]
fn widen_u16(out: &mut [u16; 16], run: &[u8; 16]) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a 16-byte load from `run` and two 16-byte stores into `out`
    // (sixteen u16), all unaligned; SSE2 is part of x86_64.
    unsafe {
        use std::arch::x86_64::*;
        let v = _mm_loadu_si128(run.as_ptr().cast());
        let zero = _mm_setzero_si128();
        _mm_storeu_si128(out.as_mut_ptr().cast(), _mm_unpacklo_epi8(v, zero));
        _mm_storeu_si128(out.as_mut_ptr().add(8).cast(), _mm_unpackhi_epi8(v, zero));
    }
    #[cfg(not(target_arch = "x86_64"))]
    for (slot, &b) in out.iter_mut().zip(run) {
        *slot = u16::from(b);
    }
}

/// A bit per byte of `run` at or above 0x80.
#[cfg(not(feature = "abi3"))]
#[inline(always)]
fn high_bits(run: &[u8; 16]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a 16-byte unaligned load from `run`; SSE2 is part of x86_64.
    unsafe {
        use std::arch::x86_64::*;
        _mm_movemask_epi8(_mm_loadu_si128(run.as_ptr().cast())) as u32
    }
    #[cfg(not(target_arch = "x86_64"))]
    run.iter()
        .enumerate()
        .fold(0, |m, (k, &b)| m | u32::from(b >= 0x80) << k)
}

/// Decode valid UTF-8 `bytes` into `slots`, one code point each (as many
/// slots as characters): `narrow` makes a slot of a code point, `widen`
/// fills sixteen slots from sixteen bytes, taken as ASCII. Where sixteen
/// bytes and slots remain, they are widened whatever they hold, and the
/// output advances to the first byte that is not ASCII (the slots past it
/// are written again); that character, and any that follow it directly,
/// are decoded one at a time.
#[cfg(not(feature = "abi3"))]
#[inline(always)]
fn decode_into<T: Copy>(
    slots: &mut [T],
    bytes: &[u8],
    narrow: impl Fn(u32) -> T,
    widen: impl Fn(&mut [T; 16], &[u8; 16]),
) {
    let byte = |i: usize| u32::from(bytes.get(i).copied().unwrap_or(0));
    let (mut i, mut k) = (0, 0);
    while k < slots.len() {
        let run = bytes
            .get(i..)
            .and_then(|r| r.get(..16))
            .and_then(|r| <&[u8; 16]>::try_from(r).ok());
        let out = slots
            .get_mut(k..)
            .and_then(|o| o.get_mut(..16))
            .and_then(|o| <&mut [T; 16]>::try_from(o).ok());
        if let (Some(run), Some(out)) = (run, out) {
            widen(out, run);
            let high = high_bits(run);
            if high == 0 {
                i += 16;
                k += 16;
                continue;
            }
            let n = high.trailing_zeros() as usize;
            i += n;
            k += n;
        }
        loop {
            let lead = byte(i);
            let (code, width) = match lead {
                0..=0x7F => (lead, 1),
                0x80..=0xDF => ((lead & 0x1F) << 6 | (byte(i + 1) & 0x3F), 2),
                0xE0..=0xEF => (
                    (lead & 0x0F) << 12 | (byte(i + 1) & 0x3F) << 6 | (byte(i + 2) & 0x3F),
                    3,
                ),
                _ => (
                    (lead & 0x07) << 18
                        | (byte(i + 1) & 0x3F) << 12
                        | (byte(i + 2) & 0x3F) << 6
                        | (byte(i + 3) & 0x3F),
                    4,
                ),
            };
            if let Some(slot) = slots.get_mut(k) {
                *slot = narrow(code);
            }
            i += width;
            k += 1;
            // Past an ASCII byte, or at the end, the vector step goes on.
            if lead < 0x80 || byte(i) < 0x80 || k >= slots.len() {
                break;
            }
        }
    }
}

impl Builder for PyBuilder<'_> {
    type Value = Obj;
    type Error = Failed;

    #[inline]
    fn null(&mut self) -> Result<Obj, Failed> {
        // SAFETY: None is a valid object; we take a new reference to it.
        unsafe {
            let none = ffi::Py_None();
            ffi::Py_INCREF(none);
            Obj::made(none)
        }
    }

    #[inline]
    fn boolean(&mut self, value: bool) -> Result<Obj, Failed> {
        // SAFETY: True/False are valid objects; we take a new reference.
        unsafe {
            let obj = if value {
                ffi::Py_True()
            } else {
                ffi::Py_False()
            };
            ffi::Py_INCREF(obj);
            Obj::made(obj)
        }
    }

    #[inline]
    fn int(&mut self, value: i64) -> Result<Obj, Failed> {
        // SAFETY: plain constructor call with the GIL held.
        Obj::made(unsafe { ffi::PyLong_FromLongLong(value) })
    }

    #[inline]
    fn uint(&mut self, value: u64) -> Result<Obj, Failed> {
        // The signed constructor has the interpreter's fast path for values
        // of one internal digit; the unsigned one always counts digits.
        // SAFETY: plain constructor calls with the GIL held.
        let obj = match i64::try_from(value) {
            Ok(signed) => unsafe { ffi::PyLong_FromLongLong(signed) },
            Err(_) => unsafe { ffi::PyLong_FromUnsignedLongLong(value) },
        };
        Obj::made(obj)
    }

    #[inline]
    fn float(&mut self, value: f64) -> Result<Obj, Failed> {
        // SAFETY: plain constructor call with the GIL held.
        Obj::made(unsafe { ffi::PyFloat_FromDouble(value) })
    }

    #[inline]
    fn string(&mut self, value: &str, ascii: bool) -> Result<Obj, Failed> {
        new_str(value, ascii)
    }

    #[inline(always)]
    fn key(&mut self, value: &str, ascii: bool) -> Result<Obj, Failed> {
        let bytes = value.as_bytes();
        let Some(cache) = self
            .cache
            .as_mut()
            .filter(|_| ascii && bytes.len() <= KEY_CACHE_MAX_LEN)
        else {
            return new_str(value, ascii);
        };
        let short = bytes.len().wrapping_sub(1) < SHORT_KEY_MAX_LEN;
        let (tag, index) = if short {
            let tag = short_tag(bytes);
            (tag, key_set(tag))
        } else {
            // The set from the hash's top bits, clear of `LONG_TAG`.
            let hash = key_hash(bytes);
            (hash | LONG_TAG, (hash >> 40) as usize % KEY_CACHE_SETS)
        };
        let Some(set) = cache.get_mut(index) else {
            return new_str(value, ascii);
        };
        for slot in &set.0 {
            if slot.tag == tag {
                if let Some(obj) = slot.obj {
                    // A short key's tag is the key; a longer key's bytes are compared.
                    // SAFETY: the cache holds a reference to this str.
                    if short || same_key(unsafe { cached_bytes(obj) }, bytes) {
                        // SAFETY: the cache holds a reference; we hand out a new one.
                        unsafe { ffi::Py_INCREF(obj.as_ptr()) };
                        return Obj::made(obj.as_ptr());
                    }
                }
            }
        }
        let obj = new_str(value, ascii)?;
        // Compute the hash now so every dict insert of this key reuses it.
        // SAFETY: `obj` is a valid str.
        if unsafe { ffi::PyObject_Hash(obj.0.as_ptr()) } == -1 {
            return Err(Failed);
        }
        // The older key of the set goes; the previous recent one becomes the older.
        // SAFETY: the cache keeps its own reference.
        unsafe { ffi::Py_INCREF(obj.0.as_ptr()) };
        let [recent, older] = set.0;
        set.0 = [
            Slot {
                tag,
                obj: Some(obj.0),
            },
            recent,
        ];
        if let Some(old) = older.obj {
            drop(Obj(old));
        }
        Ok(obj)
    }

    #[inline(always)]
    fn array(&mut self, items: std::vec::Drain<'_, Obj>) -> Result<Obj, Failed> {
        // SAFETY: a new list of exactly `items.len()` slots, each set once
        // (PyList_SET_ITEM steals the reference we release with into_ptr).
        unsafe {
            let list = Obj::made(ffi::PyList_New(items.len() as ffi::Py_ssize_t))?;
            if self.should_hold_back() {
                self.hold_back(list.0);
            }
            for (i, item) in items.enumerate() {
                #[cfg(not(feature = "abi3"))]
                ffi::PyList_SET_ITEM(list.0.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr());
                #[cfg(feature = "abi3")]
                ffi::PyList_SetItem(list.0.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr());
            }
            Ok(list)
        }
    }

    #[inline(always)]
    fn object(&mut self, mut members: std::vec::Drain<'_, Obj>) -> Result<Object<Obj>, Failed> {
        // SAFETY: a dict we create, sized once for its members; str keys; the
        // dict takes its own references. A key already present leaves the
        // size unchanged, which is how duplicates are found without a lookup.
        unsafe {
            #[cfg(not(feature = "abi3"))]
            let dict = Obj::made(ffi::_PyDict_NewPresized(
                (members.len() / 2) as ffi::Py_ssize_t,
            ))?;
            #[cfg(feature = "abi3")]
            let dict = Obj::made(ffi::PyDict_New())?;
            let ptr = dict.0.as_ptr();
            let mut index = 0;
            let mut holds_container = false;
            while let (Some(key), Some(value)) = (members.next(), members.next()) {
                let kind = ffi::Py_TYPE(value.0.as_ptr());
                holds_container |= kind == std::ptr::addr_of_mut!(ffi::PyList_Type)
                    || kind == std::ptr::addr_of_mut!(ffi::PyDict_Type);
                #[cfg(not(feature = "abi3"))]
                {
                    // A str caches its hash (keys from the cache already have it).
                    let mut hash = (*key.0.as_ptr().cast::<ffi::PyASCIIObject>()).hash;
                    if hash == -1 {
                        hash = ffi::PyObject_Hash(key.0.as_ptr());
                        if hash == -1 {
                            return Err(Failed);
                        }
                    }
                    if ffi::_PyDict_SetItem_KnownHash(ptr, key.0.as_ptr(), value.0.as_ptr(), hash)
                        != 0
                    {
                        return Err(Failed);
                    }
                    if (*ptr.cast::<ffi::PyDictObject>()).ma_used == index {
                        return Ok(Object::DuplicateKey(index as usize));
                    }
                }
                #[cfg(feature = "abi3")]
                {
                    if ffi::PyDict_SetItem(ptr, key.0.as_ptr(), value.0.as_ptr()) != 0 {
                        return Err(Failed);
                    }
                    if ffi::PyDict_Size(ptr) == index {
                        return Ok(Object::DuplicateKey(index as usize));
                    }
                }
                index += 1;
            }
            // The collector tracks a dict once it holds a list or dict (the
            // only containers a document has).
            if holds_container && self.should_hold_back() {
                self.hold_back(dict.0);
            }
            Ok(Object::Built(dict))
        }
    }
}

static DEFAULT_LIMITS: Limits = Limits::DEFAULT;

static PARSE_ERROR: GILOnceCell<Py<PyAny>> = GILOnceCell::new();
static STR_INPUT_ERROR: GILOnceCell<Py<PyAny>> = GILOnceCell::new();

fn helper(
    py: Python<'_>,
    cell: &'static GILOnceCell<Py<PyAny>>,
    name: &str,
) -> PyResult<Py<PyAny>> {
    cell.get_or_try_init(py, || {
        Ok::<_, PyErr>(py.import("decisions._json_errors")?.getattr(name)?.unbind())
    })
    .map(|f| f.clone_ref(py))
}

/// The `ParseError` for `err`, rendered by `decisions._json_errors` (shared with the pure twin).
fn parse_error(
    py: Python<'_>,
    err: JsonError,
    data: &Bound<'_, PyAny>,
    limits: Option<&Bound<'_, PyAny>>,
) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let render = helper(py, &PARSE_ERROR, "parse_error")?;
        let exc = render
            .bind(py)
            .call1((err.code.as_str(), data, err.pos, limits))?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|e| e)
}

/// `loads`'s docstring, led by the signature CPython reads into `__text_signature__`.
const LOADS_DOC: &std::ffi::CStr = c"loads(data, /, *, limits=None)
--

Parse one strict JSON document (RFC 8259 + I-JSON) into plain Python values.";

/// Add `loads` to `module`: a plain `METH_FASTCALL | METH_KEYWORDS` function
/// whose common call (`loads(data)` or `loads(data, limits=...)`) is read
/// straight from the interpreter's argument vector; every other call shape
/// is refused with CPython's own wording for `loads(data, /, *, limits=None)`.
pub(crate) fn add_loads(module: &Bound<'_, PyModule>) -> PyResult<()> {
    // The interpreter keeps a pointer to the definition for as long as the
    // function lives: it is made once per module and never freed.
    let def = Box::leak(Box::new(ffi::PyMethodDef {
        ml_name: c"loads".as_ptr(),
        ml_meth: ffi::PyMethodDefPointer {
            PyCFunctionFastWithKeywords: loads_entry,
        },
        ml_flags: ffi::METH_FASTCALL | ffi::METH_KEYWORDS,
        ml_doc: LOADS_DOC.as_ptr(),
    }));
    let name = module.name()?;
    // SAFETY: a static definition, the module and its name, live; a new
    // reference (or null with the error set), which the Bound takes over.
    let function = unsafe {
        Bound::from_owned_ptr_or_err(
            module.py(),
            ffi::PyCFunction_NewEx(def, module.as_ptr(), name.as_ptr()),
        )?
    };
    module.add("loads", function)
}

/// The C entry of `loads`. A panic (none is expected) must not unwind into
/// the interpreter: it becomes PyO3's `PanicException`, as in a `#[pyfunction]`.
unsafe extern "C" fn loads_entry(
    _module: *mut ffi::PyObject,
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    // SAFETY: the interpreter calls this with the GIL held and an argument
    // vector of `nargs` positional values followed by one per keyword name.
    std::panic::catch_unwind(|| unsafe { loads_call(args, nargs, kwnames) })
        .unwrap_or_else(|payload| raise_panic(payload.as_ref()))
}

#[cold]
fn raise_panic(payload: &(dyn std::any::Any + Send)) -> *mut ffi::PyObject {
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_else(|| "panic from Rust code".to_owned());
    Python::with_gil(|py| pyo3::panic::PanicException::new_err(message).restore(py));
    std::ptr::null_mut()
}

/// How many keyword arguments a call has.
///
/// # Safety
/// `kwnames` is null or a tuple of str (the interpreter's keyword names).
#[inline]
unsafe fn keyword_count(kwnames: *mut ffi::PyObject) -> usize {
    if kwnames.is_null() {
        return 0;
    }
    #[cfg(not(feature = "abi3"))]
    let count = ffi::PyTuple_GET_SIZE(kwnames);
    #[cfg(feature = "abi3")]
    let count = ffi::PyTuple_Size(kwnames);
    count.max(0) as usize
}

/// The `i`-th keyword name of a call (a borrowed str).
///
/// # Safety
/// `kwnames` is a tuple of str with more than `i` items.
#[inline]
unsafe fn keyword_name(kwnames: *mut ffi::PyObject, i: usize) -> *mut ffi::PyObject {
    #[cfg(not(feature = "abi3"))]
    return ffi::PyTuple_GET_ITEM(kwnames, i as ffi::Py_ssize_t);
    #[cfg(feature = "abi3")]
    return ffi::PyTuple_GetItem(kwnames, i as ffi::Py_ssize_t);
}

/// Whether the str `name` is `expected`.
///
/// # Safety
/// `name` is a live str and the GIL is held.
#[inline]
unsafe fn named(name: *mut ffi::PyObject, expected: &std::ffi::CStr) -> bool {
    ffi::PyUnicode_CompareWithASCIIString(name, expected.as_ptr()) == 0
}

/// One call of `loads`: its arguments read, the document parsed, the value
/// (a new reference) returned, or null with the error set.
///
/// # Safety
/// As [`loads_entry`]: the GIL is held, `args` holds `nargs` values and one
/// per name in `kwnames` (null or a tuple of str).
#[inline(always)]
unsafe fn loads_call(
    args: *const *mut ffi::PyObject,
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let keywords = keyword_count(kwnames);
    let limits = match (nargs, keywords) {
        (1, 0) => std::ptr::null_mut(),
        (1, 1) if named(keyword_name(kwnames, 0), c"limits") => *args.add(1),
        _ => return raise_argument_error(nargs, kwnames),
    };
    let data = *args;
    // SAFETY (of the token): the interpreter holds the GIL for this thread.
    let py = Python::assume_gil_acquired();
    // A call made while another is under way (a finalizer that the garbage
    // collector runs during a parse may call loads) finds the state taken:
    // it parses without the caches.
    let mut guard = take_state(py);
    let custom;
    let lim: &Limits = if limits.is_null() || limits == ffi::Py_None() {
        &DEFAULT_LIMITS
    } else {
        match guard.as_mut().map(|taken| &mut *taken.0) {
            Some(State {
                limits: Some((last, values)),
                ..
            }) if last.0.as_ptr() == limits => {
                custom = *values;
                &custom
            }
            state => {
                let read = Python::with_gil(|py| {
                    let obj = Bound::from_borrowed_ptr(py, limits);
                    limits_from(py, Some(&obj)).map_err(|e| e.restore(py))
                });
                let Ok(values) = read else {
                    return std::ptr::null_mut();
                };
                custom = values;
                if let Some(state) = state {
                    ffi::Py_INCREF(limits);
                    state.limits = Some((Obj(NonNull::new_unchecked(limits)), custom));
                }
                &custom
            }
        }
    };
    let mut own: (Buffers<Obj>, Vec<NonNull<ffi::PyObject>>);
    let (cache, buffers, untracked) = match guard.as_mut().map(|taken| &mut *taken.0) {
        Some(State {
            keys,
            buffers,
            untracked,
            ..
        }) => {
            if keys.is_empty() {
                keys.resize(KEY_CACHE_SETS, EMPTY_SET);
            }
            // Keep a small reserve between calls, not the peak of a large document.
            if untracked.capacity() > 8192 {
                *untracked = Vec::new();
            }
            (Some(keys), buffers, untracked)
        }
        None => {
            own = (Buffers::new(), Vec::new());
            (None, &mut own.0, &mut own.1)
        }
    };
    let mut builder = PyBuilder {
        cache,
        containers: 0,
        untracked,
    };
    match parse_data(&mut builder, data, lim, buffers) {
        Ok(obj) => obj.into_ptr(),
        Err(stop) => {
            drop(guard);
            raise_stop(stop, data, limits)
        }
    }
}

/// Why a call of `loads` returns no value.
enum Stop {
    /// The document breaks a rule.
    Parse(JsonError),
    /// A call into the interpreter failed; its error is set.
    Raised,
    /// A str that has no UTF-8 form (lone surrogates).
    NotUtf8,
    /// `data` is not a str or bytes-like.
    WrongType,
}

impl From<Failure<Failed>> for Stop {
    #[inline]
    fn from(failure: Failure<Failed>) -> Stop {
        match failure {
            Failure::Parse(err) => Stop::Parse(err),
            Failure::Build(Failed) => Stop::Raised,
        }
    }
}

/// `data` parsed under `lim` by `builder` (see the module docs for the
/// containers held back from the collector meanwhile).
///
/// # Safety
/// The GIL is held and `data` is a live object.
#[inline(always)]
unsafe fn parse_data(
    builder: &mut PyBuilder<'_>,
    data: *mut ffi::PyObject,
    lim: &Limits,
    buffers: &mut Buffers<Obj>,
) -> Result<Obj, Stop> {
    let too_large = Stop::Parse(JsonError {
        code: crate::core::errors::Code::DOCUMENT_TOO_LARGE,
        pos: 0,
    });
    // The borrowed byte slices do not outlive `data` (or the buffer view).
    let result = if ffi::PyUnicode_Check(data) != 0 {
        if ffi::PyUnicode_GetLength(data) as usize > lim.max_document_bytes {
            return Err(too_large);
        }
        if utf8_over(data, lim.max_document_bytes) {
            // refused before CPython builds (and caches) its UTF-8 form
            return Err(too_large);
        }
        let mut size: ffi::Py_ssize_t = 0;
        let utf8 = ffi::PyUnicode_AsUTF8AndSize(data, &mut size);
        if utf8.is_null() {
            ffi::PyErr_Clear();
            return Err(Stop::NotUtf8);
        }
        let bytes = std::slice::from_raw_parts(utf8.cast::<u8>(), size as usize);
        parse_str_in(std::str::from_utf8_unchecked(bytes), lim, builder, buffers)
    } else if ffi::PyBytes_Check(data) != 0 {
        let bytes = std::slice::from_raw_parts(
            ffi::PyBytes_AsString(data).cast::<u8>(),
            ffi::PyBytes_Size(data) as usize,
        );
        parse_bytes_in(bytes, lim, builder, buffers)
    } else if ffi::PyByteArray_Check(data) != 0 || ffi::PyMemoryView_Check(data) != 0 {
        let mut view = std::mem::MaybeUninit::<ffi::Py_buffer>::zeroed();
        if ffi::PyObject_GetBuffer(data, view.as_mut_ptr(), ffi::PyBUF_CONTIG_RO) == 0 {
            let mut view = view.assume_init();
            let bytes = if view.len > 0 {
                std::slice::from_raw_parts(view.buf.cast::<u8>(), view.len as usize)
            } else {
                &[]
            };
            if bytes.len() > lim.max_document_bytes {
                // refused before it is copied
                ffi::PyBuffer_Release(&mut view);
                return Err(too_large);
            }
            // A copy is parsed: the parse builds Python objects, and a
            // collection they trigger runs Python code (a `gc.callbacks`
            // hook, a finalizer, another thread meanwhile) that may change a
            // mutable buffer in place, under the UTF-8 the parser checked
            // once and relies on (as the pure twin, which parses `bytes`).
            let copy = bytes.to_vec();
            ffi::PyBuffer_Release(&mut view);
            parse_bytes_in(&copy, lim, builder, buffers)
        } else {
            // Not contiguous: parse a copy.
            ffi::PyErr_Clear();
            let copy = Obj::made(ffi::PyBytes_FromObject(data)).map_err(|Failed| Stop::Raised)?;
            let bytes = std::slice::from_raw_parts(
                ffi::PyBytes_AsString(copy.0.as_ptr()).cast::<u8>(),
                ffi::PyBytes_Size(copy.0.as_ptr()) as usize,
            );
            parse_bytes_in(bytes, lim, builder, buffers)
        }
    } else {
        return Err(Stop::WrongType);
    };
    builder.finish(result).map_err(Stop::from)
}

/// Set the Python error for `stop` (a call of `loads` with `data` and
/// `limits`, null when not given); null, for the entry to return.
#[cold]
#[inline(never)]
fn raise_stop(
    stop: Stop,
    data: *mut ffi::PyObject,
    limits: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    if let Stop::Raised = stop {
        return std::ptr::null_mut();
    }
    Python::with_gil(|py| {
        // SAFETY: the call's arguments, alive for its duration (borrowed).
        let data = unsafe { Bound::from_borrowed_ptr(py, data) };
        let limits = unsafe { Bound::from_borrowed_ptr_or_opt(py, limits) };
        let err = match stop {
            Stop::Parse(err) => parse_error(py, err, &data, limits.as_ref()),
            Stop::NotUtf8 => {
                // Lone surrogates: a str that is not UTF-8 (shared rule, rendered in Python).
                let render = || -> PyResult<PyErr> {
                    let render = helper(py, &STR_INPUT_ERROR, "str_input_error")?;
                    Ok(PyErr::from_value(render.bind(py).call1((&data, limits))?))
                };
                render().unwrap_or_else(|e| e)
            }
            Stop::WrongType => match data.get_type().name() {
                Ok(name) => PyTypeError::new_err(format!(
                    "loads() argument must be str, bytes, bytearray or memoryview, not {name}"
                )),
                Err(e) => e,
            },
            Stop::Raised => return,
        };
        err.restore(py);
    });
    std::ptr::null_mut()
}

/// Refuse a call that does not match `loads(data, /, *, limits=None)`, with
/// the message CPython gives for a Python function of that signature (the
/// pure twin's); null, for the entry to return.
///
/// # Safety
/// As [`loads_call`].
#[cold]
#[inline(never)]
unsafe fn raise_argument_error(
    nargs: ffi::Py_ssize_t,
    kwnames: *mut ffi::PyObject,
) -> *mut ffi::PyObject {
    let names: Vec<*mut ffi::PyObject> = (0..keyword_count(kwnames))
        .map(|i| keyword_name(kwnames, i))
        .collect();
    Python::with_gil(|py| {
        let unexpected = names.iter().find(|&&name| !named(name, c"limits"));
        let message = if let Some(&name) = unexpected {
            if names.iter().any(|&name| named(name, c"data")) {
                "loads() got some positional-only arguments passed as keyword arguments: 'data'"
                    .to_owned()
            } else {
                let name = Bound::from_borrowed_ptr(py, name);
                format!("loads() got an unexpected keyword argument '{name}'")
            }
        } else if nargs > 1 {
            match names.len() {
                0 => format!("loads() takes 1 positional argument but {nargs} were given"),
                _ => format!(
                    "loads() takes 1 positional argument but {nargs} positional arguments \
                     (and 1 keyword-only argument) were given"
                ),
            }
        } else {
            "loads() missing 1 required positional argument: 'data'".to_owned()
        };
        PyTypeError::new_err(message).restore(py);
    });
    std::ptr::null_mut()
}

/// Whether a str's UTF-8 form (a surrogate counted as its 3 bytes) is longer
/// than `bound` bytes, without building that form: its length settles it when
/// even the widest encoding of its kind fits (2 bytes a character for Latin-1,
/// 3 for the basic plane, 4 beyond), else its characters are counted.
///
/// # Safety
/// `ptr` is a live str and the GIL is held.
#[cfg(not(feature = "abi3"))]
pub(crate) unsafe fn utf8_over(ptr: *mut ffi::PyObject, bound: usize) -> bool {
    let len = ffi::PyUnicode_GetLength(ptr) as usize;
    let widest = match ffi::PyUnicode_KIND(ptr) {
        _ if ffi::PyUnicode_IS_ASCII(ptr) != 0 => 1,
        ffi::PyUnicode_1BYTE_KIND => 2,
        ffi::PyUnicode_2BYTE_KIND => 3,
        _ => 4,
    };
    len.saturating_mul(widest) > bound && utf8_len(ptr) > bound
}

/// Without the str's internals (abi3): its character count, a lower bound
/// of its UTF-8 bytes, is longer than `bound`; the core checks the bytes
/// once it has them.
///
/// # Safety
/// `ptr` is a live str and the GIL is held.
#[cfg(feature = "abi3")]
pub(crate) unsafe fn utf8_over(ptr: *mut ffi::PyObject, bound: usize) -> bool {
    ffi::PyUnicode_GetLength(ptr) as usize > bound
}

/// The bytes of a str's UTF-8 form, counted from its characters without
/// building that form (CPython caches it on the str once built), or None
/// when it has none (a lone surrogate: refused as not UTF-8 first).
///
/// # Safety
/// `ptr` is a live str and the GIL is held.
#[cfg(not(feature = "abi3"))]
pub(crate) unsafe fn str_utf8_size(ptr: *mut ffi::PyObject) -> Option<usize> {
    let len = ffi::PyUnicode_GetLength(ptr) as usize;
    let data = ffi::PyUnicode_DATA(ptr);
    let surrogate = |c: u32| (0xD800..=0xDFFF).contains(&c);
    match ffi::PyUnicode_KIND(ptr) {
        ffi::PyUnicode_2BYTE_KIND => {
            let chars = std::slice::from_raw_parts(data.cast::<u16>(), len);
            if chars.iter().any(|&c| surrogate(u32::from(c))) {
                return None;
            }
        }
        ffi::PyUnicode_4BYTE_KIND => {
            let chars = std::slice::from_raw_parts(data.cast::<u32>(), len);
            if chars.iter().any(|&c| surrogate(c)) {
                return None;
            }
        }
        _ => {}
    }
    Some(utf8_len(ptr))
}

/// Without the str's internals (abi3): None, so the caller reads the str.
///
/// # Safety
/// `ptr` is a live str and the GIL is held.
#[cfg(feature = "abi3")]
pub(crate) unsafe fn str_utf8_size(_ptr: *mut ffi::PyObject) -> Option<usize> {
    None
}

/// The bytes of a str's UTF-8 form (a surrogate counted as its 3 bytes),
/// counted from its characters without building that form.
///
/// # Safety
/// `ptr` is a live str and the GIL is held.
#[cfg(not(feature = "abi3"))]
unsafe fn utf8_len(ptr: *mut ffi::PyObject) -> usize {
    let len = ffi::PyUnicode_GetLength(ptr) as usize;
    if ffi::PyUnicode_IS_ASCII(ptr) != 0 {
        return len;
    }
    let data = ffi::PyUnicode_DATA(ptr);
    match ffi::PyUnicode_KIND(ptr) {
        ffi::PyUnicode_1BYTE_KIND => {
            let chars = std::slice::from_raw_parts(data.cast::<u8>(), len);
            len + chars.iter().filter(|&&c| c >= 0x80).count()
        }
        ffi::PyUnicode_2BYTE_KIND => {
            let chars = std::slice::from_raw_parts(data.cast::<u16>(), len);
            chars
                .iter()
                .map(|&c| 1 + usize::from(c >= 0x80) + usize::from(c >= 0x800))
                .sum()
        }
        _ => {
            let chars = std::slice::from_raw_parts(data.cast::<u32>(), len);
            chars
                .iter()
                .map(|&c| {
                    1 + usize::from(c >= 0x80) + usize::from(c >= 0x800) + usize::from(c >= 0x10000)
                })
                .sum()
        }
    }
}
