//! Terminal settlement: which tool results fold into reload cards once their turn is over, and
//! the exact card text.
//!
//! The rule (`docs/timeline.md`, "Settlement"): under [`Policy::CompactAfterTerminal`], a result body of at least
//! [`MIN_SETTLE_BYTES`] UTF-8 bytes whose card takes at most half of its bytes is shown as the
//! card in every later model-visible history; anything else stays inline. An empty body is
//! its own class. The body itself is never changed or deleted.

use std::borrow::Cow;

use chrono_tz::Tz;
use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::error::{Result, invalid, unknown_value};

/// Bodies shorter than this stay inline.
pub const MIN_SETTLE_BYTES: usize = 256;

/// What a turn does with its tool results once it ends. Frozen when the turn begins, so a
/// policy change never rewrites a turn already under way.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Policy {
    /// Fold long results into reload cards when the turn completes or is aborted.
    #[default]
    CompactAfterTerminal,
    /// Keep every result in full.
    Full,
}

impl Policy {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Policy::CompactAfterTerminal => "compact_after_terminal",
            Policy::Full => "full",
        }
    }

    /// Parse a name (`full_until_raw_compaction`, MemCore's name for keeping results, is
    /// accepted as `full`).
    pub fn parse(s: &str) -> Result<Policy> {
        match s {
            "compact_after_terminal" => Ok(Policy::CompactAfterTerminal),
            "full" | "full_until_raw_compaction" => Ok(Policy::Full),
            other => invalid(format!(
                "policy {other:?} is not compact_after_terminal or full"
            )),
        }
    }
}

/// How a settled result is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Classification {
    /// The body is empty; shown as it is.
    ExplicitEmpty,
    /// Too short to gain from a card; shown in full.
    InlineFull,
    /// Shown as a reload card.
    CompactReloadable,
}

impl Classification {
    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            Classification::ExplicitEmpty => "explicit_empty",
            Classification::InlineFull => "inline_full",
            Classification::CompactReloadable => "compact_reloadable",
        }
    }

    /// The class of a stored name; `None` for any other.
    pub(crate) fn parse(s: &str) -> Option<Classification> {
        match s {
            "explicit_empty" => Some(Classification::ExplicitEmpty),
            "inline_full" => Some(Classification::InlineFull),
            "compact_reloadable" => Some(Classification::CompactReloadable),
            _ => None,
        }
    }

    /// The class stored in column `i` of the result `source_id` (NULL: not settled); an
    /// unknown name is an [`UnknownValue`](crate::error::UnknownValue) naming the result.
    pub(crate) fn column(
        r: &rusqlite::Row<'_>,
        i: usize,
        source_id: &str,
    ) -> rusqlite::Result<Option<Classification>> {
        match r.get_ref(i)?.as_str_or_null()? {
            None => Ok(None),
            Some(stored) => Classification::parse(stored)
                .map(Some)
                .ok_or_else(|| unknown_value(i, format!("settlement of {source_id:?}"), stored)),
        }
    }
}

/// What a reload card says about one result.
#[derive(Clone, Debug, PartialEq)]
pub struct CardFields<'a> {
    /// Local time of the result (`2026-04-10 08:00`), when the turn has a time zone.
    pub time: Option<&'a str>,
    /// Tool name (or the result's kind when it has none).
    pub tool: &'a str,
    /// The call's correlation id.
    pub call_id: &'a str,
    /// The result's status (`success`, `error`, ...).
    pub status: &'a str,
    /// The result entry's id, to open it again.
    pub source_id: &'a str,
    /// Unicode scalar values in the body.
    pub stored_chars: usize,
    /// UTF-8 bytes of the body.
    pub stored_utf8_bytes: usize,
    /// Lower-case hex sha256 of the body's UTF-8 bytes.
    pub sha256_hex: &'a str,
}

/// The reload card, line for line as MemCore renders it (no trailing newline).
pub fn reload_card(f: &CardFields<'_>) -> String {
    let mut card = String::with_capacity(320);
    card.push_str("[compact_reloadable]\n");
    if let Some(time) = f.time {
        card.push_str("time: ");
        card.push_str(time);
        card.push('\n');
    }
    card.push_str(&format!(
        "tool: {}\ncall_id: {}\nstatus: {}\nsource_id: {}\nstored_chars: {}\n\
         stored_utf8_bytes: {}\nresult_hash: sha256:{}\n\
         reload: open_memory(memory_id=\"{}\", view=\"content\", detail=\"full\")",
        f.tool,
        f.call_id,
        f.status,
        f.source_id,
        f.stored_chars,
        f.stored_utf8_bytes,
        f.sha256_hex,
        f.source_id
    ));
    card
}

/// The first lines of a card whose turn had a time zone: its `time:` line follows.
const TIMED_CARD: &str = "[compact_reloadable]\ntime: ";

/// `card` (of a result at `ts`) with its `time:` line in `zone`: a card is stored in its turn's
/// zone, and every reply shows its times in one zone, the one it names. The line keeps its
/// width, so the card's token estimate holds. A card without a time line is returned as it is.
pub(crate) fn card_in_zone(card: &str, ts: f64, zone: Tz) -> Cow<'_, str> {
    let Some(rest) = card.strip_prefix(TIMED_CARD) else {
        return Cow::Borrowed(card);
    };
    let end = rest.find('\n').unwrap_or(rest.len());
    let local = crate::tz::minute_label(ts, zone);
    if rest[..end] == local {
        return Cow::Borrowed(card);
    }
    Cow::Owned(format!("{TIMED_CARD}{local}{}", &rest[end..]))
}

/// Classify a body of `body_bytes` whose card would be `card_bytes` long.
pub fn classify(body_bytes: usize, card_bytes: usize) -> Classification {
    if body_bytes == 0 {
        Classification::ExplicitEmpty
    } else if body_bytes >= MIN_SETTLE_BYTES && card_bytes.saturating_mul(2) <= body_bytes {
        Classification::CompactReloadable
    } else {
        Classification::InlineFull
    }
}

/// Lower-case hex sha256 of `text`'s UTF-8 bytes.
pub fn sha256_hex(text: &str) -> String {
    let digest = Sha256::digest(text.as_bytes());
    let mut out = String::with_capacity(64);
    for b in digest {
        out.push(char::from(b"0123456789abcdef"[usize::from(b >> 4)]));
        out.push(char::from(b"0123456789abcdef"[usize::from(b & 15)]));
    }
    out
}

/// Estimated tokens of `text`, as MemCore estimates them: a quarter token per ASCII character,
/// three quarters per other character, rounded up, at least 1.
pub fn estimate_tokens(text: &str) -> u64 {
    let (mut ascii, mut other) = (0u64, 0u64);
    for c in text.chars() {
        if c.is_ascii() {
            ascii += 1;
        } else {
            other += 1;
        }
    }
    (ascii + 3 * other).div_ceil(4).max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_of_known_text() {
        assert_eq!(
            sha256_hex("abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn classification_edges() {
        assert_eq!(classify(0, 0), Classification::ExplicitEmpty);
        assert_eq!(classify(255, 10), Classification::InlineFull);
        assert_eq!(classify(256, 128), Classification::CompactReloadable);
        assert_eq!(classify(256, 129), Classification::InlineFull);
        assert_eq!(classify(1000, 500), Classification::CompactReloadable);
        assert_eq!(classify(1000, 501), Classification::InlineFull);
    }

    #[test]
    fn a_card_shows_the_time_of_the_zone_asked_for() {
        let fields = CardFields {
            time: Some("2026-11-30 08:53"),
            tool: "shell",
            call_id: "c1",
            status: "success",
            source_id: "obs-1",
            stored_chars: 1,
            stored_utf8_bytes: 1,
            sha256_hex: "00",
        };
        let card = reload_card(&fields);
        let ts = 1_796_000_000.0 - 1_796_000_000.0 % 60.0;
        let shanghai = crate::tz::parse_zone("Asia/Shanghai").unwrap();
        let utc = crate::tz::parse_zone("UTC").unwrap();
        let in_utc = card_in_zone(&card, ts, utc);
        assert!(in_utc.contains(&format!("time: {}\n", crate::tz::minute_label(ts, utc))));
        assert_eq!(in_utc.len(), card.len());
        assert_eq!(
            in_utc.replace(&crate::tz::minute_label(ts, utc), "T"),
            card.replace("2026-11-30 08:53", "T")
        );
        let in_shanghai = card_in_zone(&card, ts, shanghai);
        assert!(in_shanghai.contains(&crate::tz::minute_label(ts, shanghai)));
        let untimed = reload_card(&CardFields {
            time: None,
            ..fields
        });
        assert_eq!(card_in_zone(&untimed, ts, utc), untimed);
    }

    #[test]
    fn policies_parse() {
        assert_eq!(
            Policy::parse("full_until_raw_compaction").unwrap(),
            Policy::Full
        );
        assert!(Policy::parse("sometimes").is_err());
    }
}
