//! Shared by the MCP and HTTP tests: one table of tool calls and what each must answer, so both
//! transports are held to the same behaviour.

#![allow(dead_code)]

use serde_json::{Value, json};

/// The id of the first memory the cases insert (MD5 of its content, first 16 hex chars).
pub const COFFEE_ID: &str = "3fc954c05432b266";

/// A tool call and the expected outcome: `Ok(check)` must succeed and satisfy `check`;
/// `Err(needle)` must fail with a message containing `needle`.
pub struct Case {
    pub tool: &'static str,
    pub args: Value,
    pub expect: Result<fn(&Value) -> bool, &'static str>,
}

fn case(tool: &'static str, args: Value, expect: Result<fn(&Value) -> bool, &'static str>) -> Case {
    Case { tool, args, expect }
}

/// Every tool: a success and its bad-argument cases, in an order where the successes build on
/// each other (insert before search before delete).
pub fn cases() -> Vec<Case> {
    vec![
        case(
            "memory_insert",
            json!({"content": "用户喜欢喝冰镇拿铁咖啡", "importance": 0.8}),
            Ok(|r| r["inserted"] == true && r["item_id"] == COFFEE_ID && r["persisted"] == true),
        ),
        case(
            "memory_insert",
            json!({"content": "Translate product manuals in a formal register", "project": "docs"}),
            Ok(|r| r["inserted"] == true),
        ),
        case(
            "memory_insert",
            json!({"content": "用户喜欢喝冰镇拿铁咖啡！"}),
            Ok(|r| r["inserted"] == false && r["item_id"] == COFFEE_ID),
        ),
        case(
            "memory_insert",
            json!({}),
            Err("missing required argument \"content\""),
        ),
        case(
            "memory_insert",
            json!({"content": 5}),
            Err("must be a string"),
        ),
        case(
            "memory_insert",
            json!({"content": "   "}),
            Err("content is empty"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "importance": 1.5}),
            Err("from 0 to 1"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "importance": -0.1}),
            Err("from 0 to 1"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "importance": "high"}),
            Err("must be a number"),
        ),
        case(
            "memory_insert",
            json!({"content": "x", "bogus": 1}),
            Err("unknown argument \"bogus\""),
        ),
        case(
            "memory_search",
            json!({"query": "拿铁 咖啡"}),
            Ok(|r| {
                r["count"].as_u64() >= Some(1)
                    && r["hits"][0]["id"] == COFFEE_ID
                    && r["hits"][0]["scores"]["jaccard"].as_f64() > Some(0.0)
                    && r["hits"][0]["truncated"] == false
            }),
        ),
        case(
            "memory_search",
            json!({"query": "formal manuals", "top_k": 1, "full": true, "project": "docs"}),
            Ok(|r| {
                r["count"] == 1
                    && r["hits"][0]["content"] == "Translate product manuals in a formal register"
            }),
        ),
        case(
            "memory_search",
            json!({}),
            Err("missing required argument \"query\""),
        ),
        case("memory_search", json!({"query": ""}), Err("query is empty")),
        case(
            "memory_search",
            json!({"query": "x", "top_k": 0}),
            Err("from 1 to 1000"),
        ),
        case(
            "memory_search",
            json!({"query": "x", "top_k": "5"}),
            Err("must be a whole number"),
        ),
        case(
            "memory_search",
            json!({"query": "x", "full": "yes"}),
            Err("true or false"),
        ),
        case(
            "memory_mark_important",
            json!({"item_id": COFFEE_ID, "importance": 0.9}),
            Ok(|r| r["ok"] == true && r["importance"] == 0.9),
        ),
        case(
            "memory_mark_important",
            json!({"item_id": "0000000000000000"}),
            Err("no memory with item_id"),
        ),
        case(
            "memory_mark_important",
            json!({"item_id": COFFEE_ID, "importance": 2}),
            Err("from 0 to 1"),
        ),
        case(
            "memory_mark_important",
            json!({}),
            Err("missing required argument \"item_id\""),
        ),
        case(
            "coral_stats",
            json!({}),
            Ok(|r| {
                r["ok"] == true
                    && r["stats"]["total"] == 2
                    && r["disk_usage"]["total_bytes"].as_u64() > Some(0)
            }),
        ),
        case(
            "coral_stats",
            json!({"verbose": true}),
            Err("unknown argument"),
        ),
        case(
            "memory_flush",
            json!({}),
            Ok(|r| r["flushed"] == true && r["stats"]["total"] == 2),
        ),
        case(
            "memory_delete",
            json!({"item_id": "0000000000000000"}),
            Err("no memory with item_id"),
        ),
        case(
            "memory_delete",
            json!({"item_id": 7}),
            Err("must be a string"),
        ),
        case(
            "memory_delete",
            json!({"item_id": COFFEE_ID}),
            Ok(|r| r["ok"] == true && r["item_id"] == COFFEE_ID),
        ),
        case(
            "memory_search",
            json!({"query": "拿铁 咖啡", "full": true}),
            Ok(|r| {
                r["hits"]
                    .as_array()
                    .is_some_and(|h| h.iter().all(|x| x["id"] != COFFEE_ID))
            }),
        ),
    ]
}

/// Run every case through `call` (which returns the tool's result or its error message).
pub fn check_all(mut call: impl FnMut(&str, &Value) -> Result<Value, String>) {
    for (i, c) in cases().iter().enumerate() {
        let got = call(c.tool, &c.args);
        match (&c.expect, &got) {
            (Ok(check), Ok(result)) => {
                assert!(
                    check(result),
                    "case {i} {} {}: unexpected result {result}",
                    c.tool,
                    c.args
                )
            }
            (Err(needle), Err(message)) => assert!(
                message.contains(needle),
                "case {i} {} {}: error {message:?} should contain {needle:?}",
                c.tool,
                c.args
            ),
            _ => panic!(
                "case {i} {} {}: expected {}, got {got:?}",
                c.tool,
                c.args,
                if c.expect.is_ok() {
                    "success"
                } else {
                    "an error"
                }
            ),
        }
    }
}
