"""The control node's CPU-heavy steps as plain functions of files and values, so that the engine can run them in
process or, unchanged, in a worker process (core/node/offload.py): one code path either way."""
from __future__ import annotations

from typing import Iterable, Mapping

from core.archive.build import BuildResult, build_archives
from core.archive.codec import ArchiveMessage

OFFLOAD_BATCH = 200      # received messages decoded in a worker when at least this many come at once (store catch-up)


def archive_crypto(group_keys, cid: str):
    """(transform, index codec) of an encrypted community: archives and index wrapped with its hash-ratchet key."""
    from core.status.archive_encryption import HashRatchetEncryptor, index_codec
    from core.status.identity import community_id_bytes
    return HashRatchetEncryptor(group_keys, community_id_bytes(cid)), index_codec(group_keys, community_id_bytes(cid))


def build_job(messages_db: str, cid: str, topics: tuple, archive_dir: str, torrent_dir: str, end: int,
              trackers: tuple, keys_path: str | None) -> BuildResult:
    """ControlNode's reference build as a worker process runs it: the same build_archives on the same files; an
    encrypted community's keys are read from the node's key file (`keys_path`)."""
    crypto = {}
    if keys_path is not None:
        from core.status.archive_encryption import GroupKeyStore
        transform, codec = archive_crypto(GroupKeyStore(keys_path), cid)
        crypto = {"transform": transform, "index_codec": codec}
    return build_archives(messages_db, cid, topics, archive_dir, torrent_dir, end=end, trackers=trackers, **crypto)


def decode_received(keys: Mapping[str, tuple[str, bytes]], msgs: Iterable) -> list[ArchiveMessage]:
    """Received Waku messages -> `waku_messages` rows: payload-v1 decrypt with the channel's key (content topic ->
    (chat ID, symmetric key)), sig = the recovered signer key, seconds, 4-byte topic, payload, padding, Waku hash.
    Messages on other topics and undecryptable ones are dropped (logged)."""
    import logging
    from core.status import payload_v1, topics as status_topics
    from core.status.errors import StatusError
    rows = []
    for m in msgs:
        key = keys.get(m.content_topic)
        if key is None:
            continue
        try:
            d = payload_v1.decrypt(m.payload, key[1])
        except StatusError as e:
            logging.getLogger("core.node.control").info("dropped undecryptable message on %s: %s", m.content_topic, e)
            continue
        rows.append(ArchiveMessage(d.public_key or b"", m.timestamp_ns // 10 ** 9, status_topics.status_topic(key[0]),
                                   d.data, d.padding, m.hash))
    return rows


def window_ids(parts, reader) -> dict[bytes, tuple[int, bytes, bytes]]:
    """hash -> (timestamp, topic, content digest) of every message of one window's archives, each read through
    `reader` (core.node.archived: verified, or ArchiveError): what the retention proof compares rows with."""
    from core.storage import waku_messages
    ids: dict[bytes, tuple[int, bytes, bytes]] = {}
    for aid, e in parts:
        for m in reader(aid, e).messages:
            ids[m.hash] = (m.timestamp, m.topic, waku_messages.content_digest(m.sig, m.payload, m.padding))
    return ids


def torrent_window_ids(data_path: str, torrent: str, community_id: str, parts, keys_path: str | None):
    """window_ids with core.node.archived's torrent reader, as a worker process runs it (the torrent parsed
    again from the same file; group keys from the node's key file)."""
    from pathlib import Path
    from core.archive.torrent import read_metainfo
    from core.node.archived import read_torrent_archive
    from core.status.archive_encryption import GroupKeyStore
    mi = read_metainfo(torrent, expected_name=community_id)
    keys = GroupKeyStore(keys_path) if keys_path is not None else None
    return window_ids(parts, lambda aid, e: read_torrent_archive(Path(data_path), mi, aid, e, keys))
