package measure

import (
	"bytes"
	"encoding/csv"
	"errors"
	"reflect"
	"testing"
)

// FuzzReadJSONL reads arbitrary bytes as a trace. ReadJSONL must not
// panic, and must refuse with an error wrapping ErrMalformed or
// ErrInvalidOp and no ops. A trace it accepts must hold one valid op per
// non-blank line, must write (WriteJSONL) one line per op that reads
// back unchanged, and must write as CSV with a row per op.
//
// Run it with: go test -run x -fuzz FuzzReadJSONL ./internal/lab/measure
func FuzzReadJSONL(f *testing.F) {
	for _, trace := range fuzzTraces {
		f.Add([]byte(trace))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := ReadJSONL(bytes.NewReader(data))
		if err != nil {
			if ops != nil || !(errors.Is(err, ErrMalformed) || errors.Is(err, ErrInvalidOp)) {
				t.Fatalf("ReadJSONL = %d ops, %v; want none and an error wrapping ErrMalformed or ErrInvalidOp", len(ops), err)
			}
			return
		}
		lines := 0
		for line := range bytes.Lines(data) {
			if len(trimSpace(bytes.TrimSuffix(line, []byte("\n")))) > 0 {
				lines++
			}
		}
		if len(ops) != lines {
			t.Fatalf("ReadJSONL = %d ops from %d non-blank lines", len(ops), lines)
		}
		for i, op := range ops {
			if err := op.Validate(); err != nil {
				t.Fatalf("op %d %+v: %v", i, op, err)
			}
		}
		var buf bytes.Buffer
		if err := WriteJSONL(&buf, ops); err != nil {
			t.Fatalf("WriteJSONL: %v", err)
		}
		if n := bytes.Count(buf.Bytes(), []byte("\n")); n != len(ops) {
			t.Fatalf("WriteJSONL wrote %d lines for %d ops", n, len(ops))
		}
		back, err := ReadJSONL(&buf)
		if err != nil || !reflect.DeepEqual(back, ops) {
			t.Fatalf("round trip: %v\n got %+v\nwant %+v", err, back, ops)
		}
		buf.Reset()
		if err := WriteCSV(&buf, ops); err != nil {
			t.Fatalf("WriteCSV: %v", err)
		}
		recs, err := csv.NewReader(&buf).ReadAll()
		if err != nil || len(recs) != 1+len(ops) {
			t.Fatalf("WriteCSV wrote %d records, %v; want %d", len(recs), err, 1+len(ops))
		}
	})
}

// fuzzTraces seed FuzzReadJSONL: a writer and readers of two keys
// with both read options (Wada 2.1), two runs, failed and indeterminate
// ops, a stale read, a read of a value never written, and bad lines.
var fuzzTraces = []string{
	`{"run":"r1","client":"w","role":"writer","kind":"write","key":"x","value":"1","call_us":10,"return_us":20,"ok":true,"option":"eventual"}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"x","value":"","call_us":12,"return_us":14,"ok":true,"option":"eventual"}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"x","value":"1","call_us":25,"return_us":30,"ok":true,"option":"consistent","replica":"primary","consistency":"strong"}
{"run":"r1","client":"w","role":"writer","kind":"write","key":"y","value":"2","call_us":31,"return_us":40,"ok":true}
{"run":"r1","client":"w","role":"writer","kind":"write","key":"x","value":"3","call_us":41,"return_us":50,"ok":false,"error":"timeout"}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"y","value":"","call_us":45,"return_us":46,"ok":true,"option":"eventual"}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"x","value":"3","call_us":55,"return_us":57,"ok":true,"option":"eventual"}
{"run":"r1","client":"r","role":"reader","kind":"read","key":"x","value":"1","call_us":58,"return_us":59,"ok":true,"option":"eventual"}
{"run":"r2","client":"c","kind":"write","key":"x","value":"a","call_us":1,"return_us":2,"ok":true}
{"run":"r2","client":"c","kind":"read","key":"x","value":"zz","call_us":3,"return_us":4,"ok":true}
{"run":"r2","client":"c","kind":"read","key":"x","call_us":5,"return_us":6,"ok":false,"error":"unavailable"}
`,
	`{"client":"a","kind":"write","key":"k","value":"v1","call_us":0,"return_us":1152921504606846976,"ok":true}
{"client":"b","kind":"write","key":"k","value":"v1","call_us":5,"return_us":5,"ok":true}

{"client":"b","kind":"read","key":"k","value":"v1","call_us":0,"return_us":0,"ok":true,"seq":7}
`,
	"{\"client\":\"w\",\"kind\":\"write\",\"key\":\"x\",\"value\":\"v\",\"call_us\":1,\"return_us\":2,\"ok\":true}\r\n\t \r\n",
	`{"client":"w","kind":"read","key":"x","call_us":"soon"}`,
	`{"client":"w","kind":"read","key":"x","call_us":5,"return_us":4}`,
	`{"client":"w","kind":"write","key":"x","call_us":1,"return_us":2}`,
	"null\n",
	"",
}
