#!/usr/bin/env bash
# Install-and-smoke test of the archivist .deb in a fresh chroot of a Debian release (debootstrap; chroot-lib.sh).
#   bash installer/smoke.sh bookworm|trixie [path/to.deb]   (root; builds the release's .deb first if none is given)
# Steps: fresh minbase chroot -> apt installs the .deb (pulls Java, python3 and Qt's libraries from Debian) ->
# ldd finds every library the app loads -> as an ordinary user: archivist --version; synth + build + verify;
# spark-build byte-identical to build; a PySpark job running app code in Spark's workers; a member import; the
# GUI offscreen and on Xvfb (and with a folder to open); the magnet/folder handlers -> reinstall keeps the user's
# data -> remove and purge leave nothing outside the user's home (/tmp included).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/build"
suite=${1:-bookworm}
deb=${2:-}
if [[ "$suite" == *.deb ]]; then deb=$suite; suite=bookworm; fi          # the old form: smoke.sh FILE.deb
case "$suite" in bookworm) dist=deb12;; trixie) dist=deb13;; *) echo "smoke: unknown distribution $suite" >&2; exit 2;; esac
root="$build/smoke-root-$suite"
log="$build/smoke-$suite"
t_start=$(date +%s)
. "$here/chroot-lib.sh"
. "$here/smoke-lib.sh"     # die, step, in_root, as_user and the steps shared with smoke-portable.sh
APP=archivist

[[ $(id -u) -eq 0 ]] || die "run as root (debootstrap, chroot, mount)"

if [[ -z "$deb" ]]; then
  deb=$(ls -t "$build"/archivist_*+"$dist"_*.deb 2>/dev/null | head -1 || true)
  if [[ -z "$deb" ]]; then step "building the $suite package"; bash "$here/build-deb.sh" "$suite"; fi
  deb=$(ls -t "$build"/archivist_*+"$dist"_*.deb | head -1)
fi
[[ -f "$deb" ]] || die "no package at $deb"
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")

trap 'chroot_umount "$root"' EXIT
chroot_fresh "$suite" "$root"
chroot_mount "$root"

outside_home() {  # every path of the system that the package or the app could have left (not the user's home)
  (cd "$root" && find . -xdev \( -path ./proc -o -path ./sys -o -path ./dev -o -path ./home -o -path ./var/cache \
     -o -path ./var/lib/apt/lists -o -path ./var/log -o -path ./var/lib/dpkg -o -path ./etc/ld.so.cache \) -prune \
     -o -print | sort)
}

[[ ! -e "$root/usr/bin/java" && ! -e "$root/opt/archivist" ]] || die "chroot is not fresh"
step "apt-get install $(basename "$deb") into a fresh $suite"
cp "$deb" "$root/tmp/archivist.deb"
t_apt=$(date +%s)
in_root apt-get update -qq >/dev/null
# what a desktop has: the tools that register the .desktop handlers (before the package, so its postinst runs them)
in_root apt-get install -y -qq --no-install-recommends desktop-file-utils xdg-utils >"$log-apt.log" 2>&1 || die "desktop tools"
in_root useradd -m smoke
outside_home > "$log-before.txt"
in_root apt-get install -y -q /tmp/archivist.deb >>"$log-apt.log" 2>&1 || { tail -20 "$log-apt.log"; die "apt install"; }
grep -E 'newly installed|^Need to get|^After this operation' "$log-apt.log" | sed 's/^/  apt: /' || true
step "installed in $(( $(date +%s) - t_apt ))s; /opt/archivist is $(du -sm "$root/opt/archivist" | cut -f1) MiB"
echo "  java: $(in_root java -XX:-UsePerfData -version 2>&1 | head -1)"

pyver=$(in_root python3 -c 'import sys; print("%d.%d" % sys.version_info[:2])')
step "the venv runs on $suite's python3 ($pyver)"
vpy=$(in_root readlink -f /opt/archivist/venv/bin/python)     # resolved inside the chroot, not on this machine
[[ "$vpy" == /usr/bin/python$pyver ]] || die "venv python resolves to $vpy"
[[ $(head -1 "$root/opt/archivist/venv/bin/archivist") == "#!/opt/archivist/venv/bin/python" ]] || die "entry point shebang"

step "desktop integration: menu entry, icon, magnet: and folder handlers"
for f in usr/share/applications/archivist.desktop usr/share/applications/archivist-folder.desktop \
         usr/share/icons/hicolor/scalable/apps/archivist.svg; do [[ -f "$root/$f" ]] || die "$f missing"; done
magnet_app=$(as_user xdg-mime query default x-scheme-handler/magnet)
[[ "$magnet_app" == archivist.desktop ]] || die "magnet: links open with '$magnet_app'"
grep -q 'inode/directory=.*archivist-folder.desktop' "$root/usr/share/applications/mimeinfo.cache" \
  || die "folders do not offer Archivist (mimeinfo.cache)"
echo "  magnet: -> $magnet_app; folders -> archivist-folder.desktop (Open with)"

step "every shared library the app loads is found (ldd in the clean chroot)"
sp=/opt/archivist/venv/lib/python$pyver/site-packages
mapfile -t elfs < <(cd "$root" && { find ".$sp" -name '*.so*' -type f -not -path '*/PySide6/*';
  ls ".$sp"/PySide6/Qt*.abi3.so ".$sp"/PySide6/Qt/plugins/platforms/libq{xcb,offscreen,minimal}.so \
     ".$sp"/PySide6/Qt/plugins/{xcbglintegrations,imageformats,iconengines}/*.so 2>/dev/null; } | sed 's/^\.//' |
  grep -v '/imageformats/libqpdf.so$')   # PySide6 wheels ship this plugin without libQt6Pdf; Qt skips it
missing=$(for f in "${elfs[@]}"; do in_root ldd "$f" 2>/dev/null | { grep 'not found' || true; } | sed "s|^|$f: |"; done | sort -u)
[[ -z "$missing" ]] || { echo "$missing" >&2; die "libraries not found"; }
echo "  ${#elfs[@]} ELF files checked"

step "archivist --version"
v=$(as_user archivist --version) || die "--version"
echo "  $v"; [[ "$v" == archivist\ * ]] || die "unexpected version line"

smoke_pipeline

step "PySpark job: a Python UDF runs app code in Spark's workers with the packaged Python"
cp "$here/spark_probe.py" "$root/tmp/spark_probe.py"
as_user timeout 600 sh -c '. /opt/archivist/archivist-env.sh && exec "$ARCHIVIST_PYTHON" /tmp/spark_probe.py /home/smoke/w/messages.sqlite' \
  > "$log-spark.txt" 2>&1 || true
sed 's/^/  /' "$log-spark.txt" | grep -v '^  *$' | tail -3
grep -q '^spark-probe OK' "$log-spark.txt" || die "spark probe"
chroot_kill "$root"

smoke_import

if [[ "${SMOKE_XVFB:-1}" == 1 ]]; then
  in_root apt-get install -y -qq --no-install-recommends xvfb xauth >>"$log-apt.log" 2>&1 || die "xvfb install"
fi
smoke_gui

step "reinstall (the upgrade path: prerm upgrade, postinst configure) keeps the user's data and settings"
home_sum() { (cd "$root/home/smoke" && find . -path ./.cache -prune -o -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum); }
before=$(home_sum)
in_root apt-get install -y -q --reinstall /tmp/archivist.deb >>"$log-apt.log" 2>&1 || die "reinstall"
[[ "$(home_sum)" == "$before" ]] || die "the reinstall changed files in the user's home"
[[ "$(as_user archivist --version)" == "$v" ]] || die "--version after reinstall"
echo "  $(cd "$root/home/smoke" && find . -path ./.cache -prune -o -type f -print | wc -l) files of the user unchanged"

leftovers() {   # the package's own files (dpkg -L) that were not there before, and what the app's runs left in
  local p        # the places a user can write outside home: /tmp, /var/tmp, /dev/shm (the test's own files aside)
  outside_home | comm -13 "$log-before.txt" - | grep -E '^\./(tmp|var/tmp)/' \
    | grep -vE '^\./tmp/(archivist\.deb|spark_probe\.py|\.X11-unix.*|\.X[0-9]+-lock)$' || true
  while read -r p; do
    [[ "$p" != /. && -e "$root$p" ]] && ! grep -qxF ".$p" "$log-before.txt" && echo ".$p"
  done < "$log-files.txt"
  ls -A "$root/dev/shm" | sed 's|^|./dev/shm/|'
  return 0
}
in_root dpkg -L archivist > "$log-files.txt"
step "apt-get remove: nothing of the package or of the app's runs is left outside the user's home"
in_root apt-get remove -y -qq archivist >>"$log-apt.log" 2>&1 || die "remove"
left=$(leftovers)
[[ -z "$left" ]] || { echo "$left" | head -20 >&2; die "$(echo "$left" | wc -l) paths left after remove"; }
step "apt-get purge"
in_root apt-get purge -y -qq archivist >>"$log-apt.log" 2>&1 || die "purge"
left=$(leftovers)
[[ -z "$left" ]] || { echo "$left" | head -20 >&2; die "$(echo "$left" | wc -l) paths left after purge"; }
in_root dpkg -s archivist >/dev/null 2>&1 && die "dpkg still knows archivist"
echo "  nothing left outside /home/smoke (the user's own data stays there: $(du -sm "$root/home/smoke" | cut -f1) MiB)"

step "PASS $suite ($(basename "$deb"), $(( $(stat -c %s "$deb") / 1048576 )) MiB)"
chroot_umount "$root"
trap - EXIT
rm -rf "$root"
