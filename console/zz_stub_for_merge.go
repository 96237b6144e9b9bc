// Package console is a placeholder with the contract's API until the real
// operator console is merged; this file is deleted then.
package console

import (
	"errors"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// Role is what an operator may do.
type Role string

// The roles.
const (
	RoleViewer   Role = "viewer"
	RoleResolver Role = "resolver"
)

// Operator is the authenticated person behind a request.
type Operator struct {
	Name string
	Role Role
}

// Config configures New.
type Config struct {
	Store    ledger.Store
	Clients  []*payonce.Client
	Identity func(r *http.Request) (Operator, bool)
	LoginURL string
	Secure   bool
	Now      func() time.Time
	Logger   *slog.Logger
	CSRFKey  []byte
}

var placeholder = template.Must(template.New("p").Parse(`<!doctype html><title>payonce console</title><p id="whoami">{{.Name}} ({{.Role}})</p><p>console placeholder</p>`))

// New returns a placeholder handler.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("console: Config.Store is required")
	}
	if cfg.Identity == nil {
		return nil, errors.New("console: Config.Identity is required")
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		op, ok := cfg.Identity(r)
		if !ok {
			if cfg.LoginURL != "" {
				http.Redirect(w, r, cfg.LoginURL, http.StatusSeeOther)
				return
			}
			http.Error(w, "unauthenticated", http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_ = placeholder.Execute(w, op)
	}), nil
}
