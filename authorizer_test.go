package payonce_test

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/payonce/payonce"
	"github.com/payonce/payonce/ledger"
	"github.com/payonce/payonce/providers/stripe"
)

// authorizing is the Stripe adapter with its credential added at send time,
// as an adapter with OAuth2 tokens (PayPal) adds it.
type authorizing struct {
	*stripe.Provider
	key   string
	fail  atomic.Bool
	calls atomic.Int32
}

func (a *authorizing) NewRequest(ctx context.Context, sr payonce.SendRequest) (*http.Request, error) {
	req, err := a.Provider.NewRequest(ctx, sr)
	if req != nil {
		req.Header.Del("Authorization")
	}
	return req, err
}

func (a *authorizing) AuthorizeRequest(ctx context.Context, hc payonce.HTTPDoer, req *http.Request) error {
	a.calls.Add(1)
	if hc == nil || ctx.Err() != nil {
		return errors.New("no doer or a done context")
	}
	if a.fail.Load() {
		return errors.New("token endpoint answered 503")
	}
	req.Header.Set("Authorization", "Bearer "+a.key)
	return nil
}

// A RequestAuthorizer's credential is added to every attempt before it is
// sent; when it cannot be had, the attempt is recorded not sent and nothing
// reaches the provider.
func TestRequestAuthorizer(t *testing.T) {
	t.Parallel()
	var a *authorizing
	b := setup(t, setupOpts{config: func(c *payonce.Config) {
		a = &authorizing{Provider: c.Provider.(*stripe.Provider)}
		c.Provider = a
	}})
	a.key = b.fake.APIKey()
	a.fail.Store(true)
	p := charge("order-auth", 1500)
	_, err := b.client.Charge(b.ctx, p)
	require.Error(t, err)
	require.Zero(t, postsOf(b), "a request without its credential was sent")
	require.Positive(t, a.calls.Load())
	op, err := b.client.PrepareCharge(b.ctx, p)
	require.NoError(t, err)
	_, atts := attemptsOf(t, b, op.ID)
	require.NotEmpty(t, atts)
	for _, att := range atts {
		require.Equal(t, ledger.OutcomeNotSent, att.Outcome, "%+v", att)
		require.Contains(t, att.Error, "authorizing request: token endpoint answered 503")
	}

	a.fail.Store(false)
	res, err := b.client.Charge(b.ctx, p)
	require.NoError(t, err)
	require.Equal(t, payonce.ResultSucceeded, res.Status)
	require.Equal(t, 1, b.chargesOf(t, res.OperationID))
}
