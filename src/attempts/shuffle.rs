//! An attempt's order and ids, derived from a secret seed stored with the attempt.
//!
//! Orders come from a seeded Fisher–Yates over SplitMix64, both owned here so that a stored
//! seed replays the same order forever (no dependence on a library's unversioned output).
//! Ids are HMAC-SHA256 of the seed and the content key, truncated: opaque, different in every
//! attempt, and telling nothing about position or correctness.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

/// HMAC-SHA256 (RFC 2104), from the `hmac` crate.
pub fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes a key of any length");
    mac.update(message);
    mac.finalize().into_bytes().into()
}

/// SplitMix64: small, fast, and fully specified.
pub struct SplitMix64(u64);

impl SplitMix64 {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (rejection sampling, no modulo bias).
    pub fn below(&mut self, n: u64) -> u64 {
        let zone = u64::MAX - (u64::MAX % n);
        loop {
            let x = self.next_u64();
            if x < zone {
                return x % n;
            }
        }
    }
}

/// A permutation of `0..n`: Fisher–Yates driven by SplitMix64.
pub fn permutation(n: usize, seed: u64) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    let mut rng = SplitMix64::new(seed);
    for i in (1..n).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        order.swap(i, j);
    }
    order
}

/// Derivations from one attempt's secret seed.
pub struct AttemptKeys<'a> {
    pub seed: &'a [u8],
}

impl AttemptKeys<'_> {
    fn derive(&self, label: &str, key: &str) -> [u8; 32] {
        let mut msg = Vec::with_capacity(label.len() + key.len() + 1);
        msg.extend_from_slice(label.as_bytes());
        msg.push(0);
        msg.extend_from_slice(key.as_bytes());
        hmac_sha256(self.seed, &msg)
    }

    fn seed_for(&self, label: &str, key: &str) -> u64 {
        u64::from_le_bytes(self.derive(label, key)[..8].try_into().expect("8 bytes"))
    }

    /// The order questions are served in (indices into the version's questions).
    pub fn question_order(&self, n: usize, shuffle: bool) -> Vec<usize> {
        if shuffle {
            permutation(n, self.seed_for("question-order", ""))
        } else {
            (0..n).collect()
        }
    }

    /// The seed of slot `slot`'s draw (see `draw.rs`). The label names the draw's algorithm:
    /// a change to it gets a new label, so stored attempts (which store what they drew) and
    /// new ones never disagree about what a seed means.
    pub fn draw_seed(&self, slot: usize) -> u64 {
        self.seed_for("draw-v1", &slot.to_string())
    }

    /// The order of one question's options.
    pub fn option_order(&self, question_key: &str, n: usize, shuffle: bool) -> Vec<usize> {
        if shuffle {
            permutation(n, self.seed_for("option-order", question_key))
        } else {
            (0..n).collect()
        }
    }

    /// A question's id in this attempt (served as 16 hex digits).
    pub fn question_id(&self, question_key: &str) -> Id {
        Id::truncated(self.derive("question-id", question_key))
    }

    /// An option's id in this attempt (served as 16 hex digits).
    pub fn option_id(&self, question_key: &str, option_key: &str) -> Id {
        let key = format!("{question_key}\0{option_key}");
        Id::truncated(self.derive("option-id", &key))
    }
}

/// An id of a question or option in one attempt: 8 bytes of an HMAC, 16 hex digits on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Id([u8; 8]);

impl Id {
    fn truncated(mac: [u8; 32]) -> Self {
        Self(mac[..8].try_into().expect("8 bytes"))
    }

    /// The id as sent: anything but 16 hex digits is no id.
    pub fn parse(s: &str) -> Option<Self> {
        let mut out = [0u8; 8];
        hex::decode_to_slice(s, &mut out).ok()?;
        // Lower case only, as served.
        (s.bytes().all(|b| !b.is_ascii_uppercase())).then_some(Self(out))
    }
}

impl Id {
    /// The 16 hex digits, written on the stack (an id is written for every question and option
    /// of every view).
    fn with_hex<T>(&self, f: impl FnOnce(&str) -> T) -> T {
        let mut buf = [0u8; 16];
        hex::encode_to_slice(self.0, &mut buf).expect("16 digits for 8 bytes");
        f(std::str::from_utf8(&buf).expect("hex is ASCII"))
    }
}

impl std::fmt::Display for Id {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.with_hex(|s| f.write_str(s))
    }
}

impl serde::Serialize for Id {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.with_hex(|s| serializer.serialize_str(s))
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn hmac_matches_rfc_4231_test_case_2() {
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(
            hex::encode(mac),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
    }

    #[test]
    fn splitmix64_matches_its_reference_output() {
        let mut rng = SplitMix64::new(0);
        assert_eq!(rng.next_u64(), 0xE220_A839_7B1D_CDAF);
    }

    #[test]
    fn a_seed_replays_the_same_order_forever() {
        // Pinned: a change to the algorithm would reshuffle every stored attempt.
        assert_eq!(permutation(8, 42), permutation(8, 42));
        assert_eq!(permutation(8, 42), vec![3, 1, 6, 2, 4, 0, 7, 5]);
    }

    #[test]
    fn an_id_reads_back_only_as_it_was_served() {
        let id = AttemptKeys { seed: &[1; 32] }.option_id("q", "x");
        let shown = id.to_string();
        assert_eq!(shown.len(), 16);
        assert_eq!(Id::parse(&shown), Some(id));
        assert_eq!(Id::parse(&shown.to_uppercase()), None);
        assert_eq!(Id::parse(&shown[..15]), None);
        assert_eq!(Id::parse(""), None);
    }

    #[test]
    fn ids_differ_between_attempts_and_between_options() {
        let a = AttemptKeys { seed: &[1; 32] };
        let b = AttemptKeys { seed: &[2; 32] };
        assert_ne!(a.option_id("q", "x"), b.option_id("q", "x"));
        assert_ne!(a.option_id("q", "x"), a.option_id("q", "y"));
        assert_ne!(a.question_id("q"), b.question_id("q"));
        assert_eq!(a.option_id("q", "x"), a.option_id("q", "x"));
    }

    proptest! {
        #[test]
        fn a_permutation_contains_every_index_once(n in 0usize..40, seed in any::<u64>()) {
            let mut p = permutation(n, seed);
            p.sort_unstable();
            prop_assert_eq!(p, (0..n).collect::<Vec<_>>());
        }
    }

    #[test]
    fn every_position_is_reachable_for_the_first_option() {
        let mut seen = [0usize; 4];
        for seed in 0..4000u64 {
            seen[permutation(4, seed)[0]] += 1;
        }
        for count in seen {
            assert!((800..1200).contains(&count), "{seen:?}");
        }
    }
}
