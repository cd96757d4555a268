//! `bash{command, timeout?}`: run a shell command in the working directory.
//!
//! The command runs as `bash -c` (or `sh -c` where bash is missing) in its own process group, so
//! timeout, abort or a dropped call kill the whole group, grandchildren included. stdout and
//! stderr share one pipe, so the output interleaves exactly as in a terminal. The output keeps its
//! tail (last 2000 lines / 50 KiB, like Pi); once it outgrows that, the full output streams to a
//! file in the artifacts directory, and memory stays bounded however much the command prints.
//! That file is capped too: past 16 MiB it keeps the first and last 8 MiB (`full_output`).
//!
//! Where the process has a supervisor (the cadre binary sets one, see [`crate::supervise`]), the
//! command runs under `<cadre> __supervise`, which kills the command's whole group if cadre dies
//! — even by SIGKILL — instead of leaving it running under init. A command ended by a signal then
//! reports the shell's exit code for it (128 + n); a supervisor killed from outside takes its
//! group along.
//!
//! A shell policy (S3) is checked before anything runs. A sandboxed tool (read-only roles, S2)
//! runs the command through the cadre binary's `__sandbox-exec` entry point under Landlock, and
//! refuses to run it at all where Landlock is unavailable.

use std::ffi::{OsStr, OsString};
use std::io;
use std::os::fd::OwnedFd;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};
use std::time::Duration;

use cadre_protocol::{ContentBlock, ToolSpec};
use futures_util::future::BoxFuture;
use serde_json::{Value, json};
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio::time::Instant;

use crate::args::{ArgError, Args};
use crate::full_output::{DEFAULT_FULL_OUTPUT_CAP, FullOutput};
use crate::git::{harden_env, program_overrides};
use crate::registry::{Tool, ToolContext, ToolOutput};
use crate::sandbox::{
    ProtectedState, SandboxConfig, SandboxStatus, ScratchCleanup, WriterBoundary,
    ensure_scratch_dir, landlock_status, sandbox_args,
};
use crate::shell_env::{ShellEnv, process_shell_env};
use crate::shell_policy::{CommandAllowlist, ShellPolicy, check_command};
use crate::supervise::{Containment, process_supervisor, supervise_args};
use crate::tree_fingerprint::{Fingerprint, IgnoreRules};
use crate::truncate::{
    DEFAULT_MAX_BYTES, DEFAULT_MAX_LINES, Limits, TruncatedBy, Truncation, format_size,
    truncate_tail,
};

/// How often partial output is sent as a tool update at most.
const UPDATE_INTERVAL: Duration = Duration::from_millis(100);
/// After the shell exits, background processes may still hold the pipe open; output arriving
/// within this quiet period is still collected, then the call returns without them.
const DRAIN_IDLE: Duration = Duration::from_millis(100);
/// The longest wait for background processes' output after the shell itself has exited.
const DRAIN_MAX: Duration = Duration::from_secs(2);
/// How long a supervisor gets to end a timed-out or aborted command's processes itself.
const SUPERVISOR_GRACE: Duration = Duration::from_secs(2);
/// Read buffer size for the output pipe.
const CHUNK: usize = 64 * 1024;

#[derive(Debug, Clone, Default)]
pub struct BashTool {
    /// Applied when the call gives no timeout. `None`: no limit (Pi's classic behaviour).
    default_timeout: Option<Duration>,
    /// The longest any call may run (see [`BashTool::with_timeout_limit`]).
    timeout_limit: Option<Duration>,
    /// Checked before every command runs.
    policy: ShellPolicy,
    /// The role's `Bash(…)` command patterns, checked next to `policy` (both must pass).
    allowlist: Option<CommandAllowlist>,
    /// Set for read-only roles: commands run only inside the kernel sandbox.
    sandbox: Option<SandboxConfig>,
    /// The binary that supervises commands (see [`crate::supervise`]); `None`: the process's
    /// supervisor if one is set, otherwise commands run directly.
    supervisor: Option<PathBuf>,
    /// End every process a command started when the command exits (children's bash, S8);
    /// off for the root, whose `server &` may outlive the call as in Pi.
    reap: bool,
    /// Run every command through `__sandbox-exec --writer` (a writing child's bash): it cannot
    /// act on processes outside it. Needs a supervisor, which does the re-exec.
    contain: bool,
    /// Where a contained command may write and what stays read-only ([`WriterBoundary`]);
    /// `None`: anywhere but the kernel's files.
    boundary: Option<WriterBoundary>,
    /// Removes the sandbox's scratch directory once the last clone of this tool is dropped.
    scratch_cleanup: Option<std::sync::Arc<ScratchCleanup>>,
    /// The environment commands start from (its session's); `None`: the process's, scrubbed
    /// by name ([`process_shell_env`]).
    shell_env: Option<std::sync::Arc<ShellEnv>>,
    /// The project's ignore rules as they were when this tool's first call began (a writer's
    /// tool lives for its task), shared by its clones: every fingerprint of the task uses them,
    /// so an ignore file a command writes hides none of the changes that follow
    /// ([`IgnoreRules`]).
    ignore_rules: std::sync::Arc<std::sync::Mutex<Option<IgnoreRules>>>,
}

impl BashTool {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_default_timeout(default_timeout: Option<Duration>) -> Self {
        BashTool {
            default_timeout,
            ..Self::default()
        }
    }

    /// A bash tool for a read-only role: `config.policy` is checked first, then the command
    /// runs in the Landlock sandbox, or not at all where Landlock is unavailable.
    pub fn sandboxed(config: SandboxConfig) -> Self {
        Self::new().with_sandbox(config)
    }

    /// Run every command in the sandbox, under `config.policy`.
    pub fn with_sandbox(mut self, config: SandboxConfig) -> Self {
        self.policy = config.policy;
        self.sandbox = Some(config);
        self
    }

    /// Check every command against `policy` before running it (also without a sandbox).
    pub fn with_policy(mut self, policy: ShellPolicy) -> Self {
        self.policy = policy;
        if let Some(config) = &mut self.sandbox {
            config.policy = policy;
        }
        self
    }

    /// Run only the commands `allowlist` allows, on top of the policy. An allowlist that
    /// allows every command (`*`) is no allowlist.
    pub fn with_allowlist(mut self, allowlist: CommandAllowlist) -> Self {
        self.allowlist = (!allowlist.allows_all()).then_some(allowlist);
        self
    }

    /// End everything a command starts — background jobs, `setsid`, double forks — when the
    /// command exits (needs a supervisor; without one only the process group is reachable).
    pub fn with_reaping(mut self) -> Self {
        self.reap = true;
        self
    }

    /// Keep a writing child's commands off every process outside them (signals, ptrace,
    /// limits, priority: Landlock scoping and the writer system-call filter). Applies only
    /// under a supervisor and without a sandbox (a sandboxed command has all of it already).
    pub fn contained(mut self) -> Self {
        self.contain = true;
        self
    }

    /// Hold a contained command to `boundary`: writes only beneath its writable directories,
    /// its protected paths read-only (a mount where the kernel allows one; a protected name a
    /// command creates is moved out after the call in any case).
    pub fn within(mut self, boundary: WriterBoundary) -> Self {
        self.boundary = Some(boundary);
        self
    }

    pub fn boundary(&self) -> Option<&WriterBoundary> {
        self.boundary.as_ref()
    }

    /// Start every command from `env` (the session's scrubbed environment).
    pub fn with_shell_env(mut self, env: std::sync::Arc<ShellEnv>) -> Self {
        self.shell_env = Some(env);
        self
    }

    /// Remove the sandbox's (or the writer boundary's) scratch directory when this tool (and
    /// every clone) is dropped.
    pub fn removing_scratch(mut self) -> Self {
        let scratch = match (&self.sandbox, &self.boundary) {
            (Some(config), _) => Some(config.scratch_dir.clone()),
            (None, Some(boundary)) => boundary.scratch.clone(),
            (None, None) => None,
        };
        if let Some(dir) = scratch {
            self.scratch_cleanup = Some(std::sync::Arc::new(ScratchCleanup::new(dir)));
        }
        self
    }

    /// Apply `limit` to calls that give no timeout, and hold every call to it: a call's
    /// `timeout` may shorten it but not lengthen or (with 0) remove it. For children, whose
    /// model must not be able to hold their task, and its parent, for ever.
    pub fn with_timeout_limit(mut self, limit: Option<Duration>) -> Self {
        self.default_timeout = limit;
        self.timeout_limit = limit;
        self
    }

    /// Run every command under `exe __supervise` (which must route that to
    /// [`crate::supervise::supervise_main`]), whatever the process's supervisor.
    pub fn with_supervisor(mut self, exe: PathBuf) -> Self {
        self.supervisor = Some(exe);
        self
    }

    /// The binary commands run under, if any.
    pub fn supervisor(&self) -> Option<&Path> {
        match &self.supervisor {
            Some(exe) => Some(exe),
            None => process_supervisor(),
        }
    }

    pub fn policy(&self) -> ShellPolicy {
        self.policy
    }

    pub fn allowlist(&self) -> Option<&CommandAllowlist> {
        self.allowlist.as_ref()
    }

    pub fn sandbox(&self) -> Option<&SandboxConfig> {
        self.sandbox.as_ref()
    }
}

/// How the shell is started.
#[derive(Clone, Copy)]
enum Launch<'a> {
    Direct,
    Sandboxed(&'a SandboxConfig, &'static str),
}

/// What a command's process is started with besides its shell and command line.
#[derive(Clone, Copy)]
struct Start<'a> {
    launch: Launch<'a>,
    supervisor: Option<&'a Path>,
    reap: bool,
    contain: bool,
    boundary: Option<&'a WriterBoundary>,
    shell_env: &'a ShellEnv,
    policy: ShellPolicy,
    /// Under `inspect`: overrides for the program-valued keys of the repository's own config.
    git_overrides: &'a [(String, &'static str)],
}

/// Decide how a sandboxed command starts, or the error result that explains why it cannot.
fn sandbox_launch(config: &SandboxConfig) -> Result<Launch<'_>, ToolOutput> {
    if let SandboxStatus::Unavailable { reason } = landlock_status() {
        return Err(ToolOutput::error(format!(
            "Command not run: this role is read-only, so its bash commands run only inside the \
             kernel sandbox, which is unavailable here ({reason}). Use the read, grep, find and \
             ls tools instead."
        ))
        .with_details(json!({ "exitCode": null, "blocked": "sandbox-unavailable" })));
    }
    // The scratch directory is created on first use, so a task that never runs bash has none.
    if let Err(e) = ensure_scratch_dir(&config.scratch_dir) {
        return Err(ToolOutput::error(format!(
            "Command not run: the sandbox's scratch directory {} cannot be created: {e}.",
            config.scratch_dir.display()
        ))
        .with_details(json!({ "exitCode": null, "blocked": "sandbox-unavailable" })));
    }
    if let Some(missing) = config.writable_dirs().iter().find(|d| !d.is_dir()) {
        return Err(ToolOutput::error(format!(
            "Command not run: the sandbox's writable directory {} does not exist.",
            missing.display()
        ))
        .with_details(json!({ "exitCode": null, "blocked": "sandbox-unavailable" })));
    }
    // Inside the sandbox a missing bash only shows once exec fails; choose the shell here.
    let shell = if on_path("bash") { "bash" } else { "sh" };
    Ok(Launch::Sandboxed(config, shell))
}

fn launch_is_direct(launch: Launch<'_>) -> bool {
    matches!(launch, Launch::Direct)
}

fn on_path(program: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(program).is_file()))
}

impl Tool for BashTool {
    fn name(&self) -> &str {
        "bash"
    }

    fn spec(&self) -> ToolSpec {
        let mut description = format!(
            "Execute a bash command in the current working directory. Returns stdout and \
             stderr. Output is truncated to last {DEFAULT_MAX_LINES} lines or {}KB (whichever \
             is hit first). If truncated, full output is saved to a temp file. Optionally \
             provide a timeout in seconds.",
            DEFAULT_MAX_BYTES / 1024
        );
        // A restricted shell says so up front, so the model does not spend turns finding out.
        if let Some(config) = &self.sandbox {
            description.push_str(
                " Commands run in a read-only sandbox: files can be read anywhere but written \
                 only in $TMPDIR (a private scratch directory)",
            );
            for dir in &config.extra_writable {
                description.push_str(&format!(" and in {}", dir.display()));
            }
            description.push('.');
        }
        if let Some(summary) = self.policy.summary() {
            description.push(' ');
            description.push_str(summary);
        }
        if let Some(summary) = self.allowlist.as_ref().and_then(CommandAllowlist::summary) {
            description.push(' ');
            description.push_str(&summary);
        }
        ToolSpec {
            name: "bash".into(),
            description,
            parameters: json!({
                "type": "object",
                "properties": {
                    "command": {"type": "string", "description": "Bash command to execute"},
                    "timeout": {"type": "number", "description": timeout_description(self.timeout_limit)}
                },
                "required": ["command"]
            }),
        }
    }

    fn is_mutating(&self) -> bool {
        true
    }

    fn execute<'a>(&'a self, args: Value, ctx: ToolContext) -> BoxFuture<'a, ToolOutput> {
        Box::pin(async move {
            let parsed = (|| {
                let args = Args::parse(args)?;
                Ok::<_, ArgError>((
                    args.required_str("command")?,
                    args.optional_seconds("timeout")?,
                ))
            })();
            let (command, timeout) = match parsed {
                Ok(p) => p,
                Err(e) => return e.into_output("bash"),
            };
            if command.trim().is_empty() {
                return ToolOutput::error("Invalid arguments for bash: `command` is empty");
            }
            // 0 means "no timeout", as in Pi — unless a limit holds every call.
            let timeout = match timeout {
                Some(t) if t > 0.0 => Some(Duration::try_from_secs_f64(t).unwrap_or(Duration::MAX)),
                Some(_) => None,
                None => self.default_timeout,
            };
            let timeout = match (timeout, self.timeout_limit) {
                (Some(t), Some(limit)) => Some(t.min(limit)),
                (None, limit) => limit,
                (t, None) => t,
            };
            if let Err(refusal) = check_command(self.policy, &command) {
                return ToolOutput::error(format!("Command not run: {refusal}"))
                    .with_details(json!({ "exitCode": null, "blocked": "shell-policy" }));
            }
            if let Some(Err(refusal)) = self.allowlist.as_ref().map(|a| a.check(&command)) {
                return ToolOutput::error(format!("Command not run: {refusal}"))
                    .with_details(json!({ "exitCode": null, "blocked": "command-allowlist" }));
            }
            let launch = match &self.sandbox {
                None => Launch::Direct,
                Some(config) => match sandbox_launch(config) {
                    Ok(launch) => launch,
                    Err(refused) => return refused,
                },
            };
            // Only a command that names git pays for listing the repository's configuration.
            let git_overrides = if self.policy == ShellPolicy::Inspect && command.contains("git") {
                match program_overrides(&ctx.cwd).await {
                    Ok(overrides) => overrides,
                    // Fail closed: a configuration that cannot be checked is not run with.
                    Err(why) => {
                        return ToolOutput::error(format!(
                            "Command not run: the repository's git configuration could not be \
                             checked for programs git would run ({why})."
                        ))
                        .with_details(json!({ "exitCode": null, "blocked": "shell-policy" }));
                    }
                }
            } else {
                Vec::new()
            };
            let contain = self.contain && launch_is_direct(launch);
            let boundary = self.boundary.as_ref().filter(|_| contain);
            let start = Start {
                launch,
                supervisor: self.supervisor(),
                reap: self.reap,
                contain,
                boundary,
                shell_env: match self.shell_env.as_deref() {
                    Some(env) => env,
                    None => process_shell_env(),
                },
                policy: self.policy,
                git_overrides: &git_overrides,
            };
            if let Some(scratch) = boundary.and_then(|b| b.scratch.as_ref())
                && let Err(e) = ensure_scratch_dir(scratch)
            {
                return ToolOutput::error(format!(
                    "Command not run: its temporary directory {} could not be created: {e}",
                    scratch.display()
                ));
            }
            let before = boundary.map(ProtectedState::capture);
            let root = boundary.and_then(|b| b.root.clone());
            let tree_before = match &root {
                Some(root) => {
                    let rules = self.ignore_rules(root).await;
                    Some((fingerprint(root.clone(), rules.clone()).await, rules))
                }
                None => None,
            };
            let out = run(&command, timeout, &ctx, start).await;
            let out = match before {
                Some(before) => undo_protected_creations(out, &before, &ctx),
                None => out,
            };
            match (root, tree_before) {
                (Some(root), Some((tree_before, rules))) => {
                    let tree_after = fingerprint(root, rules).await;
                    with_changed_files(out, &tree_before, &tree_after)
                }
                _ => out,
            }
        })
    }
}

impl BashTool {
    /// The ignore rules frozen for `root` by this tool's first call, or frozen now.
    async fn ignore_rules(&self, root: &Path) -> IgnoreRules {
        let frozen = self
            .ignore_rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone();
        if let Some(rules) = frozen.filter(|r| r.root() == root) {
            return rules;
        }
        let owned = root.to_path_buf();
        let fresh = match tokio::task::spawn_blocking(move || IgnoreRules::freeze(&owned)).await {
            Ok(rules) => rules,
            // The walk itself failed: no rule, every file counts.
            Err(_) => IgnoreRules::none(root),
        };
        let mut slot = self.ignore_rules.lock().unwrap_or_else(|e| e.into_inner());
        match slot.as_ref().filter(|r| r.root() == root) {
            // Another call froze them first; theirs stand.
            Some(rules) => rules.clone(),
            None => {
                *slot = Some(fresh.clone());
                fresh
            }
        }
    }
}

/// The project's fingerprint under the frozen `rules`, taken off the runtime's threads (a
/// large tree is many stats).
async fn fingerprint(root: PathBuf, rules: IgnoreRules) -> Fingerprint {
    tokio::task::spawn_blocking(move || Fingerprint::take(&root, &rules))
        .await
        .unwrap_or_default()
}

/// Most changed paths a result's details name; the rest are counted.
const MAX_CHANGED_LISTED: usize = 200;

/// Record in the result's details which project files the command changed (`changedFiles`,
/// relative to the project root, and `changedCount`): the receipt's ground truth for bash.
fn with_changed_files(
    mut out: ToolOutput,
    before: &Fingerprint,
    after: &Fingerprint,
) -> ToolOutput {
    let changed = before.changes(after);
    if changed.is_empty() {
        return out;
    }
    let listed: Vec<String> = changed
        .iter()
        .take(MAX_CHANGED_LISTED)
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let mut details = out.details.take().unwrap_or_else(|| json!({}));
    if let Some(map) = details.as_object_mut() {
        map.insert("changedFiles".into(), json!(listed));
        map.insert("changedCount".into(), json!(changed.len()));
    }
    out.details = Some(details);
    out
}

/// Move out the protected paths a writer's command created (they did not exist, so no mount
/// kept them read-only) and tell the model, in the result and its details.
fn undo_protected_creations(
    mut out: ToolOutput,
    before: &ProtectedState,
    ctx: &ToolContext,
) -> ToolOutput {
    let quarantine = ctx.artifacts_dir.join("quarantine");
    let mut notes = before.undo_creations(&quarantine);
    notes.extend(before.restore_changed(&quarantine));
    if notes.is_empty() {
        return out;
    }
    let text = format!("\n\n[cadre: {}]", notes.join("; "));
    out.content.push(ContentBlock::text(text));
    let mut details = out.details.take().unwrap_or_else(|| json!({}));
    if let Some(map) = details.as_object_mut() {
        map.insert("protectedCreated".into(), json!(notes));
    }
    out.details = Some(details);
    out
}

/// Kills the process group when dropped, unless disarmed: a call dropped mid-flight (its
/// future cancelled by the caller) must not leave the command running.
struct GroupGuard {
    pgid: Option<i32>,
}

impl GroupGuard {
    fn kill(&mut self) {
        if let Some(pgid) = self.pgid {
            kill_process_group(pgid);
        }
    }

    fn disarm(&mut self) {
        self.pgid = None;
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.kill();
    }
}

#[allow(unsafe_code)]
fn kill_process_group(pgid: i32) {
    // Never signal our own group or init by mistake.
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg takes two plain integers and only sends a signal; it has no memory-safety
    // preconditions. `pgid` is the group created for this command (process_group(0)).
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

/// The command line that runs `command`: the shell itself, or the sandbox entry point that
/// becomes the shell.
fn shell_argv(launch: Launch<'_>, shell: &str, command: &str) -> Vec<OsString> {
    match launch {
        Launch::Direct => vec![shell.into(), "-c".into(), command.into()],
        Launch::Sandboxed(config, sandboxed_shell) => {
            let mut argv = vec![config.exe.clone().into_os_string()];
            let args: [&OsStr; 2] = ["-c".as_ref(), command.as_ref()];
            argv.extend(sandbox_args(
                &config.writable_dirs(),
                config.network,
                sandboxed_shell,
                args,
            ));
            argv
        }
    }
}

/// A started command: the process (the shell, or its supervisor), its merged output, and — when
/// supervised — the write end of the lifeline, which must stay open while the command runs.
struct Spawned {
    child: Child,
    output: pipe::Receiver,
    _lifeline: Option<OwnedFd>,
}

fn spawn_shell(start: Start<'_>, shell: &str, command: &str, cwd: &Path) -> io::Result<Spawned> {
    let Start {
        launch, supervisor, ..
    } = start;
    let (reader, writer) = io::pipe()?;
    let writer_err = writer.try_clone()?;
    let argv = shell_argv(launch, shell, command);
    let (program, args) = argv.split_first().ok_or(io::ErrorKind::InvalidInput)?;
    // The lifeline: the supervisor's stdin is the read end; cadre alone holds the write end
    // (opened close-on-exec, so no other child keeps it), and the kernel closes it when cadre
    // dies, however it dies.
    let (mut cmd, lifeline) = match supervisor {
        None => {
            let mut cmd = Command::new(program);
            cmd.args(args).stdin(Stdio::null());
            (cmd, None)
        }
        Some(exe) => {
            let (lifeline_read, lifeline_write) = io::pipe()?;
            let mut cmd = Command::new(exe);
            if exe == Path::new("/proc/self/exe") {
                // Name it in `ps` for what it is rather than for the link that started it.
                cmd.arg0("cadre");
            }
            let how = Containment {
                reap: start.reap,
                contain: start.contain,
            };
            cmd.args(supervise_args(how, start.boundary, program, args))
                .stdin(Stdio::from(lifeline_read));
            (cmd, Some(OwnedFd::from(lifeline_write)))
        }
    };
    start.shell_env.apply(&mut cmd);
    if start.policy == ShellPolicy::Inspect {
        let inherited = std::env::vars_os().map(|(name, _)| name);
        harden_env(&mut cmd, inherited, start.git_overrides);
    }
    if let Launch::Sandboxed(config, _) = launch {
        cmd.env("TMPDIR", &config.scratch_dir);
    }
    if let Some(scratch) = start.boundary.and_then(|b| b.scratch.as_ref()) {
        cmd.env("TMPDIR", scratch);
    }
    cmd.current_dir(cwd)
        .stdout(Stdio::from(writer))
        .stderr(Stdio::from(writer_err))
        .kill_on_drop(true);
    // A session of its own (as Pi's `detached` spawn): the command has no controlling
    // terminal, so it cannot read the user's keystrokes, change the terminal's modes or stop
    // cadre by taking the foreground, and its group is the session's, which one `killpg`
    // ends. SAFETY: setsid is async-signal-safe and touches only the new child.
    #[allow(unsafe_code)]
    unsafe {
        cmd.pre_exec(|| {
            if libc::setsid() < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd.spawn()?;
    // `cmd` (and with it our copies of the write end) is dropped here, so the pipe reaches EOF
    // once the command and its children close theirs.
    drop(cmd);
    let output = pipe::Receiver::from_owned_fd(OwnedFd::from(reader))?;
    Ok(Spawned {
        child,
        output,
        _lifeline: lifeline,
    })
}

enum Ending {
    Exited(ExitStatus),
    TimedOut,
    Aborted,
}

async fn run(
    command: &str,
    timeout: Option<Duration>,
    ctx: &ToolContext,
    start: Start<'_>,
) -> ToolOutput {
    let Start {
        launch, supervisor, ..
    } = start;
    if !ctx.cwd.is_dir() {
        return ToolOutput::error(format!(
            "Working directory does not exist: {}\nCannot execute bash commands.",
            ctx.cwd.display()
        ));
    }
    if ctx.cancel.is_cancelled() {
        return ToolOutput::error("Command aborted");
    }
    let spawned = match supervisor {
        // A missing bash shows as an error of the supervisor's: choose the shell here.
        Some(_) => {
            let shell = if on_path("bash") { "bash" } else { "sh" };
            spawn_shell(start, shell, command, &ctx.cwd)
        }
        None => match spawn_shell(start, "bash", command, &ctx.cwd) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && matches!(launch, Launch::Direct) => {
                spawn_shell(start, "sh", command, &ctx.cwd)
            }
            other => other,
        },
    };
    let Spawned {
        mut child,
        mut output,
        _lifeline: mut lifeline,
    } = match spawned {
        Ok(s) => s,
        Err(e) => return ToolOutput::error(format!("Failed to start the shell: {e}")),
    };
    let mut guard = GroupGuard {
        pgid: child.id().and_then(|id| i32::try_from(id).ok()),
    };
    let mut sink = OutputSink::new(ctx.artifacts_dir.clone(), Limits::default());
    let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
    let mut buf = vec![0u8; CHUNK];
    let mut last_update: Option<Instant> = None;
    let mut status: Option<ExitStatus> = None;
    let mut drain_deadline: Option<Instant> = None;
    let mut eof = false;

    let ending = loop {
        if eof && let Some(s) = status {
            break Ending::Exited(s);
        }
        tokio::select! {
            biased;
            _ = ctx.cancel.cancelled() => break Ending::Aborted,
            _ = sleep_until_opt(deadline) => break Ending::TimedOut,
            exited = child.wait(), if status.is_none() => {
                match exited {
                    Ok(s) => {
                        // A supervisor ends by a signal only when something killed it from
                        // outside: the command, left without its lifeline, goes with it.
                        if supervisor.is_some() && s.signal().is_some() {
                            guard.kill();
                        }
                        status = Some(s);
                        drain_deadline = Instant::now().checked_add(DRAIN_MAX);
                    }
                    Err(e) => {
                        guard.kill();
                        return ToolOutput::error(format!("Failed to wait for the command: {e}"));
                    }
                }
            }
            // After the shell exits, stop waiting once the pipe has been quiet for a moment:
            // a background process may keep it open indefinitely.
            _ = tokio::time::sleep(DRAIN_IDLE), if status.is_some() && !eof => eof = true,
            _ = sleep_until_opt(drain_deadline), if status.is_some() && !eof => eof = true,
            read = output.read(&mut buf), if !eof => match read {
                Ok(0) | Err(_) => eof = true,
                Ok(n) => {
                    sink.push(&buf[..n]);
                    let due = last_update.is_none_or(|t| t.elapsed() >= UPDATE_INTERVAL);
                    if due && let Some(updates) = &ctx.updates {
                        let _ = updates.send(sink.snapshot());
                        last_update = Some(Instant::now());
                    }
                }
            },
        }
    };

    match ending {
        Ending::Exited(_) => guard.disarm(),
        Ending::TimedOut | Ending::Aborted => {
            // A supervisor ends the processes that left the group (setsid) too, once its
            // lifeline closes; the group kill after it is the fallback for a stuck one.
            if lifeline.take().is_some() {
                let _ = tokio::time::timeout(SUPERVISOR_GRACE, child.wait()).await;
            }
            guard.kill();
            guard.disarm();
            let _ = child.wait().await;
            // Whatever the killed processes wrote before dying is still in the pipe. A process
            // that escaped the group (setsid) may hold it open and keep writing: bounded wait.
            let _ = tokio::time::timeout(DRAIN_MAX, drain(&mut output, &mut buf, &mut sink)).await;
        }
    }
    finish(sink, ending, timeout)
}

async fn sleep_until_opt(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Read what is left in the pipe, giving up after a quiet period.
async fn drain(output: &mut pipe::Receiver, buf: &mut [u8], sink: &mut OutputSink) {
    while let Ok(Ok(n)) = tokio::time::timeout(DRAIN_IDLE, output.read(buf)).await {
        if n == 0 {
            break;
        }
        sink.push(&buf[..n]);
    }
}

fn finish(sink: OutputSink, ending: Ending, timeout: Option<Duration>) -> ToolOutput {
    let report = sink.finish();
    let mut text = report.text.clone();
    let (status_line, exit_code, is_error) = match ending {
        Ending::Exited(status) => match (status.code(), status.signal()) {
            (Some(0), _) => (None, Some(0), false),
            (Some(code), _) => (
                Some(format!("Command exited with code {code}")),
                Some(code),
                true,
            ),
            (None, Some(sig)) => (
                Some(format!("Command was killed by signal {sig}")),
                None,
                true,
            ),
            (None, None) => (
                Some("Command ended without an exit code".to_string()),
                None,
                true,
            ),
        },
        Ending::TimedOut => {
            let secs = timeout.map(|t| t.as_secs_f64()).unwrap_or(0.0);
            (
                Some(format!(
                    "Command timed out after {} seconds",
                    format_seconds(secs)
                )),
                None,
                true,
            )
        }
        Ending::Aborted => (Some("Command aborted".to_string()), None, true),
    };
    if text.is_empty() && status_line.is_none() {
        text = "(no output)".to_string();
    }
    if let Some(line) = status_line {
        let kept = text.trim_end_matches('\n').len();
        text.truncate(kept);
        if !text.is_empty() {
            text.push_str("\n\n");
        }
        text.push_str(&line);
    }
    let mut details = json!({ "exitCode": exit_code });
    if report.truncation.truncated {
        details["truncation"] = json!(report.truncation);
        if let Some(path) = &report.full_output_path {
            details["fullOutputPath"] = json!(path.to_string_lossy());
            details["fullOutputDroppedBytes"] = json!(report.full_output_dropped);
        }
    }
    ToolOutput {
        content: vec![ContentBlock::text(text)],
        details: Some(details),
        is_error,
    }
}

/// The `timeout` parameter's description: Pi's, or the limit that holds every call.
fn timeout_description(limit: Option<Duration>) -> String {
    match limit {
        None => "Timeout in seconds (optional, no default timeout)".to_string(),
        Some(l) => format!(
            "Timeout in seconds (optional; at most and by default {} seconds)",
            format_seconds(l.as_secs_f64())
        ),
    }
}

/// Whole seconds print without a fraction ("30", not "30.0").
fn format_seconds(secs: f64) -> String {
    if secs.fract() == 0.0 {
        format!("{secs:.0}")
    } else {
        format!("{secs}")
    }
}

/// The command's output: totals, a bounded tail, and (once the output outgrows the limits) the
/// full output streamed to a file.
struct OutputSink {
    limits: Limits,
    artifacts_dir: PathBuf,
    total_bytes: u64,
    newlines: u64,
    last_byte: Option<u8>,
    /// Length of the line being written and of the last completed one, for the "line is N"
    /// hint when a single line is larger than the limit.
    current_line_bytes: u64,
    last_line_bytes: u64,
    /// Everything while within the limits; afterwards at least the last `limits.max_bytes + 4`
    /// bytes (enough for a tail truncation and one partial UTF-8 character).
    tail: Vec<u8>,
    spill: Option<FullOutput>,
    spill_error: Option<String>,
    /// The most output bytes the full-output file keeps (see [`crate::full_output`]).
    full_output_cap: u64,
}

struct SinkReport {
    text: String,
    truncation: Truncation,
    full_output_path: Option<PathBuf>,
    /// Bytes of output the full-output file had to drop to stay within its cap.
    full_output_dropped: u64,
}

impl OutputSink {
    fn new(artifacts_dir: PathBuf, limits: Limits) -> Self {
        OutputSink {
            limits,
            artifacts_dir,
            total_bytes: 0,
            newlines: 0,
            last_byte: None,
            current_line_bytes: 0,
            last_line_bytes: 0,
            tail: Vec::new(),
            spill: None,
            spill_error: None,
            full_output_cap: DEFAULT_FULL_OUTPUT_CAP,
        }
    }

    /// Keep at most `cap` bytes of output in the full-output file.
    #[cfg(test)]
    fn with_full_output_cap(mut self, cap: u64) -> Self {
        self.full_output_cap = cap;
        self
    }

    fn total_lines(&self) -> u64 {
        if self.total_bytes == 0 {
            0
        } else {
            self.newlines + u64::from(self.last_byte != Some(b'\n'))
        }
    }

    fn over_limits(&self) -> bool {
        self.total_bytes > self.limits.max_bytes as u64
            || self.total_lines() > self.limits.max_lines as u64
    }

    fn keep_bytes(&self) -> usize {
        self.limits.max_bytes.saturating_add(4)
    }

    fn push(&mut self, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        self.total_bytes += data.len() as u64;
        match data.iter().rposition(|&b| b == b'\n') {
            Some(last_nl) => {
                let count = data.iter().filter(|&&b| b == b'\n').count() as u64;
                self.newlines += count;
                let before_last = data[..last_nl].iter().rposition(|&b| b == b'\n');
                self.last_line_bytes = match before_last {
                    Some(p) => (last_nl - p - 1) as u64,
                    None => self.current_line_bytes + last_nl as u64,
                };
                self.current_line_bytes = (data.len() - last_nl - 1) as u64;
            }
            None => self.current_line_bytes += data.len() as u64,
        }
        self.last_byte = data.last().copied();
        self.tail.extend_from_slice(data);

        if !self.over_limits() {
            return;
        }
        match &mut self.spill {
            Some(full) => {
                if let Err(e) = full.write(data) {
                    self.spill_error = Some(e.to_string());
                    self.spill = None;
                }
            }
            None if self.spill_error.is_none() => self.start_spill(),
            None => {}
        }
        // Trim in large steps so the copy is amortised.
        let keep = self.keep_bytes();
        if self.tail.len() > keep.saturating_mul(2) {
            let cut = self.tail.len() - keep;
            self.tail.drain(..cut);
        }
    }

    /// Open the full-output file and write everything so far (still all in `tail`: nothing is
    /// trimmed before the limits are exceeded).
    fn start_spill(&mut self) {
        let opened = FullOutput::create(&self.artifacts_dir, self.full_output_cap)
            .and_then(|mut full| full.write(&self.tail).map(|()| full));
        match opened {
            Ok(full) => self.spill = Some(full),
            Err(e) => self.spill_error = Some(e.to_string()),
        }
    }

    fn truncated_tail(&self) -> Truncation {
        let text = String::from_utf8_lossy(&self.tail);
        truncate_tail(&text, self.limits)
    }

    /// Partial result for a tool update, in Pi's `{content, details}` shape.
    fn snapshot(&self) -> Value {
        let t = self.truncated_tail();
        json!({
            "content": [{"type": "text", "text": t.content}],
            "details": {
                "truncation": if t.truncated { json!(t) } else { Value::Null },
                "fullOutputPath": self.spill.as_ref().map(|f| f.path().to_string_lossy().into_owned()),
            }
        })
    }

    fn finish(mut self) -> SinkReport {
        let mut truncation = self.truncated_tail();
        let saved = match self.spill.take().map(FullOutput::finish) {
            Some(Ok(saved)) => Some(saved),
            Some(Err(e)) => {
                self.spill_error = Some(e.to_string());
                None
            }
            None => None,
        };
        let total_lines = self.total_lines();
        truncation.total_lines = usize::try_from(total_lines).unwrap_or(usize::MAX);
        truncation.total_bytes = usize::try_from(self.total_bytes).unwrap_or(usize::MAX);
        let mut text = truncation.content.clone();
        if truncation.truncated {
            let where_full = match (&saved, &self.spill_error) {
                (Some(saved), _) => saved.describe(),
                (None, Some(e)) => format!("Full output could not be saved: {e}"),
                (None, None) => "Full output was not saved".to_string(),
            };
            let end = total_lines;
            let start = (end + 1).saturating_sub(truncation.output_lines as u64);
            let notice = if truncation.last_line_partial {
                let line_bytes = if self.last_byte == Some(b'\n') {
                    self.last_line_bytes
                } else {
                    self.current_line_bytes
                };
                format!(
                    "[Showing last {} of line {end} (line is {}). {where_full}]",
                    format_size(truncation.output_bytes as u64),
                    format_size(line_bytes)
                )
            } else if truncation.truncated_by == Some(TruncatedBy::Lines) {
                format!("[Showing lines {start}-{end} of {end}. {where_full}]")
            } else {
                format!(
                    "[Showing lines {start}-{end} of {end} ({} limit). {where_full}]",
                    format_size(self.limits.max_bytes as u64)
                )
            };
            text.push_str("\n\n");
            text.push_str(&notice);
        }
        SinkReport {
            text,
            truncation,
            full_output_dropped: saved.as_ref().map_or(0, |s| s.dropped),
            full_output_path: saved.map(|s| s.path),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn sink(dir: &Path, max_lines: usize, max_bytes: usize) -> OutputSink {
        OutputSink::new(
            dir.to_path_buf(),
            Limits {
                max_lines,
                max_bytes,
            },
        )
    }

    #[test]
    fn small_output_is_kept_whole_and_not_saved() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = sink(dir.path(), 10, 100);
        s.push(b"a\nb");
        s.push(b"\n");
        let r = s.finish();
        assert_eq!(r.text, "a\nb\n");
        assert!(!r.truncation.truncated);
        assert!(r.full_output_path.is_none());
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn line_overflow_keeps_tail_and_saves_everything() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = sink(dir.path(), 3, 1000);
        let all: String = (1..=10).map(|i| format!("{i}\n")).collect();
        for chunk in all.as_bytes().chunks(3) {
            s.push(chunk);
        }
        let r = s.finish();
        assert!(
            r.text
                .starts_with("8\n9\n10\n\n[Showing lines 8-10 of 10. Full output: ")
        );
        let path = r.full_output_path.unwrap();
        assert_eq!(std::fs::read_to_string(path).unwrap(), all);
    }

    #[test]
    fn byte_overflow_memory_stays_bounded() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = sink(dir.path(), usize::MAX, 64);
        let line = b"0123456789\n";
        for _ in 0..10_000 {
            s.push(line);
            assert!(s.tail.len() <= 2 * s.keep_bytes() + line.len());
        }
        let r = s.finish();
        assert!(r.truncation.truncated);
        assert_eq!(r.truncation.total_lines, 10_000);
        assert!(r.truncation.output_bytes <= 64);
        assert!(r.text.contains("(64B limit)"), "{}", r.text);
        let saved = std::fs::read(r.full_output_path.unwrap()).unwrap();
        assert_eq!(saved.len(), 110_000);
    }

    #[test]
    fn full_output_file_is_capped_and_says_what_it_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let cap = 64 * 1024;
        let mut s = sink(dir.path(), 2000, 1024).with_full_output_cap(cap);
        let line = [b'y', b'\n'];
        let chunk = line.repeat(32 * 1024);
        for _ in 0..160 {
            s.push(&chunk);
        }
        let total = 160 * chunk.len() as u64;
        let r = s.finish();
        let dropped = total - cap;
        assert_eq!(r.full_output_dropped, dropped);
        assert!(r.text.contains("in the middle dropped"), "{}", r.text);
        let path = r.full_output_path.unwrap();
        let marker = crate::full_output::dropped_marker(dropped);
        let saved = std::fs::read(&path).unwrap();
        assert!(saved.len() as u64 <= cap + marker.len() as u64 + 1);
        assert!(String::from_utf8_lossy(&saved).contains(&marker));
    }

    #[test]
    fn one_huge_line_is_cut_from_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut s = sink(dir.path(), 100, 10);
        s.push(b"short\n");
        s.push(&[b'x'; 50]);
        let r = s.finish();
        assert!(r.truncation.last_line_partial);
        assert!(
            r.text
                .starts_with("xxxxxxxxxx\n\n[Showing last 10B of line 2 (line is 50B)"),
            "{}",
            r.text
        );
    }

    #[test]
    fn unwritable_artifacts_dir_is_reported() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("file");
        std::fs::write(&blocker, "x").unwrap();
        let mut s = sink(&blocker.join("sub"), 1, 1000);
        s.push(b"a\nb\nc\n");
        let r = s.finish();
        assert!(
            r.text.contains("Full output could not be saved"),
            "{}",
            r.text
        );
    }

    #[test]
    fn seconds_format() {
        assert_eq!(format_seconds(30.0), "30");
        assert_eq!(format_seconds(0.5), "0.5");
    }
}
