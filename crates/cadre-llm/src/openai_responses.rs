//! OpenAI Responses (`openai-responses`): request body and streamed response.
//!
//! Requests are stateless (`store: false`): every turn sends the whole conversation as input
//! items, and the reasoning items of earlier turns go back as they were received, with their
//! `encrypted_content`, so the model keeps its chain of thought across tool calls without the
//! server storing anything. As in Pi, a reasoning item lives in the thinking block's `signature`
//! (its JSON) and a tool call's id is `call_id|item_id`, so a session continues in Pi and back.
//!
//! Completion rule: a reply is complete only when `response.completed` or
//! `response.incomplete` arrived; `response.failed` and `error` are errors typed like the HTTP
//! status they stand for, and a stream that ends without any of them is `IncompleteStream`
//! (retryable), however much it carried.

mod decode;
mod request;

pub use decode::ResponsesDecoder;
pub use request::{build_body, build_request};

#[cfg(test)]
#[path = "openai_responses/request_tests.rs"]
mod request_tests;

#[cfg(test)]
#[path = "openai_responses/decode_tests.rs"]
mod decode_tests;

#[cfg(test)]
#[path = "openai_responses/effort_tests.rs"]
mod effort_tests;
