package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cosla/cosla/internal/lab/measure"
)

// FileName is the name of a run's report in its directory.
const FileName = "report.json"

// ErrMalformed is wrapped by the error Load returns for a report.json that
// is not a report.
var ErrMalformed = errors.New("report: malformed report.json")

// ErrNoRuns is returned by Write when given no runs.
var ErrNoRuns = errors.New("report: no runs to compare")

// Run is one measured run.
type Run struct {
	// Name is the label in tables and legends, e.g. "redis replica".
	Name string
	// Dir is where the run was loaded from.
	Dir    string
	Report measure.Report
	// Meta is free-form: target, options, seed, command...
	Meta map[string]string
	// Sweep is the run's load sweep (Wada 4.1, Figs 7-12), nil when the
	// run has none. measure.Report does not carry it, so it travels beside
	// the report in report.json.
	Sweep *measure.SweepResult
}

// file is the form of report.json that Save writes.
type file struct {
	Name   string               `json:"name"`
	Meta   map[string]string    `json:"meta,omitempty"`
	Report measure.Report       `json:"report"`
	Sweep  *measure.SweepResult `json:"sweep,omitempty"`
}

// Load reads DIR/report.json. The file holds {"name":..., "meta": {...},
// "report": <measure.Report>} (and "sweep" if any); if name is empty, the
// run is named after the directory's base name.
//
// Load also reads the form `cosla measure --out DIR` has written, the
// fields of measure.Report at the top level beside "meta" and "sweep",
// so that older run directories stay comparable.
func Load(dir string) (Run, error) {
	path := filepath.Join(dir, FileName)
	data, err := os.ReadFile(path)
	if err != nil {
		return Run{}, fmt.Errorf("report: load %s: %w", path, err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return Run{}, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	if fields == nil {
		return Run{}, fmt.Errorf("%w: %s: null", ErrMalformed, path)
	}
	var f file
	switch {
	case fields["report"] != nil:
		err = json.Unmarshal(data, &f)
	case fields["summary"] != nil || fields["freshness"] != nil || fields["config"] != nil:
		// The flat form: measure.Report embedded in the top level.
		var flat struct {
			measure.Report
			Meta  map[string]string    `json:"meta"`
			Sweep *measure.SweepResult `json:"sweep"`
		}
		err = json.Unmarshal(data, &flat)
		f = file{Meta: flat.Meta, Report: flat.Report, Sweep: flat.Sweep}
	default:
		err = errors.New(`no "report" field`)
	}
	if err != nil {
		return Run{}, fmt.Errorf("%w: %s: %v", ErrMalformed, path, err)
	}
	r := Run{Name: f.Name, Dir: dir, Report: f.Report, Meta: f.Meta, Sweep: f.Sweep}
	if r.Name == "" {
		r.Name = filepath.Base(filepath.Clean(dir))
	}
	return r, nil
}

// Save writes DIR/report.json in the form Load reads, creating DIR if
// needed. The file is written to a temporary name first and renamed, so a
// reader never sees half a report.
func Save(dir string, r Run) error {
	data, err := json.MarshalIndent(file{Name: r.Name, Meta: r.Meta, Report: r.Report, Sweep: r.Sweep}, "", "  ")
	if err != nil {
		return fmt.Errorf("report: save %s: %w", filepath.Join(dir, FileName), err)
	}
	return writeFileAtomic(filepath.Join(dir, FileName), append(data, '\n'))
}

// writeFileAtomic writes data to path through a temporary file in the same
// directory, which it creates if needed.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("report: write %s: %w", path, err)
	}
	return nil
}
