package langgraphapi_test

import (
	"bufio"
	"net/http"
	"strings"
	"testing"

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
