package mcp_test

import (
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/clitest"
	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/mcp"
)

// everything returns the command that runs the MCP project's reference server, from npm, over
// stdio (see clitest.Everything).
func everything(t *testing.T) []string {
	return []string{"node", filepath.Join(clitest.Everything.Dir(t), "dist", "index.js"), "stdio"}
}

func TestTheReferenceServer(t *testing.T) {
	t.Parallel()
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
