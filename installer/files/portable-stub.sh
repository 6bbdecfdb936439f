#!/usr/bin/env bash
# Archivist @VERSION@, portable single file for x86_64 Linux (glibc 2.36 or later): chmod +x it and run it, as any
# user. The first start unpacks it (once) into ~/.cache/archivist/portable-@VERSION@-@DIGEST@; later starts reuse
# that folder. Nothing is written outside that cache (no /tmp, no root, no package). Java 17 or 21 from the system
# is needed by the Spark commands only. Remove with: rm -rf ~/.cache/archivist/portable-* (and this file).
# Built by installer/build-portable.sh; what follows this script is a gzip tar (a zstd decompressor) and the app
# (a zstd tar).
set -eu   # no pipefail: "tail | head" ends tail with SIGPIPE; the digest check covers the data
version=@VERSION@ digest=@DIGEST@
stub=$((10#@STUB_BYTES@)) helper=$((10#@HELPER_BYTES@)) payload=$((10#@PAYLOAD_BYTES@))
self=$(readlink -f "${BASH_SOURCE[0]}")
[[ -n "${HOME:-}" || -n "${XDG_CACHE_HOME:-}" ]] || { echo "archivist: HOME is not set" >&2; exit 2; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/archivist
dir=$cache/portable-$version-$digest

if [[ ! -f "$dir/.complete" ]]; then
  if [[ "${1:-}" != --version ]]; then
    echo "archivist: first start of $version: unpacking into $dir (once; $((payload / 1048576)) MiB packed) ..." >&2
  fi
  [[ $(stat -c %s "$self") -eq $((stub + helper + payload)) ]] \
    || { echo "archivist: $self is incomplete ($(stat -c %s "$self") of $((stub + helper + payload)) bytes): download it again" >&2; exit 2; }
  got=$(tail -c +$((stub + 1)) "$self" | sha256sum | cut -c1-16)
  [[ "$got" == "$digest" ]] || { echo "archivist: $self is damaged (digest $got, expected $digest): download it again" >&2; exit 2; }
  mkdir -p "$cache"
  part=$(mktemp -d "$cache/.unpack-XXXXXX")        # beside its final place (one rename), never in /tmp
  trap 'rm -rf "$part"' EXIT
  trap 'exit 130' INT TERM
  mkdir "$part/.helper"
  tail -c +$((stub + 1)) "$self" | head -c "$helper" | tar -xzf - -C "$part/.helper"
  tail -c +$((stub + helper + 1)) "$self" | LD_LIBRARY_PATH="$part/.helper" "$part/.helper/zstd" -dcq | tar -xf - -C "$part"
  rm -rf "$part/.helper"
  # the venv's interpreter is the bundled one; a venv names its base interpreter by absolute path
  printf 'home = %s\ninclude-system-site-packages = false\nversion = %s\n' "$dir/python/bin" \
    "$(sed -n 's/.*Python \([0-9.]*\) from.*/\1/p' "$part/VERSION")" > "$part/venv/pyvenv.cfg"
  touch "$part/.complete"
  if ! mv -T "$part" "$dir" 2>/dev/null; then   # another start unpacked the same version meanwhile: use its copy
    [[ -f "$dir/.complete" ]] || { echo "archivist: cannot create $dir" >&2; exit 2; }
  fi
  rm -rf "$part"
  trap - EXIT INT TERM
fi
ARCHIVIST_PORTABLE_FILE=$self exec "$dir/bin/archivist" "$@"
