package ledger

// Limits shared by every store.
const (
	// MaxLimit bounds Limit in listing and claiming calls.
	MaxLimit = 10000
	// DefaultListLimit is the Limit used when a filter leaves it zero.
	DefaultListLimit = 100
	// DefaultCleanupBatch is the BatchSize used when CleanupParams leaves it zero.
	DefaultCleanupBatch = 1000
	// MaxCleanupBatch bounds CleanupParams.BatchSize.
	MaxCleanupBatch = 100000
	// MaxRequestBytes bounds the canonical request stored with an operation.
	MaxRequestBytes = 64 << 10
	// MaxTextBytes bounds free text (error text, notes, reasons) stored by
	// the ledger; longer text is refused, not truncated silently.
	MaxTextBytes = 8 << 10
)

// MaxEventsPerCall bounds the events one call records.
const MaxEventsPerCall = 16

// MaxFindingRefBytes bounds a finding's OperationID and ProviderRef: both
// come from the provider's objects (metadata anyone with the API key can
// write), and together they form the finding's unique key, which an index
// stores (PostgreSQL refuses an index row over 2704 bytes, failing the
// whole batch). Longer values are refused; Client.Audit shortens them.
const MaxFindingRefBytes = 1024

// MaxFindingsPerCall bounds the findings one Store.RecordFindings call
// records: one transaction, whose size (and the lock it holds on the
// findings it updates) must stay bounded. A caller with more records them
// in several calls; each finding's upsert does not depend on the others.
const MaxFindingsPerCall = 1000
