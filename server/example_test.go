package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"time"

	"github.com/agiraph/agiraph/nodes"
	"github.com/agiraph/agiraph/nodes/demo"
	"github.com/agiraph/agiraph/server"
	"github.com/agiraph/agiraph/server/host"
)

// A server is an http.Handler over agents: mount it in your program, make an agent with a goal,
// and read its summary as its run goes on.
func ExampleNew() {
	root, err := os.MkdirTemp("", "agiraph-server")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(root)
	const token = "example-token-0123456789abcdef"
	team := func(id string) []nodes.Option { return demo.Team() } // the offline team
	srv, err := server.New(server.WithHost(host.WithRoot(root), host.WithSquadOptions(team)), server.WithToken(token))
	if err != nil {
		panic(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv)
	defer ts.Close()
	call := func(method, path, body string) *http.Response {
		req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
		if err != nil {
			panic(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		return resp
	}
	resp := call("POST", "/agents", `{"id": "ada", "goal": "the state of AI chips"}`)
	resp.Body.Close()
	fmt.Println(resp.Status)
	var sum host.Summary
	for sum.Status != "completed" {
		time.Sleep(20 * time.Millisecond)
		resp := call("GET", "/agents/ada", "")
		if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
			panic(err)
		}
		resp.Body.Close()
	}
	fmt.Println(sum.ID, sum.Status, sum.Nodes, "nodes")
	// Output:
	// 201 Created
	// ada completed 4 nodes
}
