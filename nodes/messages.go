package nodes

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/agiraph/agiraph/internal/osfile"
	"github.com/agiraph/agiraph/nodes/bus"
	"github.com/agiraph/agiraph/nodes/store"
)

// openBus opens the bus of run r, its records kept in the squad's store (see runJournal).
func (s *Squad) openBus(r *run) (*bus.Bus, error) {
	j, err := runJournal(s.store, r.dir.Messages(), r.id)
	if err != nil {
		return nil, err
	}
	r.journal, _ = j.(*busJournal)
	b, err := bus.Open(r.dir.Messages(), bus.WithClock(s.cfg.now), bus.WithObserver(r.observeMessage), bus.WithJournal(j))
	if err != nil {
		return nil, fmt.Errorf("nodes: run %s: %w", r.id, err)
	}
	return b, nil
}

// runJournal returns the journal of the bus of run, whose folder is dir: the store's (see
// busJournal). A run whose bus kept its records in its _messages/log.jsonl before the store held
// them has them copied into the store — or, when the store only reads, read from the file.
func runJournal(st store.Store, dir, run string) (bus.Journal, error) {
	j := &busJournal{st: st, run: run}
	recs, err := j.Records()
	if err != nil || len(recs) > 0 || !fileExists(filepath.Join(dir, bus.LogFile)) {
		return j, err
	}
	f, err := bus.ReadFileJournal(dir)
	if err != nil {
		return nil, err
	}
	old, err := f.Records()
	if err == nil && len(old) > 0 {
		err = j.Append(old)
		if errors.Is(err, store.ErrReadOnly) {
			return f, nil
		}
	}
	_ = f.Close() // read only
	if err != nil {
		return nil, err
	}
	return j, nil
}

// busJournal keeps a run's bus records (bus.Journal) in the squad's store, the documents
// "bus/<run>/<n>", n counting from 1: each committed alone before the send, join or receipt
// that made it returns, as the bus's own log was synced.
type busJournal struct {
	st  store.Store
	run string
	n   atomic.Int64 // the records kept
}

// busKey is the store's key of record n of run's bus; the number is padded, so that the keys
// sort as the records were kept.
func busKey(run string, n int) string { return fmt.Sprintf("bus/%s/%010d", run, n) }

// Records returns the run's records.
func (j *busJournal) Records() ([][]byte, error) {
	docs, err := j.st.Docs(context.Background(), "bus/"+j.run+"/")
	if err != nil {
		return nil, fmt.Errorf("nodes: run %s: its messages: %w", j.run, err)
	}
	recs := make([][]byte, len(docs))
	for i, d := range docs {
		recs[i] = d.Value
	}
	j.n.Store(int64(len(docs)))
	return recs, nil
}

// Append keeps records after the others, in one commit.
func (j *busJournal) Append(records [][]byte) error {
	var ch store.Change
	n := int(j.n.Load())
	for i, r := range records {
		ch.Docs = append(ch.Docs, store.Doc{Key: busKey(j.run, n+i+1), Value: r})
	}
	if err := j.st.Apply(context.Background(), ch); err != nil {
		return fmt.Errorf("nodes: run %s: its messages: %w", j.run, err)
	}
	j.n.Add(int64(len(records)))
	return nil
}

// kept returns how many records the journal kept; 0 for a journal that is not the store's.
func (j *busJournal) kept() int {
	if j == nil {
		return 0
	}
	return int(j.n.Load())
}

// Close does nothing: the squad closes the store.
func (j *busJournal) Close() error { return nil }

// triggerKeeper keeps the agent's triggers (triggers.Keeper) in the squad's store, the document
// "triggers", each save committed alone. Triggers kept in the home's triggers.json before the
// store held them are copied into it when loaded.
type triggerKeeper struct {
	st   store.Store
	file string // triggers.json
}

// triggersKey is the store's key of the agent's triggers.
const triggersKey = "triggers"

// Load returns the triggers saved last. Those of a triggers.json from before are copied into
// the store (unless it only reads) and the file set aside.
func (k triggerKeeper) Load() ([]byte, error) {
	d, err := k.st.Doc(context.Background(), triggersKey)
	if err != nil || d.Value != nil {
		return d.Value, err
	}
	b, err := osfile.ReadFile(k.file)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if err := k.Save(b); err != nil && !errors.Is(err, store.ErrReadOnly) {
		return nil, err
	}
	return b, nil
}

// Save keeps data as the agent's triggers. A triggers.json from before is renamed aside once
// they are saved in the store, so that it never counts again.
func (k triggerKeeper) Save(data []byte) error {
	var ch store.Change
	ch.Docs = []store.Doc{{Key: triggersKey, Value: data}}
	if err := k.st.Apply(context.Background(), ch); err != nil {
		return err
	}
	if err := os.Rename(k.file, k.file+".copied"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("nodes: the triggers are in the store; %s could not be set aside: %w", k.file, err)
	}
	return nil
}
