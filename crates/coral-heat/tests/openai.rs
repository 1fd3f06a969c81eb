//! `OpenAiClient` against real HTTP servers on 127.0.0.1, started by each test.
//!
//! Each server is a thread over a `std::net::TcpListener` that answers a fixed number of
//! requests, one connection each, records what it received and exits.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use coral_heat::{Error, Llm, LlmSettings, OpenAiClient};
use serde_json::{Value, json};

const KEY: &str = "sk-test-0123456789abcdef";
/// How long a test waits for anything before failing; never reached when the code works.
const PATIENCE: Duration = Duration::from_secs(20);

/// What a server received.
#[derive(Debug)]
struct Request {
    request_line: String,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Request {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body).expect("the request body is JSON")
    }
}

/// Computes a status and a body from a request.
type Respond = Box<dyn FnOnce(&Request) -> (u16, String) + Send>;

/// How a server answers one request. When `hold` is set it waits for [`Server::release`] before
/// answering (a slow endpoint).
struct Reply {
    respond: Respond,
    hold: bool,
}

fn reply(status: u16, body: impl Into<String>) -> Reply {
    let body = body.into();
    Reply {
        respond: Box::new(move |_| (status, body)),
        hold: false,
    }
}

/// A chat completion whose content is `content`.
fn completion(content: &str) -> String {
    json!({
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "deepseek-chat",
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop"
        }]
    })
    .to_string()
}

struct Server {
    /// `http://127.0.0.1:<port>`.
    url: String,
    requests: mpsc::Receiver<Request>,
    release: mpsc::Sender<()>,
    thread: Option<JoinHandle<()>>,
}

fn serve(replies: Vec<Reply>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (seen_tx, requests) = mpsc::channel();
    let (release, release_rx) = mpsc::channel::<()>();
    let thread = std::thread::spawn(move || {
        for reply in replies {
            let Ok((stream, _)) = listener.accept() else {
                return;
            };
            stream.set_read_timeout(Some(PATIENCE)).unwrap();
            let Some(request) = read_request(&stream) else {
                return;
            };
            let (status, body) = (reply.respond)(&request);
            let _ = seen_tx.send(request);
            if reply.hold {
                let _ = release_rx.recv_timeout(PATIENCE);
            }
            // The client may be gone (timeout): a failed write is expected then.
            let _ = write_response(stream, status, &body);
        }
    });
    Server {
        url,
        requests,
        release,
        thread: Some(thread),
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    reader.read_line(&mut request_line).ok()?;
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).ok()?;
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':')?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let length: usize = headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        request_line: request_line.trim_end().to_owned(),
        headers,
        body,
    })
}

fn write_response(mut stream: TcpStream, status: u16, body: &str) -> std::io::Result<()> {
    write!(
        stream,
        "HTTP/1.1 {status} Canned\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()
}

impl Server {
    /// The next request the server received.
    fn request(&self) -> Request {
        self.requests
            .recv_timeout(PATIENCE)
            .expect("the server received no request")
    }

    /// Lets a held reply go.
    fn release(&self) {
        let _ = self.release.send(());
    }

    /// Waits for the server to have answered all its replies.
    fn finish(mut self) {
        let thread = self.thread.take().unwrap();
        let deadline = Instant::now() + PATIENCE;
        while !thread.is_finished() {
            assert!(
                Instant::now() < deadline,
                "the server still waits for requests"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        thread.join().unwrap();
    }
}

fn client(base_url: &str, api_key: &str, timeout: Duration) -> OpenAiClient {
    let mut settings =
        LlmSettings::resolve(base_url, api_key, "test-model", |_| None).expect("an endpoint");
    settings.timeout = timeout;
    OpenAiClient::new(settings).unwrap()
}

/// Checks that nothing the caller can see of `err` holds the api key.
fn assert_no_key(err: &Error) {
    assert!(!err.to_string().contains(KEY), "{err}");
    assert!(!format!("{err:?}").contains(KEY), "{err:?}");
}

#[test]
fn a_good_answer_round_trips_and_the_request_is_as_specified() {
    let server = serve(vec![reply(
        200,
        completion("  \"Port 42 pools connections; timeout 30 s\"\n"),
    )]);
    let llm = client(&format!("{}/v1/", server.url), KEY, Duration::from_secs(10));
    let texts = [
        "Port 42 opens a connection pool on first call, timeout 30 s",
        "port 42: connection pool on first call; timeout is 30 s",
    ];
    let summary = llm.summarize(&texts).unwrap();
    assert_eq!(summary, "Port 42 pools connections; timeout 30 s");

    let request = server.request();
    assert_eq!(request.request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        request.header("authorization"),
        Some(format!("Bearer {KEY}").as_str())
    );
    assert!(
        request
            .header("content-type")
            .is_some_and(|v| v.starts_with("application/json"))
    );
    let body = request.json();
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["temperature"], 0.2);
    assert_eq!(body["max_tokens"], 1024);
    let messages = body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2);
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages[1]["role"], "user");
    let system = messages[0]["content"].as_str().unwrap();
    for rule in [
        "ONE summary",
        "at most 80 characters",
        "numbers",
        "add nothing",
        "same language",
    ] {
        assert!(
            system.contains(rule),
            "system prompt lacks {rule:?}: {system}"
        );
    }
    let user = messages[1]["content"].as_str().unwrap();
    for text in texts {
        assert!(user.contains(text), "user message lacks {text:?}: {user}");
    }
    server.finish();
}

#[test]
fn a_chinese_cluster_gets_a_chinese_summary() {
    // A stand-in model that answers in the language it is sent: the first memory, cut short.
    let echo = Reply {
        respond: Box::new(|request: &Request| {
            let body = request.json();
            let user = body["messages"][1]["content"].as_str().unwrap_or_default();
            let memories: Vec<String> =
                serde_json::from_str(&user[user.find('[').unwrap_or(0)..]).unwrap_or_default();
            let first = memories.first().cloned().unwrap_or_default();
            (200, completion(&first.chars().take(15).collect::<String>()))
        }),
        hold: false,
    };
    let server = serve(vec![echo]);
    let llm = client(&server.url, KEY, Duration::from_secs(10));
    let texts = [
        "用户每天上午喝一杯冰镇拿铁咖啡，第 0 次提到这个习惯",
        "用户每天上午喝一杯冰镇拿铁咖啡，第 1 次提到这个习惯",
        "用户每天上午喝一杯冰镇拿铁咖啡，第 2 次提到这个习惯",
    ];
    let summary = llm.summarize(&texts).unwrap();
    assert_eq!(summary, "用户每天上午喝一杯冰镇拿铁咖啡");

    let request = server.request();
    assert_eq!(request.request_line, "POST /chat/completions HTTP/1.1");
    let body = request.json();
    let system = body["messages"][0]["content"].as_str().unwrap();
    assert!(system.contains("不超过80个字符"), "{system}");
    server.finish();
}

#[test]
fn base_urls_with_and_without_v1_or_a_slash_reach_chat_completions() {
    let cases = [
        ("", "/chat/completions"),
        ("/", "/chat/completions"),
        ("/v1", "/v1/chat/completions"),
        ("/v1/chat/completions", "/v1/chat/completions"),
    ];
    let server = serve(cases.iter().map(|_| reply(200, completion("ok"))).collect());
    for (suffix, path) in cases {
        let llm = client(
            &format!("{}{suffix}", server.url),
            KEY,
            Duration::from_secs(10),
        );
        assert_eq!(llm.summarize(&["a"]).unwrap(), "ok");
        assert_eq!(
            server.request().request_line,
            format!("POST {path} HTTP/1.1"),
            "base url suffix {suffix:?}"
        );
    }
    server.finish();
}

#[test]
fn an_empty_key_sends_no_authorization() {
    let server = serve(vec![reply(200, completion("local answer"))]);
    let llm = client(&server.url, "", Duration::from_secs(10));
    assert_eq!(llm.summarize(&["x"]).unwrap(), "local answer");
    assert_eq!(server.request().header("authorization"), None);
    server.finish();
}

#[test]
fn a_slow_answer_times_out() {
    let mut slow = reply(200, completion("too late"));
    slow.hold = true;
    let server = serve(vec![slow]);
    let llm = client(&server.url, KEY, Duration::from_millis(300));
    let err = llm.summarize(&["a", "b", "c"]).unwrap_err();
    assert!(matches!(err, Error::Timeout { .. }), "{err:?}");
    assert!(
        err.to_string().contains("did not answer within 0.3 s"),
        "{err}"
    );
    assert_no_key(&err);
    server.request();
    server.release();
    server.finish();
}

#[test]
fn http_errors_are_errors_and_echoed_keys_are_redacted() {
    let server = serve(vec![
        reply(
            500,
            format!(r#"{{"error":{{"message":"upstream broke for key {KEY}"}}}}"#),
        ),
        reply(401, ""),
    ]);
    let llm = client(&server.url, KEY, Duration::from_secs(10));
    let err = llm.summarize(&["a"]).unwrap_err();
    match &err {
        Error::Http { status, body, .. } => {
            assert_eq!(*status, 500);
            assert!(body.contains("upstream broke for key ***"), "{body}");
        }
        other => panic!("expected an http error, got {other:?}"),
    }
    assert!(err.to_string().contains("http 500"), "{err}");
    assert_no_key(&err);

    let err = llm.summarize(&["a"]).unwrap_err();
    assert!(matches!(err, Error::Http { status: 401, .. }), "{err:?}");
    assert!(err.to_string().contains("(empty body)"), "{err}");
    server.request();
    server.request();
    server.finish();
}

#[test]
fn malformed_answers_are_errors() {
    let bodies = [
        "this is not json {".to_owned(),
        json!({"choices": []}).to_string(),
        json!({"choices": [{"message": {"role": "assistant", "content": null}}]}).to_string(),
        json!({"error": {"message": "quota exceeded"}}).to_string(),
    ];
    let server = serve(bodies.iter().map(|b| reply(200, b.clone())).collect());
    let llm = client(&server.url, KEY, Duration::from_secs(10));
    for body in &bodies {
        let err = llm.summarize(&["a"]).unwrap_err();
        assert!(matches!(err, Error::Malformed { .. }), "{body}: {err:?}");
        assert!(err.to_string().starts_with("malformed answer"), "{err}");
        assert_no_key(&err);
    }
    server.finish();
}

#[test]
fn empty_and_overlong_summaries_are_errors() {
    let server = serve(vec![
        reply(200, completion("")),
        reply(200, completion("  \n\t ")),
        reply(200, completion(&"long ".repeat(60))),
    ]);
    let llm = client(&server.url, KEY, Duration::from_secs(10));
    for _ in 0..2 {
        let err = llm.summarize(&["a"]).unwrap_err();
        assert!(matches!(err, Error::EmptySummary), "{err:?}");
    }
    let err = llm.summarize(&["a"]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::SummaryTooLong {
                chars: 299,
                max: 200
            }
        ),
        "{err:?}"
    );
    server.finish();
}

#[test]
fn a_closed_port_is_unreachable() {
    let port = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let llm = client(
        &format!("http://127.0.0.1:{port}/v1"),
        KEY,
        Duration::from_secs(10),
    );
    let err = llm.summarize(&["a"]).unwrap_err();
    assert!(matches!(err, Error::Unreachable { .. }), "{err:?}");
    assert!(
        err.to_string().contains(&format!("127.0.0.1:{port}")),
        "{err}"
    );
    assert_no_key(&err);
}

#[test]
fn nothing_to_summarise_sends_nothing() {
    let llm = client("http://127.0.0.1:9/v1", KEY, Duration::from_secs(10));
    assert!(matches!(llm.summarize(&[]), Err(Error::EmptyCluster)));
}

#[test]
fn debug_output_masks_the_key() {
    let llm = client("http://127.0.0.1:9", KEY, Duration::from_secs(10));
    let shown = format!("{llm:?}");
    assert!(!shown.contains(KEY), "{shown}");
    assert!(shown.contains("***"), "{shown}");
    assert!(
        shown.contains("http://127.0.0.1:9/chat/completions"),
        "{shown}"
    );
    assert_eq!(llm.endpoint(), "http://127.0.0.1:9/chat/completions");
}
