package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestSimPileus runs `cosla sim pileus` briefly and checks its tables: one
// per SLA, a row per client site and strategy, with the paper's utility
// beside Pileus's, and the same rows as JSON.
func TestSimPileus(t *testing.T) {
	code, stdout, stderr := runCosla(t, "sim", "pileus", "--sessions", "1")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "trace hash") {
		t.Errorf("stderr does not give the trace hash:\n%s", stderr)
	}
	for _, want := range []string{
		"shopping-cart SLA: read-my-writes 300ms 1; eventual 300ms 0.5",
		"password-checking SLA: strong 150ms 1; eventual 150ms 0.5; strong 1s 0.25",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	var rows, paper int
	for line := range strings.Lines(stdout) {
		f := strings.Fields(line)
		if len(f) > 4 && (f[1] == "pileus" || f[1] == "primary" || f[1] == "random" || f[1] == "closest") {
			rows++
			if f[1] == "pileus" && strings.Contains(f[4], ".") {
				paper++
			}
		}
	}
	if rows != 32 || paper != 8 {
		t.Errorf("%d rows, %d with the paper's Pileus utility; want 32 (2 SLAs x 4 sites x 4 strategies), 8\n%s", rows, paper, stdout)
	}

	code, stdout, stderr = runCosla(t, "sim", "pileus", "--sessions", "1", "--json")
	if code != 0 {
		t.Fatalf("--json: exit %d\n%s", code, stderr)
	}
	n := 0
	dec := json.NewDecoder(strings.NewReader(stdout))
	for dec.More() {
		var row struct {
			SLA, Client, Strategy string
			AvgUtility            float64 `json:"avg_utility"`
			Gets                  int
		}
		if err := dec.Decode(&row); err != nil {
			t.Fatalf("--json row %d: %v", n+1, err)
		}
		if row.Gets == 0 || row.AvgUtility < 0 || row.AvgUtility > 1 {
			t.Errorf("--json row %+v: want Gets and a utility in [0, 1]", row)
		}
		n++
	}
	if n != 32 {
		t.Errorf("--json: %d rows, want 32", n)
	}
}
