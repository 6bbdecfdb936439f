"""Download progress in the member's view, from the engine's snapshot of the real torrent job: the overall bar
shows bytes (and reaches 100%), each chosen archive's row has its own bar, and the rate is measured between
snapshots on the engine's injected monotonic clock."""
from __future__ import annotations

from core.node.state import Role
from gui.models import fmt_bytes
from gui.views.progress import download_text, fmt_duration

PROGRESS = 7   # member table column


def test_download_bar_reaches_100_and_shows_bytes(qtbot, nodes, window):
    nodes.add_owner()
    cid = nodes.control_cfg.community_id
    nodes.control.archive_now(cid).result(120)
    latest = max(nodes.control.community_state(cid).archives, key=lambda a: a.end)
    t = [1000.0]
    nodes.member.monotonic = lambda: t[0]
    nodes.add_member()                       # policy "latest"; the member's timer is not started: ticks by hand
    node = nodes.member.nodes[cid]
    nodes.member.tick_all()[0].result(30)
    assert node.job is not None, node.waiting_reason
    assert node.job.done.wait(60), node.job.snapshot()

    d = nodes.member.community_state(cid).download            # downloaded, not imported yet: the job's figures
    t[0] += 2.0
    d2 = nodes.member.community_state(cid).download
    assert d.state == "complete" and d.bytes_wanted > 0 and d.bytes_done == d.bytes_wanted
    assert [(aid, done == size) for aid, done, size in d.archives] == [(latest.archive_id, True)]
    assert d2.rate == 0.0 and d2.eta == 0.0                    # 2 s apart, nothing more arrived
    assert download_text(d2) == f"{fmt_bytes(d.bytes_done)} of {fmt_bytes(d.bytes_wanted)} · 0 B/s · downloaded"

    window.attach_engine(nodes.member, history=nodes.history_of)
    window.show_community(cid)
    bar = window.member.download
    qtbot.waitUntil(lambda: window.member.state is not None and window.member.state.download is not None
                    and bar.value() == bar.maximum() > 1, timeout=10_000)
    assert bar.text() == download_text(window.member.state.download)
    assert fmt_bytes(d.bytes_wanted) in bar.text() and ("KiB" in bar.text() or "MiB" in bar.text())
    row = window.member.model.row_of(latest.archive_id)
    assert window.member.model.index(row, PROGRESS).data() == "100%"
    others = [r for r in window.member.model.rows() if r.archive_id != latest.archive_id]
    assert others and all(window.member.model.index(window.member.model.row_of(r.archive_id), PROGRESS).data() == ""
                          for r in others)

    nodes.member.tick_all()[0].result(60)                     # import: the job is gone, the archive is held
    qtbot.waitUntil(lambda: (c := window.adapter.community(cid)) is not None and c.download is None
                    and any(a.imported for a in c.archives), timeout=10_000)
    qtbot.waitUntil(lambda: bar.text() == f"{fmt_bytes(latest.size)} of {fmt_bytes(latest.size)} downloaded")
    assert bar.value() == bar.maximum()
    assert window.member.model.index(row, PROGRESS).data() == "100%"
    assert window.adapter.community(cid).role == Role.MEMBER


def test_words_of_a_running_download():
    from core.node.state import DownloadProgress
    assert download_text(DownloadProgress(3 * 1024 * 1024, 8 * 1024 * 1024, 1024 * 1024, 5.0, "downloading")) == \
        "3.0 MiB of 8.0 MiB · 1.0 MiB/s · 5 s left"
    assert download_text(DownloadProgress(1024, 4096, None, None, "downloading")) == \
        "1.0 KiB of 4.0 KiB · time left unknown"
    assert download_text(DownloadProgress(0, 0, None, None, "metadata")) == "fetching the archive index from peers…"
    assert (fmt_duration(59.6), fmt_duration(125), fmt_duration(7260)) == ("1 min 00 s", "2 min 05 s", "2 h 01 min")
    assert (fmt_duration(86399), fmt_duration(86400), fmt_duration(7 * 86400 - 60)) == (
        "23 h 59 min", "1 d 00 h", "6 d 23 h")


def test_the_owner_view_says_when_the_next_archive_is_due_in_the_same_words():
    """One rule for durations: the owner view's "next archive due" used its own (45 minutes read "in 0 d 0 h")."""
    from gui.views.control import due_text
    now = 1_760_000_000
    for left in (2700, 5 * 3600, 6 * 86400 + 7200):
        assert due_text(now + left, now).endswith(f"(in {fmt_duration(left)}).")
    assert due_text(now + 2700, now).endswith("(in 45 min 00 s).")
