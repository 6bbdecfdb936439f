"""The Inspector's own decoders of outside input survive arbitrary input (bounded hypothesis runs)."""
from __future__ import annotations

from hypothesis import HealthCheck, given, settings, strategies as st

from core.torrent.magnet import MagnetError, parse_magnet, parse_peer as _peer
from gui.inspection import open_source


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_parse_magnet_accepts_or_explains(text):
    try:
        m = parse_magnet(text)
    except MagnetError as e:
        assert str(e)
    else:
        assert len(m.infohash) == 40 and isinstance(m.trackers, tuple)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_peer_addresses(text):
    p = _peer(text)
    assert p is None or (isinstance(p[0], str) and isinstance(p[1], int))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(raw=st.binary(max_size=2000), name=st.sampled_from(["index", "blob.bin", "x.torrent"]))
def test_any_file_opens_with_a_report_or_an_error(tmp_path, raw, name):
    p = tmp_path / name
    p.write_bytes(raw)
    res = open_source(str(p))
    assert res.report is not None or res.error
    if res.report is not None and not res.report.ok:
        assert all(f.code and f.message for f in res.report.findings)
