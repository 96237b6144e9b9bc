package paypal

import "context"

func (p *Provider) verifyAPI(ctx context.Context, t transmission, body []byte) error { return errTODO }
