"""manager package."""
