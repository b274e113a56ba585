//! BLAKE2b with a 16-byte digest, unkeyed (RFC 7693): the running hash of the
//! Responses output check, the same function as the pure twin's
//! `hashlib.blake2b(digest_size=16)`, so both backends tell the same streamed
//! and final values apart. A 64-bit non-cryptographic hash would not do:
//! texts of one length that share an FNV-1a hash are found in seconds, and
//! the streamed arguments would then run although the provider's final ones
//! differ.

const IV: [u64; 8] = [
    0x6a09_e667_f3bc_c908,
    0xbb67_ae85_84ca_a73b,
    0x3c6e_f372_fe94_f82b,
    0xa54f_f53a_5f1d_36f1,
    0x510e_527f_ade6_82d1,
    0x9b05_688c_2b3e_6c1f,
    0x1f83_d9ab_fb41_bd6b,
    0x5be0_cd19_137e_2179,
];

/// The message schedule of the twelve rounds (rows 10 and 11 repeat 0 and 1).
const SIGMA: [[u8; 16]; 12] = [
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
    [11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4],
    [7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8],
    [9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13],
    [2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9],
    [12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11],
    [13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10],
    [6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5],
    [10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0],
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15],
    [14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3],
];

const BLOCK: usize = 128;
/// Parameter block word 0: digest length 16, key length 0, fanout 1, depth 1.
const PARAM: u64 = 0x0101_0000 | 16;

/// The mixing function G on four words of the working vector (literal
/// positions, so no index is computed at run time).
macro_rules! g {
    ($v:ident, $a:literal, $b:literal, $c:literal, $d:literal, $x:expr, $y:expr) => {
        $v[$a] = $v[$a].wrapping_add($v[$b]).wrapping_add($x);
        $v[$d] = ($v[$d] ^ $v[$a]).rotate_right(32);
        $v[$c] = $v[$c].wrapping_add($v[$d]);
        $v[$b] = ($v[$b] ^ $v[$c]).rotate_right(24);
        $v[$a] = $v[$a].wrapping_add($v[$b]).wrapping_add($y);
        $v[$d] = ($v[$d] ^ $v[$a]).rotate_right(16);
        $v[$c] = $v[$c].wrapping_add($v[$d]);
        $v[$b] = ($v[$b] ^ $v[$c]).rotate_right(63);
    };
}

fn compress(h: &mut [u64; 8], block: &[u8; BLOCK], counter: u128, last: bool) {
    let mut m = [0u64; 16];
    for (word, bytes) in m.iter_mut().zip(block.chunks_exact(8)) {
        let mut le = [0u8; 8];
        le.copy_from_slice(bytes);
        *word = u64::from_le_bytes(le);
    }
    let mut v = [0u64; 16];
    for (slot, value) in v.iter_mut().zip(h.iter().chain(IV.iter())) {
        *slot = *value;
    }
    v[12] ^= counter as u64;
    v[13] ^= (counter >> 64) as u64;
    if last {
        v[14] = !v[14];
    }
    for row in SIGMA.iter() {
        let mut s = [0u64; 16];
        for (word, &at) in s.iter_mut().zip(row.iter()) {
            *word = m.get(usize::from(at)).copied().unwrap_or(0);
        }
        g!(v, 0, 4, 8, 12, s[0], s[1]);
        g!(v, 1, 5, 9, 13, s[2], s[3]);
        g!(v, 2, 6, 10, 14, s[4], s[5]);
        g!(v, 3, 7, 11, 15, s[6], s[7]);
        g!(v, 0, 5, 10, 15, s[8], s[9]);
        g!(v, 1, 6, 11, 12, s[10], s[11]);
        g!(v, 2, 7, 8, 13, s[12], s[13]);
        g!(v, 3, 4, 9, 14, s[14], s[15]);
    }
    for (word, (low, high)) in h.iter_mut().zip(v.iter().zip(v.iter().skip(8))) {
        *word ^= low ^ high;
    }
}

/// A running BLAKE2b-128: `update` with the bytes in any pieces, `digest` at any time.
#[derive(Clone)]
pub struct Blake2b128 {
    h: [u64; 8],
    /// bytes compressed so far
    counter: u128,
    buffer: [u8; BLOCK],
    /// bytes waiting in `buffer` (a full block waits until more bytes come:
    /// the last block is compressed differently)
    buffered: usize,
}

impl Blake2b128 {
    pub const fn new() -> Blake2b128 {
        let mut h = IV;
        h[0] ^= PARAM;
        Blake2b128 {
            h,
            counter: 0,
            buffer: [0; BLOCK],
            buffered: 0,
        }
    }

    pub fn update(&mut self, mut data: &[u8]) {
        while !data.is_empty() {
            if self.buffered == BLOCK {
                self.counter += BLOCK as u128;
                compress(&mut self.h, &self.buffer, self.counter, false);
                self.buffered = 0;
            }
            let take = (BLOCK - self.buffered).min(data.len());
            let (head, tail) = data.split_at(take);
            if let Some(room) = self.buffer.get_mut(self.buffered..self.buffered + take) {
                room.copy_from_slice(head);
            }
            self.buffered += take;
            data = tail;
        }
    }

    /// The digest of the bytes so far (the state goes on).
    pub fn digest(&self) -> [u8; 16] {
        let mut h = self.h;
        let mut block = self.buffer;
        if let Some(rest) = block.get_mut(self.buffered..) {
            rest.fill(0);
        }
        compress(&mut h, &block, self.counter + self.buffered as u128, true);
        let mut out = [0u8; 16];
        for (bytes, word) in out.chunks_exact_mut(8).zip(h.iter()) {
            bytes.copy_from_slice(&word.to_le_bytes());
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::Blake2b128;

    fn hex(bytes: [u8; 16]) -> String {
        bytes.iter().map(|b| format!("{b:02x}")).collect()
    }

    fn of(data: &[u8]) -> String {
        let mut h = Blake2b128::new();
        h.update(data);
        hex(h.digest())
    }

    #[test]
    fn known_digests() {
        // hashlib.blake2b(data, digest_size=16).hexdigest()
        assert_eq!(of(b""), "cae66941d9efbd404e4d88758ea67670");
        assert_eq!(of(b"abc"), "cf4ab791c62b8d2b2109c90275287816");
        let data: Vec<u8> = (0..512u32).map(|i| (i % 256) as u8).collect();
        assert_eq!(of(&data), "43d6c8c9d71d2bf482bc9fdcb35a5496");
    }

    #[test]
    fn pieces_of_any_size_give_the_digest_of_the_whole() {
        let data: Vec<u8> = (0..700u32).map(|i| (i * 7 % 251) as u8).collect();
        for len in [0, 1, 127, 128, 129, 255, 256, 257, 700] {
            let whole = of(&data[..len]);
            for cut in [0, 1, 64, 127, 128, 129, 200] {
                let cut = cut.min(len);
                let mut h = Blake2b128::new();
                h.update(&data[..cut]);
                h.update(&data[cut..len]);
                assert_eq!(hex(h.digest()), whole, "len {len} cut {cut}");
            }
        }
    }
}
