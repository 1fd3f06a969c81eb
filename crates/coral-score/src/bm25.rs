//! BM25 over an inverted index that is kept up to date one document at a time.

use std::collections::{HashMap, HashSet};

use crate::terms::{for_each_keyword_term, keyword_terms};

mod parts;

/// BM25 parameters; the default is `k1 = 1.5`, `b = 0.75` (docs/timeline.md, "Retrieval").
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Bm25Params {
    /// Term-frequency saturation.
    pub k1: f64,
    /// Length normalisation, 0 (none) to 1 (full).
    pub b: f64,
}

impl Default for Bm25Params {
    fn default() -> Self {
        Bm25Params { k1: 1.5, b: 0.75 }
    }
}

impl Bm25Params {
    /// The inverse document frequency of a term `df` of `n_docs` documents contain:
    /// `ln(1 + (N − n(t) + 0.5) / (n(t) + 0.5))`, always positive. The one formula of
    /// [`Bm25Index`] and of the scores a database backend computes from its own postings
    /// (docs/postgres.md, "Keyword retrieval"), so both rank alike.
    ///
    /// ```
    /// use coral_score::Bm25Params;
    /// assert!((Bm25Params::idf(1.0, 1.0) - (1.0f64 + 0.5 / 1.5).ln()).abs() < 1e-12);
    /// ```
    pub fn idf(n_docs: f64, df: f64) -> f64 {
        (1.0 + (n_docs - df + 0.5) / (df + 0.5)).ln()
    }

    /// The saturated term-frequency part of one (term, document) pair: `tf·(k1 + 1) / (tf +
    /// k1·(1 − b + b·len/avglen))` for a term occurring `tf` times in a document of `len`
    /// terms, the average length being `avg_len` (no length normalisation when it is 0).
    ///
    /// ```
    /// use coral_score::Bm25Params;
    /// let p = Bm25Params::default();
    /// assert_eq!(p.term_part(1, 4, 4.0), 1.0); // an average document, one occurrence
    /// ```
    pub fn term_part(&self, tf: u32, len: u32, avg_len: f64) -> f64 {
        let tf = f64::from(tf);
        let norm = if avg_len > 0.0 {
            1.0 - self.b + self.b * f64::from(len) / avg_len
        } else {
            1.0
        };
        tf * (self.k1 + 1.0) / (tf + self.k1 * norm)
    }
}

/// A weighted set of query terms.
///
/// Each distinct term carries one weight; adding a term again adds to its weight. Texts are
/// split with [`keyword_terms`], and a term repeated within one text counts once, so a long
/// query that says a word ten times does not weigh it ten times (MemCore does the same).
///
/// ```
/// use coral_score::Bm25Query;
/// let mut q = Bm25Query::from_text("我喜欢可乐, 可乐!");
/// q.add_text("可乐", 3.0); // an entity anchor, weighted 3×
/// assert!(q.terms().contains(&("可乐".to_string(), 4.0)));
/// assert!(q.terms().contains(&("喜欢".to_string(), 1.0)));
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Bm25Query {
    /// Distinct terms in first-seen order.
    terms: Vec<(String, f64)>,
    /// Term -> index in `terms`.
    index: HashMap<String, usize>,
}

impl Bm25Query {
    /// An empty query.
    pub fn new() -> Self {
        Bm25Query::default()
    }

    /// The distinct terms of `text`, each with weight 1.
    pub fn from_text(text: &str) -> Self {
        let mut query = Bm25Query::new();
        query.add_text(text, 1.0);
        query
    }

    /// Adds `weight` to each distinct term of `text`.
    pub fn add_text(&mut self, text: &str, weight: f64) -> &mut Self {
        let mut seen: HashSet<String> = HashSet::new();
        for_each_keyword_term(text, |term| {
            if !seen.contains(term) {
                seen.insert(term.to_owned());
                self.add_term(term, weight);
            }
        });
        self
    }

    /// Adds `weight` to one term, taken as it is (not normalised or split).
    pub fn add_term(&mut self, term: &str, weight: f64) -> &mut Self {
        match self.index.get(term) {
            Some(&i) => self.terms[i].1 += weight,
            None => {
                self.index.insert(term.to_owned(), self.terms.len());
                self.terms.push((term.to_owned(), weight));
            }
        }
        self
    }

    /// The distinct terms with their weights, in first-seen order.
    pub fn terms(&self) -> &[(String, f64)] {
        &self.terms
    }

    /// Whether the query has no terms.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }
}

/// One document's entry in a term's posting list. The document length rides along so that
/// scoring walks posting lists only.
#[derive(Clone, Copy, Debug)]
struct Posting {
    doc: u32,
    tf: u32,
    len: u32,
}

/// What the index remembers of a document in order to remove it.
#[derive(Clone, Debug)]
struct Doc {
    len: u32,
    /// (term id, position of this document in that term's posting list), sorted by term id.
    terms: Vec<(u32, u32)>,
}

/// An inverted index for BM25, built incrementally: documents are added and removed by a
/// caller-chosen `u32` id (a row number, a slot) and queries are scored against the current
/// contents. Corpus statistics (document count, average length, document frequencies) are over
/// every document in the index.
///
/// Adding a document costs O(its distinct terms); removing one the same (posting lists are
/// unordered and patched with `swap_remove`); scoring costs O(the postings of the query's
/// terms). Memory: about 20 bytes per (document, distinct term) pair plus the vocabulary.
///
/// ```
/// use coral_score::{Bm25Index, Bm25Params, Bm25Query};
/// let mut index = Bm25Index::new();
/// index.insert_text(7, "我最喜欢喝可乐");
/// index.insert_text(9, "今天加班到很晚");
/// let hits = index.search(&Bm25Query::from_text("可乐"), Bm25Params::default(), 10, |_| true);
/// assert_eq!(hits.len(), 1);
/// assert_eq!(hits[0].0, 7);
/// index.remove(7);
/// assert!(index.search(&Bm25Query::from_text("可乐"), Bm25Params::default(), 10, |_| true).is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Bm25Index {
    term_ids: HashMap<Box<str>, u32>,
    /// Term id -> term, for freeing ids whose posting list empties.
    names: Vec<Box<str>>,
    postings: Vec<Vec<Posting>>,
    free_terms: Vec<u32>,
    docs: HashMap<u32, Doc>,
    /// Sum of the lengths of all documents.
    total_len: u64,
    /// One more than the largest document id ever inserted (sizes the dense accumulator).
    doc_bound: u64,
    /// Dense accumulators of earlier searches, for the next.
    scratch: ScratchPool,
}

impl Bm25Index {
    /// An empty index.
    pub fn new() -> Self {
        Bm25Index::default()
    }

    /// Number of documents.
    pub fn len(&self) -> usize {
        self.docs.len()
    }

    /// Whether the index holds no document.
    pub fn is_empty(&self) -> bool {
        self.docs.is_empty()
    }

    /// Whether document `doc` is in the index.
    pub fn contains(&self, doc: u32) -> bool {
        self.docs.contains_key(&doc)
    }

    /// Number of distinct terms over all documents.
    pub fn vocabulary(&self) -> usize {
        self.term_ids.len()
    }

    /// Sum of all document lengths, in terms.
    pub fn total_len(&self) -> u64 {
        self.total_len
    }

    /// Length of document `doc` in terms.
    pub fn doc_len(&self, doc: u32) -> Option<u32> {
        self.docs.get(&doc).map(|d| d.len)
    }

    /// The distinct terms of document `doc` with their frequencies, sorted by term.
    pub fn doc_terms(&self, doc: u32) -> Option<Vec<(&str, u32)>> {
        let d = self.docs.get(&doc)?;
        let mut terms: Vec<(&str, u32)> = d
            .terms
            .iter()
            .map(|&(t, pos)| {
                let tf = self.postings[t as usize][pos as usize].tf;
                (&*self.names[t as usize], tf)
            })
            .collect();
        terms.sort_unstable();
        Some(terms)
    }

    /// Adds document `doc` split with [`keyword_terms`], replacing any document with that id.
    pub fn insert_text(&mut self, doc: u32, text: &str) {
        self.insert(doc, keyword_terms(text));
    }

    /// Adds document `doc` as a list of terms (duplicates count), replacing any document with
    /// that id. A document with no terms still counts in the corpus statistics.
    pub fn insert<I, S>(&mut self, doc: u32, terms: I)
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.remove(doc);
        let terms: Vec<S> = terms.into_iter().collect();
        let len = u32::try_from(terms.len()).unwrap_or(u32::MAX);
        let mut counts: HashMap<&str, u32> = HashMap::with_capacity(terms.len());
        for term in &terms {
            let tf = counts.entry(term.as_ref()).or_insert(0);
            *tf = tf.saturating_add(1);
        }
        let mut entries = Vec::with_capacity(counts.len());
        for (term, tf) in counts {
            let id = self.term_id(term);
            let list = &mut self.postings[id as usize];
            entries.push((id, list.len() as u32));
            list.push(Posting { doc, tf, len });
        }
        entries.sort_unstable_by_key(|&(id, _)| id);
        self.docs.insert(
            doc,
            Doc {
                len,
                terms: entries,
            },
        );
        self.total_len += u64::from(len);
        self.doc_bound = self.doc_bound.max(u64::from(doc) + 1);
    }

    /// Removes document `doc`; false when it was not in the index.
    pub fn remove(&mut self, doc: u32) -> bool {
        let Some(removed) = self.docs.remove(&doc) else {
            return false;
        };
        self.total_len -= u64::from(removed.len);
        for (term, pos) in removed.terms {
            let list = &mut self.postings[term as usize];
            list.swap_remove(pos as usize);
            if let Some(moved) = list.get(pos as usize) {
                // The last posting now sits at `pos`: tell its document.
                let entry = self
                    .docs
                    .get_mut(&moved.doc)
                    .expect("every posting belongs to a document in the index");
                let i = entry
                    .terms
                    .binary_search_by_key(&term, |&(t, _)| t)
                    .expect("a document lists every term it has a posting for");
                entry.terms[i].1 = pos;
            } else if list.is_empty() {
                let name = std::mem::take(&mut self.names[term as usize]);
                self.term_ids.remove(&name);
                self.free_terms.push(term);
            }
        }
        if self.docs.is_empty() {
            self.doc_bound = 0;
        }
        true
    }

    /// Removes every document.
    pub fn clear(&mut self) {
        *self = Bm25Index::default();
    }

    /// BM25 score of every document sharing a term with the query, in no particular order.
    ///
    /// `score(d) = Σ w(t) · idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·len(d)/avglen))` over the
    /// query's terms `t` with weight `w(t)`, where `idf(t) = ln(1 + (N − n(t) + 0.5) /
    /// (n(t) + 0.5))` (always positive), `N` the number of documents and `n(t)` the number
    /// containing `t`. Terms with a zero or non-finite weight are ignored.
    pub fn scores(&self, query: &Bm25Query, params: Bm25Params) -> Vec<(u32, f64)> {
        self.score_sheet(query, params).iter().collect()
    }

    /// The scores [`Bm25Index::scores`] lists, kept where the walk summed them (a pooled dense
    /// array at a million documents) so that a caller can pass over them once and look single
    /// documents up ([`Bm25Scores::get`]) without a list of every score. The accumulator goes
    /// back to the index's pool when the sheet is dropped.
    ///
    /// ```
    /// use coral_score::{Bm25Index, Bm25Params, Bm25Query};
    /// let mut index = Bm25Index::new();
    /// index.insert_text(0, "可乐 雪碧");
    /// index.insert_text(1, "雪碧");
    /// let q = Bm25Query::from_text("可乐");
    /// let sheet = index.score_sheet(&q, Bm25Params::default());
    /// assert_eq!(sheet.len(), 1);
    /// assert_eq!(sheet.get(0), index.score(&q, Bm25Params::default(), 0));
    /// assert_eq!(sheet.get(1), 0.0);
    /// ```
    pub fn score_sheet(&self, query: &Bm25Query, params: Bm25Params) -> Bm25Scores<'_> {
        let n_docs = self.docs.len() as f64;
        if n_docs == 0.0 {
            return Bm25Scores {
                scratch: &self.scratch,
                sums: Sums::Sparse(HashMap::new()),
            };
        }
        let avg_len = self.total_len as f64 / n_docs;
        let mut parts = TermParts::new(params, avg_len);
        if self.doc_bound > 4 * self.docs.len() as u64 + 1024 {
            let mut acc: HashMap<u32, f64> = HashMap::new();
            self.walk(query, n_docs, &mut parts, |doc, x| {
                *acc.entry(doc).or_insert(0.0) += x
            });
            return Bm25Scores {
                scratch: &self.scratch,
                sums: Sums::Sparse(acc),
            };
        }
        // A dense accumulator taken from the pool: allocating and zeroing 9 MB a search at a
        // million documents cost more page faults than the walk.
        let mut dense = self.scratch.take(self.doc_bound as usize);
        let Dense {
            scores,
            stamps,
            epoch,
            touched,
        } = &mut dense;
        let epoch = *epoch;
        self.walk(query, n_docs, &mut parts, |doc, x| {
            add_to(scores, stamps, epoch, touched, doc, x);
        });
        Bm25Scores {
            scratch: &self.scratch,
            sums: Sums::Dense(dense),
        }
    }

    /// Calls `add(doc, w(t)·idf(t)·part)` for every posting of every query term, term by term
    /// in the query's order (so that sums come out the same however they are accumulated).
    fn walk(
        &self,
        query: &Bm25Query,
        n_docs: f64,
        parts: &mut TermParts,
        mut add: impl FnMut(u32, f64),
    ) {
        for (term, weight) in query.terms() {
            if *weight == 0.0 || !weight.is_finite() {
                continue;
            }
            let Some(&id) = self.term_ids.get(term.as_str()) else {
                continue;
            };
            let list = &self.postings[id as usize];
            let df = list.len() as f64;
            let idf = Bm25Params::idf(n_docs, df);
            // `weight * idf * part` multiplies left to right: the factor first, as here.
            let factor = weight * idf;
            if list.len() < TABLE_MIN_POSTINGS {
                for p in list {
                    add(p.doc, factor * parts.get(p));
                }
                continue;
            }
            // A common word: its contribution per `(tf, len)` pair from a table, with no
            // test of the memo per posting (the same products, so the same sums).
            let (avg_len, params) = (parts.avg_len, parts.params);
            let table = parts.table(factor);
            for p in list {
                let i = memo_index(p);
                let x = match table.get(i) {
                    Some(&x) => x,
                    None => factor * term_weight(p, avg_len, params),
                };
                add(p.doc, x);
            }
        }
    }

    /// BM25 scores computed as if the index held only `candidates`: the document count,
    /// average length and document frequencies are those of the candidates, so a filter applied
    /// before scoring (a namespace, a time window) gives the scores a corpus of just those
    /// documents would. Ids not in the index are ignored, duplicates count once. Returns the
    /// candidates sharing a term with the query, in no particular order.
    ///
    /// Costs O(candidates + postings of the query's terms).
    ///
    /// ```
    /// use coral_score::{Bm25Index, Bm25Params, Bm25Query};
    /// let mut index = Bm25Index::new();
    /// index.insert_text(0, "可乐");
    /// index.insert_text(1, "可乐 雪碧");
    /// index.insert_text(2, "雪碧");
    /// let q = Bm25Query::from_text("雪碧");
    /// let p = Bm25Params::default();
    /// let mut small = Bm25Index::new();
    /// small.insert_text(1, "可乐 雪碧");
    /// small.insert_text(2, "雪碧");
    /// let mut within = index.scores_within(&q, p, &[1, 2]);
    /// within.sort_by_key(|h| h.0);
    /// let mut alone = small.scores(&q, p);
    /// alone.sort_by_key(|h| h.0);
    /// assert_eq!(within, alone);
    /// ```
    pub fn scores_within(
        &self,
        query: &Bm25Query,
        params: Bm25Params,
        candidates: &[u32],
    ) -> Vec<(u32, f64)> {
        let mut member = vec![false; self.doc_bound as usize];
        let mut n_docs = 0u64;
        let mut total_len = 0u64;
        for &doc in candidates {
            let Some(d) = self.docs.get(&doc) else {
                continue;
            };
            if !member[doc as usize] {
                member[doc as usize] = true;
                n_docs += 1;
                total_len += u64::from(d.len);
            }
        }
        if n_docs == 0 {
            return Vec::new();
        }
        let n = n_docs as f64;
        let avg_len = total_len as f64 / n;
        let mut acc = Accumulator::new(self.doc_bound, self.docs.len());
        for (term, weight) in query.terms() {
            if *weight == 0.0 || !weight.is_finite() {
                continue;
            }
            let Some(&id) = self.term_ids.get(term.as_str()) else {
                continue;
            };
            let list = &self.postings[id as usize];
            let df = list.iter().filter(|p| member[p.doc as usize]).count() as f64;
            if df == 0.0 {
                continue;
            }
            let idf = Bm25Params::idf(n, df);
            for p in list.iter().filter(|p| member[p.doc as usize]) {
                acc.add(p.doc, weight * idf * term_weight(p, avg_len, params));
            }
        }
        acc.into_vec()
    }

    /// BM25 score of one document (0 when absent or sharing no term).
    pub fn score(&self, query: &Bm25Query, params: Bm25Params, doc: u32) -> f64 {
        let Some(d) = self.docs.get(&doc) else {
            return 0.0;
        };
        let n_docs = self.docs.len() as f64;
        let avg_len = self.total_len as f64 / n_docs;
        let mut score = 0.0;
        for (term, weight) in query.terms() {
            if *weight == 0.0 || !weight.is_finite() {
                continue;
            }
            let Some(&id) = self.term_ids.get(term.as_str()) else {
                continue;
            };
            let Ok(i) = d.terms.binary_search_by_key(&id, |&(t, _)| t) else {
                continue;
            };
            let list = &self.postings[id as usize];
            let df = list.len() as f64;
            let idf = Bm25Params::idf(n_docs, df);
            score += weight * idf * term_weight(&list[d.terms[i].1 as usize], avg_len, params);
        }
        score
    }

    /// The share of the query's term weight document `doc` contains: `Σ w(t)·idf(t)` over the
    /// query terms it has, divided by the same sum over the query's terms; 0 when the document
    /// is absent or shares nothing; idf as in [`Bm25Index::scores`], over the index.
    ///
    /// Terms no document has count in the divisor only with `count_absent` (as if one document
    /// in `N + 1` had them): a question's words are all part of what it asks, so a memory that
    /// matches one word of five ("the user") is a partial match even if the other four are in
    /// no memory; a conversation's lines are mostly chatter, whose words nobody wrote down.
    ///
    /// ```
    /// use coral_score::{Bm25Index, Bm25Query};
    /// let mut index = Bm25Index::new();
    /// index.insert_text(0, "plane trees in the park");
    /// index.insert_text(1, "flight to tokyo");
    /// let q = Bm25Query::from_text("plane to tokyo japan");
    /// let (c0, c1) = (index.coverage(&q, 0, false), index.coverage(&q, 1, false));
    /// assert!(c1 > c0 && c0 > 0.0);
    /// assert!((c0 + c1 - 1.0).abs() < 1e-12); // between them, every term the index has
    /// assert!(index.coverage(&q, 1, true) < c1); // "japan" is in no document
    /// ```
    pub fn coverage(&self, query: &Bm25Query, doc: u32, count_absent: bool) -> f64 {
        self.coverage_of(query, count_absent)(doc)
    }

    /// [`Bm25Index::coverage`] for many documents: the query's terms are looked up once, and
    /// the function returned costs a binary search per term and document.
    pub fn coverage_of(&self, query: &Bm25Query, count_absent: bool) -> impl Fn(u32) -> f64 + '_ {
        let n_docs = self.docs.len() as f64;
        let idf = |df: f64| Bm25Params::idf(n_docs, df);
        let mut total = 0.0;
        let mut masses: Vec<(u32, f64)> = Vec::new();
        for (term, weight) in query.terms() {
            if *weight <= 0.0 || !weight.is_finite() {
                continue;
            }
            match self.term_ids.get(term.as_str()) {
                Some(&id) => {
                    let mass = weight * idf(self.postings[id as usize].len() as f64);
                    total += mass;
                    masses.push((id, mass));
                }
                None if count_absent => total += weight * idf(0.0),
                None => {}
            }
        }
        move |doc| {
            let Some(d) = self.docs.get(&doc) else {
                return 0.0;
            };
            if total <= 0.0 {
                return 0.0;
            }
            let matched: f64 = masses
                .iter()
                .filter(|(id, _)| d.terms.binary_search_by_key(id, |&(t, _)| t).is_ok())
                .map(|(_, mass)| mass)
                .sum();
            matched / total
        }
    }

    /// The best `k` documents with a positive score among those `accept` lets through, best
    /// first; equal scores rank the smaller id first.
    pub fn search(
        &self,
        query: &Bm25Query,
        params: Bm25Params,
        k: usize,
        mut accept: impl FnMut(u32) -> bool,
    ) -> Vec<(u32, f64)> {
        let mut hits: Vec<(u32, f64)> = self
            .scores(query, params)
            .into_iter()
            .filter(|&(doc, score)| score > 0.0 && accept(doc))
            .collect();
        let order = |a: &(u32, f64), b: &(u32, f64)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > k {
            if k == 0 {
                return Vec::new();
            }
            hits.select_nth_unstable_by(k - 1, order);
            hits.truncate(k);
        }
        hits.sort_unstable_by(order);
        hits
    }

    fn term_id(&mut self, term: &str) -> u32 {
        if let Some(&id) = self.term_ids.get(term) {
            return id;
        }
        let name: Box<str> = term.into();
        let id = match self.free_terms.pop() {
            Some(id) => {
                self.names[id as usize] = name.clone();
                id
            }
            None => {
                self.names.push(name.clone());
                self.postings.push(Vec::new());
                (self.names.len() - 1) as u32
            }
        };
        self.term_ids.insert(name, id);
        id
    }
}

/// The saturated, length-normalised term frequency `tf·(k1 + 1) / (tf + k1·(1 − b + b·len/avg))`.
#[inline]
fn term_weight(p: &Posting, avg_len: f64, params: Bm25Params) -> f64 {
    params.term_part(p.tf, p.len, avg_len)
}

/// The term-frequency parts of one search, memoised by `(tf, len)`: a posting's part depends
/// on nothing else while the average length is fixed, and most postings share a few small
/// pairs, so a search at a million documents divides once per pair instead of once per
/// posting. The memo holds exactly what [`Bm25Params::term_part`] returns.
struct TermParts {
    params: Bm25Params,
    avg_len: f64,
    memo: Vec<f64>,
    /// A common word's contributions ([`TermParts::table`]).
    table: Vec<f64>,
}

/// Term frequencies and lengths memoised: `tf` in 1..=8, `len` below 256.
const MEMO_TF: u32 = 8;
const MEMO_LEN: u32 = 256;

impl TermParts {
    fn new(params: Bm25Params, avg_len: f64) -> TermParts {
        TermParts {
            params,
            avg_len,
            memo: Vec::new(),
            table: Vec::new(),
        }
    }

    #[inline]
    fn get(&mut self, p: &Posting) -> f64 {
        let i = memo_index(p);
        if i == usize::MAX {
            return term_weight(p, self.avg_len, self.params);
        }
        if self.memo.is_empty() {
            self.memo = vec![f64::NAN; (MEMO_TF * MEMO_LEN) as usize];
        }
        let slot = &mut self.memo[i];
        if slot.is_nan() {
            *slot = term_weight(p, self.avg_len, self.params);
        }
        *slot
    }

    /// `factor ×` every memoised part, by [`memo_index`]: a common word's contributions.
    fn table(&mut self, factor: f64) -> &[f64] {
        if self.memo.len() != (MEMO_TF * MEMO_LEN) as usize || self.memo.iter().any(|x| x.is_nan())
        {
            self.memo = (0..MEMO_TF * MEMO_LEN)
                .map(|i| {
                    self.params
                        .term_part(i / MEMO_LEN + 1, i % MEMO_LEN, self.avg_len)
                })
                .collect();
        }
        self.table.clear();
        self.table
            .extend(self.memo.iter().map(|&part| factor * part));
        &self.table
    }
}

/// Adds `x` to document `doc`'s sum. A sum starts at its first term (`0.0 + x` is `x`), so
/// nothing is cleared between searches.
#[inline]
fn add_to(
    scores: &mut [f64],
    stamps: &mut [u32],
    epoch: u32,
    touched: &mut Vec<u32>,
    doc: u32,
    x: f64,
) {
    let d = doc as usize;
    if stamps[d] == epoch {
        scores[d] += x;
    } else {
        stamps[d] = epoch;
        touched.push(doc);
        scores[d] = x;
    }
}

/// A posting's place in the memo of term parts, `usize::MAX` when its pair is not memoised.
#[inline]
fn memo_index(p: &Posting) -> usize {
    if p.tf.wrapping_sub(1) < MEMO_TF && p.len < MEMO_LEN {
        ((p.tf - 1) * MEMO_LEN + p.len) as usize
    } else {
        usize::MAX
    }
}

/// Posting lists at least this long are walked with a table of their contributions (filling
/// it costs 2,048 products, a few microseconds).
const TABLE_MIN_POSTINGS: usize = 4096;

/// One search's BM25 sums by document ([`Bm25Index::score_sheet`]).
#[derive(Debug)]
pub struct Bm25Scores<'a> {
    scratch: &'a ScratchPool,
    sums: Sums,
}

#[derive(Debug)]
enum Sums {
    Dense(Dense),
    Sparse(HashMap<u32, f64>),
}

impl Bm25Scores<'_> {
    /// How many documents share a term with the query.
    pub fn len(&self) -> usize {
        match &self.sums {
            Sums::Dense(d) => d.touched.len(),
            Sums::Sparse(m) => m.len(),
        }
    }

    /// Whether no document shares a term with the query.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A document's score: the number [`Bm25Index::score`] gives it, 0 when it shares no term.
    #[inline]
    pub fn get(&self, doc: u32) -> f64 {
        match &self.sums {
            Sums::Dense(d) => match d.stamps.get(doc as usize) {
                Some(&stamp) if stamp == d.epoch => d.scores[doc as usize],
                _ => 0.0,
            },
            Sums::Sparse(m) => m.get(&doc).copied().unwrap_or(0.0),
        }
    }

    /// Every document sharing a term with the query with its score, in the order the walk
    /// first reached them (dense) or in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (u32, f64)> + '_ {
        let (dense, sparse) = match &self.sums {
            Sums::Dense(d) => (Some(d), None),
            Sums::Sparse(m) => (None, Some(m)),
        };
        let dense = dense
            .into_iter()
            .flat_map(|d| d.touched.iter().map(|&doc| (doc, d.scores[doc as usize])));
        let sparse = sparse
            .into_iter()
            .flat_map(|m| m.iter().map(|(&doc, &score)| (doc, score)));
        dense.chain(sparse)
    }
}

impl Drop for Bm25Scores<'_> {
    fn drop(&mut self) {
        if let Sums::Dense(dense) = &mut self.sums {
            self.scratch.give(std::mem::take(dense));
        }
    }
}

/// A dense accumulator: sums by document, the search that last wrote each (a document's sum
/// is this search's when its stamp is the accumulator's epoch, stale otherwise), and the
/// documents hit, in the order first hit. Stamps instead of flags: the next search starts
/// with a new epoch instead of clearing what this one touched (at a million documents that
/// pass cost an eighth of a search).
#[derive(Debug, Default)]
struct Dense {
    scores: Vec<f64>,
    stamps: Vec<u32>,
    epoch: u32,
    touched: Vec<u32>,
}

/// Accumulators kept between searches (cloning an index starts an empty pool).
#[derive(Debug, Default)]
struct ScratchPool(std::sync::Mutex<Vec<Dense>>);

impl Clone for ScratchPool {
    fn clone(&self) -> Self {
        ScratchPool::default()
    }
}

impl ScratchPool {
    /// An accumulator of at least `n` documents, none of them hit.
    fn take(&self, n: usize) -> Dense {
        let mut dense = self
            .0
            .lock()
            .ok()
            .and_then(|mut pool| pool.pop())
            .unwrap_or_default();
        if dense.scores.len() < n {
            dense.scores.resize(n, 0.0);
            dense.stamps.resize(n, 0);
        }
        dense.touched.clear();
        dense.epoch = dense.epoch.wrapping_add(1);
        if dense.epoch == 0 {
            // Four billion searches later: stamps of the first epoch would look current.
            dense.stamps.fill(0);
            dense.epoch = 1;
        }
        dense
    }

    /// Keeps the accumulator for the next search.
    fn give(&self, dense: Dense) {
        if let Ok(mut pool) = self.0.lock() {
            // Two at most: searches of one index rarely overlap more.
            if pool.len() < 2 {
                pool.push(dense);
            }
        }
    }
}

/// Per-document score sums: a dense array when document ids are compact, a map otherwise.
enum Accumulator {
    Dense {
        scores: Vec<f64>,
        hit: Vec<bool>,
        touched: Vec<u32>,
    },
    Sparse(HashMap<u32, f64>),
}

impl Accumulator {
    fn new(doc_bound: u64, docs: usize) -> Self {
        if doc_bound <= 4 * docs as u64 + 1024 {
            let n = doc_bound as usize;
            Accumulator::Dense {
                scores: vec![0.0; n],
                hit: vec![false; n],
                touched: Vec::new(),
            }
        } else {
            Accumulator::Sparse(HashMap::new())
        }
    }

    #[inline]
    fn add(&mut self, doc: u32, amount: f64) {
        match self {
            Accumulator::Dense {
                scores,
                hit,
                touched,
            } => {
                let d = doc as usize;
                if !hit[d] {
                    hit[d] = true;
                    touched.push(doc);
                }
                scores[d] += amount;
            }
            Accumulator::Sparse(map) => *map.entry(doc).or_insert(0.0) += amount,
        }
    }

    fn into_vec(self) -> Vec<(u32, f64)> {
        match self {
            Accumulator::Dense {
                scores, touched, ..
            } => touched
                .into_iter()
                .map(|d| (d, scores[d as usize]))
                .collect(),
            Accumulator::Sparse(map) => map.into_iter().collect(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rrf;
    use proptest::prelude::*;
    use serde_json::Value;
    use std::collections::BTreeMap;

    /// A common word (more postings than the table threshold) with every kind of `(tf, len)`
    /// pair, memoised or not, beside rare words: the sheet's sums, the listed scores and the
    /// one-document score are the same numbers, bit for bit.
    #[test]
    fn common_words_walked_by_table_score_as_one_document_does() {
        let mut index = Bm25Index::new();
        let docs = 3 * TABLE_MIN_POSTINGS as u32;
        for doc in 0..docs {
            let tf = 1 + doc % 11; // 9 and above are not memoised
            let filler = (doc * 7) % 300; // lengths of 256 and more are not memoised either
            let mut terms: Vec<String> = vec!["common".into(); tf as usize];
            terms.extend((0..filler).map(|i| format!("w{}", (doc + i) % 97)));
            if doc % 500 == 0 {
                terms.push("rare".into());
            }
            index.insert(doc, terms);
        }
        let mut query = Bm25Query::default();
        query.add_term("common", 1.0);
        query.add_term("rare", 2.5);
        query.add_term("w3", 0.5);
        let params = Bm25Params::default();
        let sheet = index.score_sheet(&query, params);
        assert_eq!(sheet.len(), docs as usize);
        for doc in 0..docs {
            assert_eq!(
                sheet.get(doc).to_bits(),
                index.score(&query, params, doc).to_bits(),
                "document {doc}"
            );
        }
        let listed: BTreeMap<u32, u64> = index
            .scores(&query, params)
            .into_iter()
            .map(|(d, s)| (d, s.to_bits()))
            .collect();
        assert_eq!(listed.len(), docs as usize);
        assert!(listed.iter().all(|(&d, &s)| s == sheet.get(d).to_bits()));
        drop(sheet);
        // The next search reuses the accumulator: what the last one summed is not carried.
        let mut rare = Bm25Query::default();
        rare.add_term("rare", 1.0);
        let again = index.score_sheet(&rare, params);
        assert_eq!(again.len(), (docs as usize).div_ceil(500));
        for doc in 0..docs {
            assert_eq!(
                again.get(doc).to_bits(),
                index.score(&rare, params, doc).to_bits()
            );
        }
    }

    /// After the last epoch the stamps are cleared, so no stale sum looks current.
    #[test]
    fn accumulator_epochs_wrap_without_stale_sums() {
        let pool = ScratchPool::default();
        let mut dense = pool.take(4);
        dense.epoch = u32::MAX;
        dense.stamps.fill(u32::MAX);
        dense.scores.fill(7.0);
        pool.give(dense);
        let dense = pool.take(4);
        assert_eq!(dense.epoch, 1);
        assert!(dense.stamps.iter().all(|&s| s != dense.epoch));
    }

    fn golden() -> Value {
        serde_json::from_str(include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/memcore_test_vectors.json"
        )))
        .unwrap()
    }

    /// MemCore's BM25 corpus: each document is its text plus its metadata fields.
    fn golden_index(data: &Value) -> (Bm25Index, Vec<String>) {
        let mut index = Bm25Index::new();
        let mut ids = Vec::new();
        for (doc, entry) in data["bm25_corpus"].as_array().unwrap().iter().enumerate() {
            let mut terms = keyword_terms(entry["text"].as_str().unwrap());
            for value in entry["metadata"].as_object().unwrap().values() {
                terms.extend(keyword_terms(value.as_str().unwrap()));
            }
            index.insert(doc as u32, terms);
            ids.push(entry["source_id"].as_str().unwrap().to_string());
        }
        (index, ids)
    }

    fn golden_query(data: &Value) -> Bm25Query {
        let q = &data["bm25_query"];
        let mut query = Bm25Query::from_text(q["query_text"].as_str().unwrap());
        for anchor in q["entity_anchors"].as_array().unwrap() {
            query.add_text(anchor.as_str().unwrap(), 3.0);
        }
        assert!(q["topic_terms"].as_array().unwrap().is_empty());
        query
    }

    /// MemCore's exact BM25 scores and order, entity anchors weighted 3× (docs/timeline.md).
    #[test]
    fn golden_memcore_bm25_scores() {
        let data = golden();
        let (index, ids) = golden_index(&data);
        let query = golden_query(&data);
        let hits = index.search(&query, Bm25Params::default(), 10, |_| true);
        let expected = data["bm25_results"].as_array().unwrap();
        assert_eq!(hits.len(), expected.len(), "{hits:?}");
        for ((doc, score), e) in hits.iter().zip(expected) {
            assert_eq!(ids[*doc as usize], e["source_id"].as_str().unwrap());
            let want = e["tag_score"].as_f64().unwrap();
            assert!((score - want).abs() < 1e-9, "{score} vs {want}");
            assert!((index.score(&query, Bm25Params::default(), *doc) - want).abs() < 1e-9);
        }
    }

    /// MemCore's fused order: the hashed-vector ranking and the BM25 ranking, RRF k = 60.
    #[test]
    fn golden_memcore_rrf_order() {
        let data = golden();
        let (index, ids) = golden_index(&data);
        let doc_of = |id: &str| ids.iter().position(|i| i == id).unwrap() as u32;
        let semantic: Vec<u32> = data["semantic_results_hashed128"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| doc_of(e["source_id"].as_str().unwrap()))
            .collect();
        let keyword: Vec<u32> = index
            .search(&golden_query(&data), Bm25Params::default(), 10, |_| true)
            .iter()
            .map(|&(doc, _)| doc)
            .collect();
        let fused = rrf(&[&semantic, &keyword], 60.0);
        let expected = data["rrf_k60_results"].as_array().unwrap();
        assert_eq!(fused.len(), expected.len());
        for ((doc, score), e) in fused.iter().zip(expected) {
            assert_eq!(ids[*doc as usize], e["source_id"].as_str().unwrap());
            assert!((score - e["rrf_score"].as_f64().unwrap()).abs() < 1e-12);
            let dual = semantic.contains(doc) && keyword.contains(doc);
            assert_eq!(dual, e["dual_hit"].as_bool().unwrap());
        }
    }

    #[test]
    fn edge_cases() {
        let p = Bm25Params::default();
        let mut index = Bm25Index::new();
        let q = Bm25Query::from_text("coral memory");
        assert!(index.scores(&q, p).is_empty());
        assert_eq!(index.score(&q, p, 3), 0.0);
        index.insert(3, Vec::<String>::new());
        assert_eq!(index.len(), 1);
        assert!(index.search(&q, p, 5, |_| true).is_empty());
        index.insert_text(1, "coral memory coral");
        index.insert_text(2, "memory");
        assert_eq!(index.doc_terms(1).unwrap(), [("coral", 2), ("memory", 1)]);
        // Replacing a document drops its old terms.
        index.insert_text(2, "heat");
        assert_eq!(index.doc_terms(2).unwrap(), [("heat", 1)]);
        assert_eq!(index.total_len(), 4);
        let hits = index.search(&q, p, 5, |_| true);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [1]);
        assert!(index.search(&q, p, 0, |_| true).is_empty());
        assert!(index.search(&q, p, 5, |d| d != 1).is_empty());
        let mut nan = Bm25Query::new();
        nan.add_term("coral", f64::NAN).add_term("memory", 0.0);
        assert!(index.scores(&nan, p).is_empty());
        assert!(index.remove(1));
        assert!(!index.remove(1));
        assert_eq!(index.vocabulary(), 1);
        index.clear();
        assert!(index.is_empty());
        // Sparse ids take the map accumulator and score the same.
        index.insert_text(u32::MAX, "coral");
        index.insert_text(0, "coral reef");
        let hits = index.search(&q, p, 5, |_| true);
        assert_eq!(hits.iter().map(|h| h.0).collect::<Vec<_>>(), [u32::MAX, 0]);
    }

    /// Everything observable about an index, independent of term ids and posting order.
    fn canonical(index: &Bm25Index) -> BTreeMap<u32, Vec<(String, u32)>> {
        let docs: BTreeMap<u32, Vec<(String, u32)>> = index
            .docs
            .keys()
            .map(|&d| {
                let terms = index.doc_terms(d).unwrap();
                (
                    d,
                    terms.into_iter().map(|(t, f)| (t.to_string(), f)).collect(),
                )
            })
            .collect();
        // Structural invariants: postings and document entries point at each other.
        let mut postings = 0;
        for (t, list) in index.postings.iter().enumerate() {
            postings += list.len();
            for (pos, p) in list.iter().enumerate() {
                let d = &index.docs[&p.doc];
                assert_eq!(p.len, d.len);
                let i = d.terms.binary_search_by_key(&(t as u32), |e| e.0).unwrap();
                assert_eq!(d.terms[i].1 as usize, pos);
            }
            if list.is_empty() {
                assert!(index.free_terms.contains(&(t as u32)));
            } else {
                assert_eq!(index.term_ids[&index.names[t]], t as u32);
            }
        }
        assert_eq!(
            postings,
            index.docs.values().map(|d| d.terms.len()).sum::<usize>()
        );
        assert_eq!(
            index.term_ids.len() + index.free_terms.len(),
            index.names.len()
        );
        let total: u64 = index.docs.values().map(|d| u64::from(d.len)).sum();
        assert_eq!(index.total_len, total);
        docs
    }

    const WORDS: [&str; 8] = [
        "可乐", "咖啡", "coral", "memory", "日出", "爬山", "heat", "我们",
    ];

    proptest! {
        /// Any sequence of inserts and removals leaves the index equal to one built fresh from
        /// the surviving documents, with the same scores.
        #[test]
        fn incremental_equals_fresh(
            ops in proptest::collection::vec(
                (0u32..12, proptest::collection::vec(0usize..WORDS.len(), 0..6), any::<bool>()),
                0..60,
            ),
            query in proptest::collection::vec(0usize..WORDS.len(), 1..4),
        ) {
            let mut index = Bm25Index::new();
            let mut model: BTreeMap<u32, String> = BTreeMap::new();
            for (doc, words, remove) in ops {
                if remove {
                    prop_assert_eq!(index.remove(doc), model.remove(&doc).is_some());
                } else {
                    let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                    let text = text.join(" ");
                    index.insert_text(doc, &text);
                    model.insert(doc, text);
                }
            }
            let mut fresh = Bm25Index::new();
            for (&doc, text) in &model {
                fresh.insert_text(doc, text);
            }
            prop_assert_eq!(canonical(&index), canonical(&fresh));
            let words: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
            let q = Bm25Query::from_text(&words.join(" "));
            let p = Bm25Params::default();
            let mut a = index.scores(&q, p);
            let mut b = fresh.scores(&q, p);
            a.sort_by_key(|e| e.0);
            b.sort_by_key(|e| e.0);
            prop_assert_eq!(a.len(), b.len());
            for ((da, sa), (db, sb)) in a.iter().zip(&b) {
                prop_assert_eq!(da, db);
                prop_assert!((sa - sb).abs() < 1e-9);
                prop_assert!(sa.is_finite() && *sa > 0.0);
                prop_assert!((index.score(&q, p, *da) - sa).abs() < 1e-9);
            }
        }

        /// Scoring within a subset equals scoring an index of just that subset.
        #[test]
        fn within_a_subset_equals_an_index_of_it(
            docs in proptest::collection::vec(
                proptest::collection::vec(0usize..WORDS.len(), 0..6),
                1..20,
            ),
            keep in proptest::collection::vec(any::<bool>(), 20),
            query in proptest::collection::vec(0usize..WORDS.len(), 1..4),
        ) {
            let mut index = Bm25Index::new();
            let mut subset = Bm25Index::new();
            let mut candidates = Vec::new();
            for (doc, words) in docs.iter().enumerate() {
                let text: Vec<&str> = words.iter().map(|&w| WORDS[w]).collect();
                index.insert_text(doc as u32, &text.join(" "));
                if keep[doc] {
                    subset.insert_text(doc as u32, &text.join(" "));
                    candidates.push(doc as u32);
                    candidates.push(doc as u32); // duplicates count once
                }
            }
            candidates.push(999); // not in the index: ignored
            let words: Vec<&str> = query.iter().map(|&w| WORDS[w]).collect();
            let q = Bm25Query::from_text(&words.join(" "));
            let p = Bm25Params::default();
            let mut a = index.scores_within(&q, p, &candidates);
            let mut b = subset.scores(&q, p);
            a.sort_by_key(|e| e.0);
            b.sort_by_key(|e| e.0);
            prop_assert_eq!(a.len(), b.len());
            for ((da, sa), (db, sb)) in a.iter().zip(&b) {
                prop_assert_eq!(da, db);
                prop_assert!((sa - sb).abs() < 1e-9);
            }
        }
    }
}
