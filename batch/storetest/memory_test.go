package storetest_test

import (
	"testing"

	"github.com/creativegen/creative-go/batch"
	"github.com/creativegen/creative-go/batch/storetest"
)

func TestMemoryKeepsTheStoreContract(t *testing.T) {
	storetest.Run(t, func(*testing.T) batch.Store { return storetest.NewMemory() })
}
