#!/usr/bin/env bash
# Runs `wm bench ARGS --resume` until it finishes, waiting between tries
# while the host's speed is off the report's: wm bench exits 3 when
# --host-like stopped it (at the start, or part-way with its finished
# rounds kept in the journal), and this script then sleeps and runs the
# same command again, so a long run is finished across the spells a shared
# machine runs at the report's speed. Any other exit status ends the
# script with it.
#
#   scripts/bench-until-done.sh WM ARGS...
#   scripts/bench-until-done.sh /tmp/wm --reps 8 --rounds 5 --host-like docs/bench.md --out /tmp/b/bench.md
#
# WM: the wm binary (keep the same one: a journal is resumed only by the
# build that wrote it). ARGS: wm bench's flags, with --host-like and --out.
# Environment: WAIT (seconds between tries, default 600), TRIES (default
# 100), HOLD (a file: while it exists no try starts, so that the machine
# can be used between tries without disturbing a round; a try already
# running is not stopped: `touch HOLD`, then wait for wm bench to exit
# before starting other work, and remove HOLD when done).
set -uo pipefail
wm=${1:?usage: bench-until-done.sh WM ARGS...}
shift
wait=${WAIT:-600}
tries=${TRIES:-100}
hold=${HOLD:-}
for ((i = 1; i <= tries; i++)); do
	if [[ -n $hold && -e $hold ]]; then
		echo "bench-until-done: holding while $hold exists ($(date -u +%H:%M:%S))" >&2
		while [[ -e $hold ]]; do sleep 1; done
	fi
	echo "bench-until-done: try $i at $(date -u +%H:%M:%S)" >&2
	"$wm" bench "$@" --resume
	rc=$?
	[[ $rc -eq 3 ]] || exit $rc
	sleep "$wait"
done
echo "bench-until-done: the host stayed off the report's speed for $tries tries" >&2
exit 3
