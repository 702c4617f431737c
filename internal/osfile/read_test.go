package osfile

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ReadLine reads lines of any length up to MaxSize, longer than the reader's buffer too, and
// refuses a longer one.
func TestReadLine(t *testing.T) {
	long := strings.Repeat("x", 100<<10)
	r := bufio.NewReaderSize(strings.NewReader("one\n"+long+"\nlast"), 16)
	for _, want := range []string{"one\n", long + "\n", "last"} {
		line, err := ReadLine(r)
		if want == "last" {
			require.Error(t, err)
		} else {
			require.NoError(t, err)
		}
		assert.Equal(t, want, string(line))
	}
	_, err := ReadLine(bufio.NewReader(&zeros{}))
	assert.ErrorIs(t, err, ErrTooLarge)
}

// zeros reads as /dev/zero does.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}
