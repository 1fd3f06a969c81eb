//! Which process owns an open turn, and whether that process is still running, so recovery
//! aborts only the turns of processes that died (several processes may share one database).

use std::path::Path;

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
        let pid = std::process::id();
        Owner {
            pid,
            started: start_ticks(pid).unwrap_or(0),
        }
    }

    /// A process by PID, with its start time when it is running.
    pub fn of_pid(pid: u32) -> Owner {
        Owner {
            pid,
            started: start_ticks(pid).unwrap_or(0),
        }
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

    /// Whether this process is still running. Unknown answers count as alive: recovery must
    /// never abort a live process's turn.
    pub fn alive(self) -> bool {
        if self.pid == std::process::id() {
            return true;
        }
        if Path::new("/proc/self/stat").exists() {
            return match start_ticks(self.pid) {
                // A different start time means the PID was reused by another process.
                Some(started) => self.started == 0 || started == self.started,
                None => false,
            };
        }
        // Elsewhere, `kill -0` tests existence without privileges.
        std::process::Command::new("kill")
            .args(["-0", &self.pid.to_string()])
            .stderr(std::process::Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(true)
    }
}

/// Start time of a running, non-zombie process from `/proc/<pid>/stat`.
fn start_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // "pid (comm) S ppid ...": the command may contain spaces and ')', so split after the last.
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // fields[0] is the state (field 3); start time is field 22, i.e. fields[19].
    if matches!(fields.first(), Some(&"Z") | Some(&"X")) {
        return None;
    }
    fields.get(19)?.parse().ok()
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
    fn a_reused_pid_is_not_the_same_process() {
        let me = Owner::current();
        if me.started == 0 {
            return; // no /proc: start times are not known here
        }
        // Our own PID always counts as alive; check with the parent process instead: the same
        // PID with a different start time is a recycled PID, i.e. another process.
        let parent = Owner::of_pid(parent_pid());
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
