package ledgersqlite_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/ledger/ledgersqlite"
	"github.com/payonce/payonce/ledger/ledgertest"
)

func TestConformance(t *testing.T) {
	t.Parallel()
	ledgertest.Run(t, func(t *testing.T) *ledgertest.Harness {
		path := dbPath(t)
		current := openAt(t, path)
		return &ledgertest.Harness{
			Store: current,
			OpenAnother: func(t *testing.T) ledger.Store {
				s, err := ledgersqlite.Open(path)
				require.NoError(t, err)
				t.Cleanup(func() { _ = s.Close() })
				return s
			},
			Reopen: func(t *testing.T) ledger.Store {
				require.NoError(t, current.Close())
				current = openAt(t, path)
				return current
			},
			SetRawStatus: func(t *testing.T, id, status string) {
				res, err := rawDB(t, path).Exec(`UPDATE payonce_operations SET status = ? WHERE id = ?`, status, id)
				require.NoError(t, err)
				n, err := res.RowsAffected()
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "no operation %q", id)
			},
			SetRawEventKind: func(t *testing.T, id string, seq int, kind string) {
				res, err := rawDB(t, path).Exec(`UPDATE payonce_events SET kind = ? WHERE operation_id = ? AND seq = ?`, kind, id, seq)
				require.NoError(t, err)
				n, err := res.RowsAffected()
				require.NoError(t, err)
				require.EqualValues(t, 1, n, "no event %d of %q", seq, id)
			},
		}
	})
}
