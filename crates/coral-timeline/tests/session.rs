//! A scripted session of 50 turns with tool outputs of 0.1–30 KB: what settlement saves, and
//! that every reload card leads back to its exact body.

mod common;

use std::collections::HashMap;

use coral_timeline::{
    BeginTurn, CompleteTurn, HistoryFormat, OpenRequest, ReadStatus, Timeline, ToolExchange, View,
    sha256_hex,
};
use serde_json::json;

use common::{Rng, T0, body, ns, temp_timeline};

const TOOLS: [&str; 4] = ["web_search", "shell", "read_file", "browser_fetch"];

/// Log-uniform size between 100 bytes and 30 KB.
fn size(rng: &mut Rng) -> usize {
    let u = rng.below(1_000_001) as f64 / 1_000_000.0;
    (100.0 * 300f64.powf(u)).round() as usize
}

struct Session {
    bodies: HashMap<String, String>,
    sizes: Vec<usize>,
}

fn run_session(t: &Timeline) -> Session {
    let ns = ns();
    let mut rng = Rng(0x5eed_2026);
    let mut bodies = HashMap::new();
    let mut sizes = Vec::new();
    let mut now = T0;
    for i in 0..50 {
        let turn = t
            .begin_turn(
                &ns,
                &BeginTurn {
                    timezone: Some("Asia/Shanghai".into()),
                    ..BeginTurn::user(format!("第 {i} 轮：帮我查一下这个问题 (question {i})"))
                },
                now,
            )
            .unwrap();
        let calls = 1 + rng.below(3);
        for c in 0..calls {
            now += 2.0;
            let bytes = size(&mut rng);
            let result = body(&mut rng, bytes);
            let tool = TOOLS[rng.below(TOOLS.len() as u64) as usize];
            let refs = t
                .record_tool_exchange(
                    &ns,
                    &turn.turn_id,
                    &ToolExchange {
                        tool_name: tool.into(),
                        call_id: format!("call_{i}_{c}"),
                        input: json!({"query": format!("q{i}.{c}"), "limit": 10}),
                        result: result.clone(),
                        ..ToolExchange::default()
                    },
                    now,
                )
                .unwrap();
            sizes.push(bytes);
            bodies.insert(refs.result.source_id, result);
        }
        // While the turn is open, its results are in the history in full.
        let open = t.history(&ns, HistoryFormat::OpenAi).unwrap();
        let shown = open.messages.last().unwrap()["content"].as_str().unwrap();
        assert!(!shown.starts_with("[compact_reloadable]"));
        now += 3.0;
        let done = t
            .complete_turn(
                &ns,
                &turn.turn_id,
                &CompleteTurn::answer(format!("第 {i} 轮的答案 (answer {i})")),
                now,
            )
            .unwrap();
        let report = done.turn.settlement.unwrap();
        assert_eq!(report.results.len(), calls as usize);
        assert_eq!(
            report.saved_tokens,
            report.full_tokens - report.settled_tokens
        );
        now += 60.0;
    }
    Session { bodies, sizes }
}

#[test]
fn fifty_turns_save_most_tokens_and_every_card_reopens_exactly() {
    let (t, dir) = temp_timeline();
    let s = run_session(&t);
    let ns = ns();
    assert!(s.sizes.iter().all(|&n| (100..=30_000).contains(&n)));
    assert!(s.sizes.iter().any(|&n| n < 256), "some results stay inline");
    assert!(s.sizes.iter().any(|&n| n > 20_000));

    let history = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    assert_eq!(history.turns, 50);
    let again = t.history(&ns, HistoryFormat::OpenAi).unwrap();
    assert_eq!(
        serde_json::to_string(&history.messages).unwrap(),
        serde_json::to_string(&again.messages).unwrap(),
        "byte-identical when nothing was written"
    );

    // Every card names an entry whose exact body comes back with the card's hash.
    let mut cards = 0;
    for m in history.messages.iter().filter(|m| m["role"] == "tool") {
        let content = m["content"].as_str().unwrap();
        if !content.starts_with("[compact_reloadable]") {
            assert!(
                s.bodies.values().any(|b| b == content),
                "inline body is exact"
            );
            continue;
        }
        cards += 1;
        let field = |name: &str| {
            content
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .unwrap()
                .to_string()
        };
        let source_id = field("source_id: ");
        let hash = field("result_hash: sha256:");
        assert!(content.ends_with(&format!(
            "reload: open_memory(memory_id=\"{source_id}\", view=\"content\", detail=\"full\")"
        )));
        let opened = t.open_memory(
            &ns,
            &source_id,
            &OpenRequest {
                view: View::Content,
                ..OpenRequest::default()
            },
        );
        assert_eq!(opened.status, ReadStatus::Ok);
        let memory = opened.payload.memory.unwrap();
        let content = memory.content.unwrap();
        assert_eq!(&content, &s.bodies[&source_id]);
        assert_eq!(sha256_hex(&content), hash);
        assert_eq!(memory.result_hash, format!("sha256:{hash}"));
        assert_eq!(field("stored_utf8_bytes: "), content.len().to_string());
    }
    // Bodies well above twice a card's size (~330 bytes) fold; bodies under 256 bytes never do.
    let folded_ids: Vec<String> = history
        .messages
        .iter()
        .filter_map(|m| m["content"].as_str())
        .filter(|c| c.starts_with("[compact_reloadable]"))
        .map(|c| {
            c.lines()
                .find_map(|l| l.strip_prefix("source_id: "))
                .unwrap()
                .to_string()
        })
        .collect();
    for (id, b) in &s.bodies {
        if b.len() >= 1000 {
            assert!(folded_ids.contains(id), "{} bytes should fold", b.len());
        }
        if b.len() < 256 {
            assert!(
                !folded_ids.contains(id),
                "{} bytes should stay inline",
                b.len()
            );
        }
    }
    assert_eq!(cards, history.folded);
    let tokens = history.tokens;
    let metrics = t.metrics(&ns, false).unwrap();
    assert_eq!(metrics.saved_tokens, tokens.saved);
    assert_eq!(metrics.folded_results as usize, cards);
    let saving = tokens.saved as f64 / tokens.full as f64;
    println!(
        "scripted session: 50 turns, {} tool results ({} folded, {:.1} KB of bodies); history \
         tokens full {} -> settled {} (saved {}, {:.1} %); database {} KB",
        s.bodies.len(),
        cards,
        s.sizes.iter().sum::<usize>() as f64 / 1024.0,
        tokens.full,
        tokens.settled,
        tokens.saved,
        saving * 100.0,
        std::fs::metadata(dir.path().join("timeline.sqlite3"))
            .map(|m| m.len() / 1024)
            .unwrap_or(0)
    );
    assert!(
        saving > 0.8,
        "settlement saved only {:.1} %",
        saving * 100.0
    );
}
