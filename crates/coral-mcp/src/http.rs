//! `coral http`: the HTTP sidecar (docs/servers.md) for hosts that are not MCP clients.
//!
//! `POST /rpc` with `{"tool": name, "args": {...}}` runs a tool from the same registry as MCP.
//! Every answer is JSON: `{"ok": true, "result": ...}` or `{"ok": false, "error": "..."}` with
//! 400 (bad JSON or arguments), 401 (token), 403 (foreign `Host` or `Origin`), 404 (unknown
//! tool or path), 405, 413 (body over 1 MiB), 415 (body not `application/json`) or 500.
//! Loopback by default; any other address needs a token. The browser-facing checks are
//! `http_guard.rs`, applied to every route; `GET /` is the dashboard (`dashboard/`).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use anyhow::{Context, bail};
use axum::Router;
use axum::body::to_bytes;
use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use coral::Coral;

use crate::tools::{Pin, Registry, Scope, ToolError};
use serde_json::{Value, json};

use crate::http_guard::{Guard, GuardOptions};

/// Largest request body accepted.
pub const MAX_BODY: usize = 1024 * 1024;

/// Where and how to serve.
pub struct HttpOptions {
    /// Bind address.
    pub host: IpAddr,
    /// Port (0 = any free port).
    pub port: u16,
    /// Allowed hosts and origins beyond the server's own, and the token.
    pub guard: GuardOptions,
    /// Also print the dashboard's address on stdout once bound (`coral ui`).
    pub print_url: bool,
}

struct AppState {
    coral: Arc<Coral>,
    registry: Arc<Registry>,
}

fn reply(status: StatusCode, body: Value) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "application/json; charset=utf-8")],
        body.to_string(),
    )
        .into_response()
}

fn failure(status: StatusCode, error: impl Into<String>) -> Response {
    reply(status, json!({"ok": false, "error": error.into()}))
}

async fn health(State(state): State<Arc<AppState>>) -> Response {
    let coral = Arc::clone(&state.coral);
    let total = tokio::task::spawn_blocking(move || coral.stats().total)
        .await
        .unwrap_or(0);
    reply(
        StatusCode::OK,
        json!({"ok": true, "name": crate::mcp::SERVER_NAME, "version": env!("CARGO_PKG_VERSION"), "memories": total}),
    )
}

async fn rpc(State(state): State<Arc<AppState>>, request: Request) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|n| n > MAX_BODY) {
        return failure(StatusCode::PAYLOAD_TOO_LARGE, "request body is over 1 MiB");
    }
    let bytes = match to_bytes(request.into_body(), MAX_BODY).await {
        Ok(b) => b,
        Err(_) => return failure(StatusCode::PAYLOAD_TOO_LARGE, "request body is over 1 MiB"),
    };
    let body: Value = match serde_json::from_slice(&bytes) {
        Ok(v) => v,
        Err(e) => {
            return failure(
                StatusCode::BAD_REQUEST,
                format!("body is not valid JSON: {e}"),
            );
        }
    };
    let Some(tool) = body.get("tool").and_then(Value::as_str).map(String::from) else {
        return failure(
            StatusCode::BAD_REQUEST,
            "body must be {\"tool\": name, \"args\": {...}}",
        );
    };
    if let Some(extra) = body
        .as_object()
        .and_then(|o| o.keys().find(|k| *k != "tool" && *k != "args"))
    {
        return failure(
            StatusCode::BAD_REQUEST,
            format!(
                "unknown body key {}; the body is {{\"tool\": name, \"args\": {{...}}}}",
                coral::echo(extra)
            ),
        );
    }
    let args = body.get("args").cloned().unwrap_or(Value::Null);
    let coral = Arc::clone(&state.coral);
    let registry = Arc::clone(&state.registry);
    let outcome = tokio::task::spawn_blocking(move || registry.call(&coral, &tool, &args)).await;
    match outcome {
        Ok(Ok(result)) => reply(StatusCode::OK, json!({"ok": true, "result": result})),
        Ok(Err(e @ ToolError::UnknownTool(_))) => failure(StatusCode::NOT_FOUND, e.to_string()),
        Ok(Err(ToolError::Refused(body))) => reply(StatusCode::BAD_REQUEST, body),
        Ok(Err(e @ ToolError::InvalidArguments(_))) => {
            failure(StatusCode::BAD_REQUEST, e.to_string())
        }
        Ok(Err(e)) => failure(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
        Err(e) => failure(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("tool task failed: {e}"),
        ),
    }
}

async fn not_found() -> Response {
    failure(
        StatusCode::NOT_FOUND,
        "no such path; use POST /rpc, GET /health or the dashboard at /",
    )
}

async fn wrong_method() -> Response {
    failure(
        StatusCode::METHOD_NOT_ALLOWED,
        "use POST /rpc or GET /health",
    )
}

/// The routes behind the guard: `Host`, `Origin`, token and `Content-Type` are checked on
/// every request, unknown paths and methods included, before any handler runs.
fn router(state: Arc<AppState>, guard: Arc<Guard>) -> Router {
    Router::new()
        .route("/rpc", post(rpc).fallback(wrong_method))
        .route("/health", get(health).fallback(wrong_method))
        .fallback(not_found)
        .with_state(state)
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&guard),
            crate::http_guard::guard,
        ))
        .merge(crate::dashboard::router(guard))
}

/// Refuse a non-loopback bind without a token.
pub fn check_bind(options: &HttpOptions) -> anyhow::Result<()> {
    if !options.host.is_loopback() && !options.guard.has_token() {
        bail!(
            "refusing to listen on {} without a token: anyone on the network could read and \
             change the memories; pass --token (or set CORAL_HTTP_TOKEN), or bind 127.0.0.1",
            options.host
        );
    }
    Ok(())
}

/// Serve until SIGINT or SIGTERM, then checkpoint. Prints the bound address on stdout as one
/// JSON line (`{"listening": "127.0.0.1:8765"}`) so scripts can use port 0. The timeline
/// answers for the default user only ([`Pin::default_user`]); [`serve_with`] takes another
/// registry.
pub fn serve(coral: Coral, options: HttpOptions) -> anyhow::Result<()> {
    serve_with(
        coral,
        options,
        Registry::builtin().with_scope(Scope::Pinned(Pin::default_user())),
    )
}

/// [`serve`] with the tools of `registry`. A registry serving every namespace needs a token
/// (any program or page reaching the port could otherwise read every user's timeline).
pub fn serve_with(coral: Coral, options: HttpOptions, registry: Registry) -> anyhow::Result<()> {
    check_bind(&options)?;
    if registry.scope().is_any() && !options.guard.has_token() {
        bail!(
            "serving every timeline namespace needs a token: pass --token (or set \
             CORAL_HTTP_TOKEN), or pin the registry to one namespace"
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let coral = Arc::new(coral);
    let state = Arc::new(AppState {
        coral: Arc::clone(&coral),
        registry: Arc::new(registry),
    });
    let socket = {
        let _runtime = runtime.enter();
        crate::recall::RecallSocket::start(Arc::clone(&coral))
    };
    errln!("coral: {}", socket.state());
    let served = runtime.block_on(async move {
        let addr = SocketAddr::new(options.host, options.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
        let guard = Arc::new(Guard::new(bound, options.guard));
        println!("{}", json!({"listening": bound.to_string()}));
        errln!("coral: HTTP sidecar on http://{bound} (POST /rpc, GET /health, dashboard at /)");
        if options.print_url {
            println!("{}", crate::dashboard::url(bound));
        }
        axum::serve(listener, router(state, guard))
            .with_graceful_shutdown(shutdown_signal())
            .await
            .context("HTTP server failed")
    });
    runtime.block_on(socket.close());
    served?;
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    match Arc::try_unwrap(coral) {
        Ok(coral) => {
            for warning in coral.close().context("closing the memory store")? {
                errln!("coral: warning: {warning}");
            }
        }
        Err(coral) => coral.flush().context("checkpointing the memory store")?,
    }
    errln!("coral: HTTP sidecar stopped");
    Ok(())
}

pub(crate) async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}
