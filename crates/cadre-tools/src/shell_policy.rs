//! Shell policies (S3): which bash commands a role may run, checked before anything executes.
//!
//! * `unrestricted`: every command.
//! * `inspect`: only inspection commands — `pwd ls cat head tail wc cut stat du grep rg uniq sort
//!   find git(status|log|diff|show|rev-parse|ls-files|branch)` — joined by `|`, `&&`, `||`, `;`
//!   or newlines.
//! * `verify`: `inspect` plus the recognised verifiers of V4 (`cargo test`, `npm test`, `pytest`,
//!   …) without their mutating flags (`--fix`, `--write`, `-u`, `--updateSnapshot`, …).
//! * `none`: no command at all.
//!
//! The check parses the command with a small tokenizer that understands quotes, escapes and
//! the shell's operators, and fails closed: whatever it cannot read with confidence is refused.
//!
//! Decisions (strict on purpose; a refusal says what to do instead):
//! * Refused everywhere: command and process substitution (`$(…)`, backticks, `<(…)`, `>(…)`),
//!   every `$` expansion outside single quotes (`$VAR`, `${…}`, `$'…'`), variable-assignment
//!   prefixes (`A=1 cmd`), subshells and grouping (`(…)`, `{ …; }`), background `&`, `;;`,
//!   commands given by path (`/bin/ls`), and any command outside the lists (`eval`, `exec`,
//!   `env`, `xargs`, `sh`, `tee`, …).
//! * Redirections are refused, input ones (`<`, `<<`, `<<<`) too — pass the file as an argument
//!   instead. The only ones accepted write nothing: duplicating the standard streams (`2>&1`,
//!   `>&2`, `1>&2`) and discarding into `/dev/null` (`2>/dev/null`, `>/dev/null`, `&>/dev/null`).
//! * Unquoted glob and brace patterns (`*`, `?`, `[`, `{a,b}`) expand to file names, and a file
//!   named like an option (`-delete`, `--output=x`) would become one. They are accepted only for
//!   commands that have no writing or executing option at all (`ls cat head tail wc cut stat du
//!   grep pwd`) and for verifiers (which run project code anyway); elsewhere, quote them.
//! * `find`: no `-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls`.
//! * `rg`: no `--pre` or `--hostname-bin` (both run programs).
//! * `sort`: no `-o/--output`, `-T/--temporary-directory`, `--compress-program`; a short option
//!   cluster holding `o` or `T` is refused (`-to` as a field separator too: write `-t o`).
//!   GNU long options may be abbreviated, so every prefix of a refused long option is refused.
//! * `uniq`: at most one file operand (a second one is its output file).
//! * `git`: global options only `-C <dir>`, `-P`, `--no-pager`, `--no-optional-locks` (`-c`
//!   could set a pager or external diff program); no `--output` (or any prefix of it) in any
//!   subcommand; `git branch` only in its listing forms: `-a -r -l -v -vv -i -q`, `--list`,
//!   `--all`, `--remotes`, `--verbose`, `--show-current`, `--ignore-case`, `--quiet`,
//!   `--[no-]color`, `--[no-]column`, `--[no-]abbrev`, `--omit-empty`, and `--contains`,
//!   `--no-contains`, `--merged`, `--no-merged`, `--points-at`, `--sort`, `--format` with their
//!   value; name patterns only with `--list`/`-l`. Everything else (`-d -D -m -M -c -C -f -u -t`,
//!   a new branch name, …) is refused.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

mod inspect;
mod lex;
#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests;
mod verify;

use inspect::{INSPECT_COMMANDS, check_inspect, is_assignment};
use lex::{Word, check_redirect, split_commands, tokenize};
use verify::{Verifier, classify_verifier};

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
            status/log/diff/show/rev-parse/ls-files/branch (listing only), joined by |, &&, || \
            or ;. No redirections (except 2>&1 and to /dev/null), no $ expansions or command \
            substitution, no variable assignments; quote glob patterns given to find, git, rg, \
            sort or uniq.";
        const VERIFY: &str = "Only inspection commands and checks run: pwd, ls, cat, head, \
            tail, wc, cut, stat, du, grep, rg, uniq, sort, find (no -exec/-delete), git \
            status/log/diff/show/rev-parse/ls-files/branch (listing only), and test, lint, \
            type-check and build commands (cargo test/check/clippy/build, npm/pnpm/yarn/bun \
            test/lint/typecheck/build, pytest, mypy, ruff check, go test/vet, make \
            test/check/lint/build, tsc --noEmit, eslint, jest, vitest, …) without --fix, \
            --write or -u; joined by |, &&, || or ;. No redirections (except 2>&1 and to \
            /dev/null), no $ expansions or command substitution, no variable assignments.";
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

/// Why a command was refused: the policy, the part of the command at fault and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the `{policy}` shell policy refuses {part}: {reason}")]
pub struct PolicyRefusal {
    pub policy: ShellPolicy,
    pub part: String,
    pub reason: String,
}

/// Check `command` against `policy` without running anything.
pub fn check_command(policy: ShellPolicy, command: &str) -> Result<(), PolicyRefusal> {
    let refuse = |part: String, reason: String| PolicyRefusal {
        policy,
        part,
        reason,
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
        return Err("variable assignments are not allowed".into());
    }
    if INSPECT_COMMANDS.contains(&name) {
        return check_inspect(name, &words[1..]);
    }
    if policy == ShellPolicy::Verify {
        return match classify_verifier(words) {
            Verifier::Check => Ok(()),
            Verifier::Mutating(flag) => Err(format!(
                "`{flag}` makes the check change files; run it without that flag"
            )),
            Verifier::Unknown => Err(format!(
                "`{name}` is neither an inspection command nor a recognised verifier"
            )),
        };
    }
    Err(format!("`{name}` is not an inspection command"))
}
