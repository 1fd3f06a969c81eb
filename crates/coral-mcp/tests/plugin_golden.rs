//! `coral plugin-js` against the plugin the original generated (`fixtures/compat/coral_plugin.js`,
//! its `build_dsh_cordis_plugin_js` for `http://127.0.0.1:8765/rpc`). Node.js runs both as a
//! `cordis_define` flow does (a function body given `harness`), with a stand-in harness that
//! records each tool definition and a stand-in `fetch` that records each request, so what is
//! compared is what a harness sees: the tool names, each parameter's type and required flag, the
//! output block (`schema`, and what `render` makes of a value), and the request `execute` sends.

use std::collections::BTreeMap;
use std::process::Command;

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// The address the golden plugin was generated for.
const URL: &str = "http://127.0.0.1:8765/rpc";

/// Runs a plugin file and prints, per registered tool: its definition's keys, name,
/// parameters, output schema, `render` of sample values, and the request `execute` sends.
const DRIVER: &str = r#"
const fs = require("fs");
const registered = [];
const requests = [];
const harness = {
  defineTool: (def) => def,
  registerTool: (ctx, def) => {
    if (ctx.flow !== "cordis_define") throw new Error("the ctx was not passed on");
    registered.push(def);
  },
};
globalThis.fetch = async (url, init) => {
  requests.push({ url, method: init.method, headers: init.headers, body: JSON.parse(init.body) });
  return { json: async () => ({ ok: true, tool: JSON.parse(init.body).tool }) };
};
const plugin = new Function("harness", fs.readFileSync(process.argv[2], "utf8"))(harness);
if (typeof plugin !== "function") throw new Error("the body returns " + typeof plugin);
plugin({ flow: "cordis_define" });
const samples = [{ ok: true, hits: [{ content: "用户喜欢冰镇拿铁\u2028next" }] }, "text", null];
(async () => {
  const tools = [];
  for (const def of registered) {
    const before = requests.length;
    const answer = await def.execute({ probe: "参数 value", n: 3 });
    tools.push({
      keys: Object.keys(def).sort(),
      name: def.name,
      description: typeof def.description,
      parameters: def.parameters,
      output_keys: Object.keys(def.output).sort(),
      output_schema: def.output.schema,
      rendered: samples.map((v) => def.output.render({ probe: 1 }, v)),
      request: requests.length === before + 1 ? requests[before] : null,
      answer,
    });
  }
  console.log(JSON.stringify(tools));
})().catch((e) => { console.error(e); process.exit(1); });
"#;

/// Every tool the plugin at `path` registers, by name.
fn registered(dir: &std::path::Path, path: &std::path::Path) -> BTreeMap<String, Value> {
    let driver = dir.join("driver.js");
    std::fs::write(&driver, DRIVER).unwrap();
    let out = Command::new("node")
        .arg(&driver)
        .arg(path)
        .output()
        .unwrap_or_else(|e| panic!("node cannot be started ({e}): this test needs Node.js"));
    assert!(
        out.status.success(),
        "{}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let tools: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let mut by_name = BTreeMap::new();
    for t in tools {
        let name = t["name"].as_str().unwrap().to_string();
        assert!(
            by_name.insert(name.clone(), t).is_none(),
            "{}: {name} registered twice",
            path.display()
        );
    }
    by_name
}

#[test]
fn the_plugin_registers_what_the_original_plugin_registers() {
    let golden_path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/compat/coral_plugin.js"
    );
    let golden = std::fs::read_to_string(golden_path).unwrap();
    let out = Command::new(CORAL)
        .args(["plugin-js", "--url", URL])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let ours = String::from_utf8(out.stdout).unwrap();
    // The same statement starts both bodies, and the original's credit line stays.
    let first_statement = |js: &str| {
        js.lines()
            .find(|l| !l.trim_start().starts_with("//") && !l.trim().is_empty())
            .unwrap_or("")
            .trim()
            .to_string()
    };
    assert_eq!(first_statement(&ours), first_statement(&golden));
    let credit = "// coral-memory (author: @Ne) —— 二次开发请保留此注释";
    assert!(golden.contains(credit), "the fixture changed");
    assert!(ours.contains(credit), "the credit line is gone:\n{ours}");

    let dir = tempfile::tempdir().unwrap();
    let ours_path = dir.path().join("coral_plugin.js");
    std::fs::write(&ours_path, &ours).unwrap();
    let theirs = registered(dir.path(), std::path::Path::new(golden_path));
    let ours = registered(dir.path(), &ours_path);
    assert_eq!(
        theirs.len(),
        16,
        "the original's plugin registers its 16 tools"
    );

    let mut problems = Vec::new();
    let mut parameters = 0;
    for (name, t) in &theirs {
        let Some(o) = ours.get(name) else {
            problems.push(format!("{name}: not registered by Coral's plugin"));
            continue;
        };
        // Coral's definition has every key of the original's (name, description,
        // parameters, output, execute).
        for key in t["keys"].as_array().unwrap() {
            if !o["keys"].as_array().unwrap().contains(key) {
                problems.push(format!("{name}: no {key} in the definition"));
            }
        }
        let (tp, op) = (
            t["parameters"].as_object().unwrap(),
            o["parameters"].as_object().unwrap(),
        );
        for (param, spec) in tp {
            parameters += 1;
            match op.get(param) {
                None => problems.push(format!("{name}.{param}: missing")),
                Some(ospec) => {
                    for key in ["type", "required"] {
                        if spec[key] != ospec[key] {
                            problems.push(format!(
                                "{name}.{param}.{key}: {} in the original, {} in Coral",
                                spec[key], ospec[key]
                            ));
                        }
                    }
                }
            }
        }
        // A parameter only Coral has must be optional, or the original's callers break.
        for (param, ospec) in op {
            if !tp.contains_key(param) && ospec["required"] != false {
                problems.push(format!(
                    "{name}.{param}: required in Coral, unknown to the original"
                ));
            }
        }
        for key in [
            "description",
            "output_keys",
            "output_schema",
            "rendered",
            "answer",
        ] {
            if t[key] != o[key] {
                problems.push(format!(
                    "{name}.{key}: {} in the original, {} in Coral",
                    t[key], o[key]
                ));
            }
        }
        // The request execute sends: the same address, method, content type and body.
        let (tr, or) = (&t["request"], &o["request"]);
        for key in ["url", "method", "body"] {
            if tr[key] != or[key] {
                problems.push(format!(
                    "{name}: request {key} {} in the original, {} in Coral",
                    tr[key], or[key]
                ));
            }
        }
        if tr["headers"]["content-type"] != or["headers"]["content-type"] {
            problems.push(format!(
                "{name}: content-type {} vs {}",
                tr["headers"], or["headers"]
            ));
        }
    }
    // The premise: the original's plugin posts {tool, args} to the address and renders JSON.
    let search = &theirs["memory_search"];
    assert_eq!(search["request"]["url"], URL);
    assert_eq!(
        search["request"]["body"],
        json!({"tool": "memory_search", "args": {"probe": "参数 value", "n": 3}})
    );
    assert_eq!(search["output_schema"], json!({"type": "object"}));
    assert_eq!(
        search["rendered"][1],
        json!([{"type": "text", "text": "\"text\""}])
    );
    eprintln!(
        "plugin: the original's {} tools and {parameters} parameters compared with Coral's \
         plugin ({} tools): {} differences",
        theirs.len(),
        ours.len(),
        problems.len()
    );
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
