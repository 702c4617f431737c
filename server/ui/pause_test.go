package ui_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/server/host"
)

// The agent's head pauses its run and resumes it: Pause leaves it "paused" (the API says so
// too), Resume sets it working again. The offline team takes an hour a turn, so the run is in
// progress throughout.
func TestPauseAndResume(t *testing.T) {
	s := &site{t: t, root: t.TempDir(), team: func(string) []nodes.Option { return demo.Team(demo.WithPace(time.Hour)) }}
	s.start()
	t.Cleanup(s.stop)
	require.Equal(t, http.StatusCreated, s.api("POST", "/agents", map[string]string{"id": "slow", "goal": "AI chips"}, nil))

	ctx := browser(t)
	press := func(label string) chromedp.Action {
		return chromedp.Evaluate(`[...document.querySelectorAll('.view-head .controls button')].find((b) => b.textContent === '`+label+`').click()`, nil)
	}
	status := func(want string) chromedp.Action {
		return chromedp.Poll(`document.querySelector('.view-head .status')?.textContent === '`+want+`'`, nil,
			chromedp.WithPollingInterval(50*time.Millisecond), chromedp.WithPollingTimeout(wait))
	}
	step(t, ctx, "open the agent", chromedp.Navigate(s.srv.LoginURL(s.url(""))), chromedp.WaitVisible("#sidebar", chromedp.ByQuery),
		chromedp.Navigate(s.url("/#/a/slow")), status("working"))
	step(t, ctx, "pause it", press("Pause"), status("paused"))
	var sum host.Summary
	s.api("GET", "/agents/slow", nil, &sum)
	assert.Equal(t, host.StatusPaused, sum.Status)
	step(t, ctx, "resume it", press("Resume"), status("working"))
	s.api("GET", "/agents/slow", nil, &sum)
	assert.Equal(t, host.StatusWorking, sum.Status)
}
