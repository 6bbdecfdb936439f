import dataclasses
import shutil

import pytest

from core.archive.build import build_archives
from core.synth import synthesize


@pytest.fixture(scope="session")
def _community_store(tmp_path_factory):
    """The store `community` copies: synthesize is a function of its arguments alone, so one test process makes
    it once (0.07 s of CPU, more under make test's coverage hook, that each of ~30 tests spent)."""
    return synthesize(tmp_path_factory.mktemp("community") / "messages.sqlite", messages=3000, weeks=5, channels=3,
                      seed=11)


@pytest.fixture
def community(tmp_path, _community_store):
    """A small generated community, the test's own copy: (synth result, topics as bytes)."""
    path = tmp_path / "messages.sqlite"
    shutil.copyfile(_community_store.path, path)
    s = dataclasses.replace(_community_store, path=str(path), chat_ids=list(_community_store.chat_ids),
                            topics=list(_community_store.topics))
    return s, [bytes.fromhex(t[2:]) for t in s.topics]


@pytest.fixture
def built(tmp_path, community):
    s, topics = community
    res = build_archives(s.path, s.community_id, topics, tmp_path / "archivedata", tmp_path / "torrents", end=s.end)
    return s, topics, res, tmp_path / "archivedata" / s.community_id
