package anthropic_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/anthropic"
	"github.com/agiraph/agiraph/providers/providertest"
)

// testModel is the model id the tests use; it is priced.
const testModel = "claude-sonnet-4-5"

// newModel returns a model talking to s.
func newModel(t *testing.T, s *providertest.Server, opts ...anthropic.Option) *anthropic.Model {
	t.Helper()
	opts = append([]anthropic.Option{anthropic.WithAPIKey("sk-ant-test"), anthropic.WithBaseURL(s.URL())}, opts...)
	m, err := anthropic.New(testModel, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// modes are the two ways of calling: plain JSON, and streaming with the deltas recorded.
var modes = []struct {
	name   string
	stream bool
}{{"json", false}, {"stream", true}}

// watch sets req.OnText when stream is set, and returns the text seen so far.
func watch(req *providers.Request, stream bool) func() string {
	if !stream {
		return func() string { return "" }
	}
	var deltas []string
	req.OnText = func(d string) { deltas = append(deltas, d) }
	return func() string { return strings.Join(deltas, "") }
}

// decoded returns v as generic JSON: raw JSON is decoded, other values go through Marshal.
func decoded(t *testing.T, v any) any {
	t.Helper()
	var raw []byte
	switch b := v.(type) {
	case json.RawMessage:
		raw = b
	case []byte:
		raw = b
	case string:
		raw = []byte(b)
	default:
		var err error
		if raw, err = json.Marshal(v); err != nil {
			t.Fatalf("marshal %v: %v", v, err)
		}
	}
	var out any
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("%s is not JSON: %v", raw, err)
	}
	return out
}

// jsonEq fails unless got (decoded JSON or raw JSON) and want (JSON text) are equal as JSON.
func jsonEq(t *testing.T, what string, got any, want string) {
	t.Helper()
	g, w := decoded(t, got), decoded(t, want)
	if !reflect.DeepEqual(g, w) {
		gb, _ := json.Marshal(g)
		wb, _ := json.Marshal(w)
		t.Errorf("%s:\n got %s\nwant %s", what, gb, wb)
	}
}

// eq fails unless got equals want.
func eq[T any](t *testing.T, what string, got, want T) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}

// get walks decoded JSON by object keys and array indexes; nil when the path does not exist.
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k < 0 || k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// requests returns the server's requests, failing unless there are n.
func requests(t *testing.T, s *providertest.Server, n int) []providertest.Request {
	t.Helper()
	reqs := s.Requests()
	if len(reqs) != n {
		t.Fatalf("server got %d requests, want %d", len(reqs), n)
	}
	return reqs
}

// providerError returns err as a *providers.Error, failing if it is not one.
func providerError(t *testing.T, err error) *providers.Error {
	t.Helper()
	var pe *providers.Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not a *providers.Error", err, err)
	}
	return pe
}
