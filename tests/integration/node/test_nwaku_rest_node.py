"""A control node configured for an external nwaku (`[waku] backend = "nwaku-rest"`): its magnet link reaches
nwaku's relay through the REST API (here a local server implementing nwaku's documented endpoints)."""
import time

from core.node import events as E
from core.node.config import from_dict
from core.node.runner import start_node
from core.status import topics as status_topics
from core.status.application_metadata import open_archive_link_envelope
from core.status.traffic import TrafficGenerator, write_store
from core.waku.store_db import Filter
from tests.integration.waku.nwaku_stub import NwakuStub


def test_control_node_announces_through_nwaku_rest(tmp_path):
    gen = TrafficGenerator(seed=31, channels=2, authors=4)
    keyfile = tmp_path / "community.key"
    gen.community.save(keyfile)
    data = tmp_path / "node"
    data.mkdir()
    write_store(data / "messages.sqlite", 300, generator=gen, start=int(time.time()) - 2 * 7 * 86400, span=86400 * 10)
    with NwakuStub() as stub:
        s = from_dict({"data_dir": str(data), "spark": {"build": False},
                       "torrent": {"listen": "127.0.0.1:0", "local": True},
                       "waku": {"backend": "nwaku-rest", "rest_url": stub.url},
                       "community": [{"id": gen.community_id, "role": "control", "key_file": str(keyfile),
                                      "channels": [c.chat_id for c in gen.channels]}]})
        node = start_node(s, communities=False)
        seeded = []
        node.engine.bus.subscribe(lambda e: seeded.append(e) if e.name == E.HISTORY_ARCHIVES_SEEDING else None)
        try:
            node.start_communities()
            node.engine.submit(gen.community_id, lambda: None).result(120)
            assert seeded and seeded[0].data["magnet"].startswith("magnet:?xt=urn:btih:")
            chat = status_topics.magnetlinks_chat_id(gen.community_id)
            ct = status_topics.content_topic(chat)
            got = [sm.message for sm in stub.store.page(Filter(content_topics=[ct]), forward=True, limit=10)]
            assert len(got) == 1
            link = open_archive_link_envelope(got[0].payload, chat, gen.community_id)
            assert link.link == seeded[0].data["magnet"]
        finally:
            node.stop()
