-- spark-procedures: snapshot management
CREATE TABLE cat.db.sample (id bigint, data string) USING iceberg;
INSERT INTO cat.db.sample VALUES (1, 'a');
INSERT INTO cat.db.sample VALUES (2, 'b');
INSERT INTO cat.db.sample VALUES (3, 'c');
CALL cat.system.rollback_to_snapshot('db.sample', ${snapshot:db.sample:1});
SELECT * FROM cat.db.sample ORDER BY id;
CALL cat.system.rollback_to_snapshot('db.sample', ${snapshot:db.sample:2});
CALL cat.system.rollback_to_timestamp('db.sample', TIMESTAMP '${timestamp:db.sample:1}');
SELECT * FROM cat.db.sample ORDER BY id;
CALL cat.system.set_current_snapshot('db.sample', ${snapshot:db.sample:2});
SELECT * FROM cat.db.sample ORDER BY id;
ALTER TABLE cat.db.sample CREATE TAG s1 AS OF VERSION ${snapshot:db.sample:0};
CALL cat.system.set_current_snapshot(table => 'db.sample', ref => 's1');
SELECT * FROM cat.db.sample ORDER BY id;
CALL cat.system.set_current_snapshot(table => 'db.sample', snapshot_id => ${snapshot:db.sample:2}, ref => 's1');
CALL cat.system.cherrypick_snapshot('db.sample', ${snapshot:db.sample:2});
CALL cat.system.cherrypick_snapshot(snapshot_id => ${snapshot:db.sample:1}, table => 'db.sample');
SELECT * FROM cat.db.sample ORDER BY id;
CALL cat.system.ancestors_of('db.sample');
CALL cat.system.ancestors_of('db.sample', ${snapshot:db.sample:1});
CALL cat.system.ancestors_of(snapshot_id => ${snapshot:db.sample:2}, table => 'db.sample');
CALL cat.system.rollback_to_snapshot('db.sample', 42);
CALL cat.system.rollback_to_snapshot(table => 'db.nope', snapshot_id => 1);
CALL cat.system.no_such_procedure('db.sample');
CALL cat.system.rollback_to_snapshot('db.sample');
CALL cat.system.rollback_to_snapshot(table => 'db.sample', snapshot => 1);
SELECT count(*) FROM cat.db.sample.history
