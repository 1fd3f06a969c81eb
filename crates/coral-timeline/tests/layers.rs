//! Summaries and the context: compaction by the raw-token hysteresis, whole turns only, roll-ups
//! into semantic memories, LLM failures that write nothing, and a context whose prefix stays
//! byte-identical between compactions (the prefix-cache figure of issue 9).

mod common;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use coral_timeline::{
    BeginTurn, CompleteTurn, ContextRequest, EntryInput, Error, HistoryFormat, LayerSettings,
    Namespace, OpenRequest, ReadStatus, SummaryLlm, SurfaceRequest, Timeline, ToolExchange, View,
};
use serde_json::json;

use common::{Rng, T0, dump, ns, temp_timeline};

/// A summariser answering from the transcript it is sent: the title names the first and last
/// user lines, anchors are the `#tags` found. Or, when told to, a failure.
struct Scripted {
    calls: AtomicUsize,
    fail: Mutex<Option<String>>,
    last_prompt: Mutex<String>,
}

impl Scripted {
    fn new() -> Scripted {
        Scripted {
            calls: AtomicUsize::new(0),
            fail: Mutex::new(None),
            last_prompt: Mutex::new(String::new()),
        }
    }
}

fn tags(text: &str) -> Vec<String> {
    let mut out: Vec<String> = text
        .split(|c: char| c.is_whitespace() || c == '"' || c == ',')
        .filter_map(|w| w.strip_prefix('#'))
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    out.sort();
    out.dedup();
    out
}

impl SummaryLlm for Scripted {
    fn complete(&self, system: &str, user: &str) -> Result<String, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        *self.last_prompt.lock().unwrap() = user.to_string();
        if let Some(answer) = self.fail.lock().unwrap().clone() {
            return if answer == "down" {
                Err("connection refused".into())
            } else {
                Ok(answer)
            };
        }
        let anchors = tags(user);
        if system.contains("semantic") && user.contains("episodic summaries") {
            return Ok(json!({"memories": [{
                "title": "长期偏好",
                "content": format!("用户长期关注 {}", anchors.join("、")),
                "facet": "preference",
                "entity_anchors": anchors,
                "topic_terms": ["偏好"],
            }]})
            .to_string());
        }
        let turns = user.matches("] user:").count();
        Ok(json!({
            "title": format!("{turns} 轮对话"),
            "summary": format!("讨论了 {}", anchors.join(" #")),
            "hint": "回顾",
            "entity_anchors": anchors,
            "topic_terms": ["对话"],
        })
        .to_string())
    }
}

/// One finished turn: a user line, maybe a tool call with a long result, an answer; `i` also
/// sets how long the lines are (a question of 1–3 sentences, an answer of 2–7).
fn turn(t: &Timeline, ns: &Namespace, i: usize, tool_bytes: usize, at: f64) {
    let turn_id = begin(t, ns, i, at);
    finish(t, ns, &turn_id, i, tool_bytes, at);
}

/// The user line of turn `i`; returns the open turn's id.
fn begin(t: &Timeline, ns: &Namespace, i: usize, at: f64) -> String {
    let ask = "请帮我看看这个方案的细节和可能的风险。".repeat(1 + i % 3);
    t.begin_turn(
        ns,
        &BeginTurn {
            stimuli: vec![EntryInput::user(format!("第{i}个问题 #话题{} {ask}", i % 7)).at(at)],
            ..BeginTurn::default()
        },
        at,
    )
    .unwrap()
    .turn_id
}

/// The rest of turn `i`: maybe a tool call with a long result, then the answer.
fn finish(t: &Timeline, ns: &Namespace, turn_id: &str, i: usize, tool_bytes: usize, at: f64) {
    let answer = "这个方案整体可行，但要注意预算和时间安排。".repeat(2 + i % 6);
    let handle = TurnRef { turn_id };
    if tool_bytes > 0 {
        t.record_tool_exchange(
            ns,
            handle.turn_id,
            &ToolExchange {
                tool_name: "shell".into(),
                call_id: format!("call_{i}"),
                input: json!({"cmd": format!("run {i}")}),
                result: "x".repeat(tool_bytes),
                ..ToolExchange::default()
            },
            at + 1.0,
        )
        .unwrap();
    }
    t.complete_turn(
        ns,
        handle.turn_id,
        &CompleteTurn::answer(format!("回答{i}：{answer}")),
        at + 2.0,
    )
    .unwrap();
}

struct TurnRef<'a> {
    turn_id: &'a str,
}

fn utc() -> chrono_tz::Tz {
    chrono_tz::UTC
}

/// What a prefix run measures: the context alone (the request before a turn's stimulus), or
/// the whole surface (the request with the open turn after the context).
#[derive(Clone, Copy, PartialEq)]
enum Measure {
    Context,
    Surface,
}

/// A surface as a provider's chat template renders it: each message's role, text (or calls)
/// and end mark in turn.
fn rendered(messages: &[serde_json::Value]) -> String {
    messages
        .iter()
        .map(|m| {
            let text = match m["content"].as_str() {
                Some(t) => t.to_string(),
                None => m["tool_calls"].to_string(),
            };
            format!("<|{}|>\n{text}<|end|>\n", m["role"].as_str().unwrap())
        })
        .collect()
}

/// The part of a rendered surface that must start the next request: its context message up to
/// its end mark (the context only grows at its end).
fn stable_part(messages: &[serde_json::Value]) -> String {
    let m = &messages[0];
    format!(
        "<|{}|>\n{}",
        m["role"].as_str().unwrap(),
        m["content"].as_str().unwrap()
    )
}

/// Prefix-cache figures over a scripted conversation of `turns` turns, compacting whenever
/// due: (requests whose start is the previous one's stable part, prefix bytes reused / bytes of
/// previous requests, compactions). The stable part of a context is all of it; of a surface,
/// its context message (the open turn after it closes and moves into the context).
fn prefix_run(
    turns: usize,
    settings: &LayerSettings,
    measure: Measure,
) -> (f64, f64, usize, usize) {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let llm = Scripted::new();
    let mut rng = Rng(42);
    let req = ContextRequest {
        timezone: Some("Asia/Shanghai".into()),
        settings: settings.clone(),
    };
    let surface_req = SurfaceRequest {
        timezone: Some("Asia/Shanghai".into()),
        settings: settings.clone(),
        ..SurfaceRequest::default()
    };
    let (mut hits, mut requests, mut reused, mut offered) = (0usize, 0usize, 0u64, 0u64);
    let mut previous: Option<(String, String)> = None;
    let mut compactions = 0;
    for i in 0..turns {
        let at = T0 + i as f64 * 600.0;
        let (request, stable) = match measure {
            // The request of turn i: the context before its stimulus.
            Measure::Context => {
                let text = t.context(&ns, &req).unwrap().text;
                (text.clone(), text)
            }
            Measure::Surface => (String::new(), String::new()),
        };
        let turn_id = begin(&t, &ns, i, at);
        let (request, stable) = if measure == Measure::Surface {
            // The request of turn i: the surface with its stimulus.
            let surface = t.surface(&ns, &surface_req).unwrap();
            let again = t.surface(&ns, &surface_req).unwrap();
            assert_eq!(
                serde_json::to_string(&surface).unwrap(),
                serde_json::to_string(&again).unwrap(),
                "byte-identical between writes"
            );
            assert_eq!(surface.open_turns, vec![turn_id.clone()]);
            assert_eq!(surface.context_messages, 1);
            (rendered(&surface.messages), stable_part(&surface.messages))
        } else {
            (request, stable)
        };
        if let Some((prev, prev_stable)) = &previous {
            requests += 1;
            if request.starts_with(prev_stable.as_str()) {
                hits += 1;
            }
            let common = prev
                .bytes()
                .zip(request.bytes())
                .take_while(|(a, b)| a == b)
                .count();
            reused += common as u64;
            offered += prev.len() as u64;
        }
        previous = Some((request, stable));
        let tool = if rng.below(10) < 3 {
            1_000 + rng.below(3_000) as usize
        } else {
            0
        };
        finish(&t, &ns, &turn_id, i, tool, at);
        let status = t.layer_status(&ns, settings).unwrap();
        if status.compaction_due || status.rollup_due {
            let report = t.compact(&ns, settings, &llm, utc(), at + 3.0).unwrap();
            compactions += usize::from(report.episodic.is_some());
        }
    }
    (
        hits as f64 / requests as f64,
        reused as f64 / offered as f64,
        compactions,
        requests,
    )
}

#[test]
fn the_context_prefix_is_stable_between_compactions() {
    let settings = LayerSettings::default();
    let (hit_rate, byte_reuse, compactions, requests) =
        prefix_run(300, &settings, Measure::Context);
    println!(
        "300 turns, default settings: {requests} requests, prefix hit rate {hit_rate:.3}, \
         prefix bytes reused {byte_reuse:.3}, {compactions} compactions"
    );
    assert!(compactions >= 2, "the script must reach the trigger");
    assert!(hit_rate >= 0.9, "prefix hit rate {hit_rate}");
    assert!(byte_reuse >= 0.9, "byte reuse {byte_reuse}");
    // Without the hysteresis (a compaction every turn) the same measure collapses, so the
    // figure above measures something.
    let eager = LayerSettings {
        raw_token_trigger: 100,
        raw_token_batch_ratio: 0.05,
        ..LayerSettings::default()
    };
    let (eager_rate, _, _, _) = prefix_run(60, &eager, Measure::Context);
    assert!(eager_rate < 0.5, "eager compaction hit rate {eager_rate}");
}

#[test]
fn the_surface_is_byte_stable_between_compactions() {
    let settings = LayerSettings::default();
    let (hit_rate, byte_reuse, compactions, requests) =
        prefix_run(300, &settings, Measure::Surface);
    println!(
        "300 turns, the whole surface: {requests} requests, prefix hit rate {hit_rate:.3}, \
         prefix bytes reused {byte_reuse:.3}, {compactions} compactions"
    );
    assert!(compactions >= 2, "the script must reach the trigger");
    assert!(hit_rate >= 0.9, "prefix hit rate {hit_rate}");
    assert!(byte_reuse >= 0.9, "byte reuse {byte_reuse}");
    let eager = LayerSettings {
        raw_token_trigger: 100,
        raw_token_batch_ratio: 0.05,
        ..LayerSettings::default()
    };
    let (eager_rate, _, _, _) = prefix_run(60, &eager, Measure::Surface);
    assert!(eager_rate < 0.5, "eager compaction hit rate {eager_rate}");
}

#[test]
fn the_surface_is_the_context_then_the_open_turn_in_provider_shape() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    turn(&t, &ns, 0, 2_000, T0);
    let open = begin(&t, &ns, 1, T0 + 600.0);
    t.record_tool_exchange(
        &ns,
        &open,
        &ToolExchange {
            tool_name: "shell".into(),
            call_id: "call_now".into(),
            input: json!({"cmd": "ls"}),
            result: "y".repeat(3_000),
            ..ToolExchange::default()
        },
        T0 + 601.0,
    )
    .unwrap();
    let req = SurfaceRequest {
        timezone: Some("Asia/Shanghai".into()),
        ..SurfaceRequest::default()
    };
    let surface = t.surface(&ns, &req).unwrap();
    let ctx = t
        .context(
            &ns,
            &ContextRequest {
                timezone: Some("Asia/Shanghai".into()),
                ..ContextRequest::default()
            },
        )
        .unwrap();
    assert_eq!(surface.messages[0]["role"], "user");
    assert_eq!(surface.messages[0]["content"], ctx.text.as_str());
    assert_eq!(surface.timezone, "Asia/Shanghai");
    // The open turn, natively and in full: the stimulus once, the call, its whole result.
    let roles: Vec<&str> = surface.messages[1..]
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool"]);
    assert!(
        surface.messages[1]["content"]
            .as_str()
            .unwrap()
            .starts_with("第1个问题")
    );
    assert_eq!(surface.messages[2]["tool_calls"][0]["id"], "call_now");
    assert_eq!(surface.messages[3]["content"], "y".repeat(3_000).as_str());
    let stimulus_copies = rendered(&surface.messages).matches("第1个问题").count();
    assert_eq!(
        stimulus_copies, 1,
        "the current input is in the surface once"
    );
    // With no open turn, the context alone.
    t.complete_turn(&ns, &open, &CompleteTurn::answer("好"), T0 + 602.0)
        .unwrap();
    let closed = t.surface(&ns, &req).unwrap();
    assert_eq!(closed.messages.len(), 1);
    assert!(closed.open_turns.is_empty());
    assert!(
        closed.messages[0]["content"]
            .as_str()
            .unwrap()
            .starts_with(surface.messages[0]["content"].as_str().unwrap())
    );
    let system = t
        .surface(
            &ns,
            &SurfaceRequest {
                context_role: coral_timeline::ContextRole::System,
                format: HistoryFormat::Plain,
                ..SurfaceRequest::default()
            },
        )
        .unwrap();
    assert_eq!(system.messages[0]["role"], "system");
}

#[test]
fn compaction_summarises_whole_old_turns_and_keeps_the_newest_raw() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let llm = Scripted::new();
    let settings = LayerSettings {
        raw_token_trigger: 1_500,
        ..LayerSettings::default()
    };
    let mut at = T0;
    for i in 0..12 {
        turn(&t, &ns, i, if i % 3 == 0 { 1_200 } else { 0 }, at);
        at += 60.0;
    }
    // A turn still open: never summarised, never shown in the context.
    let open = t
        .begin_turn(ns_ref(&ns), &BeginTurn::user("还没结束 #未完"), at)
        .unwrap();
    t.append_action(
        &ns,
        &open.turn_id,
        &EntryInput::new("tool.shell.call", r#"{"cmd":"sleep"}"#).correlation("call_open"),
        at + 1.0,
    )
    .unwrap();
    let before = t.layer_status(&ns, &settings).unwrap();
    assert!(before.compaction_due, "{before:?}");
    let report = t.compact(&ns, &settings, &llm, utc(), at + 5.0).unwrap();
    let summary = report.episodic.clone().expect("a summary");
    assert!(report.summarised_units >= 1 && report.summarised_units < 12);
    // About 67 % of the raw tokens went, the newest turns stayed.
    let after = report.status.clone();
    assert!(
        after.raw_tokens < before.raw_tokens / 2,
        "{before:?} -> {after:?}"
    );
    assert!(after.raw_units >= 1);
    assert_eq!(after.compactions, 1);
    // The summary's period is its sources' first and last entry.
    assert_eq!(summary.period_start, T0);
    assert!(summary.period_end < at && summary.period_end > T0);
    assert_eq!(summary.source_count, report.summarised_units);
    // Sources are whole turns: each has its stimulus, its calls with results, its answer.
    let opened = t.open_memory(
        &ns,
        &summary.memory_id,
        &OpenRequest {
            view: View::Sources,
            page_size: 50,
            ..OpenRequest::default()
        },
    );
    assert_eq!(opened.status, ReadStatus::Ok, "{opened:?}");
    let sources = opened.payload.summary.unwrap().sources.unwrap();
    assert_eq!(sources.units.len(), report.summarised_units);
    for unit in &sources.units {
        let calls = unit
            .entries
            .iter()
            .filter(|e| e.turn_role == "action")
            .count();
        let results = unit
            .entries
            .iter()
            .filter(|e| e.turn_role == "observation")
            .count();
        assert_eq!(calls, results);
        assert_eq!(unit.entries.last().unwrap().turn_role, "final");
        assert_eq!(unit.turn_status.as_deref(), Some("completed"));
    }
    // The context: summary first, then the raw turns left, and not the open turn.
    let ctx = context_of(&t, &ns, &settings);
    assert_eq!(ctx.episodic, std::slice::from_ref(&summary.memory_id));
    assert_eq!(ctx.open_turns, 1);
    assert!(!ctx.text.contains("还没结束"));
    assert!(ctx.text.contains("[阶段摘要 episodic summaries]"));
    assert!(ctx.text.contains(&format!("| {}]", summary.memory_id)));
    assert!(
        !ctx.text.contains("第0个问题"),
        "summarised turns leave the raw window"
    );
    assert!(ctx.text.contains("第11个问题"));
    assert!(ctx.text.contains("[日期 2026-04-10 周五]"));
    // Nothing is due any more: a second call does nothing and asks nothing.
    let calls = llm.calls.load(Ordering::SeqCst);
    let again = t.compact(&ns, &settings, &llm, utc(), at + 6.0).unwrap();
    assert!(again.episodic.is_none() && again.semantic.is_empty());
    assert_eq!(llm.calls.load(Ordering::SeqCst), calls);
}

fn ns_ref(ns: &Namespace) -> &Namespace {
    ns
}

#[test]
fn ten_summaries_roll_five_up_into_semantic_memories() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let llm = Scripted::new();
    let settings = LayerSettings {
        raw_token_trigger: 150,
        ..LayerSettings::default()
    };
    let mut at = T0;
    let mut rolled = None;
    for i in 0..200 {
        turn(&t, &ns, i, 0, at);
        at += 60.0;
        let status = t.layer_status(&ns, &settings).unwrap();
        if status.compaction_due || status.rollup_due {
            let report = t.compact(&ns, &settings, &llm, utc(), at).unwrap();
            if !report.semantic.is_empty() {
                rolled = Some(report);
                break;
            }
        }
    }
    let report = rolled.expect("a roll-up within 200 turns");
    assert_eq!(report.rolled_up, 5);
    assert_eq!(report.status.episodic_pending, 5);
    let memory = &report.semantic[0];
    assert_eq!(memory.layer, coral_timeline::SummaryLayer::Semantic);
    assert_eq!(memory.facet.as_deref(), Some("preference"));
    assert_eq!(memory.source_count, 5);
    // Its sources are the five rolled-up summaries, in order, paged two at a time.
    let page = |cursor: Option<String>| {
        t.open_memory(
            &ns,
            &memory.memory_id,
            &OpenRequest {
                view: View::Sources,
                page_size: 2,
                cursor,
                ..OpenRequest::default()
            },
        )
        .payload
        .summary
        .unwrap()
        .sources
        .unwrap()
    };
    let first = page(None);
    assert_eq!(
        (first.summaries.len(), first.total, first.remaining),
        (2, 5, 3)
    );
    let second = page(first.next_cursor.clone());
    let third = page(second.next_cursor.clone());
    assert_eq!(third.summaries.len(), 1);
    assert!(third.next_cursor.is_none());
    let mut ids: Vec<String> = first
        .summaries
        .iter()
        .map(|c| c.memory_id.clone())
        .collect();
    ids.extend(second.summaries.iter().map(|c| c.memory_id.clone()));
    ids.extend(third.summaries.iter().map(|c| c.memory_id.clone()));
    assert!(first.summaries.iter().all(|c| c.rolled_into.is_some()));
    ids.dedup();
    assert_eq!(ids.len(), 5);
    // The context shows the memory and only the summaries not rolled up.
    let ctx = context_of(&t, &ns, &settings);
    assert_eq!(ctx.semantic, std::slice::from_ref(&memory.memory_id));
    assert_eq!(ctx.episodic.len(), 5);
    assert!(ids.iter().all(|id| !ctx.episodic.contains(id)));
    let semantic_at = ctx.text.find("[长期记忆 semantic memory]").unwrap();
    let episodic_at = ctx.text.find("[阶段摘要 episodic summaries]").unwrap();
    let raw_at = ctx.text.find("[近期对话 recent conversation]").unwrap();
    assert!(semantic_at < episodic_at && episodic_at < raw_at);
    // A cursor of one memory does not open another's sources.
    let other = &ctx.episodic[0];
    let misuse = t.open_memory(
        &ns,
        other,
        &OpenRequest {
            view: View::Sources,
            cursor: first.next_cursor,
            ..OpenRequest::default()
        },
    );
    assert_eq!(misuse.status, ReadStatus::InvalidFilter);
}

#[test]
fn llm_failures_write_nothing_and_the_next_call_retries() {
    let (t, dir) = temp_timeline();
    let ns = ns();
    let llm = Scripted::new();
    let settings = LayerSettings {
        raw_token_trigger: 300,
        ..LayerSettings::default()
    };
    for i in 0..10 {
        turn(&t, &ns, i, 0, T0 + i as f64 * 60.0);
    }
    assert!(t.layer_status(&ns, &settings).unwrap().compaction_due);
    let path = dir.path().join("timeline.sqlite3");
    let before = dump(&path);
    for failure in [
        "down",
        "I'm sorry, I can't do that.",
        "{\"title\": \"t\"}",
        "{\"title\": \"t\", \"summary\": \"s\", \"entity_anchors\": {\"a\": 1}}",
        "[\"not\", \"an object\"]",
    ] {
        *llm.fail.lock().unwrap() = Some(failure.to_string());
        let err = t
            .compact(&ns, &settings, &llm, utc(), T0 + 900.0)
            .unwrap_err();
        assert!(matches!(err, Error::Llm(_)), "{failure}: {err}");
        assert_eq!(err.code(), "llm_failed");
        assert_eq!(dump(&path), before, "{failure} changed the file");
    }
    *llm.fail.lock().unwrap() = None;
    let report = t.compact(&ns, &settings, &llm, utc(), T0 + 900.0).unwrap();
    assert!(report.episodic.is_some());
    assert_ne!(dump(&path), before);
}

#[test]
fn a_slow_model_does_not_block_readers_or_writers() {
    use std::sync::atomic::AtomicBool;
    use std::sync::mpsc::{Receiver, Sender, channel};
    use std::time::Duration;
    /// Says when it is asked, then answers only once released (or gives up after 10 s, which
    /// it remembers: the caller was blocked).
    struct SlowLlm {
        asked: Mutex<Sender<()>>,
        release: Mutex<Receiver<()>>,
        gave_up: AtomicBool,
    }
    impl SummaryLlm for SlowLlm {
        fn complete(&self, _: &str, _: &str) -> Result<String, String> {
            self.asked.lock().unwrap().send(()).unwrap();
            let released = self
                .release
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(10));
            self.gave_up.store(released.is_err(), Ordering::SeqCst);
            Ok(json!({"title": "t", "summary": "s"}).to_string())
        }
    }
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let settings = LayerSettings {
        raw_token_trigger: 300,
        ..LayerSettings::default()
    };
    for i in 0..10 {
        turn(&t, &ns, i, 0, T0 + i as f64 * 60.0);
    }
    let (asked_tx, asked) = channel();
    let (release, release_rx) = channel();
    let llm = SlowLlm {
        asked: Mutex::new(asked_tx),
        release: Mutex::new(release_rx),
        gave_up: AtomicBool::new(false),
    };
    std::thread::scope(|s| {
        let compaction = s.spawn(|| t.compact(&ns, &settings, &llm, utc(), T0 + 2_000.0));
        asked.recv().unwrap();
        // While the model thinks, the timeline answers and takes writes.
        turn(&t, &ns, 99, 0, T0 + 1_000.0);
        let text = ctx(&t, &ns, &settings);
        assert!(text.contains("第99个问题"));
        release.send(()).unwrap();
        let report = compaction.join().unwrap().unwrap();
        assert!(report.episodic.is_some());
    });
    assert!(
        !llm.gave_up.load(Ordering::SeqCst),
        "the reads and writes waited for the model"
    );
}

#[test]
fn settings_and_bad_zones_are_refused() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let bad = LayerSettings {
        episodic_compact_batch_size: 0,
        ..LayerSettings::default()
    };
    assert!(matches!(
        t.layer_status(&ns, &bad),
        Err(Error::InvalidInput(_))
    ));
    let err = t
        .context(
            &ns,
            &ContextRequest {
                timezone: Some("Mars/Olympus".into()),
                ..ContextRequest::default()
            },
        )
        .unwrap_err();
    assert!(err.to_string().contains("IANA"), "{err}");
}

#[test]
fn a_compaction_summarises_only_what_fits_in_one_request() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let llm = Scripted::new();
    let settings = LayerSettings {
        raw_token_trigger: 1_000,
        ..LayerSettings::default()
    };
    // 80 turns whose answers are 1,500 characters each: about 130,000 characters of transcript.
    for i in 0..80 {
        let at = T0 + i as f64 * 60.0;
        let handle = t
            .begin_turn(&ns, &BeginTurn::user(format!("问题 {i}")), at)
            .unwrap();
        t.complete_turn(
            &ns,
            &handle.turn_id,
            &CompleteTurn::answer(format!("{i} ").repeat(500)),
            at + 1.0,
        )
        .unwrap();
    }
    let report = t
        .compact(&ns, &settings, &llm, utc(), T0 + 9_999.0)
        .unwrap();
    let prompt = llm.last_prompt.lock().unwrap().clone();
    let shown = prompt.matches("] user:").count();
    assert_eq!(report.summarised_units, shown);
    assert!(shown > 1 && shown < 53, "{shown} turns in one request");
    assert!(
        prompt.chars().count() < 61_000,
        "{}",
        prompt.chars().count()
    );
    // What was not shown is still raw, and the next call summarises more.
    assert!(report.status.compaction_due);
    let next = t
        .compact(&ns, &settings, &llm, utc(), T0 + 9_999.0)
        .unwrap();
    assert!(next.summarised_units >= 1);
    assert_eq!(next.status.compactions, 2);
}

/// The context of `ns` with `settings`, in Shanghai time.
fn context_of(t: &Timeline, ns: &Namespace, settings: &LayerSettings) -> coral_timeline::Context {
    t.context(
        ns,
        &ContextRequest {
            timezone: Some("Asia/Shanghai".into()),
            settings: settings.clone(),
        },
    )
    .unwrap()
}

/// Its text.
fn ctx(t: &Timeline, ns: &Namespace, settings: &LayerSettings) -> String {
    context_of(t, ns, settings).text
}

#[test]
fn overlapping_turns_and_late_aborts_only_append_to_the_context() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let settings = LayerSettings::default();
    turn(&t, &ns, 0, 0, T0);
    let mut previous = ctx(&t, &ns, &settings);
    let step = |what: &str, previous: &mut String| {
        let now = ctx(&t, &ns, &settings);
        assert!(
            now.starts_with(previous.as_str()),
            "{what}: the context changed before its end\n--- before\n{previous}\n--- after\n{now}"
        );
        *previous = now;
    };
    // A turn stays open while a reminder (a standalone entry) is recorded, then completes.
    let open = t
        .begin_turn(&ns, &BeginTurn::user("长任务开始"), T0 + 100.0)
        .unwrap();
    step("begin", &mut previous);
    t.record_entry(
        &ns,
        &EntryInput::new("event.reminder", "提醒：三点开会").at(T0 + 110.0),
        T0 + 110.0,
    )
    .unwrap();
    step("reminder during an open turn", &mut previous);
    t.complete_turn(
        &ns,
        &open.turn_id,
        &CompleteTurn::answer("长任务完成"),
        T0 + 120.0,
    )
    .unwrap();
    step("the open turn completes", &mut previous);
    // A turn left open (its process died), a later one completes, then recovery aborts the
    // first: it appears at the end, not in the middle.
    let stale = t
        .begin_turn(&ns, &BeginTurn::user("被遗忘的任务"), T0 + 200.0)
        .unwrap();
    turn(&t, &ns, 1, 0, T0 + 300.0);
    step("a later turn completes", &mut previous);
    t.abort_turn(&ns, &stale.turn_id, Some("process gone"), T0 + 400.0)
        .unwrap();
    step("the stale turn is aborted", &mut previous);
    assert!(
        previous.ends_with(&format!("{}\n", "  被遗忘的任务")),
        "{previous}"
    );
    // Across midnight (Shanghai) a new date header is appended, nothing else changes.
    turn(&t, &ns, 2, 0, T0 + 16.5 * 3600.0);
    step("past midnight", &mut previous);
    assert!(previous.contains("[日期 2026-04-11 周六]"));
}

#[test]
fn an_open_turn_does_not_hold_compaction_back() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let llm = Scripted::new();
    let settings = LayerSettings {
        raw_token_trigger: 1_000,
        ..LayerSettings::default()
    };
    let stale = t
        .begin_turn(&ns, &BeginTurn::user("一直没有结束的任务"), T0)
        .unwrap();
    for i in 0..12 {
        turn(&t, &ns, i, 0, T0 + 60.0 * (i + 1) as f64);
    }
    let status = t.layer_status(&ns, &settings).unwrap();
    assert!(status.compaction_due, "{status:?}");
    let report = t
        .compact(&ns, &settings, &llm, utc(), T0 + 5_000.0)
        .unwrap();
    assert!(report.summarised_units >= 1);
    // The open turn is neither summarised nor lost: it shows up once it closes.
    t.complete_turn(
        &ns,
        &stale.turn_id,
        &CompleteTurn::answer("终于完成"),
        T0 + 6_000.0,
    )
    .unwrap();
    let text = ctx(&t, &ns, &settings);
    assert!(text.contains("一直没有结束的任务") && text.ends_with("  终于完成\n"));
}

#[test]
fn a_failed_roll_up_keeps_the_compaction_and_says_so() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let llm = Scripted::new();
    let settings = LayerSettings {
        raw_token_trigger: 150,
        episodic_compact_trigger_count: 3,
        episodic_compact_batch_size: 2,
        ..LayerSettings::default()
    };
    let mut at = T0;
    // Two summaries, then raw past the trigger again.
    let mut i = 0;
    while t.layer_status(&ns, &settings).unwrap().episodic_pending < 2 {
        turn(&t, &ns, i, 0, at);
        at += 60.0;
        i += 1;
        if t.layer_status(&ns, &settings).unwrap().compaction_due {
            t.compact(&ns, &settings, &llm, utc(), at).unwrap();
        }
    }
    while !t.layer_status(&ns, &settings).unwrap().compaction_due {
        turn(&t, &ns, i, 0, at);
        at += 60.0;
        i += 1;
    }
    // The summary request succeeds, the roll-up request after it fails.
    struct SecondFails(AtomicUsize, Scripted);
    impl SummaryLlm for SecondFails {
        fn complete(&self, system: &str, user: &str) -> Result<String, String> {
            if self.0.fetch_add(1, Ordering::SeqCst) == 1 {
                return Err("503 overloaded".into());
            }
            self.1.complete(system, user)
        }
    }
    let flaky = SecondFails(AtomicUsize::new(0), Scripted::new());
    let report = t.compact(&ns, &settings, &flaky, utc(), at).unwrap();
    assert!(report.episodic.is_some());
    assert!(report.semantic.is_empty());
    let why = report.rollup_error.clone().unwrap();
    assert!(
        why.starts_with("llm_failed:") && why.contains("503"),
        "{why}"
    );
    assert_eq!(report.status.episodic_pending, 3);
    assert!(report.status.rollup_due);
    // The next call rolls up.
    let again = t.compact(&ns, &settings, &llm, utc(), at + 1.0).unwrap();
    assert_eq!(again.rolled_up, 2);
    assert!(again.rollup_error.is_none());
}

#[test]
fn a_version_1_file_migrates_with_its_closed_turns_in_the_context() {
    let (t, dir) = temp_timeline();
    let ns = ns();
    for i in 0..3 {
        turn(&t, &ns, i, 0, T0 + 60.0 * i as f64);
    }
    t.record_entry(
        &ns,
        &EntryInput::user("单独的一条").at(T0 + 500.0),
        T0 + 500.0,
    )
    .unwrap();
    let open = t
        .begin_turn(&ns, &BeginTurn::user("没结束"), T0 + 600.0)
        .unwrap();
    let before = ctx(&t, &ns, &LayerSettings::default());
    drop(t);
    // Take the file back to schema 1, as an older build left it.
    let path = dir.path().join("timeline.sqlite3");
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute_batch(
        "DROP TABLE forgotten; DROP TABLE forgotten_entries; DELETE FROM meta \
         WHERE key = 'zeroed'; DROP TABLE summaries; DROP TABLE summary_sources; \
         DROP TABLE closures; DROP TABLE compaction; DROP TABLE vectors; \
         PRAGMA user_version = 1;",
    )
    .unwrap();
    drop(conn);
    let t = Timeline::open(&path).unwrap();
    assert_eq!(t.migrated_from(), 1);
    assert_eq!(ctx(&t, &ns, &LayerSettings::default()), before);
    t.complete_turn(
        &ns,
        &open.turn_id,
        &CompleteTurn::answer("现在结束了"),
        T0 + 700.0,
    )
    .unwrap();
    let after = ctx(&t, &ns, &LayerSettings::default());
    assert!(after.starts_with(&before) && after.ends_with("  现在结束了\n"));
}

/// Summaries about one person's gym habit; a roll-up that sees a kept memory says it updates
/// it, with `second_anchors` as the new memory's anchors.
struct Habit {
    second_anchors: Vec<&'static str>,
    second_topics: Vec<&'static str>,
}

impl SummaryLlm for Habit {
    fn complete(&self, system: &str, user: &str) -> Result<String, String> {
        if !system.contains("semantic") {
            return Ok(json!({"title": "健身", "summary": "小王每天早上去健身房",
                              "entity_anchors": ["小王"], "topic_terms": ["健身"]})
            .to_string());
        }
        let kept = user
            .split("\"id\":\"")
            .nth(1)
            .map(|rest| rest.split('"').next().unwrap().to_string());
        let memory = match kept {
            None => json!({"title": "小王的习惯", "content": "小王早上健身", "facet": "preference",
                           "entity_anchors": ["小王", "健身房"], "topic_terms": ["健身", "早起"]}),
            Some(id) => json!({"title": "小王的习惯（更新）", "content": "小王改成晚上健身",
                               "facet": "preference", "updates": id,
                               "entity_anchors": self.second_anchors, "topic_terms": self.second_topics}),
        };
        Ok(json!({"memories": [memory]}).to_string())
    }
}

/// Roll up twice with `llm`; returns the two roll-up reports.
fn two_rollups(
    t: &Timeline,
    ns: &Namespace,
    llm: &dyn SummaryLlm,
) -> (coral_timeline::CompactReport, coral_timeline::CompactReport) {
    let settings = LayerSettings {
        raw_token_trigger: 150,
        episodic_compact_trigger_count: 3,
        episodic_compact_batch_size: 2,
        ..LayerSettings::default()
    };
    let mut reports = Vec::new();
    let mut at = T0;
    for i in 0..400 {
        turn(t, ns, i, 0, at);
        at += 60.0;
        let status = t.layer_status(ns, &settings).unwrap();
        if status.compaction_due || status.rollup_due {
            let r = t.compact(ns, &settings, llm, utc(), at).unwrap();
            assert!(r.rollup_error.is_none(), "{:?}", r.rollup_error);
            if r.rolled_up > 0 {
                reports.push(r);
                if reports.len() == 2 {
                    break;
                }
            }
        }
    }
    let second = reports.pop().expect("two roll-ups");
    (reports.pop().unwrap(), second)
}

#[test]
fn a_roll_up_reinforces_a_kept_memory_about_the_same_thing() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let llm = Habit {
        second_anchors: vec!["小王", "健身房"],
        second_topics: vec!["健身"],
    };
    let (first, second) = two_rollups(&t, &ns, &llm);
    let old = &first.semantic[0];
    let new = &second.semantic[0];
    assert_eq!(second.reinforced, std::slice::from_ref(&old.memory_id));
    // The new memory covers both periods and both batches of sources.
    assert_eq!(new.period_start, old.period_start);
    assert!(new.period_end > old.period_end);
    assert_eq!(new.source_count, 4);
    let sources = t
        .open_memory(
            &ns,
            &new.memory_id,
            &OpenRequest {
                view: View::Sources,
                page_size: 50,
                ..OpenRequest::default()
            },
        )
        .payload
        .summary
        .unwrap()
        .sources
        .unwrap();
    assert_eq!(sources.total, 4);
    // Only the new one is current: in the context, the catalogue and retrieval.
    let text = ctx(&t, &ns, &LayerSettings::default());
    assert!(text.contains("小王改成晚上健身") && !text.contains("小王早上健身"));
    let opened = t.open_memory(&ns, &old.memory_id, &OpenRequest::default());
    assert_eq!(
        opened
            .payload
            .summary
            .unwrap()
            .summary
            .superseded_by
            .as_deref(),
        Some(new.memory_id.as_str())
    );
    let catalogue = t.browse_memory(
        &ns,
        &coral_timeline::BrowseRequest {
            node_types: vec!["semantic".into()],
            ..coral_timeline::BrowseRequest::default()
        },
    );
    assert_eq!(catalogue.total, 1);
    let found = t.retrieve_for_turn(
        &ns,
        &coral_timeline::RetrieveRequest {
            query: "小王 健身".into(),
            include_visible: true,
            source_layers: vec!["semantic_summary".into()],
            ..coral_timeline::RetrieveRequest::default()
        },
        None,
    );
    let ids: Vec<&str> = found.hits.iter().map(|h| h.memory_id.as_str()).collect();
    assert_eq!(ids, [new.memory_id.as_str()]);
}

#[test]
fn a_shared_name_alone_does_not_merge_memories() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    // The model claims an update, but the memories only share the person.
    let llm = Habit {
        second_anchors: vec!["小王", "VRChat"],
        second_topics: vec!["游戏"],
    };
    let (first, second) = two_rollups(&t, &ns, &llm);
    assert!(second.reinforced.is_empty());
    assert_eq!(second.status.semantic, 2);
    let text = ctx(&t, &ns, &LayerSettings::default());
    assert!(text.contains(&first.semantic[0].memory_id));
    assert!(text.contains(&second.semantic[0].memory_id));
}

#[test]
fn a_compaction_another_process_finished_first_writes_nothing() {
    let (t, dir) = temp_timeline();
    let ns = ns();
    let settings = LayerSettings {
        raw_token_trigger: 300,
        ..LayerSettings::default()
    };
    for i in 0..10 {
        turn(&t, &ns, i, 0, T0 + i as f64 * 60.0);
    }
    // Another handle on the file (as another process would be) compacts while this one's model
    // is still answering.
    let other = Timeline::open(dir.path().join("timeline.sqlite3")).unwrap();
    struct Racing<'a> {
        other: &'a Timeline,
        ns: &'a Namespace,
        settings: &'a LayerSettings,
    }
    impl SummaryLlm for Racing<'_> {
        fn complete(&self, system: &str, user: &str) -> Result<String, String> {
            let report = self
                .other
                .compact(
                    self.ns,
                    self.settings,
                    &Scripted::new(),
                    utc(),
                    T0 + 1_000.0,
                )
                .unwrap();
            assert!(report.episodic.is_some());
            Scripted::new().complete(system, user)
        }
    }
    let racing = Racing {
        other: &other,
        ns: &ns,
        settings: &settings,
    };
    let err = t
        .compact(&ns, &settings, &racing, utc(), T0 + 1_000.0)
        .unwrap_err();
    assert!(matches!(err, Error::Conflict(_)), "{err}");
    // Exactly the other handle's summary is there.
    let status = t.layer_status(&ns, &settings).unwrap();
    assert_eq!((status.compactions, status.episodic_pending), (1, 1));
}
