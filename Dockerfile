# One image for the whole stack in docker-compose.yaml: Airflow 3 with this provider, and the Spark
# master/worker started from the same pyspark distribution (so every part runs the same Spark 4.2.0).
FROM apache/airflow:3.3.2-python3.11

USER root
# Java 17 for spark-submit and the drivers (client mode: they run beside the Airflow scheduler).
RUN apt-get update \
 && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
 && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64

USER airflow
COPY --chown=airflow:root pyproject.toml README.md /opt/airflow-async-stream/
COPY --chown=airflow:root airflow_async_stream /opt/airflow-async-stream/airflow_async_stream
RUN pip install --no-cache-dir "apache-airflow==3.3.2" "/opt/airflow-async-stream[spark,chart]"
