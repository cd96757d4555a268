//! A small JSON Schema validator for structured output (SPEC V8): the common subset, checked
//! strictly, with errors a model can act on.
//!
//! Supported assertions: `type` (a name or a list; `integer` is a number without a fraction),
//! `properties`, `required`, `additionalProperties` (boolean or schema), `items` (one schema),
//! `minItems`, `maxItems`, `enum`, `const`, `minimum`, `maximum`, `exclusiveMinimum`,
//! `exclusiveMaximum` (numbers), `minLength`, `maxLength` (in characters), `anyOf`, `oneOf`,
//! `allOf`, `not`, and the boolean schemas `true`/`false`. Annotations are accepted and ignored:
//! `title`, `description`, `default`, `examples`, `$schema`, `$id`, `$comment`, `format`
//! (not asserted), `readOnly`, `writeOnly`, `deprecated`.
//!
//! Anything else — `$ref`, `$defs`, `pattern`, `patternProperties`, `if`/`then`/`else`,
//! `uniqueItems`, `multipleOf`, `prefixItems`, `contains`, `propertyNames`, dependencies,
//! property counts, … — is **refused** by [`check_schema`] rather than silently ignored: a
//! schema this validator would not fully enforce must fail the launch (fail closed).

use serde_json::Value;

const ASSERTIONS: [&str; 19] = [
    "type",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "minItems",
    "maxItems",
    "enum",
    "const",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "anyOf",
    "oneOf",
    "allOf",
    "not",
];

const ANNOTATIONS: [&str; 11] = [
    "title",
    "description",
    "default",
    "examples",
    "$schema",
    "$id",
    "$comment",
    "format",
    "readOnly",
    "writeOnly",
    "deprecated",
];

const TYPES: [&str; 7] = [
    "null", "boolean", "object", "array", "number", "string", "integer",
];

/// Check that `schema` uses only what [`validate`] enforces. `Err` names the first problem.
pub fn check_schema(schema: &Value) -> Result<(), String> {
    check_at(schema, "#")
}

fn check_at(schema: &Value, at: &str) -> Result<(), String> {
    let obj = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(o) => o,
        _ => return Err(format!("{at}: a schema must be an object or a boolean")),
    };
    for (key, v) in obj {
        if ANNOTATIONS.contains(&key.as_str()) {
            continue;
        }
        if !ASSERTIONS.contains(&key.as_str()) {
            return Err(format!(
                "{at}: the keyword `{key}` is not supported (supported: {})",
                ASSERTIONS.join(", ")
            ));
        }
        let here = format!("{at}/{key}");
        match key.as_str() {
            "type" => {
                let names: Vec<&Value> = match v {
                    Value::Array(a) if !a.is_empty() => a.iter().collect(),
                    Value::String(_) => vec![v],
                    _ => return Err(format!("{here}: must be a type name or a list of them")),
                };
                for n in names {
                    if !n.as_str().is_some_and(|s| TYPES.contains(&s)) {
                        return Err(format!("{here}: unknown type {n}"));
                    }
                }
            }
            "properties" => {
                let Some(props) = v.as_object() else {
                    return Err(format!("{here}: must be an object"));
                };
                for (name, s) in props {
                    check_at(s, &format!("{here}/{name}"))?;
                }
            }
            "required" => {
                if !v.as_array().is_some_and(|a| a.iter().all(Value::is_string)) {
                    return Err(format!("{here}: must be a list of property names"));
                }
            }
            "additionalProperties" | "items" | "not" => check_at(v, &here)?,
            "anyOf" | "oneOf" | "allOf" => {
                let Some(list) = v.as_array().filter(|a| !a.is_empty()) else {
                    return Err(format!("{here}: must be a non-empty list of schemas"));
                };
                for (i, s) in list.iter().enumerate() {
                    check_at(s, &format!("{here}/{i}"))?;
                }
            }
            "enum" => {
                if !v.is_array() {
                    return Err(format!("{here}: must be a list"));
                }
            }
            "const" => {}
            "minimum" | "maximum" | "exclusiveMinimum" | "exclusiveMaximum" => {
                if !v.is_number() {
                    return Err(format!("{here}: must be a number"));
                }
            }
            _ => {
                if v.as_u64().is_none() {
                    return Err(format!("{here}: must be a non-negative integer"));
                }
            }
        }
    }
    Ok(())
}

/// Every way `value` breaks `schema` (empty = valid), each as `<path>: <problem>`. The schema
/// must have passed [`check_schema`].
pub fn validate(schema: &Value, value: &Value) -> Vec<String> {
    let mut errors = Vec::new();
    validate_at(schema, value, "$", &mut errors);
    errors
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
    }
}

fn is_type(v: &Value, name: &str) -> bool {
    match name {
        "integer" => v
            .as_f64()
            .is_some_and(|f| f.fract() == 0.0 && f.is_finite()),
        "number" => v.is_number(),
        other => type_name(v) == other,
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 60 {
        format!("{}…", s.chars().take(60).collect::<String>())
    } else {
        s
    }
}

fn validate_at(schema: &Value, value: &Value, at: &str, errors: &mut Vec<String>) {
    let obj = match schema {
        Value::Bool(true) => return,
        Value::Bool(false) => {
            errors.push(format!("{at}: no value is allowed here"));
            return;
        }
        Value::Object(o) => o,
        _ => return,
    };
    if let Some(t) = obj.get("type") {
        let names: Vec<&str> = match t {
            Value::String(s) => vec![s.as_str()],
            Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        if !names.iter().any(|n| is_type(value, n)) {
            errors.push(format!(
                "{at}: expected {}, got {}",
                names.join(" or "),
                type_name(value)
            ));
            return;
        }
    }
    if let Some(list) = obj.get("enum").and_then(Value::as_array)
        && !list.contains(value)
    {
        let allowed: Vec<String> = list.iter().map(short).collect();
        errors.push(format!(
            "{at}: {} is not one of {}",
            short(value),
            allowed.join(", ")
        ));
    }
    if let Some(c) = obj.get("const")
        && c != value
    {
        errors.push(format!("{at}: must be {}", short(c)));
    }
    if let Some(n) = value.as_f64() {
        let bound = |k: &str| obj.get(k).and_then(Value::as_f64);
        if let Some(m) = bound("minimum").filter(|m| n < *m) {
            errors.push(format!("{at}: {n} is less than the minimum {m}"));
        }
        if let Some(m) = bound("maximum").filter(|m| n > *m) {
            errors.push(format!("{at}: {n} is more than the maximum {m}"));
        }
        if let Some(m) = bound("exclusiveMinimum").filter(|m| n <= *m) {
            errors.push(format!("{at}: {n} must be more than {m}"));
        }
        if let Some(m) = bound("exclusiveMaximum").filter(|m| n >= *m) {
            errors.push(format!("{at}: {n} must be less than {m}"));
        }
    }
    if let Some(s) = value.as_str() {
        let len = s.chars().count() as u64;
        if let Some(m) = obj
            .get("minLength")
            .and_then(Value::as_u64)
            .filter(|m| len < *m)
        {
            errors.push(format!("{at}: {len} characters, at least {m} required"));
        }
        if let Some(m) = obj
            .get("maxLength")
            .and_then(Value::as_u64)
            .filter(|m| len > *m)
        {
            errors.push(format!("{at}: {len} characters, at most {m} allowed"));
        }
    }
    if let Some(items) = value.as_array() {
        let len = items.len() as u64;
        if let Some(m) = obj
            .get("minItems")
            .and_then(Value::as_u64)
            .filter(|m| len < *m)
        {
            errors.push(format!("{at}: {len} items, at least {m} required"));
        }
        if let Some(m) = obj
            .get("maxItems")
            .and_then(Value::as_u64)
            .filter(|m| len > *m)
        {
            errors.push(format!("{at}: {len} items, at most {m} allowed"));
        }
        if let Some(s) = obj.get("items") {
            for (i, item) in items.iter().enumerate() {
                validate_at(s, item, &format!("{at}[{i}]"), errors);
            }
        }
    }
    if let Some(map) = value.as_object() {
        let props = obj.get("properties").and_then(Value::as_object);
        if let Some(req) = obj.get("required").and_then(Value::as_array) {
            for name in req.iter().filter_map(Value::as_str) {
                if !map.contains_key(name) {
                    errors.push(format!("{at}: missing required property `{name}`"));
                }
            }
        }
        for (k, v) in map {
            let here = format!("{at}.{k}");
            match props.and_then(|p| p.get(k)) {
                Some(s) => validate_at(s, v, &here, errors),
                None => match obj.get("additionalProperties") {
                    Some(Value::Bool(false)) => {
                        errors.push(format!("{at}: property `{k}` is not allowed"))
                    }
                    Some(s) => validate_at(s, v, &here, errors),
                    None => {}
                },
            }
        }
    }
    if let Some(all) = obj.get("allOf").and_then(Value::as_array) {
        for s in all {
            validate_at(s, value, at, errors);
        }
    }
    if let Some(any) = obj.get("anyOf").and_then(Value::as_array)
        && !any.iter().any(|s| validate(s, value).is_empty())
    {
        errors.push(format!("{at}: matches none of the anyOf alternatives"));
    }
    if let Some(one) = obj.get("oneOf").and_then(Value::as_array) {
        let n = one.iter().filter(|s| validate(s, value).is_empty()).count();
        if n != 1 {
            errors.push(format!(
                "{at}: matches {n} of the oneOf alternatives; exactly one is required"
            ));
        }
    }
    if let Some(not) = obj.get("not")
        && validate(not, value).is_empty()
    {
        errors.push(format!("{at}: matches a schema it must not match"));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn errs(schema: Value, value: Value) -> Vec<String> {
        check_schema(&schema).unwrap();
        validate(&schema, &value)
    }

    #[test]
    fn unsupported_or_malformed_schemas_are_refused() {
        for (schema, want) in [
            (json!({"$ref": "#/x"}), "`$ref` is not supported"),
            (json!({"type": "string", "pattern": "^a"}), "`pattern`"),
            (
                json!({"properties": {"a": {"uniqueItems": true}}}),
                "#/properties/a",
            ),
            (json!({"items": {"if": {}}}), "`if`"),
            (json!({"anyOf": []}), "non-empty list"),
            (json!({"type": "text"}), "unknown type"),
            (json!({"required": "a"}), "list of property names"),
            (json!({"minLength": -1}), "non-negative integer"),
            (json!({"minimum": "1"}), "must be a number"),
            (json!({"nullable": true}), "`nullable`"),
            (json!(3), "object or a boolean"),
        ] {
            let e = check_schema(&schema).unwrap_err();
            assert!(e.contains(want), "{schema}: {e}");
        }
        for ok in [
            json!(true),
            json!({"title": "t", "description": "d", "format": "email", "type": "string"}),
            json!({"type": ["string", "null"]}),
        ] {
            check_schema(&ok).unwrap();
        }
    }

    #[test]
    fn objects_types_and_required() {
        let s = json!({
            "type": "object",
            "properties": {"name": {"type": "string"}, "n": {"type": "integer"}},
            "required": ["name", "n"],
            "additionalProperties": false
        });
        assert!(errs(s.clone(), json!({"name": "x", "n": 2})).is_empty());
        assert!(errs(s.clone(), json!({"name": "x", "n": 2.0})).is_empty());
        let e = errs(s.clone(), json!({"name": 1, "extra": true}));
        assert_eq!(
            e,
            [
                "$: missing required property `n`",
                "$.name: expected string, got integer",
                "$: property `extra` is not allowed"
            ]
        );
        assert_eq!(
            errs(s.clone(), json!({"name": "x", "n": 2.5})),
            ["$.n: expected integer, got number"]
        );
        assert_eq!(errs(s, json!([1])), ["$: expected object, got array"]);
        let open = json!({"additionalProperties": {"type": "number"}});
        assert_eq!(
            errs(open, json!({"a": "x"})),
            ["$.a: expected number, got string"]
        );
    }

    #[test]
    fn arrays_strings_numbers_enums() {
        let s = json!({"type": "array", "minItems": 1, "maxItems": 2,
            "items": {"type": "string", "minLength": 2, "maxLength": 3}});
        assert!(errs(s.clone(), json!(["ab"])).is_empty());
        assert_eq!(
            errs(s.clone(), json!([])),
            ["$: 0 items, at least 1 required"]
        );
        assert_eq!(
            errs(s.clone(), json!(["a", "abcd", "ab"])),
            [
                "$: 3 items, at most 2 allowed",
                "$[0]: 1 characters, at least 2 required",
                "$[1]: 4 characters, at most 3 allowed"
            ]
        );
        let n = json!({"type": "number", "minimum": 0, "maximum": 10, "exclusiveMaximum": 10});
        assert!(errs(n.clone(), json!(0)).is_empty());
        assert_eq!(
            errs(n.clone(), json!(-1)),
            ["$: -1 is less than the minimum 0"]
        );
        assert_eq!(errs(n, json!(10)), ["$: 10 must be less than 10"]);
        let e = json!({"enum": ["a", 1, null]});
        assert!(errs(e.clone(), json!(null)).is_empty());
        assert_eq!(
            errs(e, json!("b")),
            ["$: \"b\" is not one of \"a\", 1, null"]
        );
        assert_eq!(errs(json!({"const": 3}), json!(4)), ["$: must be 3"]);
        assert_eq!(
            errs(json!(false), json!(4)),
            ["$: no value is allowed here"]
        );
        // Lengths count characters, not bytes.
        assert!(errs(json!({"maxLength": 2}), json!("éé")).is_empty());
    }

    #[test]
    fn combinators() {
        let any = json!({"anyOf": [{"type": "string"}, {"type": "integer"}]});
        assert!(errs(any.clone(), json!(3)).is_empty());
        assert_eq!(
            errs(any, json!(true)),
            ["$: matches none of the anyOf alternatives"]
        );
        let one = json!({"oneOf": [{"type": "number"}, {"type": "integer"}]});
        assert!(errs(one.clone(), json!(1.5)).is_empty());
        assert_eq!(
            errs(one, json!(1)),
            ["$: matches 2 of the oneOf alternatives; exactly one is required"]
        );
        let all = json!({"allOf": [{"minimum": 1}, {"maximum": 2}]});
        assert_eq!(errs(all, json!(3)), ["$: 3 is more than the maximum 2"]);
        assert_eq!(
            errs(json!({"not": {"type": "null"}}), json!(null)),
            ["$: matches a schema it must not match"]
        );
    }
}
