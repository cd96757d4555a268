//! `cadre agents`: the roster of agent types (SPEC I2, T2–T5) — each role with its layer, file,
//! tools, locked model and read-only flag, then what overrides what, which names are blocked and
//! why, other diagnostics, and whether the project's own roles were loaded (T4).
//!
//! The model column is the model a launch from the root session would run on (aliases such as
//! `opus`, Claude ids by family, the parent's model for a file's model that cannot be had), and
//! `--json` adds whether each role would launch at all (see `role_check`). Role files, settings
//! and the model registry's listing are read — no network and no `!command` credential — so it
//! starts in milliseconds (P2).

use std::borrow::Cow;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::roles::builtin::aliases;
use cadre_core::roles::{
    Diagnostic, DiagnosticKind, DiscoverOptions, Layer, Origin, ProjectTrust, ResolvedRole, Roster,
    ToolList, discover,
};
use serde::Serialize;

use super::format::{clip, grouped, show_path, table};
use super::role_check::{Checker, RoleCheck};
use super::{Place, print_out};

#[derive(Debug, clap::Args)]
pub struct AgentsArgs {
    /// Load the project's roles as if it were trusted (this run only).
    #[arg(long)]
    pub trust: bool,
    /// Print the roster as one JSON object (absolute paths, every diagnostic).
    #[arg(long)]
    pub json: bool,
}

pub fn run(args: &AgentsArgs) -> Result<ExitCode> {
    let place = Place::from_env()?;
    let trust = place.trust(args.trust);
    let opts = DiscoverOptions::new(place.home.clone(), place.cwd.clone(), trust.clone());
    let roster = discover(&opts);
    let checker = Checker::load(&place, &trust);
    let mut checks: Vec<RoleCheck> = roster.roles.iter().map(|r| checker.check(&r.def)).collect();
    if let Some(e) = checker.settings_error() {
        for check in &mut checks {
            check
                .problems
                .insert(0, format!("{e} (every launch fails until it is fixed)"));
        }
    }
    if args.json {
        write_json(&to_json(&roster, &checks, &trust))?;
        return Ok(ExitCode::SUCCESS);
    }
    let view = View {
        root: &place.root,
        home: opts.home_dir.as_deref(),
    };
    print_out(&view.render_checked(&roster, &checks, &trust, args.trust));
    Ok(ExitCode::SUCCESS)
}

/// `cadre agents --json`: borrowed views serialised straight to text, so a roster of a
/// thousand roles costs no intermediate tree.
#[derive(Serialize)]
pub struct JsonReport<'a> {
    trusted: bool,
    roles: Vec<JsonRole<'a>>,
    blocked: Vec<JsonBlocked<'a>>,
    diagnostics: Vec<JsonDiagnostic<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonRole<'a> {
    name: &'a str,
    aliases: &'static [&'static str],
    layer: &'static str,
    file: Option<Cow<'a, str>>,
    description: &'a str,
    tools: JsonTools<'a>,
    disallowed_tools: &'a [String],
    readonly: bool,
    shell_policy: &'static str,
    bash_allow: &'a [String],
    model: JsonModel<'a>,
    launchable: bool,
    problems: &'a [String],
    notes: &'a [String],
    overrides: Vec<JsonOrigin<'a>>,
}

#[derive(Serialize)]
#[serde(untagged)]
enum JsonTools<'a> {
    All(&'static str),
    Named(&'a [String]),
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonModel<'a> {
    requested: Option<&'a str>,
    resolved: Option<&'a str>,
    source: &'static str,
    falls_back_to_parent: bool,
    note: Option<&'a str>,
}

#[derive(Serialize)]
struct JsonOrigin<'a> {
    layer: &'static str,
    file: Option<Cow<'a, str>>,
}

#[derive(Serialize)]
struct JsonBlocked<'a> {
    name: &'a str,
    layer: &'static str,
    file: Cow<'a, str>,
    reason: &'a str,
}

#[derive(Serialize)]
struct JsonDiagnostic<'a> {
    kind: &'static str,
    severity: &'static str,
    file: Option<Cow<'a, str>>,
    line: Option<usize>,
    message: &'a str,
}

fn layer_name(layer: Layer) -> &'static str {
    match layer {
        Layer::Builtin => "built-in",
        Layer::User => "user",
        Layer::Project => "project",
    }
}

/// Stream the report to stdout: a thousand roles are most of a megabyte, which is not built in
/// memory first. A closed pipe (`cadre agents --json | head`) ends the output quietly.
fn write_json(report: &JsonReport<'_>) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let written = serde_json::to_writer_pretty(&mut out, report)
        .map_err(std::io::Error::from)
        .and_then(|()| out.write_all(b"\n"))
        .and_then(|()| out.flush());
    match written {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

/// The report for `roster` (`checks` in the order of `roster.roles`).
pub fn to_json<'a>(
    roster: &'a Roster,
    checks: &'a [RoleCheck],
    trust: &ProjectTrust,
) -> JsonReport<'a> {
    JsonReport {
        trusted: trust.is_trusted(),
        roles: roster
            .roles
            .iter()
            .zip(checks)
            .map(|(role, check)| role_json(role, check))
            .collect(),
        blocked: roster
            .blocked
            .iter()
            .map(|b| JsonBlocked {
                name: &b.name,
                layer: layer_name(b.layer),
                file: b.file.to_string_lossy(),
                reason: &b.reason,
            })
            .collect(),
        diagnostics: roster.diagnostics.iter().map(diagnostic_json).collect(),
    }
}

fn role_json<'a>(role: &'a ResolvedRole, check: &'a RoleCheck) -> JsonRole<'a> {
    let def = &role.def;
    let m = &check.model;
    JsonRole {
        name: &def.name,
        aliases: aliases(&def.name),
        layer: layer_name(role.layer),
        file: role.file.as_deref().map(Path::to_string_lossy),
        description: &def.description,
        tools: match &def.tools {
            ToolList::All => JsonTools::All("all"),
            ToolList::Named(names) => JsonTools::Named(names),
        },
        disallowed_tools: &def.disallowed_tools,
        readonly: def.readonly,
        shell_policy: def.shell_policy.as_str(),
        bash_allow: &def.bash_allow,
        model: JsonModel {
            requested: m.requested.as_deref(),
            resolved: m.resolved.as_deref(),
            source: m.source,
            falls_back_to_parent: m.falls_back_to_parent,
            note: m.note.as_deref(),
        },
        launchable: check.problems.is_empty(),
        problems: &check.problems,
        notes: &def.notes,
        overrides: role
            .overrides
            .iter()
            .map(|o| JsonOrigin {
                layer: layer_name(o.layer),
                file: o.file.as_deref().map(Path::to_string_lossy),
            })
            .collect(),
    }
}

fn diagnostic_json(d: &Diagnostic) -> JsonDiagnostic<'_> {
    JsonDiagnostic {
        kind: match d.kind {
            DiagnosticKind::Override => "override",
            DiagnosticKind::Malformed => "malformed",
            DiagnosticKind::UnreadableDir => "unreadable-dir",
            DiagnosticKind::Untrusted => "untrusted",
            DiagnosticKind::Note => "note",
        },
        severity: if d.is_error() { "error" } else { "warning" },
        file: d.file.as_deref().map(Path::to_string_lossy),
        line: d.line,
        message: &d.message,
    }
}

/// How paths are shortened in the report.
pub struct View<'a> {
    pub root: &'a Path,
    pub home: Option<&'a Path>,
}

impl View<'_> {
    fn path(&self, path: &Path) -> String {
        show_path(path, self.root, self.home)
    }

    fn origin(&self, origin: &Origin) -> String {
        match &origin.file {
            Some(file) => format!("{} {}", origin.layer, self.path(file)),
            None => origin.layer.to_string(),
        }
    }

    /// The whole report, with each role's check (same order as `roster.roles`).
    pub fn render_checked(
        &self,
        roster: &Roster,
        checks: &[RoleCheck],
        trust: &ProjectTrust,
        for_this_run: bool,
    ) -> String {
        let mut out = String::new();
        out.push_str(&self.roles_table(roster, checks));
        out.push_str(&self.role_notes(roster, checks));
        out.push_str(&self.overrides(roster));
        out.push_str(&self.blocked(roster));
        out.push_str(&self.diagnostics(roster));
        out.push('\n');
        out.push_str(&self.trust_line(trust, for_this_run));
        out
    }

    fn roles_table(&self, roster: &Roster, checks: &[RoleCheck]) -> String {
        let rows: Vec<Vec<String>> = roster
            .roles
            .iter()
            .enumerate()
            .map(|(i, role)| {
                let def = &role.def;
                let aka = aliases(&def.name);
                // A file replacing a built-in keeps its aliases: names match through them.
                let name = if aka.is_empty() {
                    def.name.clone()
                } else {
                    format!("{} ({})", def.name, aka.join(", "))
                };
                vec![
                    name,
                    role.layer.to_string(),
                    clip(&def.tools.display(), 48),
                    match checks.get(i) {
                        Some(check) => clip(&check.model.cell(), 64),
                        None => def.model.clone().unwrap_or_else(|| "-".into()),
                    },
                    if def.readonly { "yes" } else { "no" }.to_string(),
                    role.file
                        .as_deref()
                        .map_or_else(|| "-".to_string(), |f| self.path(f)),
                ]
            })
            .collect();
        table(
            &["NAME", "LAYER", "TOOLS", "MODEL", "READ-ONLY", "FILE"],
            &rows,
        )
    }

    /// Per role: why it would not launch, which tools it names that it would not get, what
    /// its model resolved through, and the file's own notes (ignored keys, dropped tools).
    fn role_notes(&self, roster: &Roster, checks: &[RoleCheck]) -> String {
        let mut items: Vec<(String, String)> = Vec::new();
        for (role, check) in roster.roles.iter().zip(checks) {
            let name = &role.def.name;
            let mut add = |text: String| items.push((name.clone(), text));
            for p in &check.problems {
                add(format!("does not launch: {}", one_line(p)));
            }
            if let Some(note) = check
                .model
                .note
                .as_ref()
                .filter(|_| check.model.note_adds())
            {
                add(format!("model: {}", one_line(note)));
            }
            for d in &check.dropped {
                add(format!("not given to the child: {d}"));
            }
            for w in &check.warnings {
                add(one_line(w));
            }
            for note in &role.def.notes {
                add(one_line(note));
            }
        }
        let lines: Vec<String> = grouped(&items)
            .into_iter()
            .map(|line| format!("  {line}"))
            .collect();
        section("Notes", &lines)
    }

    fn overrides(&self, roster: &Roster) -> String {
        let mut lines = Vec::new();
        for role in &roster.roles {
            // Nearest replaced definition first: that is the one a reader expects to see named.
            for lower in role.overrides.iter().rev() {
                lines.push(format!(
                    "  {} overrides {} {}",
                    self.origin(&role.origin()),
                    self.origin(lower),
                    role.def.name
                ));
            }
        }
        section("Overrides", &lines)
    }

    fn blocked(&self, roster: &Roster) -> String {
        let lines: Vec<String> = roster
            .blocked
            .iter()
            .map(|b| {
                format!(
                    "  {} — {} {}: {}",
                    b.name,
                    b.layer,
                    self.path(&b.file),
                    one_line(&b.reason)
                )
            })
            .collect();
        section("Blocked names (unavailable until fixed)", &lines)
    }

    /// Everything discovery reported that the sections above do not already say.
    fn diagnostics(&self, roster: &Roster) -> String {
        let lines: Vec<String> = roster
            .diagnostics
            .iter()
            .filter(|d| match d.kind {
                DiagnosticKind::Override => false,
                // A loaded role's own notes are in the Notes section.
                DiagnosticKind::Note => !roster
                    .roles
                    .iter()
                    .any(|r| r.file.is_some() && r.file == d.file),
                // Shown with its blocked name, unless a higher file replaced that name since.
                DiagnosticKind::Malformed => !roster
                    .blocked
                    .iter()
                    .any(|b| Some(&b.file) == d.file.as_ref()),
                _ => true,
            })
            .map(|d| {
                let tag = match d.kind {
                    DiagnosticKind::Malformed => "malformed",
                    DiagnosticKind::UnreadableDir => "unreadable",
                    DiagnosticKind::Untrusted => "ignored",
                    DiagnosticKind::Note | DiagnosticKind::Override => "note",
                };
                let message = one_line(&d.message);
                if let (DiagnosticKind::Untrusted, Some(dir)) = (d.kind, &d.file) {
                    return format!("  {tag}: {} (the project is not trusted)", self.path(dir));
                }
                match &d.file {
                    Some(file) if !message.contains(&file.display().to_string()) => {
                        format!("  {tag}: {}: {message}", self.path(file))
                    }
                    _ => format!("  {tag}: {message}"),
                }
            })
            .collect();
        section("Diagnostics", &lines)
    }

    fn trust_line(&self, trust: &ProjectTrust, for_this_run: bool) -> String {
        match trust {
            ProjectTrust::Trusted if for_this_run => format!(
                "Project {}: trusted for this run (--trust); its agents are loaded.\n",
                self.root.display()
            ),
            ProjectTrust::Trusted => format!(
                "Project {}: trusted; its agents are loaded.\n",
                self.root.display()
            ),
            ProjectTrust::Untrusted { reason } => {
                let mut out = format!(
                    "Project {}: not trusted; its agents are not loaded.\n",
                    self.root.display()
                );
                // The plain "is not trusted" reason only repeats the line above; another one
                // (an unreadable trust store) is news.
                let plain = format!("project {} is not trusted", self.root.display());
                if !reason.starts_with(&plain) {
                    out.push_str(&format!("  {}\n", one_line(reason)));
                }
                out.push_str(&format!(
                    "  Trust it with `cadre trust {}` (or pass --trust for one run).\n",
                    self.root.display()
                ));
                out
            }
        }
    }
}

fn section(title: &str, lines: &[String]) -> String {
    if lines.is_empty() {
        return String::new();
    }
    let mut out = format!("\n{title}:\n");
    for line in lines {
        out.push_str(line);
        out.push('\n');
    }
    out
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use cadre_core::config::CadreHome;
    use std::path::PathBuf;

    fn roster_in(dir: &Path, trust: ProjectTrust) -> (Roster, PathBuf) {
        let home = dir.join("cadre-home");
        let project = dir.join("project");
        std::fs::create_dir_all(project.join(".git")).unwrap();
        let opts = DiscoverOptions {
            cadre_home: CadreHome::new(&home),
            home_dir: None,
            cwd: project.clone(),
            trust,
        };
        (discover(&opts), project)
    }

    #[test]
    fn builtins_only_lists_every_role_and_the_untrusted_hint() {
        let tmp = tempfile::tempdir().unwrap();
        let trust = ProjectTrust::Untrusted {
            reason: format!(
                "project {} is not trusted (run `cadre trust`); ignored",
                tmp.path().join("project").display()
            ),
        };
        let (roster, project) = roster_in(tmp.path(), trust.clone());
        let view = View {
            root: &project,
            home: None,
        };
        let out = view.render_checked(&roster, &[], &trust, false);
        assert!(out.starts_with("NAME"), "{out}");
        assert!(out.contains("general-purpose (general)"), "{out}");
        assert!(out.contains("Explore (explore, explorer)"), "{out}");
        assert!(out.contains("not trusted"), "{out}");
        assert!(out.contains("cadre trust"), "{out}");
        assert!(!out.contains("Overrides:"), "{out}");
        // Said once, not once more in the reason's words.
        assert_eq!(out.matches("not trusted").count(), 1, "{out}");
        assert!(!out.contains("Blocked"), "{out}");
    }

    #[test]
    fn overrides_and_blocked_names_are_reported_once() {
        let tmp = tempfile::tempdir().unwrap();
        let agents = tmp.path().join("project/.cadre/agents");
        std::fs::create_dir_all(&agents).unwrap();
        std::fs::write(
            agents.join("code.md"),
            "---\nname: code\ndescription: project code\n---\nbody\n",
        )
        .unwrap();
        std::fs::write(
            agents.join("review.md"),
            "---\nname: review\nbogus: 1\n---\n",
        )
        .unwrap();
        let (roster, project) = roster_in(tmp.path(), ProjectTrust::Trusted);
        let view = View {
            root: &project,
            home: None,
        };
        let out = view.render_checked(&roster, &[], &ProjectTrust::Trusted, false);
        assert!(
            out.contains("project .cadre/agents/code.md overrides built-in code"),
            "{out}"
        );
        assert!(out.contains("code (implementer)"), "{out}");
        assert!(out.contains("Blocked names"), "{out}");
        assert!(
            out.contains("review — project .cadre/agents/review.md"),
            "{out}"
        );
        // The malformed diagnostic is the blocked entry; it is not repeated.
        assert!(!out.contains("malformed:"), "{out}");
        assert!(out.contains("trusted; its agents are loaded"), "{out}");
    }
}
