package cli

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"log/slog"
	"net"

	"github.com/payonce/payonce"
)

// checkDemoConsoleAddr refuses a demo console beyond this machine: it has
// no TLS and its login is printed on a terminal.
func checkDemoConsoleAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usageErrorf("--addr %q is not HOST:PORT: %v", addr, err)
	}
	if !isLoopback(host) {
		return usageErrorf("--addr %s is not a loopback address: the demo's console listens on this machine only, e.g. 127.0.0.1:8088", addr)
	}
	return nil
}

// demoConsoleUser is the name of the demo console's one operator.
const demoConsoleUser = "demo"

// serveConsole serves the demo's ledger in the operator console until ctx
// ends. Its one operator, a resolver, gets a password generated for this
// run (printed once, never stored); resends go through the demo's client,
// to its fake, which stays up until the demo ends.
func (d *demo) serveConsole(ctx context.Context, addr string) error {
	raw := make([]byte, 15)
	if _, err := rand.Read(raw); err != nil {
		return err
	}
	password := base64.RawURLEncoding.EncodeToString(raw)
	hash, err := hashConsolePassword([]byte(password))
	if err != nil {
		return err
	}
	h, err := ConsoleHandler(ConsoleOptions{
		Store: d.ledger.store, Clients: []*payonce.Client{d.client},
		Users:  demoConsoleUser + ":resolver:" + string(hash),
		Logger: d.a.logger(slog.LevelWarn), Now: d.a.Now,
	})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return usageErrorf("--addr %s: %v", addr, err)
	}
	fmt.Fprintf(d.a.Stderr, "payonce: the demo's ledger is open in the console at http://%s/ ; log in as user %q with password %s (this run only); SIGINT or SIGTERM stops\n",
		ln.Addr(), demoConsoleUser, password)
	return serveConsole(ctx, ln, h, "", "")
}
