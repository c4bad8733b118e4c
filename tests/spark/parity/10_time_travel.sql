-- spark-queries: time travel and functions
CREATE TABLE cat.db.orders (id BIGINT, status STRING) USING iceberg;
INSERT INTO cat.db.orders VALUES (1, 'NEW'), (2, 'PAID');
ALTER TABLE cat.db.orders ADD COLUMN total DOUBLE;
INSERT INTO cat.db.orders VALUES (3, 'PAID', 100.0);
SELECT * FROM cat.db.orders VERSION AS OF ${snapshot:db.orders:0} ORDER BY id;
SELECT * FROM cat.db.orders TIMESTAMP AS OF '${timestamp:db.orders:0}' ORDER BY id;
SELECT * FROM cat.db.orders FOR SYSTEM_VERSION AS OF ${snapshot:db.orders:0} ORDER BY id;
SELECT * FROM cat.db.orders FOR SYSTEM_TIME AS OF '${timestamp:db.orders:0}' ORDER BY id;
ALTER TABLE cat.db.orders CREATE BRANCH audit_branch AS OF VERSION ${snapshot:db.orders:0};
ALTER TABLE cat.db.orders CREATE TAG first_load AS OF VERSION ${snapshot:db.orders:0};
SELECT * FROM cat.db.orders VERSION AS OF 'audit_branch' ORDER BY id;
SELECT * FROM cat.db.orders.`branch_audit_branch` ORDER BY id;
SELECT * FROM cat.db.orders VERSION AS OF 'first_load' ORDER BY id;
SELECT * FROM cat.db.orders.`tag_first_load` ORDER BY id;
SELECT * FROM cat.db.orders FOR SYSTEM_VERSION AS OF 'first_load' ORDER BY id;
SELECT * FROM cat.db.orders TIMESTAMP AS OF '1986-10-26 01:21:00';
SELECT * FROM cat.db.orders TIMESTAMP AS OF 499162860;
SELECT * FROM cat.db.orders VERSION AS OF 10963874102873;
SELECT * FROM cat.db.orders VERSION AS OF 'no_such_ref';
SELECT count(*) FROM cat.db.orders TIMESTAMP AS OF '2100-01-01 00:00:00';
SELECT cat.system.bucket(16, id) AS b, cat.system.days(CAST('2021-01-02' AS DATE)) AS d FROM cat.db.orders ORDER BY id;
SELECT cat.system.truncate(2, status) FROM cat.db.orders ORDER BY id;
SELECT cat.system.years(TIMESTAMP '2021-06-01 00:00:00'), cat.system.months(TIMESTAMP '2021-06-01 00:00:00'), cat.system.hours(TIMESTAMP '2021-06-01 05:00:00');
SELECT * FROM cat.db.orders.manifests VERSION AS OF ${snapshot:db.orders:0};
SELECT partition_summaries, added_data_files_count FROM cat.db.orders.manifests TIMESTAMP AS OF '${timestamp:db.orders:0}';
SELECT record_count FROM cat.db.orders.partitions VERSION AS OF ${snapshot:db.orders:0}
