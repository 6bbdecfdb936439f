"""`archivist node --config FILE`: a headless control or member node printing events as JSON lines."""
from __future__ import annotations

import signal
import sys
import threading


def cmd_node(a) -> int:
    from core.cli import print_json
    from core.node.config import ConfigError, load
    from core.node.runner import start_node
    try:
        settings = load(a.config)
    except ConfigError as e:
        print(f"archivist node: {e}", file=sys.stderr)
        return 2
    if a.data_dir:
        from pathlib import Path
        settings.data_dir = Path(a.data_dir)
    _log_to_stderr(a.log_level)
    import faulthandler
    faulthandler.register(signal.SIGUSR1, file=sys.stderr, all_threads=True)   # `kill -USR1`: where it is stuck
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    node = start_node(settings, communities=False)
    lock = threading.Lock()

    def printer(ev) -> None:
        with lock:
            print_json(ev.to_json())
    node.engine.bus.subscribe(printer)
    info = {"event": "archivist.nodeStarted", "data_dir": str(settings.data_dir),
            "torrent_port": node.torrents.listen_port,
            "waku_listen": list(node.waku.listen_addrs) if node.waku is not None else [],
            "communities": [{"id": c.community_id, "role": c.role} for c in settings.communities]}
    with lock:
        print_json(info)
    try:   # a community that fails to start stops the node too: its threads would keep a dead process alive
        node.start_communities()
        stop.wait(a.run_for) if a.run_for else stop.wait()
    finally:
        node.stop()
    return 0


def _log_to_stderr(level: str) -> None:
    """The node's own log (the `core` loggers) at `level` on stderr; other libraries stay at warning."""
    import logging
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger().setLevel(logging.WARNING)
    logging.getLogger("core").setLevel(level.upper())


def register(sub) -> None:
    p = sub.add_parser("node")
    p.add_argument("--config", required=True, help="TOML file (see docs/NODE.md)")
    p.add_argument("--data-dir", help="override data_dir")
    p.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"],
                   help="how much of the node's own log goes to stderr (default: warning)")
    p.add_argument("--run-for", type=float, help="stop after this many seconds (scripts, tests)")
    p.set_defaults(func=cmd_node)
