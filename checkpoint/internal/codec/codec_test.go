package codec

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/agiraph/agiraph/checkpoint"
)

// TestCodec: the encodings of the frontier, joins and metadata round-trip, keep nil and empty
// arguments apart, and are empty for empty values.
func TestCodec(t *testing.T) {
	next := []checkpoint.Task{
		{ID: "0", Node: "a"},
		{ID: "1", Node: "b", Arg: []byte{}, Push: true},
		{ID: "2", Node: "ç\x00\xff", Arg: []byte{0, 1, 2, 255}, Push: true},
		{ID: "", Node: "", Arg: bytes.Repeat([]byte{7}, 300)},
	}
	got, err := DecodeNext(EncodeNext(next))
	if err != nil || fmt.Sprintf("%#v", got) != fmt.Sprintf("%#v", next) {
		t.Errorf("next: %#v, %v", got, err)
	}
	for i := range got {
		if (got[i].Arg == nil) != (next[i].Arg == nil) {
			t.Errorf("next[%d].Arg nil: %v, want %v", i, got[i].Arg == nil, next[i].Arg == nil)
		}
	}
	joins := map[string][]string{"a": {"x", "y"}, "b": nil, "": {""}}
	gotJ, err := DecodeJoins(EncodeJoins(joins))
	if err != nil || fmt.Sprint(gotJ) != fmt.Sprint(joins) || len(gotJ) != 3 {
		t.Errorf("joins: %v, %v", gotJ, err)
	}
	meta := map[string]string{"k": "v", "": "", "ü": "\x00"}
	gotM, err := DecodeMeta(EncodeMeta(meta))
	if err != nil || fmt.Sprint(gotM) != fmt.Sprint(meta) {
		t.Errorf("meta: %v, %v", gotM, err)
	}
	if EncodeNext(nil) != nil || EncodeNext([]checkpoint.Task{}) != nil || EncodeJoins(map[string][]string{}) != nil || EncodeMeta(nil) != nil {
		t.Error("an empty value has an encoding")
	}
	// The encoding of maps does not depend on their order.
	if !bytes.Equal(EncodeMeta(meta), EncodeMeta(map[string]string{"ü": "\x00", "k": "v", "": ""})) {
		t.Error("the encoding of a map depends on its order")
	}
}

// FuzzDecode: no input makes a decoder panic; what decodes survives an encoding and a decoding.
func FuzzDecode(f *testing.F) {
	f.Add(EncodeNext([]checkpoint.Task{{ID: "0", Node: "a", Arg: []byte("x"), Push: true}, {ID: "1", Arg: []byte{}}}))
	f.Add(EncodeJoins(map[string][]string{"j": {"a", "b"}, "k": nil}))
	f.Add(EncodeMeta(map[string]string{"k": "v"}))
	f.Add([]byte{1, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		if next, err := DecodeNext(b); err == nil {
			again, err := DecodeNext(EncodeNext(next))
			if err != nil || fmt.Sprintf("%#v", again) != fmt.Sprintf("%#v", next) && len(next) > 0 {
				t.Errorf("next %x: %#v, then %#v, %v", b, next, again, err)
			}
		}
		if joins, err := DecodeJoins(b); err == nil {
			again, err := DecodeJoins(EncodeJoins(joins))
			if err != nil || fmt.Sprint(again) != fmt.Sprint(joins) {
				t.Errorf("joins %x: %v, then %v, %v", b, joins, again, err)
			}
		}
		if meta, err := DecodeMeta(b); err == nil {
			again, err := DecodeMeta(EncodeMeta(meta))
			if err != nil || fmt.Sprint(again) != fmt.Sprint(meta) {
				t.Errorf("meta %x: %v, then %v, %v", b, meta, again, err)
			}
		}
	})
}

// TestDecodeRandom: random and truncated inputs are errors, never panics.
func TestDecodeRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	valid := [][]byte{
		EncodeNext([]checkpoint.Task{{ID: "0", Node: "agent", Arg: []byte("arg"), Push: true}, {ID: "1", Node: "b"}}),
		EncodeJoins(map[string][]string{"j": {"a", "b"}, "k": {"c"}}),
		EncodeMeta(map[string]string{"k": "v", "k2": "v2"}),
	}
	for _, v := range valid {
		for n := range len(v) {
			if _, err := DecodeNext(v[:n]); err == nil && n > 0 {
				t.Errorf("truncated next %x decoded", v[:n])
			}
			DecodeJoins(v[:n])
			DecodeMeta(v[:n])
		}
	}
	for range 20000 {
		b := make([]byte, r.IntN(40))
		for i := range b {
			b[i] = byte(r.Uint32())
		}
		if r.IntN(2) == 0 && len(b) > 0 {
			b[0] = Version
		}
		DecodeNext(b)
		DecodeJoins(b)
		DecodeMeta(b)
	}
}
