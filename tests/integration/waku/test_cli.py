"""`archivist wakunode` as a real process: first line is JSON with its listen addresses; it relays and stores."""
import json
import subprocess
import sys
import time

from core.waku.message import WakuMessage
from tests.integration.waku.conftest import Collector

PS = "/waku/2/rs/16/32"


def test_wakunode_process_prints_addrs_and_serves(tmp_path, make_node):
    proc = subprocess.Popen([sys.executable, "-m", "core.cli", "wakunode", "--key", str(tmp_path / "k"),
                             "--store", str(tmp_path / "s.db"), "--print-messages"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = json.loads(proc.stdout.readline())
        assert first["peer_id"].startswith("16Uiu2")
        assert any("/ws/" in a for a in first["listen_addrs"]) and all("127.0.0.1" in a for a in first["listen_addrs"])
        ours = make_node(store=False)
        ours.add_peer(first["listen_addrs"][0])
        ours.wait_for_relay_peer(first["peer_id"])
        m = WakuMessage(b"to the service node", "/app/1/chat/proto", timestamp=time.time_ns())
        ours.publish(PS, m)
        line = json.loads(proc.stdout.readline())
        assert line["event"] == "message" and line["hash"] == m.hash(PS).hex()
        got = list(ours.query_store(first["peer_id"], ["/app/1/chat/proto"]))
        assert [r.message.payload for r in got] == [m.payload]
    finally:
        proc.terminate()
        assert proc.wait(15) == 0
