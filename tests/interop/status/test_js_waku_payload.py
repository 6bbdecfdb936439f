"""Payload v1 against a second implementation: js-waku's @waku/message-encryption (npm, pinned in js/).

Envelopes we make open in js-waku (payload and recovered signer equal), and envelopes js-waku makes open in ours."""
import fcntl
import json
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from core.archive.codec import keccak256
from core.status import payload_v1
from core.status.errors import PayloadError

JS = Path(__file__).resolve().parent / "js"
# one xdist worker runs the whole module (make test: --dist loadgroup): `npm ci` below first deletes node_modules,
# so two workers installing at once broke each other's helper (ERR_MODULE_NOT_FOUND in one CI run)
pytestmark = [pytest.mark.interop, pytest.mark.xdist_group("js_payload")]


@pytest.fixture(scope="module")
def js_waku():
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Node.js/npm not installed")
    with open(JS / ".npm-install.lock", "w") as lock:     # and a lock for runs without loadgroup
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (JS / "node_modules" / "@waku" / "message-encryption" / "package.json").is_file():
            subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=JS, check=True, capture_output=True,
                           timeout=600)
    proc = subprocess.Popen(["node", str(JS / "payload_v1.mjs")], cwd=JS, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)

    def call(**req) -> dict:
        proc.stdin.write(json.dumps(req) + "\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, "js-waku helper exited"
        return json.loads(line)

    yield call
    proc.stdin.close()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


KEY = keccak256(b"/waku/1/0x00eb85a7/rfc26 key")


@pytest.mark.parametrize("size", [0, 5, 300, 70_000])
def test_ours_open_in_js_waku(js_waku, community, size):
    data = random.Random(size).randbytes(size)
    for signer in (community.private_key, None):
        env = payload_v1.encrypt(data, KEY, signer=signer)
        res = js_waku(op="decrypt", envelope=env.hex(), key=KEY.hex())
        assert res.get("payload") == data.hex(), res
        assert res["public_key"] == (community.public_key.hex() if signer else None)


@pytest.mark.parametrize("size", [0, 5, 300, 70_000])
def test_js_waku_opens_in_ours(js_waku, community, size):
    data = random.Random(size + 1).randbytes(size)
    res = js_waku(op="encrypt", payload=data.hex(), key=KEY.hex(), sig_priv=community.private_key.secret.hex())
    out = payload_v1.decrypt(bytes.fromhex(res["envelope"]), KEY)
    assert out.data == data and out.public_key == community.public_key
    unsigned = js_waku(op="encrypt", payload=data.hex(), key=KEY.hex(), sig_priv=None)
    out = payload_v1.decrypt(bytes.fromhex(unsigned["envelope"]), KEY)
    assert out.data == data and out.public_key is None
    with pytest.raises(PayloadError):
        payload_v1.decrypt(bytes.fromhex(res["envelope"]), keccak256(b"wrong"))
