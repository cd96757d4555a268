//! Reading tool arguments sent by the model.
//!
//! Models send garbage sometimes: a JSON string instead of an object (when their arguments were
//! not valid JSON), numbers as strings, a missing field. Every problem becomes an [`ArgError`]
//! that says exactly what is wrong, so the model can fix its call; nothing here panics.
//!
//! [`Args::normalize`] turns a call's arguments into the one object every tool reads. Whoever
//! checks a call before it runs (allowlists, scopes, budgets) checks that object and hands the
//! same object to the tool, so a check can never read other arguments than the tool does (a
//! path hidden in a JSON-encoded string, for example).

use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Value};
use thiserror::Error;

use crate::registry::ToolOutput;

#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ArgError {
    #[error("the arguments are not valid JSON ({0}); send a JSON object")]
    NotJson(String),
    #[error("the arguments must be a JSON object, got {0}")]
    NotObject(String),
    #[error("the arguments are ambiguous ({0}); send each argument once")]
    Ambiguous(String),
    #[error("missing required argument `{name}` ({expected})")]
    Missing {
        name: String,
        expected: &'static str,
    },
    #[error("argument `{name}` must be {expected}, got {got}")]
    WrongType {
        name: String,
        expected: &'static str,
        got: String,
    },
}

impl ArgError {
    /// The error as the result the model sees.
    pub fn into_output(self, tool: &str) -> ToolOutput {
        ToolOutput::error(format!("Invalid arguments for {tool}: {self}"))
    }

    pub(crate) fn wrong(name: &str, expected: &'static str, got: &Value) -> Self {
        ArgError::WrongType {
            name: name.to_string(),
            expected,
            got: describe(got),
        }
    }
}

/// A short description of a JSON value for error messages.
pub fn describe(value: &Value) -> String {
    match value {
        Value::Null => "null".to_string(),
        Value::Bool(b) => format!("boolean {b}"),
        Value::Number(n) => format!("number {n}"),
        Value::String(s) => {
            let short: String = s.chars().take(40).collect();
            if short.len() < s.len() {
                format!("string {short:?}…")
            } else {
                format!("string {short:?}")
            }
        }
        Value::Array(_) => "an array".to_string(),
        Value::Object(_) => "an object".to_string(),
    }
}

/// The argument object of one call.
#[derive(Debug, Clone, Default)]
pub struct Args(Map<String, Value>);

impl Args {
    /// Accepts an object, `null`/empty string (no arguments), or a string holding a JSON object.
    /// A string whose object names a key twice is refused: which of the two a reader takes
    /// depends on the reader, and every reader must see the same call.
    pub fn parse(value: Value) -> Result<Args, ArgError> {
        match value {
            Value::Object(map) => Ok(Args(map)),
            Value::Null => Ok(Args::default()),
            Value::String(text) => {
                if text.trim().is_empty() {
                    return Ok(Args::default());
                }
                match serde_json::from_str::<Unique>(&text) {
                    Ok(Unique(Value::Object(map))) => Ok(Args(map)),
                    Ok(Unique(other)) => Err(ArgError::NotObject(describe(&other))),
                    // The only data error `Unique` raises is a repeated key; the rest is syntax.
                    Err(e) if e.is_data() => Err(ArgError::Ambiguous(e.to_string())),
                    Err(e) => Err(ArgError::NotJson(e.to_string())),
                }
            }
            other => Err(ArgError::NotObject(describe(&other))),
        }
    }

    /// The arguments as the object the tools read: what [`Args::parse`] accepts, as a JSON
    /// object. Checks made before a call runs read this, and the tool gets this same value.
    pub fn normalize(value: Value) -> Result<Value, ArgError> {
        Args::parse(value).map(Args::into_value)
    }

    pub fn into_value(self) -> Value {
        Value::Object(self.0)
    }

    /// The raw value; `null` counts as absent.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.0.get(name).filter(|v| !v.is_null())
    }

    pub fn required_str(&self, name: &str) -> Result<String, ArgError> {
        match self.get(name) {
            None => Err(ArgError::Missing {
                name: name.to_string(),
                expected: "a string",
            }),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(ArgError::wrong(name, "a string", other)),
        }
    }

    pub fn optional_str(&self, name: &str) -> Result<Option<String>, ArgError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(other) => Err(ArgError::wrong(name, "a string", other)),
        }
    }

    /// The `path` a listing or search tool starts from: the working directory when absent.
    pub fn path_or_cwd(&self) -> Result<String, ArgError> {
        Ok(self.optional_str("path")?.unwrap_or_else(|| ".".into()))
    }

    /// A whole non-negative number. Integral floats (`10.0`) and numeric strings (`"10"`) are
    /// accepted because models send them.
    pub fn optional_u64(&self, name: &str) -> Result<Option<u64>, ArgError> {
        const EXPECTED: &str = "a non-negative whole number";
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        match loose_number(value) {
            Some(n) if n.is_finite() && n >= 0.0 && n.fract() == 0.0 && n <= u64::MAX as f64 => {
                Ok(Some(n as u64))
            }
            _ => Err(ArgError::wrong(name, EXPECTED, value)),
        }
    }

    /// A finite non-negative number (seconds, for example).
    pub fn optional_seconds(&self, name: &str) -> Result<Option<f64>, ArgError> {
        const EXPECTED: &str = "a non-negative number of seconds";
        let Some(value) = self.get(name) else {
            return Ok(None);
        };
        match loose_number(value) {
            Some(n) if n.is_finite() && n >= 0.0 => Ok(Some(n)),
            _ => Err(ArgError::wrong(name, EXPECTED, value)),
        }
    }

    /// A boolean; `"true"`/`"false"` strings are accepted.
    pub fn optional_bool(&self, name: &str) -> Result<Option<bool>, ArgError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("true") => Ok(Some(true)),
            Some(Value::String(s)) if s.eq_ignore_ascii_case("false") => Ok(Some(false)),
            Some(other) => Err(ArgError::wrong(name, "a boolean", other)),
        }
    }

    /// A positive limit, or the default when absent.
    pub fn limit(&self, name: &str, default: u64) -> Result<usize, ArgError> {
        match self.optional_u64(name)? {
            None => Ok(usize::try_from(default).unwrap_or(usize::MAX)),
            Some(0) => Err(ArgError::WrongType {
                name: name.to_string(),
                expected: "at least 1",
                got: "0".to_string(),
            }),
            Some(n) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        }
    }
}

/// A JSON value read without accepting an object that names one key twice, at any depth
/// (`serde_json::Value` silently keeps the last one).
struct Unique(Value);

impl<'de> Deserialize<'de> for Unique {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(UniqueVisitor)
    }
}

struct UniqueVisitor;

impl<'de> Visitor<'de> for UniqueVisitor {
    type Value = Unique;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Unique, E> {
        Ok(Unique(Value::Bool(v)))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Unique, E> {
        Ok(Unique(Value::from(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Unique, E> {
        Ok(Unique(Value::from(v)))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Unique, E> {
        // JSON text has no NaN or infinity, so `from` never turns this into null.
        Ok(Unique(Value::from(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Unique, E> {
        Ok(Unique(Value::String(v.to_string())))
    }

    fn visit_string<E>(self, v: String) -> Result<Unique, E> {
        Ok(Unique(Value::String(v)))
    }

    fn visit_unit<E>(self) -> Result<Unique, E> {
        Ok(Unique(Value::Null))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Unique, A::Error> {
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Unique(Value::Array(items)))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Unique, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if out.contains_key(&key) {
                return Err(de::Error::custom(format_args!(
                    "the key {key:?} appears more than once"
                )));
            }
            let Unique(value) = map.next_value()?;
            out.insert(key, value);
        }
        Ok(Unique(Value::Object(out)))
    }
}

/// A number sent as a JSON number or as a numeric string (models send both).
fn loose_number(value: &Value) -> Option<f64> {
    match value {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse::<f64>().ok(),
        _ => None,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses_objects_strings_and_null() {
        let a = Args::parse(json!({"path": "x"})).unwrap();
        assert_eq!(a.required_str("path").unwrap(), "x");
        let a = Args::parse(json!("{\"path\": \"y\"}")).unwrap();
        assert_eq!(a.required_str("path").unwrap(), "y");
        assert!(Args::parse(Value::Null).unwrap().get("path").is_none());
        assert!(Args::parse(json!("  ")).unwrap().get("path").is_none());
    }

    #[test]
    fn rejects_non_objects() {
        assert_eq!(
            Args::parse(json!([1])).unwrap_err(),
            ArgError::NotObject("an array".into())
        );
        assert!(matches!(
            Args::parse(json!("{\"path\": ")).unwrap_err(),
            ArgError::NotJson(_)
        ));
        assert_eq!(
            Args::parse(json!("42")).unwrap_err(),
            ArgError::NotObject("number 42".into())
        );
        assert_eq!(
            Args::parse(json!(true)).unwrap_err().to_string(),
            "the arguments must be a JSON object, got boolean true"
        );
    }

    #[test]
    fn normalising_gives_the_object_the_tools_read() {
        let direct = json!({"path": "/etc/passwd", "limit": "5"});
        assert_eq!(Args::normalize(direct.clone()).unwrap(), direct);
        assert_eq!(
            Args::normalize(json!("{\"path\": \"/etc/passwd\", \"limit\": \"5\"}")).unwrap(),
            direct
        );
        assert_eq!(Args::normalize(Value::Null).unwrap(), json!({}));
        assert_eq!(Args::normalize(json!(" ")).unwrap(), json!({}));
        // Normalising twice changes nothing: a checked object reads the same to the tool.
        let once = Args::normalize(json!("{\"a\": [1, {\"b\": null}]}")).unwrap();
        assert_eq!(Args::normalize(once.clone()).unwrap(), once);
        assert!(Args::normalize(json!("\"{\\\"path\\\": 1}\"")).is_err());
        assert!(Args::normalize(json!(["path"])).is_err());
    }

    #[test]
    fn a_key_named_twice_is_ambiguous_at_any_depth() {
        for text in [
            r#"{"path": "in/a", "path": "/etc/passwd"}"#,
            r#"{"edits": [{"oldText": "a", "oldText": "b", "newText": "c"}]}"#,
        ] {
            let e = Args::parse(json!(text)).unwrap_err();
            assert!(matches!(e, ArgError::Ambiguous(_)), "{text}: {e:?}");
            assert!(e.to_string().contains("more than once"), "{e}");
        }
        // The same key in sibling objects is not a repeat.
        let a = Args::parse(json!(r#"{"x": {"k": 1}, "y": {"k": 2}}"#)).unwrap();
        assert_eq!(a.get("y"), Some(&json!({"k": 2})));
        // Numbers keep their kind through the strict reading.
        let a = Args::parse(json!(r#"{"i": -3, "u": 18446744073709551615, "f": 1.5}"#)).unwrap();
        assert_eq!(a.into_value(), json!({"i": -3, "u": u64::MAX, "f": 1.5}));
    }

    #[test]
    fn listing_tools_start_from_path_or_the_cwd() {
        assert_eq!(Args::default().path_or_cwd().unwrap(), ".");
        let a = Args::parse(json!({"path": null})).unwrap();
        assert_eq!(a.path_or_cwd().unwrap(), ".");
        let a = Args::parse(json!({"path": ["/etc"]})).unwrap();
        assert!(a.path_or_cwd().is_err());
    }

    #[test]
    fn string_fields() {
        let a = Args::parse(json!({"p": 3, "q": null})).unwrap();
        assert_eq!(
            a.required_str("p").unwrap_err().to_string(),
            "argument `p` must be a string, got number 3"
        );
        assert_eq!(
            a.required_str("q").unwrap_err().to_string(),
            "missing required argument `q` (a string)"
        );
        assert_eq!(a.optional_str("q").unwrap(), None);
        assert!(a.optional_str("p").is_err());
    }

    #[test]
    fn numbers_are_lenient_but_checked() {
        let a = Args::parse(json!({
            "a": 3, "b": 3.0, "c": "7", "d": -1, "e": 1.5, "f": "x", "g": true, "h": 0
        }))
        .unwrap();
        assert_eq!(a.optional_u64("a").unwrap(), Some(3));
        assert_eq!(a.optional_u64("b").unwrap(), Some(3));
        assert_eq!(a.optional_u64("c").unwrap(), Some(7));
        assert!(a.optional_u64("d").is_err());
        assert!(a.optional_u64("e").is_err());
        assert_eq!(
            a.optional_u64("f").unwrap_err().to_string(),
            "argument `f` must be a non-negative whole number, got string \"x\""
        );
        assert!(a.optional_u64("g").is_err());
        assert_eq!(a.optional_u64("missing").unwrap(), None);
        assert_eq!(a.optional_seconds("e").unwrap(), Some(1.5));
        assert!(a.optional_seconds("d").is_err());
        assert_eq!(a.limit("missing", 9).unwrap(), 9);
        assert_eq!(a.limit("a", 9).unwrap(), 3);
        assert!(a.limit("h", 9).is_err());
    }

    #[test]
    fn booleans() {
        let a = Args::parse(json!({"a": true, "b": "false", "c": 1})).unwrap();
        assert_eq!(a.optional_bool("a").unwrap(), Some(true));
        assert_eq!(a.optional_bool("b").unwrap(), Some(false));
        assert!(a.optional_bool("c").is_err());
        assert_eq!(a.optional_bool("none").unwrap(), None);
    }

    #[test]
    fn long_strings_are_shortened_in_errors() {
        let long = "x".repeat(100);
        let d = describe(&json!(long));
        assert!(d.ends_with('…'));
        assert!(d.len() < 60);
    }
}
