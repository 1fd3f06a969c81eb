//! The operator's dispatch policy and the reads' receipts (docs/timeline.md, "Dispatch policy"
//! and "Receipts"): kinds outside the allowed prefixes are withheld or denied by every read,
//! a call's kind patterns cannot widen the policy, the explicit-trace rule keeps tool traces
//! out of retrieval unless asked for, and each read's receipt lists what it returned without
//! any of its text.

mod common;

use coral_timeline::{
    BeginTurn, BrowseRequest, CompleteTurn, DispatchPolicy, EntryInput, Namespace, OpenRequest,
    ReadRequest, ReadStatus, Receipt, RetrieveRequest, Timeline, ToolExchange, View, WITHHELD_TEXT,
    with_receipt,
};
use serde_json::json;

use common::{T0, temp_timeline};

const SHELL_SECRET: &str = "uid=0(root) gid=0(root) shadow-line-77";

fn record(t: &Timeline, ns: &Namespace) -> String {
    let turn = t
        .begin_turn(ns, &BeginTurn::user("查一下服务器和天气"), T0)
        .unwrap();
    for (tool, call, result, id) in [
        (
            "shell",
            "c1",
            format!("{SHELL_SECRET}\n").repeat(20),
            "shell-out",
        ),
        (
            "web_search",
            "c2",
            "北京晴，25°C，天气很好。".repeat(20),
            "web-out",
        ),
    ] {
        t.record_tool_exchange(
            ns,
            &turn.turn_id,
            &ToolExchange {
                tool_name: tool.into(),
                call_id: call.into(),
                input: json!({"q": "服务器 天气"}),
                result,
                result_source_id: Some(id.into()),
                ..ToolExchange::default()
            },
            T0 + 1.0,
        )
        .unwrap();
    }
    t.complete_turn(
        ns,
        &turn.turn_id,
        &CompleteTurn::answer("服务器正常，天气晴。"),
        T0 + 2.0,
    )
    .unwrap();
    t.record_entry(
        ns,
        &EntryInput::new("event.reminder", "提醒：检查服务器 shadow-line-77").source_id("rem-1"),
        T0 + 3.0,
    )
    .unwrap();
    turn.turn_id
}

fn allow(prefixes: &[&str]) -> DispatchPolicy {
    DispatchPolicy {
        allowed_kind_prefixes: prefixes.iter().map(|p| p.to_string()).collect(),
        explicit_trace: false,
    }
}

fn read(t: &Timeline, ns: &Namespace, policy: &DispatchPolicy) -> coral_timeline::ReadResult {
    t.read_timeline(
        ns,
        &ReadRequest {
            date_from: Some("2026-04-10".into()),
            projection: coral_timeline::Projection::Full,
            policy: policy.clone(),
            ..ReadRequest::default()
        },
    )
}

fn retrieve(
    t: &Timeline,
    ns: &Namespace,
    policy: &DispatchPolicy,
    kinds: &[&str],
) -> coral_timeline::RetrieveResult {
    t.retrieve_for_turn(
        ns,
        &RetrieveRequest {
            query: "服务器 shadow-line-77 root".into(),
            include_visible: true,
            kind_patterns: kinds.iter().map(|k| k.to_string()).collect(),
            policy: policy.clone(),
            ..RetrieveRequest::default()
        },
        None,
    )
}

#[test]
fn kinds_outside_the_allowed_prefixes_are_withheld_by_every_read() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    let turn = record(&t, &ns);
    let policy = allow(&["message.", "tool.web_search."]);

    let page = read(&t, &ns, &policy);
    let text = serde_json::to_string(&page.payload).unwrap();
    assert!(!text.contains("shadow-line-77"), "{text}");
    assert!(text.contains("北京晴"));
    // The shell call and result and the reminder are withheld, not dropped: the turn stays whole.
    assert_eq!(page.withheld, 3);
    let shell = page.units[0]
        .entries
        .iter()
        .find(|e| e.source_id == "shell-out")
        .unwrap();
    assert!(shell.withheld && shell.text == WITHHELD_TEXT);
    let receipt = Receipt::of(&page);
    assert_eq!(receipt.withheld, 3);
    assert_eq!(receipt.ids, vec![turn.clone(), "rem-1".to_string()]);

    let open = |id: &str| {
        t.open_memory(
            &ns,
            id,
            &OpenRequest {
                view: View::Content,
                policy: policy.clone(),
                ..OpenRequest::default()
            },
        )
    };
    let denied = open("shell-out");
    assert_eq!(denied.status, ReadStatus::Denied);
    assert!(
        !serde_json::to_string(&denied)
            .unwrap()
            .contains("shadow-line-77")
    );
    assert_eq!(with_receipt(&denied)["ok"], false);
    assert_eq!(open("web-out").status, ReadStatus::Ok);

    let found = retrieve(&t, &ns, &policy, &[]);
    let text = serde_json::to_string(&found.payload).unwrap();
    assert!(!text.contains("shadow-line-77"), "{text}");
    assert!(found.hits.iter().all(|h| h.memory_id != "shell-out"));
    // A call's patterns may narrow the policy, never widen it.
    let wider = retrieve(&t, &ns, &policy, &["tool.*"]);
    assert_eq!(wider.status, ReadStatus::InvalidFilter);
    assert!(
        wider
            .message
            .as_deref()
            .unwrap()
            .contains("tool.web_search.")
    );
    assert_ne!(
        retrieve(&t, &ns, &policy, &["tool.web_search.*"]).status,
        ReadStatus::InvalidFilter
    );
    // Without a policy everything is there, so the checks above could fail.
    let open_all = read(&t, &ns, &DispatchPolicy::default());
    assert!(
        serde_json::to_string(&open_all.payload)
            .unwrap()
            .contains("shadow-line-77")
    );
    assert_eq!(open_all.withheld, 0);
}

#[test]
fn the_explicit_trace_rule_keeps_traces_out_unless_named() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    record(&t, &ns);
    let rule = DispatchPolicy {
        explicit_trace: true,
        ..DispatchPolicy::default()
    };
    let by_default = retrieve(&t, &ns, &rule, &[]);
    assert!(
        by_default
            .hits
            .iter()
            .all(|h| h.kind.starts_with("message.")),
        "{:?}",
        by_default.hits.iter().map(|h| &h.kind).collect::<Vec<_>>()
    );
    let named = retrieve(&t, &ns, &rule, &["tool.shell.*"]);
    assert!(named.hits.iter().any(|h| h.memory_id == "shell-out"));
    let without = retrieve(&t, &ns, &DispatchPolicy::default(), &[]);
    assert!(
        without.hits.iter().any(|h| !h.kind.starts_with("message.")),
        "the rule must be what keeps them out"
    );
}

#[test]
fn receipts_list_what_came_back_and_no_text() {
    let (t, _dir) = temp_timeline();
    let ns = Namespace::new("u", "c");
    record(&t, &ns);
    for i in 0..4 {
        t.record_entry(
            &ns,
            &EntryInput::user(format!("第{i}条消息 shadow-line-77 {}", "x".repeat(200)))
                .source_id(format!("m-{i}")),
            T0 + 10.0 + f64::from(i),
        )
        .unwrap();
    }
    let paged = t.read_timeline(
        &ns,
        &ReadRequest {
            date_from: Some("2026-04-10".into()),
            page_token_budget: 120,
            ..ReadRequest::default()
        },
    );
    assert_eq!(paged.status, ReadStatus::Partial);
    let receipt = Receipt::of(&paged);
    assert_eq!(receipt.tool, "read_timeline");
    assert_eq!(receipt.status, ReadStatus::Partial);
    assert_eq!(receipt.next_cursor, paged.next_cursor);
    assert_eq!(receipt.ids.len(), paged.units.len());
    // The same answer, the same receipt.
    assert_eq!(Receipt::of(&paged), receipt);
    let json = with_receipt(&paged);
    assert_eq!(json["receipt"]["tool"], "read_timeline");
    let receipt_text = json["receipt"].to_string();
    assert!(!receipt_text.contains("shadow-line-77") && !receipt_text.contains("消息"));

    let opened = t.open_memory(&ns, "m-1", &OpenRequest::default());
    assert_eq!(Receipt::of(&opened).ids, vec!["m-1".to_string()]);
    let missing = t.open_memory(&ns, "nope", &OpenRequest::default());
    let r = Receipt::of(&missing);
    assert_eq!((r.status, r.ids.len()), (ReadStatus::Empty, 0));
    let found = retrieve(&t, &ns, &DispatchPolicy::default(), &[]);
    let r = Receipt::of(&found);
    assert_eq!(
        r.ids,
        found
            .hits
            .iter()
            .map(|h| h.memory_id.clone())
            .collect::<Vec<_>>()
    );
    assert!(
        !serde_json::to_string(&r)
            .unwrap()
            .contains("shadow-line-77")
    );
    let browse = t.browse_memory(&ns, &BrowseRequest::default());
    let r = Receipt::of(&browse);
    assert_eq!((r.tool, r.status), ("browse_memory", ReadStatus::Empty));
}
