//! Coral's interfaces: the tool registry that the MCP server and the HTTP sidecar both serve
//! (schemas, argument validation, handlers), those two servers, and the recall the client
//! hooks use (in process or over a server's recall socket). The `coral` binary is the
//! command line over them; a Rust program embedding Coral can serve the built-in tools next to
//! its own.
//!
//! ```
//! use coral_mcp::tools::{Arg, Kind, Registry, ToolDef};
//! use serde_json::json;
//!
//! static ARGS: &[Arg] = &[Arg {
//!     name: "text",
//!     kind: Kind::String,
//!     required: true,
//!     description: "what to shout",
//!     default: None,
//! }];
//! let mut registry = Registry::builtin();
//! registry.register(ToolDef::new("shout", "Upper-cases a text.", ARGS, |_, args| {
//!     Ok(json!({"ok": true, "text": args.str("text").unwrap_or_default().to_uppercase()}))
//! }))?;
//! let dir = tempfile::tempdir()?;
//! let coral = coral::Coral::open(dir.path().join("coral_config.json"))?;
//! let answer = registry.call(&coral, "shout", &json!({"text": "hi"}))?;
//! assert_eq!(answer["text"], "HI");
//! assert!(registry.call(&coral, "memory_insert", &json!({"content": "a fact"})).is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

/// `eprintln!` that never panics: when stderr itself cannot be written (a full disk under a
/// redirect, a closed pipe) there is nowhere left to report that, and a panic would turn a
/// clear exit code into 101.
#[macro_export]
macro_rules! errln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

mod dashboard;
pub mod http;
pub mod http_guard;
pub mod mcp;
pub mod mcp_http;
pub mod mcp_surface;
pub mod project;
pub mod recall;
mod session_project;
mod stdio_frames;
mod stdio_transport;
pub mod tools;
