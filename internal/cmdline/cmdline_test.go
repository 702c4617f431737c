package cmdline_test

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agiraph/agiraph/internal/cmdline"
)

// Flags count wherever they are among the words; "--" ends them; a flag that does not exist is
// refused, not taken for a word.
func TestParse(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		words []string
		dir   string
		quiet bool
	}{
		{[]string{"a", "goal"}, []string{"a", "goal"}, "", false},
		{[]string{"-dir", "x", "a", "goal"}, []string{"a", "goal"}, "x", false},
		{[]string{"a", "goal", "-dir", "x", "-quiet"}, []string{"a", "goal"}, "x", true},
		{[]string{"a", "-quiet", "goal"}, []string{"a", "goal"}, "", true},
		{[]string{"a", "--", "-quiet", "goal"}, []string{"a", "-quiet", "goal"}, "", false},
		{nil, nil, "", false},
	} {
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		dir := fs.String("dir", "", "")
		quiet := fs.Bool("quiet", false, "")
		words, err := cmdline.Parse(fs, tc.args)
		require.NoError(t, err, tc.args)
		assert.Equal(t, tc.words, words, tc.args)
		assert.Equal(t, tc.dir, *dir, tc.args)
		assert.Equal(t, tc.quiet, *quiet, tc.args)
	}
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	_, err := cmdline.Parse(fs, []string{"a", "goal", "-qiuet"})
	assert.ErrorContains(t, err, "qiuet")
}
