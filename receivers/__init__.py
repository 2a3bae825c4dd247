"""receivers package."""
