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
