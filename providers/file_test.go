package providers_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/scripted"
)

func TestFileLimitsCheck(t *testing.T) {
	limits := providers.FileLimits{Images: true, ImageURLs: true, MaxImage: 10}
	cases := []struct {
		name  string
		file  *providers.File
		wants []string // what the error names; none: accepted
	}{
		{"image bytes", &providers.File{MediaType: "image/png", Name: "a.png", Data: []byte("0123456789")}, nil},
		{"image URL", &providers.File{MediaType: "image/jpeg", URL: "https://example.com/a.jpg"}, nil},
		{"no file", nil, []string{"p/m", "holds no file"}},
		{"neither", &providers.File{MediaType: "image/png", Name: "a.png"}, []string{"a.png", "either its data or a URL"}},
		{"both", &providers.File{MediaType: "image/png", Name: "a.png", Data: []byte("x"), URL: "https://example.com/a.png"}, []string{"a.png", "not both"}},
		{"not a web URL", &providers.File{MediaType: "image/png", URL: "file:///etc/passwd"}, []string{"file:///etc/passwd", "http or https"}},
		{"type not taken", &providers.File{MediaType: "application/pdf", Name: "r.pdf", Data: []byte("%PDF-")}, []string{"p/m: bad request: the model cannot take application/pdf files (r.pdf)", "image/png"}},
		{"unknown type", &providers.File{MediaType: "image/tiff", Data: []byte("II*")}, []string{"image/tiff", "a 3-byte image/tiff file"}},
		{"too large", &providers.File{MediaType: "image/gif", Name: "big.gif", Data: make([]byte, 11)}, []string{"file big.gif is 11 bytes, over the 10 bytes the model takes"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := limits.Check("p", "m", c.file)
			if c.wants == nil {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, errors.Is(err, providers.ErrBadRequest), "kind of %v", err)
			if c.file != nil {
				var fe *providers.FileError
				require.ErrorAs(t, err, &fe)
				assert.Equal(t, c.file.MediaType, fe.MediaType)
			}
			for _, w := range c.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}

	noURL := providers.FileLimits{Images: true, PDFs: true}
	err := noURL.Check("p", "m", &providers.File{MediaType: providers.PDF, URL: "https://example.com/r.pdf"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "p/m: bad request: the model cannot fetch application/pdf files from a URL (https://example.com/r.pdf)")
}

// The text fallback turns tool calls and results into text and keeps a message's files, after
// its text, for the model it wraps.
func TestTextToolsKeepFiles(t *testing.T) {
	inner := scripted.New("plain", scripted.Turn{Text: "A grey square."}).KeepRequests()
	img := providers.FileData("image/png", "a.png", []byte("\x89PNG\r\n\x1a\n"))
	_, err := providers.WithTextTools(inner).Generate(context.Background(), providers.Request{
		Messages: []providers.Message{{Role: providers.User, Parts: []providers.Part{providers.Text("What is this?"), img}}},
	})
	require.NoError(t, err)
	got := inner.Requests()[0].Messages
	require.Len(t, got, 1)
	assert.Equal(t, []providers.Part{providers.Text("What is this?"), img}, got[0].Parts)
}

// A scripted model refuses a malformed file as a real provider would, naming it.
func TestScriptedRefusesMalformedFile(t *testing.T) {
	m := scripted.New("s", scripted.Turn{Text: "never"})
	_, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{{Role: providers.User,
		Parts: []providers.Part{{Type: providers.FilePart, File: &providers.File{MediaType: "image/png", Name: "empty.png"}}}}}})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "scripted/s")
	assert.Contains(t, err.Error(), "empty.png")
}
