//! Lenient field types for decoding streamed events into `#[derive(Deserialize)]` structs.
//!
//! The stream decoders have always read event JSON leniently: a field that is missing or holds
//! another JSON type than expected counts as absent, and unknown fields are skipped. A plain
//! `Option<&str>` field would instead fail the whole event on `"text": 3`, and a plain `&str`
//! cannot hold a string with escapes. These wrappers accept any JSON value, keep it only when it
//! has the expected type, and borrow strings from the event data whenever they hold no escapes,
//! so decoding an event allocates nothing but the rare escaped string.

use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// A string field; `None` when absent or of another JSON type.
#[derive(Debug, Default)]
pub struct Str<'a>(pub Option<Cow<'a, str>>);

impl Str<'_> {
    pub fn get(&self) -> Option<&str> {
        self.0.as_deref()
    }

    /// The string, or `""` when there is none (what the decoders treat as "nothing").
    pub fn or_empty(&self) -> &str {
        self.get().unwrap_or("")
    }
}

/// A non-negative integer field; `None` when absent, negative, fractional or not a number.
#[derive(Debug, Default, Clone, Copy)]
pub struct Num(pub Option<u64>);

/// An object field read as `T`; `None` when absent or not an object.
#[derive(Debug)]
pub struct Obj<T>(pub Option<T>);

impl<T> Default for Obj<T> {
    fn default() -> Self {
        Obj(None)
    }
}

/// An array field of `T`s; `None` when absent or not an array.
#[derive(Debug)]
pub struct Arr<T>(pub Option<Vec<T>>);

impl<T> Default for Arr<T> {
    fn default() -> Self {
        Arr(None)
    }
}

/// A field that is either a string or an object (tool-call arguments); anything else is absent.
#[derive(Debug, Default)]
pub enum StrOrObject<'a> {
    #[default]
    Absent,
    Str(Cow<'a, str>),
    Object(Value),
}

/// What one lenient field keeps of a JSON value. Each kind overrides the JSON types it accepts;
/// every other type is consumed and yields the default (absent).
trait Pick<'de>: Default {
    fn string(_: Cow<'de, str>) -> Self {
        Self::default()
    }

    fn unsigned(_: u64) -> Self {
        Self::default()
    }

    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Self, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }

    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Self::default())
    }
}

impl<'de: 'a, 'a> Pick<'de> for Str<'a> {
    fn string(s: Cow<'de, str>) -> Self {
        Str(Some(s))
    }
}

impl<'de> Pick<'de> for Num {
    fn unsigned(n: u64) -> Self {
        Num(Some(n))
    }
}

impl<'de, T: Deserialize<'de>> Pick<'de> for Obj<T> {
    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        T::deserialize(MapAccessDeserializer::new(map)).map(|t| Obj(Some(t)))
    }
}

impl<'de, T: Deserialize<'de>> Pick<'de> for Arr<T> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Self, A::Error> {
        let mut items = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(item) = seq.next_element()? {
            items.push(item);
        }
        Ok(Arr(Some(items)))
    }
}

impl<'de: 'a, 'a> Pick<'de> for StrOrObject<'a> {
    fn string(s: Cow<'de, str>) -> Self {
        StrOrObject::Str(s)
    }

    fn map<A: MapAccess<'de>>(map: A) -> Result<Self, A::Error> {
        Value::deserialize(MapAccessDeserializer::new(map)).map(StrOrObject::Object)
    }
}

struct PickVisitor<T>(PhantomData<T>);

impl<'de, T: Pick<'de>> Visitor<'de> for PickVisitor<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<T, E> {
        Ok(T::string(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v.to_owned())))
    }

    fn visit_string<E>(self, v: String) -> Result<T, E> {
        Ok(T::string(Cow::Owned(v)))
    }

    fn visit_u64<E>(self, v: u64) -> Result<T, E> {
        Ok(T::unsigned(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<T, E> {
        Ok(u64::try_from(v).map_or_else(|_| T::default(), T::unsigned))
    }

    fn visit_f64<E>(self, _: f64) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_bool<E>(self, _: bool) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_unit<E>(self) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_none<E>(self) -> Result<T, E> {
        Ok(T::default())
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
        T::map(map)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<T, A::Error> {
        T::seq(seq)
    }
}

fn pick<'de, D: Deserializer<'de>, T: Pick<'de>>(d: D) -> Result<T, D::Error> {
    d.deserialize_any(PickVisitor(PhantomData))
}

impl<'de: 'a, 'a> Deserialize<'de> for Str<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        pick(d)
    }
}

impl<'de> Deserialize<'de> for Num {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        pick(d)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Obj<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        pick(d)
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Arr<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        pick(d)
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for StrOrObject<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        pick(d)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct Probe<'a> {
        #[serde(borrow)]
        s: Str<'a>,
        n: Num,
        o: Obj<Inner>,
        a: Arr<Num>,
        #[serde(borrow)]
        either: StrOrObject<'a>,
    }

    #[derive(Debug, Default, Deserialize)]
    #[serde(default)]
    struct Inner {
        n: Num,
    }

    fn probe(json: &str) -> Probe<'_> {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn expected_types_are_kept_and_plain_strings_borrowed() {
        let p = probe(
            r#"{"s": "plain", "n": 7, "o": {"n": 1, "x": [1]}, "a": [1, "x", 2], "either": "raw"}"#,
        );
        assert!(matches!(p.s.0, Some(Cow::Borrowed("plain"))));
        assert_eq!(p.n.0, Some(7));
        assert_eq!(p.o.0.unwrap().n.0, Some(1));
        let items: Vec<_> = p.a.0.unwrap().iter().map(|n| n.0).collect();
        assert_eq!(items, vec![Some(1), None, Some(2)]);
        assert!(matches!(p.either, StrOrObject::Str(Cow::Borrowed("raw"))));
    }

    #[test]
    fn escaped_strings_are_decoded() {
        let p = probe(r#"{"s": "a\"b\\c\n\u00e9\ud83d\ude00"}"#);
        assert_eq!(p.s.get(), Some("a\"b\\c\né😀"));
    }

    #[test]
    fn other_types_and_missing_fields_are_absent() {
        for json in [
            "{}",
            r#"{"s": 1, "n": "7", "o": [1, {"n": 2}], "a": {"0": 1}, "either": 5}"#,
            r#"{"s": null, "n": -3, "o": null, "a": "x", "either": [{}]}"#,
            r#"{"s": {"t": "x"}, "n": 1.5, "o": true, "a": null, "either": null, "z": {"deep": [[]]}}"#,
        ] {
            let p = probe(json);
            assert!(p.s.get().is_none(), "{json}");
            assert_eq!(p.s.or_empty(), "");
            assert!(p.n.0.is_none(), "{json}");
            assert!(p.o.0.is_none(), "{json}");
            assert!(p.a.0.is_none(), "{json}");
            assert!(matches!(p.either, StrOrObject::Absent), "{json}");
        }
    }

    #[test]
    fn objects_are_kept_whole_where_asked() {
        let p = probe(r#"{"either": {"b": [1, 2], "a": "x"}}"#);
        let StrOrObject::Object(v) = p.either else {
            panic!("not an object");
        };
        assert_eq!(v, serde_json::json!({"a": "x", "b": [1, 2]}));
    }

    #[test]
    fn broken_json_inside_a_skipped_value_is_still_an_error() {
        assert!(serde_json::from_str::<Probe>(r#"{"s": [1, }"#).is_err());
        assert!(serde_json::from_str::<Probe>(r#"{"z": {"a" 1}}"#).is_err());
    }

    #[test]
    fn the_top_level_can_be_checked_for_an_object() {
        let top = |json: &str| serde_json::from_str::<Obj<Inner>>(json).map(|o| o.0.is_some());
        assert!(top(r#"{"n": 1}"#).unwrap());
        assert!(!top("[1, 2]").unwrap());
        assert!(!top("42").unwrap());
        assert!(top("nonsense").is_err());
    }
}
