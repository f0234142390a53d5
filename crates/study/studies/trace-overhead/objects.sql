-- The trace-overhead study's data, in SQL that PostgreSQL, MariaDB and
-- SQLite all take: two copies (t1, t2) of a table shaped like Oracle 11g's
-- ALL_OBJECTS (70,415 rows), t1 with indexes on owner and object_type, as
-- the original's (t2's indexes are the study's var t2_indexes), made
-- deterministically so that the original's six predicates return its row
-- counts exactly:
--   object_type = 'JOB' 22, owner = 'DBSNMP' 63, t1 and t2 both
--   object_type = 'CLUSTER' joined on object_id 10;
--   object_type = 'SYNONYM' 25,652, owner = 'SYS' 32,095, t1 and t2 both
--   object_type = 'JAVA CLASS' joined on object_id 20,788.
-- Each (owner, object_type) segment of objects_seg holds n objects (70,415
-- in all). Object k (from 0, in segment order) gets object_id
-- (k * 7919) mod 70415 + 1, a permutation of 1..70415 (7919 is prime and
-- does not divide 70415), and the rows are stored in object_id order, so
-- that the rows of a type are spread over the table rather than stored
-- together.

DROP TABLE IF EXISTS t2;
DROP TABLE IF EXISTS t1;
DROP TABLE IF EXISTS objects_seg;
DROP TABLE IF EXISTS objects_n;
DROP TABLE IF EXISTS objects_first;

CREATE TABLE t1 (
  owner varchar(30) NOT NULL,
  object_name varchar(128) NOT NULL,
  subobject_name varchar(30),
  object_id integer NOT NULL,
  data_object_id integer,
  object_type varchar(19),
  created timestamp NOT NULL DEFAULT '2009-08-13 23:00:00',
  last_ddl_time timestamp NOT NULL DEFAULT '2009-08-13 23:00:00',
  timestamp varchar(19) DEFAULT '2009-08-13:23:00:00',
  status varchar(7) DEFAULT 'VALID',
  temporary varchar(1) DEFAULT 'N',
  generated varchar(1) DEFAULT 'N',
  secondary varchar(1) DEFAULT 'N',
  namespace integer DEFAULT 1,
  edition_name varchar(30)
);

CREATE TABLE objects_seg (ord integer PRIMARY KEY, owner varchar(30), object_type varchar(19), n integer);
INSERT INTO objects_seg (ord, owner, object_type, n) VALUES
  (1, 'PUBLIC', 'SYNONYM', 25500), (2, 'SYSTEM', 'SYNONYM', 8), (3, 'XDB', 'SYNONYM', 120),
  (4, 'ORDSYS', 'SYNONYM', 24), (5, 'SYS', 'JAVA CLASS', 18800), (6, 'ORDSYS', 'JAVA CLASS', 1300),
  (7, 'MDSYS', 'JAVA CLASS', 688), (8, 'SYS', 'JOB', 10), (9, 'EXFSYS', 'JOB', 4),
  (10, 'ORACLE_OCM', 'JOB', 2), (11, 'SYSMAN', 'JOB', 6), (12, 'SYS', 'CLUSTER', 10),
  (13, 'DBSNMP', 'TABLE', 20), (14, 'DBSNMP', 'INDEX', 22), (15, 'DBSNMP', 'PACKAGE', 5),
  (16, 'DBSNMP', 'PACKAGE BODY', 5), (17, 'DBSNMP', 'VIEW', 6), (18, 'DBSNMP', 'SEQUENCE', 3),
  (19, 'DBSNMP', 'TYPE', 2), (20, 'SYS', 'VIEW', 4400), (21, 'SYS', 'INDEX', 1500),
  (22, 'SYS', 'TABLE', 1200), (23, 'SYS', 'PACKAGE', 650), (24, 'SYS', 'PACKAGE BODY', 645),
  (25, 'SYS', 'TYPE', 1650), (26, 'SYS', 'JAVA RESOURCE', 760), (27, 'SYS', 'JAVA DATA', 320),
  (28, 'SYS', 'LOB', 180), (29, 'SYS', 'SEQUENCE', 210), (30, 'SYS', 'FUNCTION', 120),
  (31, 'SYS', 'PROCEDURE', 110), (32, 'SYS', 'TRIGGER', 20), (33, 'SYS', 'TYPE BODY', 170),
  (34, 'SYS', 'INDEX PARTITION', 680), (35, 'SYS', 'TABLE PARTITION', 380), (36, 'SYS', 'LIBRARY', 150),
  (37, 'SYS', 'OPERATOR', 15), (38, 'SYS', 'DIRECTORY', 8), (39, 'SYS', 'EVALUATION CONTEXT', 12),
  (40, 'SYS', 'RULE SET', 20), (41, 'SYS', 'CONSUMER GROUP', 14), (42, 'SYS', 'WINDOW', 9),
  (43, 'SYS', 'SCHEDULE', 3), (44, 'SYS', 'PROGRAM', 19), (45, 'SYS', 'JOB CLASS', 2),
  (46, 'SYS', 'QUEUE', 20), (47, 'SYS', 'CONTEXT', 7), (48, 'SYS', 'XML SCHEMA', 1),
  (49, 'SYSTEM', 'TABLE', 160), (50, 'SYSTEM', 'INDEX', 240), (51, 'SYSTEM', 'VIEW', 12),
  (52, 'SYSTEM', 'SEQUENCE', 20), (53, 'SYSTEM', 'PACKAGE', 1), (54, 'SYSTEM', 'PACKAGE BODY', 1),
  (55, 'XDB', 'TABLE', 240), (56, 'XDB', 'INDEX', 330), (57, 'XDB', 'TYPE', 240),
  (58, 'XDB', 'PACKAGE', 60), (59, 'XDB', 'PACKAGE BODY', 55), (60, 'XDB', 'VIEW', 20),
  (61, 'XDB', 'LOB', 140), (62, 'MDSYS', 'TYPE', 640), (63, 'MDSYS', 'TABLE', 110),
  (64, 'MDSYS', 'INDEX', 130), (65, 'MDSYS', 'VIEW', 240), (66, 'MDSYS', 'PACKAGE', 120),
  (67, 'MDSYS', 'PACKAGE BODY', 115), (68, 'MDSYS', 'FUNCTION', 90), (69, 'MDSYS', 'TRIGGER', 40),
  (70, 'MDSYS', 'JAVA RESOURCE', 2), (71, 'ORDSYS', 'TYPE', 460), (72, 'ORDSYS', 'TYPE BODY', 80),
  (73, 'ORDSYS', 'PACKAGE', 60), (74, 'ORDSYS', 'PACKAGE BODY', 55), (75, 'ORDSYS', 'JAVA RESOURCE', 70),
  (76, 'ORDSYS', 'TABLE', 20), (77, 'ORDSYS', 'INDEX', 30), (78, 'CTXSYS', 'TABLE', 50),
  (79, 'CTXSYS', 'INDEX', 65), (80, 'CTXSYS', 'PACKAGE', 75), (81, 'CTXSYS', 'PACKAGE BODY', 65),
  (82, 'CTXSYS', 'TYPE', 35), (83, 'CTXSYS', 'VIEW', 70), (84, 'CTXSYS', 'INDEXTYPE', 4),
  (85, 'CTXSYS', 'OPERATOR', 6), (86, 'WMSYS', 'TABLE', 40), (87, 'WMSYS', 'INDEX', 50),
  (88, 'WMSYS', 'VIEW', 120), (89, 'WMSYS', 'PACKAGE', 25), (90, 'WMSYS', 'PACKAGE BODY', 23),
  (91, 'WMSYS', 'TRIGGER', 2), (92, 'EXFSYS', 'TABLE', 45), (93, 'EXFSYS', 'INDEX', 40),
  (94, 'EXFSYS', 'VIEW', 65), (95, 'EXFSYS', 'PACKAGE', 15), (96, 'EXFSYS', 'TYPE', 40),
  (97, 'OLAPSYS', 'TABLE', 125), (98, 'OLAPSYS', 'INDEX', 150), (99, 'OLAPSYS', 'VIEW', 40),
  (100, 'OLAPSYS', 'PACKAGE', 20), (101, 'SYSMAN', 'TABLE', 820), (102, 'SYSMAN', 'INDEX', 1020),
  (103, 'SYSMAN', 'VIEW', 720), (104, 'SYSMAN', 'PACKAGE', 165), (105, 'SYSMAN', 'PACKAGE BODY', 160),
  (106, 'SYSMAN', 'TYPE', 220), (107, 'SYSMAN', 'TRIGGER', 90), (108, 'SYSMAN', 'SEQUENCE', 25),
  (109, 'APEX_030200', 'TABLE', 420), (110, 'APEX_030200', 'INDEX', 900), (111, 'APEX_030200', 'VIEW', 190),
  (112, 'APEX_030200', 'PACKAGE', 160), (113, 'APEX_030200', 'PACKAGE BODY', 155), (114, 'APEX_030200', 'SEQUENCE', 5),
  (115, 'APEX_030200', 'TRIGGER', 370), (116, 'ORDDATA', 'TABLE', 90), (117, 'ORDDATA', 'INDEX', 120),
  (118, 'ORDDATA', 'VIEW', 10), (119, 'OUTLN', 'TABLE', 3), (120, 'OUTLN', 'INDEX', 4),
  (121, 'OUTLN', 'PROCEDURE', 1), (122, 'SCOTT', 'TABLE', 4), (123, 'SCOTT', 'INDEX', 2);

-- objects_n holds the numbers 1..25500 (the largest segment) and
-- objects_first each segment's first k, so that each segment takes the
-- first n numbers through objects_n's key (CROSS JOIN keeps SQLite's join
-- in that order): every engine makes the rows in about linear time.
CREATE TABLE objects_n (i integer PRIMARY KEY);
INSERT INTO objects_n (i)
SELECT i FROM (
  WITH RECURSIVE g (i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM g WHERE i < 25500)
  SELECT i FROM g
) AS numbers;
CREATE TABLE objects_first AS
SELECT ord, owner, object_type, n, sum(n) OVER (ORDER BY ord) - n AS first FROM objects_seg;

INSERT INTO t1 (owner, object_name, object_id, data_object_id, object_type)
SELECT owner, concat(replace(object_type, ' ', '_'), '_', object_id), object_id,
       CASE WHEN object_type IN ('TABLE', 'INDEX', 'CLUSTER', 'LOB') THEN object_id END,
       object_type
FROM (
  SELECT s.owner, s.object_type, ((s.first + g.i - 1) * 7919) % 70415 + 1 AS object_id
  FROM objects_first s CROSS JOIN objects_n g
  WHERE g.i <= s.n
) AS objects
ORDER BY object_id;

CREATE TABLE t2 AS SELECT * FROM t1;
CREATE INDEX t1_owner ON t1 (owner);
CREATE INDEX t1_object_type ON t1 (object_type);
DROP TABLE objects_seg;
DROP TABLE objects_n;
DROP TABLE objects_first;
