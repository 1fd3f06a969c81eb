//! Governance after a mutation (docs/configuration.md, "Distillation" and "Disk budget"):
//! distillation before eviction, tier checks, the project and disk quotas, and the confirmation
//! of a held bulk removal (`guard.rs`).
//!
//! Distillation calls a remote LLM, which can take seconds, so it never holds the engine lock
//! across the call: clusters are planned under the lock, summarised without it, and committed
//! under it again only if every member is still there. Any failure skips that cluster and
//! changes nothing; eviction then does what is left.

use std::io::Write as _;

use coral_embed::{item_id, text_features, token_count};
use coral_heat::{
    Candidate, ColdItem, DistillCandidate, DistillParams, Llm, OpenAiClient, QuotaLimits,
    evict_lowest_heat, excess_over_capacity, headroom, plan_distillation, plan_quota,
};
use coral_store::{Item, Pool, Record, Tier};

use crate::candidates::{self, candidate};
use crate::engine::{Engine, State};
use crate::error::Result;
use crate::guard::{Confirmed, Held, RemovalLimits, RemovalPreview, preview_removals};
use crate::limits::unix_now;
use crate::quota::{archive_bytes, item_bytes, quota_bytes};
use coral_config::{Config, llm_settings};

/// One cluster to summarise: member ids and texts, the summary's counters.
struct Job {
    ids: Vec<String>,
    texts: Vec<String>,
    access_count: u64,
    importance: f64,
    project: Option<String>,
}

/// Items above capacity + headroom (0 when within).
fn governance_excess(pool: &Pool, config: &Config) -> usize {
    let m = &config.memory;
    excess_over_capacity(
        pool.len(),
        m.capacity_threshold,
        headroom(m.capacity_threshold, m.governance_headroom),
    )
}

/// Clusters of the coolest warm and cold items worth one summary each.
fn plan_distill(pool: &Pool, config: &Config, now: f64) -> Vec<Job> {
    let candidates: Vec<Candidate> = [Tier::Warm, Tier::Cold]
        .iter()
        .flat_map(|&t| candidates::of_tier(pool, t))
        .collect();
    let params = config.heat.params();
    let coolest = evict_lowest_heat(&candidates, 200, now, &params);
    let tokens: Vec<Vec<u64>> = coolest
        .iter()
        .map(|&row| text_features(&pool.item(row).content).token_set)
        .collect();
    let distill: Vec<DistillCandidate> = coolest
        .iter()
        .zip(&tokens)
        .map(|(&row, tokens)| {
            let item = pool.item(row);
            DistillCandidate {
                key: row,
                access_count: item.access_count,
                importance: item.importance,
                last_access: item.last_access,
                tokens,
            }
        })
        .collect();
    let distill_params = DistillParams {
        sim_threshold: config.memory.distill_sim_threshold,
        min_cluster: config.memory.distill_min_cluster,
        pool_limit: 200,
    };
    plan_distillation(&distill, now, &params, &distill_params)
        .into_iter()
        .map(|plan| {
            let items: Vec<&Item> = plan.members.iter().map(|&r| pool.item(r)).collect();
            let first_project = items.first().and_then(|i| i.project.clone());
            let shared = items.iter().all(|i| i.project == first_project);
            Job {
                ids: items.iter().map(|i| i.item_id.clone()).collect(),
                texts: items.iter().map(|i| i.content.clone()).collect(),
                access_count: plan.access_count,
                importance: plan.importance,
                project: if shared { first_project } else { None },
            }
        })
        .collect()
}

impl Engine {
    /// Governance after a mutation, with the engine unlocked: distil when over capacity and an
    /// LLM is configured, then tier checks and eviction, the project quota, the disk quota.
    pub(crate) fn govern(&self, config: &Config, now: f64, project: Option<&str>) -> Result<()> {
        // A changed limit that would remove many memories at once waits for a confirmation
        // (guard.rs); meanwhile governance runs under the limits accepted before.
        let held = self.lock_raw().guarded(config, now);
        let config = held.as_ref().unwrap_or(config);
        if config.memory.distill_first {
            let planned = {
                let engine = self.lock_raw();
                let pool = engine.door.view().pool();
                if governance_excess(pool, config) > 0 {
                    llm_settings(config).map(|s| (s, plan_distill(pool, config, now)))
                } else {
                    None
                }
            };
            if let Some((settings, jobs)) = planned.filter(|(_, jobs)| !jobs.is_empty()) {
                match OpenAiClient::new(settings) {
                    Ok(client) => {
                        self.distill(&client, jobs, now)?;
                    }
                    Err(e) => self.governance.update(|g| {
                        g.distill_failures += 1;
                        g.last_distill_error = Some(e.to_string());
                    }),
                }
            }
        }
        let mut engine = self.lock_raw();
        engine.maintain(config, now)?;
        match project {
            // After an insert, only its project can have grown past the quota.
            Some(p) => engine.enforce_project_quota(config, p, now)?,
            // After a config change, every project is checked.
            None if config.memory.project_quota > 0 => {
                let pool = engine.door.view().pool();
                let mut projects: Vec<String> = (0..pool.len() as u32)
                    .filter_map(|r| pool.item(r).project.clone())
                    .collect();
                projects.sort_unstable();
                projects.dedup();
                for p in projects {
                    engine.enforce_project_quota(config, &p, now)?;
                }
            }
            None => {}
        }
        self.enforce_disk_quota(&mut engine, config, now)
    }

    /// [`Engine::govern`] after a change that is already durable: a failure is recorded in
    /// [`GovernanceStats::last_error`] instead of failing the change.
    pub(crate) fn govern_after_change(&self, config: &Config, now: f64, project: Option<&str>) {
        let outcome = self.govern(config, now, project);
        self.governance.update(|g| {
            g.last_error = outcome.err().map(|e| {
                format!("governance after the last change failed ({e}); the change was kept")
            })
        });
    }

    /// Distil now with a given client (tests and tools inject their own), whatever the
    /// capacity: the coolest clusters become summaries. Returns how many clusters were replaced.
    pub fn distill_with(&self, llm: &dyn Llm, now: f64) -> Result<usize> {
        let config = self.config();
        let jobs = plan_distill(self.lock_raw().door.view().pool(), &config, now);
        let done = self.distill(llm, jobs, now)?;
        let mut engine = self.lock_raw();
        let held = engine.guarded(&config, now);
        engine.maintain(held.as_ref().unwrap_or(&config), now)?;
        Ok(done)
    }

    fn distill(&self, llm: &dyn Llm, jobs: Vec<Job>, now: f64) -> Result<usize> {
        let mut done = 0;
        for job in jobs {
            let texts: Vec<&str> = job.texts.iter().map(String::as_str).collect();
            let summary = match llm.summarize(&texts) {
                Ok(s) => s,
                Err(e) => {
                    self.governance.update(|g| {
                        g.distill_failures += 1;
                        g.last_distill_error = Some(e.to_string());
                    });
                    continue;
                }
            };
            let vector = match self.embedder.embed(&[summary.as_str()]) {
                Ok(mut v) => v.pop().unwrap_or_default(),
                Err(e) => {
                    self.governance.update(|g| {
                        g.distill_failures += 1;
                        g.last_distill_error = Some(format!("embedding the summary failed: {e}"));
                    });
                    continue;
                }
            };
            let summary_id = item_id(&summary);
            let mut engine = self.lock_raw();
            // The pool may have changed while the LLM was thinking: only whole clusters commit.
            if job
                .ids
                .iter()
                .any(|id| engine.door.view().get(id).is_none())
                || job.ids.contains(&summary_id)
            {
                continue;
            }
            let mut records = Vec::with_capacity(job.ids.len() + 1);
            match engine.door.view().get(&summary_id) {
                Some((existing, _)) => records.push(Record::Touch {
                    id: summary_id.clone(),
                    access_count: existing.access_count.saturating_add(job.access_count),
                    last_access: existing.last_access.max(now),
                }),
                None => records.push(Record::Put {
                    tier: Tier::Hot,
                    item: Item {
                        access_count: job.access_count.max(1),
                        project: job.project.clone(),
                        ..Item::new(
                            summary_id.clone(),
                            summary.clone(),
                            token_count(&summary),
                            now,
                            job.importance.clamp(0.0, 1.0),
                        )
                    },
                    vector,
                }),
            }
            records.extend(job.ids.iter().map(|id| Record::Archive {
                id: id.clone(),
                reason: "distilled".into(),
                summary_id: Some(summary_id.clone()),
                at: now,
            }));
            let rows: Vec<u32> = job
                .ids
                .iter()
                .filter_map(|id| engine.door.view().pool().row(id))
                .collect();
            let tiers = engine.tiers_of(&rows);
            engine.door.commit(records)?;
            engine.log_removal("distilled", tiers, now);
            drop(engine);
            done += 1;
            self.governance.update(|g| {
                g.distilled_clusters += 1;
                g.distilled_members += job.ids.len() as u64;
            });
        }
        Ok(done)
    }

    /// Keep the directory within `storage.max_bytes`: warn above `warn_ratio`; above the budget
    /// trim the archive, then remove the coolest cold memories, down to `hard_ratio`.
    pub(crate) fn enforce_disk_quota(
        &self,
        engine: &mut State,
        config: &Config,
        now: f64,
    ) -> Result<()> {
        let s = &config.storage;
        if s.max_bytes == 0 {
            return Ok(());
        }
        let limits = QuotaLimits {
            max_bytes: s.max_bytes,
            warn_ratio: s.warn_ratio,
            hard_ratio: s.hard_ratio,
        };
        let params = config.heat.params();
        let warned = self.governance.snapshot().disk_warning.is_some();
        // The journal is folded often enough to stay a small part of the budget; the plan
        // counts the data as a checkpoint would write it (see `quota::quota_bytes`), so usage
        // moves exactly with what is stored and every removal frees what it was charged.
        let journal_cap = (s.max_bytes / 10).max(64 * 1024);
        if engine.door.view().journal_bytes() > journal_cap {
            engine.door.checkpoint()?;
        }
        let store = engine.door.view();
        let counted = quota_bytes(store);
        let archive = archive_bytes(store);
        let pool = store.pool();
        let cold: Vec<ColdItem> = pool
            .tier_rows(Tier::Cold)
            .iter()
            .map(|row| ColdItem {
                item: candidate(pool, row),
                bytes: item_bytes(pool.item(row), Tier::Cold, pool.dim()),
            })
            .collect();
        let plan = plan_quota(counted, archive, &cold, &limits, warned, now, &params);
        if plan.warn {
            let message = format!(
                "disk usage {} bytes is {:.0}% of storage.max_bytes {}",
                counted,
                plan.ratio * 100.0,
                s.max_bytes
            );
            // Never a panic when stderr cannot be written.
            let _ = writeln!(std::io::stderr(), "coral: warning: {message}");
            self.governance.update(|g| {
                g.disk_warning = Some(message);
                g.disk_warnings += 1;
            });
        } else if !plan.above_warn {
            self.governance.update(|g| g.disk_warning = None);
        }
        if !plan.removes_anything() {
            return Ok(());
        }
        let mut trimmed = 0;
        if let Some(target) = plan.archive_target_bytes {
            trimmed = engine.door.trim_archive(target)?;
        }
        let ids: Vec<String> = plan
            .evict
            .iter()
            .map(|&row| engine.door.view().pool().item(row).item_id.clone())
            .collect();
        let removed = ids.len() as u64;
        let tiers = engine.tiers_of(&plan.evict);
        engine
            .door
            .commit(ids.into_iter().map(|id| Record::Delete { id }).collect())?;
        engine.log_removal("disk_quota", tiers, now);
        engine.door.checkpoint()?;
        self.governance.update(|g| {
            g.quota_removed += removed;
            g.quota_archive_bytes_trimmed += trimmed;
        });
        Ok(())
    }

    /// What the configuration in force would remove now, and whether a change is held.
    pub fn removal_preview(&self) -> (RemovalPreview, Option<Held>) {
        // A config file edited since the last call is read first: the preview is of the
        // limits in force, and an edit held by the reload stays held.
        self.refresh_config();
        let config = self.config();
        let mut engine = self.lock();
        let _ = engine.guarded(&config, unix_now());
        let preview = preview_removals(engine.door.view(), &config, unix_now());
        (preview, engine.guard.held().cloned())
    }

    /// What `planned` would remove now, with the settings that differ from the accepted ones.
    pub fn preview_change(&self, planned: &Config) -> RemovalPreview {
        let mut engine = self.lock();
        let engine = &mut *engine;
        engine
            .guard
            .preview_change(engine.door.view(), planned, unix_now())
    }

    /// Accept the limits of the configuration in force, whatever they remove, and govern now
    /// (`coral govern --confirm`; a tool's `confirm: true`).
    pub fn confirm_removals(&self) -> Result<Confirmed> {
        // As in `removal_preview`: confirm the limits of the file as it is now.
        self.refresh_config();
        let config = self.config();
        let now = unix_now();
        let (before, preview) = {
            let mut engine = self.lock();
            let _ = engine.guarded(&config, now);
            let preview = engine.guard.held().map(|h| h.preview.clone());
            engine.accept(RemovalLimits::of(&config), now);
            (engine.door.view().pool().len(), preview)
        };
        self.govern(&config, now, None)?;
        let after = self.lock().door.view().pool().len();
        Ok(Confirmed {
            preview,
            before,
            after,
        })
    }
}
