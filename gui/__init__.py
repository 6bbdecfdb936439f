"""PySide6 desktop application. Talks to core/ only through its public API and events."""
