//! Refused options, found the way the command itself reads its options.
//!
//! A denylist is only as good as its matching: GNU `getopt_long`, git's parse-options,
//! Python's argparse, Ruby's OptionParser and npm's nopt all take any unambiguous prefix of a
//! long option for the option (`--outp` is `--output`); TypeScript and yargs ignore case and
//! dashes (`--outputFile` is `--output-file`); getopt-style short options cluster (`-ro FILE`
//! holds `-o`); Go's flag package takes `-name` and `--name` alike. [`Options`] describes one
//! command's conventions and [`Options::check`] finds a refused option in any of its spellings.

/// How a command matches its long options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    /// Exact names only (clap, ripgrep, lexopt, Go's flag package, find's predicates).
    Exact,
    /// Any prefix of a long option may stand for it, so every prefix of a refused option is
    /// refused too, unless it is exactly another option's name (listed in `exact_ok`).
    Prefix,
    /// Case and `-`/`_` do not matter (`--outDir` = `--outdir`, `--output-file` =
    /// `--outputFile`); a dotted sub-option (`--outputFile.json`) belongs to its option.
    Folded,
}

/// Why an option is refused; the variants that look at the option's value allow some values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// Writes a file the command line names.
    Writes,
    /// Runs a program or loads code the command line names.
    Runs,
    /// Reads a configuration or preset the command line names, which can name programs.
    Config,
    /// Starts a server, a debugger or a watcher, or sends data over the network.
    Serves,
    /// Chooses a directory or project: allowed only as a relative path inside the project.
    Inside,
    /// Names a module: allowed only as a bare name, not as a file or a package path.
    Builtin,
    /// Allowed only to disable something (pytest's `-p no:NAME`).
    DisableOnly,
    /// A cache directory: allowed only as `/dev/null` (mypy's `--cache-dir=/dev/null`).
    DevNull,
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
    /// Whether `--` can end the options at all: false for find (its expression follows
    /// `--`), Go and tsc (which read options after it) and pytest (whose plugin pre-scan
    /// reads every word). Where it can, it does so only when it cannot be the value of the
    /// option before it (see [`Options::ends_options`]).
    pub stop_at_dashdash: bool,
    /// Options known to take no separate value (`--release`, `-q`): a `--` right after one
    /// of them certainly ends the options. Only needed where option-like words commonly
    /// follow `--` (the test harness's own options after `cargo test --`).
    pub flags: &'static [&'static str],
    /// Short options known to take no value: a `--` after a cluster of only these (`-rn`)
    /// ends the options.
    pub short_flags: &'static str,
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
            flags: &[],
            short_flags: "",
        }
    }

    /// Whether `word` may take the next word as its value. GNU getopt, lexopt (ripgrep),
    /// git's parse-options, getopts (libtest, rustfmt), Ruby's OptionParser and Dart's args
    /// take the next word as a required value whatever it is, `--` included, so after any
    /// option without an attached value (`--opt=v`, the rest of a short cluster) that is not
    /// a known flag, a `--` may be a value rather than the end of the options.
    pub(super) fn may_take_value(&self, word: &str) -> bool {
        if !word.starts_with('-') || word == "-" || word == "--" || self.flags.contains(&word) {
            return false;
        }
        if word.starts_with("--") || self.single_dash_long {
            return !word.contains('=');
        }
        // A short cluster: a value option with the rest of the cluster has its value; one at
        // the end takes the next word; an unknown letter might be a value option too.
        for (at, c) in word[1..].char_indices() {
            if self.short_values.contains(c) {
                return at + c.len_utf8() == word.len() - 1;
            }
            if !self.short_flags.contains(c) {
                return true;
            }
        }
        false
    }

    /// Whether the `--` at `args[at]` certainly ends the options: the command reads `--` as
    /// the end and the word before it cannot have taken it as its value (`sort --random-source
    /// -- -o x` reads `--` as the random source and `-o x` as an option).
    pub(super) fn ends_options(&self, args: &[&str], at: usize) -> bool {
        self.stop_at_dashdash
            && args.get(at) == Some(&"--")
            && !at
                .checked_sub(1)
                .and_then(|before| args.get(before))
                .is_some_and(|before| self.may_take_value(before))
    }

    /// The positions of every `--` in `args` that may end the options: each one up to and
    /// including the first that certainly does. What follows any of them may be operands, or
    /// arguments for another program (`cargo test -- ARGS`), so each is checked.
    pub(super) fn possible_ends(&self, args: &[&str]) -> Vec<usize> {
        let mut ends = Vec::new();
        if !self.stop_at_dashdash {
            return ends;
        }
        for (at, word) in args.iter().enumerate() {
            if *word == "--" {
                ends.push(at);
                if self.ends_options(args, at) {
                    break;
                }
            }
        }
        ends
    }

    /// Refuse the first refused option in `args`, with a message saying what to do instead.
    /// Every word is read as a possible option, option values too: a value that looks like
    /// a refused option is refused (the command may not take it as a value), which fails
    /// closed. A `--` ends the check only where [`Options::ends_options`] says it must end
    /// the command's own options.
    pub(super) fn check(&self, args: &[&str]) -> Result<(), String> {
        for (i, &word) in args.iter().enumerate() {
            let next = args.get(i + 1).copied();
            if word == "--" {
                if self.ends_options(args, i) {
                    return Ok(());
                }
                continue;
            }
            if !word.starts_with('-') || word == "-" {
                continue;
            }
            let long = word.starts_with("--") || self.single_dash_long;
            if long {
                let (name, value) = match word.split_once('=') {
                    Some((n, v)) => (n, Some(v)),
                    None => (word, None),
                };
                if let Some((rule, why)) = self.long_rule(name) {
                    self.judge(name, Some(rule), why, value.or(next))?;
                }
            } else {
                let cluster: Vec<char> = word[1..].chars().collect();
                for (at, c) in cluster.iter().enumerate() {
                    if let Some((_, why)) = self.short.iter().find(|(s, _)| s == c) {
                        let rest: String = cluster[at + 1..].iter().collect();
                        let value = if rest.is_empty() {
                            next
                        } else {
                            Some(rest.as_str())
                        };
                        self.judge(&format!("-{c}"), None, *why, value)?;
                    }
                    if self.short_values.contains(*c) {
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
                Style::Folded => {
                    let (word, rule) = (fold(bare), fold(rule_bare));
                    word == rule || word.starts_with(&format!("{rule}."))
                }
            }
        })
    }

    fn judge(
        &self,
        written: &str,
        rule: Option<&str>,
        why: Why,
        value: Option<&str>,
    ) -> Result<(), String> {
        let tool = self.tool;
        let shown = match rule {
            Some(rule) if rule != written => format!("`{written}` (read as `{rule}`)"),
            _ => format!("`{written}`"),
        };
        let value = value.unwrap_or("");
        let reason = match why {
            Why::Writes => format!(
                "{tool}'s {shown} writes files; under this policy commands only print — drop \
                 it and read the output instead"
            ),
            Why::Runs => format!(
                "{tool}'s {shown} runs a program or loads code that the command line or a \
                 configuration names; run it without the option"
            ),
            Why::Config => format!(
                "{tool}'s {shown} loads a configuration the command names, which can run \
                 programs; the project's own configuration is read without it"
            ),
            Why::Serves => format!(
                "{tool}'s {shown} starts a server, debugger or watcher or uses the network; \
                 run the check once without it"
            ),
            Why::Inside if inside_project(value) => return Ok(()),
            Why::Inside => format!(
                "{tool}'s {shown} must name a relative path inside the project (no leading \
                 `/` or `~`, no `..`), not `{value}`"
            ),
            Why::Builtin if bare_name(value) => return Ok(()),
            Why::Builtin => format!(
                "{tool}'s {shown} may name only a built-in or installed module by its bare \
                 name, not a file (`{value}`)"
            ),
            Why::DisableOnly if value.trim_start_matches('=').starts_with("no:") => {
                return Ok(());
            }
            Why::DisableOnly => format!(
                "{tool}'s {shown} may only disable a plugin (`{written} no:NAME`): loading \
                 one runs code the command names"
            ),
            Why::DevNull if value == "/dev/null" => return Ok(()),
            Why::DevNull => format!(
                "{tool}'s {shown} writes a cache to the directory it names; only `/dev/null` \
                 is allowed"
            ),
        };
        Err(reason)
    }
}

/// Lower case without `-` and `_`: how TypeScript and yargs compare option names.
fn fold(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// A relative path that cannot leave the project by its spelling (a link inside the project
/// still can: that is the repository's own choice, contained by the sandbox like its code).
pub(super) fn inside_project(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.starts_with('~')
        && !path.split(['/', '\\']).any(|part| part == "..")
}

/// A module named the way a tool resolves built-in or installed modules, not a file path.
pub(super) fn bare_name(name: &str) -> bool {
    const FILE_ENDINGS: &[&str] = &[
        ".js", ".cjs", ".mjs", ".ts", ".cts", ".mts", ".jsx", ".tsx", ".json", ".py", ".rb",
    ];
    !name.is_empty()
        && !name.contains(['/', '\\'])
        && !name.starts_with(['.', '~'])
        && !FILE_ENDINGS
            .iter()
            .any(|end| name.to_ascii_lowercase().ends_with(end))
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
    fn folded_names_ignore_case_dashes_and_sub_options() {
        let opts = Options {
            long: &[("--outputFile", Why::Writes)],
            ..Options::new("jestlike", Style::Folded)
        };
        for word in [
            "--outputFile=x",
            "--output-file",
            "--OUTPUTFILE",
            "--outputFile.json=x",
        ] {
            assert!(opts.check(&[word]).is_err(), "{word}");
        }
        assert!(opts.check(&["--outputFileX"]).is_ok());
        assert!(opts.check(&["--output"]).is_ok());
    }

    #[test]
    fn value_rules_allow_some_values() {
        let opts = Options {
            long: &[
                ("--rootdir", Why::Inside),
                ("--reporter", Why::Builtin),
                ("--cache-dir", Why::DevNull),
            ],
            short: &[('p', Why::DisableOnly)],
            short_values: "p",
            ..Options::new("t", Style::Exact)
        };
        for ok in [
            &["--rootdir=tests"][..],
            &["--rootdir", "a/b"],
            &["--reporter", "junit"],
            &["--reporter=dot"],
            &["--cache-dir=/dev/null"],
            &["-p", "no:cacheprovider"],
            &["-pno:x"],
        ] {
            assert!(opts.check(ok).is_ok(), "{ok:?}");
        }
        for bad in [
            &["--rootdir=/"][..],
            &["--rootdir", "../x"],
            &["--rootdir", "~/x"],
            &["--reporter", "./r.js"],
            &["--reporter=r.mjs"],
            &["--reporter=@scope/r"],
            &["--cache-dir", "c"],
            &["-p", "evil"],
            &["-pevil"],
        ] {
            assert!(opts.check(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_dashdash_after_an_option_without_its_value_ends_nothing() {
        for args in [
            &["--unknown", "--", "-o", "x"][..],
            &["--random-source", "--", "--output=x"],
            &["-k", "--", "-o", "x"],
            &["-rk", "--", "-o", "x"],
            &["-n", "--", "-o", "x"],
            &["--unknown", "--", "--other", "--", "-o"],
        ] {
            let e = SORTLIKE.check(args).unwrap_err();
            assert!(
                e.contains("`-o`") || e.contains("`--output`"),
                "{args:?}: {e}"
            );
        }
        for args in [
            &["--", "-o"][..],
            &["-k", "1", "--", "-o"],
            &["-k1", "--", "-o"],
            &["-tx", "--", "-o"],
            &["--key=1", "--", "-o"],
            &["f", "--", "-o"],
            // A `--` after a `--` value ends the options in either reading.
            &["--unknown", "--", "--", "-o"],
        ] {
            assert!(SORTLIKE.check(args).is_ok(), "{args:?}");
        }
        let with_flags = Options {
            flags: &["-n"],
            short_flags: "rb",
            ..SORTLIKE
        };
        assert!(with_flags.check(&["-n", "--", "-o"]).is_ok());
        assert!(with_flags.check(&["-rb", "--", "-o"]).is_ok());
        assert!(with_flags.check(&["-rbk1", "--", "-o"]).is_ok());
        assert!(with_flags.check(&["-rbk", "--", "-o"]).is_err());
        assert!(with_flags.check(&["-rnb", "--", "-o"]).is_err());
        assert_eq!(with_flags.possible_ends(&["-n", "--", "a", "--"]), [1]);
        assert_eq!(SORTLIKE.possible_ends(&["-n", "--", "a", "--"]), [1, 3]);
        assert_eq!(SORTLIKE.possible_ends(&["-n", "--", "--", "--"]), [1, 2]);
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
