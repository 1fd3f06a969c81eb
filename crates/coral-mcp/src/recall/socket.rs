//! The recall socket's server side (docs/hooks.md, "The recall socket"): a long-lived server
//! (`coral mcp`, `coral mcp --http`, `coral http`) that holds the store answers the prompt
//! hook's recall on `.coral.sock` in the data directory, so the hook need not open the store.
//!
//! One server per data directory owns the socket: the one holding an `flock` on
//! `.coral.sock.lock`. The owner removes whatever socket file a killed owner left, binds
//! `.coral.sock.new`, makes it `0600` and renames it onto `.coral.sock`; only the holder of the
//! lock ever touches those names, so servers sharing a directory never take the socket from one
//! another. The others stand by and try the lock every [`STANDBY_RETRY`], so when the owner
//! exits (or is killed, which releases the lock) one of them takes over.
//!
//! Every peer is treated as untrusted: it must run as the user who owns the socket (the
//! peer's credentials, beside the file's mode), a request is one line of at most
//! [`MAX_REQUEST_BYTES`] read within [`READ_TIMEOUT`], at most [`MAX_CONNECTIONS`] are served
//! at once, and the only operation reads.

use std::fs::{File, OpenOptions, TryLockError};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coral::Coral;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{UnixListener, UnixStream};
use tokio::sync::Semaphore;

use super::wire::{LOCK_FILE, MAX_REQUEST_BYTES, NEW_FILE, Request, Response, socket_path};

/// How often a standing-by server tries to take the socket over.
pub const STANDBY_RETRY: Duration = Duration::from_secs(2);

/// How long a peer has to send its request line.
pub const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// Most bytes read and dropped after an answer, so that the peer gets it.
const DRAIN_BYTES: u64 = 16 << 20;

/// Connections served at once; more are told the server is busy.
pub const MAX_CONNECTIONS: usize = 16;

/// What a server's recall socket is doing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SocketState {
    /// This server answers on the socket at this path.
    Listening(PathBuf),
    /// Another server of the same data directory answers; this one takes over if it goes.
    Standby(PathBuf),
    /// No socket, and why (switched off, a directory that cannot be written, a path too long
    /// for a Unix socket).
    Off(String),
}

impl std::fmt::Display for SocketState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SocketState::Listening(p) => write!(f, "recall socket at {}", p.display()),
            SocketState::Standby(p) => write!(
                f,
                "another server answers on the recall socket {}; this one stands by",
                p.display()
            ),
            SocketState::Off(why) => write!(f, "no recall socket: {why}"),
        }
    }
}

/// What the serving task and its handle share.
struct Shared {
    dir: PathBuf,
    /// The locked lock file while this server owns the socket.
    owned: Mutex<Option<File>>,
    state: Mutex<SocketState>,
}

impl Shared {
    fn set(&self, state: SocketState) {
        *self.state.lock().unwrap_or_else(|e| e.into_inner()) = state;
    }

    /// Take the socket if no other server holds it: `Ok(None)` when one does.
    fn claim(&self) -> std::io::Result<Option<UnixListener>> {
        let lock = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.dir.join(LOCK_FILE))?;
        match lock.try_lock() {
            Ok(()) => {}
            Err(TryLockError::WouldBlock) => return Ok(None),
            Err(TryLockError::Error(e)) => return Err(e),
        }
        let path = socket_path(&self.dir);
        let new = self.dir.join(NEW_FILE);
        for stale in [&path, &new] {
            match std::fs::remove_file(stale) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
        }
        let listener = UnixListener::bind(&new)?;
        std::fs::set_permissions(&new, std::fs::Permissions::from_mode(0o600))?;
        std::fs::rename(&new, &path)?;
        *self.owned.lock().unwrap_or_else(|e| e.into_inner()) = Some(lock);
        Ok(Some(listener))
    }

    /// Remove the socket if this server owns it, then release the lock (in that order: once
    /// the lock is free, the name is another server's).
    fn release(&self) {
        let mut owned = self.owned.lock().unwrap_or_else(|e| e.into_inner());
        if owned.is_some() {
            let _ = std::fs::remove_file(socket_path(&self.dir));
        }
        *owned = None;
    }
}

/// A server's recall socket: listening, standing by, or off. [`RecallSocket::close`] before
/// closing the store.
pub struct RecallSocket {
    shared: Arc<Shared>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RecallSocket {
    /// Start answering recalls over `coral` on its data directory's socket, or stand by when
    /// another server does; `hooks.recall_socket: false` leaves it off. Call inside a tokio
    /// runtime.
    pub fn start(coral: Arc<Coral>) -> RecallSocket {
        let config = coral.config();
        let dir = config.store_paths().dir;
        let shared = Arc::new(Shared {
            owned: Mutex::new(None),
            state: Mutex::new(SocketState::Off(String::new())),
            dir,
        });
        if !config.hooks.recall_socket {
            shared.set(SocketState::Off("hooks.recall_socket is false".into()));
            return RecallSocket { shared, task: None };
        }
        let path = socket_path(&shared.dir);
        // The first claim is made here, so that the server's start says where it answers.
        let first = match shared.claim() {
            Ok(Some(listener)) => {
                shared.set(SocketState::Listening(path.clone()));
                Some(listener)
            }
            Ok(None) => {
                shared.set(SocketState::Standby(path.clone()));
                None
            }
            Err(e) => {
                shared.release();
                shared.set(SocketState::Off(format!(
                    "cannot listen on {}: {e}",
                    path.display()
                )));
                return RecallSocket { shared, task: None };
            }
        };
        let task = tokio::spawn(run(Arc::clone(&shared), coral, first));
        RecallSocket {
            shared,
            task: Some(task),
        }
    }

    /// What the socket is doing now.
    pub fn state(&self) -> SocketState {
        self.shared
            .state
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Stop answering: the task ends (and with it its handle on the store), the socket file is
    /// removed if this server owned it, and the lock is released.
    pub async fn close(mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
            let _ = task.await;
        }
        self.shared.release();
    }
}

impl Drop for RecallSocket {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

/// Serve on `listener` when given; stand by for the lock otherwise, and again whenever
/// accepting fails.
async fn run(shared: Arc<Shared>, coral: Arc<Coral>, mut listener: Option<UnixListener>) {
    let path = socket_path(&shared.dir);
    let busy = Arc::new(Semaphore::new(MAX_CONNECTIONS));
    loop {
        if let Some(l) = listener.take() {
            // The file's owner is this process's user; peers must be the same.
            let owner = match std::fs::metadata(&path) {
                Ok(m) => m.uid(),
                Err(e) => {
                    shared.release();
                    shared.set(SocketState::Off(format!("{}: {e}", path.display())));
                    return;
                }
            };
            shared.set(SocketState::Listening(path.clone()));
            let why = accept(l, owner, &coral, &busy).await;
            shared.release();
            errln!("coral: the recall socket stopped ({why}); standing by");
            shared.set(SocketState::Standby(path.clone()));
        }
        tokio::time::sleep(STANDBY_RETRY).await;
        match shared.claim() {
            Ok(Some(l)) => {
                errln!("coral: took over the recall socket {}", path.display());
                listener = Some(l);
            }
            Ok(None) => {}
            Err(e) => {
                shared.release();
                shared.set(SocketState::Off(format!(
                    "cannot listen on {}: {e}",
                    path.display()
                )));
                return;
            }
        }
    }
}

/// Accept until accepting fails; each connection served on a task of its own.
async fn accept(
    listener: UnixListener,
    owner: u32,
    coral: &Arc<Coral>,
    busy: &Arc<Semaphore>,
) -> std::io::Error {
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            // Out of file descriptors and the like: let a moment pass, keep serving.
            Err(e) if is_transient(&e) => {
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
            Err(e) => return e,
        };
        let coral = Arc::clone(coral);
        let permit = Arc::clone(busy).try_acquire_owned();
        tokio::spawn(async move {
            let mut stream = stream;
            let answer = match permit {
                Ok(_permit) => serve(&mut stream, owner, coral).await,
                Err(_) => Some(Response::error(format!(
                    "the server is busy ({MAX_CONNECTIONS} recalls at once); open the store \
                     instead"
                ))),
            };
            if let Some(answer) = answer {
                let _ = stream.write_all(&answer.to_line()).await;
                let _ = stream.shutdown().await;
                // Closing with unread input resets the connection, and the peer could lose the
                // answer (an oversized request is answered before it is all read): drain a
                // bounded amount first.
                let mut rest = (&mut stream).take(DRAIN_BYTES);
                let mut sink = tokio::io::sink();
                let drain = tokio::io::copy(&mut rest, &mut sink);
                let _ = tokio::time::timeout(READ_TIMEOUT, drain).await;
            }
        });
    }
}

fn is_transient(e: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        e.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || e.raw_os_error().is_some_and(|c| c == 23 || c == 24) // ENFILE, EMFILE
}

/// One connection's answer, `None` when there is no one left to answer.
async fn serve(stream: &mut UnixStream, owner: u32, coral: Arc<Coral>) -> Option<Response> {
    match stream.peer_cred() {
        Ok(c) if c.uid() == owner => {}
        Ok(c) => {
            return Some(Response::error(format!(
                "refused: the caller runs as user {}, this socket serves only user {owner}",
                c.uid()
            )));
        }
        Err(e) => {
            return Some(Response::error(format!(
                "refused: no peer credentials: {e}"
            )));
        }
    }
    let line = match tokio::time::timeout(READ_TIMEOUT, read_line(stream)).await {
        Ok(Ok(Some(line))) => line,
        Ok(Ok(None)) => return None,
        Ok(Err(e)) => return Some(Response::error(e)),
        Err(_) => {
            return Some(Response::error(format!(
                "no request line within {} s",
                READ_TIMEOUT.as_secs()
            )));
        }
    };
    let request = match Request::parse(&line) {
        Ok(r) => r,
        Err(e) => return Some(Response::error(e)),
    };
    let recalled = tokio::task::spawn_blocking(move || {
        let memories = super::recall(&coral, &request.prompt, &request.params);
        (memories, coral.embedder().name().to_string())
    })
    .await;
    Some(match recalled {
        Ok((Ok(memories), embedder)) => Response::recalled(&embedder, memories),
        Ok((Err(e), _)) => Response::error(e.to_string()),
        Err(e) => Response::error(format!("the recall failed: {e}")),
    })
}

/// The request line, without its newline; `None` when the peer sent nothing at all.
async fn read_line(stream: &mut UnixStream) -> Result<Option<Vec<u8>>, String> {
    let mut reader = BufReader::new(stream).take(MAX_REQUEST_BYTES as u64 + 1);
    let mut line = Vec::new();
    reader
        .read_until(b'\n', &mut line)
        .await
        .map_err(|e| format!("cannot read the request: {e}"))?;
    if line.is_empty() {
        return Ok(None);
    }
    if line.last() == Some(&b'\n') {
        line.pop();
    } else if line.len() > MAX_REQUEST_BYTES {
        return Err(format!(
            "the request is over {MAX_REQUEST_BYTES} bytes; nothing was read from it"
        ));
    }
    Ok(Some(line))
}

/// Whether `path` is a socket file: what a caller checks before connecting.
pub(super) fn is_socket(path: &Path) -> bool {
    use std::os::unix::fs::FileTypeExt;
    std::fs::metadata(path).is_ok_and(|m| m.file_type().is_socket())
}
