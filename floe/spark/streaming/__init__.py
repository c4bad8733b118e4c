"""Structured Streaming and CDC: the exactly-once sink, the source of appends, changelog apply and
changelog scans."""
