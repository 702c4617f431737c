package nodes

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/runtime"
)

// The files a run and the agent need beyond the board — a node's published outputs, a
// worker's identity, memory and history, the agent's memory — are kept in the store too, each
// as the document "file/<its path relative to the home>", committed with what made them (a
// node's outcome, a worker's spawn, a memory write). A squad opened on a home that lacks them —
// another machine's, when replicas of a server share a database but not a folder — writes
// them back (restoreFiles), and never over a file that is there.

// filePrefix begins the keys of the files kept in the store.
const filePrefix = "file/"

// MaxStoredFile is the largest file the store keeps (16 MiB): a node that publishes a larger
// one fails, with an error naming it.
const MaxStoredFile = 16 << 20

// storedFile is the document of a file kept in the store.
type storedFile struct {
	Data []byte      `json:"data"`
	Mode fs.FileMode `json:"mode"` // its permissions
}

// fileKey returns the key of the file at rel, a path relative to the home.
func fileKey(rel string) string { return filePrefix + filepath.ToSlash(rel) }

// fileVersions gives the documents of files versions that grow: a file read later is put with
// a greater version, so that the store keeps the latest content whatever order the changes
// commit in (see store.Doc.Version), across restarts too (they are times).
var fileVersions struct {
	sync.Mutex
	last int64
}

// keep adds to ch the files at paths, which are in the agent's home, as they are now (see
// keepFiles), when the squad's store was given (WithStore), as a store that lives outside the
// home is: the default store, in the home's own state.db, keeps none, since it would be lost
// with them.
func (s *Squad) keep(ch *store.Change, paths ...string) error {
	if s.owned {
		return nil
	}
	return keepFiles(ch, s.home, paths...)
}

// keepFiles adds to ch the files at paths, which are in home, as they are now. A file is read
// within home: a symbolic link that leads out of it is refused, as is anything not a regular
// file, so that nothing from outside the home reaches the store (nor, through it, other homes).
func keepFiles(ch *store.Change, home workspace.Home, paths ...string) error {
	if len(paths) == 0 {
		return nil
	}
	root, err := os.OpenRoot(string(home))
	if err != nil {
		return fmt.Errorf("nodes: keep files in the store: %w", err)
	}
	defer root.Close()
	for _, p := range paths {
		rel, err := filepath.Rel(string(home), p)
		if err != nil || !filepath.IsLocal(rel) {
			return fmt.Errorf("nodes: %s is not in the agent's home %s", p, home)
		}
		fileVersions.Lock()
		v := max(fileVersions.last+1, time.Now().UnixNano())
		fileVersions.last = v
		data, mode, err := readKept(root, rel)
		fileVersions.Unlock()
		if err != nil {
			return err
		}
		if err := ch.PutVersion(fileKey(rel), v, storedFile{Data: data, Mode: mode}); err != nil {
			return err
		}
	}
	return nil
}

// readKept reads the regular file rel in root, of at most MaxStoredFile bytes, and returns its
// bytes and permissions.
func readKept(root *os.Root, rel string) ([]byte, fs.FileMode, error) {
	f, err := osfile.OpenIn(root, rel)
	if err != nil {
		return nil, 0, fmt.Errorf("nodes: keep %s in the store: %w", rel, err)
	}
	defer func() { _ = f.Close() }() // read only
	st, err := f.Stat()
	if err != nil {
		return nil, 0, fmt.Errorf("nodes: keep %s in the store: %w", rel, err)
	}
	tooLarge := func(size int64) error {
		return fmt.Errorf("nodes: %s is %d bytes, more than the %d bytes the store keeps of a file (MaxStoredFile): split it into smaller files", rel, size, MaxStoredFile)
	}
	if st.Size() > MaxStoredFile {
		return nil, 0, tooLarge(st.Size())
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxStoredFile+1)) // one more: a file that grew
	if err != nil {
		return nil, 0, fmt.Errorf("nodes: keep %s in the store: %w", rel, err)
	}
	if len(data) > MaxStoredFile {
		return nil, 0, tooLarge(int64(len(data)))
	}
	return data, st.Mode().Perm(), nil
}

// restoreFiles writes the files the store keeps under dir (a path in home: a file or a folder)
// to their places under to (dir itself, or the path in home where dir is being rebuilt) where
// home lacks them, and returns their paths. It writes within home: never through a symbolic
// link that leads out of it, nor over anything that is there.
func restoreFiles(ctx context.Context, st store.Store, home workspace.Home, dir, to string) ([]string, error) {
	rel, err := filepath.Rel(string(home), dir)
	relTo, errTo := filepath.Rel(string(home), to)
	if err != nil || errTo != nil || !filepath.IsLocal(rel) || !filepath.IsLocal(relTo) {
		return nil, fmt.Errorf("nodes: %s or %s is not in the agent's home %s", dir, to, home)
	}
	docs, err := st.Docs(ctx, fileKey(rel))
	if err != nil {
		return nil, fmt.Errorf("nodes: the files of %s in the store: %w", rel, err)
	}
	root, err := os.OpenRoot(string(home))
	if err != nil {
		return nil, fmt.Errorf("nodes: restore the files of %s: %w", rel, err)
	}
	defer root.Close()
	var restored []string
	for _, d := range docs {
		name := filepath.FromSlash(strings.TrimPrefix(d.Key, filePrefix))
		sub, ok := strings.CutPrefix(name, rel)
		if !ok || sub != "" && sub[0] != filepath.Separator {
			continue // another file whose name begins with rel's
		}
		var f storedFile
		if err := json.Unmarshal(d.Value, &f); err != nil || !filepath.IsLocal(name) || filepath.Clean(name) != name {
			return restored, fmt.Errorf("nodes: the file %s kept in the store as %s is damaged (%v); delete the document, or restore the store from a backup", name, d.Key, err)
		}
		dst := relTo + sub
		if _, err := root.Lstat(dst); !errors.Is(err, fs.ErrNotExist) {
			continue // there, or not to be written over (in a folder that leads out of the home)
		}
		if err := root.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return restored, fmt.Errorf("nodes: restore %s: %w", name, err)
		}
		path := filepath.Join(string(home), dst)
		if err := workspace.WriteFile(path, f.Data); err != nil {
			return restored, fmt.Errorf("nodes: restore %s: %w", name, err)
		}
		if err := root.Chmod(dst, f.Mode.Perm()); err != nil {
			return restored, fmt.Errorf("nodes: restore %s: %w", name, err)
		}
		restored = append(restored, path)
	}
	return restored, nil
}

// homeIDFile keeps the id of an agent's home: a run's state names the home whose folder of the
// run is up to date (runState.Home).
const homeIDFile = ".home-id"

// homeID returns the id of home, made at random the first time.
func homeID(home workspace.Home) (string, error) {
	path := filepath.Join(string(home), homeIDFile)
	b, err := os.ReadFile(path)
	if id := strings.TrimSpace(string(b)); err == nil && id != "" {
		return id, nil
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("nodes: the home's id: %w", err)
	}
	id := rand.Text()
	if err := workspace.WriteFile(path, []byte(id+"\n")); err != nil {
		return "", fmt.Errorf("nodes: the home's id: %w", err)
	}
	return id, nil
}

// restoreRun rebuilds, from the store, the folder of b's run, which this home lacks: its
// folders, and the files the store keeps of it (the views of its nodes are written as the run
// opens, by repairViews). The attempts that were in progress when the run stopped worked in the
// folder that is lost, and their scratch files with it, as did those paused to be resumed (a
// pending node that keeps its assignment): each starts again from its beginning, as the node's
// next attempt (its worker the same), rather than go on from its last step without the files
// it wrote. An attempt whose outcome was saved is collected as it is, but for one cancelled
// (the run paused before the squad collected it), which would be resumed from its last step:
// it starts again too. The folder is built beside the run's and takes its place once whole: a
// restore cut short (a damaged file, a crash) leaves no folder that a resume would take for the
// run's, and the next one starts over.
func (s *Squad) restoreRun(ctx context.Context, b *board) error {
	run := b.run
	tmp := workspace.Run(filepath.Join(filepath.Dir(string(run)), "."+run.ID()+".restore"))
	if err := os.RemoveAll(string(tmp)); err != nil { // what a restore cut short left
		return err
	}
	if err := tmp.Create(); err != nil {
		return err
	}
	var mkdirs []func() error
	var lost []Node
	b.read(func(rd reader) {
		for _, n := range rd.nodes() {
			mkdirs = append(mkdirs, tmp.Node(n.ID).Create)
			if n.Assignment != "" && n.Damaged == "" && (n.Status == NodeRunning || n.Status == NodeAssigned || n.Status == NodePending) {
				lost = append(lost, cloneNode(n))
			}
		}
		for _, w := range rd.roster() {
			mkdirs = append(mkdirs, tmp.Worker(w.ID).Create)
		}
	})
	for _, mkdir := range mkdirs {
		if err := mkdir(); err != nil {
			return err
		}
	}
	if _, err := restoreFiles(ctx, s.store, s.home, string(run), string(tmp)); err != nil {
		return err
	}
	err := b.change(ctx, func(t *tx) error {
		for _, n := range lost {
			d, err := s.store.Doc(ctx, outcomeKey(run.ID(), n.ID))
			if err != nil {
				return err
			}
			var rec outcomeRecord
			if n.Status != NodePending && d.Value != nil && json.Unmarshal(d.Value, &rec) == nil && rec.Assignment == n.Assignment &&
				rec.Outcome.Status != runtime.Cancelled {
				continue
			}
			again := attemptID(run.ID(), n.ID, n.Attempts+1)
			if _, err := t.node(n.ID, func(n *Node) error {
				n.Assignment = again
				n.Attempts++
				return nil
			}); err != nil {
				return err
			}
			if w := t.b.findWorker(n.Worker); w != nil && w.Last == n.Assignment {
				if _, err := t.worker(w.ID, func(w *Worker) { w.Last = again }); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return os.Rename(string(tmp), string(run))
}
