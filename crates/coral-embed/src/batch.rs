//! `BatchingEmbedder`: concurrent callers' texts share one model call (docs/embeddings.md).
//!
//! The first request to arrive while no batch is open becomes the batch's leader. It waits for
//! company, at most `window`, and no longer than it takes as many requests as the last batch had
//! to queue, so callers in a steady loop are batched without waiting out the window each time.
//! Then it waits for the model (batches run
//! one at a time; the queue keeps filling meanwhile), takes every request queued, embeds all
//! their texts in one call and hands each caller its rows. With a zero window every call goes
//! straight to the model.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::{Embedder, Error, Result};

struct Request {
    texts: Vec<String>,
    reply: Sender<Result<Vec<Vec<f32>>>>,
}

#[derive(Default)]
struct Queue {
    pending: Vec<Request>,
    open: bool,
    /// Requests in the last batch: how many the next leader expects.
    last_batch: usize,
}

/// Wraps an embedder so that concurrent calls within a time window become one call.
pub struct BatchingEmbedder {
    inner: Arc<dyn Embedder>,
    window: Duration,
    queue: Mutex<Queue>,
    /// Signalled when a request is queued.
    arrived: std::sync::Condvar,
    /// Held while a batch runs, so the next batch gathers until the model is free.
    running: Mutex<()>,
    calls: AtomicU64,
    requests: AtomicU64,
    early: AtomicU64,
}

/// Counters of a [`BatchingEmbedder`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BatchStats {
    /// `embed` calls received.
    pub requests: u64,
    /// Calls made to the wrapped embedder.
    pub calls: u64,
    /// Batches that started before the window ran out, because as many requests as the last
    /// batch had were queued.
    pub early: u64,
}

impl BatchingEmbedder {
    /// Batch calls to `inner` that arrive within `window` of each other.
    pub fn new(inner: Arc<dyn Embedder>, window: Duration) -> BatchingEmbedder {
        BatchingEmbedder {
            inner,
            window,
            queue: Mutex::new(Queue::default()),
            arrived: std::sync::Condvar::new(),
            running: Mutex::new(()),
            calls: AtomicU64::new(0),
            requests: AtomicU64::new(0),
            early: AtomicU64::new(0),
        }
    }

    /// The wrapped embedder.
    pub fn inner(&self) -> &Arc<dyn Embedder> {
        &self.inner
    }

    /// The batching window.
    pub fn window(&self) -> Duration {
        self.window
    }

    /// Requests received and model calls made so far.
    pub fn stats(&self) -> BatchStats {
        BatchStats {
            requests: self.requests.load(Ordering::Relaxed),
            calls: self.calls.load(Ordering::Relaxed),
            early: self.early.load(Ordering::Relaxed),
        }
    }

    fn call(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.inner.embed(texts)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        // The queue is only pushed to and taken whole; a panic cannot leave it half-changed.
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Lead one batch: gather, wait for the model, take the queue, run it, reply to everyone.
    fn lead(&self) {
        {
            let deadline = std::time::Instant::now() + self.window;
            let mut queue = self.lock();
            // After a batch of one (or none yet) nothing says company is coming: wait the
            // whole window for it.
            let expected = match queue.last_batch {
                0 | 1 => usize::MAX,
                n => n,
            };
            loop {
                if queue.pending.len() >= expected {
                    self.early.fetch_add(1, Ordering::Relaxed);
                    break;
                }
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    break;
                }
                queue = self
                    .arrived
                    .wait_timeout(queue, left)
                    .unwrap_or_else(|e| e.into_inner())
                    .0;
            }
        }
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let batch = {
            let mut queue = self.lock();
            queue.open = false;
            queue.last_batch = queue.pending.len();
            std::mem::take(&mut queue.pending)
        };
        let texts: Vec<&str> = batch
            .iter()
            .flat_map(|r| r.texts.iter().map(String::as_str))
            .collect();
        let outcome = self.call(&texts);
        // Free the model before anyone hears back: the callers' next batch gathers while the
        // replies go out.
        drop(running);
        match outcome {
            Ok(rows) if rows.len() == texts.len() => {
                let mut rows = rows.into_iter();
                for r in batch {
                    let mine: Vec<Vec<f32>> = rows.by_ref().take(r.texts.len()).collect();
                    // A caller that went away needs no answer.
                    let _ = r.reply.send(Ok(mine));
                }
            }
            outcome => {
                let detail = match outcome {
                    Err(e) => e.to_string(),
                    Ok(rows) => format!("{} vectors for {} texts", rows.len(), texts.len()),
                };
                for r in batch {
                    let _ = r.reply.send(Err(Error::Model {
                        model: self.inner.name().to_string(),
                        detail: format!("batched embedding failed: {detail}"),
                    }));
                }
            }
        }
    }
}

impl Embedder for BatchingEmbedder {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn dim(&self) -> usize {
        self.inner.dim()
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>> {
        self.requests.fetch_add(1, Ordering::Relaxed);
        if self.window.is_zero() || texts.is_empty() {
            return self.call(texts);
        }
        let (reply, answer) = channel();
        let leader = {
            let mut queue = self.lock();
            queue.pending.push(Request {
                texts: texts.iter().map(|t| t.to_string()).collect(),
                reply,
            });
            !std::mem::replace(&mut queue.open, true)
        };
        self.arrived.notify_all();
        if leader {
            self.lead();
        }
        answer.recv().unwrap_or_else(|_| {
            Err(Error::Model {
                model: self.inner.name().to_string(),
                detail: "the batch this text was part of was abandoned".into(),
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::HashEmbedder;
    use std::sync::Barrier;

    #[test]
    fn concurrent_calls_share_one_model_call_and_get_their_own_rows() {
        let hash = Arc::new(HashEmbedder::new(16).unwrap());
        let batcher = Arc::new(BatchingEmbedder::new(
            hash.clone(),
            Duration::from_millis(200),
        ));
        let barrier = Arc::new(Barrier::new(8));
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let (b, barrier) = (batcher.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    let texts = [format!("text {i}"), format!("other {i}")];
                    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
                    (
                        refs.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
                        b.embed(&refs).unwrap(),
                    )
                })
            })
            .collect();
        for h in handles {
            let (texts, rows) = h.join().unwrap();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            assert_eq!(rows, hash.embed(&refs).unwrap());
        }
        let stats = batcher.stats();
        assert_eq!(stats.requests, 8);
        assert!(stats.calls < 8, "{stats:?}");
    }

    /// Callers in a loop: after the first batch (which waits the window), each batch starts as
    /// soon as the last batch's callers are back, without waiting the window out.
    #[test]
    fn steady_callers_do_not_wait_out_the_window() {
        let batcher = Arc::new(BatchingEmbedder::new(
            Arc::new(HashEmbedder::new(16).unwrap()),
            Duration::from_millis(300),
        ));
        let barrier = Arc::new(Barrier::new(4));
        let handles: Vec<_> = (0..4)
            .map(|i| {
                let (b, barrier) = (batcher.clone(), barrier.clone());
                std::thread::spawn(move || {
                    barrier.wait();
                    for round in 0..6 {
                        let text = format!("caller {i} round {round}");
                        assert_eq!(b.embed(&[text.as_str()]).unwrap().len(), 1);
                    }
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        let stats = batcher.stats();
        assert_eq!(stats.requests, 24);
        assert!(stats.calls <= 12, "{stats:?}");
        assert!(stats.early >= 1, "{stats:?}");
    }

    #[test]
    fn zero_window_calls_straight_through() {
        let batcher =
            BatchingEmbedder::new(Arc::new(HashEmbedder::new(8).unwrap()), Duration::ZERO);
        assert_eq!(batcher.embed(&["a", "b"]).unwrap().len(), 2);
        assert_eq!(
            batcher.stats(),
            BatchStats {
                requests: 1,
                calls: 1,
                early: 0
            }
        );
    }
}
