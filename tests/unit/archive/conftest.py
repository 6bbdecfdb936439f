import pytest

from core.archive.build import build_archives
from core.synth import synthesize


@pytest.fixture
def community(tmp_path):
    """A small generated community: (synth result, topics as bytes)."""
    s = synthesize(tmp_path / "messages.sqlite", messages=3000, weeks=5, channels=3, seed=11)
    return s, [bytes.fromhex(t[2:]) for t in s.topics]


@pytest.fixture
def built(tmp_path, community):
    s, topics = community
    res = build_archives(s.path, s.community_id, topics, tmp_path / "archivedata", tmp_path / "torrents", end=s.end)
    return s, topics, res, tmp_path / "archivedata" / s.community_id
