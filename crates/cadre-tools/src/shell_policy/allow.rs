//! A role's command allowlist: the patterns of its `Bash(…)` tool entries, checked before any
//! command runs, on top of the role's shell policy (both must pass, so the allowlist only
//! narrows).
//!
//! # Threat
//!
//! The model writes the command line and the repository names the files. A pattern such as
//! `git diff:*` must not let through a second command (`git diff; rm -rf /`, `git diff | sh`,
//! a newline), a program chosen by a variable (`GIT_EXTERNAL_DIFF=x git diff`), a program
//! given by path (`/tmp/git diff`), a substitution (`git diff $(id)`) or a written file
//! (`git diff > f`), nor may quoting make one command look like another.
//!
//! # The grammar (as Claude Code's permission rules)
//!
//! * `git diff:*` — the words `git diff`, alone or followed by anything: `git diff --stat`,
//!   but not `git difftool` (the prefix ends at a word boundary).
//! * `npm run test` — exactly that command, nothing more.
//! * `*` — any run of characters, spaces included: `git * main`, `npm run *`, `ls*` (also
//!   `lsof`). A pattern whose only `*` is a trailing ` *` (`ls *`) also matches the bare
//!   command (`ls`). `\*` is a literal star.
//! * Words are split at whitespace; quotes in a pattern group a word as in the shell
//!   (`grep -n "fn main" *`).
//! * `*` (`Bash(*)`), like an empty list, means every command: there is then no allowlist and
//!   the role's shell policy alone decides.
//!
//! # Decisions
//!
//! * A pattern's command name is written out: a `*` there (`* --version`) would let any
//!   program run, so such a pattern is invalid (the role file is malformed), as are shell
//!   operators, `$`, backticks and control characters in a pattern, more than
//!   [`MAX_PATTERNS`] patterns and a pattern over [`MAX_PATTERN_CHARS`] characters.
//! * Commands are read with the shell-policy tokenizer and matched on their words after quote
//!   removal, so `git "diff"` and `git  diff` are `git diff`, while `git "diff --stat"` is one
//!   argument and not two. Every simple command of a list or pipeline (`&&`, `||`, `;`, `|`,
//!   newlines) must match a pattern.
//! * Refused whatever the patterns: `$` expansions, command and process substitution,
//!   subshells and grouping, background `&`, variable assignments before a command,
//!   redirections other than `2>&1`-style duplication and `/dev/null`, and a command name
//!   that is a glob pattern. A command given by path runs only where a pattern names that
//!   very path (`./gradlew build:*`): a pattern's `git` never matches `/usr/bin/git`.
//! * An unquoted glob in the command (`src/*.rs`) expands to file names, so it may only stand
//!   where the pattern has a `*`: the literal words of a pattern never match a word the shell
//!   would rewrite.
//! * Which options a matched command takes is the shell policy's business: `git diff:*`
//!   under `unrestricted` allows `git diff --output=f` as Claude Code does; under `inspect`
//!   the policy refuses it. A pattern naming a command that runs others (`xargs:*`, `sh:*`,
//!   `env:*`, `time:*`, `timeout:*`) allows what those run.
//! * `*` among other patterns still allows every command, as in Claude Code, where allow
//!   rules add up.

use super::inspect::is_assignment;
use super::lex::{Word, check_redirect, split_commands, tokenize};
use super::{PolicyRefusal, ShellPolicy};

/// The most patterns one role may hold.
pub const MAX_PATTERNS: usize = 64;
/// The longest pattern, in characters.
pub const MAX_PATTERN_CHARS: usize = 256;

/// The commands a role's bash may run, from its `Bash(<pattern>)` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandAllowlist {
    /// The patterns as written, for messages and the task record.
    raw: Vec<String>,
    patterns: Vec<Pattern>,
    /// `*` or no pattern at all: every command (the shell policy alone decides).
    all: bool,
}

/// One element of a pattern or of a command line, after word splitting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    Char(char),
    /// Between two words.
    Boundary,
    Star,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Pattern {
    pieces: Vec<Piece>,
    /// The trailing ` *` may also match nothing (`git diff:*` matches `git diff`).
    optional_tail: bool,
}

/// One element of a command line: a character (`glob`: of a word the shell may expand) or the
/// boundary between two words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    Char { c: char, glob: bool },
    Boundary,
}

impl CommandAllowlist {
    /// Read the patterns of a role's `Bash(…)` entries; an invalid one is an error naming it.
    pub fn parse(patterns: &[String]) -> Result<CommandAllowlist, String> {
        if patterns.len() > MAX_PATTERNS {
            return Err(format!(
                "{} Bash(…) command patterns; at most {MAX_PATTERNS} are allowed",
                patterns.len()
            ));
        }
        let mut list = CommandAllowlist {
            raw: Vec::with_capacity(patterns.len()),
            patterns: Vec::with_capacity(patterns.len()),
            all: patterns.is_empty(),
        };
        for text in patterns {
            let pattern =
                parse_pattern(text).map_err(|why| format!("Bash({text}) is invalid: {why}"))?;
            match pattern {
                None => list.all = true,
                Some(p) => list.patterns.push(p),
            }
            list.raw.push(text.trim().to_string());
        }
        Ok(list)
    }

    /// An allowlist that allows no command: for a record whose patterns cannot be read back,
    /// which must never widen what the task may run.
    pub fn deny_all(patterns: &[String]) -> CommandAllowlist {
        CommandAllowlist {
            raw: patterns.to_vec(),
            patterns: Vec::new(),
            all: false,
        }
    }

    /// Whether every command is allowed (`*` or no pattern): the shell policy alone decides.
    pub fn allows_all(&self) -> bool {
        self.all
    }

    /// The patterns as written.
    pub fn patterns(&self) -> &[String] {
        &self.raw
    }

    /// What the model is told in the bash tool's description; `None` when every command runs.
    pub fn summary(&self) -> Option<String> {
        if self.all {
            return None;
        }
        if self.patterns.is_empty() {
            return Some(
                "No shell command is allowed for this task (its command patterns could not be \
                 read)."
                    .into(),
            );
        }
        Some(format!(
            "Only commands matching these patterns run (`cmd:*` = `cmd` and any arguments, `*` = \
             anything): {}. Every command of a pipeline or list must match; no $ expansions, \
             command substitution, variable assignments, or redirections (except 2>&1 and to \
             /dev/null).",
            self.listed()
        ))
    }

    fn listed(&self) -> String {
        let quoted: Vec<String> = self.raw.iter().map(|p| format!("`{p}`")).collect();
        quoted.join(", ")
    }

    /// Check `command` without running anything: every simple command in it must match a
    /// pattern. The role's shell policy is checked separately ([`super::check_command`]).
    pub fn check(&self, command: &str) -> Result<(), PolicyRefusal> {
        if self.all {
            return Ok(());
        }
        let refuse = |part: String, reason: String| PolicyRefusal {
            policy: ShellPolicy::Unrestricted,
            part,
            reason,
            allowlist: true,
        };
        let allowed = || {
            if self.patterns.is_empty() {
                "no command is allowed (the task's command patterns could not be read)".into()
            } else {
                format!("the allowed commands are {}", self.listed())
            }
        };
        let tokens = tokenize(command)
            .map_err(|e| refuse(e.part, format!("{}; {}", e.reason, allowed())))?;
        let commands = split_commands(tokens)
            .map_err(|e| refuse(e.part, format!("{}; {}", e.reason, allowed())))?;
        for cmd in &commands {
            for redirect in &cmd.redirects {
                check_redirect(redirect).map_err(|reason| {
                    refuse(redirect.display(), format!("{reason}; {}", allowed()))
                })?;
            }
            self.check_simple(&cmd.words)
                .map_err(|reason| refuse(cmd.display(), format!("{reason}; {}", allowed())))?;
        }
        Ok(())
    }

    fn check_simple(&self, words: &[Word]) -> Result<(), String> {
        let Some(first) = words.first() else {
            // Only redirections (`>/dev/null`): nothing runs.
            return Ok(());
        };
        if first.expands {
            return Err("the command name must not be a pattern".into());
        }
        if is_assignment(&first.text) {
            return Err(
                "variable assignments before a command (`NAME=value cmd`) are not allowed: \
                 they can choose the program a command runs"
                    .into(),
            );
        }
        let units = command_units(words);
        if self.patterns.iter().any(|p| p.matches(&units)) {
            return Ok(());
        }
        Err("it matches none of the role's command patterns".into())
    }
}

/// Read one pattern; `None` is `*`, every command.
fn parse_pattern(text: &str) -> Result<Option<Pattern>, String> {
    if text.chars().count() > MAX_PATTERN_CHARS {
        return Err(format!("longer than {MAX_PATTERN_CHARS} characters"));
    }
    if text.chars().any(char::is_control) {
        return Err("it holds a control character".into());
    }
    let text = text.trim();
    if text.is_empty() {
        return Err("the pattern is empty".into());
    }
    if text == "*" {
        return Ok(None);
    }
    // Claude Code's prefix form: `cmd args:*`.
    let (body, legacy) = match text.strip_suffix(":*") {
        Some(body) if !body.ends_with('\\') => (body, true),
        _ => (text, false),
    };
    let mut pieces = lex_pattern(body)?;
    let stars = pieces.iter().filter(|p| **p == Piece::Star).count();
    if legacy && stars > 0 {
        return Err("the prefix before `:*` must not hold another `*`".into());
    }
    match pieces.iter().position(|p| *p == Piece::Boundary) {
        _ if pieces.is_empty() => return Err("the pattern names no command".into()),
        Some(end) if pieces[..end].contains(&Piece::Star) => {
            return Err("the command name must be written out, not matched by `*`".into());
        }
        None if pieces.contains(&Piece::Star) => {
            return Err("the command name must be written out, not matched by `*`".into());
        }
        _ => {}
    }
    let optional_tail = if legacy {
        pieces.extend([Piece::Boundary, Piece::Star]);
        true
    } else {
        stars == 1 && pieces.ends_with(&[Piece::Boundary, Piece::Star])
    };
    Ok(Some(Pattern {
        pieces,
        optional_tail,
    }))
}

/// Split a pattern into words the way the shell would (whitespace, quotes, backslashes), an
/// unquoted `*` being the wildcard. Shell syntax a single command cannot hold is refused.
fn lex_pattern(body: &str) -> Result<Vec<Piece>, String> {
    let chars: Vec<char> = body.chars().collect();
    let mut pieces = Vec::new();
    // Whether a word has started since the last boundary (`''` starts an empty word).
    let mut in_word = false;
    let mut i = 0;
    let start_word = |pieces: &mut Vec<Piece>, in_word: &mut bool| {
        if !*in_word && !pieces.is_empty() {
            pieces.push(Piece::Boundary);
        }
        *in_word = true;
    };
    while let Some(&c) = chars.get(i) {
        match c {
            ' ' | '\t' => {
                in_word = false;
                i += 1;
            }
            '\\' => {
                let Some(&n) = chars.get(i + 1) else {
                    return Err("it ends in a backslash".into());
                };
                start_word(&mut pieces, &mut in_word);
                pieces.push(Piece::Char(n));
                i += 2;
            }
            '\'' => {
                let Some(len) = chars[i + 1..].iter().position(|&ch| ch == '\'') else {
                    return Err("an unterminated single quote".into());
                };
                start_word(&mut pieces, &mut in_word);
                pieces.extend(chars[i + 1..i + 1 + len].iter().map(|&ch| Piece::Char(ch)));
                i += len + 2;
            }
            '"' => {
                start_word(&mut pieces, &mut in_word);
                i += 1;
                loop {
                    match chars.get(i) {
                        None => return Err("an unterminated double quote".into()),
                        Some('"') => break,
                        Some('$' | '`') => {
                            return Err("`$` and backticks are not allowed in a pattern".into());
                        }
                        Some('\\') if matches!(chars.get(i + 1), Some('"' | '\\')) => {
                            pieces.extend(chars.get(i + 1).map(|&ch| Piece::Char(ch)));
                            i += 2;
                            continue;
                        }
                        Some(&ch) => pieces.push(Piece::Char(ch)),
                    }
                    i += 1;
                }
                i += 1;
            }
            '*' => {
                start_word(&mut pieces, &mut in_word);
                pieces.push(Piece::Star);
                i += 1;
            }
            '$' | '`' | ';' | '|' | '&' | '<' | '>' | '(' | ')' => {
                return Err(format!(
                    "`{c}` is shell syntax; a pattern describes one command and its words"
                ));
            }
            _ => {
                start_word(&mut pieces, &mut in_word);
                pieces.push(Piece::Char(c));
                i += 1;
            }
        }
    }
    Ok(pieces)
}

/// A simple command's words as units: their characters, a boundary between two words.
fn command_units(words: &[Word]) -> Vec<Unit> {
    let mut units = Vec::new();
    for (n, word) in words.iter().enumerate() {
        if n > 0 {
            units.push(Unit::Boundary);
        }
        units.extend(word.text.chars().map(|c| Unit::Char {
            c,
            glob: word.expands,
        }));
    }
    units
}

impl Pattern {
    fn matches(&self, units: &[Unit]) -> bool {
        if glob_match(&self.pieces, units) {
            return true;
        }
        // `cmd *` and `cmd:*` also match `cmd` alone.
        self.optional_tail
            && self
                .pieces
                .len()
                .checked_sub(2)
                .is_some_and(|n| glob_match(&self.pieces[..n], units))
    }
}

/// Whether `pieces` matches all of `units`: a literal character matches the same character of
/// a word the shell leaves alone, a boundary a boundary, `*` any run of units. Backtracks only
/// to the last `*`, so it runs in time proportional to the product of the lengths at worst.
fn glob_match(pieces: &[Piece], units: &[Unit]) -> bool {
    let one = |p: Piece, u: Unit| match (p, u) {
        (Piece::Char(a), Unit::Char { c, glob }) => a == c && !glob,
        (Piece::Boundary, Unit::Boundary) => true,
        _ => false,
    };
    let (mut p, mut u) = (0, 0);
    // The last `*` seen and the unit it was tried at.
    let mut star: Option<(usize, usize)> = None;
    while u < units.len() {
        match pieces.get(p) {
            Some(Piece::Star) => {
                star = Some((p, u));
                p += 1;
            }
            Some(&piece) if one(piece, units[u]) => {
                p += 1;
                u += 1;
            }
            _ => match star {
                Some((sp, su)) => {
                    p = sp + 1;
                    u = su + 1;
                    star = Some((sp, su + 1));
                }
                None => return false,
            },
        }
    }
    pieces[p..].iter().all(|piece| *piece == Piece::Star)
}
