//! The Responses input checks the service makes before it generates anything, each answered
//! with HTTP 400 in its error shape. They catch the client mistakes that only show on the real
//! service: reasoning items that cannot be resumed, and unpaired function calls and outputs.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::reasoning;

/// The 400 body for the first problem in `body`, or `None` when the input is acceptable.
pub(crate) fn check(body: &Value) -> Option<String> {
    if let Some(previous) = body.get("previous_response_id").and_then(Value::as_str) {
        // Nothing is stored here, so there is nothing to continue from.
        return Some(invalid(
            &format!("Previous response with id '{previous}' not found."),
            "previous_response_id",
            Some("previous_response_not_found"),
        ));
    }
    let items = body.get("input").and_then(Value::as_array)?;
    let stored = body.get("store").and_then(Value::as_bool) != Some(false);
    let field = |item: &Value, key: &str| -> String {
        item.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut calls = Vec::new();
    let mut outputs = HashSet::new();
    for item in items {
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                let id = field(item, "id");
                match item.get("encrypted_content").and_then(Value::as_str) {
                    Some(content) => {
                        let sealed = reasoning::decrypt(content);
                        if sealed.is_none_or(|(sealed_id, _)| sealed_id != id) {
                            return Some(invalid(
                                &format!(
                                    "The encrypted content for item {id} could not be verified."
                                ),
                                "input",
                                Some("invalid_encrypted_content"),
                            ));
                        }
                    }
                    None if !stored => {
                        return Some(invalid(
                            &format!(
                                "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
                            ),
                            "input",
                            None,
                        ));
                    }
                    None => {}
                }
            }
            Some("function_call") => calls.push(field(item, "call_id")),
            Some("function_call_output") => {
                let call_id = field(item, "call_id");
                if !calls.contains(&call_id) {
                    return Some(invalid(
                        &format!(
                            "No tool call found for function call output with call_id {call_id}."
                        ),
                        "input",
                        None,
                    ));
                }
                outputs.insert(call_id);
            }
            _ => {}
        }
    }
    calls
        .into_iter()
        .find(|id| !outputs.contains(id))
        .map(|id| {
            invalid(
                &format!("No tool output found for function call {id}."),
                "input",
                None,
            )
        })
}

fn invalid(message: &str, param: &str, code: Option<&str>) -> String {
    json!({"error": {
        "message": message, "type": "invalid_request_error", "param": param, "code": code,
    }})
    .to_string()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn message(body: &Value) -> Option<String> {
        check(body).map(|b| {
            let v: Value = serde_json::from_str(&b).unwrap();
            assert_eq!(v["error"]["type"], "invalid_request_error");
            v["error"]["message"].as_str().unwrap().to_string()
        })
    }

    #[test]
    fn accepts_paired_calls_and_issued_reasoning() {
        let sealed = reasoning::encrypt("rs_1", "plan");
        let body = json!({"store": false, "input": [
            {"role": "user", "content": "hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": sealed},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"}
        ]});
        assert_eq!(message(&body), None);
        assert_eq!(message(&json!({"input": "just text"})), None);
        assert_eq!(message(&json!({})), None);
        // Stored responses may name reasoning items by id alone.
        let body = json!({"input": [{"type": "reasoning", "id": "rs_1", "summary": []}]});
        assert_eq!(message(&body), None);
    }

    #[test]
    fn rejects_what_the_service_rejects() {
        let sealed = reasoning::encrypt("rs_1", "plan");
        let cases = [
            (
                json!({"input": [{"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": sealed}]}),
                "could not be verified",
            ),
            (
                json!({"input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABxyz"}]}),
                "could not be verified",
            ),
            (
                json!({"store": false, "input": [{"type": "reasoning", "id": "rs_1", "summary": []}]}),
                "Items are not persisted",
            ),
            (
                json!({"input": [{"type": "function_call_output", "call_id": "c9", "output": "x"}]}),
                "No tool call found for function call output with call_id c9.",
            ),
            (
                json!({"input": [{"type": "function_call", "call_id": "c1", "name": "n", "arguments": "{}"}]}),
                "No tool output found for function call c1.",
            ),
            (
                json!({"previous_response_id": "resp_1", "input": "hi"}),
                "Previous response with id 'resp_1' not found.",
            ),
        ];
        for (body, expected) in cases {
            let got = message(&body).unwrap_or_default();
            assert!(got.contains(expected), "{body}: {got}");
        }
    }
}
