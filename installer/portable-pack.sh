#!/usr/bin/env bash
# Packs a portable tree into one self-extracting file: files/portable-stub.sh + helper.tar.gz (a zstd decompressor
# for systems without one) + payload.tar.zst (the tree). Used by build-portable.sh and test-portable-stub.sh.
#   bash installer/portable-pack.sh TREE HELPER_DIR VERSION OUT_FILE   (PORTABLE_ZSTD_LEVEL, default 12)
# The digest (first 16 hex of the sha256 of helper + payload) names the cache folder the file unpacks into.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tree=$1 helper_dir=$2 version=$3 out=$4
work=$(mktemp -d "$(dirname "$out")/.pack-XXXXXX")
trap 'rm -rf "$work"' EXIT
tarc() { tar -C "$1" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -c .; }   # same bytes every time
tarc "$tree" | zstd -q -T2 "-${PORTABLE_ZSTD_LEVEL:-12}" -o "$work/payload.tar.zst"
tarc "$helper_dir" | gzip -n -9 > "$work/helper.tar.gz"
digest=$(cat "$work/helper.tar.gz" "$work/payload.tar.zst" | sha256sum | cut -c1-16)
hb=$(stat -c %s "$work/helper.tar.gz") pb=$(stat -c %s "$work/payload.tar.zst")
header() {  # fixed-width numbers: the stub's length is known before it is written
  sed -e "s/@VERSION@/$version/g" -e "s/@DIGEST@/$digest/g" -e "s/@STUB_BYTES@/$(printf %012d "$1")/" \
      -e "s/@HELPER_BYTES@/$(printf %012d "$hb")/" -e "s/@PAYLOAD_BYTES@/$(printf %012d "$pb")/" "$here/files/portable-stub.sh"
}
sb=$(header 0 | wc -c)
[[ $(header "$sb" | wc -c) -eq $sb ]] || { echo "portable-pack: stub length changed" >&2; exit 1; }
{ header "$sb"; cat "$work/helper.tar.gz" "$work/payload.tar.zst"; } > "$out.tmp"
chmod 755 "$out.tmp" && mv "$out.tmp" "$out"
echo "digest=$digest"
