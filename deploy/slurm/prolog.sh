#!/bin/bash
# Slurm prolog (PrologFlags=Alloc): start tripcap for this job on this node, following the job's
# NCCL debug files (set NCCL_DEBUG=WARN NCCL_DEBUG_FILE=/var/log/nccl/$SLURM_JOB_ID.%h.%p.log).
# One agent per job and node: a second prolog for a job whose agent still runs starts nothing.
# The paths can be moved with TRIPCAP_BIN, TRIPCAP_CONFIG, TRIPCAP_RUN_DIR, TRIPCAP_STATE_DIR and
# TRIPCAP_NCCL_LOG_DIR (defaults below); TRIPCAP_NATS turns on the fleet (see below).
set -u
: "${SLURM_JOB_ID:?the prolog needs SLURM_JOB_ID}"
bin=${TRIPCAP_BIN:-/usr/local/bin/tripcap}
config=${TRIPCAP_CONFIG:-/etc/tripcap/tripcap.toml}
run_dir=${TRIPCAP_RUN_DIR:-/run}
state_dir=${TRIPCAP_STATE_DIR:-/var/lib/tripcap}
nccl_dir=${TRIPCAP_NCCL_LOG_DIR:-/var/log/nccl}
pidfile="$run_dir/tripcap-$SLURM_JOB_ID.pid"

if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "tripcap: an agent for job $SLURM_JOB_ID already runs (pid $(cat "$pidfile")): not starting a second" >&2
  exit 0
fi
ifaces=${TRIPCAP_INTERFACES:-$(ls /sys/class/infiniband/*/device/net 2>/dev/null | grep -v : | sort -u | tr '\n' ' ')}
args=()
for i in $ifaces; do args+=(-i "$i"); done
[ ${#args[@]} -gt 0 ] || exit 0
# With TRIPCAP_NATS (nats://HOST:4222), the job's agents share incidents: a failure seen by
# one node is captured by all of them under one incident id (README, "Fleet"). The
# credential, if any, comes from [fleet] in the config (token = "${TRIPCAP_NATS_TOKEN}").
[ -z "${TRIPCAP_NATS:-}" ] || args+=(--nats "$TRIPCAP_NATS" --job "$SLURM_JOB_ID")
mkdir -p "$nccl_dir" "$state_dir/$SLURM_JOB_ID"
# SLURM_JOB_ID goes into the agent's environment: it names the job its captures belong to.
SLURM_JOB_ID="$SLURM_JOB_ID" nohup "$bin" run "${args[@]}" --config "$config" \
  --log "$nccl_dir/$SLURM_JOB_ID.*.log" -o "$state_dir/$SLURM_JOB_ID" \
  >"$state_dir/tripcap-$SLURM_JOB_ID.log" 2>&1 &
echo $! > "$pidfile"
exit 0
