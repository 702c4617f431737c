package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
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
	require.NoError(t, run(context.Background(), &out, func(k string) string { return env[k] }))

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

func TestPrintsWithoutAnEndpoint(t *testing.T) {
	var out strings.Builder
	require.NoError(t, run(context.Background(), &out, func(string) string { return "" }))
	for _, want := range []string{`"Name": "graph.invoke"`, `"Name": "chat offline"`, `"Key": "gen_ai.usage.input_tokens"`} {
		assert.Contains(t, out.String(), want)
	}
}
