//! Verified handoff (SPEC V1–V8, D1–D2): the pure building blocks the task manager uses to
//! hand a child's work to its parent in a form the parent can trust.
//!
//! - [`contract`]: the output contract at the end of a child's prompt, the empty-completion
//!   nudge, delegation packets and scoped probes (V1, V2, D1, D2);
//! - [`evidence`]: which bash commands are verification checks, and whether the checks after
//!   the last file change passed (V4);
//! - [`receipt`]: the `<execution-receipt>` built from tool events only (V3);
//! - [`refusal`]: the calls a child attempted that never ran, listed on its receipt (L3, V3);
//! - [`packet`]: the review packet on disk, its sha256 handle and the reviewer's turn budget
//!   (V5, V7);
//! - [`verdict`]: the reviewer's answer, read fail-closed (V5);
//! - [`gate`]: the bounded review loop's decisions: pass, one fix round, or fail (V5);
//! - [`synthesis`]: the settled outcome of every entry of a `tasks` launch (V6);
//! - [`schema`]: the JSON Schema subset structured output is validated against (V8).
//!
//! Only [`packet::write_packet`] and [`packet::verify_packet`] touch the filesystem.

pub mod contract;
pub mod evidence;
pub mod gate;
pub mod packet;
pub mod receipt;
pub mod refusal;
pub mod schema;
mod shell;
pub mod synthesis;
pub mod verdict;

pub use evidence::{
    CheckKind, CheckRecord, CommandClass, EvidenceLog, ToolEvent, classify_command,
};
pub use receipt::{BashStatus, ExecutionReceipt, Verification, build_receipt, parse_bash_status};
pub use refusal::{RefusalReason, Refusals};
