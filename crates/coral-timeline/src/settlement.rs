//! Settling an ended turn's results in its transaction (reload cards under
//! `compact_after_terminal`, `docs/timeline.md` "Settlement"), and the report of what it did.

use rusqlite::{Transaction, params};

use crate::error::Result;
use crate::settle::{CardFields, Classification, Policy, classify, estimate_tokens, reload_card};
use crate::turn::{SettledResult, SettlementReport};
use crate::turn_row::TurnRow;
use crate::tz;

/// What settlement needs of a result: everything but its body.
struct Observation {
    source_id: String,
    correlation_id: Option<String>,
    tool_name: Option<String>,
    kind: String,
    status: Option<String>,
    ts: f64,
    chars: i64,
    bytes: i64,
    tokens: i64,
    sha256: String,
}

/// Settle the turn's results under its frozen policy (terminal turns only; callers close
/// the turn in the same transaction).
pub(crate) fn settle(tx: &Transaction<'_>, hk: &str, turn: &TurnRow) -> Result<()> {
    let zone = turn
        .timezone
        .as_deref()
        .and_then(|z| tz::parse_zone(z).ok());
    // Sizes and hashes were computed when the results were written: no body is read.
    let observations = tx
        .prepare_cached(
            "SELECT source_id, correlation_id, tool_name, kind, status, ts, chars, bytes, \
             tokens, sha256 FROM entries WHERE hard_key = ?1 AND turn_id = ?2 \
             AND turn_role = 'observation' ORDER BY seq_no",
        )?
        .query_map(params![hk, turn.turn_id], |r| {
            Ok(Observation {
                source_id: r.get(0)?,
                correlation_id: r.get(1)?,
                tool_name: r.get(2)?,
                kind: r.get(3)?,
                status: r.get(4)?,
                ts: r.get(5)?,
                chars: r.get(6)?,
                bytes: r.get(7)?,
                tokens: r.get(8)?,
                sha256: r.get(9)?,
            })
        })?
        .collect::<rusqlite::Result<Vec<Observation>>>()?;
    let (mut full, mut settled) = (0i64, 0i64);
    let mut insert = tx.prepare_cached(
        "INSERT INTO settlements (hard_key, source_id, conversation_id, turn_id, \
         classification, card, card_tokens) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    )?;
    for row in observations {
        let tokens = row.tokens;
        full += tokens;
        if turn.policy != Policy::CompactAfterTerminal {
            settled += tokens;
            continue;
        }
        let time = zone.map(|z| tz::minute_label(row.ts, z));
        let card = reload_card(&CardFields {
            time: time.as_deref(),
            tool: row.tool_name.as_deref().unwrap_or(&row.kind),
            call_id: row.correlation_id.as_deref().unwrap_or(""),
            status: row.status.as_deref().unwrap_or("success"),
            source_id: &row.source_id,
            stored_chars: row.chars as usize,
            stored_utf8_bytes: row.bytes as usize,
            sha256_hex: &row.sha256,
        });
        let class = classify(row.bytes as usize, card.len());
        let (card, card_tokens) = match class {
            Classification::CompactReloadable => {
                let t = estimate_tokens(&card) as i64;
                (Some(card), t)
            }
            _ => (None, tokens),
        };
        settled += card_tokens;
        insert.execute(params![
            hk,
            row.source_id,
            turn.conversation_id,
            turn.turn_id,
            class.as_str(),
            card,
            card_tokens
        ])?;
    }
    tx.prepare_cached(
        "UPDATE turns SET full_tokens = ?1, settled_tokens = ?2 \
         WHERE turn_pk = ?3 AND hard_key = ?4",
    )?
    .execute(params![full, settled, turn.pk, hk])?;
    Ok(())
}

/// What settlement did to one turn's results.
pub(crate) fn settlement_report(
    tx: &Transaction<'_>,
    hk: &str,
    turn_id: &str,
) -> Result<SettlementReport> {
    let mut stmt = tx.prepare_cached(
        "SELECT e.source_id, COALESCE(e.correlation_id, ''), COALESCE(e.tool_name, e.kind), \
         s.classification, e.bytes, s.card, e.tokens, s.card_tokens FROM entries e \
         LEFT JOIN settlements s ON s.hard_key = e.hard_key AND s.source_id = e.source_id \
         WHERE e.hard_key = ?1 AND e.turn_id = ?2 AND e.turn_role = 'observation' \
         ORDER BY e.seq_no",
    )?;
    let mut report = SettlementReport::default();
    let rows = stmt.query_map(params![hk, turn_id], |r| {
        let source_id: String = r.get(0)?;
        let class = Classification::column(r, 3, &source_id)?;
        Ok((
            source_id,
            r.get::<_, String>(1)?,
            r.get::<_, String>(2)?,
            class,
            r.get::<_, i64>(4)?,
            r.get::<_, Option<String>>(5)?,
            r.get::<_, i64>(6)?,
            r.get::<_, Option<i64>>(7)?,
        ))
    })?;
    for row in rows {
        let (source_id, call_id, tool, class, bytes, card, tokens, card_tokens) = row?;
        let classification = class.unwrap_or(Classification::InlineFull);
        let shown = card_tokens.unwrap_or(tokens) as u64;
        if classification == Classification::CompactReloadable {
            report.folded += 1;
        }
        report.full_tokens += tokens as u64;
        report.settled_tokens += shown;
        report.results.push(SettledResult {
            source_id,
            call_id,
            tool,
            classification,
            stored_utf8_bytes: bytes as u64,
            card_utf8_bytes: card.map(|c| c.len() as u64),
            full_tokens: tokens as u64,
            settled_tokens: shown,
        });
    }
    report.saved_tokens = report.full_tokens.saturating_sub(report.settled_tokens);
    Ok(report)
}
