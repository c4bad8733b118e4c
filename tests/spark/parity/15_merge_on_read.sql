-- seeds / spark-writes: merge-on-read row-level operations
CREATE TABLE cat.db.mor (id bigint, data string, category string) USING iceberg PARTITIONED BY (category) TBLPROPERTIES ('format-version'='2', 'write.delete.mode'='merge-on-read', 'write.update.mode'='merge-on-read', 'write.merge.mode'='merge-on-read');
INSERT INTO cat.db.mor SELECT id, concat('d', CAST(id AS STRING)), IF(id % 2 = 0, 'even', 'odd') FROM range(20);
DELETE FROM cat.db.mor WHERE id < 3;
SELECT count(*) FROM cat.db.mor;
SELECT content, record_count, partition FROM cat.db.mor.delete_files ORDER BY partition.category;
UPDATE cat.db.mor SET data = 'upd' WHERE id = 10;
SELECT * FROM cat.db.mor WHERE id = 10;
MERGE INTO cat.db.mor t USING (SELECT 11 AS id, 'merged' AS data, 'odd' AS category UNION ALL SELECT 100, 'new', 'even') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *;
SELECT * FROM cat.db.mor WHERE id IN (11, 100) ORDER BY id;
SELECT operation, summary['added-position-deletes'], summary['added-delete-files'] FROM cat.db.mor.snapshots;
SELECT file_path IS NOT NULL, pos FROM cat.db.mor.position_deletes ORDER BY pos;
SELECT count(*) FROM cat.db.mor.files;
DELETE FROM cat.db.mor WHERE category = 'odd';
SELECT count(*) FROM cat.db.mor;
SELECT operation FROM cat.db.mor.snapshots;
CALL cat.system.rewrite_position_delete_files(table => 'db.mor', options => map('rewrite-all', 'true'));
CALL cat.system.rewrite_data_files(table => 'db.mor', options => map('delete-file-threshold', '1'));
SELECT count(*) FROM cat.db.mor.delete_files;
SELECT count(*) FROM cat.db.mor;
CREATE TABLE cat.db.v3 (id bigint, data string) USING iceberg TBLPROPERTIES ('format-version'='3', 'write.delete.mode'='merge-on-read');
INSERT INTO cat.db.v3 VALUES (1, 'a'), (2, 'b'), (3, 'c');
DELETE FROM cat.db.v3 WHERE id = 2;
SELECT * FROM cat.db.v3 ORDER BY id;
SELECT file_format, record_count FROM cat.db.v3.delete_files;
DELETE FROM cat.db.v3 WHERE id = 3;
SELECT file_format, record_count FROM cat.db.v3.delete_files;
SELECT * FROM cat.db.v3
