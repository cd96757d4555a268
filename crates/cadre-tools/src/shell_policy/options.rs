//! Refused options, found the way the command itself reads its options.
//!
//! A denylist is only as good as its matching: GNU `getopt_long`, git's parse-options,
//! Python's argparse, Ruby's OptionParser and npm's nopt all take any unambiguous prefix of a
//! long option for the option (`--outp` is `--output`); getopt-style short options cluster
//! (`-ro FILE` holds `-o`); Go's flag package takes `-name` and `--name` alike. [`Options`] describes one
//! command's conventions and [`Options::check`] finds a refused option in any of its spellings.

/// How a command matches its long options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// Exact names only (clap, ripgrep, lexopt, Go's flag package, find's predicates).
    Exact,
    /// Any prefix of a long option may stand for it, so every prefix of a refused option is
    /// refused too, unless it is exactly another option's name (listed in `exact_ok`).
    Prefix,
}

/// Why an option is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// Writes a file the command line names.
    Writes,
    /// Runs a program or loads code the command line names.
    Runs,
}

/// One command's option conventions and refused options.
#[derive(Debug, Clone, Copy)]
pub(super) struct Options {
    /// The command as messages name it (`sort`, `cargo test`).
    pub tool: &'static str,
    pub style: Style,
    /// Refused long options, written with their dashes (`--output`).
    pub long: &'static [(&'static str, Why)],
    /// Refused short options.
    pub short: &'static [(char, Why)],
    /// Short options that take a value: the rest of their cluster (or the next word) is it.
    pub short_values: &'static str,
    /// Exact names that are prefixes of a refused option but name another option (`--text`
    /// for git's `--textconv`).
    pub exact_ok: &'static [&'static str],
    /// `-name` is a long option (Go, find), so there are no short clusters.
    pub single_dash_long: bool,
    /// `--` ends the options (false for find, whose expression follows `--`).
    pub stop_at_dashdash: bool,
}

impl Options {
    pub(super) const fn new(tool: &'static str, style: Style) -> Options {
        Options {
            tool,
            style,
            long: &[],
            short: &[],
            short_values: "",
            exact_ok: &[],
            single_dash_long: false,
            stop_at_dashdash: true,
        }
    }

    /// Refuse the first refused option in `args`, with a message saying what to do instead.
    pub(super) fn check(&self, args: &[&str]) -> Result<(), String> {
        let mut i = 0;
        while let Some(&word) = args.get(i) {
            i += 1;
            if word == "--" {
                if self.stop_at_dashdash {
                    return Ok(());
                }
                continue;
            }
            if !word.starts_with('-') || word == "-" {
                continue;
            }
            let long = word.starts_with("--") || self.single_dash_long;
            if long {
                let name = word.split_once('=').map_or(word, |(n, _)| n);
                if let Some((rule, why)) = self.long_rule(name) {
                    self.judge(name, Some(rule), why)?;
                }
            } else {
                for c in word[1..].chars() {
                    if let Some((_, why)) = self.short.iter().find(|(s, _)| *s == c) {
                        self.judge(&format!("-{c}"), None, *why)?;
                    }
                    if self.short_values.contains(c) {
                        break;
                    }
                }
            }
        }
        Ok(())
    }

    /// The refused long option `name` (with its dashes) stands for, if any.
    fn long_rule(&self, name: &str) -> Option<(&'static str, Why)> {
        let bare = name.trim_start_matches('-');
        if bare.is_empty() {
            return None;
        }
        self.long.iter().copied().find(|(rule, _)| {
            let rule_bare = rule.trim_start_matches('-');
            match self.style {
                Style::Exact => bare == rule_bare,
                Style::Prefix => {
                    bare == rule_bare
                        || (rule_bare.starts_with(bare) && !self.exact_ok.contains(&name))
                }
            }
        })
    }

    fn judge(&self, written: &str, rule: Option<&str>, why: Why) -> Result<(), String> {
        let tool = self.tool;
        let shown = match rule {
            Some(rule) if rule != written => format!("`{written}` (read as `{rule}`)"),
            _ => format!("`{written}`"),
        };
        let reason = match why {
            Why::Writes => format!(
                "{tool}'s {shown} writes files; under this policy commands only print — drop \
                 it and read the output instead"
            ),
            Why::Runs => format!(
                "{tool}'s {shown} runs a program or loads code that the command line or a \
                 configuration names; run it without the option"
            ),
        };
        Err(reason)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const SORTLIKE: Options = Options {
        long: &[("--output", Why::Writes), ("--compress-program", Why::Runs)],
        short: &[('o', Why::Writes)],
        short_values: "kt",
        exact_ok: &["--out-ok"],
        ..Options::new("sortlike", Style::Prefix)
    };

    #[test]
    fn prefixes_of_refused_long_options_are_refused() {
        for args in [
            &["--output=x"][..],
            &["--outp", "x"],
            &["--o"],
            &["--compress=gzip"],
            &["a", "--output", "f"],
        ] {
            assert!(SORTLIKE.check(args).is_err(), "{args:?}");
        }
        let e = SORTLIKE.check(&["--outp=x"]).unwrap_err();
        assert!(e.contains("`--outp` (read as `--output`)"), "{e}");
        for args in [
            &["--output-indicator"][..],
            &["--out-ok"],
            &["--", "--output=x"],
            &["-"],
            &["out"],
        ] {
            assert!(SORTLIKE.check(args).is_ok(), "{args:?}");
        }
    }

    #[test]
    fn short_clusters_stop_at_an_option_with_a_value() {
        assert!(SORTLIKE.check(&["-ro", "f"]).is_err());
        assert!(SORTLIKE.check(&["-o"]).is_err());
        assert!(SORTLIKE.check(&["-to"]).is_ok(), "`o` is -t's value");
        assert!(SORTLIKE.check(&["-k1o"]).is_ok(), "`1o` is -k's value");
        assert!(SORTLIKE.check(&["-nk1", "-o", "x"]).is_err());
    }

    #[test]
    fn single_dash_long_options_have_no_clusters() {
        let opts = Options {
            long: &[("-o", Why::Writes), ("-exec", Why::Runs)],
            single_dash_long: true,
            stop_at_dashdash: false,
            ..Options::new("golike", Style::Exact)
        };
        for bad in ["-o", "--o", "-o=x", "-exec", "--exec=x"] {
            assert!(opts.check(&[bad]).is_err(), "{bad}");
        }
        assert!(
            opts.check(&["--", "-exec"]).is_err(),
            "-- does not end find's expression"
        );
        assert!(opts.check(&["-race", "-ox"]).is_ok());
    }
}
