//! [`ConfigChange`], what a tool's config edit answers: done, or held for confirmation.

use coral_engine::RemovalPreview;
use serde_json::Value;

/// What a tool's config change did.
#[derive(Clone, Debug, PartialEq)]
pub enum ConfigChange {
    /// Done: `{key_path, old, new}` or `{reset, scope, changed, values: {key: {old, new}},
    /// kept?}`.
    Done(Value),
    /// Not done: it would remove this many memories at once; repeat with `confirm: true`.
    NeedsConfirmation(RemovalPreview),
}
