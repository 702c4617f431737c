package mcp_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// The reference MCP server of the MCP project, from npm, which .ci/run installs with
// npm install --prefix .cache/mcp-everything @modelcontextprotocol/server-everything@2026.8.31.
const (
	everythingDir = "mcp-everything"
	everythingPkg = "@modelcontextprotocol/server-everything"
	everythingVer = "2026.8.31"
)

// everything returns the command that runs the reference server over stdio. Where it is not
// installed the test is skipped, except in CI (CI set), which installs it and must run it.
func everything(t *testing.T) []string {
	t.Helper()
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, dir, parent, "no go.mod above the test's directory")
		dir = parent
	}
	pkg := filepath.Join(dir, ".cache", everythingDir, "node_modules", filepath.FromSlash(everythingPkg))
	var meta struct{ Version string }
	b, err := os.ReadFile(filepath.Join(pkg, "package.json"))
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err == nil && meta.Version != everythingVer {
		err = fmt.Errorf("version %s is installed", meta.Version)
	}
	if err != nil {
		msg := fmt.Sprintf("%s@%s is not installed (npm install --prefix .cache/%s %s@%s): %v", everythingPkg, everythingVer, everythingDir, everythingPkg, everythingVer, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return []string{"node", filepath.Join(pkg, "dist", "index.js"), "stdio"}
}

func TestTheReferenceServer(t *testing.T) {
	mark := t.Name()
	set := connect(t, mcp.Server{Name: "everything", Command: everything(t), Env: []string{markEnv + "=" + mark}})
	ts := set.Tools()
	i := slices.IndexFunc(ts, func(tool tools.Tool) bool { return tool.Name == "everything__echo" })
	require.GreaterOrEqual(t, i, 0, "the server's echo tool, prefixed")
	echo := ts[i]
	assert.Equal(t, "Echoes back the input string", echo.Description)
	assert.True(t, echo.Safe, "echo is read-only")
	var schema struct {
		Properties map[string]struct{ Type string }
	}
	require.NoError(t, json.Unmarshal(echo.Schema, &schema))
	assert.Equal(t, "string", schema.Properties["message"].Type)

	reg := registry(t, set)
	r := run(reg, "everything__echo", map[string]string{"message": "hello from Go"})
	assert.False(t, r.IsError, r.Content)
	assert.Equal(t, "Echo: hello from Go", r.Content)

	r = run(reg, "everything__get-sum", map[string]int{"a": 2, "b": 40})
	assert.False(t, r.IsError, r.Content)
	assert.Contains(t, r.Content, "42")

	r = run(reg, "everything__get-tiny-image", struct{}{})
	assert.False(t, r.IsError, r.Content)
	assert.Regexp(t, `\[image: image/png, \d+ bytes\]`, r.Content)

	r = run(reg, "everything__echo", map[string]int{"message": 1})
	assert.True(t, r.IsError, "the server's schema is checked")

	set.Close()
	noneLeft(t, mark)
}
