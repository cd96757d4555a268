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

// ---------------------------------------------------------------------------------------------
// Tokenizer

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Word {
    text: String,
    /// Holds an unquoted glob or brace pattern, so the shell may turn it into other words.
    expands: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Pipe,
    And,
    Or,
    Seq,
    Newline,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(Word),
    Op(Op),
    /// A redirection operator (`>`, `2>&`, `<<`, …) whose target is the next word.
    Redirect {
        fd: Option<String>,
        op: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ParseRefusal {
    part: String,
    reason: String,
}

fn parse_refusal(part: &str, reason: &str) -> ParseRefusal {
    ParseRefusal {
        part: part.to_string(),
        reason: reason.to_string(),
    }
}

/// A word being read: `started` is true once anything (even `""`) belongs to it.
#[derive(Default)]
struct WordBuf {
    text: String,
    started: bool,
    quoted: bool,
    expands: bool,
    /// An unquoted `{` was seen (brace expansion needs one, `@{` excepted).
    open_brace: bool,
}

impl WordBuf {
    fn push(&mut self, c: char) {
        self.text.push(c);
        self.started = true;
    }

    fn take(&mut self) -> Option<Word> {
        if !self.started {
            return None;
        }
        let word = Word {
            text: std::mem::take(&mut self.text),
            expands: self.expands,
        };
        *self = WordBuf::default();
        Some(word)
    }
}

/// Whether `$` followed by `next` starts an expansion (`$x`, `${`, `$(`, `$'`, `$"`, `$1`, …).
fn dollar_expands(next: Option<char>, in_double_quotes: bool) -> bool {
    match next {
        None => false,
        Some('"') => !in_double_quotes,
        Some(c) => c.is_ascii_alphanumeric() || "_{([@*#?-$!'".contains(c),
    }
}

fn tokenize(input: &str) -> Result<Vec<Token>, ParseRefusal> {
    let chars: Vec<char> = input.chars().collect();
    let mut tokens = Vec::new();
    let mut word = WordBuf::default();
    let mut i = 0;
    let flush = |word: &mut WordBuf, tokens: &mut Vec<Token>| {
        if let Some(w) = word.take() {
            tokens.push(Token::Word(w));
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            ' ' | '\t' => {
                flush(&mut word, &mut tokens);
                i += 1;
            }
            '\n' => {
                flush(&mut word, &mut tokens);
                tokens.push(Token::Op(Op::Newline));
                i += 1;
            }
            '#' if !word.started => {
                // A comment runs to the end of the line.
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '\\' => match next {
                None => return Err(parse_refusal("`\\`", "a trailing backslash")),
                Some('\n') => i += 2,
                Some(n) => {
                    word.push(n);
                    word.quoted = true;
                    i += 2;
                }
            },
            '\'' => {
                let Some(len) = chars[i + 1..].iter().position(|&ch| ch == '\'') else {
                    return Err(parse_refusal("`'`", "an unterminated single quote"));
                };
                word.started = true;
                word.quoted = true;
                word.text.extend(&chars[i + 1..i + 1 + len]);
                i += len + 2;
            }
            '"' => {
                word.started = true;
                word.quoted = true;
                i = read_double_quoted(&chars, i + 1, &mut word)?;
            }
            '`' => {
                return Err(parse_refusal(
                    "`` ` ``",
                    "command substitution (backticks) runs another command",
                ));
            }
            '$' => {
                if dollar_expands(next, false) {
                    return Err(dollar_refusal(next));
                }
                word.push('$');
                i += 1;
            }
            '|' => {
                flush(&mut word, &mut tokens);
                match next {
                    Some('|') => {
                        tokens.push(Token::Op(Op::Or));
                        i += 2;
                    }
                    // `|&` pipes stderr too, like `2>&1 |`.
                    Some('&') => {
                        tokens.push(Token::Op(Op::Pipe));
                        i += 2;
                    }
                    _ => {
                        tokens.push(Token::Op(Op::Pipe));
                        i += 1;
                    }
                }
            }
            '&' => match next {
                Some('&') => {
                    flush(&mut word, &mut tokens);
                    tokens.push(Token::Op(Op::And));
                    i += 2;
                }
                Some('>') => {
                    flush(&mut word, &mut tokens);
                    let mut op = String::from("&>");
                    i += 2;
                    if chars.get(i) == Some(&'>') {
                        op.push('>');
                        i += 1;
                    }
                    tokens.push(Token::Redirect { fd: None, op });
                }
                _ => {
                    return Err(parse_refusal(
                        "`&`",
                        "running a command in the background is not allowed",
                    ));
                }
            },
            ';' => {
                if next == Some(';') {
                    return Err(parse_refusal("`;;`", "`case` syntax is not allowed"));
                }
                flush(&mut word, &mut tokens);
                tokens.push(Token::Op(Op::Seq));
                i += 1;
            }
            '(' | ')' => {
                return Err(parse_refusal(
                    &format!("`{c}`"),
                    "subshells and grouping are not allowed",
                ));
            }
            '<' | '>' => {
                if next == Some('(') {
                    return Err(parse_refusal(
                        &format!("`{c}(`"),
                        "process substitution runs another command",
                    ));
                }
                // Digits right before the operator name the file descriptor (`2>`).
                let fd = if word.started
                    && !word.quoted
                    && !word.text.is_empty()
                    && word.text.chars().all(|d| d.is_ascii_digit())
                {
                    word.take().map(|w| w.text)
                } else {
                    flush(&mut word, &mut tokens);
                    None
                };
                let mut op = String::from(c);
                i += 1;
                let follow: &[char] = if c == '>' {
                    &['>', '|', '&']
                } else {
                    &['<', '>', '&']
                };
                if let Some(&n) = chars.get(i)
                    && follow.contains(&n)
                {
                    op.push(n);
                    i += 1;
                    if op == "<<" && chars.get(i) == Some(&'<') {
                        op.push('<');
                        i += 1;
                    }
                }
                tokens.push(Token::Redirect { fd, op });
            }
            '*' | '?' | '[' => {
                word.push(c);
                word.expands = true;
                i += 1;
            }
            '{' => {
                // `HEAD@{1}` is git's reflog syntax, not a brace expansion.
                if !word.text.ends_with('@') {
                    word.open_brace = true;
                }
                word.push(c);
                i += 1;
            }
            ',' if word.open_brace => {
                word.expands = true;
                word.push(c);
                i += 1;
            }
            '.' if word.open_brace && next == Some('.') => {
                word.expands = true;
                word.push(c);
                i += 1;
            }
            _ => {
                word.push(c);
                i += 1;
            }
        }
    }
    flush(&mut word, &mut tokens);
    Ok(tokens)
}

fn dollar_refusal(next: Option<char>) -> ParseRefusal {
    match next {
        Some('(') => parse_refusal("`$(`", "command substitution runs another command"),
        Some('{') => parse_refusal("`${`", "parameter expansion is not allowed"),
        Some('\'') | Some('"') => {
            parse_refusal("`$'`", "ANSI-C and locale quoting are not allowed")
        }
        Some('[') => parse_refusal("`$[`", "arithmetic expansion is not allowed"),
        _ => parse_refusal(
            "`$`",
            "variable expansion is not allowed (quote a literal `$` with single quotes)",
        ),
    }
}

/// Read a double-quoted string starting after its opening quote; returns the index after the
/// closing quote.
fn read_double_quoted(
    chars: &[char],
    mut i: usize,
    word: &mut WordBuf,
) -> Result<usize, ParseRefusal> {
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        match c {
            '"' => return Ok(i + 1),
            '\\' => match next {
                Some('\n') => i += 2,
                Some(n @ ('$' | '`' | '"' | '\\')) => {
                    word.text.push(n);
                    i += 2;
                }
                _ => {
                    word.text.push('\\');
                    i += 1;
                }
            },
            '`' => {
                return Err(parse_refusal(
                    "`` ` ``",
                    "command substitution (backticks) runs another command",
                ));
            }
            '$' => {
                if dollar_expands(next, true) {
                    return Err(dollar_refusal(next));
                }
                word.text.push('$');
                i += 1;
            }
            _ => {
                word.text.push(c);
                i += 1;
            }
        }
    }
    Err(parse_refusal("`\"`", "an unterminated double quote"))
}

// ---------------------------------------------------------------------------------------------
// Simple commands

#[derive(Debug, Clone, PartialEq, Eq)]
struct Redirect {
    fd: Option<String>,
    op: String,
    target: Word,
}

impl Redirect {
    fn display(&self) -> String {
        format!(
            "`{}{}{}`",
            self.fd.as_deref().unwrap_or(""),
            self.op,
            self.target.text
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct SimpleCommand {
    words: Vec<Word>,
    redirects: Vec<Redirect>,
}

impl SimpleCommand {
    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.redirects.is_empty()
    }

    fn display(&self) -> String {
        let words: Vec<&str> = self.words.iter().map(|w| w.text.as_str()).collect();
        format!("`{}`", words.join(" "))
    }
}

fn op_text(op: Op) -> &'static str {
    match op {
        Op::Pipe => "|",
        Op::And => "&&",
        Op::Or => "||",
        Op::Seq => ";",
        Op::Newline => "newline",
    }
}

/// Group the tokens into simple commands, checking that every operator joins two commands.
fn split_commands(tokens: Vec<Token>) -> Result<Vec<SimpleCommand>, ParseRefusal> {
    let mut commands = Vec::new();
    let mut current = SimpleCommand::default();
    // The operator that still needs a command after it (`ls |` at the end is incomplete).
    let mut pending: Option<Op> = None;
    let mut iter = tokens.into_iter();
    while let Some(token) = iter.next() {
        match token {
            Token::Word(w) => {
                current.words.push(w);
                pending = None;
            }
            Token::Redirect { fd, op } => {
                let part = format!("`{}{op}`", fd.as_deref().unwrap_or(""));
                match iter.next() {
                    Some(Token::Word(target)) => {
                        current.redirects.push(Redirect { fd, op, target })
                    }
                    _ => return Err(parse_refusal(&part, "a redirection without a target")),
                }
                pending = None;
            }
            // Blank lines and a line break after `|`, `&&` or `||` are fine.
            Token::Op(Op::Newline) if current.is_empty() => {}
            Token::Op(op) => {
                if current.is_empty() {
                    return Err(parse_refusal(
                        &format!("`{}`", op_text(op)),
                        "an operator without a command before it",
                    ));
                }
                commands.push(std::mem::take(&mut current));
                pending = match op {
                    Op::Pipe | Op::And | Op::Or => Some(op),
                    Op::Seq | Op::Newline => None,
                };
            }
        }
    }
    if let Some(op) = pending {
        return Err(parse_refusal(
            &format!("`{}`", op_text(op)),
            "an operator without a command after it",
        ));
    }
    if !current.is_empty() {
        commands.push(current);
    }
    if commands.is_empty() {
        return Err(parse_refusal("the command", "it is empty"));
    }
    Ok(commands)
}

/// Only redirections that write nothing: stream duplication and `/dev/null`.
fn check_redirect(r: &Redirect) -> Result<(), String> {
    let fd = r.fd.as_deref();
    let target = r.target.text.as_str();
    let std_fd = |f: Option<&str>| matches!(f, None | Some("1") | Some("2"));
    match r.op.as_str() {
        ">&" if std_fd(fd) && (target == "1" || target == "2") && !r.target.expands => Ok(()),
        ">" | ">>" | ">|" | "&>" | "&>>" if target == "/dev/null" && !r.target.expands => Ok(()),
        op if op.starts_with('<') => Err(
            "input redirections and here-documents are not allowed; pass the file as an argument"
                .into(),
        ),
        _ => Err("redirections that write to a file are not allowed".into()),
    }
}

// ---------------------------------------------------------------------------------------------
// Command allowlists

const INSPECT_COMMANDS: &[&str] = &[
    "pwd", "ls", "cat", "head", "tail", "wc", "cut", "stat", "du", "grep", "rg", "uniq", "sort",
    "find", "git",
];

/// Commands with no option that writes or runs anything: glob patterns may expand freely.
const GLOB_SAFE: &[&str] = &[
    "pwd", "ls", "cat", "head", "tail", "wc", "cut", "stat", "du", "grep",
];

const GIT_SUBCOMMANDS: &[&str] = &[
    "status",
    "log",
    "diff",
    "show",
    "rev-parse",
    "ls-files",
    "branch",
];

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

fn is_assignment(word: &str) -> bool {
    match word.split_once('=') {
        Some((var, _)) => {
            let mut chars = var.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        }
        None => false,
    }
}

/// A GNU-style long option (`--name` or `--name=value`) that abbreviates or equals `full`.
fn abbreviates(word: &str, full: &str) -> bool {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    name.len() > 2 && name.starts_with("--") && full.starts_with(name)
}

fn check_inspect(name: &str, args: &[Word]) -> Result<(), String> {
    if !GLOB_SAFE.contains(&name)
        && let Some(w) = args.iter().find(|w| w.expands)
    {
        return Err(format!(
            "the unquoted pattern `{}` would expand to file names, which `{name}` could take as \
             options; quote it",
            w.text
        ));
    }
    match name {
        "find" => check_find(args),
        "rg" => check_rg(args),
        "sort" => check_sort(args),
        "uniq" => check_uniq(args),
        "git" => check_git(args),
        _ => Ok(()),
    }
}

fn check_find(args: &[Word]) -> Result<(), String> {
    const REFUSED: &[&str] = &[
        "-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls",
    ];
    match args.iter().find(|w| REFUSED.contains(&w.text.as_str())) {
        Some(w) => Err(format!("find's `{}` runs commands or writes files", w.text)),
        None => Ok(()),
    }
}

fn check_rg(args: &[Word]) -> Result<(), String> {
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        let name = t.split_once('=').map_or(t, |(n, _)| n);
        if name == "--pre" || name == "--hostname-bin" {
            return Err(format!("rg's `{name}` runs another program"));
        }
    }
    Ok(())
}

fn check_sort(args: &[Word]) -> Result<(), String> {
    for w in args {
        let t = w.text.as_str();
        if t == "--" {
            break;
        }
        for long in ["--output", "--temporary-directory", "--compress-program"] {
            if abbreviates(t, long) {
                return Err(format!("sort's `{long}` writes files or runs a program"));
            }
        }
        if let Some(cluster) = t.strip_prefix('-')
            && !cluster.starts_with('-')
            && (cluster.contains('o') || cluster.contains('T'))
        {
            return Err(format!(
                "sort's `{t}` holds `-o` (output file) or `-T` (temporary files); a field \
                 separator `o` must be a separate argument (`-t o`)"
            ));
        }
    }
    Ok(())
}

fn check_uniq(args: &[Word]) -> Result<(), String> {
    const WITH_VALUE: &[&str] = &[
        "-f",
        "-s",
        "-w",
        "--skip-fields",
        "--skip-chars",
        "--check-chars",
    ];
    let mut operands = 0;
    let mut options_done = false;
    let mut iter = args.iter();
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if !options_done && t == "--" {
            options_done = true;
        } else if !options_done && t.starts_with('-') && t != "-" {
            if WITH_VALUE.contains(&t) {
                iter.next();
            }
        } else {
            operands += 1;
        }
    }
    if operands > 1 {
        return Err("uniq's second file operand is an output file it would write".into());
    }
    Ok(())
}

fn check_git(args: &[Word]) -> Result<(), String> {
    let mut i = 0;
    while let Some(w) = args.get(i) {
        match w.text.as_str() {
            "-C" => {
                if args.get(i + 1).is_none() {
                    return Err("git's `-C` needs a directory".into());
                }
                i += 2;
            }
            "-P" | "--no-pager" | "--no-optional-locks" => i += 1,
            t if t.starts_with('-') => {
                return Err(format!(
                    "git's global option `{t}` is not allowed (only -C, -P, --no-pager, \
                     --no-optional-locks)"
                ));
            }
            _ => break,
        }
    }
    let Some(sub) = args.get(i) else {
        return Err(
            "git needs one of the subcommands status, log, diff, show, rev-parse, \
                    ls-files, branch"
                .into(),
        );
    };
    let sub = sub.text.as_str();
    if !GIT_SUBCOMMANDS.contains(&sub) {
        return Err(format!(
            "`git {sub}` is not an inspection command (allowed: {})",
            GIT_SUBCOMMANDS.join(", ")
        ));
    }
    let rest = &args[i + 1..];
    for w in rest {
        if w.text == "--" {
            break;
        }
        if abbreviates(&w.text, "--output") {
            return Err(format!("git's `{}` writes the output to a file", w.text));
        }
    }
    if sub == "branch" {
        return check_git_branch(rest);
    }
    Ok(())
}

fn check_git_branch(args: &[Word]) -> Result<(), String> {
    const FLAGS: &[&str] = &[
        "-a",
        "--all",
        "-r",
        "--remotes",
        "-l",
        "--list",
        "-v",
        "-vv",
        "--verbose",
        "--show-current",
        "-i",
        "--ignore-case",
        "-q",
        "--quiet",
        "--color",
        "--no-color",
        "--column",
        "--no-column",
        "--abbrev",
        "--no-abbrev",
        "--omit-empty",
    ];
    const WITH_VALUE: &[&str] = &[
        "--contains",
        "--no-contains",
        "--merged",
        "--no-merged",
        "--points-at",
        "--sort",
        "--format",
    ];
    const EQUALS_FLAGS: &[&str] = &["--color", "--column", "--abbrev"];
    let listing = args.iter().any(|w| {
        w.text == "--list"
            || w.text == "-l"
            || (w.text.starts_with('-') && !w.text.starts_with("--") && w.text.contains('l'))
    });
    let refuse = |t: &str| {
        Err(format!(
            "`git branch` is allowed only in its listing forms; `{t}` could create, delete, \
             rename or configure a branch"
        ))
    };
    let mut iter = args.iter().peekable();
    let mut options_done = false;
    while let Some(w) = iter.next() {
        let t = w.text.as_str();
        if !options_done && t == "--" {
            options_done = true;
            continue;
        }
        if options_done || !t.starts_with('-') {
            if !listing {
                return refuse(t);
            }
            continue;
        }
        if FLAGS.contains(&t) {
            continue;
        }
        let name = t.split_once('=').map(|(n, _)| n);
        if let Some(name) = name
            && (WITH_VALUE.contains(&name) || EQUALS_FLAGS.contains(&name))
        {
            continue;
        }
        if WITH_VALUE.contains(&t) {
            // The value is optional for --contains/--merged (default HEAD).
            if iter.peek().is_some_and(|n| !n.text.starts_with('-')) {
                iter.next();
            }
            continue;
        }
        if let Some(cluster) = t.strip_prefix('-')
            && !cluster.is_empty()
            && !cluster.starts_with('-')
            && cluster.chars().all(|c| "arlviq".contains(c))
        {
            continue;
        }
        return refuse(t);
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Verifiers (V4)

#[derive(Debug, Clone, PartialEq, Eq)]
enum Verifier {
    Check,
    Mutating(String),
    Unknown,
}

/// Flags that make a check rewrite files (V4), plus rubocop's and prettier's spellings.
fn mutating_flag(tool: &str, word: &str) -> bool {
    let name = word.split_once('=').map_or(word, |(n, _)| n);
    if matches!(
        name,
        "--fix" | "--write" | "-u" | "--update" | "--updateSnapshot" | "--update-snapshots"
    ) {
        return true;
    }
    match tool {
        "rubocop" => matches!(
            name,
            "-a" | "-A"
                | "--auto-correct"
                | "--auto-correct-all"
                | "--autocorrect"
                | "--autocorrect-all"
        ),
        "prettier" => name == "-w",
        _ => false,
    }
}

fn classify_verifier(words: &[Word]) -> Verifier {
    let words = match words.first() {
        Some(w) if w.text == "npx" => &words[1..],
        _ => words,
    };
    let Some(tool) = words.first().map(|w| w.text.as_str()) else {
        return Verifier::Unknown;
    };
    let args: Vec<&str> = words[1..].iter().map(|w| w.text.as_str()).collect();
    if !recognised_verifier(tool, &args) {
        return Verifier::Unknown;
    }
    match args.iter().find(|a| mutating_flag(tool, a)) {
        Some(flag) => Verifier::Mutating((*flag).to_string()),
        None => Verifier::Check,
    }
}

fn recognised_verifier(tool: &str, args: &[&str]) -> bool {
    let first = args.first().copied();
    let has = |flag: &str| args.contains(&flag);
    match tool {
        "npm" | "pnpm" | "yarn" | "bun" => {
            const SCRIPTS: &[&str] = &["test", "check", "lint", "typecheck", "build"];
            match first {
                Some("run") => args.get(1).is_some_and(|s| SCRIPTS.contains(s)),
                Some(s) => SCRIPTS.contains(&s),
                None => false,
            }
        }
        "node" => first == Some("--test"),
        "python" | "python3" => {
            first == Some("-m")
                && match args.get(1).copied() {
                    Some("pytest" | "unittest" | "mypy") => true,
                    Some("ruff") => ruff_check(&args[2..]),
                    _ => false,
                }
        }
        "pytest" | "mypy" | "eslint" | "vitest" | "jest" | "rubocop" => true,
        "ruff" => ruff_check(args),
        "cargo" => {
            let rest: Vec<&str> = args
                .iter()
                .copied()
                .skip_while(|a| a.starts_with('+'))
                .collect();
            match rest.first().copied() {
                Some("test" | "check" | "clippy" | "build" | "nextest") => true,
                Some("fmt") => rest.contains(&"--check"),
                _ => false,
            }
        }
        "go" => matches!(first, Some("test" | "vet" | "build")),
        "make" => make_targets(args),
        "mvn" => build_goals(args, |g| {
            matches!(
                g,
                "validate" | "compile" | "test-compile" | "test" | "verify" | "package"
            )
        }),
        "gradle" => build_goals(args, |task| {
            let task = task.rsplit(':').next().unwrap_or(task);
            matches!(task, "test" | "check" | "build" | "assemble" | "lint")
        }),
        "tsc" => has("--noEmit"),
        "dotnet" => matches!(first, Some("test" | "build")),
        "flutter" | "dart" => first == Some("test"),
        "prettier" => has("--check") || has("-c"),
        _ => false,
    }
}

fn ruff_check(args: &[&str]) -> bool {
    match args.first().copied() {
        Some("check") => true,
        Some("format") => args.contains(&"--check"),
        _ => false,
    }
}

/// `make` with only check-like targets and harmless options.
fn make_targets(args: &[&str]) -> bool {
    let mut targets = 0;
    for a in args {
        let harmless_option = matches!(*a, "-k" | "-s" | "-j" | "--keep-going" | "--silent")
            || a.strip_prefix("-j")
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()))
            || a.strip_prefix("--jobs=")
                .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()));
        if harmless_option {
            continue;
        }
        if matches!(*a, "test" | "check" | "lint" | "build") {
            targets += 1;
        } else {
            return false;
        }
    }
    targets > 0
}

/// Maven goals / Gradle tasks: options pass, every other word must be a check-like goal.
fn build_goals(args: &[&str], goal_ok: impl Fn(&str) -> bool) -> bool {
    let mut goals = 0;
    for a in args {
        if a.starts_with('-') {
            continue;
        }
        if !goal_ok(a) {
            return false;
        }
        goals += 1;
    }
    goals > 0
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn allowed(policy: ShellPolicy, cmd: &str) {
        if let Err(e) = check_command(policy, cmd) {
            panic!("{policy} should allow {cmd:?}, refused: {e}");
        }
    }

    fn refused(policy: ShellPolicy, cmd: &str, why: &str) {
        match check_command(policy, cmd) {
            Ok(()) => panic!("{policy} should refuse {cmd:?}"),
            Err(e) => {
                let text = e.to_string();
                assert!(
                    text.contains(why),
                    "{cmd:?}: refusal {text:?} should mention {why:?}"
                );
                assert!(text.starts_with(&format!("the `{policy}` shell policy refuses ")));
            }
        }
    }

    const INSPECT_OK: &[&str] = &[
        "pwd",
        "ls",
        "ls -la src",
        "ls *.rs",
        "cat Cargo.toml",
        "cat src/*.rs | wc -l",
        "head -n 20 README.md",
        "tail -5 log.txt",
        "wc -l a b c",
        "cut -d: -f1 /etc/passwd",
        "stat -c %s file",
        "du -sh .",
        "grep -rn 'fn main' src",
        "grep '>' file",
        "grep \"a > b\" file",
        "grep '$(rm -rf /)' file",
        "grep 'a|b' file",
        "grep a\\>b file",
        "grep -E \"x$\" f",
        "grep 'x' f # a comment > here",
        "rg -n TODO",
        "rg --pre-glob '*.gz' x",
        "uniq file",
        "uniq -c",
        "uniq -f 2 file",
        "sort -n file | uniq -c | sort -rn | head",
        "sort -k2,2 -t , file",
        "sort -t o file",
        "find . -name '*.rs' -type f",
        "find src -newer Cargo.toml -print",
        "find . ! -name x",
        "git status",
        "git status --porcelain",
        "git log --oneline -n 5",
        "git diff HEAD~1 -- src",
        "git show HEAD@{1}",
        "git show HEAD:src/main.rs",
        "git rev-parse --show-toplevel",
        "git ls-files -m",
        "git -C sub status",
        "git --no-pager log",
        "git branch",
        "git branch -a",
        "git branch -avv",
        "git branch --list 'feat/*'",
        "git branch -l feat",
        "git branch --contains HEAD",
        "git branch --merged=main",
        "git branch --sort=-committerdate --format='%(refname:short)'",
        "git branch --show-current",
        "ls && pwd",
        "ls || pwd",
        "ls; pwd",
        "ls;",
        "ls\npwd",
        "\nls\n\n",
        "ls |\n wc -l",
        "ls 2>&1 | head",
        "ls >&2",
        "ls 2>/dev/null",
        "ls > /dev/null",
        "ls &>/dev/null",
        "ls |& head",
        "cat 'file with spaces' \"and more\"",
        "cat a\\ b",
    ];

    #[test]
    fn inspect_allows_inspection() {
        for cmd in INSPECT_OK {
            allowed(ShellPolicy::Inspect, cmd);
            allowed(ShellPolicy::Verify, cmd);
            allowed(ShellPolicy::Unrestricted, cmd);
        }
    }

    const INSPECT_REFUSED: &[(&str, &str)] = &[
        ("rm -rf x", "`rm` is not an inspection command"),
        ("ls; rm -rf x", "`rm` is not an inspection command"),
        ("ls && rm x", "`rm`"),
        ("ls | tee f", "`tee`"),
        ("cat a > b", "redirections that write to a file"),
        ("cat a >> b", "redirections that write"),
        ("cat a>b", "redirections that write"),
        ("ls 2>err.log", "redirections that write"),
        ("ls >| f", "redirections that write"),
        ("ls &> f", "redirections that write"),
        ("ls >&f", "redirections that write"),
        ("ls 3>&1", "redirections that write"),
        ("ls > /dev/*", "redirections that write"),
        ("cat < f", "input redirections"),
        ("cat <<EOF\nx\nEOF", "input redirections"),
        ("cat <<< x", "input redirections"),
        ("cat <> f", "input redirections"),
        ("ls >", "without a target"),
        ("find . -exec rm {} \\;", "find's `-exec`"),
        ("find . -execdir rm {} +", "`-execdir`"),
        ("find . -delete", "`-delete`"),
        ("find . -fprint out", "`-fprint`"),
        ("find . -ok rm {} ;", "`-ok`"),
        ("find * -print", "unquoted pattern `*`"),
        ("find . {-delete,}", "unquoted pattern"),
        ("git branch -D x", "listing forms"),
        ("git branch -d x", "listing forms"),
        ("git branch -m a b", "listing forms"),
        ("git branch newname", "listing forms"),
        ("git branch --delete x", "listing forms"),
        ("git branch --del x", "listing forms"),
        ("git branch -f x HEAD", "listing forms"),
        ("git branch -u origin/x", "listing forms"),
        ("git branch --set-upstream-to=o/x", "listing forms"),
        ("git branch -c a b", "listing forms"),
        ("git branch -ad x", "listing forms"),
        (
            "git commit -am x",
            "`git commit` is not an inspection command",
        ),
        ("git checkout .", "`git checkout`"),
        ("git -c core.pager=sh log", "global option `-c`"),
        ("git --git-dir=x status", "global option"),
        ("git", "needs one of the subcommands"),
        ("git diff --output=f", "writes the output to a file"),
        ("git log --out=f", "writes the output"),
        ("git log *", "unquoted pattern"),
        ("rg --pre sh x", "`--pre`"),
        ("rg --pre=sh x", "`--pre`"),
        ("rg --hostname-bin=x y", "`--hostname-bin`"),
        ("sort -o out file", "`-o`"),
        ("sort -ro out file", "`-ro`"),
        ("sort --output=out file", "`--output`"),
        ("sort --out=x f", "`--output`"),
        ("sort -T /tmp f", "`-T`"),
        ("sort --compress-program=sh f", "`--compress-program`"),
        ("sort *", "unquoted pattern"),
        ("uniq in out", "output file"),
        ("uniq -c in out", "output file"),
        ("uniq -- in out", "output file"),
        ("echo $(rm x)", "`$(`"),
        ("ls $(pwd)", "command substitution"),
        ("ls \"$(pwd)\"", "command substitution"),
        ("ls `pwd`", "backticks"),
        ("ls \"`pwd`\"", "backticks"),
        ("cat <(ls)", "process substitution"),
        ("ls >(cat)", "process substitution"),
        ("ls $HOME", "variable expansion"),
        ("ls \"$HOME\"", "variable expansion"),
        ("ls ${X:=-delete}", "parameter expansion"),
        ("ls $'\\x41'", "ANSI-C"),
        ("ls $[1+1]", "arithmetic"),
        ("X=1 ls", "variable assignments"),
        ("X=-delete; find . $X", "variable expansion"),
        ("X=-delete; ls", "variable assignments"),
        ("(ls)", "subshells"),
        ("{ ls; }", "`{` is not an inspection command"),
        ("ls &", "background"),
        ("ls & rm x", "background"),
        ("eval ls", "`eval`"),
        ("exec ls", "`exec`"),
        ("env ls", "`env`"),
        ("ls | xargs rm", "`xargs`"),
        ("sh -c ls", "`sh`"),
        ("bash -c 'ls'", "`bash`"),
        ("/bin/ls", "`/bin/ls`"),
        ("l*", "must not be a pattern"),
        ("ls |", "without a command after it"),
        ("ls &&", "without a command after it"),
        ("| ls", "without a command before it"),
        ("; ls", "without a command before it"),
        ("ls ;; pwd", "`case` syntax"),
        ("ls 'unterminated", "unterminated single quote"),
        ("ls \"unterminated", "unterminated double quote"),
        ("ls \\", "trailing backslash"),
        ("", "empty"),
        ("   ", "empty"),
        ("# only a comment", "empty"),
        ("cargo test", "not an inspection command"),
        ("echo hi", "`echo`"),
        ("touch f", "`touch`"),
        ("if true; then rm x; fi", "`if`"),
    ];

    #[test]
    fn inspect_refuses_everything_else() {
        for (cmd, why) in INSPECT_REFUSED {
            refused(ShellPolicy::Inspect, cmd, why);
            allowed(ShellPolicy::Unrestricted, cmd);
        }
    }

    #[test]
    fn verify_refuses_what_inspect_refuses_apart_from_verifiers() {
        for (cmd, why) in INSPECT_REFUSED {
            if *cmd == "cargo test" {
                continue;
            }
            // Verify words an unknown command differently; git's own refusals stay the same.
            let text = check_command(ShellPolicy::Verify, cmd)
                .unwrap_err()
                .to_string();
            let alt = why.replace("is not an inspection command", "is neither");
            assert!(
                text.contains(*why) || text.contains(&alt),
                "{cmd:?}: refusal {text:?} should mention {why:?}"
            );
        }
    }

    const VERIFIERS: &[&str] = &[
        "npm test",
        "npm run lint",
        "pnpm typecheck",
        "yarn build",
        "bun test",
        "bun run check",
        "node --test",
        "node --test test/",
        "python -m pytest -x",
        "python3 -m unittest discover",
        "python -m mypy src",
        "python -m ruff check .",
        "pytest",
        "pytest tests/test_*.py",
        "mypy .",
        "ruff check .",
        "ruff format --check",
        "cargo test",
        "cargo test -p cadre-tools -- --nocapture",
        "cargo +nightly check",
        "cargo clippy --all-targets -- -D warnings",
        "cargo build --release",
        "cargo nextest run",
        "cargo fmt --check",
        "cargo fmt --all -- --check",
        "go test ./...",
        "go vet ./...",
        "go build ./...",
        "mvn test",
        "mvn -q verify",
        "gradle check",
        "gradle :app:test",
        "make test",
        "make -j4 check lint",
        "tsc --noEmit",
        "tsc --noEmit -p tsconfig.json",
        "eslint src",
        "vitest run",
        "jest --ci",
        "rubocop",
        "dotnet test",
        "dotnet build",
        "flutter test",
        "dart test",
        "npx eslint .",
        "npx vitest run",
        "npx tsc --noEmit",
        "npx prettier --check .",
        "prettier -c src",
        "cargo test 2>&1 | tail -n 50",
        "cargo test && git status",
        "cargo test >/dev/null",
    ];

    #[test]
    fn verify_allows_verifiers() {
        for cmd in VERIFIERS {
            allowed(ShellPolicy::Verify, cmd);
            if !cmd.starts_with("cargo test 2>&1") && !cmd.starts_with("cargo test &&") {
                refused(ShellPolicy::Inspect, cmd, "is not an inspection command");
            }
        }
    }

    const VERIFY_REFUSED: &[(&str, &str)] = &[
        ("cargo clippy --fix", "`--fix` makes the check change files"),
        ("eslint --fix .", "`--fix`"),
        ("eslint --fix=true .", "`--fix=true`"),
        ("npx eslint --fix .", "`--fix`"),
        ("prettier --write .", "is neither"),
        ("prettier --check --write .", "`--write`"),
        ("prettier -c -w .", "`-w`"),
        ("jest -u", "`-u`"),
        ("jest --updateSnapshot", "`--updateSnapshot`"),
        ("vitest --update", "`--update`"),
        ("npm test -- -u", "`-u`"),
        ("ruff check --fix", "`--fix`"),
        ("rubocop -a", "`-a`"),
        ("rubocop --autocorrect-all", "`--autocorrect-all`"),
        ("cargo fmt", "is neither"),
        ("ruff format", "is neither"),
        ("cargo run", "is neither"),
        ("cargo install x", "is neither"),
        ("npm install", "is neither"),
        ("npm run deploy", "is neither"),
        ("npm", "is neither"),
        ("npx", "is neither"),
        ("npx rm -rf x", "is neither"),
        ("node script.js --test", "is neither"),
        ("python script.py", "is neither"),
        ("python -c 'open(1)'", "is neither"),
        ("go run .", "is neither"),
        ("go generate", "is neither"),
        ("make install", "is neither"),
        ("make", "is neither"),
        ("make test install", "is neither"),
        ("mvn deploy", "is neither"),
        ("mvn", "is neither"),
        ("gradle publish", "is neither"),
        ("tsc", "is neither"),
        ("dotnet run", "is neither"),
        ("flutter build", "is neither"),
        ("RUST_BACKTRACE=1 cargo test", "variable assignments"),
        ("cargo test > out.txt", "redirections that write"),
        ("cargo test; rm -rf x", "`rm` is neither"),
        ("cargo test &", "background"),
    ];

    #[test]
    fn verify_refuses_mutating_and_unknown() {
        for (cmd, why) in VERIFY_REFUSED {
            refused(ShellPolicy::Verify, cmd, why);
        }
    }

    #[test]
    fn none_refuses_everything() {
        for cmd in INSPECT_OK.iter().chain(VERIFIERS) {
            refused(ShellPolicy::None, cmd, "may not run shell commands");
        }
        refused(ShellPolicy::None, "", "may not run shell commands");
    }

    #[test]
    fn refusal_names_the_part() {
        let e = check_command(ShellPolicy::Inspect, "ls -l; rm -rf x").unwrap_err();
        assert_eq!(e.part, "`rm -rf x`");
        assert_eq!(e.policy, ShellPolicy::Inspect);
        let e = check_command(ShellPolicy::Inspect, "cat a 2> b").unwrap_err();
        assert_eq!(e.part, "`2>b`");
        assert_eq!(
            e.to_string(),
            "the `inspect` shell policy refuses `2>b`: redirections that write to a file are \
             not allowed"
        );
    }

    #[test]
    fn tokenizer_reads_quotes_and_escapes() {
        let words = |s: &str| -> Vec<String> {
            tokenize(s)
                .unwrap()
                .into_iter()
                .filter_map(|t| match t {
                    Token::Word(w) => Some(w.text),
                    _ => None,
                })
                .collect()
        };
        assert_eq!(words("a 'b c' \"d e\" f\\ g"), ["a", "b c", "d e", "f g"]);
        assert_eq!(words("a'b'\"c\"d"), ["abcd"]);
        assert_eq!(words("''"), [""]);
        assert_eq!(words("\"a\\\"b\\$c\\x\""), ["a\"b$c\\x"]);
        assert_eq!(words("a\\\nb"), ["ab"]);
        assert_eq!(words("grep 'x$' \"y$\" z$"), ["grep", "x$", "y$", "z$"]);
        let toks = tokenize("ls 2>&1|wc").unwrap();
        assert_eq!(toks.len(), 5);
        assert!(
            matches!(&toks[1], Token::Redirect { fd: Some(fd), op } if fd == "2" && op == ">&")
        );
        // A quoted digit is a word, not a file descriptor.
        let toks = tokenize("ls '2'>x").unwrap();
        assert!(matches!(&toks[2], Token::Redirect { fd: None, .. }));
    }

    #[test]
    fn patterns_are_flagged_only_when_unquoted() {
        let expands = |s: &str| match &tokenize(s).unwrap()[0] {
            Token::Word(w) => w.expands,
            other => panic!("{other:?}"),
        };
        assert!(expands("*.rs"));
        assert!(expands("a?"));
        assert!(expands("[ab]"));
        assert!(expands("{a,b}"));
        assert!(expands("x{1..3}"));
        assert!(!expands("'*.rs'"));
        assert!(!expands("\"*\""));
        assert!(!expands("\\*"));
        assert!(!expands("HEAD@{1}"));
        assert!(!expands("{}"));
        assert!(!expands("a,b"));
    }

    #[test]
    fn policy_names_round_trip() {
        for p in [
            ShellPolicy::Unrestricted,
            ShellPolicy::Inspect,
            ShellPolicy::Verify,
            ShellPolicy::None,
        ] {
            assert_eq!(p.as_str().parse::<ShellPolicy>().unwrap(), p);
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str());
        }
        assert!("Inspect".parse::<ShellPolicy>().is_err());
        assert_eq!(ShellPolicy::default(), ShellPolicy::Unrestricted);
    }
}
