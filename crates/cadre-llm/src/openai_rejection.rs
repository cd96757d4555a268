//! A 400 from an OpenAI API refusing the reasoning effort cadre sent, said with what to change.
//!
//! OpenAI answers an effort a model does not take with `param: "reasoning.effort"` (Responses)
//! or `"reasoning_effort"` (Chat Completions) and `code: "unsupported_value"`, and lists the
//! values the model takes in the message. The request is not retried (a 400 is final); the
//! hint names the setting that avoids it.

use serde_json::Value;

use crate::error::LlmError;
use crate::model::{Api, Model};

/// `error` with a hint appended when it is OpenAI refusing the reasoning effort; anything
/// else (other statuses, other parameters, other APIs) is returned as it is.
pub fn explain_rejection(model: &Model, error: LlmError, body: &str) -> LlmError {
    match error {
        LlmError::Http {
            provider,
            status: 400,
            message,
            retry_after,
            kind,
        } if matches!(model.api, Api::OpenAiResponses | Api::OpenAiCompletions)
            && refuses_effort(body) =>
        {
            let name = model.full_name();
            LlmError::Http {
                provider,
                status: 400,
                message: format!(
                    "{message} — {name} refused the reasoning effort cadre sent: choose another \
                     `--thinking` level, or set `thinkingLevelMap` for {name} in models.json \
                     (`modelOverrides` for a built-in model), mapping the level to an effort it \
                     takes or to null so cadre uses the nearest level it takes"
                ),
                retry_after,
                kind,
            }
        }
        other => other,
    }
}

/// Whether an error body is OpenAI's refusal of `reasoning.effort`/`reasoning_effort`.
fn refuses_effort(body: &str) -> bool {
    let Ok(v) = serde_json::from_str::<Value>(body) else {
        return false;
    };
    let field = |k: &str| v.pointer(&format!("/error/{k}")).and_then(Value::as_str);
    let param = field("param").unwrap_or("");
    let on_effort = matches!(param, "reasoning.effort" | "reasoning_effort");
    on_effort && matches!(field("code"), Some("unsupported_value") | None)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use crate::error::ErrorKind;
    use crate::test_support::model;

    /// OpenAI's answer to `minimal` on GPT-5.1.
    const REFUSAL: &str = r#"{"error": {"message": "Unsupported value: 'minimal' is not supported with the 'gpt-5.1' model. Supported values are: 'none', 'low', 'medium', and 'high'.", "type": "invalid_request_error", "param": "reasoning.effort", "code": "unsupported_value"}}"#;

    fn http400(body: &str) -> LlmError {
        crate::http::http_error("openai", 400, None, body, None)
    }

    #[test]
    fn a_refused_effort_says_what_to_change_and_is_not_retried() {
        let m = model(Api::OpenAiResponses);
        let e = explain_rejection(&m, http400(REFUSAL), REFUSAL);
        let text = e.to_string();
        assert!(text.contains("Supported values are"), "{text}");
        assert!(text.contains("--thinking"), "{text}");
        assert!(text.contains("thinkingLevelMap"), "{text}");
        assert!(text.contains(&m.full_name()), "{text}");
        assert!(
            matches!(
                e,
                LlmError::Http {
                    kind: ErrorKind::Fatal,
                    ..
                }
            ),
            "{e:?}"
        );

        // Chat Completions names the parameter `reasoning_effort`.
        let cc = REFUSAL.replace("reasoning.effort", "reasoning_effort");
        let m = model(Api::OpenAiCompletions);
        let text = explain_rejection(&m, http400(&cc), &cc).to_string();
        assert!(text.contains("thinkingLevelMap"), "{text}");
    }

    #[test]
    fn other_errors_are_left_alone() {
        let m = model(Api::OpenAiResponses);
        let other = REFUSAL.replace("reasoning.effort", "temperature");
        let text = explain_rejection(&m, http400(&other), &other).to_string();
        assert!(!text.contains("thinkingLevelMap"), "{text}");
        let anthropic = model(Api::AnthropicMessages);
        let text = explain_rejection(&anthropic, http400(REFUSAL), REFUSAL).to_string();
        assert!(!text.contains("thinkingLevelMap"), "{text}");
        let e = crate::http::http_error("openai", 429, None, REFUSAL, None);
        let text = explain_rejection(&m, e, REFUSAL).to_string();
        assert!(!text.contains("thinkingLevelMap"), "{text}");
    }
}
