package main

import (
	"testing"
)

func TestParsePGBench(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		tps     float64
		latency float64
		n, fail int64
	}{
		{
			name: "PostgreSQL 15",
			out: `pgbench (15.20 (Debian 15.20-0+deb12u1))
transaction type: /tmp/ceiling.sql
scaling factor: 1
query mode: prepared
number of clients: 1
number of threads: 1
maximum number of tries: 1
duration: 2 s
number of transactions actually processed: 7870
number of failed transactions: 0 (0.000%)
latency average = 0.254 ms
initial connection time = 3.188 ms
tps = 3940.885713 (without initial connection time)
`,
			tps: 3940.885713, latency: 0.254, n: 7870,
		},
		{
			name: "PostgreSQL 12, excluding connections",
			out: `number of transactions actually processed: 1000/1000
latency average = 1.500 ms
tps = 650.100000 (including connections establishing)
tps = 666.666667 (excluding connections establishing)
`,
			tps: 666.666667, latency: 1.5, n: 1000,
		},
		{
			name: "failures and microseconds",
			out: `number of transactions actually processed: 50
number of failed transactions: 3 (5.660%)
latency average = 750 us
tps = 12.5
`,
			tps: 12.5, latency: 0.75, n: 50, fail: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parsePGBench(tt.out)
			if err != nil {
				t.Fatal(err)
			}
			if r.TPS != tt.tps || r.LatencyMS != tt.latency || r.Processed != tt.n || r.Failed != tt.fail {
				t.Errorf("got tps %v latency %v processed %d failed %d, want %v %v %d %d",
					r.TPS, r.LatencyMS, r.Processed, r.Failed, tt.tps, tt.latency, tt.n, tt.fail)
			}
		})
	}
	if _, err := parsePGBench("pgbench: error: connection to server failed\n"); err == nil {
		t.Error("output without tps parsed without an error")
	}
}

func TestIntList(t *testing.T) {
	got, err := intList(" 32,1,8,8", 1)
	if err != nil || len(got) != 3 || got[0] != 1 || got[1] != 8 || got[2] != 32 {
		t.Errorf("intList = %v, %v; want [1 8 32]", got, err)
	}
	for _, bad := range []string{"", "0", "a", "1,,2"} {
		if _, err := intList(bad, 1); err == nil {
			t.Errorf("intList(%q) accepted", bad)
		}
	}
}
