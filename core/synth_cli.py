"""`archivist synth`: a deterministic `waku_messages` database shaped like Status traffic (core.synth).

A top-level module like core.synth, which it drives: core.synth builds on core.archive and core.storage, so the
command cannot live in core/archive/cli.py (that would be an upward import, tests/unit/test_layering.py).
"""
from __future__ import annotations


def cmd_synth(a) -> int:
    from core.cli import print_json
    from core.synth import synthesize
    res = synthesize(a.out, messages=a.messages, weeks=a.weeks, channels=a.channels, min_payload=a.min_payload,
                     max_payload=a.max_payload, seed=a.seed, start=a.start)
    if a.json:
        print_json(res.to_json())
    else:
        print(f"wrote {res.messages} messages to {res.path}\ncommunity {res.community_id}\n"
              f"topics {' '.join(res.topics)}")
    return 0


def register(sub) -> None:
    p = sub.add_parser("synth")
    p.add_argument("--out", required=True)
    p.add_argument("--messages", type=int, default=10_000)
    p.add_argument("--weeks", type=int, default=8)
    p.add_argument("--channels", type=int, default=3)
    p.add_argument("--min-payload", type=int, default=80)
    p.add_argument("--max-payload", type=int, default=1200)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--start", type=int, default=1_700_000_000)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_synth)
