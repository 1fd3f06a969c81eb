//! A `coral http` child for the timeline's process-level tests: start it on a free loopback
//! port, call tools over `POST /rpc`, stop it with SIGTERM or kill it with SIGKILL.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

pub const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// The token of the sidecars these tests start: they serve every namespace a call names
/// (`--any-namespace`), which needs one.
pub const TOKEN: &str = "sidecar-test-token-0123";

/// A config using the hash embedder, in `dir`.
pub fn config_in(dir: &Path) -> PathBuf {
    let config = dir.join("coral_config.json");
    std::fs::write(&config, r#"{"embedding": {"embedder": "hash"}}"#).unwrap();
    config
}

/// A running `coral http`.
pub struct Sidecar {
    pub child: Child,
    pub url: String,
}

impl Sidecar {
    pub fn start(config: &Path) -> Sidecar {
        let mut child = Command::new(CORAL)
            .arg("--config")
            .arg(config)
            .args([
                "-q",
                "http",
                "--port",
                "0",
                "--any-namespace",
                "--token",
                TOKEN,
            ])
            .env_remove("CORAL_HTTP_TOKEN")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let listening: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("no address line from coral http ({e}): {line:?}"));
        let url = format!("http://{}/rpc", listening["listening"].as_str().unwrap());
        Sidecar { child, url }
    }

    /// `(status, body)` of one call; `Err` when the connection failed (the server is gone).
    pub fn try_call(&self, tool: &str, args: &Value) -> Result<(u16, Value), String> {
        let body = json!({"tool": tool, "args": args}).to_string();
        let response = match ureq::post(&self.url)
            .set("Content-Type", "application/json")
            .set("Authorization", &format!("Bearer {TOKEN}"))
            .timeout(std::time::Duration::from_secs(30))
            .send_string(&body)
        {
            Ok(r) => r,
            Err(ureq::Error::Status(_, r)) => r,
            Err(e) => return Err(e.to_string()),
        };
        let status = response.status();
        let text = response.into_string().map_err(|e| e.to_string())?;
        let value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        Ok((status, value))
    }

    /// The result of a call that must succeed.
    pub fn ok(&self, tool: &str, args: Value) -> Value {
        let (status, body) = self.try_call(tool, &args).unwrap();
        assert_eq!(status, 200, "{tool} {args}: {body}");
        body["result"].clone()
    }

    /// SIGKILL: no shutdown code runs.
    pub fn kill(mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }

    /// SIGTERM and wait for the clean exit (the last connection checkpoints and removes the
    /// timeline's log).
    pub fn stop(mut self) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(self.child.wait().unwrap().success());
    }
}

impl Drop for Sidecar {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `coral --config <config> <args>`: exit code, stdout, stderr.
pub fn coral(config: &Path, args: &[&str]) -> (Option<i32>, String, String) {
    let out = Command::new(CORAL)
        .arg("--config")
        .arg(config)
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The source ids of every entry `coral timeline read` returns for all time (every page), and
/// what it said on stderr; panics unless each page exits 0.
pub fn read_all(config: &Path, scope: &[&str]) -> (Vec<String>, String) {
    let mut ids = Vec::new();
    let mut said = String::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut args = vec![
            "timeline",
            "read",
            "--date",
            "2000-01-01",
            "--to",
            "2099-12-31",
        ];
        args.extend_from_slice(scope);
        if let Some(c) = &cursor {
            args.extend(["--cursor", c.as_str()]);
        }
        let (code, out, err) = coral(config, &args);
        assert_eq!(code, Some(0), "timeline read failed: {err}\n{out}");
        said.push_str(&err);
        let page: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        if page["status"] == "empty" {
            return (ids, said);
        }
        assert!(
            page["status"] == "ok" || page["status"] == "partial",
            "{page}"
        );
        ids.extend(source_ids(&page));
        match page["next_cursor"].as_str() {
            Some(c) => cursor = Some(c.to_string()),
            None => return (ids, said),
        }
    }
}

/// The source ids of a `read_timeline` page, in order.
pub fn source_ids(page: &Value) -> Vec<String> {
    page["units"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|u| u["entries"].as_array().into_iter().flatten())
        .map(|e| e["source_id"].as_str().unwrap().to_string())
        .collect()
}
