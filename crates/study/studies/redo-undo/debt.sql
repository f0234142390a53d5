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
SELECT pg_stat_force_next_flush();
SELECT set_config('study.w0', (SELECT wal_bytes::text FROM pg_stat_wal), false);
VACUUM (FREEZE) t;
SELECT pg_stat_force_next_flush();
SELECT (SELECT wal_bytes FROM pg_stat_wal) - current_setting('study.w0')::numeric AS freeze_wal_bytes;
