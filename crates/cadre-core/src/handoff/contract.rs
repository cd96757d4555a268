//! What a child is told (SPEC V1, V2, D1, D2): the output contract at the end of its task, the
//! one-shot nudge when it stops without an answer, the delegation packet, and the bounds of a
//! scoped probe.

use std::fmt::Write as _;

use serde::{Deserialize, Deserializer, Serialize};

/// The heading the output contract is placed under, at the very end of the task (V1).
pub const OUTPUT_CONTRACT_HEADING: &str =
    "REQUIRED OUTPUT CONTRACT (answer every item with concrete evidence before finishing)";

/// Said once to a child that ran tools and then stopped without any text (V2).
pub const EMPTY_COMPLETION_NUDGE: &str = "You stopped without a final answer. Summarise your \
findings now in plain text: what you established, with evidence (paths, commands, results), and \
what remains open.";

/// Read budgets of a scoped probe (S4), stated in its prompt.
pub const PROBE_DIR_BYTES: usize = 50_000;
pub const PROBE_FILE_LINES: usize = 300;

/// The task with the output contract at its very end (V1). A blank `expected_output` adds
/// nothing.
pub fn append_output_contract(prompt: &str, expected_output: &str) -> String {
    let mut text = prompt.trim_end().to_string();
    let contract = expected_output.trim();
    if !contract.is_empty() {
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(OUTPUT_CONTRACT_HEADING);
        text.push('\n');
        text.push_str(contract);
    }
    text
}

/// Whether to send [`EMPTY_COMPLETION_NUDGE`] (V2): the child ran tools, its final text is
/// blank, and it has not been nudged yet (once per run).
pub fn needs_nudge(ran_tools: bool, final_text: &str, already_nudged: bool) -> bool {
    ran_tools && final_text.trim().is_empty() && !already_nudged
}

/// A string, or a list of strings (a model may send either for a list-like field).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
#[serde(transparent)]
pub struct TextList(pub Vec<String>);

impl<'de> Deserialize<'de> for TextList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            One(String),
            Many(Vec<String>),
            Nothing(()),
        }
        Ok(TextList(match Raw::deserialize(d)? {
            Raw::One(s) => vec![s],
            Raw::Many(v) => v,
            Raw::Nothing(()) => Vec::new(),
        }))
    }
}

impl TextList {
    fn items(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|s| s.trim()).filter(|s| !s.is_empty())
    }
}

/// The shared part of a delegation packet (D1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct SharedContextSummary {
    pub goal: String,
    pub changed_surface: TextList,
    pub project_constraints: TextList,
}

/// The child-specific part of a delegation packet (D1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct FocusDelta {
    pub role: String,
    pub lens: String,
    pub specific_changes: TextList,
    pub audit_question: String,
    pub tool_policy: String,
    pub boundary: String,
}

/// The `packet` argument of the `Agent` tool (D1).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(default)]
pub struct DelegationPacket {
    pub shared_context_summary: SharedContextSummary,
    pub focus_delta: FocusDelta,
}

impl DelegationPacket {
    /// Whether the packet gives the child zero tools.
    pub fn no_tools(&self) -> bool {
        is_no_tools(&self.focus_delta.tool_policy)
    }
}

/// Whether a `tool_policy` means "no tools": `no tools`, `no-tools`, `NO_TOOLS`, `none`,
/// `no tools.` (case, separators and a trailing period do not matter).
pub fn is_no_tools(policy: &str) -> bool {
    let words: Vec<String> = policy
        .trim()
        .trim_end_matches('.')
        .split(|c: char| c.is_whitespace() || c == '-' || c == '_')
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect();
    matches!(
        words
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice(),
        ["no", "tools"] | ["no", "tool"] | ["none"] | ["notools"]
    )
}

fn field(out: &mut String, label: &str, value: &str) {
    let value = value.trim();
    if value.is_empty() {
        return;
    }
    if value.contains('\n') {
        let _ = writeln!(out, "{label}:");
        for line in value.lines() {
            let _ = writeln!(out, "  {line}");
        }
    } else {
        let _ = writeln!(out, "{label}: {value}");
    }
}

fn list_field(out: &mut String, label: &str, list: &TextList) {
    let items: Vec<&str> = list.items().collect();
    match items.as_slice() {
        [] => {}
        [one] => field(out, label, one),
        many => {
            let _ = writeln!(out, "{label}:");
            for item in many {
                let _ = writeln!(out, "  - {}", item.replace('\n', " "));
            }
        }
    }
}

/// The packet as it goes into the child's prompt, in the dispatch protocol's layout.
pub fn render_packet(packet: &DelegationPacket) -> String {
    let s = &packet.shared_context_summary;
    let f = &packet.focus_delta;
    let mut out = String::from("shared_context_summary:\n");
    let mut shared = String::new();
    field(&mut shared, "goal", &s.goal);
    list_field(&mut shared, "changed_surface", &s.changed_surface);
    list_field(&mut shared, "project_constraints", &s.project_constraints);
    indent_into(&mut out, &shared);
    out.push_str("\nfocus_delta:\n");
    let mut focus = String::new();
    field(&mut focus, "role", &f.role);
    field(&mut focus, "lens", &f.lens);
    list_field(&mut focus, "specific_changes", &f.specific_changes);
    field(&mut focus, "audit_question", &f.audit_question);
    field(&mut focus, "tool_policy", &f.tool_policy);
    field(&mut focus, "boundary", &f.boundary);
    indent_into(&mut out, &focus);
    if packet.no_tools() {
        out.push_str(
            "\nYou have no tools for this task: answer from the packet above alone, and say \
             what you could not establish without them.\n",
        );
    }
    if !f.boundary.trim().is_empty() {
        out.push_str("\nStay inside the boundary above; it is part of the task.\n");
    }
    out
}

fn indent_into(out: &mut String, block: &str) {
    if block.is_empty() {
        out.push_str("  (none)\n");
        return;
    }
    for line in block.lines() {
        let _ = writeln!(out, "  {line}");
    }
}

/// The bounds of a scoped probe (D2, S4): the paths it may read, its read budget and the
/// condition that ends it. Empty when there is neither a scope nor a stop condition.
pub fn render_scope(scope: &[String], stop_condition: Option<&str>) -> String {
    let paths: Vec<&str> = scope
        .iter()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect();
    let stop = stop_condition.map(str::trim).filter(|s| !s.is_empty());
    let mut out = String::new();
    if !paths.is_empty() {
        out.push_str("SCOPE: read only inside these paths; anything else is out of scope:\n");
        for p in &paths {
            let _ = writeln!(out, "- {}", p.replace('\n', " "));
        }
        let _ = writeln!(
            out,
            "Read budget: at most {PROBE_DIR_BYTES} bytes per directory and {PROBE_FILE_LINES} \
             lines per file. Read interface, schema and header files first, then entry files. A \
             read past the budget is refused; then stop and report what you covered."
        );
    }
    if let Some(stop) = stop {
        if !out.is_empty() {
            out.push('\n');
        }
        let _ = writeln!(
            out,
            "STOP CONDITION: {stop}\nStop as soon as it holds and report; do not keep reading \
             because a path is nearby."
        );
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn contract_goes_last() {
        let t = append_output_contract("Find the bug.\n\n", "- root cause\n- fix\n");
        assert_eq!(
            t,
            format!("Find the bug.\n\n{OUTPUT_CONTRACT_HEADING}\n- root cause\n- fix")
        );
        assert!(t.ends_with("- fix"));
        assert_eq!(append_output_contract("x", "  \n"), "x");
        assert_eq!(append_output_contract("x\n", ""), "x");
        assert_eq!(
            append_output_contract("", "a"),
            format!("{OUTPUT_CONTRACT_HEADING}\na")
        );
    }

    #[test]
    fn nudge_rule() {
        for (ran, text, nudged, want) in [
            (true, "", false, true),
            (true, "  \n\t", false, true),
            (true, "", true, false),
            (false, "", false, false),
            (true, "done", false, false),
            (false, "done", true, false),
        ] {
            assert_eq!(
                needs_nudge(ran, text, nudged),
                want,
                "{ran} {text:?} {nudged}"
            );
        }
        assert!(!EMPTY_COMPLETION_NUDGE.is_empty());
    }

    #[test]
    fn no_tools_spellings() {
        for p in [
            "no tools",
            "No Tools",
            "no-tools",
            "NO_TOOLS",
            "  no   tools. ",
            "none",
            "None",
            "notools",
            "no tool",
        ] {
            assert!(is_no_tools(p), "{p:?}");
        }
        for p in [
            "",
            "read-only",
            "all",
            "no tools except read",
            "tools",
            "no",
        ] {
            assert!(!is_no_tools(p), "{p:?}");
        }
    }

    fn full() -> DelegationPacket {
        serde_json::from_value(json!({
            "shared_context_summary": {
                "goal": "Ship the retry fix",
                "changed_surface": ["src/retry.rs", "src/http.rs"],
                "project_constraints": "no new dependencies"
            },
            "focus_delta": {
                "role": "reviewer",
                "lens": "concurrency",
                "specific_changes": "src/retry.rs: backoff loop",
                "audit_question": "Can two retries race on the shared counter?",
                "tool_policy": "no tools",
                "boundary": "advisory-only; no code edits"
            }
        }))
        .unwrap()
    }

    #[test]
    fn packet_deserializes_and_renders() {
        let p = full();
        assert!(p.no_tools());
        assert_eq!(
            p.shared_context_summary.changed_surface.0,
            vec!["src/retry.rs", "src/http.rs"]
        );
        let text = render_packet(&p);
        let want = "shared_context_summary:\n  goal: Ship the retry fix\n  changed_surface:\n    - src/retry.rs\n    - src/http.rs\n  project_constraints: no new dependencies\n\nfocus_delta:\n  role: reviewer\n  lens: concurrency\n  specific_changes: src/retry.rs: backoff loop\n  audit_question: Can two retries race on the shared counter?\n  tool_policy: no tools\n  boundary: advisory-only; no code edits\n";
        assert!(text.starts_with(want), "{text}");
        assert!(text.contains("You have no tools"));
        assert!(text.contains("Stay inside the boundary"));
    }

    #[test]
    fn packet_tolerates_missing_null_and_extra_fields() {
        let p: DelegationPacket = serde_json::from_value(json!({
            "shared_context_summary": {"goal": "g", "changed_surface": null, "extra": 1},
            "focus_delta": {"tool_policy": "read-only", "audit_question": "line 1\nline 2"}
        }))
        .unwrap();
        assert!(!p.no_tools());
        let text = render_packet(&p);
        assert!(text.contains("  goal: g\n"));
        assert!(!text.contains("changed_surface"));
        assert!(text.contains("  audit_question:\n    line 1\n    line 2\n"));
        assert!(!text.contains("You have no tools"));
        assert!(!text.contains("Stay inside"));

        let empty: DelegationPacket = serde_json::from_value(json!({})).unwrap();
        assert_eq!(
            render_packet(&empty),
            "shared_context_summary:\n  (none)\n\nfocus_delta:\n  (none)\n"
        );
        // Wrong types are errors, not silent defaults.
        assert!(serde_json::from_value::<DelegationPacket>(json!({"focus_delta": 3})).is_err());
        assert!(
            serde_json::from_value::<DelegationPacket>(
                json!({"shared_context_summary": {"changed_surface": [1, 2]}})
            )
            .is_err()
        );
        // Round trip.
        let p = full();
        let back: DelegationPacket =
            serde_json::from_value(serde_json::to_value(&p).unwrap()).unwrap();
        assert_eq!(back, p);
    }

    #[test]
    fn scope_rendering() {
        assert_eq!(render_scope(&[], None), "");
        assert_eq!(render_scope(&["  ".into()], Some(" ")), "");
        let s = render_scope(
            &["src/a".into(), "docs".into()],
            Some("the caller is found"),
        );
        assert!(s.starts_with("SCOPE: read only inside these paths"));
        assert!(s.contains("- src/a\n- docs\n"));
        assert!(s.contains("50000 bytes per directory and 300 lines per file"));
        assert!(s.contains("\n\nSTOP CONDITION: the caller is found\n"));
        let only_stop = render_scope(&[], Some("done"));
        assert!(only_stop.starts_with("STOP CONDITION: done\n"));
        assert!(!only_stop.contains("SCOPE"));
        let only_scope = render_scope(&["a\nb".into()], None);
        assert!(only_scope.contains("- a b\n"));
        assert!(!only_scope.contains("STOP"));
    }
}
