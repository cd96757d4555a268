//! A tiny raw HTTP/1.1 client that keeps the exact response bytes for framing assertions.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Hang guard only; no test depends on timing.
pub const GUARD: Duration = Duration::from_secs(10);

#[derive(Debug)]
pub struct RawResponse {
    pub status_line: String,
    pub headers: Vec<(String, String)>,
    /// Body bytes as received (still chunk-encoded when chunked).
    pub raw_body: Vec<u8>,
    /// Decoded body.
    pub body: Vec<u8>,
    /// Whether the body ended properly (final chunk seen / full content-length read).
    pub complete: bool,
}

impl RawResponse {
    pub fn status(&self) -> u16 {
        self.status_line.split(' ').nth(1).unwrap().parse().unwrap()
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.body.clone()).unwrap()
    }

    /// The body is exactly `frames`, each sent as its own HTTP chunk, then the terminating
    /// chunk.
    pub fn assert_chunk_per_frame<S: AsRef<str>>(&self, frames: &[S]) {
        let frames: Vec<&str> = frames.iter().map(AsRef::as_ref).collect();
        assert_eq!(self.text(), frames.concat());
        let chunked: String = frames
            .iter()
            .map(|f| format!("{:x}\r\n{f}\r\n", f.len()))
            .chain(["0\r\n\r\n".to_string()])
            .collect();
        assert_eq!(String::from_utf8(self.raw_body.clone()).unwrap(), chunked);
    }

    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap()
    }

    /// SSE events as `(event name, data)`.
    pub fn events(&self) -> Vec<(Option<String>, String)> {
        parse_sse(&self.text())
    }

    /// Data of every event parsed as JSON (panics on a malformed frame).
    pub fn data_json(&self) -> Vec<Value> {
        self.events()
            .into_iter()
            .filter(|(_, d)| d != "[DONE]")
            .map(|(_, d)| serde_json::from_str(&d).unwrap())
            .collect()
    }

    /// The streamed text of any format (OpenAI `content`, Anthropic `text` deltas, Responses
    /// `response.output_text.delta`).
    pub fn streamed_text(&self) -> String {
        self.data_json()
            .iter()
            .filter_map(|v| {
                v["choices"][0]["delta"]["content"]
                    .as_str()
                    .or(v["delta"]["text"].as_str())
                    .or_else(|| {
                        (v["type"] == "response.output_text.delta")
                            .then(|| v["delta"].as_str())
                            .flatten()
                    })
                    .map(str::to_string)
            })
            .collect()
    }
}

pub fn parse_sse(text: &str) -> Vec<(Option<String>, String)> {
    text.split_terminator("\n\n")
        .map(|block| {
            let mut event = None;
            let mut data = Vec::new();
            for line in block.lines() {
                if let Some(name) = line.strip_prefix("event: ") {
                    event = Some(name.to_string());
                } else if let Some(d) = line.strip_prefix("data: ") {
                    data.push(d);
                } else {
                    panic!("unexpected SSE line {line:?}");
                }
            }
            (event, data.join("\n"))
        })
        .collect()
}

/// A request that asks the server to close the connection after answering (so a response can
/// be read to the end of the stream), unless `headers` name their own `connection`.
pub fn request_bytes(path: &str, body: &str, headers: &[(&str, &str)]) -> Vec<u8> {
    let mut out = format!(
        "POST {path} HTTP/1.1\r\nhost: localhost\r\ncontent-type: application/json\r\ncontent-length: {}\r\n",
        body.len()
    );
    if !headers
        .iter()
        .any(|(k, _)| k.eq_ignore_ascii_case("connection"))
    {
        out.push_str("connection: close\r\n");
    }
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    out.push_str(body);
    out.into_bytes()
}

/// Sends a request and reads until the server closes the connection.
pub async fn post(addr: SocketAddr, path: &str, body: &Value) -> RawResponse {
    post_with(addr, path, &body.to_string(), &[]).await
}

pub async fn post_with(
    addr: SocketAddr,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> RawResponse {
    tokio::time::timeout(GUARD, async {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(&request_bytes(path, body, headers))
            .await
            .unwrap();
        let mut raw = Vec::new();
        stream.read_to_end(&mut raw).await.unwrap();
        parse_response(&raw)
    })
    .await
    .expect("response within the hang guard")
}

/// An open connection read incrementally (for faults that keep the connection open).
pub struct Open {
    pub stream: TcpStream,
    pub raw: Vec<u8>,
}

impl Open {
    pub async fn send(addr: SocketAddr, path: &str, body: &Value) -> Open {
        let mut stream = TcpStream::connect(addr).await.unwrap();
        stream
            .write_all(&request_bytes(path, &body.to_string(), &[]))
            .await
            .unwrap();
        Open {
            stream,
            raw: Vec::new(),
        }
    }

    /// Reads until at least `n` SSE events have arrived.
    pub async fn read_events(&mut self, n: usize) -> RawResponse {
        tokio::time::timeout(GUARD, async {
            loop {
                let response = parse_response(&self.raw);
                if response.body.windows(2).filter(|w| w == b"\n\n").count() >= n {
                    return response;
                }
                let mut buf = [0u8; 4096];
                let read = self.stream.read(&mut buf).await.unwrap();
                assert!(read > 0, "connection closed early");
                self.raw.extend_from_slice(&buf[..read]);
            }
        })
        .await
        .expect("events within the hang guard")
    }

    /// Reads until the decoded body holds at least `n` bytes.
    pub async fn read_body(&mut self, n: usize) -> RawResponse {
        tokio::time::timeout(GUARD, async {
            loop {
                let response = parse_response(&self.raw);
                if response.body.len() >= n {
                    return response;
                }
                let mut buf = [0u8; 4096];
                let read = self.stream.read(&mut buf).await.unwrap();
                assert!(read > 0, "connection closed early");
                self.raw.extend_from_slice(&buf[..read]);
            }
        })
        .await
        .expect("bytes within the hang guard")
    }

    /// `None` if nothing arrives for a while (connection still open and silent), else the
    /// number of bytes read (0 = closed).
    pub async fn poll_quiet(&mut self, wait: Duration) -> Option<usize> {
        let mut buf = [0u8; 4096];
        match tokio::time::timeout(wait, self.stream.read(&mut buf)).await {
            Err(_) => None,
            Ok(read) => Some(read.unwrap_or(0)),
        }
    }
}

/// Splits head and body and decodes a chunked body as far as it goes.
pub fn parse_response(raw: &[u8]) -> RawResponse {
    let Some(head_end) = raw.windows(4).position(|w| w == b"\r\n\r\n") else {
        return RawResponse {
            status_line: String::new(),
            headers: Vec::new(),
            raw_body: Vec::new(),
            body: Vec::new(),
            complete: false,
        };
    };
    let head = std::str::from_utf8(&raw[..head_end]).unwrap();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap().to_string();
    let headers: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(": ").unwrap();
            (k.to_string(), v.to_string())
        })
        .collect();
    let raw_body = raw[head_end + 4..].to_vec();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v == "chunked");
    let (body, complete) = if chunked {
        dechunk(&raw_body)
    } else {
        let len: usize = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .map(|(_, v)| v.parse().unwrap())
            .unwrap_or(raw_body.len());
        (raw_body.clone(), raw_body.len() == len)
    };
    RawResponse {
        status_line,
        headers,
        raw_body,
        body,
        complete,
    }
}

fn dechunk(mut raw: &[u8]) -> (Vec<u8>, bool) {
    let mut body = Vec::new();
    loop {
        let Some(line_end) = raw.windows(2).position(|w| w == b"\r\n") else {
            return (body, false);
        };
        let size =
            usize::from_str_radix(std::str::from_utf8(&raw[..line_end]).unwrap(), 16).unwrap();
        if size == 0 {
            return (body, &raw[line_end..] == b"\r\n\r\n");
        }
        let start = line_end + 2;
        if raw.len() < start + size + 2 {
            return (body, false);
        }
        body.extend_from_slice(&raw[start..start + size]);
        assert_eq!(&raw[start + size..start + size + 2], b"\r\n");
        raw = &raw[start + size + 2..];
    }
}
