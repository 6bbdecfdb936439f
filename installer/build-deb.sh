#!/usr/bin/env bash
# Builds build/archivist_<version>_<arch>.deb: a virtualenv at /opt/archivist/venv made with Debian's python3
# (never a pyenv or other private build: the target has only Debian's), the /usr/bin/archivist launcher,
# a desktop entry and an icon. Java 17, Python 3.11 and Qt's system libraries are Depends, pulled by apt.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$here/build"
stage="$build/stage"
app=/opt/archivist
venv="$stage$app/venv"
py=${DEB_PYTHON:-/usr/bin/python3}          # Debian's interpreter; the venv links to it by absolute path
compress=${DEB_COMPRESS:-zstd}       # xz: 14 min on 2 cores for 11 % less (README.md)
t0=$(date +%s)

die() { echo "build-deb: $*" >&2; exit 1; }
[[ -x "$py" ]] || die "$py missing: apt-get install python3-venv (Debian's python3 is what the package runs on)"
pyver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
[[ "$pyver" == 3.11 ]] || die "$py is Python $pyver; Debian 12's python3 (3.11) is what the package depends on"
"$py" -c 'import ensurepip' 2>/dev/null || die "$py has no venv/ensurepip: apt-get install python3-venv"

# The app is built from the committed tree (git archive HEAD), not the work tree, so half-edited files of
# concurrent work never reach a package. DEB_FROM_WORKTREE=1 builds the work tree as it is.
src="$build/src"
rm -rf "$src" && mkdir -p "$src"
if [[ "${DEB_FROM_WORKTREE:-0}" == 1 ]] || ! git -C "$root" rev-parse --git-dir >/dev/null 2>&1; then
  commit="worktree"
  (cd "$root" && tar -c --exclude=__pycache__ core gui pyproject.toml requirements README.md) | tar -x -C "$src"
else
  commit=$(git -C "$root" rev-parse --short HEAD)
  git -C "$root" archive HEAD core gui pyproject.toml requirements README.md | tar -x -C "$src"
fi
version=$(sed -n 's/^__version__ = "\(.*\)"/\1/p' "$src/core/__init__.py")
arch=$(dpkg --print-architecture)
deb="$build/archivist_${version}_${arch}.deb"

# Debian packages the app needs at run time. Qt's xcb platform plugin and the libraries QtGui/QtWidgets load
# are checked against a clean Debian chroot by smoke.sh (ldd finds nothing missing).
depends=(
  "python3 (>= 3.11)" "python3 (<< 3.12)"     # the venv's interpreter and its ABI
  openjdk-17-jre-headless                     # Spark 4 runs on Java 17
  libgmp10                                    # fastecdsa (py-libp2p)
  libglib2.0-0 libdbus-1-3 libfontconfig1 libfreetype6 libegl1 libgl1 libopengl0 libxkbcommon0
  libxkbcommon-x11-0 libx11-6 libx11-xcb1 libxcb1 libxcb-cursor0 libxcb-icccm4 libxcb-image0 libxcb-keysyms1
  libxcb-randr0 libxcb-render-util0 libxcb-render0 libxcb-shape0 libxcb-shm0 libxcb-sync1 libxcb-xfixes0
  libxcb-xinerama0 libxcb-xkb1 libxcb-util1 libxrender1 libice6 libsm6
)

rm -rf "$stage"
mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/usr/share/applications" \
         "$stage/usr/share/icons/hicolor/scalable/apps" "$stage/usr/share/doc/archivist" "$stage$app"

echo "build-deb: app from $commit; virtualenv with $py ($("$py" -V 2>&1)) ..."
"$py" -m venv "$venv"
# The project and its exact pins (non-editable, no dev extras). Wheels come from PyPI or pip's cache;
# fastecdsa compiles against libgmp-dev (scripts/system-packages.txt).
# (A local find-links entry in this machine's pip config that points nowhere makes pip warn per package: hidden.)
if ! "$venv/bin/python" -m pip install -q --no-compile --disable-pip-version-check \
     -c "$src/requirements/lock.txt" "$src" 2>&1 | { grep -v "is ignored: it is neither a file nor a directory" || true; }
then die "pip install failed"; fi
"$venv/bin/python" -m pip uninstall -q -y pip setuptools >/dev/null 2>&1 || true
find "$venv" -type d -name __pycache__ -prune -exec rm -rf {} +

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
# The GUI's own desktop file and icon when it has them (gui/resources), else the installer's.
desktop="$src/gui/resources/archivist.desktop"; [[ -f "$desktop" ]] || desktop="$here/files/archivist.desktop"
svg="$src/gui/resources/icons/archivist.svg"; [[ -f "$svg" ]] || svg="$here/files/archivist.svg"
install -m 644 "$desktop" "$stage/usr/share/applications/archivist.desktop"
install -m 644 "$svg" "$stage/usr/share/icons/hicolor/scalable/apps/archivist.svg"
if command -v desktop-file-validate >/dev/null; then
  desktop-file-validate "$stage/usr/share/applications/archivist.desktop" || die "desktop entry is invalid"
fi
install -m 755 "$here/debian/postinst" "$here/debian/prerm" "$stage/DEBIAN/"
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
printf 'deb=%s\ncommit=%s\ndeb_bytes=%s\ninstalled_kb=%s\nbuild_seconds=%s\ncompress=%s\n' \
  "$(basename "$deb")" "$commit" "$deb_bytes" "$size_kb" "$((t1 - t0))" "$compress" > "$build/build-info.txt"
echo "build-deb: $deb  $((deb_bytes / 1048576)) MiB packed, $((size_kb / 1024)) MiB installed, $((t1 - t0)) s"
