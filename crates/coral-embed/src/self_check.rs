//! The load-time self-check of a model: in each of its languages a paraphrase must lie closer
//! to its sentence than an unrelated sentence does, so damaged files, the wrong pooling or a
//! broken runtime fail at start-up with a clear error instead of returning noise.

use crate::{Embedder, Error, Result};

/// (language, sentence, paraphrase sharing few of its words, unrelated sentence).
const PAIRS: &[(&str, &str, &str, &str)] = &[
    (
        "en",
        "The meeting was moved to Friday afternoon.",
        "We rescheduled the appointment for Friday after lunch.",
        "My cat likes to sleep on the warm windowsill.",
    ),
    (
        "zh",
        "会议改到了周五下午。",
        "我们把开会时间推迟到星期五午饭后。",
        "我的猫喜欢在温暖的窗台上睡觉。",
    ),
];

fn cosine(a: &[f32], b: &[f32]) -> f32 {
    let dot: f32 = a.iter().zip(b).map(|(x, y)| x * y).sum();
    let norm = |v: &[f32]| v.iter().map(|x| x * x).sum::<f32>().sqrt();
    dot / (norm(a) * norm(b)).max(1e-12)
}

/// Check `embedder` in `languages` (`"en"`, `"zh"`; others are ignored): each language's
/// paraphrase must outscore its unrelated sentence, and every vector must have the embedder's
/// dim and finite values. Returns the (paraphrase, unrelated) cosines per language checked.
pub fn self_check(embedder: &dyn Embedder, languages: &[&str]) -> Result<Vec<(String, f32, f32)>> {
    let fail = |detail: String| Error::Model {
        model: embedder.name().to_string(),
        detail: format!(
            "failed its self-check at load: {detail}; its files are damaged or not the model \
             they claim to be: install it again (`coral model fetch`), or set \
             embedding.embedder to \"hash\""
        ),
    };
    let mut out = Vec::new();
    for (lang, sentence, paraphrase, unrelated) in PAIRS {
        if !languages.contains(lang) {
            continue;
        }
        let v = embedder.embed(&[sentence, paraphrase, unrelated])?;
        if v.len() != 3
            || v.iter()
                .any(|r| r.len() != embedder.dim() || !r.iter().all(|x| x.is_finite()))
        {
            return Err(fail(format!(
                "it returned {} vectors for 3 texts, or vectors that are not {} finite numbers",
                v.len(),
                embedder.dim()
            )));
        }
        let (near, far) = (cosine(&v[0], &v[1]), cosine(&v[0], &v[2]));
        if near <= far {
            return Err(fail(format!(
                "in {lang}, a paraphrase scored {near:.3} and an unrelated sentence {far:.3} \
                 against {sentence:?}"
            )));
        }
        out.push((lang.to_string(), near, far));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An embedder that returns fixed rows.
    struct Fixed(Vec<Vec<f32>>);

    impl Embedder for Fixed {
        fn name(&self) -> &str {
            "fixed"
        }
        fn dim(&self) -> usize {
            2
        }
        fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
            Ok(self.0.iter().take(texts.len()).cloned().collect())
        }
    }

    #[test]
    fn a_model_that_ranks_the_unrelated_sentence_higher_fails() {
        let good = Fixed(vec![vec![1.0, 0.0], vec![0.9, 0.1], vec![0.0, 1.0]]);
        let checked = self_check(&good, &["en", "zh"]).unwrap();
        assert_eq!(checked.len(), 2);
        let bad = Fixed(vec![vec![1.0, 0.0], vec![0.0, 1.0], vec![0.9, 0.1]]);
        let err = self_check(&bad, &["zh"]).unwrap_err().to_string();
        assert!(
            err.contains("embedding model fixed: failed its self-check"),
            "{err}"
        );
        assert!(err.contains("in zh, a paraphrase scored 0.000"), "{err}");
        let nan = Fixed(vec![vec![f32::NAN, 0.0]; 3]);
        assert!(
            self_check(&nan, &["en"])
                .unwrap_err()
                .to_string()
                .contains("finite")
        );
        assert!(self_check(&bad, &["fr"]).unwrap().is_empty());
    }
}
