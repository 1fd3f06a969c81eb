//! Reading a sentencepiece `.model` file (a `ModelProto`): the pieces with their scores and
//! kinds, and the normaliser settings with the precompiled character map.
//!
//! Field numbers are those of sentencepiece's `sentencepiece_model.proto`: `ModelProto` has the
//! pieces (1), the trainer spec (2) and the normaliser spec (3); a piece has its text (1), score
//! (2) and type (3). Only what encoding needs is kept; everything else is skipped.

use super::proto::{Fields, Value};

/// What a piece is, from `SentencePiece.Type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PieceKind {
    /// An ordinary piece, matched by the segmenter.
    Normal,
    /// `<unk>`.
    Unknown,
    /// `<s>`, `</s>` and the like: never matched in text.
    Control,
    /// Matched in text before normalisation, with a bonus score.
    UserDefined,
    /// In the vocabulary but never produced.
    Unused,
    /// Byte-fallback pieces `<0x00>`…
    Byte,
}

/// The parts of a model that encoding needs.
#[derive(Debug)]
pub(crate) struct SpModel {
    /// Piece texts, concatenated; piece `i` is `text[offsets[i]..offsets[i + 1]]`.
    pub text: Vec<u8>,
    /// `pieces + 1` offsets into `text`.
    pub offsets: Vec<u32>,
    /// Score of each piece.
    pub scores: Vec<f32>,
    /// Kind of each piece.
    pub kinds: Vec<PieceKind>,
    /// `normalizer_spec.precompiled_charsmap` (empty = no normalisation rules).
    pub charsmap: Vec<u8>,
    /// `normalizer_spec.add_dummy_prefix` (default true).
    pub add_dummy_prefix: bool,
    /// `normalizer_spec.remove_extra_whitespaces` (default true).
    pub remove_extra_whitespaces: bool,
    /// `normalizer_spec.escape_whitespaces` (default true).
    pub escape_whitespaces: bool,
    /// `trainer_spec.treat_whitespace_as_suffix` (default false).
    pub whitespace_as_suffix: bool,
    /// `trainer_spec.byte_fallback` (default false).
    pub byte_fallback: bool,
    /// `trainer_spec.model_type` (1 = unigram, the default).
    pub model_type: u64,
    /// `trainer_spec.bos_piece` (default `<s>`).
    pub bos_piece: Vec<u8>,
    /// `trainer_spec.eos_piece` (default `</s>`).
    pub eos_piece: Vec<u8>,
}

impl SpModel {
    /// Number of pieces.
    pub fn len(&self) -> usize {
        self.scores.len()
    }

    /// The text of piece `id`.
    pub fn piece(&self, id: usize) -> &[u8] {
        &self.text[self.offsets[id] as usize..self.offsets[id + 1] as usize]
    }

    /// The id of the piece whose text is `text`, if any.
    pub fn find(&self, text: &[u8]) -> Option<usize> {
        (0..self.len()).find(|&i| self.piece(i) == text)
    }

    /// Parse a serialised `ModelProto`.
    pub fn parse(data: &[u8]) -> Result<SpModel, String> {
        let mut model = SpModel {
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
        let mut normalizer_seen = false;
        for field in Fields::new(data) {
            match field? {
                (1, Value::Bytes(piece)) => model.push_piece(piece)?,
                (2, Value::Bytes(trainer)) => model.read_trainer(trainer)?,
                (3, Value::Bytes(normalizer)) => {
                    normalizer_seen = true;
                    model.read_normalizer(normalizer)?;
                }
                _ => {}
            }
        }
        if model.len() == 0 {
            return Err("it holds no pieces".into());
        }
        if !normalizer_seen {
            return Err("it has no normalizer spec".into());
        }
        if u32::try_from(model.text.len()).is_err() {
            return Err("its pieces hold more than 4 GiB of text".into());
        }
        Ok(model)
    }

    fn push_piece(&mut self, message: &[u8]) -> Result<(), String> {
        let (mut text, mut score, mut kind) = (None, 0.0f32, 1u64);
        for field in Fields::new(message) {
            match field? {
                (1, Value::Bytes(t)) => text = Some(t),
                (2, Value::Fixed32(bits)) => score = f32::from_bits(bits),
                (3, Value::Varint(k)) => kind = k,
                _ => {}
            }
        }
        let id = self.len();
        let text = text
            .filter(|t| !t.is_empty())
            .ok_or_else(|| format!("piece {id} has no text"))?;
        let kind = match kind {
            1 => PieceKind::Normal,
            2 => PieceKind::Unknown,
            3 => PieceKind::Control,
            4 => PieceKind::UserDefined,
            5 => PieceKind::Unused,
            6 => PieceKind::Byte,
            other => return Err(format!("piece {id} has the unknown type {other}")),
        };
        if !score.is_finite() {
            return Err(format!("piece {id} has the score {score}"));
        }
        self.text.extend_from_slice(text);
        self.offsets.push(self.text.len() as u32);
        self.scores.push(score);
        self.kinds.push(kind);
        Ok(())
    }

    fn read_trainer(&mut self, message: &[u8]) -> Result<(), String> {
        for field in Fields::new(message) {
            match field? {
                (3, Value::Varint(t)) => self.model_type = t,
                (24, Value::Varint(v)) => self.whitespace_as_suffix = v != 0,
                (35, Value::Varint(v)) => self.byte_fallback = v != 0,
                (46, Value::Bytes(p)) => self.bos_piece = p.to_vec(),
                (47, Value::Bytes(p)) => self.eos_piece = p.to_vec(),
                _ => {}
            }
        }
        Ok(())
    }

    fn read_normalizer(&mut self, message: &[u8]) -> Result<(), String> {
        for field in Fields::new(message) {
            match field? {
                (2, Value::Bytes(map)) => self.charsmap = map.to_vec(),
                (3, Value::Varint(v)) => self.add_dummy_prefix = v != 0,
                (4, Value::Varint(v)) => self.remove_extra_whitespaces = v != 0,
                (5, Value::Varint(v)) => self.escape_whitespaces = v != 0,
                _ => {}
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes_field(number: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![(number << 3) | 2, body.len() as u8];
        out.extend_from_slice(body);
        out
    }

    fn piece(text: &str, score: f32, kind: u8) -> Vec<u8> {
        let mut body = bytes_field(1, text.as_bytes());
        body.push((2 << 3) | 5);
        body.extend_from_slice(&score.to_le_bytes());
        body.extend_from_slice(&[3 << 3, kind]);
        bytes_field(1, &body)
    }

    #[test]
    fn reads_pieces_and_specs_with_their_defaults() {
        let mut data = piece("<unk>", 0.0, 2);
        data.extend(piece("▁a", -1.5, 1));
        // normalizer spec: charsmap "xy", add_dummy_prefix = false
        let mut spec = bytes_field(2, b"xy");
        spec.extend_from_slice(&[3 << 3, 0]);
        data.extend(bytes_field(3, &spec));
        let model = SpModel::parse(&data).unwrap();
        assert_eq!(model.len(), 2);
        assert_eq!(model.piece(1), "▁a".as_bytes());
        assert_eq!(model.scores, [0.0, -1.5]);
        assert_eq!(model.kinds, [PieceKind::Unknown, PieceKind::Normal]);
        assert_eq!(model.charsmap, b"xy");
        assert!(!model.add_dummy_prefix && model.remove_extra_whitespaces);
        assert_eq!(model.find("▁a".as_bytes()), Some(1));
        assert_eq!(model.bos_piece, b"<s>");
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..400)) {
            if let Ok(model) = SpModel::parse(&bytes) {
                let _ = crate::usem3::tokenizer::Tokenizer::new(&model);
            }
        }
    }

    #[test]
    fn refuses_what_is_not_a_model() {
        assert!(SpModel::parse(&[]).unwrap_err().contains("no pieces"));
        assert!(
            SpModel::parse(&piece("a", 0.0, 1))
                .unwrap_err()
                .contains("normalizer")
        );
        assert!(
            SpModel::parse(&piece("a", 0.0, 9))
                .unwrap_err()
                .contains("type 9")
        );
        assert!(SpModel::parse(b"\x0a\x05ab").is_err());
    }
}
