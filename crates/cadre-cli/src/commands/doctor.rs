//! `cadre doctor` (SPEC I2, T4, S2): what configuration cadre reads and what is wrong with it —
//! CADRE_HOME, models.json / settings.json / trust.json, providers and which have credentials
//! (by variable name, never a key), the project's trust and why, kernel sandbox support, role
//! files that are malformed or blocked, `subagents` settings, and task records left running.
//!
//! Every check reports and moves on; problems are tagged `error:` or `warning:` and counted at
//! the end, and the exit code is 1 when any error was reported (0 with warnings only).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use cadre_core::config::{TrustStore, load_settings};
use cadre_core::orchestrator::settings::SubagentSettings;
use cadre_core::orchestrator::store::{TaskStore, pid_is_alive};
use cadre_core::roles::{Diagnostic, DiagnosticKind, DiscoverOptions, ProjectTrust, discover};
use cadre_llm::ModelRegistry;
use cadre_llm::registry::{AuthFile, KeySource, ModelsFile, ProcessEnv, home_dir};
use cadre_protocol::TaskStatus;
use cadre_tools::sandbox::{SandboxStatus, landlock_status, mechanisms};

use super::format::{grouped_named, show_path};
use super::role_check::Checker;
use super::tasks::in_project;
use super::{Place, print_out};

#[derive(Debug, clap::Args)]
pub struct DoctorArgs {
    /// Check as if the project were trusted (this run only).
    #[arg(long)]
    pub trust: bool,
}

/// The report, built section by section, counting problems.
#[derive(Default)]
struct Report {
    text: String,
    errors: usize,
    warnings: usize,
}

impl Report {
    fn section(&mut self, title: &str) {
        if !self.text.is_empty() {
            self.text.push('\n');
        }
        self.text.push_str(title);
        self.text.push('\n');
    }

    fn line(&mut self, text: impl AsRef<str>) {
        self.text.push_str("  ");
        self.text.push_str(text.as_ref());
        self.text.push('\n');
    }

    fn warn(&mut self, text: impl AsRef<str>) {
        self.warnings += 1;
        self.line(format!("warning: {}", text.as_ref()));
    }

    fn error(&mut self, text: impl AsRef<str>) {
        self.errors += 1;
        self.line(format!("error: {}", text.as_ref()));
    }

    fn finish(mut self) -> String {
        self.text.push('\n');
        let summary = match (self.errors, self.warnings) {
            (0, 0) => "No problems found.".to_string(),
            (e, w) => format!("{} and {}.", plural(e, "error"), plural(w, "warning")),
        };
        self.text.push_str(&summary);
        self.text.push('\n');
        self.text
    }
}

fn plural(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

pub fn run(args: &DoctorArgs) -> Result<ExitCode> {
    let place = Place::from_env()?;
    let user_home = home_dir(&ProcessEnv);
    let short = |p: &Path| show_path(p, &place.root, user_home.as_deref());
    let mut r = Report::default();

    r.section("Home");
    let home = place.home.root();
    if home.is_dir() {
        r.line(format!("CADRE_HOME: {}", home.display()));
    } else {
        r.line(format!(
            "CADRE_HOME: {} (does not exist yet; created on first run)",
            home.display()
        ));
    }
    r.line(format!("project: {}", place.root.display()));

    // Trust first: settings and roles depend on it.
    let trust = trust_section(&mut r, &place, args.trust);
    let default_model = config_section(&mut r, &place, &trust, &short);
    providers_section(&mut r, &place, default_model);
    sandbox_section(&mut r);
    roles_section(&mut r, &place, &trust, &short);
    mcp_section(&mut r, &place, &trust, &short);
    tasks_section(&mut r, &place);

    // Errors are what breaks a run or a launch: scripts and CI can stop on them.
    let failed = r.errors > 0;
    print_out(&r.finish());
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn trust_section(r: &mut Report, place: &Place, flag: bool) -> ProjectTrust {
    r.section("Trust");
    let store = match TrustStore::load(&place.home) {
        Ok(store) => Some(store),
        Err(e) => {
            r.error(format!("{e}; no project is trusted until it is fixed"));
            None
        }
    };
    if let Some(store) = &store {
        let n = store.entries().count();
        let state = if store.path().exists() {
            format!(
                "{} ({})",
                store.path().display(),
                plural(n, "trusted directory")
            )
        } else {
            format!("{} (none yet)", store.path().display())
        };
        r.line(format!("trust.json: {state}"));
    }
    let by = store.as_ref().and_then(|s| s.trusted_by(&place.root));
    if flag {
        r.line(format!(
            "project {}: trusted for this run (--trust)",
            place.root.display()
        ));
        return ProjectTrust::Trusted;
    }
    match by {
        Some(entry) if entry == place.root => {
            r.line(format!("project {}: trusted", place.root.display()));
            ProjectTrust::Trusted
        }
        Some(entry) => {
            r.line(format!(
                "project {}: trusted through {}",
                place.root.display(),
                entry.display()
            ));
            ProjectTrust::Trusted
        }
        None => {
            // A repository inside a trusted directory is a project of its own.
            let nested = store
                .as_ref()
                .and_then(|s| s.beyond_repository(&place.root))
                .map(|entry| {
                    format!(
                        " (it is a repository of its own inside trusted {}, which does not cover it)",
                        entry.display()
                    )
                })
                .unwrap_or_default();
            r.line(format!(
                "project {}: not trusted{nested} — its agents, skills, .cadre/settings.json and .mcp.json are ignored; `cadre trust {}` trusts it",
                place.root.display(),
                place.root.display()
            ));
            ProjectTrust::Untrusted {
                reason: format!("project {} is not trusted", place.root.display()),
            }
        }
    }
}

/// The settings section; returns the default model the settings name, if any.
fn config_section(
    r: &mut Report,
    place: &Place,
    trust: &ProjectTrust,
    short: &dyn Fn(&Path) -> String,
) -> Option<String> {
    r.section("Settings");
    match load_settings(&place.home, Some(&place.root), trust.is_trusted()) {
        Ok(loaded) => {
            if loaded.files.is_empty() {
                r.line("settings.json: none (defaults)");
            }
            for file in &loaded.files {
                if loaded.pi_file.as_ref() == Some(file) {
                    r.line(format!(
                        "settings.json: {} (Pi's, read-only: cadre has none of its own; only {} are read)",
                        short(file),
                        cadre_core::config::pi_settings::SHARED_KEYS.join(", ")
                    ));
                } else {
                    r.line(format!("settings.json: {} (read)", short(file)));
                }
            }
            for note in &loaded.notes {
                r.warn(note);
            }
            if let Some(skipped) = &loaded.skipped_untrusted {
                r.line(format!(
                    "settings.json: {} (not read: the project is not trusted)",
                    short(skipped)
                ));
            }
            match SubagentSettings::from_value(loaded.settings.subagents.as_ref()) {
                Ok(parsed) => {
                    for w in &parsed.warnings {
                        r.warn(w);
                    }
                    if parsed.warnings.is_empty() && loaded.settings.subagents.is_some() {
                        r.line("subagents settings: ok");
                    }
                }
                Err(e) => r.error(format!("{e}; launches fail until it is fixed")),
            }
            loaded.settings.default_model_name()
        }
        Err(e) => {
            r.error(e.to_string());
            None
        }
    }
}

/// The configured MCP servers (SPEC I7): where each comes from, and whether it starts (each
/// within the start-up timeout, all at once) with how many tools.
fn mcp_section(
    r: &mut Report,
    place: &Place,
    trust: &ProjectTrust,
    short: &dyn Fn(&Path) -> String,
) {
    r.section("MCP servers");
    let configured = cadre_host::mcp::configured(&place.home, &place.root, trust.is_trusted());
    for note in &configured.notes {
        if let Some(warning) = note.strip_prefix("warning: ") {
            r.warn(warning);
        }
    }
    if let Some(ignored) = &configured.ignored_untrusted {
        r.line(format!(
            ".mcp.json: {} (not read: the project is not trusted; `cadre trust` trusts it)",
            short(ignored)
        ));
    }
    if configured.servers.is_empty() {
        r.line("none configured");
        return;
    }
    let configs = configured.configs();
    let server_place = cadre_mcp::ServerPlace {
        cwd: place.root.clone(),
        log_dir: Some(place.home.root().join("logs").join("mcp")),
    };
    let limits = cadre_host::mcp::limits();
    // The command runs inside the process's runtime, which cannot be blocked on: the servers
    // start on a thread of their own.
    let statuses = std::thread::scope(|scope| {
        scope
            .spawn(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .map_err(|e| format!("cannot start a runtime: {e}"))?;
                Ok::<_, String>(runtime.block_on(async {
                    let set = cadre_mcp::McpSet::start(&configs, &server_place, &limits).await;
                    set.statuses.clone()
                }))
            })
            .join()
            .unwrap_or_else(|_| Err("the check stopped unexpectedly".into()))
    });
    let statuses = match statuses {
        Ok(statuses) => statuses,
        Err(e) => {
            r.error(format!("MCP servers could not be checked: {e}"));
            return;
        }
    };
    for (server, status) in configured.servers.iter().zip(statuses) {
        let from = server
            .source
            .as_deref()
            .map(|p| format!(", from {}", short(p)))
            .unwrap_or_default();
        let what = format!(
            "{}: {} {}{from}",
            server.config.name,
            status.transport,
            server.config.transport.target()
        );
        // One bounded line without registered secrets: the cause can quote the server.
        let shown = cadre_mcp::shown::message;
        match status.outcome {
            Ok((tools, read_only)) => r.line(shown(&format!(
                "{what}: started, {} ({read_only} read-only)",
                plural(tools, "tool")
            ))),
            Err(why) => r.warn(shown(&format!("{what}: did not start: {why}"))),
        }
    }
}

fn providers_section(r: &mut Report, place: &Place, default_model: Option<String>) {
    r.section("Models and providers");
    let registry = match ModelRegistry::load(place.home.root(), &ProcessEnv) {
        Ok(registry) => registry,
        Err(e) => {
            r.error(format!("{e}; no model can be called until it is fixed"));
            return;
        }
    };
    match registry.models_file() {
        ModelsFile::None => r.line("models.json: none (built-in providers only)"),
        ModelsFile::Cadre(path) => r.line(format!("models.json: {}", path.display())),
        ModelsFile::Pi(path) => r.line(format!(
            "models.json: {} (Pi's, read-only: cadre has none of its own)",
            path.display()
        )),
    }
    match registry.auth_file() {
        AuthFile::None => {}
        AuthFile::Cadre(path) => r.line(format!("auth.json: {}", path.display())),
        AuthFile::Pi(path) => r.line(format!(
            "auth.json: {} (Pi's, read-only: cadre has none of its own)",
            path.display()
        )),
    }
    for note in registry.auth_notes() {
        r.warn(note.clone());
    }
    for ignored in registry.ignored_providers() {
        r.warn(format!(
            "models.json provider `{ignored}` is ignored: cadre has no such built-in provider and the entry defines no models"
        ));
    }
    let statuses = registry.providers_status();
    let mut any_credentials = false;
    for p in &statuses {
        any_credentials |= p.has_credentials;
        let origin = if p.builtin { "built-in" } else { "models.json" };
        let key = match &p.key_source {
            KeySource::EnvVar { name, set: true } => format!("credentials: ${name} is set"),
            KeySource::EnvVar { name, set: false } => {
                format!("no credentials: ${name} is not set")
            }
            KeySource::Command => "credentials: from a command (not run here)".to_string(),
            KeySource::Literal => "credentials: a key in models.json".to_string(),
            KeySource::Stored { path } => format!("credentials: a key in {}", path.display()),
            KeySource::NotRequired => "credentials: none needed".to_string(),
            KeySource::Missing => "no credentials: none configured".to_string(),
        };
        r.line(format!(
            "{} ({origin}, {}): {key}",
            p.provider,
            plural(p.models, "model")
        ));
    }
    if !any_credentials {
        let vars: Vec<String> = statuses
            .iter()
            .filter_map(|p| match &p.key_source {
                KeySource::EnvVar { name, .. } => Some(name.clone()),
                _ => None,
            })
            .collect();
        r.warn(format!(
            "no provider has credentials, so no model can be called; set one of {} (or try `cadre demo`)",
            vars.join(", ")
        ));
        return;
    }
    // What `cadre -p` without --model would run, by the same rule it uses, so a configuration
    // where only `--model` works is not reported as problem-free.
    let from_settings = default_model.is_some();
    match cadre_host::pick_model(&registry, None, default_model, &place.home) {
        Ok(model) => r.line(format!(
            "default model: {}/{}{}",
            model.provider,
            model.id,
            if from_settings { " (settings)" } else { "" }
        )),
        Err(e) => r.warn(format!("`cadre -p` without --model fails: {e}")),
    }
}

/// The sandbox line: what the kernel offers and what that means for read-only roles' bash (S2).
/// The status comes from the same system-call probe that decides whether bash is sandboxed or
/// refused, so doctor can never disagree with a run (securityfs's LSM list is often not mounted,
/// and an enabled LSM can still be too old to be used).
fn sandbox_line(status: &SandboxStatus) -> Result<String, String> {
    match status {
        SandboxStatus::Enforced { abi } => Ok(format!(
            "Landlock ABI {abi}: read-only roles' bash runs sandboxed (kernel-enforced read-only filesystem)"
        )),
        SandboxStatus::Unavailable { reason } => Err(format!(
            "Landlock unavailable ({reason}): read-only roles' bash is refused, never run unsandboxed"
        )),
    }
}

fn sandbox_section(r: &mut Report) {
    r.section("Sandbox");
    let status = landlock_status();
    match sandbox_line(&status) {
        Ok(line) => r.line(line),
        Err(line) => r.warn(line),
    }
    for m in mechanisms(&status) {
        let line = format!("{}: {}", m.name, m.detail);
        if m.active { r.line(line) } else { r.warn(line) }
    }
    if status.is_enforced() {
        match probe_sandbox() {
            Ok(()) => r.line("probe: a command ran with every layer applied"),
            Err(why) => r.error(format!("probe: the sandbox could not run a command ({why}); read-only roles' bash will fail")),
        }
    }
    r.line("credentials: bash commands run without *KEY*/*TOKEN*/*SECRET*/*PASSWORD* variables (settings shellEnv.allow passes named ones)");
}

/// Run `true` through this binary's own sandbox entry point: the layers are applied for real.
fn probe_sandbox() -> Result<(), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let scratch = tempfile_dir()?;
    let out = std::process::Command::new(exe)
        .args([cadre_tools::sandbox::EXEC_ARG, "--rw"])
        .arg(&scratch)
        .args(["--", "true"])
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| e.to_string());
    let _ = std::fs::remove_dir(&scratch);
    let out = out?;
    if out.status.success() {
        Ok(())
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

/// A fresh empty directory for the probe's writable rule.
fn tempfile_dir() -> Result<std::path::PathBuf, String> {
    let dir = std::fs::canonicalize(std::env::temp_dir())
        .map_err(|e| e.to_string())?
        .join(format!("cadre-doctor-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    Ok(dir)
}

fn roles_section(
    r: &mut Report,
    place: &Place,
    trust: &ProjectTrust,
    short: &dyn Fn(&Path) -> String,
) {
    r.section("Agents");
    let opts = DiscoverOptions::new(place.home.clone(), place.cwd.clone(), trust.clone());
    let roster = discover(&opts);
    r.line(format!(
        "{} available (`cadre agents` lists them)",
        plural(roster.roles.len(), "agent type")
    ));
    // What a launch of each role from the root session would meet, as `cadre agents --json`
    // says it: the registry is only listed, so no `!command` key runs.
    let checker = Checker::load(place, trust);
    // (name, subject, message) per level, said once per message so a collection of a hundred
    // files naming one unavailable model is one line.
    let mut errors = Vec::new();
    let mut warnings = Vec::new();
    let mut notes = Vec::new();
    for role in &roster.roles {
        let at = role
            .file
            .as_deref()
            .map_or_else(|| role.layer.to_string(), short);
        let name = role.def.name.clone();
        let subject = format!("agent type `{name}` ({at})");
        let item = |message: String| (name.clone(), subject.clone(), message);
        let check = checker.check(&role.def);
        for problem in &check.problems {
            errors.push(item(format!(
                "{}, so every launch fails",
                one_line(problem)
            )));
        }
        if check.model.falls_back_to_parent {
            // The note says why and that the parent's model is used.
            warnings.push(item(one_line(
                check.model.note.as_deref().unwrap_or_default(),
            )));
        } else if let Some(note) = check
            .model
            .note
            .as_ref()
            .filter(|_| check.model.note_adds())
        {
            notes.push(item(one_line(note)));
        }
        for w in &check.warnings {
            warnings.push(item(one_line(w)));
        }
        for d in &check.dropped {
            notes.push(item(format!("not given to the child: {d}")));
        }
        for note in &role.def.notes {
            notes.push(item(one_line(note)));
        }
    }
    for line in grouped_named(&errors) {
        r.error(line);
    }
    for line in grouped_named(&warnings) {
        r.warn(line);
    }
    for line in grouped_named(&notes) {
        r.line(format!("note: {line}"));
    }
    for b in &roster.blocked {
        r.error(format!(
            "agent type `{}` is blocked by {} ({}): {}",
            b.name,
            short(&b.file),
            b.layer,
            one_line(&b.reason)
        ));
    }
    for d in &roster.diagnostics {
        let message = one_line(&d.message);
        let shown = with_place(d, &message, short);
        match d.kind {
            DiagnosticKind::Malformed => {
                // Listed above when its name is blocked; otherwise a higher file replaced it.
                if !roster
                    .blocked
                    .iter()
                    .any(|b| Some(&b.file) == d.file.as_ref())
                {
                    r.error(format!(
                        "malformed, and replaced by a higher layer: {shown}"
                    ));
                }
            }
            DiagnosticKind::UnreadableDir => r.error(shown),
            DiagnosticKind::Untrusted => r.line(format!("ignored (untrusted): {shown}")),
            // A loaded role's own notes were said with it above.
            DiagnosticKind::Note
                if roster
                    .roles
                    .iter()
                    .any(|role| role.file.is_some() && role.file == d.file) => {}
            DiagnosticKind::Note => r.line(format!("note: {shown}")),
            DiagnosticKind::Override => {}
        }
    }
    let overrides = roster
        .roles
        .iter()
        .filter(|x| !x.overrides.is_empty())
        .count();
    if overrides > 0 {
        r.line(format!(
            "{} another definition (see `cadre agents`)",
            if overrides == 1 {
                "1 agent type overrides".to_string()
            } else {
                format!("{overrides} agent types override")
            }
        ));
    }
}

/// A discovery diagnostic led by its file and line (`.claude/agents/x.md:3: …`), unless the
/// message already names the file.
fn with_place(d: &Diagnostic, message: &str, short: &dyn Fn(&Path) -> String) -> String {
    let Some(file) = &d.file else {
        return message.to_string();
    };
    let shown = short(file);
    let place = match d.line {
        Some(line) => format!("{shown}:{line}"),
        None => shown.clone(),
    };
    if message.contains(&place) {
        return message.to_string();
    }
    // A message that names the file already gets only the line.
    let full = file.display().to_string();
    if message.contains(&full) || message.contains(&shown) {
        return match d.line {
            Some(line) => format!("line {line}: {message}"),
            None => message.to_string(),
        };
    }
    format!("{place}: {message}")
}

/// Unlike start-up and `cadre tasks`, which read only what they need (SPEC P4), this reads every
/// record: it is the check that each one parses and that each running one has its live marker.
fn tasks_section(r: &mut Report, place: &Place) {
    r.section("Tasks");
    let store = TaskStore::new(place.home.tasks_dir());
    let listing = match store.list_all() {
        Ok(listing) => listing,
        Err(e) => {
            r.error(e.to_string());
            return;
        }
    };
    let here = listing
        .records
        .iter()
        .filter(|t| in_project(t, &place.root))
        .count();
    let mut running = 0;
    let mut orphaned = 0;
    let mut unmarked = 0;
    for t in listing
        .records
        .iter()
        .filter(|t| t.status == TaskStatus::Running)
    {
        if !store.is_marked_live(&t.root_session_id, &t.id) {
            unmarked += 1;
        }
        if t.owner_pid
            .is_some_and(|pid| pid_is_alive(pid, t.owner_start_time))
        {
            running += 1;
        } else {
            orphaned += 1;
        }
    }
    r.line(format!(
        "{} in this project, {} in all; {running} running",
        plural(here, "task"),
        listing.records.len()
    ));
    if orphaned > 0 {
        r.warn(format!(
            "{} left running by a process that is gone; `cadre tasks` marks them failed/orphaned",
            plural(orphaned, "task")
        ));
    }
    // Before the one-time scan every record is still looked at, so a missing marker only
    // matters after it: a cadre without markers wrote these since.
    if unmarked > 0 && store.markers_complete() {
        r.warn(format!(
            "{} running without a live marker, so start-up recovery does not look at them \
             (written by an older cadre?); removing {} has the next start scan every record",
            plural(unmarked, "task"),
            store.scan_stamp().display()
        ));
    }
    for problem in &listing.problems {
        r.warn(format!(
            "unreadable task record: {}",
            super::tasks::problem_text(problem)
        ));
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn the_sandbox_line_says_what_happens_to_read_only_bash() {
        let line = sandbox_line(&SandboxStatus::Enforced { abi: 6 }).unwrap();
        assert!(
            line.starts_with("Landlock ABI 6: read-only roles' bash runs sandboxed"),
            "{line}"
        );
        let line = sandbox_line(&SandboxStatus::Unavailable {
            reason: "the kernel has no Landlock support".into(),
        })
        .unwrap_err();
        assert!(
            line.starts_with(
                "Landlock unavailable (the kernel has no Landlock support): read-only roles' bash is refused"
            ),
            "{line}"
        );
    }

    #[test]
    fn diagnostics_lead_with_their_file_and_line() {
        let short = |p: &Path| p.display().to_string().replace("/p/", "");
        let d = |file: Option<&str>, line: Option<usize>| Diagnostic {
            kind: DiagnosticKind::Malformed,
            file: file.map(std::path::PathBuf::from),
            line,
            message: String::new(),
        };
        let cases = [
            (d(Some("/p/a.md"), Some(3)), "bad key", "a.md:3: bad key"),
            (d(Some("/p/a.md"), None), "bad key", "a.md: bad key"),
            (d(None, None), "bad key", "bad key"),
            (
                d(Some("/p/a.md"), Some(3)),
                "/p/a.md: bad key",
                "line 3: /p/a.md: bad key",
            ),
            (d(Some("/p/a.md"), Some(3)), "a.md:3: bad", "a.md:3: bad"),
        ];
        for (diag, message, want) in cases {
            assert_eq!(with_place(&diag, message, &short), want);
        }
    }

    #[test]
    fn the_summary_counts_problems() {
        let mut r = Report::default();
        r.section("A");
        r.line("fine");
        assert!(r.finish().ends_with("No problems found.\n"));
        let mut r = Report::default();
        r.section("A");
        r.warn("w");
        r.error("e1");
        r.error("e2");
        let text = r.finish();
        assert!(text.contains("  warning: w\n  error: e1\n"), "{text}");
        assert!(text.ends_with("2 errors and 1 warning.\n"), "{text}");
    }
}
