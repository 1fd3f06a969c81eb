//! Tool errors never echo a whole argument: every tool, every declared argument, given a huge
//! value of the wrong type and a huge string, answers with a short message (the echoed value
//! cut to about 100 characters with its size), and so do unknown tools and argument names.

use std::path::Path;
use std::sync::Arc;

use coral::{Arg, Config, Coral, ECHO_CHARS, HashEmbedder, Kind, ToolError, tools};
use serde_json::{Value, json};

/// Longest message accepted: the bound of `coral::bound_message` plus its note.
const MAX_MESSAGE: usize = 2_200;

fn open(dir: &Path) -> Coral {
    let mut config = Config {
        base_dir: dir.to_path_buf(),
        ..Config::default()
    };
    config.storage.sync = "never".into();
    Coral::open_with(config, Arc::new(HashEmbedder::new(16).unwrap())).unwrap()
}

/// The error message of a failed call, or the strings of a result body that says `ok: false`
/// (the timeline's read tools), each at most `MAX_MESSAGE` bytes.
fn message(tool: &str, outcome: &Result<Value, ToolError>) -> Option<String> {
    let texts: Vec<String> = match outcome {
        Err(e) => vec![e.to_string()],
        Ok(v) if v["ok"] == false => v
            .as_object()
            .unwrap()
            .values()
            .filter_map(|s| s.as_str().map(String::from))
            .collect(),
        Ok(_) => return None,
    };
    for m in &texts {
        assert!(
            m.len() <= MAX_MESSAGE,
            "{tool}: a {} byte message: {}…",
            m.len(),
            &m[..m.char_indices().nth(300).map_or(m.len(), |(i, _)| i)]
        );
    }
    Some(texts.join(" | "))
}

fn check(coral: &Coral, tool: &str, args: &Value) -> Option<String> {
    message(tool, &coral.call_tool(tool, args))
}

/// A value of the right type for `kind` (the smallest, for numbers).
fn sample(kind: Kind) -> Value {
    match kind {
        Kind::String | Kind::Scalar => json!("x"),
        Kind::Integer { min, .. } => json!(min),
        Kind::Number { min, .. } => json!(min),
        Kind::Boolean => json!(false),
        Kind::Strings => json!(["x"]),
        Kind::Object(fields) => required(fields),
    }
}

/// An object with every required field of `fields` set to a sample value.
fn required(fields: &[Arg]) -> Value {
    let mut object = serde_json::Map::new();
    for f in fields.iter().filter(|f| f.required) {
        object.insert(f.name.into(), sample(f.kind));
    }
    Value::Object(object)
}

#[test]
fn errors_echo_at_most_a_bounded_part_of_any_argument() {
    let dir = tempfile::tempdir().unwrap();
    let coral = open(dir.path());
    let array = Value::Array(vec![json!(0); 100_000]);
    let huge = "界".repeat(50_000);
    let mut refused = 0;
    for tool in tools() {
        for arg in tool.args {
            // The wrong type, whatever the argument is (a list of strings for a list argument).
            let wrong = match arg.kind {
                Kind::Strings => Value::Array(vec![json!(0); 100_000]),
                _ => array.clone(),
            };
            let mut args = required(tool.args);
            args[arg.name] = wrong;
            let m = check(&coral, tool.name, &args)
                .unwrap_or_else(|| panic!("{}: {} accepted an array", tool.name, arg.name));
            assert!(
                m.contains("(200001 bytes)") || m.contains("an array"),
                "{}: {m}",
                tool.name
            );
            refused += 1;
            // A huge string: refused or not, a refusal stays short.
            args[arg.name] = json!(huge);
            if check(&coral, tool.name, &args).is_some() {
                refused += 1;
            }
        }
        let key = "k".repeat(1_000_000);
        let m = check(&coral, tool.name, &json!({key.clone(): 1})).expect("an unknown argument");
        assert!(m.contains("unknown argument"), "{m}");
        assert!(m.contains(&format!("… ({} bytes)", key.len())), "{m}");
    }
    assert!(refused > 100, "only {refused} refusals were checked");
    // An unknown tool's name, and ids that do not exist.
    let name = "t".repeat(1_000_000);
    let m = message("?", &coral.call_tool(&name, &json!({}))).unwrap();
    assert!(m.len() < 3 * ECHO_CHARS, "{m}");
    for (tool, key) in [
        ("memory_delete", "item_id"),
        ("memory_mark_important", "item_id"),
        ("thread_advance", "thread_id"),
    ] {
        let mut args = json!({key: huge});
        if tool == "thread_advance" {
            args["note"] = json!("a step");
        }
        let m = check(&coral, tool, &args).expect("an unknown id");
        assert!(m.len() < 4 * ECHO_CHARS + 200, "{tool}: {m}");
        assert!(
            m.contains(&format!("({} bytes)", huge.len())),
            "{tool}: {m}"
        );
    }
}
