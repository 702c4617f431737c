package workspace

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/agiraph/agiraph/tools/files"
)

// Views writes the views of one run (see [WriteView]): files derived from the store, which its
// writer rewrites as the store changes, like a node's _status.md. A view written again takes the
// place of a spare file by an exchange of the two names (where the system can exchange files:
// renameat2 RENAME_EXCHANGE on Linux), and its old content becomes the spare for the next
// write. A rewrite thus neither makes a file nor frees one, which on some file systems costs far
// more than writing one: ext4 without a journal, making a file, skips every inode freed in the
// last minute (six, when the inode table is not written out yet), so that a run rewriting
// thousands of views slows down as it goes.
//
// Readers see the old content or the new, never a mix: the spare is written only when no one
// else has it open (a reader that opened a view before it became the spare keeps what it read),
// and otherwise, or where files cannot be exchanged, a view is written as WriteView writes it.
// The spare is a hidden file of the run's folder, named so that [Internal] reports it. A Views is
// safe for concurrent use; its writes take turns.
type Views struct {
	mu    sync.Mutex
	spare string
}

// spareName is the name of a run's spare view file in its folder.
const spareName = ".views.tmp-spare"

// Views returns the writer of the run's views.
func (r Run) Views() *Views { return &Views{spare: r.path(spareName)} }

// Write writes data to the view at path, a file within the run's folder, whose folder exists.
// A new view is written as WriteView writes it; a view that exists keeps its permissions.
func (v *Views) Write(path string, data []byte) error {
	st, err := os.Lstat(path)
	if err != nil || !st.Mode().IsRegular() {
		return WriteView(path, data) // a new view, or not a file: WriteView says so
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	switch err := exchange(v.spare, path, data, st.Mode().Perm()); {
	case err == nil:
		return nil
	case errors.Is(err, errNoExchange):
		return WriteView(path, data)
	default:
		return fmt.Errorf("workspace: write %s: %w", path, files.Cause(err))
	}
}

// errNoExchange says the spare cannot be used for a write now: WriteView writes it instead.
var errNoExchange = errors.New("workspace: the spare view cannot be exchanged")
