package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/internal/testkit"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgerpg"
)

// BenchmarkReviewPage1M serves the console's pages through the handler on
// a PostgreSQL ledger of 1,000,000 operations (25,000 in review, half of
// them adyen's with code duplicated: a filtered page 10,000 deep exists), the
// schema payonce_bench_console_1m that testkit.PopulatePG fills once and
// later runs reuse (the ledgerpg benchmarks share it). Only with
// PAYONCE_BENCH_1M=1. Target: each page under 100 ms.
func BenchmarkReviewPage1M(b *testing.B) {
	if os.Getenv("PAYONCE_BENCH_1M") != "1" {
		b.Skip("set PAYONCE_BENCH_1M=1 (and PAYONCE_TEST_DATABASE_URL): populates (once) a schema of 1,000,000 operations")
	}
	const n, reviewEvery, schema = 1_000_000, 40, "payonce_bench_console_1m"
	ctx := context.Background()
	pool := testkit.NewPool(b)
	_, err := pool.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize())
	require.NoError(b, err)
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	require.NoError(b, err)
	require.NoError(b, store.Migrate(ctx))
	require.NoError(b, testkit.PopulatePG(ctx, pool, schema, n, reviewEvery))
	now := testkit.PopulateBase.Add(n*time.Second + 2*24*time.Hour)
	h, err := console.New(console.Config{Store: store, Identity: testIdentity, Now: func() time.Time { return now }})
	require.NoError(b, err)

	// A page 10,000 operations deep, unfiltered and filtered.
	deep := func(f ledger.ReviewFilter) string {
		f.Limit = 10_000
		ops, err := store.ListReview(ctx, f)
		require.NoError(b, err)
		require.Len(b, ops, 10_000)
		last := ops[len(ops)-1]
		return strconv.FormatInt(last.ReviewAt.UnixMicro(), 10) + "." + last.ID
	}
	pages := []struct{ name, path string }{
		{"review-first", "/review"},
		{"review-deep", "/review?after=" + url.QueryEscape(deep(ledger.ReviewFilter{}))},
		{"review-filtered-deep", "/review?provider=adyen&code=duplicated&after=" +
			url.QueryEscape(deep(ledger.ReviewFilter{Provider: "adyen", Code: ledger.ReviewCodeDuplicated}))},
		{"search-provider-ref", "/search?q=ref-500000"},
		{"overview", "/"},
	}
	for _, p := range pages {
		b.Run(p.name, func(b *testing.B) {
			get := func() *httptest.ResponseRecorder {
				req := httptest.NewRequest(http.MethodGet, p.path, nil)
				req.Header.Set(operatorHeader, "bench:viewer")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				return rec
			}
			rec := get()
			require.Contains(b, []int{http.StatusOK, http.StatusSeeOther}, rec.Code, rec.Body.String())
			for b.Loop() {
				if rec := get(); rec.Code >= 400 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
