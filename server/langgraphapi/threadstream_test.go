package langgraphapi_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestThreadStream(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	resp, err := http.Get(a.url + "/threads/" + id + "/stream?stream_mode=values")
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))

	// The runs made once the stream is open come whole, one after the other.
	var runs []string
	for _, topic := range []string{"a", "b"} {
		a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": topic}})
		runs = append(runs, a.list("GET", "/threads/"+id+"/runs", nil)[0]["run_id"].(string))
	}
	var names, ids []string
	sc := bufio.NewScanner(resp.Body)
	for values := 0; values < 4 && sc.Scan(); {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			names = append(names, strings.TrimPrefix(line, "event: "))
			if line == "event: values" {
				values++
			}
		case strings.HasPrefix(line, "id: "):
			ids = append(ids, strings.TrimPrefix(line, "id: "))
		}
	}
	assert.Equal(t, []string{"metadata", "values", "values", "metadata", "values", "values"}, names, "updates are left out")
	require.Len(t, ids, 5)
	assert.True(t, strings.HasPrefix(ids[0], runs[0]+":") && strings.HasPrefix(ids[3], runs[1]+":"), "%v %v", ids, runs)

	a.must(404, "GET", "/threads/00000000-0000-0000-0000-000000000000/stream", nil)
}

// A client that comes back with the Last-Event-ID of a run gets the rest of that run and the
// runs after it whole, also those that ended while it was away.
func TestThreadStreamResumesThroughEndedRuns(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	var runs []string
	for _, topic := range []string{"a", "b"} {
		a.must(200, "POST", "/threads/"+id+"/runs/wait", obj{"assistant_id": "echo", "input": obj{"topic": topic}})
		runs = append(runs, a.list("GET", "/threads/"+id+"/runs", nil)[0]["run_id"].(string))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", a.url+"/threads/"+id+"/stream?stream_mode=values", nil)
	require.NoError(t, err)
	req.Header.Set("Last-Event-ID", runs[0]+":1")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()

	var ids []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && (len(ids) == 0 || !strings.HasPrefix(ids[len(ids)-1], runs[1]+":3")) {
		if line := sc.Text(); strings.HasPrefix(line, "id: ") {
			ids = append(ids, strings.TrimPrefix(line, "id: "))
		}
	}
	require.NoError(t, ctx.Err(), "the stream stopped after %v", ids)
	assert.Equal(t, []string{runs[0] + ":2", runs[0] + ":3", runs[1] + ":1", runs[1] + ":2", runs[1] + ":3"}, ids)
}
