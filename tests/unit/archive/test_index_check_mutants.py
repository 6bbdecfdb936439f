"""The one index check (core/archive/index_check.py): each finding's code, sentence, archive and severity, and
each boundary, pinned by a test that fails when it moves (written against the survivors of `make mutation`,
docs/QUALITY.md). Entries are hand-built; expected values are worked out by hand from the rules."""
from __future__ import annotations

import dataclasses

from core.archive.codec import IndexEntry
from core.archive.constants import PIECE_LENGTH as P
from core.archive.index_check import (MAX_ARCHIVE_BYTES, Finding, check_entries, check_replacement,
                                      described_length, errors, plan_reads)

TOPIC = (b"\x00\x01\x02\x03",)


def entry(offset_pieces, pieces=1, padding=P - 10, start=0, end=10, offset=None, size=None):
    return IndexEntry(start, end, TOPIC, offset if offset is not None else offset_pieces * P,
                      size if size is not None else pieces * P, padding)


def keyed(*entries):
    return {e.archive_id: e for e in entries}


def found(findings):
    return [(f.code, f.message, f.archive_id, f.severity) for f in findings]


def test_a_healthy_index_has_no_finding_and_errors_filters_by_severity():
    a, b = entry(0, start=0, end=10), entry(1, pieces=2, padding=5, start=10, end=20)
    assert check_entries(keyed(a, b), 3 * P) == []
    assert check_entries({}, 0) == [] and check_entries({}) == []
    w = Finding("data-trailing", "m", None, "warning")
    e = Finding("offset-gap", "m", "0xa")
    assert e.severity == "error" and errors([w, e, w]) == [e]


def test_each_entry_fault_has_its_own_sentence():
    good = entry(0)
    bad_key = {"0xnot": good}
    assert found(check_entries(bad_key)) == [
        ("key-mismatch", f"key 0xnot is not the Keccak-256 of its entry ({good.archive_id})", "0xnot", "error")]
    for start, end in ((10, 10), (11, 10)):
        e = entry(0, start=start, end=end)
        assert found(check_entries(keyed(e))) == [
            ("window-inverted", f"from {start} is not before to {end}", e.archive_id, "error")]
    e = entry(0, size=P + 1, padding=11)
    assert ("size-not-piece-multiple", f"size {P + 1} is not a positive multiple of {P}", e.archive_id,
            "error") in found(check_entries(keyed(e)))
    e = entry(0, size=0, padding=0)
    assert [f.code for f in check_entries(keyed(e))] == ["size-not-piece-multiple", "padding-formula"]
    e = entry(0, size=2 * P + 5, padding=5)     # every other field as a healthy entry's: not let through
    assert [f.code for f in check_entries(keyed(e))] == ["size-not-piece-multiple", "padding-formula"]
    e = entry(0, offset=5)
    assert ("offset-not-piece-aligned", f"offset 5 is not on a {P}-byte piece boundary", e.archive_id,
            "error") in found(check_entries(keyed(e)))
    e = entry(0, padding=P + 1)
    assert found(check_entries(keyed(e))) == [
        ("padding-exceeds-size", f"padding {P + 1} is larger than size {P}", e.archive_id, "error")]
    assert check_entries(keyed(entry(0, padding=P))) == []     # padding == size: an empty archive, allowed
    e = entry(0, pieces=2, padding=P)            # raw P bytes pad to (P, 0), not (2P, P)
    assert found(check_entries(keyed(e))) == [
        ("padding-formula", f"size {2 * P} / padding {P} do not follow status-go's padding rule for {P} bytes "
         f"(expected ({P}, 0))", e.archive_id, "warning")]


def test_padding_rule_is_checked_in_the_fast_path_too():
    e = entry(0, pieces=2, padding=5)            # 2P - 5 raw bytes pad to (2P, 5): fine
    assert check_entries(keyed(e)) == []
    e = entry(0, pieces=2, padding=P + 5)        # raw P - 5 bytes pad to (P, 5), not (2P, P + 5)
    assert [f.code for f in check_entries(keyed(e))] == ["padding-formula"]


def test_layout_faults_in_data_order():
    a, b, c = entry(0, start=0, end=10), entry(2, start=10, end=20), entry(2, pieces=2, start=20, end=30)
    es = dict(keyed(a, b))
    assert found(check_entries(es)) == [("offset-gap", f"offset {2 * P} leaves a gap after {P}", b.archive_id,
                                         "error")]
    # b and c both start at 2P: in data order the smaller key comes first and the other overlaps it
    first, second = sorted([b, c], key=lambda e: e.archive_id)
    assert found(check_entries(keyed(a, b, c))) == [
        ("offset-gap", f"offset {2 * P} leaves a gap after {P}", first.archive_id, "error"),
        ("offset-overlap", f"offset {2 * P} overlaps the previous archive (ends at {2 * P + first.size})",
         second.archive_id, "error")]


def test_an_entry_at_the_same_offset_as_the_previous_with_a_smaller_key_sorts_first():
    a, b = entry(0, start=0, end=10), entry(0, start=10, end=20)
    lo, hi = sorted([a, b], key=lambda e: e.archive_id)
    for order in ((lo, hi), (hi, lo)):
        fs = check_entries({e.archive_id: e for e in order}, P)
        assert [(f.code, f.archive_id) for f in fs] == [("offset-overlap", hi.archive_id)]


def test_an_archive_inside_the_previous_one_does_not_move_the_end_back():
    big, inner, nxt = entry(0, pieces=3, start=0, end=10), entry(1, start=10, end=20), entry(3, start=20, end=30)
    fs = check_entries(keyed(big, inner, nxt), 4 * P)
    assert [(f.code, f.archive_id) for f in fs] == [("offset-overlap", inner.archive_id)]


def test_data_length_against_the_index():
    a = entry(0, start=0, end=10)
    assert found(check_entries(keyed(a), P - 1)) == [
        ("index-past-data", f"index describes {P} bytes but data holds {P - 1}", None, "error")]
    assert found(check_entries(keyed(a), P + 3)) == [
        ("data-trailing", "data has 3 bytes past the last indexed archive (an interrupted append; opening the "
         "folder for writing cuts them off)", None, "warning")]
    assert found(check_entries({}, 7)) == [
        ("index-empty", "the index lists no archive but data holds 7 bytes: an empty index never describes a "
         "non-empty data file (damaged or replaced index)", None, "error")]
    assert check_entries(keyed(a), P) == []


def test_unordered_entries_are_sorted_before_the_layout_check():
    a, b, c = entry(0, start=0, end=10), entry(1, start=10, end=20), entry(3, start=20, end=30)
    fs = check_entries({c.archive_id: c, a.archive_id: a, b.archive_id: b}, 4 * P)
    assert found(fs) == [("offset-gap", f"offset {3 * P} leaves a gap after {2 * P}", c.archive_id, "error")]
    fs = check_entries({b.archive_id: b, a.archive_id: a}, 2 * P)
    assert fs == []


def test_described_length():
    assert described_length({}) == 0
    assert described_length(keyed(entry(3, pieces=2), entry(0))) == 5 * P


def test_check_replacement_sentences():
    e1, e2 = entry(0, start=0, end=10), entry(1, start=10, end=20)
    new = keyed(e1, e2)
    assert check_replacement(new, new, 2 * P) == []
    # data-trailing is a warning of check_entries, not a reason; the missing coverage is
    assert found(check_replacement(keyed(e1), keyed(e1), 2 * P)) == [
        ("index-incomplete", f"the new index covers {P} of the {2 * P} bytes of data", None, "error")]
    moved = dataclasses.replace(e2, offset=2 * P)
    assert found(check_replacement(keyed(e1, moved), new, 2 * P)) == [
        ("archive-not-in-data", f"the index names archive {moved.archive_id} at offset {2 * P} ({P} bytes) but "
         "data does not hold it there", moved.archive_id, "error")]
    # new's own errors come first
    assert [f.code for f in check_replacement({}, keyed(e1), P + 5)] == ["index-incomplete"]
    assert [f.code for f in check_replacement({}, keyed(e1), P - 5)] == ["index-past-data", "index-incomplete"]


def test_plan_reads_skips_what_may_not_be_read():
    assert MAX_ARCHIVE_BYTES == 64 * 1024 * 1024
    ok = entry(0, start=0, end=10)
    pad = entry(1, padding=P + 1, start=10, end=20)
    past = entry(2, pieces=2, start=20, end=30)
    assert plan_reads(keyed(ok, pad, past), 3 * P) == [(ok.archive_id, ok, None),
                                                        (pad.archive_id, pad, "padding-exceeds-size"),
                                                        (past.archive_id, past, "index-past-data")]
    assert plan_reads(keyed(past), 4 * P)[0][2] is None                 # ends exactly at the end of data
    n = MAX_ARCHIVE_BYTES // P + 1
    huge = entry(0, pieces=n)
    assert plan_reads(keyed(huge), n * P) == [(huge.archive_id, huge, "size-absurd")]
    limit = IndexEntry(0, 10, TOPIC, 0, MAX_ARCHIVE_BYTES, 0)
    assert plan_reads(keyed(limit), MAX_ARCHIVE_BYTES)[0][2] is None
    a, inner, after = entry(0, pieces=2, start=0, end=10), entry(1, start=10, end=20), entry(2, start=20, end=30)
    assert [s for _, _, s in plan_reads(keyed(a, inner, after), 3 * P)] == [None, "offset-overlap", None]


def test_entry_faults_after_an_out_of_order_entry_are_still_found():
    a, b = entry(0, start=0, end=10), entry(1, start=10, end=20)
    bad = entry(2, start=30, end=30)                       # window-inverted, listed after the out-of-order pair
    fs = check_entries({b.archive_id: b, a.archive_id: a, bad.archive_id: bad}, 3 * P)
    assert [(f.code, f.archive_id) for f in fs] == [("window-inverted", bad.archive_id)]


def test_an_aligned_offset_is_no_finding_in_the_detailed_check():
    a, b = entry(0, start=0, end=10), entry(1, start=20, end=20)      # b takes the detailed path (inverted)
    assert [f.code for f in check_entries(keyed(a, b), 2 * P)] == ["window-inverted"]


def test_an_archive_of_nothing_but_padding_may_be_read():
    e = entry(0, padding=P)
    assert plan_reads(keyed(e), P) == [(e.archive_id, e, None)]
