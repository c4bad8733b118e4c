"""The read path: a planned scan as one native Spark DataFrame (Parquet/ORC scans, deletes applied as
joins, bitmaps or arrays in the plan), metadata tables and columns."""
