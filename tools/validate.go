package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// maxProblems caps how many problems a [ValidationError] lists.
const maxProblems = 10

// ValidationError lists what is wrong with a call's arguments, one problem per entry, each
// naming the path of the offending value (for example "args.files[2].path: expected string,
// got number").
type ValidationError struct {
	// Problems holds at most ten problems.
	Problems []string
	// Omitted counts the problems found beyond those listed.
	Omitted int
}

// Error joins the problems with "; ".
func (e *ValidationError) Error() string {
	s := strings.Join(e.Problems, "; ")
	if e.Omitted > 0 {
		s += fmt.Sprintf("; and %d more", e.Omitted)
	}
	return s
}

// ErrMalformedArgs is wrapped by the error [Validate] returns when the arguments are not JSON.
var ErrMalformedArgs = errors.New("arguments are not valid JSON")

// Validate checks args against schema (see the package documentation for the keywords it
// understands). It returns an error wrapping [ErrMalformedArgs] if args is not a single JSON
// value, a *[ValidationError] listing every problem found (up to ten) if it does not match, and
// an error if schema itself cannot be used.
func Validate(schema, args json.RawMessage) error {
	return ValidateAt(schema, args, "args")
}

// ValidateAt is [Validate] for a value named root: the paths of its problems start with root
// (for example "result.items[0]") rather than "args".
func ValidateAt(schema, value json.RawMessage, root string) error {
	s, err := compileSchema(schema)
	if err != nil {
		return err
	}
	return s.validateAt(value, root)
}

// node is a compiled schema.
type node struct {
	never       bool     // the schema `false`
	types       []string // nil: any type
	properties  map[string]*node
	required    []string
	closed      bool  // additionalProperties: false
	additional  *node // additionalProperties as a schema
	items       *node
	enum        []any
	hasConst    bool
	constVal    any
	min, max    *big.Float
	exMin, exMx *big.Float
	minLen      int // -1: none
	maxLen      int
	minItems    int
	maxItems    int
}

var knownTypes = []string{"object", "array", "string", "number", "integer", "boolean", "null"}

// compiledSchemas holds the schemas compiled so far, by their text, with their compiled form (a
// node tree is never changed once compiled): a registry is made for each run of an agent, from
// the same tools, and compiling their schemas each time was a tenth of a squad's CPU. It keeps
// at most maxCompiled schemas; others are compiled each time.
var (
	compiledMu      sync.RWMutex
	compiledSchemas = map[string]compiledSchema{}
)

const maxCompiled = 1024

type compiledSchema struct {
	node *node
	err  error
}

// compileSchema parses a schema into a node tree (see compiledSchemas). The root must be a
// JSON object.
func compileSchema(schema json.RawMessage) (*node, error) {
	compiledMu.RLock()
	c, ok := compiledSchemas[string(schema)] // looked up without a copy of the text
	compiledMu.RUnlock()
	if ok {
		return c.node, c.err
	}
	n, err := compileText(schema)
	compiledMu.Lock()
	if len(compiledSchemas) < maxCompiled {
		compiledSchemas[string(schema)] = compiledSchema{n, err}
	}
	compiledMu.Unlock()
	return n, err
}

// compileText parses a schema into a node tree, with no cache.
func compileText(schema json.RawMessage) (*node, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, errors.New("schema is empty")
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(schema))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("schema is not valid JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("schema is not valid JSON: trailing data")
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, errors.New("schema must be a JSON object")
	}
	return compileNode(v, "schema")
}

func compileNode(v any, at string) (*node, error) {
	switch v := v.(type) {
	case bool:
		if v {
			return &node{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}, nil
		}
		return &node{never: true}, nil
	case map[string]any:
		n := &node{minLen: -1, maxLen: -1, minItems: -1, maxItems: -1}
		var err error
		if t, ok := v["type"]; ok {
			switch t := t.(type) {
			case string:
				n.types = []string{t}
			case []any:
				for _, e := range t {
					s, ok := e.(string)
					if !ok {
						return nil, fmt.Errorf("%s.type: entries must be strings", at)
					}
					n.types = append(n.types, s)
				}
			default:
				return nil, fmt.Errorf("%s.type: must be a string or an array of strings", at)
			}
			for _, s := range n.types {
				if !slices.Contains(knownTypes, s) {
					return nil, fmt.Errorf("%s.type: unknown type %q", at, s)
				}
			}
		}
		if p, ok := v["properties"]; ok {
			pm, ok := p.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s.properties: must be an object", at)
			}
			n.properties = make(map[string]*node, len(pm))
			for k, ps := range pm {
				if n.properties[k], err = compileNode(ps, at+".properties"+pathKey(k)); err != nil {
					return nil, err
				}
			}
		}
		if r, ok := v["required"]; ok {
			ra, ok := r.([]any)
			if !ok {
				return nil, fmt.Errorf("%s.required: must be an array of strings", at)
			}
			for _, e := range ra {
				s, ok := e.(string)
				if !ok {
					return nil, fmt.Errorf("%s.required: must be an array of strings", at)
				}
				n.required = append(n.required, s)
			}
		}
		if a, ok := v["additionalProperties"]; ok {
			if b, ok := a.(bool); ok {
				n.closed = !b
			} else if n.additional, err = compileNode(a, at+".additionalProperties"); err != nil {
				return nil, err
			}
		}
		if it, ok := v["items"]; ok {
			if n.items, err = compileNode(it, at+".items"); err != nil {
				return nil, err
			}
		}
		if e, ok := v["enum"]; ok {
			ea, ok := e.([]any)
			if !ok {
				return nil, fmt.Errorf("%s.enum: must be an array", at)
			}
			n.enum = ea
		}
		if c, ok := v["const"]; ok {
			n.hasConst, n.constVal = true, c
		}
		for key, dst := range map[string]**big.Float{"minimum": &n.min, "maximum": &n.max, "exclusiveMinimum": &n.exMin, "exclusiveMaximum": &n.exMx} {
			if x, ok := v[key]; ok {
				f, ok := bigNumber(x)
				if !ok {
					return nil, fmt.Errorf("%s.%s: must be a number", at, key)
				}
				*dst = f
			}
		}
		for key, dst := range map[string]*int{"minLength": &n.minLen, "maxLength": &n.maxLen, "minItems": &n.minItems, "maxItems": &n.maxItems} {
			if x, ok := v[key]; ok {
				num, ok := x.(json.Number)
				i, err := strconv.Atoi(string(num))
				if !ok || err != nil || i < 0 {
					return nil, fmt.Errorf("%s.%s: must be a non-negative integer", at, key)
				}
				*dst = i
			}
		}
		return n, nil
	default:
		return nil, fmt.Errorf("%s: a schema must be an object or a boolean", at)
	}
}

// validate checks raw args against the compiled schema.
func (n *node) validate(args json.RawMessage) error { return n.validateAt(args, "args") }

// validateAt checks a raw value against the compiled schema, naming it root in problems.
func (n *node) validateAt(args json.RawMessage, root string) error {
	var v any
	err := errors.New("unexpected data after the JSON value")
	if json.Valid(args) {
		dec := json.NewDecoder(bytes.NewReader(args))
		dec.UseNumber()
		err = dec.Decode(&v)
	} else if uerr := json.Unmarshal(args, &v); uerr != nil { // for the position and reason
		err = uerr
	}
	if err != nil {
		return &malformedError{fmt.Sprintf("%s (%v): %s", malformedText(root), err, quotePrefix(args, 60))}
	}
	c := &collector{}
	n.check(v, root, c)
	if len(c.problems) == 0 {
		return nil
	}
	return &ValidationError{Problems: c.problems, Omitted: c.omitted}
}

// malformedError is the error of a value that is not JSON; it wraps ErrMalformedArgs.
type malformedError struct{ msg string }

func (e *malformedError) Error() string { return e.msg }
func (e *malformedError) Unwrap() error { return ErrMalformedArgs }

// malformedText says that the value named root is not JSON: ErrMalformedArgs's words for
// arguments.
func malformedText(root string) string {
	if root == "args" {
		return ErrMalformedArgs.Error()
	}
	return root + " is not valid JSON"
}

// quotePrefix quotes at most max bytes of b, cut on a UTF-8 boundary.
func quotePrefix(b []byte, max int) string {
	if len(b) <= max {
		return strconv.Quote(string(b))
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return strconv.Quote(string(b[:cut])) + fmt.Sprintf(" (first %d of %d bytes)", cut, len(b))
}

type collector struct {
	problems []string
	omitted  int
}

func (c *collector) add(path, format string, a ...any) {
	if len(c.problems) >= maxProblems {
		c.omitted++
		return
	}
	c.problems = append(c.problems, path+": "+fmt.Sprintf(format, a...))
}

func (n *node) check(v any, path string, c *collector) {
	if n.never {
		c.add(path, "no value is allowed here")
		return
	}
	if n.types != nil && !slices.ContainsFunc(n.types, func(t string) bool { return hasType(v, t) }) {
		c.add(path, "expected %s, got %s", strings.Join(n.types, " or "), typeName(v))
		return
	}
	if n.enum != nil && !slices.ContainsFunc(n.enum, func(e any) bool { return equalJSON(e, v) }) {
		opts := make([]string, len(n.enum))
		for i, e := range n.enum {
			opts[i] = shortJSON(e)
		}
		c.add(path, "%s is not one of %s", shortJSON(v), strings.Join(opts, ", "))
	}
	if n.hasConst && !equalJSON(n.constVal, v) {
		c.add(path, "must be %s, got %s", shortJSON(n.constVal), shortJSON(v))
	}
	switch v := v.(type) {
	case map[string]any:
		for _, r := range n.required {
			if _, ok := v[r]; !ok {
				c.add(path+pathKey(r), "missing required property")
			}
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			p := path + pathKey(k)
			if ps, ok := n.properties[k]; ok {
				ps.check(v[k], p, c)
			} else if n.additional != nil {
				n.additional.check(v[k], p, c)
			} else if n.closed {
				if len(n.properties) == 0 {
					c.add(p, "unknown property (this object takes no properties)")
				} else {
					c.add(p, "unknown property (allowed: %s)", strings.Join(n.propertyNames(), ", "))
				}
			}
		}
	case []any:
		if n.minItems >= 0 && len(v) < n.minItems {
			c.add(path, "has %d items, fewer than minItems %d", len(v), n.minItems)
		}
		if n.maxItems >= 0 && len(v) > n.maxItems {
			c.add(path, "has %d items, more than maxItems %d", len(v), n.maxItems)
		}
		if n.items != nil {
			for i, e := range v {
				n.items.check(e, path+"["+strconv.Itoa(i)+"]", c)
			}
		}
	case string:
		l := utf8.RuneCountInString(v)
		if n.minLen >= 0 && l < n.minLen {
			c.add(path, "length %d is shorter than minLength %d", l, n.minLen)
		}
		if n.maxLen >= 0 && l > n.maxLen {
			c.add(path, "length %d is longer than maxLength %d", l, n.maxLen)
		}
	case json.Number:
		f, ok := bigNumber(v)
		if !ok {
			return
		}
		if n.min != nil && f.Cmp(n.min) < 0 {
			c.add(path, "%s is less than minimum %s", v, n.min.Text('g', -1))
		}
		if n.max != nil && f.Cmp(n.max) > 0 {
			c.add(path, "%s is greater than maximum %s", v, n.max.Text('g', -1))
		}
		if n.exMin != nil && f.Cmp(n.exMin) <= 0 {
			c.add(path, "%s must be greater than %s", v, n.exMin.Text('g', -1))
		}
		if n.exMx != nil && f.Cmp(n.exMx) >= 0 {
			c.add(path, "%s must be less than %s", v, n.exMx.Text('g', -1))
		}
	}
}

func (n *node) propertyNames() []string {
	names := make([]string, 0, len(n.properties))
	for k := range n.properties {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

var identRe = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// pathKey renders a property step of a path: .name, or ["odd key"] when the key is not an
// identifier.
func pathKey(k string) string {
	if identRe.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func bigNumber(x any) (*big.Float, bool) {
	num, ok := x.(json.Number)
	if !ok {
		return nil, false
	}
	f, _, err := big.ParseFloat(string(num), 10, 256, big.ToNearestEven)
	if err != nil {
		return nil, false
	}
	return f, true
}

func hasType(v any, t string) bool {
	switch t {
	case "object":
		_, ok := v.(map[string]any)
		return ok
	case "array":
		_, ok := v.([]any)
		return ok
	case "string":
		_, ok := v.(string)
		return ok
	case "number":
		_, ok := v.(json.Number)
		return ok
	case "integer":
		f, ok := bigNumber(v)
		return ok && f.IsInt()
	case "boolean":
		_, ok := v.(bool)
		return ok
	case "null":
		return v == nil
	}
	return false
}

func typeName(v any) string {
	switch v := v.(type) {
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		if f, ok := bigNumber(v); ok && f.IsInt() {
			return "integer"
		}
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

// equalJSON compares two decoded JSON values, numbers by value.
func equalJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		fa, ok1 := bigNumber(a)
		fb, ok2 := bigNumber(b)
		return ok1 && ok2 && fa.Cmp(fb) == 0
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, av := range a {
			bv, ok := bm[k]
			if !ok || !equalJSON(av, bv) {
				return false
			}
		}
		return true
	case []any:
		ba, ok := b.([]any)
		if !ok || len(a) != len(ba) {
			return false
		}
		for i := range a {
			if !equalJSON(a[i], ba[i]) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}

// shortJSON renders a value for an error message, shortened if long.
func shortJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	if len(b) > 40 {
		cut := 40
		for cut > 0 && !utf8.RuneStart(b[cut]) {
			cut--
		}
		return string(b[:cut]) + "…"
	}
	return string(b)
}

// normalizeArgs treats empty arguments as an empty object: models often send "" for a tool
// that takes no arguments.
func normalizeArgs(args json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(args)) == 0 {
		return json.RawMessage(`{}`)
	}
	return args
}
