"""The local build and the Codex backend cut one store into the same windows, first from the oldest message and
then from the last archive's end (core.archive.partition.missing_windows, the rule both follow)."""
from core.archive.build import build_archives
from core.codex.backend import CodexOwner
from core.storage import waku_messages
from core.synth import synthesize
from tests.support.codex_node import FakeClock

WEEK = 7 * 86400


def test_local_and_codex_builds_make_the_same_windows(tmp_path, codex_nodes, clients):
    synth = synthesize(tmp_path / "store.db", messages=120, weeks=3, channels=2, seed=11)
    topics = [bytes.fromhex(t[2:]) for t in synth.topics]
    con = waku_messages.connect(synth.path, create=False)
    oldest = waku_messages.oldest_timestamp(con, topics)
    con.close()
    owner = CodexOwner(clients(codex_nodes("owner").url), tmp_path / "codex", synth.community_id,
                       clock=FakeClock(synth.end + 60))

    def windows(end):
        local = build_archives(synth.path, synth.community_id, topics, tmp_path / "data", tmp_path / "torrents",
                               end=end, now=lambda: end)
        codex = owner.publish(synth.path, topics, end=end)
        return (sorted({(a["from"], a["to"]) for a in local.archives}),
                sorted({(r["from"], r["to"]) for r in codex.archives}))

    first_end = oldest + WEEK + 100                    # from the oldest message: one whole week, then 100 s
    local, codex = windows(first_end)
    assert codex == [(oldest, oldest + WEEK), (oldest + WEEK, first_end)]
    assert local == codex
    local, codex = windows(first_end + WEEK)          # from the last archive's end, not the oldest message
    assert codex == [(first_end, first_end + WEEK)]
    assert local == codex
