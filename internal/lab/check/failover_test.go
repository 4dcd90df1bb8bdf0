package check

import (
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/cosla/cosla/internal/core/hlc"
)

// finals maps keys to ts(t) of their final versions, given as key, t
// pairs; t 0 is the zero timestamp: the key has no version.
func finals(pairs ...any) map[string]hlc.Timestamp {
	m := make(map[string]hlc.Timestamp)
	for k := 0; k < len(pairs); k += 2 {
		var t hlc.Timestamp
		if s := int64(pairs[k+1].(int)); s > 0 {
			t = ts(s)
		}
		m[pairs[k].(string)] = t
	}
	return m
}

// TestDurable: a failover hears from a majority, N/2+1 of N: of 2
// replicas both, so even a level-ONE write survives.
func TestDurable(t *testing.T) {
	for _, tc := range []struct {
		w, n int
		want bool
	}{
		{1, 1, true}, {1, 2, true}, {2, 2, true}, {1, 3, false}, {2, 3, true}, {3, 3, true},
		{2, 4, true}, {1, 4, false}, {2, 5, false}, {3, 5, true}, {0, 3, false}, {2, 0, false},
	} {
		if got := durable(tc.w, tc.n); got != tc.want {
			t.Errorf("durable(w=%d, n=%d) = %v, want %v", tc.w, tc.n, got, tc.want)
		}
	}
}

func TestCheckDurable(t *testing.T) {
	unacked := level(lostPut("a", "k", "v2", 20, 30), 2, 3)
	unacked.TS = ts(2)
	tests := []struct {
		name  string
		h     []Op
		final map[string]hlc.Timestamp
		want  []want
	}{
		{
			name:  "quorum writes held",
			h:     []Op{level(put("a", "k", "v1", 0, 10, 1), 2, 3), level(put("a", "j", "v2", 20, 30, 2), 3, 5)},
			final: finals("k", 1, "j", 2),
		},
		{
			name:  "a quorum write overwritten later",
			h:     []Op{level(put("a", "k", "v1", 0, 10, 1), 2, 3), level(put("a", "k", "v2", 20, 30, 2), 1, 3)},
			final: finals("k", 2),
		},
		{
			name:  "a quorum write not held",
			h:     []Op{level(put("a", "k", "v1", 0, 10, 1), 2, 3), level(put("a", "k", "v2", 20, 30, 2), 2, 3)},
			final: finals("k", 1),
			want:  []want{{1, RuleDurable}},
		},
		{
			name:  "a quorum write of a key with no version at the end",
			h:     []Op{level(put("a", "k", "v1", 0, 10, 1), 2, 3)},
			final: finals("k", 0),
			want:  []want{{0, RuleDurable}},
		},
		{
			name:  "a durable write marked lost",
			h:     []Op{level(rolledBack(put("a", "k", "v1", 0, 10, 1)), 2, 3), level(put("a", "k", "v2", 20, 30, 2), 2, 3)},
			final: finals("k", 2),
			want:  []want{{0, RuleDurable}},
		},
		{
			name:  "3 of 5 replicas: durable",
			h:     []Op{level(put("a", "k", "v1", 0, 10, 2), 3, 5)},
			final: finals("k", 1),
			want:  []want{{0, RuleDurable}},
		},
		{
			name:  "2 of 4 replicas: durable",
			h:     []Op{level(put("a", "k", "v1", 0, 10, 2), 2, 4)},
			final: finals("k", 1),
			want:  []want{{0, RuleDurable}},
		},
		{
			// Not judged: the rule is about durable acknowledged writes.
			name: "level ONE, 2 of 5, unknown levels and unacknowledged puts not held",
			h: []Op{
				level(rolledBack(put("a", "k", "v1", 0, 10, 4)), 1, 3),
				level(put("a", "j", "v2", 20, 30, 4), 2, 5),
				put("a", "i", "v3", 40, 50, 4),
				unacked,
			},
			final: finals("k", 1, "j", 1, "i", 1),
		},
		{
			name:  "a key not read at the end",
			h:     []Op{level(put("a", "k", "v1", 0, 10, 1), 2, 3)},
			final: finals("j", 0),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantViolations(t, CheckDurable(tc.h, tc.final), tc.want) })
	}
}

func TestCheckRollback(t *testing.T) {
	one := func(op Op) Op { return level(op, 1, 3) }
	tests := []struct {
		name       string
		h          []Op
		final      map[string]hlc.Timestamp
		rolledBack []RolledBack
		want       []want
		losses     Losses
	}{
		{
			// Two replicas held v2 and rolled it back: one version.
			name:       "a level-ONE write lost and rolled back",
			h:          []Op{level(put("a", "k", "v1", 0, 10, 1), 3, 3), one(rolledBack(put("a", "k", "v2", 20, 30, 2)))},
			final:      finals("k", 1),
			rolledBack: []RolledBack{{"k", ts(2)}, {"k", ts(2)}},
			losses:     Losses{ByLevel: map[int]int{1: 1}, Lost: 1, RolledBack: 1},
		},
		{
			name: "a lost write overwritten after the rollback",
			h: []Op{
				one(rolledBack(put("a", "k", "v1", 0, 10, 1))),
				one(put("a", "k", "v2", 20, 30, 2)),
				rolledBack(put("a", "j", "v3", 40, 50, 3)),
			},
			final:      finals("k", 2, "j", 0),
			rolledBack: []RolledBack{{"j", ts(3)}, {"k", ts(1)}},
			losses:     Losses{ByLevel: map[int]int{0: 1, 1: 1}, Lost: 2, RolledBack: 2},
		},
		{
			name:       "an unacknowledged version rolled back",
			h:          []Op{one(lostPut("a", "k", "v1", 0, 10)), one(put("a", "k", "v2", 20, 30, 2))},
			final:      finals("k", 2),
			rolledBack: []RolledBack{{"k", ts(1)}},
			losses:     Losses{ByLevel: map[int]int{}, RolledBack: 1, Unacknowledged: 1},
		},
		{
			name:   "a write vanished without a rollback",
			h:      []Op{one(put("a", "k", "v1", 0, 10, 1)), one(put("a", "k", "v2", 20, 30, 2))},
			final:  finals("k", 1),
			want:   []want{{1, RuleRollback}},
			losses: Losses{ByLevel: map[int]int{}},
		},
		{
			name:       "a write rolled back but not marked lost",
			h:          []Op{one(put("a", "k", "v1", 0, 10, 1)), one(put("a", "k", "v2", 20, 30, 2))},
			final:      finals("k", 1),
			rolledBack: []RolledBack{{"k", ts(2)}},
			want:       []want{{1, RuleRollback}},
			losses:     Losses{ByLevel: map[int]int{}, RolledBack: 1},
		},
		{
			// Held at the end by a later version's timestamp, yet
			// rolled back: the mark is what is missing.
			name:       "a write rolled back, overwritten and not marked lost",
			h:          []Op{one(put("a", "k", "v1", 0, 10, 1)), one(put("a", "k", "v2", 20, 30, 2))},
			final:      finals("k", 2),
			rolledBack: []RolledBack{{"k", ts(1)}},
			want:       []want{{0, RuleRollback}},
			losses:     Losses{ByLevel: map[int]int{}, RolledBack: 1},
		},
		{
			name:       "a write marked lost that no replica rolled back",
			h:          []Op{one(put("a", "k", "v1", 0, 10, 1)), one(rolledBack(put("a", "k", "v2", 20, 30, 2)))},
			final:      finals("k", 1),
			rolledBack: []RolledBack{{"k", ts(3)}},
			want:       []want{{1, RuleRollback}},
			losses:     Losses{ByLevel: map[int]int{1: 1}, Lost: 1, RolledBack: 1, Unacknowledged: 1},
		},
		{
			name:   "a key not read at the end",
			h:      []Op{one(put("a", "k", "v1", 0, 10, 1))},
			final:  finals(),
			losses: Losses{ByLevel: map[int]int{}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			losses, vs := CheckRollback(tc.h, tc.final, tc.rolledBack)
			wantViolations(t, vs, tc.want)
			if !maps.Equal(losses.ByLevel, tc.losses.ByLevel) || losses.Lost != tc.losses.Lost ||
				losses.RolledBack != tc.losses.RolledBack || losses.Unacknowledged != tc.losses.Unacknowledged {
				t.Fatalf("losses %+v, want %+v", losses, tc.losses)
			}
		})
	}
}

// ack is an acknowledgement by node of tablet at epoch, at the given
// second of the true clock.
func ack(tablet string, epoch uint64, node string, at int) Ack {
	return Ack{Tablet: tablet, Epoch: epoch, Node: node, At: time.Duration(at) * time.Second}
}

func TestCheckEpochs(t *testing.T) {
	tests := []struct {
		name string
		acks []Ack
		want []want
	}{
		{name: "none"},
		{
			name: "a failover and an independent tablet",
			acks: []Ack{
				ack("t/0", 1, "england", 1), ack("t/0", 1, "england", 2), ack("t/1", 1, "china", 3),
				ack("t/0", 2, "india", 10), ack("t/0", 4, "england", 20), ack("t/1", 1, "china", 30),
			},
		},
		{
			name: "recorded out of time order",
			acks: []Ack{ack("t/0", 2, "india", 10), ack("t/0", 1, "england", 2), ack("t/0", 1, "england", 1)},
		},
		{
			// At one instant the older epoch comes first.
			name: "two epochs at one instant",
			acks: []Ack{ack("t/0", 2, "india", 5), ack("t/0", 1, "england", 5)},
		},
		{
			// The deposed primary kept acknowledging after the new one
			// began: both of its late acknowledgements are reported.
			name: "a deposed primary acknowledges after the new one",
			acks: []Ack{
				ack("t/0", 1, "england", 1), ack("t/0", 2, "india", 5),
				ack("t/0", 1, "england", 6), ack("t/0", 1, "england", 7), ack("t/0", 2, "india", 8),
			},
			want: []want{{2, RuleEpochs}, {3, RuleEpochs}},
		},
		{
			name: "two nodes in one epoch",
			acks: []Ack{ack("t/0", 1, "england", 1), ack("t/0", 2, "india", 5), ack("t/0", 2, "china", 6)},
			want: []want{{2, RuleEpochs}},
		},
		{
			name: "the same epoch number on two tablets",
			acks: []Ack{ack("t/0", 2, "india", 1), ack("t/1", 2, "china", 2)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { wantViolations(t, CheckEpochs(tc.acks), tc.want) })
	}
}

func TestFailoverDetail(t *testing.T) {
	put2 := level(put("a", "k", "v2", 20, 30, 2), 2, 3)
	lost := ack("t/0", 1, "england", 6)
	lost.Key, lost.Value = "k", "v9"
	_, rollback := CheckRollback([]Op{put2}, finals("k", 1), nil)
	tests := []struct {
		name  string
		vs    []Violation
		wants []string
	}{
		{
			name: "durable",
			vs:   CheckDurable([]Op{put2}, finals("k", 1)),
			wants: []string{
				`durable: put #0 (client client-a, session a, key "k", value "v2", called 20ms, returned 30ms, ts 2.000000000,0, level 2 of 3) is not held at the end`,
				`the key's final version is 1.000000000,0, older; a put that 2 of 3 replicas held survives every failover`,
			},
		},
		{
			name:  "rollback",
			vs:    rollback,
			wants: []string{`rollback: put #0 (client client-a, session a, key "k"`, `is not held at the end (the key's final version is 1.000000000,0) and no replica rolled back its version: it vanished`},
		},
		{
			name: "epochs",
			vs:   CheckEpochs([]Ack{ack("t/0", 1, "england", 1), ack("t/0", 2, "india", 5), lost}),
			wants: []string{
				`epochs: ack #2 (tablet t/0, epoch 1, node england, at 6s, put of "v9" to key "k") goes back to an older epoch than ack #1 (tablet t/0, epoch 2, node india, at 5s) before it`,
			},
		},
		{
			name:  "one epoch, one node",
			vs:    CheckEpochs([]Ack{ack("t/0", 2, "india", 5), ack("t/0", 2, "china", 6)}),
			wants: []string{`epochs: ack #1 (tablet t/0, epoch 2, node china, at 6s) in the epoch of ack #0 (tablet t/0, epoch 2, node india, at 5s), by another node: one epoch has one primary`},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if len(tc.vs) != 1 {
				t.Fatalf("got %d violations, want 1: %v", len(tc.vs), tc.vs)
			}
			for _, w := range tc.wants {
				if got := tc.vs[0].String(); !strings.Contains(got, w) {
					t.Errorf("violation %q\ndoes not contain %q", got, w)
				}
			}
		})
	}
}
