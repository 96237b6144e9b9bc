package adyen

import (
	"crypto/sha256"

	"github.com/google/uuid"
)

// Why the adapter does not send payonce's key as it is: Adyen keeps
// idempotency keys per company account, not per merchant account. "Keys
// are stored at a company account level. The system checks that the
// idempotency keys are unique to the company account"
// (https://docs.adyen.com/development-resources/api-idempotency, "Key
// scope and validity time"), and a key it has seen gets "the response to
// the first attempt", whatever the new request. payonce's key is derived
// from the provider name, the kind and the order id only (keys.go), so two
// merchant accounts of one company charging the same order id would send
// the same key: the second would get the first one's stored Authorised
// answer, classify it as its own success, and ship goods nobody paid for.
// The answer cannot catch this: a PaymentResponse names no merchant
// account (see classify.go).
//
// So the key on the wire is IdempotencyKey(Config.MerchantAccount, key):
// scoped to the merchant account, and a pure function of its inputs, so
// that every retry of an operation, in any process, after any restart or
// upgrade, sends the same wire key (a new wire key for an operation Adyen
// has carried out would be a second payment). It is frozen like payonce's
// own keys (TestIdempotencyKeyGolden): nothing below may change. A new
// scheme would get a new version tag and live beside this one.
//
// Adyen also advises random (version 4) keys "to prevent two web service
// users under the same account from accessing each others responses"
// (same page, "Security considerations"). payonce's keys are derived, not
// random, because a random key is lost with the process that drew it; so
// another web service user of the company who knows an order id and the
// merchant account can compute a key and read the stored answer of that
// payment. No secret is mixed in: a secret lost or changed while an
// operation is unsettled changes its key, and the resend is a second
// payment. Keep the company's API credentials to the services that need
// them (docs/ADAPTERS.md, "Where each provider keeps keys").

// keyNamespaceText is the namespace of the wire keys:
// uuid.NewSHA1(uuid.NameSpaceURL, "https://github.com/payonce/payonce/providers/adyen/idempotency-key/v1"),
// computed once and written out so that nothing can move it. IT MUST NEVER
// CHANGE.
const keyNamespaceText = "750a9c22-8c78-54f5-aad6-83d50c06f0ac"

// keyVersion starts the name every wire key is hashed from.
const keyVersion = "payonce/adyen/idempotency-key/v1"

var keyNamespace = uuid.MustParse(keyNamespaceText)

// IdempotencyKey returns the Idempotency-Key the adapter sends to Adyen for
// payonce's key on merchantAccount: a name-based UUID with SHA-256
// (version 8, RFC 9562 appendix B.2): the first 16 bytes of the SHA-256 of
// the 16 bytes of the namespace 750a9c22-8c78-54f5-aad6-83d50c06f0ac
// followed by the name
//
//	"payonce/adyen/idempotency-key/v1" NUL merchantAccount NUL key
//
// (NUL is the zero byte; a merchant account holds none, so the name splits
// one way only), with the version nibble set to 8 and the RFC 4122
// variant, written in lower-case hex as 8-4-4-4-12. It is 36 characters in Adyen's recommended UUID form
// (Adyen accepts up to 64), the same for the same inputs in every process
// and release, and different for every other merchant account. The
// merchant account is taken exactly as configured: changing
// Config.MerchantAccount, even its case, changes every key, so do it only
// when no Adyen operation is unsettled.
func IdempotencyKey(merchantAccount, key string) string {
	name := make([]byte, 0, len(keyVersion)+len(merchantAccount)+len(key)+2)
	name = append(name, keyVersion...)
	name = append(name, 0)
	name = append(name, merchantAccount...)
	name = append(name, 0)
	name = append(name, key...)
	return uuid.NewHash(sha256.New(), keyNamespace, name, 8).String()
}
