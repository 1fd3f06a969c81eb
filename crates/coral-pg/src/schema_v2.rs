//! Schema version 2 (docs/postgres.md, "Schema"): what tiers and governance need. The tier
//! copied onto `coral_vectors` (the vector ranking filters cold rows in the index scan), an
//! index for "the newest cold items", the archive, and one governance record per tenant.

/// Version 2's DDL, run once in the migration's transaction (`schema.rs`).
pub(crate) const V2: &str = r#"
ALTER TABLE coral_vectors ADD COLUMN tier text NOT NULL DEFAULT 'hot'
    CHECK (tier IN ('hot', 'warm', 'cold'));
UPDATE coral_vectors v SET tier = i.tier FROM coral_items i
    WHERE i.tenant = v.tenant AND i.key = v.key AND i.tier <> 'hot';

-- Tier moves read one tier; `memory.cold_scan_lines` reads the newest cold items.
CREATE INDEX coral_items_tier_created ON coral_items (tenant, tier, created);

-- Evicted, trimmed, distilled and project-quota memories, as the data directory's archive
-- keeps them: the item whole (`jsonb`, its counters at the time), why, when, and the bytes the
-- disk quota counts for the entry.
CREATE TABLE coral_archive (
    tenant text NOT NULL,
    seq bigint GENERATED ALWAYS AS IDENTITY,
    item_id text NOT NULL,
    tier text NOT NULL,
    reason text NOT NULL,
    summary_id text,
    archived_at double precision NOT NULL,
    item jsonb NOT NULL,
    bytes bigint NOT NULL,
    PRIMARY KEY (tenant, seq)
);
CREATE INDEX coral_archive_item ON coral_archive (tenant, item_id, seq);

-- The removal guard's record of each tenant (the data directory's coral_governance.json):
-- the limits governance last ran under and the log of removals, as the facade writes them.
CREATE TABLE coral_governance (
    tenant text NOT NULL,
    record jsonb NOT NULL,
    PRIMARY KEY (tenant)
);
"#;
