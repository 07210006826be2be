#!/bin/bash
# Slurm epilog: stop this job's tripcap; SIGTERM makes it close and write open captures first.
# TRIPCAP_RUN_DIR moves the pid file as in the prolog.
set -u
: "${SLURM_JOB_ID:?the epilog needs SLURM_JOB_ID}"
pidfile="${TRIPCAP_RUN_DIR:-/run}/tripcap-$SLURM_JOB_ID.pid"
[ -f "$pidfile" ] || exit 0
pid=$(cat "$pidfile")
kill -TERM "$pid" 2>/dev/null
for _ in $(seq 1 60); do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
rm -f "$pidfile"
exit 0
