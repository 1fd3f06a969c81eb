//! Catalogue terms: kept (NFKC, whitespace squeezed), folded for comparison, deduplicated, and
//! compared (a keyword's one-way match, reinforcement overlap). Keeping and folding are
//! `coral_base`'s `clean_term` and `fold_term`, the one term comparison of every crate.

use serde::Serialize;

use coral_base::clean_term;
pub(crate) use coral_base::fold_term;

/// `text` with every run of whitespace (line breaks included) made one space, trimmed: how
/// titles, hints and terms are stored. Rendering quotes them again (`one_line`).
pub(crate) fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Catalogue terms as MemCore keeps them: NFKC, runs of whitespace made one space, trimmed,
/// empty ones dropped, and case-insensitive duplicates dropped (the first spelling stays).
pub fn normalize_terms<S: AsRef<str>>(terms: &[S]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut seen: Vec<String> = Vec::new();
    for term in terms {
        let clean = clean_term(term.as_ref());
        if clean.is_empty() {
            continue;
        }
        let key = fold_term(&clean);
        if !seen.contains(&key) {
            seen.push(key);
            out.push(clean);
        }
    }
    out
}

/// Which stored term a keyword matched.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KeywordHit {
    /// The keyword as given.
    pub query: String,
    /// The stored term containing it.
    pub term: String,
}

/// For each keyword, the first term of `pool` (in order) that contains it: MemCore's one-way
/// substring match. Keywords that match nothing are left out.
pub fn keyword_hits<S: AsRef<str>, K: AsRef<str>>(pool: &[S], keywords: &[K]) -> Vec<KeywordHit> {
    let folded_pool: Vec<String> = pool.iter().map(|t| fold_term(t.as_ref())).collect();
    keywords
        .iter()
        .filter_map(|k| {
            let needle = fold_term(k.as_ref());
            if needle.is_empty() {
                return None;
            }
            folded_pool
                .iter()
                .position(|t| t.contains(&needle))
                .map(|i| KeywordHit {
                    query: k.as_ref().to_string(),
                    term: pool[i].as_ref().to_string(),
                })
        })
        .collect()
}

/// How strongly two semantic memories are about the same thing, MemCore's way: 0 unless they
/// have the same facet and share an entity anchor; else the shared anchors plus the shared
/// topic terms (compared after NFKC and case folding). One shared name alone (a person who
/// appears everywhere) scores 1 and does not merge unrelated memories at the default minimum
/// of 2.
pub fn reinforcement_overlap(
    a: (Option<&str>, &[String], &[String]),
    b: (Option<&str>, &[String], &[String]),
) -> usize {
    if a.0 != b.0 {
        return 0;
    }
    let shared = |x: &[String], y: &[String]| {
        let y: Vec<String> = y.iter().map(|t| fold_term(t)).collect();
        let mut seen: Vec<String> = Vec::new();
        for k in x.iter().map(|t| fold_term(t)) {
            if y.contains(&k) && !seen.contains(&k) {
                seen.push(k);
            }
        }
        seen.len()
    };
    let anchors = shared(a.1, b.1);
    if anchors == 0 {
        return 0;
    }
    anchors + shared(a.2, b.2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reinforcement_needs_the_facet_a_shared_name_and_enough_overlap() {
        let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let a = (
            Some("preference"),
            v(&["小王", "健身房"]),
            v(&["健身", "早起"]),
        );
        let score = |b: (Option<&str>, Vec<String>, Vec<String>)| {
            reinforcement_overlap((a.0, &a.1, &a.2), (b.0, &b.1, &b.2))
        };
        // One shared anchor and two shared topics (case and width folded): 3.
        assert_eq!(
            score((Some("preference"), v(&["小王"]), v(&["健身", "早起"]))),
            3
        );
        assert_eq!(
            score((Some("preference"), v(&["ＧＹＭ", "小王"]), v(&[]))),
            1
        );
        // Other facet, or no shared entity: 0 however much else is shared.
        assert_eq!(
            score((Some("plan"), v(&["小王", "健身房"]), v(&["健身"]))),
            0
        );
        assert_eq!(
            score((Some("preference"), v(&["小李"]), v(&["健身", "早起"]))),
            0
        );
        assert_eq!(score((None, v(&["小王", "健身房"]), v(&[]))), 0);
    }
}
