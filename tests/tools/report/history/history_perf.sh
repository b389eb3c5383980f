#!/usr/bin/env bash
# Times dlbench-report's history on both stores (not a test; timings are printed, never asserted):
#   tests/tools/report/history/history_perf.sh BUILD_DIR
# add: one run of 1,000 benchmarks x 10 repetitions into a fresh store; check: the newest run
# against its window over 1,000 runs x 500 benchmarks. PostgreSQL runs on a private server in a
# temporary folder (Unix socket only, default durability), started and stopped here; without the
# server binaries only SQLite is timed.
set -euo pipefail

build=${1:?usage: history_perf.sh BUILD_DIR}
tool=$build/tools/report/dlbench-report
gen=$build/tests/tools/report_perfgen
tmp=$(mktemp -d /tmp/dlbperf.XXXXXX)
pgctl=""
cleanup() {
  [[ -n "$pgctl" ]] && $pgctl -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

timed() {  # timed COMMAND...: sets $secs (wall time) and $rc (exit status)
  local t0 t1 ms
  t0=$(date +%s%N)
  set +e
  "$@" >/dev/null 2>&1
  rc=$?
  set -e
  t1=$(date +%s%N)
  ms=$(((t1 - t0) / 1000000))
  secs=$(printf '%d.%03d' $((ms / 1000)) $((ms % 1000)))
}

"$gen" json "$tmp/run.json" 1000 10 1.0 1

time_store() {  # time_store NAME DB_FOR_ADD DB_FOR_CHECK
  timed "$tool" history add "$tmp/run.json" --db "$2"
  echo "$1: history add, 1,000 benchmarks x 10 repetitions: ${secs} s (exit $rc)"
  echo "$1: generating 1,000 runs x 500 benchmarks..."
  "$gen" history "$3" 1000 500
  timed "$tool" history check --db "$3"
  echo "$1: history check over 1,000 runs x 500 benchmarks: ${secs} s (exit $rc; 3: the regression the generator plants)"
}

time_store SQLite "$tmp/add.sqlite" "$tmp/check.sqlite"

bin=""
for d in "${DLB_PG_BINDIR:-}" $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V -r); do
  [[ -n "$d" && -x "$d/initdb" && -x "$d/pg_ctl" ]] && { bin=$d; break; }
done
if [[ -z "$bin" ]]; then
  echo "PostgreSQL: skipped (no server binaries: apt install postgresql)"
  exit 0
fi
as=()
if [[ $(id -u) -eq 0 ]]; then
  user=postgres
  id postgres >/dev/null 2>&1 || user=nobody
  chown "$user" "$tmp"
  as=(runuser -u "$user" --)
fi
cd "$tmp"
"${as[@]}" "$bin/initdb" -D "$tmp/data" -U dlb --auth=trust -E UTF8 --locale=C >"$tmp/initdb.log"
pgctl="${as[*]} $bin/pg_ctl -D $tmp/data -w -t 60"
$pgctl -l "$tmp/server.log" -o "-c listen_addresses='' -c unix_socket_directories='$tmp'" \
  start >/dev/null
for db in hist_add hist_check; do
  "${as[@]}" "$bin/psql" -q -h "$tmp" -U dlb -d postgres -c "CREATE DATABASE $db" >/dev/null
done
time_store PostgreSQL "postgresql://dlb@/hist_add?host=$tmp" "postgresql://dlb@/hist_check?host=$tmp"
