// Package consoletest drives the operator console ("payonce console": its
// login and the console package's pages) in a real headless Chromium with
// chromedp. It is test-only and lives in the cmd/payonce module so that the
// library's module graph stays free of chromedp.
//
// The tests need Debian's chromium (apt-get install chromium); without it
// they skip, unless PAYONCE_REQUIRE_BROWSER=1 (set by .ci/run), which makes
// them fail. PAYONCE_SCREENSHOTS names a directory for a PNG of each page
// (default: a temporary directory).
package consoletest
