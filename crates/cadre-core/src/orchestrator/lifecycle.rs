//! The lifecycle controller of one task (SPEC L1–L5): phase, turn and tool budgets, supervision
//! warnings and the termination kind.
//!
//! A pure state machine. The task manager feeds it what the child did (turn ends, tool calls,
//! stops, errors) and applies the [`Action`]s it returns through the child's controller; the
//! tool gate asks it about every call at dispatch. Nothing here reads a clock or does I/O: the
//! timeout is a timer in the manager that calls [`Lifecycle::on_timeout`].
//!
//! Decisions worth knowing:
//! - "A child that would continue" is a turn that ended with tool calls: the loop will call the
//!   model again. A turn without tool calls is the child's last, so it gets no directive and no
//!   warning.
//! - The tool budget counts calls admitted at dispatch (requested − blocked). Blocked calls never
//!   consume budget, and counting at dispatch (not at completion) keeps parallel calls of one turn
//!   from all slipping through.
//! - Reaching `maxToolCalls` only blocks the configured tools; it is a nudge to finish. A child that
//!   still hands over a final text ends `normal`; only one that ends without final text is
//!   `tool_budget` (L1: "tool budget without final text").
//! - The turn budget and the timeout are aborts: whichever fired first is the termination, above
//!   a provider failure (the abort itself surfaces as an error from the stream) and below an
//!   explicit stop.

use cadre_protocol::{TaskBudgets, TaskPhase, TaskUsage, TerminationKind, WarningSchedule};

/// Tools blocked by a reached `maxToolCalls` when the budgets name none (L3).
pub const DEFAULT_TOOL_BUDGET_BLOCK: [&str; 4] = ["read", "grep", "find", "ls"];

/// Told to every long-running child (L5), so the parent has fresh visible progress between
/// supervision checkpoints.
pub const STAGE_NOTE_INSTRUCTION: &str = "Progress notes: after each meaningful phase, and at \
least every 8-12 tool-using turns, write a one- or two-sentence stage note in plain text saying \
what you have established and what you are doing next. Keep working after the note.";

/// How one task is governed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LifecycleConfig {
    /// Hard and soft budgets. `grace_turns` is used as given (the manager fills in
    /// `defaultGraceTurns`); an empty `tool_budget_block` means the default list.
    pub budgets: TaskBudgets,
    /// Supervision checkpoints; `None` = no warnings.
    pub warnings: Option<WarningSchedule>,
    /// The role refuses continuation (O2).
    pub one_shot: bool,
    /// Launched in the background; a foreground task is promoted on its first warning.
    pub background: bool,
}

/// What a finished turn looked like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TurnFacts {
    /// The turn ended with tool calls: the child would continue.
    pub has_tool_calls: bool,
    /// Length of the turn's assistant text (informational).
    pub text_len: usize,
}

/// What the child handed over when its run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FinalFacts {
    /// The final assistant message has non-empty text.
    pub has_final_text: bool,
}

/// The gate's answer for one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolDecision {
    Allow,
    /// Refuse the call; the message is the tool result the model sees.
    Block(String),
}

/// A supervision checkpoint reached (L5).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressWarning {
    /// The turn just completed.
    pub turn: u32,
    /// The turn of the next checkpoint.
    pub next_checkpoint: u32,
    /// 1 for the first warning of the task, 2 for the second, …
    pub count: u32,
}

/// What the manager must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Queue this text for the child as a steer (delivered at its next turn boundary).
    Steer(String),
    /// Abort the child's run; the task ends with this kind (unless a higher one applies).
    Abort(TerminationKind),
    /// Send a `<progress-warning>` to the root parent.
    Warn(ProgressWarning),
    /// Return the blocked foreground `Agent` call as "running (supervised background)".
    PromoteToBackground,
}

/// Why a task cannot be reopened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ReopenError {
    #[error("this agent is one-shot and cannot be continued")]
    OneShot,
    #[error("the task is still running; send it a message instead")]
    StillRunning,
}

/// The facts the termination kind is resolved from (L1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TerminationFacts {
    /// `manual_stop` or `parent_shutdown`, whichever came first.
    pub explicit_stop: Option<TerminationKind>,
    /// `turn_budget` or `timeout`, whichever aborted the child first.
    pub budget_abort: Option<TerminationKind>,
    /// `cost_budget` or `token_budget`: a request was refused by a budget.
    pub spend_budget: Option<TerminationKind>,
    /// `provider_error` or `startup_error`, whichever came first.
    pub failure: Option<TerminationKind>,
    /// `maxToolCalls` was reached.
    pub tool_budget_reached: bool,
    pub has_final_text: bool,
}

/// Resolve the termination kind when several apply: explicit stop > turn budget (or timeout)
/// > cost or token budget > provider failure > tool budget without final text > normal.
pub fn resolve_termination(f: TerminationFacts) -> TerminationKind {
    if let Some(kind) = f.explicit_stop {
        return kind;
    }
    if let Some(kind) = f.budget_abort {
        return kind;
    }
    if let Some(kind) = f.spend_budget {
        return kind;
    }
    if let Some(kind) = f.failure {
        return kind;
    }
    if f.tool_budget_reached && !f.has_final_text {
        return TerminationKind::ToolBudget;
    }
    TerminationKind::Normal
}

/// The lifecycle state of one task.
#[derive(Debug, Clone, PartialEq)]
pub struct Lifecycle {
    config: LifecycleConfig,
    phase: TaskPhase,
    turns: u32,
    requested: u32,
    executed: u32,
    blocked: u32,
    /// Calls admitted at dispatch: what the tool budget counts.
    admitted: u32,
    /// A call was refused by the hard tool budget (the budget stays reached whatever is given
    /// back later).
    budget_blocked: bool,
    handoff_sent: bool,
    wrap_up_sent: bool,
    warnings_sent: u32,
    next_checkpoint: Option<u32>,
    background: bool,
    /// An abort has been asked for; later stop inputs only record their kind.
    aborting: bool,
    facts: TerminationFacts,
    error: Option<String>,
    termination: Option<TerminationKind>,
}

impl Lifecycle {
    pub fn new(config: LifecycleConfig) -> Lifecycle {
        let next_checkpoint = config.warnings.map(|w| w.warning_turns);
        let background = config.background;
        Lifecycle {
            config,
            phase: TaskPhase::Starting,
            turns: 0,
            requested: 0,
            executed: 0,
            blocked: 0,
            admitted: 0,
            budget_blocked: false,
            handoff_sent: false,
            wrap_up_sent: false,
            warnings_sent: 0,
            next_checkpoint,
            background,
            aborting: false,
            facts: TerminationFacts::default(),
            error: None,
            termination: None,
        }
    }

    /// Rebuild the controller of a task reopened from its record (O2): its turn and tool
    /// counters continue, and checkpoints already behind it are not repeated.
    pub fn resume(config: LifecycleConfig, usage: &TaskUsage) -> Lifecycle {
        let mut lc = Lifecycle::new(config);
        lc.turns = usage.turns;
        lc.requested = usage.tool_calls_requested;
        lc.executed = usage.tool_calls_executed;
        lc.blocked = usage.tool_calls_blocked;
        lc.admitted = usage
            .tool_calls_requested
            .saturating_sub(usage.tool_calls_blocked);
        if let Some(w) = lc.config.warnings {
            let first = w.warning_turns;
            if lc.turns >= first {
                let interval = w.warning_interval_turns;
                lc.warnings_sent = match interval {
                    0 => 1,
                    i => (lc.turns - first) / i + 1,
                };
                lc.next_checkpoint = following_checkpoint(first, interval, lc.turns);
            }
        }
        if let Some(max) = lc.config.budgets.max_tool_calls {
            lc.facts.tool_budget_reached = lc.admitted >= max;
        }
        if let Some(max) = lc.config.budgets.max_turns {
            lc.handoff_sent = lc.turns >= max;
        }
        if let Some(soft) = lc.config.budgets.soft_tool_calls {
            lc.wrap_up_sent = lc.admitted >= soft;
        }
        lc.phase = if lc.turns > 0 {
            TaskPhase::Working
        } else {
            TaskPhase::Starting
        };
        lc
    }

    pub fn phase(&self) -> TaskPhase {
        self.phase
    }

    pub fn is_background(&self) -> bool {
        self.background
    }

    /// The termination kind, once the task is terminal.
    pub fn termination(&self) -> Option<TerminationKind> {
        self.termination
    }

    /// The provider or start-up error that failed the task, if any.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    pub fn turns(&self) -> u32 {
        self.turns
    }

    /// Copy the turn and tool counters into a task's usage.
    pub fn write_counters(&self, usage: &mut TaskUsage) {
        usage.turns = self.turns;
        usage.tool_calls_requested = self.requested;
        usage.tool_calls_executed = self.executed;
        usage.tool_calls_blocked = self.blocked;
    }

    fn is_terminal(&self) -> bool {
        self.phase == TaskPhase::Terminal
    }

    /// The child's first model call began.
    pub fn on_turn_start(&mut self) {
        if self.phase == TaskPhase::Starting {
            self.phase = TaskPhase::Working;
        }
    }

    /// A turn ended: the turn budget, the soft tool budget and the checkpoints are evaluated.
    pub fn on_turn_end(&mut self, turn: TurnFacts) -> Vec<Action> {
        if self.is_terminal() {
            return Vec::new();
        }
        self.on_turn_start();
        self.turns = self.turns.saturating_add(1);
        if !turn.has_tool_calls || self.aborting {
            return Vec::new();
        }
        let mut actions = Vec::new();

        if let Some(max) = self.config.budgets.max_turns {
            let limit = max.saturating_add(self.config.budgets.grace_turns);
            if self.turns >= limit {
                // The next turn would be past maxTurns + graceTurns (L2).
                self.aborting = true;
                self.facts
                    .budget_abort
                    .get_or_insert(TerminationKind::TurnBudget);
                actions.push(Action::Abort(TerminationKind::TurnBudget));
                return actions;
            }
            if self.turns >= max && !self.handoff_sent {
                self.handoff_sent = true;
                self.phase = TaskPhase::FinalHandoff;
                actions.push(Action::Steer(final_handoff_directive(
                    self.turns,
                    self.config.budgets.grace_turns,
                )));
            }
        }

        if let Some(soft) = self.config.budgets.soft_tool_calls
            && self.admitted >= soft
            && !self.wrap_up_sent
        {
            self.wrap_up_sent = true;
            actions.push(Action::Steer(wrap_up_directive(self.admitted, soft)));
        }

        if let (Some(w), Some(next)) = (self.config.warnings, self.next_checkpoint)
            && self.turns >= next
        {
            let following = following_checkpoint(next, w.warning_interval_turns, self.turns);
            self.next_checkpoint = following;
            self.warnings_sent += 1;
            if !self.background {
                // Promotion first: the parent's blocked call returns before the warning reaches it.
                self.background = true;
                actions.push(Action::PromoteToBackground);
            }
            actions.push(Action::Warn(ProgressWarning {
                turn: self.turns,
                next_checkpoint: following.unwrap_or(0),
                count: self.warnings_sent,
            }));
        }
        actions
    }

    /// A tool call was requested and passed the capability and policy checks: apply the hard
    /// tool budget (L3).
    pub fn on_tool_call(&mut self, name: &str) -> ToolDecision {
        self.on_turn_start();
        self.requested = self.requested.saturating_add(1);
        if let Some(max) = self.config.budgets.max_tool_calls
            && self.admitted >= max
            && self.blocks(name)
        {
            self.blocked = self.blocked.saturating_add(1);
            self.budget_blocked = true;
            self.facts.tool_budget_reached = true;
            return ToolDecision::Block(tool_budget_message(name, max, &self.block_list()));
        }
        self.admitted = self.admitted.saturating_add(1);
        if let Some(max) = self.config.budgets.max_tool_calls
            && self.admitted >= max
        {
            self.facts.tool_budget_reached = true;
        }
        ToolDecision::Allow
    }

    /// A tool call was refused by the capability set or a shell/scope policy before the
    /// budget: counted as requested and blocked, never against the budget. Call this instead of
    /// [`Lifecycle::on_tool_call`] for such a call.
    pub fn on_policy_block(&mut self) {
        self.on_turn_start();
        self.requested = self.requested.saturating_add(1);
        self.blocked = self.blocked.saturating_add(1);
    }

    /// An admitted tool call finished executing.
    pub fn on_tool_executed(&mut self) {
        self.executed = self.executed.saturating_add(1);
    }

    /// An admitted call was refused by the tool itself before it did anything (a shell policy,
    /// a missing sandbox: bash checks those when it runs). Like a refusal at dispatch it is
    /// blocked and not executed, and it gives back the budget its admission took. Call this
    /// instead of [`Lifecycle::on_tool_executed`] for such a call.
    pub fn on_refused_by_tool(&mut self) {
        self.blocked = self.blocked.saturating_add(1);
        self.admitted = self.admitted.saturating_sub(1);
        if let Some(max) = self.config.budgets.max_tool_calls {
            self.facts.tool_budget_reached = self.budget_blocked || self.admitted >= max;
        }
    }

    /// `timeoutMs` elapsed (L4).
    pub fn on_timeout(&mut self) -> Vec<Action> {
        if self.is_terminal() {
            return Vec::new();
        }
        self.facts
            .budget_abort
            .get_or_insert(TerminationKind::Timeout);
        self.abort(TerminationKind::Timeout)
    }

    /// `TaskStop` (O4).
    pub fn on_stop_requested(&mut self) -> Vec<Action> {
        self.explicit_stop(TerminationKind::ManualStop)
    }

    /// The parent is ending (L6).
    pub fn on_parent_shutdown(&mut self) -> Vec<Action> {
        self.explicit_stop(TerminationKind::ParentShutdown)
    }

    fn explicit_stop(&mut self, kind: TerminationKind) -> Vec<Action> {
        if self.is_terminal() {
            return Vec::new();
        }
        self.facts.explicit_stop.get_or_insert(kind);
        self.abort(kind)
    }

    fn abort(&mut self, kind: TerminationKind) -> Vec<Action> {
        if self.aborting {
            return Vec::new();
        }
        self.aborting = true;
        vec![Action::Abort(kind)]
    }

    /// The child's run failed at the provider. Not terminal by itself: the run ends and the
    /// manager calls [`Lifecycle::on_finished`].
    pub fn on_provider_error(&mut self, message: &str) {
        self.fail(TerminationKind::ProviderError, message);
    }

    /// A request was refused by the task's token or cost budget (or an ancestor's): the run
    /// ended on that refusal, which is the task's termination unless a stop or a turn budget
    /// came first.
    pub fn on_spend_budget(&mut self, kind: TerminationKind, message: &str) {
        if self.is_terminal() || self.facts.spend_budget.is_some() {
            return;
        }
        self.facts.spend_budget = Some(kind);
        if self.error.is_none() {
            self.error = Some(message.to_string());
        }
    }

    /// The child could not be started (no model call made). Terminal at once.
    pub fn on_startup_error(&mut self, message: &str) -> TerminationKind {
        self.fail(TerminationKind::StartupError, message);
        self.finish(FinalFacts::default())
    }

    fn fail(&mut self, kind: TerminationKind, message: &str) {
        if self.is_terminal() {
            return;
        }
        if self.facts.failure.is_none() {
            self.facts.failure = Some(kind);
            self.error = Some(message.to_string());
        }
    }

    /// The child's run ended. Resolves and returns the termination kind; later inputs are ignored.
    pub fn on_finished(&mut self, last: FinalFacts) -> TerminationKind {
        if let Some(kind) = self.termination {
            return kind;
        }
        self.finish(last)
    }

    fn finish(&mut self, last: FinalFacts) -> TerminationKind {
        self.facts.has_final_text = last.has_final_text;
        let kind = resolve_termination(self.facts);
        self.termination = Some(kind);
        self.phase = TaskPhase::Terminal;
        kind
    }

    /// Reopen a finished task for a continuation (O2): counters and checkpoints continue, the
    /// termination facts of the previous run are forgotten.
    pub fn reopen(&mut self) -> Result<(), ReopenError> {
        if self.config.one_shot {
            return Err(ReopenError::OneShot);
        }
        if !self.is_terminal() {
            return Err(ReopenError::StillRunning);
        }
        self.phase = TaskPhase::Working;
        self.aborting = false;
        self.facts = TerminationFacts {
            tool_budget_reached: self.facts.tool_budget_reached,
            ..TerminationFacts::default()
        };
        self.error = None;
        self.termination = None;
        Ok(())
    }

    fn blocks(&self, name: &str) -> bool {
        let list = &self.config.budgets.tool_budget_block;
        if list.is_empty() {
            return DEFAULT_TOOL_BUDGET_BLOCK.contains(&name);
        }
        list.iter().any(|t| t == "*" || t == name)
    }

    fn block_list(&self) -> String {
        let list = &self.config.budgets.tool_budget_block;
        if list.is_empty() {
            DEFAULT_TOOL_BUDGET_BLOCK.join(", ")
        } else if list.iter().any(|t| t == "*") {
            "all tools".to_string()
        } else {
            list.join(", ")
        }
    }
}

/// The first checkpoint after `turn` on the schedule through `checkpoint` with `interval`;
/// `None` when the interval is 0 (a single warning) or the schedule runs past `u32::MAX`.
fn following_checkpoint(checkpoint: u32, interval: u32, turn: u32) -> Option<u32> {
    if interval == 0 {
        return None;
    }
    let behind = turn.saturating_sub(checkpoint) / interval + 1;
    checkpoint.checked_add(behind.checked_mul(interval)?)
}

/// The one directive a child gets at `maxTurns` (L2). It keeps its tools.
pub fn final_handoff_directive(turn: u32, grace_turns: u32) -> String {
    let grace = match grace_turns {
        0 => "This is your last turn".to_string(),
        1 => "You have 1 more turn".to_string(),
        n => format!("You have {n} more turns"),
    };
    format!(
        "FINAL HANDOFF: the turn budget is reached ({turn} turns). {grace} before the task is \
         stopped. Do not start new work. Use tools only if strictly needed to finish, then write \
         your final answer now: what you established (with evidence: paths, commands, results), \
         what you changed, and what remains open."
    )
}

/// The wrap-up steer at `softToolCalls` (L3).
pub fn wrap_up_directive(used: u32, soft: u32) -> String {
    format!(
        "WRAP UP: you have used {used} tool calls (soft budget {soft}). Finish the essential \
         remaining steps with as few calls as possible and then write your final answer."
    )
}

/// The tool result of a call blocked by the hard tool budget (L3).
pub fn tool_budget_message(tool: &str, max: u32, blocked: &str) -> String {
    format!(
        "Blocked: the tool budget of {max} calls is used up, so `{tool}` is no longer available \
         (blocked: {blocked}). Write your final answer from what you have."
    )
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use TerminationKind::*;

    const CONT: TurnFacts = TurnFacts {
        has_tool_calls: true,
        text_len: 0,
    };
    const LAST: TurnFacts = TurnFacts {
        has_tool_calls: false,
        text_len: 10,
    };
    const TEXT: FinalFacts = FinalFacts {
        has_final_text: true,
    };
    const NO_TEXT: FinalFacts = FinalFacts {
        has_final_text: false,
    };

    fn budgets(max_turns: Option<u32>, grace: u32) -> TaskBudgets {
        TaskBudgets {
            max_turns,
            grace_turns: grace,
            ..TaskBudgets::default()
        }
    }

    fn lc(budgets: TaskBudgets, warnings: Option<(u32, u32)>, background: bool) -> Lifecycle {
        Lifecycle::new(LifecycleConfig {
            budgets,
            warnings: warnings.map(|(w, i)| WarningSchedule {
                warning_turns: w,
                warning_interval_turns: i,
            }),
            one_shot: false,
            background,
        })
    }

    fn is_steer(a: &[Action]) -> bool {
        a.len() == 1 && matches!(a[0], Action::Steer(_))
    }

    #[test]
    fn l1_phases_move_forward() {
        let mut l = lc(budgets(Some(2), 1), None, true);
        assert_eq!(l.phase(), TaskPhase::Starting);
        l.on_turn_start();
        assert_eq!(l.phase(), TaskPhase::Working);
        assert!(l.on_turn_end(CONT).is_empty());
        assert_eq!(l.phase(), TaskPhase::Working);
        assert!(is_steer(&l.on_turn_end(CONT)));
        assert_eq!(l.phase(), TaskPhase::FinalHandoff);
        assert!(l.on_turn_end(LAST).is_empty());
        assert_eq!(l.on_finished(TEXT), Normal);
        assert_eq!(l.phase(), TaskPhase::Terminal);
        assert_eq!(l.termination(), Some(Normal));
    }

    #[test]
    fn l1_turn_end_alone_starts_working() {
        let mut l = lc(TaskBudgets::default(), None, true);
        l.on_turn_end(LAST);
        assert_eq!(l.phase(), TaskPhase::Working);
        assert_eq!(l.turns(), 1);
    }

    /// (max_turns, grace, turn facts per turn) → the actions of each turn, as short codes:
    /// "" nothing, "S" steer, "A" abort.
    #[test]
    fn l2_turn_budget_table() {
        type Case = (
            u32,
            u32,
            &'static [bool],
            &'static [&'static str],
            Option<TerminationKind>,
        );
        let cases: &[Case] = &[
            // Grace 1: directive at turn 3, abort after turn 4 if it would continue.
            (
                3,
                1,
                &[true, true, true, true],
                &["", "", "S", "A"],
                Some(TurnBudget),
            ),
            // It finishes in the grace turn: normal.
            (3, 1, &[true, true, true, false], &["", "", "S", ""], None),
            // It finishes exactly at maxTurns: no directive, normal.
            (3, 1, &[true, true, false], &["", "", ""], None),
            // Grace 0: abort at maxTurns itself, no directive.
            (3, 0, &[true, true, true], &["", "", "A"], Some(TurnBudget)),
            // Grace 2: one directive only, abort after turn 5.
            (
                3,
                2,
                &[true, true, true, true, true],
                &["", "", "S", "", "A"],
                Some(TurnBudget),
            ),
            // maxTurns 1.
            (1, 1, &[true, true], &["S", "A"], Some(TurnBudget)),
        ];
        for (max, grace, turns, want, abort) in cases {
            let mut l = lc(budgets(Some(*max), *grace), None, true);
            let got: Vec<&str> = turns
                .iter()
                .map(|&t| {
                    let a = l.on_turn_end(TurnFacts {
                        has_tool_calls: t,
                        text_len: 0,
                    });
                    match a.as_slice() {
                        [] => "",
                        [Action::Steer(_)] => "S",
                        [Action::Abort(TurnBudget)] => "A",
                        other => panic!("unexpected {other:?}"),
                    }
                })
                .collect();
            assert_eq!(&got, want, "max {max} grace {grace}");
            let kind = l.on_finished(NO_TEXT);
            assert_eq!(kind, abort.unwrap_or(Normal), "max {max} grace {grace}");
        }
    }

    #[test]
    fn l2_directive_text_names_the_turn_and_grace() {
        let d = final_handoff_directive(10, 1);
        assert!(d.contains("10 turns") && d.contains("1 more turn"), "{d}");
        assert!(final_handoff_directive(5, 0).contains("last turn"));
        assert!(final_handoff_directive(5, 3).contains("3 more turns"));
    }

    #[test]
    fn l2_after_abort_further_turns_do_nothing() {
        let mut l = lc(budgets(Some(1), 0), None, true);
        assert_eq!(l.on_turn_end(CONT), vec![Action::Abort(TurnBudget)]);
        assert!(l.on_turn_end(CONT).is_empty());
        assert!(l.on_timeout().is_empty(), "already aborting");
        assert_eq!(l.on_finished(TEXT), TurnBudget);
    }

    fn tool_budgets(max: Option<u32>, soft: Option<u32>, block: &[&str]) -> TaskBudgets {
        TaskBudgets {
            max_tool_calls: max,
            soft_tool_calls: soft,
            tool_budget_block: block.iter().map(|s| s.to_string()).collect(),
            ..TaskBudgets::default()
        }
    }

    #[test]
    fn l3_hard_budget_blocks_only_listed_tools() {
        // (block list, tool called after the budget, blocked?)
        let cases: &[(&[&str], &str, bool)] = &[
            (&[], "read", true),
            (&[], "grep", true),
            (&[], "find", true),
            (&[], "ls", true),
            (&[], "bash", false),
            (&[], "edit", false),
            (&["bash"], "bash", true),
            (&["bash"], "read", false),
            (&["*"], "edit", true),
            (&["*"], "anything", true),
            (&["read", "*"], "write", true),
        ];
        for (block, tool, blocked) in cases {
            let mut l = lc(tool_budgets(Some(2), None, block), None, true);
            assert_eq!(l.on_tool_call("read"), ToolDecision::Allow);
            assert_eq!(l.on_tool_call("bash"), ToolDecision::Allow);
            let d = l.on_tool_call(tool);
            assert_eq!(
                matches!(d, ToolDecision::Block(_)),
                *blocked,
                "{block:?} {tool}: {d:?}"
            );
            if let ToolDecision::Block(msg) = d {
                assert!(
                    msg.contains(&format!("`{tool}`")) && msg.contains("2 calls"),
                    "{msg}"
                );
            }
        }
    }

    #[test]
    fn l3_counters_requested_executed_blocked() {
        let mut l = lc(tool_budgets(Some(2), None, &[]), None, true);
        for name in ["read", "grep"] {
            assert_eq!(l.on_tool_call(name), ToolDecision::Allow);
            l.on_tool_executed();
        }
        assert!(matches!(l.on_tool_call("read"), ToolDecision::Block(_)));
        assert!(matches!(l.on_tool_call("ls"), ToolDecision::Block(_)));
        // Not in the block list: still admitted and counted.
        assert_eq!(l.on_tool_call("edit"), ToolDecision::Allow);
        l.on_tool_executed();
        l.on_policy_block();
        let mut usage = TaskUsage::default();
        l.on_turn_end(CONT);
        l.write_counters(&mut usage);
        assert_eq!(usage.turns, 1);
        assert_eq!(usage.tool_calls_requested, 6);
        assert_eq!(usage.tool_calls_executed, 3);
        assert_eq!(usage.tool_calls_blocked, 3);
    }

    #[test]
    fn l3_policy_blocks_do_not_consume_the_budget() {
        let mut l = lc(tool_budgets(Some(1), None, &[]), None, true);
        for _ in 0..5 {
            l.on_policy_block();
        }
        assert_eq!(l.on_tool_call("read"), ToolDecision::Allow);
        assert!(matches!(l.on_tool_call("read"), ToolDecision::Block(_)));
    }

    #[test]
    fn l3_a_call_the_tool_refused_is_blocked_and_gives_its_budget_back() {
        let mut l = lc(tool_budgets(Some(1), None, &[]), None, true);
        // bash is admitted, then refused by its shell policy when it runs.
        assert_eq!(l.on_tool_call("bash"), ToolDecision::Allow);
        l.on_refused_by_tool();
        // The budget is not spent: the next call is admitted, and only then is it reached.
        assert_eq!(l.on_tool_call("read"), ToolDecision::Allow);
        l.on_tool_executed();
        assert!(matches!(l.on_tool_call("read"), ToolDecision::Block(_)));
        let mut usage = TaskUsage::default();
        l.write_counters(&mut usage);
        assert_eq!(usage.tool_calls_requested, 3);
        assert_eq!(usage.tool_calls_executed, 1);
        assert_eq!(usage.tool_calls_blocked, 2);
        let kind = l.on_finished(FinalFacts {
            has_final_text: false,
        });
        assert_eq!(kind, TerminationKind::ToolBudget);

        // A refused call that had reached the budget un-reaches it...
        let mut l = lc(tool_budgets(Some(1), None, &[]), None, true);
        assert_eq!(l.on_tool_call("bash"), ToolDecision::Allow);
        l.on_refused_by_tool();
        let kind = l.on_finished(FinalFacts {
            has_final_text: false,
        });
        assert_eq!(kind, TerminationKind::Normal);
        // ...but not once a call was refused for the budget.
        let mut l = lc(tool_budgets(Some(1), None, &[]), None, true);
        assert_eq!(l.on_tool_call("bash"), ToolDecision::Allow);
        assert!(matches!(l.on_tool_call("read"), ToolDecision::Block(_)));
        l.on_refused_by_tool();
        let kind = l.on_finished(FinalFacts {
            has_final_text: false,
        });
        assert_eq!(kind, TerminationKind::ToolBudget);
    }

    #[test]
    fn l3_soft_budget_steers_once_at_a_turn_that_continues() {
        let mut l = lc(tool_budgets(None, Some(2), &[]), None, true);
        l.on_tool_call("read");
        assert!(l.on_turn_end(CONT).is_empty());
        l.on_tool_call("read");
        l.on_tool_call("read");
        let a = l.on_turn_end(CONT);
        assert!(is_steer(&a), "{a:?}");
        if let Action::Steer(text) = &a[0] {
            assert!(text.contains("3 tool calls") && text.contains("soft budget 2"));
        }
        l.on_tool_call("read");
        assert!(l.on_turn_end(CONT).is_empty(), "only one wrap-up");
    }

    #[test]
    fn l3_soft_budget_is_not_sent_to_a_finishing_child() {
        let mut l = lc(tool_budgets(None, Some(1), &[]), None, true);
        l.on_tool_call("read");
        assert!(l.on_turn_end(LAST).is_empty());
    }

    #[test]
    fn l3_tool_budget_termination_depends_on_final_text() {
        for (text, want) in [(TEXT, Normal), (NO_TEXT, ToolBudget)] {
            let mut l = lc(tool_budgets(Some(1), None, &[]), None, true);
            l.on_tool_call("read");
            l.on_turn_end(CONT);
            assert!(matches!(l.on_tool_call("read"), ToolDecision::Block(_)));
            l.on_turn_end(LAST);
            assert_eq!(l.on_finished(text), want);
        }
        // Budget never reached: no text is still normal.
        let mut l = lc(tool_budgets(Some(5), None, &[]), None, true);
        l.on_tool_call("read");
        assert_eq!(l.on_finished(NO_TEXT), Normal);
    }

    #[test]
    fn l4_timeout_aborts_partial() {
        let mut l = lc(TaskBudgets::default(), None, true);
        l.on_turn_end(CONT);
        assert_eq!(l.on_timeout(), vec![Action::Abort(Timeout)]);
        assert_eq!(l.on_finished(TEXT), Timeout);
        assert_eq!(Timeout.status(), cadre_protocol::TaskStatus::Partial);
    }

    #[test]
    fn l5_warning_schedule_table() {
        // (W, I, turns that continue) → turns at which a warning fires with (next, count).
        type Case = (u32, u32, u32, &'static [(u32, u32, u32)]);
        let cases: &[Case] = &[
            (3, 2, 10, &[(3, 5, 1), (5, 7, 2), (7, 9, 3), (9, 11, 4)]),
            (40, 25, 100, &[(40, 65, 1), (65, 90, 2), (90, 115, 3)]),
            (1, 1, 3, &[(1, 2, 1), (2, 3, 2), (3, 4, 3)]),
            (5, 0, 20, &[(5, 0, 1)]),
            (50, 10, 49, &[]),
        ];
        for (w, i, n, want) in cases {
            let mut l = lc(TaskBudgets::default(), Some((*w, *i)), true);
            let mut got = Vec::new();
            for _ in 0..*n {
                for a in l.on_turn_end(CONT) {
                    match a {
                        Action::Warn(p) => got.push((p.turn, p.next_checkpoint, p.count)),
                        other => panic!("unexpected {other:?}"),
                    }
                }
            }
            assert_eq!(&got, want, "W {w} I {i}");
        }
    }

    #[test]
    fn l5_no_warning_for_a_finishing_turn_and_checkpoint_is_not_lost() {
        let mut l = lc(TaskBudgets::default(), Some((2, 3)), true);
        l.on_turn_end(CONT);
        assert!(l.on_turn_end(LAST).is_empty());
        // A continued task that goes on past the checkpoint still gets it.
        let a = l.on_turn_end(CONT);
        assert_eq!(
            a,
            vec![Action::Warn(ProgressWarning {
                turn: 3,
                next_checkpoint: 5,
                count: 1
            })]
        );
    }

    #[test]
    fn l5_foreground_is_promoted_on_first_warning_only() {
        let mut l = lc(TaskBudgets::default(), Some((1, 1)), false);
        assert!(!l.is_background());
        let a = l.on_turn_end(CONT);
        assert_eq!(a.len(), 2);
        assert_eq!(a[0], Action::PromoteToBackground);
        assert!(matches!(a[1], Action::Warn(_)));
        assert!(l.is_background());
        let a = l.on_turn_end(CONT);
        assert_eq!(a.len(), 1);
        assert!(matches!(a[0], Action::Warn(_)));
    }

    #[test]
    fn l5_warnings_never_stop_or_restrict() {
        let mut l = lc(tool_budgets(None, None, &[]), Some((1, 1)), true);
        for _ in 0..50 {
            assert_eq!(l.on_tool_call("read"), ToolDecision::Allow);
            for a in l.on_turn_end(CONT) {
                assert!(matches!(a, Action::Warn(_)), "{a:?}");
            }
        }
        assert_eq!(l.on_finished(TEXT), Normal);
    }

    #[test]
    fn l5_warning_and_handoff_in_the_same_turn() {
        let mut l = lc(budgets(Some(2), 1), Some((2, 5)), true);
        l.on_turn_end(CONT);
        let a = l.on_turn_end(CONT);
        assert!(matches!(a[0], Action::Steer(_)));
        assert!(matches!(a[1], Action::Warn(_)));
        // The abort turn sends no warning.
        let mut l = lc(budgets(Some(1), 0), Some((1, 5)), true);
        assert_eq!(l.on_turn_end(CONT), vec![Action::Abort(TurnBudget)]);
    }

    #[test]
    fn l1_termination_priority_table() {
        let f = TerminationFacts::default;
        let cases = [
            (f(), Normal),
            (
                TerminationFacts {
                    has_final_text: true,
                    ..f()
                },
                Normal,
            ),
            (
                TerminationFacts {
                    tool_budget_reached: true,
                    ..f()
                },
                ToolBudget,
            ),
            (
                TerminationFacts {
                    tool_budget_reached: true,
                    has_final_text: true,
                    ..f()
                },
                Normal,
            ),
            (
                TerminationFacts {
                    failure: Some(ProviderError),
                    tool_budget_reached: true,
                    ..f()
                },
                ProviderError,
            ),
            (
                TerminationFacts {
                    failure: Some(StartupError),
                    ..f()
                },
                StartupError,
            ),
            (
                TerminationFacts {
                    budget_abort: Some(TurnBudget),
                    failure: Some(ProviderError),
                    tool_budget_reached: true,
                    ..f()
                },
                TurnBudget,
            ),
            (
                TerminationFacts {
                    budget_abort: Some(Timeout),
                    failure: Some(ProviderError),
                    ..f()
                },
                Timeout,
            ),
            (
                TerminationFacts {
                    explicit_stop: Some(ManualStop),
                    budget_abort: Some(TurnBudget),
                    failure: Some(ProviderError),
                    tool_budget_reached: true,
                    has_final_text: false,
                    ..f()
                },
                ManualStop,
            ),
            (
                TerminationFacts {
                    explicit_stop: Some(ParentShutdown),
                    budget_abort: Some(Timeout),
                    ..f()
                },
                ParentShutdown,
            ),
        ];
        for (facts, want) in cases {
            assert_eq!(resolve_termination(facts), want, "{facts:?}");
        }
    }

    #[test]
    fn l1_stop_after_budget_abort_wins() {
        let mut l = lc(budgets(Some(1), 0), None, true);
        assert_eq!(l.on_turn_end(CONT), vec![Action::Abort(TurnBudget)]);
        assert!(l.on_stop_requested().is_empty(), "abort already in flight");
        l.on_provider_error("aborted");
        assert_eq!(l.on_finished(NO_TEXT), ManualStop);
    }

    #[test]
    fn l1_first_explicit_stop_wins() {
        let mut l = lc(TaskBudgets::default(), None, true);
        assert_eq!(l.on_parent_shutdown(), vec![Action::Abort(ParentShutdown)]);
        assert!(l.on_stop_requested().is_empty());
        assert_eq!(l.on_finished(TEXT), ParentShutdown);
    }

    #[test]
    fn l1_a_spend_budget_ranks_after_the_turn_budget_and_before_a_provider_error() {
        use TerminationKind::*;
        let base = TerminationFacts {
            spend_budget: Some(CostBudget),
            failure: Some(ProviderError),
            ..TerminationFacts::default()
        };
        assert_eq!(resolve_termination(base), CostBudget);
        assert_eq!(
            resolve_termination(TerminationFacts {
                budget_abort: Some(TurnBudget),
                ..base
            }),
            TurnBudget
        );
        assert_eq!(
            resolve_termination(TerminationFacts {
                explicit_stop: Some(ManualStop),
                ..base
            }),
            ManualStop
        );
        let mut lc = Lifecycle::new(LifecycleConfig::default());
        lc.on_spend_budget(TokenBudget, "token budget exhausted");
        lc.on_provider_error("token budget exhausted");
        assert_eq!(lc.on_finished(FinalFacts::default()), TokenBudget);
        assert_eq!(TokenBudget.status(), cadre_protocol::TaskStatus::Partial);
    }

    #[test]
    fn l1_first_budget_abort_wins() {
        let mut l = lc(budgets(Some(1), 0), None, true);
        assert_eq!(l.on_timeout(), vec![Action::Abort(Timeout)]);
        assert!(l.on_turn_end(CONT).is_empty());
        assert_eq!(l.on_finished(NO_TEXT), Timeout);
    }

    #[test]
    fn l1_provider_and_startup_errors() {
        let mut l = lc(TaskBudgets::default(), None, true);
        l.on_turn_end(CONT);
        l.on_provider_error("503 overloaded");
        l.on_provider_error("second");
        assert_eq!(l.on_finished(TEXT), ProviderError);
        assert_eq!(l.error(), Some("503 overloaded"));

        let mut l = lc(TaskBudgets::default(), None, true);
        assert_eq!(l.on_startup_error("no credentials"), StartupError);
        assert_eq!(l.phase(), TaskPhase::Terminal);
        assert_eq!(l.error(), Some("no credentials"));
    }

    #[test]
    fn l1_terminal_ignores_later_inputs() {
        let mut l = lc(budgets(Some(1), 0), Some((1, 1)), true);
        assert_eq!(l.on_finished(TEXT), Normal);
        assert!(l.on_turn_end(CONT).is_empty());
        assert!(l.on_timeout().is_empty());
        assert!(l.on_stop_requested().is_empty());
        assert!(l.on_parent_shutdown().is_empty());
        l.on_provider_error("late");
        assert_eq!(l.on_finished(NO_TEXT), Normal);
        assert_eq!(l.termination(), Some(Normal));
        assert_eq!(l.error(), None);
    }

    #[test]
    fn o2_reopen_continues_counters() {
        let mut l = lc(budgets(Some(3), 1), None, true);
        l.on_turn_end(CONT);
        l.on_turn_end(LAST);
        assert_eq!(l.reopen(), Err(ReopenError::StillRunning));
        l.on_stop_requested();
        assert_eq!(l.on_finished(TEXT), ManualStop);
        l.reopen().unwrap();
        assert_eq!(l.termination(), None);
        assert_eq!(l.phase(), TaskPhase::Working);
        assert_eq!(l.turns(), 2);
        assert!(is_steer(&l.on_turn_end(CONT)), "turn 3 = maxTurns");
        assert_eq!(l.on_turn_end(CONT), vec![Action::Abort(TurnBudget)]);
        assert_eq!(l.on_finished(NO_TEXT), TurnBudget);

        let mut one = Lifecycle::new(LifecycleConfig {
            one_shot: true,
            ..LifecycleConfig::default()
        });
        one.on_finished(TEXT);
        assert_eq!(one.reopen(), Err(ReopenError::OneShot));
    }

    #[test]
    fn o2_resume_from_record_usage() {
        let usage = TaskUsage {
            turns: 45,
            tool_calls_requested: 12,
            tool_calls_blocked: 2,
            tool_calls_executed: 9,
            ..TaskUsage::default()
        };
        let config = LifecycleConfig {
            budgets: TaskBudgets {
                max_tool_calls: Some(11),
                soft_tool_calls: Some(8),
                ..TaskBudgets::default()
            },
            warnings: Some(WarningSchedule::default()),
            one_shot: false,
            background: true,
        };
        let mut l = Lifecycle::resume(config, &usage);
        assert_eq!(l.phase(), TaskPhase::Working);
        let mut u = TaskUsage::default();
        l.write_counters(&mut u);
        assert_eq!(u, usage);
        // 10 admitted so far: one more is allowed, then read is blocked.
        assert_eq!(l.on_tool_call("read"), ToolDecision::Allow);
        assert!(matches!(l.on_tool_call("read"), ToolDecision::Block(_)));
        // Checkpoint 40 is behind; the next is 65. Soft wrap-up already past: not repeated.
        for turn in 46..65 {
            assert!(l.on_turn_end(CONT).is_empty(), "turn {turn}");
        }
        assert_eq!(
            l.on_turn_end(CONT),
            vec![Action::Warn(ProgressWarning {
                turn: 65,
                next_checkpoint: 90,
                count: 2
            })]
        );
    }

    #[test]
    fn l5_following_checkpoint_table() {
        let cases = [
            (40, 25, 40, Some(65)),
            (40, 25, 64, Some(65)),
            (40, 25, 65, Some(90)),
            (5, 0, 5, None),
            (3, 1, 3, Some(4)),
            (u32::MAX - 1, 5, u32::MAX - 1, None),
        ];
        for (c, i, t, want) in cases {
            assert_eq!(following_checkpoint(c, i, t), want, "{c} {i} {t}");
        }
        // A resumed task far past an overflowing schedule stops warning instead of looping.
        let usage = TaskUsage {
            turns: u32::MAX,
            ..TaskUsage::default()
        };
        let l = Lifecycle::resume(
            LifecycleConfig {
                warnings: Some(WarningSchedule {
                    warning_turns: u32::MAX - 3,
                    warning_interval_turns: 2,
                }),
                ..LifecycleConfig::default()
            },
            &usage,
        );
        assert_eq!(l.next_checkpoint, None);

        // (W, I, turns) → (warnings already sent, next checkpoint).
        for (w, i, turns, sent, next) in [
            (40, 25, 0, 0, Some(40)),
            (40, 25, 39, 0, Some(40)),
            (40, 25, 40, 1, Some(65)),
            (40, 25, 64, 1, Some(65)),
            (40, 25, 65, 2, Some(90)),
            (5, 0, 3, 0, Some(5)),
            (5, 0, 9, 1, None),
            (1, 1, u32::MAX - 1, u32::MAX - 1, Some(u32::MAX)),
        ] {
            let l = Lifecycle::resume(
                LifecycleConfig {
                    warnings: Some(WarningSchedule {
                        warning_turns: w,
                        warning_interval_turns: i,
                    }),
                    ..LifecycleConfig::default()
                },
                &TaskUsage {
                    turns,
                    ..TaskUsage::default()
                },
            );
            assert_eq!(
                (l.warnings_sent, l.next_checkpoint),
                (sent, next),
                "{w} {i} {turns}"
            );
        }
    }

    #[test]
    fn l5_stage_note_instruction_names_the_cadence() {
        assert!(STAGE_NOTE_INSTRUCTION.contains("8-12 tool-using turns"));
        assert!(STAGE_NOTE_INSTRUCTION.contains("one- or two-sentence stage note"));
    }
}
