package ledgersqlite

import (
	"context"
	"errors"
	"time"

	"github.com/payonce/payonce/ledger"
)

// Contract stub: replaced by the real implementation.

func (s *Store) RecordFindings(ctx context.Context, fs []ledger.NewFinding, now time.Time) error {
	return errors.New("not implemented")
}

func (s *Store) ListFindings(ctx context.Context, f ledger.FindingFilter) ([]ledger.Finding, error) {
	return nil, errors.New("not implemented")
}

func (s *Store) AckFinding(ctx context.Context, p ledger.AckFindingParams) (ledger.Finding, error) {
	return ledger.Finding{}, errors.New("not implemented")
}
