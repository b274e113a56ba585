//! BLAKE2b with a 16-byte digest, unkeyed (RFC 7693, the `blake2` crate):
//! the running hash of the Responses output check, the same function as the
//! pure twin's `hashlib.blake2b(digest_size=16)`, so both backends tell the
//! same streamed and final values apart. A 64-bit non-cryptographic hash
//! would not do: texts of one length that share an FNV-1a hash are found in
//! seconds, and the streamed arguments would then run although the
//! provider's final ones differ.

use blake2::digest::consts::U16;
use blake2::{Blake2b, Digest};

/// A running BLAKE2b-128 whose digest can be read while it goes on.
#[derive(Clone)]
pub struct Blake2b128(Blake2b<U16>);

impl Blake2b128 {
    pub fn new() -> Blake2b128 {
        Blake2b128(Blake2b::new())
    }

    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The digest of the bytes so far (the state goes on).
    pub fn digest(&self) -> [u8; 16] {
        self.0.clone().finalize().into()
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
