"""SiddhiQL compiler and engine."""
__version__ = "0.1.0"
