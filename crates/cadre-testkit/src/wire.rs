//! Pieces shared by the wire renderers: SSE frames, usage numbers and delta splitting.

use crate::script::Reply;

/// One SSE event exactly as written to the body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub bytes: String,
    /// The frame that tells the client the stream is complete (`[DONE]` / `message_stop` /
    /// `response.completed` or `response.incomplete`).
    pub terminal: bool,
}

impl Frame {
    pub fn data(json: &str) -> Frame {
        Frame {
            bytes: format!("data: {json}\n\n"),
            terminal: false,
        }
    }

    pub fn event(name: &str, json: &str) -> Frame {
        Frame {
            bytes: format!("event: {name}\ndata: {json}\n\n"),
            terminal: false,
        }
    }

    pub fn terminal(mut self) -> Frame {
        self.terminal = true;
        self
    }
}

/// Token counts in the Anthropic sense: `input` excludes cache reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Usage {
    pub input: u64,
    pub output: u64,
    pub cache_read: u64,
    pub cache_write: u64,
}

impl Usage {
    /// The scripted usage, or a plausible one derived from sizes: ~4 bytes per token.
    pub fn for_reply(reply: &Reply, request_bytes: usize) -> Usage {
        let (input, output) = reply.usage.unwrap_or_else(|| {
            let tokens = |n: usize| (n as u64 / 4).max(1);
            (tokens(request_bytes), tokens(reply.output_chars()))
        });
        Usage {
            input,
            output,
            cache_read: reply.cache.0,
            cache_write: reply.cache.1,
        }
    }
}

/// Everything a renderer needs besides the reply itself.
#[derive(Clone, Debug)]
pub(crate) struct RenderCtx {
    /// Echoed from the request.
    pub model: String,
    /// Sequence number of the request, used to make ids unique and deterministic.
    pub seq: u64,
    /// OpenAI `stream_options.include_usage`.
    pub include_usage: bool,
    pub usage: Usage,
}

/// Splits `text` into up to `max` contiguous pieces of roughly equal character count, so
/// clients must concatenate deltas (and cope with pieces ending mid-word).
pub(crate) fn split_pieces(text: &str, max: usize) -> Vec<&str> {
    let chars = text.chars().count();
    let pieces = chars.min(max.max(1));
    if pieces == 0 {
        return Vec::new();
    }
    let offsets: Vec<usize> = text
        .char_indices()
        .map(|(i, _)| i)
        .chain(std::iter::once(text.len()))
        .collect();
    (0..pieces)
        .map(|k| {
            let start = offsets[chars * k / pieces];
            let end = offsets[chars * (k + 1) / pieces];
            &text[start..end]
        })
        .collect()
}

/// Pieces for text deltas.
pub(crate) fn text_pieces(text: &str) -> Vec<&str> {
    split_pieces(text, 3)
}

/// Pieces for tool-call argument deltas: always at least two when the text allows it.
pub(crate) fn argument_pieces(arguments: &str) -> Vec<&str> {
    split_pieces(arguments, 3)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn split_reassembles_and_respects_char_boundaries() {
        for text in ["", "a", "ab", "abc", "hello world", "héllo wörld ✓✓✓", "{}"] {
            for max in 0..6 {
                let pieces = split_pieces(text, max);
                assert_eq!(pieces.concat(), text);
                assert!(pieces.len() <= max.max(1));
                assert!(pieces.iter().all(|p| !p.is_empty()));
            }
        }
        assert_eq!(split_pieces("abcdef", 3), vec!["ab", "cd", "ef"]);
        assert_eq!(argument_pieces("{}"), vec!["{", "}"]);
        assert_eq!(text_pieces("Hello there!").len(), 3);
    }

    #[test]
    fn frames_render_sse() {
        assert_eq!(Frame::data("{}").bytes, "data: {}\n\n");
        assert_eq!(
            Frame::event("ping", "{}").bytes,
            "event: ping\ndata: {}\n\n"
        );
        assert!(Frame::data("[DONE]").terminal().terminal);
    }

    #[test]
    fn usage_defaults_and_overrides() {
        let r = Reply::text("12345678");
        assert_eq!(
            Usage::for_reply(&r, 400),
            Usage {
                input: 100,
                output: 2,
                cache_read: 0,
                cache_write: 0
            }
        );
        assert_eq!(Usage::for_reply(&Reply::new(), 0).input, 1);
        let r = Reply::text("x").usage(7, 9).cache(3, 4);
        assert_eq!(
            Usage::for_reply(&r, 400),
            Usage {
                input: 7,
                output: 9,
                cache_read: 3,
                cache_write: 4
            }
        );
        let _ = Reply::new().text("unused");
    }
}
