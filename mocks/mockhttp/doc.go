// Package mockhttp builds github.com/jarcoal/httpmock responders that answer
// in a provider's wire format (the shapes of package mocks), for unit tests of
// request shapes and error parsing that do not need a full fake.
//
// It lives apart from package mocks so that code which imports mocks outside
// tests (the payonce demo) links neither httpmock nor, through it, package
// testing. Import it from tests only.
package mockhttp
