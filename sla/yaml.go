package sla

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"gopkg.in/yaml.v3"
)

// MarshalText writes the guarantee as String does. It fails on an invalid
// guarantee, which could not be read back.
func (c Consistency) MarshalText() ([]byte, error) { return validText(c.Validate, c.String) }

// UnmarshalText reads a guarantee as ParseConsistency does.
func (c *Consistency) UnmarshalText(text []byte) error { return parseText(c, text, ParseConsistency) }

// MarshalText writes the subSLA as String does ("strong 300ms 1"). It
// fails on an invalid subSLA, which could not be read back.
func (s SubSLA) MarshalText() ([]byte, error) { return validText(s.Consistency.Validate, s.String) }

// MarshalText writes the SLA in the one-line text format. It fails on an
// invalid SLA, which could not be read back.
func (s SLA) MarshalText() ([]byte, error) { return validText(s.Validate, s.String) }

// UnmarshalText reads the text format as Parse does.
func (s *SLA) UnmarshalText(text []byte) error { return parseText(s, text, Parse) }

// validText is a MarshalText: the text form, once validate says it can be
// read back.
func validText(validate func() error, text func() string) ([]byte, error) {
	if err := validate(); err != nil {
		return nil, err
	}
	return []byte(text()), nil
}

// parseText is an UnmarshalText: *dst becomes what parse reads, or stays
// as it was on an error.
func parseText[T any](dst *T, text []byte, parse func(string) (T, error)) error {
	parsed, err := parse(string(text))
	if err != nil {
		return err
	}
	*dst = parsed
	return nil
}

// MarshalYAML writes the SLA as a list of {consistency, latency, utility}
// mappings, one line per subSLA like the rows of the paper's figures. It fails
// on an invalid SLA.
func (s SLA) MarshalYAML() (any, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	list := &yaml.Node{Kind: yaml.SequenceNode}
	for _, sub := range s {
		row := &yaml.Node{Kind: yaml.MappingNode, Style: yaml.FlowStyle}
		row.Content = []*yaml.Node{
			yamlString("consistency"), yamlString(sub.Consistency.String()),
			yamlString("latency"), yamlString(formatLatency(sub.Latency)),
			// No tag, so the encoder writes the number plainly.
			yamlString("utility"), {Kind: yaml.ScalarNode, Value: formatUtility(sub.Utility)},
		}
		list.Content = append(list.Content, row)
	}
	return list, nil
}

func yamlString(s string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: s}
}

// UnmarshalYAML reads an SLA given either as a string in the text format or
// as a list of mappings with the keys consistency, latency and utility, and
// validates it.
//
// Unknown and repeated keys are errors here whatever the caller's decoder
// options: yaml.v3 does not pass KnownFields on to custom unmarshalers (a
// Node decodes with a fresh decoder), so the keys are checked by hand.
func (s *SLA) UnmarshalYAML(node *yaml.Node) error {
	node = followAlias(node)
	var parsed SLA
	switch node.Kind {
	case yaml.ScalarNode:
		text := node.Value
		if node.ShortTag() == "!!null" {
			text = "" // "~" or nothing
		}
		var err error
		if parsed, err = Parse(text); err != nil {
			return fmt.Errorf("line %d: %w", node.Line, err)
		}
		*s = parsed
		return nil
	case yaml.SequenceNode:
		for i, item := range node.Content {
			sub, err := subSLAFromYAML(i+1, followAlias(item))
			if err != nil {
				return err
			}
			parsed = append(parsed, sub)
		}
	default:
		return fmt.Errorf("line %d: %w: an SLA must be a string in the text format or a list of {consistency, latency, utility} mappings",
			node.Line, ErrInvalid)
	}
	if err := parsed.Validate(); err != nil {
		return fmt.Errorf("line %d: %w", node.Line, err)
	}
	*s = parsed
	return nil
}

// subSLAFromYAML reads one {consistency, latency, utility} mapping. Every key
// must be present exactly once.
func subSLAFromYAML(rank int, node *yaml.Node) (SubSLA, error) {
	if node.Kind != yaml.MappingNode {
		return SubSLA{}, fmt.Errorf("line %d: subSLA %d: %w: want a mapping with keys consistency, latency and utility",
			node.Line, rank, ErrInvalid)
	}
	var sub SubSLA
	seen := make(map[string]bool)
	for i := 0; i+1 < len(node.Content); i += 2 {
		key, value := node.Content[i], followAlias(node.Content[i+1])
		field := key.Value
		switch field {
		case "consistency", "latency", "utility":
		default:
			return SubSLA{}, fmt.Errorf("line %d: subSLA %d: %w: unknown field %q (want consistency, latency and utility)",
				key.Line, rank, ErrInvalid, field)
		}
		if seen[field] {
			return SubSLA{}, fmt.Errorf("line %d: subSLA %d: %s: %w: given twice", key.Line, rank, field, ErrInvalid)
		}
		seen[field] = true
		if value.Kind != yaml.ScalarNode || value.ShortTag() == "!!null" {
			return SubSLA{}, fmt.Errorf("line %d: subSLA %d: %s: %w: want a single value", value.Line, rank, field, ErrInvalid)
		}
		var err error
		switch field {
		case "consistency":
			sub.Consistency, err = ParseConsistency(value.Value)
		case "latency":
			sub.Latency, err = parseLatency(value.Value)
		case "utility":
			sub.Utility, err = parseUtility(value.Value)
		}
		if err != nil {
			return SubSLA{}, fmt.Errorf("line %d: subSLA %d: %s: %w", value.Line, rank, field, err)
		}
	}
	for _, field := range []string{"consistency", "latency", "utility"} {
		if !seen[field] {
			return SubSLA{}, fmt.Errorf("line %d: subSLA %d: %s: %w: missing", node.Line, rank, field, ErrInvalid)
		}
	}
	return sub, nil
}

// followAlias returns the node an alias (*name) refers to, or node itself.
func followAlias(node *yaml.Node) *yaml.Node {
	for node.Kind == yaml.AliasNode && node.Alias != nil {
		node = node.Alias
	}
	return node
}

// ParseYAML reads one YAML document holding an SLA: a string in the text
// format, a list of {consistency, latency, utility} mappings, or a mapping
// with that list under subslas and an optional name, which is ignored.
// Unknown keys are errors. The result is valid.
func ParseYAML(data []byte) (SLA, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%w: the YAML document is empty", ErrInvalid)
		}
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	var extra yaml.Node
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("%w: want one YAML document, found more", ErrInvalid)
	}
	if len(doc.Content) == 0 {
		return nil, fmt.Errorf("%w: the YAML document is empty", ErrInvalid)
	}
	top := followAlias(doc.Content[0])
	if top.Kind != yaml.MappingNode {
		var s SLA
		if err := s.UnmarshalYAML(top); err != nil {
			return nil, err
		}
		return s, nil
	}
	var list *yaml.Node
	for i := 0; i+1 < len(top.Content); i += 2 {
		key, value := top.Content[i], top.Content[i+1]
		switch key.Value {
		case "name":
			// Documentation for the reader only.
		case "subslas":
			if list != nil {
				return nil, fmt.Errorf("line %d: %w: subslas given twice", key.Line, ErrInvalid)
			}
			list = value
		default:
			return nil, fmt.Errorf("line %d: %w: unknown field %q (want subslas and optionally name)",
				key.Line, ErrInvalid, key.Value)
		}
	}
	if list == nil {
		return nil, fmt.Errorf("line %d: %w: no subslas list", top.Line, ErrInvalid)
	}
	var s SLA
	if err := s.UnmarshalYAML(list); err != nil {
		return nil, err
	}
	return s, nil
}
