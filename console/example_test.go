package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"

	"github.com/payonce/payonce/console"
	"github.com/payonce/payonce/ledger/ledgersqlite"
)

// Mount the console under /ops/console/ behind the service's own
// authentication; here a header stands in for it.
func Example() {
	dir, _ := os.MkdirTemp("", "console-example")
	defer os.RemoveAll(dir)
	store, err := ledgersqlite.Open(filepath.Join(dir, "payonce.db"), ledgersqlite.Config{})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	if err := store.Migrate(context.Background()); err != nil {
		panic(err)
	}
	h, err := console.New(console.Config{
		Store: store,
		Identity: func(r *http.Request) (console.Operator, bool) {
			// Stands in for the service's session check.
			if r.Header.Get("X-Example-User") != "alice@example.com" {
				return console.Operator{}, false
			}
			return console.Operator{Name: "alice@example.com", Role: console.RoleViewer}, true
		},
	})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/ops/console/", http.StripPrefix("/ops/console", h))

	for _, user := range []string{"", "alice@example.com"} {
		req := httptest.NewRequest(http.MethodGet, "/ops/console/review", nil)
		req.Header.Set("X-Example-User", user)
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		fmt.Println(rec.Code, strings.Contains(rec.Body.String(), `<table id="review-queue">`))
	}
	// Output:
	// 401 false
	// 200 true
}
