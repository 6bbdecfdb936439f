# Environment for the packaged Archivist, sourced by /usr/bin/archivist (and by smoke.sh's direct Spark job).
# Spark's Python workers (python -m pyspark.daemon) must run the app's own interpreter, or they would lack the
# app's packages; Spark 4 is run on Java 17.
ARCHIVIST_HOME=/opt/archivist
ARCHIVIST_PYTHON="$ARCHIVIST_HOME/venv/bin/python"
export PYSPARK_PYTHON="$ARCHIVIST_PYTHON"          # forced: another Python lacks the app's packages
export PYSPARK_DRIVER_PYTHON="$ARCHIVIST_PYTHON"
unset PYTHONHOME PYTHONPATH                        # a user's settings must not shadow the packaged libraries
if [ -z "${JAVA_HOME:-}" ] || [ ! -x "${JAVA_HOME:-}/bin/java" ]; then
  for j in /usr/lib/jvm/java-17-openjdk-*; do
    if [ -x "$j/bin/java" ]; then JAVA_HOME="$j"; export JAVA_HOME; break; fi
  done
fi
export SPARK_LOCAL_IP="${SPARK_LOCAL_IP:-127.0.0.1}"
