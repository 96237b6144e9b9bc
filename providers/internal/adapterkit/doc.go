// Package adapterkit holds what payonce's provider adapters
// (providers/stripe, providers/yookassa, providers/checkout,
// providers/adyen) do the same way, so that each adapter writes only its
// provider's facts: its request shapes, its classification table, its
// lookup queries and what its webhooks sign (docs/ADAPTERS.md walks
// through a new adapter). Its helpers are plain functions and types that
// an adapter calls in order; an adapter's New, Classify and lookups read
// top to bottom.
//
//   - Secrets: Secret, Format, LogValue, NowSet, DisplayURL, Scrub.
//   - Configs: NotToken (a header value's characters), CheckBaseURL,
//     DurationOrDefault, Invalid: what each adapter's New checks, in order.
//   - Requests: CheckKey, Metadata, MetadataLimits with WithMetadata and
//     CheckMetadata (the caller's metadata held to the provider's limits),
//     References, EncodeJSON, Post, PostJSON.
//   - Answers: Answer, Rule, Status, Refusal, RetryAfterHeader (the
//     classification table of answers that are not 2xx); Unreadable and
//     Contradicted (a 2xx the adapter cannot settle on); State and Verdict,
//     one mapping of a provider object for Classify and Lookup.
//   - Reading: Get and GetJSON (one bounded GET; an answer a lookup cannot use is a
//     Failure, which the adapter turns into its APIError), Fail,
//     Unusable, DecodeJSON, DecodeError, ErrorText, Temporary.
//   - Lookups: Lookups, NeedsSearch, Objects, Combine, Belongs, IsEarlier:
//     Objects is the one place where the objects a lookup found become a
//     LookupResult.
//   - Webhooks: HMACSHA256, EqualHex, EqualBase64, EqualSecret (constant-time
//     signature and credential checks); Unauthenticated, Credentials,
//     Forbidden, Malformed (errors wrapping payonce's ErrWebhook*, which
//     pick the handler's status); DecodeWebhook (a bounded body);
//     CheckEvent (an event the ledger can store), OneEvent (a delivery of
//     one such event); WebhookState (a State as a LookupState).
//
// The package is internal to providers/: its API may change with the
// adapters.
package adapterkit
