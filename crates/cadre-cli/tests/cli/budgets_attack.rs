//! Attacks on the token and cost budgets through the binary: ways around a cost cap a client
//! could try, each held shut.

use std::io::{BufRead, BufReader, Write};
use std::process::{ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cadre_testkit::{Match, Reply, Rule};
use serde_json::{Value, json};

use crate::harness::Fixture;

/// `fake/m1` at $3 / $15 per million; `fakeoai/m1` has no price.
fn write_models(f: &Fixture) {
    let mut models = f.models_json();
    models["providers"]["fake"]["models"][0]["cost"] =
        json!({"input": 3.0, "output": 15.0, "cacheRead": 0.3, "cacheWrite": 3.75});
    f.write_models(&models);
}

/// An RPC session: lines in, JSON lines out.
struct Rpc {
    child: std::process::Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Rpc {
    fn spawn(f: &Fixture, args: &[&str]) -> Rpc {
        let mut all = vec!["--mode", "rpc"];
        all.extend_from_slice(args);
        let mut child = f
            .command(&all)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Rpc {
            child,
            stdin,
            lines,
        }
    }

    fn send(&mut self, v: Value) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "{v}").unwrap();
        stdin.flush().unwrap();
    }

    /// The first line satisfying `pred` within 30 s.
    fn until(&self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self
                .lines
                .recv_timeout(left)
                .unwrap_or_else(|_| panic!("no {what} within 30 s"));
            if let Ok(v) = serde_json::from_str::<Value>(&line)
                && pred(&v)
            {
                return v;
            }
        }
    }

    fn response(&self, id: &str) -> Value {
        self.until(&format!("response {id}"), |v| {
            v["type"] == "response" && v["id"] == id
        })
    }

    fn close(mut self) {
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

/// Under a cost cap, RPC `set_model` (and the interactive `/model`, which takes the same path)
/// refuses a model without a price, as start-up does: the root cannot switch to requests the cap
/// does not count.
#[test]
fn rpc_set_model_to_an_unpriced_model_is_refused_under_a_cost_cap() {
    let f = Fixture::new();
    write_models(&f);
    f.server.script(
        Rule::new(Match::any_text("")).reply(Reply::text("free words").usage(100_000, 100_000)),
    );
    let mut rpc = Rpc::spawn(&f, &["--model", "fake/m1", "--max-cost-usd", "0.01"]);
    rpc.send(json!({"id": "m", "type": "set_model", "provider": "fakeoai", "modelId": "m1"}));
    let switched = rpc.response("m");
    if switched["success"] == true {
        rpc.send(json!({"id": "p", "type": "prompt", "message": "hello"}));
        rpc.until("agent_end", |v| v["type"] == "agent_end");
        rpc.send(json!({"id": "s", "type": "get_state"}));
        let state = rpc.response("s");
        rpc.close();
        eprintln!(
            "budget after a 200,000-token turn: {:#}",
            state["data"]["budget"]
        );
        panic!(
            "set_model to an unpriced model was accepted under a $0.01 cap; the session then \
             spent {} tokens at {} USD",
            state["data"]["budget"]["spent"]["tokens"], state["data"]["budget"]["spent"]["costUsd"]
        );
    }
    rpc.close();
    let e = switched["error"].as_str().unwrap_or_default();
    assert!(e.contains("no price"), "{switched:#}");
}
