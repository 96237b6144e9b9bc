package stripe_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jarcoal/httpmock"
	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/stripe"
)

// since is the first attempt's start in the list tests: five minutes
// before testNow, the adapter's clock.
var since = testNow.Add(-5 * time.Minute)

// lostAnswer is chargeReq's charge whose answer was lost: no ProviderRef,
// the attempt started at since.
func lostAnswer() payonce.LookupQuery {
	q := lookupQuery(payonce.KindCharge, "", "")
	q.Since = since
	return q
}

func listJSON(hasMore bool, pis ...string) string {
	return fmt.Sprintf(`{"object":"list","url":"/v1/payment_intents","has_more":%t,"data":[%s]}`, hasMore, strings.Join(pis, ","))
}

// otherPI is a PaymentIntent of another operation.
func otherPI(i int) string {
	return piObj(fmt.Sprintf("pi_other_%03d", i), "succeeded", "metadata",
		map[string]string{stripe.MetaOperation: fmt.Sprintf("op-%d", i), stripe.MetaKey: fmt.Sprintf("key-%d", i)})
}

// servePages answers GET /v1/payment_intents with pages (a page's has_more
// is set when another follows; more forces has_more on the last), and
// records every query.
func servePages(t *testing.T, b bundle, more bool, pages ...[]string) *[]url.Values {
	t.Helper()
	var got []url.Values
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents", func(req *http.Request) (*http.Response, error) {
		require.Equal(t, "Bearer "+testKey, req.Header.Get("Authorization"))
		got = append(got, req.URL.Query())
		i := len(got) - 1
		if i >= len(pages) {
			return respond(500, `{"error":{"type":"api_error","message":"test: no such page"}}`), nil
		}
		return respond(200, listJSON(i < len(pages)-1 || more, pages[i]...)), nil
	})
	return &got
}

// noSearch fails the test if the search is called.
func noSearch(t *testing.T, b bundle) {
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/search", func(*http.Request) (*http.Response, error) {
		t.Error("the search was called: the list covered the window")
		return nil, errors.New("no search")
	})
}

// The list request: the window from Since − LookupMargin to now +
// LookupMargin (whole seconds, both ends included), 100 a page, and
// starting_after the last id of the page before.
func TestLookupChargeListRequestShape(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *stripe.Config) { c.LookupMargin = 2 * time.Minute; c.MaxListPages = 2 })
	page1 := make([]string, 100)
	for i := range page1 {
		page1[i] = otherPI(i)
	}
	got := servePages(t, b, false, page1, []string{otherPI(100)})
	noSearch(t, b)
	res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.NoError(t, err)
	require.Equal(t, payonce.LookupResult{State: payonce.LookupNotFound}, res, "listed to its end: not found at once (Lag 0)")
	require.Len(t, *got, 2)
	first, second := (*got)[0], (*got)[1]
	require.Equal(t, url.Values{
		"created[gte]": {strconv.FormatInt(since.Add(-2*time.Minute).Unix(), 10)},
		"created[lte]": {strconv.FormatInt(testNow.Add(2*time.Minute).Unix(), 10)},
		"limit":        {"100"},
	}, first)
	require.Equal(t, "pi_other_099", second.Get("starting_after"))
	second.Del("starting_after")
	require.Equal(t, first, second, "every page asks for the same window")

	// A Since with a fraction of a second: the window is rounded outward.
	b2 := setup(t, func(c *stripe.Config) {
		c.LookupMargin = time.Minute
		c.Now = func() time.Time { return testNow.Add(300 * time.Millisecond) }
	})
	got = servePages(t, b2, false, nil)
	q := lostAnswer()
	q.Since = since.Add(700 * time.Millisecond)
	_, err = b2.P.Lookup(context.Background(), b2.HC, q)
	require.NoError(t, err)
	require.Equal(t, strconv.FormatInt(since.Add(-time.Minute).Unix(), 10), (*got)[0].Get("created[gte]"))
	require.Equal(t, strconv.FormatInt(testNow.Add(time.Minute+time.Second).Unix(), 10), (*got)[0].Get("created[lte]"))
}

// A lost answer is found by the list at once: Lag 0, the hit read by id.
// The list's own copy is not trusted for its status.
func TestLookupChargeFoundByList(t *testing.T) {
	t.Parallel()
	b := setup(t)
	servePages(t, b, false, []string{otherPI(1), piJSON("pi_ours", "processing", 0, ""), otherPI(2)})
	noSearch(t, b)
	getOK(t, b, base+"/v1/payment_intents/pi_ours", 200, piJSON("pi_ours", "succeeded", 1999, ""))
	res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.NoError(t, err)
	require.Equal(t, payonce.LookupSucceeded, res.State, "the read by id decides")
	require.Equal(t, "pi_ours", res.ProviderRef)
	require.Equal(t, []string{"pi_ours"}, res.Refs)
	require.Zero(t, res.Lag, "a list is consistent")

	// Listed, then gone when read by id: not an answer.
	b = setup(t)
	servePages(t, b, false, []string{piJSON("pi_ours", "succeeded", 1999, "")})
	getOK(t, b, base+"/v1/payment_intents/pi_ours", 404, `{"error":{"type":"invalid_request_error","code":"resource_missing","message":"No such payment_intent: 'pi_ours'"}}`)
	_, err = b.P.Lookup(context.Background(), b.HC, lostAnswer())
	var apiErr *stripe.APIError
	require.ErrorAs(t, err, &apiErr)
}

// Ours is found past 250 PaymentIntents of other operations (three
// pages), and a PaymentIntent carrying one of the operation's keys but
// another operation id is kept, to be reported as a contradiction.
func TestLookupChargeListPagesPastOthers(t *testing.T) {
	t.Parallel()
	var pages [][]string
	n := 0
	for p := range 3 {
		var page []string
		for range 100 {
			if p == 2 && len(page) == 50 {
				break
			}
			page = append(page, otherPI(n))
			n++
		}
		pages = append(pages, page)
	}
	pages[2] = append(pages[2], piJSON("pi_ours", "succeeded", 1999, ""))
	b := setup(t, func(c *stripe.Config) { c.MaxListPages = 3 })
	got := servePages(t, b, false, pages...)
	noSearch(t, b)
	getOK(t, b, base+"/v1/payment_intents/pi_ours", 200, piJSON("pi_ours", "succeeded", 1999, ""))
	res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.NoError(t, err)
	require.Len(t, *got, 3)
	require.Equal(t, payonce.LookupSucceeded, res.State)
	require.Equal(t, "pi_ours", res.ProviderRef)
	require.Zero(t, res.Lag)

	b = setup(t)
	stray := piObj("pi_stray", "succeeded", "metadata", map[string]string{stripe.MetaOperation: "another-op", stripe.MetaKey: opKey})
	servePages(t, b, false, []string{otherPI(1), stray})
	getOK(t, b, base+"/v1/payment_intents/pi_stray", 200, stray)
	res, err = b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.NoError(t, err)
	require.NotEmpty(t, res.Contradiction, "our key on another operation: for review, never dropped")
}

// More pages than MaxListPages: the list proves nothing. The lookup falls
// back to search (Lag SearchLag), or, with search disabled, fails: never
// "not found".
func TestLookupChargeListBound(t *testing.T) {
	t.Parallel()
	full := func() [][]string {
		var pages [][]string
		for p := range 2 {
			page := make([]string, 100)
			for i := range page {
				page[i] = otherPI(p*100 + i)
			}
			pages = append(pages, page)
		}
		return pages
	}
	t.Run("search", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *stripe.Config) { c.MaxListPages = 2; c.SearchLag = 90 * time.Second })
		got := servePages(t, b, true, full()...)
		var searched bool
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/search", func(*http.Request) (*http.Response, error) {
			searched = true
			return respond(200, searchJSON(false)), nil
		})
		res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
		require.NoError(t, err)
		require.Len(t, *got, 2, "no page past the bound")
		require.True(t, searched)
		require.Equal(t, payonce.LookupNotFound, res.State)
		require.Equal(t, 90*time.Second, res.Lag, "the search decided: its lag")
	})
	t.Run("search disabled", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *stripe.Config) { c.MaxListPages = 2; c.SearchDisabled = true })
		servePages(t, b, true, full()...)
		noSearch(t, b)
		res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
		require.Error(t, err, "got %+v", res)
		require.Contains(t, err.Error(), "search is disabled")
		require.Contains(t, err.Error(), "more than 200 PaymentIntents")
	})
	t.Run("hits before the bound count", func(t *testing.T) {
		t.Parallel()
		b := setup(t, func(c *stripe.Config) { c.MaxListPages = 2 })
		pages := full()
		pages[0][7] = piJSON("pi_ours", "requires_payment_method", 0, declined)
		servePages(t, b, true, pages...)
		b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/search", httpmock.NewStringResponder(200, searchJSON(false)))
		getOK(t, b, base+"/v1/payment_intents/pi_ours", 200, piJSON("pi_ours", "requires_payment_method", 0, declined))
		res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
		require.NoError(t, err)
		require.Equal(t, payonce.LookupFailed, res.State, "the search (behind) missed it; the list had it")
	})
}

// Since unknown: the window cannot be listed. Search, or an error when it
// is disabled. A list that fails falls back to the search (with its lag),
// or is an error when search is disabled: never "not found" by the list.
func TestLookupChargeListCannotTell(t *testing.T) {
	t.Parallel()
	b := setup(t, func(c *stripe.Config) { c.SearchDisabled = true })
	q := lostAnswer()
	q.Since = time.Time{}
	_, err := b.P.Lookup(context.Background(), b.HC, q)
	require.ErrorContains(t, err, "Since is unknown")
	require.ErrorContains(t, err, "search is disabled")

	b = setup(t)
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents", httpmock.NewStringResponder(500, `{"error":{"type":"api_error","message":"boom"}}`))
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/search", httpmock.NewStringResponder(200, searchJSON(false)))
	res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.NoError(t, err, "a failed list page falls back to the search")
	require.Equal(t, payonce.LookupNotFound, res.State)
	require.Equal(t, stripe.DefaultSearchLag, res.Lag, "the search decided: its lag applies")

	b = setup(t, func(c *stripe.Config) { c.SearchDisabled = true })
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents", httpmock.NewStringResponder(500, `{"error":{"type":"api_error","message":"boom"}}`))
	_, err = b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.ErrorContains(t, err, "listing the window failed")
	require.ErrorContains(t, err, "search is disabled")
	var apiErr *stripe.APIError

	b = setup(t)
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents", httpmock.NewStringResponder(200, `{"object":"search_result","data":[],"has_more":false}`))
	_, err = b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.ErrorAs(t, err, &apiErr, "not a list: unusable")
}

// A resent operation whose ProviderRef is known still lists (earlier
// generations' PaymentIntents may be unknown to the ledger).
func TestLookupChargeListResent(t *testing.T) {
	t.Parallel()
	b := setup(t)
	q := lostAnswer()
	q.Generation, q.Key, q.EarlierKeys, q.ProviderRef = 1, "key-gen-1", []string{opKey}, "pi_new"
	earlier := piJSON("pi_old", "succeeded", 1999, "")
	servePages(t, b, false, []string{piObj("pi_new", "requires_payment_method", "metadata", md("key-gen-1")), earlier})
	noSearch(t, b)
	getOK(t, b, base+"/v1/payment_intents/pi_new", 200, piObj("pi_new", "requires_payment_method", "metadata", md("key-gen-1")))
	getOK(t, b, base+"/v1/payment_intents/pi_old", 200, earlier)
	res, err := b.P.Lookup(context.Background(), b.HC, q)
	require.NoError(t, err)
	require.Equal(t, payonce.LookupSucceeded, res.State, "the earlier generation's PaymentIntent succeeded")
	require.Equal(t, "pi_old", res.ProviderRef)
	require.Zero(t, res.Lag)
}

func TestConfigListOptions(t *testing.T) {
	t.Parallel()
	_, err := stripe.New(stripe.Config{APIKey: testKey, MaxListPages: -1})
	require.ErrorIs(t, err, payonce.ErrInvalid)
	require.ErrorContains(t, err, "MaxListPages")
	_, err = stripe.New(stripe.Config{APIKey: testKey, LookupMargin: -time.Second})
	require.ErrorContains(t, err, "LookupMargin")
	_, err = stripe.New(stripe.Config{APIKey: testKey, ListDisabled: true, SearchDisabled: true})
	require.ErrorContains(t, err, "ListDisabled")
	p, err := stripe.New(stripe.Config{APIKey: testKey, SearchDisabled: true})
	require.NoError(t, err)
	require.Contains(t, p.String(), "SearchDisabled:true")
	require.Contains(t, fmt.Sprint(stripe.Config{APIKey: testKey, MaxListPages: 3}), "MaxListPages:3")
}

// A window that held more than MaxListPages pages makes the next lookups
// go straight to the search for a while (the account is too busy for the
// list to cover a window): one extra read per burst, not per lookup. Once
// that while has passed, lookups list again.
func TestLookupChargeDenseWindowSkipsList(t *testing.T) {
	t.Parallel()
	now := testNow
	b := setup(t, func(c *stripe.Config) { c.Now = func() time.Time { return now } })
	page := make([]string, 100)
	for i := range page {
		page[i] = otherPI(i)
	}
	got := servePages(t, b, true, page)
	b.MT.RegisterResponder(http.MethodGet, base+"/v1/payment_intents/search", httpmock.NewStringResponder(200, searchJSON(false)))

	for range 3 {
		res, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
		require.NoError(t, err)
		require.Equal(t, payonce.LookupNotFound, res.State)
		require.Equal(t, stripe.DefaultSearchLag, res.Lag, "the search decided")
	}
	require.Len(t, *got, 1, "only the first lookup listed; the next went to the search")

	now = now.Add(5*time.Minute + time.Second)
	_, err := b.P.Lookup(context.Background(), b.HC, lostAnswer())
	require.NoError(t, err)
	require.Len(t, *got, 2, "a while later the list is tried again")
}
