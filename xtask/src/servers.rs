//! `cargo xtask bench-servers`: the MCP stdio round trip and HTTP throughput at 2,000 items.
//!
//! The engine's own search time is measured in-process on the same directory first, so the
//! MCP figure can be reported as overhead beyond it. The HTTP load is a bounded loopback run:
//! a fixed number of keep-alive clients each send a fixed number of requests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

const ITEMS: usize = 2_000;
const MCP_CALLS: usize = 2_000;
const HTTP_CLIENTS: usize = 4;
const HTTP_REQUESTS_PER_CLIENT: usize = 5_000;

fn text(i: usize) -> String {
    const WORDS: [&str; 12] = [
        "接口",
        "缓存",
        "令牌",
        "部署",
        "日志",
        "latte",
        "manual",
        "deploy",
        "说明书",
        "蓝牙",
        "coffee",
        "review",
    ];
    format!(
        "记忆 {i}：{} {} 相关的第 {} 号细节 note {}",
        WORDS[i % 12],
        WORDS[(i / 12) % 12],
        i * 7919 % 100_003,
        i % 977
    )
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn queries() -> Vec<String> {
    (0..50)
        .map(|i| {
            format!(
                "{} 细节 note",
                text(i * 37).split('：').nth(1).unwrap_or("接口")
            )
        })
        .collect()
}

pub fn run(root: &Path) -> Result<()> {
    if cfg!(debug_assertions) && std::env::var_os("CORAL_XTASK_ALLOW_DEBUG").is_none() {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = Command::new(cargo)
            .args([
                "run",
                "--quiet",
                "--release",
                "--package",
                "xtask",
                "--",
                "bench-servers",
            ])
            .current_dir(root)
            .status()?;
        if !status.success() {
            bail!("bench-servers failed ({status})");
        }
        return Ok(());
    }
    crate::cargo(&["build", "--quiet", "--release", "-p", "coral-mcp"])?;
    let coral_bin = crate::target_dir(root).join("release/coral");
    let dir = tempfile::tempdir()?;
    let config = dir.path().join("coral_config.json");
    std::fs::write(
        &config,
        json!({"embedding": {"embedder": "hash"}, "memory": {"sim_threshold_hot": 1.0}})
            .to_string(),
    )?;
    let queries = queries();

    // Load the items and measure the engine in-process.
    let engine_p50_ms = {
        let coral = coral::Coral::open(&config)?;
        for i in 0..ITEMS {
            coral.insert(&text(i), 0.5)?;
        }
        if coral.stats().total != ITEMS {
            bail!(
                "expected {ITEMS} distinct items, got {}",
                coral.stats().total
            );
        }
        let mut times = Vec::new();
        for i in 0..MCP_CALLS {
            let t = Instant::now();
            std::hint::black_box(coral.search(&queries[i % queries.len()], 5)?);
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        coral.close()?;
        times.sort_by(f64::total_cmp);
        percentile(&times, 0.5)
    };

    // MCP over stdio.
    let (mcp_p50_ms, mcp_p99_ms) = {
        let mut child = Command::new(&coral_bin)
            .arg("--config")
            .arg(&config)
            .args(["-q", "mcp"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut stdin = child.stdin.take().context("stdin")?;
        let mut stdout = BufReader::new(child.stdout.take().context("stdout")?);
        let mut line = String::new();
        fn roundtrip(
            stdin: &mut impl Write,
            stdout: &mut impl BufRead,
            msg: &Value,
            line: &mut String,
        ) -> Result<Value> {
            writeln!(stdin, "{msg}")?;
            stdin.flush()?;
            line.clear();
            stdout.read_line(line)?;
            Ok(serde_json::from_str(line)?)
        }
        roundtrip(
            &mut stdin,
            &mut stdout,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}}}),
            &mut line,
        )?;
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","method":"notifications/initialized"}}"#
        )?;
        let mut times = Vec::new();
        for i in 0..MCP_CALLS {
            let msg = json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                "params": {"name": "memory_search", "arguments": {"query": queries[i % queries.len()]}}});
            let t = Instant::now();
            let reply = roundtrip(&mut stdin, &mut stdout, &msg, &mut line)?;
            times.push(t.elapsed().as_secs_f64() * 1e3);
            if reply["result"]["structuredContent"]["count"] != 5 {
                bail!("unexpected MCP reply {reply}");
            }
        }
        drop(stdin);
        child.wait()?;
        times.sort_by(f64::total_cmp);
        (percentile(&times, 0.5), percentile(&times, 0.99))
    };

    // HTTP with keep-alive clients.
    let (http_rps, http_p50_ms) = {
        let mut child = Command::new(&coral_bin)
            .arg("--config")
            .arg(&config)
            .args(["-q", "http", "--port", "0"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let mut first = String::new();
        BufReader::new(child.stdout.take().context("stdout")?).read_line(&mut first)?;
        let addr = serde_json::from_str::<Value>(&first)?["listening"]
            .as_str()
            .context("no address")?
            .to_string();
        let start = Instant::now();
        let workers: Vec<_> = (0..HTTP_CLIENTS)
            .map(|c| {
                let addr = addr.clone();
                let queries = queries.clone();
                std::thread::spawn(move || -> Result<Vec<f64>> {
                    let mut stream = TcpStream::connect(&addr)?;
                    stream.set_nodelay(true)?;
                    let mut reader = BufReader::new(stream.try_clone()?);
                    let mut times = Vec::with_capacity(HTTP_REQUESTS_PER_CLIENT);
                    for i in 0..HTTP_REQUESTS_PER_CLIENT {
                        let body = json!({"tool": "memory_search", "args": {"query": queries[(i + c) % queries.len()]}}).to_string();
                        let request = format!(
                            "POST /rpc HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
                            body.len()
                        );
                        let t = Instant::now();
                        stream.write_all(request.as_bytes())?;
                        let mut status = String::new();
                        reader.read_line(&mut status)?;
                        if !status.contains(" 200 ") {
                            bail!("HTTP status {status:?}");
                        }
                        let mut length = 0usize;
                        loop {
                            let mut header = String::new();
                            reader.read_line(&mut header)?;
                            if header == "\r\n" {
                                break;
                            }
                            if let Some(v) = header.to_ascii_lowercase().strip_prefix("content-length:") {
                                length = v.trim().parse()?;
                            }
                        }
                        let mut payload = vec![0u8; length];
                        reader.read_exact(&mut payload)?;
                        times.push(t.elapsed().as_secs_f64() * 1e3);
                    }
                    Ok(times)
                })
            })
            .collect();
        let mut times = Vec::new();
        for w in workers {
            times.extend(
                w.join()
                    .map_err(|_| anyhow::anyhow!("client thread panicked"))??,
            );
        }
        let elapsed = start.elapsed().as_secs_f64();
        let _ = child.kill();
        let _ = child.wait();
        times.sort_by(f64::total_cmp);
        (times.len() as f64 / elapsed, percentile(&times, 0.5))
    };

    let report = json!({
        "items": ITEMS,
        "engine_search_p50_ms": engine_p50_ms,
        "mcp_roundtrip_p50_ms": mcp_p50_ms,
        "mcp_roundtrip_p99_ms": mcp_p99_ms,
        "mcp_overhead_p50_ms": mcp_p50_ms - engine_p50_ms,
        "http_clients": HTTP_CLIENTS,
        "http_requests": HTTP_CLIENTS * HTTP_REQUESTS_PER_CLIENT,
        "http_searches_per_s": http_rps,
        "http_latency_p50_ms": http_p50_ms,
    });
    let out_dir = root.join("target/coral-bench");
    std::fs::create_dir_all(&out_dir)?;
    let out = out_dir.join("servers.json");
    std::fs::write(&out, serde_json::to_string_pretty(&report)? + "\n")?;
    println!("servers at {ITEMS} items (release build, loopback)");
    println!("  engine search p50            {engine_p50_ms:>8.3} ms");
    println!(
        "  MCP stdio round trip p50     {mcp_p50_ms:>8.3} ms  (overhead {:.3} ms; target ≤ 1 ms)",
        mcp_p50_ms - engine_p50_ms
    );
    println!("  MCP stdio round trip p99     {mcp_p99_ms:>8.3} ms");
    println!(
        "  HTTP searches/s              {http_rps:>8.0}     ({HTTP_CLIENTS} keep-alive clients; target ≥ 5000)"
    );
    println!("  HTTP latency p50             {http_p50_ms:>8.3} ms");
    println!("  written to {}", out.display());
    Ok(())
}
