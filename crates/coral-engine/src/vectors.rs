//! The stored vectors against the configured embedder (docs/embeddings.md, "Changing models"):
//! which embedder made them, what opening does when it is another, and filling in missing ones.
//! `coral reembed` itself is `reembed.rs`.
//!
//! The embedder's name and dim are kept next to the vector file, in `coral_vectors.meta.json`
//! (the `.npy` and its index stay exactly as the original Python Coral wrote them). A directory
//! without that file (the original's, or one from before it existed) is recognised by embedding
//! a few stored memories again: hash vectors are reproduced exactly, a model's closely.
//!
//! Policy on open, chosen so that start-up stays fast with tens of thousands of memories:
//! - vectors of another embedder, configured embedder `hash`: all recomputed at once (hashing
//!   20,000 memories takes milliseconds), checkpointed, and the fact reported;
//! - vectors of another embedder, configured embedder a model: nothing is recomputed; search
//!   scores keywords and time only, and `stats().vectors_disabled` says why, until
//!   `coral reembed` runs;
//! - missing vectors (no `.npy`, a damaged one, imported items): recomputed at once with the
//!   hash embedder, or with a model when at most [`OPEN_RECOMPUTE_LIMIT`] are missing;
//!   otherwise as for another embedder's vectors.

use std::path::{Path, PathBuf};

use coral_embed::{Embedder, HashEmbedder};
use coral_store::{Store, VectorMeta};

use crate::door::Door;
use crate::error::Result;
use coral_config::EmbedderKind;

/// Most missing vectors a model computes while opening (about 0.2 s); more wait for
/// `coral reembed`.
pub const OPEN_RECOMPUTE_LIMIT: usize = 64;

/// Memories embedded per model call during a re-embed.
pub(crate) const REEMBED_CHUNK: usize = 256;

/// Memories embedded again to recognise the embedder of a directory without a meta file, and
/// searched for after a re-embed.
pub(crate) const SAMPLE: usize = 8;

/// The meta file of a vector file: `coral_vectors.npy` → `coral_vectors.meta.json`.
pub fn vector_meta_path(vectors: &Path) -> PathBuf {
    vectors.with_extension("meta.json")
}

fn read_meta(path: &Path) -> Option<VectorMeta> {
    coral_store::read_vector_meta(path)
}

pub(crate) fn write_meta(door: &mut Door, embedder: &dyn Embedder) -> Result<()> {
    door.set_vector_meta(&VectorMeta {
        embedder: embedder.name().to_string(),
        dim: embedder.dim(),
    })?;
    Ok(())
}

/// Settle the stored vectors against `embedder` at open (see the module docs). Returns why
/// vectors must not be scored, if they must not.
pub(crate) fn reconcile(
    door: &mut Door,
    embedder: &dyn Embedder,
    notices: &mut Vec<String>,
) -> Result<Option<String>> {
    let name = embedder.name().to_string();
    let store = door.view();
    let pool = store.pool();
    let total = pool.len();
    let stored = total - pool.missing_vectors().len() as usize;
    let meta = read_meta(&vector_meta_path(&store.paths().vectors));
    let origin = match (&meta, stored) {
        (_, 0) => None,
        (Some(meta), _) => Some(meta.embedder.clone()),
        (None, _) => Some(recognise(store, embedder)?),
    };
    if let Some(origin) = origin.filter(|o| *o != name) {
        if EmbedderKind::of(embedder) == EmbedderKind::Hash {
            let rows: Vec<u32> = (0..total as u32).collect();
            embed_rows(door, embedder, &rows)?;
            if door.view().read_only().is_none() {
                door.checkpoint()?;
                write_meta(door, embedder)?;
            }
            notices.push(format!(
                "the stored vectors were made by {origin}; replaced all {total} with hash \
                 vectors (with a model configured again, `coral reembed` restores its vectors)"
            ));
            return Ok(None);
        }
        let why = format!(
            "the stored vectors were made by {origin}, not {name}: search uses keywords and \
             time only until `coral reembed` re-embeds the {total} memories"
        );
        notices.push(why.clone());
        return Ok(Some(why));
    }
    let missing = total - stored;
    if missing > 0 {
        if recompute_missing_vectors(door, embedder)? == 0 {
            let why = format!(
                "{missing} of {total} memories have no {name} vector: search uses keywords and \
                 time only until `coral reembed` embeds them"
            );
            notices.push(why.clone());
            return Ok(Some(why));
        }
        notices.push(format!(
            "computed {missing} missing vector(s) with the {name} embedder"
        ));
    }
    if door.view().read_only().is_none() {
        write_meta(door, embedder)?;
    }
    Ok(None)
}

/// Which embedder made the stored vectors of a directory without a meta file: `"hash"` when
/// hashing reproduces them, the configured model's name when it does, otherwise a description.
fn recognise(store: &Store, embedder: &dyn Embedder) -> Result<String> {
    let pool = store.pool();
    let rows: Vec<u32> = sample_rows(store, SAMPLE)
        .into_iter()
        .filter(|&r| !pool.vector(r).is_zero())
        .collect();
    if rows.is_empty() {
        return Ok(embedder.name().to_string());
    }
    let texts: Vec<&str> = rows
        .iter()
        .map(|&r| pool.item(r).content.as_str())
        .collect();
    let similarity = |vectors: &[Vec<f32>]| -> f64 {
        let sum: f64 = rows
            .iter()
            .zip(vectors)
            .map(|(&r, v)| cosine(&pool.vector(r).to_dense(pool.dim()), v))
            .sum();
        sum / rows.len() as f64
    };
    let hash = HashEmbedder::new(pool.dim())?;
    if similarity(&hash.embed(&texts)?) > 0.9999 {
        return Ok(hash.name().to_string());
    }
    if EmbedderKind::of(embedder) == EmbedderKind::Model
        && similarity(&embedder.embed(&texts)?) > 0.99
    {
        return Ok(embedder.name().to_string());
    }
    Ok(format!("an unknown embedder (dim {})", pool.dim()))
}

/// Whether the vectors of a directory being imported were made by `embedder`: its meta file
/// says so, or embedding a few of its memories again reproduces them. Otherwise the importer
/// recomputes them rather than mixing two embedders' vectors.
pub(crate) fn snapshot_matches(
    paths: &coral_store::StorePaths,
    snapshot: &coral_store::Snapshot,
    embedder: &dyn Embedder,
) -> Result<bool> {
    if let Some(meta) = read_meta(&vector_meta_path(&paths.vectors)) {
        return Ok(meta.embedder == embedder.name());
    }
    let sample: Vec<(&str, Vec<f32>)> = snapshot
        .items
        .iter()
        .filter_map(|(_, item)| {
            let row = *snapshot.vectors.get(&item.item_id)?;
            let mut scratch = Vec::new();
            let v = snapshot.matrix.row(row, &mut scratch).to_vec();
            Some((item.content.as_str(), v))
        })
        .filter(|(_, v)| v.iter().any(|&x| x != 0.0))
        .take(SAMPLE)
        .collect();
    if sample.is_empty() {
        return Ok(true);
    }
    let texts: Vec<&str> = sample.iter().map(|(t, _)| *t).collect();
    let fresh = embedder.embed(&texts)?;
    let similarity = sample
        .iter()
        .zip(&fresh)
        .map(|((_, stored), v)| cosine(stored, v))
        .sum::<f64>()
        / sample.len() as f64;
    // Hash vectors are reproduced exactly, a model's closely.
    let needed = match EmbedderKind::of(embedder) {
        EmbedderKind::Hash => 0.9999,
        EmbedderKind::Model => 0.99,
    };
    Ok(similarity > needed)
}

/// Up to `n` rows spread evenly over the pool, skipping rows without a vector.
pub(crate) fn sample_rows(store: &Store, n: usize) -> Vec<u32> {
    let pool = store.pool();
    let missing = pool.missing_vectors();
    let rows: Vec<u32> = (0..pool.len() as u32)
        .filter(|r| !missing.contains(*r))
        .collect();
    if rows.len() <= n {
        return rows;
    }
    (0..n).map(|i| rows[i * rows.len() / n]).collect()
}

/// Cosine of two vectors, as the scoring kernels compute it.
pub(crate) fn cosine(a: &[f32], b: &[f32]) -> f64 {
    f64::from(coral_score::cosine(a, b))
}

pub(crate) fn embed_rows(door: &mut Door, embedder: &dyn Embedder, rows: &[u32]) -> Result<()> {
    for chunk in rows.chunks(REEMBED_CHUNK) {
        let texts: Vec<String> = chunk
            .iter()
            .map(|&r| door.view().pool().item(r).content.clone())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        for (&row, v) in chunk.iter().zip(embedder.embed(&refs)?) {
            door.set_vector(row, &v);
        }
    }
    Ok(())
}

/// Compute vectors the store could not load (other model's dim, missing `.npy`, ...): all of
/// them with the hash embedder, at most [`OPEN_RECOMPUTE_LIMIT`] with a model (more wait for
/// `coral reembed`). Returns how many were computed.
pub(crate) fn recompute_missing_vectors(door: &mut Door, embedder: &dyn Embedder) -> Result<usize> {
    let rows: Vec<u32> = door.view().pool().missing_vectors().iter().collect();
    if EmbedderKind::of(embedder) == EmbedderKind::Model && rows.len() > OPEN_RECOMPUTE_LIMIT {
        return Ok(0);
    }
    for chunk in rows.chunks(256) {
        let texts: Vec<String> = chunk
            .iter()
            .map(|&r| door.view().pool().item(r).content.clone())
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed(&refs)?;
        for (&row, v) in chunk.iter().zip(&vectors) {
            door.set_vector(row, v);
        }
    }
    Ok(rows.len())
}
