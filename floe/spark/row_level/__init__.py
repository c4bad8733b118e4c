"""Row-level changes on Spark: DELETE, UPDATE and MERGE, copy-on-write or merge-on-read (position
deletes, deletion vectors), and their commits."""
