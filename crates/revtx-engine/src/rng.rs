//! A small, explicit pseudo-random generator for the training data.
//!
//! The data does not come from libtorch's global generator: that generator is shared by
//! every thread in a process, and the prose quotes numbers that must not depend on what
//! else happens to run. SplitMix64 seeds a xoshiro256** state; both are public-domain
//! algorithms by Blackman and Vigna with well-known test vectors.

/// xoshiro256** state.
#[derive(Clone, Debug)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator seeded from one 64-bit value (expanded with SplitMix64).
    pub fn new(seed: u64) -> Self {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng {
            s: [next(), next(), next(), next()],
        }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform integer in `lo..=hi`, without modulo bias (Lemire's multiply-shift with rejection).
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        let n = (hi - lo + 1) as u64;
        let zone = u64::MAX - (u64::MAX - n + 1) % n;
        loop {
            let r = self.next_u64();
            if r <= zone {
                return lo + ((r as u128 * n as u128) >> 64) as usize;
            }
        }
    }
}
