"""Floe's Python data source (``iceberg`` / ``floe``): batch reads and writes where Spark runs Python."""
