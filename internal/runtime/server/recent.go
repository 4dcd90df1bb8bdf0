package server

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"time"
	"unicode/utf8"
)

// recentErrorsMax is how many log records at warn level and above a
// process keeps for /status and the status page; our choice: a screen's
// worth, enough to see what went wrong before someone looked, and a few
// hundred KiB at most with the limits below.
const recentErrorsMax = 50

// Each kept record's message and attributes are cut to these many bytes:
// a limit on everything, and a page that stays readable.
const (
	recentMessageBytesMax = 512
	recentAttrsBytesMax   = 2048
)

// LogRecord is one log record kept for /status.
type LogRecord struct {
	Time    time.Time `json:"time"`
	Level   string    `json:"level"`
	Message string    `json:"message"`
	// Attrs are the record's attributes, those of its logger included
	// (the node, the component), as slog's text handler writes them:
	// node=england/r1 err="...".
	Attrs string `json:"attrs,omitempty"`
}

// recentLog is a ring of the last recentErrorsMax records at warn level
// and above. It is safe for concurrent use: every goroutine of the process
// logs.
type recentLog struct {
	mu      sync.Mutex
	records []LogRecord
	next    int // where the next record goes once the ring is full
}

func (l *recentLog) add(r LogRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.records) < recentErrorsMax {
		l.records = append(l.records, r)
		return
	}
	l.records[l.next] = r
	l.next = (l.next + 1) % recentErrorsMax
}

// snapshot returns the kept records, oldest first.
func (l *recentLog) snapshot() []LogRecord {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := make([]LogRecord, 0, len(l.records))
	out = append(out, l.records[l.next:]...)
	return append(out, l.records[:l.next]...)
}

// teeHandler is a slog.Handler that passes every record to the handler
// it wraps, as that handler's level allows, and keeps those at warn level
// and above in a recentLog whatever that level: a process logging at
// error level still shows its warnings on the status page.
type teeHandler struct {
	inner  slog.Handler
	recent *recentLog
	// with replays the WithAttrs and WithGroup calls made on this handler
	// onto the formatter of the kept records' attributes.
	with []func(slog.Handler) slog.Handler
}

func newTeeHandler(inner slog.Handler, recent *recentLog) *teeHandler {
	return &teeHandler{inner: inner, recent: recent}
}

func (h *teeHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return level >= slog.LevelWarn || h.inner.Enabled(ctx, level)
}

func (h *teeHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelWarn {
		h.recent.add(LogRecord{Time: r.Time, Level: r.Level.String(),
			Message: cut(r.Message, recentMessageBytesMax), Attrs: cut(h.attrs(ctx, r), recentAttrsBytesMax)})
	}
	if !h.inner.Enabled(ctx, r.Level) {
		return nil
	}
	return h.inner.Handle(ctx, r)
}

// attrs formats r's attributes, and its logger's, as slog's text handler
// does, without the time, level and message. Records at warn level are
// rare, so a formatter per record costs nothing that matters.
func (h *teeHandler) attrs(ctx context.Context, r slog.Record) string {
	var b bytes.Buffer
	var f slog.Handler = slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
		if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey) {
			return slog.Attr{}
		}
		return a
	}})
	for _, w := range h.with {
		f = w(f)
	}
	_ = f.Handle(ctx, r)
	return string(bytes.TrimSpace(b.Bytes()))
}

func (h *teeHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return h.derive(h.inner.WithAttrs(attrs), func(f slog.Handler) slog.Handler { return f.WithAttrs(attrs) })
}

func (h *teeHandler) WithGroup(name string) slog.Handler {
	return h.derive(h.inner.WithGroup(name), func(f slog.Handler) slog.Handler { return f.WithGroup(name) })
}

func (h *teeHandler) derive(inner slog.Handler, w func(slog.Handler) slog.Handler) *teeHandler {
	return &teeHandler{inner: inner, recent: h.recent, with: append(h.with[:len(h.with):len(h.with)], w)}
}

// cut shortens s to at most n bytes, on a rune boundary, marking the cut.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}
