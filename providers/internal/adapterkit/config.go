package adapterkit

import "time"

// DurationOrDefault is the value of a duration field of an adapter's Config:
// v, or def when v is 0. A negative v is a ValidationError on prefix+field
// that names the default; hint ends its problem (" or set the key window").
func DurationOrDefault(prefix, field string, v, def time.Duration, hint string) (time.Duration, error) {
	switch {
	case v < 0:
		return 0, Invalid(prefix, field, "is negative (%s); leave it 0 for the default %s%s", v, def, hint)
	case v == 0:
		return def, nil
	}
	return v, nil
}
