//! A small parser for the shape of a bash command line: enough to tell which simple commands run,
//! how they are joined (`&&`, `||`, `;`, `|`, `&`), and so whose exit status the command ends
//! with. It is used to classify verification commands (V4), not to run anything.
//!
//! Quotes, escapes, `$(…)`, `${…}` and backticks are read as parts of a word (substitutions stay
//! opaque: they never change which executable a simple command runs). Redirections and their
//! targets are dropped. Anything whose exit status this parser cannot follow — subshells and
//! groups `( )`, heredocs and here-strings, process substitution, `;;` — makes the whole command
//! [`Unsupported`], and callers treat it as no evidence at all (fail-closed).

/// A command line this parser does not follow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unsupported;

/// How two pipelines of one statement are joined.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Connector {
    And,
    Or,
}

/// Commands joined by `|` / `|&`; each command is its words, redirections removed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Pipeline {
    pub commands: Vec<Vec<String>>,
}

/// Pipelines joined by `&&` / `||`, ended by `;`, a newline, `&` or the end of the line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Statement {
    /// The first pipeline has no connector; every later one has the connector before it.
    pub pipelines: Vec<(Option<Connector>, Pipeline)>,
    /// Ended by `&`: runs in the background and its status is lost.
    pub background: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    And,
    Or,
    Pipe,
    Semi,
    Amp,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Op(Op),
}

/// Parse `command` into statements.
pub fn parse(command: &str) -> Result<Vec<Statement>, Unsupported> {
    build(lex(command)?)
}

fn build(tokens: Vec<Tok>) -> Result<Vec<Statement>, Unsupported> {
    let mut statements = Vec::new();
    let mut stmt = Statement::default();
    let mut pipeline = Pipeline::default();
    let mut words: Vec<String> = Vec::new();
    let mut connector: Option<Connector> = None;

    for tok in tokens {
        match tok {
            Tok::Word(w) => words.push(w),
            Tok::Op(op) => {
                let ended_empty = words.is_empty();
                match op {
                    Op::Pipe => {
                        if ended_empty {
                            return Err(Unsupported);
                        }
                        pipeline.commands.push(std::mem::take(&mut words));
                    }
                    Op::And | Op::Or => {
                        if ended_empty {
                            return Err(Unsupported);
                        }
                        pipeline.commands.push(std::mem::take(&mut words));
                        stmt.pipelines
                            .push((connector, std::mem::take(&mut pipeline)));
                        connector = Some(if op == Op::And {
                            Connector::And
                        } else {
                            Connector::Or
                        });
                    }
                    Op::Semi | Op::Amp => {
                        if ended_empty {
                            // `a; ; b` is a syntax error, but an empty line or a trailing `;` is
                            // fine; a dangling `|`/`&&` before it is not.
                            if !pipeline.commands.is_empty() || connector.is_some() || op == Op::Amp
                            {
                                return Err(Unsupported);
                            }
                            continue;
                        }
                        pipeline.commands.push(std::mem::take(&mut words));
                        stmt.pipelines
                            .push((connector.take(), std::mem::take(&mut pipeline)));
                        stmt.background = op == Op::Amp;
                        statements.push(std::mem::take(&mut stmt));
                    }
                }
            }
        }
    }
    if words.is_empty() {
        if !pipeline.commands.is_empty() || connector.is_some() {
            return Err(Unsupported);
        }
    } else {
        pipeline.commands.push(words);
        stmt.pipelines.push((connector, pipeline));
        statements.push(stmt);
    }
    Ok(statements)
}

/// The lexer's word under construction. A word that is only a redirection target is dropped.
struct Lexer {
    chars: Vec<char>,
    i: usize,
    tokens: Vec<Tok>,
    word: Option<String>,
    /// The next completed word is the target of a redirection, not an argument.
    redirect_target: bool,
}

impl Lexer {
    fn peek(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.i + ahead).copied()
    }

    fn push_char(&mut self, c: char) {
        self.word.get_or_insert_with(String::new).push(c);
    }

    fn end_word(&mut self) {
        if let Some(w) = self.word.take() {
            if self.redirect_target {
                self.redirect_target = false;
            } else {
                self.tokens.push(Tok::Word(w));
            }
        }
    }

    fn op(&mut self, op: Op) -> Result<(), Unsupported> {
        self.end_word();
        if self.redirect_target {
            return Err(Unsupported); // `cmd >` with no target
        }
        self.tokens.push(Tok::Op(op));
        Ok(())
    }

    /// Copy a `$(…)` or `${…}` (starting at the `$`) into the word, balancing its brackets.
    fn substitution(&mut self, open: char, close: char) -> Result<(), Unsupported> {
        self.push_char('$');
        self.push_char(open);
        self.i += 2;
        let mut depth = 1usize;
        while let Some(c) = self.peek(0) {
            self.i += 1;
            self.push_char(c);
            if c == '\\' {
                if let Some(n) = self.peek(0) {
                    self.i += 1;
                    self.push_char(n);
                }
            } else if c == open {
                depth += 1;
            } else if c == close {
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
            }
        }
        Err(Unsupported)
    }

    fn backtick(&mut self) -> Result<(), Unsupported> {
        self.push_char('`');
        self.i += 1;
        while let Some(c) = self.peek(0) {
            self.i += 1;
            self.push_char(c);
            if c == '\\' {
                if let Some(n) = self.peek(0) {
                    self.i += 1;
                    self.push_char(n);
                }
            } else if c == '`' {
                return Ok(());
            }
        }
        Err(Unsupported)
    }

    fn double_quoted(&mut self) -> Result<(), Unsupported> {
        self.i += 1;
        self.word.get_or_insert_with(String::new);
        loop {
            let Some(c) = self.peek(0) else {
                return Err(Unsupported);
            };
            match c {
                '"' => {
                    self.i += 1;
                    return Ok(());
                }
                '\\' => {
                    let n = self.peek(1).ok_or(Unsupported)?;
                    self.i += 2;
                    match n {
                        '"' | '\\' | '$' | '`' => self.push_char(n),
                        '\n' => {}
                        _ => {
                            self.push_char('\\');
                            self.push_char(n);
                        }
                    }
                }
                '$' if matches!(self.peek(1), Some('(')) => self.substitution('(', ')')?,
                '$' if matches!(self.peek(1), Some('{')) => self.substitution('{', '}')?,
                '`' => self.backtick()?,
                _ => {
                    self.i += 1;
                    self.push_char(c);
                }
            }
        }
    }

    /// A redirection operator starting at `<` or `>`; its target is the next word.
    fn redirection(&mut self) -> Result<(), Unsupported> {
        // A word made only of digits right before the operator is its file descriptor.
        if let Some(w) = &self.word {
            if w.chars().all(|c| c.is_ascii_digit()) {
                self.word = None;
            } else {
                self.end_word();
            }
        }
        if self.redirect_target {
            return Err(Unsupported);
        }
        let first = self.peek(0).ok_or(Unsupported)?;
        self.i += 1;
        match (first, self.peek(0)) {
            // Heredocs, here-strings and process substitution hide commands or input we do not
            // follow.
            ('<', Some('<')) | ('<', Some('(')) | ('>', Some('(')) => return Err(Unsupported),
            ('>', Some('>'))
            | ('>', Some('|'))
            | ('>', Some('&'))
            | ('<', Some('&'))
            | ('<', Some('>')) => self.i += 1,
            _ => {}
        }
        self.redirect_target = true;
        self.skip_blanks();
        match self.peek(0) {
            None | Some('\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')') => Err(Unsupported),
            Some(_) => Ok(()),
        }
    }

    fn skip_blanks(&mut self) {
        while matches!(self.peek(0), Some(' ' | '\t')) {
            self.i += 1;
        }
    }
}

fn lex(command: &str) -> Result<Vec<Tok>, Unsupported> {
    let mut lx = Lexer {
        chars: command.chars().collect(),
        i: 0,
        tokens: Vec::new(),
        word: None,
        redirect_target: false,
    };
    while let Some(c) = lx.peek(0) {
        match c {
            ' ' | '\t' | '\r' => {
                lx.end_word();
                lx.i += 1;
            }
            '\n' => {
                lx.i += 1;
                lx.op(Op::Semi)?;
            }
            '#' if lx.word.is_none() => {
                while let Some(n) = lx.peek(0) {
                    if n == '\n' {
                        break;
                    }
                    lx.i += 1;
                }
            }
            '\\' => match lx.peek(1) {
                Some('\n') => lx.i += 2, // line continuation
                Some(n) => {
                    lx.i += 2;
                    lx.push_char(n);
                }
                None => return Err(Unsupported),
            },
            '\'' => {
                lx.i += 1;
                lx.word.get_or_insert_with(String::new);
                loop {
                    let n = lx.peek(0).ok_or(Unsupported)?;
                    lx.i += 1;
                    if n == '\'' {
                        break;
                    }
                    lx.push_char(n);
                }
            }
            '"' => lx.double_quoted()?,
            '$' if matches!(lx.peek(1), Some('(')) => lx.substitution('(', ')')?,
            '$' if matches!(lx.peek(1), Some('{')) => lx.substitution('{', '}')?,
            '`' => lx.backtick()?,
            ';' => {
                if lx.peek(1) == Some(';') {
                    return Err(Unsupported); // `;;` belongs to `case`
                }
                lx.i += 1;
                lx.op(Op::Semi)?;
            }
            '&' => match lx.peek(1) {
                Some('&') => {
                    lx.i += 2;
                    lx.op(Op::And)?;
                }
                Some('>') => {
                    // `&>` / `&>>`: both streams to a file.
                    lx.end_word();
                    lx.i += 1;
                    lx.redirection()?;
                }
                _ => {
                    lx.i += 1;
                    lx.op(Op::Amp)?;
                }
            },
            '|' => match lx.peek(1) {
                Some('|') => {
                    lx.i += 2;
                    lx.op(Op::Or)?;
                }
                Some('&') => {
                    lx.i += 2;
                    lx.op(Op::Pipe)?;
                }
                _ => {
                    lx.i += 1;
                    lx.op(Op::Pipe)?;
                }
            },
            '<' | '>' => lx.redirection()?,
            '(' | ')' => return Err(Unsupported),
            _ => {
                lx.i += 1;
                lx.push_char(c);
            }
        }
    }
    lx.end_word();
    if lx.redirect_target {
        return Err(Unsupported);
    }
    Ok(lx.tokens)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn words(s: &[&str]) -> Vec<String> {
        s.iter().map(|w| w.to_string()).collect()
    }

    /// The commands of a parse, flattened, for compact assertions.
    fn flat(cmd: &str) -> Vec<Vec<String>> {
        parse(cmd)
            .unwrap()
            .into_iter()
            .flat_map(|s| s.pipelines.into_iter().flat_map(|(_, p)| p.commands))
            .collect()
    }

    #[test]
    fn words_quotes_and_escapes() {
        let cases: &[(&str, &[&str])] = &[
            ("cargo test", &["cargo", "test"]),
            ("  cargo   test  ", &["cargo", "test"]),
            ("echo 'a b' \"c d\"", &["echo", "a b", "c d"]),
            ("echo a\\ b", &["echo", "a b"]),
            ("echo \"x\\\"y\"", &["echo", "x\"y"]),
            ("echo ''", &["echo", ""]),
            (
                "echo $(date +%s) ${HOME}",
                &["echo", "$(date +%s)", "${HOME}"],
            ),
            ("echo \"$(a | b)\"", &["echo", "$(a | b)"]),
            ("echo `a; b`", &["echo", "`a; b`"]),
            ("cargo test # a comment", &["cargo", "test"]),
            ("echo a#b", &["echo", "a#b"]),
            ("cargo \\\n test", &["cargo", "test"]),
        ];
        for (cmd, want) in cases {
            assert_eq!(flat(cmd), vec![words(want)], "{cmd:?}");
        }
    }

    #[test]
    fn redirections_are_dropped() {
        let cases: &[(&str, &[&str])] = &[
            ("cargo test 2>&1", &["cargo", "test"]),
            ("cargo test >out.txt", &["cargo", "test"]),
            ("cargo test > out.txt 2> err.txt", &["cargo", "test"]),
            ("cargo test &> log", &["cargo", "test"]),
            ("cargo test &>>log", &["cargo", "test"]),
            ("cargo test >> 'a b'", &["cargo", "test"]),
            ("cargo test </dev/null", &["cargo", "test"]),
            ("cargo test >| f", &["cargo", "test"]),
            ("a2>x", &["a2"]),
        ];
        for (cmd, want) in cases {
            assert_eq!(flat(cmd), vec![words(want)], "{cmd:?}");
        }
    }

    #[test]
    fn structure() {
        let s = parse("cd a && cargo test | tail; make lint &").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].pipelines.len(), 2);
        assert_eq!(s[0].pipelines[0].0, None);
        assert_eq!(s[0].pipelines[1].0, Some(Connector::And));
        assert_eq!(s[0].pipelines[1].1.commands.len(), 2);
        assert!(!s[0].background);
        assert!(s[1].background);

        let s = parse("a || b\nc").unwrap();
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].pipelines[1].0, Some(Connector::Or));

        let s = parse("a |& b").unwrap();
        assert_eq!(s[0].pipelines[0].1.commands.len(), 2);

        assert_eq!(parse("").unwrap(), vec![]);
        assert_eq!(parse("a;\n\n b;").unwrap().len(), 2);
    }

    #[test]
    fn unsupported_shapes() {
        for cmd in [
            "(cd a && cargo test)",
            "{ cargo test; }; ( x )",
            "cat <<EOF\ncargo test\nEOF",
            "cat <<< x",
            "diff <(a) <(b)",
            "tee >(x)",
            "case x in a) b;; esac",
            "echo 'unterminated",
            "echo \"unterminated",
            "echo $(unterminated",
            "echo `unterminated",
            "cargo test >",
            "cargo test > | x",
            "| a",
            "a |",
            "a &&",
            "&& a",
            "a && ; b",
            "a \\",
            "f() { :; }",
        ] {
            assert_eq!(parse(cmd), Err(Unsupported), "{cmd:?}");
        }
    }
}
