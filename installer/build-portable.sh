#!/usr/bin/env bash
# Builds dist/archivist-<version>-x86_64.run: ONE self-extracting file that carries its own Python 3.11 (Debian 12's
# interpreter, its standard library and the shared libraries they and the app need beyond glibc), the app's venv
# (same pins and the same prune.sh as the .deb) and a launcher. A user downloads it, chmod +x, runs it: no root, no
# package install. First start unpacks it into ~/.cache/archivist/portable-<version>-<digest> (reused afterwards).
#   bash installer/build-portable.sh          (root: builds inside a fresh Debian 12 chroot, chroot-lib.sh)
# Why not an AppImage: appimagetool and its runtime come from GitHub (unreachable here) and need FUSE at run time;
# why not makeself: it unpacks into /tmp on every start and deletes it at exit (installer/README.md, "Portable").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$here/build"
t0=$(date +%s)
die() { echo "build-portable: $*" >&2; exit 1; }

# ---- outer: a fresh bookworm chroot (glibc 2.36: the file runs on that glibc and every later one) ---------------
if [[ -z "${ARCHIVIST_IN_BUILD_CHROOT:-}" ]]; then
  [[ $(id -u) -eq 0 ]] || die "needs root (debootstrap, chroot, mount)"
  . "$here/chroot-lib.sh"
  suite=bookworm
  broot="${ARCHIVIST_CHROOTS:-/var/tmp/archivist-chroots}/build-portable"
  trap 'chroot_umount "$broot"' EXIT
  # the build tools, and the libraries Qt's xcb platform plugin loads (bundled from this chroot)
  chroot_fresh "$suite" "$broot" python3 python3-venv python3-dev build-essential libgmp-dev zstd ca-certificates \
    libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 libxcb-randr0 libxcb-render-util0 libxcb-render0 \
    libxcb-shape0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 libxcb-xinerama0 libxcb-xkb1 libxcb-util1 \
    libxkbcommon-x11-0 libxkbcommon0 libfontconfig1 libfreetype6 libdbus-1-3 libglib2.0-0 libegl1 libgl1 \
    libopengl0 libx11-6 libx11-xcb1 libxcb1 libsm6 libice6 libxrender1
  mkdir -p "$broot/build/installer" "$broot/build/src" "$broot/root/.cache/pip" "$build/pip-cache-$suite" "$root/dist"
  cp -a "$here/build-portable.sh" "$here/portable-pack.sh" "$here/prune.sh" "$here/files" "$broot/build/installer/"
  if [[ "${DEB_FROM_WORKTREE:-0}" == 1 ]] || ! git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    echo worktree > "$broot/build/src/.commit"
    (cd "$root" && tar -c --exclude=__pycache__ core gui pyproject.toml requirements README.md) | tar -x -C "$broot/build/src"
  else      # the committed tree, as build-deb.sh does: half-edited files never reach a release
    git -C "$root" rev-parse --short HEAD > "$broot/build/src/.commit"
    git -C "$root" archive HEAD core gui pyproject.toml requirements README.md | tar -x -C "$broot/build/src"
  fi
  cp -L "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$broot/build/host-ca.crt"
  mount --bind "$build/pip-cache-$suite" "$broot/root/.cache/pip"      # shared with build-deb.sh's bookworm build
  chroot_mount "$broot"
  echo "build-portable: building in a fresh $suite chroot"
  nice -n 10 chroot "$broot" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    ARCHIVIST_IN_BUILD_CHROOT=1 PIP_CERT=/build/host-ca.crt PORTABLE_ZSTD_LEVEL="${PORTABLE_ZSTD_LEVEL:-12}" \
    bash /build/installer/build-portable.sh || die "build in the $suite chroot failed"
  chroot_umount "$broot"
  trap - EXIT
  out=$(sed -n 's/^file=//p' "$broot/build/out/build-info.txt")
  mv "$broot/build/out/$out" "$root/dist/$out"
  cp "$broot/build/out/build-info.txt" "$build/build-info-portable.txt"
  cp "$broot/build/out/size.txt" "$build/size-portable.txt"
  rm -rf "$broot"
  echo "build-portable: dist/$out ($(( $(stat -c %s "$root/dist/$out") / 1048576 )) MiB, $(( $(date +%s) - t0 )) s)"
  exit 0
fi

# ---- inner: runs in the chroot ----------------------------------------------------------------------------------
src=/build/src out=/build/out
T=$out/tree                      # what the file unpacks: python/ venv/ lib/ bin/ archivist-env.sh
py=/usr/bin/python3.11
pyv=3.11
sp="$T/venv/lib/python$pyv/site-packages"
rm -rf "$out" && mkdir -p "$T/python/bin" "$T/python/lib" "$T/lib" "$T/bin"
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$src/core/__init__.py")
commit=$(cat "$src/.commit")

echo "build-portable: app from $commit; venv with $("$py" -V)"
"$py" -m venv "$T/venv"
"$T/venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check -c "$src/requirements/lock.txt" "$src" \
  2> >(grep -v "is ignored: it is neither a file nor a directory" >&2) || die "pip install failed"
"$T/venv/bin/python" -m pip uninstall -q -y pip setuptools >/dev/null 2>&1 || true
find "$T/venv" -type d -name __pycache__ -prune -exec rm -rf {} +
bash /build/installer/prune.sh "$T/venv"

# The interpreter and its standard library (Debian's python3.11 is linked statically with libpython). It finds its
# prefix from its own place (lib/python3.11/os.py beside bin/), so no path of this chroot is used at run time.
cp -L "$py" "$T/python/bin/python3.11"
(cd /usr/lib && tar -ch --exclude=__pycache__ --exclude="python$pyv/test" --exclude="python$pyv/idlelib" \
  --exclude="python$pyv/tkinter" --exclude="python$pyv/turtledemo" --exclude="python$pyv/lib2to3" \
  --exclude="python$pyv/ensurepip" --exclude="python$pyv/config-$pyv-*" --exclude="python$pyv/site-packages" \
  --exclude="python$pyv/dist-packages" --exclude="python$pyv/sitecustomize.py" --exclude='*_test*.so' \
  "python$pyv") | tar -x -C "$T/python/lib"
# The venv's interpreter is that one (relative links); pyvenv.cfg is written at unpack time with the real path.
for l in python python3 "python$pyv"; do ln -sfn "../../python/bin/python$pyv" "$T/venv/bin/$l"; done
rm -f "$T/venv/pyvenv.cfg" "$T/venv/bin/activate"* "$T/venv/bin/Activate.ps1"
# Spark's workers and the app's own children get a clean LD_LIBRARY_PATH back (bin/python sets it for Python only)
cat > "$T/venv/lib/python$pyv/site-packages/_archivist_portable.pth" <<'EOF'
import os; _v = os.environ.pop("ARCHIVIST_LD_RESTORE", None); (_v is None) or (os.environ.__setitem__("LD_LIBRARY_PATH", _v[1:]) if _v[1:] else os.environ.pop("LD_LIBRARY_PATH", None))
EOF

# Shared libraries outside glibc that the interpreter, its extension modules and the wheels' modules and Qt plugins
# load. Not bundled (every desktop has them, and a newer system's own programs must keep theirs): glibc, libstdc++,
# libgcc_s, zlib, and OpenGL's vendor-neutral dispatch (libGL/libEGL/libOpenGL/libGLX: they pick the host's driver).
skip='^(ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libutil|libresolv|libanl|libmvec|libstdc\+\+|libgcc_s|libz|libGL|libEGL|libGLX|libGLdispatch|libOpenGL|libdrm|libgbm)\.so'
mapfile -t elfs < <({ echo "$T/python/bin/python$pyv"; find "$T/python/lib" "$T/venv" -name '*.so*' -type f; })
: > "$out/missing.txt"
for f in "${elfs[@]}"; do
  ldd "$f" 2>/dev/null | awk '/=> \// {print $3} /not found/ {print "MISSING " $1}'
done | sort -u | while read -r a b; do
  if [[ "$a" == MISSING ]]; then echo "$b" >> "$out/missing.txt"; continue; fi
  [[ "$a" == "$T"/* ]] && continue
  grep -qE "$skip" <<<"$(basename "$a")" || cp -nL "$a" "$T/lib/"
done
sort -u -o "$out/missing.txt" "$out/missing.txt"
# Qt's GTK 3 theme plugin would load the host's GTK against our (older) GLib: Qt's own Fusion style is used instead.
rm -f "$sp/PySide6/Qt/plugins/platformthemes/libqgtk3.so"
# The rest of what no module found here is left to the host, where only optional plugins use it (Wayland's client
# libraries, EGLFS/KMS): recorded for smoke-portable.sh's ldd check.
grep -vE '^lib(atk|cairo|gdk|gtk|pango|harfbuzz)' "$out/missing.txt" > "$T/host-libs.txt" || true
[[ -s "$out/missing.txt" ]] && echo "build-portable: not found for some module (left to the system): $(tr '\n' ' ' < "$out/missing.txt")"
echo "build-portable: $(ls "$T/lib" | wc -l) shared libraries bundled ($(du -sm "$T/lib" | cut -f1) MiB)"

install -m 755 /build/installer/files/portable-launcher.sh "$T/bin/archivist"
install -m 644 /build/installer/files/archivist-env.sh "$T/archivist-env.sh"
cat > "$T/bin/python" <<'EOF'
#!/bin/sh
# The bundled Python with its libraries (Spark's PYSPARK_PYTHON); the .pth restores LD_LIBRARY_PATH for children.
d=$(cd "$(dirname "$0")/.." && pwd)
export ARCHIVIST_LD_RESTORE="x${LD_LIBRARY_PATH:-}" LD_LIBRARY_PATH="$d/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
exec "$d/venv/bin/python" "$@"
EOF
chmod 755 "$T/bin/python"
svg="$src/gui/resources/icons/archivist.svg"; [[ -f "$svg" ]] || svg=/build/installer/files/archivist.svg
install -m 644 "$svg" "$T/archivist.svg"
printf 'archivist %s (commit %s), portable: Python %s from Debian 12, glibc >= 2.36, x86_64\n' "$version" "$commit" \
  "$("$py" -c 'import platform; print(platform.python_version())')" > "$T/VERSION"

# What takes the space (README.md, "Portable single file")
{ for p in "$T" "$T/python" "$T/lib" "$T/venv" "$sp/pyspark/jars" "$sp/PySide6/Qt/lib"; do
    du -sm "$p" | sed "s|$T/||; s|$T|tree|"; done
  du -sm "$sp"/* | sort -rn | sed -n '1,8s|'"$sp/"'||p'
} > "$out/size.txt"

# The helper: Debian 12's zstd and its libraries (not glibc), for systems without a zstd command
mkdir -p "$out/helper" && cp -L "$(command -v zstd)" "$out/helper/zstd"
ldd "$out/helper/zstd" | awk '/=> \// {print $3}' | while read -r a; do
  grep -qE '^(libc|libm|ld-linux-x86-64)\.so' <<<"$(basename "$a")" || cp -L "$a" "$out/helper/"
done
file="archivist-$version-x86_64.run"
echo "build-portable: packing (zstd -$PORTABLE_ZSTD_LEVEL) ..."
digest=$(bash /build/installer/portable-pack.sh "$T" "$out/helper" "$version" "$out/$file" | sed -n 's/^digest=//p')
t1=$(date +%s)
printf 'file=%s\nversion=%s\ncommit=%s\ndigest=%s\nbytes=%s\ntree_kb=%s\nbuild_seconds=%s\nzstd_level=%s\n' \
  "$file" "$version" "$commit" "$digest" "$(stat -c %s "$out/$file")" "$(du -sk "$T" | cut -f1)" "$((t1 - t0))" \
  "$PORTABLE_ZSTD_LEVEL" > "$out/build-info.txt"
rm -rf "$T" "$out/helper"
echo "build-portable: $file $(( $(stat -c %s "$out/$file") / 1048576 )) MiB, $((t1 - t0)) s"
