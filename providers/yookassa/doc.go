// Package yookassa is payonce's adapter for YooKassa's API v3
// (https://api.yookassa.ru/v3): charges are payments made with a saved
// payment method (payment_method_id), one-stage or two-stage (capture
// false, then capture or cancel), and refunds are refunds of a payment. It
// builds the JSON requests with the operation's Idempotence-Key, writes
// amounts as decimal strings with each currency's minor-unit digits,
// classifies YooKassa's answers, and looks operations up by id, by the
// payments list (matched on the payonce_op metadata it writes) or by a
// payment's refunds (matched on the operation id it writes in the refund
// description, since YooKassa refunds carry no metadata; under a later key
// generation the key is written there too). A list hit is read again by id
// before it counts, every object read (and every 2xx answer) is checked to
// belong to the request (operation id, amount in minor units, currency),
// and the objects of every key generation are combined by
// adapterkit.Combine. A payment canceled after authorization
// (canceled_by_merchant, expired_on_capture) is a charge that succeeded,
// for Classify and Lookup alike; any other canceled payment is a decline.
//
// The adapter is a payonce.AuditLister: Client.Audit compares the ledger
// with YooKassa's lists of payments and refunds of a period (ListObjects,
// GETs only, paced by Config.AuditInterval).
//
// The smallest use: build the adapter and hand it to a payonce client.
//
//	p, err := yookassa.New(yookassa.Config{
//		ShopID:    os.Getenv("YOOKASSA_SHOP_ID"),
//		SecretKey: os.Getenv("YOOKASSA_SECRET_KEY"),
//	})
//	if err != nil {
//		return err // names the Config field and how to fix it
//	}
//	client, err := payonce.New(payonce.Config{Provider: p, Store: store})
//	res, err := client.Charge(ctx, payonce.ChargeParams{
//		OrderID: "order-42", Amount: 120000, Currency: "RUB", // 1200.00 RUB
//		PaymentMethod: savedPaymentMethodID,
//	})
//
// YooKassa facts the adapter relies on: a repeat with the same
// Idempotence-Key within 24 hours is the same request (after that, a new
// one); a repeat while the first still runs gets 202 with retry_after in
// milliseconds; the same key with another body gets 400 invalid_request
// "Idempotence key duplicated"; a 500 means the outcome is unknown and the
// request should be repeated with the same key. Refunds need an explicit
// amount. The shop id and secret key are sent only in the Authorization
// header; they never appear in errors, in the Outcome or LookupResult the
// adapter returns, or when a Config or Provider is printed or logged.
package yookassa
