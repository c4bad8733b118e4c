-- spark-writes: MERGE INTO
CREATE TABLE cat.db.target (id bigint, count int, status string) USING iceberg;
INSERT INTO cat.db.target VALUES (1, 10, 'ok'), (2, NULL, 'ok'), (3, 30, 'ok'), (4, 40, 'ok'), (5, 50, 'ok');
CREATE TABLE cat.db.updates (id bigint, op string, event_time int) USING iceberg;
INSERT INTO cat.db.updates VALUES (1, 'delete', 0), (2, 'increment', 0), (3, 'increment', 0), (6, 'insert', 5), (7, 'insert', -1);
MERGE INTO cat.db.target t USING (SELECT * FROM cat.db.updates) s ON t.id = s.id
WHEN MATCHED AND s.op = 'delete' THEN DELETE
WHEN MATCHED AND t.count IS NULL AND s.op = 'increment' THEN UPDATE SET t.count = 0
WHEN MATCHED AND s.op = 'increment' THEN UPDATE SET t.count = t.count + 1
WHEN NOT MATCHED AND s.event_time > 0 THEN INSERT (id, count) VALUES (s.id, 1);
SELECT * FROM cat.db.target ORDER BY id;
MERGE INTO cat.db.target t USING cat.db.updates s ON t.id = s.id
WHEN NOT MATCHED THEN INSERT (id, count, status) VALUES (s.id, 0, s.op)
WHEN NOT MATCHED BY SOURCE THEN UPDATE SET status = 'invalid';
SELECT * FROM cat.db.target ORDER BY id;
MERGE INTO cat.db.target t USING (SELECT id, 99 AS count, 'new' AS status FROM cat.db.updates) s ON t.id = s.id
WHEN MATCHED THEN UPDATE SET *
WHEN NOT MATCHED THEN INSERT *;
SELECT * FROM cat.db.target ORDER BY id;
MERGE INTO cat.db.target t USING (SELECT 1 AS id UNION ALL SELECT 1 AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE;
SELECT count(*) FROM cat.db.target;
MERGE INTO cat.db.target t USING (SELECT 4 AS id) s ON t.id = s.id WHEN NOT MATCHED BY SOURCE AND t.id > 5 THEN DELETE;
SELECT id FROM cat.db.target ORDER BY id;
SELECT operation FROM cat.db.target.snapshots;
CREATE TEMPORARY VIEW src AS SELECT 100 AS id, 1 AS count, 'tv' AS status;
MERGE INTO cat.db.target t USING src s ON t.id = s.id WHEN NOT MATCHED THEN INSERT *;
INSERT INTO cat.db.target SELECT * FROM src;
SELECT * FROM cat.db.target WHERE id = 100;
DROP VIEW src;
SELECT * FROM src
