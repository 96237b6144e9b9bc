// Package adapterkit holds what payonce's provider adapters (providers/stripe,
// providers/yookassa, providers/checkout) do the same way: keeping secrets
// out of printed values and provider messages, checking a base URL, reading
// a bounded GET answer, parsing Retry-After, and writing payonce's own
// metadata. Each adapter keeps its own wire format, classification and
// lookup rules; only code that is truly the same lives here.
//
// The package is internal to providers/: its API may change with the
// adapters.
package adapterkit
