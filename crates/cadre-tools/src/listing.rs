//! What the listing tools (`find`, `grep`, `ls`) share: the directory walk they search and the
//! shape of their output — lines cut to the byte budget, then one bracketed line of notices
//! saying what was left out and how to get more, with the same facts in `details`.

use std::path::Path;

use ignore::WalkBuilder;
use serde_json::{Value, json};

use crate::registry::ToolOutput;
use crate::truncate::{DEFAULT_MAX_BYTES, Limits, format_size, truncate_head};

/// A walk of `root` that respects .gitignore even outside a git repository (agents work in
/// plain directories too), skips hidden entries unless `hidden` asks for them, never enters
/// `.git`, and passes by the files that hold cadre's credentials ([`crate::hidden`]).
pub(crate) fn walker(root: &Path, hidden: bool) -> WalkBuilder {
    let mut walk = WalkBuilder::new(root);
    walk.require_git(false).hidden(!hidden).threads(0);
    if crate::hidden::walk_meets_hidden(root) {
        walk.filter_entry(|e| e.file_name() != ".git" && !crate::hidden::is_hidden(e.path()));
    } else {
        walk.filter_entry(|e| e.file_name() != ".git");
    }
    walk
}

/// Something the output leaves out: said in the notice line and recorded in `details`.
pub(crate) struct Notice {
    pub text: String,
    pub key: &'static str,
    pub value: Value,
}

impl Notice {
    /// The result limit was reached: more can be asked for with a doubled `limit`.
    /// `what` names the results ("results", "matches", "entries"); `hint` follows the advice.
    pub fn limit(limit: usize, what: &str, hint: &str, key: &'static str) -> Self {
        Notice {
            text: format!(
                "{limit} {what} limit reached. Use limit={} for more{hint}",
                limit.saturating_mul(2)
            ),
            key,
            value: json!(limit),
        }
    }
}

/// The listing of `lines`, at most `DEFAULT_MAX_BYTES` of them, followed by the notices: the
/// result limit first (when reached), then the byte limit, then the `extra` ones.
pub(crate) fn listing_output(
    lines: &[String],
    limit: Option<Notice>,
    extra: impl IntoIterator<Item = Notice>,
) -> ToolOutput {
    let truncation = truncate_head(&lines.join("\n"), Limits::bytes_only(DEFAULT_MAX_BYTES));
    let text = truncation.content.clone();
    let byte_limit = truncation.truncated.then(|| Notice {
        text: format!("{} limit reached", format_size(DEFAULT_MAX_BYTES as u64)),
        key: "truncation",
        value: json!(truncation),
    });
    with_notices(text, limit.into_iter().chain(byte_limit).chain(extra))
}

/// `text`, then one bracketed line saying every notice, with their facts in `details`.
pub(crate) fn with_notices(
    mut text: String,
    notices: impl IntoIterator<Item = Notice>,
) -> ToolOutput {
    let notices: Vec<Notice> = notices.into_iter().collect();
    if notices.is_empty() {
        return ToolOutput::ok(text);
    }
    let said: Vec<&str> = notices.iter().map(|n| n.text.as_str()).collect();
    text.push_str(&format!("\n\n[{}]", said.join(". ")));
    let details: serde_json::Map<String, Value> = notices
        .into_iter()
        .map(|n| (n.key.to_string(), n.value))
        .collect();
    ToolOutput::ok(text).with_details(Value::Object(details))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn text_of(o: &ToolOutput) -> String {
        cadre_protocol::join_text(&o.content)
    }

    #[test]
    fn a_short_listing_has_no_notices_and_no_details() {
        let o = listing_output(&["a".into(), "b".into()], None, None);
        assert_eq!(text_of(&o), "a\nb");
        assert!(o.details.is_none());
    }

    #[test]
    fn notices_come_limit_first_then_bytes_then_extra() {
        let lines: Vec<String> = (0..DEFAULT_MAX_BYTES)
            .map(|i| format!("line {i}"))
            .collect();
        let extra = Notice {
            text: "extra".into(),
            key: "extraKey",
            value: json!(true),
        };
        let o = listing_output(
            &lines,
            Some(Notice::limit(
                5,
                "results",
                ", or refine",
                "resultLimitReached",
            )),
            Some(extra),
        );
        let text = text_of(&o);
        assert!(
            text.ends_with("\n\n[5 results limit reached. Use limit=10 for more, or refine. 50.0KB limit reached. extra]"),
            "{text}"
        );
        let details = o.details.unwrap();
        assert_eq!(details["resultLimitReached"], 5);
        assert_eq!(details["extraKey"], true);
        assert_eq!(details["truncation"]["truncated"], true);
    }
}
