//! How a command fails: `Failure`, an error with its exit code (1 runtime, 2 usage), and the
//! one-line description printed for it.

/// An error with the exit code it maps to.
pub(crate) struct Failure {
    /// The exit code: 1 for a runtime error, 2 for bad arguments or input.
    pub(crate) code: u8,
    /// What went wrong.
    pub(crate) error: anyhow::Error,
}

impl<E: Into<anyhow::Error>> From<E> for Failure {
    fn from(e: E) -> Self {
        // A thread store's or the configuration's error reads as the facade's (ids echoed
        // within bounds, bad input exits 2), as it did when the facade held both.
        let error = match e.into().downcast::<coral::ThreadError>() {
            Ok(e) => anyhow::Error::from(coral::Error::from(e)),
            Err(e) => match e.downcast::<coral::ConfigError>() {
                Ok(e) => anyhow::Error::from(coral::Error::from(e)),
                Err(e) => e,
            },
        };
        let code = match error.downcast_ref::<coral::Error>() {
            Some(coral::Error::InvalidInput(_)) => 2,
            _ => 1,
        };
        Failure { code, error }
    }
}

/// A usage error (exit code 2) saying `msg`.
pub(crate) fn usage(msg: impl Into<String>) -> Failure {
    Failure {
        code: 2,
        error: anyhow::anyhow!(msg.into()),
    }
}

/// An error and its causes, each cause added only when the message so far does not already say
/// it (the library errors include their cause in their own message).
pub(crate) fn describe(error: &anyhow::Error) -> String {
    let mut text = String::new();
    for cause in error.chain() {
        let part = cause.to_string();
        if text.is_empty() {
            text = part;
        } else if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
    }
    text
}
