# Steps shared by smoke.sh (the .deb) and smoke-portable.sh (the single file), sourced after chroot-lib.sh.
# The caller sets: root (the chroot), log (prefix of log files), t_start; APP is the command that runs Archivist in
# the chroot as the user "smoke" (archivist, or the portable file's path).
#   smoke_pipeline   synth + build + verify; spark-build byte-identical to build (data, index, torrents)
#   smoke_import     archivist import FOLDER --history DB --json, and a second import that adds nothing
#   smoke_gui        the window offscreen, with an archive folder (when supported) and, with SMOKE_XVFB=1, on Xvfb
#                    (xvfb and xauth must be installed in the chroot)

die() { echo "smoke: FAIL: $*" >&2; exit 1; }
step() { echo "smoke: [$(( $(date +%s) - t_start ))s] $*"; }
in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"; }
# As an ordinary user, with a clean environment, as a desktop user would start it.
as_user() { chroot --userspec=smoke:smoke "$root" env -i PATH=/usr/bin:/bin HOME=/home/smoke LANG=C.UTF-8 "$@"; }

smoke_pipeline() {
  step "archivist synth + build + verify (reference path)"
  as_user mkdir -p /home/smoke/w
  as_user "$APP" synth --out /home/smoke/w/messages.sqlite --messages 4000 --weeks 6 --seed 3 > "$log-synth.txt"
  cid=$(sed -n 's/^community //p' "$log-synth.txt")
  local topics t targs=()
  read -r -a topics <<<"$(sed -n 's/^topics //p' "$log-synth.txt")"
  for t in "${topics[@]}"; do targs+=(--topic "$t"); done
  as_user "$APP" build --db /home/smoke/w/messages.sqlite --community-id "$cid" "${targs[@]}" \
    --data-dir /home/smoke/w/data --torrent-dir /home/smoke/w/torrents --end 1710000000 | tail -3
  as_user "$APP" verify "/home/smoke/w/data/$cid" | tail -1

  step "archivist spark-build (the Spark pipeline, through the launcher)"
  local t_sp; t_sp=$(date +%s)
  as_user timeout 600 "$APP" spark-build --db /home/smoke/w/messages.sqlite --community-id "$cid" "${targs[@]}" \
    --data-dir /home/smoke/w/spark-data --torrent-dir /home/smoke/w/spark-torrents --end 1710000000 \
    > "$log-spark-build.txt" 2>&1 || { tail -30 "$log-spark-build.txt"; die "archivist spark-build"; }
  as_user "$APP" verify "/home/smoke/w/spark-data/$cid" | tail -1
  diff -r "$root/home/smoke/w/data" "$root/home/smoke/w/spark-data" >/dev/null \
    || die "spark-build wrote different archives than the reference build"
  diff -r "$root/home/smoke/w/torrents" "$root/home/smoke/w/spark-torrents" >/dev/null || die "spark-build torrents differ"
  echo "  spark-build output (data, index, torrents) is byte-identical to the reference build ($(( $(date +%s) - t_sp )) s)"
  chroot_kill "$root"
}

smoke_import() {
  step "member import through the installed command (archivist import FOLDER --history DB)"
  as_user "$APP" import "/home/smoke/w/data/$cid" --history /home/smoke/w/history.sqlite --json > "$log-import.json" \
    || die "archivist import"
  as_user "$APP" import "/home/smoke/w/data/$cid" --history /home/smoke/w/history.sqlite > "$log-import2.txt" \
    || die "archivist import (again)"
  python3 - "$log-import.json" "$log-import2.txt" <<'EOF' || die "import results"
import json, sys
r = json.load(open(sys.argv[1])); again = open(sys.argv[2]).read()
assert r["messages"] > 0 and r["windows"] > 0 and not r["failed"], r
assert "imported 0 archives" in again, again
print(f"  imported {len(r['imported_archive_ids'])} archives, {r['windows']} windows, {r['messages']} messages; "
      "a second import adds nothing")
EOF
}

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

smoke_gui() {
  step "GUI offscreen (archivist gui, QT_QPA_PLATFORM=offscreen)"
  gui_run offscreen env QT_QPA_PLATFORM=offscreen timeout 10 "$APP" gui
  if as_user "$APP" gui --help | grep -q PATH_OR_MAGNET; then
    step "GUI with an archive folder, as the file manager opens it (archivist gui %f)"
    gui_run "offscreen, folder" env QT_QPA_PLATFORM=offscreen timeout 10 "$APP" gui "/home/smoke/w/data/$cid"
  fi
  if [[ "${SMOKE_XVFB:-1}" == 1 ]]; then
    step "GUI on a real X server (Xvfb, Qt's xcb platform plugin)"
    # -displayfd: Xvfb picks a free display and writes its number once it accepts clients (smoke runs of two
    # releases at once share the abstract X socket namespace)
    gui_run xcb sh -c 'f=$HOME/.smoke-display; rm -f "$f"; Xvfb -displayfd 5 -screen 0 1280x800x24 -nolisten tcp 5>"$f" 2>/dev/null & x=$!;
      for i in $(seq 100); do [ -s "$f" ] && break; sleep 0.1; done;
      DISPLAY=:$(cat "$f") timeout 10 "$0" gui; rc=$?; kill $x; wait $x 2>/dev/null; rm -f "$f"; exit $rc' "$APP"
  fi
}
