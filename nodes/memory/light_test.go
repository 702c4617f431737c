package memory_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The memory links no database: its index is a package of its own, which a program links only
// when it uses it.
func TestLinksNoDatabase(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/agiraph/agiraph/nodes/memory").CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, dep := range strings.Fields(string(out)) {
		require.False(t, dep == "database/sql" || strings.HasPrefix(dep, "modernc.org/sqlite"), "nodes/memory depends on %s", dep)
	}
}
