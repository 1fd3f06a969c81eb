//! How the timeline tools answer: a write's refusal with its code first, a read that could not
//! be done as a status, and results as JSON objects with `ok`.

use std::sync::Arc;

use coral::Coral;
use coral::timeline::{Error, Timeline};
use serde::Serialize;
use serde_json::{Value, json};

use crate::tools::ToolError;

/// A refused or failed write, with its code first.
pub(super) fn write_error(e: Error) -> ToolError {
    let message = format!("{}: {e}", e.code());
    if e.is_caller_error() {
        ToolError::InvalidArguments(message)
    } else {
        ToolError::Failed(message)
    }
}

pub(super) fn open(coral: &Coral) -> Result<Arc<Timeline>, ToolError> {
    coral
        .timeline()
        .map_err(|e| ToolError::Failed(format!("unavailable: {e}")))
}

pub(super) fn ok(value: impl Serialize) -> Result<Value, ToolError> {
    let mut v = serde_json::to_value(value).map_err(|e| ToolError::Failed(e.to_string()))?;
    if let Some(map) = v.as_object_mut() {
        map.insert("ok".into(), json!(true));
    }
    Ok(v)
}

/// [`ok`] naming the zone of the reply's times.
pub(super) fn ok_in(value: impl Serialize, zone: &str) -> Result<Value, ToolError> {
    let mut v = ok(value)?;
    if let Some(map) = v.as_object_mut() {
        map.insert("timezone".into(), json!(zone));
    }
    Ok(v)
}

/// The receipt of a read that was not done (`tool`'s answer, `status`).
fn empty_receipt(tool: &str, status: &str) -> Value {
    json!({"tool": tool, "status": status, "ids": []})
}

/// A read tool's answer when the timeline cannot be opened.
pub(super) fn unavailable(tool: &str, e: impl std::fmt::Display) -> Value {
    json!({"ok": false, "status": "unavailable", "message": e.to_string(),
           "receipt": empty_receipt(tool, "unavailable")})
}

pub(super) fn invalid_filter(tool: &str, message: String) -> Value {
    json!({"ok": false, "status": "invalid_filter", "message": message,
           "receipt": empty_receipt(tool, "invalid_filter")})
}
