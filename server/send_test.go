package server_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/server"
)

// A message sent right after the request that started a run reaches the run: the request
// waits for the run's squad to open (slowly, here) rather than answer that no run is in
// progress.
func TestSendRightAfterStart(t *testing.T) {
	slow := func(id string) []nodes.Option {
		time.Sleep(100 * time.Millisecond)
		return demoTeam(id)
	}
	c := start(t, t.TempDir(), slow)
	for i := range 5 {
		id := fmt.Sprint("quick", i)
		require.Equal(t, http.StatusCreated, c.do("POST", "/agents", map[string]string{"id": id, "goal": "AI chips"}, nil))
		var sent map[string]any
		require.Equal(t, http.StatusOK, c.do("POST", "/agents/"+id+"/send", map[string]string{"message": "Mind the export rules."}, &sent), "%v", sent)
		c.await(id, server.StatusComplete)
	}
}
