// Package codec is the compact binary encoding of a checkpoint's frontier, joins and metadata that
// the SQL savers store in their next, joins and meta columns, and the error they return for a row
// that does not decode.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/agiraph/agiraph/checkpoint"
)

// The next, joins and meta columns hold a compact binary encoding, NULL when there is nothing to
// store. Every encoding starts with the byte Version; strings and byte slices are a uvarint
// length followed by the bytes; counts are uvarints.
//
//	next:  version, count, then per task: id, node, flags (bit 0: push, bit 1: has an argument),
//	       and the argument when it has one (so that a nil argument and an empty one stay apart)
//	joins: version, count, then per target in key order: target, count, the sources
//	meta:  version, count, then per entry in key order: key, value
//
// The encoding keeps strings byte for byte and byte slices without the growth of base64; decoding
// checks every length against what is left, so a damaged value is an error and never a panic or a
// huge allocation.
const Version = 1

const (
	flagPush   = 1 << 0
	flagHasArg = 1 << 1
)

var errTruncated = errors.New("truncated")

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// EncodeNext encodes a frontier; an empty one is nil.
func EncodeNext(next []checkpoint.Task) []byte {
	if len(next) == 0 {
		return nil
	}
	n := 2 + len(next)*4
	for _, t := range next {
		n += len(t.ID) + len(t.Node) + len(t.Arg) + 3*binary.MaxVarintLen32
	}
	b := make([]byte, 0, n)
	b = append(b, Version)
	b = binary.AppendUvarint(b, uint64(len(next)))
	for _, t := range next {
		b = appendString(b, t.ID)
		b = appendString(b, t.Node)
		var flags byte
		if t.Push {
			flags |= flagPush
		}
		if t.Arg != nil {
			flags |= flagHasArg
		}
		b = append(b, flags)
		if t.Arg != nil {
			b = binary.AppendUvarint(b, uint64(len(t.Arg)))
			b = append(b, t.Arg...)
		}
	}
	return b
}

// EncodeJoins encodes join progress; an empty map is nil.
func EncodeJoins(joins map[string][]string) []byte {
	return encodeMap(joins, func(b []byte, sources []string) []byte {
		b = binary.AppendUvarint(b, uint64(len(sources)))
		for _, s := range sources {
			b = appendString(b, s)
		}
		return b
	})
}

// EncodeMeta encodes metadata; an empty map is nil.
func EncodeMeta(meta map[string]string) []byte { return encodeMap(meta, appendString) }

// encodeMap writes a map as its size and, in key order, each key followed by its value; an empty
// map is nil.
func encodeMap[V any](m map[string]V, appendValue func([]byte, V) []byte) []byte {
	if len(m) == 0 {
		return nil
	}
	b := []byte{Version}
	b = binary.AppendUvarint(b, uint64(len(m)))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		b = appendString(b, k)
		b = appendValue(b, m[k])
	}
	return b
}

// decoder reads an encoding; the first error sticks and later reads return zero values.
type decoder struct {
	b   []byte
	err error
}

func newDecoder(b []byte) *decoder {
	d := &decoder{b: b}
	if len(b) == 0 {
		d.err = errTruncated
	} else if b[0] != Version {
		d.err = fmt.Errorf("unknown encoding version %d", b[0])
	} else {
		d.b = b[1:]
	}
	return d
}

func (d *decoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = errTruncated
		return 0
	}
	d.b = d.b[n:]
	return v
}

// count reads a number of items, each of which takes at least one byte.
func (d *decoder) count() int {
	n := d.uvarint()
	if d.err == nil && n > uint64(len(d.b)) {
		d.err = fmt.Errorf("count %d is larger than the %d bytes left", n, len(d.b))
		return 0
	}
	return int(n)
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if d.err != nil {
		return nil
	}
	if n > uint64(len(d.b)) {
		d.err = errTruncated
		return nil
	}
	v := d.b[:n:n]
	d.b = d.b[n:]
	return v
}

func (d *decoder) string() string { return string(d.bytes()) }

func (d *decoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.err = errTruncated
		return 0
	}
	v := d.b[0]
	d.b = d.b[1:]
	return v
}

// done returns the decoder's error, or an error if bytes are left over.
func (d *decoder) done() error {
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%d bytes left over", len(d.b))
	}
	return d.err
}

// DecodeNext decodes what EncodeNext made (nil decodes to nil); the tasks' arguments alias b.
func DecodeNext(b []byte) ([]checkpoint.Task, error) {
	if b == nil {
		return nil, nil
	}
	d := newDecoder(b)
	next := make([]checkpoint.Task, d.count())
	for i := range next {
		t := &next[i]
		t.ID = d.string()
		t.Node = d.string()
		flags := d.byte()
		if flags&^(flagPush|flagHasArg) != 0 && d.err == nil {
			d.err = fmt.Errorf("unknown task flags %#x", flags)
		}
		t.Push = flags&flagPush != 0
		if flags&flagHasArg != 0 {
			if arg := d.bytes(); d.err == nil {
				t.Arg = arg
				if t.Arg == nil {
					t.Arg = []byte{}
				}
			}
		}
	}
	return next, d.done()
}

// DecodeJoins decodes what EncodeJoins made (nil decodes to nil).
func DecodeJoins(b []byte) (map[string][]string, error) {
	if b == nil {
		return nil, nil
	}
	d := newDecoder(b)
	n := d.count()
	joins := make(map[string][]string, n)
	for range n {
		k := d.string()
		var sources []string
		if m := d.count(); m > 0 {
			sources = make([]string, m)
			for j := range sources {
				sources[j] = d.string()
			}
		}
		if d.err != nil {
			break
		}
		joins[k] = sources
	}
	return joins, d.done()
}

// MergeMeta decodes what EncodeMeta made, sets each key of meta to its value and encodes the
// result, for a saver that patches a stored checkpoint's metadata.
func MergeMeta(b []byte, meta map[string]string) ([]byte, error) {
	merged, err := DecodeMeta(b)
	if err != nil {
		return nil, err
	}
	if merged == nil {
		merged = make(map[string]string, len(meta))
	}
	maps.Copy(merged, meta)
	return EncodeMeta(merged), nil
}

// DecodeMeta decodes what EncodeMeta made (nil decodes to nil).
func DecodeMeta(b []byte) (map[string]string, error) {
	if b == nil {
		return nil, nil
	}
	d := newDecoder(b)
	n := d.count()
	meta := make(map[string]string, n)
	for range n {
		k, v := d.string(), d.string()
		if d.err != nil {
			break
		}
		meta[k] = v
	}
	return meta, d.done()
}

// CorruptError is the error of a saver's Get or List for a stored checkpoint or write that cannot be
// read back: a column holds a value of the wrong type or an encoding that does not decode. It names
// the row so that it can be found and repaired or deleted.
type CorruptError struct {
	ThreadID, NS, CheckpointID string
	Column                     string // the column that could not be read, as table.column, when known
	Err                        error  // what was wrong
	// Saver names the package that read the row ("checkpoint/sqlite"), as the message's prefix.
	Saver string
}

func (e *CorruptError) Error() string {
	where := ""
	if e.Column != "" {
		where = " (column " + e.Column + ")"
	}
	return fmt.Sprintf("%s: thread %q namespace %q checkpoint %q is corrupt%s: %v", e.Saver, e.ThreadID, e.NS, e.CheckpointID, where, e.Err)
}

// Unwrap returns what was wrong.
func (e *CorruptError) Unwrap() error { return e.Err }
