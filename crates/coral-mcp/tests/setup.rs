//! `coral setup <client>` on copies of fixture config files (`fixtures/setup/`): existing
//! entries, comments (Cursor's JSONC) and YAML anchors (DSH) kept; run twice, exactly one
//! entry; `--dry-run` writes nothing; `--remove` undoes; a backup of every file it changes;
//! and the Claude Code hook entries it writes run and answer.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures/setup")
        .join(name)
}

struct Sandbox {
    dir: tempfile::TempDir,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// A copy of a fixture in the box.
    fn copy(&self, name: &str) -> PathBuf {
        let to = self.path(name);
        std::fs::copy(fixture(name), &to).unwrap();
        to
    }

    fn config(&self) -> PathBuf {
        self.path("home/coral_config.json")
    }

    fn setup(&self, args: &[&str]) -> Output {
        Command::new(CORAL)
            .arg("--config")
            .arg(self.config())
            .arg("setup")
            .args(args)
            .env("HOME", self.dir.path())
            .env_remove("CORAL_CONFIG_PATH")
            .env_remove("DSH_HOME")
            .env_remove("CLAUDE_CONFIG_DIR")
            .output()
            .unwrap()
    }

    fn ok(&self, args: &[&str]) -> String {
        let out = self.setup(args);
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap()
    }

    fn backups(&self) -> Vec<PathBuf> {
        let mut v: Vec<PathBuf> = std::fs::read_dir(self.dir.path())
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.to_string_lossy().contains(".coral-backup-"))
            .collect();
        v.sort();
        v
    }
}

fn binary() -> String {
    std::fs::canonicalize(CORAL).unwrap().display().to_string()
}

fn json_of(path: &Path) -> Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// The number of `"coral":` keys in a text (JSONC has no parser in this test).
fn coral_keys(text: &str) -> usize {
    text.matches("\"coral\":").count()
}

#[test]
fn claude_desktop_twice_gives_one_entry_and_keeps_the_rest() {
    let b = Sandbox::new();
    let file = b.copy("claude_desktop_config.json");
    let original = json_of(&file);
    let f = file.to_str().unwrap();
    let said = b.ok(&["claude-desktop", "--config-file", f]);
    assert!(said.contains("updated:"), "{said}");
    let once = std::fs::read_to_string(&file).unwrap();
    let v = json_of(&file);
    let entry = &v["mcpServers"]["coral"];
    assert_eq!(entry["command"], binary());
    assert_eq!(
        entry["args"],
        json!(["--config", b.config().display().to_string(), "mcp"])
    );
    assert_eq!(
        v["mcpServers"]["filesystem"],
        original["mcpServers"]["filesystem"]
    );
    assert_eq!(v["globalShortcut"], "Ctrl+Space");
    // The config Coral will start with exists now.
    assert!(b.config().exists());
    // One backup, holding the file as it was.
    let backups = b.backups();
    assert_eq!(backups.len(), 1);
    assert_eq!(json_of(&backups[0]), original);
    // Twice: nothing written, no new backup, still one entry.
    let said = b.ok(&["claude-desktop", "--config-file", f]);
    assert!(said.contains("already up to date"), "{said}");
    assert_eq!(std::fs::read_to_string(&file).unwrap(), once);
    assert_eq!(b.backups().len(), 1);
    assert_eq!(coral_keys(&once), 1);
    // Remove undoes it.
    b.ok(&["claude-desktop", "--config-file", f, "--remove"]);
    assert_eq!(json_of(&file), original);
    let said = b.ok(&["claude-desktop", "--config-file", f, "--remove"]);
    assert!(said.contains("already up to date"), "{said}");
}

#[test]
fn dry_run_prints_the_diff_and_writes_nothing() {
    let b = Sandbox::new();
    let file = b.copy("claude_desktop_config.json");
    let before = std::fs::read(&file).unwrap();
    let out = b.ok(&[
        "claude-desktop",
        "--config-file",
        file.to_str().unwrap(),
        "--dry-run",
    ]);
    assert!(out.contains("+++ "), "{out}");
    assert!(
        out.contains(&format!("+      \"command\": \"{}\"", binary())),
        "{out}"
    );
    assert!(out.contains("would be updated"), "{out}");
    assert_eq!(std::fs::read(&file).unwrap(), before);
    assert!(b.backups().is_empty());
    assert!(!b.config().exists());
    // A file that does not exist yet is created (with its directories), without a backup.
    let new = b.path("fresh/dir/claude_desktop_config.json");
    b.ok(&["claude-desktop", "--config-file", new.to_str().unwrap()]);
    assert_eq!(json_of(&new)["mcpServers"]["coral"]["command"], binary());
}

#[test]
fn cursor_jsonc_keeps_comments_and_updates_the_old_entry_in_place() {
    let b = Sandbox::new();
    let file = b.copy("cursor_mcp.json");
    let f = file.to_str().unwrap();
    b.ok(&["cursor", "--config-file", f]);
    let once = std::fs::read_to_string(&file).unwrap();
    for kept in [
        "// Servers Cursor starts for every workspace.",
        "/* the old Coral build, before I moved it */",
        "// remote server",
        "\"github\"",
    ] {
        assert!(once.contains(kept), "{kept} lost:\n{once}");
    }
    assert!(!once.contains("/opt/old/coral"), "{once}");
    assert!(once.contains(&binary()));
    // The user's own keys of the entry stay.
    assert!(once.contains("\"RUST_LOG\": \"warn\""), "{once}");
    assert_eq!(coral_keys(&once), 1);
    b.ok(&["cursor", "--config-file", f]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), once);
    assert_eq!(coral_keys(&once), 1);
}

#[test]
fn cline_keeps_the_users_auto_approve_list() {
    let b = Sandbox::new();
    let file = b.copy("cline_mcp_settings.json");
    let f = file.to_str().unwrap();
    b.ok(&["cline", "--config-file", f]);
    b.ok(&["cline", "--config-file", f]);
    let v = json_of(&file);
    let entry = &v["mcpServers"]["coral"];
    assert_eq!(entry["command"], binary());
    assert_eq!(
        entry["autoApprove"],
        json!(["memory_search", "thread_status"])
    );
    assert_eq!(entry["disabled"], false);
    assert_eq!(coral_keys(&std::fs::read_to_string(&file).unwrap()), 1);
    // A new Cline entry gets the read-only search approved.
    let fresh = b.path("new_cline.json");
    b.ok(&["cline", "--config-file", fresh.to_str().unwrap()]);
    assert_eq!(
        json_of(&fresh)["mcpServers"]["coral"]["autoApprove"],
        json!(["memory_search"])
    );
}

#[test]
fn strict_clients_refuse_a_file_their_own_parser_would_refuse() {
    let b = Sandbox::new();
    let file = b.copy("cursor_mcp.json");
    let before = std::fs::read(&file).unwrap();
    let out = b.setup(&["claude-desktop", "--config-file", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("comment") && err.contains("nothing was changed"),
        "{err}"
    );
    assert_eq!(std::fs::read(&file).unwrap(), before);
}

#[test]
fn dsh_keeps_anchors_and_never_duplicates_the_id() {
    let b = Sandbox::new();
    let file = b.copy("cordis.patch.yml");
    let original = std::fs::read_to_string(&file).unwrap();
    let f = file.to_str().unwrap();
    b.ok(&["dsh", "--config-file", f]);
    b.ok(&["dsh", "--config-file", f]);
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.starts_with(&original),
        "the old lines stay as they were:\n{text}"
    );
    assert_eq!(text.matches("id: mcp-coral").count(), 1, "{text}");
    assert!(text.contains(&format!("command: '{}'", binary())), "{text}");
    assert!(text.contains(&format!("'--config', '{}', 'mcp'", b.config().display())));
    // Through DSH_HOME and the profile, as DSH lays it out.
    let dsh = b.path("dsh");
    std::fs::create_dir_all(dsh.join("profiles/work")).unwrap();
    std::fs::copy(&file, dsh.join("profiles/work/cordis.patch.yml")).unwrap();
    let out = Command::new(CORAL)
        .arg("--config")
        .arg(b.config())
        .args(["setup", "dsh", "--profile", "work"])
        .env("DSH_HOME", &dsh)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("already up to date"));
    b.ok(&["dsh", "--config-file", f, "--remove"]);
    assert_eq!(std::fs::read_to_string(&file).unwrap(), original);
}

/// Run a hook entry's command as Claude Code does (through the shell), with a payload.
fn run_hook(command: &str, payload: &Value) -> Value {
    let mut child = Command::new("sh")
        .args(["-c", command])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(payload.to_string().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{command}: {out:?}");
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn claude_code_gets_the_server_and_hooks_that_run() {
    let b = Sandbox::new();
    let file = b.copy("claude.json");
    let settings = b.copy("claude_settings.json");
    let (f, s) = (file.to_str().unwrap(), settings.to_str().unwrap());
    let original = json_of(&settings);
    b.ok(&["claude-code", "--config-file", f, "--settings-file", s]);
    b.ok(&["claude-code", "--config-file", f, "--settings-file", s]);
    let v = json_of(&file);
    assert_eq!(v["mcpServers"]["coral"]["type"], "stdio");
    assert_eq!(v["mcpServers"]["coral"]["command"], binary());
    assert_eq!(v["mcpServers"]["playwright"]["command"], "npx");
    assert_eq!(v["numStartups"], 42);
    let h = json_of(&settings);
    // The user's hooks stay; one Coral handler per event.
    assert_eq!(h["hooks"]["PreToolUse"], original["hooks"]["PreToolUse"]);
    assert_eq!(h["permissions"], original["permissions"]);
    let mut commands = Vec::new();
    for event in [
        "SessionStart",
        "UserPromptSubmit",
        "Stop",
        "PreCompact",
        "SessionEnd",
    ] {
        let ours: Vec<&Value> = h["hooks"][event]
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|g| g["hooks"].as_array().unwrap())
            .filter(|x| x["command"].as_str().unwrap().contains("hook claude-code"))
            .collect();
        assert_eq!(ours.len(), 1, "{event}: {h}");
        assert!(
            ours[0]["command"]
                .as_str()
                .unwrap()
                .ends_with(&format!(" {event}"))
        );
        commands.push((event, ours[0]["command"].as_str().unwrap().to_string()));
    }
    assert!(
        h["hooks"]["UserPromptSubmit"]
            .to_string()
            .contains("git branch --show-current"),
        "the user's own prompt hook stays"
    );
    // The commands it wrote run: a memory stored, then recalled by the prompt hook.
    Command::new(CORAL)
        .arg("--config")
        .arg(b.config())
        .args(["-q", "insert", "用户喜欢喝冰镇拿铁咖啡"])
        .output()
        .unwrap();
    let (_, prompt) = &commands[1];
    let out = run_hook(
        prompt,
        &json!({"session_id": "s", "hook_event_name": "UserPromptSubmit", "prompt": "推荐一杯拿铁咖啡"}),
    );
    assert!(
        out["hookSpecificOutput"]["additionalContext"]
            .as_str()
            .unwrap()
            .contains("拿铁"),
        "{out}"
    );
    // Remove takes out the server and every Coral hook, and nothing else.
    b.ok(&[
        "claude-code",
        "--config-file",
        f,
        "--settings-file",
        s,
        "--remove",
    ]);
    assert!(json_of(&file)["mcpServers"].get("coral").is_none());
    assert_eq!(json_of(&settings), original);
}
