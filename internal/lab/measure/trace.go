package measure

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"unicode/utf8"

	"github.com/cosla/cosla/keyfmt"
)

// Kind is what an operation did.
type Kind string

// The operation kinds of a trace.
const (
	KindWrite Kind = "write"
	KindRead  Kind = "read"
)

// Role is the part a client plays in the benchmark (Wada 2, Fig. 1). A
// single thread that both writes and reads (Wada 2.1.1) tags each op with
// the role of that op.
type Role string

// The roles of a trace; the empty Role means unspecified.
const (
	RoleWriter Role = "writer"
	RoleReader Role = "reader"
)

// Op is one operation of a trace as the client saw it: one JSONL line.
//
// Times are microseconds on a single clock shared by every client of the
// trace (the benchmark's, not the store's). Every write writes a value no
// other write of the trace writes, so that a read names the write it saw
// (Wada 2: "the value written is the current time"); the empty value is
// the initial state of every key and is what a read that found nothing
// returns.
type Op struct {
	// Run names the measurement run (Wada 2: one five-minute measurement);
	// each run is analysed as an independent history. Empty is one run.
	Run string `json:"run,omitempty"`
	// Client names the client (thread) that issued the op; a client runs
	// one op at a time.
	Client string `json:"client"`
	Role   Role   `json:"role,omitempty"`
	Kind   Kind   `json:"kind"`
	// Key may be any bytes, and so may Value; in the trace each is a JSON
	// string when it is valid UTF-8, else {"base64": ...} (keyfmt.JSON).
	Key string `json:"key"`
	// Value is the value written, or the value read ("" if none found).
	Value string `json:"value"`
	// CallUS and ReturnUS are the invocation and response times.
	CallUS   int64 `json:"call_us"`
	ReturnUS int64 `json:"return_us"`
	// OK reports that the op completed successfully; a write that is not
	// OK is indeterminate (it may take effect), a read that is not OK
	// returned nothing.
	OK    bool   `json:"ok"`
	Error string `json:"error,omitempty"`
	// Consistency and Replica are what the store reported: the guarantee
	// it claims the op met and the replica that served it.
	Consistency string `json:"consistency,omitempty"`
	Replica     string `json:"replica,omitempty"`
	// Option is the client-side choice the op was issued with, free-form:
	// "eventual" or "consistent" (Wada 2.1), "primary" or "replica". The
	// analyses group reads by it.
	Option string `json:"option,omitempty"`
}

// opJSON is an Op as a trace line: its key and value as keyfmt.JSON, the
// fields before them repeated so that a line keeps Op's field order (and
// the bytes it had before keys could be any bytes).
type opJSON struct {
	Run    string      `json:"run,omitempty"`
	Client string      `json:"client"`
	Role   Role        `json:"role,omitempty"`
	Kind   Kind        `json:"kind"`
	Key    keyfmt.JSON `json:"key"`
	Value  keyfmt.JSON `json:"value"`
	opFields
}

// opFields is Op without its JSON methods.
type opFields Op

// line returns what encodes op as a trace line: Op's own fields when its
// key and value are valid UTF-8, which encode alike and faster, else an
// opJSON.
func (op *Op) line() any {
	if utf8.ValidString(op.Key) && utf8.ValidString(op.Value) {
		return (*opFields)(op)
	}
	return &opJSON{Run: op.Run, Client: op.Client, Role: op.Role, Kind: op.Kind,
		Key: keyfmt.JSON(op.Key), Value: keyfmt.JSON(op.Value), opFields: opFields(*op)}
}

func (v *opJSON) op() Op {
	op := Op(v.opFields)
	op.Run, op.Client, op.Role, op.Kind, op.Key, op.Value = v.Run, v.Client, v.Role, v.Kind, string(v.Key), string(v.Value)
	return op
}

// MarshalJSON implements json.Marshaler: op as a trace line.
func (op Op) MarshalJSON() ([]byte, error) { return json.Marshal(op.line()) }

// UnmarshalJSON implements json.Unmarshaler: op from a trace line.
func (op *Op) UnmarshalJSON(b []byte) error {
	var v opJSON
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*op = v.op()
	return nil
}

// ErrInvalidOp is wrapped by every error Validate returns.
var ErrInvalidOp = errors.New("measure: invalid op")

// Validate reports the first thing that makes op unusable for analysis.
func (op Op) Validate() error {
	switch {
	case op.Client == "":
		return fmt.Errorf("%w: client is empty", ErrInvalidOp)
	case op.Kind != KindWrite && op.Kind != KindRead:
		return fmt.Errorf("%w: kind %q is neither %q nor %q", ErrInvalidOp, op.Kind, KindWrite, KindRead)
	case op.Role != "" && op.Role != RoleWriter && op.Role != RoleReader:
		return fmt.Errorf("%w: role %q is neither %q nor %q", ErrInvalidOp, op.Role, RoleWriter, RoleReader)
	case op.Key == "":
		return fmt.Errorf("%w: key is empty", ErrInvalidOp)
	case op.Kind == KindWrite && op.Value == "":
		return fmt.Errorf("%w: write of the empty value (the empty value is every key's initial state)", ErrInvalidOp)
	case op.CallUS < 0 || op.CallUS > maxTimeUS:
		return fmt.Errorf("%w: call_us %d outside [0, %d]", ErrInvalidOp, op.CallUS, int64(maxTimeUS))
	case op.ReturnUS < op.CallUS || op.ReturnUS > maxTimeUS:
		return fmt.Errorf("%w: return_us %d before call_us %d or after %d", ErrInvalidOp, op.ReturnUS, op.CallUS, int64(maxTimeUS))
	}
	return nil
}

// maxTimeUS bounds op times so that differences of times, and of the
// sentinels negInfUS and posInfUS, never overflow int64.
const maxTimeUS = 1 << 60

// LatencyUS is the op's response time.
func (op Op) LatencyUS() int64 { return op.ReturnUS - op.CallUS }

// MaxLineBytes is the longest JSONL line ReadJSONL and JSONLReader accept.
const MaxLineBytes = 1 << 20

// JSONLWriter writes ops one JSON object per line. It buffers; call Flush.
type JSONLWriter struct {
	w   *bufio.Writer
	enc *json.Encoder
}

// NewJSONLWriter returns a writer of ops to w.
func NewJSONLWriter(w io.Writer) *JSONLWriter {
	bw := bufio.NewWriter(w)
	return &JSONLWriter{w: bw, enc: json.NewEncoder(bw)}
}

// Write appends one op as one line.
func (jw *JSONLWriter) Write(op Op) error {
	if err := jw.enc.Encode(op.line()); err != nil {
		return fmt.Errorf("measure: writing op: %w", err)
	}
	return nil
}

// Flush writes any buffered lines to the underlying writer.
func (jw *JSONLWriter) Flush() error {
	if err := jw.w.Flush(); err != nil {
		return fmt.Errorf("measure: writing trace: %w", err)
	}
	return nil
}

// WriteJSONL writes ops to w, one per line.
func WriteJSONL(w io.Writer, ops []Op) error {
	jw := NewJSONLWriter(w)
	for _, op := range ops {
		if err := jw.Write(op); err != nil {
			return err
		}
	}
	return jw.Flush()
}

// ErrMalformed is wrapped by every error about a malformed trace line.
var ErrMalformed = errors.New("measure: malformed trace")

// JSONLReader reads ops one line at a time. Blank lines are skipped;
// unknown fields are ignored so that newer writers stay readable.
type JSONLReader struct {
	sc   *bufio.Scanner
	line int
}

// NewJSONLReader returns a reader of ops from r.
func NewJSONLReader(r io.Reader) *JSONLReader {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	return &JSONLReader{sc: sc}
}

// Line is the 1-based number of the last line read.
func (jr *JSONLReader) Line() int { return jr.line }

// Next returns the next op, or io.EOF after the last. An error names the
// line, wraps ErrMalformed for bad JSON and ErrInvalidOp for an op that
// fails Validate.
func (jr *JSONLReader) Next() (Op, error) {
	for jr.sc.Scan() {
		jr.line++
		b := jr.sc.Bytes()
		if len(trimSpace(b)) == 0 {
			continue
		}
		var v opJSON
		if err := json.Unmarshal(b, &v); err != nil {
			return Op{}, fmt.Errorf("%w: line %d: %v", ErrMalformed, jr.line, err)
		}
		op := v.op()
		if err := op.Validate(); err != nil {
			return Op{}, fmt.Errorf("line %d: %w", jr.line, err)
		}
		return op, nil
	}
	if err := jr.sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return Op{}, fmt.Errorf("%w: line %d: longer than %d bytes", ErrMalformed, jr.line+1, MaxLineBytes)
		}
		return Op{}, fmt.Errorf("measure: reading trace after line %d: %w", jr.line, err)
	}
	return Op{}, io.EOF
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t' || b[0] == '\r') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t' || b[len(b)-1] == '\r') {
		b = b[:len(b)-1]
	}
	return b
}

// ReadJSONL reads a whole trace; see JSONLReader.Next for the errors.
func ReadJSONL(r io.Reader) ([]Op, error) {
	jr := NewJSONLReader(r)
	var ops []Op
	for {
		op, err := jr.Next()
		if err == io.EOF {
			return ops, nil
		}
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
}

// csvHeader names the CSV columns after the JSON fields.
var csvHeader = []string{
	"run", "client", "role", "kind", "key", "value", "call_us", "return_us",
	"latency_us", "ok", "error", "consistency", "replica", "option",
}

// WriteCSV writes ops as CSV with a header row, for spreadsheets and plots.
func WriteCSV(w io.Writer, ops []Op) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvHeader); err != nil {
		return fmt.Errorf("measure: writing csv: %w", err)
	}
	for _, op := range ops {
		rec := []string{
			op.Run, op.Client, string(op.Role), string(op.Kind), op.Key, op.Value,
			strconv.FormatInt(op.CallUS, 10), strconv.FormatInt(op.ReturnUS, 10),
			strconv.FormatInt(op.LatencyUS(), 10), strconv.FormatBool(op.OK),
			op.Error, op.Consistency, op.Replica, op.Option,
		}
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("measure: writing csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("measure: writing csv: %w", err)
	}
	return nil
}
