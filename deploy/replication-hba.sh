#!/bin/sh
# Run once by the postgres image when it initializes the primary (docker-compose.replica.yml):
# replication connections with a password, as the image allows ordinary ones.
echo "host replication all all scram-sha-256" >> "$PGDATA/pg_hba.conf"
