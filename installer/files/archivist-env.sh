# Environment for the packaged Archivist, sourced by /usr/bin/archivist (and by smoke.sh's direct Spark job).
# Spark's Python workers (python -m pyspark.daemon) must run the app's own interpreter, or they would lack the
# app's packages; Spark 4 runs on Java 17 or 21.
ARCHIVIST_HOME=/opt/archivist
ARCHIVIST_PYTHON="$ARCHIVIST_HOME/venv/bin/python"
export PYSPARK_PYTHON="$ARCHIVIST_PYTHON"          # forced: another Python lacks the app's packages
export PYSPARK_DRIVER_PYTHON="$ARCHIVIST_PYTHON"
unset PYTHONHOME PYTHONPATH                        # a user's settings must not shadow the packaged libraries
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "${JAVA_HOME:-}/bin/java" ]; then
  JAVA_HOME=
  for j in /usr/lib/jvm/java-17-openjdk-* /usr/lib/jvm/java-21-openjdk-*; do
    if [ -x "$j/bin/java" ]; then JAVA_HOME="$j"; break; fi
  done
  if [ -z "$JAVA_HOME" ] && command -v java >/dev/null 2>&1; then
    j=$(readlink -f "$(command -v java)"); JAVA_HOME=${j%/bin/java}
  fi
  if [ -n "$JAVA_HOME" ]; then export JAVA_HOME; else unset JAVA_HOME; fi
fi
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
# Scratch files (the Inspector's downloads, Spark's runtime folder and its local dirs) stay in the user's home,
# so removing the package leaves nothing of a user's runs in /tmp, even after a killed run.
if [ -n "${HOME:-}" ] && [ -d "$HOME" ] && [ -w "$HOME" ]; then
  ARCHIVIST_TMP="${XDG_CACHE_HOME:-$HOME/.cache}/archivist/tmp"
  if mkdir -p "$ARCHIVIST_TMP" 2>/dev/null && chmod 700 "$ARCHIVIST_TMP"; then
    export TMPDIR="$ARCHIVIST_TMP" SPARK_LOCAL_DIRS="${SPARK_LOCAL_DIRS:-$ARCHIVIST_TMP}"
  fi
fi

# Spark needs Java 17 or 21. Prints one line saying what to install and returns 1 when that is not what it finds.
archivist_java_check() {
  if [ -z "${JAVA_HOME:-}" ] || [ ! -x "$JAVA_HOME/bin/java" ]; then
    echo "archivist: Spark needs Java 17 or 21, and none is installed: sudo apt install openjdk-17-jre-headless" \
         "(Debian 12, Ubuntu 22.04) or openjdk-21-jre-headless (Debian 13, Ubuntu 24.04), or set JAVA_HOME" >&2
    return 1
  fi
  jv=$(sed -n 's/^JAVA_VERSION="\([0-9]*\).*/\1/p' "$JAVA_HOME/release" 2>/dev/null)
  [ -n "$jv" ] || jv=$("$JAVA_HOME/bin/java" -version 2>&1 | sed -n '1s/.*version "\([0-9]*\).*/\1/p')
  case "$jv" in
    17|21) return 0 ;;
    *) echo "archivist: Spark needs Java 17 or 21, but $JAVA_HOME is Java ${jv:-of unknown version}: install" \
            "openjdk-17-jre-headless or openjdk-21-jre-headless, or point JAVA_HOME at one" >&2
       return 1 ;;
  esac
}
