//go:build race

package cli_test

func init() { raceEnabled = true }
