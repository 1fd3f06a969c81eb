//! `coral mcp --http`: the MCP server over Streamable HTTP at `/mcp` (rmcp's
//! `StreamableHttpService`), for remote clients and several local apps sharing one server.
//!
//! The same tools, resources and prompts as on stdio (`mcp.rs`), one handler per session. The
//! request checks are the sidecar's ([`crate::http_guard`]: `Host` against DNS rebinding,
//! `Origin`, the bearer token, JSON bodies), layered on the route; rmcp's own host and origin
//! lists are switched off so that one set of rules applies to every Coral endpoint. A
//! non-loopback bind needs a token ([`crate::http::check_bind`]).

use std::net::SocketAddr;
use std::sync::Arc;

use anyhow::Context;
use coral::Coral;
use futures_core::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    EventStore, RestoreOutcome, ServerSseMessage, SessionId, SessionManager,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;

use crate::http::{HttpOptions, check_bind, shutdown_signal};
use crate::http_guard::Guard;
use crate::mcp::CoralServer;
use crate::session_project::RootsChanges;
use crate::tools::Registry;

/// The path of the MCP endpoint.
pub const ENDPOINT: &str = "/mcp";

/// Largest request body accepted (a tool call's arguments; texts are bounded far below this).
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Serve the built-in tools over Streamable HTTP until SIGINT or SIGTERM, then checkpoint.
/// Prints the bound address on stdout as one JSON line (`{"listening": "127.0.0.1:8766",
/// "endpoint": "/mcp"}`) so that scripts can use port 0.
pub fn serve(coral: Coral, options: HttpOptions) -> anyhow::Result<()> {
    serve_with(coral, options, Registry::builtin())
}

/// [`serve`] with the tools of `registry`.
pub fn serve_with(coral: Coral, options: HttpOptions, registry: Registry) -> anyhow::Result<()> {
    check_bind(&options)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let coral = Arc::new(coral);
    let registry = Arc::new(registry);
    let handler = CoralServer::new(Arc::clone(&coral), registry);
    // Host and Origin are the guard's: rmcp's lists would refuse a name `--allowed-host`
    // allows, or allow an origin the guard refuses.
    let config = StreamableHttpServerConfig::default()
        .disable_allowed_hosts()
        .disable_allowed_origins()
        .with_max_request_body_bytes(MAX_BODY_BYTES);
    let stop = config.cancellation_token.clone();
    let socket = {
        let _runtime = runtime.enter();
        crate::recall::RecallSocket::start(Arc::clone(&coral))
    };
    errln!("coral: {}", socket.state());
    let service = StreamableHttpService::new(
        move || Ok(handler.for_session()),
        Arc::new(InOrderSessions::default()),
        config,
    );
    let served = runtime.block_on(async move {
        let addr = SocketAddr::new(options.host, options.port);
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .with_context(|| format!("cannot listen on {addr}"))?;
        let bound = listener.local_addr()?;
        let guard = Arc::new(Guard::new(bound, options.guard));
        let router = axum::Router::new()
            .route_service(ENDPOINT, service)
            .layer(axum::middleware::from_fn(session_ended))
            .layer(axum::middleware::from_fn_with_state(
                guard,
                crate::http_guard::guard,
            ));
        println!(
            "{}",
            json!({"listening": bound.to_string(), "endpoint": ENDPOINT})
        );
        errln!("coral: MCP over Streamable HTTP on http://{bound}{ENDPOINT}");
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                shutdown_signal().await;
                // Open event streams end with their sessions, so the graceful shutdown
                // does not wait for clients that never hang up.
                stop.cancel();
            })
            .await
            .context("MCP HTTP server failed")
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
    errln!("coral: MCP HTTP server stopped");
    Ok(())
}

/// A session's end (`DELETE /mcp`) answered `204 No Content`: rmcp answers 202, which the
/// Python SDK reports as "Session termination failed" although the session did end.
async fn session_ended(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == axum::http::StatusCode::ACCEPTED {
        *response.status_mut() = axum::http::StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
    }
    response
}

/// rmcp's in-process sessions, with each session's roots announcements counted as its client's
/// messages arrive (`session_project.rs`): a notification is counted before its POST is
/// answered, so before the client sends the call that follows it.
#[derive(Default)]
struct InOrderSessions {
    inner: LocalSessionManager,
    roots: std::sync::Mutex<std::collections::HashMap<SessionId, RootsChanges>>,
}

impl InOrderSessions {
    fn observe(&self, id: &SessionId, message: &mut ClientJsonRpcMessage) {
        // A poisoned lock only means a panic elsewhere; the map itself is always whole.
        let mut roots = self.roots.lock().unwrap_or_else(|e| e.into_inner());
        roots.entry(id.clone()).or_default().observe(message);
    }
}

impl SessionManager for InOrderSessions {
    type Error = <LocalSessionManager as SessionManager>::Error;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.observe(id, &mut message);
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.roots
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.observe(id, &mut message);
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        mut message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.observe(id, &mut message);
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }

    fn event_store(&self) -> Option<Arc<dyn EventStore>> {
        self.inner.event_store()
    }
}
