package store_test

import (
	"testing"

	"github.com/agiraph/agiraph/nodes/store"
	"github.com/agiraph/agiraph/nodes/store/storetest"
)

func TestMemoryConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store { return store.NewMemory() })
}
