//! The text analysis of ranked search: keyword terms with English words stemmed, and queries
//! without function words.
//!
//! [`keyword_terms`] stays MemCore's tokeniser (its golden test); ranking indexes and queries
//! go through [`search_terms`], which folds English inflections onto one stem ([`stem`]), and
//! [`search_query`], which also drops function words ([`is_stop_term`]) from the query. Both
//! changes were measured with `cargo xtask eval` (BM25 alone, recall@5; docs/ranking.md):
//! stemming 41.3 → 45.7 on MADial en and 45.3 → 47.1 on LoCoMo dev; dropping function words
//! on top 54.7 and 52.5; Chinese function characters 54.2 → 56.3 on MADial zh.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::bm25::Bm25Query;
use crate::terms::for_each_keyword_term;

/// English function words a query is searched without: pronouns, articles, auxiliaries,
/// prepositions, conjunctions and question words. They carry no topic, and BM25's IDF only
/// damps them: a long query (a conversation) that says "you", "what" and "did" twenty times
/// otherwise ranks short chatter first. Written after stemming, as [`stem`] leaves them.
const ENGLISH_STOP: &[&str] = &[
    "a", "about", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
    "be", "been", "before", "being", "both", "but", "by", "can", "could", "d", "did", "do", "doe",
    "doing", "don", "down", "each", "few", "for", "from", "had", "has", "hav", "have", "he", "her",
    "here", "him", "his", "how", "i", "if", "im", "in", "into", "is", "it", "its", "just", "ll",
    "m", "may", "me", "might", "mine", "more", "most", "must", "my", "no", "not", "of", "off",
    "on", "only", "or", "other", "our", "out", "over", "own", "re", "s", "same", "shall", "she",
    "should", "so", "some", "such", "t", "than", "that", "the", "their", "them", "then", "there",
    "these", "they", "this", "those", "to", "too", "up", "us", "ve", "very", "was", "we", "were",
    "what", "when", "where", "which", "who", "whom", "whose", "why", "will", "with", "would",
    "you", "your",
];

/// Chinese function characters (particles, pronouns, copulas, common measure words and
/// prepositions), dropped from queries as single characters only: the bigrams that contain
/// them (`我们`, `喜欢`) stay.
const CHINESE_STOP: &str = "的了是我你他她它们在吗呢吧啊呀哦嗯和也都就还很这那有个一不没要会能说着过给让把被对到去来上下里么啥什";

/// Whether a search term is a function word (English, after [`stem`]) or a Chinese function
/// character, which [`search_query`] leaves out.
pub fn is_stop_term(term: &str) -> bool {
    let mut chars = term.chars();
    if let (Some(c), None) = (chars.next(), chars.clone().next())
        && CHINESE_STOP.contains(c)
    {
        return true;
    }
    ENGLISH_STOP.binary_search(&term).is_ok()
}

/// The stem of one lower-case word: English inflections folded (plurals, `-ed`, `-ing`,
/// `-ly`, `-er`), anything that is not a lower-case ASCII word of at least four letters left
/// as it is.
///
/// A light suffix stripper, not Porter's algorithm: it only has to map the forms of one word
/// onto one term, in documents and queries alike, and a stem need not be a word. Plurals go
/// first (`-ies` → `-y`, `-sses` → `-ss`, a final `s` unless after `s`, `u` or `i`), then one
/// of `-ingly`, `-edly`, `-ing`, `-ed` if three letters remain (a doubled final consonant
/// other than `l`, `s`, `z` undoubled: `planned` → `plan`), else `-ly` or `-er` if four remain.
///
/// ```
/// use coral_score::stem;
/// assert_eq!(stem("paintings"), "paint");
/// assert_eq!(stem("painted"), "paint");
/// assert_eq!(stem("stories"), "story");
/// assert_eq!(stem("planned"), "plan");
/// assert_eq!(stem("class"), "class");
/// assert_eq!(stem("café"), "café");
/// ```
pub fn stem(word: &str) -> Cow<'_, str> {
    if word.len() <= 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Cow::Borrowed(word);
    }
    let mut w: Cow<'_, str> = Cow::Borrowed(word);
    if let Some(base) = word.strip_suffix("ies").filter(|b| b.len() >= 2) {
        w = Cow::Owned(format!("{base}y"));
    } else if word.ends_with("sses") {
        w = Cow::Borrowed(&word[..word.len() - 2]);
    } else if word.ends_with('s')
        && !(word.ends_with("ss") || word.ends_with("us") || word.ends_with("is"))
    {
        w = Cow::Borrowed(&word[..word.len() - 1]);
    }
    if w.len() <= 4 {
        return w;
    }
    for suffix in ["ingly", "edly", "ing", "ed"] {
        if let Some(base) = w.strip_suffix(suffix).filter(|b| b.len() >= 3) {
            let bytes = base.as_bytes();
            let last = bytes[bytes.len() - 1];
            let undouble = bytes[bytes.len() - 2] == last && !matches!(last, b'l' | b's' | b'z');
            let keep = if undouble { base.len() - 1 } else { base.len() };
            return Cow::Owned(base[..keep].to_string());
        }
    }
    for suffix in ["ly", "er"] {
        if let Some(base) = w.strip_suffix(suffix).filter(|b| b.len() >= 4) {
            return Cow::Owned(base.to_string());
        }
    }
    w
}

/// Whether most of the letters of `text` are CJK (Chinese, Japanese, Korean): the language a
/// model must know for its vectors of this text to mean anything.
///
/// ```
/// assert!(coral_score::is_mostly_cjk("我最喜欢喝冰拿铁 latte"));
/// assert!(!coral_score::is_mostly_cjk("I like 拿铁"));
/// ```
pub fn is_mostly_cjk(text: &str) -> bool {
    let (mut cjk, mut other) = (0usize, 0usize);
    for c in text.chars() {
        if coral_base::is_cjk(c) {
            cjk += 1;
        } else if c.is_alphabetic() {
            other += 1;
        }
    }
    cjk > other
}

/// Calls `emit` with each term of [`search_terms`], in order.
pub fn for_each_search_term(text: &str, mut emit: impl FnMut(&str)) {
    for_each_keyword_term(text, |term| emit(&stem(term)));
}

/// The terms a ranked document is indexed under: [`keyword_terms`](crate::keyword_terms) with
/// each English word [`stem`]med (order and repeats kept).
///
/// ```
/// use coral_score::search_terms;
/// assert_eq!(search_terms("Painted landscapes 风景画"), ["paint", "landscape", "风", "景", "画", "风景", "景画"]);
/// ```
pub fn search_terms(text: &str) -> Vec<String> {
    let mut terms = Vec::new();
    for_each_search_term(text, |t| terms.push(t.to_owned()));
    terms
}

/// Whether `line` has at least one keyword term.
fn has_terms(line: &str) -> bool {
    let mut any = false;
    for_each_keyword_term(line, |_| any = true);
    any
}

/// The lines of `text` that have terms: a query of two or more is conversation-shaped (a
/// transcript, one turn a line).
pub fn content_lines(text: &str) -> impl DoubleEndedIterator<Item = &str> {
    text.lines().filter(|l| has_terms(l))
}

/// The BM25 query of a search text: its distinct [`search_terms`] that are not function words
/// ([`is_stop_term`]; all of them when nothing else is left), weight 1 each, plus
/// `last_line_boost` on those of its last line with terms when the query is
/// conversation-shaped: the latest turn says what the conversation is about now.
///
/// ```
/// use coral_score::search_query;
/// let q = search_query("What did you paint?", 1.0);
/// assert_eq!(q.terms(), [("paint".to_string(), 1.0)]);
/// let q = search_query("we went hiking\nthe lake was cold", 1.0);
/// assert!(q.terms().contains(&("lake".to_string(), 2.0)));
/// assert!(q.terms().contains(&("hik".to_string(), 1.0)));
/// // Only function words: they are what there is to search for.
/// assert_eq!(search_query("who are you", 1.0).terms().len(), 3);
/// ```
pub fn search_query(text: &str, last_line_boost: f64) -> Bm25Query {
    let mut all: Vec<String> = Vec::new();
    let mut seen: HashSet<String> = HashSet::new();
    for_each_search_term(text, |t| {
        if seen.insert(t.to_owned()) {
            all.push(t.to_owned());
        }
    });
    let keep_stop = all.iter().all(|t| is_stop_term(t));
    let wanted = |t: &str| keep_stop || !is_stop_term(t);
    let mut query = Bm25Query::new();
    for t in all.iter().filter(|t| wanted(t)) {
        query.add_term(t, 1.0);
    }
    if last_line_boost > 0.0 {
        let mut lines = content_lines(text);
        if let Some(last) = lines.next_back()
            && lines.next_back().is_some()
        {
            let mut once: HashSet<String> = HashSet::new();
            for_each_search_term(last, |t| {
                if wanted(t) && once.insert(t.to_owned()) {
                    query.add_term(t, last_line_boost);
                }
            });
        }
    }
    query
}

impl Bm25Query {
    /// [`Bm25Query::add_text`] with the ranking's analysis: adds `weight` to each distinct
    /// [`search_terms`](crate::search_terms) term of `text` (English words stemmed; nothing is
    /// left out, so a name that is also a function word still counts).
    ///
    /// ```
    /// let mut q = coral_score::Bm25Query::new();
    /// q.add_search_text("Paintings", 3.0);
    /// assert_eq!(q.terms(), [("paint".to_string(), 3.0)]);
    /// ```
    pub fn add_search_text(&mut self, text: &str, weight: f64) -> &mut Self {
        let mut seen: HashSet<String> = HashSet::new();
        for_each_search_term(text, |term| {
            if seen.insert(term.to_owned()) {
                self.add_term(term, weight);
            }
        });
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stop_list_is_sorted_so_binary_search_finds_every_word() {
        let mut sorted = ENGLISH_STOP.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(
            sorted, ENGLISH_STOP,
            "keep ENGLISH_STOP sorted and without repeats"
        );
        for w in ENGLISH_STOP {
            assert!(is_stop_term(w), "{w}");
            // Every entry is a stem, so stemmed query words find it.
            assert_eq!(stem(w), *w, "{w} is not what stem() leaves");
        }
    }

    fn check_stem(cases: &[(&str, &str)]) {
        for (word, want) in cases {
            assert_eq!(stem(word), *want, "stem({word:?})");
        }
    }

    #[test]
    fn stems_fold_inflections_and_leave_other_words() {
        check_stem(&[
            ("groups", "group"),
            ("group", "group"),
            ("researching", "research"),
            ("researched", "research"),
            ("research", "research"),
            ("libraries", "library"),
            ("glasses", "glass"),
            ("bus", "bus"),
            ("analysis", "analysis"),
            ("stopped", "stop"),
            ("falling", "fall"),
            ("buzzing", "buzz"),
            ("quickly", "quick"),
            ("teacher", "teach"),
            ("paper", "paper"),
            ("red", "red"),
            ("was", "was"),
            ("this", "this"),
            ("has", "has"),
            ("does", "doe"),
            ("Dogs", "Dogs"),
            ("naïve", "naïve"),
            ("4o", "4o"),
        ]);
    }

    #[test]
    fn stop_terms_are_function_words_and_single_chinese_characters() {
        for t in ["the", "what", "did", "我", "的", "吗"] {
            assert!(is_stop_term(t), "{t}");
        }
        for t in ["paint", "我们", "可乐", "喝", "caroline"] {
            assert!(!is_stop_term(t), "{t}");
        }
        let q = search_query("我之前说过最喜欢喝可乐吗", 1.0);
        let terms: Vec<&str> = q.terms().iter().map(|(t, _)| t.as_str()).collect();
        assert!(terms.contains(&"可乐") && terms.contains(&"我之") && !terms.contains(&"我"));
    }

    #[test]
    fn a_conversation_weights_its_last_line() {
        let q = search_query(
            "Bart: I love magic\nAssistant: what magic?\nBart: the card trick",
            1.0,
        );
        let weight = |t: &str| q.terms().iter().find(|(x, _)| x == t).map(|(_, w)| *w);
        assert_eq!(weight("card"), Some(2.0));
        assert_eq!(weight("magic"), Some(1.0));
        assert_eq!(weight("the"), None);
        // One line: no boost. No boost asked: none.
        assert_eq!(search_query("the card trick", 1.0).terms()[0].1, 1.0);
        let flat = search_query("magic\ncard", 0.0);
        assert!(flat.terms().iter().all(|(_, w)| *w == 1.0));
    }
}
