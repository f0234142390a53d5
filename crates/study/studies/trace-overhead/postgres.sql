-- The trace-overhead study's server loops on PostgreSQL: the original's two
-- PL/SQL procedures in PL/pgSQL. Each iteration opens three cursors, fetches
-- every row one at a time (an explicit cursor's FETCH returns one row), and
-- closes them. Run after objects.sql, in the schema it filled.

VACUUM ANALYZE t1;
VACUUM ANALYZE t2;

CREATE PROCEDURE oltp(iterations integer) LANGUAGE plpgsql AS $$
DECLARE
  c1 CURSOR FOR SELECT * FROM t1 WHERE object_type = 'JOB';
  c2 CURSOR FOR SELECT * FROM t1 WHERE owner = 'DBSNMP';
  c3 CURSOR FOR SELECT t1.* FROM t1 JOIN t2 ON t2.object_id = t1.object_id
                WHERE t1.object_type = 'CLUSTER' AND t2.object_type = 'CLUSTER';
  r record;
BEGIN
  FOR i IN 1 .. iterations LOOP
    OPEN c1; LOOP FETCH c1 INTO r; EXIT WHEN NOT FOUND; END LOOP; CLOSE c1;
    OPEN c2; LOOP FETCH c2 INTO r; EXIT WHEN NOT FOUND; END LOOP; CLOSE c2;
    OPEN c3; LOOP FETCH c3 INTO r; EXIT WHEN NOT FOUND; END LOOP; CLOSE c3;
  END LOOP;
END $$;

CREATE PROCEDURE dwh(iterations integer) LANGUAGE plpgsql AS $$
DECLARE
  c1 CURSOR FOR SELECT * FROM t1 WHERE object_type = 'SYNONYM';
  c2 CURSOR FOR SELECT * FROM t1 WHERE owner = 'SYS';
  c3 CURSOR FOR SELECT t1.* FROM t1 JOIN t2 ON t2.object_id = t1.object_id
                WHERE t1.object_type = 'JAVA CLASS' AND t2.object_type = 'JAVA CLASS';
  r record;
BEGIN
  FOR i IN 1 .. iterations LOOP
    OPEN c1; LOOP FETCH c1 INTO r; EXIT WHEN NOT FOUND; END LOOP; CLOSE c1;
    OPEN c2; LOOP FETCH c2 INTO r; EXIT WHEN NOT FOUND; END LOOP; CLOSE c2;
    OPEN c3; LOOP FETCH c3 INTO r; EXIT WHEN NOT FOUND; END LOOP; CLOSE c3;
  END LOOP;
END $$;
