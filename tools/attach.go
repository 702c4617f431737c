package tools

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
)

// Attachment is a file a call shows the model besides its text result: an image or a PDF. It is
// a reference — where the file is and the digest of the bytes attached — that a runtime saves
// with the conversation; the runtime reads the bytes when it sends them, and refuses bytes that
// no longer match the digest.
type Attachment struct {
	// Name is the file as the model named it (its path in the workspace).
	Name string `json:"name"`
	// Path is the absolute path the runtime reads the file from.
	Path      string `json:"path"`
	MediaType string `json:"media_type"`
	Size      int64  `json:"size"`
	// SHA256 is the hex SHA-256 digest of the bytes attached.
	SHA256 string `json:"sha256"`
}

// Read returns the file's bytes, read from Path, when they still have the digest SHA256; else
// an error that says the file is gone or has changed since it was attached.
func (a Attachment) Read() ([]byte, error) {
	data, err := os.ReadFile(a.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%s is gone", a.Name)
	case err != nil:
		return nil, fmt.Errorf("%s cannot be read: %w", a.Name, err)
	}
	if sum := sha256.Sum256(data); hex.EncodeToString(sum[:]) != a.SHA256 {
		return nil, fmt.Errorf("%s has changed since it was attached", a.Name)
	}
	return data, nil
}

// ErrNoAttachments is returned by Attach when the call runs where files are not shown to the
// model: outside a registry built WithAttachments.
var ErrNoAttachments = errors.New("this runtime shows the model text only, not files")

type attachKey struct{}

// attachment holds the file a call attached.
type attachment struct {
	mu sync.Mutex
	a  *Attachment
}

func (at *attachment) get() *Attachment {
	at.mu.Lock()
	defer at.mu.Unlock()
	return at.a
}

// Attach makes a the attachment of the result of the call that ctx runs; a call attaches one
// file. It returns ErrNoAttachments when the registry running the call was not built
// WithAttachments.
func Attach(ctx context.Context, a Attachment) error {
	at, ok := ctx.Value(attachKey{}).(*attachment)
	if !ok {
		return ErrNoAttachments
	}
	at.mu.Lock()
	defer at.mu.Unlock()
	if at.a != nil {
		return fmt.Errorf("a call attaches one file, and %s is attached already", at.a.Name)
	}
	at.a = &a
	return nil
}
