//! The timeline tools (docs/timeline.md): the model's reads (`read_tools.rs`: MCP and HTTP) and
//! the host's operations (HTTP only: a model never begins or completes its own turns):
//! recording turns (`host_tools.rs`), the memory layers (`layer_tools.rs`) and forgetting
//! (`forget_tools.rs`) and listing a user's conversations (`conversation_tools.rs`). The arguments
//! they share are `args.rs`, the shape of their answers `answer.rs`.

mod answer;
mod args;
mod conversation_tools;
mod forget_tools;
mod host_tools;
mod layer_tools;
mod read_tools;

/// The model's read tools, served on MCP and HTTP.
pub(super) fn model_tools() -> &'static [crate::tools::ToolDef] {
    read_tools::TOOLS
}

/// The host's tools, served over HTTP only.
pub(super) fn host_tools() -> impl Iterator<Item = &'static crate::tools::ToolDef> {
    layer_tools::TOOLS
        .iter()
        .chain(host_tools::TOOLS)
        .chain(forget_tools::TOOLS)
        .chain(conversation_tools::TOOLS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_only_tools_are_the_writes() {
        for t in model_tools() {
            assert!(t.on_mcp(), "{}", t.name);
        }
        for t in host_tools() {
            assert!(!t.on_mcp(), "{}", t.name);
            assert!(t.name.starts_with("timeline_"));
        }
    }
}
