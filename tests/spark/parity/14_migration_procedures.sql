-- spark-procedures: register_table, add_files, snapshot, migrate
CREATE TABLE cat.db.orig (id bigint, data string) USING iceberg;
INSERT INTO cat.db.orig VALUES (1, 'a'), (2, 'b');
CALL cat.system.register_table(table => 'db.registered', metadata_file => '${root}/wh/db/orig/metadata/00001-nope.metadata.json');
CREATE TABLE src_tbl (id bigint, data string, part_col_1 string) USING parquet PARTITIONED BY (part_col_1) LOCATION '${root}/src_tbl';
INSERT INTO src_tbl VALUES (10, 'x', 'A'), (11, 'y', 'B'), (12, 'z', 'A');
CREATE TABLE cat.db.tbl (id bigint, data string, part_col_1 string) USING iceberg PARTITIONED BY (part_col_1);
CALL cat.system.add_files(table => 'db.tbl', source_table => 'src_tbl', partition_filter => map('part_col_1', 'A'));
SELECT * FROM cat.db.tbl ORDER BY id;
CALL cat.system.add_files(table => 'db.tbl', source_table => 'src_tbl');
CALL cat.system.add_files(table => 'db.tbl', source_table => 'src_tbl', check_duplicate_files => false, partition_filter => map('part_col_1', 'B'));
SELECT * FROM cat.db.tbl ORDER BY id;
INSERT OVERWRITE DIRECTORY '${root}/flat' USING parquet SELECT id, data FROM VALUES (20, 'p'), (21, 'q') AS v(id, data);
CREATE TABLE cat.db.flat (id bigint, data string) USING iceberg;
CALL cat.system.add_files(table => 'db.flat', source_table => '`parquet`.`${root}/flat`');
SELECT * FROM cat.db.flat ORDER BY id;
SELECT count(*) FROM cat.db.flat.files;
CALL cat.system.snapshot('src_tbl', 'cat.db.snap');
SELECT * FROM cat.db.snap ORDER BY id;
INSERT INTO cat.db.snap VALUES (13, 'w', 'C');
SELECT count(*) FROM src_tbl;
SELECT count(*) FROM cat.db.snap;
CREATE TABLE mig_tbl (id bigint, data string) USING parquet LOCATION '${root}/mig_tbl';
INSERT INTO mig_tbl VALUES (1, 'm');
SELECT count(*) FROM cat.db.tbl.snapshots
