package sqlite

import (
	"context"
	"database/sql"
	"encoding/binary"
	"os"
	"sync"
)

// A logCopier copies the write-ahead log into the database (a passive WAL checkpoint) in the
// background, on a connection of its own, once the log holds at least pages frames that are not
// copied yet. The writer's commits then never wait for the copy and its syncs; they only append
// to the log. SQLite's own automatic checkpoint, in the commit that takes the log past a
// threshold, stays on the writer as a backstop, at backstop times this one, for a copier that
// cannot keep up.
type logCopier struct {
	db    *sql.DB // one connection, which only checkpoints
	shm   string  // the log's index (the -shm file), whose header says how far the log was copied
	pages int

	poke chan struct{} // a commit happened
	quit chan struct{} // close was called
	done chan struct{} // run returned
	mu   sync.Mutex    // held while a copy runs (a test holds it to pause the copier)
	stop sync.Once

	shmMu sync.Mutex // guards shmf, opened by the first behind
	shmf  *os.File
}

// backstop is how many times the copier's threshold the log may grow to before a commit copies
// it itself.
const backstop = 8

// newLogCopier starts a copier of the log of the database at abs (opened with dsn) after pages
// frames.
func newLogCopier(abs, dsn string, pages int) (*logCopier, error) {
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	l := &logCopier{db: db, shm: abs + "-shm", pages: pages, poke: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go l.run()
	return l, nil
}

// poked tells the copier a commit happened; it never waits, and does nothing after close.
func (l *logCopier) poked() {
	select {
	case l.poke <- struct{}{}:
	default:
	}
}

// run copies the log when a commit left enough of it to copy, until close.
func (l *logCopier) run() {
	defer close(l.done)
	for {
		select {
		case <-l.quit:
			return
		case <-l.poke:
		}
		if l.behind() < l.pages {
			continue
		}
		l.mu.Lock()
		// An error (the disk full, say) leaves the log as it is: the next commit pokes again,
		// and the writer's own checkpoint is the backstop.
		_, _ = l.db.ExecContext(context.Background(), "PRAGMA wal_checkpoint(PASSIVE)")
		l.mu.Unlock()
	}
}

// behind returns how many frames of the log are not copied into the database yet, from the
// header of the log's index (see https://www.sqlite.org/walformat.html: mxFrame at byte 16 of the
// header, nBackfill at byte 96, in the machine's byte order). It reads a header being changed at
// worst, which only makes the copy come a commit early or late. When the index cannot be read it
// returns pages, so that the copier copies.
func (l *logCopier) behind() int {
	l.shmMu.Lock()
	defer l.shmMu.Unlock()
	if l.shmf == nil {
		f, err := os.Open(l.shm)
		if err != nil {
			return l.pages
		}
		l.shmf = f
	}
	var hdr [100]byte
	if n, _ := l.shmf.ReadAt(hdr[:], 0); n < len(hdr) {
		return l.pages
	}
	mx, copied := binary.NativeEndian.Uint32(hdr[16:]), binary.NativeEndian.Uint32(hdr[96:])
	if mx <= copied {
		return 0
	}
	return int(mx - copied)
}

// close stops the copier and closes its connection; again, it does nothing.
func (l *logCopier) close() (err error) {
	l.stop.Do(func() {
		close(l.quit)
		<-l.done
		l.shmMu.Lock()
		if l.shmf != nil {
			_ = l.shmf.Close() // read only
			l.shmf = nil
		}
		l.shmMu.Unlock()
		err = l.db.Close()
	})
	return err
}
