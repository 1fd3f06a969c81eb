//! Per-search scratch: which nodes a traversal has seen, reset in O(1) by bumping an epoch,
//! kept in a small pool so that searches on several threads do not allocate.

use std::sync::Mutex;

/// Marks by node: a node is visited when its mark equals the current epoch.
pub(crate) struct Visited {
    marks: Vec<u32>,
    epoch: u32,
}

impl Visited {
    fn new() -> Visited {
        Visited {
            marks: Vec::new(),
            epoch: 0,
        }
    }

    /// Forget every mark, sized for `nodes` nodes.
    fn reset(&mut self, nodes: usize) {
        if self.marks.len() < nodes {
            self.marks.resize(nodes, 0);
        }
        self.epoch = self.epoch.wrapping_add(1);
        if self.epoch == 0 {
            // After 2^32 searches the marks could alias: clear them once.
            self.marks.fill(0);
            self.epoch = 1;
        }
    }

    /// Marks `node`; true when it was not marked yet.
    #[inline]
    pub(crate) fn first_visit(&mut self, node: u32) -> bool {
        let mark = &mut self.marks[node as usize];
        if *mark == self.epoch {
            false
        } else {
            *mark = self.epoch;
            true
        }
    }
}

/// A pool of [`Visited`] buffers.
#[derive(Default)]
pub(crate) struct VisitedPool {
    free: Mutex<Vec<Visited>>,
}

impl VisitedPool {
    /// A reset buffer for `nodes` nodes (from the pool, or new).
    pub(crate) fn take(&self, nodes: usize) -> Visited {
        let mut v = self
            .free
            .lock()
            .ok()
            .and_then(|mut free| free.pop())
            .unwrap_or_else(Visited::new);
        v.reset(nodes);
        v
    }

    /// Returns a buffer to the pool (at most 8 are kept: one per concurrent search).
    pub(crate) fn give(&self, v: Visited) {
        if let Ok(mut free) = self.free.lock()
            && free.len() < 8
        {
            free.push(v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_reset_between_searches() {
        let pool = VisitedPool::default();
        let mut v = pool.take(4);
        assert!(v.first_visit(2));
        assert!(!v.first_visit(2));
        pool.give(v);
        let mut v = pool.take(8);
        assert!(v.first_visit(2));
        assert!(v.first_visit(7));
    }
}
