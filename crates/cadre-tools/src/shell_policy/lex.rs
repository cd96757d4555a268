//! The fail-closed tokenizer: shell words, operators and redirections, and what it refuses.

/// One shell word after quote removal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Word {
    pub(super) text: String,
    /// Holds an unquoted glob or brace pattern, so the shell may turn it into other words.
    pub(super) expands: bool,
    /// Holds a pattern whose expansion may begin with `-`: a file named like an option
    /// (`-delete`, `--output=x`) would become one. A pattern that starts with a literal other
    /// than `-` (`src/*.rs`, `./*`) expands only to words that start with it.
    pub(super) may_be_option: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Pipe,
    And,
    Or,
    Seq,
    Newline,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Word(Word),
    Op(Op),
    /// A redirection operator (`>`, `2>&`, `<<`, …) whose target is the next word.
    Redirect {
        fd: Option<String>,
        op: String,
    },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ParseRefusal {
    pub(super) part: String,
    pub(super) reason: String,
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
    /// The word starts with an unquoted pattern character (`*`, `?`, `[`, `{`).
    lead_special: bool,
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
            may_be_option: self.expands && (self.lead_special || self.text.starts_with('-')),
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
        // Whether bash reads a non-ASCII letter as a name depends on the locale: refuse it.
        Some(c) => !c.is_ascii() || c.is_ascii_alphanumeric() || "_{([@*#?-$!'".contains(c),
    }
}

/// Remove line continuations (`\` before a newline) the way bash does before it reads any
/// token: everywhere but inside single quotes and comments. Reading them only inside a
/// word would miss `$\⏎HOME` (bash's `$HOME`) or `2\⏎>x`. Nothing else is removed, so
/// whatever the tokenizer refuses stays in the text.
fn join_continuations(input: &str) -> Vec<char> {
    enum State {
        Plain,
        Single,
        Double,
        Comment,
    }
    let chars: Vec<char> = input.chars().collect();
    let mut out: Vec<char> = Vec::with_capacity(chars.len());
    let mut state = State::Plain;
    let mut i = 0;
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        match state {
            State::Plain | State::Double if c == '\\' => {
                if next != Some('\n') {
                    // An escaped character (`\'`, `\"`, `\#`) opens nothing.
                    out.push(c);
                    out.extend(next);
                }
                i += 2;
                continue;
            }
            State::Plain => match c {
                '\'' => state = State::Single,
                '"' => state = State::Double,
                // The same test as the tokenizer's: `#` where no word has started.
                '#' if out.last().is_none_or(|p| " \t\n;&|()<>".contains(*p)) => {
                    state = State::Comment
                }
                _ => {}
            },
            State::Single if c == '\'' => state = State::Plain,
            State::Double if c == '"' => state = State::Plain,
            State::Comment if c == '\n' => state = State::Plain,
            State::Single | State::Double | State::Comment => {}
        }
        out.push(c);
        i += 1;
    }
    out
}

/// `{name}` right before `<` or `>` is bash's named file descriptor (`{fd}>/dev/null` opens a
/// descriptor and assigns its number to `fd`), not a word.
fn is_fd_variable(text: &str) -> bool {
    text.strip_prefix('{')
        .and_then(|t| t.strip_suffix('}'))
        .is_some_and(|name| {
            let mut chars = name.chars();
            chars
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
        })
}

pub(super) fn tokenize(input: &str) -> Result<Vec<Token>, ParseRefusal> {
    let chars = join_continuations(input);
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
                if let Some(n @ (';' | '&')) = next {
                    return Err(parse_refusal(
                        &format!("`;{n}`"),
                        "`case` syntax is not allowed",
                    ));
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
                if word.started && !word.quoted && is_fd_variable(&word.text) {
                    return Err(parse_refusal(
                        &format!("`{}{c}`", word.text),
                        "a named file descriptor (`{fd}>`) assigns a variable; redirect only \
                         `2>&1` or to `/dev/null`",
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
                word.lead_special |= word.text.is_empty();
                word.push(c);
                word.expands = true;
                i += 1;
            }
            '{' => {
                // Whether it expands shows at a `,` or `..`: git's reflog forms (`HEAD@{1}`,
                // `@{-1}`, `@{upstream}`, `@{2.days.ago}`) have neither, while bash expands
                // `x@{a,b}` to `x@a x@b` like any other brace.
                word.open_brace = true;
                word.lead_special |= word.text.is_empty();
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
pub(super) struct Redirect {
    fd: Option<String>,
    op: String,
    target: Word,
}

impl Redirect {
    pub(super) fn display(&self) -> String {
        format!(
            "`{}{}{}`",
            self.fd.as_deref().unwrap_or(""),
            self.op,
            self.target.text
        )
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct SimpleCommand {
    pub(super) words: Vec<Word>,
    pub(super) redirects: Vec<Redirect>,
}

impl SimpleCommand {
    fn is_empty(&self) -> bool {
        self.words.is_empty() && self.redirects.is_empty()
    }

    pub(super) fn display(&self) -> String {
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
pub(super) fn split_commands(tokens: Vec<Token>) -> Result<Vec<SimpleCommand>, ParseRefusal> {
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
pub(super) fn check_redirect(r: &Redirect) -> Result<(), String> {
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
