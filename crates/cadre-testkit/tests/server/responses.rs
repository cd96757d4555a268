//! OpenAI Responses streaming over the wire: event framing, output items, reasoning items
//! carried between turns, stop states and the input checks.

use cadre_testkit::prelude::*;
use serde_json::{Value, json};

use crate::client::{RawResponse, post};
use crate::{RESPONSES_PATH, responses_body};

/// `(event name, data)` of every event, checking the framing every event shares: the name is
/// the data's `type`, and `sequence_number` counts from 0.
fn checked_events(r: &RawResponse) -> Vec<(String, Value)> {
    r.events()
        .into_iter()
        .enumerate()
        .map(|(n, (name, data))| {
            let name = name.unwrap_or_else(|| panic!("event {n} has no name: {data}"));
            let data: Value = serde_json::from_str(&data).unwrap();
            assert_eq!(data["type"], name.as_str(), "{data}");
            assert_eq!(data["sequence_number"], n, "{data}");
            (name, data)
        })
        .collect()
}

fn names(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(name, _)| name.as_str()).collect()
}

fn of_type<'a>(events: &'a [(String, Value)], kind: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|(name, _)| name == kind)
        .map(|(_, data)| data)
        .collect()
}

fn concat(events: &[&Value], key: &str) -> String {
    events
        .iter()
        .map(|e| e[key].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn text_reply_framing() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("Hello world")));
    let mut body = responses_body("hi");
    body["stream_options"] = json!({"include_obfuscation": false});
    let r = post(server.addr(), RESPONSES_PATH, &body).await;

    assert_eq!(r.status_line, "HTTP/1.1 200 OK");
    assert_eq!(
        r.header("content-type"),
        Some("text/event-stream; charset=utf-8")
    );
    assert_eq!(r.header("x-request-id"), Some("req_fake000001"));
    assert!(r.complete);
    assert!(
        !r.text().contains("[DONE]"),
        "Responses streams have no [DONE]"
    );
    let events = checked_events(&r);
    assert_eq!(
        names(&events),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed"
        ]
    );
    let text = r.text();
    let frames: Vec<&str> = text.split_inclusive("\n\n").collect();
    assert_eq!(
        frames[3],
        "event: response.content_part.added\ndata: {\"type\":\"response.content_part.added\",\"sequence_number\":3,\"item_id\":\"msg_fake000001_00\",\"output_index\":0,\"content_index\":0,\"part\":{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"\"}}\n\n"
    );
    assert_eq!(
        frames[7],
        "event: response.output_text.done\ndata: {\"type\":\"response.output_text.done\",\"sequence_number\":7,\"item_id\":\"msg_fake000001_00\",\"output_index\":0,\"content_index\":0,\"text\":\"Hello world\",\"logprobs\":[]}\n\n"
    );
    assert_eq!(
        frames[9],
        "event: response.output_item.done\ndata: {\"type\":\"response.output_item.done\",\"sequence_number\":9,\"output_index\":0,\"item\":{\"id\":\"msg_fake000001_00\",\"type\":\"message\",\"status\":\"completed\",\"content\":[{\"type\":\"output_text\",\"annotations\":[],\"logprobs\":[],\"text\":\"Hello world\"}],\"role\":\"assistant\"}}\n\n"
    );
    assert_eq!(r.streamed_text(), "Hello world");

    let created = &events[0].1["response"];
    assert_eq!(created["status"], "in_progress");
    assert_eq!(created["output"], json!([]));
    assert_eq!(created["usage"], Value::Null);
    let done = &events[10].1["response"];
    assert_eq!(done["id"], "resp_fake000001");
    assert_eq!(done["status"], "completed");
    assert_eq!(done["model"], "gpt-r-e2e");
    // Echoed from the request.
    assert_eq!(done["instructions"], "be brief");
    assert_eq!(done["store"], false);
    assert_eq!(done["output"][0], events[9].1["item"]);
}

/// The response object has the live API's keys in its order (a response recorded from the
/// service by the official Python SDK's tests).
#[tokio::test]
async fn response_object_matches_a_recorded_one() {
    let recorded: Value = serde_json::from_str(include_str!(
        "fixtures/openai-python/response_output_text.json"
    ))
    .unwrap();
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("It is foggy.")));
    let mut body = responses_body("weather?");
    body["stream"] = json!(false);
    let r = post(server.addr(), RESPONSES_PATH, &body).await;
    assert_eq!(r.status(), 200);
    assert_eq!(r.header("content-type"), Some("application/json"));
    let ours = r.json();
    let keys = |v: &Value| -> Vec<String> { v.as_object().unwrap().keys().cloned().collect() };
    assert_eq!(keys(&ours), keys(&recorded));
    assert_eq!(keys(&ours["output"][0]), keys(&recorded["output"][0]));
    assert_eq!(
        keys(&ours["output"][0]["content"][0]),
        keys(&recorded["output"][0]["content"][0])
    );
    assert_eq!(keys(&ours["usage"]), keys(&recorded["usage"]));
    assert_eq!(
        keys(&ours["usage"]["input_tokens_details"]),
        keys(&recorded["usage"]["input_tokens_details"])
    );
    assert_eq!(ours["object"], "response");
    assert_eq!(ours["status"], "completed");
    assert_eq!(ours["output"][0]["content"][0]["text"], "It is foggy.");
}

#[tokio::test]
async fn reasoning_tool_calls_and_usage() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always().reply(
            Reply::new()
                .thinking("I should read the file first.")
                .text("Reading.")
                .tool_call(
                    "call_1",
                    "read",
                    json!({"path": "src/main.rs", "limit": 20}),
                )
                .tool_call("call_2", "bash", json!({"command": "ls -la"}))
                .usage(100, 40)
                .cache(60, 0),
        ),
    );
    let r = post(server.addr(), RESPONSES_PATH, &responses_body("go")).await;
    assert_eq!(r.status(), 200);
    let events = checked_events(&r);

    let added = of_type(&events, "response.output_item.added");
    let done = of_type(&events, "response.output_item.done");
    let kinds: Vec<&str> = done
        .iter()
        .map(|e| e["item"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        ["reasoning", "message", "function_call", "function_call"]
    );
    for (n, (a, d)) in added.iter().zip(&done).enumerate() {
        assert_eq!(a["output_index"], n);
        assert_eq!(d["output_index"], n);
        assert_eq!(a["item"]["id"], d["item"]["id"]);
    }

    // Reasoning: summary deltas, then the item with its encrypted content.
    let summary = of_type(&events, "response.reasoning_summary_text.delta");
    assert!(summary.len() >= 2);
    assert_eq!(concat(&summary, "delta"), "I should read the file first.");
    assert!(summary.iter().all(|e| e["obfuscation"].is_string()));
    let reasoning = &done[0]["item"];
    assert_eq!(
        reasoning["summary"],
        json!([{"type": "summary_text", "text": "I should read the file first."}])
    );
    let sealed = reasoning["encrypted_content"].as_str().unwrap();
    assert!(sealed.starts_with("gAAAAA"));
    assert_eq!(added[0]["item"]["encrypted_content"], sealed);
    assert_eq!(added[0]["item"]["summary"], json!([]));

    // Function calls: arguments in at least two pieces, then `.done` with all of them.
    for (index, (call_id, name, arguments)) in [
        (
            "call_1",
            "read",
            json!({"path": "src/main.rs", "limit": 20}),
        ),
        ("call_2", "bash", json!({"command": "ls -la"})),
    ]
    .into_iter()
    .enumerate()
    {
        let output_index = index + 2;
        let item = &added[output_index]["item"];
        assert_eq!(item["call_id"], call_id);
        assert_eq!(item["name"], name);
        assert_eq!(item["arguments"], "");
        assert_eq!(item["status"], "in_progress");
        let pieces: Vec<&Value> = of_type(&events, "response.function_call_arguments.delta")
            .into_iter()
            .filter(|e| e["output_index"] == output_index)
            .collect();
        assert!(pieces.len() >= 2, "{pieces:?}");
        let streamed = concat(&pieces, "delta");
        assert_eq!(serde_json::from_str::<Value>(&streamed).unwrap(), arguments);
        let args_done: Vec<&Value> = of_type(&events, "response.function_call_arguments.done")
            .into_iter()
            .filter(|e| e["output_index"] == output_index)
            .collect();
        assert_eq!(args_done[0]["arguments"], streamed.as_str());
        assert_eq!(done[output_index]["item"]["arguments"], streamed.as_str());
        assert_eq!(done[output_index]["item"]["status"], "completed");
    }

    let (last, completed) = events.last().unwrap();
    assert_eq!(last, "response.completed");
    let response = &completed["response"];
    assert_eq!(response["status"], "completed");
    let items: Vec<Value> = done.iter().map(|e| e["item"].clone()).collect();
    assert_eq!(response["output"], json!(items));
    assert_eq!(
        response["usage"],
        json!({"input_tokens": 160,
               "input_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 0},
               "output_tokens": 40, "output_tokens_details": {"reasoning_tokens": 7},
               "total_tokens": 200})
    );
}

#[tokio::test]
async fn encrypted_content_only_when_included() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::thinking("hmm").text("ok")));
    let mut body = responses_body("hi");
    body.as_object_mut().unwrap().remove("include");
    let r = post(server.addr(), RESPONSES_PATH, &body).await;
    let events = checked_events(&r);
    let item = &of_type(&events, "response.output_item.done")[0]["item"];
    assert_eq!(item["type"], "reasoning");
    assert!(item.get("encrypted_content").is_none(), "{item}");
}

/// The reasoning item of one turn goes back in the next turn's input; the server knows it
/// issued it, rejects it altered, and refuses a bare id when nothing is stored.
#[tokio::test]
async fn reasoning_items_come_back_on_the_next_turn() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::new(Match::assistant_turns(0)).reply(Reply::thinking("Plan: call read.").tool_call(
            "call_1",
            "read",
            json!({}),
        )),
    );
    server.script(Rule::new(Match::last_tool_result("A")).reply(Reply::text("a says A")));
    let first = post(server.addr(), RESPONSES_PATH, &responses_body("read a")).await;
    let events = checked_events(&first);
    let items: Vec<Value> = of_type(&events, "response.output_item.done")
        .iter()
        .map(|e| e["item"].clone())
        .collect();
    assert_eq!(items.len(), 2);

    let next = |items: Vec<Value>| {
        let mut body = responses_body("read a");
        let input = body["input"].as_array_mut().unwrap();
        input.extend(items);
        input.push(json!({"type": "function_call_output", "call_id": "call_1", "output": "A"}));
        body
    };
    let r = post(server.addr(), RESPONSES_PATH, &next(items.clone())).await;
    assert_eq!(r.status(), 200, "{}", r.text());
    assert_eq!(r.streamed_text(), "a says A");
    let sent = server.last_request().unwrap();
    assert_eq!(sent.api, WireApi::OpenAiResponses);
    let returned = sent.reasoning_items();
    assert_eq!(returned.len(), 1);
    assert_eq!(returned[0].id, items[0]["id"].as_str().unwrap());
    assert_eq!(returned[0].sealed_text.as_deref(), Some("Plan: call read."));
    // The raw body keeps the item exactly as it came back.
    assert_eq!(sent.body["input"][1], items[0]);

    let mut altered = items.clone();
    let content = altered[0]["encrypted_content"]
        .as_str()
        .unwrap()
        .to_string();
    altered[0]["encrypted_content"] = format!("{content}00").into();
    let r = post(server.addr(), RESPONSES_PATH, &next(altered)).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.json()["error"]["code"], "invalid_encrypted_content");

    let mut bare = items.clone();
    bare[0].as_object_mut().unwrap().remove("encrypted_content");
    let r = post(server.addr(), RESPONSES_PATH, &next(bare)).await;
    assert_eq!(r.status(), 400);
    let message = r.json()["error"]["message"].as_str().unwrap().to_string();
    assert!(message.contains("Items are not persisted when `store` is set to false"));

    // Rejected requests are recorded but use up no scripted reply.
    assert_eq!(server.requests().len(), 4);
    let r = post(server.addr(), RESPONSES_PATH, &responses_body("read a")).await;
    assert_eq!(checked_events(&r).len(), events.len());
}

#[tokio::test]
async fn unpaired_calls_and_outputs_are_rejected() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("unused")));
    let call =
        json!({"type": "function_call", "call_id": "call_9", "name": "read", "arguments": "{}"});
    let output = json!({"type": "function_call_output", "call_id": "call_9", "output": "x"});
    for (items, expected) in [
        (vec![call], "No tool output found for function call call_9."),
        (
            vec![output],
            "No tool call found for function call output with call_id call_9.",
        ),
    ] {
        let mut body = responses_body("hi");
        body["input"].as_array_mut().unwrap().extend(items);
        let r = post(server.addr(), RESPONSES_PATH, &body).await;
        assert_eq!(r.status(), 400);
        let v = r.json();
        assert_eq!(v["error"]["message"], expected);
        assert_eq!(v["error"]["type"], "invalid_request_error");
        assert_eq!(v["error"]["param"], "input");
    }
}

#[tokio::test]
async fn length_and_content_filter_stops_are_incomplete() {
    for (stop, reason) in [
        (StopKind::Length, "max_output_tokens"),
        (StopKind::ContentFilter, "content_filter"),
    ] {
        let server = FakeServer::start().await.unwrap();
        server.script(Rule::always().reply(Reply::text("cut off").stop(stop)));
        let r = post(server.addr(), RESPONSES_PATH, &responses_body("hi")).await;
        let events = checked_events(&r);
        let (name, last) = events.last().unwrap();
        assert_eq!(name, "response.incomplete");
        assert_eq!(last["response"]["status"], "incomplete");
        assert_eq!(
            last["response"]["incomplete_details"],
            json!({"reason": reason})
        );
        assert_eq!(last["response"]["output"][0]["status"], "incomplete");
        assert!(of_type(&events, "response.completed").is_empty());
    }
}

#[tokio::test]
async fn errors_use_the_openai_shape() {
    let server = FakeServer::start().await.unwrap();
    server.script(
        Rule::always()
            .reply(Reply::failing(Fault::status(500)))
            .reply(Reply::text("recovered")),
    );
    let r = post(server.addr(), RESPONSES_PATH, &responses_body("hi")).await;
    assert_eq!(r.status(), 500);
    assert_eq!(r.header("x-request-id"), Some("req_fake000001"));
    assert_eq!(r.json()["error"]["type"], "server_error");
    let r = post(server.addr(), RESPONSES_PATH, &responses_body("hi")).await;
    assert_eq!(r.streamed_text(), "recovered");

    let r = post(
        server.addr(),
        RESPONSES_PATH,
        &json!({"previous_response_id": "resp_x", "input": "hi"}),
    )
    .await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.json()["error"]["code"], "previous_response_not_found");
}

/// The items of the first turn's answer (reasoning, then a call), as the client received them.
async fn first_turn_items(server: &FakeServer) -> Vec<Value> {
    server.script(
        Rule::new(Match::assistant_turns(0)).reply(Reply::thinking("Plan: call read.").tool_call(
            "call_1",
            "read",
            json!({}),
        )),
    );
    server.script(Rule::always().reply(Reply::text("a says A")));
    let first = post(server.addr(), RESPONSES_PATH, &responses_body("read a")).await;
    of_type(&checked_events(&first), "response.output_item.done")
        .iter()
        .map(|e| e["item"].clone())
        .collect()
}

/// The error of a request the server refuses, after checking its status and shape.
async fn refusal(server: &FakeServer, body: &Value) -> Value {
    let r = post(server.addr(), RESPONSES_PATH, body).await;
    assert_eq!(r.status(), 400, "{}", r.text());
    let error = r.json()["error"].clone();
    assert_eq!(error["type"], "invalid_request_error");
    error
}

/// A call this server produced after a reasoning item comes back only with that item before it.
#[tokio::test]
async fn a_call_without_its_reasoning_is_refused() {
    let server = FakeServer::start().await.unwrap();
    let items = first_turn_items(&server).await;
    let (rs, fc) = (&items[0], &items[1]);
    assert_eq!(rs["type"], "reasoning");
    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "A"});
    let with = |items: Vec<Value>| {
        let mut body = responses_body("read a");
        body["input"].as_array_mut().unwrap().extend(items);
        body
    };

    let error = refusal(&server, &with(vec![fc.clone(), output.clone()])).await;
    assert_eq!(
        error["message"],
        format!(
            "Item '{}' of type 'function_call' was provided without its required 'reasoning' item: '{}'.",
            fc["id"].as_str().unwrap(),
            rs["id"].as_str().unwrap()
        )
    );
    assert_eq!(error["param"], "input");
    assert_eq!(error["code"], Value::Null);
    // Behind the call is not before it.
    let error = refusal(&server, &with(vec![fc.clone(), rs.clone(), output.clone()])).await;
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("without its required 'reasoning' item")
    );

    // Without its item id the call stands alone; with its reasoning it is what was produced.
    let mut bare = fc.clone();
    bare.as_object_mut().unwrap().remove("id");
    for items in [
        vec![bare, output.clone()],
        vec![rs.clone(), fc.clone(), output.clone()],
    ] {
        let r = post(server.addr(), RESPONSES_PATH, &with(items)).await;
        assert_eq!(r.status(), 200, "{}", r.text());
        assert_eq!(r.streamed_text(), "a says A");
    }
}

#[tokio::test]
async fn reasoning_without_its_following_item_is_refused() {
    let server = FakeServer::start().await.unwrap();
    let items = first_turn_items(&server).await;
    let mut body = responses_body("read a");
    let input = body["input"].as_array_mut().unwrap();
    input.push(items[0].clone());
    input.push(json!({"role": "user", "content": [{"type": "input_text", "text": "and b?"}]}));
    let error = refusal(&server, &body).await;
    assert_eq!(
        error["message"],
        format!(
            "Item '{}' of type 'reasoning' was provided without its required following item.",
            items[0]["id"].as_str().unwrap()
        )
    );
    assert_eq!(error["param"], "input");
}

#[tokio::test]
async fn duplicate_items_are_refused() {
    let server = FakeServer::start().await.unwrap();
    let items = first_turn_items(&server).await;
    let output = json!({"type": "function_call_output", "call_id": "call_1", "output": "A"});
    let mut body = responses_body("read a");
    let input = body["input"].as_array_mut().unwrap();
    input.extend(items.clone());
    input.push(output);
    input.extend(items.clone());
    let error = refusal(&server, &body).await;
    assert_eq!(
        error["message"],
        format!(
            "Duplicate item found with id {}. Remove duplicate items from your input and try again.",
            items[0]["id"].as_str().unwrap()
        )
    );
    assert_eq!(error["param"], "input");
}

/// A model named with `model_efforts` refuses any other effort, on both OpenAI wires, before a
/// rule is picked; other models and requests without an effort are unaffected.
#[tokio::test]
async fn a_model_refuses_efforts_it_does_not_take() {
    let server = FakeServer::start().await.unwrap();
    server.script(Rule::always().reply(Reply::text("fine")));
    server.model_efforts("gpt-5.5", &["none", "low", "medium", "high", "xhigh"]);
    let body = |model: &str, effort: Option<&str>| {
        let mut body = responses_body("hi");
        body["model"] = model.into();
        if let Some(effort) = effort {
            body["reasoning"] = json!({"effort": effort, "summary": "auto"});
        }
        body
    };

    let error = refusal(&server, &body("gpt-5.5", Some("minimal"))).await;
    assert_eq!(
        error,
        json!({
            "message": "Unsupported value: 'minimal' is not supported with the 'gpt-5.5' model. Supported values are: 'none', 'low', 'medium', 'high', and 'xhigh'.",
            "type": "invalid_request_error",
            "param": "reasoning.effort",
            "code": "unsupported_value",
        })
    );
    for ok in [
        body("gpt-5.5", Some("xhigh")),
        body("gpt-5.5", None),
        body("gpt-5", Some("minimal")),
    ] {
        let r = post(server.addr(), RESPONSES_PATH, &ok).await;
        assert_eq!(r.status(), 200, "{ok}: {}", r.text());
        assert_eq!(r.streamed_text(), "fine");
    }

    let chat = json!({"model": "gpt-5.5", "stream": true, "reasoning_effort": "minimal",
                      "messages": [{"role": "user", "content": "hi"}]});
    let r = post(server.addr(), crate::OPENAI_PATH, &chat).await;
    assert_eq!(r.status(), 400);
    assert_eq!(r.json()["error"]["param"], "reasoning_effort");
    assert_eq!(r.json()["error"]["code"], "unsupported_value");
}
