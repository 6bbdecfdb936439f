#!/usr/bin/env bash
# Builds build/archivist_<version>+deb<N>_<arch>.deb: a virtualenv at /opt/archivist/venv made with the target
# system's own python3 (never a pyenv or other private build), the /usr/bin/archivist launcher, a desktop entry,
# an icon and the file/link handlers. Java, python3 and Qt's system libraries are Depends, pulled by apt.
#   bash installer/build-deb.sh bookworm|trixie   (root) build inside a fresh chroot of that Debian release, so
#                                                 the venv matches its python3 (3.11 on 12, 3.13 on 13)
#   bash installer/build-deb.sh                   build on this machine, for this machine's release
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$here/build"
app=/opt/archivist
compress=${DEB_COMPRESS:-zstd}       # xz: 14 min on 2 cores for 11 % less (README.md)
t0=$(date +%s)
die() { echo "build-deb: $*" >&2; exit 1; }
mkdir -p "$build"

prepare_src() {  # $1: target folder. The committed tree (git archive HEAD), so half-edited files of concurrent
  local src=$1   # work never reach a package; DEB_FROM_WORKTREE=1 builds the work tree as it is.
  rm -rf "$src" && mkdir -p "$src"
  if [[ "${DEB_FROM_WORKTREE:-0}" == 1 ]] || ! git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
    echo worktree > "$src/.commit"
    (cd "$root" && tar -c --exclude=__pycache__ core gui pyproject.toml requirements README.md) | tar -x -C "$src"
  else
    git -C "$root" rev-parse --short HEAD > "$src/.commit"
    git -C "$root" archive HEAD core gui pyproject.toml requirements README.md | tar -x -C "$src"
  fi
}

# ---- outer: build inside a chroot of the target release ----------------------------------------------------
if [[ $# -ge 1 && -z "${ARCHIVIST_IN_BUILD_CHROOT:-}" ]]; then
  suite=$1
  [[ $(id -u) -eq 0 ]] || die "a chroot build needs root (debootstrap, chroot, mount)"
  # shellcheck source=chroot-lib.sh
  . "$here/chroot-lib.sh"
  broot="$build/buildroot-$suite"
  trap 'chroot_umount "$broot"' EXIT
  chroot_fresh "$suite" "$broot" python3 python3-venv python3-dev build-essential libgmp-dev dpkg-dev zstd \
    desktop-file-utils ca-certificates
  mkdir -p "$broot/build/installer" "$broot/root/.cache/pip" "$build/pip-cache-$suite"
  cp -a "$here/build-deb.sh" "$here/prune.sh" "$here/files" "$here/debian" "$broot/build/installer/"
  prepare_src "$broot/build/src"
  # pip in the chroot trusts what this machine trusts (a TLS-inspecting proxy's CA is in the host's bundle only)
  cp -L "${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}" "$broot/build/host-ca.crt"
  mount --bind "$build/pip-cache-$suite" "$broot/root/.cache/pip"     # wheels built once per release
  chroot_mount "$broot"
  echo "build-deb: building in a fresh $suite chroot"
  nice -n 10 chroot "$broot" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
    ARCHIVIST_IN_BUILD_CHROOT=1 PIP_CERT=/build/host-ca.crt DEB_SRC=/build/src DEB_COMPRESS="$compress" DEB_PRUNE="${DEB_PRUNE:-1}" \
    bash /build/installer/build-deb.sh "$suite" || die "build in the $suite chroot failed"
  chroot_umount "$broot"
  trap - EXIT
  info="$broot/build/installer/build/build-info-$suite.txt"
  deb=$(sed -n 's/^deb=//p' "$info")
  mv "$broot/build/installer/build/$deb" "$build/$deb"
  cp "$info" "$build/"; cp "$info" "$build/build-info.txt"
  rm -rf "$broot"
  echo "build-deb: $build/$deb ($suite)"
  exit 0
fi

# ---- inner: build with this system's python3 ---------------------------------------------------------------
py=${DEB_PYTHON:-/usr/bin/python3}          # the system's interpreter; the venv links to it by absolute path
[[ -x "$py" ]] || die "$py missing: apt-get install python3-venv"
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
"$py" -c 'import sys; sys.exit(not ((3, 11) <= sys.version_info[:2] < (3, 14)))' \
  || die "$py is Python $pyver; the app needs 3.11 to 3.13 (pyproject.toml)"
"$py" -c 'import ensurepip' 2>/dev/null || die "$py has no venv/ensurepip: apt-get install python3-venv"
. /etc/os-release
codename=${VERSION_CODENAME:-unknown}
case "$ID" in debian) distsuffix="deb${VERSION_ID%%.*}";; *) distsuffix="${ID}${VERSION_ID}";; esac

src=${DEB_SRC:-$build/src}
[[ -n "${DEB_SRC:-}" ]] || prepare_src "$src"
commit=$(cat "$src/.commit")
version="$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$src/core/__init__.py")+$distsuffix"
arch=$(dpkg --print-architecture)
deb="$build/archivist_${version}_${arch}.deb"
stage="$build/stage"
venv="$stage$app/venv"

# Debian packages the app needs at run time, by their name on this release: Debian 13 renamed some libraries
# (the 64-bit time_t transition: libglib2.0-0 -> libglib2.0-0t64), so a name apt only knows as virtual gets t64.
pkg() {
  if apt-cache show --no-all-versions "$1" >/dev/null 2>&1; then echo "$1"
  elif apt-cache show --no-all-versions "${1}t64" >/dev/null 2>&1; then echo "${1}t64"
  else die "no package $1 (or ${1}t64) on $codename"; fi
}
next=$("$py" -c 'import sys; print("3.%d" % (sys.version_info[1] + 1))')
depends=("python3 (>= $pyver)" "python3 (<< $next)")       # the venv's interpreter and its ABI
# Spark 4 runs on Java 17 or 21: Debian 12 has 17, Debian 13 has 21 (and no 17). The launcher checks at start.
depends+=("openjdk-17-jre-headless | openjdk-21-jre-headless")
for p in libgmp10 \
  libglib2.0-0 libdbus-1-3 libfontconfig1 libfreetype6 libegl1 libgl1 libopengl0 libxkbcommon0 \
  libxkbcommon-x11-0 libx11-6 libx11-xcb1 libxcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1 \
  libxcb-randr0 libxcb-render-util0 libxcb-render0 libxcb-shape0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0 \
  libxcb-xinerama0 libxcb-xkb1 libxcb-util1 libxrender1 libice6 libsm6; do
  depends+=("$(pkg "$p")")   # libgmp10: fastecdsa (py-libp2p); the rest: Qt's xcb plugin, QtGui, QtWidgets
done

rm -rf "$stage"
mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/share/applications" \
         "$stage/usr/share/icons/hicolor/scalable/apps" "$stage/usr/share/doc/archivist" "$stage$app"

echo "build-deb: app from $commit; virtualenv with $py ($("$py" -V 2>&1)) on $codename ..."
"$py" -m venv "$venv"
# The project and its exact pins (non-editable, no dev extras). Wheels come from PyPI or pip's cache;
# fastecdsa compiles against libgmp-dev.
# (A local find-links entry in this machine's pip config that points nowhere makes pip warn per package: hidden.)
if ! "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check \
     -c "$src/requirements/lock.txt" "$src" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
then die "pip install failed"; fi
"$venv/bin/python" -m pip uninstall -q -y pip setuptools >/dev/null 2>&1 || true
find "$venv" -type d -name __pycache__ -prune -exec rm -rf {} +
full_kb=$(du -sk "$venv" | cut -f1)
[[ "${DEB_PRUNE:-1}" == 1 ]] && bash "$here/prune.sh" "$venv"

# A venv records its own path in scripts and pyvenv.cfg: make them say /opt/archivist/venv.
grep -rlIF "$stage" "$venv" | while read -r f; do sed -i "s|$stage||g" "$f"; done
if grep -rlIF "$stage" "$venv" | head -1 | grep -q .; then die "staging path left in the venv"; fi
if grep -rlIE '/root/\.pyenv|/\.pyenv/' "$venv/bin" "$venv/pyvenv.cfg" | head -1 | grep -q .; then
  die "a pyenv path leaked into the venv"
fi
for l in "$venv"/bin/python*; do
  [[ -L "$l" ]] && case $(readlink "$l") in /usr/bin/*|python*) ;; *) die "$l points to $(readlink "$l")";; esac
done

install -m 755 "$here/files/archivist" "$stage/usr/bin/archivist"
install -m 644 "$here/files/archivist-env.sh" "$stage$app/archivist-env.sh"
# The installer's desktop entries: the menu entry (also the magnet: and .torrent handler) and a hidden one that
# puts "Open with Archivist" on folders. The icon is the GUI's own when it has one.
install -m 644 "$here/files/archivist.desktop" "$stage/usr/share/applications/archivist.desktop"
install -m 644 "$here/files/archivist-folder.desktop" "$stage/usr/share/applications/archivist-folder.desktop"
svg="$src/gui/resources/icons/archivist.svg"; [[ -f "$svg" ]] || svg="$here/files/archivist.svg"
install -m 644 "$svg" "$stage/usr/share/icons/hicolor/scalable/apps/archivist.svg"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$stage"/usr/share/applications/*.desktop || die "desktop entry is invalid"
fi
install -m 755 "$here/debian/postinst" "$here/debian/prerm" "$here/debian/postrm" "$stage/DEBIAN/"
cat > "$stage/usr/share/doc/archivist/copyright" <<EOF
Archivist $version: MPL-2.0. Bundled Python packages under $app/venv keep their own licences
(see each *.dist-info folder there); PySide6/Qt: LGPL-3.0; Apache Spark (pyspark): Apache-2.0.
EOF

size_kb=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
dep_line=$(IFS=,; echo "${depends[*]}" | sed 's/,/, /g')
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@INSTALLED_SIZE@/$size_kb/" \
    -e "s/@DEPENDS@/$dep_line/" "$here/debian/control.in" > "$stage/DEBIAN/control"

echo "build-deb: packing ($compress) ..."
rm -f "$deb"
dpkg-deb --root-owner-group -Z"$compress" --build "$stage" "$deb" >/dev/null
t1=$(date +%s)
deb_bytes=$(stat -c %s "$deb")
printf 'deb=%s\ncommit=%s\nsuite=%s\npython=%s\ndeb_bytes=%s\ninstalled_kb=%s\nunpruned_venv_kb=%s\nbuild_seconds=%s\ncompress=%s\n' \
  "$(basename "$deb")" "$commit" "$codename" "$pyver" "$deb_bytes" "$size_kb" "$full_kb" "$((t1 - t0))" "$compress" \
  > "$build/build-info-$codename.txt"
cp "$build/build-info-$codename.txt" "$build/build-info.txt"
rm -rf "$stage"
echo "build-deb: $deb  $((deb_bytes / 1048576)) MiB packed, $((size_kb / 1024)) MiB installed, $((t1 - t0)) s"
