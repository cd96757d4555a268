//! Incremental Server-Sent Events parser.
//!
//! Bytes go in as they arrive from the network, complete events come out. The parser follows the
//! WHATWG `text/event-stream` rules that matter for model APIs: `event:` names the event, several
//! `data:` lines are joined with `\n`, lines starting with `:` are comments (keep-alives), lines
//! end with `\n`, `\r\n` or `\r`, and a blank line dispatches the event. A line is decoded only
//! once it is complete, so a multi-byte UTF-8 character split across two network chunks is
//! reassembled before decoding; invalid UTF-8 is replaced with U+FFFD rather than rejected, as the
//! standard asks. The parser is pure: no I/O, no clocks.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    /// The `event:` field; empty when the server sent none (the standard's `message`).
    pub event: String,
    /// All `data:` lines joined with `\n`.
    pub data: String,
    /// The last `id:` field seen, if any.
    pub id: Option<String>,
}

/// The stream broke the framing rules badly enough that parsing cannot go on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// A single line grew beyond the configured limit without a line break: a broken or hostile
    /// server, not a model reply.
    #[error("SSE line longer than {limit} bytes")]
    LineTooLong { limit: usize },
}

/// Default cap on one line (a whole `data:` payload of one chunk). Model chunks are small; this
/// only guards memory against a stream that never sends a newline.
pub const DEFAULT_MAX_LINE: usize = 8 * 1024 * 1024;

/// Streaming SSE parser. Feed chunks with [`SseParser::push`].
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line.
    line: Vec<u8>,
    /// The previous chunk ended with `\r`: a `\n` at the start of the next one belongs to it.
    pending_cr: bool,
    /// Still at the very start of the stream (a UTF-8 BOM is skipped there).
    at_start: bool,
    event: String,
    data: String,
    has_data: bool,
    last_id: Option<String>,
    max_line: usize,
}

impl Default for SseParser {
    fn default() -> Self {
        Self::new()
    }
}

impl SseParser {
    pub fn new() -> Self {
        Self::with_max_line(DEFAULT_MAX_LINE)
    }

    /// A parser that rejects lines longer than `max_line` bytes.
    pub fn with_max_line(max_line: usize) -> Self {
        SseParser {
            line: Vec::new(),
            pending_cr: false,
            at_start: true,
            event: String::new(),
            data: String::new(),
            has_data: false,
            last_id: None,
            max_line,
        }
    }

    /// Feed one chunk of bytes; complete events are appended to `out` in order.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        let mut rest = chunk;
        if self.at_start && !rest.is_empty() {
            // The BOM may itself be split across chunks; wait until three bytes are known.
            self.line.extend_from_slice(rest);
            const BOM: &[u8] = b"\xEF\xBB\xBF";
            if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
                return Ok(());
            }
            self.at_start = false;
            let buffered = std::mem::take(&mut self.line);
            let body = buffered.strip_prefix(BOM).unwrap_or(&buffered);
            return self.push_bytes(body, out);
        }
        if rest.is_empty() {
            return Ok(());
        }
        if self.pending_cr {
            self.pending_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        self.push_bytes(rest, out)
    }

    fn push_bytes(&mut self, mut rest: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        while let Some(pos) = rest.iter().position(|&b| b == b'\n' || b == b'\r') {
            let is_cr = rest[pos] == b'\r';
            self.check_len(pos)?;
            self.line.extend_from_slice(&rest[..pos]);
            let line = std::mem::take(&mut self.line);
            self.process_line(&line, out);
            rest = &rest[pos + 1..];
            if is_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.pending_cr = true,
                }
            }
        }
        self.check_len(rest.len())?;
        self.line.extend_from_slice(rest);
        Ok(())
    }

    fn check_len(&self, extra: usize) -> Result<(), SseError> {
        if self.line.len() + extra > self.max_line {
            return Err(SseError::LineTooLong {
                limit: self.max_line,
            });
        }
        Ok(())
    }

    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // comment / keep-alive
        }
        let text = String::from_utf8_lossy(line);
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (&*text, ""),
        };
        match field {
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            // An id containing NUL is ignored, as the standard says.
            "id" if !value.contains('\0') => self.last_id = Some(value.to_string()),
            // `retry` and unknown fields do not matter to a request/response stream.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        let event = std::mem::take(&mut self.event);
        if !self.has_data {
            // Standard: an event without data is not dispatched (its name is still reset).
            return;
        }
        self.has_data = false;
        out.push(SseEvent {
            event,
            data: std::mem::take(&mut self.data),
            id: self.last_id.clone(),
        });
    }

    /// True when bytes or fields of an event that was never terminated by a blank line are
    /// buffered: the stream was cut in the middle of an event.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.has_data || !self.event.is_empty()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn parse_chunks(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in chunks {
            p.push(c, &mut out).unwrap();
        }
        out
    }

    fn ev(event: &str, data: &str) -> SseEvent {
        SseEvent {
            event: event.into(),
            data: data.into(),
            id: None,
        }
    }

    #[test]
    fn parses_named_and_unnamed_events() {
        let out = parse_chunks(&[b"event: ping\ndata: {}\n\ndata: hello\n\n"]);
        assert_eq!(out, vec![ev("ping", "{}"), ev("", "hello")]);
    }

    #[test]
    fn joins_multi_line_data_with_newline() {
        let out = parse_chunks(&[b"data: a\ndata: b\ndata:\ndata: c\n\n"]);
        assert_eq!(out, vec![ev("", "a\nb\n\nc")]);
    }

    #[test]
    fn strips_only_one_leading_space() {
        let out = parse_chunks(&[b"data:  two\n\ndata:none\n\n"]);
        assert_eq!(out, vec![ev("", " two"), ev("", "none")]);
    }

    #[test]
    fn skips_comments_and_unknown_fields() {
        let out = parse_chunks(&[b": keep-alive\nretry: 10\nfoo: bar\ndata: x\n\n:\n\n"]);
        assert_eq!(out, vec![ev("", "x")]);
    }

    #[test]
    fn accepts_crlf_cr_and_lf_line_endings() {
        let out = parse_chunks(&[b"data: a\r\n\r\ndata: b\r\rdata: c\n\n"]);
        assert_eq!(out, vec![ev("", "a"), ev("", "b"), ev("", "c")]);
    }

    #[test]
    fn crlf_split_across_chunks_is_one_line_break() {
        // `\r` ends one chunk, `\n` starts the next: must not count as an extra blank line.
        let out = parse_chunks(&[b"data: a\r", b"\ndata: b\r\n", b"\r\n"]);
        assert_eq!(out, vec![ev("", "a\nb")]);
    }

    #[test]
    fn every_split_point_gives_the_same_events() {
        let input: &[u8] =
            "event: e\r\ndata: héllo ✓\r\ndata: 🦀\r\n\r\n: c\ndata: z\n\n".as_bytes();
        let whole = parse_chunks(&[input]);
        assert_eq!(whole, vec![ev("e", "héllo ✓\n🦀"), ev("", "z")]);
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let out = parse_chunks(&[&input[..i], &input[i..j], &input[j..]]);
                assert_eq!(out, whole, "split at {i}/{j}");
            }
        }
    }

    #[test]
    fn byte_by_byte_reassembles_utf8() {
        let input = "data: 日本語\n\n".as_bytes();
        let chunks: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(parse_chunks(&chunks), vec![ev("", "日本語")]);
    }

    #[test]
    fn invalid_utf8_is_replaced_not_fatal() {
        let out = parse_chunks(&[b"data: a\xFFb\n\n"]);
        assert_eq!(out, vec![ev("", "a\u{FFFD}b")]);
    }

    #[test]
    fn leading_bom_is_skipped_even_when_split() {
        let out = parse_chunks(&[b"\xEF", b"\xBB", b"\xBFdata: x\n\n"]);
        assert_eq!(out, vec![ev("", "x")]);
        let out = parse_chunks(&[b"\xEF\xBB\xBFdata: y\n\n"]);
        assert_eq!(out, vec![ev("", "y")]);
    }

    #[test]
    fn non_bom_prefix_bytes_are_kept() {
        // Starts like a BOM but is not one: the bytes are data, decoded lossily.
        let out = parse_chunks(&[b"\xEF", b"data: x\n\n"]);
        assert_eq!(out.len(), 0, "garbage field name is ignored");
        let out = parse_chunks(&[b"\xEF\n", b"data: x\n\n"]);
        assert_eq!(out, vec![ev("", "x")]);
    }

    #[test]
    fn event_without_data_is_not_dispatched_and_resets_name() {
        let out = parse_chunks(&[b"event: lonely\n\ndata: x\n\n"]);
        assert_eq!(out, vec![ev("", "x")]);
    }

    #[test]
    fn field_without_colon_counts_as_empty_value() {
        let out = parse_chunks(&[b"data\n\n"]);
        assert_eq!(out, vec![ev("", "")]);
    }

    #[test]
    fn id_is_remembered_across_events() {
        let out = parse_chunks(&[b"id: 7\ndata: a\n\ndata: b\n\nid: bad\0\ndata: c\n\n"]);
        assert_eq!(out[0].id.as_deref(), Some("7"));
        assert_eq!(out[1].id.as_deref(), Some("7"));
        assert_eq!(out[2].id.as_deref(), Some("7"));
    }

    #[test]
    fn unterminated_event_is_pending_not_dispatched() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.push(b"data: {\"a\":1}\n", &mut out).unwrap();
        assert!(out.is_empty());
        assert!(p.has_pending());
        p.push(b"\n", &mut out).unwrap();
        assert_eq!(out.len(), 1);
        assert!(!p.has_pending());
        p.push(b"data: par", &mut out).unwrap();
        assert!(p.has_pending());
    }

    #[test]
    fn overlong_line_is_an_error() {
        let mut p = SseParser::with_max_line(16);
        let mut out = Vec::new();
        p.push(b"data: 0123456789", &mut out).unwrap();
        assert_eq!(
            p.push(b"abcdef", &mut out),
            Err(SseError::LineTooLong { limit: 16 })
        );
        let mut p = SseParser::with_max_line(16);
        assert!(p.push(b"data: 0123456789abcdef\n\n", &mut out).is_err());
    }

    #[test]
    fn empty_chunks_are_harmless() {
        let out = parse_chunks(&[b"", b"data: x", b"", b"\n", b"", b"\n"]);
        assert_eq!(out, vec![ev("", "x")]);
    }

    #[test]
    fn random_bytes_and_splits_never_panic_and_agree() {
        let mut rng = fastrand::Rng::with_seed(7);
        let alphabet = b"data: event:id\r\n \xFF\xEF\xBB\xBF{}x";
        for _ in 0..2000 {
            let len = rng.usize(0..64);
            let input: Vec<u8> = (0..len)
                .map(|_| alphabet[rng.usize(0..alphabet.len())])
                .collect();
            let whole = parse_chunks(&[&input]);
            let cut = rng.usize(0..=input.len());
            let split = parse_chunks(&[&input[..cut], &input[cut..]]);
            assert_eq!(whole, split, "{input:?} cut at {cut}");
        }
    }

    #[test]
    fn garbage_without_newlines_yields_nothing() {
        let out = parse_chunks(&[b"\x00\x01\x02 not sse at all"]);
        assert!(out.is_empty());
    }
}
