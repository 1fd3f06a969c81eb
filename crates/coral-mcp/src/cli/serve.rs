//! The servers: `coral mcp` (stdio, or Streamable HTTP with `--http`), `coral http` (the
//! sidecar) and `coral plugin-js` (the harness plugin that forwards to it).

use coral_mcp::{http, http_guard, mcp};

use super::failure::{Failure, usage};
use super::globals::Globals;
use super::plugin;
use super::session::open;

/// `coral mcp`: serve the tools over MCP on stdio.
pub(crate) fn mcp(cli: &Globals) -> Result<u8, Failure> {
    let coral = open(cli)?;
    mcp::serve(coral)?;
    Ok(0)
}

/// `coral mcp --http`: serve MCP over Streamable HTTP at /mcp (docs/servers.md).
pub(crate) fn mcp_http(
    cli: &Globals,
    host: std::net::IpAddr,
    port: u16,
    token: &Option<String>,
    allowed_hosts: &[String],
    allowed_origins: &[String],
) -> Result<u8, Failure> {
    let options = http_options(host, port, token, allowed_hosts, allowed_origins)?;
    let coral = open(cli)?;
    coral_mcp::mcp_http::serve(coral, options)?;
    Ok(0)
}

/// `coral http`: serve the tools over HTTP (docs/servers.md).
pub(crate) fn http(
    cli: &Globals,
    host: std::net::IpAddr,
    port: u16,
    token: &Option<String>,
    allowed_hosts: &[String],
    allowed_origins: &[String],
) -> Result<u8, Failure> {
    let options = http_options(host, port, token, allowed_hosts, allowed_origins)?;
    let coral = open(cli)?;
    http::serve(coral, options)?;
    Ok(0)
}

/// The network options of `coral http` and `coral mcp --http`, checked: the token (or
/// $CORAL_HTTP_TOKEN; empty counts as unset, an explicit --token must be valid), the allowed
/// hosts and origins, and no non-loopback bind without a token.
fn http_options(
    host: std::net::IpAddr,
    port: u16,
    token: &Option<String>,
    allowed_hosts: &[String],
    allowed_origins: &[String],
) -> Result<http::HttpOptions, Failure> {
    let token = token
        .clone()
        .or_else(|| {
            std::env::var("CORAL_HTTP_TOKEN")
                .ok()
                .filter(|t| !t.is_empty())
        })
        .map(|t| http_guard::Token::new(&t))
        .transpose()
        .map_err(|e| usage(format!("--token (or $CORAL_HTTP_TOKEN): {e}")))?;
    let options = http::HttpOptions {
        host,
        port,
        guard: http_guard::GuardOptions::new(allowed_hosts, allowed_origins, token)
            .map_err(usage)?,
    };
    http::check_bind(&options).map_err(|e| Failure { code: 2, error: e })?;
    Ok(options)
}

/// `coral plugin-js`: print the DeepSeek harness plugin.
pub(crate) fn plugin_js(url: &str, token: &Option<String>) -> Result<u8, Failure> {
    out!("{}", plugin::plugin_js(url, token.as_deref()));
    Ok(0)
}
