#!/usr/bin/env bash
# Install-and-smoke test of the archivist .deb in a fresh Debian 12 (bookworm) chroot made with debootstrap.
#   bash installer/smoke.sh [path/to.deb]        (root; builds the .deb first if none is given or found)
# Steps: fresh minbase chroot (cached as build/chroot-bookworm-minbase.tar.gz) -> apt installs the .deb, which
# pulls Java 17, python3 and Qt's system libraries from Debian -> ldd finds every library the app loads ->
# as an ordinary user: archivist --version; synth + build (reference path) + verify; the Spark pipeline; a
# PySpark job whose Python UDF runs app code in Spark's workers; the GUI offscreen and on Xvfb -> purge.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build="$here/build"
suite=bookworm
cache="$build/chroot-$suite-minbase.tar.gz"
root="$build/smoke-root"
t_start=$(date +%s)

die() { echo "smoke: FAIL: $*" >&2; exit 1; }
step() { echo "smoke: [$(( $(date +%s) - t_start ))s] $*"; }
[[ $(id -u) -eq 0 ]] || die "run as root (debootstrap, chroot, mount)"

deb=${1:-}
if [[ -z "$deb" ]]; then
  make -C "$here" deb >/dev/null
  deb=$(ls -t "$build"/archivist_*.deb | head -1)
fi
[[ -f "$deb" ]] || die "no package at $deb"
deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")

export DEBIAN_FRONTEND=noninteractive
if ! command -v debootstrap >/dev/null; then
  step "installing debootstrap"
  apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null
fi

# The Debian mirror this machine's apt already uses (none is written into the repo).
apt_lines=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
            | grep -E '^(deb |URIs:)' || true)
mirror=${SMOKE_MIRROR:-$(grep -oE 'https?://[^ ]+' <<<"$apt_lines" | grep -v -- '-security' | grep -m1 debian || true)}
security=$(grep -oE 'https?://[^ ]+' <<<"$apt_lines" | grep -m1 -- 'debian-security' || true)
[[ -n "$mirror" ]] || die "no Debian mirror found in /etc/apt (set SMOKE_MIRROR)"

chroot_pids() { local p; for p in /proc/[0-9]*; do [[ "$(readlink "$p/root" 2>/dev/null)" == "$root" ]] && echo "${p#/proc/}"; done; return 0; }
kill_leftovers() {  # processes this script started inside the chroot that outlive their app by 10 s (a Spark JVM)
  local p i
  for i in $(seq 100); do [[ -z "$(chroot_pids)" ]] && return 0; sleep 0.1; done
  for p in $(chroot_pids); do
    echo "  LEFTOVER ${p}: $(tr "\\0" " " < "/proc/$p/cmdline" 2>/dev/null | cut -c1-100) (killed)"
    kill -9 "$p" 2>/dev/null || true
  done
  return 0
}
cleanup() {
  kill_leftovers
  for m in "$root/dev/shm" "$root/dev/pts" "$root/dev" "$root/proc" "$root/sys"; do
    mountpoint -q "$m" 2>/dev/null && umount -l "$m"
  done
  return 0
}
trap cleanup EXIT
cleanup
rm -rf "$root"
mkdir -p "$root"
if [[ -f "$cache" ]]; then
  step "fresh chroot from cached $(basename "$cache")"
  tar -xzf "$cache" -C "$root"
else
  step "debootstrap --variant=minbase $suite (first run; cached afterwards)"
  debootstrap --variant=minbase "$suite" "$root" "$mirror" >"$build/debootstrap.log" 2>&1 \
    || die "debootstrap failed (see $build/debootstrap.log)"
  tar -czf "$cache.tmp" -C "$root" . && mv "$cache.tmp" "$cache"
fi
{
  echo "deb $mirror $suite main"
  echo "deb $mirror $suite-updates main"
  [[ -n "$security" ]] && echo "deb $security $suite-security main"
} > "$root/etc/apt/sources.list"
cp -L /etc/resolv.conf "$root/etc/resolv.conf"
# debootstrap writes no /etc/hosts (an installed system has one): without it "localhost" does not resolve and
# PySpark's accumulator server cannot bind.
printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
mount -t proc proc "$root/proc"
mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"
mount -t devpts devpts "$root/dev/pts" -o newinstance,ptmxmode=0666 || true
mount -t tmpfs shm "$root/dev/shm"

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
# As an ordinary user, with a clean environment, as a desktop user would start it.
as_user() { chroot --userspec=smoke:smoke "$root" env -i PATH=/usr/bin:/bin HOME=/home/smoke LANG=C.UTF-8 "$@"; }

[[ ! -e "$root/usr/bin/java" && ! -e "$root/opt/archivist" ]] || die "chroot is not fresh"
step "apt-get install $(basename "$deb") (pulls Java 17, python3, Qt libraries from Debian)"
cp "$deb" "$root/tmp/archivist.deb"
t_apt=$(date +%s)
in_root apt-get update -qq >/dev/null
in_root apt-get install -y -q /tmp/archivist.deb >"$build/smoke-apt.log" 2>&1 || { tail -20 "$build/smoke-apt.log"; die "apt install"; }
grep -E 'newly installed|^Need to get|^After this operation' "$build/smoke-apt.log" | sed 's/^/  apt: /' || true
step "installed in $(( $(date +%s) - t_apt ))s; /opt/archivist is $(du -sm "$root/opt/archivist" | cut -f1) MiB"
in_root useradd -m smoke

step "the venv runs on Debian's python3, not a private build"
[[ $(readlink -f "$root/opt/archivist/venv/bin/python") == /usr/bin/python3.11 ]] \
  || die "venv python resolves to $(readlink -f "$root/opt/archivist/venv/bin/python")"
[[ $(head -1 "$root/opt/archivist/venv/bin/archivist") == "#!/opt/archivist/venv/bin/python" ]] || die "entry point shebang"
[[ -f "$root/usr/share/applications/archivist.desktop" && -f "$root/usr/share/icons/hicolor/scalable/apps/archivist.svg" ]] \
  || die "desktop entry or icon missing"

step "every shared library the app loads is found (ldd in the clean chroot)"
sp=/opt/archivist/venv/lib/python3.11/site-packages
mapfile -t elfs < <(cd "$root" && { find ".$sp" -name '*.so*' -type f -not -path '*/PySide6/*';
  ls ".$sp"/PySide6/Qt{Core,Gui,Widgets,Charts,Svg,Network,OpenGL}.abi3.so \
     ".$sp"/PySide6/Qt/plugins/platforms/libq{xcb,offscreen,minimal}.so \
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
as_user archivist synth --out /home/smoke/w/messages.sqlite --messages 4000 --weeks 6 --seed 3 > "$build/smoke-synth.txt"
cid=$(sed -n 's/^community //p' "$build/smoke-synth.txt")
read -r -a topics <<<"$(sed -n 's/^topics //p' "$build/smoke-synth.txt")"
targs=(); for t in "${topics[@]}"; do targs+=(--topic "$t"); done
as_user archivist build --db /home/smoke/w/messages.sqlite --community-id "$cid" "${targs[@]}" \
  --data-dir /home/smoke/w/data --torrent-dir /home/smoke/w/torrents --end 1710000000 | tail -3
as_user archivist verify "/home/smoke/w/data/$cid" | tail -1

# The Spark pipeline (core/pipeline), once it offers a subcommand: run it through the launcher.
spark_cmd=$(as_user archivist --help | grep -oE '\b(spark-build|spark)\b' | head -1 || true)
if [[ -n "$spark_cmd" ]]; then
  step "archivist $spark_cmd (the Spark pipeline, through the launcher)"
  as_user archivist "$spark_cmd" --help >/dev/null || die "$spark_cmd --help"
  as_user timeout 600 archivist "$spark_cmd" --db /home/smoke/w/messages.sqlite --community-id "$cid" "${targs[@]}" \
    --data-dir /home/smoke/w/spark-data --torrent-dir /home/smoke/w/spark-torrents --end 1710000000 \
    || die "archivist $spark_cmd"
  as_user archivist verify "/home/smoke/w/spark-data/$cid" | tail -1
  diff -r "$root/home/smoke/w/data" "$root/home/smoke/w/spark-data" >/dev/null \
    || die "spark-build wrote different archives than the reference build"
  echo "  spark-build output is byte-identical to the reference build"
else
  echo "  (no Spark subcommand in 'archivist --help' yet: the PySpark job below covers Spark)"
fi

step "PySpark job: a Python UDF runs app code in Spark's workers with the packaged Python"
cp "$here/spark_probe.py" "$root/tmp/spark_probe.py"
as_user timeout 600 sh -c '. /opt/archivist/archivist-env.sh && exec "$ARCHIVIST_PYTHON" /tmp/spark_probe.py /home/smoke/w/messages.sqlite' \
  | tee "$build/smoke-spark.txt" | sed 's/^/  /'
grep -q '^spark-probe OK' "$build/smoke-spark.txt" || die "spark probe"

# `archivist gui` prints "window visible after N s" once the main window is shown; it keeps running until
# timeout stops it (exit 124). Its Spark warm-up starts meanwhile, as for a user.
gui_run() {  # $1: label, rest: command run as the user; passes if the window came up and the app kept running
  local label=$1; shift
  set +e; as_user "$@" > "$build/smoke-gui.txt" 2>&1; local rc=$?; set -e
  grep -q 'window visible after' "$build/smoke-gui.txt" || { cat "$build/smoke-gui.txt" >&2; die "$label: no window"; }
  [[ $rc -eq 124 ]] || { cat "$build/smoke-gui.txt" >&2; die "$label: exited $rc before the timeout (124 = still running)"; }
  echo "  $label: $(grep -o 'window visible after [0-9.]* s' "$build/smoke-gui.txt"), still running after the timeout"
  kill_leftovers
}
step "GUI offscreen (archivist gui, QT_QPA_PLATFORM=offscreen)"
gui_run offscreen env QT_QPA_PLATFORM=offscreen timeout 10 archivist gui

if [[ "${SMOKE_XVFB:-1}" == 1 ]]; then
  step "GUI on a real X server (Xvfb, Qt's xcb platform plugin)"
  in_root apt-get install -y -qq --no-install-recommends xvfb xauth >>"$build/smoke-apt.log" 2>&1 || die "xvfb install"
  gui_run xcb sh -c 'Xvfb :77 -screen 0 1280x800x24 -nolisten tcp >/dev/null 2>&1 & x=$!;
    for i in $(seq 100); do [ -e /tmp/.X11-unix/X77 ] && break; sleep 0.1; done;
    DISPLAY=:77 timeout 10 archivist gui; rc=$?; kill $x; wait $x 2>/dev/null; exit $rc'
fi

step "apt-get purge leaves nothing under /opt/archivist"
in_root apt-get purge -y -qq archivist >>"$build/smoke-apt.log" 2>&1 || die "purge"
[[ ! -e "$root/opt/archivist" && ! -e "$root/usr/bin/archivist" ]] || die "files left after purge: $(find "$root/opt/archivist" | head)"

step "PASS ($(basename "$deb"), $(( $(stat -c %s "$deb") / 1048576 )) MiB)"
cleanup
rm -rf "$root"
