"""Floe inside the user's SparkSession: set-up (configure), transparent routing of Spark's API,
Floe SQL in the session and the Spark engine behind it, call sites, JVM class lookup, storage reach."""
