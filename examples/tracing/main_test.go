package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	collector "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// receiver is an OTLP/HTTP trace endpoint that keeps the names of the spans it receives.
type receiver struct {
	mu    sync.Mutex
	names []string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req collector.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if r.URL.Path != "/v1/traces" || err != nil {
		http.Error(w, "want an OTLP trace export on /v1/traces", http.StatusBadRequest)
		return
	}
	rc.mu.Lock()
	for _, rs := range req.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				rc.names = append(rc.names, s.Name)
			}
		}
	}
	rc.mu.Unlock()
	b, _ := proto.Marshal(&collector.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(b)
}

// count returns how many spans of each name arrived.
func (rc *receiver) count() map[string]int {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	n := map[string]int{}
	for _, name := range rc.names {
		n[name]++
	}
	return n
}

func TestExportsOverOTLP(t *testing.T) {
	rc := &receiver{}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	var out strings.Builder
	env := map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": srv.URL}
	require.NoError(t, run(context.Background(), nil, &out, func(k string) string { return env[k] }))

	assert.Contains(t, out.String(), "physics: Rayleigh scattering")
	assert.Contains(t, out.String(), "history: Rayleigh scattering")
	assert.Equal(t, map[string]int{
		"graph.invoke":         3, // the team's run and each worker's
		"graph.step":           10,
		"research":             2,
		"gather":               1,
		"model":                4,
		"tools":                4,
		"chat offline":         4,
		"execute_tool lookup":  2,
		"execute_tool publish": 2,
	}, rc.count())
}

// Without an endpoint the spans are printed as a tree: one line a span, each under its parent,
// with its duration and key attributes.
func TestPrintsATree(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), nil, &out, func(string) string { return "" }))
	answer, tree, ok := strings.Cut(out.String(), "\n32 spans:\n")
	require.True(t, ok, out.String())
	assert.Contains(t, answer, "physics: Rayleigh scattering")

	line := regexp.MustCompile(`^( *)(\S.*?) {2,}(\d+(?:\.\d+)?(?:ns|µs|ms|s))(?:  (.*))?$`)
	type span struct {
		depth       int
		name, attrs string
	}
	var spans []span
	for _, l := range strings.Split(strings.TrimSuffix(tree, "\n"), "\n") {
		m := line.FindStringSubmatch(l)
		require.NotNil(t, m, "line %q", l)
		spans = append(spans, span{len(m[1]) / 2, m[2], m[4]})
	}
	require.Len(t, spans, 32)
	assert.Equal(t, span{0, "graph.invoke", "steps=2 outcome=done"}, spans[0], "the team's run is the root")
	parent := func(i int) span { // the nearest line above i one level up
		for j := i - 1; j >= 0; j-- {
			if spans[j].depth == spans[i].depth-1 {
				return spans[j]
			}
		}
		return span{}
	}
	chats, threads := 0, []string{}
	for i, s := range spans {
		require.LessOrEqual(t, s.depth, 6, "line %d", i)
		switch s.name {
		case "chat offline":
			chats++
			assert.Equal(t, "model", parent(i).name)
			assert.Regexp(t, `^in=\d+ out=25 stop=tool_use calls=1$`, s.attrs)
		case "execute_tool lookup", "execute_tool publish":
			assert.Equal(t, "tools", parent(i).name)
		case "graph.invoke":
			if i > 0 {
				assert.Equal(t, "research", parent(i).name, "a worker's run nests under its task")
				threads = append(threads, s.attrs)
			}
		}
	}
	assert.Equal(t, 4, chats)
	assert.ElementsMatch(t, []string{"thread=research-physics steps=4 outcome=done", "thread=research-history steps=4 outcome=done"}, threads)
}

// -json prints OpenTelemetry's JSON instead.
func TestPrintsJSON(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), []string{"-json"}, &out, func(string) string { return "" }))
	for _, want := range []string{`"Name": "graph.invoke"`, `"Name": "chat offline"`, `"Key": "gen_ai.usage.input_tokens"`} {
		assert.Contains(t, out.String(), want)
	}
}
