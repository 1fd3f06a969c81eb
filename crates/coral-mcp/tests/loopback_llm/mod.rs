//! A chat-completions endpoint on loopback standing in for a remote LLM: it answers each
//! request with the next of a script of answers and keeps every request body it saw.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// A running loopback model.
pub struct LoopbackLlm {
    /// Its base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    seen: Arc<Mutex<Vec<Value>>>,
}

impl LoopbackLlm {
    /// Answer with `answer(request)` for every request, until the test ends.
    pub fn start(answer: impl Fn(&Value) -> String + Send + 'static) -> LoopbackLlm {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/v1", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; length];
                let _ = reader.read_exact(&mut body);
                let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                let content = answer(&request);
                log.lock().unwrap().push(request);
                let payload = json!({"choices": [{"message": {"content": content}}]}).to_string();
                let _ = write!(
                    stream,
                    "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
                     Connection: close\r\n\r\n{payload}",
                    payload.len()
                );
            }
        });
        LoopbackLlm { url, seen }
    }

    /// Every request body so far.
    pub fn requests(&self) -> Vec<Value> {
        self.seen.lock().unwrap().clone()
    }
}

/// The system message of a chat request.
pub fn system_of(request: &Value) -> String {
    request["messages"]
        .as_array()
        .and_then(|m| m.iter().find(|m| m["role"] == "system"))
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string()
}
