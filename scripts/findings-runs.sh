#!/usr/bin/env bash
# The runs behind docs/findings.md, planned for a 2-core machine: two
# streams of `wm run`, one process per core (GOMAXPROCS=1), each command
# with --resume, so that the script can be started again after a crash, a
# reboot or the end of a session and continues where it stopped (a finished
# arm is reused, an unfinished one resumes from its checkpoint).
#
#   scripts/findings-runs.sh [RESULTS]        # default results/
#   scripts/findings-runs.sh results status   # what is finished so far
#
# Every arm searches its learning rate on the definition's grid (seed 0 at
# each rate), then runs 3 seeds at the best rate on validation, and 5 when
# its test measure varies by more than 3% of its mean over the first 3.
# When both streams are done it rebuilds the tables, exports the results
# without checkpoints to docs/results and writes docs/findings.md.
#
# Wall times measured on this machine are in docs/findings.md's notes and
# the README; the plan in stream order:
#   stream 1: mqar small (6 arms), table3 small (4), table2 small (6),
#             table1 small's IFA rows (7), then table1 medium
#   stream 2: extrapolation small (4), table1 small's QCAtn, SSD and
#             SSD+QCAtn rows (10), ssdlong small (6), then table1 medium
# table1 medium runs its SSD rows one arm at a time, taken from a shared
# queue by whichever stream is free (the three rows the scale trend reads
# first), and searches the rates around small's choices (3e-3, 1e-2; an
# edge choice extends the grid by a factor of 3.33, as at small).
# Measured here (2 cores, OpenBLAS build, the two streams side by side):
# mqar 51 min, extrapolation 72 min (CoCA's 16x evaluation dominates),
# table3 13 min, table2 34 min.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-results}
mkdir -p "$out/logs"
wm=$out/wm
go build -tags openblas -o "$wm" ./cmd/wm 2>/dev/null || go build -o "$wm" ./cmd/wm || exit 1

if [ "${2:-}" = status ]; then
	find "$out" -name result.json | sed "s|^$out/||; s|/result.json$||" | awk -F/ '{print $1"/"$2}' | sort | uniq -c
	exit 0
fi

run() { # NAME PRESET [more flags]
	local name=$1 preset=$2
	shift 2
	echo "$(date -u +%FT%TZ) start $name $preset $*"
	GOMAXPROCS=1 "$wm" run "$name" --preset "$preset" --out "$out" --seeds 3 --noisy-seeds 5 --resume "$@" \
		>>"$out/logs/$name-$preset.md" 2>>"$out/logs/$name-$preset.log"
	echo "$(date -u +%FT%TZ) end $name $preset (exit $?)"
}

# table1 at small in two halves (the IFA rows cost more per step).
small1=ssd-ifa.conv1d-D,ssd-ifa.a_t,ssd-ifa.rope,ssd-ifa-dm.conv1d-D,ssd-ifa-dm.a_t,ssd-ifa-dm.rope,ssd-ifa-doge.rope
small2=qcatn.rope,ssd.conv1d-D,ssd.a_t,ssd.rope,ssd.d-only,ssd.conv-only,ssd.rope-only,ssd-qcatn.conv1d-D,ssd-qcatn.a_t,ssd-qcatn.rope
# table1's SSD rows at medium, in order of need: the scale trend compares
# RoPE with a_t and with Conv1d+D.
medium="ssd.rope ssd.a_t ssd.conv1d-D ssd.d-only ssd.conv-only ssd.rope-only"
mediumgrid=0.003,0.01
# A stream claims a medium arm by making its folder here (mkdir is atomic);
# the folder is per invocation, so a restarted script claims afresh.
claims=$(mktemp -d "$out/logs/claims.XXXXXX")
medium_queue() {
	for arm in $medium; do
		if mkdir "$claims/$arm" 2>/dev/null; then
			run table1 medium --arms "$arm" --lr-grid "$mediumgrid"
		fi
	done
}

(
	run mqar small
	run table3 small
	run table2 small
	run table1 small --arms "$small1"
	medium_queue
) >>"$out/logs/stream1.log" 2>&1 &
(
	run extrapolation small
	run table1 small --arms "$small2"
	run ssdlong small
	medium_queue
) >>"$out/logs/stream2.log" 2>&1 &
wait
rm -r "$claims"

"$wm" report "$out" >/dev/null
"$wm" export "$out" docs/results
"$wm" findings docs/results --out docs/findings.md --readme README.md
