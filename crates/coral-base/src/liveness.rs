//! Whether a process is running, with one rule for every caller: only a process known to be
//! gone is dead; an answer the system cannot give counts as alive.
//!
//! Lock files and open turns are taken over from dead processes. Breaking a live process's lock
//! or aborting its turn loses its work, while waiting for a dead one only costs time, so every
//! doubt resolves to "alive".

use std::io::ErrorKind;
use std::path::Path;

/// What the system says about a PID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Liveness {
    /// Running (not a zombie), with its start time in clock ticks since boot where the system
    /// tells it (Linux `/proc/<pid>/stat` field 22), so a reused PID can be told apart.
    Alive {
        /// Start time, when known.
        started: Option<u64>,
    },
    /// Known to be gone: no such process, or a zombie.
    Dead,
    /// The system did not say (no permission, an unreadable or unexpected answer).
    Unknown,
}

impl Liveness {
    /// The one rule: anything but [`Liveness::Dead`] counts as alive.
    pub fn counts_as_alive(self) -> bool {
        !matches!(self, Liveness::Dead)
    }
}

/// The liveness of `pid` (this process is always alive; PID 0 is nobody).
pub fn check(pid: u32) -> Liveness {
    check_with(pid, |path| std::fs::read_to_string(path))
}

/// [`check`] reading `/proc` through `read` (tests give it answers the system rarely gives).
pub fn check_with(pid: u32, read: impl Fn(&Path) -> std::io::Result<String>) -> Liveness {
    if pid == 0 {
        return Liveness::Dead;
    }
    if Path::new("/proc/self/stat").exists() {
        let mine = pid == std::process::id();
        return match read(Path::new(&format!("/proc/{pid}/stat"))) {
            Ok(stat) => parse_stat(&stat).unwrap_or(if mine {
                Liveness::Alive { started: None }
            } else {
                Liveness::Unknown
            }),
            Err(e) if e.kind() == ErrorKind::NotFound && !mine => Liveness::Dead,
            Err(_) if mine => Liveness::Alive { started: None },
            Err(_) => Liveness::Unknown,
        };
    }
    if pid == std::process::id() {
        return Liveness::Alive { started: None };
    }
    // Elsewhere (macOS, BSD): `kill -0` tests existence without privileges; only "no such
    // process" is an answer that the process is gone.
    match std::process::Command::new("kill")
        .args(["-0", &pid.to_string()])
        .output()
    {
        Ok(o) if o.status.success() => Liveness::Alive { started: None },
        Ok(o) if String::from_utf8_lossy(&o.stderr).contains("No such process") => Liveness::Dead,
        _ => Liveness::Unknown,
    }
}

/// `pid (comm) S ppid …`: the command may hold spaces and `)`, so fields count from the last
/// `)`. `None` when the text is not of that shape.
fn parse_stat(stat: &str) -> Option<Liveness> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    match *fields.first()? {
        "Z" | "X" | "x" => Some(Liveness::Dead),
        _ => Some(Liveness::Alive {
            started: fields.get(19).and_then(|s| s.parse().ok()),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_lives_and_a_reaped_child_is_dead() {
        assert!(matches!(check(std::process::id()), Liveness::Alive { .. }));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert_eq!(check(pid), Liveness::Dead);
        assert_eq!(check(0), Liveness::Dead);
    }

    #[test]
    fn what_the_system_cannot_answer_counts_as_alive() {
        let pid = 4_000_000; // not ours, so the reader decides
        let denied = |_: &Path| Err(std::io::Error::from(ErrorKind::PermissionDenied));
        assert_eq!(check_with(pid, denied), Liveness::Unknown);
        assert!(Liveness::Unknown.counts_as_alive());
        let garbled = |_: &Path| Ok("garbage without the shape".to_string());
        assert_eq!(check_with(pid, garbled), Liveness::Unknown);
        let zombie = |_: &Path| Ok("42 (sleep) Z 1 2 3".to_string());
        assert_eq!(check_with(pid, zombie), Liveness::Dead);
        let gone = |_: &Path| Err(std::io::Error::from(ErrorKind::NotFound));
        assert_eq!(check_with(pid, gone), Liveness::Dead);
        let stat = "42 (a) b) S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 777 19";
        assert_eq!(
            check_with(pid, |_: &Path| Ok(stat.to_string())),
            Liveness::Alive { started: Some(777) }
        );
    }
}
