-- Runs once, when the Postgres data volume is first initialised (docker-entrypoint-initdb.d),
-- as POSTGRES_USER, who then owns both databases.
-- prefect: the Prefect server's database (PREFECT_API_DATABASE_CONNECTION_URL).
-- mlflow:  the MLflow tracking server's backend store (--backend-store-uri).
CREATE DATABASE prefect;
CREATE DATABASE mlflow;
