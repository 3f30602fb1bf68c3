#!/bin/sh
# A fleet on one machine: N processes of creative batch on one jobs file and
# one --out. Each claims the jobs it runs, so none is paid twice; each exits
# when no job is left. Set JOBS and OUT (paths or bucket URLs), and
# CREATIVE_BASE_URL and CREATIVE_ACCESS_KEY.
set -eu
N=${N:-4}
i=0
pids=
while [ "$i" -lt "$N" ]; do
  creative batch "$JOBS" --out "$OUT" --concurrency 4 &
  pids="$pids $!"
  i=$((i + 1))
done
status=0
for pid in $pids; do wait "$pid" || status=1; done
exit "$status"
