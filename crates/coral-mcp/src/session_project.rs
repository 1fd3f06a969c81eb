//! An MCP session's project under `--project auto` (docs/servers.md, "Projects"): the
//! workspace its client's roots name. A client that declares the roots capability is asked
//! for its roots once initialised and again on `notifications/roots/list_changed`; calls made
//! while the answer is awaited wait for it (at most [`ROOTS_WAIT`]), so the first insert of a
//! session is tagged like the rest. Without roots, or when they name no `file://` directory,
//! the launch directory's project stands.

use std::time::Duration;

use rmcp::RoleServer;
use rmcp::service::Peer;
use tokio::sync::watch;

use crate::project::project_for_uri;

/// Longest a call waits for the client's roots, and a roots request for its answer.
pub const ROOTS_WAIT: Duration = Duration::from_secs(3);

/// What the session knows of its client's roots.
#[derive(Clone, Debug, PartialEq)]
enum Roots {
    /// Nothing: the client declares no roots, or its answer named no directory.
    Unknown,
    /// Asked; the answer is awaited.
    Asking,
    /// The project of the first `file://` root (`None`: the home directory or `/`, shared).
    Known(Option<String>),
}

/// One session's roots.
pub(crate) struct SessionProject {
    roots: watch::Sender<Roots>,
}

impl SessionProject {
    pub(crate) fn new() -> SessionProject {
        SessionProject {
            roots: watch::Sender::new(Roots::Unknown),
        }
    }

    /// The client declared roots: calls wait for them from now on.
    pub(crate) fn expect(&self) {
        self.roots.send_replace(Roots::Asking);
    }

    /// Ask the client for its roots and keep their project.
    // rmcp marks roots deprecated (SEP-2577 will replace them); they are what clients send
    // today, the Python SDK and Claude Code included.
    #[allow(deprecated)]
    pub(crate) async fn refresh(&self, peer: &Peer<RoleServer>) {
        self.expect();
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
        self.roots.send_replace(known.unwrap_or(Roots::Unknown));
    }

    /// The roots' project once known: `Some(project)` when the roots decided (`Some(None)`:
    /// shared), `None` when they do not, and the launch directory's project applies.
    pub(crate) async fn roots_project(&self) -> Option<Option<String>> {
        let mut rx = self.roots.subscribe();
        let settled = tokio::time::timeout(ROOTS_WAIT, rx.wait_for(|r| *r != Roots::Asking)).await;
        match settled {
            Ok(Ok(r)) => match &*r {
                Roots::Known(p) => Some(p.clone()),
                _ => None,
            },
            _ => None,
        }
    }
}
