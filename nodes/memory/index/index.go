// Package index is a search index of an agent's memory, for memory.WithIndex: SQLite full-text
// search over the memory's sections, ranked by BM25 with porter stemming ("deployed" finds
// "deploy", "tests" finds "test"), which needs no key and no network. Given an embedder
// ([WithEmbedder]) it also ranks the sections by the cosine similarity of their vectors to the
// query's, and merges the two rankings by reciprocal rank fusion, so that a section is found by
// its meaning as well as by its words.
//
// The index is one file in the agent's home, memory/.index.db (hidden names are not memory
// files), and a copy of the memory files that may be thrown away: it is rebuilt from them when
// it is missing, unreadable or damaged, and a file is indexed again when its sections change
// (by a hash of their text). A section's vector is kept by the hash of its text and the
// embedder's name, so that only new or changed sections are embedded, when a search needs them.
// An embedder that fails leaves the search to BM25, which says so.
package index

import (
	"cmp"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	sqlitedrv "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/agiraph/agiraph/internal/sqliteuri"
	"github.com/agiraph/agiraph/nodes/memory"
	"github.com/agiraph/agiraph/nodes/workspace"
	"github.com/agiraph/agiraph/providers"
)

// FileName is the index's file name in the memory folder.
const FileName = ".index.db"

// schemaVersion is the user_version of an index of this schema; a file of another is rebuilt.
const schemaVersion = 1

// schema makes an index in one transaction: a process killed while it runs leaves none of it.
const schema = `
BEGIN;
CREATE TABLE files (path TEXT PRIMARY KEY, hash TEXT NOT NULL);
CREATE VIRTUAL TABLE sections USING fts5(path, body, ord UNINDEXED, header UNINDEXED, hash UNINDEXED,
	tokenize = 'porter unicode61 remove_diacritics 2');
CREATE TABLE vectors (hash TEXT NOT NULL, model TEXT NOT NULL, vec BLOB NOT NULL, PRIMARY KEY (hash, model));
PRAGMA user_version = 1;
COMMIT;
`

const (
	// candidates is how many sections each ranking gives the fusion.
	candidates = 50
	// rrfK damps the weight of the first ranks in reciprocal rank fusion (the usual 60).
	rrfK = 60
	// embedBatch is how many texts one call of the embedder gets, under every provider's limit.
	embedBatch = 64
	// embedBytes bounds the text of a section given to the embedder, under the models' input
	// limits (some take 2,048 tokens).
	embedBytes = 6000
)

// Option configures an [Index].
type Option func(*Index)

// WithEmbedder ranks sections by meaning as well, with the vectors of e (see the package
// documentation). A nil e ranks by full text only.
func WithEmbedder(e providers.Embedder) Option {
	return func(ix *Index) { ix.emb = e }
}

// Index is the search index of one agent's memory, a [memory.Index]. Safe for concurrent use.
type Index struct {
	path string
	emb  providers.Embedder

	mu     sync.Mutex
	db     *sql.DB
	opened os.FileInfo // the file db has open, to notice it removed or replaced
}

var _ memory.Index = (*Index)(nil)

// Open opens the index of the memory of home, memory/.index.db, creating it (and memory/) when
// missing and making it anew when it is not an index of this version or is damaged. Close it when
// done.
func Open(home workspace.Home, opts ...Option) (*Index, error) {
	dir := home.MemoryDir()
	if st, err := os.Lstat(dir); err == nil && st.Mode()&os.ModeSymlink != 0 {
		return nil, fmt.Errorf("memory index: %s is a symbolic link, and the memory folder may not be one: replace the link with a real folder", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("memory index: create %s: %w", dir, err)
	}
	ix := &Index{path: filepath.Join(dir, FileName)}
	for _, o := range opts {
		o(ix)
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if err := ix.open(); err != nil {
		return nil, err
	}
	return ix, nil
}

// Close closes the index's file.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.db == nil {
		return nil
	}
	err := ix.db.Close()
	ix.db = nil
	return err
}

// open opens the file, making it anew when it is not a usable index. ix.mu is held.
func (ix *Index) open() error {
	err := ix.openFile()
	if err != nil && damaged(err) {
		err = ix.rebuild()
	}
	if err != nil {
		return fmt.Errorf("memory index: open %s: %w", ix.path, err)
	}
	return nil
}

// openFile opens the file and checks or creates its schema. ix.mu is held.
func (ix *Index) openFile() error {
	db, err := sql.Open("sqlite", sqliteuri.Of(ix.path, url.Values{"_pragma": {"busy_timeout(5000)"}}))
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1)
	var version int
	err = db.QueryRow("PRAGMA user_version").Scan(&version)
	switch {
	case err != nil:
	case version == 0:
		var tables int
		if err = db.QueryRow("SELECT count(*) FROM sqlite_master").Scan(&tables); err == nil && tables > 0 {
			err = errStale // half made, by a process killed before the schema was in one transaction
		} else if err == nil {
			_, err = db.Exec(schema)
		}
	case version != schemaVersion:
		err = errStale
	default:
		err = db.QueryRow("SELECT count(*) FROM files").Scan(new(int)) // reads a page: a damaged file fails here
	}
	if err != nil {
		_ = db.Close() // the error above is the one to report
		return err
	}
	st, err := os.Stat(ix.path)
	if err != nil {
		_ = db.Close()
		return err
	}
	ix.db, ix.opened = db, st
	return nil
}

// errStale is the error of a file of another schema version.
var errStale = errors.New("an index of another version")

// damaged reports whether err says the file is not a usable index: not a database, damaged, or
// of another version.
func damaged(err error) bool {
	var se *sqlitedrv.Error
	if errors.As(err, &se) {
		switch se.Code() & 0xff {
		case sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB:
			return true
		}
	}
	return errors.Is(err, errStale)
}

// rebuild removes the file and opens a new, empty one. ix.mu is held.
func (ix *Index) rebuild() error {
	if ix.db != nil {
		_ = ix.db.Close() // the file is thrown away
		ix.db = nil
	}
	for _, suffix := range []string{"", "-journal", "-wal", "-shm"} {
		if err := os.Remove(ix.path + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	return ix.openFile()
}

// do runs fn on the database with ix.mu held: on the file as it is now, opened anew when it was
// removed or replaced since, and once more on a new file when fn finds it damaged.
func (ix *Index) do(fn func(db *sql.DB) error) error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.db == nil {
		return errors.New("memory index: closed")
	}
	if st, err := os.Stat(ix.path); err != nil || !os.SameFile(st, ix.opened) {
		_ = ix.db.Close() // that file is gone
		ix.db = nil
		if err := ix.open(); err != nil {
			return err
		}
	}
	err := fn(ix.db)
	if err != nil && damaged(err) {
		if err = ix.rebuild(); err == nil {
			err = fn(ix.db)
		}
	}
	return err
}

// Put indexes file, new or changed (see [memory.Index]).
func (ix *Index) Put(ctx context.Context, file memory.File) error {
	return ix.update(ctx, []memory.File{file}, false)
}

// Sync brings the index up to date with files, all the memory files (see [memory.Index]).
func (ix *Index) Sync(ctx context.Context, files []memory.File) error {
	return ix.update(ctx, files, true)
}

// update indexes the files of files whose sections changed; with all, it forgets the files
// files does not name, and the vectors no section has any more.
func (ix *Index) update(ctx context.Context, files []memory.File, all bool) error {
	err := ix.do(func(db *sql.DB) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // after Commit it does nothing
		stored := map[string]string{}
		rows, err := tx.QueryContext(ctx, "SELECT path, hash FROM files")
		if err != nil {
			return err
		}
		for rows.Next() {
			var p, h string
			if err := rows.Scan(&p, &h); err != nil {
				rows.Close()
				return err
			}
			stored[p] = h
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		for _, f := range files {
			h := fileHash(f)
			if stored[f.Path] != h {
				if err := indexFile(ctx, tx, f, h); err != nil {
					return err
				}
			}
			delete(stored, f.Path)
		}
		if all {
			for p := range stored {
				if err := forget(ctx, tx, p); err != nil {
					return err
				}
			}
			if len(stored) > 0 {
				if _, err := tx.ExecContext(ctx, "DELETE FROM vectors WHERE hash NOT IN (SELECT hash FROM sections)"); err != nil {
					return err
				}
			}
		}
		return tx.Commit()
	})
	if err != nil {
		return fmt.Errorf("memory index: update %s: %w", ix.path, err)
	}
	return nil
}

// indexFile replaces the sections of f in the index.
func indexFile(ctx context.Context, tx *sql.Tx, f memory.File, hash string) error {
	if err := forget(ctx, tx, f.Path); err != nil {
		return err
	}
	for i, s := range f.Sections {
		if _, err := tx.ExecContext(ctx, "INSERT INTO sections (path, body, ord, header, hash) VALUES (?, ?, ?, ?, ?)",
			f.Path, s.Text, i, s.Header, textHash(s.Text)); err != nil {
			return err
		}
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO files (path, hash) VALUES (?, ?)", f.Path, hash)
	return err
}

// forget removes the file p from the index.
func forget(ctx context.Context, tx *sql.Tx, p string) error {
	if _, err := tx.ExecContext(ctx, "DELETE FROM sections WHERE path = ?", p); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, "DELETE FROM files WHERE path = ?", p)
	return err
}

// fileHash is the hash of a file's sections.
func fileHash(f memory.File) string {
	h := sha256.New()
	for _, s := range f.Sections {
		_, _ = fmt.Fprintf(h, "%d:%s\x00%d:%s\x00", len(s.Header), s.Header, len(s.Text), s.Text) // a hash does not fail
	}
	return hex.EncodeToString(h.Sum(nil))
}

// textHash is the hash of a section's text, which its vector is kept by.
func textHash(text string) string {
	sum := sha256.Sum256([]byte(text))
	return hex.EncodeToString(sum[:])
}

// key names a section.
type key struct {
	path string
	ord  int
}

// Search returns at most limit sections for q, best first (see [memory.Index]): by BM25 over
// q's keywords, merged by reciprocal rank fusion with the sections closest to q's text in
// meaning when the index has an embedder. When the embedder fails the ranking is BM25's, and its
// note says why. The embedder is called without the index locked: writes go on meanwhile.
func (ix *Index) Search(ctx context.Context, q memory.Query, limit int) (memory.Ranking, error) {
	r := memory.Ranking{Method: "full-text ranking (BM25)"}
	hits := map[key]memory.Hit{}
	var lists [][]key
	var missing []unembedded
	err := ix.do(func(db *sql.DB) error {
		clear(hits)
		text, err := fullText(ctx, db, q.Keywords, hits)
		if err != nil {
			return err
		}
		lists = [][]key{text}
		if ix.emb != nil {
			missing, err = sectionsToEmbed(ctx, db, ix.emb.Name())
		}
		return err
	})
	if err == nil && ix.emb != nil {
		var meaning []key
		meaning, err = ix.byMeaning(ctx, q.Text, missing, hits)
		var ee embedError
		switch {
		case err == nil:
			lists = append(lists, meaning)
			r.Method = fmt.Sprintf("full-text ranking (BM25) and meaning (%s), merged by reciprocal rank fusion", ix.emb.Name())
		case errors.As(err, &ee) && ctx.Err() == nil:
			r.Note = fmt.Sprintf("(Ranked by full text only, since the embedder failed: %v.)", ee.err)
			err = nil
		}
	}
	if err != nil {
		return memory.Ranking{}, fmt.Errorf("memory index: search %s: %w", ix.path, err)
	}
	for _, k := range fuse(lists, limit) {
		r.Hits = append(r.Hits, hits[k])
	}
	return r, nil
}

// embedError is an error of the embedder, which leaves the search to BM25.
type embedError struct{ err error }

func (e embedError) Error() string { return e.err.Error() }
func (e embedError) Unwrap() error { return e.err }

// fullText returns the sections matching any of keywords, best first by BM25, at most
// candidates of them; it adds them to hits.
func fullText(ctx context.Context, db *sql.DB, keywords []string, hits map[key]memory.Hit) ([]key, error) {
	if len(keywords) == 0 {
		return nil, nil
	}
	terms := make([]string, len(keywords))
	for i, kw := range keywords {
		terms[i] = `"` + strings.ReplaceAll(kw, `"`, `""`) + `"*` // a prefix, stemmed: "async" finds "asyncio"
	}
	rows, err := db.QueryContext(ctx, `SELECT path, ord, header, body FROM sections WHERE sections MATCH ?
		ORDER BY bm25(sections), path, ord LIMIT ?`, strings.Join(terms, " OR "), candidates)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []key
	for rows.Next() {
		var h memory.Hit
		var k key
		if err := rows.Scan(&h.Path, &k.ord, &h.Header, &h.Text); err != nil {
			return nil, err
		}
		k.path = h.Path
		hits[k] = h
		out = append(out, k)
	}
	return out, rows.Err()
}

// unembedded is a section's text that has no vector of the embedder yet, and its hash.
type unembedded struct{ hash, text string }

// sectionsToEmbed returns the sections' texts that have no vector of model.
func sectionsToEmbed(ctx context.Context, db *sql.DB, model string) ([]unembedded, error) {
	rows, err := db.QueryContext(ctx, `SELECT DISTINCT s.hash, s.body FROM sections s
		LEFT JOIN vectors v ON v.hash = s.hash AND v.model = ? WHERE v.hash IS NULL ORDER BY s.hash`, model)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []unembedded
	for rows.Next() {
		var u unembedded
		if err := rows.Scan(&u.hash, &u.text); err != nil {
			return nil, err
		}
		out = append(out, u)
	}
	return out, rows.Err()
}

// byMeaning embeds the missing sections and the query text, keeps the sections' vectors, and
// returns the sections closest to text, best first, at most candidates of them; it adds them
// to hits. An error of the embedder is an embedError.
func (ix *Index) byMeaning(ctx context.Context, text string, missing []unembedded, hits map[key]memory.Hit) ([]key, error) {
	texts := make([]string, 0, len(missing)+1)
	for _, u := range missing {
		texts = append(texts, truncate(u.text, embedBytes))
	}
	vecs, err := ix.embed(ctx, append(texts, text))
	if err != nil {
		return nil, err
	}
	query := normalize(vecs[len(vecs)-1])
	model := ix.emb.Name()
	var out []key
	err = ix.do(func(db *sql.DB) error {
		for i, u := range missing {
			if _, err := db.ExecContext(ctx, "INSERT OR REPLACE INTO vectors (hash, model, vec) VALUES (?, ?, ?)",
				u.hash, model, encode(normalize(vecs[i]))); err != nil {
				return err
			}
		}
		out, err = closest(ctx, db, model, query, hits)
		return err
	})
	return out, err
}

// embed returns the vectors of texts, embedBatch texts a call. An error is an embedError.
func (ix *Index) embed(ctx context.Context, texts []string) ([][]float32, error) {
	var out [][]float32
	for start := 0; start < len(texts); start += embedBatch {
		end := min(start+embedBatch, len(texts))
		vecs, err := ix.emb.Embed(ctx, texts[start:end])
		if err == nil && len(vecs) != end-start {
			err = fmt.Errorf("%d vectors for %d texts", len(vecs), end-start)
		}
		if err != nil {
			return nil, embedError{err}
		}
		out = append(out, vecs...)
	}
	return out, nil
}

// closest returns the sections whose vectors of model are closest to query (normalized), best
// first, at most candidates of them; it adds them to hits.
func closest(ctx context.Context, db *sql.DB, model string, query []float32, hits map[key]memory.Hit) ([]key, error) {
	rows, err := db.QueryContext(ctx, `SELECT s.path, s.ord, s.header, s.body, v.vec FROM sections s
		JOIN vectors v ON v.hash = s.hash AND v.model = ?`, model)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	type scored struct {
		key
		hit memory.Hit
		sim float64
	}
	var all []scored
	for rows.Next() {
		var s scored
		var blob []byte
		if err := rows.Scan(&s.hit.Path, &s.ord, &s.hit.Header, &s.hit.Text, &blob); err != nil {
			return nil, err
		}
		s.path = s.hit.Path
		if s.sim = dot(query, decode(blob)); s.sim > 0 {
			all = append(all, s)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	slices.SortFunc(all, func(a, b scored) int { return better(a.key, b.key, a.sim, b.sim) })
	var out []key
	for _, s := range all[:min(len(all), candidates)] {
		hits[s.key] = s.hit
		out = append(out, s.key)
	}
	return out, nil
}

// fuse merges rankings by reciprocal rank fusion: a section scores the sum of 1/(rrfK + rank)
// over the rankings it is in. It returns the best limit, ties broken by path and order.
func fuse(lists [][]key, limit int) []key {
	score := map[key]float64{}
	for _, l := range lists {
		for rank, k := range l {
			score[k] += 1 / float64(rrfK+rank+1)
		}
	}
	keys := make([]key, 0, len(score))
	for k := range score {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int { return better(a, b, score[a], score[b]) })
	return keys[:min(len(keys), limit)]
}

// better orders sections a and b of scores sa and sb: the higher score first, ties by path and
// order in the file.
func better(a, b key, sa, sb float64) int {
	if c := cmp.Compare(sb, sa); c != 0 {
		return c
	}
	if c := strings.Compare(a.path, b.path); c != 0 {
		return c
	}
	return a.ord - b.ord
}

// truncate cuts s to at most n bytes, on a rune boundary.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "")
}

// normalize returns v scaled to length 1 (v itself when it is zero).
func normalize(v []float32) []float32 {
	var sum float64
	for _, x := range v {
		sum += float64(x) * float64(x)
	}
	if sum == 0 {
		return v
	}
	n := math.Sqrt(sum)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// dot is the dot product of a and b, the cosine of normalized vectors; 0 when their lengths
// differ (vectors of another model).
func dot(a, b []float32) float64 {
	if len(a) != len(b) {
		return 0
	}
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

func encode(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func decode(b []byte) []float32 {
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}
