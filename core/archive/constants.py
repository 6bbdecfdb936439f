"""Numbers fixed by status-go (WIRE-FORMAT.md section 2-3)."""
import re

PIECE_LENGTH = 102_400                 # torrent piece length and padding unit
MAX_ARCHIVE_PAYLOAD = 30_000_000       # chunking cap per archive (len(payload) + len(sig) summed)
PARTITION_SECONDS = 7 * 24 * 3600      # one archive window
DATA_FILE = "data"
INDEX_FILE = "index"
DEFAULT_TRACKERS = (
    "udp://tracker.opentrackr.org:1337/announce",
    "udp://tracker.openbittorrent.com:6969/announce",
)

# A community ID as folders, torrents and magnet links name it: 0x + the 33-byte compressed public key, lower case.
# \Z, not $: $ also matches before a final newline.
COMMUNITY_ID = re.compile(r"^0x[0-9a-f]{66}\Z")
