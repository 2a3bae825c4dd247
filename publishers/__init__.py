"""publishers package."""
