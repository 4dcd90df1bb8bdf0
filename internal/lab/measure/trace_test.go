package measure

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cosla/cosla/keyfmt"
)

func TestJSONLRoundTrip(t *testing.T) {
	ops := []Op{
		withRun(withOption(wr("w0", "x", "w0-1700000000000001", 10, 20), "primary"), "run-1"),
		{Run: "run-1", Client: "r1", Role: RoleReader, Kind: KindRead, Key: "x", Value: "", CallUS: 30, ReturnUS: 45,
			OK: false, Error: "503: service unavailable, \"quoted\"\nnewline", Consistency: "eventual", Replica: "us-west-2", Option: "eventual"},
		{Client: "c", Kind: KindRead, Key: "ключ", Value: "値", CallUS: 1 << 50, ReturnUS: 1<<50 + 7, OK: true},
		// Keys and values are any bytes (issue 25).
		{Run: "run-1", Client: "c", Role: RoleWriter, Kind: KindWrite, Key: "\xff\xfe\x80key", Value: "\xc3", CallUS: 50, ReturnUS: 51, OK: true},
		{Client: "c", Kind: KindRead, Key: "\xed\xa0\x80", Value: "v\x00\n", CallUS: 52, ReturnUS: 53, OK: true},
	}
	var buf bytes.Buffer
	if err := WriteJSONL(&buf, ops); err != nil {
		t.Fatal(err)
	}
	// A line keeps the bytes and field order it had before keys could
	// be any bytes; a key that is not UTF-8 is in base64, where it was.
	for _, want := range []string{
		`{"run":"run-1","client":"w0","role":"writer","kind":"write","key":"x","value":"w0-1700000000000001","call_us":10,`,
		`{"run":"run-1","client":"c","role":"writer","kind":"write","key":{"base64":"//6Aa2V5"},"value":{"base64":"ww=="},"call_us":50,`,
	} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("trace lacks %s:\n%s", want, buf.String())
		}
	}
	if n := strings.Count(buf.String(), "\n"); n != len(ops) {
		t.Fatalf("%d lines, want %d:\n%s", n, len(ops), buf.String())
	}
	if !strings.Contains(buf.String(), `"call_us":10,"return_us":20`) {
		t.Errorf("times are not under call_us/return_us:\n%s", buf.String())
	}
	got, err := ReadJSONL(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, ops) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, ops)
	}
}

func TestReadJSONLErrors(t *testing.T) {
	good := `{"client":"w","kind":"write","key":"x","value":"v1","call_us":1,"return_us":2,"ok":true}`
	for _, tc := range []struct {
		name    string
		input   string
		wantIs  error
		wantMsg string
	}{
		{"not json", good + "\n{\"client\": \"w\",\n", ErrMalformed, "line 2"},
		{"wrong type", good + "\n\n" + `{"client":"w","kind":"read","key":"x","call_us":"soon"}`, ErrMalformed, "line 3"},
		{"return before call", good + "\n" + `{"client":"w","kind":"read","key":"x","call_us":5,"return_us":4,"ok":true}`, ErrInvalidOp, "line 2: measure: invalid op: return_us 4 before call_us 5"},
		{"unknown kind", `{"client":"w","kind":"delete","key":"x","call_us":1,"return_us":2}`, ErrInvalidOp, "line 1"},
		{"empty write", `{"client":"w","kind":"write","key":"x","call_us":1,"return_us":2}`, ErrInvalidOp, "empty value"},
		{"unknown role", `{"client":"w","role":"admin","kind":"read","key":"x","call_us":1,"return_us":2}`, ErrInvalidOp, "role"},
		{"line too long", good + "\n" + strings.Repeat(" ", MaxLineBytes+1) + "\n", ErrMalformed, "line 2: longer than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadJSONL(strings.NewReader(tc.input))
			if err == nil {
				t.Fatal("no error")
			}
			if !errors.Is(err, tc.wantIs) || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q, want one wrapping %v containing %q", err, tc.wantIs, tc.wantMsg)
			}
		})
	}
	// Blank lines and unknown fields are accepted.
	ops, err := ReadJSONL(strings.NewReader("\n" + good + "\n  \n" + `{"client":"r","kind":"read","key":"x","value":"v1","call_us":3,"return_us":4,"ok":true,"seq":17}` + "\n"))
	if err != nil || len(ops) != 2 {
		t.Errorf("got %d ops, %v; want 2, nil", len(ops), err)
	}
}

func TestWriteCSV(t *testing.T) {
	ops := []Op{wr("w", "x", "a,b", 10, 25), failed(rd("r", "x", "", 30, 31))}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, ops); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 3 || recs[0][6] != "call_us" || recs[1][5] != "a,b" || recs[1][8] != "15" || recs[2][9] != "false" || recs[2][10] != "unavailable" {
		t.Errorf("csv records %q", recs)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		field string
	}{
		{"bucket", Config{BucketWidthMS: -1}, "BucketWidthMS"},
		{"threshold", Config{FreshThreshold: 1}, "FreshThreshold"},
		{"range", Config{Ranges: []RangeMS{{0, 450}, {500, 400}}}, "Ranges[1]"},
		{"window", Config{MonotonicWindow: RangeMS{FromMS: -3}}, "MonotonicWindow"},
		{"keys", Config{InterElementKeys: [2]string{"x", ""}}, "InterElementKeys"},
		{"clock", Config{ClockUncertaintyMS: -2}, "ClockUncertaintyMS"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.EnsureDefaults().Validate()
			if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), tc.field) {
				t.Errorf("Validate() = %v, want an error naming %s", err, tc.field)
			}
		})
	}
	cfg := Config{}.EnsureDefaults()
	if err := cfg.Validate(); err != nil {
		t.Errorf("default config: %v", err)
	}
	if !strings.Contains(cfg.String(), "bucket_width_ms=1 ") {
		t.Errorf("String() = %s", cfg.String())
	}
}

// TestReportKeysAnyBytes: the analyses keep two keys apart that differ
// only in bytes that are not UTF-8, and their JSON names each exactly.
func TestReportKeysAnyBytes(t *testing.T) {
	ops := []Op{
		wr("w", "\xff", "1", 0, 10), wr("w", "\xfe", "2", 20, 30),
		rd("r", "\xff", "", 40, 50), // stale: "1" was written before
		rd("r", "\xfe", "2", 60, 70),
	}
	g := Gamma(ops, Config{})
	b, err := json.Marshal(g.Scores)
	if err != nil {
		t.Fatal(err)
	}
	var back []ValueScore
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	keys := map[keyfmt.JSON]bool{}
	for _, s := range back {
		keys[s.Key] = true
	}
	if !keys["\xff"] || !keys["\xfe"] || len(keys) != 2 {
		t.Errorf("Gamma scores name keys %q, want \\xff and \\xfe:\n%s", slices.Collect(maps.Keys(keys)), b)
	}
}
