package workload

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
)

// This file implements YCSB's core workload (Cooper et al. SoCC'10, section
// 4.1 and the "Core Workloads" page of the YCSB wiki): an operation mix over a
// table of records, read from a Java properties file.
//
// Two choices differ from, or narrow, YCSB's own client:
//
//   - Proportions are normalized: they are weights, divided by their sum, as
//     YCSB's discrete generator does implicitly. A file whose proportions sum
//     to 0.9 or to 90 therefore means what it says relative to itself.
//     Negative, NaN or infinite proportions, and a mix whose sum is zero, are
//     rejected.
//   - Scan is kept as an operation kind, because workload E is defined by it,
//     but cosla has no range scans. A Scan op names a start record (Item) and
//     a length (ScanLength); the bench driver turns it into point reads of the
//     ScanLength consecutive records Item, Item+1, ... (Key of each). Since
//     keys are hashed (Key), these are not neighbours in key order the way the
//     records of a YCSB range scan are: the op measures the cost of reading
//     ScanLength records, not of one range request.

// Kind is the kind of a YCSB core-workload operation.
type Kind uint8

// The operation kinds of YCSB's core workload.
const (
	Read Kind = iota
	Update
	Insert
	Scan
	// ReadModifyWrite reads a record and then writes it back (workload F).
	ReadModifyWrite

	// NumKinds is the number of kinds; kinds are numbered 0 to NumKinds-1,
	// so they can index arrays.
	NumKinds = 5
)

var kindNames = [NumKinds]string{"read", "update", "insert", "scan", "read-modify-write"}

// String returns the kind's name in lower case, as in YCSB's reports
// ("read-modify-write" for ReadModifyWrite).
func (k Kind) String() string {
	if k < NumKinds {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Op is one operation drawn from a Workload.
type Op struct {
	Kind Kind
	// Item is the record the operation touches: for Insert a new record
	// numbered after every record loaded or inserted before it, for Scan the
	// first of ScanLength consecutive records.
	Item uint64
	// Key is Key(Item).
	Key string
	// ScanLength is the number of records a Scan covers, at least 1 and at
	// most MaxScanLength, cut short so that the scan stays within the
	// records that exist. It is 0 for other kinds.
	ScanLength int
}

// Distribution names a YCSB request distribution: how the record an operation
// touches is chosen.
type Distribution string

// The request distributions of YCSB's core workload.
const (
	// RequestZipfian is YCSB's scrambled zipfian (NewScrambledZipfian).
	RequestZipfian Distribution = "zipfian"
	// RequestUniform picks each loaded record with equal probability.
	RequestUniform Distribution = "uniform"
	// RequestLatest favours the most recently inserted records (Latest).
	RequestLatest Distribution = "latest"
	// RequestHotspot sends a fixed share of operations to a fixed hot set
	// (NewHotspot).
	RequestHotspot Distribution = "hotspot"
)

// MaxRecordCount bounds RecordCount ("put a limit on everything"): record
// numbers and key names are 64-bit, but the latest distribution builds its
// zipfian in O(n) and rejects more than MaxZipfianItems records, and the
// other distributions gain nothing from a bound above it.
const MaxRecordCount = MaxZipfianItems

// MaxFieldBytes bounds FieldCount*FieldLength, the size of the value the
// bench driver writes per insert or update: 16 MiB, far above YCSB's 1 KB
// default, low enough that a typo does not allocate gigabytes per operation.
const MaxFieldBytes = 16 << 20

// Properties are the YCSB core-workload properties cosla understands. The
// field comments give the property name and the default, which is YCSB's
// except where noted.
type Properties struct {
	// RecordCount is recordcount: the records loaded before the run,
	// numbered 0 to RecordCount-1. Default 1000 (YCSB has none). At least 1,
	// at most MaxRecordCount.
	RecordCount uint64
	// OperationCount is operationcount: the operations of the run, not
	// counting the load. Default 1000 (YCSB has none).
	OperationCount uint64

	// ReadProportion etc. are readproportion (default 0.95),
	// updateproportion (default 0.05), insertproportion, scanproportion and
	// readmodifywriteproportion (default 0 each). They are weights: New
	// divides each by their sum.
	ReadProportion            float64
	UpdateProportion          float64
	InsertProportion          float64
	ScanProportion            float64
	ReadModifyWriteProportion float64

	// RequestDistribution is requestdistribution. Default RequestUniform.
	// As in YCSB, uniform and hotspot pick among the RecordCount loaded
	// records only, while zipfian and latest also reach records inserted
	// during the run.
	RequestDistribution Distribution
	// ZipfianConstant is zipfianconstant, the skew of the Zipfian
	// distribution, in (0, 1). Default ZipfianTheta (0.99). With the default
	// the scrambled zipfian of NewScrambledZipfian is used; with any other
	// value a zipfian over the records themselves is built in O(n) and
	// scrambled the same way, since a precomputed zeta exists only for 0.99.
	// The latest distribution always uses ZipfianTheta (see Latest).
	ZipfianConstant float64
	// HotspotDataFraction is hotspotdatafraction, the share of records in
	// the hot set, in [0, 1]. Default 0.2.
	HotspotDataFraction float64
	// HotspotOpnFraction is hotspotopnfraction, the share of operations that
	// go to the hot set, in [0, 1]. Default 0.8.
	HotspotOpnFraction float64

	// FieldCount is fieldcount (default 10) and FieldLength is fieldlength
	// (default 100 bytes). cosla stores one value per key, so a record is a
	// single value of FieldCount*FieldLength bytes, written whole by inserts
	// and updates; their product is at most MaxFieldBytes.
	FieldCount  int
	FieldLength int
	// MaxScanLength is maxscanlength: scan lengths are uniform in
	// [1, MaxScanLength] (YCSB's default scanlengthdistribution). Default
	// 1000, at least 1.
	MaxScanLength int
}

// DefaultProperties returns the properties a file that sets nothing has.
func DefaultProperties() Properties {
	return Properties{
		RecordCount:         1000,
		OperationCount:      1000,
		ReadProportion:      0.95,
		UpdateProportion:    0.05,
		RequestDistribution: RequestUniform,
		ZipfianConstant:     ZipfianTheta,
		HotspotDataFraction: 0.2,
		HotspotOpnFraction:  0.8,
		FieldCount:          10,
		FieldLength:         100,
		MaxScanLength:       1000,
	}
}

// Proportions returns the operation mix as given, indexed by Kind.
func (p Properties) Proportions() [NumKinds]float64 {
	return [NumKinds]float64{
		Read:            p.ReadProportion,
		Update:          p.UpdateProportion,
		Insert:          p.InsertProportion,
		Scan:            p.ScanProportion,
		ReadModifyWrite: p.ReadModifyWriteProportion,
	}
}

// ValueBytes is the size of a record's value: FieldCount*FieldLength.
func (p Properties) ValueBytes() int { return p.FieldCount * p.FieldLength }

// Validate checks every property and returns an error wrapping ErrInvalid
// that names the first bad one by its property-file name.
func (p Properties) Validate() error {
	if _, problem := p.validate(); problem != "" {
		return invalid("%s", problem)
	}
	return nil
}

// validate returns the first problem ("" if none) and the name of the
// property at fault, so that ParseProperties can say on which line it was
// set. The name is "" when no single property is at fault (the proportions'
// sum).
func (p Properties) validate() (property, problem string) {
	if p.RecordCount == 0 || p.RecordCount > MaxRecordCount {
		return "recordcount", fmt.Sprintf("recordcount = %d, want 1 <= recordcount <= %d", p.RecordCount, uint64(MaxRecordCount))
	}
	sum := 0.0
	for k, v := range p.Proportions() {
		if !(v >= 0) || math.IsInf(v, 0) { // also rejects NaN
			return proportionNames[k], fmt.Sprintf("%s = %v, want a finite proportion >= 0", proportionNames[k], v)
		}
		sum += v
	}
	if !(sum > 0) || math.IsInf(sum, 0) {
		return "", fmt.Sprintf("proportions sum to %v, want a finite sum > 0", sum)
	}
	switch p.RequestDistribution {
	case RequestZipfian, RequestUniform, RequestLatest, RequestHotspot:
	default:
		return "requestdistribution", fmt.Sprintf("requestdistribution = %q, want zipfian, uniform, latest or hotspot", string(p.RequestDistribution))
	}
	if !(p.ZipfianConstant > 0 && p.ZipfianConstant < 1) {
		return "zipfianconstant", fmt.Sprintf("zipfianconstant = %v, want 0 < zipfianconstant < 1", p.ZipfianConstant)
	}
	if !(p.HotspotDataFraction >= 0 && p.HotspotDataFraction <= 1) {
		return "hotspotdatafraction", fmt.Sprintf("hotspotdatafraction = %v, want 0 <= hotspotdatafraction <= 1", p.HotspotDataFraction)
	}
	if !(p.HotspotOpnFraction >= 0 && p.HotspotOpnFraction <= 1) {
		return "hotspotopnfraction", fmt.Sprintf("hotspotopnfraction = %v, want 0 <= hotspotopnfraction <= 1", p.HotspotOpnFraction)
	}
	if p.FieldCount < 1 {
		return "fieldcount", fmt.Sprintf("fieldcount = %d, want fieldcount >= 1", p.FieldCount)
	}
	if p.FieldLength < 1 {
		return "fieldlength", fmt.Sprintf("fieldlength = %d, want fieldlength >= 1", p.FieldLength)
	}
	if p.FieldCount > MaxFieldBytes/p.FieldLength {
		return "fieldlength", fmt.Sprintf("fieldcount*fieldlength = %d*%d, want <= %d bytes", p.FieldCount, p.FieldLength, MaxFieldBytes)
	}
	if p.MaxScanLength < 1 {
		return "maxscanlength", fmt.Sprintf("maxscanlength = %d, want maxscanlength >= 1", p.MaxScanLength)
	}
	return "", ""
}

var proportionNames = [NumKinds]string{
	Read:            "readproportion",
	Update:          "updateproportion",
	Insert:          "insertproportion",
	Scan:            "scanproportion",
	ReadModifyWrite: "readmodifywriteproportion",
}

// String renders p as a properties file that ParseProperties reads back to
// p, for logging the effective workload (STYLE.md habit 5).
func (p Properties) String() string {
	var b strings.Builder
	line := func(k string, v any) { fmt.Fprintf(&b, "%s=%v\n", k, v) }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	line("recordcount", p.RecordCount)
	line("operationcount", p.OperationCount)
	for k, v := range p.Proportions() {
		line(proportionNames[k], f(v))
	}
	line("requestdistribution", p.RequestDistribution)
	line("zipfianconstant", f(p.ZipfianConstant))
	line("hotspotdatafraction", f(p.HotspotDataFraction))
	line("hotspotopnfraction", f(p.HotspotOpnFraction))
	line("fieldcount", p.FieldCount)
	line("fieldlength", p.FieldLength)
	line("maxscanlength", p.MaxScanLength)
	return b.String()
}

// MaxPropertiesBytes bounds what ParseProperties reads: workload files are a
// few hundred bytes, so anything near 1 MiB is the wrong file.
const MaxPropertiesBytes = 1 << 20

// ParseProperties reads a YCSB workload file over DefaultProperties and
// validates the result. Errors wrap ErrInvalid and name the line and the
// property.
//
// The format is the subset of Java properties that YCSB's workload files
// use: one "key=value" (or "key: value") per line, surrounding blanks
// trimmed, "#" or "!" starting a comment line, blank lines ignored. Line
// continuations and escapes are not supported; a line ending in a backslash
// is rejected rather than misread.
//
// Unknown keys are rejected, so that a misspelt "readproprtion" is not
// silently left at its default. A few YCSB core properties that change
// nothing here are accepted: workload, table, readallfields, writeallfields,
// fieldnameprefix, and insertorder, scanlengthdistribution and
// fieldlengthdistribution at the only values modelled (hashed, uniform,
// constant). A key given twice is rejected.
func ParseProperties(r io.Reader) (Properties, error) {
	p := DefaultProperties()
	seen := make(map[string]int) // key -> line first set
	sc := bufio.NewScanner(io.LimitReader(r, MaxPropertiesBytes+1))
	read := 0
	lineNo := 0
	for sc.Scan() {
		lineNo++
		read += len(sc.Bytes()) + 1
		if read > MaxPropertiesBytes {
			return Properties{}, invalid("line %d: file longer than %d bytes", lineNo, MaxPropertiesBytes)
		}
		text := strings.TrimSpace(sc.Text())
		if text == "" || text[0] == '#' || text[0] == '!' {
			continue
		}
		if strings.HasSuffix(text, `\`) {
			return Properties{}, invalid("line %d: line continuation (trailing backslash) not supported", lineNo)
		}
		i := strings.IndexAny(text, "=:")
		if i < 0 {
			return Properties{}, invalid("line %d: %q: want key=value", lineNo, text)
		}
		key := strings.TrimSpace(text[:i])
		value := strings.TrimSpace(text[i+1:])
		if key == "" {
			return Properties{}, invalid("line %d: %q: empty key", lineNo, text)
		}
		if first, ok := seen[key]; ok {
			return Properties{}, invalid("line %d: %s set again (first set on line %d)", lineNo, key, first)
		}
		seen[key] = lineNo
		if err := p.set(key, value); err != nil {
			return Properties{}, invalid("line %d: %s = %q: %v", lineNo, key, value, err)
		}
	}
	if err := sc.Err(); err != nil {
		return Properties{}, fmt.Errorf("workload: reading properties after line %d: %w", lineNo, err)
	}
	if property, problem := p.validate(); problem != "" {
		if line, ok := seen[property]; ok {
			return Properties{}, invalid("line %d: %s", line, problem)
		}
		return Properties{}, invalid("%s", problem)
	}
	return p, nil
}

// Set sets one property, named as in a property file, as YCSB's client's
// `-p name=value` does over a workload file. The error wraps ErrInvalid
// and names the property. Set does not check p as a whole (a proportion
// may be set to 0 before another is raised): call Validate after the last
// Set.
func (p *Properties) Set(name, value string) error {
	if err := p.set(name, value); err != nil {
		return invalid("%s = %q: %v", name, value, err)
	}
	return nil
}

// set parses one property value into p. Errors say what was wanted; the
// caller adds the line and the key.
func (p *Properties) set(key, value string) error {
	u64 := func(dst *uint64) error {
		v, err := strconv.ParseUint(value, 10, 64)
		if err != nil {
			return fmt.Errorf("want a non-negative integer")
		}
		*dst = v
		return nil
	}
	integer := func(dst *int) error {
		v, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return fmt.Errorf("want an integer below 2^31")
		}
		*dst = int(v)
		return nil
	}
	float := func(dst *float64) error {
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return fmt.Errorf("want a number")
		}
		*dst = v
		return nil
	}
	only := func(want string) error {
		if value != want {
			return fmt.Errorf("only %s is supported", want)
		}
		return nil
	}
	switch key {
	case "recordcount":
		return u64(&p.RecordCount)
	case "operationcount":
		return u64(&p.OperationCount)
	case "readproportion":
		return float(&p.ReadProportion)
	case "updateproportion":
		return float(&p.UpdateProportion)
	case "insertproportion":
		return float(&p.InsertProportion)
	case "scanproportion":
		return float(&p.ScanProportion)
	case "readmodifywriteproportion":
		return float(&p.ReadModifyWriteProportion)
	case "requestdistribution":
		p.RequestDistribution = Distribution(value)
		return nil // Validate checks it, naming the property
	case "zipfianconstant":
		return float(&p.ZipfianConstant)
	case "hotspotdatafraction":
		return float(&p.HotspotDataFraction)
	case "hotspotopnfraction":
		return float(&p.HotspotOpnFraction)
	case "fieldcount":
		return integer(&p.FieldCount)
	case "fieldlength":
		return integer(&p.FieldLength)
	case "maxscanlength":
		return integer(&p.MaxScanLength)
	case "workload", "table", "readallfields", "writeallfields", "fieldnameprefix":
		return nil // no effect on a single-value key-value store
	case "insertorder":
		return only("hashed") // Key hashes record numbers
	case "scanlengthdistribution":
		return only("uniform")
	case "fieldlengthdistribution":
		return only("constant")
	default:
		return fmt.Errorf("unknown property")
	}
}

// The core workloads A-F as the YCSB wiki's "Core Workloads" page describes
// them, written out as property files so that presets go through the same
// parser as user files. recordcount and operationcount are 1000, as in the
// files YCSB ships.
var presets = map[string]string{
	// Update heavy: a session store recording recent actions.
	"a": `recordcount=1000
operationcount=1000
readproportion=0.5
updateproportion=0.5
scanproportion=0
insertproportion=0
requestdistribution=zipfian
`,
	// Read mostly: photo tagging, where adding a tag is an update.
	"b": `recordcount=1000
operationcount=1000
readproportion=0.95
updateproportion=0.05
scanproportion=0
insertproportion=0
requestdistribution=zipfian
`,
	// Read only: a user-profile cache built elsewhere.
	"c": `recordcount=1000
operationcount=1000
readproportion=1
updateproportion=0
scanproportion=0
insertproportion=0
requestdistribution=zipfian
`,
	// Read latest: status updates, where people read the newest.
	"d": `recordcount=1000
operationcount=1000
readproportion=0.95
updateproportion=0
scanproportion=0
insertproportion=0.05
requestdistribution=latest
`,
	// Short ranges: threaded conversations, each scan a thread's posts.
	"e": `recordcount=1000
operationcount=1000
readproportion=0
updateproportion=0
scanproportion=0.95
insertproportion=0.05
requestdistribution=zipfian
maxscanlength=100
scanlengthdistribution=uniform
`,
	// Read-modify-write: a user database whose records are read, changed
	// and written back.
	"f": `recordcount=1000
operationcount=1000
readproportion=0.5
updateproportion=0
scanproportion=0
insertproportion=0
readmodifywriteproportion=0.5
requestdistribution=zipfian
`,
}

// PresetNames lists the built-in core workloads in order.
var PresetNames = []string{"a", "b", "c", "d", "e", "f"}

// Preset returns YCSB core workload name ("a" to "f", either case, with or
// without a "workload" prefix: "A", "workloada").
func Preset(name string) (Properties, error) {
	key := strings.TrimPrefix(strings.ToLower(name), "workload")
	text, ok := presets[key]
	if !ok {
		return Properties{}, invalid("preset %q, want one of a, b, c, d, e, f", name)
	}
	return ParseProperties(strings.NewReader(text))
}

// Resolve returns the core workload of that name (a-f), else reads the
// property file at that path.
func Resolve(spec string) (Properties, error) {
	if p, err := Preset(spec); err == nil {
		return p, nil
	}
	f, err := os.Open(spec)
	if err != nil {
		return Properties{}, invalid("%q is neither a core workload (a-f) nor a readable file", spec)
	}
	defer f.Close()
	p, err := ParseProperties(f)
	if err != nil {
		return Properties{}, fmt.Errorf("%s: %w", spec, err)
	}
	return p, nil
}

// maxRedraws bounds the draws Workload.Next makes to find a zipfian item
// that exists (see Workload.keys). With a few percent of the item space not
// yet inserted, 64 misses in a row essentially never happen; if they do, the
// last draw is folded onto the records that exist.
const maxRedraws = 64

// Workload draws the operations of a YCSB core workload: Next picks a kind
// by the normalized proportions and a record by the request distribution.
//
// A Workload is a state machine, not safe for concurrent use: each Insert
// adds a record that later operations may touch. Callers that run several
// clients serialize Next (the bench driver holds a lock around it). Like the
// generators, it takes all its randomness from the *rand.Rand passed to
// Next, so a seeded source replays the same operations.
type Workload struct {
	props Properties
	// cumulative[k] is the normalized probability of kinds 0..k; the last
	// kind with a non-zero proportion has exactly 1.
	cumulative [NumKinds]float64
	// records counts the records that exist: RecordCount loaded, plus every
	// Insert drawn so far. Inserts take records as their item, so new keys
	// never collide with loaded ones.
	records uint64
	// keys picks the record of non-insert operations. For the zipfian it
	// draws over RecordCount plus the inserts the run is expected to make
	// (YCSB's expectednewkeys: twice operationcount*insertproportion, as
	// margin), and Next redraws items not yet inserted, as YCSB does; so
	// inserted records are read too, and a popular item's rank does not move
	// as the table grows.
	keys   Generator
	latest *Latest // keys, when the distribution is Latest; grown on insert
}

// New validates p and returns a Workload over p.RecordCount loaded records.
// Building takes O(RecordCount) time for the latest distribution and for a
// zipfian with a non-default constant (see NewZipfian).
func New(p Properties) (*Workload, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	w := &Workload{props: p, records: p.RecordCount}
	props := p.Proportions()
	sum := 0.0
	for _, v := range props {
		sum += v
	}
	last := 0
	acc := 0.0
	for k, v := range props {
		acc += v / sum
		w.cumulative[k] = acc
		if v > 0 {
			last = k
		}
	}
	// Rounding may leave the sum a hair below 1; a draw above it must still
	// land on a kind with a non-zero proportion, never on a zero one.
	for k := last; k < NumKinds; k++ {
		w.cumulative[k] = 1
	}

	var err error
	switch p.RequestDistribution {
	case RequestUniform:
		w.keys, err = NewUniform(p.RecordCount)
	case RequestHotspot:
		w.keys, err = NewHotspot(p.RecordCount, p.HotspotDataFraction, p.HotspotOpnFraction)
	case RequestLatest:
		w.latest, err = NewLatest(p.RecordCount)
		w.keys = w.latest
	case RequestZipfian:
		n := p.RecordCount + expectedInserts(p, sum)
		if p.ZipfianConstant == ZipfianTheta {
			w.keys, err = NewScrambledZipfian(n)
		} else {
			n = min(n, MaxZipfianItems)
			var z *zipfian
			z, err = newZipfian(n, p.ZipfianConstant)
			if err == nil {
				w.keys = &scrambledZipfian{n: n, base: *z}
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return w, nil
}

// expectedInserts is YCSB's expectednewkeys: twice the inserts the run is
// expected to make, capped so the item space stays within MaxRecordCount.
func expectedInserts(p Properties, proportionSum float64) uint64 {
	e := 2 * float64(p.OperationCount) * p.InsertProportion / proportionSum
	room := float64(MaxRecordCount - p.RecordCount)
	if e > room {
		return uint64(room)
	}
	return uint64(e)
}

// Properties returns the properties the Workload was built from.
func (w *Workload) Properties() Properties { return w.props }

// Records returns the number of records that exist: the loaded ones plus
// every Insert drawn so far.
func (w *Workload) Records() uint64 { return w.records }

// Next draws the next operation.
//
// An Insert is for record Records() (before the call) and grows Records();
// with the latest distribution the new record becomes the most popular at
// once, before the caller has performed the insert. A concurrent client may
// therefore read a key whose insert is still in flight: stores should treat
// a missing key as an ordinary read (YCSB avoids this by acknowledging
// inserts; cosla's driver accepts it to keep Workload free of callbacks).
// Once Records() reaches MaxZipfianItems the latest distribution stops
// growing and inserted records beyond it are never read.
func (w *Workload) Next(r *rand.Rand) Op {
	u := r.Float64()
	kind := Kind(NumKinds - 1)
	for k, c := range w.cumulative {
		if u < c {
			kind = Kind(k)
			break
		}
	}
	if kind == Insert {
		item := w.records
		w.records++
		if w.latest != nil && w.records <= MaxZipfianItems {
			// Cannot fail: records is within (0, MaxZipfianItems].
			_ = w.latest.SetMax(w.records)
		}
		return Op{Kind: Insert, Item: item, Key: Key(item)}
	}
	item := w.item(r)
	op := Op{Kind: kind, Item: item, Key: Key(item)}
	if kind == Scan {
		length := 1 + r.Uint64N(uint64(w.props.MaxScanLength))
		op.ScanLength = int(min(length, w.records-item))
	}
	return op
}

// item draws an existing record from the request distribution.
func (w *Workload) item(r *rand.Rand) uint64 {
	var item uint64
	for range maxRedraws {
		item = w.keys.Next(r)
		if item < w.records {
			return item
		}
	}
	return item % w.records
}
