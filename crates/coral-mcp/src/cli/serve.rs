//! The servers: `coral mcp` (stdio, or Streamable HTTP with `--http`), `coral http` (the
//! sidecar) and `coral plugin-js` (the harness plugin that forwards to it).

use coral_mcp::{http, http_guard, mcp};

use super::failure::{Failure, usage};
use super::globals::Globals;
use super::plugin;
use super::serve_scope::ServeScope;
use super::session::{load_config, open};

/// The network flags of `coral http` and `coral mcp --http`, as given.
pub(crate) struct Net<'a> {
    pub(crate) host: std::net::IpAddr,
    pub(crate) port: u16,
    pub(crate) token: &'a Option<String>,
    pub(crate) allowed_hosts: &'a [String],
    pub(crate) allowed_origins: &'a [String],
}

/// `coral mcp`: serve the tools over MCP on stdio, for the scope's namespace.
pub(crate) fn mcp(cli: &Globals, scope: &ServeScope) -> Result<u8, Failure> {
    let registry = scope.mcp_registry(&load_config(cli)?).map_err(usage)?;
    mcp::serve_with(open(cli)?, registry)?;
    Ok(0)
}

/// `coral mcp --http`: serve MCP over Streamable HTTP at /mcp (docs/servers.md), for the
/// scope's namespace.
pub(crate) fn mcp_http(cli: &Globals, net: Net, scope: &ServeScope) -> Result<u8, Failure> {
    let options = http_options(&net)?;
    let registry = scope.mcp_registry(&load_config(cli)?).map_err(usage)?;
    coral_mcp::mcp_http::serve_with(open(cli)?, options, registry)?;
    Ok(0)
}

/// `coral http` (and `coral ui`, which also prints the dashboard's address): serve the tools
/// over HTTP (docs/servers.md) and the dashboard (docs/dashboard.md); serving more than one
/// namespace needs a token.
pub(crate) fn http(
    cli: &Globals,
    net: Net,
    scope: &ServeScope,
    print_url: bool,
) -> Result<u8, Failure> {
    let mut options = http_options(&net)?;
    options.print_url = print_url;
    let registry = scope
        .http_registry(&load_config(cli)?, options.guard.has_token())
        .map_err(usage)?;
    http::serve_with(open(cli)?, options, registry)?;
    Ok(0)
}

/// The network options of `coral http` and `coral mcp --http`, checked: the token (or
/// $CORAL_HTTP_TOKEN; empty counts as unset, an explicit --token must be valid), the allowed
/// hosts and origins, and no non-loopback bind without a token.
fn http_options(net: &Net) -> Result<http::HttpOptions, Failure> {
    let token = net
        .token
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
        host: net.host,
        port: net.port,
        guard: http_guard::GuardOptions::new(net.allowed_hosts, net.allowed_origins, token)
            .map_err(usage)?,
        print_url: false,
    };
    http::check_bind(&options).map_err(|e| Failure { code: 2, error: e })?;
    Ok(options)
}

/// `coral plugin-js`: print the DeepSeek harness plugin.
pub(crate) fn plugin_js(url: &str, token: &Option<String>) -> Result<u8, Failure> {
    out!("{}", plugin::plugin_js(url, token.as_deref()));
    Ok(0)
}
