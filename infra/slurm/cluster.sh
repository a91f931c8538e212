#!/usr/bin/env bash
# A real Slurm cluster on this host: munged, slurmctld and one slurmd per node (multiple-slurmd, each on its own
# port), all state under the repo's .slurm/ (git-ignored). `make slurm-up` / `make slurm-down` call this.
#   infra/slurm/cluster.sh up      install slurm-wlm + munge if missing (apt-get), render the config, start;
#                                  a no-op when the cluster already answers
#   infra/slurm/cluster.sh down    stop every daemon it started (pid files under .slurm/run), wait until gone
#   infra/slurm/cluster.sh status  exit 0 when the controller answers and every node is idle or allocated
# Clients need SLURM_CONF=$PWD/.slurm/etc/slurm.conf (infra/slurm/env.sh prints the export).
# Settings: SLURM_NODES (3), SLURM_CPUS (this host's cpu count), SLURM_CTLD_PORT (16817; node K listens on
# SLURM_CTLD_PORT + K), SLURM_PARTITION (debug).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/../.." && pwd)
STATE=${ZAYA_SLURM_STATE:-$REPO/.slurm}
CONF=$STATE/etc/slurm.conf
NODES=${SLURM_NODES:-3}
CPUS=${SLURM_CPUS:-$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)}  # nproc obeys OMP_NUM_THREADS (tests set 1)
CTLD_PORT=${SLURM_CTLD_PORT:-16817}
PARTITION=${SLURM_PARTITION:-debug}
export SLURM_CONF=$CONF

say() { echo "slurm: $*"; }
die() { echo "slurm: error: $*" >&2; exit 1; }

node_names() { for k in $(seq 1 "$NODES"); do echo "zaya-n$k"; done; }

install_packages() {
  local missing=
  for tool in slurmctld slurmd sinfo munged; do command -v "$tool" >/dev/null 2>&1 || missing=1; done
  [[ -z "$missing" ]] && return 0
  local sudo=; [[ "$(id -u)" = 0 ]] || sudo=sudo
  say "installing slurm-wlm and munge (apt-get)"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge >/dev/null
}

render_config() {
  mkdir -p "$STATE"/{etc,state,spool,run,log,munge}
  chmod 700 "$STATE/munge"
  local nodes= k=1 port mem
  mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / NODES / 2 ))
  for name in $(node_names); do
    port=$((CTLD_PORT + k))
    # Weight=K: jobs get the lowest-numbered free nodes first (tests rely on which node a job lands on).
    nodes+="NodeName=$name NodeHostname=$(hostname) NodeAddr=127.0.0.1 Port=$port CPUs=$CPUS RealMemory=$mem Weight=$k State=UNKNOWN"$'\n'
    k=$((k + 1))
  done
  # A running controller keeps the config it started with: a slurmd (re)started beside it must read the same
  # (another environment, e.g. other SLURM_CPUS, would give it a config the controller refuses: state INVAL).
  if alive "$STATE/run/slurmctld.pid" && [[ -s "$CONF" ]]; then return 0; fi
  local tmp=$CONF.tmp
  sed -e "s|@HOST@|$(hostname)|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@USER@|$(id -un)|g" \
      -e "s|@STATE@|$STATE|g" -e "s|@PARTITION@|$PARTITION|g" "$REPO/infra/slurm/slurm.conf.in" \
    | awk -v nodes="$nodes" '{ if ($0 == "@NODES@") printf "%s", nodes; else print }' >"$tmp"
  mv "$tmp" "$CONF"
  [[ -s "$STATE/munge/munge.key" ]] || { dd if=/dev/urandom bs=1 count=1024 of="$STATE/munge/munge.key" 2>/dev/null; chmod 400 "$STATE/munge/munge.key"; }
}

alive() { [[ -s "$1" ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

answers() { alive "$STATE/run/slurmctld.pid" && timeout 10 scontrol ping 2>/dev/null | grep -q UP; }

all_nodes_up() {
  local states
  states=$(timeout 10 sinfo -h -N -o '%T' 2>/dev/null) || return 1
  [[ -n "$states" ]] && ! grep -q -v -E '^(idle|allocated|mixed|completing|draining|drained)' <<<"$states"
}

up() {
  if answers && all_nodes_up; then say "already up ($NODES nodes; export SLURM_CONF=$CONF)"; return 0; fi
  install_packages
  render_config
  alive "$STATE/run/munged.pid" || munged --key-file="$STATE/munge/munge.key" --socket="$STATE/munge/munge.socket.2" \
    --pid-file="$STATE/run/munged.pid" --log-file="$STATE/log/munged.log" --seed-file="$STATE/munge/munged.seed" \
    --force
  alive "$STATE/run/slurmctld.pid" || slurmctld -f "$CONF"
  for name in $(node_names); do
    mkdir -p "$STATE/spool/$name"
    alive "$STATE/run/slurmd-$name.pid" || slurmd -f "$CONF" -N "$name"
  done
  local deadline=$((SECONDS + 60))
  until answers && all_nodes_up; do
    (( SECONDS < deadline )) || die "the cluster did not come up in 60 s; logs: $STATE/log/"
    sleep 1
  done
  # Nodes a previous session drained come back (the drain is a per-run decision, not the host's state).
  local drained; drained=$(sinfo -h -N -t drain,drained,draining -o '%N' | sort -u | paste -sd,)
  [[ -z "$drained" ]] || scontrol update nodename="$drained" state=resume
  say "up: $NODES nodes x $CPUS cpus, partition $PARTITION; export SLURM_CONF=$CONF"
}

down() {
  local pids=() f
  for f in "$STATE"/run/slurmd-*.pid "$STATE/run/slurmctld.pid" "$STATE/run/munged.pid"; do
    alive "$f" && pids+=("$(cat "$f")")
  done
  # Jobs first, so no slurmstepd is left behind by its slurmd.
  [[ ${#pids[@]} -gt 0 ]] && answers && timeout 10 scancel --full --quiet --user="$(id -un)" 2>/dev/null || true
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  local deadline=$((SECONDS + 30))
  for pid in "${pids[@]}"; do
    while kill -0 "$pid" 2>/dev/null; do
      (( SECONDS < deadline )) || { kill -9 "$pid" 2>/dev/null || true; break; }
      sleep 0.2
    done
  done
  rm -f "$STATE"/run/*.pid
  say "down (${#pids[@]} daemons stopped)"
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  status) answers && all_nodes_up ;;
  *) die "usage: $0 up|down|status" ;;
esac
