"""Archivist engine. Nothing under core/ imports Qt."""

__version__ = "0.1.0"
