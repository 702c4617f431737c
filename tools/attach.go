package tools

import (
	"context"
	"errors"
	"fmt"
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
