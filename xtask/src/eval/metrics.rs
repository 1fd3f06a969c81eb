//! recall@k and hit@k over ranked lists, per question category and overall.

use serde_json::{Value, json};

/// The cut-offs measured; every set reports all of them.
pub const KS: [usize; 4] = [1, 3, 5, 10];
/// Hits asked for per question (the largest k).
pub const DEPTH: usize = 10;

/// One question's ranking: each position lists the document ids its memory stands for (a
/// memory that absorbed near-duplicates stands for all of them).
pub type Ranked = Vec<Vec<String>>;

/// recall@k = |gold ∩ top-k| / |gold| and hit@k = [gold ∩ top-k ≠ ∅], at each of [`KS`].
pub fn score(ranked: &[Vec<String>], gold: &[String]) -> ([f64; 4], [f64; 4]) {
    let mut recall = [0.0; 4];
    let mut hit = [0.0; 4];
    if gold.is_empty() {
        return (recall, hit);
    }
    for (i, &k) in KS.iter().enumerate() {
        let found = gold
            .iter()
            .filter(|g| ranked.iter().take(k).any(|ids| ids.contains(g)))
            .count();
        recall[i] = found as f64 / gold.len() as f64;
        hit[i] = f64::from(u8::from(found > 0));
    }
    (recall, hit)
}

/// Sums of one category.
#[derive(Clone, Debug, Default, PartialEq)]
struct Sums {
    recall: [f64; 4],
    hit: [f64; 4],
    questions: usize,
}

impl Sums {
    fn add(&mut self, recall: [f64; 4], hit: [f64; 4]) {
        for i in 0..KS.len() {
            self.recall[i] += recall[i];
            self.hit[i] += hit[i];
        }
        self.questions += 1;
    }

    fn to_json(&self) -> Value {
        let n = self.questions.max(1) as f64;
        // Four decimals of a fraction: the tables print percent with one.
        let round = |x: f64| (x / n * 10_000.0).round() / 10_000.0;
        let mut m = serde_json::Map::new();
        m.insert("questions".into(), json!(self.questions));
        for (i, k) in KS.iter().enumerate() {
            m.insert(format!("recall_at_{k}"), json!(round(self.recall[i])));
        }
        for (i, k) in KS.iter().enumerate() {
            m.insert(format!("hit_at_{k}"), json!(round(self.hit[i])));
        }
        Value::Object(m)
    }
}

/// Per-category and overall sums; questions are added in a fixed order, so the same rankings
/// always give the same figures, to the last bit.
#[derive(Clone, Debug, PartialEq)]
pub struct Tally {
    categories: &'static [&'static str],
    per_category: Vec<Sums>,
    overall: Sums,
}

impl Tally {
    /// An empty tally over `categories` (indexes of [`crate::eval::corpus::Question::category`]).
    pub fn new(categories: &'static [&'static str]) -> Tally {
        Tally {
            categories,
            per_category: vec![Sums::default(); categories.len()],
            overall: Sums::default(),
        }
    }

    /// Count one question.
    pub fn add(&mut self, category: Option<usize>, ranked: &[Vec<String>], gold: &[String]) {
        let (recall, hit) = score(ranked, gold);
        if let Some(sums) = category.and_then(|c| self.per_category.get_mut(c)) {
            sums.add(recall, hit);
        }
        self.overall.add(recall, hit);
    }

    /// `{"overall": {...}, "<category>": {...}}`, each `questions`, `recall_at_k`, `hit_at_k`.
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("overall".into(), self.overall.to_json());
        for (name, sums) in self.categories.iter().zip(&self.per_category) {
            m.insert((*name).to_string(), sums.to_json());
        }
        Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranked(positions: &[&[&str]]) -> Ranked {
        positions
            .iter()
            .map(|p| p.iter().map(|s| s.to_string()).collect())
            .collect()
    }

    fn ids(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn recall_and_hit_count_gold_ids_in_the_top_k() {
        // Position 2 is a memory standing for two merged documents.
        let r = ranked(&[&["9"], &["1", "2"], &["3"]]);
        let (recall, hit) = score(&r, &ids(&["1", "3", "7", "2"]));
        assert_eq!(recall, [0.0, 0.75, 0.75, 0.75]);
        assert_eq!(hit, [0.0, 1.0, 1.0, 1.0]);
        // A gold id past the cut-off does not count at k = 1.
        let (recall, hit) = score(&r, &ids(&["9"]));
        assert_eq!((recall[0], hit[0]), (1.0, 1.0));
        // Nothing retrieved.
        assert_eq!(score(&[], &ids(&["1"])), ([0.0; 4], [0.0; 4]));
    }

    #[test]
    fn categories_and_overall_average_their_own_questions() {
        let mut t = Tally::new(&["a", "b"]);
        t.add(Some(0), &ranked(&[&["x"]]), &ids(&["x"]));
        t.add(Some(1), &ranked(&[&["y"], &["z"]]), &ids(&["z", "w"]));
        t.add(Some(1), &ranked(&[]), &ids(&["q"]));
        let j = t.to_json();
        assert_eq!(j["overall"]["questions"], 3);
        assert_eq!(j["a"]["recall_at_1"], 1.0);
        assert_eq!(j["a"]["questions"], 1);
        assert_eq!(j["b"]["recall_at_1"], 0.0);
        assert_eq!(j["b"]["recall_at_3"], 0.25);
        assert_eq!(j["b"]["hit_at_3"], 0.5);
        assert_eq!(j["overall"]["recall_at_5"], 0.5);
        assert_eq!(j["overall"]["hit_at_1"], 0.3333);
    }
}
