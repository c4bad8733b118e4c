-- spark-ddl: partition evolution
CREATE TABLE cat.db.sample (id bigint, data string, category string, ts timestamp) USING iceberg;
INSERT INTO cat.db.sample VALUES (1, 'abcdef', 'c1', TIMESTAMP '2021-03-01 10:00:00');
ALTER TABLE cat.db.sample ADD PARTITION FIELD category;
ALTER TABLE cat.db.sample ADD PARTITION FIELD bucket(16, id);
ALTER TABLE cat.db.sample ADD PARTITION FIELD truncate(4, data);
ALTER TABLE cat.db.sample ADD PARTITION FIELD year(ts);
INSERT INTO cat.db.sample VALUES (2, 'ghijkl', 'c2', TIMESTAMP '2022-03-01 10:00:00');
SELECT spec_id, partition, record_count FROM cat.db.sample.partitions ORDER BY spec_id;
SELECT spec_id, record_count, partition FROM cat.db.sample.files ORDER BY spec_id;
ALTER TABLE cat.db.sample DROP PARTITION FIELD category;
ALTER TABLE cat.db.sample DROP PARTITION FIELD bucket(16, id);
ALTER TABLE cat.db.sample DROP PARTITION FIELD truncate(4, data);
ALTER TABLE cat.db.sample DROP PARTITION FIELD year(ts);
ALTER TABLE cat.db.sample ADD PARTITION FIELD bucket(16, id) AS shard;
ALTER TABLE cat.db.sample DROP PARTITION FIELD shard;
ALTER TABLE cat.db.sample ADD PARTITION FIELD days(ts) AS ts_day;
ALTER TABLE cat.db.sample REPLACE PARTITION FIELD ts_day WITH day(ts);
ALTER TABLE cat.db.sample REPLACE PARTITION FIELD ts_day WITH day(ts) AS day_of_ts;
ALTER TABLE cat.db.sample REPLACE PARTITION FIELD ts_day WITH hours(ts) AS ts_hour;
INSERT INTO cat.db.sample VALUES (3, 'mnopqr', 'c3', TIMESTAMP '2023-03-01 10:00:00');
SELECT record_count FROM cat.db.sample.files ORDER BY record_count;
SELECT id, data FROM cat.db.sample WHERE ts > TIMESTAMP '2022-01-01 00:00:00' ORDER BY id;
DESCRIBE cat.db.sample;
ALTER TABLE cat.db.sample DROP PARTITION FIELD nothing;
ALTER TABLE cat.db.sample ADD PARTITION FIELD hours(ts);
CREATE TABLE cat.db.aliases (id bigint, ts timestamp, d date) USING iceberg PARTITIONED BY (date(ts), years(d), bucket(4, id));
DESCRIBE cat.db.aliases
