-- spark-procedures: create_changelog_view
CREATE TABLE cat.db.tbl (id bigint, name string) USING iceberg;
INSERT INTO cat.db.tbl VALUES (1, 'a'), (2, 'b');
INSERT INTO cat.db.tbl VALUES (3, 'c');
UPDATE cat.db.tbl SET name = 'bb' WHERE id = 2;
DELETE FROM cat.db.tbl WHERE id = 1;
CALL cat.system.create_changelog_view(table => 'db.tbl');
SELECT id, name, _change_type, _change_ordinal FROM tbl_changes ORDER BY _change_ordinal, id, _change_type;
CALL cat.system.create_changelog_view(table => 'db.tbl', options => map('start-snapshot-id', '${snapshot:db.tbl:0}', 'end-snapshot-id', '${snapshot:db.tbl:2}'), changelog_view => 'my_changelog_view');
SELECT id, name, _change_type, _change_ordinal FROM my_changelog_view ORDER BY _change_ordinal, id, _change_type;
CALL cat.system.create_changelog_view(table => 'db.tbl', options => map('start-snapshot-id', '${snapshot:db.tbl:0}'), identifier_columns => array('id'));
SELECT id, name, _change_type FROM tbl_changes WHERE _change_type LIKE 'UPDATE%' ORDER BY _change_type;
CALL cat.system.create_changelog_view(table => 'db.tbl', net_changes => true);
SELECT id, name, _change_type FROM tbl_changes ORDER BY id, _change_type;
CALL cat.system.create_changelog_view(table => 'db.tbl', options => map('start-timestamp', '${millis:db.tbl:1}', 'end-timestamp', '${millis:db.tbl:2}'), changelog_view => 'by_time');
SELECT id, name, _change_type FROM by_time ORDER BY id, _change_type;
SELECT id, name, _change_type, _change_ordinal FROM cat.db.tbl.changes ORDER BY _change_ordinal, id, _change_type
