//! Request predicates for routing scripted replies.

use crate::request::RecordedRequest;

/// A predicate over the normalised request (identical for all three wire formats).
///
/// `…Contains` variants are case-sensitive substring tests. Combine with [`Match::and`],
/// [`Match::or`] and `!`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Match {
    Always,
    /// The first user-authored text contains the string.
    FirstUserContains(String),
    /// The last user-authored text (tool results are not user text) contains the string.
    LastUserContains(String),
    /// The system prompt contains the string.
    SystemContains(String),
    /// Any system, user, assistant or tool-result text contains the string.
    AnyTextContains(String),
    /// Exactly this many assistant messages are in the request.
    AssistantTurns(usize),
    /// The last tool result's text contains the string.
    LastToolResultContains(String),
    /// The request's `model` equals the string.
    ModelIs(String),
    All(Vec<Match>),
    Any(Vec<Match>),
    Not(Box<Match>),
}

impl Match {
    pub fn first_user(s: impl Into<String>) -> Match {
        Match::FirstUserContains(s.into())
    }
    pub fn last_user(s: impl Into<String>) -> Match {
        Match::LastUserContains(s.into())
    }
    pub fn system(s: impl Into<String>) -> Match {
        Match::SystemContains(s.into())
    }
    pub fn any_text(s: impl Into<String>) -> Match {
        Match::AnyTextContains(s.into())
    }
    pub fn assistant_turns(n: usize) -> Match {
        Match::AssistantTurns(n)
    }
    pub fn last_tool_result(s: impl Into<String>) -> Match {
        Match::LastToolResultContains(s.into())
    }
    pub fn model(s: impl Into<String>) -> Match {
        Match::ModelIs(s.into())
    }

    /// Both this and `other` must match.
    pub fn and(self, other: Match) -> Match {
        match self {
            Match::All(mut all) => {
                all.push(other);
                Match::All(all)
            }
            first => Match::All(vec![first, other]),
        }
    }

    /// Either this or `other` must match.
    pub fn or(self, other: Match) -> Match {
        match self {
            Match::Any(mut any) => {
                any.push(other);
                Match::Any(any)
            }
            first => Match::Any(vec![first, other]),
        }
    }

    pub fn matches(&self, req: &RecordedRequest) -> bool {
        let contains =
            |text: Option<String>, needle: &str| text.is_some_and(|t| t.contains(needle));
        match self {
            Match::Always => true,
            Match::FirstUserContains(s) => contains(req.first_user_text(), s),
            Match::LastUserContains(s) => contains(req.last_user_text(), s),
            Match::SystemContains(s) => req.system_text().contains(s.as_str()),
            Match::AnyTextContains(s) => req.all_text().iter().any(|t| t.contains(s.as_str())),
            Match::AssistantTurns(n) => req.assistant_turns() == *n,
            Match::LastToolResultContains(s) => {
                contains(req.tool_results().pop().map(|(_, text)| text), s)
            }
            Match::ModelIs(s) => req.model() == s,
            Match::All(all) => all.iter().all(|m| m.matches(req)),
            Match::Any(any) => any.iter().any(|m| m.matches(req)),
            Match::Not(m) => !m.matches(req),
        }
    }
}

impl std::ops::Not for Match {
    type Output = Match;
    fn not(self) -> Match {
        Match::Not(Box::new(self))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::request::WireApi;
    use serde_json::{Value, json};

    fn req(api: WireApi, body: Value) -> RecordedRequest {
        RecordedRequest {
            api,
            path: String::new(),
            headers: Vec::new(),
            body,
        }
    }

    fn all_formats() -> [RecordedRequest; 3] {
        [
            req(
                WireApi::OpenAi,
                json!({"model": "m1", "messages": [
                    {"role": "system", "content": "SYS prompt"},
                    {"role": "user", "content": "first question"},
                    {"role": "assistant", "content": "thinking out loud", "tool_calls": [{"id": "c1"}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "result one"},
                    {"role": "user", "content": "second question"}
                ]}),
            ),
            req(
                WireApi::Anthropic,
                json!({"model": "m1", "system": "SYS prompt", "messages": [
                    {"role": "user", "content": "first question"},
                    {"role": "assistant", "content": [{"type": "text", "text": "thinking out loud"}, {"type": "tool_use", "id": "c1"}]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "c1", "content": "result one"},
                        {"type": "text", "text": "second question"}
                    ]}
                ]}),
            ),
            req(
                WireApi::OpenAiResponses,
                json!({"model": "m1", "instructions": "SYS prompt", "input": [
                    {"role": "user", "content": [{"type": "input_text", "text": "first question"}]},
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "thinking out loud"}]},
                    {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c1", "output": "result one"},
                    {"role": "user", "content": "second question"}
                ]}),
            ),
        ]
    }

    #[test]
    fn every_variant_on_both_formats() {
        for r in all_formats() {
            let yes = [
                Match::Always,
                Match::first_user("first"),
                Match::last_user("second"),
                Match::system("SYS"),
                Match::any_text("out loud"),
                Match::any_text("result one"),
                Match::assistant_turns(1),
                Match::last_tool_result("one"),
                Match::model("m1"),
                Match::first_user("first").and(Match::model("m1")),
                Match::model("zz").or(Match::system("SYS")),
                !Match::model("m2"),
            ];
            let no = [
                Match::first_user("second"),
                Match::last_user("first"),
                Match::system("nope"),
                Match::any_text("absent"),
                Match::assistant_turns(0),
                Match::last_tool_result("two"),
                Match::model("m"),
                Match::first_user("first").and(Match::model("m2")),
                Match::model("zz").or(Match::system("zz")),
                !Match::Always,
                Match::All(vec![
                    Match::Always,
                    Match::Always,
                    Match::Not(Box::new(Match::Always)),
                ]),
            ];
            for m in yes {
                assert!(m.matches(&r), "{m:?} should match {:?}", r.api);
            }
            for m in no {
                assert!(!m.matches(&r), "{m:?} should not match {:?}", r.api);
            }
        }
    }

    #[test]
    fn combinators_flatten() {
        let m = Match::Always.and(Match::model("a")).and(Match::model("b"));
        assert!(matches!(m, Match::All(ref v) if v.len() == 3));
        let m = Match::Always.or(Match::model("a")).or(Match::model("b"));
        assert!(matches!(m, Match::Any(ref v) if v.len() == 3));
        assert!(Match::All(vec![]).matches(&all_formats()[0]));
        assert!(!Match::Any(vec![]).matches(&all_formats()[0]));
    }

    #[test]
    fn empty_request_matches_only_negative_or_zero_turns() {
        let r = req(WireApi::OpenAi, Value::Null);
        assert!(Match::Always.matches(&r));
        assert!(Match::assistant_turns(0).matches(&r));
        assert!(!Match::first_user("").matches(&r));
        assert!(!Match::last_tool_result("").matches(&r));
        assert!(Match::system("").matches(&r));
    }
}
