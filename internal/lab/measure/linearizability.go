package measure

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/anishathalye/porcupine"
)

// Verdict is the outcome of a linearizability check.
type Verdict string

// The verdicts; unknown means the checker ran out of time.
const (
	VerdictLinearizable    Verdict = "linearizable"
	VerdictNotLinearizable Verdict = "not-linearizable"
	VerdictUnknown         Verdict = "unknown"
)

// ErrHistoryTooLarge is wrapped by the error CheckLinearizable returns for
// a history over Config.LinearizabilityMaxOps ops.
var ErrHistoryTooLarge = errors.New("measure: history too large to check for linearizability")

// LinearizabilityResult is the verdict of Porcupine on a trace, each key
// of each run a separate register.
type LinearizabilityResult struct {
	Verdict Verdict `json:"verdict"`
	// Ops counts the ops checked, Registers the (run, key) partitions.
	Ops       int `json:"ops"`
	Registers int `json:"registers"`
	// FailedReads were dropped (they returned nothing); UnobservedWrites
	// are failed writes no read saw, dropped since a write that may not
	// have happened and that no read saw changes nothing; Indeterminate
	// are failed writes some read saw, checked as if still pending at the
	// end of the trace.
	FailedReads      int `json:"failed_reads"`
	UnobservedWrites int `json:"unobserved_writes"`
	Indeterminate    int `json:"indeterminate"`
	// Visualized reports that the HTML visualization was written to
	// Config.Visualization.
	Visualized bool `json:"visualized"`
	// Skipped says why the check did not run, empty when it did.
	Skipped string `json:"skipped,omitempty"`
}

// registerInput is a Porcupine operation's input: a write of value, or a
// read (whose output is the value read).
type registerInput struct {
	reg   regKey
	write bool
	value string
}

// registerModel is a read/write register partitioned by (run, key), the
// empty value its initial state (Porcupine's model.go, "kv" example).
var registerModel = porcupine.Model{
	Partition: func(history []porcupine.Operation) [][]porcupine.Operation {
		byReg := map[regKey][]porcupine.Operation{}
		var order []regKey
		for _, op := range history {
			k := op.Input.(registerInput).reg
			if _, ok := byReg[k]; !ok {
				order = append(order, k)
			}
			byReg[k] = append(byReg[k], op)
		}
		out := make([][]porcupine.Operation, 0, len(order))
		for _, k := range order {
			out = append(out, byReg[k])
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		in := input.(registerInput)
		if in.write {
			return true, in.value
		}
		return output.(string) == state.(string), state
	},
	DescribeOperation: func(input, output any) string {
		in := input.(registerInput)
		if in.write {
			return fmt.Sprintf("put(%q, %q)", in.reg.key, in.value)
		}
		return fmt.Sprintf("get(%q) -> %q", in.reg.key, output.(string))
	},
	DescribeState: func(state any) string { return fmt.Sprintf("%q", state.(string)) },
}

// CheckLinearizable checks a bounded trace with Porcupine. It refuses a
// trace of more than Config.LinearizabilityMaxOps checked ops with an error
// wrapping ErrHistoryTooLarge. When the trace is not linearizable and
// Config.Visualization is set, Porcupine's HTML visualization is written
// to it. Invalid ops are ignored.
func CheckLinearizable(ops []Op, cfg Config) (LinearizabilityResult, error) {
	cfg = cfg.effective()
	var res LinearizabilityResult
	seen := map[regKey]map[string]bool{}
	var lastUS int64
	for _, op := range ops {
		if op.Validate() != nil {
			continue
		}
		lastUS = max(lastUS, op.ReturnUS)
		if op.Kind == KindRead && op.OK {
			rk := regKey{op.Run, op.Key}
			if seen[rk] == nil {
				seen[rk] = map[string]bool{}
			}
			seen[rk][op.Value] = true
		}
	}
	clientIDs := map[clientKey]int{}
	var clients []clientKey
	var history []porcupine.Operation
	regs := map[regKey]bool{}
	for _, op := range ops {
		if op.Validate() != nil {
			continue
		}
		rk := regKey{op.Run, op.Key}
		in := registerInput{reg: rk, write: op.Kind == KindWrite, value: op.Value}
		var out any = ""
		returnUS := op.ReturnUS
		switch {
		case op.Kind == KindRead && !op.OK:
			res.FailedReads++
			continue
		case op.Kind == KindRead:
			in.value, out = "", op.Value
		case !op.OK && !seen[rk][op.Value]:
			res.UnobservedWrites++
			continue
		case !op.OK:
			res.Indeterminate++
			returnUS = lastUS + 1 // pending: it may take effect at any later time
		}
		ck := clientKey{op.Run, op.Client}
		if _, ok := clientIDs[ck]; !ok {
			clientIDs[ck] = 0
			clients = append(clients, ck)
		}
		regs[rk] = true
		history = append(history, porcupine.Operation{
			Input: in, Output: out, Call: op.CallUS, Return: returnUS, Metadata: ck,
		})
	}
	res.Ops, res.Registers = len(history), len(regs)
	if res.Ops > cfg.LinearizabilityMaxOps {
		res.Skipped = fmt.Sprintf("%d ops exceed the limit of %d (LinearizabilityMaxOps)", res.Ops, cfg.LinearizabilityMaxOps)
		return res, fmt.Errorf("%w: %d ops exceed the limit of %d (Config.LinearizabilityMaxOps); check a shorter trace or one run at a time",
			ErrHistoryTooLarge, res.Ops, cfg.LinearizabilityMaxOps)
	}
	// Porcupine draws one row per client id, numbered from zero.
	slices.SortFunc(clients, func(a, b clientKey) int {
		return cmp.Or(cmp.Compare(a.run, b.run), cmp.Compare(a.client, b.client))
	})
	for id, ck := range clients {
		clientIDs[ck] = id
	}
	for i := range history {
		history[i].ClientId = clientIDs[history[i].Metadata.(clientKey)]
		history[i].Metadata = nil
	}
	if cfg.Visualization == nil {
		res.Verdict = verdictOf(porcupine.CheckOperationsTimeout(registerModel, history, cfg.LinearizabilityTimeout))
		return res, nil
	}
	result, info := porcupine.CheckOperationsVerbose(registerModel, history, cfg.LinearizabilityTimeout)
	res.Verdict = verdictOf(result)
	if res.Verdict != VerdictNotLinearizable {
		return res, nil
	}
	if err := porcupine.Visualize(registerModel, info, cfg.Visualization); err != nil {
		return res, fmt.Errorf("measure: writing the linearizability visualization: %w", err)
	}
	res.Visualized = true
	return res, nil
}

func verdictOf(r porcupine.CheckResult) Verdict {
	switch r {
	case porcupine.Ok:
		return VerdictLinearizable
	case porcupine.Illegal:
		return VerdictNotLinearizable
	}
	return VerdictUnknown
}

// WriteText renders the verdict.
func (r LinearizabilityResult) WriteText(w io.Writer) error {
	if r.Skipped != "" {
		_, err := fmt.Fprintf(w, "Linearizability (Porcupine): skipped: %s\n", r.Skipped)
		return err
	}
	vis := ""
	if r.Visualized {
		vis = "; visualization written"
	}
	_, err := fmt.Fprintf(w, "Linearizability (Porcupine): %s (%d ops on %d registers; dropped %d failed reads and %d unobserved failed writes; %d indeterminate writes%s)\n",
		r.Verdict, r.Ops, r.Registers, r.FailedReads, r.UnobservedWrites, r.Indeterminate, vis)
	return err
}

func (r LinearizabilityResult) String() string { return formatString(r) }
