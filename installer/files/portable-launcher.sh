#!/bin/sh
# Launcher inside the portable file's folder (~/.cache/archivist/portable-*/bin/archivist): the same environment
# and Java check as the .deb's /usr/bin/archivist (archivist-env.sh), pointed at this folder's Python.
#   ARCHIVE.run --portable-python [ARGS]   runs the bundled Python with the app's packages (the smoke test's probe)
d=$(cd "$(dirname "$0")/.." && pwd)
. "$d/archivist-env.sh"
ARCHIVIST_HOME=$d
ARCHIVIST_PYTHON=$d/bin/python                       # sets LD_LIBRARY_PATH for Python only (bin/python)
export PYSPARK_PYTHON="$ARCHIVIST_PYTHON" PYSPARK_DRIVER_PYTHON="$ARCHIVIST_PYTHON"
# no JVM perf-data folder in /tmp (hsperfdata_USER): Spark's launcher and driver JVMs
export SPARK_LAUNCHER_OPTS="-XX:-UsePerfData${SPARK_LAUNCHER_OPTS:+ $SPARK_LAUNCHER_OPTS}"
export SPARK_SUBMIT_OPTS="-XX:-UsePerfData${SPARK_SUBMIT_OPTS:+ $SPARK_SUBMIT_OPTS}"
# Python's ssl module was built for Debian's certificate path; other distributions keep the bundle elsewhere
if [ -z "${SSL_CERT_FILE:-}" ] && [ ! -e /usr/lib/ssl/certs/ca-certificates.crt ] && [ ! -e /usr/lib/ssl/cert.pem ]; then
  for c in /etc/ssl/certs/ca-certificates.crt /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/ca-bundle.pem /etc/ssl/cert.pem; do
    if [ -r "$c" ]; then export SSL_CERT_FILE="$c"; break; fi
  done
fi
case "${1:-}" in
  --portable-python) shift; exec "$ARCHIVIST_PYTHON" "$@" ;;
  spark-*) archivist_java_check || exit 2 ;;            # these cannot run without Java: say so and stop
  ""|gui|demo|node) archivist_java_check || true ;;     # the window and the node run; Spark is what is missing
esac
exec "$ARCHIVIST_PYTHON" "$d/venv/bin/archivist" "$@"
