"""serde package."""
