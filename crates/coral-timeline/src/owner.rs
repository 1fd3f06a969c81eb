//! Which process owns an open turn, and whether that process is still running, so recovery
//! aborts only the turns of processes that died (several processes may share one database).
//! Liveness is `coral_base::liveness`'s one rule: only a process known to be gone is dead.

use coral_base::liveness::{self, Liveness};

/// A process, as recorded on the turns it begins: its PID and, where the system tells, its
/// start time (so a recycled PID is not mistaken for the original process).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Owner {
    /// Process id.
    pub pid: u32,
    /// Start time in clock ticks since boot (Linux `/proc/<pid>/stat` field 22), 0 if unknown.
    pub started: u64,
}

impl Owner {
    /// This process.
    pub fn current() -> Owner {
        Owner::of_pid(std::process::id())
    }

    /// A process by PID, with its start time when it is running and the system tells it.
    pub fn of_pid(pid: u32) -> Owner {
        let started = match liveness::check(pid) {
            Liveness::Alive { started } => started.unwrap_or(0),
            Liveness::Dead | Liveness::Unknown => 0,
        };
        Owner { pid, started }
    }

    /// `pid:started`, as stored.
    pub(crate) fn encode(self) -> String {
        format!("{}:{}", self.pid, self.started)
    }

    pub(crate) fn decode(s: &str) -> Option<Owner> {
        let (pid, started) = s.split_once(':')?;
        Some(Owner {
            pid: pid.parse().ok()?,
            started: started.parse().ok()?,
        })
    }

    /// Whether this process may still be running. Unknown answers count as alive: recovery
    /// must never abort a live process's turn.
    pub fn alive(self) -> bool {
        self.alive_given(liveness::check(self.pid))
    }

    /// The rule, given what the system said about the PID.
    fn alive_given(self, now: Liveness) -> bool {
        match now {
            // A different start time means the PID was reused by another process.
            Liveness::Alive {
                started: Some(started),
            } => self.started == 0 || started == self.started,
            Liveness::Alive { started: None } | Liveness::Unknown => true,
            Liveness::Dead => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_is_alive_and_a_reaped_child_is_not() {
        assert!(Owner::current().alive());
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!Owner { pid, started: 1 }.alive());
        let me = Owner::current();
        assert_eq!(Owner::decode(&me.encode()), Some(me));
        assert_eq!(Owner::decode("x"), None);
    }

    #[test]
    fn only_a_process_known_to_be_gone_or_replaced_is_dead() {
        let owner = Owner {
            pid: 4242,
            started: 777,
        };
        let check = |now: Liveness, alive: bool| {
            assert_eq!(owner.alive_given(now), alive, "{now:?}");
        };
        check(Liveness::Unknown, true);
        check(Liveness::Alive { started: None }, true);
        check(Liveness::Alive { started: Some(777) }, true);
        check(Liveness::Alive { started: Some(778) }, false); // the PID was reused
        check(Liveness::Dead, false);
        let unknown_start = Owner {
            started: 0,
            ..owner
        };
        assert!(unknown_start.alive_given(Liveness::Alive { started: Some(1) }));
    }

    #[test]
    fn a_reused_pid_is_not_the_same_process() {
        // The parent process is alive; the same PID with another start time is a recycled
        // PID, i.e. another process.
        let parent = Owner::of_pid(parent_pid());
        assert_ne!(parent.started, 0, "/proc tells start times here");
        assert!(parent.alive());
        assert!(
            !Owner {
                started: parent.started + 1,
                ..parent
            }
            .alive()
        );
    }

    fn parent_pid() -> u32 {
        let stat = std::fs::read_to_string("/proc/self/stat").unwrap();
        let rest = &stat[stat.rfind(')').unwrap() + 1..];
        rest.split_whitespace().nth(1).unwrap().parse().unwrap()
    }
}
