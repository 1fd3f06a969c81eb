//! How to reach the database: the URL (`storage.postgres_url`, else `CORAL_POSTGRES_URL`), the
//! pool's bound and the deadlines (docs/postgres.md, "Connections").

use std::time::Duration;

use crate::error::{Error, Result};

/// The environment variable read when no URL is configured.
pub const URL_ENV: &str = "CORAL_POSTGRES_URL";

/// Connection settings of a [`crate::PgStore`].
#[derive(Clone, Debug, PartialEq)]
pub struct PgOptions {
    /// `postgres://user[:password]@host:port/database[?options]`.
    pub url: String,
    /// The most connections this process opens (the pool's bound).
    pub max_connections: usize,
    /// Deadline of opening one connection, handshake included.
    pub connect_timeout: Duration,
    /// Server-side limit of one statement (`statement_timeout`); the client gives up on a
    /// whole call at twice this (a server that stopped answering).
    pub statement_timeout: Duration,
    /// How long a call waits for a free connection of the pool.
    pub acquire_timeout: Duration,
}

impl PgOptions {
    /// Options for `url` with the defaults: 8 connections, 5 s to connect, 10 s a statement,
    /// 10 s to wait for a connection.
    pub fn new(url: impl Into<String>) -> PgOptions {
        PgOptions {
            url: url.into(),
            max_connections: 8,
            connect_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(10),
            acquire_timeout: Duration::from_secs(10),
        }
    }

    /// Options for `configured` (`storage.postgres_url`) when it is set and not empty, else
    /// for `CORAL_POSTGRES_URL`; an error naming both when neither is.
    pub fn from_config_or_env(configured: Option<&str>) -> Result<PgOptions> {
        let url = match configured.map(str::trim).filter(|u| !u.is_empty()) {
            Some(u) => u.to_string(),
            None => std::env::var(URL_ENV)
                .ok()
                .filter(|u| !u.trim().is_empty())
                .ok_or_else(|| Error::InvalidUrl {
                    url: "(none)".into(),
                    detail: format!("neither storage.postgres_url nor {URL_ENV} is set"),
                })?,
        };
        Ok(PgOptions::new(url))
    }

    /// Every problem with the bounds, one sentence each.
    pub(crate) fn check(&self) -> Result<()> {
        let mut problems = Vec::new();
        if !(1..=256).contains(&self.max_connections) {
            problems.push(format!(
                "max_connections is {}; give 1 to 256",
                self.max_connections
            ));
        }
        for (name, d) in [
            ("connect_timeout", self.connect_timeout),
            ("statement_timeout", self.statement_timeout),
            ("acquire_timeout", self.acquire_timeout),
        ] {
            if d.is_zero() || d > Duration::from_secs(3600) {
                problems.push(format!("{name} is {d:?}; give 1 ms to 1 hour"));
            }
        }
        match problems.is_empty() {
            true => Ok(()),
            false => Err(Error::InvalidInput(format!(
                "postgres options: {}",
                problems.join("; ")
            ))),
        }
    }
}

/// `url` with any password replaced by `***`, bounded for an error message.
pub(crate) fn redact_url(url: &str) -> String {
    let redacted = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme + 3 => {
            let userinfo = &url[scheme + 3..at];
            match userinfo.find(':') {
                Some(colon) => format!(
                    "{}{}:***{}",
                    &url[..scheme + 3],
                    &userinfo[..colon],
                    &url[at..]
                ),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
    };
    coral_base::echo(&redacted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_never_reach_messages() {
        assert_eq!(
            redact_url("postgres://coral:s3cret@db:5432/coral"),
            coral_base::echo("postgres://coral:***@db:5432/coral")
        );
        assert!(!redact_url("postgres://u:p@h/d").contains(":p@"));
        assert!(redact_url("postgres://u@h/d").contains("u@h"));
    }

    #[test]
    fn bounds_are_checked_and_every_problem_named() {
        let mut o = PgOptions::new("postgres://u@h/d");
        assert!(o.check().is_ok());
        o.max_connections = 0;
        o.statement_timeout = Duration::ZERO;
        let e = o.check().unwrap_err().to_string();
        assert!(e.contains("max_connections is 0"), "{e}");
        assert!(e.contains("statement_timeout is 0ns"), "{e}");
    }
}
