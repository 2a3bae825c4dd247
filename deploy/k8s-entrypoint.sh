#!/bin/bash
# Entry point of deploy/Dockerfile's image. Spark on Kubernetes starts executor pods with the
# argument "executor" and their settings in SPARK_* environment variables; anything else is
# run as a command (e.g. a shell to look around).
set -euo pipefail

if [ "${1:-}" = "executor" ]; then
  shift
  java_opts=()
  # SPARK_JAVA_OPT_0, _1, ...: the executor's JVM options, in order
  while IFS='=' read -r name value; do
    java_opts+=("$value")
  done < <(env | grep '^SPARK_JAVA_OPT_' | sort -t_ -k4 -n)
  exec "${JAVA_HOME}/bin/java" "${java_opts[@]}" \
    -Xms"${SPARK_EXECUTOR_MEMORY}" -Xmx"${SPARK_EXECUTOR_MEMORY}" \
    -cp "${SPARK_HOME}/jars/*${SPARK_DIST_CLASSPATH:+:$SPARK_DIST_CLASSPATH}" \
    org.apache.spark.scheduler.cluster.k8s.KubernetesExecutorBackend \
    --driver-url "${SPARK_DRIVER_URL}" \
    --executor-id "${SPARK_EXECUTOR_ID}" \
    --cores "${SPARK_EXECUTOR_CORES}" \
    --app-id "${SPARK_APPLICATION_ID}" \
    --hostname "${SPARK_EXECUTOR_POD_IP}" \
    --resourceProfileId "${SPARK_RESOURCE_PROFILE_ID:-0}" \
    --podName "${SPARK_EXECUTOR_POD_NAME:-$(hostname)}" \
    "$@"
fi
exec "$@"
