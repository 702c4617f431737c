package osfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// What a file of an agent holds was written by the agent's programs, and a model with a shell
// can put anything in its place: a FIFO (whose open waits for a writer that never comes), a
// link to /dev/zero (which never ends), a folder, a file of a terabyte. Every read of such a
// file goes through Open (or OpenIn, OpenRegular) and is bounded: ReadFile and ReadIn read a
// whole file of at most MaxSize bytes, ReadLine a line of at most MaxSize bytes.

// MaxSize is the most that ReadFile and ReadIn read of a file, and ReadLine of a line.
const MaxSize = 64 << 20

var (
	// ErrNotRegular is wrapped by the error of Open for what is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge is wrapped by the error of a read over MaxSize bytes.
	ErrTooLarge = fmt.Errorf("over the limit of %d bytes", MaxSize)
)

// Open opens the regular file name for reading (OpenRegular).
func Open(name string) (*os.File, error) { return OpenRegular(name, os.O_RDONLY, 0) }

// OpenRegular is os.OpenFile for a regular file. Anything else — a folder, a FIFO, a device, a
// socket, or a symbolic link to one — is refused, without waiting on it: a *fs.PathError
// naming the file and wrapping ErrNotRegular (but for a FIFO opened for writing only, which the
// system refuses itself while nothing reads it: ENXIO).
func OpenRegular(name string, flag int, perm fs.FileMode) (*os.File, error) {
	f, _, err := regular(os.OpenFile(name, flag|syscall.O_NONBLOCK, perm))
	return f, err
}

// OpenIn is Open for the file name within root (see os.Root).
func OpenIn(root *os.Root, name string) (*os.File, error) {
	f, _, err := regular(root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0))
	return f, err
}

// regular returns f and its size if it is a regular file; else it closes it and returns the
// error. A regular file opened non-blocking reads as any other.
func regular(f *os.File, err error) (*os.File, int64, error) {
	if err != nil {
		return nil, 0, err
	}
	st, err := f.Stat()
	if err == nil && !st.Mode().IsRegular() {
		err = &fs.PathError{Op: "open", Path: f.Name(), Err: fmt.Errorf("%w (it is %s)", ErrNotRegular, kind(st.Mode()))}
	}
	if err != nil {
		_ = f.Close() // read only
		return nil, 0, err
	}
	return f, st.Size(), nil
}

// kind names the type of a file that is not regular.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "of mode " + m.String()
}

// ReadFile reads the regular file name whole (see Open); more than MaxSize bytes is an error
// naming the file and wrapping ErrTooLarge.
func ReadFile(name string) ([]byte, error) {
	return readAll(regular(os.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)))
}

// ReadIn is ReadFile for the file name within root (see os.Root).
func ReadIn(root *os.Root, name string) ([]byte, error) {
	return readAll(regular(root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0)))
}

// readAll reads f, of size bytes by its last look, up to MaxSize bytes, and closes it; it
// returns err if there is one.
func readAll(f *os.File, size int64, err error) ([]byte, error) {
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	c := 512
	if size > 0 && size < MaxSize {
		c = int(size) + 1 // one more, to see the end without growing
	}
	data := make([]byte, 0, c)
	for {
		n, err := f.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if len(data) > MaxSize {
			return nil, &fs.PathError{Op: "read", Path: f.Name(), Err: ErrTooLarge}
		}
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return data, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
}

// ReadLine reads from r up to and including the next '\n', as r.ReadBytes('\n') does; a line
// over MaxSize bytes is an error wrapping ErrTooLarge.
func ReadLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		part, err := r.ReadSlice('\n')
		if len(line)+len(part) > MaxSize {
			return nil, fmt.Errorf("a line %w", ErrTooLarge)
		}
		line = append(line, part...)
		if !errors.Is(err, bufio.ErrBufferFull) {
			return line, err
		}
	}
}
