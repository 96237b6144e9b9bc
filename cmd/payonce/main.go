// Command payonce charges, captures, cancels and refunds through payment
// providers so that money moves exactly once, reconciles what failures left
// unknown, and lets operators inspect the ledger and resolve reviews.
//
// Run "payonce help" for the commands and "payonce <command> -h" for their
// flags. Exit codes: 0 succeeded; 1 any other error; 2 usage or
// configuration error; 3 failed (declined or refused); 4 outcome unknown;
// 5 in progress; 6 manual review; 7 provider unavailable (nothing sent,
// pending); 8 ledger unavailable (nothing sent; retry later); 9 not settled
// (reconcile --until-settled stopped with work left). See package
// internal/cli.
package main

import (
	"context"
	"os"

	"github.com/payonce/payonce/cmd/payonce/internal/cli"
)

func main() {
	os.Exit(cli.Main(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}
