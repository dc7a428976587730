#!/bin/sh
# Run once by the postgres image on a fresh data volume (docker-entrypoint-initdb.d), see compose.yml:
# the `contracts` role and database (ours; n8n's own is POSTGRES_DB=n8n) and, as the superuser, the two
# extensions our migrations create (pgcrypto, vector), so `migrate` can run as `contracts`.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
	-v pw="$CONTRACTS_PASSWORD" <<-'EOSQL'
	CREATE ROLE contracts LOGIN PASSWORD :'pw';
	CREATE DATABASE contracts OWNER contracts;
	\connect contracts
	CREATE EXTENSION IF NOT EXISTS pgcrypto;
	CREATE EXTENSION IF NOT EXISTS vector;
EOSQL
