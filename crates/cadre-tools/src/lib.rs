//! Tools for cadre agents.
//!
//! A [`Tool`] is a named operation the model may call with JSON arguments. Failures are results
//! the model sees (`ToolOutput { is_error: true, .. }`), never panics or runtime errors. The
//! [`ToolRegistry`] holds the active tool set of one agent; the built-in tools follow Pi's names,
//! parameters and output limits.

pub mod registry;

pub use registry::{Tool, ToolContext, ToolOutput, ToolRegistry};
