package keyfmt_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/cosla/cosla/keyfmt"
)

func TestText(t *testing.T) {
	long := strings.Repeat("k", 5000)
	for _, tc := range []struct{ key, text, quote string }{
		{"cart", "cart", `"cart"`},
		{"user/0001", "user/0001", `"user/0001"`},
		{"naïve", "naïve", `"naïve"`},
		{"", `""`, `""`},
		{"two words", `"two words"`, `"two words"`},
		{"\xff\xfe\x80key", `"\xff\xfe\x80key"`, `"\xff\xfe\x80key"`},
		{"a\x1b[31mred", `"a\x1b[31mred"`, `"a\x1b[31mred"`},
		{"line\nbreak\x00", `"line\nbreak\x00"`, `"line\nbreak\x00"`},
		{`say "hi"`, `"say \"hi\""`, `"say \"hi\""`},
		{long, `"` + long[:64] + `"...(5000 bytes)`, `"` + long[:64] + `"...(5000 bytes)`},
		// A cut falls at a character's start, not inside it.
		{strings.Repeat("k", 63) + "é" + long, `"` + strings.Repeat("k", 63) + `"...(5065 bytes)`, `"` + strings.Repeat("k", 63) + `"...(5065 bytes)`},
	} {
		if got := keyfmt.Text(tc.key); got != tc.text {
			t.Errorf("Text(%.80q) = %s, want %s", tc.key, got, tc.text)
		}
		if got := keyfmt.Quote(tc.key); got != tc.quote {
			t.Errorf("Quote(%.80q) = %s, want %s", tc.key, got, tc.quote)
		}
	}
}

// TestJSON: a key that is valid UTF-8 is written as encoding/json writes
// a string, and any other as base64; both read back byte for byte.
func TestJSON(t *testing.T) {
	for _, tc := range []struct{ key, json string }{
		{"cart", `"cart"`},
		{"", `""`},
		{"<a&b>\x00\n", `"\u003ca\u0026b\u003e\u0000\n"`},
		{"naïve", `"naïve"`},
		{"\xff\xfe\x80key", `{"base64":"//6Aa2V5"}`},
		{"\xed\xa0\x80", `{"base64":"7aCA"}`}, // a surrogate's encoding is not UTF-8
	} {
		b, err := json.Marshal(keyfmt.JSON(tc.key))
		if err != nil || string(b) != tc.json {
			t.Errorf("Marshal(%q) = %s, %v; want %s", tc.key, b, err, tc.json)
		}
		var back keyfmt.JSON
		if err := json.Unmarshal(b, &back); err != nil || string(back) != tc.key {
			t.Errorf("Unmarshal(%s) = %q, %v; want %q", b, back, err, tc.key)
		}
	}
	for _, bad := range []string{`{"base64":"!"}`, `{"hex":"ff"}`, `{"base64":"AA==","x":1}`, `3`, `[]`} {
		var k keyfmt.JSON
		if err := json.Unmarshal([]byte(bad), &k); err == nil {
			t.Errorf("Unmarshal(%s) = %q, want an error", bad, k)
		}
	}
	// In a struct and a map, as the outputs use it.
	b, err := json.Marshal(map[string]any{"key": keyfmt.JSON("\xff"), "keys": []keyfmt.JSON{"a", "\x80"}})
	if want := `{"key":{"base64":"/w=="},"keys":["a",{"base64":"gA=="}]}`; err != nil || string(b) != want {
		t.Errorf("Marshal of a map = %s, %v; want %s", b, err, want)
	}
}
