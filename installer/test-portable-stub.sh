#!/usr/bin/env bash
# Fast check (seconds, no root) of the portable file's packing and self-extraction with a tiny fake app: the real
# portable-pack.sh and files/portable-stub.sh. Needs zstd, gzip, tar, sha256sum.
#   bash installer/test-portable-stub.sh
# Checks: same bytes when packed twice; first start unpacks into $HOME/.cache/archivist/portable-VERSION-DIGEST and
# writes pyvenv.cfg there; the next start reuses it; a truncated and a corrupted file are refused (exit 2) and leave
# no partial folder; two first starts at once both run and leave one folder; nothing uses TMPDIR (it points nowhere).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "test-portable-stub: FAIL: $*" >&2; exit 1; }
export TMPDIR="$t/no-such-dir"                      # a mktemp or tool falling back to TMPDIR would fail loudly

mkdir -p "$t/tree/bin" "$t/tree/venv" "$t/helper"
printf 'archivist 9.9 (commit x), portable: Python 3.11.2 from Debian 12, glibc >= 2.36, x86_64\n' > "$t/tree/VERSION"
printf '#!/bin/sh\necho "fake-archivist $* from $(cd "$(dirname "$0")/.." && pwd)"\n' > "$t/tree/bin/archivist"
chmod 755 "$t/tree/bin/archivist"
cp "$(command -v zstd)" "$t/helper/zstd"
head -c 300000 /dev/urandom > "$t/tree/venv/blob"  # something that does not compress away
d1=$(bash "$here/portable-pack.sh" "$t/tree" "$t/helper" 9.9 "$t/a.run" | sed -n 's/^digest=//p')
d2=$(bash "$here/portable-pack.sh" "$t/tree" "$t/helper" 9.9 "$t/b.run" | sed -n 's/^digest=//p')
[[ "$d1" == "$d2" ]] && cmp -s "$t/a.run" "$t/b.run" || fail "packing twice gave different files"
ls -A "$t" | grep -q '^\.pack-' && fail "portable-pack.sh left its work folder"

run() { env -i PATH=/usr/bin:/bin HOME="$1" TMPDIR="$TMPDIR" "${@:2}"; }
dir="$t/home/.cache/archivist/portable-9.9-$d1"
out=$(run "$t/home" "$t/a.run" --version 2>"$t/err1") || fail "first start: $(cat "$t/err1")"
[[ "$out" == "fake-archivist --version from $dir" ]] || fail "first start printed '$out'"
[[ -f "$dir/.complete" ]] || fail "no $dir/.complete"
grep -qx "home = $dir/python/bin" "$dir/venv/pyvenv.cfg" || fail "pyvenv.cfg: $(cat "$dir/venv/pyvenv.cfg")"
grep -qx 'version = 3.11.2' "$dir/venv/pyvenv.cfg" || fail "pyvenv.cfg version"
[[ -e "$dir/.helper" ]] && fail "the decompressor was left in the cache"
stamp=$(stat -c %i "$dir/.complete")
out=$(run "$t/home" "$t/a.run" gui x 2>"$t/err2") || fail "second start"
[[ "$out" == "fake-archivist gui x from $dir" && ! -s "$t/err2" ]] || fail "second start: '$out' / $(cat "$t/err2")"
[[ $(stat -c %i "$dir/.complete") == "$stamp" ]] || fail "the second start unpacked again"

head -c 200000 "$t/a.run" > "$t/cut.run" && chmod +x "$t/cut.run"
set +e; run "$t/h2" "$t/cut.run" --version 2>"$t/err3"; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q 'incomplete.*download it again' "$t/err3" || fail "truncated: exit $rc $(cat "$t/err3")"
cp "$t/a.run" "$t/bad.run"; size=$(stat -c %s "$t/bad.run")
# flip every bit of one byte near the end: writing a fixed byte left the file whole when that byte was already there
# (1 in 256 runs, since the payload is random)
old=$(od -An -tu1 -j $((size - 1000)) -N1 "$t/bad.run" | tr -d ' ')
printf "\\$(printf %03o $((old ^ 255)))" | dd of="$t/bad.run" bs=1 seek=$((size - 1000)) conv=notrunc status=none
cmp -s "$t/a.run" "$t/bad.run" && fail "the corrupted copy is the same as the original"
set +e; run "$t/h2" "$t/bad.run" --version 2>"$t/err4"; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q 'damaged.*download it again' "$t/err4" || fail "corrupted: exit $rc $(cat "$t/err4")"
[[ -z "$(ls -A "$t/h2/.cache/archivist" 2>/dev/null)" ]] || fail "a refused file left: $(ls -A "$t/h2/.cache/archivist")"

run "$t/h3" "$t/a.run" one > "$t/o1" 2>&1 & p1=$!
run "$t/h3" "$t/a.run" two > "$t/o2" 2>&1 & p2=$!
wait $p1 || fail "concurrent start 1: $(cat "$t/o1")"
wait $p2 || fail "concurrent start 2: $(cat "$t/o2")"
grep -q 'fake-archivist one' "$t/o1" && grep -q 'fake-archivist two' "$t/o2" || fail "concurrent starts' output"
[[ $(ls -A "$t/h3/.cache/archivist") == "portable-9.9-$d1" ]] || fail "after two starts: $(ls -A "$t/h3/.cache/archivist")"
echo "test-portable-stub: OK ($(stat -c %s "$t/a.run") bytes, digest $d1)"
