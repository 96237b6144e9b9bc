package payonce

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Text checks shared by an Identity's references and a Request's fields.

// checkText checks that s is min to max bytes of valid UTF-8 without control
// characters (C0, DEL, C1); layout allows tab and newline.
func checkText(field, s string, min, max int, layout bool) error {
	if len(s) < min {
		return invalid(field, "is empty; it must be %d to %d bytes", min, max)
	}
	if len(s) > max {
		return invalid(field, "is %d bytes; at most %d are allowed", len(s), max)
	}
	if problem := textProblem(s, layout); problem != "" {
		return invalid(field, "%s", problem)
	}
	return nil
}

func textProblem(s string, layout bool) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c < 0x7f { // printable ASCII, the common case
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return fmt.Sprintf("is not valid UTF-8 (byte %d)", i)
		}
		if unicode.IsControl(r) && !(layout && (r == '\t' || r == '\n')) {
			allowed := ""
			if layout {
				allowed = " other than tab and newline"
			}
			return fmt.Sprintf("contains the control character %U at byte %d; control characters (U+0000-U+001F, U+007F-U+009F)%s are not allowed", r, i, allowed)
		}
		i += size
	}
	return ""
}

// quote quotes s for an error message, cut to a readable length.
func quote(s string) string {
	const max = 64
	if len(s) > max {
		return strconv.Quote(s[:max]) + "..."
	}
	return strconv.Quote(s)
}
