package files

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"

	"github.com/agiraph/agiraph/tools"
)

// MaxViewSize is the largest file view_file attaches, in bytes. A provider may take less: its
// adapter refuses a larger file, naming it, before it sends the request.
const MaxViewSize = 32 << 20

// ViewArgs are the arguments of view_file.
type ViewArgs struct {
	Path string `json:"path" jsonschema_description:"Image (PNG, JPEG, GIF, WebP) or PDF to look at, relative to the workspace root"`
}

// viewTypes are the media types view_file attaches, as http.DetectContentType names them.
var viewTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp", "application/pdf"}

const viewGuidance = `Shows you an image (PNG, JPEG, GIF, WebP) or a PDF from the workspace: the file is attached to the tool's result, and you see it in your next turn. The same paths as read_file are allowed.
Use read_file for text files. Files over 32 MiB cannot be viewed, and a model may take less.`

// viewFile implements view_file: it reads the file through the same gate as read_file, finds
// its type from its bytes, and attaches a reference to it (path and digest) to the result.
func (w *workspace) viewFile(ctx context.Context, a ViewArgs) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	if a.Path == "" {
		return "", errors.New(`view_file needs a "path": the image or PDF to look at, relative to the workspace root`)
	}
	t, realRoot, err := w.resolve(a.Path, accessRead)
	if err != nil {
		return "", err
	}
	data, _, err := readBytes(realRoot, t, MaxViewSize)
	if err != nil {
		return "", err
	}
	mediaType, _, _ := strings.Cut(http.DetectContentType(data), ";")
	if !slices.Contains(viewTypes, mediaType) {
		return "", fmt.Errorf("%q is %s, not an image (PNG, JPEG, GIF, WebP) or a PDF; read text files with read_file", t.rel, mediaType)
	}
	sum := sha256.Sum256(data)
	err = tools.Attach(ctx, tools.Attachment{
		Name: t.rel, Path: filepath.Join(realRoot, filepath.FromSlash(t.real)),
		MediaType: mediaType, Size: int64(len(data)), SHA256: hex.EncodeToString(sum[:]),
	})
	if err != nil {
		return "", fmt.Errorf("view_file cannot show %q: %w", t.rel, err)
	}
	return fmt.Sprintf("%s (%s, %d bytes) is attached: you see it below.", t.rel, mediaType, len(data)), nil
}
