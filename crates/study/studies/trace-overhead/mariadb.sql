-- The trace-overhead study's server loops on MariaDB: the original's two
-- PL/SQL procedures as stored procedures. Each iteration opens three
-- cursors, fetches every row one at a time into a row variable, and closes
-- them. Run after objects.sql, in the same database.
--
-- One index more than the original's: MariaDB 10.11 joins t1 and t2 on
-- object_id by a block nested loop (20,788 x 20,788 comparisons, 90 s an
-- iteration here) where Oracle and PostgreSQL hash-join them; with an
-- index on t2.object_id it is an index nested loop.

CREATE INDEX t2_object_id ON t2 (object_id);
ANALYZE TABLE t1, t2;

DROP PROCEDURE IF EXISTS oltp;
CREATE PROCEDURE oltp(iterations INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE done INT DEFAULT 0;
  DECLARE c1 CURSOR FOR SELECT * FROM t1 WHERE object_type = 'JOB';
  DECLARE c2 CURSOR FOR SELECT * FROM t1 WHERE owner = 'DBSNMP';
  DECLARE c3 CURSOR FOR SELECT t1.* FROM t1 JOIN t2 ON t2.object_id = t1.object_id
    WHERE t1.object_type = 'CLUSTER' AND t2.object_type = 'CLUSTER';
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  WHILE i < iterations DO
    BEGIN
      DECLARE r1 ROW TYPE OF c1;
      DECLARE r2 ROW TYPE OF c2;
      DECLARE r3 ROW TYPE OF c3;
      SET done = 0; OPEN c1;
      f1: LOOP FETCH c1 INTO r1; IF done THEN LEAVE f1; END IF; END LOOP;
      CLOSE c1;
      SET done = 0; OPEN c2;
      f2: LOOP FETCH c2 INTO r2; IF done THEN LEAVE f2; END IF; END LOOP;
      CLOSE c2;
      SET done = 0; OPEN c3;
      f3: LOOP FETCH c3 INTO r3; IF done THEN LEAVE f3; END IF; END LOOP;
      CLOSE c3;
    END;
    SET i = i + 1;
  END WHILE;
END;

DROP PROCEDURE IF EXISTS dwh;
CREATE PROCEDURE dwh(iterations INT)
BEGIN
  DECLARE i INT DEFAULT 0;
  DECLARE done INT DEFAULT 0;
  DECLARE c1 CURSOR FOR SELECT * FROM t1 WHERE object_type = 'SYNONYM';
  DECLARE c2 CURSOR FOR SELECT * FROM t1 WHERE owner = 'SYS';
  DECLARE c3 CURSOR FOR SELECT t1.* FROM t1 JOIN t2 ON t2.object_id = t1.object_id
    WHERE t1.object_type = 'JAVA CLASS' AND t2.object_type = 'JAVA CLASS';
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  WHILE i < iterations DO
    BEGIN
      DECLARE r1 ROW TYPE OF c1;
      DECLARE r2 ROW TYPE OF c2;
      DECLARE r3 ROW TYPE OF c3;
      SET done = 0; OPEN c1;
      f1: LOOP FETCH c1 INTO r1; IF done THEN LEAVE f1; END IF; END LOOP;
      CLOSE c1;
      SET done = 0; OPEN c2;
      f2: LOOP FETCH c2 INTO r2; IF done THEN LEAVE f2; END IF; END LOOP;
      CLOSE c2;
      SET done = 0; OPEN c3;
      f3: LOOP FETCH c3 INTO r3; IF done THEN LEAVE f3; END IF; END LOOP;
      CLOSE c3;
    END;
    SET i = i + 1;
  END WHILE;
END;
