//! Rendering for a model: a summary card and a unit's entries with date headers and
//! time-of-day labels, every stored text quoted (`coral_base::push_quoted`).

use chrono_tz::Tz;
use coral_base::{one_line, push_quoted};

use crate::entry::TurnRole;
use crate::layers::{SummaryCard, SummaryLayer};
use crate::raw_window::{Unit, shown_rows};
use crate::settle::estimate_tokens;
use crate::tz;

/// `card` with its `tokens`: the estimate of its rendered line.
pub(crate) fn with_tokens(mut card: SummaryCard, zone: Tz) -> SummaryCard {
    card.tokens = estimate_tokens(&render_card(&card, zone));
    card
}

/// A summary as the context shows it:
/// `[时间范围 2026-04-01 08:00 ~ 2026-04-01 21:00 | title | sum-…]` and the body, indented.
pub(crate) fn render_card(card: &SummaryCard, zone: Tz) -> String {
    let (start, end) = if card.layer == SummaryLayer::Semantic {
        (
            tz::date_label(card.period_start, zone),
            tz::date_label(card.period_end, zone),
        )
    } else {
        (
            tz::minute_label(card.period_start, zone),
            tz::minute_label(card.period_end, zone),
        )
    };
    let mut out = format!("[时间范围 {start} ~ {end}");
    if let Some(facet) = &card.facet {
        out.push_str(" | ");
        out.push_str(facet);
    }
    out.push_str(" | ");
    out.push_str(&one_line(&card.title));
    out.push_str(" | ");
    out.push_str(&card.memory_id);
    out.push_str("]\n");
    push_indented(&mut out, &card.body);
    out
}

/// Every line of `text` indented by two spaces (every Unicode line break starts one, controls
/// are escaped: `coral_base::push_quoted`), so nothing inside quoted material can pose as a
/// header, a date or a role label of the context.
pub(crate) fn push_indented(out: &mut String, text: &str) {
    push_quoted(out, text, "  ");
}

/// One unit rendered for the context or for the summariser: a date header when the day
/// changes, then one line per entry with its time-of-day label.
pub(crate) fn render_unit(
    unit: &Unit,
    zone: Tz,
    max_chars: Option<usize>,
    last_date: &mut Option<String>,
    out: &mut String,
) {
    for row in shown_rows(unit) {
        let date = tz::date_label(row.ts, zone);
        if last_date.as_deref() != Some(date.as_str()) {
            out.push_str(&tz::date_header(row.ts, zone));
            out.push('\n');
            *last_date = Some(date);
        }
        let t = tz::local(row.ts, zone);
        let period = tz::Period::of(row.ts, zone);
        out.push_str(&format!("[{} {}] ", period.zh(), t.format("%H:%M")));
        let tool = row.tool_name.as_deref().unwrap_or(&row.kind);
        let call = row.correlation_id.as_deref().unwrap_or("");
        let label = match (row.turn_role, row.kind.as_str()) {
            (TurnRole::Action, _) => format!("assistant → {tool} ({call})"),
            (TurnRole::Observation, _) => format!("tool {tool} ({call})"),
            (_, "message.user") => "user".to_string(),
            (_, "message.assistant") => "assistant".to_string(),
            (_, kind) => format!("{} [{kind}]", row.origin.as_str()),
        };
        out.push_str(&label);
        out.push_str(":\n");
        let text = row.visible_text_in(zone);
        let text = text.as_ref();
        match max_chars {
            Some(max) if text.chars().count() > max => {
                let cut: String = text.chars().take(max).collect();
                push_indented(
                    out,
                    &format!("{cut}… [{} more characters]", text.chars().count() - max),
                );
            }
            _ => push_indented(out, text),
        }
    }
}
