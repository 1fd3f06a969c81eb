//! The timeline's Rust API on [`Coral`] (docs/timeline.md): the timeline crate's types under
//! the facade's names, the summariser that uses the `llm.*` endpoint, and retrieval ranking
//! with the engine's embedder. Where the database lives is `timeline_slot.rs`.

use std::path::PathBuf;
use std::sync::Arc;

use coral_embed::Embedder;
use coral_heat::OpenAiClient;

use crate::coral::Coral;
pub use crate::timeline_slot::READ_ONLY_RETRY;
use crate::unix_now;
pub use coral_config::TIMELINE_FILE;
use coral_config::{Config, llm_settings};

/// Tokens a summary answer may take (summaries are a few hundred; reasoning models think
/// first).
const SUMMARY_MAX_TOKENS: u32 = 4_096;

/// The engine's embedder as the timeline's retrieval sees it: vectors are tagged
/// `name/dim`, so switching models recomputes them.
struct EngineEmbedder<'a>(&'a dyn Embedder);

impl TextEmbedder for EngineEmbedder<'_> {
    fn model_id(&self) -> String {
        format!("{}/{}", self.0.name(), self.0.dim())
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, String> {
        let mut out = Vec::with_capacity(texts.len());
        // Bounded batches: the first retrieval over a long history embeds all of it.
        for chunk in texts.chunks(64) {
            out.extend(self.0.embed(chunk).map_err(|e| e.to_string())?);
        }
        Ok(out)
    }
}

/// The configured OpenAI-compatible endpoint writing timeline summaries.
pub struct LlmSummaries(OpenAiClient);

impl LlmSummaries {
    /// An endpoint from explicit settings (e.g. [`crate::llm_settings`] with another timeout).
    pub fn with_settings(settings: coral_heat::LlmSettings) -> Result<LlmSummaries, TimelineError> {
        OpenAiClient::new(settings)
            .map(LlmSummaries)
            .map_err(|e| TimelineError::Llm(e.to_string()))
    }

    /// The endpoint of `llm.*` in the config (or `CORAL_LLM_*` / `DEEPSEEK_*`), if one is set.
    pub fn from_config(config: &Config) -> Result<Option<LlmSummaries>, TimelineError> {
        match llm_settings(config) {
            None => Ok(None),
            Some(settings) => OpenAiClient::new(settings)
                .map(|c| Some(LlmSummaries(c)))
                .map_err(|e| TimelineError::Llm(e.to_string())),
        }
    }
}

impl SummaryLlm for LlmSummaries {
    fn complete(&self, system: &str, user: &str) -> Result<String, String> {
        self.0
            .chat(system, user, SUMMARY_MAX_TOKENS)
            .map_err(|e| e.to_string())
    }
}

pub use coral_timeline::{
    BeginTurn, BrowseCard, BrowsePage, BrowseRequest, BrowseResult, Classification, Closed,
    CompactReport, CompleteTurn, Context, ContextRequest, Detail, EntryInput, EntryRef, EntryView,
    Error as TimelineError, ExchangeRefs, FORGOTTEN_CALL, FORGOTTEN_TEXT, ForgetFilter,
    ForgetRecord, ForgetReport, ForgetRequest, ForgetTarget, Fusion, History, HistoryFormat,
    HistoryTokens, KeywordMatch, LayerSettings, LayerStatus, Metrics, Namespace, OpenRequest,
    OpenResult, Opened, OpenedMemory, OpenedSummary, Origin, Period, Policy,
    Problem as TimelineProblem, Projection, ReadRequest, ReadResult, ReadStatus, Recovered,
    Repair as TimelineRepair, Reply, RetrieveHit, RetrieveRequest, RetrieveResult, Retrieved,
    SettledResult, SettlementReport, SummaryCard, SummaryLayer, SummaryLlm, TextEmbedder, TimeHint,
    TimeRange, TimelinePage, ToolExchange, TurnHandle, TurnRole, TurnStatus, TurnView, UnitView,
    View, minute_label, parse_zone,
};
/// The timeline crate's items the interface crate's tools use under their own names.
pub use coral_timeline::{
    ContextRole, DEFAULT_ID, DispatchPolicy, Error, PromptOverrides, Receipt, Surface,
    SurfaceRequest, Timeline, WITHHELD_TEXT, tool_segment, with_ok, with_receipt,
};

impl Coral {
    /// The timeline, opened (and created) on first use. Opening aborts the open turns of
    /// processes that died before completing them. A failed open is retried by the next call.
    ///
    /// Where nothing can be written (a read-only file system or directory, a full disk) the
    /// timeline opens read-only: reads work, writes fail with [`TimelineError::Unwritable`],
    /// and [`Coral::timeline_read_only`] says why. A read-only timeline is opened again, for
    /// writing, by a call at least [`READ_ONLY_RETRY`] later, so a server whose disk had filled
    /// up records again once there is space.
    pub fn timeline(&self) -> Result<Arc<Timeline>, TimelineError> {
        if let crate::backend::Backend::Postgres(_) = &self.backend {
            // Never quietly a local file beside a shared memory (docs/postgres.md).
            return Err(TimelineError::InvalidInput(
                self.backend.unsupported("the timeline").to_string(),
            ));
        }
        self.timeline.get()
    }

    /// Why the timeline records nothing, when it was opened read-only (see
    /// [`Coral::timeline`]); `None` when it is writable or not open yet.
    pub fn timeline_read_only(&self) -> Option<String> {
        self.timeline.read_only()
    }

    /// Damage the timeline's open found and contained (a damaged write-ahead log, copied
    /// aside), as [`Timeline::repairs`]; empty when it is not open yet.
    pub fn timeline_repairs(&self) -> Vec<TimelineRepair> {
        self.timeline.repairs()
    }

    /// Every problem of the timeline database, for `coral check` ([`Timeline::check`]: SQLite's
    /// integrity check, schema, write-ahead-log damage, quarantined copies left beside it).
    /// A data directory without a timeline has none (the file is not created); a file that
    /// cannot be opened is one problem naming why.
    pub fn timeline_check(&self) -> Vec<TimelineProblem> {
        self.timeline.check()
    }

    /// `retrieve_for_turn` with this engine's embedder ranking by vector too, fused as
    /// `retrieval.mode` says: `"hybrid"` with `retrieval.hybrid`'s weights for this embedder
    /// and query (the request's own fusion is replaced), the other modes by MemCore's RRF.
    pub fn timeline_retrieve(
        &self,
        ns: &Namespace,
        req: &RetrieveRequest,
    ) -> Result<RetrieveResult, TimelineError> {
        let timeline = self.timeline()?;
        let config = self.config();
        let embedder = self.embedder();
        let fusion = match config.retrieval.mode {
            crate::RetrievalMode::Hybrid => coral_timeline::Fusion::Hybrid(
                config
                    .retrieval
                    .hybrid
                    .params_for(embedder.name(), &req.query),
            ),
            _ => coral_timeline::Fusion::Rrf,
        };
        let req = RetrieveRequest {
            fusion,
            ..req.clone()
        };
        Ok(timeline.retrieve_for_turn(ns, &req, Some(&EngineEmbedder(embedder))))
    }

    /// Summarise what is due in `ns`'s conversation with the configured LLM (docs/timeline.md,
    /// "Layers"). Fails
    /// with [`TimelineError::Llm`] when no endpoint is configured or the call fails; nothing is
    /// written then, and the next call tries again.
    pub fn timeline_compact(
        &self,
        ns: &Namespace,
        settings: &LayerSettings,
        timezone: Option<&str>,
    ) -> Result<CompactReport, TimelineError> {
        let zone = coral_timeline::parse_zone(timezone.unwrap_or("UTC"))
            .map_err(TimelineError::InvalidInput)?;
        let timeline = self.timeline()?;
        let config = self.timeline_config();
        // A config file that failed to load keeps the previous settings in force: when they
        // lack a model, that failure is the real cause, not the settings the file shows.
        let unloaded = self.config_error();
        let llm = LlmSummaries::from_config(&config).map_err(|e| match &unloaded {
            Some(why) => TimelineError::Llm(format!("{e}; note: {why}")),
            None => e,
        })?;
        let Some(llm) = llm else {
            return Err(TimelineError::Llm(match unloaded {
                Some(why) => format!(
                    "no summary model is in force because the config file was not loaded \
                     ({why}); fix the file (coral stats shows config_error) and the next call \
                     uses its llm.* settings"
                ),
                None => "no summary model is configured: set llm.base_url, llm.api_key and \
                         llm.model in the config (or CORAL_LLM_BASE_URL / CORAL_LLM_API_KEY / \
                         CORAL_LLM_MODEL)"
                    .into(),
            }));
        };
        timeline.compact_with(
            ns,
            settings,
            &llm,
            zone,
            unix_now(),
            &config.timeline.prompt,
        )
    }

    /// The configuration in force, with a changed config file picked up first (the timeline's
    /// calls do not lock the engine, which is where the file is otherwise checked): its
    /// `timeline.*` settings, dispatch policy and prompts apply at once.
    pub fn timeline_config(&self) -> Arc<Config> {
        self.backend.refresh_config();
        self.config()
    }

    /// Why the config file in force is not the file's (a rejected edit), as
    /// `stats().config_error`.
    fn config_error(&self) -> Option<String> {
        self.backend.live().reloader().and_then(|r| r.error())
    }

    /// Where the timeline database is (whether or not it exists yet).
    pub fn timeline_path(&self) -> PathBuf {
        self.timeline.path().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_file_appears_on_first_use_in_the_data_directory() {
        let dir = tempfile::tempdir().unwrap();
        let config = Config {
            base_dir: dir.path().to_path_buf(),
            ..Config::default()
        };
        let coral =
            Coral::open_with(config, Arc::new(crate::HashEmbedder::new(16).unwrap())).unwrap();
        let path = coral.timeline_path();
        assert_eq!(path, dir.path().join("memory_data").join(TIMELINE_FILE));
        assert!(!path.exists());
        let a = coral.timeline().unwrap();
        let b = coral.timeline().unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        assert!(path.exists());
    }
}
