//! The interactive mode's slash commands: what a line starting with `/` means.

/// One command, parsed. Arguments are kept as typed (trimmed); each command checks its own.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    Help,
    Agents,
    Tasks,
    Task(String),
    Stop(String),
    /// `/model` lists; `/model NAME` switches.
    Model(Option<String>),
    /// `/thinking` shows; `/thinking LEVEL` sets.
    Thinking(Option<String>),
    /// `/plan` toggles; `/plan on|off` sets.
    Plan(Option<bool>),
    /// `/trust` shows; `/trust on|off` records the project's trust.
    Trust(Option<bool>),
    New,
    /// `/resume` lists; `/resume N|ID` continues.
    Resume(Option<String>),
    Compact(Option<String>),
    /// `/export [FILE]`.
    Export(Option<String>),
    Quit,
}

/// Every command with its one-line help, in the order `/help` lists them.
pub const COMMANDS: &[(&str, &str)] = &[
    ("/agents", "the roles a task can be given"),
    ("/tasks", "this session's tasks"),
    ("/task ID", "a task's record, output and receipt"),
    ("/stop ID", "stop a running task"),
    ("/model [NAME]", "list the models, or switch to one"),
    (
        "/thinking [LEVEL]",
        "show or set the thinking level (off … xhigh)",
    ),
    ("/plan [on|off]", "plan mode: no edits, planning roles only"),
    (
        "/trust [on|off]",
        "whether this project's agents and settings load",
    ),
    ("/new", "start a new session"),
    (
        "/resume [N|ID]",
        "list this project's sessions, or continue one",
    ),
    (
        "/compact [FOCUS]",
        "summarise the conversation to free context",
    ),
    ("/export [FILE]", "write this session as an HTML page"),
    ("/help", "this list and the keys"),
    ("/quit", "leave (Ctrl-C twice does too)"),
];

/// The keys, for `/help`.
pub const KEYS: &str = "Enter send (while the agent works: steer it) · Alt-Enter queue a follow-up · \
Esc stop the turn · Ctrl-C clear, twice to quit · Tab complete @file · Ctrl-J new line · \
Ctrl-T show thinking · Ctrl-O expand tool output · PgUp/PgDn scroll · Up/Down history · \
Ctrl-L redraw";

/// What a sent line is: a command when it starts with `/` (after leading spaces), else a
/// prompt — `//text` being the prompt `/text`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Command(Result<Slash, String>),
    Prompt(String),
}

pub fn read(line: &str) -> Sent {
    let trimmed = line.trim();
    if trimmed.starts_with('/') && !trimmed.starts_with("//") {
        return Sent::Command(parse(trimmed));
    }
    Sent::Prompt(
        line.strip_prefix("//")
            .map_or_else(|| line.to_string(), |rest| format!("/{rest}")),
    )
}

/// Parse a line that starts with `/`. `Err` is what to tell the person.
pub fn parse(line: &str) -> Result<Slash, String> {
    let line = line.trim();
    let (name, rest) = match line.split_once(char::is_whitespace) {
        Some((name, rest)) => (name, rest.trim()),
        None => (line, ""),
    };
    let arg = || (!rest.is_empty()).then(|| rest.to_string());
    let needs = |what: &str| -> Result<String, String> {
        arg().ok_or_else(|| format!("{name} needs {what} (see /help)"))
    };
    let switch = || -> Result<Option<bool>, String> {
        match rest {
            "" => Ok(None),
            "on" | "yes" | "true" => Ok(Some(true)),
            "off" | "no" | "false" => Ok(Some(false)),
            other => Err(format!("{name} takes on or off, not {other:?}")),
        }
    };
    Ok(match name {
        "/help" | "/?" => Slash::Help,
        "/agents" => Slash::Agents,
        "/tasks" => Slash::Tasks,
        "/task" => Slash::Task(needs("a task id or name")?),
        "/stop" => Slash::Stop(needs("a task id or name")?),
        "/model" => Slash::Model(arg()),
        "/thinking" => Slash::Thinking(arg()),
        "/plan" => Slash::Plan(switch()?),
        "/trust" => Slash::Trust(switch()?),
        "/new" => Slash::New,
        "/resume" => Slash::Resume(arg()),
        "/compact" => Slash::Compact(arg()),
        "/export" => Slash::Export(arg()),
        "/quit" | "/exit" => Slash::Quit,
        other => {
            let known: Vec<&str> = COMMANDS
                .iter()
                .filter_map(|(c, _)| c.split(' ').next())
                .collect();
            let near = known
                .iter()
                .find(|k| k.starts_with(other) || other.starts_with(*k))
                .map(|k| format!("; did you mean {k}?"))
                .unwrap_or_default();
            return Err(format!("unknown command {other}{near} (/help lists them)"));
        }
    })
}

/// The commands whose names start with what is typed (for Tab on a `/` word).
pub fn completions(typed: &str) -> Vec<&'static str> {
    COMMANDS
        .iter()
        .filter_map(|(c, _)| c.split(' ').next())
        .filter(|c| c.starts_with(typed))
        .collect()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_with_their_arguments() {
        assert_eq!(parse("/task  abc ").unwrap(), Slash::Task("abc".into()));
        assert_eq!(parse("/model").unwrap(), Slash::Model(None));
        assert_eq!(
            parse("/model anthropic/claude-opus-4-7").unwrap(),
            Slash::Model(Some("anthropic/claude-opus-4-7".into()))
        );
        assert_eq!(parse("/plan on").unwrap(), Slash::Plan(Some(true)));
        assert_eq!(parse("/plan").unwrap(), Slash::Plan(None));
        assert_eq!(parse("/exit").unwrap(), Slash::Quit);
    }

    #[test]
    fn mistakes_say_what_to_do() {
        assert!(parse("/task").unwrap_err().contains("needs a task id"));
        assert!(parse("/plan maybe").unwrap_err().contains("on or off"));
        assert!(
            parse("/taks")
                .unwrap_err()
                .contains("unknown command /taks")
        );
        assert!(parse("/mod").unwrap_err().contains("did you mean /model"));
    }

    #[test]
    fn every_listed_command_parses() {
        for (usage, _) in COMMANDS {
            let name = usage.split(' ').next().unwrap();
            let line = if usage.contains(" ID") {
                format!("{name} x")
            } else {
                name.to_string()
            };
            assert!(parse(&line).is_ok(), "{line}");
        }
        assert_eq!(
            completions("/t"),
            ["/tasks", "/task", "/thinking", "/trust"]
        );
    }
}
