package ui_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	cdpruntime "github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/models"
	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
	"github.com/agiraph/agiraph/server/host"
)

// attack is script a model writes into its pages: with the API in reach, it lists the agents
// with the person's cookie and marks the page.
const attack = `fetch('/agents').then((r) => r.text()).then((t) => { window.pwned = t; document.title = 'pwned'; });
window.ran = true;`

// attackTeam is a coordinator that gives one worker a node, and a worker that writes an HTML
// page and an SVG image, each with the attack in a script, and publishes them.
func attackTeam(string) []nodes.Option {
	coord := scripted.NewFunc("attack-coordinator", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		text, _ := scripted.Last(req)
		switch {
		case len(req.Messages) == 1:
			return turn(req, "", scripted.Call("spawn_worker", map[string]any{"name": "Mallory"}),
				scripted.Call("create_work_node", map[string]any{"task": "Write the page.", "worker": "Mallory"})), nil
		case strings.Contains(text, "Stage 1 is complete"):
			return turn(req, "", scripted.Call("finish", map[string]string{"output": "done"})), nil
		}
		return turn(req, "", scripted.Call("wait", map[string]string{})), nil
	})
	worker := scripted.NewFunc("attack-worker", func(_ context.Context, req providers.Request) (scripted.Turn, error) {
		if _, ok := scripted.Results(req)["write_file"]; !ok {
			return turn(req, "",
				scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/page.html",
					"content": "<!doctype html><html><body><h1>Report</h1><script>" + attack + "</script></body></html>"}),
				scripted.Call("write_file", map[string]string{"path": "nodes/n1/scratch/image.svg",
					"content": `<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><script>` + attack + `</script></svg>`})), nil
		}
		return turn(req, "", scripted.Call("publish", map[string]string{"summary": "page.html, image.svg"})), nil
	})
	return []nodes.Option{
		nodes.WithCoordinatorModel(coord.Name()), nodes.WithModel(worker.Name()),
		nodes.WithModelOptions(models.WithModels(coord, worker), models.WithoutRetry()),
	}
}

// A page and an SVG image a model wrote, opened in the browser from the API with the person's
// cookie, run nothing; and script evaluated in them anyway (as the browser's own tools can) finds
// itself in an origin of its own, where the API refuses it.
func TestModelPagesAreInert(t *testing.T) {
	s := &site{t: t, root: t.TempDir(), team: attackTeam}
	s.start()
	t.Cleanup(s.stop)
	require.Equal(t, http.StatusCreated, s.api("POST", "/agents", map[string]string{"id": "m", "goal": "a page"}, nil))
	s.awaitAgent("m", wait, reached(host.StatusComplete))
	ctx := browser(t)
	step(t, ctx, "log in", chromedp.Navigate(s.srv.LoginURL("http://"+s.addr)), chromedp.WaitReady("body", chromedp.ByQuery))

	for _, name := range []string{"page.html", "image.svg"} {
		t.Run(name, func(t *testing.T) {
			var text, origin, contentType, reached string
			var ran bool
			step(t, ctx, "open "+name,
				chromedp.Navigate(s.url("/agents/m/workspace/nodes/n1/published/"+name+"?raw=1")),
				chromedp.WaitReady("body", chromedp.ByQuery),
				chromedp.Evaluate(`document.body.textContent`, &text),
				chromedp.Evaluate(`window.ran === true || window.pwned !== undefined || document.title === 'pwned'`, &ran),
				chromedp.Evaluate(`document.contentType`, &contentType),
				chromedp.Evaluate(`window.origin`, &origin),
				chromedp.Evaluate(`fetch('/agents').then((r) => 'status ' + r.status, (e) => 'refused: ' + e.message)`, &reached,
					func(p *cdpruntime.EvaluateParams) *cdpruntime.EvaluateParams { return p.WithAwaitPromise(true) }))
			assert.False(t, ran, "the model's script ran")
			assert.Contains(t, text, "fetch('/agents')", "the page is shown as its text")
			assert.Equal(t, "text/plain", contentType)
			assert.Equal(t, "null", origin, "the document has an origin of its own")
			assert.NotEqual(t, "status 200", reached, "script in the document reached the API")
			t.Logf("a fetch of the API from the document: %s", reached)
		})
	}
}
