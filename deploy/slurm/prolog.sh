#!/bin/bash
# Slurm prolog (PrologFlags=Alloc): start tripcap for this job on this node, following the job's
# NCCL debug files (set NCCL_DEBUG=WARN NCCL_DEBUG_FILE=/var/log/nccl/$SLURM_JOB_ID.%h.%p.log).
set -u
ifaces=${TRIPCAP_INTERFACES:-$(ls /sys/class/infiniband/*/device/net 2>/dev/null | grep -v : | sort -u | tr '\n' ' ')}
args=()
for i in $ifaces; do args+=(-i "$i"); done
[ ${#args[@]} -gt 0 ] || exit 0
mkdir -p /var/log/nccl /var/lib/tripcap/"$SLURM_JOB_ID"
nohup /usr/local/bin/tripcap run "${args[@]}" --config /etc/tripcap/tripcap.toml \
  --log "/var/log/nccl/$SLURM_JOB_ID.*.log" -o /var/lib/tripcap/"$SLURM_JOB_ID" \
  >/var/log/tripcap-"$SLURM_JOB_ID".log 2>&1 &
echo $! > /run/tripcap-"$SLURM_JOB_ID".pid
exit 0
