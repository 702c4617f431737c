package proc

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestTailKeepsTheEnd(t *testing.T) {
	tail := NewTail(10)
	for i := range 5 {
		fmt.Fprintf(tail, "line %d\n", i)
	}
	assert.Equal(t, "\nline 4\n", tail.String()[len(tail.String())-8:])
	assert.Len(t, tail.String(), 10)

	tail = NewTail(5)
	_, _ = tail.Write([]byte(strings.Repeat("é", 10))) // two bytes each: the cut falls inside one
	assert.Equal(t, "éé", tail.String(), "the kept text starts at a whole character")
}
