package providertest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeT records the failures a server reports instead of failing the test.
type fakeT struct {
	t        *testing.T
	mu       sync.Mutex
	errs     []string
	cleanups []func()
}

func newFakeT(t *testing.T) *fakeT {
	f := &fakeT{t: t}
	t.Cleanup(func() {
		for i := len(f.cleanups) - 1; i >= 0; i-- {
			f.cleanups[i]()
		}
	})
	return f
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.errs = append(f.errs, fmt.Sprintf(format, args...))
}
func (f *fakeT) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeT) Errors() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.errs...)
}

var anthropicHeaders = map[string]string{"x-api-key": "sk-ant-test", "anthropic-version": "2023-06-01"}
var openAIHeaders = map[string]string{"Authorization": "Bearer sk-test"}

// post sends body as JSON and returns the response (body read) and its body.
func post(t *testing.T, url string, headers map[string]string, body any) (*http.Response, []byte) {
	t.Helper()
	var raw []byte
	switch b := body.(type) {
	case string:
		raw = []byte(b)
	default:
		var err error
		raw, err = json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
	}
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, data
}

func decode(t *testing.T, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v\n%s", err, data)
	}
	return m
}

// sseEvent is one server-sent event; Name is empty for bare data lines.
type sseEvent struct {
	Name string
	Data string
}

// JSON decodes the event's data.
func (e sseEvent) JSON(t *testing.T) map[string]any {
	t.Helper()
	return decode(t, []byte(e.Data))
}

// parseSSE splits a stream into events, strictly: every event ends with a blank line.
func parseSSE(t *testing.T, data []byte) []sseEvent {
	t.Helper()
	var events []sseEvent
	var cur sseEvent
	open := false
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if open {
				events = append(events, cur)
			}
			cur, open = sseEvent{}, false
		case strings.HasPrefix(line, "event: "):
			cur.Name, open = strings.TrimPrefix(line, "event: "), true
		case strings.HasPrefix(line, "data: "):
			if cur.Data != "" {
				t.Fatalf("two data lines in one event: %q", line)
			}
			cur.Data, open = strings.TrimPrefix(line, "data: "), true
		default:
			t.Fatalf("unexpected stream line %q", line)
		}
	}
	if open {
		t.Fatalf("stream ends inside an event: %+v", cur)
	}
	return events
}

// get walks a decoded JSON value by keys (string) and indices (int).
func get(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			a, _ := v.([]any)
			if k >= len(a) {
				return nil
			}
			v = a[k]
		}
	}
	return v
}

// keys returns the sorted keys of a JSON object, to check a shape exactly.
func keys(v any) string {
	m, _ := v.(map[string]any)
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return strings.Join(ks, ",")
}

func eq(t *testing.T, what string, got, want any) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func readAllErr(resp *http.Response) ([]byte, error) {
	defer resp.Body.Close()
	return io.ReadAll(resp.Body)
}
