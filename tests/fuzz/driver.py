"""Structure-aware fuzzing of every decoder of outside data, deterministic, with a report per decoder.

Each target (tests/fuzz/targets.py) gives valid encodings to start from, a format ("protobuf", "bencode",
"text") and a function that decodes one input and names the outcome. Inputs are mutations of the valid
encodings (flip bits, overwrite bytes, truncate, splice two encodings, insert/delete/duplicate chunks, and,
knowing the format, inflate protobuf varints / bencode numbers to 2^63, 2^64-1, ... or mangle magnet-link fields)
plus pure random bytes. The only allowed outcomes are a result or the target's documented error classes; any
other exception, or one input taking more than SLOW_INPUT seconds of CPU, is a failure, kept with its input.

    python -m tests.fuzz.driver [--inputs N] [--seed S] [TARGET ...]     (make fuzz: N = 1,000,000 per target)
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Sequence

from core.varint import DecodeError as VarintError, read_varint, write_varint

DEFAULT_INPUTS = 10_000
SLOW_INPUT = 2.0          # seconds: one input taking longer is reported as a hang
INTERESTING = (0, 1, 0x7F, 0x80, 0xFF, 0x3FFF, 0x4000, 102_399, 102_400, 30_000_000, 2**31 - 1, 2**31, 2**32 - 1,
               2**32, 1 << 40, 2**53, 2**63 - 1, 2**63, 2**64 - 1)


@dataclass
class Target:
    name: str
    kind: str                                   # protobuf | bencode | text
    seeds: Callable[[], list]                   # valid encodings (bytes, or str for text)
    run: Callable[[object], str]                # decode one input; returns the outcome's name
    allowed: tuple[type[BaseException], ...]    # the decoder's documented errors
    label: Callable[[BaseException], str] = lambda e: getattr(e, "code", type(e).__name__)


@dataclass
class Result:
    target: str
    inputs: int = 0
    seconds: float = 0.0
    outcomes: Counter = field(default_factory=Counter)
    failures: list[tuple[str, str, bytes]] = field(default_factory=list)   # (kind, message, input)
    slowest: float = 0.0

    @property
    def rate(self) -> float:
        return self.inputs / self.seconds if self.seconds else 0.0

    def summary(self) -> str:
        top = ", ".join(f"{k} {v}" for k, v in self.outcomes.most_common())
        return (f"fuzz {self.target}: {self.inputs} inputs in {self.seconds:.1f} s ({self.rate:,.0f} inputs/s), "
                f"slowest {self.slowest * 1000:.1f} ms, {len(self.failures)} failures; outcomes: {top}")


# ---------------------------------------------------------------- format knowledge

def varint(n: int) -> bytes:
    return write_varint(n)


def _read_varint(buf: bytes, i: int) -> tuple[int, int] | None:
    try:
        return read_varint(buf, i)
    except VarintError:
        return None


def varint_spans(buf: bytes, base: int = 0, depth: int = 0, out: list | None = None) -> list[tuple[int, int]]:
    """(start, end) of every varint of a protobuf encoding (tags, lengths, values), recursing into
    length-delimited fields that themselves parse as messages."""
    out = [] if out is None else out
    i = 0
    while i < len(buf):
        s = i
        r = _read_varint(buf, i)
        if r is None:
            return out
        tag, i = r
        out.append((base + s, base + i))
        wt = tag & 7
        if wt == 0:
            s = i
            r = _read_varint(buf, i)
            if r is None:
                return out
            i = r[1]
            out.append((base + s, base + i))
        elif wt == 2:
            s = i
            r = _read_varint(buf, i)
            if r is None:
                return out
            ln, i = r
            out.append((base + s, base + i))
            if i + ln > len(buf):
                return out
            if depth < 5 and ln:
                varint_spans(buf[i:i + ln], base + i, depth + 1, out)
            i += ln
        elif wt in (1, 5):
            i += 8 if wt == 1 else 4
        else:
            return out
    return out


_BENCODE_NUMBER = re.compile(rb"i(-?\d+)e|(\d+):")


def bencode_spans(buf: bytes) -> list[tuple[int, int]]:
    """(start, end) of the digits of every integer and string length of a bencoded value."""
    return [m.span(1) if m.group(1) is not None else m.span(2) for m in _BENCODE_NUMBER.finditer(buf)]


def _big_decimal(rng: random.Random) -> bytes:
    v = rng.choice(INTERESTING + (10**20, 10**40, 2**128))
    return rng.choice((b"", b"-", b"0", b"-0")) + str(v).encode()


def _bdecode(raw: bytes):
    import fastbencode
    try:
        return fastbencode.bdecode(raw)
    except Exception:  # noqa: BLE001
        return None


_BENCODE_KEYS = (b"info", b"name", b"files", b"path", b"length", b"piece length", b"pieces", b"attr", b"private",
                 b"meta version", b"file tree", b"announce", b"announce-list", b"md5sum")
_BENCODE_STRINGS = (b"", b".", b"..", b"../data", b"data", b"index", b"a/b", b"\\x", b"\x00", b"\xff\xfe",
                    b"0x02" + b"00" * 33, b"x" * 300)


def _bencode_mutate(rng: random.Random, tree):
    """Change one node of a decoded torrent (value, key, list length, nesting), keeping it valid bencode."""
    if tree is None:
        return None

    def new_value(depth: int = 0):
        c = rng.randrange(6)
        if c == 0:
            return rng.choice(INTERESTING + (-1, -(2**63), 10**30)) * rng.choice((1, 1, -1))
        if c == 1:
            return rng.choice(_BENCODE_STRINGS) if rng.random() < 0.7 else rng.randbytes(rng.randrange(0, 60))
        if c == 2 and depth < 3:
            return [new_value(depth + 1) for _ in range(rng.randrange(0, 4))]
        if c == 3 and depth < 3:
            return {rng.choice(_BENCODE_KEYS): new_value(depth + 1) for _ in range(rng.randrange(0, 4))}
        if c == 4:
            deep = v = []
            for _ in range(rng.choice((10, 100, 5000))):
                v.append([])
                v = v[0]
            return deep
        return rng.choice((b"data", b"index", 102400, [b"data"], {b"length": 1, b"path": [b"data"]}))

    def walk(node, depth: int):
        if isinstance(node, dict) and node and rng.random() < 0.7:
            k = rng.choice(list(node))
            op = rng.randrange(4)
            if op == 0:
                del node[k]
            elif op == 1:
                node[rng.choice(_BENCODE_KEYS)] = new_value()
            elif op == 2 or not isinstance(node[k], (dict, list)):
                node[k] = new_value()
            else:
                node[k] = walk(node[k], depth + 1)
            return node
        if isinstance(node, list) and node and rng.random() < 0.7:
            i = rng.randrange(len(node))
            op = rng.randrange(4)
            if op == 0:
                del node[i]
            elif op == 1:
                node.extend([node[i]] * rng.randrange(1, 4))
            elif op == 2 or not isinstance(node[i], (dict, list)):
                node[i] = new_value()
            else:
                node[i] = walk(node[i], depth + 1)
            return node
        return new_value()

    return walk(tree, 0)


# ---------------------------------------------------------------- mutation

class Mutator:
    """Deterministic input generator for one target."""

    def __init__(self, kind: str, seeds: Sequence, seed: int):
        """`seeds`: valid encodings (bytes; str for text), or (layer, bytes) pairs: then each input is
        (layer, mutated bytes) and the target builds the outer layers itself."""
        self.kind = kind
        self.rng = random.Random(seed)
        self.text = kind == "text"
        self.layers = [s[0] if isinstance(s, tuple) else None for s in seeds]
        seeds = [s[1] if isinstance(s, tuple) else s for s in seeds]
        self.seeds = [s.encode("utf-8", "surrogatepass") if self.text else bytes(s) for s in seeds]
        spans = varint_spans if kind == "protobuf" else bencode_spans if kind == "bencode" else None
        self.spans = [spans(s) if spans else [] for s in self.seeds]

    def __call__(self):
        k = self.rng.randrange(len(self.seeds))
        raw = self._bytes(k)
        if self.layers[k] is not None:
            return self.layers[k], raw
        if not self.text:
            return raw
        return raw.decode("utf-8", "surrogateescape") if self.rng.random() < 0.9 else raw.decode("latin-1")

    def _bytes(self, k: int) -> bytes:
        rng = self.rng
        r = rng.random()
        if r < 0.06:
            return rng.randbytes(rng.choice((0, 1, 2, 8, 33, 100, 600, 4000)) if rng.random() < 0.5
                                 else rng.randrange(0, 1200))
        buf = bytearray(self.seeds[k])
        if r < 0.35 and self.spans[k]:
            buf = self._structured(buf, self.spans[k])
            if rng.random() < 0.6:
                return bytes(buf)
        for _ in range(rng.choice((1, 1, 1, 2, 2, 3, 5))):
            buf = self._byte_level(buf)
        return bytes(buf)

    def _structured(self, buf: bytearray, spans: list[tuple[int, int]]) -> bytearray:
        rng = self.rng
        s, e = rng.choice(spans)
        if self.kind == "protobuf":
            v = rng.choice(INTERESTING) if rng.random() < 0.8 else rng.getrandbits(rng.choice((7, 14, 35, 64)))
            new = varint(v)
            if rng.random() < 0.1:             # a non-minimal or overlong (11-byte) varint
                new = new[:-1] + bytes([new[-1] | 0x80]) + b"\x80" * rng.randrange(0, 10) + b"\x00"
            return buf[:s] + new + buf[e:]
        if self.kind == "bencode":
            if rng.random() < 0.5:
                tree = _bencode_mutate(rng, _bdecode(bytes(buf)))
                if tree is not None:
                    import fastbencode
                    try:
                        return bytearray(fastbencode.bencode(tree))
                    except Exception:  # noqa: BLE001 - a tree bencode cannot encode: fall back to bytes
                        pass
            return buf[:s] + _big_decimal(rng) + buf[e:]
        return buf

    def _byte_level(self, buf: bytearray) -> bytearray:
        rng = self.rng
        n = len(buf)
        op = rng.randrange(9)
        if self.text and rng.random() < 0.4:
            return self._text_level(buf)
        if n == 0 or op == 0:                                        # insert random bytes
            i = rng.randrange(n + 1)
            return buf[:i] + rng.randbytes(rng.choice((1, 2, 4, 16, 100))) + buf[i:]
        if op == 1:                                                  # flip bits
            for _ in range(rng.randrange(1, 9)):
                buf[rng.randrange(n)] ^= 1 << rng.randrange(8)
            return buf
        if op == 2:                                                  # overwrite bytes
            for _ in range(rng.randrange(1, 5)):
                buf[rng.randrange(n)] = rng.choice((0, 0xFF, 0x80, 0x7F, rng.randrange(256)))
            return buf
        if op == 3:                                                  # truncate
            return buf[:rng.randrange(n)]
        if op == 4:                                                  # splice with another seed
            other = self.seeds[rng.randrange(len(self.seeds))]
            return buf[:rng.randrange(n + 1)] + other[rng.randrange(len(other) + 1):]
        if op == 5:                                                  # delete a chunk
            i = rng.randrange(n)
            return buf[:i] + buf[i + rng.randrange(1, 64):]
        if op == 6:                                                  # duplicate a chunk
            i = rng.randrange(n)
            j = min(n, i + rng.randrange(1, 200))
            return buf[:j] + buf[i:j] * rng.randrange(1, 4) + buf[j:]
        if op == 7 and n < 100_000:                                  # repeat the whole thing
            return buf * rng.randrange(2, 5)
        i = rng.randrange(n)                                         # swap two bytes
        j = rng.randrange(n)
        buf[i], buf[j] = buf[j], buf[i]
        return buf

    def _text_level(self, buf: bytearray) -> bytearray:
        """Magnet-link aware: mangle one `&`-separated parameter's name or value."""
        rng = self.rng
        parts = bytes(buf).split(b"&")
        i = rng.randrange(len(parts))
        name, eq, value = parts[i].partition(b"=")
        junk = rng.choice((b"", b"%", b"%zz", b"%00", b"%ff%fe", "\u00e9\u4e2d\U0001f600".encode(), b"\x00",
                           b"urn:btih:", b"urn:btmh:1220" + b"ab" * 32, b"0x" + b"02" * 33, b"A" * 40,
                           b"Z" * 32, b"[::1", b"[::1]:6881", b"127.0.0.1:99999", "h:\u00b2".encode(),
                           "h:\u0663".encode(), b"?", b"=", b"&&",
                           b"x" * rng.choice((40, 41, 1000, 9000)), rng.randbytes(rng.randrange(1, 40))))
        op = rng.randrange(5)
        if op == 0:
            value = junk
        elif op == 1:
            value = value[:rng.randrange(len(value) + 1)] + junk
        elif op == 2:
            name = rng.choice((b"xt", b"dn", b"tr", b"x.pe", b"ws", b"so", b"XT", b"", junk))
        elif op == 3:
            parts.insert(rng.randrange(len(parts) + 1), rng.choice((b"xt", b"tr", b"dn", b"x.pe")) + b"=" + junk)
            return bytearray(b"&".join(parts))
        else:
            del parts[i]
            return bytearray(b"&".join(parts)) if parts else bytearray(junk)
        parts[i] = name + (eq or b"=") + value
        return bytearray(b"&".join(parts))


# ---------------------------------------------------------------- running

def crash_dir() -> Path:
    return Path(os.environ.get("ARCHIVIST_FUZZ_CRASH_DIR") or Path(tempfile.gettempdir()) / "archivist-fuzz-crashes")


def run_target(t: Target, inputs: int, seed: int = 1, *, keep: int = 5) -> Result:
    """Feed `inputs` generated inputs to `t`; every unexpected exception or slow input becomes a failure."""
    gen = Mutator(t.kind, t.seeds(), seed=int.from_bytes(hashlib.sha256(f"{t.name}:{seed}".encode()).digest()[:8]))
    res = Result(t.name)
    clock = time.perf_counter
    cpu = time.thread_time   # a hang spins: CPU time, not wall time, so a busy machine's preemption is no "hang"
    start = clock()
    for _ in range(inputs):
        data = gen()
        t0 = cpu()
        try:
            outcome = t.run(data)
        except t.allowed as e:
            outcome = "error:" + t.label(e)
        except Exception as e:  # noqa: BLE001 - that is what we are looking for
            outcome = "CRASH:" + type(e).__name__
            if len(res.failures) < keep:
                res.failures.append(("crash", f"{type(e).__name__}: {e}"[:300], _as_bytes(data)))
        took = cpu() - t0
        if took > res.slowest:
            res.slowest = took
        if took > SLOW_INPUT and len(res.failures) < keep:
            res.failures.append(("slow", f"{took:.1f} s for one input", _as_bytes(data)))
        res.outcomes[outcome] += 1
    res.inputs = inputs
    res.seconds = clock() - start
    _keep_failures(res)
    return res


def _as_bytes(data) -> bytes:
    if isinstance(data, tuple):                    # (layer, bytes): kept as one byte of layer, then the bytes
        return bytes([data[0]]) + data[1]
    return data.encode("utf-8", "surrogateescape") if isinstance(data, str) else bytes(data)


def _keep_failures(res: Result) -> None:
    if not res.failures:
        return
    d = crash_dir()
    d.mkdir(parents=True, exist_ok=True)
    for i, (kind, msg, data) in enumerate(res.failures):
        p = d / f"{res.target}-{kind}-{hashlib.sha1(data).hexdigest()[:12]}.bin"
        p.write_bytes(data)
        res.failures[i] = (kind, f"{msg} (input kept in {p})", data)


def main(argv: Sequence[str] | None = None) -> int:
    from tests.fuzz.targets import TARGETS
    ap = argparse.ArgumentParser(prog="python -m tests.fuzz.driver", description=__doc__.split("\n\n")[0])
    ap.add_argument("--inputs", type=int, default=int(os.environ.get("ARCHIVIST_FUZZ", DEFAULT_INPUTS)))
    ap.add_argument("--seed", type=int, default=int(os.environ.get("ARCHIVIST_FUZZ_SEED", 1)))
    ap.add_argument("targets", nargs="*", help=f"default: all ({', '.join(t.name for t in TARGETS)})")
    a = ap.parse_args(argv)
    chosen = [t for t in TARGETS if not a.targets or t.name in a.targets]
    total, failed = time.perf_counter(), 0
    print(f"fuzzing {len(chosen)} decoders, {a.inputs} inputs each, seed {a.seed}", flush=True)
    for t in chosen:
        res = run_target(t, a.inputs, a.seed)
        print(res.summary(), flush=True)
        for kind, msg, data in res.failures:
            print(f"  {kind.upper()}: {msg}; input {data[:64].hex()}{'...' if len(data) > 64 else ''}", flush=True)
        failed += bool(res.failures)
    print(f"done in {time.perf_counter() - total:.1f} s: {failed} decoders with failures", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
