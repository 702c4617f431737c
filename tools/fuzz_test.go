package tools_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/agiraph/agiraph/tools"
)

// FuzzValidate checks that no input makes Validate panic, and that its verdict agrees with
// encoding/json on what is malformed.
func FuzzValidate(f *testing.F) {
	for _, s := range []string{
		`{"name":"a"}`, `{}`, `[]`, `null`, `{"name":5,"files":[{"path":1}]}`, `{"count":1e400}`,
		`{"mode":3.0,"tags":{"a":"b"}}`, `{"name":"\u00e9\ud800"}`, `{"name"`, `"x"`, ``, `{"files":[[[[]]]]}`,
	} {
		f.Add([]byte(s))
	}
	schema := json.RawMessage(testSchema)
	f.Fuzz(func(t *testing.T, args []byte) {
		err := tools.Validate(schema, args)
		if json.Valid(args) == errors.Is(err, tools.ErrMalformedArgs) {
			t.Fatalf("valid JSON %v, but error %v", json.Valid(args), err)
		}
		var ve *tools.ValidationError
		if errors.As(err, &ve) && (len(ve.Problems) == 0 || len(ve.Problems) > 10) {
			t.Fatalf("%d problems listed", len(ve.Problems))
		}
	})
}
