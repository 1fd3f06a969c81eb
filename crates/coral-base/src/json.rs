//! The words errors use for JSON kinds ("expected a whole number, got a string").

use serde_json::Value;

/// What kind of JSON value `v` is, as an error says it.
pub fn kind_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "true or false",
        Value::Number(n) if n.is_f64() => "a number",
        Value::Number(_) => "a whole number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
