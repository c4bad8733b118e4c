-- spark-writes: INSERT INTO, INSERT OVERWRITE dynamic and static
CREATE TABLE cat.db.logs (uuid string NOT NULL, level string NOT NULL, ts timestamp NOT NULL, message string) USING iceberg PARTITIONED BY (level, hours(ts));
INSERT INTO cat.db.logs VALUES ('u1', 'INFO', TIMESTAMP '2020-07-01 10:00:00', 'm1'), ('u1', 'INFO', TIMESTAMP '2020-07-01 10:10:00', 'm1b'), ('u2', 'ERROR', TIMESTAMP '2020-07-01 11:00:00', 'm2'), ('u3', 'INFO', TIMESTAMP '2020-07-02 10:00:00', 'm3'), ('u4', 'WARN', TIMESTAMP '2020-07-01 12:00:00', 'm4');
SELECT count(*) FROM cat.db.logs.files;
INSERT INTO cat.db.logs SELECT 'u5', 'DEBUG', TIMESTAMP '2020-07-03 00:00:00', NULL;
INSERT INTO cat.db.logs TABLE cat.db.logs;
SELECT count(*) FROM cat.db.logs;
SET spark.sql.sources.partitionOverwriteMode=dynamic;
INSERT OVERWRITE cat.db.logs SELECT uuid, first(level), first(ts), first(message) FROM cat.db.logs WHERE cast(ts as date) = '2020-07-01' GROUP BY uuid;
SELECT uuid, level, message FROM cat.db.logs ORDER BY uuid, message;
SELECT operation, summary['added-records'], summary['deleted-records'] FROM cat.db.logs.snapshots;
SET spark.sql.sources.partitionOverwriteMode=static;
INSERT OVERWRITE cat.db.logs PARTITION (level = 'INFO') SELECT uuid, first(ts), first(message) FROM cat.db.logs WHERE level = 'INFO' GROUP BY uuid;
SELECT uuid, level, message FROM cat.db.logs ORDER BY uuid, message;
INSERT OVERWRITE cat.db.logs SELECT * FROM cat.db.logs WHERE level = 'ERROR';
SELECT uuid, level FROM cat.db.logs;
INSERT INTO cat.db.logs (uuid, level, ts) VALUES ('u9', 'INFO', TIMESTAMP '2020-08-01 00:00:00');
INSERT INTO cat.db.logs VALUES ('u10', NULL, TIMESTAMP '2020-08-01 00:00:00', 'x');
INSERT INTO cat.db.logs VALUES ('u11', 'INFO');
INSERT INTO cat.db.logs BY NAME SELECT 'x' AS message, TIMESTAMP '2020-09-01 00:00:00' AS ts, 'INFO' AS level, 'u12' AS uuid;
SELECT uuid, level, message FROM cat.db.logs ORDER BY uuid;
CREATE TABLE cat.db.types (i int, l bigint, s string, d decimal(10,2), b binary, m map<string,int>, a array<int>, st struct<x:int, y:string>, dt date, f float) USING iceberg;
INSERT INTO cat.db.types VALUES (1, 2, 's', 1.25, X'0A0B', map('k', 1), array(1, 2), named_struct('x', 1, 'y', 'z'), DATE '2021-01-01', 1.5), (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
SELECT * FROM cat.db.types ORDER BY i;
SELECT count(*) FROM cat.db.types.files;
INSERT INTO cat.db.types (i, s) SELECT CAST(id AS INT), 'x' FROM range(3);
SELECT i, s FROM cat.db.types WHERE s = 'x' ORDER BY i
