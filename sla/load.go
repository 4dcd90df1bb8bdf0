package sla

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Load reads an SLA from a file: YAML, as ParseYAML reads it, if the name
// ends in .yaml or .yml, and the text format of Parse otherwise. Errors
// start with the path.
func Load(path string) (SLA, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cosla: load SLA: %w", err)
	}
	var s SLA
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		s, err = ParseYAML(data)
	default:
		s, err = Parse(string(data))
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
