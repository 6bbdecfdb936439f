"""Shared by the discovery tests: a clock the test moves, and an EIP-1459 zone served by the local DNS server."""
from __future__ import annotations

import time

from core.waku import dns_discovery as dd
from tests.unit.waku.test_dns_discovery import TREE_KEY

S = 10 ** 9


class Clock:
    """Unix ns, moved by the test."""

    def __init__(self):
        self.ns = time.time_ns()

    def __call__(self) -> int:
        return self.ns


def zone(records, seq):
    """The TXT records of a tree of `records` (signed with TREE_KEY) under boot.test, at sequence `seq`."""
    root, txt = dd.make_tree(TREE_KEY, [r.to_text() for r in records], seq=seq)
    return {"boot.test": root, **{f"{h}.boot.test".lower(): t for h, t in txt.items()}}
