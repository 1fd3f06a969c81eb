//! The hash embedder (docs/embeddings.md): signed feature hashing of tokens, no model needed.

use blake2::Blake2b;
use blake2::digest::Digest;
use blake2::digest::consts::U16;

use crate::tokenize::for_each_token;
use crate::{Embedder, Error, Result};

/// BLAKE2b with a 16-byte digest, as used for embedding features.
type Blake2b128 = Blake2b<U16>;

/// Embeds text by hashing its tokens into a fixed number of dimensions. It captures shared
/// words only; it is not semantic.
///
/// ```
/// use coral_embed::{Embedder, HashEmbedder};
/// let embedder = HashEmbedder::new(16)?;
/// let rows = embedder.embed(&["hello world", ""])?;
/// let norm: f32 = rows[0].iter().map(|x| x * x).sum();
/// assert!((norm - 1.0).abs() < 1e-6);
/// assert!(rows[1].iter().all(|&x| x == 0.0));
/// # Ok::<(), coral_embed::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct HashEmbedder {
    dim: usize,
}

impl HashEmbedder {
    /// A hash embedder producing `dim`-dimensional vectors; `dim` must be at least 1.
    pub fn new(dim: usize) -> Result<Self> {
        if dim == 0 {
            return Err(Error::InvalidDim { dim });
        }
        Ok(HashEmbedder { dim })
    }

    /// Embeds one text.
    pub fn embed_text(&self, text: &str) -> Vec<f32> {
        let mut out = vec![0.0; self.dim];
        for_each_token(text, |token| add_token(&mut out, token));
        l2_normalise(&mut out);
        out
    }
}

impl Embedder for HashEmbedder {
    fn name(&self) -> &str {
        "hash"
    }

    fn dim(&self) -> usize {
        self.dim
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        Ok(texts.iter().map(|text| self.embed_text(text)).collect())
    }
}

/// Writes the hash embedding of `tokens` into `out` (its length is the dimension), overwriting
/// it. Each token (duplicates count) adds ±1 at two positions taken from its 16-byte BLAKE2b
/// digest; the sum is then L2-normalised, and stays all-zero when nothing was added. An empty
/// `out` is left alone.
///
/// ```
/// let mut out = [0.0f32; 8];
/// coral_embed::hash_embed_into(&coral_embed::tokenize("hello"), &mut out);
/// let norm: f32 = out.iter().map(|x| x * x).sum();
/// assert!((norm - 1.0).abs() < 1e-6);
/// ```
pub fn hash_embed_into(tokens: &[String], out: &mut [f32]) {
    out.fill(0.0);
    for token in tokens {
        add_token(out, token);
    }
    l2_normalise(out);
}

fn add_token(out: &mut [f32], token: &str) {
    if out.is_empty() {
        return;
    }
    let digest = crate::digest_cache::digest128(token, |t| Blake2b128::digest(t.as_bytes()).into());
    let word = |at: usize| {
        u32::from_le_bytes([digest[at], digest[at + 1], digest[at + 2], digest[at + 3]])
    };
    let dim = out.len() as u64;
    let first = (u64::from(word(0)) % dim) as usize;
    let second = (u64::from(word(4)) % dim) as usize;
    let sign = if digest[8] % 2 == 1 { 1.0 } else { -1.0 };
    out[first] += sign;
    out[second] += sign;
}

fn l2_normalise(out: &mut [f32]) {
    let norm = out
        .iter()
        .map(|&x| f64::from(x) * f64::from(x))
        .sum::<f64>()
        .sqrt();
    if norm > 0.0 {
        for x in out {
            *x = (f64::from(*x) / norm) as f32;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tokenize;
    use proptest::prelude::*;

    #[test]
    fn zero_dim_is_rejected() {
        let err = HashEmbedder::new(0).unwrap_err();
        assert!(matches!(err, Error::InvalidDim { dim: 0 }));
        assert!(err.to_string().contains("at least 1"));
    }

    #[test]
    fn name_and_dim() {
        let e = HashEmbedder::new(384).unwrap();
        assert_eq!((e.name(), e.dim()), ("hash", 384));
        assert!(e.embed(&[]).unwrap().is_empty());
    }

    #[test]
    fn empty_output_is_left_alone() {
        hash_embed_into(&["x".to_string()], &mut []);
    }

    proptest! {
        #[test]
        fn unit_or_zero_and_consistent(text in "[a-z 中文]{0,30}", dim in 1usize..64) {
            let e = HashEmbedder::new(dim).unwrap();
            let row = e.embed_text(&text);
            prop_assert_eq!(row.len(), dim);
            let norm: f64 = row.iter().map(|&x| f64::from(x) * f64::from(x)).sum();
            prop_assert!(norm == 0.0 || (norm - 1.0).abs() < 1e-5, "norm {}", norm);
            let mut out = vec![7.0; dim];
            hash_embed_into(&tokenize(&text), &mut out);
            prop_assert_eq!(out, row);
        }
    }
}
