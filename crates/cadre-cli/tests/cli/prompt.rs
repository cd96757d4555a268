//! What the model is offered: `--tools`, `--system-prompt`, `--append-system-prompt`, AGENTS.md.

use cadre_testkit::{Match, Reply, Rule};

use crate::harness::{Fixture, Wire};

fn answer_anything(fixture: &Fixture) {
    fixture
        .server
        .script(Rule::new(Match::first_user("ROUTE-PROMPT")).reply(Reply::text("ok")));
}

#[test]
fn tools_flag_narrows_the_offered_tools() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        answer_anything(&fixture);
        let out = fixture.run_print(wire, &["--tools", "read,ls", "ROUTE-PROMPT"]);
        out.assert_success();
        let mut names = wire.tool_names(&fixture.last_request());
        names.sort();
        assert_eq!(names, ["ls", "read"], "{wire:?}");

        // Without --tools the seven built-ins and the four orchestration tools are offered.
        fixture.run_print(wire, &["ROUTE-PROMPT"]).assert_success();
        let mut names = wire.tool_names(&fixture.last_request());
        names.sort();
        assert_eq!(
            names,
            [
                "Agent",
                "SendMessage",
                "TaskOutput",
                "TaskStop",
                "bash",
                "edit",
                "find",
                "grep",
                "ls",
                "read",
                "write"
            ],
            "{wire:?}"
        );

        // Orchestration tools can be named too; they are not built-ins.
        let out = fixture.run_print(wire, &["--tools", "read,Agent", "ROUTE-PROMPT"]);
        out.assert_success();
        let mut names = wire.tool_names(&fixture.last_request());
        names.sort();
        assert_eq!(names, ["Agent", "read"], "{wire:?}");
    }
}

#[test]
fn system_prompt_flags_and_agents_md_reach_the_model() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        answer_anything(&fixture);
        std::fs::write(
            fixture.project.join("AGENTS.md"),
            "Project rule AGENTS-MARKER-7731: money is integer cents.\n",
        )
        .unwrap();

        let out = fixture.run_print(
            wire,
            &[
                "--append-system-prompt",
                "APPENDED-ONE",
                "--append-system-prompt",
                "APPENDED-TWO",
                "ROUTE-PROMPT",
            ],
        );
        out.assert_success();
        let system = fixture.last_request().system_text();
        for needle in ["AGENTS-MARKER-7731", "APPENDED-ONE", "APPENDED-TWO"] {
            assert!(
                system.contains(needle),
                "{wire:?}: {needle} missing:\n{system}"
            );
        }
        assert!(
            system.contains(&fixture.project.to_string_lossy().into_owned()),
            "{wire:?}: the cwd is named:\n{system}"
        );

        let out = fixture.run_print(
            wire,
            &["--system-prompt", "CUSTOM-BASE-PROMPT-42", "ROUTE-PROMPT"],
        );
        out.assert_success();
        let custom = fixture.last_request().system_text();
        assert!(
            custom.contains("CUSTOM-BASE-PROMPT-42"),
            "{wire:?}:\n{custom}"
        );
        assert!(
            custom.contains("AGENTS-MARKER-7731"),
            "{wire:?}: context files stay with a custom prompt:\n{custom}"
        );
        assert_ne!(custom, system, "{wire:?}: the base prompt was replaced");
    }
}

#[test]
fn thinking_beyond_the_model_is_clamped_with_a_note() {
    for wire in Wire::BOTH {
        let fixture = Fixture::new();
        answer_anything(&fixture);
        // The fixture's models do not declare `reasoning`, so any level clamps to off.
        let out = fixture.run_print(wire, &["--thinking", "high", "ROUTE-PROMPT"]);
        out.assert_success();
        assert_eq!(out.stdout, "ok\n");
        assert!(
            out.stderr.contains("thinking") && !out.stderr.contains("error"),
            "{wire:?}: a note, not an error: {}",
            out.stderr
        );
        let body = fixture.last_request().body;
        assert!(body.get("thinking").is_none(), "{wire:?}: {body}");
        assert!(body.get("reasoning_effort").is_none(), "{wire:?}: {body}");
    }
}
