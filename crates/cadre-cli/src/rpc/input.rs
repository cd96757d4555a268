//! RPC input framing: records end at LF only (a `U+2028` inside a JSON string is not a line
//! break), a trailing CR is dropped, and a line has a size cap.
//!
//! stdin is read on a plain thread of its own, not on the async runtime: a read that blocks
//! until the client writes must not keep the process from exiting on a signal (the runtime
//! waits for its blocking reads when it shuts down).

use std::io::{BufRead, BufReader, Read};

use tokio::sync::mpsc;

/// The longest command line read (images arrive base64-encoded inside `prompt`).
pub const MAX_LINE_BYTES: usize = 64 * 1024 * 1024;

pub enum Line {
    Text(String),
    /// A line over the cap was skipped up to its end.
    TooLong(usize),
    End,
    Failed(std::io::Error),
}

pub struct LineReader<R> {
    reader: BufReader<R>,
    limit: usize,
}

/// Read `input`'s lines on a thread of its own; the receiver ends after `End` or `Failed`.
pub fn spawn_reader<R: Read + Send + 'static>(input: R) -> mpsc::UnboundedReceiver<Line> {
    let (tx, rx) = mpsc::unbounded_channel();
    std::thread::spawn(move || {
        let mut reader = LineReader::new(input);
        loop {
            let line = reader.next_line();
            let last = matches!(line, Line::End | Line::Failed(_));
            if tx.send(line).is_err() || last {
                return;
            }
        }
    });
    rx
}

impl<R: Read> LineReader<R> {
    pub fn new(reader: R) -> Self {
        Self::with_limit(reader, MAX_LINE_BYTES)
    }

    pub fn with_limit(reader: R, limit: usize) -> Self {
        LineReader {
            reader: BufReader::new(reader),
            limit,
        }
    }

    /// The next line, without its LF (and CR).
    pub fn next_line(&mut self) -> Line {
        let mut line: Vec<u8> = Vec::new();
        let mut too_long = false;
        loop {
            let available = match self.reader.fill_buf() {
                Ok(buf) => buf,
                Err(e) => return Line::Failed(e),
            };
            if available.is_empty() {
                // End of input: a last line without LF still counts.
                if too_long {
                    return Line::TooLong(self.limit);
                }
                if line.is_empty() {
                    return Line::End;
                }
                return finish(line);
            }
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..at], Some(at + 1)),
                None => (available, None),
            };
            if !too_long {
                if line.len() + chunk.len() > self.limit {
                    too_long = true;
                    line = Vec::new();
                } else {
                    line.extend_from_slice(chunk);
                }
            }
            let used = done.unwrap_or(available.len());
            self.reader.consume(used);
            if done.is_some() {
                if too_long {
                    return Line::TooLong(self.limit);
                }
                return finish(line);
            }
        }
    }
}

fn finish(mut line: Vec<u8>) -> Line {
    if line.last() == Some(&b'\r') {
        line.pop();
    }
    Line::Text(String::from_utf8_lossy(&line).into_owned())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn lines(input: &[u8], limit: usize) -> Vec<String> {
        let mut reader = LineReader::with_limit(input, limit);
        let mut out = Vec::new();
        loop {
            match reader.next_line() {
                Line::Text(t) => out.push(format!("T:{t}")),
                Line::TooLong(_) => out.push("LONG".into()),
                Line::End => return out,
                Line::Failed(e) => panic!("{e}"),
            }
        }
    }

    #[test]
    fn splits_on_lf_only_and_drops_a_trailing_cr() {
        let input = "{\"a\":\"x\u{2028}y\"}\r\n{}\nlast".as_bytes();
        assert_eq!(
            lines(input, 1024),
            vec!["T:{\"a\":\"x\u{2028}y\"}", "T:{}", "T:last"]
        );
    }

    #[test]
    fn a_line_over_the_cap_is_skipped_and_reading_goes_on() {
        let mut input = vec![b'x'; 100];
        input.extend_from_slice(b"\nok\n");
        assert_eq!(lines(&input, 10), vec!["LONG", "T:ok"]);
    }

    #[test]
    fn blank_lines_are_lines() {
        assert_eq!(lines(b"\n\n", 10), vec!["T:", "T:"]);
    }
}
