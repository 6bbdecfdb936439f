"""A range that ends on a date includes that day, in the member view's date fields and on the command line
(`--to DATE`): one rule, core.torrent.selection.day_start / day_end. Before, the command line ended at the start of
that day, so `--to 2026-11-23` fetched a day less than the same dates in the window."""
import argparse

from PySide6.QtCore import QDate

from core.torrent.selection import add_selection_arguments, selection_from_args
from gui.views.member import to_qdate, to_ts


def test_the_window_and_the_command_line_read_dates_alike():
    p = argparse.ArgumentParser(exit_on_error=False)
    add_selection_arguments(p)
    for first, last in (("2026-11-01", "2026-11-07"), ("2024-02-28", "2024-02-29"), ("1999-12-31", "2000-01-01"),
                        ("2026-11-23", "2026-11-23")):
        cli = selection_from_args(p.parse_args(["--from", first, "--to", last]))
        gui = (to_ts(QDate.fromString(first, "yyyy-MM-dd")), to_ts(QDate.fromString(last, "yyyy-MM-dd"), True))
        assert (cli.start, cli.end) == gui
        # and the window shows the same last day back (it shows `end - 1`'s date)
        assert to_qdate(cli.end - 1).toString("yyyy-MM-dd") == last


def test_a_config_files_range_reads_dates_the_same_way(tmp_path):
    """`from` / `to` in a community's config: TOML dates, text or unix seconds, by the same rule (a config took any
    value before, and a TOML date came through as a date object the member could not compare)."""
    import pytest

    from core.node.config import ConfigError, load
    p = argparse.ArgumentParser(exit_on_error=False)
    add_selection_arguments(p)
    cli = selection_from_args(p.parse_args(["--from", "2026-11-01", "--to", "2026-11-07"]))
    head = f'data_dir = "{tmp_path}"\n[[community]]\nid = "0x02{"ab" * 32}"\nrole = "member"\npolicy = "range"\n'
    for fr, to in (("2026-11-01", "2026-11-07"), ('"2026-11-01"', '"2026-11-07"'), (cli.start, cli.end)):
        (tmp_path / "c.toml").write_text(head + f"from = {fr}\nto = {to}\n")
        (c,) = load(tmp_path / "c.toml").communities
        assert (c.range_start, c.range_end) == (cli.start, cli.end)
    for bad, says in (('"yesterday"', "'yesterday' is neither unix seconds nor an ISO date"),
                      ("-5", "must be unix seconds or a date, not -5"), ("true", "not True")):
        (tmp_path / "c.toml").write_text(head + f"from = {bad}\nto = 5\n")
        with pytest.raises(ConfigError, match=says):
            load(tmp_path / "c.toml")
