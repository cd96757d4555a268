//! Tool definitions encoded once per tool set.
//!
//! The tool schemas are the bulk of a request body, and every request of an agent sends the
//! same set, as do its siblings (each child agent of a fan-out has its own copy of the same
//! specs). Encoding them was the largest part of building a request (SPEC P1), so each wire
//! format keeps the JSON of the tool sets it encoded last and reuses it for a request whose
//! tools are the same `Arc` or equal to a remembered set. Equal specs always encode to the same
//! bytes, so a reused encoding is exactly what encoding afresh would produce.

use std::sync::{Arc, Mutex};

use cadre_protocol::ToolSpec;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use crate::error::LlmError;

/// How many tool sets are remembered: enough for a parent, its children and a read-only
/// variant without evicting each other.
const ENTRIES: usize = 4;

/// Already encoded JSON, written into a body as it is.
#[derive(Debug, Clone)]
pub struct Json(Arc<RawValue>);

impl Serialize for Json {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// The encodings of the tool sets seen last, most recently used first.
#[derive(Debug, Default)]
pub struct EncodedTools {
    entries: Mutex<Vec<(Arc<[ToolSpec]>, Json)>>,
}

impl EncodedTools {
    pub const fn new() -> Self {
        EncodedTools {
            entries: Mutex::new(Vec::new()),
        }
    }

    /// The JSON of `encode()`, the wire form of `tools`; reused when this tool set was encoded
    /// before.
    pub fn get<T: Serialize>(
        &self,
        tools: &Arc<[ToolSpec]>,
        encode: impl FnOnce() -> T,
    ) -> Result<Json, LlmError> {
        if let Some(json) = self.lookup(tools) {
            return Ok(json);
        }
        let raw = serde_json::value::to_raw_value(&encode())
            .map_err(|e| LlmError::Fatal(format!("cannot encode the tools: {e}")))?;
        let json = Json(Arc::from(raw));
        self.remember(tools, &json);
        Ok(json)
    }

    fn lookup(&self, tools: &Arc<[ToolSpec]>) -> Option<Json> {
        // A poisoned lock only costs the reuse: the tools are encoded afresh.
        let mut entries = self.entries.lock().ok()?;
        let pos = entries
            .iter()
            .position(|(set, _)| Arc::ptr_eq(set, tools) || **set == **tools)?;
        let entry = entries.remove(pos);
        let json = entry.1.clone();
        entries.insert(0, entry);
        Some(json)
    }

    fn remember(&self, tools: &Arc<[ToolSpec]>, json: &Json) {
        if let Ok(mut entries) = self.entries.lock() {
            entries.insert(0, (Arc::clone(tools), json.clone()));
            entries.truncate(ENTRIES);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::cell::Cell;

    use serde_json::json;

    use super::*;

    fn set(names: &[&str]) -> Arc<[ToolSpec]> {
        names
            .iter()
            .map(|n| ToolSpec {
                name: (*n).into(),
                description: format!("the \"{n}\" tool"),
                parameters: json!({"type": "object", "properties": {"path": {"type": "string"}}}),
            })
            .collect()
    }

    /// Encode through the cache, counting real encodings.
    fn encode(cache: &EncodedTools, tools: &Arc<[ToolSpec]>, count: &Cell<u32>) -> String {
        let json = cache
            .get(tools, || {
                count.set(count.get() + 1);
                tools.to_vec()
            })
            .unwrap();
        json.0.get().to_string()
    }

    #[test]
    fn an_equal_set_reuses_the_encoding_and_a_different_one_does_not() {
        let cache = EncodedTools::new();
        let count = Cell::new(0);
        let a = set(&["read", "bash"]);
        let first = encode(&cache, &a, &count);
        assert_eq!(first, serde_json::to_string(&*a).unwrap());
        assert_eq!(encode(&cache, &a, &count), first);
        // A separate but equal copy (a sibling agent's).
        assert_eq!(encode(&cache, &set(&["read", "bash"]), &count), first);
        assert_eq!(count.get(), 1);
        let b = set(&["read"]);
        assert_eq!(
            encode(&cache, &b, &count),
            serde_json::to_string(&*b).unwrap()
        );
        assert_eq!(count.get(), 2);
        assert_eq!(encode(&cache, &a, &count), first);
        assert_eq!(count.get(), 2);
    }

    #[test]
    fn the_least_recently_used_set_is_forgotten() {
        let cache = EncodedTools::new();
        let count = Cell::new(0);
        let names = ["a", "b", "c", "d", "e"];
        for n in names {
            encode(&cache, &set(&[n]), &count);
        }
        assert_eq!(count.get(), 5);
        // "a" was evicted by "e"; "b" to "e" are still known.
        for n in &names[1..] {
            encode(&cache, &set(&[n]), &count);
        }
        assert_eq!(count.get(), 5);
        encode(&cache, &set(&["a"]), &count);
        assert_eq!(count.get(), 6);
    }

    #[test]
    fn a_changed_schema_is_encoded_afresh() {
        let cache = EncodedTools::new();
        let count = Cell::new(0);
        let a = set(&["read"]);
        encode(&cache, &a, &count);
        let mut changed = a.to_vec();
        changed[0].parameters["properties"]["path"]["type"] = json!("integer");
        let changed: Arc<[ToolSpec]> = changed.into();
        let json = encode(&cache, &changed, &count);
        assert!(json.contains("integer"), "{json}");
        assert_eq!(count.get(), 2);
    }
}
