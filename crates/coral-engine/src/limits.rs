//! The limits of the Rust API's inputs (text size, `top_k`, Unix times) and their checks.

use crate::error::{Error, Result};

/// Longest memory or query accepted, in UTF-8 bytes. Memories are meant to be short facts;
/// anything longer is almost certainly a mistake (a whole document pasted in).
pub const MAX_TEXT_BYTES: usize = 65_536;

/// Largest `top_k` a search accepts: the config's bound, which `hooks.recall_top_k` obeys too.
pub use coral_config::MAX_TOP_K;

/// Latest time a memory may carry or a call may be scored at, in Unix seconds: the last second
/// of the year 9999 (`9999-12-31T23:59:59Z`), where RFC 3339 and most date libraries stop. The
/// earliest is 0 (1970-01-01). A time outside is a unit mistake (milliseconds for seconds) or
/// garbage (`1e300`), and it would pin a memory's heat for ever.
pub const MAX_UNIX_TIME: f64 = 253_402_300_799.0;

/// Refuse a time that is not finite or outside 0..=[`MAX_UNIX_TIME`] seconds; `what` names it
/// in the message.
pub(crate) fn check_unix_time(what: &str, t: f64) -> Result<()> {
    if t.is_finite() && (0.0..=MAX_UNIX_TIME).contains(&t) {
        return Ok(());
    }
    Err(Error::InvalidInput(format!(
        "{what} {t:?} is not a Unix time in seconds from 0 to {MAX_UNIX_TIME} (1970 to the end of \
         9999); give seconds, not milliseconds"
    )))
}

/// Current Unix time in seconds.
pub fn unix_now() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or(0.0)
}

/// Refuse an importance that is not a number from 0 to 1.
pub fn check_importance(importance: f64) -> Result<()> {
    if !importance.is_finite() || !(0.0..=1.0).contains(&importance) {
        return Err(Error::InvalidInput(format!(
            "importance must be a number from 0 to 1, got {importance}"
        )));
    }
    Ok(())
}

pub(crate) fn check_text(what: &str, text: &str) -> Result<()> {
    if text.trim().is_empty() {
        return Err(Error::InvalidInput(format!(
            "{what} is empty: give some text"
        )));
    }
    if text.len() > MAX_TEXT_BYTES {
        return Err(Error::InvalidInput(format!(
            "{what} is {} bytes; the limit is {MAX_TEXT_BYTES} (store a summary instead)",
            text.len()
        )));
    }
    Ok(())
}
