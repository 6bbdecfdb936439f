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
