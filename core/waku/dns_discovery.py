"""EIP-1459 DNS discovery: read an `enrtree://PUBKEY@domain` tree of signed node records from DNS TXT records.

The root TXT at `domain` is `enrtree-root:v1 e=<enr root> l=<link root> seq=<n> sig=<base64url r||s||v>`, signed
(keccak256 of the text before " sig=") by the key in the URL (base32 of the compressed secp256k1 key). Every
other record lives at `<hash>.domain`, hash = base32(keccak256(text)[:16]), and is `enrtree-branch:<h>,<h>...`,
`enr:...` or `enrtree://...` (a link to another tree). The walk checks every record against its name, so only
the root signature is needed; it is bounded in lookups, depth, records and time. The resolver is pluggable
(a callable name -> TXT strings); `dnspython_resolver` asks real DNS servers (or a local one, in tests).

Re-walks (dns_refresh.py) pass a record `cache` ({name: text}; a hash names its text forever, so a cached record is
never looked up again) and the `known` root of the last complete walk: when the new root's e= hash is the same,
the walk stops after the root (EIP-1459: the root changes whenever the content does).
"""
from __future__ import annotations

import base64
import re
import time
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import coincurve

from core.waku import enr as enrlib
from core.waku.enr import Enr, EnrError, keccak256
from core.waku.errors import WakuError

ROOT_PREFIX = "enrtree-root:v1"
BRANCH_PREFIX = "enrtree-branch:"
LINK_PREFIX = "enrtree://"
MAX_BRANCH_CHILDREN = 13          # go-ethereum: keeps a branch record under ~370 bytes
_ROOT_RE = re.compile(r"^enrtree-root:v1 e=([A-Z2-7]+) l=([A-Z2-7]+) seq=(\d+) sig=([A-Za-z0-9_-]+)\Z")
_HASH_RE = re.compile(r"^[A-Z2-7]{10,32}\Z")

Resolver = Callable[[str], Sequence[str]]   # fully qualified name -> its TXT strings (chunks already joined)


class DnsDiscoveryError(WakuError):
    """The tree URL, its root or its signature is bad, or a lookup failed for the root."""


def _b32(b: bytes) -> str:
    return base64.b32encode(b).decode().rstrip("=")


def _unb32(s: str) -> bytes:
    return base64.b32decode(s + "=" * (-len(s) % 8))


def subdomain(record: str) -> str:
    return _b32(keccak256(record.encode())[:16])


def parse_url(url: str) -> tuple[bytes, str]:
    """`enrtree://<base32 key>@<domain>` -> (33-byte compressed public key, domain)."""
    if not url.startswith(LINK_PREFIX) or "@" not in url:
        raise DnsDiscoveryError(f"not an enrtree URL: {url!r}")
    key, domain = url[len(LINK_PREFIX):].split("@", 1)
    try:
        pub = _unb32(key)
        coincurve.PublicKey(pub)
    except Exception:  # noqa: BLE001 - base32 or curve errors
        raise DnsDiscoveryError(f"bad public key in {url!r}") from None
    if len(pub) != 33 or not domain or any(c in domain for c in "/ @"):
        raise DnsDiscoveryError(f"bad public key or domain in {url!r}")
    return pub, domain.rstrip(".")


def make_url(public_key: bytes, domain: str) -> str:
    return f"{LINK_PREFIX}{_b32(public_key)}@{domain}"


@dataclass(frozen=True)
class Root:
    enr_root: str
    link_root: str
    seq: int
    signature: bytes

    @property
    def signed_text(self) -> str:
        return f"{ROOT_PREFIX} e={self.enr_root} l={self.link_root} seq={self.seq}"

    def text(self) -> str:
        return f"{self.signed_text} sig={base64.urlsafe_b64encode(self.signature).decode().rstrip('=')}"


def parse_root(text: str, public_key: bytes) -> Root:
    m = _ROOT_RE.match(text.strip())
    if not m:
        raise DnsDiscoveryError(f"not an {ROOT_PREFIX} record: {text[:80]!r}")
    try:
        sig = base64.urlsafe_b64decode(m.group(4) + "=" * (-len(m.group(4)) % 4))
    except ValueError:
        raise DnsDiscoveryError("root signature is not base64url") from None
    root = Root(m.group(1), m.group(2), int(m.group(3)), sig)
    if len(sig) != 65 or not enrlib.verify_signature(public_key, sig[:64], keccak256(root.signed_text.encode())):
        raise DnsDiscoveryError("root signature does not match the tree's public key")
    return root


@dataclass
class WalkResult:
    enrs: list[Enr] = field(default_factory=list)
    seq: int | None = None
    lookups: int = 0
    errors: list[str] = field(default_factory=list)   # skipped records / failed lookups below the root
    truncated: bool = False                           # a bound was hit before the tree was exhausted
    root: Root | None = None                          # the (top) tree's verified root
    unchanged: bool = False                           # its e= hash was the `known` one: nothing below was read
    cached: int = 0                                   # records taken from the cache instead of DNS
    visited: set[str] = field(default_factory=set)    # names of the records below the root(s) read or reused


class DnsDiscovery:
    """Walks trees with a resolver, within bounds. `clock` is injectable (tests); the deadline covers one
    `discover()` call, including linked trees."""

    def __init__(self, resolver: Resolver, *, max_lookups: int = 200, max_depth: int = 8, max_enrs: int = 100,
                 timeout_s: float = 30.0, follow_links: bool = False, clock: Callable[[], float] = time.monotonic,
                 cache: dict[str, str] | None = None):
        self.resolver, self.max_lookups, self.max_depth = resolver, max_lookups, max_depth
        self.max_enrs, self.timeout_s, self.follow_links, self.clock = max_enrs, timeout_s, follow_links, clock
        self.cache = cache              # {name: verified text} shared between walks; None: no cache

    def discover(self, url: str, known: Root | None = None) -> WalkResult:
        """Walk the tree at `url`. With `known` (the root of an earlier complete walk) and an equal e= hash, only
        the root is read (`unchanged`); links are then not followed either, so `known` is ignored with
        follow_links."""
        res = WalkResult()
        deadline = self.clock() + self.timeout_s
        self._walk_tree(url, res, deadline, set(), link_depth=0, known=known)
        return res

    def _lookup(self, name: str, res: WalkResult, deadline: float) -> str | None:
        if res.lookups >= self.max_lookups or self.clock() >= deadline:
            res.truncated = True
            return None
        res.lookups += 1
        try:
            txts = list(self.resolver(name))
        except Exception as e:  # noqa: BLE001 - resolvers raise their own types; the walk goes on
            res.errors.append(f"{name}: lookup failed: {e}")
            return None
        if not txts:
            res.errors.append(f"{name}: no TXT record")
            return None
        return txts[0]

    def _walk_tree(self, url: str, res: WalkResult, deadline: float, seen_trees: set, link_depth: int,
                   known: Root | None = None) -> None:
        pub, domain = parse_url(url)
        if (pub, domain) in seen_trees:
            return
        seen_trees.add((pub, domain))
        text = self._lookup(domain, res, deadline)
        if text is None:
            if link_depth == 0:
                raise DnsDiscoveryError(f"no root record at {domain}: {'; '.join(res.errors) or 'bound reached'}")
            return
        try:
            root = parse_root(text, pub)
        except DnsDiscoveryError as e:
            if link_depth == 0:
                raise
            res.errors.append(f"{domain}: {e}")
            return
        if link_depth == 0:
            res.seq, res.root = root.seq, root
            if known is not None and not self.follow_links and root.enr_root == known.enr_root:
                res.unchanged = True
                return
        self._walk(root.enr_root, domain, res, deadline, want_links=False)
        if self.follow_links and link_depth < self.max_depth:
            for link in self._walk(root.link_root, domain, res, deadline, want_links=True):
                try:
                    self._walk_tree(link, res, deadline, seen_trees, link_depth + 1)
                except DnsDiscoveryError as e:
                    res.errors.append(f"{link}: {e}")

    def _walk(self, start: str, domain: str, res: WalkResult, deadline: float, *, want_links: bool) -> list[str]:
        """Breadth-first over one subtree; returns the links found (want_links) and adds ENRs to `res`."""
        links: list[str] = []
        queue, seen = deque([(start, 0)]), set()
        while queue:
            h, depth = queue.popleft()
            if h in seen:
                continue
            seen.add(h)
            if len(res.enrs) >= self.max_enrs:
                res.truncated = True
                return links
            name = f"{h}.{domain}"
            text = None if self.cache is None else self.cache.get(name)
            if text is not None:
                res.cached += 1
            else:
                text = self._lookup(name, res, deadline)
                if text is None:
                    if res.truncated:
                        return links
                    continue
                if subdomain(text) != h:
                    res.errors.append(f"{name}: content does not match its hash")
                    continue
                if self.cache is not None:
                    self.cache[name] = text
            res.visited.add(name)
            if text.startswith(BRANCH_PREFIX):
                children = [c for c in text[len(BRANCH_PREFIX):].split(",") if c]
                if depth >= self.max_depth:
                    res.truncated = True
                    continue
                for c in children:
                    if _HASH_RE.match(c):
                        queue.append((c, depth + 1))
                    else:
                        res.errors.append(f"{name}: bad child hash {c[:40]!r}")
            elif text.startswith("enr:") and not want_links:
                try:
                    res.enrs.append(enrlib.from_text(text))
                except EnrError as e:
                    res.errors.append(f"{name}: {e}")
            elif text.startswith(LINK_PREFIX) and want_links:
                links.append(text)
            else:
                res.errors.append(f"{name}: unexpected record {text[:40]!r}")
        return links


def filter_enrs(enrs: Iterable[Enr], cluster: int | None, shards: Iterable[int] | None = None) -> list[Enr]:
    """Keep the records that announce `cluster` (and one of `shards` if given); None: keep all."""
    if cluster is None:
        return list(enrs)
    sh = None if shards is None else list(shards)
    return [r for r in enrs if r.matches(cluster, sh)]


def discover(url: str, resolver: Resolver, *, cluster: int | None = None, shards: Iterable[int] | None = None,
             **bounds) -> list[Enr]:
    """The records of the tree at `url`, filtered by cluster/shards."""
    return filter_enrs(DnsDiscovery(resolver, **bounds).discover(url).enrs, cluster, shards)


def dnspython_resolver(nameservers: Sequence[str] | None = None, port: int = 53, timeout_s: float = 5.0) -> Resolver:
    """TXT lookups with dnspython; `nameservers` None: the system's resolv.conf."""
    import dns.name
    import dns.resolver

    r = dns.resolver.Resolver(configure=nameservers is None)
    if nameservers is not None:
        r.nameservers, r.port = list(nameservers), port
    r.lifetime = r.timeout = timeout_s

    def resolve(name: str) -> list[str]:
        ans = r.resolve(dns.name.from_text(name), "TXT", search=False)
        return [b"".join(rd.strings).decode("utf-8", "replace") for rd in ans]
    return resolve


# --- building a tree (tests, and for publishing our own) ---

def make_tree(private_key: bytes, records: Sequence[str], seq: int = 1, links: Sequence[str] = ()
              ) -> tuple[str, dict[str, str]]:
    """Sign a tree of `records` (enr: texts) and `links` (enrtree:// URLs). Returns (root text, {subdomain
    label: TXT text}) for serving under the tree's domain, as go-ethereum's MakeTree lays it out."""
    txt: dict[str, str] = {}
    e_root = _subtree(list(records), txt)
    l_root = _subtree(list(links), txt)
    unsigned = Root(e_root, l_root, seq, b"")
    sig = coincurve.PrivateKey(private_key).sign_recoverable(keccak256(unsigned.signed_text.encode()), hasher=None)
    return Root(e_root, l_root, seq, sig).text(), txt


def _subtree(leaves: list[str], txt: dict[str, str]) -> str:
    level = []
    for leaf in leaves:
        h = subdomain(leaf)
        txt[h] = leaf
        level.append(h)
    while len(level) != 1:
        nxt = []
        for i in range(0, max(len(level), 1), MAX_BRANCH_CHILDREN):
            rec = BRANCH_PREFIX + ",".join(level[i:i + MAX_BRANCH_CHILDREN])
            h = subdomain(rec)
            txt[h] = rec
            nxt.append(h)
        level = nxt
    return level[0]
