//! Recovery: aborting the open turns whose process died (at start-up, across namespaces) or
//! that were left idle too long (one conversation).

use rusqlite::params;
use serde::Serialize;

use crate::error::{Result, invalid};
use crate::namespace::Namespace;
use crate::owner::Owner;
use crate::timeline::Timeline;
use crate::turn_row::{TURN_COLUMNS, TurnRow};
use crate::turns::abort_in;

/// A turn that recovery aborted.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Recovered {
    /// The turn.
    pub turn_id: String,
    /// Its conversation.
    pub conversation_id: String,
}

impl Timeline {
    /// Abort every open turn, in any namespace, whose owning process is no longer running
    /// (the process was killed between `begin_turn` and `complete_turn`). Run at start-up;
    /// turns of live processes, this one included, are left alone.
    pub fn recover_orphaned_turns(&self, now: f64) -> Result<Vec<Recovered>> {
        self.write(|tx| {
            // The one query that spans namespaces: recovery is the database's own upkeep, and
            // it returns ids only to the process that owns the file.
            let open: Vec<(String, String, String, String)> = tx
                .prepare_cached(
                    "SELECT hard_key, turn_id, conversation_id, owner FROM turns WHERE status = 'open'",
                )?
                .query_map([], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)))?
                .collect::<rusqlite::Result<_>>()?;
            let mut recovered = Vec::new();
            for (hk, turn_id, conversation_id, owner) in open {
                let owner = Owner::decode(&owner);
                if owner.is_some_and(Owner::alive) {
                    continue;
                }
                let turn = tx
                    .prepare_cached(&format!(
                        "SELECT {TURN_COLUMNS} FROM turns WHERE hard_key = ?1 AND turn_id = ?2"
                    ))?
                    .query_row(params![hk, turn_id], TurnRow::from_sql)?;
                let reason = match owner {
                    Some(o) => format!(
                        "recovered: the process that began this turn (pid {}) ended before \
                         completing it",
                        o.pid
                    ),
                    None => "recovered: the turn's owner is unreadable".to_string(),
                };
                abort_in(tx, &hk, &turn, &reason, now)?;
                recovered.push(Recovered { turn_id, conversation_id });
            }
            Ok(recovered)
        })
    }

    /// Abort the open turns of `ns`'s conversation with no activity for `idle_seconds` (a host
    /// that forgot to complete them), at most `limit` at once, oldest first.
    pub fn recover_stale_turns(
        &self,
        ns: &Namespace,
        idle_seconds: f64,
        now: f64,
        limit: usize,
    ) -> Result<Vec<Recovered>> {
        ns.validate()?;
        if !idle_seconds.is_finite() || idle_seconds < 0.0 {
            return invalid(format!(
                "idle_seconds must be a number ≥ 0, got {idle_seconds}"
            ));
        }
        let hk = ns.hard_key();
        self.write(|tx| {
            let stale: Vec<TurnRow> = tx
                .prepare_cached(&format!(
                    "SELECT {TURN_COLUMNS} FROM turns WHERE hard_key = ?1 AND conversation_id = ?2 \
                     AND status = 'open' AND last_at < ?3 ORDER BY last_at LIMIT ?4"
                ))?
                .query_map(
                    params![hk, ns.conversation_id, now - idle_seconds, limit as i64],
                    TurnRow::from_sql,
                )?
                .collect::<rusqlite::Result<_>>()?;
            let reason = format!("recovered: no activity for {idle_seconds} s");
            let mut out = Vec::new();
            for turn in stale {
                abort_in(tx, &hk, &turn, &reason, now)?;
                out.push(Recovered {
                    turn_id: turn.turn_id,
                    conversation_id: turn.conversation_id,
                });
            }
            Ok(out)
        })
    }
}
