//! Pi's command line where cadre's differs: Pi's multi-letter short flags, the Pi flags cadre
//! does not have, Pi's subcommand words, and the checks of the run flags cadre shares with Pi.
//! (`--session` ids and `--session-dir` are the host's: `HostContext::resolve_session`.)
//!
//! Someone used to `pi` types `pi`'s arguments. Whatever cadre cannot do gets one line saying
//! so and what to use instead, never clap's "to pass '--resume' as a value, use '-- --resume'",
//! and never a run that sends `install foo` to a model with every tool enabled.

use std::ffi::{OsStr, OsString};

use anyhow::{Result, bail};

use crate::args::RunArgs;

/// Pi's multi-letter short flags that cadre supports, and their long names.
const SHORT_ALIASES: &[(&str, &str)] = &[("-nt", "--no-tools"), ("-nc", "--no-context-files")];

/// A Pi flag cadre does not have: its names, what it does in Pi, and what to do instead.
struct PiOnlyFlag {
    names: &'static [&'static str],
    what: &'static str,
    instead: Option<&'static str>,
}

const PI_ONLY_FLAGS: &[PiOnlyFlag] = &[
    PiOnlyFlag {
        names: &["--fork"],
        what: "copying a session into a new one",
        instead: Some("--session <path|id> to continue it"),
    },
    PiOnlyFlag {
        names: &["--models"],
        what: "the models Ctrl+P cycles through",
        instead: Some("--model to choose one"),
    },
    PiOnlyFlag {
        names: &["--no-builtin-tools", "-nbt"],
        what: "keeping only extension tools",
        instead: Some("--no-tools or --tools <names>"),
    },
    PiOnlyFlag {
        names: &["--extension", "-e", "--no-extensions", "-ne"],
        what: "extensions",
        instead: None,
    },
    PiOnlyFlag {
        names: &["--skill", "--no-skills", "-ns"],
        what: "skill paths",
        instead: Some(
            "skills in CADRE_HOME/skills and, for a trusted project, .cadre/skills; `cadre agents` lists them",
        ),
    },
    PiOnlyFlag {
        names: &["--prompt-template", "--no-prompt-templates", "-np"],
        what: "prompt templates",
        instead: None,
    },
    PiOnlyFlag {
        names: &["--theme", "--no-themes"],
        what: "themes of the interactive UI",
        instead: None,
    },
    PiOnlyFlag {
        names: &["--verbose"],
        what: "verbose interactive start-up",
        instead: None,
    },
];

/// Pi's own subcommands: `pi install …` is never a prompt in Pi, so it is not one here either.
const PI_COMMANDS: &[(&str, &str)] = &[
    ("install", "Pi's extension packages"),
    ("remove", "Pi's extension packages"),
    ("uninstall", "Pi's extension packages"),
    ("update", "Pi's extension packages and self-update"),
    ("list", "Pi's extension packages"),
    ("config", "Pi's package resource picker"),
];

/// Words other tools use as subcommands; taken for one only when nothing or little follows.
const OTHER_COMMANDS: &[(&str, &str)] = &[
    ("upgrade", "self-update"),
    (
        "login",
        "logins: keys come from the environment, models.json or auth.json",
    ),
    (
        "logout",
        "logins: keys come from the environment, models.json or auth.json",
    ),
    (
        "auth",
        "logins: keys come from the environment, models.json or auth.json",
    ),
    ("init", "set-up: `cadre doctor` checks the configuration"),
    ("setup", "set-up: `cadre doctor` checks the configuration"),
    ("version", "a version command: `cadre --version`"),
    ("models", "a models command: `cadre --list-models`"),
    (
        "sessions",
        "a sessions command: use --continue or --session <path|id>",
    ),
    ("completion", "shell completions"),
    ("completions", "shell completions"),
    ("plugin", "plugins"),
    ("plugins", "plugins"),
    ("extension", "extensions"),
    ("extensions", "extensions"),
];

/// Most words after an [`OTHER_COMMANDS`] word for the whole to still read as a command.
const COMMAND_ARGS_MAX: usize = 2;

/// Pi flags that ask for nothing cadre does: `--offline` turns off start-up network requests,
/// and cadre makes none.
const NO_OP_FLAGS: &[&str] = &["--offline"];

/// Replace Pi's multi-letter short flags with their long names (clap would read `-nt` as `-n
/// -t`) and drop [`NO_OP_FLAGS`]; a multi-letter short flag cadre does not have is an error with
/// its hint. Arguments after `--` are left alone.
pub fn normalize_args(args: Vec<OsString>) -> Result<Vec<OsString>, String> {
    let mut out = Vec::with_capacity(args.len());
    let mut literal = false;
    for arg in args {
        if literal {
            out.push(arg);
            continue;
        }
        if arg == "--" {
            literal = true;
        }
        let text = arg.to_str().unwrap_or_default();
        if NO_OP_FLAGS.contains(&text) {
            continue;
        }
        if let Some((_, long)) = SHORT_ALIASES.iter().find(|(short, _)| *short == text) {
            out.push(OsString::from(*long));
            continue;
        }
        if text.len() > 2
            && text.starts_with('-')
            && !text.starts_with("--")
            && let Some(hint) = unsupported_flag_hint(text)
        {
            return Err(hint);
        }
        out.push(arg);
    }
    Ok(out)
}

/// The hint for `arg` when it is a Pi flag cadre does not have (`--name` or `--name=value`).
pub fn unsupported_flag_hint(arg: &str) -> Option<String> {
    let name = arg.split_once('=').map_or(arg, |(name, _)| name);
    let flag = PI_ONLY_FLAGS.iter().find(|f| f.names.contains(&name))?;
    let mut hint = format!("cadre does not support Pi's {name} ({})", flag.what);
    if let Some(instead) = flag.instead {
        hint.push_str("; use ");
        hint.push_str(instead);
    }
    Some(hint)
}

/// The hint when the first prompt word reads as a subcommand: always for Pi's own (Pi never
/// sends those as prompts), for the other words only when at most [`COMMAND_ARGS_MAX`] short
/// words follow. Prompts after `--` are prompts whatever they say.
pub fn command_word_hint(messages: &[String], raw: &[OsString]) -> Option<String> {
    let (first, rest) = messages.split_first()?;
    if first_message_is_literal(first, raw) {
        return None;
    }
    let why = match PI_COMMANDS.iter().find(|(w, _)| w == first) {
        Some((_, why)) => *why,
        None => {
            let (_, why) = OTHER_COMMANDS.iter().find(|(w, _)| w == first)?;
            let command_like = rest.len() <= COMMAND_ARGS_MAX
                && rest
                    .iter()
                    .all(|a| !a.is_empty() && !a.contains(char::is_whitespace));
            if !command_like {
                return None;
            }
            *why
        }
    };
    let prompt = messages.join(" ").replace('"', "\\\"");
    Some(format!(
        "`cadre {first}` is not a command (cadre has no {why}); cadre's commands are listed by \
         `cadre --help`. To send it to the model as a prompt, put it after `--`: \
         cadre -p -- \"{prompt}\""
    ))
}

/// Whether the first message came after a `--` on the command line.
fn first_message_is_literal(first: &str, raw: &[OsString]) -> bool {
    let Some(dash) = raw.iter().position(|a| a == "--") else {
        return false;
    };
    !raw[1..dash]
        .iter()
        .any(|a| a.as_os_str() == OsStr::new(first))
}

/// `--provider` and `--model` as one registry name: `provider/model`, unless the model already
/// names the provider. `None` without `--model`.
pub fn model_name(args: &RunArgs) -> Option<String> {
    let model = args.model.as_deref()?;
    match args.provider.as_deref() {
        Some(p) if !model.starts_with(&format!("{p}/")) => Some(format!("{p}/{model}")),
        _ => Some(model.to_string()),
    }
}

/// The run flags cadre shares with Pi that need each other, checked before anything starts.
pub fn check_run_args(args: &RunArgs) -> Result<()> {
    if args.provider.is_some() && args.model.is_none() {
        bail!("--provider needs --model (e.g. --provider openai --model gpt-5)");
    }
    if args
        .provider
        .as_deref()
        .is_some_and(|p| p.trim().is_empty())
    {
        bail!("--provider needs a provider name");
    }
    // `--api-key-file` was read into `api_key` (`key_file`) and is held to the same rules.
    let flag = if args.api_key_file.is_some() {
        "--api-key-file"
    } else {
        "--api-key"
    };
    if (args.api_key.is_some() || args.api_key_file.is_some()) && model_name(args).is_none() {
        // Pi's rule: the key is for the provider of the model given, and no other.
        bail!(
            "{flag} needs --model (or --provider with --model): the key is for that model's provider only"
        );
    }
    if args
        .api_key
        .as_ref()
        .is_some_and(|k| k.expose().trim().is_empty())
    {
        bail!("{flag} needs a key");
    }
    Ok(())
}

/// Check the run flags and turn the Pi ones into what the run reads: `--provider` is folded
/// into `--model`; `--no-tools` becomes an empty `--tools` (Pi's `--no-tools` turns the default
/// tools off and `--tools` lists the ones kept, which is what `--tools` alone means here);
/// `--no-context-files` turns context files off for the process. (`--session` ids and
/// `--session-dir` are resolved by the host.) `raw` is the command line as given, for `--`.
pub fn prepare_run(args: &mut RunArgs, raw: &[OsString]) -> Result<()> {
    if let Some(hint) = command_word_hint(&args.messages, raw) {
        bail!("{hint}");
    }
    check_run_args(args)?;
    if args.mode == crate::args::Mode::Rpc && args.messages.iter().any(|m| m.starts_with('@')) {
        bail!(
            "@file arguments are not supported in RPC mode (as in Pi): send the prompt as an RPC command"
        );
    }
    args.model = model_name(args);
    args.provider = None;
    if args.no_tools && args.tools.is_none() {
        args.tools = Some(Vec::new());
    }
    if args.no_context_files {
        cadre_core::context::disable_context_files();
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::args::Cli;

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|s| s.to_string()).collect()
    }

    fn run_args(args: &[&str]) -> RunArgs {
        let argv = normalize_args(os(args)).unwrap();
        Cli::try_parse_from(argv).unwrap().run
    }

    #[test]
    fn pis_multi_letter_shorts_become_long_flags() {
        let args = run_args(&["cadre", "-nt", "-nc", "-p", "hi"]);
        assert!(args.no_tools && args.no_context_files);
        // After `--` they are prompt text.
        let argv = normalize_args(os(&["cadre", "-p", "--", "-nt"])).unwrap();
        assert_eq!(argv, os(&["cadre", "-p", "--", "-nt"]));
        let err = normalize_args(os(&["cadre", "-nbt", "-p", "x"])).unwrap_err();
        assert_eq!(
            err,
            "cadre does not support Pi's -nbt (keeping only extension tools); use --no-tools or --tools <names>"
        );
    }

    #[test]
    fn pi_only_flags_get_a_hint() {
        let hint = unsupported_flag_hint("--fork").unwrap();
        assert!(
            hint.starts_with("cadre does not support Pi's --fork ("),
            "{hint}"
        );
        assert!(hint.contains("--session"), "{hint}");
        assert_eq!(unsupported_flag_hint("--resume"), None);
        assert_eq!(unsupported_flag_hint("--export=out.html"), None);
        assert_eq!(
            unsupported_flag_hint("-e").unwrap(),
            "cadre does not support Pi's -e (extensions)"
        );
        assert_eq!(unsupported_flag_hint("--frobnicate"), None);
        assert_eq!(unsupported_flag_hint("--model"), None);
    }

    #[test]
    fn pi_commands_are_never_prompts() {
        let raw = os(&["cadre", "install", "npm:foo"]);
        let hint = command_word_hint(&strings(&["install", "npm:foo"]), &raw).unwrap();
        assert!(
            hint.starts_with("`cadre install` is not a command"),
            "{hint}"
        );
        assert!(hint.ends_with("cadre -p -- \"install npm:foo\""), "{hint}");
        // However much follows: Pi runs its command then too.
        let words = strings(&["list", "all", "the", "files", "here"]);
        assert!(command_word_hint(&words, &os(&["cadre", "list"])).is_some());
        // After `--` the words are a prompt.
        let raw = os(&["cadre", "-p", "--", "install"]);
        assert_eq!(command_word_hint(&strings(&["install"]), &raw), None);
        // A quoted sentence is one argument, not the word.
        let raw = os(&["cadre", "-p", "install the deps"]);
        assert_eq!(
            command_word_hint(&strings(&["install the deps"]), &raw),
            None
        );
    }

    #[test]
    fn other_command_words_only_when_they_read_as_commands() {
        let raw = os(&["cadre"]);
        let hint = command_word_hint(&strings(&["login"]), &raw).unwrap();
        assert!(hint.contains("keys come from the environment"), "{hint}");
        assert!(command_word_hint(&strings(&["plugin", "add", "srv"]), &raw).is_some());
        // A sentence typed without quotes is a prompt.
        let prose = strings(&["init", "a", "new", "cargo", "project"]);
        assert_eq!(command_word_hint(&prose, &raw), None);
        assert_eq!(
            command_word_hint(&strings(&["version", "bump it"]), &raw),
            None
        );
        // Real subcommands never reach here; ordinary prompts are left alone.
        assert_eq!(command_word_hint(&strings(&["explain", "x"]), &raw), None);
        assert_eq!(command_word_hint(&[], &raw), None);
        let hint = command_word_hint(&strings(&["list", "say \"hi\""]), &raw).unwrap();
        assert!(
            hint.ends_with("cadre -p -- \"list say \\\"hi\\\"\""),
            "{hint}"
        );
    }

    #[test]
    fn provider_and_model_combine_as_pi_combines_them() {
        let args = run_args(&["cadre", "--provider", "openai", "--model", "gpt-5", "x"]);
        assert_eq!(model_name(&args).as_deref(), Some("openai/gpt-5"));
        let args = run_args(&["cadre", "--provider", "openai", "--model", "openai/gpt-5"]);
        assert_eq!(model_name(&args).as_deref(), Some("openai/gpt-5"));
        let args = run_args(&["cadre", "--model", "anthropic/claude-sonnet-4-5"]);
        assert_eq!(
            model_name(&args).as_deref(),
            Some("anthropic/claude-sonnet-4-5")
        );
        assert_eq!(model_name(&run_args(&["cadre", "x"])), None);
    }

    #[test]
    fn flags_that_need_each_other_are_checked() {
        let check = |args: &[&str]| check_run_args(&run_args(args)).map_err(|e| e.to_string());
        assert!(check(&["cadre", "-p", "x"]).is_ok());
        assert!(
            check(&["cadre", "--provider", "openai", "x"])
                .unwrap_err()
                .contains("--provider needs --model")
        );
        assert!(
            check(&["cadre", "--api-key", "sk-test-123", "x"])
                .unwrap_err()
                .contains("--api-key needs --model")
        );
        assert!(check(&["cadre", "--api-key", "sk-1", "--model", "openai/gpt-5", "x"]).is_ok());
        // clap itself refuses an empty directory.
        assert!(Cli::try_parse_from(["cadre", "--session-dir", "", "x"]).is_err());
        assert!(check(&["cadre", "--no-tools", "--tools", "read", "x"]).is_ok());
    }

    #[test]
    fn prepare_folds_pi_flags_into_the_run_flags() {
        let mut args = run_args(&[
            "cadre",
            "--provider",
            "openai",
            "--model",
            "gpt-5",
            "-nt",
            "x",
        ]);
        prepare_run(&mut args, &os(&["cadre"])).unwrap();
        assert_eq!(args.model.as_deref(), Some("openai/gpt-5"));
        assert_eq!(args.provider, None);
        assert_eq!(args.tools, Some(Vec::new()));
        // --tools keeps its list under --no-tools.
        let mut args = run_args(&["cadre", "--no-tools", "-t", "read,ls", "x"]);
        prepare_run(&mut args, &os(&["cadre"])).unwrap();
        assert_eq!(args.tools, Some(strings(&["read", "ls"])));
        // --offline is accepted and means nothing.
        let args = run_args(&["cadre", "--offline", "-p", "x"]);
        assert_eq!(args.messages, strings(&["x"]));
        let mut args = run_args(&["cadre", "--mode", "rpc", "@notes.md"]);
        let err = prepare_run(&mut args, &os(&["cadre"])).unwrap_err();
        assert!(
            err.to_string().contains("not supported in RPC mode"),
            "{err}"
        );
        let mut args = run_args(&["cadre", "install"]);
        let err = prepare_run(&mut args, &os(&["cadre", "install"])).unwrap_err();
        assert!(err.to_string().contains("is not a command"), "{err}");
    }

    #[test]
    fn the_api_key_never_shows_in_debug_output() {
        let args = run_args(&[
            "cadre",
            "--api-key",
            "sk-very-secret-1",
            "--model",
            "m",
            "x",
        ]);
        assert_eq!(
            args.api_key.as_ref().map(|k| k.expose()),
            Some("sk-very-secret-1")
        );
        let shown = format!("{args:?}");
        assert!(!shown.contains("sk-very-secret-1"), "{shown}");
    }

    #[test]
    fn version_has_pis_short_flag_too() {
        for flag in ["-v", "-V", "--version"] {
            let err = Cli::try_parse_from(["cadre", flag]).unwrap_err();
            assert_eq!(err.kind(), clap::error::ErrorKind::DisplayVersion, "{flag}");
        }
    }
}
