// Package console is payonce's operator console: an http.Handler that shows
// the ledger to the people who decide what automation cannot (the review
// queue, each operation's timeline) and lets them resolve operations in
// review, one at a time or in bulk, through Client.Resolve.
//
// It is server-rendered HTML (html/template) with embedded templates and one
// stylesheet: no frontend build, no script, nothing loaded from elsewhere.
//
// # Mounting it
//
// A service mounts the handler under a prefix, behind its own
// authentication, and tells the console who the operator is:
//
//	h, err := console.New(console.Config{
//		Store:   store,                           // the service's ledger.Store
//		Clients: []*payonce.Client{stripeClient}, // resolve through these, by provider
//		Identity: func(r *http.Request) (console.Operator, bool) {
//			u, ok := auth.UserFrom(r.Context()) // the service's own authentication
//			if !ok {
//				return console.Operator{}, false // 401
//			}
//			role := console.RoleViewer
//			if u.InGroup("payments-oncall") {
//				role = console.RoleResolver
//			}
//			return console.Operator{Name: u.Email, Role: role}, true
//		},
//		CSRFKey: csrfKey, // 32+ random bytes, shared by the service's replicas
//	})
//	if err != nil {
//		return err
//	}
//	mux.Handle("/payments/console/", auth.Require(http.StripPrefix("/payments/console", h)))
//
// # Routes
//
// Relative to the mount point:
//
//	GET  /                  overview: open operations, the oldest, review reasons, open audit findings, webhook inbox,
//	                        feed consumers' lag
//	GET  /review            the review queue, oldest first (provider, kind, code, older_than; keyset pages)
//	GET  /ops/{id}          one operation: identity, key and generation, key window, provider ref, timeline
//	POST /ops/{id}/resolve  resolve it: outcome succeeded|failed|resend, provider_ref, note
//	GET  /search?q=         by operation id, order id, provider reference or key
//	POST /bulk/preview      what resolving the filtered queue would do, item by item
//	POST /bulk/apply        resolve the previewed operations one by one, each through Client.Resolve
//	GET  /findings          open audit findings (payonce's Client.Audit): class, provider, operation, provider ref,
//	                        detail, first and last found, times (provider, class; keyset pages by id)
//	POST /findings/{id}/ack acknowledge one: note (the actor is the operator); it changes no operation
//	GET  /static/...        the stylesheet (served without an identity)
//
// # Security
//
// The console can move money (a resend is a new payment), so:
//
//   - New refuses a nil Identity: no anonymous access. A request without an
//     operator is answered 401 (or, for a GET, redirected to LoginURL).
//   - The actor recorded on a resolution or an acknowledgement is
//     Operator.Name, never a form field.
//   - Only RoleResolver may POST (resolve, or acknowledge an audit finding);
//     a viewer sees no forms and gets 403.
//   - Every POST carries a CSRF token: the HMAC-SHA256, under CSRFKey, of a
//     random per-browser cookie value and the operator's name, checked with
//     hmac.Equal. GET never changes anything.
//   - Cookies are HttpOnly, SameSite=Strict, scoped to the mount point, and
//     Secure over TLS (or with Config.Secure behind a TLS-terminating proxy).
//   - Every answer carries a Content-Security-Policy without inline script
//     or style and with frame-ancestors 'none', X-Frame-Options DENY,
//     nosniff, Referrer-Policy same-origin and Cache-Control no-store.
//   - Every value goes through html/template; request and result bodies are
//     never shown; form bodies are bounded (64 KiB) and each request's
//     store work is bounded in time (30 s).
//
// The service's own http.Server should still set its timeouts
// (ReadHeaderTimeout, ReadTimeout, WriteTimeout), as for its webhook
// endpoint.
package console
