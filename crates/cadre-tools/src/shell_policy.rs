//! Shell policies (S3, S7): which bash commands a role may run, checked before anything executes.
//!
//! # Threat model
//!
//! The repository and the model are both the attacker. A repository can commit any file: a
//! directory that looks like a bare git repository (`sub/evil.git/` with `HEAD`, `objects/`,
//! `refs/` and a `config` naming `core.fsmonitor = sh payload.sh`), tool configurations,
//! files named like options (`--output=x`, `-delete`). The model can write any command line.
//! Under `inspect` and `verify` an allowed command must neither run a program the command
//! line or the repository chooses nor write a file; the kernel sandbox (S2) is the second
//! wall, not the only one. The policy is checked first, so a refusal costs nothing.
//!
//! # The policies
//!
//! * `unrestricted`: every command (writing roles; the sandbox, if any, still applies).
//! * `inspect` (Explore, Plan, review, …): only the inspection commands `pwd ls cat head
//!   tail wc cut stat du grep rg uniq sort find git`, joined by `|`, `&&`, `||`, `;` or
//!   newlines, with their program-running and file-writing options refused.
//! * `verify` (verification): `inspect` plus the recognised verifiers of V4 (`cargo test`,
//!   `npm test`, `pytest`, …) without their mutating flags (`--fix`, `--write`, `-u`, …) and
//!   without options that add a program, module, configuration or output file of the command
//!   line's own (see `verify.rs`). The verifiers run the project's own code by design — its
//!   tests, build scripts and lint plugins are the repository's, contained by the sandbox — but
//!   the command line adds no new way in.
//! * `none`: no command at all.
//!
//! A role's `Bash(…)` tool entries narrow any policy further: [`CommandAllowlist`] (`allow.rs`)
//! lets through only the commands its patterns name, checked with the same tokenizer, and both
//! checks must pass.
//!
//! The check parses the command with a small tokenizer that understands quotes, escapes and
//! the shell's operators, and fails closed: whatever it cannot read with confidence is refused.
//! Every refusal is one line naming the part at fault and what to do instead.
//!
//! # Decisions
//!
//! * Refused everywhere: command and process substitution (`$(…)`, backticks, `<(…)`, `>(…)`),
//!   every `$` expansion outside single quotes (`$VAR`, `${…}`, `$'…'`), subshells and grouping
//!   (`(…)`, `{ …; }`), background `&`, `;;`, commands given by path (`/bin/ls`, `./git`), and
//!   any command outside the lists (`eval`, `exec`, `xargs`, `sh`, `tee`, …).
//! * No variable assignments at all (`A=1 cmd`, `GIT_DIR=… git`), no `env`, `export` or
//!   `unset`: `GIT_*`, `LD_*`, `PATH`, `BASH_ENV`, `ENV`, `PAGER` and many others choose the
//!   programs a command runs, and a short denylist of names would miss one.
//! * No `cd` (nor `pushd`/`popd`): commands run in the project directory, so git finds the
//!   project's repository and no other; paths are given as arguments (`git log -- sub`).
//! * Redirections are refused, input ones (`<`, `<<`, `<<<`) too — pass the file as an argument
//!   instead. The only ones accepted write nothing: duplicating the standard streams (`2>&1`,
//!   `>&2`, `1>&2`) and discarding into `/dev/null` (`2>/dev/null`, `>/dev/null`, `&>/dev/null`).
//! * Unquoted glob and brace patterns (`*`, `?`, `[`, `{a,b}`) expand to file names, and a file
//!   named like an option would become one. Any pattern is accepted for the commands that
//!   have no writing or executing option at all (`ls cat head tail wc cut stat du grep pwd`);
//!   elsewhere only a pattern that starts with a literal other than `-` (`src/*.rs`, `./*`),
//!   since its expansions all start the same way; `uniq` takes none (a second operand is its
//!   output file).
//! * Options are matched the way each command reads them (`options.rs`): GNU, git, argparse,
//!   OptionParser and npm accept any unique prefix of a long option (`--outp` = `--output`), so
//!   every prefix of a refused option is refused; TypeScript and yargs ignore case and dashes;
//!   short options cluster (`-ro FILE` holds `-o`).
//! * `find`: no `-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls`, also
//!   after `--`.
//! * `rg`: no `--pre`, `--pre-glob` or `--hostname-bin` (they run programs).
//! * `sort`: no `-o/--output`, `-T/--temporary-directory`, `--compress-program`, in clusters
//!   too (`-ro out`; `-to` is the field separator `o`).
//! * `uniq`: at most one file operand (a second one is its output file).
//! * `git` (`git.rs`): only the subcommands `status log diff show rev-parse ls-files branch`;
//!   before the subcommand only `-P`, `--no-pager`, `--no-optional-locks`,
//!   `--literal-pathspecs` — every option that chooses a repository, work tree, configuration
//!   or program directory (`-C`, `--git-dir`, `--work-tree`, `--bare`, `-c`, `--config-env`,
//!   `--exec-path`, `--attr-source`, …) is refused, because a committed bare-looking directory
//!   with its `config` would make git run its programs. In the subcommands no `--output`,
//!   `--ext-diff`, `--textconv`, `--show-signature` (or a prefix of one; `--text` is itself),
//!   and no `%G…` signature placeholders in `--format`/`--pretty` (they run gpg). `git branch`
//!   only in its listing forms: `-a -r -l -v -vv -i -q`, `--list`, `--all`, `--remotes`,
//!   `--verbose`, `--show-current`, `--ignore-case`, `--quiet`, `--[no-]color`,
//!   `--[no-]column`, `--[no-]abbrev`, `--omit-empty`, and `--contains`, `--no-contains`,
//!   `--merged`, `--no-merged`, `--points-at`, `--sort`, `--format` with their value; name
//!   patterns only with `--list`/`-l`. Everything else (`-d -D -m -M -c -C -f -u -t`, a new
//!   branch name, …) is refused. Under `inspect` the bash tool also runs git with hardened
//!   configuration (`shell_env.rs`); the two are independent walls.
//! * Left to the sandbox: what a command reads, and the project's own configuration files
//!   (`.cargo/config.toml`, `package.json` scripts, `conftest.py`) that verifiers load by
//!   design.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod allow;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod allow_tests;
mod git;
mod inspect;
mod lex;
mod options;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
mod verify;

pub use allow::{CommandAllowlist, MAX_PATTERN_CHARS, MAX_PATTERNS};
use inspect::{INSPECT_COMMANDS, check_inspect, is_assignment};
use lex::{Word, check_redirect, split_commands, tokenize};

/// What a role's bash may run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ShellPolicy {
    #[default]
    Unrestricted,
    Inspect,
    Verify,
    None,
}

impl ShellPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            ShellPolicy::Unrestricted => "unrestricted",
            ShellPolicy::Inspect => "inspect",
            ShellPolicy::Verify => "verify",
            ShellPolicy::None => "none",
        }
    }
}

impl ShellPolicy {
    /// What the model is told about the policy in the bash tool's description.
    pub fn summary(self) -> Option<&'static str> {
        const INSPECT: &str = "Only inspection commands run: pwd, ls, cat, head, tail, wc, cut, \
            stat, du, grep, rg, uniq, sort, find (no -exec/-delete) and git \
            status/log/diff/show/rev-parse/ls-files/branch (listing only; git runs in the \
            project directory: no -C, -c, --git-dir or other global options but -P and \
            --no-pager), joined by |, &&, || or ;. No redirections (except 2>&1 and to \
            /dev/null), no $ expansions or command substitution, no variable assignments, env \
            or cd, no options that run programs or write files (rg --pre, sort -o, git \
            --output/--ext-diff/--textconv); quote glob patterns given to find, git, rg, sort \
            or uniq (or start them with ./).";
        const VERIFY: &str = "Only inspection commands and checks run: pwd, ls, cat, head, \
            tail, wc, cut, stat, du, grep, rg, uniq, sort, find (no -exec/-delete), git \
            status/log/diff/show/rev-parse/ls-files/branch (listing only, in the project \
            directory), and test, lint, type-check and build commands (cargo \
            test/check/clippy/build, npm/pnpm/yarn/bun test/lint/typecheck/build, pytest, mypy, \
            ruff check, go test/vet, make test/check/lint/build, tsc --noEmit, eslint, jest, \
            vitest, …) without --fix, --write or -u and without options that name a \
            configuration, plugin, program or output file (-o, --config, -p PLUGIN, -exec, \
            --output-file, …); arguments for npm scripts go after --. Joined by |, &&, || or \
            ;. No redirections (except 2>&1 and to /dev/null), no $ expansions or command \
            substitution, no variable assignments, env or cd.";
        match self {
            ShellPolicy::Unrestricted => None,
            ShellPolicy::Inspect => Some(INSPECT),
            ShellPolicy::Verify => Some(VERIFY),
            ShellPolicy::None => Some("Shell commands are not allowed for this role."),
        }
    }
}

impl fmt::Display for ShellPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown shell policy `{0}` (expected unrestricted, inspect, verify or none)")]
pub struct UnknownShellPolicy(pub String);

impl FromStr for ShellPolicy {
    type Err = UnknownShellPolicy;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "unrestricted" => Ok(ShellPolicy::Unrestricted),
            "inspect" => Ok(ShellPolicy::Inspect),
            "verify" => Ok(ShellPolicy::Verify),
            "none" => Ok(ShellPolicy::None),
            other => Err(UnknownShellPolicy(other.to_string())),
        }
    }
}

/// Why a command was refused: the policy (or the role's command allowlist), the part of the
/// command at fault and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", self.message())]
pub struct PolicyRefusal {
    pub policy: ShellPolicy,
    pub part: String,
    pub reason: String,
    /// Refused by the role's `Bash(…)` command patterns ([`CommandAllowlist`]), not by
    /// `policy`.
    pub allowlist: bool,
}

impl PolicyRefusal {
    fn message(&self) -> String {
        let PolicyRefusal {
            policy,
            part,
            reason,
            allowlist,
        } = self;
        if *allowlist {
            format!("the role's command allowlist refuses {part}: {reason}")
        } else {
            format!("the `{policy}` shell policy refuses {part}: {reason}")
        }
    }
}

/// Check `command` against `policy` without running anything.
pub fn check_command(policy: ShellPolicy, command: &str) -> Result<(), PolicyRefusal> {
    let refuse = |part: String, reason: String| PolicyRefusal {
        policy,
        part,
        reason,
        allowlist: false,
    };
    match policy {
        ShellPolicy::Unrestricted => return Ok(()),
        ShellPolicy::None => {
            return Err(refuse(
                "every command".into(),
                "this role may not run shell commands".into(),
            ));
        }
        ShellPolicy::Inspect | ShellPolicy::Verify => {}
    }
    let tokens = tokenize(command).map_err(|e| refuse(e.part, e.reason))?;
    let commands = split_commands(tokens).map_err(|e| refuse(e.part, e.reason))?;
    for cmd in &commands {
        for redirect in &cmd.redirects {
            check_redirect(redirect).map_err(|reason| refuse(redirect.display(), reason))?;
        }
        check_simple(policy, &cmd.words).map_err(|reason| refuse(cmd.display(), reason))?;
    }
    Ok(())
}

fn check_simple(policy: ShellPolicy, words: &[Word]) -> Result<(), String> {
    let Some(first) = words.first() else {
        // Only redirections (`>/dev/null`): a no-op.
        return Ok(());
    };
    let name = first.text.as_str();
    if first.expands {
        return Err("the command name must not be a pattern".into());
    }
    if is_assignment(name) {
        return Err(
            "variable assignments before a command (`NAME=value cmd`) are not allowed: \
             variables such as GIT_DIR, LD_PRELOAD, PATH or BASH_ENV choose the programs a \
             command runs; run the command without them"
                .into(),
        );
    }
    if INSPECT_COMMANDS.contains(&name) {
        return check_inspect(name, &words[1..]);
    }
    let hint = match name {
        "cd" | "pushd" | "popd" => {
            ": commands run in the project directory only; pass the path as an argument \
             instead (`ls sub`, `git log -- sub`)"
        }
        "env" | "export" | "declare" | "typeset" | "local" | "readonly" | "unset" => {
            ": it sets variables (which can choose the programs a command runs) or runs \
             another command; run the command itself, without variables"
        }
        _ => "",
    };
    if policy == ShellPolicy::Verify {
        return match verify::check(words) {
            Ok(true) => Ok(()),
            Ok(false) => Err(format!(
                "`{name}` is neither an inspection command nor a recognised verifier{hint}"
            )),
            Err(reason) => Err(reason),
        };
    }
    Err(format!("`{name}` is not an inspection command{hint}"))
}
