#!/usr/bin/env bash
# A/B timing of one benchmark: the working tree against a git revision,
# their test binaries run in turns so that the machine's drift falls on
# both. Prints every run's ns/op and each side's median.
#
#   scripts/ab.sh REV BENCH [CPUS] [RUNS]
#   scripts/ab.sh HEAD 'TrainStep/\(SM\)4/64x256x8/shards=1' 0 5
#
# REV: a commit (the baseline). BENCH: a -test.bench regular expression
# (never '|' together with '/': Go then matches nothing). CPUS: the cores
# to pin to with taskset (default 0; GOMAXPROCS is set to their count).
# RUNS: alternations (default 5). Environment: PKG (default
# ./experiments/train; ./ops for op benchmarks), BT (-test.benchtime,
# default 20x), TAGS (default openblas), PAIRED. OpenBLAS's kernels are
# what the environment gives (OPENBLAS_CORETYPE; `wm info` names them).
#
# PAIRED=1 runs the two binaries at the same time instead of in turns, one
# on each of the two cores CPUS names (e.g. 0,1), each on one thread
# (GOMAXPROCS=1), and swaps the cores every run; it prints each run's ratio
# and their geometric mean. A swing of the host's speed within a minute (a
# neighbour's load) then falls on both sides of a pair, though not exactly
# alike (an A/A run read 0.98-1.11 a pair: read six pairs as good to about
# 3%), and the swap cancels a difference between the two cores (one core
# ran 20-60% slower than the other for minutes at a time). Use an even
# RUNS. Both sides share the memory bus and the L3, so this measures
# one-core work as it runs beside other work, the way two shards run.
set -euo pipefail
rev=${1:?usage: ab.sh REV BENCH [CPUS] [RUNS]}
bench=${2:?usage: ab.sh REV BENCH [CPUS] [RUNS]}
cpus=${3:-0}
runs=${4:-5}
pkg=${PKG:-./experiments/train}
bt=${BT:-20x}
tags=${TAGS:-openblas}
procs=$(awk -F, '{print NF}' <<<"$cpus")
if [[ ${PAIRED:-0} == 1 ]]; then
	IFS=, read -r c0 c1 rest <<<"$cpus"
	[[ -n ${c0:-} && -n ${c1:-} && -z ${rest:-} ]] || { echo "ab.sh: PAIRED=1 needs two cores in CPUS (e.g. 0,1), got '$cpus'" >&2; exit 2; }
fi
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$work/base" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
git -C "$root" worktree add --detach "$work/base" "$rev" >/dev/null
(cd "$work/base" && go test -tags "$tags" -c -o "$work/a.test" "$pkg")
(cd "$root" && go test -tags "$tags" -c -o "$work/b.test" "$pkg")
run() { # binary -> ns/op
	GOMAXPROCS=$procs taskset -c "$cpus" "$1" -test.run '^$' -test.bench "$bench" -test.benchtime "$bt" 2>&1 |
		awk '/ns\/op/ {for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") print $i}' | head -1
}
declare -a A B
if [[ ${PAIRED:-0} == 1 ]]; then
	procs=1
	wins=0
	for ((i = 1; i <= runs; i++)); do
		if ((i % 2)); then ca=$c0 cb=$c1; else ca=$c1 cb=$c0; fi
		cpus=$ca run "$work/a.test" >"$work/a.out" &
		pid=$!
		b=$(cpus=$cb run "$work/b.test")
		wait "$pid"
		a=$(<"$work/a.out")
		[[ -n $a && -n $b ]] || { echo "ab.sh: the benchmark $bench printed no ns/op" >&2; exit 1; }
		A+=("$a"); B+=("$b")
		awk -v a="$a" -v b="$b" 'BEGIN {exit !(b < a)}' && wins=$((wins + 1))
		awk -v i="$i" -v r="$rev" -v a="$a" -v b="$b" -v ca="$ca" -v cb="$cb" \
			'BEGIN {printf "run %d: %s %.4g ms (core %s)   working tree %.4g ms (core %s)   ratio %.4f\n", i, r, a/1e6, ca, b/1e6, cb, b/a}'
	done
	printf '%s\n' "${A[@]}" "${B[@]}" | awk -v n="$runs" -v w="$wins" -v r="$rev" \
		'{v[NR] = $1} END {for (i = 1; i <= n; i++) s += log(v[n+i] / v[i]); g = exp(s / n);
		printf "geometric mean of the ratios: working tree / %s = %.4f (%+.1f%%), working tree faster in %d of %d runs\n", r, g, (g-1)*100, w, n}'
	exit 0
fi
for ((i = 1; i <= runs; i++)); do
	a=$(run "$work/a.test"); b=$(run "$work/b.test")
	[[ -n $a && -n $b ]] || { echo "ab.sh: the benchmark $bench printed no ns/op" >&2; exit 1; }
	A+=("$a"); B+=("$b")
	awk -v i="$i" -v r="$rev" -v a="$a" -v b="$b" 'BEGIN {printf "run %d: %s %.4g ms   working tree %.4g ms\n", i, r, a/1e6, b/1e6}'
done
median() { printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2}'; }
ma=$(median "${A[@]}"); mb=$(median "${B[@]}")
awk -v r="$rev" -v a="$ma" -v b="$mb" 'BEGIN {printf "median: %s %.4g ms, working tree %.4g ms (%+.1f%%)\n", r, a/1e6, b/1e6, (b/a-1)*100}'
