//! sentencepiece's normaliser: the precompiled character map (`nmt_nfkc` for USE) and the
//! whitespace rules, giving the exact bytes its segmenter sees.
//!
//! The character map is a darts-clone double-array trie over UTF-8 bytes whose values point
//! into a table of NUL-terminated replacements. At each position the longest key that matches
//! is replaced; where none matches, one UTF-8 character is copied (an invalid byte becomes
//! U+FFFD, one byte consumed). User-defined pieces are copied untouched. Then, with the USE
//! model's settings: leading, trailing and repeated spaces are dropped, a space is put in
//! front, and every space becomes `▁` (U+2581).

/// `▁`, which stands for a space in pieces.
pub(crate) const SPACE: &[u8] = "\u{2581}".as_bytes();

/// The normaliser of one model.
#[derive(Debug)]
pub(crate) struct Normalizer {
    /// The double array (empty = no rules).
    units: Vec<u32>,
    /// NUL-terminated replacement strings the trie's values index.
    replacements: Vec<u8>,
    /// User-defined pieces, matched before the rules and copied as they are.
    user_defined: Vec<Vec<u8>>,
    /// Put a space in front of the text.
    pub add_dummy_prefix: bool,
    /// Drop leading, trailing and repeated spaces.
    pub remove_extra_whitespaces: bool,
    /// Write spaces as `▁`.
    pub escape_whitespaces: bool,
    /// The dummy space goes at the end instead of the front.
    pub whitespace_as_suffix: bool,
}

/// How many bytes the UTF-8 character starting with `lead` has (1 for a byte that cannot
/// start one), as sentencepiece's `OneCharLen`.
pub(crate) fn char_len(lead: u8) -> usize {
    match lead {
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => 1,
    }
}

impl Normalizer {
    /// A normaliser over the precompiled map `charsmap` (empty = no rules), protecting
    /// `user_defined` pieces. The whitespace settings start at sentencepiece's defaults.
    pub(crate) fn new(charsmap: &[u8], user_defined: Vec<Vec<u8>>) -> Result<Normalizer, String> {
        let (units, replacements) = if charsmap.is_empty() {
            (Vec::new(), Vec::new())
        } else {
            if charsmap.len() <= 4 {
                return Err(format!(
                    "its character map is {} bytes, too short",
                    charsmap.len()
                ));
            }
            let size =
                u32::from_le_bytes([charsmap[0], charsmap[1], charsmap[2], charsmap[3]]) as usize;
            if !size.is_multiple_of(4) || size == 0 || 4 + size > charsmap.len() {
                return Err(format!(
                    "its character map's trie is {size} bytes of a {}-byte map",
                    charsmap.len()
                ));
            }
            let units = charsmap[4..4 + size]
                .chunks_exact(4)
                .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
                .collect();
            (units, charsmap[4 + size..].to_vec())
        };
        let mut user_defined = user_defined;
        user_defined.retain(|p| !p.is_empty());
        // Longest first, so the first match is the longest, as sentencepiece's prefix matcher.
        user_defined.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
        Ok(Normalizer {
            units,
            replacements,
            user_defined,
            add_dummy_prefix: true,
            remove_extra_whitespaces: true,
            escape_whitespaces: true,
            whitespace_as_suffix: false,
        })
    }

    /// The longest rule matching a prefix of `input`: (key length, replacement offset).
    fn longest_rule(&self, input: &[u8]) -> Option<(usize, usize)> {
        // darts-clone unit layout: bits 0-7 label (bit 31 set on value units), bit 8 "has a
        // value below", bit 9 offset scale, bits 10-30 offset; a value unit holds 31 bits.
        let offset = |unit: u32| ((unit >> 10) << ((unit & (1 << 9)) >> 6)) as usize;
        let mut node = offset(*self.units.first()?);
        let mut best = None;
        for (i, &byte) in input.iter().enumerate() {
            node ^= usize::from(byte);
            let Some(&unit) = self.units.get(node) else {
                break;
            };
            if unit & ((1 << 31) | 0xff) != u32::from(byte) {
                break;
            }
            node ^= offset(unit);
            if unit & (1 << 8) != 0 {
                let value = self.units.get(node).map(|v| (v & 0x7fff_ffff) as usize);
                if let Some(value) = value {
                    best = Some((i + 1, value));
                }
            }
        }
        best
    }

    /// What the start of `input` normalises to, and how many bytes of `input` that consumes.
    fn prefix<'a>(&'a self, input: &'a [u8]) -> (&'a [u8], usize) {
        if let Some(piece) = self.user_defined.iter().find(|p| input.starts_with(p)) {
            return (&input[..piece.len()], piece.len());
        }
        if let Some((len, value)) = self.longest_rule(input)
            && let Some(rest) = self.replacements.get(value..)
        {
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            return (&rest[..end], len);
        }
        let len = char_len(input[0]).min(input.len());
        if std::str::from_utf8(&input[..len]).is_ok() {
            (&input[..len], len)
        } else {
            ("\u{fffd}".as_bytes(), 1)
        }
    }

    /// The normalised bytes of `text`, appended to `out` (cleared first).
    pub(crate) fn normalize_into(&self, text: &str, out: &mut Vec<u8>) {
        out.clear();
        let mut input = text.as_bytes();
        let space: &[u8] = if self.escape_whitespaces { SPACE } else { b" " };
        if self.remove_extra_whitespaces {
            while !input.is_empty() {
                let (piece, consumed) = self.prefix(input);
                if piece != b" " {
                    break;
                }
                input = &input[consumed..];
            }
        }
        if input.is_empty() {
            return;
        }
        if self.add_dummy_prefix && !self.whitespace_as_suffix {
            out.extend_from_slice(space);
        }
        let mut prev_space = self.remove_extra_whitespaces;
        while !input.is_empty() {
            let (mut piece, consumed) = self.prefix(input);
            input = &input[consumed..];
            while prev_space && piece.first() == Some(&b' ') {
                piece = &piece[1..];
            }
            if !piece.is_empty() {
                for &b in piece {
                    if b == b' ' {
                        out.extend_from_slice(space);
                    } else {
                        out.push(b);
                    }
                }
                prev_space = piece.last() == Some(&b' ');
            }
            if !self.remove_extra_whitespaces {
                prev_space = false;
            }
        }
        if self.remove_extra_whitespaces {
            while out.ends_with(space) {
                out.truncate(out.len() - space.len());
            }
        }
        if self.add_dummy_prefix && self.whitespace_as_suffix {
            out.extend_from_slice(space);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A one-rule darts-clone map, built by hand: "A" (0x41) -> "a".
    fn one_rule_map() -> Vec<u8> {
        // root at 0 with offset 1: child for label 0x41 at 1 ^ 0x41 = 0x40; that unit has a
        // value below (bit 8) and offset 1, so its value unit sits at 0x40 ^ 1 = 0x41.
        let mut units = vec![0u32; 0x42];
        units[0] = 1 << 10;
        units[0x40] = 0x41 | (1 << 8) | (1 << 10);
        units[0x41] = 1 << 31; // a value unit holding 0: the replacement at offset 0
        let mut map = ((units.len() * 4) as u32).to_le_bytes().to_vec();
        for u in units {
            map.extend_from_slice(&u.to_le_bytes());
        }
        map.extend_from_slice(b"a\0");
        map
    }

    fn check(n: &Normalizer, text: &str, expected: &str) {
        let mut out = Vec::new();
        n.normalize_into(text, &mut out);
        assert_eq!(String::from_utf8(out).unwrap(), expected, "{text:?}");
    }

    #[test]
    fn applies_rules_and_the_whitespace_settings() {
        let n = Normalizer::new(&one_rule_map(), vec![b"AB".to_vec()]).unwrap();
        check(&n, "", "");
        check(&n, "   ", "");
        check(&n, "A", "▁a");
        check(&n, "  xA  y ", "▁xa▁y");
        check(&n, "xAB", "▁xAB");
        check(&n, "中A文", "▁中a文");
        let mut plain = Normalizer::new(&[], Vec::new()).unwrap();
        plain.remove_extra_whitespaces = false;
        plain.add_dummy_prefix = false;
        check(&plain, " a  b ", "▁a▁▁b▁");
    }

    proptest::proptest! {
        #[test]
        fn any_map_and_any_text_never_panic(
            units in proptest::collection::vec(proptest::num::u32::ANY, 1..64),
            tail in proptest::collection::vec(proptest::num::u8::ANY, 0..32),
            text in "\\PC{0,40}",
        ) {
            let mut map = ((units.len() * 4) as u32).to_le_bytes().to_vec();
            for u in &units {
                map.extend_from_slice(&u.to_le_bytes());
            }
            map.extend_from_slice(&tail);
            if let Ok(n) = Normalizer::new(&map, vec![b"ab".to_vec()]) {
                let mut out = Vec::new();
                n.normalize_into(&text, &mut out);
            }
        }
    }

    #[test]
    fn refuses_a_broken_map() {
        assert!(Normalizer::new(&[1, 0, 0], Vec::new()).is_err());
        assert!(Normalizer::new(&[200, 0, 0, 0, 1, 2], Vec::new()).is_err());
        assert!(Normalizer::new(&[3, 0, 0, 0, 1, 2, 3, 4], Vec::new()).is_err());
    }
}
