"""Floe: Apache Iceberg tables in Python, with Apache Spark moving the data."""

__version__ = "0.1.0"
