#!/bin/sh
# A fleet on one machine: N processes of creative batch on one jobs file and
# one --out. Each claims the jobs it runs, so none is paid twice; each ends
# when no job is left for it to start. A process that ends while others
# still have jobs in flight leaves those to them and exits 0 (1 only when a
# job of its own is not done), so its status speaks for its own jobs alone.
# When all have ended, one more pass settles the fleet's exit status: it
# sends nothing that is done, and exits 0 when every job is. Set JOBS and
# OUT (paths or bucket URLs), and CREATIVE_BASE_URL and CREATIVE_ACCESS_KEY.
set -eu
N=${N:-4}
i=0
pids=
while [ "$i" -lt "$N" ]; do
  creative batch "$JOBS" --out "$OUT" --concurrency 4 &
  pids="$pids $!"
  i=$((i + 1))
done
for pid in $pids; do wait "$pid" || true; done
exec creative batch "$JOBS" --out "$OUT"
