"""One rule for how many Spark partitions a job over archives gets (core.pipeline.session.archive_slices), for
the hydrate and the export jobs, which each had a copy with its own 64 MB constant."""
from core.pipeline.session import ARCHIVE_SLICE_BYTES, archive_slices

MB = 1024 * 1024


def test_two_per_core_at_most_one_per_archive_and_none_above_64_mb():
    assert ARCHIVE_SLICE_BYTES == 64 * MB
    assert archive_slices([], 2) == 1
    assert archive_slices([MB] * 3, 2) == 3                   # one per archive, fewer than two per core
    assert archive_slices([MB] * 10, 2) == 4                  # two per core
    assert archive_slices([30 * MB] * 100, 2) == 47           # 3,000 MB in slices of at most 64 MB
    assert archive_slices([64 * MB] * 8, 1) == 8 and archive_slices([64 * MB] * 2 + [1], 1) == 3
