package mcp_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/tools/mcp"
)

// marked returns the PIDs of the live processes whose environment carries mark.
func marked(mark string) []int {
	want := []byte(markEnv + "=" + mark + "\x00")
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !bytes.Contains(append(env, 0), want) {
			continue
		}
		if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && bytes.Contains(st, []byte(") Z ")) {
			continue // a zombie: dead, waiting to be reaped
		}
		pids = append(pids, pid)
	}
	return pids
}

// noneLeft fails the test if processes carrying mark are still alive 5 seconds from now.
func noneLeft(t *testing.T, mark string) {
	t.Helper()
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if len(marked(mark)) == 0 {
			return
		}
	}
	t.Fatalf("processes of the server are left: %v", marked(mark))
}

func TestCloseLeavesNoProcess(t *testing.T) {
	t.Parallel()
	mark := t.Name()
	set, err := mcp.Connect(context.Background(), stdio(t, "tools", mark))
	require.NoError(t, err)
	reg := registry(t, set)
	r := run(reg, "t__spawn", struct{}{})
	require.False(t, r.IsError, r.Content)
	require.GreaterOrEqual(t, len(marked(mark)), 2, "the server and the process it started run, and are seen")

	set.Close()
	noneLeft(t, mark)
	assert.Empty(t, marked(mark))
}
