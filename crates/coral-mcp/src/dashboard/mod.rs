//! The dashboard (docs/dashboard.md): a page served by `coral http` at `/` that shows and tends
//! the memory through the sidecar's own `POST /rpc` tools; nothing here reads or changes data.
//!
//! The page, its scripts and styles are compiled into the binary (`assets.rs`), so it works
//! offline and no CDN sees it. Its requests pass the sidecar's [`Guard`]: the page routes check
//! `Host` and `Origin` ([`Guard::check_page`]), the API keeps every check, the token included.
//! Every answer forbids framing (clickjacking) and, through a content security policy, any
//! script, style or connection that is not this server's.

mod assets;

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;

use crate::http_guard::Guard;

/// Sent with every dashboard answer: only this server's scripts, styles and API; no frames,
/// forms, plugins or base changes; no referrer (the page's address never leaves it).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' \
                   data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
                   form-action 'none'";

/// The page routes, `/` and `/assets/NAME`, behind `guard`'s page checks; merge them into the
/// API router (which keeps its own guard and fallback).
pub fn router(guard: Arc<Guard>) -> Router {
    let index = Arc::new(assets::index_html(guard.needs_token()));
    Router::new()
        .route("/", get(page))
        .route("/index.html", get(page))
        .with_state(index)
        .route("/assets/{name}", get(asset))
        .layer(axum::middleware::from_fn_with_state(guard, page_guard))
}

/// The address a browser opens for the dashboard of a server bound at `bound`:
/// `http://127.0.0.1:PORT/` for an all-interfaces bind, the bound address otherwise.
pub fn url(bound: SocketAddr) -> String {
    let host = match bound.ip() {
        ip if ip.is_unspecified() => "127.0.0.1".to_string(),
        IpAddr::V6(v6) => format!("[{v6}]"),
        ip => ip.to_string(),
    };
    format!("http://{host}:{}/", bound.port())
}

async fn page(State(index): State<Arc<String>>) -> Response {
    with_headers(
        (
            [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
            index.as_str().to_owned(),
        )
            .into_response(),
    )
}

async fn asset(Path(name): Path<String>) -> Response {
    match assets::find(&name) {
        Some(a) => with_headers(([(header::CONTENT_TYPE, a.media_type)], a.body).into_response()),
        None => with_headers(
            (
                StatusCode::NOT_FOUND,
                [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
                "no such dashboard asset",
            )
                .into_response(),
        ),
    }
}

fn with_headers(mut response: Response) -> Response {
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    // The assets change with the binary; the browser asks again rather than run an old page
    // against a new API.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    response
}

async fn page_guard(State(guard): State<Arc<Guard>>, request: Request, next: Next) -> Response {
    match guard.check_page(request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => refusal.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::url;

    #[test]
    fn the_address_to_open_is_one_the_guard_accepts() {
        for (bound, expected) in [
            ("127.0.0.1:8765", "http://127.0.0.1:8765/"),
            ("0.0.0.0:80", "http://127.0.0.1:80/"),
            ("[::]:9000", "http://127.0.0.1:9000/"),
            ("[::1]:9000", "http://[::1]:9000/"),
            ("192.168.1.20:8765", "http://192.168.1.20:8765/"),
        ] {
            assert_eq!(url(bound.parse().unwrap()), expected, "{bound}");
        }
    }
}
