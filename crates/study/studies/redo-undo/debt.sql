-- The deferred-write debt a load leaves behind, PostgreSQL's stand-in for
-- undo: the blocks the first full read after a
-- checkpoint dirties (hint bits), and the WAL of the first VACUUM (FREEZE).
CHECKPOINT;
SELECT ((j->0->'Plan'->>'Shared Dirtied Blocks')::int
      + (j->0->'Plan'->>'Local Dirtied Blocks')::int) AS firstread_dirtied
  FROM (SELECT explain_json('SELECT count(*) FROM t') AS j) s;
SELECT pg_stat_force_next_flush();
SELECT set_config('study.w0', (SELECT wal_bytes::text FROM pg_stat_wal), false);
VACUUM (FREEZE) t;
SELECT pg_stat_force_next_flush();
SELECT (SELECT wal_bytes FROM pg_stat_wal) - current_setting('study.w0')::numeric AS freeze_wal_bytes;
