//! Reasoning efforts a scripted model refuses. The service answers an effort the model does not
//! take with HTTP 400 `unsupported_value` naming the ones it does; a test opts in per model with
//! [`crate::FakeServer::model_efforts`] (models not named accept any effort).

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::request::WireApi;

/// The 400 body when the request's effort is not among the ones `accepted` lists for its model.
/// Responses carries it as `reasoning.effort`, Chat Completions as `reasoning_effort`.
pub(crate) fn check(
    api: WireApi,
    body: &Value,
    accepted: &HashMap<String, Vec<String>>,
) -> Option<String> {
    let (effort, param) = match api {
        WireApi::OpenAiResponses => (&body["reasoning"]["effort"], "reasoning.effort"),
        WireApi::OpenAi => (&body["reasoning_effort"], "reasoning_effort"),
        WireApi::Anthropic => return None,
    };
    let effort = effort.as_str()?;
    let model = body.get("model").and_then(Value::as_str)?;
    let efforts = accepted.get(model)?;
    if efforts.iter().any(|e| e == effort) {
        return None;
    }
    let message = format!(
        "Unsupported value: '{effort}' is not supported with the '{model}' model. Supported values are: {}.",
        quoted_list(efforts)
    );
    Some(
        json!({"error": {
            "message": message, "type": "invalid_request_error", "param": param,
            "code": "unsupported_value",
        }})
        .to_string(),
    )
}

/// `'a'`, `'a' and 'b'`, `'a', 'b', and 'c'`: the service's way of listing values.
fn quoted_list(values: &[String]) -> String {
    let quoted: Vec<String> = values.iter().map(|v| format!("'{v}'")).collect();
    match quoted.as_slice() {
        [] => String::new(),
        [one] => one.clone(),
        [first, second] => format!("{first} and {second}"),
        [init @ .., last] => format!("{}, and {last}", init.join(", ")),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn accepted() -> HashMap<String, Vec<String>> {
        let efforts = ["none", "low", "medium", "high", "xhigh"];
        HashMap::from([(
            "gpt-5.5".to_string(),
            efforts.iter().map(|e| e.to_string()).collect(),
        )])
    }

    #[test]
    fn refuses_an_effort_the_model_does_not_take() {
        let body = json!({"model": "gpt-5.5", "reasoning": {"effort": "minimal"}});
        let error: Value =
            serde_json::from_str(&check(WireApi::OpenAiResponses, &body, &accepted()).unwrap())
                .unwrap();
        assert_eq!(
            error,
            json!({"error": {
                "message": "Unsupported value: 'minimal' is not supported with the 'gpt-5.5' model. Supported values are: 'none', 'low', 'medium', 'high', and 'xhigh'.",
                "type": "invalid_request_error",
                "param": "reasoning.effort",
                "code": "unsupported_value",
            }})
        );
        let body = json!({"model": "gpt-5.5", "reasoning_effort": "max"});
        let error: Value =
            serde_json::from_str(&check(WireApi::OpenAi, &body, &accepted()).unwrap()).unwrap();
        assert_eq!(error["error"]["param"], "reasoning_effort");
        assert!(
            error["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("Unsupported value: 'max' is not supported")
        );
    }

    #[test]
    fn accepts_listed_efforts_other_models_and_no_effort() {
        let ok = [
            json!({"model": "gpt-5.5", "reasoning": {"effort": "xhigh"}}),
            json!({"model": "gpt-5.5", "reasoning": {"summary": "auto"}}),
            json!({"model": "gpt-5.5"}),
            json!({"model": "gpt-5", "reasoning": {"effort": "minimal"}}),
        ];
        for body in ok {
            assert_eq!(
                check(WireApi::OpenAiResponses, &body, &accepted()),
                None,
                "{body}"
            );
        }
        // Off unless a test names the model.
        let body = json!({"model": "gpt-5.5", "reasoning": {"effort": "minimal"}});
        assert_eq!(
            check(WireApi::OpenAiResponses, &body, &HashMap::new()),
            None
        );
        assert_eq!(check(WireApi::Anthropic, &body, &accepted()), None);
    }

    #[test]
    fn lists_values_as_the_service_does() {
        let list = |v: &[&str]| quoted_list(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(list(&["low"]), "'low'");
        assert_eq!(list(&["low", "high"]), "'low' and 'high'");
        assert_eq!(
            list(&["none", "low", "medium", "high"]),
            "'none', 'low', 'medium', and 'high'"
        );
    }
}
