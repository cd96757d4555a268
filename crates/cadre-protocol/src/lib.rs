//! Plain data types shared by every cadre crate.
//!
//! The message model is Pi's (`pi-ai` `Message`, `pi-agent` events, session file format v3) so
//! that session files and JSON event streams are readable by Pi and by tools written for Pi. This
//! crate has no behaviour beyond small constructors and accessors: it must not know about HTTP,
//! files or processes.

mod bash_execution;
mod budget;
pub mod display;
mod event;
pub mod image;
mod message;
pub mod redact;
mod session;
mod task;
mod thinking;
mod tool;

pub use bash_execution::BashExecutionMessage;
pub use budget::{BudgetState, Limits, Meter, Spend};
pub use event::{AgentEvent, AssistantMessageEvent, CompactionReason, CompactionResult};
pub use message::{
    AssistantMessage, ContentBlock, CustomMessage, Message, StopReason, ToolCall,
    ToolResultMessage, Usage, UsageCost, UserContent, UserMessage, join_text, now_millis,
};
pub use session::{SESSION_VERSION, SessionEntry, SessionEntryKind, SessionHeader};
pub use task::{
    TaskBudgets, TaskPhase, TaskRecord, TaskStatus, TaskUsage, TerminationKind, WarningSchedule,
    WorktreeInfo,
};
pub use thinking::ThinkingLevel;
pub use tool::ToolSpec;
