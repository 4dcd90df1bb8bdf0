package workload

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

func mustPreset(t *testing.T, name string) Properties {
	t.Helper()
	p, err := Preset(name)
	if err != nil {
		t.Fatalf("Preset(%q): %v", name, err)
	}
	return p
}

func mustNew(t *testing.T, p Properties) *Workload {
	t.Helper()
	w, err := New(p)
	if err != nil {
		t.Fatalf("New:\n%s: %v", p, err)
	}
	return w
}

// TestPresets checks each core workload against the mix the YCSB wiki's
// "Core Workloads" page publishes for it.
func TestPresets(t *testing.T) {
	type mix = [NumKinds]float64
	for _, tc := range []struct {
		name string
		mix  mix
		dist Distribution
	}{
		{"a", mix{Read: 0.5, Update: 0.5}, RequestZipfian},
		{"b", mix{Read: 0.95, Update: 0.05}, RequestZipfian},
		{"c", mix{Read: 1}, RequestZipfian},
		{"d", mix{Read: 0.95, Insert: 0.05}, RequestLatest},
		{"e", mix{Scan: 0.95, Insert: 0.05}, RequestZipfian},
		{"f", mix{Read: 0.5, ReadModifyWrite: 0.5}, RequestZipfian},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := mustPreset(t, tc.name)
			if got := p.Proportions(); got != tc.mix {
				t.Errorf("proportions = %v, want %v", got, tc.mix)
			}
			if p.RequestDistribution != tc.dist {
				t.Errorf("requestdistribution = %q, want %q", p.RequestDistribution, tc.dist)
			}
			if p.RecordCount != 1000 || p.OperationCount != 1000 {
				t.Errorf("recordcount, operationcount = %d, %d, want 1000, 1000", p.RecordCount, p.OperationCount)
			}
			if p.ZipfianConstant != ZipfianTheta || p.FieldCount != 10 || p.FieldLength != 100 {
				t.Errorf("zipfianconstant, fieldcount, fieldlength = %v, %d, %d, want YCSB defaults", p.ZipfianConstant, p.FieldCount, p.FieldLength)
			}
			wantScan := 1000
			if tc.name == "e" {
				wantScan = 100
			}
			if p.MaxScanLength != wantScan {
				t.Errorf("maxscanlength = %d, want %d", p.MaxScanLength, wantScan)
			}
			mustNew(t, p)
		})
	}
	if len(PresetNames) != len(presets) {
		t.Errorf("PresetNames has %d names, presets %d", len(PresetNames), len(presets))
	}
	for _, name := range []string{"A", "workloadb", "WorkloadC"} {
		if _, err := Preset(name); err != nil {
			t.Errorf("Preset(%q): %v", name, err)
		}
	}
	if _, err := Preset("g"); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), `"g"`) {
		t.Errorf("Preset(\"g\") = %v, want an ErrInvalid naming \"g\"", err)
	}
}

// TestMix draws 100,000 operations and checks that each kind's count is
// within 5 binomial standard deviations, sqrt(n p (1-p)), of n p; a kind with
// proportion 0 must never come up. It also checks what every Op promises.
func TestMix(t *testing.T) {
	const draws = 100_000
	type tc struct {
		name string
		p    Properties
	}
	var cases []tc
	for _, name := range PresetNames {
		cases = append(cases, tc{"preset-" + name, mustPreset(t, name)})
	}
	// Weights that do not sum to 1 are normalized: 2:1:1:0:4 is 1/4, 1/8,
	// 1/8, 0, 1/2.
	weights := DefaultProperties()
	weights.ReadProportion, weights.UpdateProportion, weights.InsertProportion = 2, 1, 1
	weights.ScanProportion, weights.ReadModifyWriteProportion = 0, 4
	weights.MaxScanLength = 10
	cases = append(cases, tc{"weights-2-1-1-0-4-uniform", weights})
	hot := weights
	hot.RequestDistribution = RequestHotspot
	hot.ScanProportion = 1
	cases = append(cases, tc{"weights-2-1-1-1-4-hotspot", hot})
	theta := mustPreset(t, "e")
	theta.ZipfianConstant = 0.5
	cases = append(cases, tc{"preset-e-theta-0.5", theta})

	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			seed := uint64(i + 1)
			r := newRand(seed)
			w := mustNew(t, c.p)
			var count [NumKinds]int
			nextInsert := c.p.RecordCount
			for range draws {
				before := w.Records()
				op := w.Next(r)
				count[op.Kind]++
				if op.Key != Key(op.Item) {
					t.Fatalf("op %+v: Key != Key(Item); %s", op, repro(t, seed))
				}
				switch op.Kind {
				case Insert:
					if op.Item != nextInsert || w.Records() != before+1 {
						t.Fatalf("insert item %d, records %d -> %d, want item %d, records +1; %s", op.Item, before, w.Records(), nextInsert, repro(t, seed))
					}
					nextInsert++
				case Scan:
					if op.ScanLength < 1 || op.ScanLength > c.p.MaxScanLength || op.Item+uint64(op.ScanLength) > before {
						t.Fatalf("scan %+v with %d records, maxscanlength %d; %s", op, before, c.p.MaxScanLength, repro(t, seed))
					}
				default:
					if op.Item >= before || op.ScanLength != 0 {
						t.Fatalf("op %+v with %d records; %s", op, before, repro(t, seed))
					}
				}
			}
			props := c.p.Proportions()
			sum := 0.0
			for _, v := range props {
				sum += v
			}
			for k, v := range props {
				p := v / sum
				want := draws * p
				tolerance := 5 * math.Sqrt(draws*p*(1-p))
				if got := float64(count[k]); math.Abs(got-want) > tolerance {
					t.Errorf("%v: %d of %d draws, want %.0f ± %.1f (proportion %v); %s", Kind(k), count[k], draws, want, tolerance, p, repro(t, seed))
				}
			}
		})
	}
}

// TestLatestReadsNewest checks that with workload D the records inserted
// during the run are read, and the newest most of all.
func TestLatestReadsNewest(t *testing.T) {
	const seed = 7
	r := newRand(seed)
	w := mustNew(t, mustPreset(t, "d"))
	newest, inserted, reads := 0, 0, 0
	for range 20_000 {
		before := w.Records()
		op := w.Next(r)
		if op.Kind != Read {
			continue
		}
		reads++
		if op.Item == before-1 {
			newest++
		}
		if op.Item >= 1000 {
			inserted++
		}
	}
	// The newest of ~1000 records has probability 1/zeta(n, 0.99), about
	// 13%; a uniform pick would give 0.1%.
	if newest < reads/20 || inserted < reads/4 {
		t.Errorf("%d reads: %d of the newest record, %d of inserted records; want >= 5%% and >= 25%%; %s", reads, newest, inserted, repro(t, seed))
	}
}

func TestSameSeedSameOps(t *testing.T) {
	for _, name := range PresetNames {
		t.Run(name, func(t *testing.T) {
			p := mustPreset(t, name)
			w1, w2 := mustNew(t, p), mustNew(t, p)
			r1, r2 := newRand(3), newRand(3)
			for i := range 1000 {
				if a, b := w1.Next(r1), w2.Next(r2); a != b {
					t.Fatalf("draw %d: %+v != %+v; %s", i, a, b, repro(t, 3))
				}
			}
		})
	}
}

func TestPropertiesStringRoundTrip(t *testing.T) {
	p := mustPreset(t, "e")
	p.ReadProportion = 0.125
	p.RequestDistribution = RequestHotspot
	p.ZipfianConstant = 0.7
	got, err := ParseProperties(strings.NewReader(p.String()))
	if err != nil {
		t.Fatalf("ParseProperties(String()): %v\n%s", err, p)
	}
	if got != p {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, p)
	}
}

// TestSet overrides workload A's mix as `-p` does: write-only, 256-byte
// values.
func TestSet(t *testing.T) {
	p := mustPreset(t, "a")
	for _, kv := range [][2]string{{"readproportion", "0"}, {"updateproportion", "1"}, {"fieldcount", "1"}, {"fieldlength", "256"}} {
		if err := p.Set(kv[0], kv[1]); err != nil {
			t.Fatalf("Set(%s, %s): %v", kv[0], kv[1], err)
		}
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if p.ReadProportion != 0 || p.UpdateProportion != 1 || p.ValueBytes() != 256 || p.RequestDistribution != RequestZipfian {
		t.Errorf("after Set: %+v", p)
	}
	for _, kv := range [][2]string{{"readproprtion", "1"}, {"fieldlength", "long"}, {"insertorder", "ordered"}} {
		err := p.Set(kv[0], kv[1])
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), kv[0]) {
			t.Errorf("Set(%s, %s) = %v, want ErrInvalid naming the property", kv[0], kv[1], err)
		}
	}
	// Set checks one value, Validate the whole.
	if err := p.Set("updateproportion", "0"); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); !errors.Is(err, ErrInvalid) {
		t.Errorf("all proportions 0: Validate() = %v, want ErrInvalid", err)
	}
}

func TestParseFormat(t *testing.T) {
	in := `
# a comment
! another comment
   recordcount = 5000
operationcount: 20
workload=site.ycsb.workloads.CoreWorkload
readallfields=true
insertorder=hashed
readproportion=45
updateproportion=5
requestdistribution=hotspot
`
	p, err := ParseProperties(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultProperties()
	want.RecordCount, want.OperationCount = 5000, 20
	want.ReadProportion, want.UpdateProportion = 45, 5
	want.RequestDistribution = RequestHotspot
	if p != want {
		t.Errorf("got\n%+v\nwant\n%+v", p, want)
	}
	// 45:5 normalizes to the same mix as 0.9:0.1.
	w := mustNew(t, p)
	if math.Abs(w.cumulative[Read]-0.9) > 1e-15 || w.cumulative[Update] != 1 || w.cumulative[NumKinds-1] != 1 {
		t.Errorf("cumulative = %v, want [0.9 1 1 1 1]", w.cumulative)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string // substrings of the error
	}{
		{"no separator", "recordcount=10\nreadproportion 0.5\n", []string{"line 2", "want key=value"}},
		{"empty key", "=3\n", []string{"line 1", "empty key"}},
		{"unknown key", "#x\nreadproprtion=0.5\n", []string{"line 2", "readproprtion", "unknown property"}},
		{"duplicate", "fieldcount=1\n\nfieldcount=2\n", []string{"line 3", "fieldcount", "first set on line 1"}},
		{"continuation", "readproportion=0.5,\\\n0.5\n", []string{"line 1", "continuation"}},
		{"not an integer", "recordcount=lots\n", []string{"line 1", "recordcount", "non-negative integer"}},
		{"negative count", "operationcount=-1\n", []string{"line 1", "operationcount", "non-negative integer"}},
		{"not a number", "\n\nupdateproportion=half\n", []string{"line 3", "updateproportion", "want a number"}},
		{"zero records", "recordcount=0\n", []string{"line 1", "recordcount = 0"}},
		{"negative proportion", "readproportion=1\nscanproportion=-0.1\n", []string{"line 2", "scanproportion = -0.1"}},
		{"NaN proportion", "insertproportion=NaN\n", []string{"line 1", "insertproportion = NaN"}},
		{"zero sum", "readproportion=0\nupdateproportion=0\n", []string{"proportions sum to 0"}},
		{"unknown empty", "x=\n", []string{"line 1", "unknown property"}},
		{"bad distribution", "requestdistribution=exponential\n", []string{"line 1", "requestdistribution", "exponential"}},
		{"theta 1", "zipfianconstant=1\n", []string{"line 1", "zipfianconstant = 1"}},
		{"hot fraction", "hotspotdatafraction=1.5\n", []string{"line 1", "hotspotdatafraction = 1.5"}},
		{"op fraction", "hotspotopnfraction=-1\n", []string{"line 1", "hotspotopnfraction = -1"}},
		{"fieldcount", "fieldcount=0\n", []string{"line 1", "fieldcount = 0"}},
		{"value too big", "fieldcount=100000\nfieldlength=1000\n", []string{"line 2", "fieldcount*fieldlength"}},
		{"scan length", "maxscanlength=0\n", []string{"line 1", "maxscanlength = 0"}},
		{"insertorder", "insertorder=ordered\n", []string{"line 1", "insertorder", "only hashed"}},
		{"too long", strings.Repeat("# padding\n", MaxPropertiesBytes/10+1), []string{"longer than"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseProperties(strings.NewReader(tc.in))
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
			for _, s := range tc.want {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("err = %q, want it to contain %q", err, s)
				}
			}
		})
	}
}

func TestNewRejectsInvalid(t *testing.T) {
	p := DefaultProperties()
	p.RequestDistribution = ""
	if _, err := New(p); !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "requestdistribution") {
		t.Errorf("New with empty distribution: %v, want ErrInvalid naming requestdistribution", err)
	}
}

func TestKindString(t *testing.T) {
	var names []string
	for k := range Kind(NumKinds + 1) {
		names = append(names, k.String())
	}
	got := fmt.Sprint(names)
	if want := "[read update insert scan read-modify-write Kind(5)]"; got != want {
		t.Errorf("kind names = %s, want %s", got, want)
	}
}
