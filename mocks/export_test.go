package mocks

import "github.com/payonce/payonce/mocks/internal/stripewire"

// The fakes' wire types and provider facts are unexported: a user talks
// to a fake over HTTP. These aliases let the package's external tests
// (package mocks_test) decode the fakes' answers into the very types the
// fakes render.

type (
	StripePaymentIntent         = stripewire.PaymentIntent
	StripeRefund                = stripewire.Refund
	StripeCharge                = stripewire.Charge
	StripeError                 = stripewire.Error
	StripeErrorBody             = stripewire.ErrorBody
	StripeIntentList            = stripewire.List[stripewire.PaymentIntent]
	StripeRefundList            = stripewire.List[stripewire.Refund]
	StripeIntentSearch          = stripewire.SearchResult[stripewire.PaymentIntent]
	StripeEvent                 = stripeEvent
	YooKassaAmount              = yooKassaAmount
	YooKassaCancellationDetails = yooKassaCancellationDetails
	YooKassaError               = yooKassaError
	YooKassaPaymentList         = yooKassaList[yooKassaPayment]
	YooKassaRefundList          = yooKassaList[yooKassaRefund]
	YooKassaNotification        = yooKassaNotification
	YooKassaPayment             = yooKassaPayment
	YooKassaProcessing          = yooKassaProcessing
	YooKassaRefund              = yooKassaRefund
	CheckoutAction              = checkoutAction
	CheckoutActionAccepted      = checkoutActionAccepted
	CheckoutError               = checkoutError
	CheckoutEvent               = checkoutEvent
	CheckoutPayment             = checkoutPayment
	CheckoutPaymentList         = checkoutPaymentList
	AdyenError                  = adyenError
	AdyenNotification           = adyenNotification
	AdyenNotificationItem       = adyenNotificationItem
	PayPalOrder                 = paypalOrder
	PayPalAuthorization         = paypalAuthorization
	PayPalCapture               = paypalCapture
	PayPalRefund                = paypalRefund
	PayPalMinimal               = paypalMinimal
	PayPalError                 = paypalError
	PayPalOAuthError            = paypalOAuthError
	PayPalToken                 = paypalToken
	PayPalEvent                 = paypalEvent
	PayPalSearch                = paypalSearch
)

const (
	StripeKeyTTL         = stripeKeyTTL
	YooKassaKeyTTL       = yooKassaKeyTTL
	CheckoutKeyTTL       = checkoutKeyTTL
	AdyenKeyTTL          = adyenKeyTTL
	PayPalOrdersKeyTTL   = paypalOrdersKeyTTL
	PayPalPaymentsKeyTTL = paypalPaymentsKeyTTL
	PayPalTokenTTL       = paypalTokenTTL
	PayPalSearchLag      = paypalSearchLag
	MaxBodyBytes         = maxBodyBytes
)

var NewAdyenNotification = newAdyenNotification
