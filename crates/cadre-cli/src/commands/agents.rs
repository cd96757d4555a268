//! `cadre agents`: the roster of agent types (SPEC I2, T2–T5) — each role with its layer, file,
//! tools, locked model and read-only flag, then what overrides what, which names are blocked and
//! why, other diagnostics, and whether the project's own roles were loaded (T4).
//!
//! Reads role files only: no network, no model registry, so it starts in milliseconds (P2).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::roles::builtin::aliases;
use cadre_core::roles::{DiagnosticKind, DiscoverOptions, Origin, ProjectTrust, Roster, discover};

use super::format::{clip, show_path, table};
use super::{Place, print_out};

#[derive(Debug, clap::Args)]
pub struct AgentsArgs {
    /// Load the project's roles as if it were trusted (this run only).
    #[arg(long)]
    pub trust: bool,
}

pub fn run(args: &AgentsArgs) -> Result<ExitCode> {
    let place = Place::from_env()?;
    let trust = place.trust(args.trust);
    let opts = DiscoverOptions::new(place.home.clone(), place.cwd.clone(), trust.clone());
    let roster = discover(&opts);
    let view = View {
        root: &place.root,
        home: opts.home_dir.as_deref(),
    };
    print_out(&view.render(&roster, &trust, args.trust));
    Ok(ExitCode::SUCCESS)
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

    /// The whole report.
    pub fn render(&self, roster: &Roster, trust: &ProjectTrust, for_this_run: bool) -> String {
        let mut out = String::new();
        out.push_str(&self.roles_table(roster));
        out.push_str(&self.overrides(roster));
        out.push_str(&self.blocked(roster));
        out.push_str(&self.diagnostics(roster));
        out.push('\n');
        out.push_str(&self.trust_line(trust, for_this_run));
        out
    }

    fn roles_table(&self, roster: &Roster) -> String {
        let rows: Vec<Vec<String>> = roster
            .roles
            .iter()
            .map(|role| {
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
                    def.model.clone().unwrap_or_else(|| "-".into()),
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
        let out = view.render(&roster, &trust, false);
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
        let out = view.render(&roster, &ProjectTrust::Trusted, false);
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
