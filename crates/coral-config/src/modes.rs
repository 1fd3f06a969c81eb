//! The config's mode strings as types: `storage.sync` ([`SyncMode`]), `embedding.embedder`
//! ([`EmbedderChoice`]), and which kind of embedder made a set of vectors ([`EmbedderKind`]).
//! The file keeps the strings; code matches on these.

use coral_embed::Embedder;

use super::Config;
use super::sections::{EmbeddingConfig, StorageConfig};

/// `storage.sync`: when journal records reach the disk (docs/storage.md, "The journal").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// fsync before every acknowledgement.
    Always,
    /// fsync every `storage.sync_interval_ms` in the background (the default).
    Interval,
    /// Leave it to the operating system.
    Never,
}

impl SyncMode {
    /// Every mode, in the order messages list them.
    pub const ALL: [SyncMode; 3] = [SyncMode::Always, SyncMode::Interval, SyncMode::Never];

    /// The config file's name for it.
    pub fn as_str(self) -> &'static str {
        match self {
            SyncMode::Always => "always",
            SyncMode::Interval => "interval",
            SyncMode::Never => "never",
        }
    }

    /// The mode a config value names, if any.
    pub fn parse(value: &str) -> Option<SyncMode> {
        SyncMode::ALL.into_iter().find(|m| m.as_str() == value)
    }
}

impl StorageConfig {
    /// `storage.sync` as a [`SyncMode`]. A value [`Config::validate`] refuses reads as the
    /// default, `interval`; every configuration Coral opens has passed it.
    pub fn sync_mode(&self) -> SyncMode {
        SyncMode::parse(&self.sync).unwrap_or(SyncMode::Interval)
    }
}

impl Config {
    /// The thread journal's power-loss policy: `storage.sync` and `storage.sync_interval_ms`,
    /// the same as the memory journal's (docs/storage.md).
    pub fn thread_sync_policy(&self) -> coral_thread::SyncPolicy {
        use coral_thread::SyncPolicy;
        match self.storage.sync_mode() {
            SyncMode::Always => SyncPolicy::Always,
            SyncMode::Never => SyncPolicy::Never,
            SyncMode::Interval => SyncPolicy::Interval(std::time::Duration::from_millis(
                self.storage.sync_interval_ms.max(1),
            )),
        }
    }

    /// The thread store's options for this configuration: the defaults, with the journal's
    /// power-loss policy from `storage.sync` (see [`Config::thread_sync_policy`]).
    pub fn thread_store_options(&self) -> coral_thread::StoreOptions {
        coral_thread::StoreOptions {
            sync: self.thread_sync_policy(),
            redaction: coral_thread::Redaction::new(self.privacy.redact_secrets),
            ..coral_thread::StoreOptions::default()
        }
    }
}

/// `embedding.embedder`: which embedder to use (docs/embeddings.md, "Choosing").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbedderChoice {
    /// `"auto"`: the configured model when installed, else the best installed one, else the
    /// hash embedder, with a notice.
    Auto,
    /// `"hash"`: the hash embedder.
    Hash,
    /// `"model"` (also written `"onnx"`): the configured model, or a start-up error.
    Model,
    /// `"sentence-transformers"`, the original Coral's value and meaning: the configured model
    /// when it is installed, else the hash embedder with a notice.
    ModelOrHash,
}

impl EmbedderChoice {
    /// The choice a config value names, if any.
    pub fn parse(value: &str) -> Option<EmbedderChoice> {
        match value {
            "auto" => Some(EmbedderChoice::Auto),
            "hash" => Some(EmbedderChoice::Hash),
            "model" | "onnx" => Some(EmbedderChoice::Model),
            "sentence-transformers" => Some(EmbedderChoice::ModelOrHash),
            _ => None,
        }
    }
}

impl EmbeddingConfig {
    /// `embedding.embedder` as an [`EmbedderChoice`]; `None` for a value
    /// [`Config::validate`] refuses.
    pub fn choice(&self) -> Option<EmbedderChoice> {
        EmbedderChoice::parse(&self.embedder)
    }
}

/// Which kind of embedder made a set of vectors: the hash embedder (hashed word overlap,
/// reproducible and cheap to recompute) or a model (meaning; costly to recompute).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EmbedderKind {
    /// `coral_embed::HashEmbedder`.
    Hash,
    /// Any model.
    Model,
}

impl EmbedderKind {
    /// The kind of `embedder`.
    pub fn of(embedder: &dyn Embedder) -> EmbedderKind {
        EmbedderKind::from_name(embedder.name())
    }

    /// The kind of the embedder called `name` (the hash embedder's name is `"hash"`; every
    /// other name is a model's).
    pub fn from_name(name: &str) -> EmbedderKind {
        if name == "hash" {
            EmbedderKind::Hash
        } else {
            EmbedderKind::Model
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mode_string_reads_back() {
        for mode in SyncMode::ALL {
            assert_eq!(SyncMode::parse(mode.as_str()), Some(mode));
        }
        assert_eq!(SyncMode::parse("sometimes"), None);
        assert_eq!(
            SyncMode::parse("Always"),
            None,
            "the file's names are lower-case"
        );
        for (value, choice) in [
            ("auto", Some(EmbedderChoice::Auto)),
            ("hash", Some(EmbedderChoice::Hash)),
            ("model", Some(EmbedderChoice::Model)),
            ("onnx", Some(EmbedderChoice::Model)),
            ("sentence-transformers", Some(EmbedderChoice::ModelOrHash)),
            ("bert", None),
        ] {
            assert_eq!(EmbedderChoice::parse(value), choice, "{value}");
        }
        assert_eq!(EmbedderKind::from_name("hash"), EmbedderKind::Hash);
        assert_eq!(
            EmbedderKind::from_name("use-multilingual-v3"),
            EmbedderKind::Model
        );
        let hash = coral_embed::HashEmbedder::new(8).unwrap();
        assert_eq!(EmbedderKind::of(&hash), EmbedderKind::Hash);
    }
}
