#!/usr/bin/env bash
# Drops from the package's venv what the app never loads (figures in README.md, "Size"); smoke.sh proves the rest
# works: spark-build byte-identical, the PySpark worker probe, the window offscreen and on Xvfb.
#   bash installer/prune.sh VENV        (DEB_PRUNE=0 makes build-deb.sh skip it)
# - Qt: the app imports QtCore, QtGui, QtWidgets and QtCharts. Kept: those, the platform/image/icon/style/input
#   plugins, and every Qt library they need (ELF NEEDED, closed transitively with readelf); PySide6 modules whose
#   Qt library is not kept, QML/Quick/3D/WebEngine/Multimedia, Designer and the other Qt tools go.
# - Spark: local and standalone SQL only. Jars for Hive, Kubernetes, YARN, MLlib/GraphX, Spark Connect's server,
#   the REPL and RocksDB (the UI's disk store and streaming state: neither is used) go.
# - tests/ folders, C headers and sources of the bundled libraries.
set -euo pipefail
venv=$1
sp=$(echo "$venv"/lib/python3*/site-packages)
[[ -d "$sp/PySide6" && -d "$sp/pyspark" ]] || { echo "prune: no PySide6/pyspark under $sp" >&2; exit 1; }
command -v readelf >/dev/null || { echo "prune: readelf missing (binutils)" >&2; exit 1; }
before=$(du -sk "$venv" | cut -f1)

# ---- Qt ------------------------------------------------------------------------------------------------------
ps="$sp/PySide6"; qt="$ps/Qt"
keep_plugins="platforms platforminputcontexts platformthemes xcbglintegrations imageformats iconengines styles
  generic egldeviceintegrations wayland-decoration-client wayland-graphics-integration-client wayland-shell-integration tls"
for d in "$qt"/plugins/*/; do
  d=${d%/}; case " $(echo $keep_plugins) " in *" $(basename "$d") "*) ;; *) rm -rf "$d";; esac
done
rm -f "$qt/plugins/imageformats/libqpdf.so"   # shipped without libQt6Pdf: Qt skips it
needed() { readelf -d "$1" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'; }
declare -A keep=()
queue=("$ps"/Qt{Core,Gui,Widgets,Charts}.abi3.so "$ps"/libpyside6*.so* "$sp"/shiboken6/*.so*)
while IFS= read -r f; do queue+=("$f"); done < <(find "$qt/plugins" -name '*.so' -type f)
while ((${#queue[@]})); do
  f=${queue[0]}; queue=("${queue[@]:1}")
  for n in $(needed "$f"); do
    [[ -n "${keep[$n]:-}" ]] && continue
    if [[ -e "$qt/lib/$n" ]]; then keep[$n]=1; queue+=("$qt/lib/$n"); fi
  done
done
removed_libs=0
for l in "$qt"/lib/*.so*; do
  [[ -n "${keep[$(basename "$l")]:-}" ]] || { rm -f "$l"; removed_libs=$((removed_libs + 1)); }
done
for m in "$ps"/Qt*.abi3.so; do          # a PySide6 module stays when its Qt library does
  name=$(basename "$m" .abi3.so)
  [[ -n "${keep[libQt6${name#Qt}.so.6]:-}" ]] || rm -f "$m" "$ps/$name.pyi"
done
find "$ps" -maxdepth 1 -type f -perm -u+x ! -name '*.so*' -delete     # assistant, designer, qmlls, ... (ELF tools)
rm -rf "$qt/qml" "$qt/libexec" "$qt/metatypes" "$qt/resources" "$ps/include" "$ps/typesystems" "$ps/glue" \
       "$ps/scripts" "$ps/Qt/translations/"qt{webengine,designer,help,linguist,assistant}_* 2>/dev/null || true
rm -f "$venv"/bin/pyside6-*
echo "prune: Qt: kept ${#keep[@]} Qt libraries, removed $removed_libs; PySide6 modules kept: $(cd "$ps" && ls Qt*.abi3.so | sed 's/.abi3.so//' | tr '\n' ' ')"

# ---- Spark jars ------------------------------------------------------------------------------------------------
jars="$sp/pyspark/jars"
n0=$(ls "$jars" | wc -l)
for pat in 'hive-*' 'spark-hive*' 'derby-*' 'datanucleus-*' 'jdo-api-*' 'kubernetes-*' 'spark-kubernetes*' \
            'spark-yarn*' 'spark-mllib*' 'breeze*' 'spire*' 'algebra_*' 'cats-kernel*' 'arpack*' 'lapack-*' \
            'blas-*' 'spark-graphx*' 'spark-connect_*' 'spark-repl*' 'scala-compiler-*' 'rocksdbjni-*' \
            'jline-*' 'okhttp-*' 'logging-interceptor-*' 'snakeyaml-engine-*' 'jpam-*'; do
  rm -f "$jars"/$pat
done
echo "prune: Spark: $((n0 - $(ls "$jars" | wc -l))) of $n0 jars removed"

# ---- tests, headers, sources -----------------------------------------------------------------------------------
find "$sp" -type d -name tests -path '*/site-packages/*/*' -prune \
  \( -path '*/numpy/*' -o -path '*/pandas/*' -o -path '*/pyarrow/*' -o -path '*/pyspark/*' \) -exec rm -rf {} +
rm -rf "$sp/pyarrow/include" "$sp/pyarrow/src" "$sp/numpy/_core/include" "$sp/pyspark/examples" "$sp/pyspark/data"
after=$(du -sk "$venv" | cut -f1)
echo "prune: venv $((before / 1024)) MiB -> $((after / 1024)) MiB"
