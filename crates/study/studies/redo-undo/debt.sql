-- The deferred-write debt a load leaves behind, PostgreSQL's stand-in for
-- undo: the table's pages not yet marked all-frozen in its visibility map
-- (the pages a VACUUM (FREEZE) still has to freeze, logged or not), the
-- blocks the first full read after a checkpoint dirties (hint bits), and
-- the WAL of the first VACUUM (FREEZE). A checkpoint does not write an
-- UNLOGGED table's buffers, so they are still dirty from the load when the
-- first read sets their hint bits: it dirties none anew, though the debt
-- is there (its pages are not frozen), and its freeze writes no WAL only
-- because nothing of an unlogged table is logged.
SELECT pg_relation_size('t') / current_setting('block_size')::int - all_frozen AS unfrozen_pages
  FROM pg_visibility_map_summary('t');
CHECKPOINT;
SELECT ((j->0->'Plan'->>'Shared Dirtied Blocks')::int
      + (j->0->'Plan'->>'Local Dirtied Blocks')::int) AS firstread_dirtied
  FROM (SELECT explain_json('SELECT count(*) FROM t') AS j) s;
-- The freeze's WAL is read as the distance the WAL's insert position
-- moved, which every version has (pg_stat_wal is 14's, its flush on
-- demand 15's): it holds the WAL pages' headers too (24 bytes per 8 KiB)
-- and anything another process logged meanwhile (nothing, on the
-- study's idle private server, but a checkpoint's or a standby
-- snapshot's few records).
SELECT set_config('study.lsn0', pg_current_wal_insert_lsn()::text, false);
VACUUM (FREEZE) t;
SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), current_setting('study.lsn0')::pg_lsn) AS freeze_wal_bytes;
