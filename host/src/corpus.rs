//! Text for the histogram workloads: the bundled public-domain *Alice's Adventures in
//! Wonderland*, and text-like corpora of any size sampled from its words.

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

/// *Alice's Adventures in Wonderland* (Canterbury corpus `alice29.txt`, public domain).
pub const ALICE: &[u8] = include_bytes!("../data/alice29.txt");

/// The words of `ALICE` with the spacing or punctuation that follows each, in order: drawing
/// tokens uniformly from this list reproduces the book's word (and so letter) frequencies.
fn tokens() -> Vec<&'static [u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let b = ALICE;
    let mut i = 0;
    while i < b.len() {
        // a token: letters/apostrophes, then any non-letters
        while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'\'') {
            i += 1;
        }
        while i < b.len() && !(b[i].is_ascii_alphanumeric() || b[i] == b'\'') {
            i += 1;
        }
        if i > start {
            out.push(&b[start..i]);
        }
        start = i;
    }
    out
}

/// `len` bytes of text sampled from the book's words (natural letter frequencies, mostly
/// lowercase), generated on all cores; the same `seed` gives the same text.
#[must_use]
pub fn text_like(len: usize, seed: u64) -> Vec<u8> {
    let toks = tokens();
    let mut out = vec![0u8; len];
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get()).min(64);
    let chunk = len.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (k, part) in out.chunks_mut(chunk).enumerate() {
            let toks = &toks;
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
                let mut at = 0;
                while at < part.len() {
                    let t = toks[rng.random_range(0..toks.len())];
                    let n = t.len().min(part.len() - at);
                    part[at..at + n].copy_from_slice(&t[..n]);
                    at += n;
                }
            });
        }
    });
    out
}

/// `len` bytes drawn uniformly from 0..128.
#[must_use]
pub fn uniform(len: usize, seed: u64) -> Vec<u8> {
    let mut out = vec![0u8; len];
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get()).min(64);
    let chunk = len.div_ceil(threads).max(1);
    std::thread::scope(|s| {
        for (k, part) in out.chunks_mut(chunk).enumerate() {
            s.spawn(move || {
                let mut rng = SmallRng::seed_from_u64(seed ^ 0x5555 ^ k as u64);
                for b in part.iter_mut() {
                    *b = rng.random_range(0..128);
                }
            });
        }
    });
    out
}

/// 128-bin histogram of `text` on one core.
#[must_use]
pub fn histogram_1t(text: &[u8]) -> Vec<u64> {
    let mut bins = vec![0u64; 128];
    for &c in text {
        bins[(c & 127) as usize] += 1;
    }
    bins
}

/// 128-bin histogram of `text` on every core (one private histogram per thread).
#[must_use]
pub fn histogram_mt(text: &[u8]) -> Vec<u64> {
    let threads = std::thread::available_parallelism().map_or(4, |n| n.get());
    let chunk = text.len().div_ceil(threads).max(1);
    let parts: Vec<Vec<u64>> = std::thread::scope(|s| {
        let hs: Vec<_> = text.chunks(chunk).map(|c| s.spawn(move || histogram_1t(c))).collect();
        hs.into_iter().map(|h| h.join().expect("histogram thread")).collect()
    });
    let mut bins = vec![0u64; 128];
    for p in parts {
        for (b, v) in bins.iter_mut().zip(p) {
            *b += v;
        }
    }
    bins
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corpus_keeps_letter_frequencies() {
        let t = text_like(1 << 20, 1);
        let h = histogram_1t(&t);
        let lower: u64 = (b'a'..=b'z').map(|c| h[c as usize]).sum();
        let upper: u64 = (b'A'..=b'Z').map(|c| h[c as usize]).sum();
        assert!(lower > 10 * upper, "mostly lowercase: {lower} vs {upper}");
        assert!(h[b'e' as usize] > h[b'z' as usize] * 20, "English-like: e far above z");
        assert_eq!(histogram_mt(&t), h);
        assert!(t.iter().all(|&c| c < 128));
    }
}
