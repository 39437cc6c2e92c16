#!/usr/bin/env bash
# Starts a one-node Slurm cluster on this machine (loopback only) for the
# sweep test: Debian's slurmd, slurmctld, slurm-client and munge, installed
# when missing. Idempotent: a cluster it started before is reused. Needs
# root (or sudo). Prints "slurm ready" when sinfo shows the node idle.
# `slurm-local.sh stop` stops the daemons it started (only with its config).
set -euo pipefail
SUDO=; [ "$(id -u)" = 0 ] || SUDO=sudo
marker="# written by wonderful-matrices-go scripts/slurm-local.sh"
if [ "${1:-}" = stop ]; then
	if grep -qF "$marker" /etc/slurm/slurm.conf 2>/dev/null; then
		for d in slurmd slurmctld munged; do
			$SUDO pkill -x "$d" || true
			for _ in $(seq 1 30); do pgrep -x "$d" >/dev/null || break; sleep 1; done
		done
		echo "slurm stopped"
	fi
	exit 0
fi
if ! command -v sbatch >/dev/null || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
	echo "installing slurmd slurmctld slurm-client munge"
	$SUDO apt-get update -qq
	$SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurmd slurmctld slurm-client munge >/dev/null
fi
conf=/etc/slurm/slurm.conf
if [ -f "$conf" ] && ! grep -qF "$marker" "$conf"; then
	echo "$conf exists and is not ours: not touching a real cluster's config" >&2
	exit 1
fi
cpus=$(nproc)
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
$SUDO mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/munge
$SUDO tee "$conf" >/dev/null <<CONF
$marker
ClusterName=wmlocal
SlurmctldHost=localhost
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
SlurmdTimeout=60
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=local Nodes=localhost Default=YES MaxTime=INFINITE State=UP
CONF
if ! pgrep -x munged >/dev/null; then
	$SUDO chown munge:munge /run/munge
	$SUDO runuser -u munge -- /usr/sbin/munged
fi
pgrep -x slurmctld >/dev/null || $SUDO /usr/sbin/slurmctld
pgrep -x slurmd >/dev/null || $SUDO /usr/sbin/slurmd -N localhost
for _ in $(seq 1 60); do
	if timeout 5 sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
		echo "slurm ready: $(sinfo -h -o '%P %D %T')"
		exit 0
	fi
	sleep 1
done
echo "slurm did not come up; sinfo says:" >&2
timeout 5 sinfo >&2 || true
tail -n 20 /var/log/slurm/slurmctld.log /var/log/slurm/slurmd.log >&2 || true
exit 1
