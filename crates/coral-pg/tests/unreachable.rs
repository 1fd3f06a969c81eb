//! A server that is down or stops answering gives a clear error within the deadlines, never a
//! hang, and leaves nothing half-written (docs/postgres.md, "Connections").
//!
//! The first tests need no database: a closed port and a listener that never answers. The
//! last runs a real server behind a loopback proxy that stops forwarding at the moment the
//! client sends `COMMIT`, so the transaction has done all its work and is never committed.

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use coral_pg::{Error, PgOptions, PgStore};

use common::Memory;

fn quick(url: &str) -> PgOptions {
    PgOptions {
        connect_timeout: Duration::from_millis(300),
        statement_timeout: Duration::from_millis(500),
        acquire_timeout: Duration::from_millis(500),
        ..PgOptions::new(url)
    }
}

#[test]
fn a_closed_port_is_unreachable_and_says_where() {
    let port = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let url = format!("postgres://coral@127.0.0.1:{port}/coral");
    let e = PgStore::connect(quick(&url), "t", 8).unwrap_err();
    assert!(matches!(e, Error::Unreachable { .. }), "{e:?}");
    let text = e.to_string();
    assert!(
        text.starts_with(&format!("cannot reach postgres at 127.0.0.1:{port}")),
        "{text}"
    );
    assert!(text.contains("check that the server runs"), "{text}");
}

#[test]
fn a_server_that_never_answers_is_given_up_on() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Accepts, reads the startup message, answers nothing.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for s in listener.incoming().flatten() {
            held.push(s);
        }
    });
    let url = format!("postgres://coral@127.0.0.1:{port}/coral");
    let e = PgStore::connect(quick(&url), "t", 8).unwrap_err();
    match &e {
        Error::Unreachable { detail, .. } => {
            assert!(detail.contains("no answer within 300ms"), "{e}")
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn bad_urls_and_options_are_refused_without_the_password() {
    let e = PgStore::connect(PgOptions::new("postgres://coral:hunter2@[::1"), "t", 8).unwrap_err();
    let text = e.to_string();
    assert!(text.starts_with("postgres url"), "{text}");
    assert!(!text.contains("hunter2"), "{text}");
    let mut o = PgOptions::new("postgres://coral@127.0.0.1:1/coral");
    o.max_connections = 0;
    assert!(matches!(
        PgStore::connect(o, "t", 8),
        Err(Error::InvalidInput(_))
    ));
    let e =
        PgStore::connect(PgOptions::new("postgres://coral@127.0.0.1:1/coral"), "", 8).unwrap_err();
    assert!(e.to_string().starts_with("tenant \"\" is empty"), "{e}");
}

/// A loopback TCP proxy to the real server that, once armed, swallows everything the client
/// sends from the first `COMMIT` on.
struct Proxy {
    port: u16,
    armed: Arc<AtomicBool>,
    sockets: Arc<Mutex<Vec<TcpStream>>>,
}

impl Proxy {
    fn start(upstream: String) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let armed = Arc::new(AtomicBool::new(false));
        let sockets: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let (a, s) = (armed.clone(), sockets.clone());
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let Ok(server) = TcpStream::connect(&upstream) else {
                    continue;
                };
                s.lock()
                    .unwrap()
                    .extend([client.try_clone().unwrap(), server.try_clone().unwrap()]);
                let frozen = Arc::new(AtomicBool::new(false));
                let (c1, s1) = (client.try_clone().unwrap(), server.try_clone().unwrap());
                let (a1, f1) = (a.clone(), frozen.clone());
                std::thread::spawn(move || pump(c1, s1, Some((a1, f1))));
                std::thread::spawn(move || pump(server, client, None));
            }
        });
        Proxy {
            port,
            armed,
            sockets,
        }
    }

    /// Closes every connection through the proxy, as a network failure would.
    fn cut(&self) {
        for s in self.sockets.lock().unwrap().drain(..) {
            let _ = s.shutdown(Shutdown::Both);
        }
    }
}

/// Copies `from` to `to`; with `freeze`, stops forwarding for good once armed and a chunk
/// holds `COMMIT`.
fn pump(
    mut from: TcpStream,
    mut to: TcpStream,
    freeze: Option<(Arc<AtomicBool>, Arc<AtomicBool>)>,
) {
    let mut buf = [0u8; 16 * 1024];
    loop {
        let n = match from.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => n,
        };
        if let Some((armed, frozen)) = &freeze {
            if armed.load(Ordering::SeqCst) && buf[..n].windows(6).any(|w| w == b"COMMIT") {
                frozen.store(true, Ordering::SeqCst);
            }
            if frozen.load(Ordering::SeqCst) {
                continue;
            }
        }
        if to.write_all(&buf[..n]).is_err() {
            return;
        }
    }
}

#[test]
fn a_server_that_stops_answering_at_commit_times_out_and_commits_nothing() {
    let Some(url) = common::url() else {
        return;
    };
    let tenant = common::tenant("stalled");
    let direct = common::store_for(&url, &tenant);
    let upstream = {
        let rest = url.split_once('@').map_or(url.as_str(), |p| p.1);
        rest.split('/').next().unwrap().to_string()
    };
    let proxy = Proxy::start(upstream.clone());
    let proxied_url = url.replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
    let proxied = PgStore::connect(quick(&proxied_url), &tenant, common::DIM).unwrap();
    let kept = Memory::new("written before the network failed", 1.0);
    proxied.insert(&kept.new_memory(), 0.7).unwrap();

    proxy.armed.store(true, Ordering::SeqCst);
    let lost = Memory::new("never committed because commit never arrived", 2.0);
    let e = proxied.insert(&lost.new_memory(), 0.7).unwrap_err();
    match &e {
        Error::Timeout {
            what: "insert",
            outcome_unknown: true,
            ..
        } => {}
        other => panic!("{other:?}"),
    }
    assert!(
        e.to_string().contains("may or may not have happened"),
        "{e}"
    );
    proxy.cut();
    // The server rolls the abandoned transaction back when its session ends.
    let mut left = None;
    for _ in 0..100 {
        if direct.get(&[lost.id()]).unwrap().is_empty() && direct.count().unwrap().total() == 1 {
            left = Some(());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(left.is_some(), "the uncommitted insert became visible");
    assert_eq!(direct.get(&[kept.id()]).unwrap().len(), 1);
    // The proxied store recovers once the network does: a fresh connection.
    proxy.armed.store(false, Ordering::SeqCst);
    let again = Memory::new("written after the network came back", 3.0);
    proxied.insert(&again.new_memory(), 0.7).unwrap();
    assert_eq!(direct.count().unwrap().total(), 2);
}
