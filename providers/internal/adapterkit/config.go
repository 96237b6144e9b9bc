package adapterkit

import (
	"strings"
	"time"
)

// Setup is what every adapter's New checks the same way, in this order:
// the header values of its Config (credentials, ids), the base URL and the
// durations; and the clock it defaults. Problems are ValidationErrors on
// Prefix+field ("stripe.Config.BaseURL"), the first one found.
type Setup struct {
	// Prefix names the Config's fields ("stripe.Config.").
	Prefix string
	// Headers are checked first, in order.
	Headers []Header
	// BaseURL is the Config's, DefaultBaseURL what an empty one becomes;
	// Credentials says where credentials go instead of the URL's user info
	// (see CheckBaseURL).
	BaseURL, DefaultBaseURL, Credentials string
	// Durations are set as SetDurations does.
	Durations []Duration
	// Now is the Config's clock; nil is time.Now.
	Now func() time.Time
}

// Header is one Config field sent in a header (a key, a shop id, a
// channel id): it must be a printable ASCII token.
type Header struct {
	Field, Value string
	// Empty is the problem of an empty Value; "" makes the field optional.
	Empty string
	// Bad is the problem of a Value that is not a printable ASCII token or
	// holds one of Forbid (":" in an HTTP Basic user name).
	Bad    string
	Forbid string
}

// Check makes the checks and returns the base URL without trailing slashes
// and the clock.
func (s Setup) Check() (baseURL string, now func() time.Time, err error) {
	for _, h := range s.Headers {
		switch {
		case h.Value == "" && h.Empty != "":
			return "", nil, Invalid(s.Prefix, h.Field, "%s", h.Empty)
		case strings.ContainsFunc(h.Value, NotToken) || strings.ContainsAny(h.Value, h.Forbid):
			return "", nil, Invalid(s.Prefix, h.Field, "%s", h.Bad)
		}
	}
	baseURL, err = CheckBaseURL(s.BaseURL, s.DefaultBaseURL, s.Credentials)
	if err != nil {
		return "", nil, Invalid(s.Prefix, "BaseURL", "%v", err)
	}
	if err := SetDurations(s.Prefix, s.Durations...); err != nil {
		return "", nil, err
	}
	if now = s.Now; now == nil {
		now = time.Now
	}
	return baseURL, now, nil
}

// Duration is one duration field of an adapter's Config: zero takes
// Default, a negative value is refused.
type Duration struct {
	Field   string
	Value   time.Duration
	Dst     *time.Duration
	Default time.Duration
	// Hint ends the problem of a negative value (" or set the key window").
	Hint string
}

// SetDurations sets each *Dst to its Value, or to its Default when Value
// is 0; a negative Value is a ValidationError on prefix+Field that names
// the default.
func SetDurations(prefix string, ds ...Duration) error {
	for _, d := range ds {
		switch {
		case d.Value < 0:
			return Invalid(prefix, d.Field, "is negative (%s); leave it 0 for the default %s%s", d.Value, d.Default, d.Hint)
		case d.Value == 0:
			*d.Dst = d.Default
		default:
			*d.Dst = d.Value
		}
	}
	return nil
}
