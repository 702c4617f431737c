package files_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/tools"
	"github.com/agiraph/agiraph/tools/files"
)

// pngBytes starts as a PNG does, which is how view_file finds the type.
var pngBytes = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x00\x00\x00\x00")

// view runs view_file through a registry built with attachments.
func view(t *testing.T, root string, p files.Policy, path string) tools.Result {
	t.Helper()
	reg, err := tools.NewRegistry(files.Tools(root, p), tools.WithAttachments())
	require.NoError(t, err)
	return reg.Run(context.Background(), []tools.Call{{ID: "c1", Name: "view_file", Args: []byte(`{"path":"` + path + `"}`)}})[0]
}

// view_file attaches a reference to an image or a PDF in scope: its path, type, size and
// digest; the bytes are not in the result.
func TestViewFileAttaches(t *testing.T) {
	root, _ := setup(t)
	must(t, os.WriteFile(filepath.Join(root, "nodes/n1/chart.png"), pngBytes, 0o644))
	must(t, os.WriteFile(filepath.Join(root, "nodes/n1/paper.pdf"), []byte("%PDF-1.4\n%%EOF\n"), 0o644))
	scope := files.Scope{Read: []string{"nodes/n1"}}

	r := view(t, root, scope, "nodes/n1/chart.png")
	require.False(t, r.IsError, r.Content)
	assert.Equal(t, "nodes/n1/chart.png (image/png, 29 bytes) is attached: you see it below.", r.Content)
	sum := sha256.Sum256(pngBytes)
	real, err := filepath.EvalSymlinks(filepath.Join(root, "nodes/n1/chart.png"))
	require.NoError(t, err)
	assert.Equal(t, &tools.Attachment{Name: "nodes/n1/chart.png", Path: real, MediaType: "image/png", Size: int64(len(pngBytes)), SHA256: hex.EncodeToString(sum[:])}, r.Attachment)

	r = view(t, root, scope, "nodes/n1/paper.pdf")
	require.False(t, r.IsError, r.Content)
	require.NotNil(t, r.Attachment)
	assert.Equal(t, "application/pdf", r.Attachment.MediaType)
}

// view_file refuses what read_file refuses (outside the scope, outside the root) and files
// that are neither images nor PDFs; where the runtime shows text only, it says so.
func TestViewFileRefusals(t *testing.T) {
	root, outside := setup(t)
	must(t, os.WriteFile(filepath.Join(root, "nodes/n2/secret.png"), pngBytes, 0o644))
	must(t, os.WriteFile(filepath.Join(outside, "o.png"), pngBytes, 0o644))
	must(t, os.Symlink(filepath.Join(outside, "o.png"), filepath.Join(root, "nodes/n1/link.png")))
	scope := files.Scope{Read: []string{"nodes/n1"}}
	for path, want := range map[string]string{
		"nodes/n2/secret.png": `reading "nodes/n2/secret.png" is not allowed`,
		"nodes/n1/link.png":   "outside",
		"../outside/o.png":    "leads outside the workspace",
		"nodes/n1/a.txt":      `"nodes/n1/a.txt" is text/plain, not an image (PNG, JPEG, GIF, WebP) or a PDF; read text files with read_file`,
		"nodes/n1/none.png":   "does not exist",
	} {
		r := view(t, root, scope, path)
		assert.True(t, r.IsError, path)
		assert.Contains(t, r.Content, want, path)
		assert.Nil(t, r.Attachment, path)
	}

	must(t, os.WriteFile(filepath.Join(root, "nodes/n1/chart.png"), pngBytes, 0o644))
	content, isErr := call(t, registry(t, root, scope), "view_file", map[string]string{"path": "nodes/n1/chart.png"})
	assert.True(t, isErr)
	assert.Contains(t, content, `view_file cannot show "nodes/n1/chart.png": this runtime shows the model text only`)
}
