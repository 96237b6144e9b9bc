#!/usr/bin/env bash
# cmd/payonce/bench/run.sh: what payonce's safety costs against this
# machine's physical limit, as one table (metric, value, goal, met?).
#
# It runs pgbench (one-row insert-or-nothing commits: the ceiling, pgbench's
# tps / 2 since an operation needs two commits) and payonce's Charge on a
# PostgreSQL ledger at the same concurrency levels against a zero-latency
# fake Stripe, then a raw net/http POST to the same fake at each level; the
# CPU floor per level (2 x a pgbench commit's CPU, backends + pgbench, plus
# a raw POST's CPU, all from the same run) and Charge's CPU per op over it
# (goal <= 2.0 x floor at concurrency above 1); the latency Charge adds
# over a raw POST at concurrency 1 on PostgreSQL and SQLite; two peers at
# every level (a River job inserted in the order's transaction, and a
# hand-rolled idempotency journal on plain pgx) and Charge's CPU over
# theirs; WAL bytes per op; and the reconciler's drain of a backlog of
# pending operations. Takes about (5 x levels + 4) x --duration
# (+ levels x --duration with --pair) plus the drains: ~4 minutes by default.
#
# Usage: bash cmd/payonce/bench/run.sh [flags]
#
#   --duration D        each pgbench run, Charge measurement and raw POST run (default 10s)
#   --concurrency LIST  callers / pgbench clients (default 1,8,32)
#   --backlog N         pending operations to drain (default 20000; 100000 for the full size)
#   --reconcilers LIST  reconcilers draining the backlog (default 1,4; 0 skips the drain)
#   --pg URL            PostgreSQL to use (default postgres://postgres@127.0.0.1:5432/test?sslmode=disable);
#                       it must run on this host (its backends' CPU is read from /proc).
#                       Schemas payonce_bench_* are created there and dropped at the end.
#   --pgbench PATH      the pgbench binary (default: pgbench on PATH)
#   --pair              also run pgbench with payonce's commit pair per transaction
#                       (one durable commit, one with synchronous_commit off)
#   --feed              while Charge runs at each level above 1, also read the
#                       ledger's settlement feed as a consumer would (pages of 100)
#   --peers=false       skip the River and journal peers (default: measured)
#   --river-fetch-cooldown D
#                       the River peer's FetchCooldown (default: River's, 100ms)
#   --json              print the results as JSON instead of the table
#   --cpuprofile FILE   CPU profile of the program during the Charge runs
#
# Progress goes to stderr, the table (Markdown) to stdout. Run it on an idle
# machine: the load average at start and end is printed with the table.
set -euo pipefail
# From the repository root (its go.work includes the command's module), so
# that a relative --cpuprofile path is taken from there.
cd "$(dirname "$0")/../../.."

pgbench_bin=pgbench
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --pgbench=* | -pgbench=*) pgbench_bin="${args[i]#*=}" ;;
    --pgbench | -pgbench) pgbench_bin="${args[i + 1]:-}" ;;
  esac
done
if ! command -v "$pgbench_bin" >/dev/null 2>&1; then
  echo "cmd/payonce/bench/run.sh: pgbench not found ('$pgbench_bin'): install PostgreSQL's client tools" \
    "(Debian: apt-get install postgresql-client) or pass --pgbench PATH" >&2
  exit 2
fi

exec go run ./cmd/payonce/bench "$@"
