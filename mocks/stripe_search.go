package mocks

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/payonce/payonce/mocks/internal/stripewire"
)

// searchClause is one term of Stripe's search query language:
// field op value, e.g. metadata['order']:'42', status:'succeeded',
// amount>1000; a leading '-' negates it.
type searchClause struct {
	negate bool
	field  string // "metadata", "status", "currency", "customer", "amount", "created"
	key    string // metadata key
	op     string // ":", ">", "<", ">=", "<="
	value  string
	null   bool // value is the bare word null
}

type searchQuery struct {
	clauses []searchClause
	or      bool
}

// parseSearchQuery parses the subset of Stripe's search query language that
// PaymentIntents support: clauses joined by AND or by OR (not both), string
// values quoted with ' or ", numbers bare for amount and created.
func parseSearchQuery(q string) (searchQuery, error) {
	var out searchQuery
	rest := strings.TrimSpace(q)
	if rest == "" {
		return out, fmt.Errorf("the query is empty")
	}
	joiner := ""
	for {
		cl, n, err := parseClause(rest)
		if err != nil {
			return out, err
		}
		out.clauses = append(out.clauses, cl)
		rest = strings.TrimSpace(rest[n:])
		if rest == "" {
			break
		}
		word, after, ok := strings.Cut(rest, " ")
		if !ok || (word != "AND" && word != "OR") {
			return out, fmt.Errorf("expected AND or OR before %q", rest)
		}
		if joiner != "" && joiner != word {
			return out, fmt.Errorf("AND and OR cannot be combined in one query")
		}
		joiner = word
		rest = strings.TrimSpace(after)
	}
	if len(out.clauses) > 10 {
		return out, fmt.Errorf("a query can have at most 10 clauses")
	}
	out.or = joiner == "OR"
	return out, nil
}

// parseClause parses one clause at the start of s and returns its length.
func parseClause(s string) (searchClause, int, error) {
	var cl searchClause
	i := 0
	if strings.HasPrefix(s, "-") {
		cl.negate = true
		i++
	}
	start := i
	for i < len(s) && (s[i] == '_' || s[i] >= 'a' && s[i] <= 'z') {
		i++
	}
	cl.field = s[start:i]
	switch cl.field {
	case "metadata":
		if i+1 >= len(s) || s[i] != '[' || (s[i+1] != '\'' && s[i+1] != '"') {
			return cl, 0, fmt.Errorf("metadata must be followed by ['key']")
		}
		k, n, err := quoted(s[i+1:])
		if err != nil {
			return cl, 0, err
		}
		i += 1 + n
		if i >= len(s) || s[i] != ']' {
			return cl, 0, fmt.Errorf("missing ] after metadata key")
		}
		i++
		cl.key = k
	case "status", "currency", "customer", "amount", "created":
	case "":
		return cl, 0, fmt.Errorf("expected a field at %q", s)
	default:
		return cl, 0, fmt.Errorf("field %q is not supported for payment_intents", cl.field)
	}
	for _, op := range []string{">=", "<=", ":", ">", "<"} {
		if strings.HasPrefix(s[i:], op) {
			cl.op = op
			i += len(op)
			break
		}
	}
	if cl.op == "" {
		return cl, 0, fmt.Errorf("expected ':' after %s", cl.field)
	}
	numeric := cl.field == "amount" || cl.field == "created"
	if cl.op != ":" && !numeric {
		return cl, 0, fmt.Errorf("field %s only supports ':'", cl.field)
	}
	switch {
	case i < len(s) && (s[i] == '\'' || s[i] == '"'):
		v, n, err := quoted(s[i:])
		if err != nil {
			return cl, 0, err
		}
		cl.value = v
		i += n
	case strings.HasPrefix(s[i:], "null"):
		cl.null = true
		i += 4
	default:
		j := i
		for j < len(s) && s[j] >= '0' && s[j] <= '9' {
			j++
		}
		if j == i || !numeric {
			return cl, 0, fmt.Errorf("expected a quoted value for %s", cl.field)
		}
		cl.value = s[i:j]
		i = j
	}
	if numeric && !cl.null {
		if _, err := strconv.ParseInt(cl.value, 10, 64); err != nil {
			return cl, 0, fmt.Errorf("%s needs a number", cl.field)
		}
	}
	return cl, i, nil
}

// quoted reads a '...' or "..." string (backslash escapes the quote).
func quoted(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if i+1 < len(s) {
				i++
				b.WriteByte(s[i])
			}
		case q:
			return b.String(), i + 1, nil
		default:
			b.WriteByte(s[i])
		}
	}
	return "", 0, fmt.Errorf("unterminated string")
}

func (cl searchClause) matches(pi *stripewire.PaymentIntent) bool {
	var ok bool
	switch cl.field {
	case "metadata":
		v, has := pi.Metadata[cl.key]
		if cl.null {
			ok = !has
		} else {
			ok = has && v == cl.value
		}
	case "status":
		ok = strings.EqualFold(pi.Status, cl.value)
	case "currency":
		ok = strings.EqualFold(pi.Currency, cl.value)
	case "customer":
		ok = pi.Customer == cl.value || (cl.null && pi.Customer == "")
	case "amount", "created":
		have := pi.Amount
		if cl.field == "created" {
			have = pi.Created
		}
		want, _ := strconv.ParseInt(cl.value, 10, 64)
		switch cl.op {
		case ":":
			ok = have == want
		case ">":
			ok = have > want
		case "<":
			ok = have < want
		case ">=":
			ok = have >= want
		case "<=":
			ok = have <= want
		}
	}
	return ok != cl.negate
}

func (q searchQuery) matches(pi *stripewire.PaymentIntent) bool {
	for _, cl := range q.clauses {
		m := cl.matches(pi)
		if q.or && m {
			return true
		}
		if !q.or && !m {
			return false
		}
	}
	return !q.or
}

// searchIntents is GET /v1/payment_intents/search. Like Stripe's search it
// is eventually consistent: a PaymentIntent is found only once SearchLag has
// passed since its creation.
func (s *StripeHandler) searchIntents(c *call) (*response, bool) {
	v := c.query
	if r := s.checkParams(c, v, paramSet{names: []string{"query", "limit", "page"}, prefixes: []string{"expand["}}); r != nil {
		return r, false
	}
	raw := v.Get("query")
	if raw == "" {
		return s.invalid(c, "parameter_missing", "query", "Missing required param: query."), false
	}
	q, err := parseSearchQuery(raw)
	if err != nil {
		return s.invalid(c, "", "query", "Invalid query: "+err.Error()+"."), false
	}
	limit := 10
	n, ok, r := s.intParam(c, v, "limit", 1, 100)
	if r != nil {
		return r, false
	}
	if ok {
		limit = int(n)
	}
	offset := 0
	if pg := v.Get("page"); pg != "" {
		o, err := strconv.Atoi(strings.TrimPrefix(pg, "page_"))
		if err != nil || o < 0 || !strings.HasPrefix(pg, "page_") {
			return s.invalid(c, "", "page", "Invalid page: "+pg), false
		}
		offset = o
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	visibleBefore := c.now.Add(-s.searchLag)
	hits := newestFirst(s.intentOrder, func(in *stripeIntent) bool {
		return !in.createdAt.After(visibleBefore) && q.matches(&in.pi)
	})
	out := stripewire.SearchResult[stripewire.PaymentIntent]{Object: "search_result", URL: "/v1/payment_intents/search",
		Data: []stripewire.PaymentIntent{}}
	if offset > len(hits) {
		offset = len(hits)
	}
	end := min(offset+limit, len(hits))
	for _, in := range hits[offset:end] {
		out.Data = append(out.Data, in.pi)
	}
	if end < len(hits) {
		out.HasMore = true
		out.NextPage = "page_" + strconv.Itoa(end)
	}
	return s.jsonResponse(c, http.StatusOK, out), true
}
