package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
)

// Role is what an operator may do in the console.
type Role string

const (
	// RoleViewer reads every page and changes nothing.
	RoleViewer Role = "viewer"
	// RoleResolver also resolves operations in review, one at a time and
	// in bulk, and acknowledges audit findings.
	RoleResolver Role = "resolver"
)

// Operator is the authenticated person behind a request, as the service's
// Config.Identity tells it.
type Operator struct {
	// Name is the actor recorded on a resolution ("alice@example.com").
	Name string
	// Role is what the operator may do; anything but RoleResolver reads
	// only.
	Role Role
}

// CanResolve reports whether the operator may resolve operations.
func (o Operator) CanResolve() bool { return o.Role == RoleResolver }

// Config configures the console handler.
type Config struct {
	// Store is the ledger the console reads. Required.
	Store ledger.Store
	// Clients resolve operations, each the operations of its own provider
	// (Client.Resolve asks the provider before a resend). An operation
	// whose provider has no client here cannot be resolved from the
	// console; the page says so. May be empty: a read-only console.
	Clients []*payonce.Client
	// Identity returns the authenticated operator of r, or ok=false: the
	// handler then answers 401, or redirects to LoginURL when it is set.
	// Required: New refuses a nil Identity, so the console is never
	// served to anonymous users by omission.
	Identity func(r *http.Request) (Operator, bool)
	// LoginURL, when set, is where an unauthenticated GET is redirected
	// (303) instead of answered 401.
	LoginURL string
	// Secure marks the console's cookies Secure. They are also Secure on
	// any request that arrived over TLS (r.TLS set).
	Secure bool
	// Now is the clock of the pages (ages, key windows). Default time.Now.
	// Resolutions are stamped by each Client's own clock.
	Now func() time.Time
	// Logger receives one line per resolution and per unexpected store
	// error. Default: discard.
	Logger *slog.Logger
	// CSRFKey signs the CSRF tokens: 32 or more random bytes. Default: 32
	// random bytes drawn by New (tokens then die with the process).
	CSRFKey []byte
}

// Limits of a request: the console is reachable and moves money, so it
// reads no more than a form needs and gives up on a slow store.
const (
	maxFormBytes   = 64 << 10
	requestTimeout = 30 * time.Second
	maxNoteBytes   = 4000
	maxQueryBytes  = 1024
	pageSize       = 50
	bulkMax        = 100
)

//go:embed assets/templates/*.html
var templateFS embed.FS

//go:embed assets/static
var staticFS embed.FS

type handler struct {
	cfg     Config
	clients map[string]*payonce.Client
	pages   map[string]*template.Template
	mux     *http.ServeMux
	static  http.Handler
	files   fs.FS
}

// New returns the console's handler. Mount it under a prefix with
// http.StripPrefix; its links are built from the request's own path, so
// it works under any prefix. It refuses a nil Store or Identity.
func New(cfg Config) (http.Handler, error) {
	if cfg.Store == nil {
		return nil, errors.New("console: Config.Store is required")
	}
	if cfg.Identity == nil {
		// Anonymous access to a page that can move money is never a
		// default: the service must say who the operator is.
		return nil, errors.New("console: Config.Identity is required: the console serves authenticated operators only (see the package doc for mounting it behind your own auth)")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	switch {
	case cfg.CSRFKey == nil:
		cfg.CSRFKey = make([]byte, 32)
		if _, err := rand.Read(cfg.CSRFKey); err != nil {
			return nil, fmt.Errorf("console: drawing a CSRF key: %w", err)
		}
	case len(cfg.CSRFKey) < 32:
		return nil, errors.New("console: Config.CSRFKey must be at least 32 random bytes")
	default:
		cfg.CSRFKey = append([]byte(nil), cfg.CSRFKey...)
	}
	h := &handler{cfg: cfg, clients: map[string]*payonce.Client{}, pages: map[string]*template.Template{}}
	for i, c := range cfg.Clients {
		if c == nil {
			return nil, fmt.Errorf("console: Config.Clients[%d] is nil", i)
		}
		name := c.Provider().Name()
		if _, dup := h.clients[name]; dup {
			return nil, fmt.Errorf("console: Config.Clients has two clients of provider %q", name)
		}
		h.clients[name] = c
	}
	for _, p := range []string{"overview", "review", "op", "search", "bulk", "bulkresult", "findings", "error"} {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "assets/templates/layout.html", "assets/templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("console: parsing template %s: %w", p, err)
		}
		h.pages[p] = t
	}
	sub, err := fs.Sub(staticFS, "assets/static")
	if err != nil {
		return nil, err
	}
	h.files = sub
	h.static = http.StripPrefix("/static/", http.FileServerFS(sub))
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", h.overview)
	mux.HandleFunc("GET /review", h.review)
	mux.HandleFunc("GET /ops/{id}", h.operation)
	mux.HandleFunc("POST /ops/{id}/resolve", h.resolve)
	mux.HandleFunc("GET /search", h.search)
	mux.HandleFunc("POST /bulk/preview", h.bulkPreview)
	mux.HandleFunc("POST /bulk/apply", h.bulkApply)
	mux.HandleFunc("GET /findings", h.findings)
	mux.HandleFunc("POST /findings/{id}/ack", h.ackFinding)
	h.mux = mux
	return h, nil
}

type ctxKey struct{}

type reqState struct {
	op   Operator
	base string // the mount prefix, from the request's own path
	csrf string // the token for forms on this page
}

func state(r *http.Request) *reqState { return r.Context().Value(ctxKey{}).(*reqState) }

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	base := basePath(r)
	if strings.HasPrefix(r.URL.Path, "/static/") && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		// The embedded stylesheet and script: public files, served without
		// an identity so a login page can use them too.
		if fi, err := fs.Stat(h.files, strings.TrimPrefix(r.URL.Path, "/static/")); err != nil || fi.IsDir() {
			// Answered here: the file server's own error drops headers.
			http.Error(w, "404 not found", http.StatusNotFound)
			return
		}
		h.static.ServeHTTP(w, r)
		return
	}
	op, ok := h.cfg.Identity(r)
	// A blank name would be recorded as the actor of a resolution: the
	// audit entry must name someone.
	if !ok || strings.TrimSpace(op.Name) == "" {
		if h.cfg.LoginURL != "" && r.Method == http.MethodGet {
			http.Redirect(w, r, h.cfg.LoginURL, http.StatusSeeOther)
			return
		}
		http.Error(w, "401 unauthorized: sign in to use the payonce console", http.StatusUnauthorized)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), requestTimeout)
	defer cancel()
	st := &reqState{op: op, base: base}
	cookie := h.csrfCookie(w, r, base)
	st.csrf = h.csrfToken(cookie, op.Name)
	r = r.WithContext(context.WithValue(ctx, ctxKey{}, st))
	if r.Method == http.MethodPost {
		r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		if !op.CanResolve() {
			// A viewer reads; every POST of the console resolves, prepares
			// a resolution or acknowledges an audit finding.
			h.fail(w, r, http.StatusForbidden, "403 forbidden: "+op.Name+" is a viewer; resolving needs the resolver role")
			return
		}
		if err := r.ParseForm(); err != nil {
			h.fail(w, r, http.StatusBadRequest, "400 bad request: the form could not be read")
			return
		}
		// Every state-changing request carries a token only a page of this
		// console, read by this browser, could have: a cross-site form
		// cannot read the cookie it is derived from.
		if !h.csrfValid(r, op.Name) {
			h.fail(w, r, http.StatusForbidden, "403 forbidden: the form's CSRF token is missing or stale; reload the page and try again")
			return
		}
	}
	h.mux.ServeHTTP(w, r)
}

// basePath is the prefix the console is mounted under: the request's path
// as the client sent it, minus the path the handler sees (after
// http.StripPrefix).
func basePath(r *http.Request) string {
	raw := r.RequestURI
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	esc := r.URL.EscapedPath()
	if esc == "" || !strings.HasSuffix(raw, esc) {
		return ""
	}
	base := strings.TrimSuffix(raw, esc)
	if !strings.HasPrefix(base, "/") {
		// An absolute-form request URI or a proxy's rewrite: links from the root.
		return ""
	}
	return base
}

func (h *handler) client(provider string) *payonce.Client { return h.clients[provider] }
