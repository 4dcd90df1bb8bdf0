package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// schema is every tagged struct of package wire, in declaration order.
type schema struct {
	structs []*message
	byName  map[string]*message
	written map[string]bool // hand-written methods, by Type.Method
}

// message is one tagged struct: a message of the envelope or a
// submessage.
type message struct {
	name     string   // the Go type's, and the protobuf message's, name
	doc      []string // the Go doc comment's lines, without the directive
	envelope int      // the envelope's field carrying it; 0 for a submessage
	file     string   // the Go file defining it, without .go: wire, causal
	fields   []field  // by number
	inline   []field  // fields whose struct is inline (not a message)
	trace    []traceField
}

// field is one field of a message as encoded. An inline struct's fields
// appear in the enclosing message with a path (Replication.Mode).
type field struct {
	goPath   string // the Go selector from the message: Req, Replication.Mode
	proto    string // the protobuf field's name
	number   int
	goType   string // as written: uint64, []NodeID, *Test, hlc.Timestamp
	utf8     bool
	zigzag   bool
	omitZero bool
}

// load parses the non-test, non-generated Go files of package wire.
func load(dir string) (*schema, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	s := &schema{byName: map[string]*message{}, written: map[string]bool{}}
	fset := token.NewFileSet()
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") || strings.HasSuffix(p, "_gen.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		if err := s.addFile(f, strings.TrimSuffix(filepath.Base(p), ".go")); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return s, s.resolveInline()
}

func (s *schema) addFile(f *ast.File, file string) error {
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv != nil {
			s.written[receiverType(fn)+"."+fn.Name.Name] = true
			continue
		}
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.TYPE {
			continue
		}
		for _, spec := range g.Specs {
			ts := spec.(*ast.TypeSpec)
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			doc := ts.Doc
			if doc == nil && len(g.Specs) == 1 {
				doc = g.Doc
			}
			m, err := newMessage(ts.Name.Name, doc, st)
			if err != nil {
				return fmt.Errorf("type %s: %w", ts.Name.Name, err)
			}
			if m != nil {
				m.file = file
				s.structs = append(s.structs, m)
				s.byName[m.name] = m
			}
		}
	}
	return nil
}

// newMessage reads a struct's tags; nil if none of its fields has one.
func newMessage(name string, doc *ast.CommentGroup, st *ast.StructType) (*message, error) {
	m := &message{name: name}
	for _, fl := range st.Fields.List {
		if fl.Tag == nil {
			continue
		}
		tagText, _ := strconv.Unquote(fl.Tag.Value)
		tag, ok := reflect.StructTag(tagText).Lookup("wire")
		if !ok {
			continue
		}
		for _, n := range fl.Names {
			if tag == "inline" {
				m.inline = append(m.inline, field{goPath: n.Name, goType: types.ExprString(fl.Type)})
				continue
			}
			f, err := newField(n.Name, types.ExprString(fl.Type), tag)
			if err != nil {
				return nil, fmt.Errorf("field %s: %w", n.Name, err)
			}
			m.fields = append(m.fields, f)
			m.trace = append(m.trace, newTraceField(f, reflect.StructTag(tagText)))
		}
	}
	if len(m.fields) == 0 && len(m.inline) == 0 {
		return nil, nil
	}
	if doc != nil {
		for _, c := range doc.List {
			if n, ok := strings.CutPrefix(c.Text, "//wire:envelope "); ok {
				var err error
				if m.envelope, err = strconv.Atoi(n); err != nil {
					return nil, fmt.Errorf("directive %q: %w", c.Text, err)
				}
				continue
			}
			if !strings.HasPrefix(c.Text, "//go:") && !strings.HasPrefix(c.Text, "//wire:") {
				m.doc = append(m.doc, strings.TrimPrefix(strings.TrimPrefix(c.Text, "//"), " "))
			}
		}
	}
	m.doc = trimBlank(m.doc)
	return m, nil
}

func newField(name, goType, tag string) (field, error) {
	number, opts, _ := strings.Cut(tag, ",")
	n, err := strconv.Atoi(number)
	if err != nil || n <= 0 {
		return field{}, fmt.Errorf("tag wire:%q: want a field number", tag)
	}
	f := field{goPath: name, proto: snake(name), number: n, goType: goType}
	if goType == "time.Duration" {
		f.proto += "_nanos"
	}
	err = setOptions("wire", tag, opts, map[string]*bool{"utf8": &f.utf8, "zigzag": &f.zigzag, "omitzero": &f.omitZero})
	return f, err
}

// setOptions sets the flag that each of a tag's comma-separated options
// names, and refuses an option that names none.
func setOptions(key, tag, opts string, flags map[string]*bool) error {
	for o := range strings.SplitSeq(opts, ",") {
		if o == "" {
			continue
		}
		flag, ok := flags[o]
		if !ok {
			return fmt.Errorf("tag %s:%q: unknown option %q", key, tag, o)
		}
		*flag = true
	}
	return nil
}

// resolveInline moves the fields of inline structs into the messages that
// hold them, and orders every message's fields by number.
func (s *schema) resolveInline() error {
	inlined := map[string]bool{}
	for _, m := range s.structs {
		for _, inl := range m.inline {
			in := s.byName[inl.goType]
			if in == nil {
				return fmt.Errorf("%s.%s: inline field of %s, which is not a tagged struct", m.name, inl.goPath, inl.goType)
			}
			inlined[in.name] = true
			for _, f := range in.fields {
				f.goPath = inl.goPath + "." + f.goPath
				f.proto = snake(inl.goPath) + "_" + f.proto
				m.fields = append(m.fields, f)
			}
		}
		slices.SortFunc(m.fields, func(a, b field) int { return a.number - b.number })
		for i := 1; i < len(m.fields); i++ {
			if m.fields[i].number == m.fields[i-1].number {
				return fmt.Errorf("%s: fields %s and %s share number %d", m.name, m.fields[i-1].goPath, m.fields[i].goPath, m.fields[i].number)
			}
		}
	}
	s.structs = slices.DeleteFunc(s.structs, func(m *message) bool { return inlined[m.name] })
	for name := range inlined {
		delete(s.byName, name) // not a message: a field of its type is refused
	}
	return nil
}

// envelope returns the messages of the envelope, by field number.
func (s *schema) envelope() []*message {
	var out []*message
	for _, m := range s.structs {
		if m.envelope != 0 {
			out = append(out, m)
		}
	}
	slices.SortFunc(out, func(a, b *message) int { return a.envelope - b.envelope })
	return out
}

// files returns the Go files defining messages of the envelope, in the
// order of the envelope's fields.
func (s *schema) files() []string {
	var out []string
	for _, m := range s.envelope() {
		if !slices.Contains(out, m.file) {
			out = append(out, m.file)
		}
	}
	return out
}

// receiverType is the name of the type of a method's receiver, without
// its pointer.
func receiverType(fn *ast.FuncDecl) string {
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	return types.ExprString(t)
}

// snake is a Go name in protobuf's snake case: MinTS is min_ts, WriteID
// write_id.
func snake(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		if i > 0 && unicode.IsUpper(c) && (unicode.IsLower(r[i-1]) || unicode.IsDigit(r[i-1])) {
			b.WriteByte('_')
		}
		b.WriteRune(unicode.ToLower(c))
	}
	return b.String()
}

// kebab is a message's kind: its name without Request, in kebab case
// (PutRequest is put, CausalGetTxReply causal-get-tx-reply).
func kebab(name string) string {
	return strings.ReplaceAll(snake(strings.TrimSuffix(name, "Request")), "_", "-")
}

// camel is the Go name protoc-gen-go gives a protobuf field: min_ts is
// MinTs.
func camel(s string) string {
	var b strings.Builder
	for part := range strings.SplitSeq(s, "_") {
		if part != "" {
			b.WriteString(strings.ToUpper(part[:1]) + part[1:])
		}
	}
	return b.String()
}

// lowerFirst is a Go name with its first letter in lower case, for the
// names of generated functions: putRequestPB.
func lowerFirst(s string) string { return strings.ToLower(s[:1]) + s[1:] }

func trimBlank(lines []string) []string {
	for len(lines) > 0 && strings.TrimSpace(lines[len(lines)-1]) == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}
