package wan

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestOptionsValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		field string // "" means valid
	}{
		{name: "zero", opts: Options{}},
		{name: "explicit", opts: Options{ListenAddr: "127.0.0.1:0", Latency: time.Millisecond, Jitter: time.Millisecond, ChunkBytesMax: 1, QueueChunksMax: 1, DialTimeout: time.Second}},
		{name: "ipv6", opts: Options{ListenAddr: "[::1]:0"}},
		{name: "no port", opts: Options{ListenAddr: "127.0.0.1"}, field: "Options.ListenAddr"},
		{name: "host name", opts: Options{ListenAddr: "localhost:0"}, field: "Options.ListenAddr"},
		{name: "bad port", opts: Options{ListenAddr: "127.0.0.1:x"}, field: "Options.ListenAddr"},
		{name: "negative latency", opts: Options{Latency: -1}, field: "Options.Latency"},
		{name: "negative jitter", opts: Options{Jitter: -1}, field: "Options.Jitter"},
		{name: "negative chunk", opts: Options{ChunkBytesMax: -1}, field: "Options.ChunkBytesMax"},
		{name: "huge chunk", opts: Options{ChunkBytesMax: chunkBytesMaxLimit + 1}, field: "Options.ChunkBytesMax"},
		{name: "negative queue", opts: Options{QueueChunksMax: -1}, field: "Options.QueueChunksMax"},
		{name: "huge queue", opts: Options{QueueChunksMax: queueChunksMaxLimit + 1}, field: "Options.QueueChunksMax"},
		{name: "negative dial timeout", opts: Options{DialTimeout: -1}, field: "Options.DialTimeout"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.opts.Validate()
			if tc.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("Validate = %v, want an error wrapping ErrInvalid", err)
			}
			if !strings.Contains(err.Error(), tc.field+" ") {
				t.Fatalf("Validate = %q, want it to name %s", err, tc.field)
			}
		})
	}
}

func TestSettingsValidate(t *testing.T) {
	for _, tc := range []struct {
		s     Settings
		field string
	}{
		{s: Settings{Latency: time.Second, Jitter: time.Second, Down: true}},
		{s: Settings{Latency: -time.Second}, field: "Settings.Latency"},
		{s: Settings{Jitter: -time.Second}, field: "Settings.Jitter"},
	} {
		err := tc.s.Validate()
		switch {
		case tc.field == "" && err != nil:
			t.Errorf("%v: Validate = %v", tc.s, err)
		case tc.field != "" && (!errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), tc.field)):
			t.Errorf("%v: Validate = %v, want ErrInvalid naming %s", tc.s, err, tc.field)
		}
	}
}

func TestEnsureDefaults(t *testing.T) {
	o := Options{}.EnsureDefaults()
	if o.ListenAddr != DefaultListenAddr || o.ChunkBytesMax != DefaultChunkBytesMax ||
		o.QueueChunksMax != DefaultQueueChunksMax || o.DialTimeout != DefaultDialTimeout ||
		o.Logger == nil || o.clock == nil {
		t.Fatalf("EnsureDefaults = %s", o)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("defaults do not validate: %v", err)
	}
}

func TestConstructorsValidate(t *testing.T) {
	if _, err := NewLink("127.0.0.1:1", Options{Jitter: -1}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewLink with bad options = %v, want ErrInvalid", err)
	}
	if _, err := NewLink("no-port", Options{}); !errors.Is(err, ErrInvalid) {
		t.Errorf("NewLink with bad target = %v, want ErrInvalid", err)
	}
	if _, err := NewNet(Options{ListenAddr: "127.0.0.1:4567"}); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "Options.ListenAddr") {
		t.Errorf("NewNet with a fixed port = %v, want ErrInvalid naming Options.ListenAddr", err)
	}
}
