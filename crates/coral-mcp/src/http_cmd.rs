//! `coral http` and `coral ui`: the options of the HTTP server (docs/servers.md) and starting
//! it; `ui` also prints the dashboard's address (docs/dashboard.md).

use coral_mcp::{http, http_guard};

use crate::globals::Globals;
use crate::{Failure, open, usage};

/// Where to listen and whom to let in.
#[derive(Debug, clap::Args)]
pub struct HttpArgs {
    /// Address to bind (anything but loopback requires a token).
    #[arg(long, default_value = "127.0.0.1")]
    pub host: std::net::IpAddr,
    /// Port (0 picks a free one; the bound address is printed as JSON on stdout).
    #[arg(long, default_value_t = 8765)]
    pub port: u16,
    /// Bearer token required on every request, at least 16 visible ASCII characters
    /// (default: $CORAL_HTTP_TOKEN).
    #[arg(long)]
    pub token: Option<String>,
    /// Also answer requests whose Host header is this name (`name` for any port, or
    /// `name:port`), e.g. behind a reverse proxy; repeatable. Loopback names and the bound
    /// address are always allowed.
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Also serve browser pages from this origin (`https://app.example.com`, or `null`);
    /// repeatable. Coral's own origins (http://127.0.0.1:PORT, http://localhost:PORT) are
    /// always allowed, every other page is refused.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
}

/// Check the options, open the store and serve until SIGINT or SIGTERM.
pub fn run(cli: &Globals, args: &HttpArgs, print_url: bool) -> Result<u8, Failure> {
    // An empty $CORAL_HTTP_TOKEN counts as unset; an explicit --token must be valid.
    let token = args
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
        host: args.host,
        port: args.port,
        guard: http_guard::GuardOptions::new(&args.allowed_hosts, &args.allowed_origins, token)
            .map_err(usage)?,
        print_url,
    };
    http::check_bind(&options).map_err(|e| Failure { code: 2, error: e })?;
    let coral = open(cli)?;
    http::serve(coral, options)?;
    Ok(0)
}
