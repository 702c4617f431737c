package nodes

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agiraph/agiraph/nodes/store"
)

// histKey is the store's key of the record of version v of run's board: the documents of the
// board and of the run's state that v put. The records are how a fork reads the board as it was
// at a tick (see Squad.Fork); the key's number is padded, so that they sort in version order.
func histKey(run string, v int64) string { return fmt.Sprintf("hist/%s/%020d", run, v) }

// A histDoc is a document of a record: whole (Value), or as what changed from the version Base
// of the same document, field by field (Set, Unset), where a record of that version committed
// before this one was made. Records written before changes were kept are whole documents.
//
// Its key is Rel, the document's key without its run's id (see wholeDoc), or, when the key holds
// none or the record was written before, Key. The document's version is the record's: records
// written before hold it (Version) too.
type histDoc struct {
	Key     string                     `json:"key,omitempty"`
	Rel     string                     `json:"k,omitempty"`
	Version int64                      `json:"version,omitempty"`
	Value   json.RawMessage            `json:"value,omitempty"`
	Base    int64                      `json:"base,omitempty"`
	Set     map[string]json.RawMessage `json:"set,omitempty"`
	Unset   []string                   `json:"unset,omitempty"`
}

// wholeDoc returns d, a document of run's board, as a record of run holds it whole: its key
// (kind/run or kind/run/id) without run's id (kind or kind/id).
func wholeDoc(run string, d store.Doc) histDoc {
	kind, rest, _ := strings.Cut(d.Key, "/")
	if kind == "" || rest != run && !strings.HasPrefix(rest, run+"/") {
		return histDoc{Key: d.Key, Value: d.Value}
	}
	return histDoc{Rel: kind + strings.TrimPrefix(rest, run), Value: d.Value}
}

// key returns the key of h, a document of a record of run.
func (h histDoc) key(run string) string {
	if h.Rel == "" {
		return h.Key
	}
	kind, id, ok := strings.Cut(h.Rel, "/")
	if !ok {
		return kind + "/" + run
	}
	return kind + "/" + run + "/" + id
}

// recordedDoc is a document of a committed record, by field.
type recordedDoc struct {
	version int64
	fields  map[string]json.RawMessage
}

// record adds to ch, a change of version b.version, its record (see histKey), and returns what
// to call once ch has committed; b.wmu is held. A document a committed record holds is recorded
// as what changed from it: a node's change is a few of its fields.
func (b *board) record(ch *store.Change) (committed func(), err error) {
	var rec []histDoc
	done := map[string]recordedDoc{}
	b.hmu.Lock()
	for _, d := range ch.Docs {
		if d.Version != b.version {
			continue
		}
		h := wholeDoc(b.run.ID(), d)
		var fields map[string]json.RawMessage
		if json.Unmarshal(d.Value, &fields) == nil && fields != nil {
			done[d.Key] = recordedDoc{d.Version, fields}
			if base, ok := b.recorded[d.Key]; ok {
				h = h.changeFrom(base, fields)
			}
		}
		rec = append(rec, h)
	}
	b.hmu.Unlock()
	if err := ch.Put(histKey(b.run.ID(), b.version), rec); err != nil {
		return nil, err
	}
	return func() {
		b.hmu.Lock()
		defer b.hmu.Unlock()
		for k, d := range done {
			if d.version > b.recorded[k].version {
				b.recorded[k] = d
			}
		}
	}, nil
}

// changeFrom returns h, whose fields are to, recorded as what changed from base, a version of
// the same document.
func (h histDoc) changeFrom(base recordedDoc, to map[string]json.RawMessage) histDoc {
	h.Value, h.Base, h.Set = nil, base.version, map[string]json.RawMessage{}
	for k, v := range to {
		if !bytes.Equal(base.fields[k], v) {
			h.Set[k] = v
		}
	}
	for k := range base.fields {
		if _, ok := to[k]; !ok {
			h.Unset = append(h.Unset, k)
		}
	}
	return h
}

// histReader reads the records of run in version order, and returns their documents whole.
type histReader struct {
	run      string
	versions map[string]map[int64]json.RawMessage // the documents read, by key and version
}

// read returns the documents of rec, the value of the record of version v.
func (r *histReader) read(v int64, rec []byte) ([]store.Doc, error) {
	var hs []histDoc
	if err := json.Unmarshal(rec, &hs); err != nil {
		return nil, err
	}
	if r.versions == nil {
		r.versions = map[string]map[int64]json.RawMessage{}
	}
	docs := make([]store.Doc, len(hs))
	for i, h := range hs {
		d := store.Doc{Key: h.key(r.run), Version: cmp.Or(h.Version, v), Value: h.Value}
		if h.Base != 0 {
			base, ok := r.versions[d.Key][h.Base]
			if !ok {
				return nil, fmt.Errorf("%s version %d changes version %d, which no record before holds", d.Key, d.Version, h.Base)
			}
			fields := map[string]json.RawMessage{}
			if err := json.Unmarshal(base, &fields); err != nil {
				return nil, fmt.Errorf("%s version %d: %w", d.Key, h.Base, err)
			}
			for k, v := range h.Set {
				fields[k] = v
			}
			for _, k := range h.Unset {
				delete(fields, k)
			}
			var err error
			if d.Value, err = json.Marshal(fields); err != nil {
				return nil, err
			}
		}
		if r.versions[d.Key] == nil {
			r.versions[d.Key] = map[int64]json.RawMessage{}
		}
		r.versions[d.Key][d.Version] = d.Value
		docs[i] = d
	}
	return docs, nil
}
