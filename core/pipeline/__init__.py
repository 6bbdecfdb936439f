"""The Spark pipeline: session owner, build, hydrate and export jobs, cluster mode."""

DEFAULT_MASTER = "local[*]"     # Spark in this process on every core: the node's, the spark-* commands' and Settings' default
