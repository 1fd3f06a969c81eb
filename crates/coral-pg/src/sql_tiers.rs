//! The statements of tiers and governance (docs/postgres.md, "Tiers and governance"), apart
//! from `sql.rs` so that the two can change independently; the same rule holds: each one
//! names `tenant` and takes the tenant as `$1` (checked by the test below).

/// One governance pass at a time per tenant ("govn" in ASCII as the seed): two processes
/// never plan removals from the same rows.
pub(crate) const LOCK_GOVERN: &str =
    "SELECT pg_advisory_xact_lock(hashtextextended($1, 1735357294))";

/// The heat inputs of every item of the tiers `$2`, by key.
pub(crate) const HEAT_OF_TIERS: &str = "SELECT i.key, i.tier, i.project, i.created, h.last_access, \
     h.access_count, i.importance, octet_length(i.content)::int8 FROM coral_items i \
     JOIN coral_heat h ON h.tenant = i.tenant AND h.key = i.key \
     WHERE i.tenant = $1 AND i.tier = ANY($2) ORDER BY i.key";

/// The heat inputs of every item of project `$2`, by key.
pub(crate) const HEAT_OF_PROJECT: &str = "SELECT i.key, i.tier, i.project, i.created, h.last_access, \
     h.access_count, i.importance, octet_length(i.content)::int8 FROM coral_items i \
     JOIN coral_heat h ON h.tenant = i.tenant AND h.key = i.key \
     WHERE i.tenant = $1 AND i.project = $2 ORDER BY i.key";

/// Items of project `$2`.
pub(crate) const COUNT_PROJECT: &str =
    "SELECT count(*) FROM coral_items WHERE tenant = $1 AND project = $2";

/// Per tier: items, content bytes, and project bytes (each project's name plus 16, as the
/// data directory's JSON spends on the key).
pub(crate) const USAGE: &str = "SELECT tier, count(*), coalesce(sum(octet_length(content)), 0)::int8, \
     coalesce(sum(octet_length(project) + 16), 0)::int8 FROM coral_items WHERE tenant = $1 GROUP BY tier";

/// Moves items `$2` to tier `$3`.
pub(crate) const MOVE_ITEMS: &str =
    "UPDATE coral_items SET tier = $3 WHERE tenant = $1 AND key = ANY($2) AND tier <> $3";

/// Their vectors' copy of the tier, in the same transaction.
pub(crate) const MOVE_VECTORS: &str =
    "UPDATE coral_vectors SET tier = $3 WHERE tenant = $1 AND key = ANY($2) AND tier <> $3";

/// Items by key with counters, row-locked (those a concurrent delete removed are not there).
pub(crate) const LOCK_ITEMS: &str = "SELECT i.item_id, i.tier, i.project, i.content, i.created, i.importance, \
     i.token_count, i.extra, h.access_count, h.last_access, i.key FROM coral_items i \
     JOIN coral_heat h ON h.tenant = i.tenant AND h.key = i.key \
     WHERE i.tenant = $1 AND i.key = ANY($2) ORDER BY i.key FOR UPDATE OF i";

/// Archive entries: ids `$2`, their tiers `$3`, items `$4`, bytes `$5`; reason `$6`, summary
/// `$7`, time `$8`.
pub(crate) const ARCHIVE_PUT: &str = "INSERT INTO coral_archive (tenant, item_id, tier, reason, summary_id, \
     archived_at, item, bytes) SELECT $1, u.id, u.tier, $6, $7, $8, u.item, u.bytes \
     FROM unnest($2::text[], $3::text[], $4::jsonb[], $5::int8[]) AS u(id, tier, item, bytes)";

/// The latest archive entry of an id.
pub(crate) const ARCHIVED: &str = "SELECT item FROM coral_archive WHERE tenant = $1 AND item_id = $2 \
     ORDER BY seq DESC LIMIT 1";

/// The archive's bytes.
pub(crate) const ARCHIVE_BYTES: &str =
    "SELECT coalesce(sum(bytes), 0)::int8 FROM coral_archive WHERE tenant = $1";

/// Drops the oldest archive entries until the rest hold at most `$2` bytes (the newest
/// entries are kept whole, as the data directory trims its file's oldest lines).
pub(crate) const TRIM_ARCHIVE: &str = "WITH kept AS (SELECT seq, sum(bytes) OVER (ORDER BY seq DESC) AS upto \
     FROM coral_archive WHERE tenant = $1) \
     DELETE FROM coral_archive a USING kept WHERE a.tenant = $1 AND a.seq = kept.seq \
     AND kept.upto > $2 RETURNING a.bytes";

/// The tenant's governance record.
pub(crate) const RECORD: &str = "SELECT record FROM coral_governance WHERE tenant = $1";

/// Writes it.
pub(crate) const SET_RECORD: &str = "INSERT INTO coral_governance (tenant, record) VALUES ($1, $2) \
     ON CONFLICT (tenant) DO UPDATE SET record = EXCLUDED.record";

/// The cold filter of a search (`retrieval.include_cold`, `memory.cold_scan_lines`): a row
/// passes when it is not cold or is among the `$n` newest cold items (ties by key, the order
/// they were stored). `alias.` prefixes the row's columns.
fn cold_pass(alias: &str, n: usize) -> String {
    format!(
        "({alias}tier <> 'cold' OR {alias}key IN (SELECT c.key FROM coral_items c \
         WHERE c.tenant = $1 AND c.tier = 'cold' ORDER BY c.created DESC, c.key LIMIT ${n}))"
    )
}

/// `sql::POSTINGS_IN_PROJECT` under the cold filter `$4` (the project filter `$3` may be null).
pub(crate) fn postings_filtered() -> String {
    format!(
        "SELECT p.term, array_agg(p.key), array_agg(p.tf), array_agg(p.len), \
         array_agg(($3::text IS NULL OR i.project IS NULL OR i.project = $3) AND {}) \
         FROM coral_postings p JOIN coral_items i ON i.tenant = p.tenant AND i.key = p.key \
         WHERE p.tenant = $1 AND p.term = ANY($2) GROUP BY p.term",
        cold_pass("i.", 4)
    )
}

/// The searchable population under the project filter `$2` (may be null) and the cold filter `$3`.
pub(crate) fn count_filtered() -> String {
    format!(
        "SELECT count(*) FROM coral_items WHERE tenant = $1 \
         AND ($2::text IS NULL OR project IS NULL OR project = $2) AND {}",
        cold_pass("", 3)
    )
}

/// `sql::nearest` under the cold filter `$6`.
pub(crate) fn nearest_filtered(dim: usize) -> String {
    crate::sql::nearest_where(dim, &format!(" AND {}", cold_pass("", 6)))
}

/// `sql::sample_dots` under the cold filter `$6`.
pub(crate) fn sample_dots_filtered(dim: usize) -> String {
    format!(
        "SELECT -(embedding <#> $2) FROM coral_vectors \
         WHERE tenant = $1 AND dim = {dim} AND ($3::text IS NULL OR project IS NULL OR project = $3) \
         AND ($5::text IS NULL OR embedder = $5) AND {} ORDER BY sample LIMIT $4",
        cold_pass("", 6)
    )
}

/// `sql::NEIGHBOURS` whose neighbours pass the cold filter `$4` as well.
pub(crate) fn neighbours_filtered() -> String {
    let pass = cold_pass("n.", 4);
    format!(
        "SELECT c.key, n.key, n.item_id, n.created, \
         ($3::text IS NULL OR n.project IS NULL OR n.project = $3) AND {pass}, false \
         FROM unnest($2::int8[]) AS k(key) CROSS JOIN LATERAL (SELECT key, created \
         FROM coral_items WHERE tenant = $1 AND key = k.key LIMIT 1) c \
         CROSS JOIN LATERAL (SELECT key, item_id, created, project, tier FROM coral_items x \
         WHERE x.tenant = $1 AND x.created <= c.created ORDER BY x.created DESC LIMIT $5) n \
         UNION ALL \
         SELECT c.key, n.key, n.item_id, n.created, \
         ($3::text IS NULL OR n.project IS NULL OR n.project = $3) AND {pass}, true \
         FROM unnest($2::int8[]) AS k(key) CROSS JOIN LATERAL (SELECT key, created \
         FROM coral_items WHERE tenant = $1 AND key = k.key LIMIT 1) c \
         CROSS JOIN LATERAL (SELECT key, item_id, created, project, tier FROM coral_items x \
         WHERE x.tenant = $1 AND x.created >= c.created ORDER BY x.created LIMIT $5) n"
    )
}

/// `sql::CREATED_BETWEEN` under the cold filter `$6`.
pub(crate) fn created_between_filtered() -> String {
    format!(
        "SELECT key, created FROM coral_items \
         WHERE tenant = $1 AND created >= $2 AND created <= $3 \
         AND ($5::text IS NULL OR project IS NULL OR project = $5) AND {} \
         ORDER BY created DESC, key LIMIT $4",
        cold_pass("", 6)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// docs/postgres.md, "Tenancy", for these statements too.
    #[test]
    fn every_statement_is_scoped_to_the_tenant() {
        let fixed = [
            LOCK_GOVERN,
            HEAT_OF_TIERS,
            HEAT_OF_PROJECT,
            COUNT_PROJECT,
            USAGE,
            MOVE_ITEMS,
            MOVE_VECTORS,
            LOCK_ITEMS,
            ARCHIVE_PUT,
            ARCHIVED,
            ARCHIVE_BYTES,
            TRIM_ARCHIVE,
            RECORD,
            SET_RECORD,
        ];
        let dynamic = [
            postings_filtered(),
            count_filtered(),
            nearest_filtered(64),
            sample_dots_filtered(64),
            neighbours_filtered(),
            created_between_filtered(),
        ];
        for sql in fixed
            .iter()
            .copied()
            .chain(dynamic.iter().map(String::as_str))
        {
            if let Some(insert) = sql.split("INSERT INTO ").nth(1) {
                let columns = insert.split(')').next().unwrap_or("");
                assert!(columns.contains("(tenant,"), "{sql}");
                assert!(
                    insert.contains("VALUES ($1,") || insert.contains("SELECT $1,"),
                    "{sql}"
                );
            } else {
                assert!(
                    sql.contains("tenant = $1") || sql.contains("hashtextextended($1,"),
                    "{sql}"
                );
            }
            // The cold filter's sub-select is the tenant's too.
            assert_eq!(
                sql.matches("coral_items c WHERE").count(),
                sql.matches("coral_items c WHERE c.tenant = $1").count(),
                "{sql}"
            );
        }
    }
}
