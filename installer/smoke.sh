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

die() { echo "smoke: FAIL: $*" >&2; exit 1; }
step() { echo "smoke: [$(( $(date +%s) - t_start ))s] $*"; }
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

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
# As an ordinary user, with a clean environment, as a desktop user would start it.
as_user() { chroot --userspec=smoke:smoke "$root" env -i PATH=/usr/bin:/bin HOME=/home/smoke LANG=C.UTF-8 "$@"; }
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

step "archivist synth + build + verify (reference path)"
as_user mkdir -p /home/smoke/w
as_user archivist synth --out /home/smoke/w/messages.sqlite --messages 4000 --weeks 6 --seed 3 > "$log-synth.txt"
cid=$(sed -n 's/^community //p' "$log-synth.txt")
read -r -a topics <<<"$(sed -n 's/^topics //p' "$log-synth.txt")"
targs=(); for t in "${topics[@]}"; do targs+=(--topic "$t"); done
as_user archivist build --db /home/smoke/w/messages.sqlite --community-id "$cid" "${targs[@]}" \
  --data-dir /home/smoke/w/data --torrent-dir /home/smoke/w/torrents --end 1710000000 | tail -3
as_user archivist verify "/home/smoke/w/data/$cid" | tail -1

step "archivist spark-build (the Spark pipeline, through the launcher)"
t_sp=$(date +%s)
as_user timeout 600 archivist spark-build --db /home/smoke/w/messages.sqlite --community-id "$cid" "${targs[@]}" \
  --data-dir /home/smoke/w/spark-data --torrent-dir /home/smoke/w/spark-torrents --end 1710000000 \
  > "$log-spark-build.txt" 2>&1 || { tail -30 "$log-spark-build.txt"; die "archivist spark-build"; }
as_user archivist verify "/home/smoke/w/spark-data/$cid" | tail -1
diff -r "$root/home/smoke/w/data" "$root/home/smoke/w/spark-data" >/dev/null \
  || die "spark-build wrote different archives than the reference build"
diff -r "$root/home/smoke/w/torrents" "$root/home/smoke/w/spark-torrents" >/dev/null || die "spark-build torrents differ"
echo "  spark-build output (data, index, torrents) is byte-identical to the reference build ($(( $(date +%s) - t_sp )) s)"
chroot_kill "$root"

step "PySpark job: a Python UDF runs app code in Spark's workers with the packaged Python"
cp "$here/spark_probe.py" "$root/tmp/spark_probe.py"
as_user timeout 600 sh -c '. /opt/archivist/archivist-env.sh && exec "$ARCHIVIST_PYTHON" /tmp/spark_probe.py /home/smoke/w/messages.sqlite' \
  > "$log-spark.txt" 2>&1 || true
sed 's/^/  /' "$log-spark.txt" | grep -v '^  *$' | tail -3
grep -q '^spark-probe OK' "$log-spark.txt" || die "spark probe"
chroot_kill "$root"

step "member import through the installed command (archivist import FOLDER --history DB)"
as_user archivist import "/home/smoke/w/data/$cid" --history /home/smoke/w/history.sqlite --json > "$log-import.json" \
  || die "archivist import"
as_user archivist import "/home/smoke/w/data/$cid" --history /home/smoke/w/history.sqlite > "$log-import2.txt" \
  || die "archivist import (again)"
"$root/opt/archivist/venv/bin/python" - "$log-import.json" "$log-import2.txt" <<'EOF' || die "import results"
import json, sys
r = json.load(open(sys.argv[1])); again = open(sys.argv[2]).read()
assert r["messages"] > 0 and r["windows"] > 0 and not r["failed"], r
assert "imported 0 archives" in again, again
print(f"  imported {len(r['imported_archive_ids'])} archives, {r['windows']} windows, {r['messages']} messages; "
      "a second import adds nothing")
EOF

# `archivist gui` prints "window visible after N s" once the window is shown; it keeps running until timeout stops
# it (exit 124). Its Spark warm-up starts meanwhile, as for a user.
gui_run() {  # $1: label, rest: command run as the user; passes if the window came up and the app kept running
  local label=$1; shift
  set +e; as_user "$@" > "$log-gui.txt" 2>&1; local rc=$?; set -e
  grep -q 'window visible after' "$log-gui.txt" || { cat "$log-gui.txt" >&2; die "$label: no window"; }
  [[ $rc -eq 124 ]] || { cat "$log-gui.txt" >&2; die "$label: exited $rc before the timeout (124 = still running)"; }
  echo "  $label: $(grep -o 'window visible after [0-9.]* s' "$log-gui.txt"), still running after the timeout"
  chroot_kill "$root"
}
step "GUI offscreen (archivist gui, QT_QPA_PLATFORM=offscreen)"
gui_run offscreen env QT_QPA_PLATFORM=offscreen timeout 10 archivist gui
if as_user archivist gui --help | grep -q PATH_OR_MAGNET; then
  step "GUI with an archive folder, as the file manager opens it (archivist gui %f)"
  gui_run "offscreen, folder" env QT_QPA_PLATFORM=offscreen timeout 10 archivist gui "/home/smoke/w/data/$cid"
fi

if [[ "${SMOKE_XVFB:-1}" == 1 ]]; then
  step "GUI on a real X server (Xvfb, Qt's xcb platform plugin)"
  in_root apt-get install -y -qq --no-install-recommends xvfb xauth >>"$log-apt.log" 2>&1 || die "xvfb install"
  gui_run xcb sh -c 'Xvfb :77 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 & x=$!;
    for i in $(seq 100); do [ -e /tmp/.X11-unix/X77 ] && break; sleep 0.1; done;
    DISPLAY=:77 timeout 10 archivist gui; rc=$?; kill $x; wait $x 2>/dev/null; exit $rc'
fi

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
    | grep -vE '^\./tmp/(archivist\.deb|spark_probe\.py|\.X11-unix.*|\.X77-lock)$' || true
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
