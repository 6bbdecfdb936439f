#!/usr/bin/env bash
# Smoke test of the portable single file (dist/archivist-<version>-x86_64.run) in a fresh chroot of a Debian release
# that has no Python at all: only what a desktop has for the window (X server for the test, OpenGL's dispatch libs).
#   bash installer/smoke-portable.sh bookworm|trixie [FILE]   (root; builds the file first when dist/ has none)
# As an ordinary user, with an empty environment: the file unpacks once into ~/.cache/archivist (reused next time,
# a damaged download is refused); it runs its own Python (sys.path inside the cache); every shared library of the
# unpacked tree resolves; without Java, spark-* say what to install and stop while the window still opens; then with
# the release's JRE from its mirror (openjdk-17 on 12, openjdk-21 on 13): the shared steps of smoke-lib.sh (build vs
# spark-build byte-identical, import, window offscreen and on Xvfb) and a PySpark UDF in the bundled Python's
# workers; nothing is left in /tmp, /var/tmp or /dev/shm.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/.." && pwd)
suite=${1:-bookworm}
file=${2:-}
case "$suite" in bookworm) jre=openjdk-17-jre-headless;; trixie) jre=openjdk-21-jre-headless;;
  *) echo "smoke-portable: unknown distribution $suite (bookworm | trixie)" >&2; exit 2;; esac
chroots=${ARCHIVIST_CHROOTS:-/var/tmp/archivist-chroots}
root="$chroots/smoke-portable-$suite"
mkdir -p "$here/build"
log="$here/build/smoke-portable-$suite"
t_start=$(date +%s)
. "$here/chroot-lib.sh"
. "$here/smoke-lib.sh"
[[ $(id -u) -eq 0 ]] || die "run as root (debootstrap, chroot, mount)"

if [[ -z "$file" ]]; then
  file=$(ls -t "$top"/dist/archivist-*-x86_64.run 2>/dev/null | head -1 || true)
  if [[ -z "$file" ]]; then step "building the portable file"; bash "$here/build-portable.sh"; fi
  file=$(ls -t "$top"/dist/archivist-*-x86_64.run | head -1)
fi
[[ -f "$file" ]] || die "no file at $file"
name=$(basename "$file")
APP=/home/smoke/Downloads/$name

trap 'chroot_umount "$root"' EXIT
chroot_fresh "$suite" "$root" xvfb xauth libgl1 libegl1 libopengl0
chroot_mount "$root"
mkdir -p "$chroots/apt-archives-$suite"        # the JRE's .debs, downloaded once per release
mount --bind "$chroots/apt-archives-$suite" "$root/var/cache/apt/archives"
if ls "$root"/usr/bin/python3* "$root"/usr/lib/python3* >/dev/null 2>&1; then die "the chroot has a Python"; fi
scratch() { (cd "$root" && find tmp var/tmp dev/shm -mindepth 1 2>/dev/null | { grep -vE '^tmp/(\.X11-unix.*|\.X[0-9]+-lock)$' || true; } | sort); }
scratch > "$log-scratch-before.txt"

step "a user downloads $name ($(( $(stat -c %s "$file") / 1048576 )) MiB) into a fresh $suite without Python or Java"
in_root useradd -m smoke
as_user mkdir -p /home/smoke/Downloads
cp "$file" "$root$APP" && chmod 644 "$root$APP" && in_root chown smoke:smoke "$APP"
as_user chmod +x "$APP"

step "first start: $name --version (unpacks once)"
t=$(date +%s.%N)
v=$(as_user "$APP" --version) || die "--version"
t_first=$(python3 -c "print(round($(date +%s.%N) - $t, 1))")
echo "  $v (first start ${t_first} s)"; [[ "$v" == archivist\ * ]] || die "unexpected version line"
mapfile -t dirs < <(cd "$root/home/smoke/.cache/archivist" && ls -d portable-* .unpack-* 2>/dev/null)
[[ ${#dirs[@]} -eq 1 && "${dirs[0]}" == portable-* ]] || die "cache holds: ${dirs[*]}"
dir=/home/smoke/.cache/archivist/${dirs[0]}
echo "  unpacked: ~/.cache/archivist/${dirs[0]} ($(du -sm "$root$dir" | cut -f1) MiB)"
stamp=$(stat -c %Y.%i "$root$dir/.complete")
t=$(date +%s.%N)
as_user "$APP" --version > "$log-v2.txt" 2>&1 || die "--version (second start)"
t_second=$(python3 -c "print(round($(date +%s.%N) - $t, 2))")
if grep -q unpacking "$log-v2.txt"; then die "the second start unpacked again"; fi
[[ $(stat -c %Y.%i "$root$dir/.complete") == "$stamp" ]] || die "the cache folder was replaced"
echo "  second start reuses it: ${t_second} s"

step "a damaged download is refused before anything is unpacked"
as_user sh -c "head -c 50000000 '$APP' > /home/smoke/Downloads/cut.run && chmod +x /home/smoke/Downloads/cut.run"
# (its own cache folder: the complete file's unpacked copy has the same digest and would simply be used)
set +e; as_user env XDG_CACHE_HOME=/home/smoke/cut-cache /home/smoke/Downloads/cut.run --version > "$log-cut.txt" 2>&1; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q 'download it again' "$log-cut.txt" || { cat "$log-cut.txt"; die "truncated file: exit $rc"; }
echo "  $(tail -1 "$log-cut.txt" | cut -c1-110)"
[[ -z "$(ls -A "$root/home/smoke/cut-cache/archivist" 2>/dev/null)" ]] || die "a refused file left a partial folder"
as_user rm -rf /home/smoke/Downloads/cut.run /home/smoke/cut-cache

step "the bundled Python: its own prefix, standard library and compiled modules"
as_user "$APP" --portable-python - "$dir" > "$log-python.txt" 2>&1 <<'EOF' || { cat "$log-python.txt"; die "bundled python"; }
import sys
d = sys.argv[1]
outside = [p for p in sys.path if p and not p.startswith(d)]
assert not outside, f"sys.path outside the cache: {outside}"
assert sys.prefix == d + "/venv" and sys.base_prefix == d + "/python", (sys.prefix, sys.base_prefix)
import os
# bin/python set LD_LIBRARY_PATH for this process only: the .pth gave it back (none here) before ssl etc. loaded
assert "LD_LIBRARY_PATH" not in os.environ, os.environ["LD_LIBRARY_PATH"]
import ssl, sqlite3, ctypes, lzma, bz2, hashlib, json, decimal, readline, uuid
import numpy, pyarrow, pyspark, libtorrent, PySide6.QtWidgets, core
print(f"  Python {sys.version.split()[0]} at {sys.base_prefix}; {ssl.OPENSSL_VERSION}; sqlite {sqlite3.sqlite_version}; "
      f"{len(sys.path)} sys.path entries, all in the cache")
EOF
cat "$log-python.txt"

step "every shared library of the unpacked tree resolves (ldd, with the tree's lib/)"
missing=$(cd "$root" && find ".$dir" -name '*.so*' -type f -not -name 'libqpdf.so' | sed 's/^\.//' | while read -r f; do
  in_root env LD_LIBRARY_PATH="$dir/lib" ldd "$f" 2>/dev/null | { grep 'not found' || true; } | sed "s|^|$f: |"; done |
  sort -u | { grep -vwFf "$root$dir/host-libs.txt" || true; })   # optional plugins' libraries (Wayland, EGLFS)
[[ -z "$missing" ]] || { echo "$missing" | head -20 >&2; die "libraries not found"; }
echo "  $(cd "$root" && find ".$dir" -name '*.so*' -type f | wc -l) ELF files checked; $(ls "$root$dir/lib" | wc -l) libraries bundled"

step "without Java: spark-* say what to install and stop; the window still opens, with the same warning"
set +e; as_user "$APP" spark-build --help > "$log-nojava.txt" 2>&1; rc=$?; set -e
[[ $rc -eq 2 ]] && grep -q 'Spark needs Java 17 or 21' "$log-nojava.txt" || { cat "$log-nojava.txt"; die "no-Java: exit $rc"; }
echo "  $(head -1 "$log-nojava.txt" | cut -c1-110)..."
gui_run "offscreen, no Java" env QT_QPA_PLATFORM=offscreen timeout 10 "$APP" gui
grep -q 'Spark needs Java' "$log-gui.txt" || die "the window started without saying Java is missing"

no_leftovers() {   # nothing new in /tmp, /var/tmp or /dev/shm since the last snapshot
  local left; left=$(scratch | comm -13 "$log-scratch-before.txt" -)
  [[ -z "$left" ]] || { echo "$left" | head >&2; die "left behind: $(echo "$left" | wc -l) paths"; }
}
no_leftovers
step "apt-get install $jre (from the $suite mirror)"
in_root apt-get update -qq >/dev/null
in_root apt-get install -y -qq --no-install-recommends "$jre" > "$log-apt.log" 2>&1 || { tail "$log-apt.log"; die "$jre"; }
if ls "$root"/usr/bin/python3* >/dev/null 2>&1; then die "$jre pulled a Python in"; fi
echo "  java: $(in_root java -XX:-UsePerfData -version 2>&1 | head -1)"
scratch > "$log-scratch-before.txt"     # the JRE's own installation runs java as root (/tmp/hsperfdata_root)

smoke_pipeline
step "PySpark job: a Python UDF runs app code in Spark's workers with the bundled Python"
cp "$here/spark_probe.py" "$root/home/smoke/spark_probe.py"
as_user env SPARK_PROBE_PYTHON="$dir/venv/bin/python" timeout 600 "$APP" --portable-python /home/smoke/spark_probe.py \
  /home/smoke/w/messages.sqlite > "$log-spark.txt" 2>&1 || true
grep '^spark-probe' "$log-spark.txt" | sed 's/^/  /' || tail -20 "$log-spark.txt"
grep -q '^spark-probe OK' "$log-spark.txt" || die "spark probe"
chroot_kill "$root"
smoke_import
smoke_gui

step "nothing left in /tmp, /var/tmp or /dev/shm"
no_leftovers
echo "  the cache folder after the runs: $(du -sm "$root/home/smoke/.cache/archivist" | cut -f1) MiB" \
     "(unpacked app $(du -sm "$root$dir" | cut -f1) MiB)"

step "PASS $suite ($name, $(( $(stat -c %s "$file") / 1048576 )) MiB; first start ${t_first} s, next ${t_second} s)"
umount "$root/var/cache/apt/archives"
chroot_umount "$root"
trap - EXIT
rm -rf "$root"
