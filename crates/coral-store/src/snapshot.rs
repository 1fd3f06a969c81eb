//! Reading what a directory's compatible files hold, without the journal: the tiers (the warm
//! file's hot marks from `coral_item_meta.json`), duplicates merged, and the vectors when they
//! are usable.

use std::collections::HashMap;

use crate::error::Result;
use crate::files::{self, Skipped, StorePaths};
use crate::item::{Item, Tier};
use crate::npy;
use crate::sums;
use crate::vector_rows::{COMPACT_FROM, LoadedVectors, SPARSE_DENSITY, SparseBuilder};

/// What the compatible files of a directory hold (without the journal).
pub struct Snapshot {
    /// Live items with their tier, duplicates merged, in file order (hot, warm, cold).
    pub items: Vec<(Tier, Item)>,
    /// Vectors by id, from the `.npy` + index when they are usable.
    pub vectors: HashMap<String, usize>,
    /// The vectors read (rows referenced by `vectors`).
    pub matrix: LoadedVectors,
    /// Entries that did not parse, by tier, kept for rewrite.
    pub skipped: [Vec<Skipped>; 3],
    /// Everything worth telling the user about what was found.
    pub notes: Vec<String>,
}

impl Snapshot {
    /// Read the compatible files of a directory (Coral's or the original Python version's).
    /// Vectors of another dim than `dim`, or an index that does not match the matrix, are
    /// reported and treated as missing.
    pub fn read(paths: &StorePaths, dim: usize) -> Result<Snapshot> {
        coral_base::probe::mark("open: start");
        let hot = files::read_item_array(&paths.hot)?;
        let warm = files::read_item_array(&paths.warm)?;
        let cold = files::read_item_lines(&paths.cold)?;
        coral_base::probe::mark("open: item files read and parsed");
        let mut notes = Vec::new();
        let meta = match crate::item_meta::read(&paths.item_meta) {
            Ok(meta) => meta.unwrap_or_default(),
            Err(e) => {
                notes.push(format!(
                    "{e}; every memory is intact, but hot-tier marks and project tags are \
                     not known (hot memories read as warm); the next checkpoint rewrites it"
                ));
                crate::ItemMeta::default()
            }
        };
        coral_base::probe::mark("open: item sidecar read");
        let mut items: Vec<(Tier, Item)> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        let mut merged = [0usize; 3];
        let skipped = [hot.skipped, warm.skipped, cold.skipped];
        let total = hot.items.len() + warm.items.len() + cold.items.len();
        items.reserve_exact(total);
        seen.reserve(total);
        // The parsed items are moved, not cloned: at a million memories a copy of every
        // item was about 300 MB more at the open's peak.
        for (tier, loaded) in [
            (Tier::Hot, hot.items),
            (Tier::Warm, warm.items),
            (Tier::Cold, cold.items),
        ] {
            for mut item in loaded {
                match seen.get(&item.item_id) {
                    Some(&i) => {
                        items[i].1.merge_duplicate(&item);
                        merged[tier.index()] += 1;
                    }
                    None => {
                        seen.insert(item.item_id.clone(), items.len());
                        meta.restore(&mut item);
                        // The warm file holds the hot tier too; the sidecar says which.
                        let tier = if tier == Tier::Warm && meta.hot.contains(&item.item_id) {
                            Tier::Hot
                        } else {
                            tier
                        };
                        items.push((tier, item));
                    }
                }
            }
        }
        for (tier, n) in Tier::ALL.iter().zip(merged) {
            if n > 0 {
                notes.push(format!(
                    "merged {n} duplicate id(s) found in the {tier} tier"
                ));
            }
        }
        for s in skipped.iter().flatten() {
            notes.push(format!(
                "{} line {}: skipped ({}), kept in the file unchanged",
                s.path.display(),
                s.line,
                s.reason
            ));
        }
        coral_base::probe::mark("open: items merged");
        let (matrix, vectors) = read_vectors(paths, dim, &seen, &mut notes);
        coral_base::probe::mark("open: vectors read and checked");
        Ok(Snapshot {
            items,
            vectors,
            matrix,
            skipped,
            notes,
        })
    }
}

fn read_vectors(
    paths: &StorePaths,
    dim: usize,
    live: &HashMap<String, usize>,
    notes: &mut Vec<String>,
) -> (LoadedVectors, HashMap<String, usize>) {
    let none = (LoadedVectors::None, HashMap::new());
    let index = match files::read_index(&paths.index) {
        Ok(Some(ids)) => ids,
        Ok(None) => {
            if paths.vectors.exists() {
                notes.push(format!(
                    "{} is missing: vectors will be recomputed",
                    paths.index.display()
                ));
            }
            return none;
        }
        Err(e) => {
            notes.push(format!("{e}: vectors will be recomputed"));
            return none;
        }
    };
    coral_base::probe::mark("open: vector index read");
    let matrix = match read_rows(&paths.vectors, dim) {
        Ok(m) => m,
        Err(e) => {
            notes.push(format!("{e}: vectors will be recomputed"));
            return none;
        }
    };
    if matrix.rows() != index.len() {
        notes.push(format!(
            "{} lists {} ids but {} holds {} rows: vectors will be recomputed",
            paths.index.display(),
            index.len(),
            paths.vectors.display(),
            matrix.rows()
        ));
        return none;
    }
    if matrix.rows() > 0 && matrix.cols() != dim {
        notes.push(format!(
            "{} holds vectors of dim {} but the embedder produces dim {dim}: \
             they were made by another model and will be recomputed",
            paths.vectors.display(),
            matrix.cols()
        ));
        return none;
    }
    coral_base::probe::mark("open: npy read");
    let sums = match sums::read(&paths.sums) {
        sums::Read::Found(s) => Some(s),
        sums::Read::Missing => None,
        sums::Read::Damaged(why) => {
            notes.push(format!(
                "{why}: the vectors were not checked against it (it is rewritten at the next \
                 checkpoint)"
            ));
            None
        }
    };
    // Each row's verdict on every core (a CRC of 1,536 bytes and a look-up a row: 2.1 s of a
    // reopen at a million rows on one), then the map in row order.
    use rayon::prelude::*;
    #[derive(Clone, Copy, PartialEq)]
    enum Verdict {
        Keep,
        Orphan,
        NonFinite,
        Mismatched,
    }
    let verdicts: Vec<Verdict> = index
        .par_iter()
        .enumerate()
        .map_init(Vec::new, |scratch, (row, id)| {
            if !live.contains_key(id) {
                return Verdict::Orphan;
            }
            let v = matrix.row(row, scratch);
            if v.iter().any(|x| !x.is_finite()) {
                // A NaN scores as nothing and sorts unpredictably: the memory would never be
                // found.
                return Verdict::NonFinite;
            }
            if sums
                .as_ref()
                .is_some_and(|s| s.check(id, v) == sums::Check::Differs)
            {
                return Verdict::Mismatched;
            }
            Verdict::Keep
        })
        .collect();
    let count = |which: Verdict| verdicts.iter().filter(|&&v| v == which).count();
    let (orphans, non_finite, mismatched) = (
        count(Verdict::Orphan),
        count(Verdict::NonFinite),
        count(Verdict::Mismatched),
    );
    let mut by_id = HashMap::with_capacity(index.len());
    for (row, (id, verdict)) in index.into_iter().zip(verdicts).enumerate() {
        if verdict == Verdict::Keep {
            by_id.insert(id, row);
        }
    }
    if orphans > 0 {
        notes.push(format!(
            "{orphans} vector(s) in {} belong to no stored item and were dropped",
            paths.vectors.display()
        ));
    }
    if non_finite > 0 {
        notes.push(format!(
            "damaged vectors: {non_finite} row(s) of {} hold NaN or infinite values; those \
             memories' vectors will be recomputed",
            paths.vectors.display()
        ));
    }
    if mismatched > 0 {
        notes.push(format!(
            "damaged vectors: {mismatched} row(s) of {} do not match the checksums in {} (ids \
             swapped in {} or rows changed); those memories' vectors will be recomputed",
            paths.vectors.display(),
            paths.sums.display(),
            paths.index.display()
        ));
    }
    (matrix, by_id)
}

/// Reads the vector file in the form the pool will hold it: a file of at least
/// [`COMPACT_FROM`] rows whose first 4,096 rows are sparse ([`SPARSE_DENSITY`]) is read a chunk
/// at a time into sparse rows, anything else whole.
fn read_rows(path: &std::path::Path, dim: usize) -> Result<LoadedVectors> {
    const CHUNK: usize = 4096;
    let mut rows = npy::Rows::open(path)?;
    let (n, cols) = (rows.rows, rows.cols);
    let mut buf = Vec::new();
    if n >= COMPACT_FROM && cols == dim && cols > 0 && cols <= 1 << 16 {
        rows.read(&mut buf, CHUNK)?;
        let nonzero = buf.iter().filter(|&&x| x != 0.0).count();
        if nonzero as f64 <= SPARSE_DENSITY * buf.len() as f64 {
            let mut sparse = SparseBuilder::default();
            loop {
                for row in buf.chunks_exact(cols) {
                    sparse.push(row);
                }
                buf.clear();
                if rows.read(&mut buf, CHUNK)? == 0 {
                    break;
                }
            }
            return Ok(LoadedVectors::Sparse(sparse, cols));
        }
    }
    buf.reserve_exact(n * cols - buf.len());
    rows.read(&mut buf, n)?;
    Ok(LoadedVectors::Dense(npy::Matrix {
        rows: n,
        cols,
        data: buf,
    }))
}
