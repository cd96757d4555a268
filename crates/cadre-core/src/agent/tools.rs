//! Running the tool calls of one assistant message.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use cadre_protocol::{AgentEvent, ToolCall, ToolResultMessage, now_millis};
use cadre_tools::args::Args;
use cadre_tools::{Tool, ToolContext, ToolOutput, ToolRegistry};
use futures_util::StreamExt;
use futures_util::stream::FuturesUnordered;
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::ToolGate;
use super::emit::Emitter;

/// How long tools get to wind down on their own after an abort (kill their processes, return
/// partial output) before their tasks are dropped.
const ABORT_GRACE: Duration = Duration::from_millis(500);

/// Result text of a call stopped by an abort (Pi's wording).
pub(crate) const OPERATION_ABORTED: &str = "Operation aborted";

/// Where the tools of one agent run.
pub(crate) struct ToolEnv<'a> {
    pub registry: &'a ToolRegistry,
    pub gate: Option<&'a dyn ToolGate>,
    pub cwd: &'a Path,
    pub artifacts_dir: &'a Path,
    pub emitter: &'a Emitter,
}

/// Indices of earlier calls that call `i` must wait for (see the module doc of `agent`).
/// `plan[i]` is `None` for read-only calls and `Some(target)` for mutating ones.
pub(crate) fn dependencies(plan: &[Option<Option<PathBuf>>]) -> Vec<Vec<usize>> {
    plan.iter()
        .enumerate()
        .map(|(i, mine)| {
            let Some(my_target) = mine else {
                return Vec::new();
            };
            plan[..i]
                .iter()
                .enumerate()
                .filter_map(|(j, theirs)| {
                    let their_target = theirs.as_ref()?;
                    let conflict = match (my_target, their_target) {
                        (Some(a), Some(b)) => a == b,
                        _ => true,
                    };
                    conflict.then_some(j)
                })
                .collect()
        })
        .collect()
}

/// `call` with its arguments normalised to the object the tools read (see
/// [`cadre_tools::args::Args::normalize`]), or the error result of arguments that are none.
fn normalized(call: &ToolCall) -> Result<ToolCall, String> {
    match Args::normalize(call.arguments.clone()) {
        Ok(arguments) => Ok(ToolCall {
            arguments,
            ..call.clone()
        }),
        Err(e) => Err(format!("Invalid arguments for {}: {e}", call.name)),
    }
}

/// A result's `details` as Pi has them: what the tool gave (none for most successes), and `{}`
/// for a failure without any (Pi's error result).
fn details(output: &ToolOutput) -> Option<Value> {
    match &output.details {
        Some(details) => Some(details.clone()),
        None if output.is_error => Some(json!({})),
        None => None,
    }
}

/// Pi's `tool_execution_end.result`: `{content, details?}`.
fn result_value(output: &ToolOutput) -> Value {
    let mut result = json!({ "content": output.content });
    if let Some(details) = details(output) {
        result["details"] = details;
    }
    result
}

fn emit_end(emitter: &Emitter, call: &ToolCall, output: &ToolOutput) {
    emitter.emit_boundary_with(|| AgentEvent::ToolExecutionEnd {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        result: result_value(output),
        is_error: output.is_error,
    });
}

fn emit_start(emitter: &Emitter, call: &ToolCall) {
    emitter.emit_with(|| AgentEvent::ToolExecutionStart {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        args: call.arguments.clone(),
    });
}

fn to_message(call: &ToolCall, output: ToolOutput) -> ToolResultMessage {
    ToolResultMessage {
        tool_call_id: call.id.clone(),
        tool_name: call.name.clone(),
        details: details(&output),
        content: output.content,
        is_error: output.is_error,
        timestamp: now_millis(),
    }
}

/// Answer every call with an error without running it (e.g. arguments cut off by the output
/// token limit). Emits start and end for each, in order.
pub(crate) fn refuse_all(
    calls: &[ToolCall],
    emitter: &Emitter,
    reason: impl Fn(&ToolCall) -> String,
) -> Vec<ToolResultMessage> {
    calls
        .iter()
        .map(|call| {
            emit_start(emitter, call);
            let output = ToolOutput::error(reason(call));
            emit_end(emitter, call, &output);
            to_message(call, output)
        })
        .collect()
}

/// Run `calls` and return one result per call, in call order. Aborting `cancel` stops the
/// batch promptly: calls still waiting never start, running ones get [`ABORT_GRACE`] to
/// finish and are then dropped; each of them is answered with "Operation aborted".
pub(crate) async fn execute_tool_calls(
    calls: &[ToolCall],
    env: &ToolEnv<'_>,
    cancel: &CancellationToken,
) -> Vec<ToolResultMessage> {
    // Each call with the arguments its tool will run with, or the refusal of arguments no tool
    // can read. The gate checks these very values and the jobs below run them: nothing reads
    // a call's raw arguments after this point, so no check can see other arguments than the
    // tool.
    let (prepared, refusals): (Vec<ToolCall>, Vec<Option<String>>) = calls
        .iter()
        .map(|raw| match normalized(raw) {
            Ok(call) => {
                let refused = env.gate.and_then(|g| g.check(&call));
                (call, refused)
            }
            Err(refusal) => {
                if let Some(g) = env.gate {
                    g.on_unreadable(raw);
                }
                (raw.clone(), Some(refusal))
            }
        })
        .unzip();
    let calls = prepared.as_slice();
    let tools: Vec<Option<Arc<dyn Tool>>> = calls
        .iter()
        .zip(&refusals)
        .map(|(c, refused)| match refused {
            Some(_) => None,
            None => env.registry.get(&c.name).cloned(),
        })
        .collect();
    let plan: Vec<Option<Option<PathBuf>>> = calls
        .iter()
        .zip(&tools)
        .map(|(call, tool)| {
            let tool = tool.as_ref()?;
            tool.is_mutating()
                .then(|| tool.mutation_target(&call.arguments, env.cwd))
        })
        .collect();
    let deps = dependencies(&plan);
    // A cancelled token doubles as a one-shot "finished" latch for each call.
    let done: Vec<CancellationToken> = calls.iter().map(|_| CancellationToken::new()).collect();

    let mut outputs: Vec<Option<ToolOutput>> = vec![None; calls.len()];
    let mut started: Vec<Arc<AtomicBool>> = Vec::with_capacity(calls.len());
    let mut aborts = Vec::new();
    let running = FuturesUnordered::new();
    for (i, call) in calls.iter().enumerate() {
        let flag = Arc::new(AtomicBool::new(false));
        started.push(flag.clone());
        let Some(tool) = tools[i].clone() else {
            emit_start(env.emitter, call);
            let output = ToolOutput::error(
                refusals[i]
                    .clone()
                    .unwrap_or_else(|| format!("Tool {} not found", call.name)),
            );
            emit_end(env.emitter, call, &output);
            outputs[i] = Some(output);
            done[i].cancel();
            continue;
        };
        let job = ToolJob {
            tool,
            call: call.clone(),
            waits_for: deps[i].iter().map(|&j| done[j].clone()).collect(),
            finished: done[i].clone(),
            started: flag,
            cancel: cancel.clone(),
            ctx_cwd: env.cwd.to_path_buf(),
            artifacts_dir: env.artifacts_dir.to_path_buf(),
            emitter: env.emitter.clone(),
        };
        // Boxed so tokio moves a pointer, not the whole future, at spawn and completion.
        let handle = tokio::spawn(Box::pin(job.run()));
        aborts.push(handle.abort_handle());
        running.push(async move { (i, handle.await) });
    }

    let mut running = running;
    let mut grace: Option<tokio::time::Instant> = None;
    let mut dropped = false;
    loop {
        let deadline = grace.unwrap_or_else(tokio::time::Instant::now);
        tokio::select! {
            biased;
            next = running.next() => {
                let Some((i, joined)) = next else { break };
                let output = match joined {
                    Ok(output) => output,
                    Err(e) => {
                        // Dropped after the grace period, or the tool panicked: the call
                        // still gets an answer, and its start/end events.
                        let call = &calls[i];
                        if !started[i].swap(true, Ordering::SeqCst) {
                            emit_start(env.emitter, call);
                        }
                        let output = if e.is_cancelled() {
                            ToolOutput::error(OPERATION_ABORTED)
                        } else {
                            ToolOutput::error(format!("Tool {} failed unexpectedly", call.name))
                        };
                        emit_end(env.emitter, call, &output);
                        output
                    }
                };
                outputs[i] = Some(output);
            }
            _ = cancel.cancelled(), if grace.is_none() => {
                grace = Some(tokio::time::Instant::now() + ABORT_GRACE);
            }
            _ = tokio::time::sleep_until(deadline), if grace.is_some() && !dropped => {
                for a in &aborts {
                    a.abort();
                }
                dropped = true;
            }
        }
    }

    calls
        .iter()
        .zip(outputs)
        .map(|(call, output)| {
            to_message(
                call,
                output.unwrap_or_else(|| ToolOutput::error(OPERATION_ABORTED)),
            )
        })
        .collect()
}

/// One call scheduled on its own task.
struct ToolJob {
    tool: Arc<dyn Tool>,
    call: ToolCall,
    waits_for: Vec<CancellationToken>,
    finished: CancellationToken,
    started: Arc<AtomicBool>,
    cancel: CancellationToken,
    ctx_cwd: PathBuf,
    artifacts_dir: PathBuf,
    emitter: Emitter,
}

impl ToolJob {
    async fn run(self) -> ToolOutput {
        // Whatever way this task ends (even dropped), calls waiting on it may go on.
        let _finished = self.finished.clone().drop_guard();
        for dep in &self.waits_for {
            tokio::select! {
                _ = dep.cancelled() => {}
                _ = self.cancel.cancelled() => break,
            }
        }
        self.started.store(true, Ordering::SeqCst);
        emit_start(&self.emitter, &self.call);
        let mut output = if self.cancel.is_cancelled() {
            ToolOutput::error(OPERATION_ABORTED)
        } else {
            self.execute().await
        };
        // A file or command output may hold a provider key: the model, the events and the
        // session never get it (S5).
        cadre_protocol::redact::redact_tool_output(&mut output.content, output.details.as_mut());
        emit_end(&self.emitter, &self.call, &output);
        output
    }

    async fn execute(&self) -> ToolOutput {
        let (updates, mut update_rx) = if self.emitter.updates_enabled() {
            let (tx, rx) = mpsc::unbounded_channel();
            (Some(tx), Some(rx))
        } else {
            (None, None)
        };
        let ctx = ToolContext {
            cwd: self.ctx_cwd.clone(),
            cancel: self.cancel.clone(),
            updates,
            artifacts_dir: self.artifacts_dir.clone(),
        };
        let execution = self.tool.execute(self.call.arguments.clone(), ctx);
        let Some(rx) = update_rx.as_mut() else {
            return execution.await;
        };
        tokio::pin!(execution);
        let output = loop {
            tokio::select! {
                output = &mut execution => break output,
                Some(partial) = rx.recv() => self.emit_update(partial),
            }
        };
        while let Ok(partial) = rx.try_recv() {
            self.emit_update(partial);
        }
        output
    }

    fn emit_update(&self, partial: Value) {
        self.emitter.emit(AgentEvent::ToolExecutionUpdate {
            tool_call_id: self.call.id.clone(),
            tool_name: self.call.name.clone(),
            args: self.call.arguments.clone(),
            partial_result: partial,
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn p(s: &str) -> Option<Option<PathBuf>> {
        Some(Some(PathBuf::from(s)))
    }

    #[test]
    fn reads_never_wait_and_writes_serialise_per_target() {
        let read = None;
        let bash = Some(None);
        let plan = vec![
            read.clone(),
            p("a"),
            p("b"),
            p("a"),
            read.clone(),
            bash.clone(),
            p("b"),
            bash,
        ];
        let deps = dependencies(&plan);
        assert_eq!(deps[0], Vec::<usize>::new());
        assert_eq!(deps[1], Vec::<usize>::new());
        assert_eq!(deps[2], Vec::<usize>::new());
        assert_eq!(deps[3], vec![1]);
        assert_eq!(deps[4], Vec::<usize>::new());
        // bash waits for every earlier mutation...
        assert_eq!(deps[5], vec![1, 2, 3]);
        // ...and every later mutation waits for bash.
        assert_eq!(deps[6], vec![2, 5]);
        assert_eq!(deps[7], vec![1, 2, 3, 5, 6]);
        assert!(dependencies(&[]).is_empty());
    }
}
