package server_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/server/host"
)

// TestLoad is the server's load test, run when AGIRAPH_LOAD is set (to the number of agents;
// 1 means 40): that many POST /agents at once on loopback, with readers doing GET /agents and
// GET /agents/{id} alongside — and GET /models, which reads no agent, to compare — until every
// run completes (at most 2 minutes). The agents play the
// offline team, each model call taking AGIRAPH_LOAD_MODEL_MS milliseconds (default 0: the
// team's instant models, the worst case for the server's own work; a real model takes seconds).
// It reports the latency percentiles of each kind of request; it asserts only that everything
// was answered and completed.
//
//	AGIRAPH_LOAD=1 go test -run TestLoad -v ./server
func TestLoad(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("AGIRAPH_LOAD"))
	if n <= 0 {
		t.Skip("set AGIRAPH_LOAD to run the load test")
	}
	if n == 1 {
		n = 40
	}
	ms, _ := strconv.Atoi(os.Getenv("AGIRAPH_LOAD_MODEL_MS"))
	team := demoTeam
	if ms > 0 {
		var slow []providers.Model
		for _, m := range demo.Models() {
			slow = append(slow, slowModel{m, time.Duration(ms) * time.Millisecond})
		}
		team = func(string) []nodes.Option {
			return []nodes.Option{nodes.WithModel(demo.WorkerModel), nodes.WithCoordinatorModel(demo.CoordinatorModel),
				nodes.WithModelOptions(models.WithModels(slow...), models.WithoutRetry()), nodes.WithTick(20 * time.Millisecond)}
		}
	}
	c := start(t, t.TempDir(), team)
	var (
		mu    sync.Mutex
		times = map[string][]time.Duration{}
	)
	timed := func(kind, method, path string, body any, want int) {
		begin := time.Now()
		got := c.do(method, path, body, nil)
		d := time.Since(begin)
		mu.Lock()
		times[kind] = append(times[kind], d)
		mu.Unlock()
		require.Equal(t, want, got, "%s %s", method, path)
	}

	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 6 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if r%3 == 0 {
					timed("GET /agents", "GET", "/agents", nil, http.StatusOK)
				} else if r%3 == 1 {
					timed("GET /models", "GET", "/models", nil, http.StatusOK)
				} else if code := c.do("GET", fmt.Sprintf("/agents/load%d", i%n), nil, nil); code == http.StatusOK {
					timed("GET /agents/{id}", "GET", fmt.Sprintf("/agents/load%d", i%n), nil, http.StatusOK)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	var creates sync.WaitGroup
	for i := range n {
		creates.Add(1)
		go func() {
			defer creates.Done()
			timed("POST /agents", "POST", "/agents", map[string]string{"id": fmt.Sprintf("load%d", i), "goal": "chips"}, http.StatusCreated)
		}()
	}
	creates.Wait()
	deadline := time.Now().Add(2 * time.Minute)
	for i := range n {
		for s := c.summary(fmt.Sprintf("load%d", i)); s.Status != host.StatusComplete; s = c.summary(s.ID) {
			require.True(t, time.Now().Before(deadline), "agent %s is %s after 2 minutes", s.ID, s.Status)
			time.Sleep(50 * time.Millisecond)
		}
	}
	close(stop)
	readers.Wait()
	for _, kind := range []string{"POST /agents", "GET /agents", "GET /agents/{id}", "GET /models"} {
		d := times[kind]
		slices.Sort(d)
		pct := func(p float64) time.Duration {
			return d[min(len(d)-1, int(float64(len(d))*p))].Round(100 * time.Microsecond)
		}
		t.Logf("%-18s %5d requests: p50 %v, p95 %v, p99 %v, max %v", kind, len(d), pct(0.50), pct(0.95), pct(0.99), d[len(d)-1].Round(100*time.Microsecond))
	}
}

// slowModel is a model that takes a while to answer, as a real one does.
type slowModel struct {
	providers.Model
	delay time.Duration
}

func (m slowModel) Generate(ctx context.Context, req providers.Request) (providers.Response, error) {
	select {
	case <-time.After(m.delay):
	case <-ctx.Done():
		return providers.Response{}, ctx.Err()
	}
	return m.Model.Generate(ctx, req)
}
