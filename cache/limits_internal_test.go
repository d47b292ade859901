package cache

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/netperfkit/netperfkit/internal/resp"
)

// The largest ValueSize is the largest value the resp engine reads back,
// so that a GET of any value a run SET succeeds.
func TestMaxValueSizeIsReadable(t *testing.T) {
	assert.Equal(t, resp.DefaultLimits.MaxBulk, maxValueSize)
	assert.Less(t, maxValueSize+64, resp.DefaultLimits.MaxReplyBytes, "with its header and CRLFs")
}
