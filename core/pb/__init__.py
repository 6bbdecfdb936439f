"""Protobuf code generated from proto/ (see proto/generate.py)."""
