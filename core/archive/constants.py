"""Numbers fixed by status-go (WIRE-FORMAT.md section 2-3)."""
import re

PIECE_LENGTH = 102_400                 # torrent piece length and padding unit
MAX_ARCHIVE_PAYLOAD = 30_000_000       # chunking cap per archive (len(payload) + len(sig) summed)
PARTITION_SECONDS = 7 * 24 * 3600      # one archive window
# an index file, BitTorrent's or Codex's: refused before it is read, fetched or decoded (the torrent that names a
# larger one is refused); far above the 262,144 entries any index may list (codec.MAX_INDEX_ENTRIES)
MAX_INDEX_BYTES = 64 * 1024 * 1024
DATA_FILE = "data"
INDEX_FILE = "index"
DEFAULT_TRACKERS = (
    "udp://tracker.opentrackr.org:1337/announce",
    "udp://tracker.openbittorrent.com:6969/announce",
)

# A community ID as folders, torrents and magnet links name it: 0x + the 33-byte compressed public key, lower case.
# \Z, not $: $ also matches before a final newline.
COMMUNITY_ID = re.compile(r"^0x[0-9a-f]{66}\Z")


def community_id(text) -> str:
    """A community ID as folders, torrents, links and databases name it (COMMUNITY_ID), from what a person typed or
    a file holds: blanks around it and the case of its hex do not matter. The one rule for every command, screen and
    config that takes one. Raises ValueError with one sentence."""
    v = text.strip().lower() if isinstance(text, str) else ""
    if not COMMUNITY_ID.match(v):
        raise ValueError(f"{str(text)[:80]!r} is not a community ID (0x + 66 hex digits)")
    return v


def community_id_arg(text: str) -> str:
    """The argparse type of every `--community-id`: community_id, its error as argparse's."""
    import argparse
    try:
        return community_id(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
