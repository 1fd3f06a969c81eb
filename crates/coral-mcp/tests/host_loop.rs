//! The documented host loop (`examples/host_loop.rs`, docs/timeline.md "Example: a host loop")
//! runs against its loopback model: every turn completes, the tool results are recorded, a
//! compaction happens when due, and the reload card the model follows reopens the exact body.

#[allow(dead_code)]
#[path = "../examples/host_loop.rs"]
mod host_loop;

#[test]
fn the_example_host_loop_runs_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let turns = [
        "明天北京天气怎么样？",
        "把刚才天气的原始数据给我看看",
        "帮我规划三天的行程，第一天去故宫，第二天去长城，第三天逛胡同。",
        "第二天的午饭推荐一家烤鸭店，最好离长城不远。",
        "住宿预算每晚八百元，帮我选酒店，靠近地铁站。",
        "再帮我整理一份行李清单，包括充电器和雨伞。",
        "出发前一天提醒我检查证件和车票。",
        "最后帮我算一下总预算，包括交通和门票。",
    ];
    let report = host_loop::run(dir.path(), &turns).unwrap();
    assert_eq!(report.turns, turns.len());
    assert_eq!(report.tool_calls, 2, "{report:?}");
    let original = report.original.as_deref().expect("the lookup ran");
    assert_eq!(
        report.reopened.as_deref(),
        Some(original),
        "the card's call reopens the body byte for byte"
    );
    assert!(report.compactions >= 1, "{report:?}");
    assert!(report.last_answer.starts_with("收到"), "{report:?}");
}
