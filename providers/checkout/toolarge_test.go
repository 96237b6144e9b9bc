package checkout_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/providers/checkout"
)

// A 404 too large to read proves nothing, even from Checkout.com (with its
// Cko-Request-Id): its body, unread, cannot say that the object does not
// exist. The lookup fails with an *APIError instead of reporting "not
// found", which would let the operation be treated as never sent.
func TestLookup404TooLargeIsNotNotFound(t *testing.T) {
	t.Parallel()
	big := `{"padding":"` + strings.Repeat("x", payonce.MaxBodyBytes) + `"}`
	for _, tc := range []struct {
		name, url string
		q         payonce.LookupQuery
	}{
		{"payment by id", "/payments/pay_big", lookupQuery(payonce.KindCharge, "", "pay_big")},
		{"actions", "/payments/pay_big/actions", lookupQuery(payonce.KindRefund, "pay_big", "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			b.MT.RegisterResponder(http.MethodGet, base+tc.url, func(*http.Request) (*http.Response, error) {
				return respond(404, big), nil
			})
			res, err := b.P.Lookup(context.Background(), b.HC, tc.q)
			require.Error(t, err, "got %+v", res)
			var apiErr *checkout.APIError
			require.True(t, errors.As(err, &apiErr), "%T %v", err, err)
			require.Equal(t, http.StatusNotFound, apiErr.HTTPStatus)
			require.Contains(t, apiErr.Message, "larger than")
			require.NotEqual(t, payonce.LookupNotFound, res.State)
		})
	}
}
