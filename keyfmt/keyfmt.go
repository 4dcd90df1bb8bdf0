// Package keyfmt writes keys, which are any bytes, for people and for
// JSON, in one way everywhere (the CLI, the measure trace, reports and
// stored layouts). Values, also any bytes, use the same JSON form.
//
// In JSON a key is a string when it is valid UTF-8, as any string is,
// and otherwise an object holding its bytes in standard base64:
//
//	"user000001"
//	{"base64": "//6Aa2V5"}
//
// JSON strings cannot carry bytes that are not UTF-8: encoding/json
// would write each as U+FFFD, and distinct keys would read back as one.
// Readers accept both forms.
//
// In text a key is shown as it is when every character is printable and
// none is a space or a quote, else quoted as Go quotes strings (control
// characters and bytes that are not UTF-8 escaped), and cut after
// TextMax bytes, with its length, so that a 4 KiB key does not flood a
// terminal or an error message.
//
// The package is public, beside package sla, so that a program reading
// the CLI's --json output or a measure trace reads keys back as they
// were written (JSON's UnmarshalJSON), and so that the CLI uses no
// internal core package to print them.
package keyfmt

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// TextMax is the most bytes of a key that Text and Quote show.
const TextMax = 64

// Quote returns key quoted (strconv.Quote), cut after TextMax bytes (at
// a character's start), with the key's length after a cut one:
// "user0001", "aaaa"...(5000 bytes).
func Quote(key string) string {
	if len(key) <= TextMax {
		return strconv.Quote(key)
	}
	cut := TextMax
	for cut > TextMax-utf8.UTFMax && !utf8.RuneStart(key[cut]) {
		cut--
	}
	return fmt.Sprintf("%s...(%d bytes)", strconv.Quote(key[:cut]), len(key))
}

// Text returns key as it is when it is plain (printable characters, no
// space or quote, at most TextMax bytes, not empty), else Quote(key).
func Text(key string) string {
	if plain(key) {
		return key
	}
	return Quote(key)
}

func plain(key string) bool {
	if key == "" || len(key) > TextMax || !utf8.ValidString(key) {
		return false
	}
	for _, r := range key {
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) || r == '"' || r == '\'' || r == '\\' {
			return false
		}
	}
	return true
}

// JSON is a key, or any other bytes, that encoding/json writes and reads
// without loss: a JSON string when it is valid UTF-8, else
// {"base64": "..."} (see the package doc).
type JSON string

// binary is the JSON form of bytes that are not UTF-8; encoding/json
// writes a []byte as standard base64.
type binary struct {
	Base64 []byte `json:"base64"`
}

// MarshalJSON implements json.Marshaler.
func (k JSON) MarshalJSON() ([]byte, error) {
	if utf8.ValidString(string(k)) {
		return json.Marshal(string(k))
	}
	return json.Marshal(binary{[]byte(k)})
}

// UnmarshalJSON implements json.Unmarshaler: a string, or an object with
// the field base64 alone.
func (k *JSON) UnmarshalJSON(b []byte) error {
	if n := len(b); n >= 2 && b[0] == '"' && b[n-1] == '"' && bytes.IndexByte(b, '\\') < 0 && utf8.Valid(b) {
		// A string without escapes, as most keys are: encoding/json
		// checked the syntax already, and this is what it would decode.
		*k = JSON(b[1 : n-1])
		return nil
	}
	if t := bytes.TrimLeft(b, " \t\r\n"); len(t) == 0 || t[0] != '{' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("keyfmt: want a string or {\"base64\": ...}: %w", err)
		}
		*k = JSON(s)
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var v binary
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("keyfmt: want a string or {\"base64\": ...}: %w", err)
	}
	*k = JSON(v.Base64)
	return nil
}
