package childproc

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/ledger/ledgerpg"
)

// OpenLedger opens a pool on the PostgreSQL database at url, its config
// first changed by tune (if not nil), and the ledger in schema on that
// pool, not migrated (a child may retry its migration while the database
// restarts). On error nothing is left open; the caller closes the pool.
func OpenLedger(ctx context.Context, url, schema string, tune func(*pgxpool.Config)) (*pgxpool.Pool, *ledgerpg.Store, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing the PostgreSQL URL: %w", err)
	}
	if tune != nil {
		tune(cfg)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("opening the pool: %w", err)
	}
	store, err := ledgerpg.New(pool, ledgerpg.Config{Schema: schema})
	if err != nil {
		pool.Close()
		return nil, nil, fmt.Errorf("opening the ledger: %w", err)
	}
	return pool, store, nil
}
