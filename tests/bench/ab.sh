#!/usr/bin/env bash
# Two amf_bench binaries (say the code an issue measured and the code now) run in turn, ROUNDS
# times, each round both back to back in alternating order; for each case prints the best run
# of each (MB/s), the ratio of the bests and the median of the per-round ratios B / A. On a
# shared machine whose speed drifts within minutes, these ratios last where MB/s do not.
#   tests/bench/ab.sh A_BINARY B_BINARY [ROUNDS] [FILTER]
# e.g. git worktree add /tmp/before dc597f6, build its amf_bench as the README's Codec section
# says, then: tests/bench/ab.sh /tmp/before/build/tests/bench/amf_bench \
#   build/bench/tests/bench/amf_bench 12 'code/W[134]'
set -euo pipefail
[ $# -ge 2 ] || { sed -n '2,9p' "$0" >&2; exit 2; }
a=$1 b=$2 rounds=${3:-12} filter=${4:-code/W}

run() {  # run BINARY LABEL ROUND: "round label case MB/s" lines
  "$1" --benchmark_filter="$filter" --benchmark_min_time=0.3 --benchmark_format=csv 2>/dev/null |
    awk -F, -v l="$2" -v r="$3" 'NR > 1 && $1 !~ /memcpy/ { gsub(/"/, "", $1); print r, l, $1, $6 / 1e6 }'
}

for r in $(seq "$rounds"); do
  if ((r % 2)); then run "$a" A "$r"; run "$b" B "$r"; else run "$b" B "$r"; run "$a" A "$r"; fi
done | awk '
  { v[$1 " " $2 " " $3] = $4; cases[$3] = 1; rounds[$1] = 1
    if ($4 > best[$2 " " $3]) best[$2 " " $3] = $4 }
  END {
    for (c in cases) {
      n = 0
      for (r in rounds) q[++n] = v[r " B " c] / v[r " A " c]
      for (i = 2; i <= n; i++) for (j = i; j > 1 && q[j - 1] > q[j]; j--) { t = q[j]; q[j] = q[j - 1]; q[j - 1] = t }
      printf "%s: A best %.0f MB/s, B best %.0f MB/s, ratio of bests %.2f, median ratio %.2f (%.2f to %.2f)\n",
        c, best["A " c], best["B " c], best["B " c] / best["A " c], q[int((n + 1) / 2)], q[1], q[n]
    }
  }' | sort
