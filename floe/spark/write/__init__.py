"""The write path: DataFrames to data files through Spark's native Parquet writer, with partition
transforms as JVM expressions, committed as one snapshot."""
