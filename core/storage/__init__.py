"""SQLite schemas (status-go table names where status-go has them)."""
