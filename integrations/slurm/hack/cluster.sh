#!/usr/bin/env bash
# A one-node Slurm cluster on loopback, for the tests and for an admin trying gpuslice:
# Debian's Slurm 22.05 (slurmctld, slurmd) and munge, started without systemd, as root.
#
#   cluster.sh up     installs the packages if missing (scripts/deps.sh), writes a munge key,
#                     slurm.conf, gres.conf and plugstack.conf in $GS_SLURM_DIR, makes fake GPU
#                     device files there (char 195,N, as /dev/nvidiaN), starts munged (as the
#                     munge user), `slurmctld -D -i` and `slurmd -D`, waits until the node is
#                     idle, and prints `export SLURM_CONF=PATH` as its last line (everything
#                     else goes to stderr), so that `eval "$(cluster.sh up)"` works.
#   cluster.sh down   cancels the jobs left, stops exactly the daemons `up` started (their pids
#                     are in $GS_SLURM_DIR) and removes the directory.
#
# Settings (environment):
#   GS_SLURM_DIR      where everything lives (default /tmp/gpuslice-slurm); it must be
#                     reachable by the munge user, so not under a 0700 directory
#   GS_SLURM_PLUGIN   the SPANK plugin to put in plugstack.conf (default build/lib/gpuslice_spank.so
#                     under the repository, when it exists; "none" for no plugin)
#   GS_SLURM_GPUS     fake GPUs on the node (default 2); GS_SLURM_SHARDS shards per GPU (default 4),
#                     which plugstack.conf also tells the plugin (shards_per_gpu=N)
#   GS_SLURM_CPUS     the CPUs slurm.conf gives the node (default nproc; more than the machine
#                     has is allowed, SlurmdParameters=config_overrides), so that more jobs than
#                     cores can run at once
#   GS_SLURM_CTLD_PORT, GS_SLURMD_PORT   the daemons' ports (default 6817, 6818)
#   GS_SLURM_TIMEOUT  seconds to wait for the node to come up (default 60)
#
# Accounting is the job completion log only (jobcomp/filetxt): `sacct -c` reads it.
# No cgroups: proctrack/linuxproc and task/none, which work in a container without systemd.
set -euo pipefail

REPO="$(cd "$(dirname "$0")/../../.." && pwd)"
DIR="${GS_SLURM_DIR:-/tmp/gpuslice-slurm}"
GPUS="${GS_SLURM_GPUS:-2}"
SHARDS="${GS_SLURM_SHARDS:-4}"
CPUS="${GS_SLURM_CPUS:-$(nproc)}"
CTLD_PORT="${GS_SLURM_CTLD_PORT:-6817}"
SLURMD_PORT="${GS_SLURMD_PORT:-6818}"
TIMEOUT="${GS_SLURM_TIMEOUT:-60}"
PLUGIN="${GS_SLURM_PLUGIN:-$REPO/build/lib/gpuslice_spank.so}"
NODE="$(hostname -s)"

say() { echo "cluster.sh: $*" >&2; }
die() {
  say "$*"
  exit 1
}

whole() {
  [[ "$2" =~ ^[0-9]+$ ]] || die "$1: '$2' is not a whole number"
}

check_settings() {
  case "$DIR" in
    /*) ;;
    *) die "GS_SLURM_DIR: '$DIR' is not an absolute path" ;;
  esac
  [ "$DIR" != / ] || die "GS_SLURM_DIR: '/' is not a directory this script may remove"
  whole GS_SLURM_GPUS "$GPUS"
  whole GS_SLURM_SHARDS "$SHARDS"
  whole GS_SLURM_CPUS "$CPUS"
  [ "$SHARDS" -ge 1 ] || die "GS_SLURM_SHARDS: '$SHARDS' is not at least 1"
  [ "$CPUS" -ge 1 ] || die "GS_SLURM_CPUS: '$CPUS' is not at least 1"
  whole GS_SLURM_CTLD_PORT "$CTLD_PORT"
  whole GS_SLURMD_PORT "$SLURMD_PORT"
  whole GS_SLURM_TIMEOUT "$TIMEOUT"
  [ "$GPUS" -ge 1 ] && [ "$GPUS" -le 64 ] || die "GS_SLURM_GPUS: '$GPUS' is not in 1..64"
  [ "$(id -u)" -eq 0 ] || die "must run as root (the daemons run as root, munged as munge)"
}

# The pid recorded in $DIR/<name>.pid, if that process is still the program it was.
live_pid() {
  local name="$1" prog="$2" pid
  [ -r "$DIR/$name.pid" ] || return 1
  pid="$(tr -dc 0-9 <"$DIR/$name.pid")"
  [ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q "$prog" || return 1
  echo "$pid"
}

stop_one() {
  local name="$1" prog="$2" pid i
  pid="$(live_pid "$name" "$prog")" || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 100); do
    [ -d "/proc/$pid" ] || return 0
    sleep 0.1
  done
  say "$name (pid $pid) did not stop on SIGTERM in 10 s; killing it"
  kill -KILL "$pid" 2>/dev/null || true
}

down() {
  [ -d "$DIR" ] || return 0
  if [ -r "$DIR/slurm.conf" ] && live_pid slurmctld slurmctld >/dev/null; then
    # Jobs first, so that no slurmstepd outlives the cluster.
    SLURM_CONF="$DIR/slurm.conf" scancel --full --quiet --user=root 2>/dev/null || true
    local i
    for i in $(seq 1 50); do
      [ -z "$(SLURM_CONF="$DIR/slurm.conf" squeue -h -o %i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  stop_one slurmd slurmd
  stop_one slurmctld slurmctld
  stop_one munge/munged munged
  rm -rf "$DIR"
}

write_munge_key() {
  install -d -o munge -g munge -m 0755 "$DIR/munge"
  dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  chown munge:munge "$DIR/munge/munge.key"
  chmod 0400 "$DIR/munge/munge.key"
}

# The gres.conf lines are the ones `gpuslice slurm gres --dev-dir $DIR/dev` prints for as many
# GPUs (test_gpuslice_slurm_gres_prints_what_cluster_sh_writes checks that they agree).
write_gres() {
  local i last=$((GPUS - 1))
  install -d -m 0755 "$DIR/dev"
  {
    echo "# Fake GPUs: device files made by cluster.sh (char 195,N), nothing behind them."
    echo "AutoDetect=off"
    for i in $(seq 0 "$last"); do
      mknod -m 0666 "$DIR/dev/nvidia$i" c 195 "$i"
      echo "NodeName=$NODE Name=gpu File=$DIR/dev/nvidia$i"
    done
    echo "NodeName=$NODE Name=shard Count=$((GPUS * SHARDS))"
  } >"$DIR/gres.conf"
}

write_plugstack() {
  if [ "$PLUGIN" != none ] && [ -e "$PLUGIN" ]; then
    echo "required $PLUGIN shards_per_gpu=$SHARDS" >"$DIR/plugstack.conf"
  else
    [ "$PLUGIN" = none ] || say "no SPANK plugin at $PLUGIN: plugstack.conf is empty"
    : >"$DIR/plugstack.conf"
  fi
}

write_slurm_conf() {
  local mem
  mem="$(awk '/^MemTotal:/ { print int($2 / 1024 / 2) }' /proc/meminfo)"
  install -d -m 0755 "$DIR/ctld" "$DIR/slurmd" "$DIR/log"
  cat >"$DIR/slurm.conf" <<EOF
# Written by integrations/slurm/hack/cluster.sh: a one-node cluster on loopback.
ClusterName=gpuslice
SlurmctldHost=$NODE(127.0.0.1)
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$DIR/munge/munge.socket
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/slurmd
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/log/jobcomp.log
MpiDefault=none
SwitchType=switch/none
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
ReturnToService=2
GresTypes=gpu,shard
PlugStackConfig=$DIR/plugstack.conf
MinJobAge=2
KillWait=5
NodeName=$NODE NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$mem Gres=gpu:$GPUS,shard:$((GPUS * SHARDS)) State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
  # slurmd reads gres.conf and cgroup.conf beside slurm.conf. No plugin here uses cgroups
  # (proctrack/linuxproc, task/none), but slurmd 22.05 loads a cgroup plugin all the same and
  # knows no "disabled" (that came in 23.02): it picks v1 or v2 from what is mounted. On v2,
  # IgnoreSystemd makes it create its scope itself instead of asking systemd over D-Bus.
  cat >"$DIR/cgroup.conf" <<EOF
CgroupPlugin=autodetect
IgnoreSystemd=yes
EOF
}

show_logs() {
  local f
  for f in "$DIR"/log/*.log "$DIR"/munge/munged.log; do
    [ -r "$f" ] || continue
    echo "----- $f (last 30 lines)" >&2
    tail -n 30 "$f" >&2
  done
}

fail_up() {
  say "$*"
  show_logs
  down
  exit 1
}

wait_for() {
  local what="$1" i
  shift
  for i in $(seq 1 $((TIMEOUT * 5))); do
    if "$@" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  fail_up "timed out after $TIMEOUT s waiting for $what"
}

node_idle() {
  [ "$(SLURM_CONF="$DIR/slurm.conf" sinfo -h -N -n "$NODE" -o %t 2>/dev/null)" = idle ]
}

up() {
  command -v slurmctld >/dev/null && command -v munged >/dev/null || {
    say "installing the packages (scripts/deps.sh)"
    # shellcheck source=../../../scripts/deps.sh
    source "$REPO/scripts/deps.sh" >&2
  }
  down
  install -d -m 0755 "$DIR"
  write_munge_key
  write_gres
  write_plugstack
  write_slurm_conf

  setpriv --reuid=munge --regid=munge --init-groups \
    munged --socket="$DIR/munge/munge.socket" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/munge/munged.log" \
    --seed-file="$DIR/munge/munged.seed" >&2 2>"$DIR/log/munged.err" ||
    fail_up "munged did not start: $(cat "$DIR/log/munged.err")"
  wait_for "munge" sh -c "munge -n -S '$DIR/munge/munge.socket' | unmunge -S '$DIR/munge/munge.socket'"

  export SLURM_CONF="$DIR/slurm.conf"
  setsid slurmctld -D -i -f "$SLURM_CONF" </dev/null >"$DIR/log/slurmctld.out" 2>&1 &
  echo $! >"$DIR/slurmctld.pid"
  wait_for "slurmctld" scontrol ping
  setsid slurmd -D -f "$SLURM_CONF" </dev/null >"$DIR/log/slurmd.out" 2>&1 &
  echo $! >"$DIR/slurmd.pid"
  wait_for "node $NODE to be idle" node_idle
  say "up: node $NODE idle, $GPUS fake GPUs, $((GPUS * SHARDS)) shards, logs in $DIR/log"
  echo "export SLURM_CONF=$SLURM_CONF"
}

check_settings
case "${1:-}" in
  up) up ;;
  down) down ;;
  *)
    echo "usage: cluster.sh up|down" >&2
    exit 2
    ;;
esac
