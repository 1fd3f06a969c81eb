//! `retrieve_for_turn` and `browse_memory`: hybrid ranking over hard-filtered candidates, time
//! hints across a DST change, Chinese substrings through bigrams and one-way keywords, what the
//! context shows left out, whole turns for raw hits, and MemCore's golden keyword figures.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use coral_timeline::{
    BeginTurn, BrowseRequest, CompleteTurn, EntryInput, KeywordMatch, LayerSettings, Namespace,
    ReadStatus, RetrieveRequest, SummaryLlm, TextEmbedder, TimeHint, TimeRange, Timeline,
    ToolExchange, keyword_hits, normalize_terms,
};
use serde_json::{Value, json};

use common::{T0, ns, temp_timeline};

fn golden() -> Value {
    serde_json::from_str(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/memcore_test_vectors.json"
    )))
    .unwrap()
}

#[test]
fn golden_catalog_keyword_hits_and_term_normalisation() {
    let data = golden();
    let cases = data["catalog_keyword_hits"].as_array().unwrap();
    assert!(cases.len() >= 7);
    for case in cases {
        let pool: Vec<&str> = case["pool"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let keywords: Vec<&str> = case["keywords"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let hits: Vec<Value> = keyword_hits(&pool, &keywords)
            .into_iter()
            .map(|h| json!({"query": h.query, "term": h.term}))
            .collect();
        assert_eq!(Value::Array(hits), case["hits"], "{keywords:?}");
    }
    for (input, expected) in data["normalize_catalog_terms"].as_object().unwrap() {
        let terms: Vec<String> = serde_json::from_str(input).unwrap();
        let want: Vec<String> = serde_json::from_value(expected.clone()).unwrap();
        assert_eq!(normalize_terms(&terms), want, "{input}");
    }
}

/// A standalone user message at `at`.
fn say(t: &Timeline, ns: &Namespace, text: &str, id: &str, at: f64) {
    t.record_entry(ns, &EntryInput::user(text).source_id(id).at(at), at)
        .unwrap();
}

/// Words only: the trigger is far away, so nothing is summarised and every closed turn is in
/// the context; the tests that want it searchable set `include_visible`.
fn words(query: &str) -> RetrieveRequest {
    RetrieveRequest {
        query: query.into(),
        include_visible: true,
        ..RetrieveRequest::default()
    }
}

#[test]
fn chinese_substrings_match_through_bigrams_and_anchors_weigh_three_times() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    say(&t, &ns, "我们讨论了文旅答辩项目的预算安排", "a", T0);
    say(&t, &ns, "今天加班到很晚很累", "b", T0 + 1.0);
    say(&t, &ns, "可乐和雪碧都是碳酸饮料", "c", T0 + 2.0);
    say(&t, &ns, "我最喜欢喝可乐，不喜欢咖啡", "d", T0 + 3.0);
    say(&t, &ns, "咖啡咖啡咖啡，我喜欢喝咖啡", "e", T0 + 4.0);
    let r = t.retrieve_for_turn(&ns, &words("答辩"), None);
    assert_eq!(r.status, ReadStatus::Ok, "{r:?}");
    assert_eq!(r.hits[0].memory_id, "a");
    assert!(r.hits[0].bm25.unwrap() > 0.0 && r.hits[0].dense.is_none());
    assert_eq!(r.dense_model, None);
    // A query longer than anything stored still finds the stored phrase by its bigrams.
    let r = t.retrieve_for_turn(&ns, &words("文旅答辩项目延期了吗"), None);
    assert_eq!(r.hits[0].memory_id, "a");
    // An entity anchor (3×) decides between two close matches.
    let plain = t.retrieve_for_turn(&ns, &words("咖啡"), None);
    let mut anchored = words("咖啡");
    anchored.entity_anchors = vec!["可乐".into()];
    let anchored = t.retrieve_for_turn(&ns, &anchored, None);
    assert_eq!(plain.hits[0].memory_id, "e");
    assert_eq!(anchored.hits[0].memory_id, "d");
    assert!(anchored.query_terms.contains(&("可乐".to_string(), 3.0)));
    // Nothing shared: empty, with a reason.
    let none = t.retrieve_for_turn(&ns, &words("量子物理"), None);
    assert_eq!(none.status, ReadStatus::Empty);
    assert!(none.message.is_some());
}

#[test]
fn time_hints_keep_only_the_window_across_a_dst_change() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    // New York moves its clocks forward at 02:00 on 2026-03-08.
    let at = |s: &str| chrono::DateTime::parse_from_rfc3339(s).unwrap().timestamp() as f64;
    say(
        &t,
        &ns,
        "deploy the billing service",
        "sat-pm",
        at("2026-03-07T14:00:00-05:00"),
    );
    say(
        &t,
        &ns,
        "deploy the billing service",
        "sun-night",
        at("2026-03-08T01:30:00-05:00"),
    );
    say(
        &t,
        &ns,
        "deploy the billing service",
        "sun-early",
        at("2026-03-08T03:30:00-04:00"),
    );
    say(
        &t,
        &ns,
        "deploy the billing service",
        "sun-am",
        at("2026-03-08T11:30:00-04:00"),
    );
    say(
        &t,
        &ns,
        "deploy the billing service",
        "sun-pm",
        at("2026-03-08T13:00:00-04:00"),
    );
    say(
        &t,
        &ns,
        "deploy the billing service",
        "mon-pm",
        at("2026-03-09T13:00:00-04:00"),
    );
    let ask = |hint: TimeHint| {
        let mut req = words("billing deploy");
        req.time_hint = Some(hint);
        req.timezone = Some("America/New_York".into());
        t.retrieve_for_turn(&ns, &req, None)
    };
    let ids = |r: &coral_timeline::RetrieveResult| {
        let mut v: Vec<String> = r.hits.iter().map(|h| h.memory_id.clone()).collect();
        v.sort();
        v
    };
    // "Yesterday afternoon", asked on Monday the 9th.
    let r = ask(TimeHint {
        date_label: Some("2026-03-08".into()),
        time_of_day: Some("下午".into()),
        ..TimeHint::default()
    });
    assert_eq!(ids(&r), ["sun-pm"]);
    assert_eq!(r.hits[0].time, "2026-03-08 13:00");
    // The whole day of the change (23 hours long).
    let r = ask(TimeHint {
        date_label: Some("2026-03-08".into()),
        ..TimeHint::default()
    });
    assert_eq!(ids(&r), ["sun-am", "sun-early", "sun-night", "sun-pm"]);
    // An exact local range over the gap: 00:00 to 04:00 local is three real hours.
    let r = ask(TimeHint {
        start_at: Some("2026-03-08 00:00".into()),
        end_at: Some("2026-03-08 04:00".into()),
        ..TimeHint::default()
    });
    assert_eq!(ids(&r), ["sun-early", "sun-night"]);
    // Unix seconds work too; a time inside the gap is refused, not guessed.
    let r = ask(TimeHint {
        start_ts: Some(at("2026-03-09T00:00:00-04:00")),
        ..TimeHint::default()
    });
    assert_eq!(ids(&r), ["mon-pm"]);
    let r = ask(TimeHint {
        start_at: Some("2026-03-08 02:30".into()),
        ..TimeHint::default()
    });
    assert_eq!(r.status, ReadStatus::InvalidFilter);
    assert!(r.message.unwrap().contains("does not exist"));
}

/// Summarises everything asked with fixed tags.
struct Tagger;

impl SummaryLlm for Tagger {
    fn complete(&self, _system: &str, user: &str) -> Result<String, String> {
        if user.contains("episodic summaries") {
            return Ok(json!({"memories": [{
                "title": "答辩", "content": "用户在准备文旅答辩", "facet": "plan",
                "entity_anchors": ["文旅答辩项目"],
            }]})
            .to_string());
        }
        let tags = if user.contains("预算") {
            json!(["文旅答辩项目", "GPT-4o"])
        } else {
            json!(["CulturalTourismDefense"])
        };
        Ok(json!({
            "title": "阶段摘要", "summary": "讨论答辩的准备", "hint": "答辩",
            "entity_anchors": tags, "topic_terms": ["答辩准备"],
        })
        .to_string())
    }
}

fn finished_turn(t: &Timeline, ns: &Namespace, text: &str, answer: &str, at: f64) -> String {
    let turn = t
        .begin_turn(
            ns,
            &BeginTurn {
                stimuli: vec![EntryInput::user(text).at(at)],
                ..BeginTurn::default()
            },
            at,
        )
        .unwrap();
    t.record_tool_exchange(
        ns,
        &turn.turn_id,
        &ToolExchange {
            tool_name: "search".into(),
            call_id: format!("call_{at}"),
            input: json!({"q": text}),
            result: format!("{text} 的搜索结果 ").repeat(40),
            ..ToolExchange::default()
        },
        at + 1.0,
    )
    .unwrap();
    t.complete_turn(ns, &turn.turn_id, &CompleteTurn::answer(answer), at + 2.0)
        .unwrap();
    turn.turn_id
}

#[test]
fn raw_hits_come_first_with_their_whole_turn_and_visible_ones_are_left_out() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let settings = LayerSettings {
        raw_token_trigger: 300,
        ..LayerSettings::default()
    };
    let mut at = T0;
    for i in 0..8 {
        finished_turn(&t, &ns, &format!("答辩预算第{i}版"), "预算已经记下", at);
        at += 3_600.0;
    }
    let report = t
        .compact(&ns, &settings, &Tagger, chrono_tz::UTC, at)
        .unwrap();
    let summary = report.episodic.unwrap();
    let floor = report.status.raw_floor;
    assert!(floor > 0);
    let mut req = RetrieveRequest {
        query: "答辩预算".into(),
        settings: settings.clone(),
        limit: 20,
        ..RetrieveRequest::default()
    };
    let r = t.retrieve_for_turn(&ns, &req, None);
    assert_eq!(r.status, ReadStatus::Ok, "{r:?}");
    // Only summarised turns come back raw: the raw window and the visible summary are shown
    // already.
    assert!(r.excluded_visible > 0);
    let raw: Vec<_> = r.hits.iter().filter(|h| h.layer == "raw").collect();
    assert!(!raw.is_empty());
    assert!(r.hits.iter().all(|h| h.memory_id != summary.memory_id));
    for hit in &raw {
        let turn = hit.turn.as_ref().unwrap();
        assert!(turn.entries.iter().any(|e| e.source_id == hit.memory_id));
        assert!(turn.entries.iter().any(|e| e.turn_role == "stimulus"));
        assert!(turn.entries.iter().any(|e| e.turn_role == "final"));
        // The turn is shown as the conversation shows it: the long result as its card.
        assert!(turn.entries.iter().any(|e| e.folded));
    }
    // Several hits in one turn are one result.
    let turns: std::collections::HashSet<_> = raw
        .iter()
        .map(|h| h.turn.as_ref().unwrap().turn_id.clone())
        .collect();
    assert_eq!(turns.len(), raw.len());
    assert!(raw.iter().any(|h| !h.also_matched.is_empty()));
    // With what is visible included, the summary and the newest turns come back; raw first.
    req.include_visible = true;
    let all = t.retrieve_for_turn(&ns, &req, None);
    assert_eq!(all.excluded_visible, 0);
    let first_summary = all.hits.iter().position(|h| h.layer != "raw").unwrap();
    assert!(all.hits[first_summary..].iter().all(|h| h.layer != "raw"));
    assert!(all.hits.iter().any(|h| h.memory_id == summary.memory_id));
    let s = all
        .hits
        .iter()
        .find(|h| h.memory_id == summary.memory_id)
        .unwrap();
    assert_eq!(s.layer, "summary");
    assert!(s.period_start_at.is_some());
    // Layer and source filters.
    req.source_layers = vec!["summary".into()];
    let only = t.retrieve_for_turn(&ns, &req, None);
    assert!(!only.hits.is_empty());
    assert!(only.hits.iter().all(|h| h.layer == "summary"));
    req.source_layers = vec![];
    req.within_memory_id = Some(summary.memory_id.clone());
    let within = t.retrieve_for_turn(&ns, &req, None);
    assert!(!within.hits.is_empty());
    let sources = t.open_memory(
        &ns,
        &summary.memory_id,
        &coral_timeline::OpenRequest {
            view: coral_timeline::View::Sources,
            page_size: 50,
            ..coral_timeline::OpenRequest::default()
        },
    );
    let source_turns: std::collections::HashSet<_> = sources
        .payload
        .summary
        .unwrap()
        .sources
        .unwrap()
        .units
        .into_iter()
        .map(|u| u.turn_id)
        .collect();
    for hit in &within.hits {
        assert_eq!(hit.layer, "raw");
        assert!(source_turns.contains(&hit.turn.as_ref().unwrap().turn_id));
    }
    req.within_memory_id = None;
    req.kind_patterns = vec!["tool.*".into()];
    let tools = t.retrieve_for_turn(&ns, &req, None);
    assert!(!tools.hits.is_empty());
    assert!(tools.hits.iter().all(|h| h.kind.starts_with("tool.")));
    // A token budget stops early but always returns one hit.
    req.kind_patterns = vec![];
    req.token_budget = 1;
    assert_eq!(t.retrieve_for_turn(&ns, &req, None).hits.len(), 1);
    // Another user's entries never come back.
    let other = Namespace::new("u_002", "c_001");
    let r = t.retrieve_for_turn(&other, &words("答辩预算"), None);
    assert_eq!(r.status, ReadStatus::Empty);
    assert_eq!(r.candidates, 0);
}

/// Vectors from character counts: similar text, similar vector.
struct CharEmbedder {
    calls: AtomicUsize,
    texts: AtomicUsize,
    model: &'static str,
}

impl TextEmbedder for CharEmbedder {
    fn model_id(&self) -> String {
        self.model.into()
    }
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.texts.fetch_add(texts.len(), Ordering::SeqCst);
        Ok(texts
            .iter()
            .map(|t| {
                let mut v = vec![0f32; 64];
                for c in t.chars() {
                    v[(c as usize) % 64] += 1.0;
                }
                let n = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-9);
                v.iter().map(|x| x / n).collect()
            })
            .collect())
    }
}

#[test]
fn vectors_rank_too_are_computed_once_and_follow_the_model() {
    let (t, dir) = temp_timeline();
    let ns = ns();
    for i in 0..20 {
        say(
            &t,
            &ns,
            &format!("note {i} about deploying service {i}"),
            &format!("n{i}"),
            T0 + i as f64,
        );
    }
    let e = CharEmbedder {
        calls: AtomicUsize::new(0),
        texts: AtomicUsize::new(0),
        model: "chars-v1",
    };
    let r = t.retrieve_for_turn(&ns, &words("deploying service 7"), Some(&e));
    assert_eq!(r.dense_model.as_deref(), Some("chars-v1"));
    assert!(r.hits.iter().any(|h| h.dense.is_some() && h.dual_hit));
    assert_eq!(
        e.texts.load(Ordering::SeqCst),
        21,
        "20 entries and the query"
    );
    // The second query embeds only itself.
    t.retrieve_for_turn(&ns, &words("service 3"), Some(&e));
    assert_eq!(e.texts.load(Ordering::SeqCst), 22);
    // Reopened, the vectors come from the file.
    drop(t);
    let t = Timeline::open(dir.path().join("timeline.sqlite3")).unwrap();
    t.retrieve_for_turn(&ns, &words("service 3"), Some(&e));
    assert_eq!(e.texts.load(Ordering::SeqCst), 23);
    // Another model recomputes everything.
    let e2 = CharEmbedder {
        calls: AtomicUsize::new(0),
        texts: AtomicUsize::new(0),
        model: "chars-v2",
    };
    t.retrieve_for_turn(&ns, &words("service 3"), Some(&e2));
    assert_eq!(e2.texts.load(Ordering::SeqCst), 21);
    // New entries, also from another handle, are picked up.
    let other = Timeline::open(dir.path().join("timeline.sqlite3")).unwrap();
    say(
        &other,
        &ns,
        "rollback of the payment gateway",
        "late",
        T0 + 100.0,
    );
    let r = t.retrieve_for_turn(&ns, &words("payment gateway rollback"), Some(&e2));
    assert_eq!(r.hits[0].memory_id, "late");
}

#[test]
fn bad_requests_are_invalid_filter() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    say(&t, &ns, "hello", "h", T0);
    let cases: Vec<RetrieveRequest> = vec![
        words(""),
        words("   ,,, "),
        RetrieveRequest {
            limit: 51,
            ..words("hello")
        },
        RetrieveRequest {
            source_layers: vec!["everything".into()],
            ..words("hello")
        },
        RetrieveRequest {
            memory_facets: vec!["mood".into()],
            ..words("hello")
        },
        RetrieveRequest {
            kind_patterns: vec!["to*l.*".into()],
            ..words("hello")
        },
        RetrieveRequest {
            time_hint: Some(TimeHint {
                date_label: Some("2026-02-30".into()),
                ..TimeHint::default()
            }),
            ..words("hello")
        },
        RetrieveRequest {
            time_hint: Some(TimeHint {
                date_label: Some("2026-03-01".into()),
                start_ts: Some(1.0),
                ..TimeHint::default()
            }),
            ..words("hello")
        },
        RetrieveRequest {
            time_hint: Some(TimeHint {
                time_of_day: Some("teatime".into()),
                ..TimeHint::default()
            }),
            ..words("hello")
        },
        RetrieveRequest {
            timezone: Some("Nowhere/City".into()),
            ..words("hello")
        },
        words(&"长".repeat(5_000)),
    ];
    for req in cases {
        let r = t.retrieve_for_turn(&ns, &req, None);
        assert_eq!(r.status, ReadStatus::InvalidFilter, "{req:?}");
        assert!(r.message.is_some());
    }
}

#[test]
fn browse_lists_summaries_by_time_with_one_way_keywords() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let settings = LayerSettings {
        raw_token_trigger: 600,
        ..LayerSettings::default()
    };
    let day = 86_400.0;
    // Two days with a budget discussion, then two days of something else.
    let mut at = T0;
    let mut summaries = Vec::new();
    for d in 0..4 {
        for i in 0..6 {
            let text = if d < 2 {
                format!("答辩预算第{i}项")
            } else {
                format!("defense slides {i}")
            };
            finished_turn(&t, &ns, &text, "ok", at + i as f64 * 600.0);
        }
        if let Some(s) = t
            .compact(&ns, &settings, &Tagger, chrono_tz::UTC, at + day / 2.0)
            .unwrap()
            .episodic
        {
            summaries.push(s);
        }
        at += day;
    }
    assert!(summaries.len() >= 3, "{}", summaries.len());
    let browse = |req: BrowseRequest| t.browse_memory(&ns, &req);
    // Everything, oldest first.
    let all = browse(BrowseRequest::default());
    assert_eq!(all.status, ReadStatus::Ok);
    assert_eq!(all.total, summaries.len());
    assert!(
        all.cards
            .windows(2)
            .all(|w| w[0].period_start_ts <= w[1].period_start_ts)
    );
    // One-way substring: a short keyword finds the longer tag, with the tag as evidence.
    let r = browse(BrowseRequest {
        keywords: vec!["文旅".into()],
        ..BrowseRequest::default()
    });
    assert!(r.total >= 1);
    assert!(
        r.cards
            .iter()
            .all(|c| c.keyword_hits[0].term == "文旅答辩项目")
    );
    let r = browse(BrowseRequest {
        keywords: vec!["文旅答辩项目延期".into()],
        ..BrowseRequest::default()
    });
    assert_eq!(r.status, ReadStatus::Empty);
    // any / all.
    let any = browse(BrowseRequest {
        keywords: vec!["gpt-4O".into(), "tourism".into()],
        ..BrowseRequest::default()
    });
    assert_eq!(any.total, summaries.len());
    let all_kw = browse(BrowseRequest {
        keywords: vec!["gpt-4O".into(), "tourism".into()],
        keyword_match: KeywordMatch::All,
        ..BrowseRequest::default()
    });
    assert_eq!(all_kw.status, ReadStatus::Empty);
    // A date range, with its coverage.
    let r = browse(BrowseRequest {
        date_from: Some("2026-04-10".into()),
        date_to: Some("2026-04-11".into()),
        ..BrowseRequest::default()
    });
    assert!(r.total >= 1 && r.total < summaries.len());
    assert_eq!(r.coverage.days_requested, 2);
    assert!(r.coverage.days_covered >= 1);
    // Pages and a tamper-checked cursor.
    let p1 = browse(BrowseRequest {
        page_size: 1,
        ..BrowseRequest::default()
    });
    assert_eq!(p1.status, ReadStatus::Partial);
    let cursor = p1.next_cursor.clone().unwrap();
    let p2 = browse(BrowseRequest {
        page_size: 1,
        cursor: Some(cursor.clone()),
        ..BrowseRequest::default()
    });
    assert_ne!(p2.cards[0].memory_id, p1.cards[0].memory_id);
    let moved = browse(BrowseRequest {
        page_size: 2,
        cursor: Some(cursor),
        ..BrowseRequest::default()
    });
    assert_eq!(moved.status, ReadStatus::InvalidFilter);
    // Bad requests.
    for bad in [
        BrowseRequest {
            node_types: vec!["raw".into()],
            ..BrowseRequest::default()
        },
        BrowseRequest {
            page_size: 201,
            ..BrowseRequest::default()
        },
        BrowseRequest {
            date_to: Some("2026-04-10".into()),
            ..BrowseRequest::default()
        },
        BrowseRequest {
            time_range: Some(TimeRange {
                start_at: "2026-04-11 00:00".into(),
                end_at: "2026-04-10 00:00".into(),
            }),
            ..BrowseRequest::default()
        },
        BrowseRequest {
            keywords: vec!["  ".into()],
            ..BrowseRequest::default()
        },
    ] {
        assert_eq!(browse(bad).status, ReadStatus::InvalidFilter);
    }
    // Other users see nothing.
    let other = t.browse_memory(&Namespace::new("u_002", "c_001"), &BrowseRequest::default());
    assert_eq!(other.status, ReadStatus::Empty);
}

/// An embedder that is down.
struct Broken;

impl TextEmbedder for Broken {
    fn model_id(&self) -> String {
        "broken".into()
    }
    fn embed(&self, _texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        Err("model server unreachable".into())
    }
}

#[test]
fn an_embedder_failure_falls_back_to_words_and_says_so() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    say(&t, &ns, "rollback of the payment gateway", "p", T0);
    let r = t.retrieve_for_turn(&ns, &words("payment gateway"), Some(&Broken));
    assert_eq!(r.status, ReadStatus::Ok);
    assert_eq!(r.hits[0].memory_id, "p");
    assert!(r.hits[0].dense.is_none());
    assert!(
        r.warnings[0].contains("model server unreachable"),
        "{:?}",
        r.warnings
    );
}

#[test]
fn browse_pages_neither_repeat_nor_skip_when_summaries_arrive_between_pages() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    // A roll-up after the fifth summary writes a semantic memory whose period starts with the
    // first summary: it sorts before the cursor of the first page.
    let settings = LayerSettings {
        raw_token_trigger: 300,
        episodic_compact_trigger_count: 5,
        episodic_compact_batch_size: 2,
        ..LayerSettings::default()
    };
    let mut at = T0;
    let compact_until = |count: i64, at: &mut f64| {
        while t.layer_status(&ns, &settings).unwrap().compactions < count {
            finished_turn(&t, &ns, "答辩预算", "ok", *at);
            *at += 600.0;
            if t.layer_status(&ns, &settings).unwrap().compaction_due {
                t.compact(&ns, &settings, &Tagger, chrono_tz::UTC, *at)
                    .unwrap();
            }
        }
    };
    compact_until(4, &mut at);
    let page = |cursor: Option<String>| {
        t.browse_memory(
            &ns,
            &BrowseRequest {
                page_size: 2,
                cursor,
                ..BrowseRequest::default()
            },
        )
    };
    let first = page(None);
    assert_eq!(first.cards.len(), 2);
    // Two more summaries and a semantic memory arrive before the next page is read.
    compact_until(6, &mut at);
    assert_eq!(t.layer_status(&ns, &settings).unwrap().semantic, 1);
    let mut seen: Vec<String> = first.cards.iter().map(|c| c.memory_id.clone()).collect();
    let mut cursor = first.next_cursor.clone();
    while let Some(c) = cursor {
        let next = page(Some(c));
        seen.extend(next.cards.iter().map(|c| c.memory_id.clone()));
        cursor = next.payload.next_cursor;
    }
    let all = t.browse_memory(&ns, &BrowseRequest::default());
    let ids: Vec<String> = all.cards.iter().map(|c| c.memory_id.clone()).collect();
    assert_eq!(ids.len(), 7);
    // The pages continue right after the first page's last card: nothing twice, nothing
    // after it missing (the new memory sorted before it is for a new browse).
    let last = ids.iter().position(|id| *id == seen[1]).unwrap();
    let mut expected: Vec<String> = seen[..2].to_vec();
    expected.extend(ids[last + 1..].iter().cloned());
    assert_eq!(seen, expected);
    assert_eq!(
        seen.iter().collect::<std::collections::HashSet<_>>().len(),
        seen.len()
    );
    assert!(ids[..last].iter().any(|id| id.starts_with("sem-")));
}

#[test]
fn an_unanswered_call_of_an_aborted_turn_is_not_a_hit() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let turn = t.begin_turn(&ns, &BeginTurn::user("开始任务"), T0).unwrap();
    t.append_action(
        &ns,
        &turn.turn_id,
        &EntryInput::new("tool.deploy.call", r#"{"target":"zebra-cluster"}"#)
            .correlation("call_z")
            .source_id("orphan-call"),
        T0 + 1.0,
    )
    .unwrap();
    let live = t.retrieve_for_turn(&ns, &words("zebra cluster"), None);
    assert_eq!(live.hits[0].memory_id, "orphan-call");
    t.abort_turn(&ns, &turn.turn_id, Some("crashed"), T0 + 2.0)
        .unwrap();
    let r = t.retrieve_for_turn(&ns, &words("zebra cluster"), None);
    assert!(r.hits.iter().all(|h| h.memory_id != "orphan-call"), "{r:?}");
}

#[test]
fn a_long_history_is_embedded_over_several_calls() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let n = coral_timeline::MAX_EMBED_PER_CALL + 100;
    for i in 0..n {
        say(
            &t,
            &ns,
            &format!("deploy note {i}"),
            &format!("d{i}"),
            T0 + i as f64,
        );
    }
    let e = CharEmbedder {
        calls: AtomicUsize::new(0),
        texts: AtomicUsize::new(0),
        model: "chars-v1",
    };
    let first = t.retrieve_for_turn(&ns, &words("deploy note"), Some(&e));
    assert_eq!(first.status, ReadStatus::Ok);
    assert_eq!(
        e.texts.load(Ordering::SeqCst),
        coral_timeline::MAX_EMBED_PER_CALL + 1
    );
    assert!(
        first.warnings[0].contains("100 candidates have no vector yet"),
        "{:?}",
        first.warnings
    );
    // The newest entries got their vectors first.
    assert!(first.hits.iter().any(|h| h.dense.is_some()));
    let second = t.retrieve_for_turn(&ns, &words("deploy note"), Some(&e));
    assert!(second.warnings.is_empty(), "{:?}", second.warnings);
    assert_eq!(e.texts.load(Ordering::SeqCst), n + 2);
}

/// A time-shaped query without a time hint prefers its window under the default (hybrid)
/// fusion, as of the request's clock; MemCore's RRF ranks by words alone.
#[test]
fn a_time_shaped_query_prefers_its_window() {
    let (t, _dir) = temp_timeline();
    let ns = ns();
    let day = 86_400.0;
    // The old entry says more about the deploy: by words alone it wins.
    say(
        &t,
        &ns,
        "deploy the billing service, deploy checklist done",
        "old",
        T0,
    );
    say(
        &t,
        &ns,
        "deploy of the billing service",
        "new",
        T0 + 20.0 * day,
    );
    let now = T0 + 21.0 * day;
    let ask = |query: &str, fusion: coral_timeline::Fusion| {
        let req = RetrieveRequest {
            query: query.into(),
            include_visible: true,
            now: Some(now),
            fusion,
            ..RetrieveRequest::default()
        };
        let r = t.retrieve_for_turn(&ns, &req, None);
        r.hits
            .iter()
            .map(|h| h.memory_id.clone())
            .collect::<Vec<_>>()
    };
    let hybrid = coral_timeline::Fusion::default();
    assert_eq!(ask("what did we deploy yesterday?", hybrid), ["new", "old"]);
    assert_eq!(ask("昨天 deploy", hybrid), ["new", "old"]);
    assert_eq!(ask("what did we deploy?", hybrid), ["old", "new"]);
    assert_eq!(
        ask("what did we deploy yesterday?", coral_timeline::Fusion::Rrf),
        ["old", "new"]
    );
    // A time hint is a hard filter and replaces the query's own window.
    let mut req = RetrieveRequest {
        query: "what did we deploy yesterday?".into(),
        include_visible: true,
        now: Some(now),
        ..RetrieveRequest::default()
    };
    req.time_hint = Some(TimeHint {
        end_ts: Some(T0 + day),
        ..TimeHint::default()
    });
    let r = t.retrieve_for_turn(&ns, &req, None);
    let ids: Vec<&str> = r.hits.iter().map(|h| h.memory_id.as_str()).collect();
    assert_eq!(ids, ["old"]);
}
