//! The crate's error type: everything that can go wrong asking an LLM for a summary.
//!
//! No variant ever carries the api key: the client redacts it from anything a server echoes.

/// Everything that can go wrong while distilling a cluster. Each one means "skip this cluster";
/// nothing has been changed when it is returned.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configured base URL cannot be used.
    #[error("invalid llm.base_url {url:?}: {detail}")]
    InvalidBaseUrl {
        /// The URL as configured.
        url: String,
        /// What is wrong with it.
        detail: String,
    },
    /// `summarize` was called without any memory text.
    #[error("nothing to summarise: the cluster has no memory text")]
    EmptyCluster,
    /// The endpoint did not answer within the timeout.
    #[error("llm endpoint {url} did not answer within {seconds} s; the cluster was skipped")]
    Timeout {
        /// The request URL.
        url: String,
        /// The configured timeout.
        seconds: f64,
    },
    /// The endpoint could not be reached (refused connection, DNS, TLS, reset).
    #[error("cannot reach llm endpoint {url}: {detail}; check llm.base_url")]
    Unreachable {
        /// The request URL.
        url: String,
        /// What the transport reported.
        detail: String,
    },
    /// The endpoint answered with a non-success HTTP status.
    #[error("llm endpoint {url} answered http {status}: {body}")]
    Http {
        /// The request URL.
        url: String,
        /// The HTTP status code.
        status: u16,
        /// The start of the response body, api key redacted.
        body: String,
    },
    /// The answer is not an OpenAI-style chat completion.
    #[error("malformed answer from llm endpoint {url}: {detail}")]
    Malformed {
        /// The request URL.
        url: String,
        /// What was missing or unreadable.
        detail: String,
    },
    /// The model answered with nothing usable (empty after trimming).
    #[error("the model returned an empty summary")]
    EmptySummary,
    /// The model's summary is longer than Coral accepts.
    #[error(
        "the model returned a {chars}-character summary, more than the {max} accepted; \
         the cluster was skipped"
    )]
    SummaryTooLong {
        /// Length of the cleaned summary in characters.
        chars: usize,
        /// The accepted maximum ([`crate::MAX_SUMMARY_CHARS`]).
        max: usize,
    },
}

/// `Result` with this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;
