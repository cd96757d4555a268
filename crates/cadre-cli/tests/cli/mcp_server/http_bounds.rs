//! `cadre mcp --http` against local users who open connections and send nothing: idle
//! connections are closed after the header deadline, no more than 64 are held at once, a
//! process out of descriptors waits instead of spinning on `accept`, and through all of it a
//! request with the token is served. Raw TCP, no SDK.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::harness::{Fixture, HANG_GUARD, have};

/// The connections the server holds at once (`mcp::http_accept::MAX_CONNECTIONS`).
const MAX_CONNECTIONS: usize = 64;

/// More stderr than a server that reports accept failures once a second writes in a test; a
/// server that spins on a failing accept writes it in milliseconds.
const FLOOD: u64 = 64 * 1024;

/// `prefix… cadre mcp --http 127.0.0.1:PORT …` on a free port. Its stderr goes to a file,
/// watched while the test runs (a pipe's reader would have to hold a flood). Killed when
/// dropped, so a failing test leaves no server behind.
struct Server {
    child: Child,
    port: u16,
    token: String,
    stderr: PathBuf,
}

impl Server {
    fn start(f: &Fixture, prefix: &[&str], env: &[(&str, &str)]) -> Server {
        let port = super::free_port();
        let addr = format!("127.0.0.1:{port}");
        let bin = env!("CARGO_BIN_EXE_cadre");
        let mut cmd = match prefix.split_first() {
            None => Command::new(bin),
            Some((program, rest)) => {
                let mut c = Command::new(program);
                c.args(rest).arg(bin);
                c
            }
        };
        cmd.args(["mcp", "--http", &addr, "--model", "fake/m1"])
            .current_dir(&f.project)
            .env_clear()
            .env("HOME", &f.user_home)
            .env("CADRE_HOME", &f.home)
            .env("CADRE_RETRY_BASE_MS", "10");
        if let Some(path) = std::env::var_os("PATH") {
            cmd.env("PATH", path);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let stderr = f.home.join(format!("server-{port}.stderr"));
        let child = cmd
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&stderr).unwrap())
            .spawn()
            .unwrap();
        let mut server = Server {
            child,
            port,
            token: String::new(),
            stderr,
        };
        // The token file is written aside and renamed: whole or absent.
        let token_file = f.home.join("mcp-http").join(format!("{port}.token"));
        crate::harness::wait_until("the token file", || token_file.exists());
        server.token = std::fs::read_to_string(&token_file)
            .unwrap()
            .trim()
            .to_string();
        server
    }

    fn assert_not_flooded(&self) {
        let len = std::fs::metadata(&self.stderr).map_or(0, |m| m.len());
        assert!(len < FLOOD, "stderr is flooded: {len} bytes");
    }

    /// SIGTERM, and the exit code and stderr once it has exited (bounded by the hang guard).
    fn stop(&mut self) -> (Option<i32>, String) {
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let deadline = Instant::now() + HANG_GUARD;
        let code = loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                break status.code();
            }
            assert!(Instant::now() < deadline, "the server did not stop");
            std::thread::sleep(Duration::from_millis(10));
        };
        let text = std::fs::read_to_string(&self.stderr).unwrap();
        assert!(!text.contains("panicked"), "{text}");
        (code, text)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Up to `n` connections that send nothing (a connection the kernel cannot queue is left
/// out), more than the server holds.
fn idle_connections(port: u16, n: usize) -> Vec<TcpStream> {
    let conns: Vec<TcpStream> = (0..n)
        .filter_map(|_| {
            TcpStream::connect_timeout(&([127, 0, 0, 1], port).into(), Duration::from_secs(5)).ok()
        })
        .collect();
    assert!(conns.len() > MAX_CONNECTIONS, "{} connected", conns.len());
    conns
}

/// What reading one byte from `conn` within `wait` shows.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    /// The server closed it (end of file or a reset).
    Closed,
    /// Nothing yet: still open.
    Open,
    /// The server sent something.
    Data,
}

fn peek(conn: &mut TcpStream, wait: Duration) -> Seen {
    conn.set_read_timeout(Some(wait)).unwrap();
    let mut byte = [0u8; 1];
    match conn.read(&mut byte) {
        Ok(0) => Seen::Closed,
        Ok(_) => Seen::Data,
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => Seen::Open,
        Err(_) => Seen::Closed,
    }
}

/// The status line of an MCP `initialize` with the token, on a new connection; `None` when the
/// connection is closed before an answer.
fn initialize(port: u16, token: &str) -> Option<String> {
    let mut conn = TcpStream::connect(("127.0.0.1", port)).ok()?;
    conn.set_read_timeout(Some(HANG_GUARD)).unwrap();
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "raw", "version": "0"}}})
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    conn.write_all(request.as_bytes()).ok()?;
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n") {
        match conn.read(&mut byte) {
            Ok(1) => head.push(byte[0]),
            _ => return None,
        }
    }
    Some(String::from_utf8_lossy(&head).trim_end().to_string())
}

/// Sends `initialize` until it is answered (a closed connection is tried again), while the
/// server's stderr stays small; the status.
fn initialize_until_answered(server: &Server) -> String {
    let deadline = Instant::now() + HANG_GUARD;
    loop {
        server.assert_not_flooded();
        if let Some(status) = initialize(server.port, &server.token) {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "a request with the token was never answered"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until every connection is closed by the server, whatever it may have sent first;
/// bounded by the hang guard.
fn assert_all_closed(conns: &mut [TcpStream]) {
    let deadline = Instant::now() + HANG_GUARD;
    for (i, conn) in conns.iter_mut().enumerate() {
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match peek(conn, left.max(Duration::from_millis(1))) {
                Seen::Closed => break,
                Seen::Data => continue,
                Seen::Open => panic!("idle connection {i} was not closed"),
            }
        }
    }
}

#[test]
fn idle_connections_are_closed_and_a_request_with_the_token_is_served() {
    let f = Fixture::new();
    let mut server = Server::start(&f, &[], &[("CADRE_MCP_HTTP_HEADER_TIMEOUT_MS", "1000")]);
    // More than the server holds: the ones past the cap are closed at once, the rest at the
    // header deadline, and a client with the token gets in once slots are free.
    let mut idle = idle_connections(server.port, 2 * MAX_CONNECTIONS);
    let status = initialize_until_answered(&server);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_all_closed(&mut idle);
    // A connection that sent part of its headers is closed at the deadline too.
    let mut partial = TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    partial
        .write_all(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        .unwrap();
    assert_all_closed(std::slice::from_mut(&mut partial));
    let status = initialize_until_answered(&server);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(143), "{stderr}");
}

#[test]
fn connections_past_the_cap_are_closed_at_once_and_a_freed_slot_serves_again() {
    let f = Fixture::new();
    // A deadline far beyond the test: whatever is closed here was closed by the cap.
    let mut server = Server::start(&f, &[], &[("CADRE_MCP_HTTP_HEADER_TIMEOUT_MS", "600000")]);
    let extra = 16;
    let mut idle = idle_connections(server.port, MAX_CONNECTIONS + extra);
    assert_eq!(idle.len(), MAX_CONNECTIONS + extra);
    // Poll until the extra ones are seen closed.
    let deadline = Instant::now() + HANG_GUARD;
    let mut closed = vec![false; idle.len()];
    while closed.iter().filter(|c| **c).count() < extra {
        assert!(
            Instant::now() < deadline,
            "connections past the cap were not closed: {} of {extra}",
            closed.iter().filter(|c| **c).count()
        );
        for (i, conn) in idle.iter_mut().enumerate() {
            if !closed[i] && peek(conn, Duration::from_millis(5)) == Seen::Closed {
                closed[i] = true;
            }
        }
    }
    // Exactly those: the held ones stay open.
    for (i, conn) in idle.iter_mut().enumerate() {
        if !closed[i] {
            assert_eq!(peek(conn, Duration::from_millis(20)), Seen::Open, "{i}");
        }
    }
    assert_eq!(closed.iter().filter(|c| **c).count(), extra);
    // All slots are taken: a new connection is closed unanswered.
    assert_eq!(initialize(server.port, &server.token), None);
    // One held connection goes away; its slot serves the next client.
    let held = closed.iter().position(|c| !*c).unwrap();
    drop(idle.remove(held));
    let status = initialize_until_answered(&server);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    drop(idle);
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(143), "{stderr}");
    // The refusals are reported, not one line each.
    let refusals = stderr.matches("closed a new connection").count();
    assert!(
        (1..=extra + 1).contains(&refusals),
        "{refusals} refusal lines: {stderr}"
    );
}

#[test]
fn out_of_descriptors_the_server_waits_instead_of_spinning() {
    if !have("prlimit") {
        println!("SKIPPED: prlimit is not installed");
        return;
    }
    let f = Fixture::new();
    // Few enough descriptors that the idle connections run the process out of them before
    // the cap is reached: accept fails with EMFILE until the header deadline frees some.
    let mut server = Server::start(
        &f,
        &["prlimit", "--nofile=48:48", "--"],
        &[("CADRE_MCP_HTTP_HEADER_TIMEOUT_MS", "1500")],
    );
    // Within the listen queue (128) and what the process holds before it runs out, so every
    // connection is made at once.
    let mut idle = idle_connections(server.port, 2 * MAX_CONNECTIONS);
    server.assert_not_flooded();
    let status = initialize_until_answered(&server);
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_all_closed(&mut idle);
    drop(idle);
    server.assert_not_flooded();
    let (code, stderr) = server.stop();
    assert_eq!(code, Some(143), "{stderr}");
    // Accept failed (else the test showed nothing) and was reported about once a second, not
    // once per retry.
    let failures = stderr.matches("accept failed").count();
    assert!(
        failures >= 1,
        "the descriptor limit was never reached: {stderr}"
    );
    assert!(failures < 100, "{failures} lines: {stderr}");
}
