package measure

import "testing"

// Builders for hand-made traces; times are microseconds.

func wr(client, key, value string, callUS, returnUS int64) Op {
	return Op{Client: client, Role: RoleWriter, Kind: KindWrite, Key: key, Value: value, CallUS: callUS, ReturnUS: returnUS, OK: true}
}

func rd(client, key, value string, callUS, returnUS int64) Op {
	return Op{Client: client, Role: RoleReader, Kind: KindRead, Key: key, Value: value, CallUS: callUS, ReturnUS: returnUS, OK: true}
}

func withOption(op Op, option string) Op { op.Option = option; return op }

func withRun(op Op, run string) Op { op.Run = run; return op }

func failed(op Op) Op { op.OK = false; op.Error = "unavailable"; return op }

func approx(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if got < want-tol || got > want+tol {
		t.Errorf("%s = %v, want %v ± %v", name, got, want, tol)
	}
}

const ms = 1000 // microseconds
