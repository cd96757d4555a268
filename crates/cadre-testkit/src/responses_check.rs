//! The Responses input checks the service makes before it generates anything, each answered
//! with HTTP 400 in its error shape. They catch the client mistakes that only show on the real
//! service: reasoning items that cannot be resumed or stand alone, items sent back without the
//! reasoning item they were produced with, duplicate items, and unpaired function calls and
//! outputs.

use std::collections::{HashMap, HashSet};

use serde_json::{Value, json};

use crate::reasoning;

/// The 400 body for the first problem in `body`, or `None` when the input is acceptable.
/// `issued` maps the id of every output item this server produced after a reasoning item to
/// that reasoning item's id.
pub(crate) fn check(body: &Value, issued: &HashMap<String, String>) -> Option<String> {
    if let Some(previous) = body.get("previous_response_id").and_then(Value::as_str) {
        // Nothing is stored here, so there is nothing to continue from.
        return Some(invalid(
            &format!("Previous response with id '{previous}' not found."),
            "previous_response_id",
            Some("previous_response_not_found"),
        ));
    }
    let items = body.get("input").and_then(Value::as_array)?;
    if let Some(id) = duplicate_id(items) {
        return Some(invalid(
            &format!(
                "Duplicate item found with id {id}. Remove duplicate items from your input and try again."
            ),
            "input",
            None,
        ));
    }
    let stored = body.get("store").and_then(Value::as_bool) != Some(false);
    let mut calls = Vec::new();
    let mut outputs = HashSet::new();
    for (index, item) in items.iter().enumerate() {
        if let Some(problem) = missing_reasoning(items, index, issued) {
            return Some(problem);
        }
        match item.get("type").and_then(Value::as_str) {
            Some("reasoning") => {
                if let Some(problem) = unusable_reasoning(item, stored) {
                    return Some(problem);
                }
                if !followed_by_its_turn(&items[index + 1..]) {
                    return Some(invalid(
                        &format!(
                            "Item '{}' of type 'reasoning' was provided without its required following item.",
                            field(item, "id")
                        ),
                        "input",
                        None,
                    ));
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

fn field(item: &Value, key: &str) -> String {
    item.get(key)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}

/// The first item id that occurs twice in the input.
fn duplicate_id(items: &[Value]) -> Option<&str> {
    let mut seen = HashSet::new();
    items
        .iter()
        .filter_map(|item| item.get("id").and_then(Value::as_str))
        .find(|id| !seen.insert(*id))
}

/// A reasoning item the server cannot resume: encrypted content it did not issue for this id,
/// or none at all when nothing is stored.
fn unusable_reasoning(item: &Value, stored: bool) -> Option<String> {
    let id = field(item, "id");
    match item.get("encrypted_content").and_then(Value::as_str) {
        Some(content) => {
            let sealed = reasoning::decrypt(content);
            sealed
                .is_none_or(|(sealed_id, _)| sealed_id != id)
                .then(|| {
                    invalid(
                        &format!("The encrypted content for item {id} could not be verified."),
                        "input",
                        Some("invalid_encrypted_content"),
                    )
                })
        }
        None if !stored => Some(invalid(
            &format!(
                "Item with id '{id}' not found. Items are not persisted when `store` is set to false. Try again with `store` set to true, or remove this item from your input."
            ),
            "input",
            None,
        )),
        None => None,
    }
}

/// Whether a reasoning item is followed by what it was reasoning for: after any further
/// reasoning items, a function call or an assistant message. A user turn or the end of the
/// input right after it leaves the reasoning without its item.
fn followed_by_its_turn(rest: &[Value]) -> bool {
    rest.iter()
        .find(|item| kind(item) != "reasoning")
        .is_some_and(|item| match kind(item) {
            "function_call" => true,
            "message" => item.get("role").and_then(Value::as_str) == Some("assistant"),
            _ => false,
        })
}

/// An item's type; a message item may leave it out.
fn kind(item: &Value) -> &str {
    item.get("type")
        .and_then(Value::as_str)
        .unwrap_or(if item.get("role").is_some() {
            "message"
        } else {
            ""
        })
}

/// The 400 for the `index`-th item when it is one this server produced after a reasoning item
/// and that reasoning item does not come before it in the same turn (no user, system or
/// developer message between them).
fn missing_reasoning(
    items: &[Value],
    index: usize,
    issued: &HashMap<String, String>,
) -> Option<String> {
    let item = &items[index];
    let id = item.get("id").and_then(Value::as_str)?;
    let reasoning_id = issued.get(id)?;
    let found = items[..index]
        .iter()
        .rev()
        .take_while(|earlier| {
            !(kind(earlier) == "message"
                && earlier.get("role").and_then(Value::as_str) != Some("assistant"))
        })
        .any(|earlier| {
            kind(earlier) == "reasoning"
                && earlier.get("id").and_then(Value::as_str) == Some(reasoning_id)
        });
    (!found).then(|| {
        invalid(
            &format!(
                "Item '{id}' of type '{}' was provided without its required 'reasoning' item: '{reasoning_id}'.",
                kind(item)
            ),
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

    /// `fc_1` and `msg_1` were produced after reasoning item `rs_1`.
    fn issued() -> HashMap<String, String> {
        HashMap::from([
            ("fc_1".to_string(), "rs_1".to_string()),
            ("msg_1".to_string(), "rs_1".to_string()),
        ])
    }

    fn message(body: &Value) -> Option<String> {
        check(body, &issued()).map(|b| {
            let v: Value = serde_json::from_str(&b).unwrap();
            assert_eq!(v["error"]["type"], "invalid_request_error");
            v["error"]["message"].as_str().unwrap().to_string()
        })
    }

    fn user(text: &str) -> Value {
        json!({"role": "user", "content": [{"type": "input_text", "text": text}]})
    }

    fn rs(id: &str) -> Value {
        json!({"type": "reasoning", "id": id, "summary": [], "encrypted_content": reasoning::encrypt(id, "plan")})
    }

    fn call(id: Option<&str>, call_id: &str) -> Value {
        let mut item =
            json!({"type": "function_call", "call_id": call_id, "name": "read", "arguments": "{}"});
        if let Some(id) = id {
            item["id"] = id.into();
        }
        item
    }

    fn output(call_id: &str) -> Value {
        json!({"type": "function_call_output", "call_id": call_id, "output": "x"})
    }

    fn answer(id: Option<&str>) -> Value {
        let mut item = json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "done"}]});
        if let Some(id) = id {
            item["id"] = id.into();
        }
        item
    }

    #[test]
    fn accepts_paired_calls_and_issued_reasoning() {
        let accepted = [
            json!({"store": false, "input": [
                user("hi"), rs("rs_1"), call(Some("fc_1"), "c1"), output("c1"), user("more")
            ]}),
            // Parallel calls: the second call's reasoning is further back in the same turn.
            json!({"store": false, "input": [
                user("hi"), rs("rs_1"), answer(Some("msg_1")), call(None, "c0"), call(Some("fc_1"), "c1"),
                output("c0"), output("c1")
            ]}),
            // Several reasoning items in a row, then their item; a message without `type`.
            json!({"input": [user("hi"), rs("rs_0"), rs("rs_1"), {"role": "assistant", "content": "ok"}]}),
            // Items without ids, or with ids this server did not link to reasoning, stand alone.
            json!({"input": [user("hi"), call(Some("fc_9"), "c9"), output("c9"), answer(None)]}),
            json!({"input": "just text"}),
            json!({}),
            // Stored responses may name reasoning items by id alone.
            json!({"input": [{"type": "reasoning", "id": "rs_1", "summary": []}, answer(None)]}),
        ];
        for body in accepted {
            assert_eq!(message(&body), None, "{body}");
        }
    }

    #[test]
    fn rejects_what_the_service_rejects() {
        let sealed = reasoning::encrypt("rs_1", "plan");
        let cases = [
            (
                json!({"input": [{"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": sealed}, answer(None)]}),
                "could not be verified",
            ),
            (
                json!({"input": [{"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAAABxyz"}, answer(None)]}),
                "could not be verified",
            ),
            (
                json!({"store": false, "input": [{"type": "reasoning", "id": "rs_1", "summary": []}, answer(None)]}),
                "Items are not persisted",
            ),
            (
                json!({"input": [output("c9")]}),
                "No tool call found for function call output with call_id c9.",
            ),
            (
                json!({"input": [call(None, "c1")]}),
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

    #[test]
    fn an_item_produced_after_reasoning_needs_it_before_it() {
        let without = "Item 'fc_1' of type 'function_call' was provided without its required 'reasoning' item: 'rs_1'.";
        let cases = [
            // Dropped.
            (
                vec![user("hi"), call(Some("fc_1"), "c1"), output("c1")],
                without,
            ),
            // After the call instead of before it.
            (
                vec![
                    user("hi"),
                    call(Some("fc_1"), "c1"),
                    rs("rs_1"),
                    output("c1"),
                ],
                without,
            ),
            // In an earlier turn.
            (
                vec![
                    user("hi"),
                    rs("rs_1"),
                    answer(None),
                    user("again"),
                    call(Some("fc_1"), "c1"),
                    output("c1"),
                ],
                without,
            ),
            // Another reasoning item is not the one it came with.
            (
                vec![
                    user("hi"),
                    rs("rs_7"),
                    call(Some("fc_1"), "c1"),
                    output("c1"),
                ],
                without,
            ),
            (
                vec![user("hi"), answer(Some("msg_1"))],
                "Item 'msg_1' of type 'message' was provided without its required 'reasoning' item: 'rs_1'.",
            ),
        ];
        for (input, expected) in cases {
            let body = json!({"store": false, "input": input});
            assert_eq!(message(&body).as_deref(), Some(expected), "{body}");
        }
        let v: Value = serde_json::from_str(
            &check(
                &json!({"input": [call(Some("fc_1"), "c1"), output("c1")]}),
                &issued(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(v["error"]["param"], "input");
        assert_eq!(v["error"]["code"], Value::Null);
    }

    #[test]
    fn reasoning_needs_a_following_item_of_its_turn() {
        let without = |id: &str| {
            format!(
                "Item '{id}' of type 'reasoning' was provided without its required following item."
            )
        };
        for (input, id) in [
            (vec![user("hi"), rs("rs_1")], "rs_1"),
            (vec![user("hi"), rs("rs_1"), user("again")], "rs_1"),
            // A run of reasoning items still needs an item after it.
            (vec![user("hi"), rs("rs_0"), rs("rs_1")], "rs_0"),
            (vec![user("hi"), rs("rs_1"), output("c1")], "rs_1"),
            (
                vec![
                    user("hi"),
                    rs("rs_1"),
                    json!({"role": "developer", "content": "be brief"}),
                    answer(None),
                ],
                "rs_1",
            ),
        ] {
            let body = json!({"store": false, "input": input});
            assert_eq!(message(&body), Some(without(id)), "{body}");
        }
    }

    #[test]
    fn duplicate_ids_are_refused() {
        let body = json!({"store": false, "input": [
            user("hi"), rs("rs_1"), call(Some("fc_1"), "c1"), output("c1"), rs("rs_1"), answer(None)
        ]});
        assert_eq!(
            message(&body).as_deref(),
            Some(
                "Duplicate item found with id rs_1. Remove duplicate items from your input and try again."
            )
        );
        let body = json!({"input": [answer(Some("msg_5")), answer(Some("msg_5"))]});
        assert!(
            message(&body)
                .unwrap()
                .starts_with("Duplicate item found with id msg_5.")
        );
    }
}
