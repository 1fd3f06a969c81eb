//! The checks every Coral HTTP endpoint applies before it reads a request: `Host`, `Origin`,
//! bearer token and `Content-Type`, as one axum middleware ([`guard`]).
//!
//! A loopback server is reachable from every web page the user opens. Two browser attacks
//! matter: a cross-site "simple" request (a `text/plain` or form POST, sent without asking the
//! server first) and DNS rebinding (a page on `evil.example` whose name is switched to
//! 127.0.0.1, so the browser thinks the server is same-origin). The rules:
//!
//! - `Host` must name this server: `127.0.0.1`, `localhost` or `[::1]` with the bound port,
//!   the bound address itself, any IP literal when bound to all interfaces (rebinding needs a
//!   name), or an allowed host (`--allowed-host`). A rebinding page's requests carry its own
//!   name and are refused (403).
//! - A present `Origin` must be this server's own (`http://127.0.0.1:P`, `http://localhost:P`,
//!   `http://[::1]:P`, the bound address) or an allowed origin (`--allowed-origin`); no CORS
//!   headers are ever sent, so other origins cannot even read an answer (403). Requests
//!   without `Origin` (curl, scripts, Node) are not from a browser page and pass.
//! - POST, PUT and PATCH bodies must be `Content-Type: application/json` (parameters such as
//!   `charset` allowed): browsers must preflight such requests, and the preflight (an
//!   `OPTIONS` from a foreign origin) is refused (415 otherwise).
//! - With a token, `Authorization: Bearer <token>` (scheme in any case) is required (401);
//!   tokens are compared through SHA-256 digests in constant time.
//!
//! Refusals are JSON, `{"ok": false, "error": "..."}`. The sidecar (`http.rs`) uses this; a
//! Streamable HTTP MCP endpoint layers the same [`Guard`] on its router, and the dashboard's
//! pages (`dashboard/`) pass [`Guard::check_page`] (no token: they hold no data).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use sha2::{Digest, Sha256};

/// Fewest characters a token may have: 16 visible ASCII characters are at least ~64 bits
/// when random (hex), more than a guessing client gets through a loopback port.
pub const MIN_TOKEN_CHARS: usize = 16;

/// Most characters a token may have (header lines stay well under any server's limit).
pub const MAX_TOKEN_CHARS: usize = 1_024;

/// A bearer token: [`MIN_TOKEN_CHARS`] to [`MAX_TOKEN_CHARS`] visible ASCII characters (RFC 6750
/// allows no spaces; non-ASCII does not survive every client's headers). Never printed.
#[derive(Clone)]
pub struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(***)")
    }
}

impl Token {
    /// Check and keep a token; the error says what is wrong without printing the token.
    pub fn new(text: &str) -> Result<Token, String> {
        let chars = text.chars().count();
        let advice = "use a random one, e.g. `openssl rand -hex 16`";
        if text.chars().any(|c| !c.is_ascii_graphic()) {
            let what = if text.trim().is_empty() {
                "is blank"
            } else {
                "contains spaces, control or non-ASCII characters"
            };
            return Err(format!(
                "the token {what}; it must be {MIN_TOKEN_CHARS} to {MAX_TOKEN_CHARS} visible \
                 ASCII characters: {advice}"
            ));
        }
        if !(MIN_TOKEN_CHARS..=MAX_TOKEN_CHARS).contains(&chars) {
            return Err(format!(
                "the token has {chars} characters; it must have {MIN_TOKEN_CHARS} to \
                 {MAX_TOKEN_CHARS}: {advice}"
            ));
        }
        Ok(Token(Sha256::digest(text.as_bytes()).to_vec()))
    }

    /// Whether `given` is this token. Both sides are compared as SHA-256 digests, every byte,
    /// so the time taken says nothing about the token's length or prefix.
    fn matches(&self, given: &str) -> bool {
        let given = Sha256::digest(given.as_bytes());
        self.0
            .iter()
            .zip(given.iter())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    }
}

/// What the user allows beyond the server's own names: from `--allowed-host`,
/// `--allowed-origin` and `--token`, checked when the command line is read.
#[derive(Clone, Debug, Default)]
pub struct GuardOptions {
    hosts: Vec<(String, Option<u16>)>,
    origins: Vec<Origin>,
    allow_null_origin: bool,
    token: Option<Token>,
}

impl GuardOptions {
    /// Parse allowed hosts (`name` for any port, `name:port`, `[v6]:port`) and origins
    /// (`scheme://host[:port]`, or `null` for sandboxed pages and `file:` URLs); the error
    /// names the bad value.
    pub fn new(
        hosts: &[String],
        origins: &[String],
        token: Option<Token>,
    ) -> Result<GuardOptions, String> {
        let mut options = GuardOptions {
            token,
            ..GuardOptions::default()
        };
        for h in hosts {
            let parsed = parse_authority(h.trim()).ok_or_else(|| {
                format!(
                    "--allowed-host {} is not a host name or host:port (such as \
                     memory.example.com or memory.example.com:8443)",
                    coral::echo(h)
                )
            })?;
            options.hosts.push(parsed);
        }
        for o in origins {
            if o.trim().eq_ignore_ascii_case("null") {
                options.allow_null_origin = true;
                continue;
            }
            let parsed = Origin::parse(o.trim().trim_end_matches('/')).ok_or_else(|| {
                format!(
                    "--allowed-origin {} is not an origin scheme://host[:port] (such as \
                     https://app.example.com or http://localhost:3000), nor null",
                    coral::echo(o)
                )
            })?;
            options.origins.push(parsed);
        }
        Ok(options)
    }

    /// Whether a token is required.
    pub fn has_token(&self) -> bool {
        self.token.is_some()
    }
}

/// A request origin: scheme, host (lower case, IPv6 in brackets) and port (the scheme's
/// default when omitted, so `https://a.example` and `https://a.example:443` are one origin).
#[derive(Clone, Debug, PartialEq)]
struct Origin {
    scheme: String,
    host: String,
    port: Option<u16>,
}

impl Origin {
    fn parse(text: &str) -> Option<Origin> {
        let (scheme, rest) = text.split_once("://")?;
        let scheme_ok = scheme.starts_with(|c: char| c.is_ascii_alphabetic())
            && scheme
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
        if !scheme_ok {
            return None;
        }
        let scheme = scheme.to_ascii_lowercase();
        let (host, port) = parse_authority(rest)?;
        let default = match scheme.as_str() {
            "http" | "ws" => Some(80),
            "https" | "wss" => Some(443),
            _ => None,
        };
        Some(Origin {
            port: port.or(default),
            scheme,
            host,
        })
    }
}

/// `host`, `host:port`, `[v6]` or `[v6]:port`, host lower-cased; `None` for anything else
/// (paths, user info, empty names, bad ports).
fn parse_authority(text: &str) -> Option<(String, Option<u16>)> {
    let (host, port) = if let Some(rest) = text.strip_prefix('[') {
        let (v6, after) = rest.split_once(']')?;
        v6.parse::<std::net::Ipv6Addr>().ok()?;
        let port = match after {
            "" => None,
            p => Some(p.strip_prefix(':')?),
        };
        (format!("[{}]", v6.to_ascii_lowercase()), port)
    } else {
        let (host, port) = match text.rsplit_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (text, None),
        };
        let name_ok = !host.is_empty()
            && host
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
        if !name_ok {
            return None;
        }
        (host.to_ascii_lowercase(), port)
    };
    let port = match port {
        None => None,
        Some(p) if !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()) => {
            Some(p.parse::<u16>().ok()?)
        }
        Some(_) => return None,
    };
    Some((host, port))
}

/// A host literal as it appears in a `Host` header: IPv6 in brackets.
fn host_literal(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
    }
}

/// The loopback names every server answers to.
const LOOPBACK_NAMES: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

/// The rules for one bound server.
#[derive(Debug)]
pub struct Guard {
    port: u16,
    /// The bound address as a host literal, when it is one specific address.
    own: Option<String>,
    /// Bound to all interfaces: any IP literal names this server.
    any_ip: bool,
    options: GuardOptions,
}

/// Why a request was refused, as the status and message it is answered with.
#[derive(Debug, PartialEq)]
pub struct Refusal {
    /// 401, 403 or 415.
    pub status: StatusCode,
    /// What was wrong and what to do.
    pub message: String,
}

impl IntoResponse for Refusal {
    fn into_response(self) -> Response {
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
            json!({"ok": false, "error": self.message}).to_string(),
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

fn refuse(status: StatusCode, message: String) -> Result<(), Refusal> {
    Err(Refusal { status, message })
}

/// The one value of header `name`: `Ok(None)` when absent, a refusal when repeated or not
/// text.
fn single<'h>(
    headers: &'h HeaderMap,
    name: &header::HeaderName,
) -> Result<Option<&'h str>, Refusal> {
    let mut values = headers.get_all(name).iter();
    let Some(first) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(Refusal {
            status: StatusCode::BAD_REQUEST,
            message: format!("the request has more than one {name} header; send one"),
        });
    }
    first.to_str().map(Some).map_err(|_| Refusal {
        status: StatusCode::BAD_REQUEST,
        message: format!("the {name} header is not visible ASCII text"),
    })
}

impl Guard {
    /// The rules for a server bound at `bound` (its real port, after binding port 0).
    pub fn new(bound: SocketAddr, options: GuardOptions) -> Guard {
        let ip = bound.ip();
        Guard {
            port: bound.port(),
            own: (!ip.is_unspecified()).then(|| host_literal(ip)),
            any_ip: ip.is_unspecified(),
            options,
        }
    }

    /// The names this server answers to, for messages: `127.0.0.1:P, localhost:P, ...`.
    fn own_names(&self) -> String {
        let mut names: Vec<String> = LOOPBACK_NAMES
            .iter()
            .map(|n| format!("{n}:{}", self.port))
            .collect();
        if let Some(own) = self
            .own
            .as_ref()
            .filter(|o| !LOOPBACK_NAMES.contains(&o.as_str()))
        {
            names.push(format!("{own}:{}", self.port));
        }
        if self.any_ip {
            names.push(format!("any IP address:{}", self.port));
        }
        for (h, p) in &self.options.hosts {
            names.push(p.map_or_else(|| h.clone(), |p| format!("{h}:{p}")));
        }
        names.join(", ")
    }

    fn host_allowed(&self, host: &str, port: Option<u16>) -> bool {
        let allowed = self
            .options
            .hosts
            .iter()
            .any(|(h, p)| h == host && (p.is_none() || *p == port.or(Some(80))));
        if allowed {
            return true;
        }
        // A Host without a port means the scheme's default.
        if port.unwrap_or(80) != self.port {
            return false;
        }
        if LOOPBACK_NAMES.contains(&host) || self.own.as_deref() == Some(host) {
            return true;
        }
        let ip_literal = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
            .is_ok();
        self.any_ip && ip_literal
    }

    fn origin_allowed(&self, origin: &Origin) -> bool {
        if self.options.origins.contains(origin) {
            return true;
        }
        origin.scheme == "http"
            && origin.port == Some(self.port)
            && (LOOPBACK_NAMES.contains(&origin.host.as_str())
                || self.own.as_deref() == Some(origin.host.as_str()))
    }

    /// Check a request's headers; `Err` is the answer to send instead of serving it.
    pub fn check(&self, method: &Method, headers: &HeaderMap) -> Result<(), Refusal> {
        self.check_host(headers)?;
        self.check_origin(headers)?;
        self.check_token(headers)?;
        if matches!(*method, Method::POST | Method::PUT | Method::PATCH) {
            check_json(headers)?;
        }
        Ok(())
    }

    /// The checks for a page or asset that holds no data (the dashboard's HTML, script and
    /// style): `Host` and `Origin` as for every request, but no token, since a browser cannot
    /// attach one to a navigation; the page then sends the token with each API call.
    pub fn check_page(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        self.check_host(headers)?;
        self.check_origin(headers)
    }

    /// Whether API calls need a bearer token.
    pub fn needs_token(&self) -> bool {
        self.options.has_token()
    }

    fn check_host(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(host) = single(headers, &header::HOST)? else {
            return refuse(
                StatusCode::FORBIDDEN,
                format!(
                    "the request has no Host header; send Host: 127.0.0.1:{}",
                    self.port
                ),
            );
        };
        let ok = parse_authority(host).is_some_and(|(h, p)| self.host_allowed(&h, p));
        if ok {
            return Ok(());
        }
        refuse(
            StatusCode::FORBIDDEN,
            format!(
                "Host {} is not this server ({}); a web page may be trying DNS rebinding. \
                 To reach Coral under another name, start it with --allowed-host NAME",
                coral::echo(host),
                self.own_names()
            ),
        )
    }

    fn check_origin(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(origin) = single(headers, &header::ORIGIN)? else {
            return Ok(());
        };
        let ok = if origin.trim().eq_ignore_ascii_case("null") {
            self.options.allow_null_origin
        } else {
            Origin::parse(origin.trim()).is_some_and(|o| self.origin_allowed(&o))
        };
        if ok {
            return Ok(());
        }
        refuse(
            StatusCode::FORBIDDEN,
            format!(
                "Origin {} may not call Coral: web pages other than Coral's own are refused, so \
                 a page you visit cannot read or change your memories. To let a web app in, \
                 start Coral with --allowed-origin {}",
                coral::echo(origin),
                if origin.len() <= 100 {
                    origin
                } else {
                    "ORIGIN"
                }
            ),
        )
    }

    fn check_token(&self, headers: &HeaderMap) -> Result<(), Refusal> {
        let Some(token) = &self.options.token else {
            return Ok(());
        };
        let given = match single(headers, &header::AUTHORIZATION) {
            Ok(Some(value)) => value,
            Ok(None) => {
                return refuse(
                    StatusCode::UNAUTHORIZED,
                    "this server needs a token: send Authorization: Bearer <token>".into(),
                );
            }
            Err(_) => {
                return refuse(
                    StatusCode::UNAUTHORIZED,
                    "unreadable Authorization header".into(),
                );
            }
        };
        let credentials = given
            .split_once(' ')
            .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
            .map(|(_, rest)| rest.trim_matches(|c| c == ' ' || c == '\t'));
        match credentials {
            Some(c) if token.matches(c) => Ok(()),
            Some(_) => refuse(StatusCode::UNAUTHORIZED, "wrong bearer token".into()),
            None => refuse(
                StatusCode::UNAUTHORIZED,
                "the Authorization header must be Bearer <token>".into(),
            ),
        }
    }
}

/// Refuse a body that is not declared `application/json` (any parameters).
fn check_json(headers: &HeaderMap) -> Result<(), Refusal> {
    let declared = single(headers, &header::CONTENT_TYPE).map_err(|r| Refusal {
        status: StatusCode::UNSUPPORTED_MEDIA_TYPE,
        message: r.message,
    })?;
    let media = declared.map(|v| v.split(';').next().unwrap_or("").trim());
    if media.is_some_and(|m| m.eq_ignore_ascii_case("application/json")) {
        return Ok(());
    }
    refuse(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        format!(
            "Content-Type {} is not application/json; send the body as JSON with \
             Content-Type: application/json",
            declared.map_or_else(|| "(none)".to_string(), coral::echo)
        ),
    )
}

/// The axum middleware: `router.layer(axum::middleware::from_fn_with_state(guard, guard))`.
pub async fn guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.check(request.method(), request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    fn guard(bound: &str, hosts: &[&str], origins: &[&str], token: Option<&str>) -> Guard {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let options = GuardOptions::new(
            &s(hosts),
            &s(origins),
            token.map(|t| Token::new(t).unwrap()),
        )
        .unwrap();
        Guard::new(bound.parse().unwrap(), options)
    }

    /// `check(guard, method, headers, expected status or 0 for served)`.
    fn check(g: &Guard, method: Method, pairs: &[(&str, &str)], expected: u16) {
        let got = match g.check(&method, &headers(pairs)) {
            Ok(()) => 0,
            Err(r) => {
                assert!(!r.message.is_empty());
                r.status.as_u16()
            }
        };
        assert_eq!(got, expected, "{method} {pairs:?}");
    }

    const JSON: (&str, &str) = ("content-type", "application/json");

    #[test]
    fn hosts_must_name_this_server() {
        let g = guard(
            "127.0.0.1:8765",
            &["memory.example.com", "proxy.example:9000"],
            &[],
            None,
        );
        for ok in [
            "127.0.0.1:8765",
            "localhost:8765",
            "LOCALHOST:8765",
            "[::1]:8765",
            "memory.example.com",
            "memory.example.com:443",
            "proxy.example:9000",
        ] {
            check(&g, Method::POST, &[("host", ok), JSON], 0);
        }
        for bad in [
            "evil.example:8765",
            "evil.example",
            "localhost:8766",
            "localhost",
            "127.0.0.2:8765",
            "10.0.0.5:8765",
            "proxy.example:9001",
            "localhost.evil.example:8765",
            "user@localhost:8765",
            "localhost:8765/x",
            "",
        ] {
            check(&g, Method::POST, &[("host", bad), JSON], 403);
        }
        check(&g, Method::GET, &[], 403);
        // Bound to every interface: IP literals name the server, other names do not.
        let g = guard("0.0.0.0:80", &[], &[], Some("0123456789abcdef"));
        let auth = ("authorization", "Bearer 0123456789abcdef");
        for ok in ["192.168.1.20", "192.168.1.20:80", "[fe80::1]", "localhost"] {
            check(&g, Method::GET, &[("host", ok), auth], 0);
        }
        check(&g, Method::GET, &[("host", "evil.example"), auth], 403);
        check(&g, Method::GET, &[("host", "192.168.1.20:81"), auth], 403);
        // Bound to one address: that one.
        let g = guard("192.168.1.20:8765", &[], &[], Some("0123456789abcdef"));
        check(&g, Method::GET, &[("host", "192.168.1.20:8765"), auth], 0);
        check(&g, Method::GET, &[("host", "192.168.1.21:8765"), auth], 403);
    }

    #[test]
    fn origins_must_be_this_server_or_allowed() {
        let g = guard(
            "127.0.0.1:8765",
            &[],
            &["https://app.example.com/", "http://localhost:3000", "null"],
            None,
        );
        let host = ("host", "127.0.0.1:8765");
        for ok in [
            "http://127.0.0.1:8765",
            "http://localhost:8765",
            "http://[::1]:8765",
            "https://app.example.com",
            "https://APP.example.com:443",
            "http://localhost:3000",
            "null",
        ] {
            check(&g, Method::POST, &[host, ("origin", ok), JSON], 0);
        }
        for bad in [
            "https://evil.example",
            "https://127.0.0.1:8765",
            "http://localhost:8766",
            "http://app.example.com",
            "https://app.example.com.evil.example",
            "file://",
            "garbage",
        ] {
            check(&g, Method::POST, &[host, ("origin", bad), JSON], 403);
        }
        // No Origin: not a browser page.
        check(&g, Method::POST, &[host, JSON], 0);
        // Two Origins: refused.
        check(
            &g,
            Method::POST,
            &[
                host,
                ("origin", "http://localhost:8765"),
                ("origin", "https://evil.example"),
                JSON,
            ],
            400,
        );
        let strict = guard("127.0.0.1:8765", &[], &[], None);
        check(
            &strict,
            Method::POST,
            &[host, ("origin", "null"), JSON],
            403,
        );
    }

    #[test]
    fn bodies_must_be_declared_json() {
        let g = guard("127.0.0.1:8765", &[], &[], None);
        let host = ("host", "localhost:8765");
        for ok in [
            "application/json",
            "application/json; charset=utf-8",
            "Application/JSON;charset=UTF-8",
        ] {
            check(&g, Method::POST, &[host, ("content-type", ok)], 0);
        }
        for bad in [
            "text/plain",
            "text/plain; charset=utf-8",
            "application/x-www-form-urlencoded",
            "multipart/form-data; boundary=x",
            "application/jsonp",
            "",
        ] {
            check(&g, Method::POST, &[host, ("content-type", bad)], 415);
        }
        check(&g, Method::POST, &[host], 415);
        check(
            &g,
            Method::PUT,
            &[host, ("content-type", "text/plain")],
            415,
        );
        // GET has no body to check.
        check(&g, Method::GET, &[host], 0);
    }

    #[test]
    fn tokens_are_long_visible_ascii_and_the_scheme_is_any_case() {
        for bad in [
            "",
            " ",
            "                ",
            "short",
            "0123456789abcde",
            "0123456789 abcdef",
            "0123456789abcdé€",
        ] {
            let e = Token::new(bad).unwrap_err();
            assert!(
                !e.contains(bad.trim()) || bad.trim().is_empty(),
                "the token is not echoed: {e}"
            );
            assert!(e.contains("16"), "{e}");
        }
        assert!(Token::new(&"x".repeat(MAX_TOKEN_CHARS + 1)).is_err());
        let token = "s3cret-token-0123456789";
        let g = guard("127.0.0.1:8765", &[], &[], Some(token));
        let host = ("host", "127.0.0.1:8765");
        for ok in [
            format!("Bearer {token}"),
            format!("bearer {token}"),
            format!("BEARER {token}"),
            format!("Bearer   {token}  "),
        ] {
            check(&g, Method::GET, &[host, ("authorization", &ok)], 0);
        }
        for bad in [
            format!("Basic {token}"),
            format!("Bearer{token}"),
            format!("Bearer {token}x"),
            format!("Bearer {}", &token[1..]),
            "Bearer".to_string(),
            token.to_string(),
        ] {
            check(&g, Method::GET, &[host, ("authorization", &bad)], 401);
        }
        check(&g, Method::GET, &[host], 401);
        assert_eq!(format!("{:?}", Token::new(token).unwrap()), "Token(***)");
    }

    #[test]
    fn allowed_values_are_checked_when_given() {
        let s = |v: &str| vec![v.to_string()];
        for bad in [
            "",
            "http://x",
            "a b",
            "x:port",
            "x:99999",
            "[nothex]:1",
            "a/b",
        ] {
            assert!(GuardOptions::new(&s(bad), &[], None).is_err(), "{bad:?}");
        }
        for bad in [
            "",
            "example.com",
            "https://",
            "https://a.example/path",
            "1http://a",
        ] {
            assert!(GuardOptions::new(&[], &s(bad), None).is_err(), "{bad:?}");
        }
        assert!(GuardOptions::new(&s("[::1]:8080"), &s("tauri://localhost"), None).is_ok());
    }
}
