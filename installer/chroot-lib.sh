# Debian chroots for build-deb.sh and smoke.sh (sourced, root only). A chroot is unpacked from a cached tarball
# under build/ (made once with debootstrap from the Debian mirror of this machine's apt; `installer/.gitignore`
# ignores build/), so every build and every smoke run starts from the same fresh system.
#   chroot_fresh SUITE ROOT [PACKAGES...]   fresh chroot of SUITE at ROOT with PACKAGES installed (cached too)
#   chroot_mount ROOT / chroot_umount ROOT  /proc, /sys, /dev, /dev/pts, /dev/shm
#   chroot_kill ROOT                        kill what still runs inside ROOT after a 10 s grace
# Needs: debootstrap (installed with apt-get when missing), tar, gzip.

CHROOT_SUITES="bookworm trixie"
cl_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cl_build="$cl_here/build"

cl_step() { echo "chroot: $*"; }
cl_die() { echo "chroot: FAIL: $*" >&2; exit 1; }

chroot_need_tools() {   # the installer's own prerequisites (never installed by `make setup`)
  local missing=() t
  for t in debootstrap:debootstrap zstd:zstd desktop-file-validate:desktop-file-utils; do
    command -v "${t%%:*}" >/dev/null || missing+=("${t#*:}")
  done
  if ((${#missing[@]})); then
    cl_step "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null \
      || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null; } \
      || cl_die "cannot install ${missing[*]}"
  fi
}

chroot_mirror() {   # the Debian mirror this machine's apt already uses (none is written into the repo)
  local lines
  lines=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
          | grep -E '^(deb |URIs:)' || true)
  CHROOT_MIRROR=${SMOKE_MIRROR:-$(grep -oE 'https?://[^ ]+' <<<"$lines" | grep -v -- '-security' | grep -m1 debian || true)}
  CHROOT_SECURITY=${SMOKE_SECURITY_MIRROR:-$(grep -oE 'https?://[^ ]+' <<<"$lines" | grep -m1 -- 'debian-security' || true)}
  [[ -n "$CHROOT_SECURITY" ]] || CHROOT_SECURITY="${CHROOT_MIRROR%/debian}/debian-security"
  [[ -n "$CHROOT_MIRROR" ]] || cl_die "no Debian mirror found in /etc/apt (set SMOKE_MIRROR)"
}

chroot_pids() { local p; for p in /proc/[0-9]*; do [[ "$(readlink "$p/root" 2>/dev/null)" == "$1" ]] && echo "${p#/proc/}"; done; return 0; }

chroot_kill() {   # what is left in the chroot 10 s after its command ended (a Spark JVM) is reported and killed
  local root=$1 p i
  [[ -d "$root" ]] || return 0
  for i in $(seq 100); do [[ -z "$(chroot_pids "$root")" ]] && return 0; sleep 0.1; done
  for p in $(chroot_pids "$root"); do
    echo "  LEFTOVER ${p}: $(tr '\0' ' ' < "/proc/$p/cmdline" 2>/dev/null | cut -c1-100) (killed)"
    kill -9 "$p" 2>/dev/null || true
  done
  return 0
}

chroot_mount() {
  local root=$1
  mount -t proc proc "$root/proc"
  mount -t sysfs sys "$root/sys"
  mount --bind /dev "$root/dev"
  mount -t devpts devpts "$root/dev/pts" -o newinstance,ptmxmode=0666 || true
  mount -t tmpfs shm "$root/dev/shm"
}

chroot_umount() {   # every mount under ROOT, deepest first (bind mounts of caches included)
  local root=$1 m
  [[ -n "$root" && -d "$root" ]] || return 0
  chroot_kill "$root"
  for m in $(awk -v r="$root" '$2 == r || index($2, r "/") == 1 {print $2}' /proc/mounts | sort -r); do
    umount "$m" 2>/dev/null || umount -l "$m"
  done
  return 0
}

chroot_configure() {   # what an installed system has and debootstrap does not write
  local suite=$1 root=$2
  {
    echo "deb $CHROOT_MIRROR $suite main"
    echo "deb $CHROOT_MIRROR $suite-updates main"
    echo "deb $CHROOT_SECURITY $suite-security main"
  } > "$root/etc/apt/sources.list"
  cp -L /etc/resolv.conf "$root/etc/resolv.conf"
  # without "localhost" PySpark cannot bind its accumulator server
  printf '127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n' > "$root/etc/hosts"
}

chroot_fresh() {   # SUITE ROOT [PACKAGES...]: a fresh chroot; with PACKAGES, a second cached layer has them
  local suite=$1 root=$2; shift 2
  case " $CHROOT_SUITES " in *" $suite "*) ;; *) cl_die "unknown distribution '$suite' (one of: $CHROOT_SUITES)";; esac
  chroot_need_tools
  chroot_mirror
  mkdir -p "$cl_build"
  local base="$cl_build/chroot-$suite-minbase.tar.gz" tag="" cache
  if (($#)); then tag=$(printf '%s\n' "$@" | sort | md5sum | cut -c1-8); fi
  cache=${tag:+$cl_build/chroot-$suite-$tag.tar.gz}
  chroot_umount "$root"
  rm -rf "$root" && mkdir -p "$root"
  if [[ -n "$cache" && -f "$cache" ]]; then
    cl_step "fresh $suite chroot from cached $(basename "$cache")"
    tar -xzf "$cache" -C "$root"
  else
    if [[ -f "$base" ]]; then
      cl_step "fresh $suite chroot from cached $(basename "$base")"
      tar -xzf "$base" -C "$root"
    else
      cl_step "debootstrap --variant=minbase $suite (first run; cached as $(basename "$base"))"
      nice -n 10 debootstrap --variant=minbase "$suite" "$root" "$CHROOT_MIRROR" >"$cl_build/debootstrap-$suite.log" 2>&1 \
        || cl_die "debootstrap failed (see $cl_build/debootstrap-$suite.log)"
      tar -czf "$base.tmp" -C "$root" . && mv "$base.tmp" "$base"
    fi
    if [[ -n "$cache" ]]; then
      chroot_configure "$suite" "$root"
      cl_step "apt-get install $* (cached as $(basename "$cache"))"
      chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive sh -c \
        'apt-get update -qq && apt-get install -y -qq --no-install-recommends "$@" && apt-get clean' sh "$@" \
        >"$cl_build/chroot-$suite-$tag.log" 2>&1 || cl_die "apt-get install in the $suite chroot (see $cl_build/chroot-$suite-$tag.log)"
      tar -czf "$cache.tmp" -C "$root" . && mv "$cache.tmp" "$cache"
    fi
  fi
  chroot_configure "$suite" "$root"
}
