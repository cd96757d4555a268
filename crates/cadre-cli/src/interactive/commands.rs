//! What each slash command does, against the host. Every command answers with notes for the
//! conversation and, for some, an effect the loop carries out (refresh the status line, reload
//! the conversation of a new session, restart the session with other options).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use cadre_host::{Host, parse_thinking};
use cadre_protocol::TaskRecord;

use super::slash::{COMMANDS, KEYS, Slash};
use super::transcript::NoteKind;
use crate::commands::format;

/// How many sessions `/resume` lists.
const SESSIONS_LISTED: usize = 20;
/// How many models `/model` lists.
const MODELS_LISTED: usize = 40;
/// The most of a task's output `/task` shows.
const OUTPUT_SHOWN: usize = 8 * 1024;

#[derive(Debug, Default)]
pub struct Reply {
    pub notes: Vec<(NoteKind, String)>,
    pub effect: Effect,
}

#[derive(Debug, Default, PartialEq, Eq)]
pub enum Effect {
    #[default]
    None,
    /// The model, level or session name changed.
    Refresh,
    /// Another session is now the root: show its conversation, forget the old tasks.
    Reload,
    /// Start the session again with plan mode or the project's trust changed.
    Restart { plan: Option<bool> },
}

impl Reply {
    fn note(kind: NoteKind, text: impl Into<String>) -> Reply {
        Reply {
            notes: vec![(kind, text.into())],
            effect: Effect::None,
        }
    }

    fn info(text: impl Into<String>) -> Reply {
        Reply::note(NoteKind::Info, text)
    }

    fn error(text: impl Into<String>) -> Reply {
        Reply::note(NoteKind::Error, text)
    }

    fn with(mut self, effect: Effect) -> Reply {
        self.effect = effect;
        self
    }
}

/// What a command needs besides the host.
#[derive(Clone)]
pub struct Env {
    pub cwd: PathBuf,
    pub session_dir: PathBuf,
    pub plan: bool,
    /// The running tasks' usage as the panel has it (a record's usage grows only when a run
    /// ends).
    pub live_usage: std::collections::HashMap<String, cadre_protocol::TaskUsage>,
}

pub async fn run(host: Host, env: Env, command: Slash) -> Reply {
    match command {
        Slash::Help => Reply::info(help()),
        Slash::Agents => agents(&host),
        Slash::Tasks => tasks(&host, &env),
        Slash::Task(target) => task(&host, &target),
        Slash::Stop(target) => stop(&host, &target).await,
        Slash::Model(None) => models(&host, ""),
        Slash::Model(Some(name)) => model(&host, &name).await,
        Slash::Thinking(None) => {
            let s = host.state();
            Reply::info(format!(
                "thinking: {} (set with /thinking off|minimal|low|medium|high|xhigh|max)",
                s.thinking.as_str()
            ))
        }
        Slash::Thinking(Some(level)) => thinking(&host, &level).await,
        Slash::Plan(on) => plan(&host, &env, on),
        Slash::Trust(on) => trust(&host, on),
        Slash::New => match busy_refusal(&host, "start a new session") {
            Some(refusal) => refusal,
            None => new_session(&host).await,
        },
        Slash::Resume(None) => sessions(&env),
        Slash::Resume(Some(which)) => match busy_refusal(&host, "switch sessions") {
            Some(refusal) => refusal,
            None => resume(&host, &env, &which).await,
        },
        Slash::Compact(focus) => match host.compact(focus).await {
            Ok(result) => Reply::info(format!(
                "compacted: {} tokens before; the summary now stands for the earlier conversation",
                result.tokens_before
            ))
            .with(Effect::Refresh),
            Err(e) => Reply::error(format!("cannot compact: {e}")),
        },
        Slash::Export(file) => export(&host, &env, file.as_deref()),
        Slash::Quit => Reply::default(),
    }
}

async fn new_session(host: &Host) -> Reply {
    match host.new_session(None).await {
        Ok(switched) => {
            let mut reply = Reply::info("a new session");
            add_warnings(&mut reply, &switched.warnings);
            reply.with(Effect::Reload)
        }
        Err(e) => Reply::error(e.to_string()),
    }
}

fn help() -> String {
    let width = COMMANDS.iter().map(|(c, _)| c.len()).max().unwrap_or(0);
    let mut out = String::from("commands:\n");
    for (command, what) in COMMANDS {
        out.push_str(&format!("  {command:<width$}  {what}\n"));
    }
    out.push_str(&format!(
        "keys: {KEYS}\nA line starting with // sends a prompt that starts with /."
    ));
    out
}

fn add_warnings(reply: &mut Reply, warnings: &[String]) {
    for w in warnings {
        let kind = if w.starts_with("warning") {
            NoteKind::Warning
        } else {
            NoteKind::Info
        };
        reply.notes.push((kind, w.clone()));
    }
}

fn agents(host: &Host) -> Reply {
    let tasks = host.tasks();
    let roster = tasks.roster();
    let mut out = String::from("roles (Agent's subagent_type):\n");
    let width = roster
        .roles
        .iter()
        .map(|r| r.def.name.chars().count())
        .max()
        .unwrap_or(0)
        .min(30);
    for role in &roster.roles {
        let first = role.def.description.lines().next().unwrap_or_default();
        out.push_str(&format!(
            "  {:<width$}  {}\n",
            role.def.name,
            format::clip(first, 64)
        ));
    }
    for blocked in &roster.blocked {
        out.push_str(&format!(
            "  {:<width$}  blocked: {}\n",
            blocked.name,
            format::clip(&blocked.reason, 64)
        ));
    }
    if let Some(reason) = &roster.untrusted_reason {
        out.push_str(&format!(
            "project roles not loaded: {reason} (/trust on loads them)\n"
        ));
    }
    Reply::info(out.trim_end().to_string())
}

fn tasks(host: &Host, env: &Env) -> Reply {
    let snapshots = host.tasks().list();
    if snapshots.is_empty() {
        return Reply::info("no tasks in this session yet");
    }
    let ids: Vec<&str> = snapshots.iter().map(|t| t.task_id.as_str()).collect();
    let short = format::unique_prefixes(&ids, 8);
    let rows: Vec<Vec<String>> = snapshots
        .iter()
        .zip(short)
        .map(|(t, id)| {
            let usage = env.live_usage.get(&t.task_id).unwrap_or(&t.usage);
            vec![
                id,
                t.agent.clone(),
                t.name.clone().unwrap_or_default(),
                format!("{:?}", t.status).to_lowercase(),
                usage.turns.to_string(),
                format::tokens(usage.tokens.total_tokens),
                format::cost(usage.tokens.cost.total),
                format::clip(&t.description, 40),
            ]
        })
        .collect();
    let table = format::table(
        &[
            "ID",
            "ROLE",
            "NAME",
            "STATUS",
            "TURNS",
            "TOKENS",
            "COST",
            "DESCRIPTION",
        ],
        &rows,
    );
    Reply::info(table.trim_end().to_string())
}

fn task(host: &Host, target: &str) -> Reply {
    let tasks = host.tasks();
    let (record, output_path): (TaskRecord, PathBuf) = match tasks.record(target) {
        Ok(found) => found,
        Err(e) => return Reply::error(e.to_string()),
    };
    let id = record.id.clone();
    let mut out = crate::commands::task::show(&record, &output_path, SystemTime::now());
    let output = tasks.snapshot(&id).map(|s| s.output).unwrap_or_default();
    if !output.trim().is_empty() {
        out.push_str("\noutput:\n");
        out.push_str(&format::clip(&output, OUTPUT_SHOWN));
        out.push('\n');
    }
    let records = [record];
    let receipts = cadre_host::trace::notices::receipts(&host.messages(), &records);
    if let Some(receipt) = receipts.get(id.as_str()) {
        out.push_str("\nreceipt:\n");
        out.push_str(receipt);
    }
    Reply::info(out.trim_end().to_string())
}

async fn stop(host: &Host, target: &str) -> Reply {
    match host.tasks().stop(target).await {
        Ok(snapshot) => Reply::note(
            NoteKind::Task,
            format!(
                "stopped {} ({}); its partial output is kept",
                snapshot.name.as_deref().unwrap_or(&snapshot.task_id),
                snapshot.agent
            ),
        ),
        Err(e) => Reply::error(e.to_string()),
    }
}

fn models(host: &Host, search: &str) -> Reply {
    let registry = &host.context().registry;
    let current = host.state().model.full_name();
    let usable = crate::model_list::usable_matching(registry, search);
    if usable.is_empty() {
        return Reply::info(format!(
            "no model with credentials matches {search:?}; `cadre --list-models` lists them all"
        ));
    }
    let mut out = format!("models with credentials (now: {current}):\n");
    for m in usable.iter().take(MODELS_LISTED) {
        let mark = if m.full_name == current { "●" } else { " " };
        out.push_str(&format!("  {mark} {}\n", m.full_name));
    }
    if usable.len() > MODELS_LISTED {
        out.push_str(&format!(
            "  … and {} more (/model WORDS narrows)\n",
            usable.len() - MODELS_LISTED
        ));
    }
    out.push_str("/model NAME switches");
    Reply::info(out)
}

/// `/model NAME`: a name the registry resolves, else the one usable model the words match.
async fn model(host: &Host, name: &str) -> Reply {
    let registry = host.context().registry.clone();
    let target = if registry.resolve(name).is_ok() {
        name.to_string()
    } else {
        let matching: Vec<String> = crate::model_list::usable_matching(&registry, name)
            .into_iter()
            .map(|m| m.full_name)
            .collect();
        match matching.as_slice() {
            [one] => one.clone(),
            [] => {
                return Reply::error(format!(
                    "no model with credentials is named or matches {name:?} (/model lists them; `cadre --list-models` lists every known one)"
                ));
            }
            _ => return models(host, name),
        }
    };
    match host.set_model(&target).await {
        Ok(model) => Reply::info(format!("model: {}", model.full_name())).with(Effect::Refresh),
        // The host's refusal may list every model; its first line says why.
        Err(e) => Reply::error(e.to_string().lines().next().unwrap_or_default().to_string()),
    }
}

async fn thinking(host: &Host, level: &str) -> Reply {
    let level = match parse_thinking(level) {
        Ok(level) => level,
        Err(e) => return Reply::error(e.to_string()),
    };
    match host.set_thinking(level).await {
        Ok(effective) if effective == level => {
            Reply::info(format!("thinking: {}", effective.as_str())).with(Effect::Refresh)
        }
        Ok(effective) => Reply::note(
            NoteKind::Warning,
            format!(
                "thinking: {} ({} is more than this model takes)",
                effective.as_str(),
                level.as_str()
            ),
        )
        .with(Effect::Refresh),
        Err(e) => Reply::error(e.to_string()),
    }
}

/// Plan mode changes the root's tools, so the session is started again on the same file.
fn plan(host: &Host, env: &Env, on: Option<bool>) -> Reply {
    let want = on.unwrap_or(!env.plan);
    if want == env.plan {
        return Reply::info(if want {
            "plan mode is on (/plan off ends it)"
        } else {
            "plan mode is off (/plan on starts it)"
        });
    }
    if let Some(refusal) = busy_refusal(host, "change plan mode") {
        return refusal;
    }
    Reply::info(if want {
        "plan mode on: no edit or write tools; subagents only in planning roles"
    } else {
        "plan mode off"
    })
    .with(Effect::Restart { plan: Some(want) })
}

fn trust(host: &Host, on: Option<bool>) -> Reply {
    let ctx = host.context();
    let root = ctx.project_root.clone();
    let trusted = matches!(ctx.trust, cadre_core::roles::ProjectTrust::Trusted);
    let Some(want) = on else {
        return Reply::info(if trusted {
            format!(
                "{} is trusted: its agents, skills and .cadre/settings.json load (/trust off stops that)",
                root.display()
            )
        } else {
            format!(
                "{} is not trusted: its own agents, skills and settings do not load (/trust on loads them)",
                root.display()
            )
        });
    };
    if want == trusted {
        return Reply::info(format!(
            "{} is already {}",
            root.display(),
            if want { "trusted" } else { "untrusted" }
        ));
    }
    if let Some(refusal) = busy_refusal(host, "change the project's trust") {
        return refusal;
    }
    let mut store = match cadre_core::config::TrustStore::load(&ctx.home) {
        Ok(store) => store,
        Err(e) => return Reply::error(format!("cannot read the trust list: {e}")),
    };
    let changed = if want {
        store
            .trust(&root)
            .map(|p| format!("trusted: {}", p.display()))
    } else {
        store.revoke(&root).map(|removed| {
            if removed {
                format!("no longer trusted: {}", root.display())
            } else {
                format!(
                    "{} is trusted through a directory above it; `cadre trust --list` shows which",
                    root.display()
                )
            }
        })
    };
    match changed {
        Ok(text) => Reply::info(text).with(Effect::Restart { plan: None }),
        Err(e) => Reply::error(format!("cannot change the trust list: {e}")),
    }
}

/// A restart stops the session's tasks, so it waits until none runs.
fn busy_refusal(host: &Host, what: &str) -> Option<Reply> {
    if host.is_streaming() {
        return Some(Reply::error(format!(
            "cannot {what} while the agent works (Esc stops the turn)"
        )));
    }
    let live = host.tasks().live().len();
    if live > 0 {
        return Some(Reply::error(format!(
            "cannot {what} while {live} task{} run{} (/stop ID, or wait for them)",
            if live == 1 { "" } else { "s" },
            if live == 1 { "s" } else { "" }
        )));
    }
    None
}

fn sessions(env: &Env) -> Reply {
    let list = cadre_core::session::recent_sessions(&env.session_dir, SESSIONS_LISTED);
    if list.is_empty() {
        return Reply::info(format!("no sessions in {}", env.session_dir.display()));
    }
    let now = SystemTime::now();
    let mut out = String::from("sessions of this project, newest first:\n");
    // Ids made within a minute share their first characters (UUIDv7 starts with the time).
    let ids: Vec<&str> = list.iter().map(|(s, _)| s.id.as_str()).collect();
    let short = format::unique_prefixes(&ids, 8);
    for (i, ((s, modified), id)) in list.iter().zip(short).enumerate() {
        let age = format::age(&cadre_core::session::iso_timestamp(*modified), now);
        let first = first_prompt(&s.path).unwrap_or_default();
        out.push_str(&format!(
            "  {:>2}  {}  {:>8}  {}\n",
            i + 1,
            id,
            age,
            format::clip(&first, 60)
        ));
    }
    out.push_str("/resume N (or an id prefix) continues one");
    Reply::info(out)
}

async fn resume(host: &Host, env: &Env, which: &str) -> Reply {
    let list = cadre_core::session::recent_sessions(&env.session_dir, SESSIONS_LISTED);
    let path = match which.parse::<usize>() {
        Ok(n) if (1..=list.len()).contains(&n) => list[n - 1].0.path.clone(),
        Ok(n) => {
            return Reply::error(format!(
                "there is no session {n} (/resume lists {})",
                list.len()
            ));
        }
        Err(_) => match cadre_core::session::resolve_session_arg(
            which,
            &env.cwd,
            &env.session_dir,
            &env.session_dir,
        ) {
            Ok(cadre_core::session::SessionArg::Existing(path)) => env.cwd.join(path),
            Ok(cadre_core::session::SessionArg::New(_)) => {
                return Reply::error(format!("no session file {which}"));
            }
            Err(e) => return Reply::error(e.to_string()),
        },
    };
    match host.switch_session(path.clone()).await {
        Ok(switched) => {
            let mut reply = Reply::info(format!("continuing {}", path.display()));
            add_warnings(&mut reply, &switched.warnings);
            reply.with(Effect::Reload)
        }
        Err(e) => Reply::error(e.to_string()),
    }
}

/// A session's first prompt, read from at most its first 64 KiB.
fn first_prompt(path: &Path) -> Option<String> {
    use std::io::Read;
    let mut head = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(64 * 1024)
        .read_to_end(&mut head)
        .ok()?;
    let text = String::from_utf8_lossy(&head);
    text.lines().find_map(|line| {
        let v: serde_json::Value = serde_json::from_str(line).ok()?;
        let message = v.get("message")?;
        if message.get("role")?.as_str()? != "user" {
            return None;
        }
        let content = message.get("content")?;
        let text = match content {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Array(blocks) => blocks
                .iter()
                .find_map(|b| b.get("text")?.as_str().map(str::to_string))?,
            _ => return None,
        };
        let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
        Some(crate::commands::terminal_safe(&one_line).into_owned())
    })
}

fn export(host: &Host, env: &Env, file: Option<&str>) -> Reply {
    let state = host.state();
    let path = match file {
        Some(f) => env.cwd.join(f),
        None => env
            .cwd
            .join(format!("cadre-session-{}.html", &state.session_id)),
    };
    // A name the person typed may be a file of theirs; only this session's own default
    // export is replaced without asking.
    if file.is_some() && std::fs::symlink_metadata(&path).is_ok() {
        return Reply::error(format!(
            "{} exists; remove it or choose another name",
            path.display()
        ));
    }
    let title = format!("cadre session {}", state.session_id);
    let page = cadre_host::export::render(&title, &host.messages());
    match cadre_host::export::write_page(&path, &page) {
        Ok(()) => Reply::info(format!("exported to {}", path.display())),
        Err(e) => Reply::error(format!("cannot export: {e:#}")),
    }
}
