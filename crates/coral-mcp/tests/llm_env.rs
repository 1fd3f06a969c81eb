//! The LLM endpoint can come from the environment alone (`CORAL_LLM_BASE_URL` /
//! `CORAL_LLM_API_KEY`, or the DeepSeek variables) and then really distils.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Command, Stdio};

const CORAL: &str = env!("CARGO_BIN_EXE_coral");

/// A one-shot completion server on loopback; returns its base URL and the request it saw.
fn fake_llm(answer: &'static str) -> (String, std::thread::JoinHandle<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let handle = std::thread::spawn(move || {
        let (mut stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            head.push_str(&line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let payload =
            serde_json::json!({"choices": [{"message": {"content": answer}}]}).to_string();
        write!(
            stream,
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{payload}",
            payload.len()
        )
        .unwrap();
        head + &String::from_utf8_lossy(&body)
    });
    (url, handle)
}

#[test]
fn environment_variables_enable_distillation() {
    let (url, server) = fake_llm("用户习惯喝冰镇拿铁");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("coral_config.json");
    std::fs::write(
        &config,
        r#"{"embedding": {"embedder": "hash"},
            "memory": {"capacity_threshold": 10, "max_hot_entries": 1, "sim_threshold_hot": 0.97}}"#,
    )
    .unwrap();
    let mut lines = String::new();
    for i in 0..12 {
        lines.push_str(&format!(
            "用户每天上午喝一杯冰镇拿铁咖啡，第 {i} 次提到这个习惯\n"
        ));
    }
    for i in 0..9 {
        lines.push_str(&format!("unrelated note {i} z{:x}\n", i * 104_729));
    }
    let mut child = Command::new(CORAL)
        .args(["-q", "--config"])
        .arg(&config)
        .args(["insert", "--stdin"])
        .env("CORAL_LLM_BASE_URL", &url)
        .env("CORAL_LLM_API_KEY", "sk-from-env")
        .env_remove("DEEPSEEK_BASE_URL")
        .env_remove("DEEPSEEK_API_KEY")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(lines.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let request = server.join().unwrap();
    assert!(request.contains("POST /chat/completions"), "{request}");
    assert!(request.contains("Bearer sk-from-env"));
    assert!(request.contains("冰镇拿铁"));
    let export = Command::new(CORAL)
        .args(["-q", "--config"])
        .arg(&config)
        .arg("export")
        .output()
        .unwrap();
    let items: Vec<serde_json::Value> = String::from_utf8(export.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary = items
        .iter()
        .find(|i| i["content"] == "用户习惯喝冰镇拿铁")
        .expect("the summary was stored");
    assert!(summary["access_count"].as_u64().unwrap() >= 3);
    assert!(items.len() <= 10 + 10, "within capacity + headroom");
}
