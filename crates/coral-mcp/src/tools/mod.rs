//! The tool registry: one implementation per tool, JSON arguments in, JSON result out.
//!
//! MCP (`coral mcp`) and HTTP (`coral http`) both dispatch through a [`Registry`], so every
//! tool behaves the same everywhere. Each tool declares its arguments once ([`Arg`]); the JSON
//! schema sent to clients and the validation of incoming arguments are both derived from that
//! declaration, so they cannot drift apart. [`Registry::builtin`] holds Coral's tools; a
//! program embedding Coral adds its own with [`Registry::register`] and serves them all.

mod annotations;
mod config;
mod memory;
mod memory_list;
mod scope;
mod threads;
mod timeline;

pub use scope::{Pin, Scope};

use crate::project::ProjectScope;

use std::sync::Arc;

use serde_json::{Map, Value, json};

use coral::Coral;

pub use annotations::Annotations;

/// Why a tool call failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// No tool has this name.
    #[error("unknown tool {}", coral::echo(.0))]
    UnknownTool(String),
    /// The arguments are missing, of the wrong type or out of range. Nothing was changed.
    #[error("{0}")]
    InvalidArguments(String),
    /// The tool ran and failed (I/O, damaged files).
    #[error("{0}")]
    Failed(String),
    /// The tool declined (an unknown memory id): its answer is this `{"ok": false, "error",
    /// ...}` body, in the original Coral's shape. Nothing was changed.
    #[error("{}", refusal_message(.0))]
    Refused(Value),
}

fn refusal_message(body: &Value) -> &str {
    body["error"].as_str().unwrap_or("refused")
}

impl ToolError {
    /// The same error with its message cut to [`coral::bound_message`]'s size: messages built
    /// in the leaf crates may echo a whole argument.
    fn bounded(self) -> Self {
        match self {
            ToolError::InvalidArguments(m) => ToolError::InvalidArguments(coral::bound_message(m)),
            ToolError::Failed(m) => ToolError::Failed(coral::bound_message(m)),
            other => other,
        }
    }
}

impl From<coral::Error> for ToolError {
    fn from(e: coral::Error) -> Self {
        match e {
            coral::Error::InvalidInput(m) => ToolError::InvalidArguments(m),
            coral::Error::NotFound(id) => ToolError::InvalidArguments(format!(
                "no memory with item_id {}; search first to get a valid id",
                coral::echo(&id)
            )),
            coral::Error::ThreadNotFound(id) => ToolError::InvalidArguments(format!(
                "no thread with id {}; call thread_status to list the threads",
                coral::echo(&id)
            )),
            other => ToolError::Failed(other.to_string()),
        }
    }
}

impl From<coral::ThreadError> for ToolError {
    fn from(e: coral::ThreadError) -> Self {
        // Through the facade's error, so that thread and memory failures read alike.
        coral::Error::from(e).into()
    }
}

/// The JSON type of an argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// A string.
    String,
    /// A whole number within bounds.
    Integer {
        /// Smallest accepted value.
        min: i64,
        /// Largest accepted value.
        max: i64,
    },
    /// A number within bounds.
    Number {
        /// Smallest accepted value.
        min: f64,
        /// Largest accepted value.
        max: f64,
    },
    /// `true` or `false`.
    Boolean,
    /// A string, a number or a boolean (a config value).
    Scalar,
    /// An array of strings.
    Strings,
    /// A JSON object. With fields, exactly those (typed, unknown keys refused); with none, any
    /// object (a tool call's input, a payload).
    Object(&'static [Arg]),
}

/// One declared argument.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Arg {
    /// Argument name (the original's).
    pub name: &'static str,
    /// Its type and range.
    pub kind: Kind,
    /// Whether it must be given.
    pub required: bool,
    /// Short description, with the default when there is one.
    pub description: &'static str,
    /// Default shown in the schema.
    pub default: Option<DefaultValue>,
}

/// A default value shown in a schema.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum DefaultValue {
    /// Integer default.
    Int(i64),
    /// Number default.
    Num(f64),
    /// Boolean default.
    Bool(bool),
}

/// A tool's body: validated arguments in, a JSON result or an error out.
pub type ToolFn = dyn Fn(&Coral, &Args) -> Result<Value, ToolError> + Send + Sync;

/// What runs a tool.
#[derive(Clone)]
pub enum Handler {
    /// A function (every built-in tool).
    Fn(fn(&Coral, &Args) -> Result<Value, ToolError>),
    /// A closure (tools a program registers).
    Shared(Arc<ToolFn>),
}

impl Handler {
    fn run(&self, coral: &Coral, args: &Args) -> Result<Value, ToolError> {
        match self {
            Handler::Fn(f) => f(coral, args),
            Handler::Shared(f) => f(coral, args),
        }
    }
}

/// One tool.
#[derive(Clone)]
pub struct ToolDef {
    /// Tool name (the original's for the built-in tools).
    pub name: &'static str,
    /// Bilingual short description stating the defaults.
    pub description: &'static str,
    /// Declared arguments.
    pub args: &'static [Arg],
    /// What runs it.
    pub handler: Handler,
    /// Served over HTTP only, not to MCP clients (models): the timeline's write operations are
    /// for the host application.
    pub http_only: bool,
}

impl ToolDef {
    /// A tool served on both transports, run by `handler` with validated arguments.
    pub fn new(
        name: &'static str,
        description: &'static str,
        args: &'static [Arg],
        handler: impl Fn(&Coral, &Args) -> Result<Value, ToolError> + Send + Sync + 'static,
    ) -> ToolDef {
        ToolDef {
            name,
            description,
            args,
            handler: Handler::Shared(Arc::new(handler)),
            http_only: false,
        }
    }

    /// The same tool, served over HTTP only.
    pub fn http_only(mut self) -> ToolDef {
        self.http_only = true;
        self
    }

    /// The JSON schema of the arguments: an object with typed properties, `required` when any
    /// are, and `additionalProperties: false`.
    pub fn input_schema(&self) -> Value {
        object_schema(self.args)
    }

    /// Whether MCP clients (models) see this tool.
    pub fn on_mcp(&self) -> bool {
        !self.http_only
    }
}

/// The schema of an object with these fields.
fn object_schema(args: &[Arg]) -> Value {
    let mut props = Map::new();
    for a in args {
        props.insert(a.name.into(), arg_schema(a));
    }
    let mut schema = json!({"type": "object", "properties": props});
    let required: Vec<&str> = args.iter().filter(|a| a.required).map(|a| a.name).collect();
    if !required.is_empty() {
        schema["required"] = json!(required);
    }
    schema["additionalProperties"] = json!(false);
    schema
}

fn arg_schema(a: &Arg) -> Value {
    let mut p = Map::new();
    match a.kind {
        Kind::String => {
            p.insert("type".into(), "string".into());
        }
        Kind::Integer { min, max } => {
            p.insert("type".into(), "integer".into());
            p.insert("minimum".into(), min.into());
            p.insert("maximum".into(), max.into());
        }
        Kind::Number { min, max } => {
            p.insert("type".into(), "number".into());
            p.insert("minimum".into(), min.into());
            p.insert("maximum".into(), max.into());
        }
        Kind::Boolean => {
            p.insert("type".into(), "boolean".into());
        }
        Kind::Scalar => {
            // anyOf with one type each, not a type array: more clients accept it.
            p.insert(
                "anyOf".into(),
                json!([{"type": "string"}, {"type": "number"}, {"type": "boolean"}]),
            );
        }
        Kind::Strings => {
            p.insert("type".into(), "array".into());
            p.insert("items".into(), json!({"type": "string"}));
        }
        Kind::Object([]) => {
            p.insert("type".into(), "object".into());
        }
        Kind::Object(fields) => {
            if let Value::Object(o) = object_schema(fields) {
                p.extend(o);
            }
        }
    }
    p.insert("description".into(), a.description.into());
    match a.default {
        Some(DefaultValue::Int(v)) => p.insert("default".into(), v.into()),
        Some(DefaultValue::Num(v)) => p.insert("default".into(), v.into()),
        Some(DefaultValue::Bool(v)) => p.insert("default".into(), v.into()),
        None => None,
    };
    Value::Object(p)
}

/// Every built-in tool, in the original's registry order (memory, threads, stats, config,
/// report), then the timeline's (read tools, then the HTTP-only write operations; see
/// [`ToolDef::on_mcp`]).
pub fn tools() -> &'static [ToolDef] {
    static ALL: std::sync::OnceLock<Vec<ToolDef>> = std::sync::OnceLock::new();
    ALL.get_or_init(|| {
        let mut all: Vec<ToolDef> = Vec::new();
        for group in [
            memory::TOOLS,
            memory_list::TOOLS,
            threads::TOOLS,
            config::TOOLS,
            timeline::model_tools(),
        ] {
            all.extend(group.iter().map(ToolDef::clone));
        }
        all.extend(timeline::host_tools().cloned());
        // coral_stats sits after the thread tools in the original's order.
        if let Some(i) = all.iter().position(|t| t.name == "coral_stats") {
            let stats = all.remove(i);
            let at = all
                .iter()
                .position(|t| t.name == "coral_config_get")
                .unwrap_or(all.len());
            all.insert(at, stats);
        }
        all
    })
}

/// The tools a server serves: the built-in ones and any a program registers, and the timeline
/// namespaces it answers for ([`Scope`]).
#[derive(Clone)]
pub struct Registry {
    tools: Vec<ToolDef>,
    scope: Scope,
    /// The project of calls that name none (docs/servers.md, "Projects").
    project: ProjectScope,
    /// Each tool's annotations, by name (every built-in tool has them; see `annotations.rs`).
    annotations: std::collections::BTreeMap<&'static str, Annotations>,
}

impl Registry {
    /// Coral's own tools, answering for every namespace a call names ([`Scope::Any`]: what
    /// the Rust API and the command line use; servers pin with [`Registry::with_scope`]).
    pub fn builtin() -> Registry {
        let tools = tools().to_vec();
        let annotations = tools
            .iter()
            .filter_map(|t| annotations::builtin(t.name).map(|a| (t.name, a)))
            .collect();
        Registry {
            tools,
            annotations,
            scope: Scope::Any,
            project: ProjectScope::None,
        }
    }

    /// Declare what the registered tool `name` does ([`Annotations`]), for MCP clients.
    pub fn annotate(&mut self, name: &str, annotations: Annotations) -> Result<(), ToolError> {
        let tool = self
            .get(name)
            .ok_or_else(|| ToolError::UnknownTool(name.to_string()))?;
        self.annotations.insert(tool.name, annotations);
        Ok(())
    }

    /// The annotations of the tool `name`, when it has them.
    pub fn annotations(&self, name: &str) -> Option<Annotations> {
        self.annotations.get(name).copied()
    }

    /// The same tools answering only for `scope`.
    pub fn with_scope(mut self, scope: Scope) -> Registry {
        self.scope = scope;
        self
    }

    /// The namespaces this registry answers for.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The same tools tagging inserts with `project` and preferring it in searches when a
    /// call names no project.
    pub fn with_project(mut self, project: ProjectScope) -> Registry {
        self.project = project;
        self
    }

    /// The project of calls that name none.
    pub fn project(&self) -> &ProjectScope {
        &self.project
    }

    /// Serve the HTTP-only tool `name` to MCP clients too (an operator's choice, such as
    /// `timeline_forget` with `--allow-forget`).
    pub fn expose_on_mcp(&mut self, name: &str) -> Result<(), ToolError> {
        let tool = self
            .tools
            .iter_mut()
            .find(|t| t.name == name)
            .ok_or_else(|| ToolError::UnknownTool(name.to_string()))?;
        tool.http_only = false;
        Ok(())
    }

    /// Add a tool. Its name must be new, 1 to 64 characters of `a-z`, `0-9`, `_` and `-`
    /// (what every MCP client accepts), and its arguments' names unique.
    pub fn register(&mut self, tool: ToolDef) -> Result<(), ToolError> {
        let ok_name = !tool.name.is_empty()
            && tool.name.len() <= 64
            && tool
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-');
        if !ok_name {
            return Err(ToolError::InvalidArguments(format!(
                "tool name {} must be 1 to 64 characters of a-z, 0-9, _ and -",
                coral::echo(tool.name)
            )));
        }
        if self.get(tool.name).is_some() {
            return Err(ToolError::InvalidArguments(format!(
                "a tool named {} is already registered",
                coral::echo(tool.name)
            )));
        }
        let mut names: Vec<&str> = tool.args.iter().map(|a| a.name).collect();
        names.sort_unstable();
        if names.windows(2).any(|w| w[0] == w[1]) {
            return Err(ToolError::InvalidArguments(format!(
                "tool {} declares an argument twice",
                coral::echo(tool.name)
            )));
        }
        self.tools.push(tool);
        Ok(())
    }

    /// Every tool, in order.
    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<&ToolDef> {
        self.tools.iter().find(|t| t.name == name)
    }

    /// Run the tool `name` with JSON `args` (an object, or null for none): the registry's
    /// [`Scope`] and project are applied and the arguments are checked against the tool's
    /// declaration first, and errors and refusals are cut to a bounded size.
    pub fn call(&self, coral: &Coral, name: &str, args: &Value) -> Result<Value, ToolError> {
        self.call_in(coral, name, args, self.project.default_project())
    }

    /// [`Registry::call`] with `project` as the project of a call that names none (an MCP
    /// session whose client's roots name its workspace).
    pub fn call_in(
        &self,
        coral: &Coral,
        name: &str,
        args: &Value,
        project: Option<&str>,
    ) -> Result<Value, ToolError> {
        let tool = self
            .get(name)
            .ok_or_else(|| ToolError::UnknownTool(name.to_string()))?;
        let args = self.scope.apply(tool, args).map_err(ToolError::bounded)?;
        let args = with_project(tool, args, project);
        let args = validate(tool, &args).map_err(ToolError::bounded)?;
        tool.handler
            .run(coral, &args)
            .map(bound_refusal)
            .map_err(ToolError::bounded)
    }
}

/// `args` with `project` filled in when the tool takes a project and the call names none
/// (absent or null; an explicit `""` asks for shared memories and is kept).
fn with_project<'a>(
    tool: &ToolDef,
    args: std::borrow::Cow<'a, Value>,
    project: Option<&str>,
) -> std::borrow::Cow<'a, Value> {
    let Some(project) = project else {
        return args;
    };
    if !tool.args.iter().any(|a| a.name == "project") {
        return args;
    }
    let mut map = match &*args {
        Value::Object(m) if m.get("project").is_some_and(|v| !v.is_null()) => return args,
        Value::Object(m) => m.clone(),
        Value::Null => Map::new(),
        _ => return args,
    };
    map.insert("project".into(), Value::String(project.to_string()));
    std::borrow::Cow::Owned(Value::Object(map))
}

/// `coral.call_tool(name, args)`: the built-in tools called from Rust.
pub trait CallTool {
    /// Run the built-in tool `name` ([`Registry::call`]).
    fn call_tool(&self, name: &str, args: &Value) -> Result<Value, ToolError>;
}

impl CallTool for Coral {
    fn call_tool(&self, name: &str, args: &Value) -> Result<Value, ToolError> {
        static BUILTIN: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
        BUILTIN
            .get_or_init(Registry::builtin)
            .call(self, name, args)
    }
}

/// Validated arguments of one call.
pub struct Args<'a> {
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    /// A string argument (validated present when required).
    pub fn str(&self, name: &str) -> Option<&'a str> {
        self.map.get(name).and_then(Value::as_str)
    }

    /// An integer argument.
    pub fn int(&self, name: &str) -> Option<i64> {
        self.map.get(name).and_then(Value::as_i64)
    }

    /// A number argument.
    pub fn num(&self, name: &str) -> Option<f64> {
        self.map.get(name).and_then(Value::as_f64)
    }

    /// A boolean argument.
    pub fn bool(&self, name: &str) -> Option<bool> {
        self.map.get(name).and_then(Value::as_bool)
    }

    /// An argument as raw JSON (null counts as absent).
    pub fn value(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }
}

fn validate<'a>(tool: &ToolDef, args: &'a Value) -> Result<Args<'a>, ToolError> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    let map = match args {
        Value::Object(m) => m,
        Value::Null => EMPTY.get_or_init(Map::new),
        other => {
            return Err(ToolError::InvalidArguments(format!(
                "{}: arguments must be a JSON object, got {}",
                tool.name,
                coral::kind_name(other)
            )));
        }
    };
    check_fields(tool.name, "", tool.args, map)?;
    Ok(Args { map })
}

/// Check an object's keys and values against its declared fields. `prefix` is the path of a
/// nested object (`time_range.`), empty at the top.
fn check_fields(
    tool: &str,
    prefix: &str,
    args: &[Arg],
    map: &Map<String, Value>,
) -> Result<(), ToolError> {
    for key in map.keys() {
        if !args.iter().any(|a| a.name == key) {
            let known: Vec<&str> = args.iter().map(|a| a.name).collect();
            return Err(ToolError::InvalidArguments(format!(
                "{tool}: unknown argument {}; accepted: {}",
                coral::echo(&format!("{prefix}{key}")),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            )));
        }
    }
    for a in args {
        let name = format!("{prefix}{}", a.name);
        let value = match map.get(a.name) {
            None | Some(Value::Null) if a.required => {
                return Err(ToolError::InvalidArguments(format!(
                    "{tool}: missing required argument {name:?} ({})",
                    a.description
                )));
            }
            None | Some(Value::Null) => continue,
            Some(v) => v,
        };
        check_value(tool, &name, a.kind, value)?;
    }
    Ok(())
}

fn check_value(tool: &str, name: &str, kind: Kind, value: &Value) -> Result<(), ToolError> {
    let bad = |expected: &str| {
        ToolError::InvalidArguments(format!(
            "{tool}: argument {name:?} must be {expected}, got {} {}",
            coral::kind_name(value),
            coral::echo_json(value)
        ))
    };
    match kind {
        Kind::String => {
            if !value.is_string() {
                return Err(bad("a string"));
            }
        }
        Kind::Boolean => {
            if !value.is_boolean() {
                return Err(bad("true or false"));
            }
        }
        Kind::Scalar => {
            if !(value.is_string() || value.is_number() || value.is_boolean()) {
                return Err(bad("a string, a number or true/false"));
            }
        }
        Kind::Integer { min, max } => {
            let v = value.as_i64().ok_or_else(|| bad("a whole number"))?;
            if v < min || v > max {
                return Err(bad(&format!("a whole number from {min} to {max}")));
            }
        }
        Kind::Number { min, max } => {
            let v = value.as_f64().ok_or_else(|| bad("a number"))?;
            if !(min..=max).contains(&v) {
                return Err(bad(&format!("a number from {min} to {max}")));
            }
        }
        Kind::Strings => {
            let all_strings = value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string));
            if !all_strings {
                return Err(bad("a list of strings"));
            }
        }
        Kind::Object(fields) => {
            let object = value.as_object().ok_or_else(|| bad("an object"))?;
            if !fields.is_empty() {
                check_fields(tool, &format!("{name}."), fields, object)?;
            }
        }
    }
    Ok(())
}

/// A result body that says `ok: false` (the timeline's read tools answer refusals so) with
/// its top-level strings (the message, and echoes of the request such as `timezone`) cut like
/// [`ToolError`] messages.
fn bound_refusal(mut body: Value) -> Value {
    if body["ok"] == false
        && let Some(fields) = body.as_object_mut()
    {
        for value in fields.values_mut() {
            if let Value::String(text) = value {
                *text = coral::bound_message(std::mem::take(text));
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_portable() {
        for t in tools() {
            let s = t.input_schema().to_string();
            assert!(
                !s.contains("uint") && !s.contains("null"),
                "{}: {s}",
                t.name
            );
            // Bilingual: Chinese and English words.
            assert!(
                t.description
                    .chars()
                    .any(|c| ('\u{4e00}'..='\u{9fff}').contains(&c))
            );
            assert!(t.description.split(' ').filter(|w| w.is_ascii()).count() >= 3);
        }
    }

    #[test]
    fn every_builtin_tool_is_annotated_and_programs_can_annotate_theirs() {
        let mut registry = Registry::builtin();
        for t in tools() {
            let a = registry
                .annotations(t.name)
                .unwrap_or_else(|| panic!("{} has no annotations", t.name));
            assert!(!(a.read_only && a.destructive), "{}", t.name);
        }
        // The table names no tool that does not exist.
        let hint = Annotations::read_only("Echo / 回显");
        assert!(matches!(
            registry.annotate("no_such_tool", hint),
            Err(ToolError::UnknownTool(_))
        ));
        registry
            .register(ToolDef::new("echo", "Echo. 回显。", &[], |_, _| {
                Ok(json!({}))
            }))
            .unwrap();
        assert_eq!(registry.annotations("echo"), None);
        registry.annotate("echo", hint).unwrap();
        assert_eq!(registry.annotations("echo"), Some(hint));
    }

    #[test]
    fn names_match_the_original_registry() {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../fixtures/compat/coral_test_vectors.json"
        );
        let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        let original = data["mcp_tools_in_registry_order"].as_array().unwrap();
        // Every tool we have keeps the original's argument names and required list.
        for t in tools() {
            let Some(o) = original.iter().find(|o| o["name"] == t.name) else {
                continue;
            };
            let ours = t.input_schema();
            for (arg, _) in o["inputSchema"]["properties"].as_object().unwrap() {
                assert!(
                    ours["properties"].get(arg).is_some(),
                    "{} lost {arg}",
                    t.name
                );
            }
            assert_eq!(
                ours.get("required").cloned().unwrap_or(json!([])),
                o["inputSchema"]
                    .get("required")
                    .cloned()
                    .unwrap_or(json!([])),
                "{}",
                t.name
            );
        }
    }
}
