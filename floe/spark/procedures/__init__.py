"""The Spark side of CALL procedures: compaction, position-delete rewrites, file import and
migration, table statistics."""
