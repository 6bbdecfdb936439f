"""Fix 36 (registry: __init__.py): the receive side's debug lines are built only when debug logging is on.

py-libp2p 0.8.1 writes its debug lines as f-strings (`logger.debug(f"... {self.peer_id} ...")`), and an f-string
is formatted before `logger.debug` can look at the level: the peer ID's base58 text, dicts of flag names and the
like are built and thrown away on every call. Fix 27 took the send side's line out (Yamux._write_frame); the
receive side still made ~36 of them per lightpush request (profile, docs/BENCHMARKS.md "Waku load"):
`Yamux.handle_incoming` ~14 per request (with a dict of type names and a list of flag names per frame),
`Yamux.read_stream` ~9, Noise `read_msg` ~6, `NetStream.set_state` 2, `Yamux.accept_stream` 2,
`Yamux._finalize_stream_locked` 1.

`lean_debug(function)` compiles upstream's own source again (from the pinned py-libp2p, so an upgrade is read as
it is) with each `logger.debug(...)` statement (or `self.logger.debug(...)`) inside `if
logger.isEnabledFor(logging.DEBUG):`, together with the statements right before it that only build that line
(`DEBUG_ONLY` names: handle_incoming's `type_names` and `flag_names`). Nothing else changes: same code, same
globals, same line numbers (tracebacks point into upstream's file), and with debug logging on the same lines are
logged. The functions are the upstream objects' replacements on their classes, installed once by apply_all();
fix 28's `unread.stream_read` wraps YamuxStream.read, not these.
"""
from __future__ import annotations

import ast
import inspect
import logging
import textwrap

from libp2p.network.stream.net_stream import NetStream
from libp2p.security.noise.io import BaseNoiseMsgReadWriter
from libp2p.stream_muxer.yamux.yamux import Yamux

# (class, method name): the receive path of every request (the profile's callers of logging.debug)
TARGETS = ((Yamux, "handle_incoming"), (Yamux, "read_stream"), (Yamux, "accept_stream"),
           (Yamux, "_finalize_stream_locked"), (BaseNoiseMsgReadWriter, "read_msg"), (NetStream, "set_state"))
DEBUG_ONLY = frozenset({"type_names", "flag_names"})     # names whose only use is a debug line right after them
UPSTREAM = {(cls, name): cls.__dict__[name] for cls, name in TARGETS}


def _debug_logger(stmt: ast.stmt) -> ast.expr | None:
    """The logger of a `logger.debug(...)` / `self.logger.debug(...)` statement, else None."""
    if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call):
        f = stmt.value.func
        if isinstance(f, ast.Attribute) and f.attr == "debug" and (
                (isinstance(f.value, ast.Name) and f.value.id == "logger")
                or (isinstance(f.value, ast.Attribute) and f.value.attr == "logger")):
            return f.value
    return None


def _debug_only(stmt: ast.stmt) -> bool:
    """A statement that only prepares a debug line: `type_names = ...`, `flag_names = []`, or `if ...:
    flag_names.append(...)` (its test a plain expression of names and constants)."""
    if isinstance(stmt, ast.Assign):
        return all(isinstance(t, ast.Name) and t.id in DEBUG_ONLY for t in stmt.targets)
    if isinstance(stmt, ast.If) and not stmt.orelse:
        calls_ok = all(isinstance(s, ast.Expr) and isinstance(s.value, ast.Call)
                       and isinstance(s.value.func, ast.Attribute)
                       and isinstance(s.value.func.value, ast.Name) and s.value.func.value.id in DEBUG_ONLY
                       for s in stmt.body)
        test_ok = all(isinstance(n, (ast.Name, ast.Constant, ast.BinOp, ast.BitAnd, ast.Load))
                      for n in ast.walk(stmt.test))
        return calls_ok and test_ok
    return False


class _Guard(ast.NodeTransformer):
    def generic_visit(self, node):
        super().generic_visit(node)
        for field in ("body", "orelse", "finalbody"):
            stmts = getattr(node, field, None)
            if isinstance(stmts, list) and stmts and isinstance(stmts[0], ast.stmt):
                setattr(node, field, self._guard(stmts))
        return node

    @staticmethod
    def _guard(stmts: list) -> list:
        out, pending = [], []
        for stmt in stmts:
            if _debug_only(stmt):
                pending.append(stmt)
                continue
            target = _debug_logger(stmt)
            if target is not None:
                test = ast.Call(ast.Attribute(target, "isEnabledFor", ast.Load()),
                                [ast.Constant(logging.DEBUG)], [])
                out.append(ast.copy_location(ast.If(test, pending + [stmt], []), stmt))
            else:
                out.extend(pending)
                out.append(stmt)
            pending = []
        out.extend(pending)
        return out


def recompiled(func, transform, marker: str):
    """`func` compiled again from its own source after `transform(tree)` (the parsed ast.Module, changed in place or
    returned); same globals and line numbers (tracebacks point into upstream's file), with `marker` set to True on
    it. Fixes 36 and 38 change upstream's functions this way. Raises OSError / TypeError when the source cannot be
    read, SyntaxError, and whatever `transform` raises."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    ast.increment_lineno(tree, func.__code__.co_firstlineno - 1)
    tree = ast.fix_missing_locations(transform(tree) or tree)
    namespace: dict = {}
    exec(compile(tree, inspect.getsourcefile(func), "exec"), func.__globals__, namespace)   # noqa: S102
    twin = namespace[func.__name__]
    twin.__qualname__, twin.__module__ = func.__qualname__, func.__module__
    setattr(twin, marker, True)
    return twin


def lean_debug(func):
    """`func` compiled again from its source with its debug lines guarded (above); same globals and line numbers."""
    return recompiled(func, lambda tree: _Guard().visit(tree), "_waku_fix36")


def install_lean_debug() -> None:
    """Each target's lean twin; a target whose source cannot be read or compiled again (an install without .py
    files) keeps upstream's function: only slower, and `installed()` says so."""
    for (cls, name), upstream in UPSTREAM.items():
        if not getattr(cls.__dict__[name], "_waku_fix36", False):
            try:
                setattr(cls, name, lean_debug(upstream))
            except (OSError, TypeError, SyntaxError, KeyError) as e:
                logging.getLogger(__name__).warning("fix 36 not applied to %s.%s: %s", cls.__name__, name, e)


def installed() -> bool:
    return all(getattr(cls.__dict__[name], "_waku_fix36", False) for cls, name in TARGETS)
