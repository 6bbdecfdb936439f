#!/usr/bin/env bash
# Installs the Debian packages listed in scripts/system-packages.txt that are missing. Idempotent.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
missing=()
while read -r pkg _; do
  [[ -z "$pkg" || "$pkg" == \#* ]] && continue
  # nodejs/npm may come from outside Debian (e.g. a preinstalled Node 20): accept the command.
  if [[ "$pkg" == nodejs ]] && command -v node >/dev/null; then continue; fi
  if [[ "$pkg" == npm ]] && command -v npm >/dev/null; then continue; fi
  if [[ "$pkg" == openjdk-17-jre-headless ]] && command -v java >/dev/null; then continue; fi
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done < "$here/system-packages.txt"
if (( ${#missing[@]} == 0 )); then exit 0; fi
echo "setup-system: installing ${missing[*]}"
if [[ $(id -u) -ne 0 ]]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
