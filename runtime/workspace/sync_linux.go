package workspace

import (
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// syncFiles makes the content of files durable: one syncfs for each file system they are on.
func syncFiles(files []*os.File) error {
	var done []uint64
	for _, f := range files {
		var st unix.Stat_t
		if err := unix.Fstat(int(f.Fd()), &st); err != nil {
			return err
		}
		if slices.Contains(done, st.Dev) {
			continue
		}
		if err := unix.Syncfs(int(f.Fd())); err != nil {
			return err
		}
		done = append(done, st.Dev)
	}
	return nil
}

// syncDirs makes renames in dirs durable, where the system supports it: one syncfs for each
// file system they are on.
func syncDirs(dirs []string) {
	var done []uint64
	for _, dir := range dirs {
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		var st unix.Stat_t
		if unix.Fstat(int(d.Fd()), &st) == nil && !slices.Contains(done, st.Dev) {
			_ = unix.Syncfs(int(d.Fd()))
			done = append(done, st.Dev)
		}
		_ = d.Close()
	}
}
