package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/cosla/cosla/internal/core/hlc"
	"github.com/cosla/cosla/internal/core/replica"
	"github.com/cosla/cosla/internal/runtime/private"
)

// RollbackDir is where a process writes the versions its replicas rolled
// back at a failover, under its data directory: one file per table,
// tablet and epoch, TABLE-TABLET-EPOCH.jsonl, a JSON object a line
// (RolledBackVersion). MongoDB's rollback directory is the model: the
// versions were acknowledged by too few replicas to survive the loss of
// their primary (README "When a site fails"), and an operator may write
// them again by hand.
const RollbackDir = "rollback"

// RolledBackVersion is one line of a rollback file.
type RolledBackVersion struct {
	Table  string        `json:"table"`
	Tablet int32         `json:"tablet"`
	Epoch  uint64        `json:"epoch"`
	Key    string        `json:"key"`
	Value  []byte        `json:"value"`
	TS     hlc.Timestamp `json:"ts"`
}

// rollbackFile returns the path of the file of a tablet's versions
// rolled back as it entered epoch.
func rollbackFile(dataDir string, rb replica.RolledBack) string {
	name := fmt.Sprintf("%s-%d-%d.jsonl", rb.Table, rb.Tablet.Tablet, rb.Epoch)
	return filepath.Join(dataDir, RollbackDir, name)
}

// writeRollback appends a rolled-back version to its rollback file and
// syncs it. The replica has already dropped the version durably (and
// keeps it in its engine), so a failure here loses only the file's copy:
// it is logged.
func (s *Server) writeRollback(rb replica.RolledBack) {
	line, err := json.Marshal(RolledBackVersion{Table: rb.Table, Tablet: rb.Tablet.Tablet, Epoch: rb.Epoch,
		Key: rb.Entry.Key, Value: rb.Entry.Value, TS: rb.Entry.TS})
	if err == nil {
		err = appendLine(rollbackFile(s.opts.DataDir, rb), line)
	}
	if err != nil {
		s.opts.Logger.Error("cosla serve: writing a rolled-back version", "table", rb.Table, "tablet", rb.Tablet.Tablet, "err", err)
	}
}

// ReadRollbacks returns the versions in the rollback files under a
// process's data directory, file by file in name order, none when it has
// rolled nothing back.
func ReadRollbacks(dataDir string) ([]RolledBackVersion, error) {
	paths, err := filepath.Glob(filepath.Join(dataDir, RollbackDir, "*.jsonl"))
	if err != nil {
		return nil, err
	}
	var out []RolledBackVersion
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var v RolledBackVersion
			if err := json.Unmarshal(line, &v); err != nil {
				return nil, fmt.Errorf("cosla: rollback file %s, line %d: %w", path, i+1, err)
			}
			out = append(out, v)
		}
	}
	return out, nil
}

func appendLine(path string, line []byte) error {
	if err := private.MkdirAll(filepath.Dir(path)); err != nil {
		return err
	}
	f, err := private.OpenFile(path, os.O_WRONLY|os.O_APPEND)
	if err != nil {
		return err
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
