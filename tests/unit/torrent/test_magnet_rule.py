"""One rule for "is this a magnet link" (core.archive.torrent.is_magnet_link), followed by every reader of links: the
member's dispatch between BitTorrent and Codex (link_kind), the type-43 message (is_magnet), the magnet parser,
`archivist inspect`/`verify` (which refuse a magnet link with the usage line, not "no such path"), core.archive's
inspect_path, `archivist gui TARGET` (the file manager's "open with") and the GUI inspector. Before, seven copies had
four rules: an upper-case scheme parsed as a magnet link, but the dispatch took it for neither kind, and the
inspector looked for a file of that name."""
from __future__ import annotations

import pytest

from core.cli import main
from core.appcli import open_target
from core.archive.errors import ArchiveError
from core.archive.inspect import inspect_path
from core.archive.torrent import is_magnet_link
from core.codex.backend import link_kind
from core.status.application_metadata import ArchiveLinkMessage
from core.torrent.magnet import MagnetError, parse_magnet

HASH = "0123456789abcdef0123456789abcdef01234567"
LINKS = {f"magnet:?xt=urn:btih:{HASH}": True, f"MAGNET:?xt=urn:btih:{HASH}": True,
         f" Magnet:?xt=urn:btih:{HASH}\n": True, f"magnet:xt=urn:btih:{HASH}": False,
         f"magnet?xt=urn:btih:{HASH}": False, "zDvZRwzm" + "a" * 40: False, "": False, "magnet:": False}


@pytest.mark.parametrize("link,magnet", LINKS.items(), ids=range(len(LINKS)))
def test_every_reader_follows_the_one_rule(link, magnet, tmp_path, capsys):
    assert is_magnet_link(link) is magnet
    assert (link_kind(link) == "magnet") is magnet
    assert ArchiveLinkMessage(1, link, b"").is_magnet is magnet
    if magnet:
        assert parse_magnet(link).infohash == HASH
    else:
        with pytest.raises(MagnetError) as e:
            parse_magnet(link)
        assert str(e.value) == "not a magnet link: it does not start with 'magnet:?'"
    assert isinstance(open_target(link), str) is (magnet and bool(link))
    with pytest.raises(ArchiveError) as e:
        inspect_path(link or str(tmp_path / "missing"))
    assert (e.value.code == "needs-network") is magnet
    from gui.inspection import open_source          # the inspector (no Qt in this module)
    assert (open_source(link or str(tmp_path / "missing")).kind == "magnet") is magnet
    for command in ("inspect", "verify"):
        assert main([command, link or str(tmp_path / "missing")]) == 2
        said = capsys.readouterr().err
        assert ("magnet" in said.lower() and "no such" not in said) is magnet, said
