package testkit

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// PopulateBase is the creation time of the first operation PopulatePG
// writes; operation i (from 1) is created i seconds later.
var PopulateBase = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// The review reasons PopulatePG cycles through, each the exact text whose
// code the migration 010 mapping gives (so the stored code and reason agree
// as the store would write them).
var populateReasons = []string{
	"key window passed with the outcome unknown",             // window_passed
	"provider holds more than one object for this operation", // duplicated
	"provider still processing after the configured age",     // processing
}

// PopulateProviders and PopulateKinds are what PopulatePG spreads its
// operations over: operation i has provider PopulateProviders[(i/7)%4] and
// kind PopulateKinds[(i/3)%4] (so that every provider and kind has
// operations in review, whatever reviewEvery).
var (
	PopulateProviders = []string{"stripe", "adyen", "checkout", "yookassa"}
	PopulateKinds     = []string{"charge", "capture", "refund", "cancel"}
)

// PopulatePG fills the migrated ledger in schema with n operations for
// benchmarks, in bulk (INSERT ... SELECT over generate_series, batches of
// 100,000 rows, one transaction each), unless the schema already holds
// exactly n of them: populating a million takes a while, so a benchmark run
// reuses what an earlier run wrote. Any other count is an error (a
// half-populated or foreign schema).
//
// Operation i (1..n) is "bench-<i zero-padded to 9>", its key the same
// (unique, generation 0), its provider reference "ref-<i>" (unique),
// created at PopulateBase + i seconds. Every reviewEvery-th operation is in
// manual_review, ReviewAt from 1 to 86,400 seconds after creation (so the
// queue's order is not the creation order): half of them adyen's with code
// duplicated (a filter of the queue with a deep page), the others with
// review reasons and codes cycling through window_passed, duplicated and
// processing. Every 50th of the others failed, the rest succeeded. No attempts or events are written
// (List and Stats do not read them); the feed's trigger writes an entry per
// operation as for any insert.
//
// It also writes n/10 webhook inbox entries (provider as the operations,
// in turn, one outcome each: settled, unmatched, contradiction or unreadable in
// turn), received one every 5 seconds before PopulateBase + n seconds, so
// that the inbox of the last day holds 17,280 of them.
func PopulatePG(ctx context.Context, pool *pgxpool.Pool, schema string, n int, reviewEvery int) error {
	if n < 1 || reviewEvery < 1 {
		return fmt.Errorf("testkit: PopulatePG: n and reviewEvery must be positive, got %d and %d", n, reviewEvery)
	}
	ops := pgx.Identifier{schema, "payonce_operations"}.Sanitize()
	webhooks := pgx.Identifier{schema, "payonce_webhooks"}.Sanitize()
	outcomes := pgx.Identifier{schema, "payonce_webhook_outcomes"}.Sanitize()
	var have int
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM "+ops).Scan(&have); err != nil {
		return fmt.Errorf("testkit: PopulatePG: counting: %w", err)
	}
	switch have {
	case n:
		return nil
	case 0:
	default:
		return fmt.Errorf("testkit: PopulatePG: schema %s holds %d operations, not 0 or %d: drop it", schema, have, n)
	}
	const batch = 100_000
	for lo := 1; lo <= n; lo += batch {
		hi := min(lo+batch-1, n)
		_, err := pool.Exec(ctx, `INSERT INTO `+ops+` (id, key, provider, kind, refs, generation, fingerprint, request,
			status, provider_ref, result, attempts, key_ttl_ms, window_start, key_expires_at, next_check_at,
			review_reason, review_code, review_at, created_at, updated_at, finished_at)
		SELECT id, id, CASE WHEN focus THEN 'adyen' ELSE ($3::text[])[1 + (i / 7) % 4] END, ($4::text[])[1 + (i / 3) % 4], ARRAY['order', 'o-' || i], 0,
			md5(i::text), '{"amount":1000,"currency":"EUR"}',
			st, 'ref-' || i,
			CASE st WHEN 'succeeded' THEN '{"status":"succeeded"}' END,
			1, 86400000, created, created + interval '1 day', NULL,
			CASE WHEN focus THEN ($5::text[])[2] WHEN st = 'manual_review' THEN ($5::text[])[1 + (i / $6) % 3] END,
			CASE WHEN focus THEN 'duplicated' WHEN st = 'manual_review' THEN (ARRAY['window_passed', 'duplicated', 'processing'])[1 + (i / $6) % 3] END,
			CASE WHEN st = 'manual_review' THEN created + ((1 + (i * 7919) % 86400) * interval '1 second') END,
			created, created + interval '1 second',
			CASE WHEN st <> 'manual_review' THEN created + interval '1 second' END
		FROM (SELECT i, 'bench-' || lpad(i::text, 9, '0') AS id,
				$7::timestamptz + i * interval '1 second' AS created,
				CASE WHEN i % $6 = 0 THEN 'manual_review' WHEN i % 50 = 0 THEN 'failed' ELSE 'succeeded' END AS st,
				i % $6 = 0 AND (i / $6) % 2 = 0 AS focus
			FROM generate_series($1::bigint, $2::bigint) AS i) g`,
			lo, hi, PopulateProviders, PopulateKinds, populateReasons, reviewEvery, PopulateBase)
		if err != nil {
			return fmt.Errorf("testkit: PopulatePG: operations %d..%d: %w", lo, hi, err)
		}
	}
	if m := n / 10; m > 0 {
		end := PopulateBase.Add(time.Duration(n) * time.Second)
		if _, err := pool.Exec(ctx, `INSERT INTO `+webhooks+` (provider, event_id, type, occurred_at, received_at, targets)
			SELECT ($2::text[])[1 + i % 4], 'evt_bench_' || i, 'bench.event', NULL,
				$3::timestamptz - i * interval '5 seconds', '[]'
			FROM generate_series(1, $1::bigint) AS i`, m, PopulateProviders, end); err != nil {
			return fmt.Errorf("testkit: PopulatePG: inbox: %w", err)
		}
		if _, err := pool.Exec(ctx, `INSERT INTO `+outcomes+` (provider, event_id, seq, target, operation_id, disposition)
			SELECT ($2::text[])[1 + i % 4], 'evt_bench_' || i, 0,
				CASE WHEN i % 4 = 3 THEN -1 ELSE 0 END,
				CASE WHEN i % 4 IN (0, 2) THEN 'bench-' || lpad(i::text, 9, '0') END,
				(ARRAY['settled', 'unmatched', 'contradiction', 'unreadable'])[1 + i % 4]
			FROM generate_series(1, $1::bigint) AS i`, m, PopulateProviders); err != nil {
			return fmt.Errorf("testkit: PopulatePG: inbox outcomes: %w", err)
		}
	}
	// As autovacuum would, before the first reads: statistics for the
	// planner, and the visibility map for index-only scans.
	for _, t := range []string{ops, webhooks, outcomes} {
		if _, err := pool.Exec(ctx, "VACUUM (ANALYZE) "+t); err != nil {
			return fmt.Errorf("testkit: PopulatePG: vacuum: %w", err)
		}
	}
	return nil
}
