"""topology package."""
