"""Fix 38 (registry: __init__.py): a dial returns as soon as one address has connected.

py-libp2p 0.8.1's `Swarm.dial_peer` starts a task per selected address (at most 2: one per transport class, TCP
before WebSocket) and gives each a 250 ms head start, `with trio.move_on_after(_HAPPY_EYEBALLS_DELAY): await
failed_event.wait()`; the event is set only when that dial FAILS, and the nursery is cancelled only once
`max_connections_per_peer` (3) connections exist. So a dial that succeeds at once still returns after 250 ms, and
with a TCP and a WebSocket address the WebSocket one is dialled too after the head start (two connections to one
peer). go-libp2p's happy eyeballs stops starting addresses once one has connected and returns with that connection.

`quick_dial(function)` compiles upstream's own source again (from the pinned py-libp2p, so an upgrade is read as it
is, like fix 36's `quietlog.lean_debug`) with two statements added: in the dial task, right after
`connections.append(connection)`, `cancel_scope.cancel()` (upstream's own scope around the nursery: it ends the
head-start wait and cancels a dial still in flight), and at the top of the loop over addresses `if connections:
break` (no address is started once one has connected, whatever the order in which the timeout and the success
were scheduled). A failed address still hands over to the next at once, and all failing raises upstream's
SwarmDialAllFailedError. If the source does not have that shape (an upstream change), upstream's function stays
and a warning is logged; `installed()` says False.

`ARCHIVIST_WAKU_NO_QUICK_DIAL=1` leaves it out (benchmarks only, to compare).
"""
from __future__ import annotations

import ast
import logging

from libp2p.network.swarm import Swarm

from core.waku.libp2p_patches.quietlog import recompiled

UPSTREAM_DIAL_PEER = Swarm.__dict__["dial_peer"]


class ShapeError(Exception):
    """Upstream's dial_peer is not shaped as fix 38 expects: leave it as it is."""


def _is_call(node: ast.AST, attr: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == attr


def _one(found: list, what: str):
    if len(found) != 1:
        raise ShapeError(f"{len(found)} {what} in Swarm.dial_peer, expected 1")
    return found[0]


def _transform(fn: ast.AsyncFunctionDef) -> None:
    """Add the two statements to the parsed dial_peer (in place); ShapeError when it is not as expected."""
    with_node, scope_name = _one([(w, item.optional_vars.id) for w in ast.walk(fn) if isinstance(w, ast.With)
                  for item in w.items if _is_call(item.context_expr, "CancelScope")
                  and isinstance(item.optional_vars, ast.Name)], "`with trio.CancelScope() as ...`")
    loop = _one([f for f in ast.walk(with_node) if isinstance(f, ast.For)
                 and any(isinstance(s, ast.AsyncFunctionDef) for s in f.body)
                 and any(isinstance(s, ast.With) and any(_is_call(i.context_expr, "move_on_after") for i in s.items)
                         for s in f.body)], "loops over addresses with a dial task and a head-start wait")
    task = _one([s for s in loop.body if isinstance(s, ast.AsyncFunctionDef)], "dial tasks")
    appends = [(stmts, i) for node in ast.walk(task) for field in ("body", "orelse", "finalbody")
               if isinstance(stmts := getattr(node, field, None), list) for i, s in enumerate(stmts)
               if isinstance(s, ast.Expr) and _is_call(s.value, "append")
               and isinstance(s.value.func.value, ast.Name) and s.value.func.value.id == "connections"]
    stmts, index = _one(appends, "`connections.append(...)` in the dial task")
    at = stmts[index]
    cancel = ast.Expr(ast.Call(ast.Attribute(ast.Name(scope_name, ast.Load()), "cancel", ast.Load()), [], []))
    stmts.insert(index + 1, ast.copy_location(cancel, at))
    stop = ast.If(ast.Name("connections", ast.Load()), [ast.Break()], [])
    loop.body.insert(0, ast.copy_location(stop, loop.body[0]))


def quick_dial(func=UPSTREAM_DIAL_PEER):
    """`func` (Swarm.dial_peer) compiled again from its source with fix 38's two statements (quietlog.recompiled,
    as fix 36). Raises ShapeError, OSError, ... when that cannot be done."""
    def transform(tree: ast.Module) -> None:
        fn = tree.body[0]
        if not isinstance(fn, ast.AsyncFunctionDef) or fn.name != func.__name__:
            raise ShapeError(f"the source read is not {func.__name__}")
        _transform(fn)
    return recompiled(func, transform, "_waku_fix38")


def install_quick_dial() -> None:
    """Swarm.dial_peer's quick twin; upstream's stays (and a warning is logged) when its source cannot be read or
    is not shaped as expected: dials are then only slower, and `installed()` says so."""
    if getattr(Swarm.__dict__["dial_peer"], "_waku_fix38", False):
        return
    try:
        Swarm.dial_peer = quick_dial(UPSTREAM_DIAL_PEER)
    except (OSError, TypeError, SyntaxError, ShapeError) as e:
        logging.getLogger(__name__).warning("fix 38 not applied to Swarm.dial_peer: %s", e)


def installed() -> bool:
    return bool(getattr(Swarm.__dict__["dial_peer"], "_waku_fix38", False))
