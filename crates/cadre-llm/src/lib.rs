//! Model providers for cadre.
//!
//! A [`Provider`] turns a [`CompletionRequest`] into a stream of [`StreamEvent`]s: incremental
//! [`AssistantMessageEvent`]s while the reply arrives, then exactly one terminal event (`Done` or
//! `Failed`). Three wire formats are spoken: OpenAI Chat Completions (`openai-completions`), OpenAI
//! Responses (`openai-responses`) and Anthropic Messages (`anthropic-messages`). Retries with
//! backoff and the request deadlines live in [`retry`]; retries surface as `Retry` events so the
//! caller can discard the partial reply of a failed attempt.
//!
//! The [`registry`] resolves `provider/model-id` names from built-ins and Pi-compatible
//! `models.json` files, and credentials from literals or environment variables. This crate knows
//! nothing about tools' behaviour, sessions or files other than `models.json`.

pub mod anthropic;
pub mod assemble;
pub mod claude_thinking;
pub mod client;
pub mod convert;
pub mod cost;
mod encoded_tools;
pub mod error;
pub mod http;
mod lenient;
pub mod model;
pub mod openai;
pub mod openai_rejection;
pub mod openai_responses;
pub mod provider;
pub mod registry;
pub mod retry;
pub mod sse;
mod stream;
pub mod thinking;
mod watch;

pub use assemble::{MessageAssembler, PartialMessage};
pub use client::{HttpProvider, RetryControl};
pub use cost::apply_cost;
pub use error::{ErrorKind, LlmError, Received, Waited};
pub use model::{Api, Compat, Model, ModelCost};
pub use provider::{CompletionRequest, Provider, StreamEvent};
pub use registry::{ModelInfo, ModelRegistry, RegistryError};
pub use retry::{RequestTimeouts, RetryPolicy};
pub use thinking::{ThinkingResolution, resolve_thinking};

pub use cadre_protocol::AssistantMessageEvent;

#[cfg(test)]
mod test_support;
