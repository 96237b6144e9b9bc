package ledgerpg

import (
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/payonce/payonce/ledger"
)

// Config configures a Store. The zero value is valid.
type Config struct {
	// Schema is the PostgreSQL schema holding the payonce_ tables. Defaults
	// to "public". It must be a plain lower-case identifier: 1 to 63 ASCII
	// letters a-z, digits or underscores, starting with a letter or an
	// underscore, and not starting with "pg_".
	Schema string
	// DurableOutcomes makes Finish wait for its commit to reach disk like
	// every other write. By default Finish commits with
	// synchronous_commit=off: the attempt journal is always durable before
	// a request is sent, while an outcome lost in a database crash is
	// recovered by a status lookup (see ledger.Store.Finish). That saves
	// one disk flush per operation on the caller's latency path.
	DurableOutcomes bool
}

// Store is the PostgreSQL ledger.Store. It is safe for concurrent use by
// many goroutines and, through the database, by many processes sharing one
// schema.
type Store struct {
	pool       *pgxpool.Pool
	schema     string
	q          queries
	migrations []Migration
	// lazyOutcomes commits Finish with synchronous_commit=off.
	lazyOutcomes bool
}

var _ ledger.Store = (*Store)(nil)

// New returns a Store using pool (owned by the caller, who closes it) and the
// tables of cfg.Schema. It does not touch the database: call Migrate before
// first use.
func New(pool *pgxpool.Pool, cfg Config) (*Store, error) {
	if pool == nil {
		return nil, &ledger.ValidationError{Field: "pool", Problem: "must not be nil: open one with pgxpool.New"}
	}
	if cfg.Schema == "" {
		cfg.Schema = "public"
	}
	if err := checkSchemaName(cfg.Schema); err != nil {
		return nil, err
	}
	migrations, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	return &Store{pool: pool, schema: cfg.Schema, q: newQueries(cfg.Schema), migrations: migrations,
		lazyOutcomes: !cfg.DurableOutcomes}, nil
}

// Schema is the schema the store's tables live in.
func (s *Store) Schema() string { return s.schema }

// checkSchemaName accepts only names that need no quoting and that
// PostgreSQL lets a user create: what an operator types in psql unquoted is
// then the same schema the store uses.
func checkSchemaName(name string) error {
	ok := len(name) <= 63 && !strings.HasPrefix(name, "pg_")
	for i, c := range name {
		letter := c == '_' || (c >= 'a' && c <= 'z')
		ok = ok && (letter || (i > 0 && c >= '0' && c <= '9'))
	}
	if !ok {
		return &ledger.ValidationError{
			Field:   "Config.Schema",
			Problem: fmt.Sprintf("%q is not allowed: use 1 to 63 characters a-z, 0-9 or _, starting with a letter or _, and not starting with pg_ (reserved by PostgreSQL)", name),
		}
	}
	return nil
}

// keyConstraint is the unique constraint on payonce_operations.key (named in
// migrations/001_initial.up.sql).
const keyConstraint = "payonce_operations_key_key"

// translate turns driver errors into the ledger's sentinels where one
// applies and adds the method name. Other database errors stay wrapped so
// that callers can still see, e.g., a cancelled context.
func translate(method string, err error) error {
	if err == nil {
		return nil
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		switch {
		case pgErr.Code == "23505" && pgErr.ConstraintName == keyConstraint:
			return fmt.Errorf("ledgerpg: %s: %w: %s", method, ledger.ErrKeyConflict, pgErr.Detail)
		case pgErr.Code == "22021" || pgErr.Code == "22P05":
			// PostgreSQL text cannot hold NUL bytes or invalid UTF-8;
			// refuse the value rather than store something else.
			return fmt.Errorf("ledgerpg: %s: %w", method, &ledger.ValidationError{
				Field:   "text value",
				Problem: "contains a NUL byte or invalid UTF-8, which PostgreSQL text cannot store: " + pgErr.Message,
			})
		}
	}
	if errors.Is(err, pgx.ErrNoRows) {
		return fmt.Errorf("ledgerpg: %s: %w", method, ledger.ErrNotFound)
	}
	return fmt.Errorf("ledgerpg: %s: %w", method, err)
}
