"""The Status history-archive format (WIRE-FORMAT.md sections 1-3): bytes in, bytes out.

No threads and no network here. `codec` encodes/decodes archives and the index, `partition` cuts messages into
7-day windows and 30 MB chunks, `folder` keeps `data` + `index` crash-safe, `torrent` builds the v1 metainfo and
magnet link, `verify` checks every invariant, `build` is the single-process reference build path.
"""
