//! Standing notices (the embedder fell back to hash vectors) said once per data directory:
//! `.coral_notices_seen` there remembers a digest of each notice already shown.

use std::path::Path;

/// The file that remembers, in the data directory.
pub const SEEN_FILE: &str = ".coral_notices_seen";

/// Whether `notice` has not been shown for `dir` yet; records it as shown. When the record
/// cannot be read or written (a read-only directory), the notice counts as new: saying it
/// again is better than never.
pub fn first_time(dir: &Path, notice: &str) -> bool {
    let path = dir.join(SEEN_FILE);
    let digest = format!("{:016x}", fnv1a(notice.as_bytes()));
    let seen = std::fs::read_to_string(&path).unwrap_or_default();
    if seen.lines().any(|l| l.trim() == digest) {
        return false;
    }
    let mut text = seen;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&digest);
    text.push('\n');
    // Best effort: a lost record only means the line is said once more.
    let _ = std::fs::write(&path, text);
    true
}

/// FNV-1a, 64 bits: a digest that stays the same across builds (std's hasher may not).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The notice's main clause: up to the first ", which", ", the", "; " or ". ".
pub fn short(notice: &str) -> &str {
    let end = [", which", ", the ", "; ", ". "]
        .iter()
        .filter_map(|sep| notice.find(sep))
        .min()
        .unwrap_or(notice.len());
    &notice[..end]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn once_per_directory_and_per_text() {
        let dir = tempfile::tempdir().unwrap();
        assert!(first_time(dir.path(), "a"));
        assert!(!first_time(dir.path(), "a"));
        assert!(first_time(dir.path(), "b"), "another notice is news");
        let other = tempfile::tempdir().unwrap();
        assert!(first_time(other.path(), "a"), "another directory is news");
    }

    #[test]
    fn the_first_clause() {
        assert_eq!(
            short("x is \"auto\" (a: b) and y, so Coral uses hash, which is weak; more"),
            "x is \"auto\" (a: b) and y, so Coral uses hash"
        );
        assert_eq!(short("no separators"), "no separators");
    }
}
