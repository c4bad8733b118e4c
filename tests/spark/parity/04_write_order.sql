-- spark-ddl: write order and distribution, identifier fields
CREATE TABLE cat.db.sample (id bigint NOT NULL, data string, category string) USING iceberg PARTITIONED BY (category);
ALTER TABLE cat.db.sample WRITE ORDERED BY category, id;
SHOW TBLPROPERTIES cat.db.sample ('write.distribution-mode');
ALTER TABLE cat.db.sample WRITE ORDERED BY category ASC, id DESC;
ALTER TABLE cat.db.sample WRITE ORDERED BY category ASC NULLS LAST, id DESC NULLS FIRST;
INSERT INTO cat.db.sample VALUES (1, 'a', 'x'), (3, 'c', 'x'), (2, 'b', 'x'), (4, null, null);
SELECT id FROM cat.db.sample.files;
SELECT id FROM cat.db.sample;
SELECT sort_order_id, record_count FROM cat.db.sample.files ORDER BY record_count;
ALTER TABLE cat.db.sample WRITE LOCALLY ORDERED BY category, id;
SHOW TBLPROPERTIES cat.db.sample ('write.distribution-mode');
ALTER TABLE cat.db.sample WRITE UNORDERED;
SHOW TBLPROPERTIES cat.db.sample ('write.distribution-mode');
ALTER TABLE cat.db.sample WRITE DISTRIBUTED BY PARTITION;
SHOW TBLPROPERTIES cat.db.sample ('write.distribution-mode');
ALTER TABLE cat.db.sample WRITE DISTRIBUTED BY PARTITION LOCALLY ORDERED BY category, id;
SHOW TBLPROPERTIES cat.db.sample ('write.distribution-mode');
ALTER TABLE cat.db.sample WRITE ORDERED BY id;
SHOW TBLPROPERTIES cat.db.sample ('write.distribution-mode');
ALTER TABLE cat.db.sample SET IDENTIFIER FIELDS id;
ALTER TABLE cat.db.sample SET IDENTIFIER FIELDS id, data;
ALTER TABLE cat.db.sample DROP IDENTIFIER FIELDS id;
ALTER TABLE cat.db.sample DROP IDENTIFIER FIELDS data;
ALTER TABLE cat.db.sample SET IDENTIFIER FIELDS id, category;
ALTER TABLE cat.db.sample DROP IDENTIFIER FIELDS id, category;
ALTER TABLE cat.db.sample DROP IDENTIFIER FIELDS id;
INSERT INTO cat.db.sample VALUES (5, 'e', 'y');
SELECT count(*) FROM cat.db.sample
