package main

import (
	"fmt"
	"reflect"
	"strings"
)

// traceField is how one field prints in its message's trace line (the
// message's String, which the simulator hashes and scenario scripts
// compare): " label=value", in the order the struct declares its fields,
// the value as its type prints (types.go). The field's tag may say more:
//
//	trace:"-"                 the field does not print
//	trace:"LABEL"             the label; the field's name in snake case if unset
//	trace:",omitzero"         prints only when not zero
//	trace:",flag"             a bool that prints its label alone, when true
//	trace:",join"             prints LABEL and the value right after the
//	                          previous field: no space, no = (us/c1#3)
//	trace:",flat"             a submessage whose fields print as the
//	                          message's own
//	trace:",if=EXPR"          prints only when EXPR, a Go expression over
//	                          the message m, holds; it comes last
//
// A submessage printed with a label prints by its appendTrace method,
// written by hand (a version, a dependency). A message whose line is
// irregular beyond these options has a String method written by hand,
// which wiregen leaves alone.
type traceField struct {
	field
	label                        string
	skip, unlessZero, flag, join bool
	flat                         bool
	cond                         string // the if= expression; "" for always
	err                          error  // a tag wiregen cannot read
}

func newTraceField(f field, tag reflect.StructTag) traceField {
	t := traceField{field: f, label: snake(f.goPath)}
	text, ok := tag.Lookup("trace")
	if !ok {
		return t
	}
	if text == "-" {
		t.skip = true
		return t
	}
	opts, cond, _ := strings.Cut(text, ",if=")
	t.cond = cond
	label, opts, _ := strings.Cut(opts, ",")
	if label != "" {
		t.label = label
	}
	t.err = setOptions("trace", text, opts, map[string]*bool{"omitzero": &t.unlessZero, "flag": &t.flag, "join": &t.join, "flat": &t.flat})
	return t
}

// traceGo is package wire's trace_gen.go: the String method of every
// message of the envelope that has none written by hand, and the
// appendTrace method of the submessages they print flat.
func (s *schema) traceGo() (string, error) {
	var b strings.Builder
	b.WriteString(header + "\npackage wire\n\nimport \"strconv\"\n")
	flat := map[string]bool{}
	for _, m := range s.envelope() {
		if s.written[m.name+".String"] {
			continue
		}
		fmt.Fprintf(&b, "\nfunc (m *%s) String() string {\nb := make([]byte, 0, 128)\n", m.name)
		w := &traceWriter{b: &b, lit: strings.TrimSuffix(m.name, "Request") + "("}
		if err := s.writeTraceFields(w, m, flat); err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "return string(append(b, %q...))\n}\n", w.lit+")")
	}
	for _, m := range s.structs {
		if !flat[m.name] || s.written[m.name+".appendTrace"] {
			continue
		}
		fmt.Fprintf(&b, "\n// appendTrace appends the fields of %s, which a trace line prints flat.\n", m.name)
		fmt.Fprintf(&b, "func (m *%s) appendTrace(b []byte) []byte {\n", m.name)
		w := &traceWriter{b: &b}
		if err := s.writeTraceFields(w, m, flat); err != nil {
			return "", err
		}
		w.flush()
		b.WriteString("return b\n}\n")
	}
	return b.String(), nil
}

// writeTraceFields writes the statements that append m's fields; a
// message's first field, which opens its line, prints always and without
// a space. It adds to flat the submessages printed flat.
func (s *schema) writeTraceFields(w *traceWriter, m *message, flat map[string]bool) error {
	first := m.envelope != 0
	for _, t := range m.trace {
		if t.skip {
			continue
		}
		sh := s.must(m, t.field)
		conds, err := s.traceCheck(m, t, sh)
		if err == nil && first && (len(conds) > 0 || t.join || t.flat) {
			err = fmt.Errorf("prints first, so always, with a label")
		}
		if err != nil {
			return fmt.Errorf("%s.%s: %w", m.name, t.goPath, err)
		}
		if t.flat {
			flat[sh.sub.name] = true
		}
		sep := " "
		if first || t.join {
			sep, first = "", false
		}
		w.when(strings.Join(conds, " && "))
		w.writeField(t, sh, sep)
	}
	w.when("")
	return nil
}

// traceCheck refuses options the field's type does not take, and returns
// the conditions under which the field prints.
func (s *schema) traceCheck(m *message, t traceField, sh shape) ([]string, error) {
	x := "m." + t.goPath
	var conds []string
	switch {
	case t.err != nil:
		return nil, t.err
	case t.flag && t.goType != "bool" && t.cond == "":
		return nil, fmt.Errorf("flag on a %s, without if=", t.goType)
	case t.flat && (sh.sub == nil || sh.repeated):
		return nil, fmt.Errorf("flat on a %s, not a submessage", t.goType)
	case sh.sub != nil && !t.flat && !s.written[sh.sub.name+".appendTrace"]:
		return nil, fmt.Errorf("%s has no appendTrace written by hand: print it flat or write one", sh.sub.name)
	case t.flag && t.cond == "":
		conds = append(conds, x)
	}
	if t.cond != "" {
		conds = append(conds, "("+t.cond+")")
	}
	if t.unlessZero {
		conds = append(conds, nonZero(t.goType, sh, x))
	}
	if sh.optional {
		conds = append(conds, x+" != nil")
	}
	return conds, nil
}

// nonZero is the Go condition that the field x is not its zero value.
func nonZero(goType string, sh shape, x string) string {
	switch {
	case strings.HasPrefix(goType, "[]"), goType == "string", goType == "NodeID":
		return "len(" + x + ") > 0"
	case sh.optional:
		return x + " != nil"
	case sh.sub != nil, goType == "hlc.Timestamp":
		return "!" + x + ".IsZero()"
	case goType == "bool":
		return x
	}
	return x + " != 0"
}

// traceWriter writes the statements of a trace method, joining the
// constant text between values into one append, and the fields that
// print under one condition into one if.
type traceWriter struct {
	b    *strings.Builder
	lit  string // constant text not yet appended
	cond string // the condition of the if open; "" for none
}

// when puts the statements that follow under cond ("" for none).
func (w *traceWriter) when(cond string) {
	if cond == w.cond {
		return
	}
	if w.cond != "" {
		w.stmt("}")
	}
	if w.cond = cond; cond != "" {
		w.stmt("if " + cond + " {")
	}
}

func (w *traceWriter) flush() {
	if w.lit != "" {
		fmt.Fprintf(w.b, "b = append(b, %q...)\n", w.lit)
		w.lit = ""
	}
}

func (w *traceWriter) stmt(s string) {
	w.flush()
	w.b.WriteString(s + "\n")
}

// writeField writes the statements that append one field, after sep.
func (w *traceWriter) writeField(t traceField, sh shape, sep string) {
	x := "m." + t.goPath
	switch {
	case t.flag:
		w.lit += sep + t.label
		return
	case t.flat:
		w.stmt("b = " + x + ".appendTrace(b)")
		return
	case t.join:
		w.lit += sep + t.label
	default:
		w.lit += sep + t.label + "="
	}
	switch {
	case sh.sub == nil:
		w.stmt("b = " + fmt.Sprintf(sh.scalar.trace, x))
	case sh.repeated:
		w.stmt(fmt.Sprintf("b = appendEach(b, %s, %s.appendTrace)", x, sh.sub.name))
	default:
		w.stmt("b = " + x + ".appendTrace(b)")
	}
}
