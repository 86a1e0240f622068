//! The benchmark's rmcp peer: one text tool `echo` that returns its `message` argument and one
//! static resource, written the way rmcp's documentation shows (tool router macros), served by
//! rmcp's Streamable HTTP service on axum: 2026-07-28 stateless requests and legacy sessions on
//! `/mcp` (rmcp has no HTTP+SSE server transport). Usage: `rmcp-bench-server PORT`.

use axum::serve::ListenerExt;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Resource, ResourceContents, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::{
    StreamableHttpServerConfig, StreamableHttpService, session::local::LocalSessionManager,
};
use rmcp::{ErrorData, RoleServer, ServerHandler, schemars, tool, tool_handler, tool_router};

const RESOURCE_URI: &str = "bench://static/readme";
const RESOURCE_TEXT: &str = "kube-mcp benchmark static resource.";

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The text to echo.
    message: String,
}

#[derive(Clone)]
struct Bench {
    // Read by the code `#[tool_handler]` generates.
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Bench {
    fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Echoes the message.")]
    fn echo(&self, Parameters(EchoArgs { message }): Parameters<EchoArgs>) -> String {
        message
    }
}

#[tool_handler]
impl ServerHandler for Bench {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .build(),
        )
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let resource = Resource::new(RESOURCE_URI, "readme").with_mime_type("text/plain");
        Ok(ListResourcesResult::with_all_items(vec![resource]))
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        if request.uri != RESOURCE_URI {
            return Err(ErrorData::resource_not_found("no such resource", None));
        }
        let contents = ResourceContents::text(RESOURCE_TEXT, RESOURCE_URI);
        Ok(ReadResourceResult::new(vec![contents]).into())
    }
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let port: u16 = std::env::args()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(8000);
    let config = StreamableHttpServerConfig::default().with_json_response(true);
    let service: StreamableHttpService<Bench, LocalSessionManager> =
        StreamableHttpService::new(|| Ok(Bench::new()), Default::default(), config);
    let app = axum::Router::new().nest_service("/mcp", service);
    // TCP_NODELAY, as a performance-minded deployment sets it: without it, responses written in
    // several pieces (SSE) wait for delayed ACKs (~40 ms per request on Linux loopback).
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await?
        .tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
    eprintln!("rmcp peer listening on 127.0.0.1:{port}");
    axum::serve(listener, app)
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
