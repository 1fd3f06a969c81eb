//! Where a hook's answers come from (docs/hooks.md, "Speed"): the config file alone for what it
//! decides, a running server's recall socket for a prompt's memories, and only when no server
//! answers the store opened in this process. Each is reached at most once, and only when the
//! event needs it: a prompt hook that a server answers loads no model and opens no store,
//! threads file or timeline.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use coral::{Config, Coral, Loaded};
use coral_mcp::project::ProjectScope;
use coral_mcp::recall::{self, Asked, Params, Recalled};

use crate::cli::globals::Globals;

/// Longest a hook waits for a server's answer before opening the store itself: far above a
/// recall's few milliseconds, far below a client's hook timeout (10 s in the entries `coral
/// setup` writes).
pub const ASK_TIMEOUT: Duration = Duration::from_secs(2);

/// A hook's config, and the store once opened.
pub struct Source<'a> {
    cli: &'a Globals,
    /// `--project` of the command line.
    project_flag: Option<&'a str>,
    path: PathBuf,
    loaded: Option<Loaded>,
    config: Option<Config>,
    coral: Option<Coral>,
    /// Failures that did not stop the answer (said on stderr).
    pub notes: Vec<String>,
    /// What was done and how long it took (said with `-v`).
    pub info: Vec<String>,
}

impl<'a> Source<'a> {
    /// Nothing read yet.
    pub fn new(cli: &'a Globals, project_flag: Option<&'a str>) -> Source<'a> {
        Source {
            cli,
            project_flag,
            path: Config::resolve_path(cli.config.as_deref()),
            loaded: None,
            config: None,
            coral: None,
            notes: Vec::new(),
            info: Vec::new(),
        }
    }

    /// The configuration, read once. It must exist: a hook never creates one in the project
    /// directory its client runs it in.
    pub fn config(&mut self) -> Result<&Config, String> {
        if self.config.is_none() {
            if !self.path.exists() {
                return Err(format!(
                    "no Coral config at {}; give --config (`coral setup claude-code` writes it \
                     into the hook entries)",
                    self.path.display()
                ));
            }
            let mut loaded = Config::load(&self.path).map_err(|e| e.to_string())?;
            if let Some(dir) = &self.cli.data_dir {
                loaded.config.data_dir_override = Some(dir.clone());
            }
            self.config = Some(loaded.config.clone());
            self.loaded = Some(loaded);
        }
        self.config
            .as_ref()
            .ok_or_else(|| "the config was not read".to_string())
    }

    /// The project of a client working in `cwd` (the payload's; else this process's):
    /// `--project`, else `memory.project`, `auto` taken from `cwd`'s workspace.
    pub fn project(&mut self, cwd: Option<&str>) -> Result<Option<String>, String> {
        let flag = self.project_flag;
        let value = match flag {
            Some(v) => v.to_string(),
            None => self.config()?.memory.project.clone(),
        };
        let dir = match cwd.filter(|c| !c.is_empty()) {
            Some(c) => PathBuf::from(c),
            None => std::env::current_dir().unwrap_or_else(|_| "/".into()),
        };
        let scope = ProjectScope::parse(&value, &dir).map_err(|e| match flag {
            Some(_) => format!("--project: {e}"),
            None => format!("memory.project in {}: {e}", self.path.display()),
        })?;
        Ok(scope.default_project().map(String::from))
    }

    /// The store, opened once; notices only with `-v`.
    pub fn coral(&mut self) -> Result<&Coral, String> {
        if self.coral.is_none() {
            self.config()?;
            let loaded = self
                .loaded
                .take()
                .ok_or_else(|| "the config was not read".to_string())?;
            let started = Instant::now();
            let coral = Coral::open_loaded(loaded, &self.path).map_err(|e| e.to_string())?;
            self.info.push(format!(
                "opened the store in {:.1} ms",
                started.elapsed().as_secs_f64() * 1000.0
            ));
            if self.cli.verbose {
                for n in coral.notices() {
                    coral_mcp::errln!("coral: {n}");
                }
            }
            self.coral = Some(coral);
        }
        self.coral
            .as_ref()
            .ok_or_else(|| "the store was not opened".to_string())
    }

    /// The store if this process opened it.
    pub fn opened(&self) -> Option<&Coral> {
        self.coral.as_ref()
    }

    /// The memories for `prompt`: from the server that owns the data directory's recall
    /// socket when one answers (`hooks.recall_socket`), else from the store opened here.
    pub fn recall(&mut self, prompt: &str, params: &Params) -> Result<Vec<Recalled>, String> {
        let ask = self.config()?.hooks.recall_socket && self.coral.is_none();
        if ask {
            let path = recall::socket_path(&self.config()?.store_paths().dir);
            let started = Instant::now();
            match recall::ask(&path, prompt, params, ASK_TIMEOUT) {
                Ok(Asked::Answered { memories, embedder }) => {
                    self.info.push(format!(
                        "recalled {} memorie(s) through the server on {} ({embedder}) in {:.1} \
                         ms",
                        memories.len(),
                        path.display(),
                        started.elapsed().as_secs_f64() * 1000.0
                    ));
                    return Ok(memories);
                }
                Ok(Asked::NoServer(why)) => {
                    self.info.push(format!("{why}; opening the store"));
                }
                Err(e) => self
                    .notes
                    .push(format!("{e}; the store was opened instead")),
            }
        }
        let coral = self.coral()?;
        let started = Instant::now();
        let memories = recall::recall(coral, prompt, params).map_err(|e| e.to_string())?;
        self.info.push(format!(
            "recalled {} memorie(s) from the store in {:.1} ms",
            memories.len(),
            started.elapsed().as_secs_f64() * 1000.0
        ));
        Ok(memories)
    }
}
