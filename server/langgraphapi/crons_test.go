package langgraphapi_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runsOf waits until the thread has n runs that ended, and returns them.
func (a *api) runsOf(thread string, n int) []obj {
	a.t.Helper()
	var runs []obj
	require.Eventually(a.t, func() bool {
		runs = a.list("GET", "/threads/"+thread+"/runs", nil)
		ended := 0
		for _, r := range runs {
			if r["status"] == "success" {
				ended++
			}
		}
		return ended == n
	}, time.Minute, 5*time.Millisecond, "the thread has %d runs that ended", n)
	return runs
}

func TestCrons(t *testing.T) {
	a := newAPI(t)
	id := a.must(200, "POST", "/threads", nil)["thread_id"].(string)
	c := a.must(200, "POST", "/threads/"+id+"/runs/crons", obj{"assistant_id": "echo", "schedule": "* * * * *", "input": obj{"topic": "tick"}})
	cronID := c["cron_id"].(string)
	assert.Equal(t, id, c["thread_id"])
	assert.Equal(t, a.clock.Now().Add(time.Minute).Format(time.RFC3339), c["next_run_date"])
	assert.Equal(t, obj{"topic": "tick"}, c["payload"].(obj)["input"])

	a.clock.Advance(time.Minute)
	a.runsOf(id, 1)
	a.clock.Advance(time.Minute)
	a.runsOf(id, 2)
	assert.Equal(t, []any{"hello tick", "hello tick"}, a.must(200, "GET", "/threads/"+id+"/state", nil)["values"].(obj)["messages"])

	// Disabled, it does not run; found by search and count.
	a.must(200, "PATCH", "/runs/crons/"+cronID, obj{"enabled": false})
	found := a.list("POST", "/runs/crons/search", obj{"thread_id": id})
	require.Len(t, found, 1)
	assert.Equal(t, false, found[0]["enabled"])
	assert.Empty(t, a.list("POST", "/runs/crons/search", obj{"enabled": true}))
	var n int
	require.Equal(t, 200, a.call("POST", "/runs/crons/count", obj{"assistant_id": "echo"}, &n))
	assert.Equal(t, 1, n)

	// A stateless cron runs on a thread of its own, kept when asked.
	kept := a.must(200, "POST", "/runs/crons", obj{"assistant_id": "echo", "schedule": "@every 1h", "input": obj{"topic": "k"}, "on_run_completed": "keep"})
	assert.Nil(t, kept["thread_id"])
	a.clock.Advance(time.Hour)
	require.Eventually(t, func() bool {
		return len(a.list("POST", "/threads/search", obj{"values": obj{"topic": "k"}})) == 1
	}, time.Minute, 5*time.Millisecond)

	a.must(204, "DELETE", "/runs/crons/"+cronID, nil)
	a.must(404, "DELETE", "/runs/crons/"+cronID, nil)
	a.must(404, "PATCH", "/runs/crons/"+cronID, obj{"enabled": true})
	for _, bad := range []obj{
		{"assistant_id": "echo"},
		{"assistant_id": "echo", "schedule": "every day"},
		{"assistant_id": "echo", "schedule": "* * * * *", "stream_mode": "nope"},
		{"assistant_id": "echo", "schedule": "* * * * *", "on_run_completed": "maybe"},
	} {
		a.must(422, "POST", "/runs/crons", bad)
	}
	a.must(404, "POST", "/runs/crons", obj{"assistant_id": "nope", "schedule": "* * * * *"})
	a.must(404, "POST", "/threads/00000000-0000-0000-0000-000000000000/runs/crons", obj{"assistant_id": "echo", "schedule": "* * * * *"})
}
