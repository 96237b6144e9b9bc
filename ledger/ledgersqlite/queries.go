package ledgersqlite

import (
	"strings"
)

// SQL text shared by several statements. Most statements are written inline
// where they run: SQLite needs no schema prefix, so unlike ledgerpg there is
// nothing to build per Store. The column lists sit in rows.go, beside the
// scanners that read them.

// where builds a WHERE clause with "?" placeholders (ledgerpg's where, which
// numbers them).
type where struct {
	conds []string
	args  []any
}

// add appends a condition whose "?"s stand for args, in order.
func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

func (w *where) String() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}
