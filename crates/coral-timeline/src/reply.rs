//! The one answer envelope of the read tools: `Reply<T>` (status, message, time zone and the
//! tool's payload), `ReadStatus`, and how a read that could not be done becomes one.
//!
//! `read_timeline`, `open_memory`, `browse_memory` and `retrieve_for_turn` never fail: a
//! malformed request or a store that cannot answer comes back as a status with a message
//! (`docs/timeline.md`, "Statuses"). The payload's fields serialise after the envelope's, so
//! the JSON of a reply is `{"status", "message"?, "timezone"?, ...payload}`.

use std::ops::{Deref, DerefMut};

use chrono_tz::Tz;
use serde::Serialize;
use serde_json::Value;

use crate::error::Error;
use crate::tz;

/// The outcome of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ReadStatus {
    /// Everything asked for is here.
    Ok,
    /// One page of several; pass `next_cursor` for the next.
    Partial,
    /// Nothing matches.
    Empty,
    /// The request is malformed or contradictory; nothing was read.
    InvalidFilter,
    /// The server's dispatch policy withholds what was asked for.
    Denied,
    /// The store could not answer.
    Unavailable,
}

/// A read tool's answer: the envelope every read shares, and the tool's own `payload`.
///
/// A reply reads as its payload (`reply.units`, `reply.hits`: it dereferences to `T`), so the
/// envelope adds fields without putting the payload's one step further away.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Reply<T> {
    /// Outcome.
    pub status: ReadStatus,
    /// What went wrong or what to do next, for statuses other than `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The zone every time of the reply is shown in, reload cards' `time:` lines included.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timezone: Option<String>,
    /// What the tool returns.
    #[serde(flatten)]
    pub payload: T,
}

impl<T> Reply<T> {
    /// A reply with `payload`.
    pub(crate) fn new(
        status: ReadStatus,
        message: Option<String>,
        timezone: Option<&str>,
        payload: T,
    ) -> Reply<T> {
        Reply {
            status,
            message,
            timezone: timezone.map(str::to_string),
            payload,
        }
    }

    /// The payload, without the envelope.
    pub fn into_payload(self) -> T {
        self.payload
    }
}

impl<T: Default> Reply<T> {
    /// A reply that carries nothing but why.
    pub(crate) fn failed(status: ReadStatus, message: String, timezone: Option<&str>) -> Reply<T> {
        Reply::new(status, Some(message), timezone, T::default())
    }

    /// The reply of an attempt: its own reply, or `invalid_filter` / `unavailable` with the
    /// failure's message.
    pub(crate) fn or_failed(
        attempt: Result<Reply<T>, Failure>,
        timezone: Option<&str>,
    ) -> Reply<T> {
        match attempt {
            Ok(reply) => reply,
            Err(Failure::Invalid(m)) => Reply::failed(ReadStatus::InvalidFilter, m, timezone),
            Err(Failure::Unavailable(m)) => Reply::failed(ReadStatus::Unavailable, m, timezone),
        }
    }
}

impl<T> Deref for Reply<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.payload
    }
}

impl<T> DerefMut for Reply<T> {
    fn deref_mut(&mut self) -> &mut T {
        &mut self.payload
    }
}

/// JSON of a read result with `ok` added (true unless invalid, unavailable or denied), for
/// tools.
pub fn with_ok(value: impl Serialize, status: ReadStatus) -> Value {
    let mut v = serde_json::to_value(value).unwrap_or(Value::Null);
    if let Some(map) = v.as_object_mut() {
        let ok = !matches!(
            status,
            ReadStatus::InvalidFilter | ReadStatus::Unavailable | ReadStatus::Denied
        );
        map.insert("ok".into(), Value::Bool(ok));
    }
    v
}

/// Why a read could not be done: the request (`invalid_filter`) or the store (`unavailable`).
pub(crate) enum Failure {
    Invalid(String),
    Unavailable(String),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        match e {
            Error::InvalidInput(m) => Failure::Invalid(m),
            other => Failure::Unavailable(other.to_string()),
        }
    }
}

impl From<rusqlite::Error> for Failure {
    fn from(e: rusqlite::Error) -> Failure {
        Failure::Unavailable(Error::from(e).to_string())
    }
}

/// The zone of a read and its name as the reply shows it (blank or none: `UTC`).
pub(crate) fn zone_of(name: Option<&str>) -> Result<(Tz, String), Failure> {
    let name = name
        .map(str::trim)
        .filter(|n| !n.is_empty())
        .unwrap_or("UTC");
    let zone = tz::parse_zone(name).map_err(Failure::Invalid)?;
    Ok((zone, name.to_string()))
}
