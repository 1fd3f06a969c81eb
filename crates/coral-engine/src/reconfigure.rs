//! Putting a configuration in force (docs/configuration.md, "Changing settings while Coral
//! runs"): one given by the caller or a config edit, and hot reload of the file, checked at the
//! start of every call. An invalid file keeps the previous config in force and shows the error
//! in `stats().config_error`; path, thread-path and embedding changes wait for a restart.

use std::time::Duration;

use crate::engine::{Engine, EngineGuard, State};
use crate::error::Result;
use crate::guard::RemovalLimits;
use crate::limits::unix_now;
use coral_config::Config;

impl Engine {
    /// The engine, locked (see [`Engine::lock_raw`]), after picking up a changed config file.
    pub(crate) fn lock(&self) -> EngineGuard<'_> {
        let mut engine = self.lock_raw();
        self.reload_if_changed(&mut engine);
        engine
    }

    /// Pick up a changed config file before a call reads the config.
    pub fn refresh_config(&self) {
        if self.config.reloader().is_some() {
            drop(self.lock());
        }
    }

    /// Put `config` in force now and govern at once (a lower capacity evicts right away).
    /// `confirmed`: the caller accepted whatever the new limits remove (see `guard.rs`);
    /// otherwise a bulk removal is held until confirmed.
    pub fn apply_config(&self, config: Config, now: f64, confirmed: bool) -> Result<()> {
        let mut engine = self.lock_raw();
        let config = self.config.swap(config);
        if confirmed {
            engine.accept(RemovalLimits::of(&config), now);
        }
        if let Some(r) = self.config.reloader() {
            r.mark_seen();
            r.set_error(None);
        }
        drop(engine);
        self.govern(&config, now, None)
    }

    /// Called with the engine locked at the start of every call: reload the file when the
    /// watcher saw it change or the fallback interval has passed and its fingerprint moved.
    fn reload_if_changed(&self, engine: &mut State) {
        let Some(r) = self.config.reloader() else {
            return;
        };
        let interval =
            Duration::from_secs_f64(self.config().reload.check_interval_seconds.max(0.0));
        if !r.changed(interval) {
            return;
        }
        let loaded = std::fs::read_to_string(r.path())
            .map_err(|e| format!("cannot read {}: {e}", r.path().display()))
            .and_then(|text| Config::from_json(&text));
        match loaded {
            Ok((config, _warnings)) => {
                let config = self.config.swap(config);
                // Under the lock: no distillation here (it would hold the lock across an LLM
                // call); a lower capacity is governed by eviction at once.
                let now = unix_now();
                let held = engine.guarded(&config, now);
                let config = held.as_ref().unwrap_or(&config);
                let governed = engine
                    .maintain(config, now)
                    .and_then(|()| self.enforce_disk_quota(engine, config, now));
                r.set_error(
                    governed
                        .err()
                        .map(|e| format!("reloaded, but governance failed: {e}")),
                );
            }
            Err(e) => {
                r.set_error(Some(format!(
                    "{}: {e}; still using the previous config",
                    r.path().display()
                )));
            }
        }
    }
}
