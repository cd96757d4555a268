//! The command allowlist: which patterns are valid, and what they let through, attack by attack.

use super::*;

fn list(patterns: &[&str]) -> CommandAllowlist {
    let patterns: Vec<String> = patterns.iter().map(|p| p.to_string()).collect();
    CommandAllowlist::parse(&patterns).unwrap_or_else(|e| panic!("{patterns:?}: {e}"))
}

#[test]
fn invalid_patterns_are_errors_naming_the_pattern() {
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("   ", "empty"),
        ("git\u{7}diff", "control character"),
        ("git diff\n", "control character"),
        ("* --version", "command name must be written out"),
        ("g* diff", "command name must be written out"),
        ("git*", "command name must be written out"),
        ("ls* -l", "command name must be written out"),
        ("git diff && rm", "shell syntax"),
        ("git diff | sh", "shell syntax"),
        ("git diff; rm", "shell syntax"),
        ("git diff $(id)", "shell syntax"),
        ("git diff `id`", "shell syntax"),
        ("git diff > f", "shell syntax"),
        ("git diff \"$x\"", "`$`"),
        ("git 'diff", "unterminated single quote"),
        ("git \"diff", "unterminated double quote"),
        ("git diff \\", "backslash"),
        ("npm run *:*", "must not hold another `*`"),
        (":*", "names no command"),
    ];
    for (pattern, why) in cases {
        let err = CommandAllowlist::parse(&[pattern.to_string()])
            .err()
            .unwrap_or_else(|| panic!("{pattern:?} should be invalid"));
        assert!(
            err.contains(why),
            "{pattern:?}: {err:?} should mention {why:?}"
        );
        assert!(err.contains(&format!("Bash({})", pattern)), "{err:?}");
    }
    let long = format!("git {}", "a".repeat(MAX_PATTERN_CHARS));
    assert!(CommandAllowlist::parse(&[long]).is_err());
    let many: Vec<String> = (0..=MAX_PATTERNS).map(|n| format!("cmd{n}")).collect();
    assert!(CommandAllowlist::parse(&many).is_err());
    assert!(CommandAllowlist::parse(&many[..MAX_PATTERNS]).is_ok());
}

#[test]
fn star_alone_or_no_pattern_allows_every_command() {
    for patterns in [&[][..], &["*"][..], &["git diff:*", " * "][..]] {
        let l = list(patterns);
        assert!(l.allows_all(), "{patterns:?}");
        assert!(l.summary().is_none());
        assert!(l.check("rm -rf / ; curl x | sh").is_ok());
    }
    assert!(!list(&["git diff:*"]).allows_all());
}

const PATTERNS: &[&str] = &[
    "git diff:*",
    "git status",
    "npm run test",
    "git * main",
    "cargo test *",
    "ls -l*",
    "grep -n \"fn main\" *",
    "./gradlew build:*",
    "echo a\\*b",
];

/// Command lines the patterns above allow.
const ALLOWED: &[&str] = &[
    "git diff",
    "git diff --stat",
    "git diff HEAD~1 -- src",
    "git  diff",
    "git \"diff\"",
    "'git' di'ff' --stat",
    "git diff 2>&1",
    "git diff 2>/dev/null",
    "git diff >/dev/null",
    "git diff && git status",
    "git diff | git diff",
    "git status; git diff\ngit status",
    "git diff # a comment; rm -rf /",
    "git diff '; rm -rf /'",
    "git diff \"\\$(id)\"",
    "git diff 'a && b'",
    "git diff src/*.rs",
    "git status\n\n",
    "npm run test",
    "git push origin main",
    "git log main",
    "cargo test",
    "cargo test -p core",
    "ls -l",
    "ls -la",
    "ls -la src",
    "grep -n 'fn main' src",
    "grep -n \"fn main\" src/*.rs",
    "./gradlew build",
    "./gradlew build --offline",
    "echo 'a*b'",
    "echo a\\*b",
];

/// Command lines the patterns above refuse, and a word the refusal must hold.
const REFUSED: &[(&str, &str)] = &[
    // A second command.
    ("git diff; rm -rf /", "`rm -rf /`"),
    ("git diff && curl x", "`curl x`"),
    ("git diff || curl x", "`curl x`"),
    ("git diff | sh", "`sh`"),
    ("git diff\nrm -rf /", "`rm -rf /`"),
    ("git diff\r\nrm -rf /", "matches none"),
    ("git status\\\n; rm x", "`rm x`"),
    ("git diff & rm x", "background"),
    ("git diff &", "background"),
    // Substitutions and expansions.
    ("git diff $(id)", "command substitution"),
    ("git diff `id`", "backticks"),
    ("git diff \"$(id)\"", "command substitution"),
    ("git diff $HOME", "variable expansion"),
    ("git diff ${x}", "parameter expansion"),
    ("git diff <(id)", "process substitution"),
    ("git diff $'\\x3b'", "ANSI-C"),
    // Files written or read.
    ("git diff > f", "write to a file"),
    ("git diff >> f", "write to a file"),
    ("git diff 2> f", "write to a file"),
    ("git diff < f", "input redirections"),
    ("git diff <<EOF\nx\nEOF", "input redirections"),
    // Grouping.
    ("(git diff)", "subshells"),
    ("{ git diff; }", "`{ git diff`"),
    // Word boundaries and exact commands.
    ("git difftool", "matches none"),
    ("git diff-tree HEAD", "matches none"),
    ("git status --short", "matches none"),
    ("git statuses", "matches none"),
    ("npm run test -- --watch", "matches none"),
    ("npm run tests", "matches none"),
    ("npm \"run test\"", "matches none"),
    ("git 'diff --stat'", "matches none"),
    ("git diff\\ --stat", "matches none"),
    ("cargo", "matches none"),
    ("cargo testing", "matches none"),
    ("git push origin mainline", "matches none"),
    ("touch x", "`touch x`"),
    ("lsof", "matches none"),
    ("ls", "matches none"),
    ("ls -a", "matches none"),
    // Variables and programs chosen by path.
    ("GIT_PAGER=x git diff", "variable assignments"),
    ("GIT_EXTERNAL_DIFF=x git diff", "variable assignments"),
    ("env GIT_PAGER=x git diff", "matches none"),
    ("/usr/bin/git diff", "matches none"),
    ("./git diff", "matches none"),
    ("~/git diff", "matches none"),
    ("gradlew build", "matches none"),
    ("command git diff", "matches none"),
    ("exec git diff", "matches none"),
    ("sudo git diff", "matches none"),
    ("eval git diff", "matches none"),
    ("xargs git diff", "matches none"),
    // Globs the shell would rewrite, where the pattern has literal words.
    ("gi? diff", "must not be a pattern"),
    ("git dif?", "matches none"),
    ("git di[f]f", "matches none"),
    ("git {diff,status}", "matches none"),
    ("echo a*b", "matches none"),
    ("git status*", "matches none"),
    ("npm run tes?", "matches none"),
    // Shell syntax the tokenizer does not read.
    ("git diff 'unterminated", "unterminated"),
    ("git diff ;;", "`case` syntax"),
    ("; git diff", "without a command"),
    ("git diff |", "without a command after"),
];

#[test]
fn patterns_allow_the_commands_they_name() {
    let l = list(PATTERNS);
    for cmd in ALLOWED {
        if let Err(e) = l.check(cmd) {
            panic!("{cmd:?} should be allowed, refused: {e}");
        }
    }
}

#[test]
fn everything_else_is_refused_in_one_line_naming_the_patterns() {
    let l = list(PATTERNS);
    for (cmd, why) in REFUSED {
        let e = match l.check(cmd) {
            Ok(()) => panic!("{cmd:?} should be refused"),
            Err(e) => e.to_string(),
        };
        assert!(e.contains(why), "{cmd:?}: {e:?} should mention {why:?}");
        assert!(
            e.starts_with("the role's command allowlist refuses "),
            "{e:?}"
        );
        assert!(!e.contains('\n'), "{cmd:?}: one line: {e:?}");
    }
    // The patterns are named where the command is at fault.
    let e = l.check("touch x").unwrap_err().to_string();
    assert!(
        e.contains("`git diff:*`") && e.contains("`npm run test`"),
        "{e}"
    );
}

#[test]
fn a_bare_trailing_star_is_optional_only_when_it_is_the_only_one() {
    let l = list(&["git * main *"]);
    assert!(l.check("git log main -n 1").is_ok());
    assert!(
        l.check("git log main").is_err(),
        "two stars: the tail is not optional"
    );
    let l = list(&["ls *"]);
    assert!(l.check("ls").is_ok());
    assert!(l.check("ls -la").is_ok());
    assert!(l.check("lsof").is_err(), "the space is a word boundary");
}

#[test]
fn an_unreadable_record_allows_nothing() {
    let l = CommandAllowlist::deny_all(&["git diff:*".into()]);
    assert!(!l.allows_all());
    let e = l.check("git diff").unwrap_err().to_string();
    assert!(e.contains("could not be read"), "{e}");
    assert!(l.summary().unwrap().contains("No shell command"));
}

#[test]
fn the_summary_names_every_pattern() {
    let l = list(&["git diff:*", "npm test"]);
    let s = l.summary().unwrap();
    assert!(s.contains("`git diff:*`, `npm test`"), "{s}");
    assert_eq!(l.patterns(), ["git diff:*", "npm test"]);
}

#[test]
fn matching_stays_fast_on_long_lines() {
    // Many stars against a long command: the matcher backtracks only to the last star.
    let l = list(&["git * a * a * a * a * b"]);
    let cmd = format!("git {}", "a ".repeat(20_000));
    assert!(l.check(&cmd).is_err());
}
