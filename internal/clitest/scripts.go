package clitest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// RunScripts runs each Node script of the test's testdata folder (*.mjs, but lib.mjs, which
// the others import) as a subtest named after it: a user of an official client, run against a
// server the subtest sets up. env is called in the subtest and returns what the script's
// environment holds beside PATH and a HOME of its own ("NAME=value"). A script fails its
// subtest by exiting non-zero; its output is shown then.
func RunScripts(t *testing.T, env func(t *testing.T) []string) {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("node runs the scripts of testdata: %v", err)
	}
	scripts, err := filepath.Glob(filepath.Join("testdata", "*.mjs"))
	if err != nil {
		t.Fatal(err)
	}
	for _, script := range scripts {
		name := strings.TrimSuffix(filepath.Base(script), ".mjs")
		if name == "lib" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			vars := env(t)
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, script)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}, vars...)
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%s: %v\n%s", script, err, out)
			}
		})
	}
}
