"""`archivist codex-publish / codex-inspect / codex-verify / codex-fetch` against a loopback test node."""
import json

from core.cli import main
from core.synth import synthesize


def run(capsys, *argv):
    rc = main(list(argv))
    out = capsys.readouterr()
    return rc, out.out, out.err


def test_publish_inspect_verify_fetch(tmp_path, codex_nodes, capsys):
    synth = synthesize(tmp_path / "s.db", messages=300, weeks=3, channels=2, seed=11)
    node = codex_nodes()
    topics = [a for t in synth.topics for a in ("--topic", t)]
    rc, out, _ = run(capsys, "codex-publish", "--api", node.url, "--db", synth.path, "--community-id",
                     synth.community_id, *topics, "--state-dir", str(tmp_path / "st"), "--end", str(synth.end + 1),
                     "--json")
    assert rc == 0
    pub = json.loads(out)
    assert len(pub["new_archive_ids"]) == 3
    cid = pub["index_cid"]

    rc, out, _ = run(capsys, "codex-inspect", cid, "--api", node.url, "--json", "--check-present")
    doc = json.loads(out)
    assert rc == 0 and len(doc["archives"]) == 3 and all(r["on_node"] for r in doc["archives"])
    assert {r["id"] for r in doc["archives"]} == set(pub["new_archive_ids"])

    blob = tmp_path / "st" / synth.community_id / "codex" / "blobs" / cid
    rc, out, _ = run(capsys, "codex-inspect", str(blob))   # an index file, no node needed
    assert rc == 0 and "3 archives" in out

    rc, out, _ = run(capsys, "codex-verify", cid, "--api", node.url, "--json")
    doc = json.loads(out)
    assert rc == 0 and doc["ok"] and doc["messages"] == 300

    rc, out, _ = run(capsys, "codex-fetch", cid, "--api", node.url, "--latest", "--json")
    doc = json.loads(out)
    assert rc == 0 and len(doc["chosen"]) == 1 and not doc["failed"]

    # an archive lost from the node: verify says BAD with the archive and the reason
    lost = pub["archives"][0]["cid"]
    node.forget_all()
    node.store(blob.read_bytes())
    rc, out, _ = run(capsys, "codex-verify", cid, "--api", node.url)
    assert rc == 1 and "BAD" in out and "codex-not-found" in out and lost in out


def test_unreachable_node_is_a_clear_error(tmp_path, codex_nodes, capsys):
    node = codex_nodes()
    url = node.url
    node.stop()
    rc, _, err = run(capsys, "codex-inspect", "zDvZRwzm4JvW4GEe2bXkCWH5nkmrzm5xMsZoqcePmwq8AB93kDya", "--api", url)
    assert rc == 2 and "cannot be reached" in err
