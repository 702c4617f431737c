package anthropic_test

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/providers"
	"github.com/agiraph/agiraph/providers/providertest"
)

// Images and PDFs go as image and document blocks, as bytes or URLs, and the fake, which
// checks them as the API does, reads back what was sent.
func TestFilesSentAsBlocks(t *testing.T) {
	s := providertest.NewAnthropic(t, providertest.Reply{Text: "A grey square and a blank page."})
	m := newModel(t, s)
	msg := providers.Message{Role: providers.User, Parts: []providers.Part{
		providers.Text("What are these?"),
		providers.FileData("image/png", "square.png", providertest.PNG),
		providers.FileData(providers.PDF, "page.pdf", providertest.PDF),
		providers.FileURL("image/jpeg", "https://example.com/photo.jpg"),
		providers.FileURL(providers.PDF, "https://example.com/paper.pdf"),
	}}
	resp, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{msg}})
	require.NoError(t, err)
	assert.Equal(t, "A grey square and a blank page.", resp.Message.Text())

	reqs := s.Requests()
	require.Len(t, reqs, 1)
	assert.Equal(t, []providertest.File{
		{MediaType: "image/png", Data: providertest.PNG},
		{MediaType: "application/pdf", Name: "page.pdf", Data: providertest.PDF},
		{URL: "https://example.com/photo.jpg"},
		{URL: "https://example.com/paper.pdf"},
	}, reqs[0].Files())
	blocks := reqs[0].Messages()[0]["content"].([]any)
	assert.Equal(t, []any{"text", "image", "document", "image", "document"}, types(blocks))
}

// A file the API would refuse fails before any request, with an error naming the model and
// the file.
func TestFilesRefusedBeforeSending(t *testing.T) {
	s := providertest.NewAnthropic(t)
	m := newModel(t, s)
	cases := map[string]struct {
		file  providers.Part
		wants []string
	}{
		"type": {providers.FileData("image/tiff", "scan.tiff", []byte("II*\x00")),
			[]string{"anthropic/" + testModel, "cannot take image/tiff files (scan.tiff)"}},
		"size": {providers.FileData("image/png", "huge.png", append(append([]byte{}, providertest.PNG...), make([]byte, 4<<20)...)),
			[]string{"anthropic/" + testModel, "file huge.png is", "over the 3932160 bytes"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := m.Generate(context.Background(), providers.Request{Messages: []providers.Message{
				{Role: providers.User, Parts: []providers.Part{providers.Text("Look."), c.file}},
			}})
			require.Error(t, err)
			assert.True(t, errors.Is(err, providers.ErrBadRequest))
			for _, w := range c.wants {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
	assert.Empty(t, s.Requests())
}

// types returns the "type" of each block.
func types(blocks []any) []any {
	out := make([]any, len(blocks))
	for i, b := range blocks {
		out[i] = b.(map[string]any)["type"]
	}
	return out
}
