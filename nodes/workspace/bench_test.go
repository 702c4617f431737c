package workspace_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/nodes/workspace"
)

// status is about the size of a node's _status.md.
var status = []byte(strings.Repeat("status: running\n", 12))

// BenchmarkWriteView rewrites one view again and again, as the board rewrites a node's
// _status.md. Run it on a disk (TMPDIR), with -benchtime=1000x for a thousand rewrites.
func BenchmarkWriteView(b *testing.B) { benchmarkRewrite(b, workspace.WriteView) }

// BenchmarkWriteFile rewrites one file durably again and again.
func BenchmarkWriteFile(b *testing.B) { benchmarkRewrite(b, workspace.WriteFile) }

func benchmarkRewrite(b *testing.B, write func(string, []byte) error) {
	p := filepath.Join(b.TempDir(), "_status.md")
	require.NoError(b, write(p, status))
	for b.Loop() {
		if err := write(p, status); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNodeViews writes the views of one node as a squad does over its life: its folder,
// _spec.md, and _status.md written pending, then rewritten running and done — "views" through the
// run's Views, as the board writes them, "temporary" each time to a new file renamed over the
// view. Run it on a disk (TMPDIR) with -benchtime=1000x, a run's thousand nodes; on ext4 without
// a journal, the latter slows down as the files it frees pile up (docs/store.md).
func BenchmarkNodeViews(b *testing.B) {
	b.Run("views", func(b *testing.B) {
		run := workspace.Home(b.TempDir()).Run("r1")
		require.NoError(b, run.Create())
		benchmarkNodeViews(b, run, run.Views().Write)
	})
	b.Run("temporary", func(b *testing.B) {
		run := workspace.Home(b.TempDir()).Run("r1")
		require.NoError(b, run.Create())
		benchmarkNodeViews(b, run, workspace.WriteView)
	})
}

func benchmarkNodeViews(b *testing.B, run workspace.Run, write func(string, []byte) error) {
	i := 0
	for b.Loop() {
		dir := run.Node(fmt.Sprintf("n%d", i))
		i++
		if err := dir.Create(); err != nil {
			b.Fatal(err)
		}
		if err := workspace.WriteView(workspace.Spec(dir), status); err != nil {
			b.Fatal(err)
		}
		for _, s := range []string{"pending", "running", "done"} {
			if err := write(workspace.Status(dir), append([]byte(s+"\n"), status...)); err != nil {
				b.Fatal(err)
			}
		}
	}
}
