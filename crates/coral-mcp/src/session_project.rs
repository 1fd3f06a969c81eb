//! An MCP session's project under `--project auto` (docs/servers.md, "Projects"): the
//! workspace its client's roots name. A client that declares the roots capability is asked
//! for its roots once initialised and again on `notifications/roots/list_changed`; calls made
//! while the answer is awaited wait for it (at most [`ROOTS_WAIT`]), so the first insert of a
//! session, and the first after a change, is tagged like the rest. Without roots, or when they
//! name no `file://` directory, the launch directory's project stands.
//!
//! rmcp runs every incoming message in a task of its own, so a call sent right behind
//! `roots/list_changed` can run before the notification's handler. The transports therefore
//! count the announcements in message order ([`RootsChanges::observe`], in
//! `stdio_transport.rs` and `mcp_http.rs`), and a call waits until the roots it reads answer
//! every announcement made before it arrived.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rmcp::RoleServer;
use rmcp::model::{
    ClientJsonRpcMessage, ClientNotification, ClientRequest, GetExtensions, JsonRpcMessage,
};
use rmcp::service::Peer;
use tokio::sync::watch;

use crate::project::project_for_uri;

/// Longest a call waits for the client's roots, and a roots request for its answer.
pub const ROOTS_WAIT: Duration = Duration::from_secs(3);

/// How many times a session's client has announced new roots, counted by its transport as
/// the messages arrive. The transport hands it to the session's handler in the `initialize`
/// request's extensions.
#[derive(Clone, Debug, Default)]
pub struct RootsChanges(Arc<AtomicU64>);

impl RootsChanges {
    /// Note `message` as it arrives: an announcement is counted; `initialize` carries this
    /// counter to the handler.
    pub fn observe(&self, message: &mut ClientJsonRpcMessage) {
        match message {
            JsonRpcMessage::Request(r) => {
                if let ClientRequest::InitializeRequest(init) = &mut r.request {
                    init.extensions_mut().insert(self.clone());
                }
            }
            JsonRpcMessage::Notification(n) => {
                if let ClientNotification::RootsListChangedNotification(_) = n.notification {
                    self.announce();
                }
            }
            _ => {}
        }
    }

    fn announce(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    fn count(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// What the session knows of its client's roots.
#[derive(Clone, Debug, PartialEq)]
enum Roots {
    /// Nothing: the client declares no roots, or its answer named no directory.
    Unknown,
    /// The project of the first `file://` root (`None`: the home directory or `/`, shared).
    Known(Option<String>),
}

/// The roots last answered, and how many announcements the answer covers.
#[derive(Clone, Debug)]
struct Answer {
    roots: Roots,
    covers: u64,
}

/// The counter a session's announcements are read from.
struct Announcements {
    changes: RootsChanges,
    /// Whether the transport counts them; if not, the notification's handler does.
    by_transport: bool,
}

/// One session's roots.
pub(crate) struct SessionProject {
    answer: watch::Sender<Answer>,
    /// Set once the client declared roots in `initialize`.
    announcements: OnceLock<Announcements>,
}

impl SessionProject {
    pub(crate) fn new() -> SessionProject {
        SessionProject {
            answer: watch::Sender::new(Answer {
                roots: Roots::Unknown,
                covers: 0,
            }),
            announcements: OnceLock::new(),
        }
    }

    /// The client declared roots in `initialize` (whose extensions carry the transport's
    /// counter): calls wait for them from now on.
    pub(crate) fn expect(&self, from_transport: Option<&RootsChanges>) {
        let announcements = self.announcements.get_or_init(|| Announcements {
            by_transport: from_transport.is_some(),
            changes: from_transport.cloned().unwrap_or_default(),
        });
        // The first answer is owed as if announced.
        announcements.changes.announce();
    }

    /// `notifications/roots/list_changed` reached its handler: ask again.
    pub(crate) async fn changed(&self, peer: &Peer<RoleServer>) {
        let Some(announcements) = self.announcements.get() else {
            return;
        };
        if !announcements.by_transport {
            announcements.changes.announce();
        }
        self.refresh(peer).await;
    }

    /// Ask the client for its roots and keep their project.
    // rmcp marks roots deprecated (SEP-2577 will replace them); they are what clients send
    // today, the Python SDK and Claude Code included.
    #[allow(deprecated)]
    pub(crate) async fn refresh(&self, peer: &Peer<RoleServer>) {
        let Some(announcements) = self.announcements.get() else {
            return;
        };
        // Every announcement counted so far precedes this request, so its answer covers them.
        let covers = announcements.changes.count();
        let asked = tokio::time::timeout(ROOTS_WAIT, peer.list_roots()).await;
        let known = match asked {
            Ok(Ok(list)) => list
                .roots
                .iter()
                .find(|r| r.uri.starts_with("file://"))
                .map(|r| Roots::Known(project_for_uri(&r.uri))),
            Ok(Err(e)) => {
                errln!(
                    "coral: the client's roots/list failed ({e}); the launch directory's project stands"
                );
                None
            }
            Err(_) => {
                errln!(
                    "coral: the client did not answer roots/list within {} s; the launch \
                     directory's project stands",
                    ROOTS_WAIT.as_secs()
                );
                None
            }
        };
        let roots = known.unwrap_or(Roots::Unknown);
        // Two refreshes in flight: the one asked later wins, whichever answers first.
        self.answer.send_if_modified(|answer| {
            if covers < answer.covers {
                return false;
            }
            *answer = Answer { roots, covers };
            true
        });
    }

    /// The roots' project once known: `Some(project)` when the roots decided (`Some(None)`:
    /// shared), `None` when they do not, and the launch directory's project applies.
    pub(crate) async fn roots_project(&self) -> Option<Option<String>> {
        let owed = self.announcements.get()?.changes.count();
        let mut rx = self.answer.subscribe();
        let settled = tokio::time::timeout(ROOTS_WAIT, rx.wait_for(|a| a.covers >= owed)).await;
        match settled {
            Ok(Ok(answer)) => match &answer.roots {
                Roots::Known(p) => Some(p.clone()),
                Roots::Unknown => None,
            },
            _ => None,
        }
    }
}
