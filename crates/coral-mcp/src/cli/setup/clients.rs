//! Where each client keeps its MCP servers, in which format, and what Coral's entry there
//! looks like (docs/servers.md, "Setting up a client").

use std::path::{Path, PathBuf};

use clap::ValueEnum;
use serde_json::{Value, json};

/// The clients `coral setup` knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Client {
    /// Claude Desktop (`claude_desktop_config.json`).
    ClaudeDesktop,
    /// Claude Code (`~/.claude.json`, and the hooks in `~/.claude/settings.json`).
    ClaudeCode,
    /// Cursor (`~/.cursor/mcp.json`).
    Cursor,
    /// Cline (`cline_mcp_settings.json` in VS Code's storage).
    Cline,
    /// The DeepSeek harness (`$DSH_HOME/profiles/<profile>/cordis.patch.yml`).
    Dsh,
}

/// How a client's file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON as the client's own parser reads it: strict, or with comments and trailing commas.
    Json {
        /// Comments and trailing commas allowed (JSONC).
        comments: bool,
    },
    /// The DSH patch file: a YAML list of entries.
    YamlList,
}

impl Client {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Client::ClaudeDesktop => "claude-desktop",
            Client::ClaudeCode => "claude-code",
            Client::Cursor => "cursor",
            Client::Cline => "cline",
            Client::Dsh => "dsh",
        }
    }

    /// The format of its server file. Cursor reads its `mcp.json` as JSONC, like VS Code's
    /// settings; Claude Desktop, Claude Code and Cline parse theirs as strict JSON, so a comment
    /// there is a file they cannot read, and Coral refuses to add to it.
    pub fn format(self) -> Format {
        match self {
            Client::Cursor => Format::Json { comments: true },
            Client::Dsh => Format::YamlList,
            _ => Format::Json { comments: false },
        }
    }

    /// Where the client keeps its servers on this system (`profile`: DSH's).
    pub fn default_file(self, env: &Env, profile: &str) -> Result<PathBuf, String> {
        let home = env.home()?;
        Ok(match self {
            Client::ClaudeDesktop => app_config(env, &home)?
                .join("Claude")
                .join("claude_desktop_config.json"),
            Client::ClaudeCode => match env.var("CLAUDE_CONFIG_DIR") {
                Some(dir) => PathBuf::from(dir).join(".claude.json"),
                None => home.join(".claude.json"),
            },
            Client::Cursor => home.join(".cursor").join("mcp.json"),
            Client::Cline => app_config(env, &home)?
                .join("Code/User/globalStorage/saoudrizwan.claude-dev/settings")
                .join("cline_mcp_settings.json"),
            Client::Dsh => {
                let dsh = env.var("DSH_HOME").ok_or(
                    "DSH_HOME is not set: set it to the harness's home, or give --config-file \
                     with the profile's cordis.patch.yml",
                )?;
                PathBuf::from(dsh)
                    .join("profiles")
                    .join(profile)
                    .join("cordis.patch.yml")
            }
        })
    }

    /// Claude Code's settings file, where its hooks go.
    pub fn claude_settings(env: &Env) -> Result<PathBuf, String> {
        Ok(match env.var("CLAUDE_CONFIG_DIR") {
            Some(dir) => PathBuf::from(dir).join("settings.json"),
            None => env.home()?.join(".claude").join("settings.json"),
        })
    }

    /// Coral's entry for a JSON client: the binary and the config, as absolute paths.
    pub fn json_entry(self, binary: &Path, config: &Path) -> Value {
        let mut entry = json!({
            "command": binary,
            "args": ["--config", config, "mcp"],
        });
        match self {
            Client::ClaudeCode => entry["type"] = json!("stdio"),
            Client::Cline => {
                entry["disabled"] = json!(false);
                entry["autoApprove"] = json!(["memory_search"]);
            }
            _ => {}
        }
        entry
    }

    /// Coral's entry for DSH, as the lines of one YAML list item (paths single-quoted).
    pub fn yaml_entry(binary: &Path, config: &Path) -> String {
        let q = |p: &Path| format!("'{}'", p.display().to_string().replace('\'', "''"));
        format!(
            "- id: {id}\n  name: '@deepseek-ai/dsh-mcp-client'\n  config:\n    serverName: coral\n    \
             transport: stdio\n    command: {bin}\n    args: ['--config', {cfg}, 'mcp']\n    \
             toolCallTimeoutMs: 30000\n",
            id = super::yaml_list::ID,
            bin = q(binary),
            cfg = q(config)
        )
    }
}

/// The keys of an existing entry Coral sets; the user's others (`env`, `autoApprove`,
/// `disabled`, ...) are kept.
pub const OWNED_KEYS: [&str; 3] = ["command", "args", "type"];

/// A lookup of environment variables (empty values count as unset).
pub type VarLookup = Box<dyn Fn(&str) -> Option<String>>;

/// The environment setup reads: variables and the platform.
pub struct Env {
    /// Variable lookup.
    pub var: VarLookup,
    /// `macos`, `windows`, or anything else for the XDG layout.
    pub os: &'static str,
}

impl Env {
    /// This process's.
    pub fn current() -> Env {
        Env {
            var: Box::new(|k| std::env::var(k).ok().filter(|v| !v.is_empty())),
            os: std::env::consts::OS,
        }
    }

    fn var(&self, key: &str) -> Option<String> {
        (self.var)(key)
    }

    /// The user's home directory.
    pub fn home(&self) -> Result<PathBuf, String> {
        let key = if self.os == "windows" {
            "USERPROFILE"
        } else {
            "HOME"
        };
        self.var(key)
            .map(PathBuf::from)
            .ok_or_else(|| format!("${key} is not set: give --config-file"))
    }
}

/// Where applications keep their settings: `~/Library/Application Support` on macOS,
/// `%APPDATA%` on Windows, `$XDG_CONFIG_HOME` or `~/.config` elsewhere.
fn app_config(env: &Env, home: &Path) -> Result<PathBuf, String> {
    Ok(match env.os {
        "macos" => home.join("Library/Application Support"),
        "windows" => PathBuf::from(
            env.var("APPDATA")
                .ok_or("%APPDATA% is not set: give --config-file")?,
        ),
        _ => env
            .var("XDG_CONFIG_HOME")
            .map(PathBuf::from)
            .unwrap_or_else(|| home.join(".config")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(os: &'static str, vars: &'static [(&'static str, &'static str)]) -> Env {
        Env {
            var: Box::new(move |k| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }),
            os,
        }
    }

    #[test]
    fn platform_paths() {
        let mac = env("macos", &[("HOME", "/Users/a")]);
        let linux = env("linux", &[("HOME", "/home/a")]);
        let win = env(
            "windows",
            &[
                ("USERPROFILE", "C:/Users/a"),
                ("APPDATA", "C:/Users/a/AppData/Roaming"),
            ],
        );
        let file = |c: Client, e: &Env| c.default_file(e, "default").unwrap();
        assert_eq!(
            file(Client::ClaudeDesktop, &mac),
            Path::new("/Users/a/Library/Application Support/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            file(Client::ClaudeDesktop, &win),
            Path::new("C:/Users/a/AppData/Roaming/Claude/claude_desktop_config.json")
        );
        assert_eq!(
            file(Client::Cline, &linux),
            Path::new(
                "/home/a/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
            )
        );
        assert_eq!(
            file(Client::Cursor, &linux),
            Path::new("/home/a/.cursor/mcp.json")
        );
        assert_eq!(
            file(Client::ClaudeCode, &linux),
            Path::new("/home/a/.claude.json")
        );
        assert_eq!(
            Client::claude_settings(&linux).unwrap(),
            Path::new("/home/a/.claude/settings.json")
        );
        let err = Client::Dsh.default_file(&linux, "default").unwrap_err();
        assert!(err.contains("DSH_HOME"), "{err}");
        let dsh = env("linux", &[("HOME", "/home/a"), ("DSH_HOME", "/opt/dsh")]);
        assert_eq!(
            Client::Dsh.default_file(&dsh, "work").unwrap(),
            Path::new("/opt/dsh/profiles/work/cordis.patch.yml")
        );
        assert!(env("linux", &[]).home().unwrap_err().contains("HOME"));
    }
}
