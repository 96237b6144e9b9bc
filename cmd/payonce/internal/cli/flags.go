package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/currency"

	"github.com/payonce/payonce"
)

// cmdFlags is the flag set of one command, with its help text.
type cmdFlags struct {
	*flag.FlagSet
	usage string // e.g. "payonce charge --order ID --amount MINOR --currency CUR [flags]"
	about string // what the command does, with its exit codes when relevant
}

// newFlags returns the flag set of the command `name`. Its output is
// discarded: parse reports errors and prints help itself.
func newFlags(name, usage, about string) *cmdFlags {
	fs := flag.NewFlagSet("payonce "+name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return &cmdFlags{FlagSet: fs, usage: usage, about: about}
}

// parse parses args, flags and positional arguments in any order, and
// returns the positional ones. -h prints the help to stdout and ends the
// command with exit code 0; a bad flag is a usage error.
func (f *cmdFlags) parse(a *App, args []string) ([]string, error) {
	var pos []string
	for {
		err := f.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			f.printHelp(a.Stdout)
			return nil, silentExit(ExitOK)
		}
		if err != nil {
			return nil, usageErrorf("%s: %v (run \"%s -h\" for help)", f.Name(), err, f.Name())
		}
		rest := f.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// wasSet reports whether the flag was given on the command line.
func (f *cmdFlags) wasSet(name string) bool {
	set := false
	f.Visit(func(fl *flag.Flag) {
		if fl.Name == name {
			set = true
		}
	})
	return set
}

func (f *cmdFlags) printHelp(w io.Writer) {
	fmt.Fprintf(w, "Usage:\n  %s\n\n", f.usage)
	if f.about != "" {
		fmt.Fprintf(w, "%s\n\n", strings.TrimRight(f.about, "\n"))
	}
	any := false
	f.VisitAll(func(*flag.Flag) { any = true })
	if !any {
		return
	}
	fmt.Fprintln(w, "Flags:")
	f.VisitAll(func(fl *flag.Flag) {
		name, text := flag.UnquoteUsage(fl)
		head := "  --" + fl.Name
		if name != "" {
			head += " " + name
		}
		if len(head) <= 24 {
			head += strings.Repeat(" ", 26-len(head))
		} else {
			head += "\n" + strings.Repeat(" ", 26)
		}
		text = strings.ReplaceAll(text, "\n", "\n"+strings.Repeat(" ", 26))
		if fl.DefValue != "" && fl.DefValue != "0" && fl.DefValue != "false" && fl.DefValue != "0s" {
			text += fmt.Sprintf(" (default %s)", fl.DefValue)
		}
		fmt.Fprintf(w, "%s%s\n", head, text)
	})
}

// durationValue is a flag.Value for durations that also accepts days, such
// as "30d" or "1d12h".
type durationValue time.Duration

func (d *durationValue) String() string {
	if time.Duration(*d) == 0 {
		return "0s"
	}
	return fmtDuration(time.Duration(*d))
}

func (d *durationValue) Set(s string) error {
	v, err := parseDuration(s)
	if err != nil {
		return err
	}
	*d = durationValue(v)
	return nil
}

func (f *cmdFlags) duration(p *time.Duration, name string, def time.Duration, usage string) {
	*p = def
	f.Var((*durationValue)(p), name, usage)
}

// fmtDuration prints d without zero minutes and seconds: "24h", "1h30m".
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// parseDuration parses a Go duration, with an optional leading number of
// days ("30d", "1d12h").
func parseDuration(s string) (time.Duration, error) {
	orig := s
	var days time.Duration
	if i := strings.IndexByte(s, 'd'); i > 0 {
		n, err := strconv.ParseUint(s[:i], 10, 16)
		if err != nil {
			return 0, fmt.Errorf("%q is not a duration such as 90s, 15m, 24h or 30d", orig)
		}
		days = time.Duration(n) * 24 * time.Hour
		s = s[i+1:]
		if s == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration such as 90s, 15m, 24h or 30d", orig)
	}
	if d < 0 {
		return 0, fmt.Errorf("%q is negative", orig)
	}
	return days + d, nil
}

// parseAmount parses --amount: an integer number of minor units. required
// refuses an empty value; a given value must be > 0.
func parseAmount(s string, required bool) (int64, error) {
	if s == "" {
		if required {
			return 0, usageErrorf("--amount is required: the amount in minor units, e.g. --amount 1999 for 19.99")
		}
		return 0, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		hint := ""
		if strings.ContainsAny(s, ".,") {
			hint = " (no decimal point: 19.99 is --amount 1999)"
		}
		return 0, usageErrorf("--amount %q is not an integer: amounts are in minor units, e.g. --amount 1999 for 19.99%s", s, hint)
	}
	if n <= 0 {
		return 0, usageErrorf("--amount must be greater than 0 (minor units), got %d", n)
	}
	if n > payonce.MaxAmount {
		return 0, usageErrorf("--amount must be at most %d minor units, got %d", int64(payonce.MaxAmount), n)
	}
	return n, nil
}

// parseCurrency checks --currency: an ISO 4217 code, upper-cased.
func parseCurrency(s string, required bool) (string, error) {
	if s == "" {
		if required {
			return "", usageErrorf("--currency is required: an ISO 4217 code such as USD or EUR")
		}
		return "", nil
	}
	code := strings.ToUpper(strings.TrimSpace(s))
	u, err := currency.ParseISO(code)
	if err != nil || u.String() != code || code == "XXX" {
		return "", usageErrorf("--currency %q is not an ISO 4217 currency code such as USD or EUR", s)
	}
	return code, nil
}

// positional checks the number of positional arguments.
// parseArgs parses args and checks that exactly the named positional
// arguments are present; it returns them.
func (f *cmdFlags) parseArgs(a *App, args []string, names ...string) ([]string, error) {
	pos, err := f.parse(a, args)
	if err != nil {
		return nil, err
	}
	if err := positional(f, pos, names...); err != nil {
		return nil, err
	}
	return pos, nil
}

func positional(f *cmdFlags, pos []string, names ...string) error {
	switch {
	case len(pos) < len(names):
		return usageErrorf("%s needs %s (usage: %s)", f.Name(), strings.Join(names[len(pos):], " "), f.usage)
	case len(pos) > len(names):
		return usageErrorf("%s: unexpected argument %q (usage: %s)", f.Name(), pos[len(names)], f.usage)
	}
	return nil
}
