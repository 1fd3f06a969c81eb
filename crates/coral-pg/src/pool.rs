//! The bounded connection pool and its transactions: a synchronous API over tokio-postgres
//! with a client-side deadline on every call (docs/postgres.md, "Connections").
//!
//! Each connection's I/O task runs on one private runtime thread; the calling thread waits
//! for its query futures with a small parking executor (`wait`), never entering the runtime,
//! so the engine stays synchronous and a caller that is itself a tokio worker does not panic.
//! A call that passes its deadline drops its connection (the server rolls back what the
//! dropped session had open), so a half-done transaction is never committed.

use std::collections::HashMap;
use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, Thread};
use std::time::{Duration, Instant};

use tokio_postgres::types::ToSql;
use tokio_postgres::{Client, NoTls, Row, Statement};

use crate::error::{Error, Result};
use crate::options::{PgOptions, redact_url};

/// Most attempts of a transaction the server aborted as a deadlock or serialization failure.
const ATTEMPTS: usize = 5;

/// A bounded set of connections to one database.
pub(crate) struct Pool {
    runtime: tokio::runtime::Runtime,
    config: tokio_postgres::Config,
    /// `host:port`, for messages.
    pub(crate) server: String,
    options: PgOptions,
    state: Mutex<PoolState>,
    freed: Condvar,
}

#[derive(Default)]
struct PoolState {
    idle: Vec<Conn>,
    /// Connections open or being opened, idle ones included.
    open: usize,
}

/// One connection and its prepared statements.
struct Conn {
    client: Client,
    statements: HashMap<String, Statement>,
}

impl Pool {
    /// A pool for `options` (checked); no connection is opened yet.
    pub(crate) fn new(options: PgOptions) -> Result<Pool> {
        options.check()?;
        let config: tokio_postgres::Config =
            options
                .url
                .parse()
                .map_err(|e: tokio_postgres::Error| Error::InvalidUrl {
                    url: redact_url(&options.url),
                    detail: e.to_string(),
                })?;
        let server = server_name(&config);
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("coral-pg-io")
            .enable_all()
            .build()
            .map_err(|e| Error::Unreachable {
                server: server.clone(),
                detail: format!("cannot start the client's i/o thread: {e}"),
            })?;
        Ok(Pool {
            runtime,
            config,
            server,
            options,
            state: Mutex::new(PoolState::default()),
            freed: Condvar::new(),
        })
    }

    /// The options the pool was made with.
    pub(crate) fn options(&self) -> &PgOptions {
        &self.options
    }

    /// Runs `body` in one transaction (`READ COMMITTED`), committed when it returns `Ok`,
    /// rolled back otherwise. A deadlock or serialization failure the server reports runs the
    /// whole body again (up to [`ATTEMPTS`] times), so `body` must be idempotent up to its
    /// database effects.
    pub(crate) fn transaction<T>(
        &self,
        what: &'static str,
        body: impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        self.transaction_from("BEGIN", what, body)
    }

    /// [`Pool::transaction`] opened by `begin`: `BEGIN` with its modes and any `SET LOCAL`
    /// after it, sent as one message (one round trip).
    pub(crate) fn transaction_from<T>(
        &self,
        begin: &str,
        what: &'static str,
        body: impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        self.transaction_within(begin, what, 2 * self.options.statement_timeout, body)
    }

    /// [`Pool::transaction_from`] under a deadline of `limit` (a migration's: rebuilding an
    /// index of a large table takes longer than a call may).
    pub(crate) fn transaction_within<T>(
        &self,
        begin: &str,
        what: &'static str,
        limit: Duration,
        mut body: impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match self.try_transaction(begin, what, limit, &mut body) {
                Err(e) if e.retryable() && attempt < ATTEMPTS => {
                    // A short, growing pause lets the transaction that won go first.
                    thread::sleep(Duration::from_millis(2 << attempt));
                }
                other => return other,
            }
        }
    }

    fn try_transaction<T>(
        &self,
        begin: &str,
        what: &'static str,
        limit: Duration,
        body: &mut impl FnMut(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut lease = self.acquire()?;
        let deadline = Instant::now() + limit;
        let mut tx = Tx {
            conn: lease.conn.as_mut().ok_or_else(|| lost(what))?,
            deadline,
            what,
            broken: false,
            limit,
            committed: false,
            begin: None,
        };
        // The start goes out with the body's first statements (`Tx::query_all`): one round
        // trip less.
        tx.begin = Some(begin.to_string());
        let result = body(&mut tx);
        let result = match result {
            // The body may have committed already, pipelined with one more statement
            // (`Tx::commit_then`).
            Ok(value) if tx.committed => Ok(value),
            Ok(value) => tx.commit().map(|()| value),
            Err(e) => {
                // A start never sent opened nothing to roll back.
                let opened = tx.begin.take().is_none();
                if !tx.broken && opened {
                    // A failed statement already aborted the transaction; a rollback that
                    // fails too means the connection is gone, and the server rolls back.
                    if tx.simple("ROLLBACK").is_err() {
                        tx.broken = true;
                    }
                }
                Err(e)
            }
        };
        lease.broken = tx.broken;
        result
    }

    /// Runs `body` on a connection outside any transaction (statements that refuse to run in
    /// one, and the migration's own transactions).
    pub(crate) fn session<T>(
        &self,
        what: &'static str,
        body: impl FnOnce(&mut Tx<'_>) -> Result<T>,
    ) -> Result<T> {
        let mut lease = self.acquire()?;
        let limit = 2 * self.options.statement_timeout;
        let mut tx = Tx {
            conn: lease.conn.as_mut().ok_or_else(|| lost(what))?,
            deadline: Instant::now() + limit,
            what,
            broken: false,
            limit,
            committed: false,
            begin: None,
        };
        let result = body(&mut tx);
        lease.broken = tx.broken;
        result
    }

    /// A connection: an idle one, a new one while under the bound, else the first one freed
    /// within the acquire timeout.
    fn acquire(&self) -> Result<Lease<'_>> {
        let started = Instant::now();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(conn) = state.idle.pop() {
                if conn.client.is_closed() {
                    state.open -= 1;
                    continue;
                }
                return Ok(Lease::new(self, conn));
            }
            if state.open < self.options.max_connections {
                state.open += 1;
                drop(state);
                return match self.connect() {
                    Ok(conn) => Ok(Lease::new(self, conn)),
                    Err(e) => {
                        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
                        state.open -= 1;
                        self.freed.notify_one();
                        Err(e)
                    }
                };
            }
            let waited = started.elapsed();
            let Some(left) = self.options.acquire_timeout.checked_sub(waited) else {
                return Err(Error::PoolExhausted {
                    max: self.options.max_connections,
                    waited,
                });
            };
            state = self
                .freed
                .wait_timeout(state, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Opens one connection, handshake and session settings included, within the connect
    /// timeout.
    fn connect(&self) -> Result<Conn> {
        let config = self.config.clone();
        let timeout = self.options.connect_timeout;
        let unreachable = |detail: String| Error::Unreachable {
            server: self.server.clone(),
            detail,
        };
        let task = self.runtime.spawn(async move {
            let connected = tokio::time::timeout(timeout, config.connect(NoTls)).await;
            let (client, connection) = match connected {
                Ok(Ok(pair)) => pair,
                Ok(Err(e)) => return Err(e.to_string()),
                Err(_) => return Err(format!("no answer within {timeout:?}")),
            };
            // The connection's I/O: ends when the client is dropped or the server goes away.
            tokio::spawn(async move {
                let _ = connection.await;
            });
            Ok(client)
        });
        let deadline = Instant::now() + timeout + Duration::from_secs(1);
        let client = match wait(task, deadline) {
            Some(Ok(Ok(client))) => client,
            Some(Ok(Err(detail))) => return Err(unreachable(detail)),
            Some(Err(e)) => return Err(unreachable(format!("the connect task failed: {e}"))),
            None => return Err(unreachable(format!("no answer within {timeout:?}"))),
        };
        let ms = |d: Duration| d.as_millis().max(1);
        let settings = format!(
            "SET statement_timeout = {}; SET lock_timeout = {}; \
             SET idle_in_transaction_session_timeout = {}; SET application_name = 'coral'",
            ms(self.options.statement_timeout),
            ms(self.options.statement_timeout),
            ms(4 * self.options.statement_timeout),
        );
        let mut conn = Conn {
            client,
            statements: HashMap::new(),
        };
        let limit = self.options.connect_timeout;
        let mut tx = Tx {
            conn: &mut conn,
            deadline: Instant::now() + limit,
            what: "connection settings",
            broken: false,
            limit,
            committed: false,
            begin: None,
        };
        tx.simple(&settings)
            .map_err(|e| unreachable(format!("the session settings failed: {e}")))?;
        Ok(conn)
    }

    /// Puts a connection back, or forgets a broken one.
    fn release(&self, conn: Option<Conn>, broken: bool) {
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        match conn {
            Some(conn) if !broken && !conn.client.is_closed() => state.idle.push(conn),
            _ => state.open -= 1,
        }
        self.freed.notify_one();
    }
}

fn lost(what: &'static str) -> Error {
    Error::Database {
        what,
        detail: "the connection was lost".into(),
        code: None,
    }
}

/// `host:port` of the first host a config names.
fn server_name(config: &tokio_postgres::Config) -> String {
    let host = match config.get_hosts().first() {
        Some(tokio_postgres::config::Host::Tcp(h)) => h.clone(),
        Some(tokio_postgres::config::Host::Unix(p)) => p.display().to_string(),
        None => "localhost".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    format!("{host}:{port}")
}

/// A connection taken from the pool; given back on drop.
struct Lease<'a> {
    pool: &'a Pool,
    conn: Option<Conn>,
    broken: bool,
}

impl<'a> Lease<'a> {
    fn new(pool: &'a Pool, conn: Conn) -> Lease<'a> {
        Lease {
            pool,
            conn: Some(conn),
            broken: false,
        }
    }
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        self.pool.release(self.conn.take(), self.broken);
    }
}

/// One call's statements on one connection, under the call's deadline.
pub(crate) struct Tx<'c> {
    conn: &'c mut Conn,
    deadline: Instant,
    what: &'static str,
    /// Set when the connection can no longer be trusted (a deadline passed mid-statement).
    broken: bool,
    limit: Duration,
    /// Set by [`Tx::commit_then`]: the transaction is over, the pool does not commit it.
    committed: bool,
    /// The transaction's start (`BEGIN` and its settings), not sent yet: it goes out in front
    /// of the first statements (pipelined by [`Tx::query_all`], else on its own).
    begin: Option<String>,
}

/// A statement's parameters.
pub(crate) type Params<'p> = [&'p (dyn ToSql + Sync)];

impl Tx<'_> {
    /// The rows of prepared statement `sql` (prepared once per connection).
    pub(crate) fn query(&mut self, sql: &str, params: &Params<'_>) -> Result<Vec<Row>> {
        if self.begin.is_some() {
            return Ok(self.query_all(&[(sql, params)])?.pop().unwrap_or_default());
        }
        let statement = self.prepare(sql)?;
        let client = &self.conn.client;
        let done = wait(client.query(&statement, params), self.deadline);
        self.finish(done, false)
    }

    /// The first row of `sql`, if any.
    pub(crate) fn query_opt(&mut self, sql: &str, params: &Params<'_>) -> Result<Option<Row>> {
        Ok(self.query(sql, params)?.into_iter().next())
    }

    /// The one row `sql` returns.
    pub(crate) fn query_one(&mut self, sql: &str, params: &Params<'_>) -> Result<Row> {
        self.query_opt(sql, params)?.ok_or_else(|| Error::Database {
            what: self.what,
            detail: "a statement that returns one row returned none".into(),
            code: None,
        })
    }

    /// The number of rows `sql` changed.
    pub(crate) fn execute(&mut self, sql: &str, params: &Params<'_>) -> Result<u64> {
        self.send_begin()?;
        let statement = self.prepare(sql)?;
        let client = &self.conn.client;
        let done = wait(client.execute(&statement, params), self.deadline);
        self.finish(done, false)
    }

    /// The rows of several statements sent at once (pipelined: one round trip for all),
    /// in the order given.
    pub(crate) fn query_all(
        &mut self,
        statements: &[(&str, &Params<'_>)],
    ) -> Result<Vec<Vec<Row>>> {
        let mut prepared = Vec::with_capacity(statements.len());
        for (sql, _) in statements {
            prepared.push(self.prepare(sql)?);
        }
        let begin = self.begin.take();
        let client = &self.conn.client;
        // The transaction's start first, when it is still to go: it and every statement go
        // out before any answer is awaited (each statement runs after the one before it, so
        // the statements are inside the transaction).
        let mut started = begin.as_deref().map(|b| Box::pin(client.batch_execute(b)));
        let mut start_result = None;
        let mut pending: Vec<_> = prepared
            .iter()
            .zip(statements)
            .map(|(st, (_, params))| Some(Box::pin(client.query(st, params))))
            .collect();
        let mut done: Vec<Option<std::result::Result<Vec<Row>, tokio_postgres::Error>>> =
            (0..statements.len()).map(|_| None).collect();
        // Every future is polled on each round, so all requests go out before any answer is
        // awaited.
        let all = std::future::poll_fn(|cx| {
            let mut ready = true;
            if let Some(f) = &mut started {
                match f.as_mut().poll(cx) {
                    Poll::Ready(r) => {
                        start_result = Some(r);
                        started = None;
                    }
                    Poll::Pending => ready = false,
                }
            }
            for (slot, out) in pending.iter_mut().zip(done.iter_mut()) {
                if let Some(f) = slot {
                    match f.as_mut().poll(cx) {
                        Poll::Ready(r) => {
                            *out = Some(r);
                            *slot = None;
                        }
                        Poll::Pending => ready = false,
                    }
                }
            }
            if ready {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        });
        let finished = wait(all, self.deadline);
        drop((pending, started));
        if begin.is_some() {
            let r = match finished {
                Some(()) => start_result,
                None => None,
            };
            self.finish(r, false)?;
        }
        let mut rows = Vec::with_capacity(statements.len());
        for out in done {
            let r = match (finished, out) {
                (Some(()), Some(r)) => Some(r),
                _ => None,
            };
            rows.push(self.finish(r, false)?);
        }
        Ok(rows)
    }

    /// Runs `sql` (one or more statements without parameters) with the simple protocol.
    pub(crate) fn simple(&mut self, sql: &str) -> Result<()> {
        self.send_begin()?;
        let client = &self.conn.client;
        let done = wait(client.batch_execute(sql), self.deadline);
        self.finish(done, false)
    }

    /// Commits, and runs `sql` after the commit on its own (autocommitted, `READ COMMITTED`)
    /// in the same round trip. The outer result is the commit's (an error when its outcome is
    /// unknown, as [`Pool::transaction`]'s); the inner one the statement's, which cannot undo
    /// the commit. The pool does not commit again.
    pub(crate) fn commit_then(&mut self, sql: &str, params: &Params<'_>) -> Result<Result<u64>> {
        self.send_begin()?;
        let statement = self.prepare(sql)?;
        let client = &self.conn.client;
        let mut commit = Some(Box::pin(client.batch_execute("COMMIT")));
        let mut after = Some(Box::pin(client.execute(&statement, params)));
        let (mut committed, mut executed) = (None, None);
        // Both polled on each round: the COMMIT goes out first, the statement right behind it.
        let both = std::future::poll_fn(|cx| {
            if let Some(f) = &mut commit
                && let Poll::Ready(r) = f.as_mut().poll(cx)
            {
                committed = Some(r);
                commit = None;
            }
            if let Some(f) = &mut after
                && let Poll::Ready(r) = f.as_mut().poll(cx)
            {
                executed = Some(r);
                after = None;
            }
            if commit.is_none() && after.is_none() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        });
        let finished = wait(both, self.deadline);
        drop((commit, after));
        self.committed = true;
        let (committed, executed) = match finished {
            Some(()) => (committed, executed),
            None => (None, None),
        };
        self.finish(committed, true)?;
        Ok(self.finish(executed, false))
    }

    fn commit(&mut self) -> Result<()> {
        if self.begin.is_some() {
            // Nothing was sent: there is nothing to commit.
            self.begin = None;
            return Ok(());
        }
        let client = &self.conn.client;
        let done = wait(client.batch_execute("COMMIT"), self.deadline);
        self.finish(done, true)
    }

    /// Sends the transaction's start on its own when it is still to go.
    fn send_begin(&mut self) -> Result<()> {
        match self.begin.take() {
            Some(begin) => {
                let client = &self.conn.client;
                let done = wait(client.batch_execute(&begin), self.deadline);
                self.finish(done, false)
            }
            None => Ok(()),
        }
    }

    fn prepare(&mut self, sql: &str) -> Result<Statement> {
        if let Some(s) = self.conn.statements.get(sql) {
            return Ok(s.clone());
        }
        let client = &self.conn.client;
        let done = wait(client.prepare(sql), self.deadline);
        let statement = self.finish(done, false)?;
        self.conn
            .statements
            .insert(sql.to_string(), statement.clone());
        Ok(statement)
    }

    fn finish<T>(
        &mut self,
        done: Option<std::result::Result<T, tokio_postgres::Error>>,
        committing: bool,
    ) -> Result<T> {
        match done {
            Some(Ok(value)) => Ok(value),
            Some(Err(e)) => {
                if e.is_closed() || e.as_db_error().is_none() {
                    self.broken = true;
                }
                if committing && e.is_closed() {
                    return Err(Error::Timeout {
                        what: self.what,
                        after: self.limit,
                        outcome_unknown: true,
                    });
                }
                Err(Error::db(self.what, &e))
            }
            None => {
                self.broken = true;
                Err(Error::Timeout {
                    what: self.what,
                    after: self.limit,
                    outcome_unknown: committing,
                })
            }
        }
    }
}

/// Wakes the waiting thread.
struct Unpark(Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        self.0.unpark();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.unpark();
    }
}

/// Polls `future` on this thread until it is ready or `deadline` passes (`None`). The futures
/// waited on only talk to the runtime thread through channels, so no runtime is entered here.
fn wait<F: Future>(future: F, deadline: Instant) -> Option<F::Output> {
    let mut future = pin!(future);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    loop {
        if let Poll::Ready(value) = future.as_mut().poll(&mut cx) {
            return Some(value);
        }
        let left = deadline.checked_duration_since(Instant::now())?;
        if left.is_zero() {
            return None;
        }
        thread::park_timeout(left);
    }
}
