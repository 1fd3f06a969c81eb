//! sentencepiece unigram encoding: normalise, find the best-scoring segmentation (Viterbi),
//! merge runs of unknown characters, with the ids the `sentencepiece` library gives.
//!
//! The search is the library's optimised one: for each character position, every piece that
//! starts there updates the best path ending where it ends (the first candidate always, a later
//! one only if strictly better), and a position that no one-character piece covers gets an
//! `<unk>` node scored `min_score - 10`. Scores add up in `f32`; user-defined pieces score
//! `length * max_score - 0.1`, in `f64`, where `max_score` starts at `f32::MIN_POSITIVE` as in
//! the library (so with USE's all-negative scores it is about -0.1).

use super::normalizer::{Normalizer, char_len};
use super::piece_trie::PieceTrie;
use super::sp_model::{PieceKind, SpModel};

/// The unknown-piece penalty of sentencepiece's unigram model.
const UNK_PENALTY: f32 = 10.0;

/// A sentencepiece unigram tokenizer.
#[derive(Debug)]
pub(crate) struct Tokenizer {
    normalizer: Normalizer,
    trie: PieceTrie,
    scores: Vec<f32>,
    /// Per piece: 0 normal, 1 user-defined, 2 unused.
    flags: Vec<u8>,
    unk: u32,
    bos: u32,
    eos: u32,
    unk_score: f32,
    max_score: f32,
}

const USER_DEFINED: u8 = 1;
const UNUSED: u8 = 2;

/// Scratch space of one encoding, reused by a thread's next call.
#[derive(Default)]
struct Scratch {
    normalized: Vec<u8>,
    score: Vec<f32>,
    start: Vec<i32>,
    piece: Vec<u32>,
}

thread_local! {
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

impl Tokenizer {
    /// The tokenizer of a parsed model.
    pub(crate) fn new(model: &SpModel) -> Result<Tokenizer, String> {
        if model.model_type != 1 {
            return Err(format!(
                "it is not a unigram model (model_type {}); only unigram models are supported",
                model.model_type
            ));
        }
        if model.byte_fallback {
            return Err("it uses byte fallback, which is not supported".into());
        }
        if u32::try_from(model.len()).is_err() {
            return Err(format!("it has {} pieces, too many", model.len()));
        }
        let unknown: Vec<usize> = (0..model.len())
            .filter(|&i| model.kinds[i] == PieceKind::Unknown)
            .collect();
        let [unk] = unknown[..] else {
            return Err(format!(
                "it has {} <unk> pieces instead of one",
                unknown.len()
            ));
        };
        let control = |piece: &[u8], what: &str| -> Result<u32, String> {
            match model.find(piece) {
                Some(id) if model.kinds[id] == PieceKind::Control => Ok(id as u32),
                _ => Err(format!(
                    "its {what} piece {:?} is not a control piece",
                    String::from_utf8_lossy(piece)
                )),
            }
        };
        let bos = control(&model.bos_piece, "begin-of-sentence")?;
        let eos = control(&model.eos_piece, "end-of-sentence")?;

        let (mut min_score, mut max_score) = (f32::MAX, f32::MIN_POSITIVE);
        let mut flags = Vec::with_capacity(model.len());
        let mut user_defined = Vec::new();
        for (i, kind) in model.kinds.iter().enumerate() {
            if *kind == PieceKind::Normal {
                min_score = min_score.min(model.scores[i]);
                max_score = max_score.max(model.scores[i]);
            }
            if *kind == PieceKind::UserDefined {
                user_defined.push(model.piece(i).to_vec());
            }
            flags.push(match kind {
                PieceKind::UserDefined => USER_DEFINED,
                PieceKind::Unused => UNUSED,
                _ => 0,
            });
        }
        let matched = (0..model.len() as u32).filter(|&i| {
            matches!(
                model.kinds[i as usize],
                PieceKind::Normal | PieceKind::UserDefined | PieceKind::Unused
            )
        });
        let trie = PieceTrie::build(matched, |i| model.piece(i as usize))?;
        let mut normalizer = Normalizer::new(&model.charsmap, user_defined)?;
        normalizer.add_dummy_prefix = model.add_dummy_prefix;
        normalizer.remove_extra_whitespaces = model.remove_extra_whitespaces;
        normalizer.escape_whitespaces = model.escape_whitespaces;
        normalizer.whitespace_as_suffix = model.whitespace_as_suffix;
        Ok(Tokenizer {
            normalizer,
            trie,
            scores: model.scores.clone(),
            flags,
            unk: unk as u32,
            bos,
            eos,
            unk_score: min_score - UNK_PENALTY,
            max_score,
        })
    }

    /// Number of pieces; every id is below it.
    pub(crate) fn vocab_size(&self) -> usize {
        self.scores.len()
    }

    /// Bytes held by the tokenizer's tables, roughly.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.trie.heap_bytes() + self.scores.len() * 5
    }

    /// The ids `sentencepiece` gives `text` (`encode`, without `<s>` and `</s>`), appended to
    /// `out`.
    pub(crate) fn encode_into(&self, text: &str, out: &mut Vec<u32>) {
        SCRATCH.with(|scratch| {
            let mut scratch = scratch.borrow_mut();
            let Scratch {
                normalized,
                score,
                start,
                piece,
            } = &mut *scratch;
            self.normalizer.normalize_into(text, normalized);
            self.viterbi(normalized, score, start, piece, out);
        });
    }

    /// `<s>`, the ids of `text` (only the first `max_len - 2` if there are more), `</s>`.
    pub(crate) fn encode_for_model(&self, text: &str, max_len: usize) -> Vec<u32> {
        let mut ids = vec![self.bos];
        self.encode_into(text, &mut ids);
        ids.truncate(max_len.max(2) - 1);
        ids.push(self.eos);
        ids
    }

    /// The best segmentation of `s`, appended to `out` with runs of `<unk>` merged.
    fn viterbi(
        &self,
        s: &[u8],
        score: &mut Vec<f32>,
        start: &mut Vec<i32>,
        piece: &mut Vec<u32>,
        out: &mut Vec<u32>,
    ) {
        let n = s.len();
        if n == 0 {
            return;
        }
        score.clear();
        score.resize(n + 1, 0.0);
        start.clear();
        start.resize(n + 1, -1);
        piece.clear();
        piece.resize(n + 1, self.unk);
        let mut at = 0;
        while at < n {
            let base = score[at];
            let one_char = char_len(s[at]).min(n - at);
            let mut has_single = false;
            let mut node = self.trie.root();
            for (end, &byte) in s.iter().enumerate().skip(at).map(|(i, b)| (i + 1, b)) {
                let Some(next) = self.trie.child(node, byte) else {
                    break;
                };
                node = next;
                let Some(id) = self.trie.piece(node) else {
                    continue;
                };
                let flag = self.flags[id as usize];
                if flag == UNUSED {
                    continue;
                }
                let length = end - at;
                let candidate = if flag == USER_DEFINED {
                    f64::from(length as f32 * self.max_score) - 0.1 + f64::from(base)
                } else {
                    f64::from(self.scores[id as usize] + base)
                };
                if start[end] == -1 || candidate > f64::from(score[end]) {
                    score[end] = candidate as f32;
                    start[end] = at as i32;
                    piece[end] = id;
                }
                has_single |= length == one_char;
            }
            if !has_single {
                let end = at + one_char;
                let candidate = self.unk_score + base;
                if start[end] == -1 || candidate > score[end] {
                    score[end] = candidate;
                    start[end] = at as i32;
                    piece[end] = self.unk;
                }
            }
            at += one_char;
        }
        let first = out.len();
        let mut end = n;
        while end > 0 {
            out.push(piece[end]);
            // Every character start gets at least a one-character node, so each end reached
            // has a start; a -1 would mean a bug, and stopping beats looping forever.
            let Ok(prev) = usize::try_from(start[end]) else {
                debug_assert!(false, "no path to byte {end}");
                break;
            };
            end = prev;
        }
        out[first..].reverse();
        // Merge runs of <unk>, as sentencepiece does when it builds its result.
        let mut write = first;
        for read in first..out.len() {
            let id = out[read];
            if id == self.unk && write > first && out[write - 1] == self.unk {
                continue;
            }
            out[write] = id;
            write += 1;
        }
        out.truncate(write);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A model with pieces `<unk> <s> </s> ▁ ▁a b ab ▁ab X` and no normalisation rules.
    fn model(pieces: &[(&str, f32, PieceKind)]) -> SpModel {
        let mut m = SpModel {
            text: Vec::new(),
            offsets: vec![0],
            scores: Vec::new(),
            kinds: Vec::new(),
            charsmap: Vec::new(),
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            escape_whitespaces: true,
            whitespace_as_suffix: false,
            byte_fallback: false,
            model_type: 1,
            bos_piece: b"<s>".to_vec(),
            eos_piece: b"</s>".to_vec(),
        };
        for (text, score, kind) in pieces {
            m.text.extend_from_slice(text.as_bytes());
            m.offsets.push(m.text.len() as u32);
            m.scores.push(*score);
            m.kinds.push(*kind);
        }
        m
    }

    fn tokenizer() -> Tokenizer {
        use PieceKind::*;
        Tokenizer::new(&model(&[
            ("<unk>", 0.0, Unknown),
            ("<s>", 0.0, Control),
            ("</s>", 0.0, Control),
            ("▁", -2.0, Normal),
            ("▁a", -3.0, Normal),
            ("b", -2.0, Normal),
            ("ab", -1.0, Normal),
            ("▁ab", -6.0, Normal),
            ("XY", 0.0, UserDefined),
            ("a", -5.0, Normal),
        ]))
        .unwrap()
    }

    fn check(text: &str, expected: &[u32]) {
        let mut ids = Vec::new();
        tokenizer().encode_into(text, &mut ids);
        assert_eq!(ids, expected, "{text:?}");
    }

    #[test]
    fn finds_the_best_segmentation() {
        check("", &[]);
        check("  ", &[]);
        // ▁ab: "▁a"+"b" = -5, "▁"+"ab" = -3, "▁ab" = -6
        check("ab", &[3, 6]);
        check("b b", &[3, 5, 3, 5]);
    }

    #[test]
    fn merges_runs_of_unknown_characters_and_keeps_user_pieces() {
        check("ab 中文", &[3, 6, 3, 0]);
        check("中b文字", &[3, 0, 5, 0]);
        // The user-defined piece scores 2 * f32::MIN_POSITIVE - 0.1 and beats everything.
        check("XY", &[3, 8]);
        check("aXYb", &[4, 8, 5]);
    }

    #[test]
    fn wraps_and_truncates_for_the_model() {
        let t = tokenizer();
        assert_eq!(t.encode_for_model("b b", 512), [1, 3, 5, 3, 5, 2]);
        assert_eq!(t.encode_for_model("b b", 4), [1, 3, 5, 2]);
        assert_eq!(t.encode_for_model("", 512), [1, 2]);
    }

    #[test]
    fn refuses_models_it_cannot_encode() {
        use PieceKind::*;
        let no_unk = model(&[("<s>", 0.0, Control), ("</s>", 0.0, Control)]);
        assert!(Tokenizer::new(&no_unk).unwrap_err().contains("<unk>"));
        let no_bos = model(&[("<unk>", 0.0, Unknown), ("</s>", 0.0, Control)]);
        assert!(
            Tokenizer::new(&no_bos)
                .unwrap_err()
                .contains("begin-of-sentence")
        );
        let mut bpe = model(&[("<unk>", 0.0, Unknown)]);
        bpe.model_type = 2;
        assert!(Tokenizer::new(&bpe).unwrap_err().contains("unigram"));
    }
}
