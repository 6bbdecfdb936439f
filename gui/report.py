"""The Inspector's words and its report for a ticket, without Qt: each fault in plain language with where it is
(archive, data byte range) and what to do; which checks actually ran (nothing is called verified that was not
checked); the report as JSON and as a self-contained HTML page. Pure functions of a gui.inspection result."""
from __future__ import annotations

import html
import json
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

from core.archive.constants import PIECE_LENGTH
from core.archive.inspect import utc_text

PASSED, FAILED, NOT_CHECKED = "passed", "failed", "not checked"
REDOWNLOAD = ("Download the community's archives again (a BitTorrent client rechecks the folder and fetches only "
              "the damaged pieces); do not import this archive until it verifies.")
RECOPY = "Copy or download the complete folder again (both files, index and data, from the same source)."
REBUILD = ("Send this report to the community's owner: the archive was built or changed wrongly and only the "
           "owner's node can rebuild it.")

# code -> (what is wrong, in plain words; what to do). The core's own sentence is kept as the detail.
PLAIN: dict[str, tuple[str, str]] = {
    "index-missing": ("The folder has no index file, so its archives cannot be found.", RECOPY),
    "data-missing": ("The data file is missing, so no message can be read.", RECOPY),
    "index-undecodable": ("The index file is damaged, encrypted, or not an archive index.",
                          "Download the index again; for a community with encrypted archives, open the folder on a "
                          "member node that has the group key."),
    "index-too-big": ("The index file is far larger than any archive index.", RECOPY),
    "index-empty": ("The index lists no archive although the data file holds bytes.", RECOPY),
    "key-mismatch": ("An archive's ID in the index does not match its entry: the index was altered.",
                     "Download the index again from the community's torrent; do not import from this one."),
    "window-inverted": ("An archive's time window ends before it starts.", REBUILD),
    "size-not-piece-multiple": ("The index gives an archive a size that is not whole pieces.", REBUILD),
    "offset-not-piece-aligned": ("The index places an archive off a piece boundary.", REBUILD),
    "padding-exceeds-size": ("The index gives an archive more padding than bytes.", REBUILD),
    "offset-overlap": ("Two archives overlap in the data file.", REBUILD),
    "offset-gap": ("The data file has a gap between two archives.", REBUILD),
    "index-past-data": ("The data file is cut short: the index points past its end.",
                        "The copy or download was interrupted: download again (a torrent client resumes it)."),
    "size-absurd": ("An archive is larger than any archive can be; it was not read.", RECOPY),
    "padding-formula": ("An archive's padding does not follow Status's rule.",
                        "Nothing to do for reading it; tell the maker of the tool that built it."),
    "data-trailing": ("The data file has bytes after its last archive.",
                      "Nothing to do: no archive points at them (usually an interrupted build)."),
    "padding-nonzero": ("An archive's padding holds non-zero bytes: the data file was altered.", REDOWNLOAD),
    "archive-undecodable": ("An archive's bytes do not decode: they are damaged, or encrypted without a key here.",
                            REDOWNLOAD + " For an encrypted community, add the group key first."),
    "archive-too-many-messages": ("An archive claims more messages than any archive can hold.", REDOWNLOAD),
    "metadata-mismatch": ("An archive's own time window or channels differ from what the index says.", REBUILD),
    "archive-empty": ("An archive holds no message (builders never write an empty one).", REBUILD),
    "message-bad-hash": ("Some messages have no message hash.", REBUILD),
    "message-outside-window": ("Some messages lie outside their archive's week.", REBUILD),
    "piece-mismatch": ("This archive's bytes differ from what the torrent promises: they were altered after it "
                       "was published.", REDOWNLOAD),
    "torrent-piece-mismatch": ("Parts of the folder differ from what the torrent promises (piece hashes).",
                               REDOWNLOAD),
    "torrent-bad-name": ("The torrent belongs to another community or folder.",
                         "Open the folder together with the torrent named after its community ID."),
    "torrent-file-size": ("The torrent describes another version of this folder (file sizes differ).",
                          "Use the torrent of the latest announcement, or download the folder again."),
    "torrent-not-used": ("A torrent lies nearby but is not this folder's, so it was not used.",
                         "Nothing to do, unless this folder's own torrent is missing."),
    "pieces-unchecked": ("Piece hashes were not checked: no matching torrent was found.",
                         "Put the community's <community ID>.torrent beside the folder (or in ../torrents) and open "
                         "it again: only piece hashes catch altered bytes that still decode."),
    "archives-unchecked": ("Only the index was checked: there is no data file beside it.",
                           "Open the whole folder (index and data) to check the archives themselves."),
    "needs-network": ("This is a magnet link: its archives have not been downloaded, so nothing was checked.",
                      "Download it first (member view, or `archivist fetch`), then open the folder."),
    "not-an-archive": ("This is not an archive.", "Open an archive folder, its index or data file, or a torrent."),
}
_TORRENT = ("The torrent file is damaged or was refused.", "Get the torrent again from the community's announcement.")
_CODEX = ("The Codex node could not supply or prove this content.",
          "Check that the Codex node in Settings is running and holds the community's archives.")
_OTHER = ("The check failed.", RECOPY)
INDEX_CODES = {"index-missing", "index-undecodable", "index-too-big", "index-empty", "key-mismatch",
               "window-inverted", "size-not-piece-multiple", "offset-not-piece-aligned", "padding-exceeds-size",
               "offset-overlap", "offset-gap", "index-past-data", "size-absurd", "padding-formula", "data-trailing"}
PIECE_CODES = {"piece-mismatch", "torrent-piece-mismatch", "torrent-bad-name", "torrent-file-size"}


def plain(code: str) -> tuple[str, str]:
    if code in PLAIN:
        return PLAIN[code]
    if code.startswith("torrent-"):
        return _TORRENT
    if code.startswith("codex-") or code.startswith("cid-"):
        return _CODEX
    return _OTHER


@dataclass(frozen=True)
class Fault:
    code: str
    severity: str          # error | warning | info
    title: str             # what is wrong, in plain words
    where: str             # archive and data bytes, or the file concerned
    what_to_do: str
    detail: str            # the verifier's own sentence
    archive_id: str | None = None
    data_start: int | None = None   # first byte of the damaged range in `data` (inclusive)
    data_end: int | None = None     # last byte (inclusive)


@dataclass(frozen=True)
class Check:
    name: str
    status: str            # passed | failed | not checked
    note: str = ""

    @property
    def short(self) -> str:
        """The check's name inside a sentence."""
        return {"Index": "the index", "Archives": "the archives", "Piece hashes": "the piece hashes",
                "Torrent file": "the torrent file"}.get(self.name.split(" (")[0], self.name.lower())


def _window(row) -> str:
    return f"{utc_text(row.start, '%Y-%m-%d')} to {utc_text(row.end, '%Y-%m-%d')}"


def faults(result) -> list[Fault]:
    """Every finding of the result (errors first), each in plain words with where it is."""
    rep = result.report
    if rep is None:
        return []
    rows = {r.archive_id: r for r in result.rows}
    spans = getattr(result, "spans", {})
    out = []
    for i, f in enumerate(rep.findings):
        title, todo = plain(f.code)
        start = end = None
        if i in spans:
            start, end = spans[i]
        row = rows.get(f.archive_id) if f.archive_id else None
        if row is not None and start is None and row.size:
            start, end = row.offset, row.offset + row.size - 1
        if f.archive_id:
            where = f"archive {f.archive_id}" + (f" (week {_window(row)})" if row is not None else "")
            if start is not None:
                where += f", data bytes {start}..{end}"
                a, b = start // PIECE_LENGTH, end // PIECE_LENGTH
                where += f" (piece {a})" if a == b else f" (pieces {a}..{b})"
        elif f.code in INDEX_CODES:
            where = "the index file"
        elif f.code == "torrent-piece-mismatch":
            where = "the folder's data and index files, against the torrent's piece hashes"
        elif f.code.startswith("torrent-"):
            where = "the torrent file"
        elif f.code == "pieces-unchecked":
            where = "the whole folder"
        else:
            where = "the whole source"
        out.append(Fault(f.code, f.severity, title, where, todo, f.message, f.archive_id, start, end))
    order = {"error": 0, "warning": 1}     # errors first, and those pinned to an archive before folder-wide ones
    return sorted(out, key=lambda x: (order.get(x.severity, 2), x.archive_id is None))


def checks(result) -> list[Check]:
    """Which checks ran and how they ended. 'not checked' is said, never folded into 'passed'."""
    rep = result.report
    if rep is None:
        return []
    codes = {f.code for f in rep.findings}
    errs = {f.code for f in rep.findings if f.severity == "error"}
    status = lambda bad: FAILED if bad else PASSED  # noqa: E731
    if result.kind == "codex":
        return [Check("Index", status(errs & INDEX_CODES)),
                Check("Content IDs (of the index and every archive)", status(any(
                    c.startswith(("codex-", "cid-")) for c in errs))),
                Check("Archives (decoded and checked)", status(errs - INDEX_CODES))]
    if "needs-network" in codes or result.kind == "error":
        return [Check("Index", NOT_CHECKED), Check("Archives", NOT_CHECKED), Check("Piece hashes", NOT_CHECKED)]
    if result.kind == "torrent" and result.folder is None:
        return [Check("Torrent file", status(errs)), Check("Index", NOT_CHECKED, "no folder beside the torrent"),
                Check("Archives", NOT_CHECKED), Check("Piece hashes", NOT_CHECKED)]
    no_index = codes & {"index-missing", "index-undecodable", "index-too-big"}
    out = [Check("Index", FAILED if no_index or errs & INDEX_CODES else PASSED, f"{rep.archives} archives listed")]
    if no_index or "archives-unchecked" in codes or "data-missing" in codes:
        out.append(Check("Archives (decoded and checked)", NOT_CHECKED, "no data file" if not no_index else
                         "the index could not be read"))
    else:
        out.append(Check("Archives (decoded and checked)", status(errs - INDEX_CODES - PIECE_CODES),
                         f"{rep.messages} messages"))
    if rep.torrent is None:
        out.append(Check("Piece hashes (against the torrent)", NOT_CHECKED,
                         "no matching torrent" if not no_index else ""))
    else:
        out.append(Check("Piece hashes (against the torrent)", status(errs & PIECE_CODES), str(rep.torrent)))
    return out


def headline(result) -> str:
    """One or two sentences for the top of the Inspector and of the report."""
    if getattr(result, "not_archive", None):
        return result.not_archive
    rep = result.report
    if result.error and rep is None:
        return f"Cannot open {result.source}: {result.error}"
    if rep is None:
        return f"{len(result.rows)} archives listed; nothing was checked."
    fs = [f for f in faults(result) if f.severity == "error"]
    warn = sum(1 for f in rep.findings if f.severity == "warning")
    done = checks(result)
    if not any(c.status != NOT_CHECKED for c in done):
        return faults(result)[0].title if rep.findings else "Nothing was checked."
    if fs:
        first = fs[0]
        n = len(fs)
        return (f"{n} fault{'s' if n != 1 else ''} found in {rep.archives} archives. First: {first.title} "
                f"Where: {first.where}.")
    unchecked = [c.short for c in done if c.status == NOT_CHECKED]
    tail = f", {warn} warning{'s' if warn != 1 else ''}" if warn else ""
    if not unchecked:
        return (f"Verified: {rep.archives} archives, {rep.messages} messages, no faults{tail}; checked: "
                + _join([c.short for c in done]) + ".")
    return (f"No faults in what was checked ({rep.archives} archives, {rep.messages} messages{tail}), but not fully "
            f"verified. Not checked: {_join(unchecked)}.")


def _join(words: list[str]) -> str:
    return words[0] if len(words) == 1 else ", ".join(words[:-1]) + " and " + words[-1]


def build_report(result, *, now: float, app: str = "Archivist Inspector") -> dict[str, Any]:
    """The ticket report as plain data (JSON-ready). `now` (epoch seconds) is injected, not read here."""
    rep = result.report
    fs = faults(result)
    out: dict[str, Any] = {
        "tool": app,
        "generated_at": datetime.fromtimestamp(now, timezone.utc).isoformat(timespec="seconds"),
        "source": result.source, "kind": result.kind, "summary": headline(result),
        "ok": bool(rep is not None and rep.ok and not result.error and not getattr(result, "not_archive", None)),
        "not_an_archive": getattr(result, "not_archive", None), "error": result.error,
        "checks": [asdict(c) for c in checks(result)],
        "faults": [asdict(f) for f in fs],
        "archives": [{**r.to_json(), "faulty": any(f.archive_id == r.archive_id and f.severity == "error"
                                                   for f in fs)} for r in result.rows],
    }
    if result.torrent is not None:
        t = result.torrent
        out["torrent"] = {"name": t.name, "infohash": t.infohash, "pieces": t.num_pieces, "magnet": t.magnet()}
    if getattr(result, "magnet", None):
        out["magnet"] = result.magnet
    return out


def report_json(report: dict) -> str:
    return json.dumps(report, indent=2, sort_keys=False, ensure_ascii=False) + "\n"


_CSS = ("body{font-family:sans-serif;margin:2em;color:#222}table{border-collapse:collapse;margin:1em 0}"
        "td,th{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}"
        ".error{color:#c0392b}.warning{color:#b9770e}.passed{color:#1e8449}.failed{color:#c0392b}"
        "code{word-break:break-all}")


def report_html(report: dict) -> str:
    """A self-contained page (no script, no outside resource); every value is escaped."""
    e = lambda v: html.escape("" if v is None else str(v))  # noqa: E731
    rows = []
    for c in report["checks"]:
        cls = c["status"].replace(" ", "-")
        rows.append(f"<tr><td>{e(c['name'])}</td><td class='{cls}'>{e(c['status'])}</td><td>{e(c['note'])}</td></tr>")
    faults_html = []
    for f in report["faults"]:
        faults_html.append(
            f"<tr class='{e(f['severity'])}'><td>{e(f['severity'])}</td><td>{e(f['title'])}<br><small><code>"
            f"{e(f['code'])}</code>: {e(f['detail'])}</small></td><td><code>{e(f['where'])}</code></td>"
            f"<td>{e(f['what_to_do'])}</td></tr>")
    arch = [f"<tr{' class=error' if a['faulty'] else ''}><td><code>{e(a['id'])}</code></td><td>{e(a['from'])}</td>"
            f"<td>{e(a['to'])}</td><td>{e(a['offset'])}</td><td>{e(a['size'])}</td><td>{e(a['messages'])}</td>"
            f"<td>{e(a['error'])}</td></tr>" for a in report["archives"]]
    torrent = report.get("torrent")
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>Archivist inspection report: {e(report['source'])}</title><style>{_CSS}</style></head><body>",
        "<h1>Archivist inspection report</h1>",
        f"<p><b>Source:</b> <code>{e(report['source'])}</code> ({e(report['kind'])})<br>",
        f"<b>Generated:</b> {e(report['generated_at'])} by {e(report['tool'])}</p>",
        f"<p class='{'passed' if report['ok'] else 'failed'}'><b>{e(report['summary'])}</b></p>",
    ]
    if torrent:
        parts.append(f"<p><b>Torrent:</b> <code>{e(torrent['infohash'])}</code>, {e(torrent['pieces'])} pieces<br>"
                     f"<code>{e(torrent['magnet'])}</code></p>")
    parts += ["<h2>Checks</h2><table><tr><th>check</th><th>result</th><th>note</th></tr>", *rows, "</table>"]
    parts += ["<h2>Faults</h2>"]
    if faults_html:
        parts += ["<table><tr><th>severity</th><th>what is wrong</th><th>where</th><th>what to do</th></tr>",
                  *faults_html, "</table>"]
    else:
        parts.append("<p>None.</p>")
    if arch:
        parts += ["<h2>Archives (data order)</h2><table><tr><th>archive ID</th><th>from</th><th>to</th>"
                  "<th>data offset</th><th>size</th><th>messages</th><th>error</th></tr>", *arch, "</table>"]
    parts.append("</body></html>\n")
    return "\n".join(parts)


def write_report(result, path, *, now: float) -> str:
    """Write the report as HTML or JSON, chosen by the file's suffix (.json: JSON; anything else: HTML)."""
    from pathlib import Path
    p = Path(path)
    rep = build_report(result, now=now)
    text = report_json(rep) if p.suffix.lower() == ".json" else report_html(rep)
    p.write_text(text, encoding="utf-8")
    return "json" if p.suffix.lower() == ".json" else "html"
