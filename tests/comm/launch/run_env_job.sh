#!/usr/bin/env bash
# Starts N processes of a program the way a launcher does — sfrun's variables (SF_RANK,
# SF_WORLD_SIZE, SF_LOCAL_RANK, SF_RENDEZVOUS, SF_JOB_SECRET) or Slurm's (SLURM_PROCID,
# SLURM_NTASKS, SLURM_LOCALID, with the rendezvous in SF_RENDEZVOUS) — and fails unless every
# process exits 0 within a hard timeout.
#   run_env_job.sh sfrun|slurm N TIMEOUT_S PROGRAM ARGS...
set -u
kind=$1 n=$2 limit=$3
shift 3
dir=$(mktemp -d)
trap 'kill -9 $(jobs -p) 2>/dev/null; rm -rf "$dir"' EXIT
secret=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
pids=()
for ((r = 0; r < n; r++)); do
  if [[ $kind == sfrun ]]; then
    env SF_RANK=$r SF_WORLD_SIZE=$n SF_LOCAL_RANK=$r SF_RENDEZVOUS="ipc://$dir/rendezvous" SF_JOB_SECRET=$secret \
      timeout -s KILL "$limit" "$@" &
  else
    env SLURM_PROCID=$r SLURM_NTASKS=$n SLURM_LOCALID=$r SF_RENDEZVOUS="ipc://$dir/rendezvous" \
      SF_JOB_SECRET=$secret timeout -s KILL "$limit" "$@" &
  fi
  pids+=($!)
done
status=0
for r in "${!pids[@]}"; do
  if ! wait "${pids[$r]}"; then
    echo "rank $r failed" >&2
    status=1
  fi
done
exit $status
