package tools_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/tools"
)

const testSchema = `{
	"type": "object",
	"properties": {
		"name":  {"type": "string", "minLength": 1, "maxLength": 5},
		"count": {"type": "integer", "minimum": 1, "maximum": 10},
		"ratio": {"type": "number", "exclusiveMinimum": 0},
		"mode":  {"enum": ["fast", "slow", 3]},
		"maybe": {"type": ["string", "null"]},
		"files": {
			"type": "array", "minItems": 1, "maxItems": 3,
			"items": {
				"type": "object",
				"properties": {"path": {"type": "string"}, "size": {"type": "integer"}},
				"required": ["path"],
				"additionalProperties": false
			}
		},
		"tags":  {"type": "object", "additionalProperties": {"type": "boolean"}},
		"weird key": {"type": "boolean"}
	},
	"required": ["name"],
	"additionalProperties": false
}`

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args string
		want []string // problems, in order; nil means valid
	}{
		{"valid minimal", `{"name":"a"}`, nil},
		{"valid full", `{"name":"abc","count":10,"ratio":0.5,"mode":"slow","maybe":null,"files":[{"path":"p","size":3}],"tags":{"x":true},"weird key":false}`, nil},
		{"integer written as float", `{"name":"a","count":2.0}`, nil},
		{"enum number by value", `{"name":"a","mode":3.0}`, nil},
		{"type array", `{"name":"a","maybe":"s"}`, nil},
		{"multi-byte length counts characters", `{"name":"ééééé"}`, nil},
		{"missing required", `{}`, []string{"args.name: missing required property"}},
		{"wrong type", `{"name":5}`, []string{"args.name: expected string, got integer"}},
		{"not an object", `[1]`, []string{"args: expected object, got array"}},
		{"null args", `null`, []string{"args: expected object, got null"}},
		{"integer gets a fraction", `{"name":"a","count":1.5}`, []string{"args.count: expected integer, got number"}},
		{"type array mismatch", `{"name":"a","maybe":1}`, []string{"args.maybe: expected string or null, got integer"}},
		{"unknown field", `{"name":"a","nme":"b"}`, []string{"args.nme: unknown property (allowed: count, files, maybe, mode, name, ratio, tags, weird key)"}},
		{"odd key path", `{"name":"a","weird key":1}`, []string{`args["weird key"]: expected boolean, got integer`}},
		{"nested path", `{"name":"a","files":[{"path":"a"},{"path":"b"},{"path":7}]}`, []string{"args.files[2].path: expected string, got integer"}},
		{"nested required and unknown", `{"name":"a","files":[{"size":1,"x":0}]}`, []string{"args.files[0].path: missing required property", "args.files[0].x: unknown property (allowed: path, size)"}},
		{"additionalProperties schema", `{"name":"a","tags":{"ok":true,"bad":"yes"}}`, []string{"args.tags.bad: expected boolean, got string"}},
		{"enum", `{"name":"a","mode":"medium"}`, []string{`args.mode: "medium" is not one of "fast", "slow", 3`}},
		{"minimum", `{"name":"a","count":0}`, []string{"args.count: 0 is less than minimum 1"}},
		{"maximum", `{"name":"a","count":11}`, []string{"args.count: 11 is greater than maximum 10"}},
		{"exclusiveMinimum", `{"name":"a","ratio":0}`, []string{"args.ratio: 0 must be greater than 0"}},
		{"minLength", `{"name":""}`, []string{"args.name: length 0 is shorter than minLength 1"}},
		{"maxLength", `{"name":"abcdef"}`, []string{"args.name: length 6 is longer than maxLength 5"}},
		{"minItems", `{"name":"a","files":[]}`, []string{"args.files: has 0 items, fewer than minItems 1"}},
		{"maxItems", `{"name":"a","files":[{"path":"1"},{"path":"2"},{"path":"3"},{"path":"4"}]}`, []string{"args.files: has 4 items, more than maxItems 3"}},
		{"several at once", `{"count":"x","mode":"no","files":[{"path":1}],"extra":true}`, []string{
			"args.name: missing required property",
			"args.count: expected integer, got string",
			"args.extra: unknown property (allowed: count, files, maybe, mode, name, ratio, tags, weird key)",
			"args.files[0].path: expected string, got integer",
			`args.mode: "no" is not one of "fast", "slow", 3`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tools.Validate(json.RawMessage(testSchema), json.RawMessage(tt.args))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("want valid, got %v", err)
				}
				return
			}
			var ve *tools.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want a *ValidationError, got %v", err)
			}
			if got, want := strings.Join(ve.Problems, "\n"), strings.Join(tt.want, "\n"); got != want {
				t.Errorf("problems:\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestValidateCapsProblems(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"name":"a","files":[`)
	for i := range 15 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"path":1}`)
	}
	b.WriteString(`]}`)
	err := tools.Validate(json.RawMessage(testSchema), json.RawMessage(b.String()))
	var ve *tools.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("want a *ValidationError, got %v", err)
	}
	// maxItems, then one problem per item: 16 in all, 10 listed.
	if len(ve.Problems) != 10 || ve.Omitted != 6 {
		t.Errorf("listed %d, omitted %d; want 10 and 6", len(ve.Problems), ve.Omitted)
	}
	if !strings.HasSuffix(err.Error(), "; and 6 more") {
		t.Errorf("message %q", err)
	}
}

func TestValidateMalformed(t *testing.T) {
	t.Parallel()
	long := `{"name": "x` + strings.Repeat("é", 100) + `"`
	tests := []struct{ args, want string }{
		{`{"name": "a"`, `"{\"name\": \"a\""`},
		{`{"name": "a"} x`, `"{\"name\": \"a\"} x"`},
		{`{name: 1}`, `"{name: 1}"`},
		{``, `""`},
		{long, `(first 59 of 212 bytes)`},
	}
	for _, tt := range tests {
		err := tools.Validate(json.RawMessage(testSchema), json.RawMessage(tt.args))
		if !errors.Is(err, tools.ErrMalformedArgs) {
			t.Errorf("%q: want ErrMalformedArgs, got %v", tt.args, err)
			continue
		}
		if !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: message %q does not contain %q", tt.args, err, tt.want)
		}
	}
}

func TestValidateBadSchema(t *testing.T) {
	t.Parallel()
	for _, s := range []string{``, `[]`, `{"type":5}`, `{"type":"thing"}`, `{"properties":{"a":1}}`, `{"required":"a"}`, `{"minLength":-1}`, `{"minimum":"x"}`, `{"type":"object"} {}`} {
		if err := tools.Validate(json.RawMessage(s), json.RawMessage(`{}`)); err == nil || errors.Is(err, tools.ErrMalformedArgs) {
			t.Errorf("schema %q: want a schema error, got %v", s, err)
		}
	}
}

func TestValidateBooleanSchemas(t *testing.T) {
	t.Parallel()
	schema := `{"type":"object","properties":{"never":false,"any":true}}`
	if err := tools.Validate(json.RawMessage(schema), json.RawMessage(`{"any":[1,{"a":null}],"other":1}`)); err != nil {
		t.Errorf("true schema and open object: %v", err)
	}
	err := tools.Validate(json.RawMessage(schema), json.RawMessage(`{"never":1}`))
	if err == nil || err.Error() != "args.never: no value is allowed here" {
		t.Errorf("false schema: %v", err)
	}
}

func ExampleValidate() {
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}`)
	fmt.Println(tools.Validate(schema, json.RawMessage(`{"path":"a.txt"}`)))
	fmt.Println(tools.Validate(schema, json.RawMessage(`{"file":"a.txt"}`)))
	// Output:
	// <nil>
	// args.path: missing required property; args.file: unknown property (allowed: path)
}

func TestValidateAtNamesTheRoot(t *testing.T) {
	err := tools.ValidateAt(json.RawMessage(testSchema), json.RawMessage(`{"name": 3}`), "result")
	var v *tools.ValidationError
	if !errors.As(err, &v) || len(v.Problems) != 1 || v.Problems[0] != "result.name: expected string, got integer" {
		t.Fatalf("ValidateAt = %v, want the one problem at result.name", err)
	}
	err = tools.ValidateAt(json.RawMessage(testSchema), json.RawMessage(`{"name":`), "result")
	if !errors.Is(err, tools.ErrMalformedArgs) || !strings.HasPrefix(err.Error(), "result is not valid JSON (unexpected end of JSON input)") {
		t.Fatalf("ValidateAt of a value that is not JSON = %v", err)
	}
}
