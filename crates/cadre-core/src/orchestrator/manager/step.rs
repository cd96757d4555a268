//! What a task's run does after each agent run ends: a pure decision over the run's facts,
//! tested on its own (like `lifecycle.rs`); `run::drive` gathers the facts and carries it out.
//!
//! And how a run failed, as a typed value kept to the end of the task: the termination and the
//! record's error are resolved from it once, in `end.rs`.

use cadre_llm::ErrorKind;
use cadre_protocol::Meter;

/// The facts about the agent run that just ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct RunFacts {
    /// An abort was asked for (stop, shutdown, turn budget, timeout).
    pub aborting: bool,
    /// The child gave an accepted structured answer (V8).
    pub structured_accepted: bool,
    /// The run ended without an error.
    pub clean: bool,
    /// Its final message has text.
    pub has_text: bool,
    /// The task has run a tool so far.
    pub ran_tools: bool,
    /// The child was already asked once to summarise (V2).
    pub nudged: bool,
    /// This was the task's first run, it failed on its very first model call having done
    /// nothing, and a fallback model is set (T7).
    pub fallback_due: bool,
}

/// The next thing the run does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Step {
    /// Rebuild the agent on the fallback model and run the task's input again (T7).
    FallBack,
    /// Ask the child once to summarise what it did (V2).
    Nudge,
    /// The work is done unless messages arrived meanwhile: close the inbox (or answer what
    /// came), then review (V5) or end.
    Settle,
    /// The task ends now.
    End,
}

pub(crate) fn next_step(f: RunFacts) -> Step {
    if f.fallback_due {
        return Step::FallBack;
    }
    // A structured answer was accepted: the run is over, whatever its last message says.
    if f.structured_accepted && !f.aborting {
        return Step::End;
    }
    if !f.clean || f.aborting {
        return Step::End;
    }
    if !f.has_text && f.ran_tools && !f.nudged {
        return Step::Nudge;
    }
    Step::Settle
}

/// How a task's run failed.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum RunError {
    /// The model request failed for good (after its retries), or the model's stream was cut.
    Provider(String),
    /// The task's token or cost budget (or an ancestor's) refused the next request.
    Budget { meter: Meter, message: String },
    /// The run was aborted (stop, shutdown, turn budget, timeout); the lifecycle knows why.
    Aborted(String),
    /// The run was stopped before it started (while waiting for its quota slot).
    NotStarted,
    /// The agent's runtime broke: its session file could not be written.
    Runtime(String),
    /// The task's run panicked (a bug); recorded as a failure.
    Panicked(String),
}

impl RunError {
    /// The error as the task record and the parent read it.
    pub(crate) fn message(&self) -> String {
        match self {
            RunError::Provider(m)
            | RunError::Aborted(m)
            | RunError::Runtime(m)
            | RunError::Budget { message: m, .. } => m.clone(),
            RunError::NotStarted => "stopped before it started".to_string(),
            RunError::Panicked(why) => format!("internal error: the task's run panicked ({why})"),
        }
    }

    /// Classify an agent run's failure: `failure` is its kind, `exhausted` the meter its
    /// budget node recorded as refusing a request.
    pub(crate) fn of_run(
        failure: Option<ErrorKind>,
        message: String,
        exhausted: Option<Meter>,
    ) -> RunError {
        match (failure, exhausted) {
            (Some(ErrorKind::Budget), Some(meter)) => RunError::Budget { meter, message },
            (Some(ErrorKind::Budget), None) => RunError::Budget {
                meter: Meter::Cost,
                message,
            },
            (Some(ErrorKind::Aborted), _) => RunError::Aborted(message),
            _ => RunError::Provider(message),
        }
    }

    /// The run failed on its own (not because an abort was asked for): the lifecycle records
    /// it as the task's failure.
    pub(crate) fn is_own_failure(&self) -> bool {
        !matches!(self, RunError::Aborted(_) | RunError::NotStarted)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn done() -> RunFacts {
        RunFacts {
            clean: true,
            has_text: true,
            ..RunFacts::default()
        }
    }

    #[test]
    fn a_clean_run_with_an_answer_settles() {
        assert_eq!(next_step(done()), Step::Settle);
    }

    #[test]
    fn a_failed_first_call_falls_back_before_anything_else() {
        let f = RunFacts {
            clean: false,
            fallback_due: true,
            ..RunFacts::default()
        };
        assert_eq!(next_step(f), Step::FallBack);
    }

    #[test]
    fn a_failed_or_aborted_run_ends() {
        for f in [
            RunFacts {
                clean: false,
                ..done()
            },
            RunFacts {
                aborting: true,
                ..done()
            },
        ] {
            assert_eq!(next_step(f), Step::End, "{f:?}");
        }
    }

    #[test]
    fn a_structured_answer_ends_unless_aborting() {
        let f = RunFacts {
            structured_accepted: true,
            clean: false,
            has_text: false,
            ..RunFacts::default()
        };
        assert_eq!(next_step(f), Step::End);
        // Aborted after answering: still the end, through the abort.
        assert_eq!(
            next_step(RunFacts {
                aborting: true,
                ..f
            }),
            Step::End
        );
    }

    #[test]
    fn a_silent_end_after_tools_is_nudged_once() {
        let silent = RunFacts {
            has_text: false,
            ran_tools: true,
            ..done()
        };
        assert_eq!(next_step(silent), Step::Nudge);
        assert_eq!(
            next_step(RunFacts {
                nudged: true,
                ..silent
            }),
            Step::Settle
        );
        // Without tools there is nothing to summarise.
        assert_eq!(
            next_step(RunFacts {
                ran_tools: false,
                ..silent
            }),
            Step::Settle
        );
    }

    #[test]
    fn failures_keep_their_kind() {
        let budget = RunError::of_run(
            Some(ErrorKind::Budget),
            "cost budget exhausted".into(),
            Some(Meter::Cost),
        );
        assert!(matches!(
            budget,
            RunError::Budget {
                meter: Meter::Cost,
                ..
            }
        ));
        assert!(budget.is_own_failure());
        let aborted = RunError::of_run(Some(ErrorKind::Aborted), "aborted".into(), None);
        assert!(!aborted.is_own_failure());
        assert_eq!(
            RunError::of_run(Some(ErrorKind::Retryable), "cut".into(), None),
            RunError::Provider("cut".into())
        );
        assert_eq!(RunError::NotStarted.message(), "stopped before it started");
    }
}
