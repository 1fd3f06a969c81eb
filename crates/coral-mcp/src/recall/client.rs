//! The recall socket's caller side (docs/hooks.md, "The recall socket"): ask the server that
//! owns a data directory's socket for a prompt's memories, within a deadline, and say plainly
//! when no server is there so the caller opens the store itself.

use std::path::Path;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::UnixStream;

use super::wire::{MAX_RESPONSE_BYTES, Request, Response};
use super::{Params, Recalled};

/// What asking found.
#[derive(Debug, PartialEq)]
pub enum Asked {
    /// The server's answer: the memories, best first, and the embedder that ranked them.
    Answered {
        /// The memories.
        memories: Vec<Recalled>,
        /// The server's embedder.
        embedder: String,
    },
    /// No server answers there (no socket file, or one a killed server left); why, for `-v`.
    NoServer(String),
}

/// Ask the socket at `path` to recall for `prompt` with `params`, all within `deadline`. An
/// error is a server that is there but did not answer well (a refusal, a timeout, another
/// user's socket): the caller may still open the store itself.
pub fn ask(
    path: &Path,
    prompt: &str,
    params: &Params,
    deadline: Duration,
) -> Result<Asked, String> {
    if !super::socket::is_socket(path) {
        return Ok(Asked::NoServer(format!("no socket at {}", path.display())));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the socket client: {e}"))?;
    let request = Request::recall(prompt, params.clone());
    runtime.block_on(async {
        match tokio::time::timeout(deadline, exchange(path, &request)).await {
            Ok(result) => result,
            Err(_) => Err(format!(
                "the server on {} did not answer within {} ms",
                path.display(),
                deadline.as_millis()
            )),
        }
    })
}

async fn exchange(path: &Path, request: &Request) -> Result<Asked, String> {
    let mut stream = match UnixStream::connect(path).await {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::NotFound
            ) =>
        {
            return Ok(Asked::NoServer(format!(
                "nothing listens on {} (a server that stopped without removing it)",
                path.display()
            )));
        }
        Err(e) => return Err(format!("cannot connect to {}: {e}", path.display())),
    };
    // Memories go into the model's context: take them only from this user's own server.
    let server = stream
        .peer_cred()
        .map_err(|e| format!("no credentials for {}: {e}", path.display()))?
        .uid();
    let me = own_uid()?;
    if server != me {
        return Err(format!(
            "the socket {} is served by user {server}, not by this user ({me}); it was ignored",
            path.display()
        ));
    }
    stream
        .write_all(&request.to_line())
        .await
        .map_err(|e| format!("cannot send to {}: {e}", path.display()))?;
    let mut reader = BufReader::new(stream).take(MAX_RESPONSE_BYTES as u64);
    let mut line = Vec::new();
    reader
        .read_until(b'\n', &mut line)
        .await
        .map_err(|e| format!("cannot read the answer from {}: {e}", path.display()))?;
    if line.last() != Some(&b'\n') {
        return Err(format!(
            "the server on {} closed without a whole answer ({} bytes)",
            path.display(),
            line.len()
        ));
    }
    let answer = Response::parse(&line[..line.len() - 1])?;
    match (answer.ok, answer.memories, answer.error) {
        (true, Some(memories), _) => Ok(Asked::Answered {
            memories,
            embedder: answer.embedder.unwrap_or_default(),
        }),
        (_, _, error) => Err(format!(
            "the server on {} refused: {}",
            path.display(),
            error.unwrap_or_else(|| "no reason given".into())
        )),
    }
}

/// This process's user id: a connected socket pair's peer is this process itself, and its
/// credentials are what the kernel says (no `unsafe` call to `geteuid` needed).
fn own_uid() -> Result<u32, String> {
    let (a, _b) = UnixStream::pair().map_err(|e| format!("cannot make a socket pair: {e}"))?;
    a.peer_cred()
        .map(|c| c.uid())
        .map_err(|e| format!("no credentials of this process: {e}"))
}
