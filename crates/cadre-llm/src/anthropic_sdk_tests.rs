//! Recorded Messages streams from Anthropic's Python SDK (its own test fixtures, MIT; see
//! tests/fixtures/sdk/anthropics__anthropic-sdk-python/SOURCE) through the Anthropic decoder.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use cadre_protocol::{ContentBlock, StopReason};
use serde_json::json;

use super::AnthropicDecoder;
use crate::error::LlmError;
use crate::model::Api;
use crate::test_support::{decode, decode_all_splits, decode_mutations, model};

const BASIC: &[u8] =
    include_bytes!("../tests/fixtures/sdk/anthropics__anthropic-sdk-python/basic_response.sse");
const TOOL_USE: &[u8] =
    include_bytes!("../tests/fixtures/sdk/anthropics__anthropic-sdk-python/tool_use_response.sse");
const THINKING: &[u8] =
    include_bytes!("../tests/fixtures/sdk/anthropics__anthropic-sdk-python/thinking_refusal.sse");

fn decoder() -> AnthropicDecoder {
    AnthropicDecoder::new(&model(Api::AnthropicMessages))
}

/// The fixture as the API sends it: the SDK's files stop right after the last `data:` line,
/// while a server ends every event, the last one too, with a blank line.
fn as_served(fixture: &[u8]) -> Vec<u8> {
    let mut bytes = fixture.to_vec();
    while bytes.last() == Some(&b'\n') {
        bytes.pop();
    }
    bytes.extend_from_slice(b"\n\n");
    bytes
}

#[test]
fn sdk_basic_stream_is_text() {
    let (_, result) = decode_all_splits(decoder, &as_served(BASIC));
    let msg = result.unwrap();
    assert_eq!(msg.content, [ContentBlock::text("Hello there!")]);
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!(
        msg.response_id.as_deref(),
        Some("msg_4QpJur2dWWDjF6C758FbBw5vm12BaVipnK")
    );
    assert_eq!((msg.usage.input, msg.usage.output), (11, 6));
}

#[test]
fn sdk_tool_use_stream_assembles_the_call_from_its_fragments() {
    let (_, result) = decode_all_splits(decoder, &as_served(TOOL_USE));
    let msg = result.unwrap();
    assert_eq!(msg.stop_reason, StopReason::ToolUse);
    assert_eq!(
        msg.content[0],
        ContentBlock::text("I'll check the current weather in Paris for you.")
    );
    let calls: Vec<_> = msg.tool_calls().collect();
    assert_eq!(calls.len(), 1);
    assert_eq!(calls[0].id, "toolu_01NRLabsLyVHZPKxbKvkfSMn");
    assert_eq!(calls[0].name, "get_weather");
    assert_eq!(calls[0].arguments, json!({"location": "Paris"}));
    assert_eq!((msg.usage.input, msg.usage.output), (377, 65));
}

#[test]
fn sdk_adaptive_thinking_stream_keeps_thinking_and_signature() {
    // Recorded from an adaptive-thinking model; data lines carry padding spaces before the
    // closing brace, which JSON allows.
    let (_, result) = decode_all_splits(decoder, THINKING);
    let msg = result.unwrap();
    let ContentBlock::Thinking {
        thinking,
        signature,
        redacted,
    } = &msg.content[0]
    else {
        panic!("{:?}", msg.content);
    };
    assert!(
        thinking.starts_with("Simple educational question"),
        "{thinking}"
    );
    assert!(thinking.ends_with("roll with it politely."), "{thinking}");
    assert_eq!(
        signature.as_deref(),
        Some("c3ludGhldGljLXNpZ25hdHVyZS1maXh0dXJlLWEtbm90LWEtcmVhbC1zaWduYXR1cmU=")
    );
    assert!(!redacted);
    assert_eq!(msg.content[1], ContentBlock::text("Hi"));
    // `refusal` ends the turn like end_turn (there is nothing to continue).
    assert_eq!(msg.stop_reason, StopReason::Stop);
    assert_eq!((msg.usage.input, msg.usage.output), (28, 106));
}

#[test]
fn sdk_streams_as_stored_end_inside_their_last_event() {
    // Without the blank line that ends it, `message_stop` is never dispatched (an event cut at
    // the end of the body is dropped, as the event-stream standard says): the reply is
    // incomplete, and retried, not taken as finished.
    for fixture in [BASIC, TOOL_USE] {
        let (_, result) = decode(decoder(), &[fixture]);
        let (err, partial) = result.unwrap_err();
        assert!(matches!(err, LlmError::IncompleteStream { .. }), "{err}");
        assert!(err.is_retryable());
        assert!(!partial.content.is_empty());
    }
}

#[test]
fn sdk_streams_mutated_never_panic() {
    for fixture in [BASIC, TOOL_USE, THINKING] {
        decode_mutations(&as_served(fixture), decoder);
    }
}
