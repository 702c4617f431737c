//go:build !linux

package fsync

import "os"

// Files makes the content of files durable, one at a time.
func Files(files []*os.File) error {
	for _, f := range files {
		if err := f.Sync(); err != nil {
			return err
		}
	}
	return nil
}

// Dirs makes renames in dirs durable, where the system supports it.
func Dirs(dirs []string) {
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		_ = d.Sync() // not supported everywhere; the rename itself has happened
		_ = d.Close()
	}
}

// DirsSoon makes renames in dirs durable, as Dirs does: here it waits for them.
func DirsSoon(dirs []string) { Dirs(dirs) }
