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

/// How many handed-back events [`SseParser::recycle`] keeps for reuse: a chunk rarely carries
/// more, and a burst must not stay allocated for the rest of the stream.
const MAX_SPARE_EVENTS: usize = 16;

/// Events whose data buffer grew beyond this are freed rather than kept for reuse.
const MAX_SPARE_DATA: usize = 64 * 1024;

const BOM: &[u8] = b"\xEF\xBB\xBF";

/// Streaming SSE parser. Feed chunks with [`SseParser::push`].
#[derive(Debug)]
pub struct SseParser {
    /// Bytes of the current, not yet terminated line (only a line split across chunks is
    /// buffered; complete lines are read where they lie in the chunk).
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
    /// Events the consumer handed back; the next events are built in their buffers.
    spare: Vec<SseEvent>,
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
            spare: Vec::new(),
        }
    }

    /// Feed one chunk of bytes; complete events are appended to `out` in order.
    pub fn push(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if chunk.is_empty() {
            return Ok(());
        }
        if self.at_start {
            return self.push_first(chunk, out);
        }
        let mut rest = chunk;
        if self.pending_cr {
            self.pending_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        self.push_bytes(rest, out)
    }

    /// Hand dispatched events back once they are handled: the events of later chunks are built
    /// in their buffers instead of newly allocated ones. Optional; `events` is left empty.
    pub fn recycle(&mut self, events: &mut Vec<SseEvent>) {
        for ev in events.drain(..) {
            if self.spare.len() < MAX_SPARE_EVENTS && ev.data.capacity() <= MAX_SPARE_DATA {
                self.spare.push(ev);
            }
        }
    }

    /// The first bytes of the stream: skip a BOM, which may itself be split across chunks, so
    /// they are held back until three bytes are known.
    fn push_first(&mut self, chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        if self.line.is_empty() {
            if chunk.len() < BOM.len() && BOM.starts_with(chunk) {
                self.line.extend_from_slice(chunk);
                return Ok(());
            }
            self.at_start = false;
            return self.push_bytes(chunk.strip_prefix(BOM).unwrap_or(chunk), out);
        }
        self.line.extend_from_slice(chunk);
        if self.line.len() < BOM.len() && BOM.starts_with(&self.line) {
            return Ok(());
        }
        self.at_start = false;
        let held = std::mem::take(&mut self.line);
        self.push_bytes(held.strip_prefix(BOM).unwrap_or(&held), out)
    }

    fn push_bytes(&mut self, mut rest: &[u8], out: &mut Vec<SseEvent>) -> Result<(), SseError> {
        while let Some(pos) = memchr::memchr2(b'\n', b'\r', rest) {
            self.check_len(pos)?;
            if self.line.is_empty() {
                self.process_line(&rest[..pos], out);
            } else {
                // The line began in an earlier chunk: complete it in the buffer, then keep the
                // buffer (emptied) for the next split line.
                self.line.extend_from_slice(&rest[..pos]);
                let line = std::mem::take(&mut self.line);
                self.process_line(&line, out);
                self.line = line;
                self.line.clear();
            }
            let is_cr = rest[pos] == b'\r';
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

    /// One complete line, without its line break. The field name is matched as bytes and only
    /// the value is decoded: `:` is ASCII, so splitting before decoding gives the same text as
    /// decoding the whole line first.
    fn process_line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return; // comment / keep-alive
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(i) => {
                let v = &line[i + 1..];
                (&line[..i], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &[][..]),
        };
        match field {
            b"event" => {
                self.event.clear();
                push_lossy(&mut self.event, value);
            }
            b"data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                push_lossy(&mut self.data, value);
                self.has_data = true;
            }
            // An id containing NUL is ignored, as the standard says.
            b"id" if !value.contains(&0) => {
                let id = self.last_id.get_or_insert_with(String::new);
                id.clear();
                push_lossy(id, value);
            }
            // `retry` and unknown fields do not matter to a request/response stream.
            _ => {}
        }
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if !self.has_data {
            // Standard: an event without data is not dispatched (its name is still reset).
            self.event.clear();
            return;
        }
        self.has_data = false;
        // The event takes the filled buffers; the parser goes on with the spare's (empty) ones.
        let mut ev = self.spare.pop().unwrap_or_default();
        std::mem::swap(&mut ev.event, &mut self.event);
        std::mem::swap(&mut ev.data, &mut self.data);
        self.event.clear();
        self.data.clear();
        ev.id.clone_from(&self.last_id);
        out.push(ev);
    }

    /// True when bytes or fields of an event that was never terminated by a blank line are
    /// buffered: the stream was cut in the middle of an event.
    pub fn has_pending(&self) -> bool {
        !self.line.is_empty() || self.has_data || !self.event.is_empty()
    }
}

/// Append `bytes` as text; invalid UTF-8 becomes U+FFFD, as the standard asks.
fn push_lossy(to: &mut String, bytes: &[u8]) {
    to.push_str(&String::from_utf8_lossy(bytes));
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

    /// Parse `chunks`, handing every batch of events back to the parser once it is copied out,
    /// as the client does.
    fn parse_recycling(chunks: &[&[u8]]) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut batch = Vec::new();
        let mut all = Vec::new();
        for c in chunks {
            p.push(c, &mut batch).unwrap();
            all.extend(batch.iter().cloned());
            p.recycle(&mut batch);
            assert!(batch.is_empty());
        }
        all
    }

    #[test]
    fn every_three_way_split_with_bom_crlf_cr_and_ids_agrees() {
        // A BOM, CRLF and lone CR breaks, a comment, an id, a named event, an event without data
        // and multi-byte characters: each of them may be cut anywhere, including between `\r`
        // and `\n` and inside the BOM.
        let input: &[u8] = "\u{FEFF}id: 1\r\nevent: a\r\ndata: é\r\rdata: x\r\n\r\n: c\r\n\
                            event: none\n\ndata: 🦀\rdata:\n\n"
            .as_bytes();
        let whole = parse_chunks(&[input]);
        let expected = vec![
            SseEvent {
                event: "a".into(),
                data: "é".into(),
                id: Some("1".into()),
            },
            SseEvent {
                event: String::new(),
                data: "x".into(),
                id: Some("1".into()),
            },
            SseEvent {
                event: String::new(),
                data: "🦀\n".into(),
                id: Some("1".into()),
            },
        ];
        assert_eq!(whole, expected);
        for i in 0..=input.len() {
            for j in i..=input.len() {
                let chunks = [&input[..i], &input[i..j], &input[j..]];
                assert_eq!(parse_chunks(&chunks), whole, "split at {i}/{j}");
                assert_eq!(
                    parse_recycling(&chunks),
                    whole,
                    "recycling, split at {i}/{j}"
                );
            }
        }
        let bytes: Vec<&[u8]> = input.chunks(1).collect();
        assert_eq!(parse_recycling(&bytes), whole);
    }

    #[test]
    fn recycled_events_carry_no_stale_fields() {
        // The reused buffers of a named event with a long payload must not leak into a later
        // unnamed event with a short one, nor an id into a stream that never set one.
        let chunks: [&[u8]; 3] = [
            b"event: long\ndata: 0123456789abcdef\n\n",
            b"data: s\n\n",
            b"data: t\n\n",
        ];
        assert_eq!(
            parse_recycling(&chunks),
            vec![ev("long", "0123456789abcdef"), ev("", "s"), ev("", "t")]
        );
    }

    #[test]
    fn recycling_keeps_a_bounded_number_of_small_events() {
        let mut p = SseParser::new();
        let mut batch = Vec::new();
        let many = "data: x\n\n".repeat(MAX_SPARE_EVENTS * 2);
        p.push(many.as_bytes(), &mut batch).unwrap();
        p.recycle(&mut batch);
        assert_eq!(p.spare.len(), MAX_SPARE_EVENTS);
        let mut p = SseParser::new();
        let big = format!("data: {}\n\n", "y".repeat(MAX_SPARE_DATA + 1));
        p.push(big.as_bytes(), &mut batch).unwrap();
        p.recycle(&mut batch);
        assert!(p.spare.is_empty());
    }

    #[test]
    fn a_line_split_after_complete_lines_is_reassembled() {
        // Complete lines are read in place, the tail is buffered; both paths meet in one event.
        let out = parse_chunks(&[b"event: e\ndata: ab", b"cd\ndata: ef", b"\n\n"]);
        assert_eq!(out, vec![ev("e", "abcd\nef")]);
    }

    #[test]
    fn invalid_utf8_in_field_names_and_ids_is_handled_like_decoded_text() {
        // A field name with invalid bytes matches no field; an id is decoded lossily.
        let out = parse_chunks(&[b"da\xFFta: no\nid: \xFF7\ndata: yes\n\n"]);
        assert_eq!(
            out,
            vec![SseEvent {
                event: String::new(),
                data: "yes".into(),
                id: Some("\u{FFFD}7".into()),
            }]
        );
    }

    /// The standard's algorithm written the plain way, on the whole input at once: skip a BOM,
    /// decode, split lines, and treat each one.
    fn reference(input: &[u8]) -> Vec<SseEvent> {
        let input = input.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(input);
        let mut lines = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < input.len() {
            if input[i] == b'\n' || input[i] == b'\r' {
                lines.push(String::from_utf8_lossy(&input[start..i]).into_owned());
                if input[i] == b'\r' && input.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            i += 1;
        }
        let (mut out, mut event, mut data, mut id) = (Vec::new(), String::new(), None, None);
        for line in lines {
            if line.is_empty() {
                if let Some(data) = data.take() {
                    out.push(SseEvent {
                        event: std::mem::take(&mut event),
                        data,
                        id: id.clone(),
                    });
                }
                event.clear();
                continue;
            }
            let (field, value) = match line.split_once(':') {
                Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
                None => (line.as_str(), ""),
            };
            match field {
                "event" => event = value.to_string(),
                "data" => match &mut data {
                    Some(d) => *d = format!("{d}\n{value}"),
                    None => data = Some(value.to_string()),
                },
                "id" if !value.contains('\0') => id = Some(value.to_string()),
                _ => {}
            }
        }
        out
    }

    #[test]
    fn random_input_in_random_pieces_matches_the_reference() {
        let mut rng = fastrand::Rng::with_seed(23);
        let alphabet: [&[u8]; 14] = [
            b"data:",
            b"event:",
            b"id:",
            b" ",
            b":",
            b"\r",
            b"\n",
            b"\r\n",
            b"x",
            b"\xFF",
            b"\xEF\xBB\xBF",
            "é".as_bytes(),
            b"\0",
            b"retry:",
        ];
        for _ in 0..3000 {
            let mut input = Vec::new();
            for _ in 0..rng.usize(0..40) {
                input.extend_from_slice(alphabet[rng.usize(0..alphabet.len())]);
            }
            let mut cuts: Vec<usize> = (0..rng.usize(0..5))
                .map(|_| rng.usize(0..=input.len()))
                .collect();
            cuts.sort_unstable();
            let mut chunks = Vec::new();
            let mut from = 0;
            for cut in cuts.into_iter().chain([input.len()]) {
                chunks.push(&input[from..cut]);
                from = cut;
            }
            let expected = reference(&input);
            assert_eq!(parse_chunks(&chunks), expected, "{input:?} in {chunks:?}");
            assert_eq!(
                parse_recycling(&chunks),
                expected,
                "{input:?} in {chunks:?}"
            );
        }
    }

    #[test]
    fn garbage_without_newlines_yields_nothing() {
        let out = parse_chunks(&[b"\x00\x01\x02 not sse at all"]);
        assert!(out.is_empty());
    }
}
