// Package layers holds the test that keeps the repository's packages in their layers: nothing
// imports upward.
package layers

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const mod = "github.com/agiraph/agiraph/"

// below says what each layer must not import, from the bottom up: a package whose path starts
// with the key imports no package of the repository whose path starts with one of the values.
var below = map[string][]string{
	"sandbox":           {""}, // nothing of the repository
	"checkpoint":        {"graph", "tools", "providers", "models", "runtime", "nodes", "server", "runner"},
	"graph":             {"tools", "providers", "models", "runtime", "nodes", "server", "runner"},
	"tools":             {"graph", "providers", "models", "runtime", "nodes", "server", "runner"},
	"internal/proc":     {"tools", "runtime", "nodes", "server"},
	"providers":         {"runtime", "nodes", "server", "runner"},
	"hooks":             {"graph", "models", "runtime", "nodes", "server", "runner"},
	"models":            {"runtime", "nodes", "server", "runner"},
	"runtime":           {"nodes", "server", "runner"},
	"nodes":             {"server", "runner"},
	"runner":            {"nodes", "server"},
	"runtime/adapter":   {"runtime/harnessed", "runtime/claudecode", "runtime/autonomous"},
	"runtime/harnessed": {"runtime/claudecode", "runtime/autonomous"},
	"server/host":       {"server"},
}

// belowStd says what standard packages a package must not import, as below does: the agent host
// speaks no HTTP (package server does).
var belowStd = map[string][]string{
	"server/host": {"net/http"},
}

// Checked with the tests' own imports left out: a test may reach higher (a provider's tests run a
// squad over its wire).
func TestNothingImportsUpward(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", mod+"...").CombinedOutput()
	require.NoError(t, err, "%s", out)
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	require.Greater(t, len(lines), 40, "the repository's packages")
	for _, line := range lines {
		fields := strings.Fields(line)
		pkg := strings.TrimPrefix(fields[0], mod)
		for _, imp := range fields[1:] {
			rules := belowStd
			if strings.HasPrefix(imp, mod) {
				rules, imp = below, strings.TrimPrefix(imp, mod)
			}
			for layer, banned := range rules {
				if pkg == layer || strings.HasPrefix(pkg, layer+"/") {
					checkImport(t, pkg, imp, layer, banned)
				}
			}
		}
	}
}

// checkImport fails the test if pkg, of layer, imports imp, which banned holds.
func checkImport(t *testing.T, pkg, imp, layer string, banned []string) {
	for _, b := range banned {
		if b == "" || imp == b || strings.HasPrefix(imp, b+"/") {
			assert.Fail(t, "an upward import", "%s imports %s (layer %s must not import %q)", pkg, imp, layer, b)
		}
	}
}
