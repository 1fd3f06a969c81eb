//! `coral mcp`: the MCP server on stdio, built on the official Rust SDK (rmcp).
//!
//! Tools come from a [`Registry`] (the built-in one by default); calls run on the blocking pool so the
//! synchronous engine never stalls the protocol loop. Stdin and stdout go through
//! `stdio_transport.rs`, which answers malformed and oversized input itself and accepts
//! `Content-Length` frames as well as lines. Logs go to stderr only: stdout carries nothing but
//! JSON-RPC.

use std::sync::Arc;

use anyhow::Context;
use coral::Coral;

use crate::recall::RecallSocket;
use crate::session_project::SessionProject;
use crate::tools::{Pin, Registry, Scope, ToolError};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, InitializeRequestParams, InitializeResult,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult,
    ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// Name announced to clients.
pub const SERVER_NAME: &str = "coral-memory";

/// The MCP tool list built from the registry: the tools meant for models (the timeline's
/// host-side writes are served over HTTP only), each with its title and annotations.
pub fn tool_list(registry: &Registry) -> Vec<Tool> {
    registry
        .tools()
        .iter()
        .filter(|t| t.on_mcp())
        .map(|t| {
            let schema = match t.input_schema() {
                Value::Object(m) => m,
                _ => serde_json::Map::new(),
            };
            let tool = Tool::new(t.name, t.description, schema);
            match registry.annotations(t.name) {
                Some(a) => tool.with_title(a.title).with_annotations(a.to_mcp()),
                None => tool,
            }
        })
        .collect()
}

/// The result of a tool call as MCP content: JSON text plus `structuredContent`; failures are
/// tool results with `isError: true` so the model can read and act on the message.
pub fn to_result(outcome: Result<Value, ToolError>) -> Result<CallToolResult, McpError> {
    match outcome {
        Ok(value) => Ok(CallToolResult::structured(value)),
        Err(ToolError::UnknownTool(name)) => Err(McpError::invalid_params(
            format!(
                "unknown tool {}; call tools/list for the available tools",
                coral::echo(&name)
            ),
            None,
        )),
        Err(ToolError::Refused(body)) => Ok(CallToolResult::structured_error(body)),
        Err(e) => Ok(CallToolResult::structured_error(
            json!({"ok": false, "error": e.to_string()}),
        )),
    }
}

/// One MCP session's handler: the store, the tools and the resource and prompt views over them
/// (`mcp_surface.rs`), and the session's project under `--project auto`. The Streamable HTTP
/// server (`mcp_http.rs`) makes one per session with [`CoralServer::for_session`].
#[derive(Clone)]
pub(crate) struct CoralServer {
    coral: Arc<Coral>,
    registry: Arc<Registry>,
    tools: Arc<Vec<Tool>>,
    session: Arc<SessionProject>,
}

impl CoralServer {
    /// The handler serving `registry`'s model-facing tools over `coral`.
    pub(crate) fn new(coral: Arc<Coral>, registry: Arc<Registry>) -> CoralServer {
        CoralServer {
            coral,
            tools: Arc::new(tool_list(&registry)),
            registry,
            session: Arc::new(SessionProject::new()),
        }
    }

    /// The same store and tools for a new session, which knows nothing of its client's roots
    /// yet.
    pub(crate) fn for_session(&self) -> CoralServer {
        CoralServer {
            session: Arc::new(SessionProject::new()),
            ..self.clone()
        }
    }

    /// The project of this session's calls that name none: the client's roots' under
    /// `--project auto` once known, else the registry's.
    async fn project(&self) -> Option<String> {
        let scope = self.registry.project();
        if scope.is_auto()
            && let Some(from_roots) = self.session.roots_project().await
        {
            return from_roots;
        }
        scope.default_project().map(String::from)
    }

    /// Run `f` with the store, the registry and the session's project on the blocking pool.
    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(&Registry, &Coral, Option<&str>) -> Result<T, McpError> + Send + 'static,
    ) -> Result<T, McpError> {
        let coral = Arc::clone(&self.coral);
        let registry = Arc::clone(&self.registry);
        let project = self.project().await;
        tokio::task::spawn_blocking(move || f(&registry, &coral, project.as_deref()))
            .await
            .map_err(|e| McpError::internal_error(format!("task failed: {e}"), None))?
    }
}

impl ServerHandler for CoralServer {
    fn get_info(&self) -> ServerConfig {
        let mut capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_prompts()
            .build();
        // The tool list never changes during a session; say so, as the original did.
        if let Some(tools) = capabilities.tools.as_mut() {
            tools.list_changed = Some(false);
        }
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")))
            .with_instructions(
                "Coral memory: call memory_search before answering to recall what matters, and \
                 memory_insert to remember durable facts and preferences. \
                 回答前用 memory_search 检索相关记忆，用 memory_insert 记住长期有用的信息。",
            )
    }

    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, McpError> {
        // Calls made before the roots arrive wait for them (session_project.rs).
        if self.registry.project().is_auto() && request.capabilities.roots.is_some() {
            self.session.expect(
                context
                    .extensions
                    .get::<crate::session_project::RootsChanges>(),
            );
        }
        context.peer.set_peer_info(request.clone());
        self.negotiate_initialize(&request)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        let roots = context
            .peer
            .peer_info()
            .is_some_and(|info| info.capabilities.roots.is_some());
        if self.registry.project().is_auto() && roots {
            self.session.refresh(&context.peer).await;
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        if self.registry.project().is_auto() {
            self.session.changed(&context.peer).await;
        }
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items((*self.tools).clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let name = request.name.to_string();
        if self.registry.get(&name).is_some_and(|t| !t.on_mcp()) {
            return to_result(Err(ToolError::UnknownTool(name))).map(CallToolResponse::from);
        }
        let args = request.arguments.map(Value::Object).unwrap_or(Value::Null);
        let outcome = self
            .blocking(move |registry, coral, project| {
                Ok(registry.call_in(coral, &name, &args, project))
            })
            .await?;
        to_result(outcome).map(CallToolResponse::from)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        Ok(ListResourcesResult::with_all_items(
            crate::mcp_surface::resources(),
        ))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        Ok(ListResourceTemplatesResult::with_all_items(
            crate::mcp_surface::templates(),
        ))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let uri = request.uri.clone();
        let contents = self
            .blocking(move |registry, coral, project| {
                crate::mcp_surface::read(registry, coral, project, &uri)
            })
            .await?;
        Ok(ReadResourceResult::new(vec![contents]).into())
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        Ok(ListPromptsResult::with_all_items(
            crate::mcp_surface::prompts(),
        ))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let name = request.name.clone();
        let arguments = request.arguments.clone();
        let result = self
            .blocking(move |registry, coral, project| {
                crate::mcp_surface::get_prompt(registry, coral, project, &name, arguments.as_ref())
            })
            .await?;
        Ok(result.into())
    }
}

/// Serve the built-in tools until the client closes stdin, then checkpoint and exit. The
/// timeline answers for the default user only ([`Pin::default_user`]); [`serve_with`] takes a
/// registry pinned otherwise, or serving every namespace.
pub fn serve(coral: Coral) -> anyhow::Result<()> {
    serve_with(
        coral,
        Registry::builtin().with_scope(Scope::Pinned(Pin::default_user())),
    )
}

/// [`serve`] with the tools of `registry`.
pub fn serve_with(coral: Coral, registry: Registry) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let coral = Arc::new(coral);
    let server = CoralServer::new(Arc::clone(&coral), Arc::new(registry));
    let socket = {
        let _runtime = runtime.enter();
        RecallSocket::start(Arc::clone(&coral))
    };
    errln!("coral: {}", socket.state());
    let (transport, writer) = crate::stdio_transport::start(std::io::stdin(), std::io::stdout());
    let session = runtime.block_on(async move {
        let running = match server.serve(transport).await {
            Ok(running) => running,
            Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
                errln!("coral: the client closed stdin before initialize");
                return anyhow::Ok(());
            }
            Err(e) => return Err(e).context("MCP initialisation failed"),
        };
        errln!("coral: MCP server {SERVER_NAME} ready on stdio");
        let reason = running.waiting().await.context("MCP server task failed")?;
        errln!("coral: MCP session ended ({reason:?})");
        anyhow::Ok(())
    });
    runtime.block_on(socket.close());
    // Dropping the runtime's tasks drops the last handles on the writer's queue.
    runtime.shutdown_timeout(std::time::Duration::from_secs(5));
    let closed = match Arc::try_unwrap(coral) {
        Ok(coral) => coral
            .close()
            .context("closing the memory store")
            .map(|warnings| {
                for warning in warnings {
                    errln!("coral: warning: {warning}");
                }
            }),
        Err(coral) => coral.flush().context("checkpointing the memory store"),
    };
    // Every queued answer is written before the process exits.
    let written = match writer.join() {
        Ok(result) => result.context("writing to stdout"),
        Err(_) => Err(anyhow::anyhow!("the stdout writer panicked")),
    };
    session?;
    closed?;
    if let Err(e) = written {
        // The client closed its end first: nothing is lost that it could still read.
        errln!("coral: {e:#}");
    }
    Ok(())
}
